#!/usr/bin/env bash
# Runs the Linux part of README.md's "A 60-second tour" (and the optional lines of its install
# step) as a new user would: in a clean clone of this repository's HEAD, with a fresh $HOME and
# cuenv home, running exactly the commands README shows in its ```sh tour blocks, in order, and
# failing on the first one that fails.
#
# The tour assumes what a Linux user brings: a cuDNN archive and a wheel they downloaded, an
# extracted archive folder, an installed CUDA 11.8 toolkit and PyPI. This script
# builds small stand-ins for them (no GPU, no NVIDIA server, no network):
#   - cuDNN / CUDA runtime libraries are stubs compiled with the C compiler ($CC, else cc) that
#     answer cudnnGetVersion / cudaRuntimeGetVersion, so `check` runs for real (`no-gpu`);
#   - the archive, the wheels (with a valid RECORD) and the toolkit roots are written by python3;
#   - "PyPI" is a local wheel folder (CUENV_FIND_LINKS, README "Labs without network access");
#     the index and NVIDIA mirror point at a closed loopback port, so any download the tour did
#     not declare fails instead of reaching the network;
#   - the toolkit is found through CUENV_TOOLKIT_PATHS (README "Environment variables");
#   - a project venv (`app/.venv`) holding torch 2.4.1's METADATA, for `cuenv init`.
#
# Usage: scripts/tour.sh [CUENV_BINARY]   (default: `cuenv` on PATH, else target/debug/cuenv)
# Needs: bash, git, python3, a C compiler. Exit 0 when every tour command succeeded.
# The clone is of HEAD: commit README edits before running it (or name the README to read in
# TOUR_README). Keeps its temp folder on
# failure when TOUR_KEEP=1.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$(command -v cuenv || echo "$repo/target/debug/cuenv")}
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
[ -x "$bin" ] || { echo "tour: no cuenv binary at $bin (cargo build first)" >&2; exit 2; }
cc=${CC:-cc}
for tool in git python3 "$cc"; do
  command -v "$tool" >/dev/null || { echo "tour: needs $tool" >&2; exit 2; }
done

tmp=$(mktemp -d /tmp/cuenv-tour.XXXXXX)
cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ "${TOUR_KEEP:-}" = 1 ]; then
    echo "tour: kept $tmp" >&2
  else
    chmod -R u+w "$tmp" 2>/dev/null || true
    rm -rf "$tmp"
  fi
  exit "$rc"
}
trap cleanup EXIT

# ---------------------------------------------------------------------------------------
# A clean clone, a fresh home, `cuenv` on PATH (README's install step: `cargo install --path .`).
head=$(git -C "$repo" rev-parse HEAD)
git clone -q --no-checkout "$repo" "$tmp/cuenv"
git -C "$tmp/cuenv" checkout -q "$head"
if [ -z "${TOUR_README:-}" ] && ! git -C "$repo" diff --quiet HEAD -- README.md 2>/dev/null; then
  echo "tour: note: README.md has uncommitted edits; the clone (and this run) uses HEAD's" >&2
fi
mkdir -p "$tmp/home" "$tmp/bin"
ln -s "$bin" "$tmp/bin/cuenv"

