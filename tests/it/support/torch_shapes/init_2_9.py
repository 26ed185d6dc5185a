# A stand-in written for cuenv's tests: the shape of PyTorch 2.9's Linux fallback in
# `torch/__init__.py` (`_get_cuda_dep_paths`, `_preload_cuda_deps`, `_load_global_deps` of the
# torch 2.9.1 manylinux wheel, docs/loader.md C2), with three of its CUDA libraries. The real
# files of 2.4.1 and 2.9.1 are read in the real-input suite.
import ctypes
import glob
import os
import platform
import sys


def _get_cuda_dep_paths(path: str, lib_folder: str, lib_name: str) -> list[str]:
    from torch.version import cuda as cuda_version

    nvidia_lib_paths = glob.glob(os.path.join(path, "nvidia", lib_folder, "lib", lib_name))
    if cuda_version is not None:
        maj_cuda_version = cuda_version.split(".")[0]
        nvidia_lib_paths += glob.glob(os.path.join(path, "nvidia", f"cu{maj_cuda_version}", "lib", lib_name))
    lib_paths = glob.glob(os.path.join(path, lib_folder, "lib", lib_name))
    return nvidia_lib_paths + lib_paths


def _preload_cuda_deps(lib_folder: str, lib_name: str, required: bool = True) -> None:
    lib_path = None
    for path in sys.path:
        candidate_lib_paths = _get_cuda_dep_paths(path, lib_folder, lib_name)
        if candidate_lib_paths:
            lib_path = candidate_lib_paths[0]
            break
    if not lib_path and required:
        raise ValueError(f"{lib_name} not found in the system path {sys.path}")
    if lib_path:
        ctypes.CDLL(lib_path)


def _load_global_deps() -> None:
    here = os.path.abspath(__file__)
    global_deps_lib_path = os.path.join(os.path.dirname(here), "lib", "libtorch_global_deps.so")
    try:
        ctypes.CDLL(global_deps_lib_path, mode=ctypes.RTLD_GLOBAL)
    except OSError as err:
        cuda_libs: dict[str, str] = {
            "cublas": "libcublas.so.*[0-9]",
            "cudnn": "libcudnn.so.*[0-9]",
            "cuda_runtime": "libcudart.so.*[0-9]",
        }
        is_cuda_lib_err = [lib for lib in cuda_libs.values() if lib.split(".")[0] in err.args[0]]
        if not is_cuda_lib_err:
            raise err
        for lib_folder, lib_name in cuda_libs.items():
            _preload_cuda_deps(lib_folder, lib_name)
        ctypes.CDLL(global_deps_lib_path, mode=ctypes.RTLD_GLOBAL)


_load_global_deps()
