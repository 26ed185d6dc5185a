#!/usr/bin/env bash
# Benchmark: the directory hook (`cuenv env --hook bash`) in a real bash.
#   - per prompt when the folder did not change (the common case): the hook's shell function
#     only compares $PWD; goal: well under 10 ms;
#   - per change of folder: one `cuenv env --hook-apply` child plus sourcing its output;
# next to, in the same run, an empty PROMPT_COMMAND function (the floor) and `direnv export
# bash` on a folder without .envrc (what a direnv user pays per prompt) when direnv is
# installed.
#
# Usage: benches/hook.sh   (RUNS=200 by default; uses target/release/cuenv; no downloads:
# the profile's toolkit and cuDNN are small stand-ins, which do not change the hook's cost)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${RUNS:-200}
cargo build --release -q
cuenv=$PWD/target/release/cuenv
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CUENV_HOME=$work/home

# A stand-in toolkit root and cuDNN folder (apply links to them; no check runs).
tk=$work/cuda-12.6
mkdir -p "$tk/lib64" "$tk/bin"
echo '{"cuda": {"name": "CUDA SDK", "version": "12.6.77"}}' > "$tk/version.json"
gcc -shared -fPIC -o "$tk/lib64/libcudart.so.12" -x c - <<<'int cudaRuntimeGetVersion(int *v){*v=12060;return 0;}'
cudnn=$work/cudnn/lib
mkdir -p "$cudnn" "$work/cudnn/include"
printf '#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 5\n#define CUDNN_PATCHLEVEL 0\n' > "$work/cudnn/include/cudnn_version.h"
for l in libcudnn libcudnn_graph libcudnn_ops libcudnn_cnn libcudnn_adv libcudnn_engines_precompiled libcudnn_engines_runtime_compiled libcudnn_heuristic; do
  gcc -shared -fPIC -Wl,-soname,$l.so.9 -o "$cudnn/$l.so.9" -x c - <<<'unsigned long cudnnGetVersion(void){return 90500;} unsigned long cudnnGetCudartVersion(void){return 12060;}' 2>/dev/null
done
"$cuenv" --quiet store add "$work/cudnn" --cuda 12 >/dev/null
cat > "$work/lab.toml" <<TOML
[toolkits]
"12.6" = "$tk"
[profiles.a]
cuda = "12"
cudnn = "9.5"
[profiles.b]
cuda = "12"
cudnn = "9.5"
TOML
"$cuenv" --quiet apply --no-check "$work/lab.toml" >/dev/null
mkdir -p "$work/pa/src" "$work/pb"
echo a > "$work/pa/.cuenv-profile"
echo b > "$work/pb/.cuenv-profile"

hook=$("$cuenv" env --hook bash)
ms() { python3 -c "import sys; print(f'{(float(sys.argv[2]) - float(sys.argv[1])) * 1000 / float(sys.argv[3]):.3f}')" "$@"; }
out=$(bash --norc --noprofile -c "
  $hook
  cd '$work/pa/src'; __cuenv_hook
  t0=\$EPOCHREALTIME; for ((i = 0; i < $runs; i++)); do __cuenv_hook; done; t1=\$EPOCHREALTIME
  floor() { :; }
  t2=\$EPOCHREALTIME; for ((i = 0; i < $runs; i++)); do floor; done; t3=\$EPOCHREALTIME
  n=$((runs / 10)); t4=\$EPOCHREALTIME
  for ((i = 0; i < n; i++)); do cd '$work/pb'; __cuenv_hook; cd '$work/pa'; __cuenv_hook; done; t5=\$EPOCHREALTIME
  [ \"\$CUENV_PROFILE\" = a ] || { echo 'hook did not switch' >&2; exit 1; }
  echo \$t0 \$t1 \$t2 \$t3 \$t4 \$t5 \$((2 * n))
")
read -r t0 t1 t2 t3 t4 t5 switches <<<"$out"
same=$(ms "$t0" "$t1" "$runs")
floor=$(ms "$t2" "$t3" "$runs")
change=$(ms "$t4" "$t5" "$switches")
echo "hook, folder unchanged:   $same ms per prompt ($runs prompts)"
echo "empty prompt function:    $floor ms per prompt (the floor)"
echo "hook, folder changed:     $change ms per change ($switches changes between two projects)"
if command -v direnv >/dev/null; then
  mkdir -p "$work/plain"
  d0=$(python3 -c 'import time; print(time.time())')
  for ((i = 0; i < runs / 10; i++)); do (cd "$work/plain" && direnv export bash >/dev/null 2>&1); done
  d1=$(python3 -c 'import time; print(time.time())')
  echo "direnv export bash:       $(ms "$d0" "$d1" $((runs / 10))) ms per prompt (a direnv user's cost, for scale)"
  echo "ratio hook-unchanged / direnv: $(python3 -c "print(f'{$same / $(ms "$d0" "$d1" $((runs / 10))):.4f}')")"
fi
echo "ratio hook-changed / direnv-per-prompt is the cost of a cd; the goal is < 10 ms when nothing changed"
