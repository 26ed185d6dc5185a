#!/usr/bin/env bash
# Benchmark: `cuenv store add` of the 557 MB nvidia-cudnn-cu12 9.5.0.50 win_amd64 wheel
# into an empty store, against `unzip -q` and `sha256sum` of the same file, in one run.
# Reports wall time, peak RSS and the ratio cuenv / unzip. Runs each tool RUNS times
# (default 3) and keeps the median.
#
# Usage: benches/store_import.sh   (uses target/release/cuenv; builds it if missing)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${RUNS:-3}
cache=$(scripts/fetch-real-wheels.sh | tail -n1)
wheel=$(ls "$cache"/nvidia_cudnn_cu12-9.5.0.50-*win_amd64.whl)
cargo build --release -q
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A secs rss
for tool in cuenv unzip sha256sum; do
  t=(); m=()
  for _ in $(seq "$runs"); do
    chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"/*; mkdir -p "$work/home" "$work/unzip"
    case $tool in
      cuenv) r=$( { /usr/bin/time -f '%e %M' target/release/cuenv --quiet --home "$work/home" store add "$wheel" >/dev/null; } 2>&1 | tail -n1) ;;
      unzip) r=$( { /usr/bin/time -f '%e %M' unzip -q "$wheel" -d "$work/unzip"; } 2>&1 | tail -n1) ;;
      sha256sum) r=$( { /usr/bin/time -f '%e %M' sha256sum "$wheel" >/dev/null; } 2>&1 | tail -n1) ;;
    esac
    t+=("${r% *}"); m+=("${r#* }")
  done
  secs[$tool]=$(printf '%s\n' "${t[@]}" | median)
  rss[$tool]=$(printf '%s\n' "${m[@]}" | median)
done
printf '%-10s %8s %10s\n' tool "wall s" "peak RSS"
for tool in cuenv unzip sha256sum; do
  printf '%-10s %8s %7s MiB\n' "$tool" "${secs[$tool]}" "$(( ${rss[$tool]} / 1024 ))"
done
awk -v a="${secs[cuenv]}" -v b="${secs[unzip]}" 'BEGIN { printf "ratio cuenv / unzip -q: %.2f (target <= 0.60)\n", a / b }'
