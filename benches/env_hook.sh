#!/usr/bin/env bash
# Benchmark: what the env hook (docs/design.md, "The env hook") adds to every start of a
# bound env's interpreter. A venv bound with `python-env` to a profile whose store entry is the
# real nvidia-cudnn-cu12 9.5.0.50 manylinux wheel; `python -c pass` started RUNS times by full
# path in each of three states, interleaved, best of 3 rounds of medians:
#   without   no hook file in the venv (the baseline: what starting that Python costs anyway),
#   off       the hook file, with CUENV_PYTHON_HOOK=0 (site reads and compiles it, then returns),
#   on        the hook: two dlopen()s of the profile's dispatcher and graph, the variables.
# Ratios are of this run. Usage: benches/env_hook.sh   (RUNS=40 by default; target/release/cuenv)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${RUNS:-40}
cache=$(scripts/fetch-real-wheels.sh | tail -n1)
cargo build --release -q
cuenv=$PWD/target/release/cuenv
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
export CUENV_HOME=$work/home
tk=$work/cuda-12.6
mkdir -p "$tk/lib64" "$tk/bin"
python3 -c "import zipfile,sys; zipfile.ZipFile(sys.argv[1]).extract('nvidia/cuda_runtime/lib/libcudart.so.12', sys.argv[2])" \
  "$(ls "$cache"/nvidia_cuda_runtime_cu12-12.6.77-*manylinux*.whl)" "$work/rt"
cp "$work"/rt/nvidia/cuda_runtime/lib/libcudart.so.12 "$tk/lib64/"
echo '{"cuda": {"name": "CUDA SDK", "version": "12.6.77"}}' > "$tk/version.json"
"$cuenv" --quiet store add "$cache"/nvidia_cudnn_cu12-9.5.0.50-*manylinux*.whl >/dev/null
python3 -m venv --without-pip "$work/proj/.venv"
cat > "$work/lab.toml" <<TOML
[toolkits]
"12.6" = "$tk"

[profiles.torch]
cuda = "12.6"
cudnn = "9.5"
python-env = "proj"
check = "none"
TOML
"$cuenv" --quiet apply "$work/lab.toml" >/dev/null
hook=$(ls "$work"/proj/.venv/lib/python3*/site-packages/00-cuenv-torch.pth)
cp "$hook" "$work/hook.pth"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/proj/.venv/bin/python" "$hook" "$work/hook.pth" "$runs" <<'PY'
import os, shutil, statistics, subprocess, sys, time
py, hook, saved, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
env = {k: v for k, v in os.environ.items() if k not in ("CUENV_PYTHON_HOOK", "LD_LIBRARY_PATH", "VIRTUAL_ENV")}
def start(extra):
    t = time.perf_counter()
    subprocess.run([py, "-c", "pass"], env={**env, **extra}, check=True)
    return time.perf_counter() - t
states = {
    "without": (lambda: os.path.exists(hook) and os.remove(hook), {}),
    "off": (lambda: shutil.copy(saved, hook), {"CUENV_PYTHON_HOOK": "0"}),
    "on": (lambda: shutil.copy(saved, hook), {}),
}
# The hook really loads the profile's files (else the numbers would measure nothing).
shutil.copy(saved, hook)
maps = subprocess.run([py, "-c", "print(open('/proc/self/maps').read())"], env=env, capture_output=True, text=True, check=True).stdout
assert "libcudnn_graph.so.9" in maps and "libcudnn.so.9" in maps, "the hook mapped no cuDNN"
best = {}
for _ in range(3):
    for name, (prepare, extra) in states.items():
        prepare()
        start(extra)  # warm
        med = statistics.median(start(extra) for _ in range(runs))
        best[name] = min(best.get(name, med), med)
base = best["without"]
for name in states:
    print(f"{name:8} {best[name] * 1000:7.2f} ms  {best[name] / base:5.2f}x without  (+{(best[name] - base) * 1000:.2f} ms)")
PY