# ---------------------------------------------------------------------------------------
# What the user brings, built small: the downloaded files land in the clone's root, where the
# tour runs (a user who cloned cuenv, installed it and saved the downloads there).
have=$tmp/cuenv
mkdir -p "$tmp/stubs" "$tmp/wheels" "$tmp/toolkits"
cat >"$tmp/stubs/stub.c" <<'C'
#include <stddef.h>
#ifdef CUDART
int cudaRuntimeGetVersion(int *v) { *v = CUDART; return 0; }
const char *cudaGetErrorName(int e) { return e == 0 ? "cudaSuccess" : "cudaErrorUnknown"; }
#elif defined(VERSION)
size_t cudnnGetVersion(void) { return VERSION; }
size_t cudnnGetCudartVersion(void) { return CUDNN_CUDART; }
const char *cudnnGetErrorString(int s) { return s == 0 ? "CUDNN_STATUS_SUCCESS" : "CUDNN_STATUS_UNKNOWN"; }
int cudnnCreate(void **h) { *h = (void *)1; return 0; }
int cudnnDestroy(void *h) { (void)h; return 0; }
#endif
/* Distinct bytes per library. */
__attribute__((used)) const char stub_tag[] = TAG;
C
stub() { # stub OUT TAG [-DDEFINE...]
  local out=$1 tag=$2
  shift 2
  "$cc" -shared -fPIC -o "$tmp/stubs/$out" "$tmp/stubs/stub.c" "-DTAG=\"$tag\"" "$@"
}
stub cudnn9 cudnn9 -DVERSION=90500 -DCUDNN_CUDART=12060
stub cudnn88 cudnn88 -DVERSION=8800 -DCUDNN_CUDART=11080
stub cudnn89 cudnn89 -DVERSION=8904 -DCUDNN_CUDART=12020
stub cudart12 cudart12 -DCUDART=12060
stub cudart11 cudart11 -DCUDART=11080
for n in graph engines_precompiled engines_runtime_compiled heuristic ops cnn adv ops_infer ops_train \
  cnn_infer cnn_train adv_infer adv_train cublas12 nvrtc12; do
  stub "$n" "$n"
done

STUBS=$tmp/stubs HAVE=$have WHEELS=$tmp/wheels TOOLKITS=$tmp/toolkits python3 - <<'PY'
import base64, hashlib, io, json, os, tarfile, zipfile

stubs, have, wheels, toolkits = (os.environ[k] for k in ("STUBS", "HAVE", "WHEELS", "TOOLKITS"))
def stub(name, tag=""):
    # The same stub in two places gets a distinct tail, so no two releases share bytes.
    return open(os.path.join(stubs, name), "rb").read() + tag.encode()
SUB = {"8": ["ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train"],
       "9": ["graph", "engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn", "adv"]}
def header(v):
    a, b, c = v.split(".")[:3]
    return f"#define CUDNN_MAJOR {a}\n#define CUDNN_MINOR {b}\n#define CUDNN_PATCHLEVEL {c}\n".encode()
def cudnn_files(version, dispatcher, prefix, tag):
    major = version.split(".")[0]
    files = {f"{prefix}lib/libcudnn.so.{major}": stub(dispatcher, tag)}
    for s in SUB[major]:
        files[f"{prefix}lib/libcudnn_{s}.so.{major}"] = stub(s, tag)
    files[f"{prefix}include/cudnn_version.h"] = header(version)
    return files
