#!/usr/bin/env python3
"""Fetch single members of real NVIDIA wheels from PyPI without downloading the wheels.

A wheel is a zip: its central directory (at the end) lists every member with its offset,
so a few HTTP range requests bring one member (the dispatcher and graph library of a
cuDNN release are a few MB to ~100 MB; the whole wheel is 700+ MB). Each member is checked
against the sha256 the wheel's own RECORD lists for it (RECORD is fetched the same way),
then kept in  <cache>/members/<wheel file name>/<member base name>.

Usage: scripts/fetch-real-members.py CACHE   (members listed in WANTED below; reused when present)
Standard library only: runs on any python3 >= 3.8.
"""
import base64
import hashlib
import io
import json
import os
import sys
import time
import urllib.request
import zipfile

# (project, exact wheel file name, [member paths])
WANTED = [
    ("nvidia-cudnn-cu12", "nvidia_cudnn_cu12-9.27.0.42-py3-none-manylinux_2_27_x86_64.whl",
     ["nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/lib/libcudnn_graph.so.9", "nvidia/cudnn/lib/libcudnn_ext.so.9"]),
    ("nvidia-cudnn-cu12", "nvidia_cudnn_cu12-9.27.0.42-py3-none-win_amd64.whl",
     ["nvidia/cudnn/bin/cudnn64_9.dll", "nvidia/cudnn/bin/cudnn_graph64_9.dll"]),
    ("nvidia-cudnn-cu12", "nvidia_cudnn_cu12-9.4.0.58-py3-none-manylinux2014_x86_64.whl",
     ["nvidia/cudnn/lib/libcudnn_cnn.so.9", "nvidia/cudnn/lib/libcudnn_engines_runtime_compiled.so.9",
      "nvidia/cudnn/lib/libcudnn_heuristic.so.9"]),
    ("nvidia-cudnn-cu12", "nvidia_cudnn_cu12-9.4.0.58-py3-none-win_amd64.whl",
     ["nvidia/cudnn/bin/cudnn_cnn64_9.dll"]),
    ("nvidia-cudnn-cu12", "nvidia_cudnn_cu12-8.9.2.26-py3-none-manylinux1_x86_64.whl",
     ["nvidia/cudnn/lib/libcudnn_ops_train.so.8"]),
    # The libraries around cuDNN (docs/loader.md "CUDA library families"): NVRTC with its
    # builtins, an nvJitLink older than the cuSOLVER that imports it.
    ("nvidia-cuda-nvrtc-cu12", "nvidia_cuda_nvrtc_cu12-12.6.77-py3-none-manylinux2014_x86_64.whl",
     ["nvidia/cuda_nvrtc/lib/libnvrtc.so.12", "nvidia/cuda_nvrtc/lib/libnvrtc-builtins.so.12.6"]),
    ("nvidia-nvjitlink-cu12", "nvidia_nvjitlink_cu12-12.4.127-py3-none-manylinux2014_x86_64.whl",
     ["nvidia/nvjitlink/lib/libnvJitLink.so.12"]),
    ("nvidia-nvjitlink-cu12", "nvidia_nvjitlink_cu12-12.6.85-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
     ["nvidia/nvjitlink/lib/libnvJitLink.so.12"]),
    ("nvidia-cusparse-cu12", "nvidia_cusparse_cu12-12.5.4.2-py3-none-manylinux2014_x86_64.whl",
     ["nvidia/cusparse/lib/libcusparse.so.12"]),
    # Consumers' finders (docs/loader.md): TensorFlow 2.16.1's build facts and the library its
    # loader dlopens cuDNN from; a JAX CUDA plugin that opens cuDNN by name itself.
    ("tensorflow", "tensorflow-2.16.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
     ["tensorflow/python/platform/build_info.py", "tensorflow/libtensorflow_framework.so.2"]),
    # TensorFlow's build facts across issue 32's range, beside its tested-build table
    # (docs/requirements.md): 2.11-2.13 declare no CUDA wheels, 2.14+ in their `and-cuda` extra.
    ("tensorflow", "tensorflow-2.11.0-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", ["tensorflow/python/platform/build_info.py"]),
    ("tensorflow", "tensorflow-2.12.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", ["tensorflow/python/platform/build_info.py"]),
    ("tensorflow", "tensorflow-2.13.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", ["tensorflow/python/platform/build_info.py"]),
    ("tensorflow", "tensorflow-2.15.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", ["tensorflow/python/platform/build_info.py"]),
    ("tensorflow", "tensorflow-2.20.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", ["tensorflow/python/platform/build_info.py"]),
    # TensorFlow 2.10, the last release with GPU support on native Windows: its build facts.
    ("tensorflow", "tensorflow-2.10.1-cp310-cp310-win_amd64.whl", ["tensorflow/python/platform/build_info.py"]),
    ("jax-cuda12-pjrt", "jax_cuda12_pjrt-0.4.35-py3-none-manylinux2014_x86_64.whl",
     ["jax_plugins/xla_cuda12/xla_cuda_plugin.so"]),
    # PyTorch's Linux fallback when libtorch_global_deps.so does not load (docs/loader.md C2).
    ("torch", "torch-2.4.1-cp311-cp311-manylinux1_x86_64.whl", ["torch/__init__.py"]),
    ("torch", "torch-2.9.1-cp311-cp311-manylinux_2_28_x86_64.whl", ["torch/__init__.py"]),
    # TransformerEngine's cuDNN finder in each of its shapes (docs/loader.md C6): 2.3 (wheel
    # first), 2.7 (`ldconfig -p | grep`), 2.10 (`ldconfig -p`), 2.20 (system roots, then by
    # name, then the wheels).
    ("transformer-engine", "transformer_engine-2.3.0-py3-none-any.whl", ["transformer_engine/common/__init__.py"]),
    ("transformer-engine", "transformer_engine-2.7.0-py3-none-any.whl", ["transformer_engine/common/__init__.py"]),
    ("transformer-engine", "transformer_engine-2.10.0-py3-none-any.whl", ["transformer_engine/common/__init__.py"]),
    ("transformer-engine", "transformer_engine-2.20.2-py3-none-any.whl", ["transformer_engine/common/__init__.py"]),
    # onnxruntime-gpu's CUDA provider (the real-input suite, not the hermetic tests: 284 MB).
    ("onnxruntime-gpu", "onnxruntime_gpu-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl",
     ["onnxruntime/capi/libonnxruntime_providers_cuda.so", "onnxruntime/__init__.py",
      "onnxruntime/capi/onnxruntime_validation.py", "onnxruntime/capi/build_and_package_info.py"]),
]


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a URL through HTTP range requests."""

    def __init__(self, url, size):
        self.url, self.size, self.pos = url, size, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, off, whence=0):
        self.pos = off if whence == 0 else self.pos + off if whence == 1 else self.size + off
        return self.pos

    def readinto(self, b):
        if self.pos >= self.size or len(b) == 0:
            return 0
        end = min(self.size, self.pos + len(b)) - 1
        for attempt in range(4):
            try:
                req = urllib.request.Request(self.url, headers={"Range": "bytes=%d-%d" % (self.pos, end)})
                with urllib.request.urlopen(req, timeout=60) as r:
                    if r.status != 206:
                        raise OSError("server ignored the range request (HTTP %d)" % r.status)
                    data = r.read()
                break
            except OSError:
                if attempt == 3:
                    raise
                time.sleep(2 * (attempt + 1))
        b[: len(data)] = data
        self.pos += len(data)
        return len(data)


def files_of(project):
    req = urllib.request.Request("https://pypi.org/simple/%s/" % project, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)["files"]


def record_hashes(z, record_name):
    out = {}
    for line in z.read(record_name).decode().splitlines():
        parts = line.rsplit(",", 2)
        if len(parts) == 3 and parts[1].startswith("sha256="):
            out[parts[0]] = parts[1][len("sha256="):]
    return out


def main():
    cache = sys.argv[1]
    listings = {}
    for project, wheel, members in WANTED:
        folder = os.path.join(cache, "members", wheel)
        todo = [m for m in members if not os.path.isfile(os.path.join(folder, os.path.basename(m)))]
        if not todo:
            continue
        if project not in listings:
            listings[project] = files_of(project)
        entry = [f for f in listings[project] if f["filename"] == wheel]
        if not entry:
            sys.exit("fetch-real-members: %s is not on PyPI's index of %s" % (wheel, project))
        size = entry[0].get("size") or int(urllib.request.urlopen(urllib.request.Request(entry[0]["url"], method="HEAD")).headers["Content-Length"])
        z = zipfile.ZipFile(io.BufferedReader(RangeFile(entry[0]["url"], size), buffer_size=1 << 20))
        record = [n for n in z.namelist() if n.endswith(".dist-info/RECORD")]
        hashes = record_hashes(z, record[0])
        os.makedirs(folder, exist_ok=True)
        for m in todo:
            print("fetching %s from %s" % (m, wheel), file=sys.stderr)
            data = z.read(m)
            got = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            if hashes.get(m) != got:
                sys.exit("fetch-real-members: %s in %s does not match its RECORD hash" % (m, wheel))
            tmp = os.path.join(folder, ".part-" + os.path.basename(m))
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, os.path.join(folder, os.path.basename(m)))
    print(os.path.join(cache, "members"))


if __name__ == "__main__":
    main()
