//! Function-pointer types and thin wrappers for the cuDNN, CUDA runtime and CUDA driver calls
//! the probe makes. Every prototype and enum value is copied from the real headers:
//! cuDNN 9.5 `cudnn_graph.h`, `cudnn_ops.h`, `cudnn_cnn.h` and cuDNN 8.9 `cudnn_ops_infer.h`,
//! `cudnn_cnn_infer.h` (identical for the calls used here), CUDA 12.6 `cuda.h`,
//! `cuda_runtime_api.h`, `driver_types.h`.
//!
//! `CUDNNWINAPI`, `CUDAAPI` and `CUDARTAPI` are `__stdcall` on Windows, which is the C
//! convention on x86-64; `extern "system"` is right on both platforms.
//!
//! Symbols are looked up by name and may be absent (e.g. `cudnnGetMaxDeviceVersion` in old
//! releases); absent symbols become `None`, never a crash.

use std::ffi::{c_char, c_int, c_uint, c_void};

use libloading::Library;

use super::{CudnnVersions, Device, Driver, Status, c_str};

/// `cudnnStatus_t`, `cudaError_t`, `CUresult`: C enums, passed as `int`.
pub type CStatus = c_int;
/// `cudnnHandle_t` and the descriptor handles: opaque pointers.
pub type Handle = *mut c_void;

// ---- cuDNN enum values (cudnn_graph.h 9.5 / cudnn_ops_infer.h 8.9: same values) ----
/// `CUDNN_TENSOR_NCHW`.
pub const CUDNN_TENSOR_NCHW: c_int = 0;
/// `CUDNN_DATA_FLOAT`.
pub const CUDNN_DATA_FLOAT: c_int = 0;
/// `CUDNN_CROSS_CORRELATION` (what frameworks call convolution: no filter flip).
pub const CUDNN_CROSS_CORRELATION: c_int = 1;
/// `CUDNN_FMA_MATH`: FMA kernels only, so no TF32 tensor-core path. (`CUDNN_DEFAULT_MATH`
/// permits TF32 on Ampere and later, per the cuDNN API reference for `cudnnMathType_t`.)
pub const CUDNN_FMA_MATH: c_int = 3;

/// `cudnnConvolutionFwdAlgo_t` names, indexed by value (cudnn_ops.h 9.5, cudnn_ops_infer.h 8.9).
pub const FWD_ALGO_NAMES: [&str; 8] = [
    "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM",
    "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM",
    "CUDNN_CONVOLUTION_FWD_ALGO_GEMM",
    "CUDNN_CONVOLUTION_FWD_ALGO_DIRECT",
    "CUDNN_CONVOLUTION_FWD_ALGO_FFT",
    "CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING",
    "CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD",
    "CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED",
];
/// `CUDNN_CONVOLUTION_FWD_ALGO_COUNT`.
pub const FWD_ALGO_COUNT: c_int = 8;

/// The name of a forward algorithm value.
pub fn fwd_algo_name(algo: c_int) -> String {
    usize::try_from(algo).ok().and_then(|i| FWD_ALGO_NAMES.get(i)).map_or_else(|| format!("algo {algo}"), |s| s.to_string())
}

/// `cudnnConvolutionFwdAlgoPerf_t` (cudnn_cnn.h 9.5 = cudnn_cnn_infer.h 8.9).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct FwdAlgoPerf {
    pub algo: c_int,
    pub status: CStatus,
    pub time: f32,
    pub memory: usize,
    pub determinism: c_int,
    pub math_type: c_int,
    pub reserved: [c_int; 3],
}