def wheel(project, version, files, platform="manylinux2014_x86_64"):
    dist = f"{project.replace('-', '_')}-{version}"
    files = dict(files)
    files[f"{dist}.dist-info/METADATA"] = f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n".encode()
    files[f"{dist}.dist-info/WHEEL"] = f"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-{platform}\n".encode()
    record = "".join(
        f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}\n"
        for p, d in files.items())
    files[f"{dist}.dist-info/RECORD"] = (record + f"{dist}.dist-info/RECORD,,\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for p, d in files.items():
            z.writestr(p, d)
    return f"{dist}-py3-none-{platform}.whl", buf.getvalue()

# A cuDNN archive as NVIDIA ships it, a wheel as pip downloads it, an extracted archive folder.
stem = "cudnn-linux-x86_64-9.5.0.50_cuda12-archive"
with tarfile.open(os.path.join(have, stem + ".tar.xz"), "w:xz") as t:
    for p, d in {**cudnn_files("9.5.0.50", "cudnn9", f"{stem}/", "archive"), f"{stem}/LICENSE": b"stand-in\n"}.items():
        info = tarfile.TarInfo(p); info.size = len(d); info.mode = 0o644; info.mtime = 1_700_000_000
        t.addfile(info, io.BytesIO(d))
name, data = wheel("nvidia-cudnn-cu11", "8.8.0.121",
                   cudnn_files("8.8.0.121", "cudnn88", "nvidia/cudnn/", "wheel"), "manylinux1_x86_64")
open(os.path.join(have, name), "wb").write(data)
folder = os.path.join(have, "cudnn-linux-x86_64-8.9.4.25_cuda12-archive")
for p, d in {**cudnn_files("8.9.4.25", "cudnn89", "", "folder"), "LICENSE": b"stand-in\n"}.items():
    os.makedirs(os.path.dirname(os.path.join(folder, p)), exist_ok=True)
    open(os.path.join(folder, p), "wb").write(d)

# PyPI, as a folder of wheels: cuDNN 9.5.0.50 for CUDA 12 and the CUDA 12.6 runtime wheels.
for project, version, files in [
    ("nvidia-cudnn-cu12", "9.5.0.50", cudnn_files("9.5.0.50", "cudnn9", "nvidia/cudnn/", "pypi")),
    ("nvidia-cuda-runtime-cu12", "12.6.77", {"nvidia/cuda_runtime/lib/libcudart.so.12": stub("cudart12")}),
    ("nvidia-cublas-cu12", "12.6.4.1", {"nvidia/cublas/lib/libcublas.so.12": stub("cublas12")}),
    ("nvidia-cuda-nvrtc-cu12", "12.6.85", {"nvidia/cuda_nvrtc/lib/libnvrtc.so.12": stub("nvrtc12")}),
]:
    name, data = wheel(project, version, files)
    open(os.path.join(wheels, name), "wb").write(data)

# An installed toolkit, as the CUDA installer lays it out (version.json, bin/, lib64/).
for version, so, lib in [("11.8.89", "libcudart.so.11.0", "cudart11")]:
    root = os.path.join(toolkits, "cuda-" + ".".join(version.split(".")[:2]))
    os.makedirs(os.path.join(root, "bin")); os.makedirs(os.path.join(root, "lib64"))
    json.dump({"cuda": {"name": "CUDA SDK", "version": version}}, open(os.path.join(root, "version.json"), "w"))
    open(os.path.join(root, "lib64", so), "wb").write(stub(lib))
PY

# A project venv where `pip install torch==2.4.1` ran: what `cuenv init` reads of it is torch's
# METADATA (its Requires-Dist pins, as the real 2.4.1 wheel writes them).
sp="$have/app/.venv/lib/python3.11/site-packages"
mkdir -p "$sp/torch-2.4.1.dist-info"
printf 'home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.7\n' >"$have/app/.venv/pyvenv.cfg"
cat >"$sp/torch-2.4.1.dist-info/METADATA" <<'META'
Metadata-Version: 2.1
Name: torch
Version: 2.4.1
Requires-Dist: nvidia-cuda-runtime-cu12 (==12.1.105) ; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: nvidia-cudnn-cu12 (==9.1.0.70) ; platform_system == "Linux" and platform_machine == "x86_64"

META

# ---------------------------------------------------------------------------------------
# The tour's commands, exactly as README.md of the clone shows them.
python3 - "${TOUR_README:-$tmp/cuenv/README.md}" >"$tmp/tour.sh" <<'PY'
import sys
out, inside = [], False
for line in open(sys.argv[1], encoding="utf-8"):
    s = line.rstrip("\n")
    if not inside and s.strip() == "```sh tour":
        inside = True
    elif inside and s.strip() == "```":
        inside = False
    elif inside:
        out.append(s)
if inside or not out:
    sys.exit("tour: README.md has no closed ```sh tour block")
print("\n".join(out))
PY

# Run it: set -e (the first failing command fails the tour), -v (show each line as it runs).
cd "$have"
export HOME=$tmp/home
unset HTTPS_PROXY https_proxy HTTP_PROXY http_proxy ALL_PROXY all_proxy NO_PROXY no_proxy
unset CUENV_HOME XDG_DATA_HOME CONDA_PREFIX CONDA_EXE MAMBA_ROOT_PREFIX CUDA_HOME CUDA_PATH LD_LIBRARY_PATH CUENV_PROFILE CUENV_OFFLINE
export PATH=$tmp/bin:$PATH
export CUENV_TOOLKIT_PATHS=$tmp/toolkits/cuda-11.8
export CUENV_FIND_LINKS=$tmp/wheels
export CUENV_PYPI_INDEX=http://127.0.0.1:9/ CUENV_NVIDIA_MIRROR=http://127.0.0.1:9/redist/ CUENV_HTTP_RETRIES=0
export CUENV_LOCK_TIMEOUT=30
echo "tour: $(grep -c . "$tmp/tour.sh") lines from README.md, in $have" >&2
bash -euv -o pipefail "$tmp/tour.sh"
echo "tour: ok" >&2
