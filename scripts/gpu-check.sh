#!/usr/bin/env bash
# On a machine with an NVIDIA driver: import the machine's own cuDNN (from a Python that has
# an nvidia-cudnn-cu* wheel, e.g. the one PyTorch uses) into a fresh cuenv home, declare one
# profile on the machine's CUDA toolkit (CUDA_HOME, /usr/local/cuda) or, without one, on a
# toolkit root made from the nvidia/cuda_runtime wheel, apply it, and run
# `cuenv check --json --require-gpu` (a real cuDNN convolution checked against a CPU reference).
# Then time, in the same run, the PyTorch-style check users do today against `cuenv check`.
#
# Usage: scripts/gpu-check.sh [OUT_DIR]   (CUENV_BIN: the cuenv binary, default target/release/cuenv;
#                                          PYTHON: the interpreter, default python3)
# Writes OUT_DIR/check.json, OUT_DIR/timings.txt and OUT_DIR/doctor-{profile,machine}.json;
# exits non-zero if the check fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${1:-${OUT:-$(mktemp -d)}}
mkdir -p "$out"
cuenv=${CUENV_BIN:-target/release/cuenv}
py=${PYTHON:-python3}
home=$(mktemp -d)
trap 'chmod -R u+w "$home"; rm -rf "$home"' EXIT

cudnn_dir=$("$py" -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) if nvidia.cudnn.__file__ else list(nvidia.cudnn.__path__)[0])')
echo "cuDNN from $cudnn_dir"
"$cuenv" --home "$home" --quiet store add "$cudnn_dir" --json | tee "$out/store-add.json"
cuda_major=$("$cuenv" --home "$home" store list --json | "$py" -c 'import json,sys; print(json.load(sys.stdin)[0]["cuda_major"])')

root=""
for cand in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  if [[ -n $cand && -f $cand/version.json ]]; then root=$cand; break; fi
done
if [[ -z $root ]]; then
  # No toolkit: a root laid out like one, from the runtime wheel next to cuDNN.
  nv=$(dirname "$cudnn_dir")
  cudart=$(find "$nv" -name 'libcudart.so.*' | head -n1)
  [[ -n $cudart ]] || { echo "no CUDA toolkit and no libcudart in $nv" >&2; exit 2; }
  root=$home/cuda-runtime
  mkdir -p "$root/lib64"
  find "$nv" \( -name 'libcudart.so*' -o -name 'libcublas*.so*' -o -name 'libnvrtc*.so*' \) -exec cp {} "$root/lib64/" \;
  ver=$(basename "$cudart" | sed 's/libcudart\.so\.//')
  [[ $ver == *.* ]] || ver="$cuda_major.0"
  printf '{"cuda": {"name": "CUDA SDK", "version": "%s"}}\n' "$ver" > "$root/version.json"
fi
echo "toolkit root: $root"
cat > "$home/lab.toml" <<TOML
[toolkits]
"gpu" = '$root'

[profiles.gpu]
cuda = "$cuda_major"
cudnn = "*"
TOML
"$cuenv" --home "$home" apply --require-gpu "$home/lab.toml" || echo "apply reported a failed check (exit $?); the report below says why"

start=$(date +%s.%N)
status=0
"$cuenv" --home "$home" check --json --require-gpu > "$out/check.json" || status=$?
end=$(date +%s.%N)
cuenv_s=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", b - a}')

torch_s=n/a
if "$py" -c 'import torch' 2>/dev/null; then
  start=$(date +%s.%N)
  "$py" - <<'PY'
import torch
x = torch.randn(2, 3, 16, 16, device="cuda")
w = torch.randn(4, 3, 3, 3, device="cuda")
torch.backends.cudnn.allow_tf32 = False
y = torch.nn.functional.conv2d(x, w, padding=1)
ref = torch.nn.functional.conv2d(x.cpu(), w.cpu(), padding=1)
assert (y.cpu() - ref).abs().max().item() < 1e-4
print("torch cuDNN", torch.backends.cudnn.version())
PY
  end=$(date +%s.%N)
  torch_s=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", b - a}')
fi
{
  echo "cuenv check (1 profile, conv): ${cuenv_s} s"
  echo "PyTorch conv2d check:          ${torch_s} s"
  [[ $torch_s != n/a ]] && awk -v a="$cuenv_s" -v b="$torch_s" 'BEGIN {printf "PyTorch / cuenv: %.1fx\n", b / a}'
} | tee "$out/timings.txt"
# What `cuenv doctor` sees inside the activated profile, and in the machine's own environment.
( eval "$("$cuenv" --home "$home" env gpu --shell bash)"; "$cuenv" --home "$home" doctor --json > "$out/doctor-profile.json" ) || true
"$cuenv" --home "$home" doctor --json > "$out/doctor-machine.json" || true
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); [print(p["profile"], p["result"]["status"], [r["message"] for r in p["result"]["reasons"]]) for p in d["profiles"]]' "$out/check.json"
exit "$status"