// ---- cuDNN prototypes ----
type FnSizeT = unsafe extern "system" fn() -> usize;
type FnErrorString = unsafe extern "system" fn(CStatus) -> *const c_char;
type FnCreate = unsafe extern "system" fn(*mut Handle) -> CStatus;
/// `cudnnStatus_t cudnn<Sub>VersionCheck(void)`: 8.x `cudnn_{ops,cnn,adv}_{infer,train}.h`,
/// 9.x `cudnn_{graph,ops,cnn,adv}.h` (9.5: `cudnnStatus_t CUDNNWINAPI cudnnCnnVersionCheck(void);`).
type FnVersionCheck = unsafe extern "system" fn() -> CStatus;
type FnDestroy = unsafe extern "system" fn(Handle) -> CStatus;
/// `cudnnSetTensor4dDescriptor(desc, format, dataType, n, c, h, w)`.
pub type FnSetTensor4d = unsafe extern "system" fn(Handle, c_int, c_int, c_int, c_int, c_int, c_int) -> CStatus;
/// `cudnnSetFilter4dDescriptor(desc, dataType, format, k, c, h, w)` (note: type before format).
pub type FnSetFilter4d = unsafe extern "system" fn(Handle, c_int, c_int, c_int, c_int, c_int, c_int) -> CStatus;
/// `cudnnSetConvolution2dDescriptor(desc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, computeType)`.
pub type FnSetConv2d = unsafe extern "system" fn(Handle, c_int, c_int, c_int, c_int, c_int, c_int, c_int, c_int) -> CStatus;
/// `cudnnSetConvolutionMathType(desc, mathType)`.
pub type FnSetMathType = unsafe extern "system" fn(Handle, c_int) -> CStatus;
/// `cudnnGetConvolution2dForwardOutputDim(conv, x, w, *n, *c, *h, *w)`.
pub type FnOutputDim = unsafe extern "system" fn(Handle, Handle, Handle, *mut c_int, *mut c_int, *mut c_int, *mut c_int) -> CStatus;
/// `cudnnFindConvolutionForwardAlgorithm(handle, x, w, conv, y, requested, *returned, *perf)`.
pub type FnFindFwd = unsafe extern "system" fn(Handle, Handle, Handle, Handle, Handle, c_int, *mut c_int, *mut FwdAlgoPerf) -> CStatus;
/// `cudnnGetConvolutionForwardWorkspaceSize(handle, x, w, conv, y, algo, *size)`.
pub type FnWorkspace = unsafe extern "system" fn(Handle, Handle, Handle, Handle, Handle, c_int, *mut usize) -> CStatus;
/// `cudnnConvolutionForward(handle, alpha, xDesc, x, wDesc, w, convDesc, algo, ws, wsSize, beta, yDesc, y)`.
pub type FnConvFwd = unsafe extern "system" fn(
    Handle,
    *const c_void,
    Handle,
    *const c_void,
    Handle,
    *const c_void,
    Handle,
    c_int,
    *mut c_void,
    usize,
    *const c_void,
    Handle,
    *mut c_void,
) -> CStatus;

// ---- CUDA runtime prototypes (cuda_runtime_api.h) ----
type FnRtGetVersion = unsafe extern "system" fn(*mut c_int) -> CStatus;
/// `cudaMalloc(void **devPtr, size_t size)`.
pub type FnMalloc = unsafe extern "system" fn(*mut *mut c_void, usize) -> CStatus;
/// `cudaFree(void *devPtr)`.
pub type FnFree = unsafe extern "system" fn(*mut c_void) -> CStatus;
/// `cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)`.
pub type FnMemcpy = unsafe extern "system" fn(*mut c_void, *const c_void, usize, c_int) -> CStatus;
/// `cudaDeviceSynchronize(void)`.
pub type FnSync = unsafe extern "system" fn() -> CStatus;
/// `cudaMemcpyHostToDevice` (driver_types.h).
pub const CUDA_MEMCPY_HOST_TO_DEVICE: c_int = 1;
/// `cudaMemcpyDeviceToHost` (driver_types.h).
pub const CUDA_MEMCPY_DEVICE_TO_HOST: c_int = 2;

// ---- CUDA driver prototypes (cuda.h) ----
type FnCuInit = unsafe extern "system" fn(c_uint) -> CStatus;
type FnCuIntOut = unsafe extern "system" fn(*mut c_int) -> CStatus;
type FnCuDeviceGet = unsafe extern "system" fn(*mut c_int, c_int) -> CStatus;
type FnCuDeviceGetName = unsafe extern "system" fn(*mut c_char, c_int, c_int) -> CStatus;
type FnCuDeviceGetAttribute = unsafe extern "system" fn(*mut c_int, c_int, c_int) -> CStatus;
type FnCuDeviceTotalMem = unsafe extern "system" fn(*mut usize, c_int) -> CStatus;
type FnCuGetErrorName = unsafe extern "system" fn(CStatus, *mut *const c_char) -> CStatus;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;

/// Looks up `name` and copies the function pointer out. The library is never unloaded, so
/// the pointer outlives the borrow.
fn sym<T: Copy>(lib: &Library, name: &str) -> Option<T> {
    // SAFETY: `T` is the exact prototype from the headers (see the types above).
    unsafe { lib.get::<T>(name).ok().map(|s| *s) }
}

