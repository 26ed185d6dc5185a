#!/usr/bin/env bash
# Benchmark: cuenv next to uv, pip and unzip at what uv does, in one run, best of
# RUNS (default 3) wall-clock seconds each, with the ratios measured in this same run:
#   - importing the real nvidia-cudnn-cu12 9.5.0.50 and 8.9.4.25 manylinux wheels
#     (`cuenv store add --sha256 <the published digest>` into an empty home, which takes the
#     files' digests from RECORD, and `cuenv store add` unpinned, which hashes every file; `uv pip install --no-deps --no-cache --target`
#     (faster here than with an empty --cache-dir, which extracts and then links); `pip install --no-deps --no-cache-dir --target`; `unzip -q`),
#   - re-importing an archive already in the store (against the first import),
#   - `store verify` of both entries (all cores) against one single-threaded
#     `openssl dgst -sha256` of the same files (SHA-NI; coreutils sha256sum has none here),
#   - the floor of each import (benches/import_floor.rs): the inflate, CRC-32 and SHA-256
#     work of a pinned and of an unpinned import, measured here with libdeflate inflating
#     each member whole (the fastest inflater cuenv has), spread over this machine's cores,
#     without and with writing the files into the page cache (which every import and uv do);
#     a goal below it is out of reach on this machine; and the pinned floor with the writes
#     once more with every member inflated by zlib-rs in 256 KiB pieces, as cuenv inflates
#     the members over 8 MiB (the floor of this design),
#   - the peak anonymous RSS of every cuenv run above (benches/timed.py samples RssAnon:
#     the mapped archive and output files are page cache, not counted).
# Every timed command runs through benches/timed.py, right after prefault (benches/uv_pin.sh:
# this VM's host reclaims freed memory, and the next toucher pays seconds per GB).
# uv is installed once, pinned, into ~/.cache/cuenv-bench (pip install --target).
# Benchmarks stay out of .ci/run. The load average is printed: run it on a quiet machine.
#
# Then benches/lab_fresh.sh adds the last row: the main command on a fresh home against uv.
#
# Usage: benches/vs_uv.sh   (builds target/release/cuenv)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${RUNS:-3}
# shellcheck source=benches/uv_pin.sh
source benches/uv_pin.sh
wheels=$(scripts/fetch-real-wheels.sh | tail -n1)
w95=$(ls "$wheels"/nvidia_cudnn_cu12-9.5.0.50-*manylinux*.whl)
w89=$(ls "$wheels"/nvidia_cudnn_cu12-8.9.4.25-*manylinux*.whl)
cargo build --release -q
cuenv=$PWD/target/release/cuenv
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# timed CMD...: runs CMD once through benches/timed.py, after prefault; prints "seconds peak_anon_kib cpu_seconds".
timed() {
  prefault "${PREFAULT_MIB:-2048}"
  python3 benches/timed.py "$work/time" "$@" >/dev/null 2>&1 || { echo "benchmark step failed: $*" >&2; exit 1; }
  tail -n1 "$work/time"
}
# best SETUP CMD...: runs SETUP then CMD, RUNS times; prints the least seconds. A cuenv CMD's
# peak RSS (KiB) is appended to $work/rss.
best() {
  local setup=$1; shift
  local b="" r s m
  for _ in $(seq "$runs"); do
    eval "$setup"
    r=$(timed "$@")
    read -r s m _ <<<"$r"
    if [[ $1 == "$cuenv" ]]; then echo "$m" >> "$work/rss"; fi
    if [[ -z $b ]] || awk -v a="$s" -v b="$b" 'BEGIN { exit !(a < b) }'; then b=$s; fi
  done
  echo "$b"
}
clean() { chmod -R u+w "$work" 2>/dev/null || true; rm -rf "${work:?}"/home "$work"/t "$work"/c; mkdir -p "$work/home" "$work/t" "$work/c"; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); cores: $(nproc); uv $uv_version; $(python3 -m pip --version | cut -d' ' -f1-2)"
printf '%-34s %8s %8s %8s %8s  %s\n' work cuenv uv pip unzip "ratio"
declare -A first
floors=()
for w in "$w95" "$w89"; do
  v=$(basename "$w" | cut -d- -f2)
  # The digest PyPI publishes for the file (what lab.lock pins): the file's own SHA-256.
  sha=$(sha256sum "$w" | cut -d' ' -f1)
  cp=$(best clean "$cuenv" --quiet --home "$work/home" store add --sha256 "$sha" "$w")
  c=$(best clean "$cuenv" --quiet --home "$work/home" store add "$w")
  u=$(best clean "$uv" pip install -q --no-deps --no-cache --target "$work/t" "$w")
  p=$(best clean python3 -m pip install -q --disable-pip-version-check --no-deps --no-cache-dir --target "$work/t" "$w")
  z=$(best clean unzip -q "$w" -d "$work/t")
  first[$v]=$c
  goal=$([[ $v == 9.5.0.50 ]] && echo 0.70 || echo 0.80)
  printf '%-34s %8s %8s %8s %8s  %s x uv (goal <= %s)\n' "import $v, --sha256 (RECORD)" "$cp" "$u" "$p" "$z" "$(ratio "$cp" "$u")" "$goal"
  printf '%-34s %8s %8s %8s %8s  %s x uv\n' "import $v, unpinned (hash all)" "$c" "$u" "$p" "$z" "$(ratio "$c" "$u")"
  # The floors of any import doing that work on this machine's cores (benches/import_floor.rs).
  prefault "${PREFAULT_MIB:-2048}"
  fo=$(cargo bench -q --bench import_floor -- "stream:$w" 2>/dev/null)
  f=$(head -n1 <<<"$fo")
  # The same work with the members inflated by zlib-rs in 256 KiB pieces, as cuenv inflates
  # every member over 8 MiB (src/store/extract/inflate.rs; the floor counts the small ones
  # that way too): the floor of this design, pinned, files written.
  fsw=$(tail -n1 <<<"$fo" | sed -E 's/.*with the writes: pinned ([0-9.]+) s$/\1/')
  # The floor line (import_floor.rs): "floor on N cores: pinned A s, unpinned B s; with the
  # writes: pinned C s, unpinned D s" (C and D: the files written into the page cache too).
  fp=$(sed -E 's/.*floor on [0-9.]+ cores: pinned ([0-9.]+) s,.*/\1/' <<<"$f")
  fu=$(sed -E 's/.*floor on [0-9.]+ cores: pinned [0-9.]+ s, unpinned ([0-9.]+) s;.*/\1/' <<<"$f")
  fpw=$(sed -E 's/.*with the writes: pinned ([0-9.]+) s,.*/\1/' <<<"$f")
  fuw=$(sed -E 's/.*with the writes: pinned [0-9.]+ s, unpinned ([0-9.]+) s.*/\1/' <<<"$f")
  printf '%-34s %8s %8s %8s %8s  %s x uv; cuenv is %s x it\n' "  floor, pinned ($(nproc) cores)" "$fp" - - - "$(ratio "$fp" "$u")" "$(ratio "$cp" "$fp")"
  printf '%-34s %8s %8s %8s %8s  %s x uv; cuenv is %s x it\n' "  floor, unpinned ($(nproc) cores)" "$fu" - - - "$(ratio "$fu" "$u")" "$(ratio "$c" "$fu")"
  printf '%-34s %8s %8s %8s %8s  %s x uv; cuenv is %s x it\n' "  the same, files written: pinned" "$fpw" - - - "$(ratio "$fpw" "$u")" "$(ratio "$cp" "$fpw")"
  printf '%-34s %8s %8s %8s %8s  %s x uv; cuenv is %s x it (goal <= 1.05)\n' "  the same, files written: unpinned" "$fuw" - - - "$(ratio "$fuw" "$u")" "$(ratio "$c" "$fuw")"
  printf '%-34s %8s %8s %8s %8s  %s x uv; cuenv is %s x it\n' "  the same, zlib-rs pieces: pinned" "$fsw" - - - "$(ratio "$fsw" "$u")" "$(ratio "$cp" "$fsw")"
  floors+=("$f")
