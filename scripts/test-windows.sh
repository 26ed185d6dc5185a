#!/usr/bin/env bash
# Cross-build cuenv for x86_64-pc-windows-gnu and run its tests under Wine.
#
# Usage: scripts/test-windows.sh [--real] [cargo test args...] [-- test binary args...]
#   e.g. scripts/test-windows.sh --lib
#        scripts/test-windows.sh --test it wine_smoke:: -- --nocapture
#        scripts/test-windows.sh --real      # the suite, then the real win_amd64 wheels
# --real (opt-in; first argument): after the suite, fetch the real NVIDIA wheels if missing
# (scripts/fetch-real-wheels.sh, cache ${CUENV_REAL_WHEELS:-~/.cache/cuenv-real-wheels})
# and run the ignored tests/it/real_windows.rs in a release build: the Windows cuenv.exe
# imports the 9.5.0.50 and 8.9.4.25 win_amd64 wheels. Exits non-zero if either part fails.
# Exits with cargo's status. Needs: rustup (or the target already installed),
# gcc-mingw-w64-x86-64, wine64. The Wine prefix is created on first use
# (scripts/wine-setup.sh; CUENV_WINEPREFIX to move it). See docs/windows.md.
set -euo pipefail

target=x86_64-pc-windows-gnu
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
cd "$repo"

# Tests that cannot pass under Wine, skipped by module path in the `it` test binary
# (tests/it/main.rs: `<former file>::<test>`), each with its reason. libtest's --skip
# matches substrings of the full test path, and the same arguments reach the unit-test
# binaries too, so the module prefix keeps each entry to the one intended test.
# These still run on real Windows (the CI windows-latest job).
wine_skips=(
  # Wine 8's cmd loses the exit code of a batch run with `call` (`exit /b 7`
  # comes back as 1); `cmd /c x.bat` and Command::new("x.bat") keep it.
  wine_smoke::cmd_c_call_bat_exit_code
  # issue 18: the failed-check error line needs a generation that `apply` made (junctions).
  messages::a_failed_check_ends_with_an_error_line
  # issue 18: `store remove` names the generations that `apply` made (junctions).
  messages::store_remove_names_every_generation_using_the_entry_current_first
  # issue 18, item 9: check and generations after an `apply` (junctions).
  messages::default_output_is_short_and_verbose_shows_everything
  # tests/it/apply.rs: these need `cuenv apply` to succeed, and Wine refuses every junction
  # (FSCTL_SET_REPARSE_POINT: os error 50). `link-mode = "copy"` does not help: it copies
  # only the cuDNN entry; the other view links and the generation switch are still
  # junctions. What does run under Wine is the refusal itself
  # (refused_links_leave_nothing_behind) and everything that fails before linking.
  apply::plan_apply_and_apply_again
  apply::use_rollback_generations_gc
  apply::locked_fails_on_drift_and_changes_nothing
  apply::a_crash_at_any_step_is_finished_or_undone
  apply::copy_mode_copies_the_entry
  apply::a_failing_check_keeps_the_previous_generation
  apply::env_setup_and_a_dangling_active_profile
  # tests/it/fetch_local.rs: `apply` with PyPI sources needs junctions too (and the fixture
  # serves only manylinux wheels).
  fetch_local::apply_fetches_from_sources_pins_them_and_refuses_other_bytes
  # tests/it/fetch_local.rs: `apply` keeping the other platform's lock section needs junctions.
  # (`cuenv lock` itself, which builds no generation, runs under Wine:
  # lock_fills_another_platforms_section_and_keeps_this_ones.)
  fetch_local::apply_keeps_other_platforms_sections_and_gc_their_entries
  fetch_local::store_fetch_records_a_root_and_apply_fetches_none
  # issue 18, item 2: the first lab's runtime comes from an `apply` (junctions).
  fetch_local::declared_toolkits_are_exclusive_and_plan_says_why
  # issue 18, item 5: the air-gapped apply needs junctions (and the wheels are manylinux).
  fetch_local::an_air_gapped_lab_applies_the_shipped_file_from_a_wheel_folder
  fetch_local::a_cuda_runtime_from_a_folder_of_wheels
  # Issue 16: source lists and unpinned profiles are proven through `apply` on the Linux host
  # section (junctions under Wine, and the fixture serves only manylinux wheels).
  fetch_local::a_source_list_falls_through_to_nvidia_and_the_lock_records_who_served
  fetch_local::lock_allow_unreachable_writes_an_unpinned_profile_that_apply_pins
  # The transaction tests (issue 10) start from a generation that `apply` made, which needs
  # junctions: the switch, its journal and recovery are proven on Linux and on real Windows.
  apply::a_history_line_cut_by_a_kill_loses_no_other_record
  apply::a_history_record_cut_mid_json_loses_only_itself
  apply::a_half_deleted_generation_is_never_switched_to
  apply::a_relative_home_makes_working_absolute_links
  apply::another_lab_file_needs_replace_to_remove_profiles
  # Issue 13, item 4: its `--force` half needs `apply` to succeed (junctions).
  apply::a_profile_the_driver_cannot_run_is_refused_unless_forced
  apply::gc_dry_run_lists_what_would_go_with_sizes
  apply_tx::a_first_generation_killed_mid_revert_is_cleared
  apply_tx::a_kill_before_the_verdict_undoes_the_apply
  apply_tx::an_error_inside_the_transaction_is_undone_before_returning
  kill_matrix::a_killed_gc_leaves_no_half_deleted_generation
  output::a_malformed_setting_is_an_error
  # Also applies the longest allowed profile name, which needs junctions.
  profile_input::a_long_profile_name_is_refused_at_parse_time
)