/// The cuDNN calls, looked up once.
pub struct Cudnn {
    get_version: Option<FnSizeT>,
    get_cudart_version: Option<FnSizeT>,
    get_max_device_version: Option<FnSizeT>,
    error_string: Option<FnErrorString>,
    create: Option<FnCreate>,
    destroy: Option<FnDestroy>,
    pub create_tensor: Option<FnCreate>,
    pub destroy_tensor: Option<FnDestroy>,
    pub set_tensor_4d: Option<FnSetTensor4d>,
    pub create_filter: Option<FnCreate>,
    pub destroy_filter: Option<FnDestroy>,
    pub set_filter_4d: Option<FnSetFilter4d>,
    pub create_conv: Option<FnCreate>,
    pub destroy_conv: Option<FnDestroy>,
    pub set_conv_2d: Option<FnSetConv2d>,
    pub set_math_type: Option<FnSetMathType>,
    pub output_dim: Option<FnOutputDim>,
    pub find_fwd: Option<FnFindFwd>,
    pub workspace: Option<FnWorkspace>,
    pub conv_fwd: Option<FnConvFwd>,
}

impl Cudnn {
    pub fn new(lib: &Library) -> Self {
        Cudnn {
            get_version: sym(lib, "cudnnGetVersion"),
            get_cudart_version: sym(lib, "cudnnGetCudartVersion"),
            get_max_device_version: sym(lib, "cudnnGetMaxDeviceVersion"),
            error_string: sym(lib, "cudnnGetErrorString"),
            create: sym(lib, "cudnnCreate"),
            destroy: sym(lib, "cudnnDestroy"),
            create_tensor: sym(lib, "cudnnCreateTensorDescriptor"),
            destroy_tensor: sym(lib, "cudnnDestroyTensorDescriptor"),
            set_tensor_4d: sym(lib, "cudnnSetTensor4dDescriptor"),
            create_filter: sym(lib, "cudnnCreateFilterDescriptor"),
            destroy_filter: sym(lib, "cudnnDestroyFilterDescriptor"),
            set_filter_4d: sym(lib, "cudnnSetFilter4dDescriptor"),
            create_conv: sym(lib, "cudnnCreateConvolutionDescriptor"),
            destroy_conv: sym(lib, "cudnnDestroyConvolutionDescriptor"),
            set_conv_2d: sym(lib, "cudnnSetConvolution2dDescriptor"),
            set_math_type: sym(lib, "cudnnSetConvolutionMathType"),
            output_dim: sym(lib, "cudnnGetConvolution2dForwardOutputDim"),
            find_fwd: sym(lib, "cudnnFindConvolutionForwardAlgorithm"),
            workspace: sym(lib, "cudnnGetConvolutionForwardWorkspaceSize"),
            conv_fwd: sym(lib, "cudnnConvolutionForward"),
        }
    }

    /// The three version calls, each announced as a step (any of them may abort the process
    /// when a sub-library is missing). `None` when `cudnnGetVersion` is not exported.
    pub fn versions(&self) -> Option<CudnnVersions> {
        let call = |name: &str, f: Option<FnSizeT>| {
            f.map(|f| {
                super::step(name);
                // SAFETY: `size_t f(void)` per cudnn_graph.h / cudnn_ops_infer.h.
                unsafe { f() as u64 }
            })
        };
        let version = call("cudnnGetVersion", self.get_version)?;
        let cudart_version = call("cudnnGetCudartVersion", self.get_cudart_version).unwrap_or(0);
        let max_device_version = call("cudnnGetMaxDeviceVersion", self.get_max_device_version);
        Some(CudnnVersions { version, cudart_version, max_device_version })
    }

    /// A status with its name from `cudnnGetErrorString`.
    pub fn status(&self, code: CStatus) -> Status {
        let name = self
            .error_string
            // SAFETY: `const char *cudnnGetErrorString(cudnnStatus_t)`; static storage.
            .and_then(|f| c_str(unsafe { f(code) }))
            .unwrap_or_else(|| format!("cuDNN status {code}"));
        Status { code: code as i64, name }
    }

    /// Calls the exported `cudnn<Sub>VersionCheck` named `name` in `lib` (announced as a step:
    /// the dispatcher forwards it to the sub-library, loading it by name, and aborts the
    /// process when it cannot). `None` when `lib` does not export `name`.
    pub fn version_check(&self, lib: &Library, name: &str) -> Option<Status> {
        let f: FnVersionCheck = sym(lib, name)?;
        super::step(name);
        // SAFETY: `cudnnStatus_t f(void)` per the headers above.
        Some(self.status(unsafe { f() }))
    }

