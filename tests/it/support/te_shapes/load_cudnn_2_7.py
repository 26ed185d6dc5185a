# A stand-in written for cuenv's tests: the shape of TransformerEngine 2.7's cuDNN finder
# (`transformer_engine/common/__init__.py` of the `transformer_engine` 2.7.0 wheel on PyPI,
# docs/loader.md C6): CUDNN_HOME or CUDNN_PATH, CUDA_HOME or CUDA_PATH or /usr/local/cuda,
# the nvidia wheel, `ldconfig -p | grep`, then the load by name. The real files are read in
# the real-input suite (finders::real_transformer_engine_...).
import ctypes
import functools
import glob
import os
import platform
import subprocess
import sysconfig

def _get_sys_extension():
    system = platform.system()
    if system == "Linux":
        return ".so"
    raise RuntimeError("no")


def _load_nvidia_cuda_library(lib_name: str):
    so_paths = glob.glob(
        os.path.join(
            sysconfig.get_path("purelib"),
            f"nvidia/{lib_name}/lib/lib*{_get_sys_extension()}.*[0-9]",
        )
    )
    handles = [ctypes.CDLL(so_path, mode=ctypes.RTLD_GLOBAL) for so_path in so_paths]
    return len(so_paths) > 0, handles


@functools.lru_cache(maxsize=None)
def _load_cudnn():
    """Load CUDNN shared library."""

    # Attempt to locate cuDNN in CUDNN_HOME or CUDNN_PATH, if either is set
    cudnn_home = os.environ.get("CUDNN_HOME") or os.environ.get("CUDNN_PATH")
    if cudnn_home:
        libs = glob.glob(f"{cudnn_home}/**/libcudnn{_get_sys_extension()}*", recursive=True)
        libs.sort(reverse=True, key=os.path.basename)
        if libs:
            return ctypes.CDLL(libs[0], mode=ctypes.RTLD_GLOBAL)

    # Attempt to locate cuDNN in CUDA_HOME, CUDA_PATH or /usr/local/cuda
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    libs = glob.glob(f"{cuda_home}/**/libcudnn{_get_sys_extension()}*", recursive=True)
    libs.sort(reverse=True, key=os.path.basename)
    if libs:
        return ctypes.CDLL(libs[0], mode=ctypes.RTLD_GLOBAL)

    # Attempt to locate cuDNN in Python dist-packages
    found, handle = _load_nvidia_cuda_library("cudnn")
    if found:
        return handle

    # Attempt to locate libcudnn via ldconfig
    libs = subprocess.check_output(
        f"ldconfig -p | grep 'libcudnn{_get_sys_extension()}'", shell=True
    )
    libs = libs.decode("utf-8").split("\n")
    sos = []
    for lib in libs:
        if "libcudnn" in lib and "=>" in lib:
            sos.append(lib.split(">")[1].strip())
    if sos:
        return ctypes.CDLL(sos[0], mode=ctypes.RTLD_GLOBAL)

    # If all else fails, assume that it is in LD_LIBRARY_PATH and error out otherwise
    return ctypes.CDLL(f"libcudnn{_get_sys_extension()}", mode=ctypes.RTLD_GLOBAL)


def _load_nvrtc():
    return ctypes.CDLL("libnvrtc.so")