# --- prerequisites -----------------------------------------------------------
if command -v rustup >/dev/null 2>&1; then
  if ! rustup target list --installed | grep -qx "$target"; then
    echo "test-windows: rustup target add $target" >&2
    rustup target add "$target"
  fi
fi
command -v x86_64-w64-mingw32-gcc >/dev/null \
  || { echo "test-windows: x86_64-w64-mingw32-gcc missing (apt-get install gcc-mingw-w64-x86-64)" >&2; exit 2; }
"$here/wine-setup.sh" >/dev/null   # one-time prefix + ProcessPrng shim; fast when done

real=0
if [[ ${1:-} == --real ]]; then real=1; shift; fi

# --- split our args into cargo's and the test binaries' ---------------------
cargo_args=()
test_args=()
while (($#)); do
  if [[ $1 == -- ]]; then shift; test_args=("$@"); break; fi
  cargo_args+=("$1"); shift
done
skip_args=()
for name in "${wine_skips[@]}"; do skip_args+=(--skip "$name"); done

# The fake Linux libraries in the fixtures are a gcc-built ELF .so (tests/it/support): there is
# no gcc under Wine, so build it here once and pass its path (a Unix path; Wine resolves it on
# drive Z:). Same source and flags as tests/it/support/mod.rs.
elf_dir="$repo/target/$target/cuenv-test-fixtures"
if [[ ! -s $elf_dir/libfake.so ]]; then
  command -v gcc >/dev/null || { echo "test-windows: gcc missing (the ELF test fixtures are built with it)" >&2; exit 2; }
  mkdir -p "$elf_dir"
  printf 'int cudnnGetVersion(void) { return 90500; }\n' > "$elf_dir/fake.c"
  gcc -shared -fPIC -O0 -o "$elf_dir/libfake.so.tmp" "$elf_dir/fake.c"
  mv "$elf_dir/libfake.so.tmp" "$elf_dir/libfake.so"
fi
export CUENV_TEST_ELF_SO="$elf_dir/libfake.so"

# Same values as .cargo/config.toml, given absolutely so a user or CI config
# cannot swap in a different runner or linker.
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$here/wine-runner.sh"

log=$(mktemp)
set +e
cargo test --target "$target" "${cargo_args[@]}" -- "${skip_args[@]}" "${test_args[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# Wine 8 now and then fails to start a child process under load ("Internal error. (os error
# 1359)" or `Os { code: 1359 }`, or STATUS_DLL_INIT_FAILED 0xC0000142 = -1073741502), a fault of Wine's process
# creation, not of the test. When every failed test failed that way, run just those once more,
# one at a time; any other failure stands as it is.
if ((status != 0)); then
  mapfile -t failed < <(sed -n 's/^---- \(.*\) stdout ----$/\1/p' "$log")
  wine_only=1
  for t in "${failed[@]}"; do
    section=$(awk -v t="---- $t stdout ----" '$0 == t {on = 1; next} /^---- .* stdout ----$/ {on = 0} on' "$log")
    grep -qE 'os error 1359|code: 1359|-1073741502|0xc0000142' <<<"$section" || wine_only=0
  done
  if ((${#failed[@]} && wine_only)); then
    echo "test-windows: ${#failed[@]} test(s) failed only at a Wine process start; running them once more: ${failed[*]}" >&2
    set +e
    cargo test --target "$target" "${cargo_args[@]}" -- --exact --test-threads=1 "${failed[@]}"
    status=$?
    set -e
  fi
fi
rm -f "$log"
if ((${#wine_skips[@]})); then
  echo "test-windows: skipped under Wine (see scripts/test-windows.sh): ${wine_skips[*]}" >&2
fi

if ((real)); then
  # The wheels are read by the Windows process from this Linux path (drive Z: under Wine).
  CUENV_REAL_WHEELS="$("$here/fetch-real-wheels.sh" | tail -n 1)"
  export CUENV_REAL_WHEELS
  echo "test-windows: real win_amd64 wheels from $CUENV_REAL_WHEELS" >&2
  set +e
  cargo test --release --target "$target" --test it real_windows:: -- --ignored --test-threads=1 --nocapture
  real_status=$?
  set -e
  if ((status == 0)); then status=$real_status; fi
fi
exit "$status"