    /// `cudnnCreate`: the status, and the handle (valid only when the status is success).
    pub fn create(&self) -> Option<(Status, Handle)> {
        let f = self.create?;
        let mut h: Handle = std::ptr::null_mut();
        // SAFETY: `cudnnStatus_t cudnnCreate(cudnnHandle_t *handle)`.
        let s = unsafe { f(&mut h) };
        Some((self.status(s), h))
    }

    /// `cudnnDestroy` on a handle `create` made.
    pub fn destroy(&self, h: Handle) {
        if let Some(f) = self.destroy {
            // SAFETY: `h` came from a successful cudnnCreate.
            unsafe { f(h) };
        }
    }
}

/// The CUDA runtime calls the probe may need.
pub struct Runtime {
    get_version: Option<FnRtGetVersion>,
    error_name: Option<FnErrorString>,
    malloc: Option<FnMalloc>,
    free: Option<FnFree>,
    memcpy: Option<FnMemcpy>,
    sync: Option<FnSync>,
}

/// The runtime calls the convolution needs, all present.
#[derive(Clone, Copy)]
pub struct RuntimeApi {
    error_name: Option<FnErrorString>,
    pub malloc: FnMalloc,
    pub free: FnFree,
    pub memcpy: FnMemcpy,
    pub sync: FnSync,
}

impl Runtime {
    pub fn new(lib: &Library) -> Self {
        Runtime {
            get_version: sym(lib, "cudaRuntimeGetVersion"),
            error_name: sym(lib, "cudaGetErrorName"),
            malloc: sym(lib, "cudaMalloc"),
            free: sym(lib, "cudaFree"),
            memcpy: sym(lib, "cudaMemcpy"),
            sync: sym(lib, "cudaDeviceSynchronize"),
        }
    }

    /// `cudaRuntimeGetVersion`: the version, or the error status. CUDA 12's runtime answers
    /// without a driver; CUDA 11.8's returns `cudaErrorInsufficientDriver` (35) then.
    pub fn runtime_version(&self) -> Result<i64, Status> {
        let Some(f) = self.get_version else {
            return Err(Status { code: -1, name: "cudaRuntimeGetVersion is not exported".into() });
        };
        super::step("cudaRuntimeGetVersion");
        let mut v: c_int = 0;
        // SAFETY: `cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)`.
        let s = unsafe { f(&mut v) };
        if s == 0 { Ok(v as i64) } else { Err(RuntimeApi::status_with(self.error_name, s)) }
    }

    /// The calls the convolution needs, when all are exported.
    pub fn ok(&self) -> Option<RuntimeApi> {
        Some(RuntimeApi { error_name: self.error_name, malloc: self.malloc?, free: self.free?, memcpy: self.memcpy?, sync: self.sync? })
    }
}

impl RuntimeApi {
    /// A runtime status with its `cudaGetErrorName` name.
    pub fn status(&self, code: CStatus) -> Status {
        Self::status_with(self.error_name, code)
    }

    fn status_with(error_name: Option<FnErrorString>, code: CStatus) -> Status {
        let name = error_name
            // SAFETY: `const char *cudaGetErrorName(cudaError_t)`; static storage.
            .and_then(|f| c_str(unsafe { f(code) }))
            .unwrap_or_else(|| format!("cudaError {code}"));
        Status { code: code as i64, name }
    }
}

// ---- NVML (nvml.h): the driver release ----
type FnNvmlInit = unsafe extern "system" fn() -> c_int;
type FnNvmlDriverVersion = unsafe extern "system" fn(*mut c_char, c_uint) -> c_int;

/// The driver release (`580.65.06`) from NVML's `nvmlSystemGetDriverVersion`, after
/// `nvmlInit_v2`; `None` when either is missing or fails. NVML is left initialised (the
/// probe process ends soon after).
pub fn nvml_driver_release(lib: &Library) -> Option<String> {
    let init: FnNvmlInit = sym(lib, "nvmlInit_v2")?;
    let get: FnNvmlDriverVersion = sym(lib, "nvmlSystemGetDriverVersion")?;
    // SAFETY: `nvmlReturn_t nvmlInit_v2(void)`.
    if unsafe { init() } != 0 {
        return None;
    }
    // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE is 80.
    let mut buf = [0 as c_char; 96];
    // SAFETY: `nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)`.
    if unsafe { get(buf.as_mut_ptr(), buf.len() as c_uint) } != 0 {
        return None;
    }
    buf[buf.len() - 1] = 0;
    c_str(buf.as_ptr()).filter(|s| !s.is_empty())
}

