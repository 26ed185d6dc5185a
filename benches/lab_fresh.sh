#!/usr/bin/env bash
# Benchmark: the README's main command on a fresh home, `cuenv apply profiles/lab.toml`
# (3 profiles, 9 linux-x86_64 wheels pinned by profiles/lab.lock, checks included: `no-gpu`
# without an NVIDIA GPU), next to uv and pip installing the same 9 wheels with no cache. All three
# download from one loopback index (benches/loopback_index.py on 127.0.0.1) serving the same
# cached wheels, so the network does not decide. Best of RUNS (default 3) wall-clock seconds,
# each run on a fresh CUENV_HOME / --target with nothing cached; ratios from this same run.
#   - cuenv: `target/release/cuenv apply lab.toml` on a copy of profiles/lab.toml + lab.lock
#     (through the PyPI JSON API the index serves: CUENV_PYPI_INDEX).
#   - uv 0.13.8 `uv pip install --no-cache --no-deps --index-url <index>/simple --target`, and
#     pip `pip install --no-cache-dir --no-deps --index-url <index>/simple --target`: cuDNN
#     8.9.4.25 and 9.5.0.50 for CUDA 12 cannot share one --target, so each runs as two commands at
#     once (8.9.4.25 alone; the other 8 wheels), timed as a pair.
#   - what the check costs: `cuenv check` of the 3 profiles on the home a cuenv run left (the
#     same probes apply runs once the generation is built), best of RUNS.
#   - the peak anonymous RSS of the cuenv process (benches/timed.py samples RssAnon; mapped
#     archives and output files are page cache, not counted; probe children are not counted).
#   - the CPU each tool used in its best run (user + system of the command and the children it
#     waited for: benches/timed.py) and the index server's CPU meanwhile: both tools are bound by
#     the CPU on 2 cores, so these say how much work each did, apart from how well it kept the
#     cores busy (the server shares the same cores).
#   - cuenv once more against the same index answering no range requests (LOOPBACK_NO_RANGES=1,
#     a second server): every wheel is then downloaded whole and imported from the mapped
#     file (the fallback path: libdeflate for members up to 8 MiB, zlib-rs in pieces for
#     larger ones), which is what spooling each download would cost and buy
#     (docs/performance.md).
#   - the floor of the imports' work (benches/import_floor.rs): pinned, without and with the
#     writes, and the same with the wheels inflated as apply imports them while they
#     download (zlib-rs in pieces: `stream:`), the floor of this design.
# Every timed command runs through benches/timed.py right after prefault (benches/uv_pin.sh).
# The run fails when cuenv, uv or pip fetched no wheel from the loopback index. Every command
# runs with HOME, XDG_*, JUPYTER_* and CONDA_* pointed into a temporary folder (cuenv's
# defaults, Jupyter kernels and conda envs, uv's and pip's config), so no file of the real home
# is touched. The wheels are gathered once into ~/.cache/cuenv-bench/lab-wheels (hard links to
# ~/.cache/cuenv-real-wheels where that holds them; the rest downloaded once from pypi.org,
# checked against the lock's sha256). Benchmarks stay out of .ci/run.
#
# Usage: benches/lab_fresh.sh   (builds target/release/cuenv; RUNS=3)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${RUNS:-3}
# shellcheck source=benches/uv_pin.sh
source benches/uv_pin.sh
py=$(python3 -c 'import sys; print(sys.executable)')
wheels=$("$py" benches/loopback_index.py gather profiles/lab.lock "$bench/lab-wheels" "${CUENV_REAL_WHEELS:-$HOME/.cache/cuenv-real-wheels}" | tail -n1)
cargo build --release -q
cuenv=$PWD/target/release/cuenv
work=$(mktemp -d)
server=""
server_whole=""
cleanup() {
  if [[ -n $server ]]; then kill "$server" "$server_whole" 2>/dev/null || true; fi
  chmod -R u+w "$work" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$py" benches/loopback_index.py serve "$wheels" "$work/port" "$work/requests.log" &
server=$!
# The same index answering every range request with the whole file: its own port, one log.
LOOPBACK_NO_RANGES=1 "$py" benches/loopback_index.py serve "$wheels" "$work/port-whole" "$work/requests.log" &
server_whole=$!
for _ in $(seq 100); do [[ -s $work/port && -s $work/port-whole ]] && break; sleep 0.1; done
[[ -s $work/port && -s $work/port-whole ]] || { echo "the loopback index did not start" >&2; exit 1; }
index=http://127.0.0.1:$(cat "$work/port")
index_whole=http://127.0.0.1:$(cat "$work/port-whole")

# The same 9 wheels for uv and pip, as project==version (from the index's own listing).
mapfile -t specs < <(ls "$wheels"/*.whl | xargs -n1 basename | awk -F- '{ gsub("_", "-", $1); print $1 "==" $2 }' | sort -u)
[[ ${#specs[@]} -eq 9 ]] || { echo "expected 9 wheels in $wheels, found ${#specs[@]}" >&2; exit 1; }
alone=nvidia-cudnn-cu12==8.9.4.25
rest=()
for s in "${specs[@]}"; do [[ $s == "$alone" ]] || rest+=("$s"); done

# Everything runs in a sandboxed environment: a fake HOME, no XDG/Jupyter/conda variables.
sandbox=(env -u XDG_DATA_HOME -u XDG_CONFIG_HOME -u XDG_CACHE_HOME -u JUPYTER_DATA_DIR -u JUPYTER_PATH
  -u CONDA_PREFIX -u CONDA_EXE -u CONDA_ROOT -u MAMBA_ROOT_PREFIX -u CONDA_ENVS_PATH -u CONDA_ENVS_DIRS
  -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL -u UV_INDEX_URL -u UV_EXTRA_INDEX_URL -u UV_FIND_LINKS
  -u CUENV_FIND_LINKS -u CUENV_OFFLINE -u CUENV_NVIDIA_MIRROR
  "HOME=$work/fakehome" "CUENV_HOME=$work/home" "CUENV_PYPI_INDEX=$index" NO_PROXY=127.0.0.1 no_proxy=127.0.0.1
  PIP_CONFIG_FILE=/dev/null UV_NO_CONFIG=1)

clean() {
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "${work:?}"/home "$work"/fakehome "$work"/t1 "$work"/t2 "$work"/lab
  mkdir -p "$work/fakehome" "$work/t1" "$work/t2" "$work/lab"
  cp profiles/lab.toml profiles/lab.lock "$work/lab/"
  : > "$work/requests.log"
}
# wheels_fetched: how many wheel GETs the index answered since the last clean.
wheels_fetched() { awk -F'\t' '$2 == "GET" && $3 ~ /^\/files\// && $5 > 0' "$work/requests.log" | wc -l; }
# server_cpu: the CPU seconds (user + system) both index servers have used so far.
ticks=$(getconf CLK_TCK)
server_cpu() { cat "/proc/$server/stat" "/proc/$server_whole/stat" | awk -v t="$ticks" '{ s += $14 + $15 } END { printf "%.2f", s / t }'; }
# timed NAME CMD...: runs CMD once in the sandbox through benches/timed.py, after prefault;
# prints "seconds peak_anon_kib cpu_seconds server_cpu_seconds".
timed() {
  local name=$1; shift
  prefault "${PREFAULT_MIB:-8192}"
  local s0; s0=$(server_cpu)
  if ! python3 benches/timed.py "$work/time" "${sandbox[@]}" "$@" >"$work/out" 2>&1; then
    echo "benchmark step failed: $name" >&2; tail -n 30 "$work/out" >&2; exit 1
  fi
  local s1; s1=$(server_cpu)
  local n; n=$(wheels_fetched)
  if [[ $n -lt 9 ]]; then echo "$name fetched $n wheels from the loopback index, not 9" >&2; tail -n 30 "$work/out" >&2; exit 1; fi
  echo "$(tail -n1 "$work/time") $(awk -v a="$s0" -v b="$s1" 'BEGIN { printf "%.2f", b - a }')"
}
# best NAME CMD...: RUNS fresh runs of CMD; prints the least seconds; a cuenv run's peak RSS (KiB)
# is appended to $work/rss, and the best run's "cpu_seconds server_cpu_seconds" written to
# $work/cpu-NAME.
best() {
  local name=$1; shift
  local b="" r s m c sc
  for _ in $(seq "$runs"); do
    clean
    r=$(timed "$name" "$@")
    read -r s m c sc <<<"$r"
    if [[ $name == cuenv* ]]; then echo "$m" >> "$work/rss"; fi
    if [[ -z $b ]] || awk -v a="$s" -v b="$b" 'BEGIN { exit !(a < b) }'; then b=$s; echo "$c $sc" > "$work/cpu-$name"; fi
  done
  echo "$b"
}
# pair TOOL...: the tool's install of 8.9.4.25 into t1 and of the other 8 wheels into t2, at once.
pair() {
  "$@" --target "$work/t1" "$alone" & local a=$!
  "$@" --target "$work/t2" "${rest[@]}" & local b=$!
  local ra=0 rb=0
  wait "$a" || ra=$?
  wait "$b" || rb=$?
  return $((ra | rb))
}
export -f pair
export work alone
export rest_list="${rest[*]}"

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); cores: $(nproc); uv $uv_version; $("$py" -m pip --version | cut -d' ' -f1-2); index $index"
printf '%-34s %8s %8s %8s %8s  %s\n' work cuenv uv pip unzip "ratio"
c=$(best cuenv "$cuenv" --quiet apply "$work/lab/lab.toml")
# The check alone, on the home the last cuenv run left: `cuenv check` probes the 3 profiles
# (load, no GPU here), best of RUNS; the same probes once `apply` has built the generation.
k=""
for _ in $(seq "$runs"); do
  prefault 2048
  python3 benches/timed.py "$work/time" "${sandbox[@]}" "$cuenv" --quiet check >"$work/out" 2>&1 || { echo "cuenv check failed" >&2; tail -n 30 "$work/out" >&2; exit 1; }
  read -r s _ <"$work/time"
  if [[ -z $k ]] || awk -v a="$s" -v b="$k" 'BEGIN { exit !(a < b) }'; then k=$s; fi
done
# The same apply against the index that serves no ranges: each wheel downloaded whole.
cw=$(best cuenv-whole env "CUENV_PYPI_INDEX=$index_whole" "$cuenv" --quiet apply "$work/lab/lab.toml")
u=$(best uv bash -c 'rest=($rest_list); pair "$0" pip install -q --no-cache --no-deps --python "$1" --index-url "$2/simple"' "$uv" "$py" "$index")
p=$(best pip bash -c 'rest=($rest_list); pair "$0" -m pip install -q --disable-pip-version-check --no-cache-dir --no-deps --index-url "$1/simple"' "$py" "$index")
printf '%-34s %8s %8s %8s %8s  %s x uv (goal <= 0.80)\n' "apply lab.toml, fresh home (9 whl)" "$c" "$u" "$p" - "$(ratio "$c" "$u")"
printf '%-34s %8s %8s %8s %8s  %s of the apply\n' "  of which: check, 3 profiles" "$k" - - - "$(ratio "$k" "$c")"
printf '%-34s %8s %8s %8s %8s  %s x uv; %s x the streamed apply\n' "  cuenv, downloads written whole" "$cw" - - - "$(ratio "$cw" "$u")" "$(ratio "$cw" "$c")"
# CPU of each tool's best run, and of the index servers meanwhile.
read -r cc cs <"$work/cpu-cuenv"; read -r wc ws <"$work/cpu-cuenv-whole"; read -r uc us <"$work/cpu-uv"; read -r pc ps <"$work/cpu-pip"
printf '%-34s %8s %8s %8s %8s  %s x uv (whole downloads: %s s, %s x uv)\n' "  CPU s of the best run" "$cc" "$uc" "$pc" - "$(ratio "$cc" "$uc")" "$wc" "$(ratio "$wc" "$uc")"
printf '%-34s %8s %8s %8s %8s  (whole downloads: %s s)\n' "  CPU s of the index server then" "$cs" "$us" "$ps" - "$ws"
# The floor of the inflate, CRC-32 and archive SHA-256 work of importing these 9 wheels
# pinned (lab.lock pins them: RECORD gives the files' digests; benches/import_floor.rs),
# spread over this machine's cores; then the same with every wheel inflated as apply imports
# it while it downloads (zlib-rs in pieces: `stream:`; the CUDA runtime wheels too, since
# 2026-12-07).
prefault "${PREFAULT_MIB:-8192}"
floor_args=()
for w in "$wheels"/*.whl; do
  floor_args+=("stream:$w")
done
floor_out=$(cargo bench -q --bench import_floor -- "${floor_args[@]}" 2>/dev/null)
f=$(grep '^all [0-9]* wheels:' <<<"$floor_out")
fs=$(grep '^all [0-9]* wheels, as imported while downloading' <<<"$floor_out")
fl=$(sed -E 's/.*floor on [0-9.]+ cores: pinned ([0-9.]+) s,.*/\1/' <<<"$f")
flw=$(sed -E 's/.*with the writes: pinned ([0-9.]+) s,.*/\1/' <<<"$f")
fsw=$(sed -E 's/.*with the writes: pinned ([0-9.]+) s$/\1/' <<<"$fs")
printf '%-34s %8s %8s %8s %8s  %s x uv\n' "  floor: pinned imports, $(nproc) cores" "$fl" - - - "$(ratio "$fl" "$u")"
printf '%-34s %8s %8s %8s %8s  %s x uv\n' "  the same, files written" "$flw" - - - "$(ratio "$flw" "$u")"
printf '%-34s %8s %8s %8s %8s  %s x uv; cuenv is %s x it\n' "  the same, every wheel streamed" "$fsw" - - - "$(ratio "$fsw" "$u")" "$(ratio "$c" "$fsw")"
echo "  ($f)"
echo "  ($fs)"
peak_rss=$(sort -n "$work/rss" | tail -n1)
echo "peak anonymous RSS of cuenv apply: $(( peak_rss / 1024 )) MiB (goal < 100)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
