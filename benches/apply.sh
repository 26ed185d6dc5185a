#!/usr/bin/env bash
# Benchmark: `cuenv apply` of a 3-profile file (links, shims, manifest; no check) and
# `cuenv use`, each over repeated runs, next to what users do by hand today: copying the
# cuDNN 9.5.0.50 entry's files into a toolkit-like folder. Same run, same machine.
# Also reports the extra disk used by 3 profiles sharing one store entry.
#
# Usage: benches/apply.sh   (RUNS=20 by default; uses target/release/cuenv)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${RUNS:-20}
cache=$(scripts/fetch-real-wheels.sh | tail -n1)
cargo build --release -q
cuenv=$PWD/target/release/cuenv
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
home=$work/home
export CUENV_HOME=$home

# A toolkit root made from the CUDA 12 runtime wheel, laid out like an install.
tk=$work/cuda-12.6
mkdir -p "$tk/lib64" "$tk/bin"
unzip -q -o "$cache"/nvidia_cuda_runtime_cu12-12.6.77-*manylinux*.whl -d "$work/rt"
cp "$work"/rt/nvidia/cuda_runtime/lib/libcudart.so.12 "$tk/lib64/"
echo '{"cuda": {"name": "CUDA SDK", "version": "12.6.77"}}' > "$tk/version.json"
"$cuenv" --quiet store add "$cache"/nvidia_cudnn_cu12-9.5.0.50-*manylinux*.whl >/dev/null
mkdir -p "$work/envs/a/conda-meta" "$work/envs/b/conda-meta" "$work/envs/c/conda-meta"
for v in a b; do
  cat > "$work/lab-$v.toml" <<TOML
[toolkits]
"12.6" = "$tk"
[profiles.p1-$v]
cuda = "12"
cudnn = "9.5"
conda-env = "$work/envs/a"
[profiles.p2]
cuda = "12"
cudnn = "9.5"
conda-env = "$work/envs/b"
[profiles.p3]
cuda = "12"
cudnn = "9.5"
conda-env = "$work/envs/c"
TOML
done

now_ms() { date +%s%N | awk '{printf "%.3f\n", $1 / 1e6}'; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_ms() { local s e; s=$(now_ms); "$@" >/dev/null || { echo "benchmark step failed: $*" >&2; kill $$; }; e=$(now_ms); awk -v s="$s" -v e="$e" 'BEGIN {printf "%.2f\n", e - s}'; }

apply_t=(); use_t=(); copy_t=()
for i in $(seq "$runs"); do
  v=$([ $((i % 2)) -eq 0 ] && echo a || echo b)   # alternate, so every apply builds a generation
  apply_t+=("$(time_ms "$cuenv" --quiet apply --no-check --replace "$work/lab-$v.toml")")
  use_t+=("$(time_ms "$cuenv" --quiet use "$([ $((i % 2)) -eq 0 ] && echo p2 || echo p3)")")
done
entry=$(ls -d "$home"/store/cudnn-9.5.0.50-*)
for i in $(seq 5); do
  rm -rf "$work/handcopy"; mkdir -p "$work/handcopy/lib64"
  copy_t+=("$(time_ms cp -r "$entry/lib/." "$entry/include" "$work/handcopy/lib64/")")
done
a=$(printf '%s\n' "${apply_t[@]}" | median)
u=$(printf '%s\n' "${use_t[@]}" | median)
c=$(printf '%s\n' "${copy_t[@]}" | median)
gen=$(ls -d "$home"/generations/[0-9]* | tail -n1)
disk=$(du -sk "$gen" | cut -f1)
entry_kb=$(du -sk "$entry" | cut -f1)
echo "runs: $runs (apply alternates two 3-profile files; use alternates two profiles)"
echo "median cuenv apply (3 profiles with conda shims, no check): ${a} ms"
echo "median cuenv use:                                  ${u} ms"
echo "median hand copy of the 9.5.0.50 entry into a toolkit folder: ${c} ms"
awk -v a="$a" -v c="$c" 'BEGIN {printf "ratio apply / hand copy: %.3f\n", a / c}'
echo "disk of one generation (3 views sharing one entry, shims, manifest): ${disk} KiB; the entry itself: ${entry_kb} KiB (not duplicated)"
