# A stand-in written for cuenv's tests: the shape of TransformerEngine 2.20's cuDNN finder
# (`transformer_engine/common/__init__.py` of the `transformer_engine` 2.20.2 wheel on PyPI,
# docs/loader.md C6): each of CUDNN_HOME, CUDNN_PATH, CUDA_HOME, CUDA_PATH, /usr/local/cuda in
# turn, the load by name, then the nvidia wheels; and the oldest cuDNN its import accepts.
import ctypes
import functools
import glob
import os
import platform
import sysconfig

MIN_CUDNN_VERSION = (9, 12, 0)


def check_cudnn_version(encoded):
    if encoded < 91200:
        raise RuntimeError("Transformer Engine requires cuDNN 9.12.0 or later")


@functools.lru_cache(maxsize=None)
def _get_sys_extension() -> str:
    system = platform.system()
    if system == "Linux":
        return ".so"
    raise RuntimeError(f"Unsupported operating system ({system})")


@functools.lru_cache(maxsize=None)
def _load_cuda_library_from_python(lib_name: str, strict: bool = False):
    ext = _get_sys_extension()
    nvidia_dir = os.path.join(sysconfig.get_path("purelib"), "nvidia")
    so_paths = glob.glob(os.path.join(nvidia_dir, "cu13", lib_name, f"lib/lib*{ext}.*[0-9]"))
    if not so_paths:
        so_paths = glob.glob(os.path.join(nvidia_dir, lib_name, f"lib/lib*{ext}.*[0-9]"))
    handles = []
    for so_path in so_paths:
        handles.append(ctypes.CDLL(so_path, mode=ctypes.RTLD_GLOBAL))
    return len(so_paths) > 0, handles


@functools.lru_cache(maxsize=None)
def _load_cuda_library_from_system(lib_name: str):
    paths = (
        os.environ.get(f"{lib_name.upper()}_HOME"),
        os.environ.get(f"{lib_name.upper()}_PATH"),
        os.environ.get("CUDA_HOME"),
        os.environ.get("CUDA_PATH"),
        "/usr/local/cuda",
    )

    for path in paths:
        if path is None:
            continue
        libs = glob.glob(f"{path}/**/lib{lib_name}{_get_sys_extension()}*", recursive=True)
        libs = [lib for lib in libs if "stub" not in lib]
        libs.sort(reverse=True, key=os.path.basename)
        if libs:
            return True, ctypes.CDLL(libs[0], mode=ctypes.RTLD_GLOBAL)

    try:
        return True, ctypes.CDLL(f"lib{lib_name}{_get_sys_extension()}", mode=ctypes.RTLD_GLOBAL)
    except OSError:
        return False, None


@functools.lru_cache(maxsize=None)
def _load_cuda_library(lib_name: str):
    found, handle = _load_cuda_library_from_system(lib_name)
    if found:
        return True, handle
    found, handle = _load_cuda_library_from_python(lib_name)
    if found:
        return False, handle
    raise RuntimeError(f"{lib_name} shared object not found.")


_, _CUDNN_LIB_CTYPES = _load_cuda_library("cudnn")
check_cudnn_version(91200)
