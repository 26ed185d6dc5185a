#!/usr/bin/env bash
# Cross-build cuenv for x86_64-pc-windows-gnu and run its tests under Wine.
#
# Usage: scripts/test-windows.sh [--real] [cargo test args...] [-- test binary args...]
#   e.g. scripts/test-windows.sh --lib
#        scripts/test-windows.sh --test it wine_smoke:: -- --nocapture
#        scripts/test-windows.sh --real      # the suite, then the real win_amd64 wheels
# --real (opt-in; first argument): after the suite, fetch the real NVIDIA wheels if missing
# (scripts/fetch-real-wheels.sh, cache ${CUENV_REAL_WHEELS:-~/.cache/cuenv-real-wheels})
# and run the ignored tests/it/real_windows.rs and tests/it/wine_main_job.rs in a release
# build: the Windows cuenv.exe imports the 9.5.0.50 and 8.9.4.25 win_amd64 wheels, then runs
# the main job on them (apply link-free, .bat shims in cmd, check, run, use, rollback, gc).
# Exits non-zero if either part fails.
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
  # Wine refuses every junction (os error 50), so `link-mode = "auto"` builds
  # link-free there and `apply`, `use`, `rollback`, `gc` and the transactions run under Wine
  # (tests/it/linkfree.rs, tests/it/wine_main_job.rs). These four assert on the links
  # themselves (view link targets, the `active` link, a cut view link), which a link-free
  # generation does not have; they run on Linux and on real Windows.
  apply::plan_apply_and_apply_again
  apply::use_rollback_generations_gc
  apply::a_half_deleted_generation_is_never_switched_to
  apply::a_relative_home_makes_working_absolute_links
  # Asserts on view links it deletes and retargets (link-free under Wine).
  repair::apply_puts_back_deleted_and_retargeted_view_links
  # tests/it/fetch_local.rs: `apply` with `cuda = { from = "pypi" }` on the Windows host needs
  # the CUDA runtime's win_amd64 wheel, and the fixture index serves only manylinux wheels.
  fetch_local::apply_fetches_from_sources_pins_them_and_refuses_other_bytes
  fetch_local::store_fetch_records_a_root_and_apply_fetches_none
  fetch_local::a_source_list_falls_through_to_nvidia_and_the_lock_records_who_served
  fetch_local::lock_allow_unreachable_writes_an_unpinned_profile_that_apply_pins
  # The same fixture index (downloading ahead, and importing a cuDNN wheel while it downloads,
  # are the same code on Windows: the streamed import runs under Wine through `store fetch`).
  fetch_local::apply_downloads_ahead_and_a_broken_download_leaves_nothing_half_done
  fetch_local::apply_imports_the_cudnn_wheels_while_they_download
  fetch_local::a_runtime_wheel_streamed_with_other_bytes_or_cut_off_leaves_nothing
  # The same (their wheel folders and the fixture index hold only
  # manylinux wheels).
  fetch_local::declared_toolkits_are_exclusive_and_plan_says_why
  fetch_local::an_air_gapped_lab_applies_the_shipped_file_from_a_wheel_folder
  fetch_local::a_cuda_runtime_from_a_folder_of_wheels
  # Its tour file asks for the Linux host's releases (linux-x86_64 names
  # in the expected messages; the Windows resolution is the same code).
  new_user_messages::plan_reports_every_resolution_error_of_the_tour_at_once_without_downloading
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

# The Windows loader tests (tests/it/loader_windows.rs) run mingw-built stub DLLs
# and an oracle program under Wine's loader; there is no compiler under Wine, so build them
# here (a few seconds) and pass their folder.
CUENV_TEST_MINGW_FIXTURES="$("$repo/tests/it/support/loader_win/build.sh" "$repo/target/$target/cuenv-test-fixtures/loader-win")"
export CUENV_TEST_MINGW_FIXTURES

# Same values as .cargo/config.toml, given absolutely so a user or CI config
# cannot swap in a different runner or linker.
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$here/wine-runner.sh"

# Wine 8 now and then fails to start a child process under load ("Internal error. (os error
# 1359)" or `Os { code: 1359 }`, or STATUS_DLL_INIT_FAILED 0xC0000142 = -1073741502), a fault of Wine's process
# creation, not of the test. `wine_test ARGS... -- TEST_ARGS...` runs `cargo test ARGS -- TEST_ARGS`;
# when every failed test failed that way, it runs just those once more, one at a time, with the
# same ARGS; any other failure stands as it is. Its status is the outcome (call it as
# `wine_test ... || status=$?`: `set -e` does not stop inside it then).
wine_test() {
  local cargo=() tests=() log status
  while (($#)) && [[ $1 != -- ]]; do cargo+=("$1"); shift; done
  (($#)) && shift
  tests=("$@")
  log=$(mktemp)
  cargo test "${cargo[@]}" -- "${tests[@]}" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  if ((status != 0)); then
    local failed=() wine_only=1 t section keep=()
    mapfile -t failed < <(sed -n 's/^---- \(.*\) stdout ----$/\1/p' "$log")
    for t in "${failed[@]}"; do
      section=$(awk -v t="---- $t stdout ----" '$0 == t {on = 1; next} /^---- .* stdout ----$/ {on = 0} on' "$log")
      grep -qE 'os error 1359|code: 1359|-1073741502|0xc0000142' <<<"$section" || wine_only=0
    done
    # Flags of the first run that still apply to a rerun of named tests (not the filters).
    for t in "${tests[@]}"; do [[ $t == --ignored || $t == --include-ignored || $t == --nocapture ]] && keep+=("$t"); done
    if ((${#failed[@]} && wine_only)); then
      echo "test-windows: ${#failed[@]} test(s) failed only at a Wine process start; running them once more: ${failed[*]}" >&2
      status=0
      cargo test "${cargo[@]}" -- "${keep[@]}" --exact --test-threads=1 "${failed[@]}" || status=$?
    fi
  fi
  rm -f "$log"
  return "$status"
}

status=0
wine_test --target "$target" "${cargo_args[@]}" -- "${skip_args[@]}" "${test_args[@]}" || status=$?
if ((${#wine_skips[@]})); then
  echo "test-windows: skipped under Wine (see scripts/test-windows.sh): ${wine_skips[*]}" >&2
fi

if ((real)); then
  # The wheels are read by the Windows process from this Linux path (drive Z: under Wine).
  CUENV_REAL_WHEELS="$("$here/fetch-real-wheels.sh" | tail -n 1)"
  export CUENV_REAL_WHEELS
  echo "test-windows: real win_amd64 wheels from $CUENV_REAL_WHEELS" >&2
  real_status=0
  wine_test --release --target "$target" --test it -- --ignored --test-threads=1 --nocapture real_windows:: wine_main_job:: || real_status=$?
  if ((status == 0)); then status=$real_status; fi
fi
exit "$status"