/// The driver API calls.
pub struct DriverApi {
    init: Option<FnCuInit>,
    driver_get_version: Option<FnCuIntOut>,
    device_get_count: Option<FnCuIntOut>,
    device_get: Option<FnCuDeviceGet>,
    device_get_name: Option<FnCuDeviceGetName>,
    device_get_attribute: Option<FnCuDeviceGetAttribute>,
    device_total_mem: Option<FnCuDeviceTotalMem>,
    get_error_name: Option<FnCuGetErrorName>,
}

impl DriverApi {
    pub fn new(lib: &Library) -> Self {
        DriverApi {
            init: sym(lib, "cuInit"),
            driver_get_version: sym(lib, "cuDriverGetVersion"),
            device_get_count: sym(lib, "cuDeviceGetCount"),
            device_get: sym(lib, "cuDeviceGet"),
            device_get_name: sym(lib, "cuDeviceGetName"),
            device_get_attribute: sym(lib, "cuDeviceGetAttribute"),
            // cuda.h: `#define cuDeviceTotalMem cuDeviceTotalMem_v2`.
            device_total_mem: sym(lib, "cuDeviceTotalMem_v2"),
            get_error_name: sym(lib, "cuGetErrorName"),
        }
    }

    fn status(&self, code: CStatus) -> Status {
        let mut p: *const c_char = std::ptr::null();
        let name = self
            .get_error_name
            // SAFETY: `CUresult cuGetErrorName(CUresult error, const char **pStr)`.
            .and_then(|f| if unsafe { f(code, &mut p) } == 0 { c_str(p) } else { None })
            .unwrap_or_else(|| format!("CUresult {code}"));
        Status { code: code as i64, name }
    }

    /// Driver version, `cuInit`, and every device's name, compute capability and memory.
    pub fn query(&self, library: &str, step: fn(&str)) -> Driver {
        let mut d = Driver {
            library: library.to_string(),
            version: None,
            release: None,
            init: Status { code: -1, name: "cuInit not exported".into() },
            devices: Vec::new(),
        };
        if let Some(f) = self.driver_get_version {
            step("cuDriverGetVersion");
            let mut v: c_int = 0;
            // SAFETY: `CUresult cuDriverGetVersion(int *driverVersion)`.
            if unsafe { f(&mut v) } == 0 {
                d.version = Some(v as i64);
            }
        }
        let Some(init) = self.init else { return d };
        step("cuInit");
        // SAFETY: `CUresult cuInit(unsigned int Flags)`; Flags must be 0.
        d.init = self.status(unsafe { init(0) });
        if !d.init.ok() {
            return d;
        }
        let (Some(count), Some(get)) = (self.device_get_count, self.device_get) else { return d };
        step("cuDeviceGetCount");
        let mut n: c_int = 0;
        // SAFETY: `CUresult cuDeviceGetCount(int *count)`.
        if unsafe { count(&mut n) } != 0 {
            return d;
        }
        for i in 0..n.max(0) {
            let mut dev: c_int = 0;
            // SAFETY: `CUresult cuDeviceGet(CUdevice *device, int ordinal)`; CUdevice is int.
            if unsafe { get(&mut dev, i) } != 0 {
                continue;
            }
            let mut name = [0 as c_char; 256];
            if let Some(f) = self.device_get_name {
                // SAFETY: `CUresult cuDeviceGetName(char *name, int len, CUdevice dev)`.
                unsafe { f(name.as_mut_ptr(), name.len() as c_int, dev) };
            }
            let attr = |a: c_int| {
                let mut v: c_int = 0;
                if let Some(f) = self.device_get_attribute {
                    // SAFETY: `CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)`.
                    unsafe { f(&mut v, a, dev) };
                }
                v
            };
            let mut mem: usize = 0;
            if let Some(f) = self.device_total_mem {
                // SAFETY: `CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)`.
                unsafe { f(&mut mem, dev) };
            }
            name[name.len() - 1] = 0;
            d.devices.push(Device {
                index: i as u32,
                name: c_str(name.as_ptr()).unwrap_or_default(),
                compute_capability: [attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)],
                total_memory: mem as u64,
            });
        }
        d
    }
}