done
clean
"$cuenv" --quiet --home "$work/home" store add "$w95" >/dev/null
r=$(best : "$cuenv" --quiet --home "$work/home" store add "$w95")
# The archive's SHA-256 pass alone (one process reading and hashing the file: openssl, SHA-NI).
a=$(best : openssl dgst -sha256 "$w95")
printf '%-34s %8s %8s %8s %8s  %s x first import; %s x the archive SHA-256 pass (%s s, goal <= 1.00)\n' "re-import 9.5.0.50 (in store)" "$r" - - - "$(ratio "$r" "${first[9.5.0.50]}")" "$(ratio "$r" "$a")" "$a"
"$cuenv" --quiet --home "$work/home" store add "$w89" >/dev/null
mapfile -t files < <(find "$work/home/store" -mindepth 2 -type f ! -name entry.toml ! -path '*/.*/*' | sort)
o=$(best : openssl dgst -sha256 "${files[@]}")
s=$(best : "$cuenv" --quiet --home "$work/home" store verify)
printf '%-34s %8s %8s %8s %8s  %s x openssl dgst -sha256 (goal <= 0.60)\n' "store verify (2 entries, $(du -sh --apparent-size "$work/home/store" | cut -f1))" "$s" - - "$o" "$(ratio "$s" "$o")"
echo "(the verify row's 'unzip' column is one single-threaded openssl dgst -sha256 of the same files)"
echo "floors (benches/import_floor.rs, one core per part):"
printf '  %s\n' "${floors[@]}"
peak_rss=$(sort -n "$work/rss" | tail -n1)
echo "peak anonymous RSS of cuenv over these runs: $(( peak_rss / 1024 )) MiB (goal < 100)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# The last row: the README's main command on a fresh home.
echo
benches/lab_fresh.sh