// ---- NVRTC (nvrtc.h of CUDA 12.6: `nvrtcResult` is a C enum, `nvrtcProgram` an opaque
// pointer; no call needs a GPU) ----
type FnNvrtcVersion = unsafe extern "system" fn(*mut c_int, *mut c_int) -> c_int;
type FnNvrtcCreate = unsafe extern "system" fn(*mut Handle, *const c_char, *const c_char, c_int, *const *const c_char, *const *const c_char) -> c_int;
type FnNvrtcCompile = unsafe extern "system" fn(Handle, c_int, *const *const c_char) -> c_int;
type FnNvrtcLogSize = unsafe extern "system" fn(Handle, *mut usize) -> c_int;
type FnNvrtcLog = unsafe extern "system" fn(Handle, *mut c_char) -> c_int;
type FnNvrtcDestroy = unsafe extern "system" fn(*mut Handle) -> c_int;
type FnNvrtcErrorString = unsafe extern "system" fn(c_int) -> *const c_char;

/// `nvrtcVersion`: `major.minor`, or `None` when not exported or failing.
pub fn nvrtc_version(lib: &Library) -> Option<String> {
    let f: FnNvrtcVersion = sym(lib, "nvrtcVersion")?;
    let (mut major, mut minor) = (0, 0);
    super::step("nvrtcVersion");
    // SAFETY: `nvrtcResult nvrtcVersion(int *major, int *minor)`.
    (unsafe { f(&mut major, &mut minor) } == 0).then(|| format!("{major}.{minor}"))
}

/// NVRTC compiling a trivial kernel (`nvrtcCreateProgram`, `nvrtcCompileProgram`, the log,
/// `nvrtcDestroyProgram`), each call announced as a step: NVRTC loads its builtins library
/// here (docs/loader.md F2). `None` when the calls are not exported.
pub fn nvrtc_compile(lib: &Library) -> Option<crate::companion::Compile> {
    let create: FnNvrtcCreate = sym(lib, "nvrtcCreateProgram")?;
    let compile: FnNvrtcCompile = sym(lib, "nvrtcCompileProgram")?;
    let destroy: Option<FnNvrtcDestroy> = sym(lib, "nvrtcDestroyProgram");
    let log_size: Option<FnNvrtcLogSize> = sym(lib, "nvrtcGetProgramLogSize");
    let get_log: Option<FnNvrtcLog> = sym(lib, "nvrtcGetProgramLog");
    let err: Option<FnNvrtcErrorString> = sym(lib, "nvrtcGetErrorString");
    let start = std::time::Instant::now();
    let src = c"extern \"C\" __global__ void cuenv_k(float *x) { x[threadIdx.x] += 1.0f; }";
    let mut prog: Handle = std::ptr::null_mut();
    super::step("nvrtcCreateProgram");
    // SAFETY: prototypes from nvrtc.h; no headers, NUL-terminated strings that outlive the call.
    let mut code = unsafe { create(&mut prog, src.as_ptr(), c"cuenv_k.cu".as_ptr(), 0, std::ptr::null(), std::ptr::null()) };
    let mut log = String::new();
    if code == 0 {
        super::step("nvrtcCompileProgram");
        // SAFETY: `prog` came from a successful nvrtcCreateProgram; no options.
        code = unsafe { compile(prog, 0, std::ptr::null()) };
        if let (Some(size), Some(get)) = (log_size, get_log) {
            let mut n = 0usize;
            // SAFETY: as above; the buffer holds `n` bytes, the size NVRTC gave.
            if unsafe { size(prog, &mut n) } == 0 && n > 1 {
                let mut buf = vec![0u8; n];
                if unsafe { get(prog, buf.as_mut_ptr().cast()) } == 0 {
                    log = String::from_utf8_lossy(&buf[..n - 1]).trim().to_string();
                }
            }
        }
        if let Some(d) = destroy {
            // SAFETY: as above.
            unsafe { d(&mut prog) };
        }
    }
    // SAFETY: `const char *nvrtcGetErrorString(nvrtcResult)`; static storage.
    let name = err.and_then(|f| c_str(unsafe { f(code) })).unwrap_or_else(|| format!("nvrtcResult {code}"));
    Some(crate::companion::Compile { code: code as i64, name, log, ms: start.elapsed().as_secs_f64() * 1000.0 })
}
