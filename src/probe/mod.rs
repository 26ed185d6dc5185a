//! The probe: the child side of `cuenv check`. Loads cuDNN the way frameworks do and reports
//! what happened as typed JSON ([`Report`]).
//!
//! `cuenv __probe --major N [--conv] --json` runs [`run`] in a fresh process whose environment
//! is exactly a profile's activation. Loading native code can abort the process (cuDNN kills
//! the process when a sub-library is missing: docs/facts.md §7), so this code never runs inside
//! the cuenv that asks; the parent (`cuenv check`) treats a crash as a finding. The report
//! types live here, with the side that writes them: `check` depends on `probe`, never the
//! reverse.
//!
//! Invariants:
//! - cuDNN, the CUDA runtime and the driver are loaded **by name** through the OS loader
//!   (`libcudnn.so.<N>` / `cudnn64_<N>.dll`), never by full path: the point is to see which
//!   file the loader picks from the environment (docs/facts.md §5).
//! - Libraries are never unloaded (cuDNN's unload paths are not part of what is checked).
//! - Before each step that calls native code, one line `cuenv-probe: step <what>` goes to
//!   stderr, so a parent that sees the process die knows where ([`STEP_PREFIX`]).
//! - The report is printed as the last line of stdout; nothing else in cuenv writes there.
//! - An absent driver or device is a normal outcome (`driver: null` + `driver_absent`), not
//!   an error; without a device the convolution is `skipped`.

mod companions;
mod conv;
mod ffi;
mod sys;

use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

pub use conv::{ConvProblem, cpu_reference};

/// The version of the JSON shape; the parent refuses reports of another schema.
/// 2: `version_checks`; 3: `companions` (reports of older schemas, in older `check.json`
/// files, lack them and still read: the fields default to absent).
pub const SCHEMA: u32 = 3;

/// Prefix of the progress lines the child writes to stderr before each native step.
pub const STEP_PREFIX: &str = "cuenv-probe: step ";

/// Largest absolute difference between the GPU convolution and the CPU reference that passes.
pub const MAX_ABS_ERROR: f64 = 1e-4;

/// Everything the child found, in the order it looked.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: u32,
    /// `linux` or `windows` (Rust's `std::env::consts::OS`).
    pub os: String,
    /// The cuDNN major asked for.
    pub major: u64,
    /// Loading the cuDNN dispatcher by name.
    pub dispatcher: LoadAttempt,
    /// The version calls; absent when the dispatcher did not load.
    pub cudnn: Option<CudnnVersions>,
    /// cuDNN's own version checks (`cudnn*VersionCheck`), as many as the dispatcher exports;
    /// absent when the dispatcher did not load (and in schema 1 reports).
    #[serde(default)]
    pub version_checks: Option<VersionChecks>,
    /// The CUDA libraries cuDNN loads by name at run time (cuBLAS, cuBLASLt, NVRTC: what the
    /// files of the dispatcher's folder name, [`crate::companion::wanted_by`]), each loaded by
    /// the names cuDNN tries, in order; NVRTC also compiles a trivial program. Absent when
    /// the dispatcher did not load (and in reports of schema 1 and 2).
    #[serde(default)]
    pub companions: Option<Vec<crate::companion::Load>>,
    /// The CUDA runtime of the cuDNN build's CUDA major, loaded by name; absent when the
    /// dispatcher did not load.
    pub cudart: Option<Cudart>,
    /// The NVIDIA driver; `None` when `libcuda.so.1` / `nvcuda.dll` is absent.
    pub driver: Option<Driver>,
    /// Why `driver` is `None` (the loader's words).
    pub driver_absent: Option<String>,
    /// `cudnnCreate`'s status; absent when the dispatcher did not load.
    pub handle: Option<Status>,
    /// The convolution check.
    pub conv: Conv,
    /// The cuDNN, cuBLAS, NVRTC, cudart, driver and zlib modules mapped at the end.
    pub modules: Vec<Module>,
    /// Wall time of the whole probe inside the child, in milliseconds.
    pub elapsed_ms: f64,
}

/// One attempt to load a library by name.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoadAttempt {
    /// The bare name given to the loader.
    pub name: String,
    /// Whether it loaded.
    pub loaded: bool,
    /// The loader's error when it did not.
    pub error: Option<LoadError>,
}

/// What the OS loader said.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoadError {
    /// `dlerror()` text (Linux) or the system message (Windows).
    pub message: String,
    /// Windows: `GetLastError()` after `LoadLibraryExW` (126, 127, 193, ...).
    pub code: Option<i64>,
}

/// cuDNN's own version calls.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CudnnVersions {
    /// `cudnnGetVersion()`: 8904, 90500, ...
    pub version: u64,
    /// `cudnnGetCudartVersion()`: the CUDA runtime cuDNN was built with (12060 = 12.6).
    pub cudart_version: u64,
    /// `cudnnGetMaxDeviceVersion()` where the symbol exists (900 = compute capability 9.0).
    pub max_device_version: Option<u64>,
}

/// cuDNN's own version checks: every `cudnn<Sub>VersionCheck` the loaded dispatcher exports
/// (8.x `cudnn{Ops,Cnn,Adv}{Infer,Train}VersionCheck`, 9.x `cudnn{Graph,Ops,Cnn,Adv}VersionCheck`:
/// no argument, a `cudnnStatus_t`), each forwarded to its sub-library, which compares its own
/// version with the libraries it depends on; no GPU needed (docs/facts.md §7c).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct VersionChecks {
    /// The dispatcher file whose export table named the checks (as the loader mapped it).
    pub file: Option<String>,
    /// Each check called, in name order.
    pub checks: Vec<VersionCheck>,
    /// Why no check could be named (the mapped dispatcher was not found, or its export table
    /// could not be read); `checks` is then empty.
    pub error: Option<String>,
    /// The cuDNN libraries of this major in the dispatcher's folder that no check names
    /// ([`check_stem`]): 9.x `engines_precompiled`, `engines_runtime_compiled`, `heuristic`
    /// (they export only a dummy symbol). cuDNN's checks say nothing of them.
    #[serde(default)]
    pub unchecked: Vec<String>,
    /// Checks not called because their sub-library is in neither the dispatcher's folder nor
    /// a folder of the loader's variable (`LD_LIBRARY_PATH` / `PATH`): cuDNN aborts the
    /// process at such a call, and the rest of the report would be lost (an incomplete set).
    #[serde(default)]
    pub not_called: Vec<String>,
}

/// One version check and its answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct VersionCheck {
    /// The exported function (`cudnnCnnVersionCheck`).
    pub name: String,
    /// The sub-library file that exports the same function, which the dispatcher forwards the
    /// call to (`libcudnn_ext.so.9` for 9.27's `cudnnSubquadraticOpsVersionCheck`: read from
    /// the export tables, [`check_libraries`]); `None` where no file of the searched folders
    /// exports it and the library is named by [`check_stem`]'s convention.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<String>,
    /// What it returned, with `cudnnGetErrorString`'s name (`CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH`).
    pub status: Status,
}

/// The version checks among a dispatcher's exported names: those named
/// `cudnn<Something>VersionCheck`, each once, in name order. Derived from the file, never
/// from a list, so the checks of a newer release are called too.
pub fn version_check_names<S: AsRef<str>>(exports: &[S]) -> Vec<String> {
    let mut out: Vec<String> = exports
        .iter()
        .map(AsRef::as_ref)
        .filter(|n| n.len() > "cudnnVersionCheck".len() && n.starts_with("cudnn") && n.ends_with("VersionCheck"))
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The sub-library stem a version check concerns: `cudnnCnnVersionCheck` -> `cnn`,
/// `cudnnOpsTrainVersionCheck` -> `ops_train` (the stem of `libcudnn_cnn.so.9`,
/// `cudnn_ops_train64_8.dll`). `None` for a name that is no version check.
pub fn check_stem(check: &str) -> Option<String> {
    let camel = check.strip_prefix("cudnn")?.strip_suffix("VersionCheck").filter(|c| !c.is_empty())?;
    let mut out = String::new();
    for (i, ch) in camel.chars().enumerate() {
        if ch.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(ch.to_ascii_lowercase());
    }
    Some(out)
}

/// The file names of the cuDNN `major` libraries in `dir` (sub-libraries only) whose stem is
/// none of `stems`, sorted.
fn unchecked_in(dir: &Path, major: u64, stems: &[String]) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<String> = rd
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            crate::cudnn::libname::parse(n).is_some_and(|l| {
                l.major == Some(major) && l.os == crate::cudnn::libname::Os::HOST && l.stem.as_ref().is_some_and(|s| !stems.contains(s)) && l.is_loader_name()
            })
        })
        .collect();
    out.sort();
    out
}

/// For each version check in `checks`, the first cuDNN `major` sub-library (by the loader's
/// name, in `dirs` in order, each folder's files in name order) that exports a function of
/// the same name: the library the dispatcher forwards it to. Derived from the export tables,
/// so a check whose name follows no convention (`cudnnSubquadraticOpsVersionCheck` in
/// `libcudnn_ext.so.9`, 9.27.0.42) finds its library. Returns (check, library file name).
pub fn check_libraries<S: AsRef<str>>(dirs: &[std::path::PathBuf], major: u64, checks: &[S]) -> Vec<(String, String)> {
    use crate::cudnn::libname::{self, Os};
    let mut out: Vec<(String, String)> = Vec::new();
    for d in dirs.iter().filter(|d| !d.as_os_str().is_empty()) {
        let Ok(rd) = std::fs::read_dir(d) else { continue };
        let mut files: Vec<String> = rd
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| libname::parse(n).is_some_and(|l| l.os == Os::HOST && l.stem.is_some() && l.major == Some(major) && l.is_loader_name()))
            .collect();
        files.sort();
        for f in files {
            let Ok(exports) = crate::sys::binfmt::exported_names(&d.join(&f)) else { continue };
            for c in checks.iter().map(AsRef::as_ref) {
                if !out.iter().any(|(x, _)| x == c) && exports.iter().any(|e| e == c) {
                    out.push((c.to_string(), f.clone()));
                }
            }
        }
    }
    out
}

/// Whether folder `dir` holds a cuDNN `major` library of sub-library `stem` under a name
/// the loader may be asked for.
fn has_sub_library(dir: &Path, major: u64, stem: &str) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else { return false };
    rd.flatten().any(|e| {
        crate::cudnn::libname::parse(&e.file_name().to_string_lossy())
            .is_some_and(|l| l.os == crate::cudnn::libname::Os::HOST && l.stem.as_deref() == Some(stem) && l.major.is_none_or(|m| m == major))
    })
}

/// The CUDA runtime library.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Cudart {
    /// Loading `libcudart.so.<M>` / `cudart64_<M>.dll` by name.
    pub load: LoadAttempt,
    /// `cudaRuntimeGetVersion()` (12060 = 12.6).
    pub runtime_version: Option<i64>,
    /// Why `runtime_version` is absent (CUDA 11 runtimes need a driver to answer).
    pub runtime_error: Option<Status>,
}

/// The driver API.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Driver {
    /// The library that was loaded.
    pub library: String,
    /// `cuDriverGetVersion()`: the newest CUDA the driver supports (13000 = 13.0).
    pub version: Option<i64>,
    /// The driver release (`580.65.06`) from NVML (`libnvidia-ml.so.1` / `nvml.dll`), when
    /// it loads and answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    /// `cuInit(0)`.
    pub init: Status,
    /// The devices, when `cuInit` succeeded.
    pub devices: Vec<Device>,
}

/// One GPU as the driver sees it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Device {
    /// Ordinal.
    pub index: u32,
    /// `cuDeviceGetName`.
    pub name: String,
    /// Compute capability `[major, minor]`.
    pub compute_capability: [i32; 2],
    /// `cuDeviceTotalMem` in bytes.
    pub total_memory: u64,
}

/// A status code of cuDNN, the runtime or the driver, with its symbolic name.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Status {
    /// The numeric code.
    pub code: i64,
    /// `CUDNN_STATUS_...`, `cudaError...` or `CUDA_ERROR_...`.
    pub name: String,
}

impl Status {
    /// Whether the code is the API's success (0 for all three).
    pub fn ok(&self) -> bool {
        self.code == 0
    }
}

/// The convolution check.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Conv {
    /// `--conv` was not given.
    NotRequested,
    /// It could not run; `why` says what was missing (no device, no handle, no runtime).
    Skipped { why: String },
    /// A call failed.
    Failed {
        /// The call.
        step: String,
        /// Its status.
        status: Status,
    },
    /// It ran.
    Done(ConvResult),
}

/// A finished convolution.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConvResult {
    /// The problem (shapes).
    pub problem: ConvProblem,
    /// The math type set on the descriptor.
    pub math_type: String,
    /// What `cudnnFindConvolutionForwardAlgorithm` returned, fastest first.
    pub algos: Vec<AlgoPerf>,
    /// The algorithm used (the fastest that succeeded).
    pub algo: String,
    /// Workspace for it, in bytes.
    pub workspace_bytes: u64,
    /// Largest |GPU - CPU| over the output.
    pub max_abs_error: f64,
    /// Whether `max_abs_error` is under [`MAX_ABS_ERROR`].
    pub matches: bool,
    /// Mean time of one `cudnnConvolutionForward` after warm-up, in milliseconds.
    pub forward_ms: f64,
    /// How many timed calls `forward_ms` averages.
    pub iterations: u32,
}

/// One entry of `cudnnFindConvolutionForwardAlgorithm`'s answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AlgoPerf {
    /// `CUDNN_CONVOLUTION_FWD_ALGO_...`.
    pub algo: String,
    /// Its status.
    pub status: Status,
    /// Measured time in milliseconds.
    pub time_ms: f64,
    /// Workspace in bytes.
    pub memory: u64,
}

/// What a mapped module is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum ModuleKind {
    /// The cuDNN dispatcher or one of its sub-libraries.
    Cudnn,
    /// cuBLAS.
    Cublas,
    /// cuBLASLt.
    CublasLt,
    /// NVRTC (and its builtins).
    Nvrtc,
    /// The CUDA runtime.
    Cudart,
    /// The NVIDIA driver (`libcuda.so`, `nvcuda.dll`).
    Driver,
    /// `zlibwapi.dll` (cuDNN 8.3 to 9.1 on Windows).
    Zlib,
    /// Another CUDA toolkit library (nvJitLink, cuSPARSE, cuFFT, ...): what
    /// [`crate::companion::parse`] reads as one from its name.
    #[serde(rename = "cuda")]
    OtherCuda,
}

/// One module mapped into the child.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Module {
    /// The file the loader mapped (symlinks resolved on Linux).
    pub path: String,
    /// Its file name.
    pub name: String,
    /// What it is.
    pub kind: ModuleKind,
}

/// What the child is asked to do.
#[derive(Debug, Clone)]
pub struct ProbeRequest {
    /// The cuDNN major: picks `libcudnn.so.<N>` / `cudnn64_<N>.dll`.
    pub major: u64,
    /// The CUDA major of the runtime to load; default: from `cudnnGetCudartVersion()`.
    pub cuda_major: Option<u64>,
    /// Run the convolution when a device is present.
    pub conv: bool,
    /// Only the driver (and NVML): cuDNN is not loaded (`apply`'s GPU-fit gate).
    pub driver_only: bool,
}

/// The kind of a module from its file name, or `None` when it is none of the tracked ones.
pub fn module_kind(file_name: &str) -> Option<ModuleKind> {
    let n = file_name.to_ascii_lowercase();
    let n = n.strip_prefix("lib").unwrap_or(&n);
    if crate::cudnn::libname::parse(file_name).is_some() {
        Some(ModuleKind::Cudnn)
    } else if n.starts_with("cublaslt") {
        Some(ModuleKind::CublasLt)
    } else if n.starts_with("cublas") {
        Some(ModuleKind::Cublas)
    } else if n.starts_with("nvrtc") {
        Some(ModuleKind::Nvrtc)
    } else if n.starts_with("cudart") {
        Some(ModuleKind::Cudart)
    } else if n.starts_with("cuda.so") || n.starts_with("nvcuda") {
        Some(ModuleKind::Driver)
    } else if n.starts_with("zlibwapi") {
        Some(ModuleKind::Zlib)
    } else if crate::companion::parse(file_name).is_some() {
        Some(ModuleKind::OtherCuda)
    } else {
        None
    }
}

/// The CUDA runtime's file name (its soname) for a CUDA major on this platform. CUDA 11's
/// are `libcudart.so.11.0` and `cudart64_110.dll` (the cu11 runtime wheel holds exactly that
/// `.so`); from 12 on, `libcudart.so.<M>` and `cudart64_<M>.dll`.
pub fn cudart_name(cuda_major: u64) -> String {
    match (cfg!(windows), cuda_major <= 11) {
        (true, true) => format!("cudart64_{cuda_major}0.dll"),
        (true, false) => format!("cudart64_{cuda_major}.dll"),
        (false, true) => format!("libcudart.so.{cuda_major}.0"),
        (false, false) => format!("libcudart.so.{cuda_major}"),
    }
}

/// The driver library's file name on this platform.
pub fn driver_name() -> &'static str {
    if cfg!(windows) { "nvcuda.dll" } else { "libcuda.so.1" }
}

/// NVML's file name on this platform (it tells the driver release).
pub fn nvml_name() -> &'static str {
    if cfg!(windows) { "nvml.dll" } else { "libnvidia-ml.so.1" }
}

pub(crate) fn step(what: &str) {
    eprintln!("{STEP_PREFIX}{what}");
}

/// Runs the probe in this process. Only `cuenv __probe` calls this: it loads native code
/// that may abort the process.
pub fn run(req: &ProbeRequest) -> Report {
    let start = Instant::now();
    sys::prepare_process();
    let mut report = Report {
        schema: SCHEMA,
        os: std::env::consts::OS.to_string(),
        major: req.major,
        dispatcher: LoadAttempt { name: crate::cudnn::libname::dispatcher_name(req.major, crate::cudnn::libname::Os::HOST), loaded: false, error: None },
        cudnn: None,
        version_checks: None,
        companions: None,
        cudart: None,
        driver: None,
        driver_absent: None,
        handle: None,
        conv: if req.conv { Conv::Skipped { why: "the cuDNN dispatcher did not load".into() } } else { Conv::NotRequested },
        modules: Vec::new(),
        elapsed_ms: 0.0,
    };

    if req.driver_only {
        report.dispatcher.name = String::new();
        let driver_lib = probe_driver(&mut report);
        std::mem::forget(driver_lib);
        report.elapsed_ms = start.elapsed().as_secs_f64() * 1000.0;
        return report;
    }
    step(&format!("load {}", report.dispatcher.name));
    let cudnn = match sys::load(&report.dispatcher.name) {
        Ok(lib) => {
            report.dispatcher.loaded = true;
            Some(lib)
        }
        Err(e) => {
            report.dispatcher.error = Some(e);
            None
        }
    };

    // The driver is probed whether or not cuDNN loaded: "no GPU" is worth knowing either way.
    let driver_lib = probe_driver(&mut report);

    if let Some(cudnn) = &cudnn {
        let api = ffi::Cudnn::new(cudnn);
        report.cudnn = api.versions();
        report.version_checks = Some(version_checks(cudnn, &api, req.major));
        report.companions = mapped_dispatcher(req.major).map(|f| companions::load(&f));
        let cuda_major = req.cuda_major.or_else(|| report.cudnn.as_ref().map(|v| v.cudart_version / 1000));
        let mut rt = None;
        if let Some(m) = cuda_major {
            let name = cudart_name(m);
            step(&format!("load {name}"));
            let mut cudart = Cudart { load: LoadAttempt { name: name.clone(), loaded: false, error: None }, runtime_version: None, runtime_error: None };
            match sys::load(&name) {
                Ok(lib) => {
                    cudart.load.loaded = true;
                    let r = ffi::Runtime::new(&lib);
                    match r.runtime_version() {
                        Ok(v) => cudart.runtime_version = Some(v),
                        Err(s) => cudart.runtime_error = Some(s),
                    }
                    rt = Some((lib, r.ok()));
                }
                Err(e) => cudart.load.error = Some(e),
            }
            report.cudart = Some(cudart);
        }

        step("cudnnCreate");
        let handle = api.create();
        report.handle = handle.as_ref().map(|(s, _)| s.clone()).or(Some(Status { code: -1, name: "cudnnCreate not exported".into() }));

        if req.conv {
            let has_device = report.driver.as_ref().is_some_and(|d| !d.devices.is_empty());
            report.conv = match (&handle, rt.as_ref().and_then(|(_, r)| r.as_ref())) {
                _ if !has_device => Conv::Skipped {
                    why: match &report.driver {
                        None => "no NVIDIA driver".into(),
                        Some(d) if !d.init.ok() => format!("no usable GPU: cuInit returned {}", d.init.name),
                        Some(_) => "no GPU: the driver reports no devices".into(),
                    },
                },
                (Some((s, _)), _) if !s.ok() => Conv::Skipped { why: format!("cudnnCreate returned {}", s.name) },
                (None, _) => Conv::Skipped { why: "cudnnCreate is not exported".into() },
                (_, None) => Conv::Skipped { why: "the CUDA runtime did not load".into() },
                (Some((_, h)), Some(rt)) => conv::run(&api, rt, *h, step),
            };
        }
        if let Some((s, h)) = &handle
            && s.ok()
        {
            api.destroy(*h);
        }
        // Keep every library mapped until exit.
        std::mem::forget(rt);
    }
    std::mem::forget(cudnn);
    std::mem::forget(driver_lib);

    step("list modules");
    report.modules = list_modules();
    report.elapsed_ms = start.elapsed().as_secs_f64() * 1000.0;
    report
}

/// Calls every version check the dispatcher of `major` exports: the checks are named by the
/// export table of the dispatcher file the loader mapped (found in this process's module
/// list), then looked up in the loaded library and called one by one, each announced as a step.
fn version_checks(lib: &libloading::Library, api: &ffi::Cudnn, major: u64) -> VersionChecks {
    let Some(file) = mapped_dispatcher(major) else {
        return VersionChecks {
            file: None,
            checks: Vec::new(),
            error: Some("the dispatcher does not appear in the process's module list".into()),
            unchecked: Vec::new(),
            not_called: Vec::new(),
        };
    };
    let shown = file.to_string_lossy().into_owned();
    let names = match crate::sys::binfmt::exported_names(&file) {
        Ok(exports) => version_check_names(&exports),
        Err(e) => {
            return VersionChecks {
                file: Some(shown),
                checks: Vec::new(),
                error: Some(format!("its export table could not be read: {e}")),
                unchecked: Vec::new(),
                not_called: Vec::new(),
            };
        }
    };
    let var = if cfg!(windows) { "PATH" } else { "LD_LIBRARY_PATH" };
    let mut dirs: Vec<std::path::PathBuf> = file.parent().map(Path::to_path_buf).into_iter().collect();
    dirs.extend(std::env::var_os(var).map(|v| std::env::split_paths(&v).collect::<Vec<_>>()).unwrap_or_default());
    let exporters = check_libraries(&dirs, major, &names);
    // The stems the checks cover: each exporter's, else the name's convention.
    let stems: Vec<String> = names
        .iter()
        .filter_map(|n| match exporters.iter().find(|(c, _)| c == n) {
            Some((_, lib)) => crate::cudnn::libname::parse(lib).and_then(|l| l.stem),
            None => check_stem(n),
        })
        .collect();
    let unchecked = file.parent().map(|d| unchecked_in(d, major, &stems)).unwrap_or_default();
    let mut not_called = Vec::new();
    let mut checks = Vec::new();
    for name in names {
        let library = exporters.iter().find(|(c, _)| *c == name).map(|(_, l)| l.clone());
        if library.is_none() && check_stem(&name).is_some_and(|stem| !dirs.iter().any(|d| has_sub_library(d, major, &stem))) {
            not_called.push(name);
            continue;
        }
        if let Some(status) = api.version_check(lib, &name) {
            checks.push(VersionCheck { name, library, status });
        }
    }
    VersionChecks { file: Some(shown), checks, error: None, unchecked, not_called }
}

/// The mapped dispatcher file of `major`, from this process's module list.
pub(crate) fn mapped_dispatcher(major: u64) -> Option<std::path::PathBuf> {
    sys::loaded_module_paths()
        .into_iter()
        .find(|p| p.file_name().and_then(|n| crate::cudnn::libname::parse(&n.to_string_lossy())).is_some_and(|l| l.is_dispatcher() && l.major == Some(major)))
}

fn probe_driver(report: &mut Report) -> Option<libloading::Library> {
    let name = driver_name();
    step(&format!("load {name}"));
    let lib = match sys::load(name) {
        Ok(lib) => lib,
        Err(e) => {
            report.driver_absent = Some(format!("{name} could not be loaded: {}", e.message));
            return None;
        }
    };
    let drv = ffi::DriverApi::new(&lib);
    let mut d = drv.query(name, step);
    let nvml = nvml_name();
    step(&format!("load {nvml}"));
    if let Ok(n) = sys::load(nvml) {
        step("nvmlSystemGetDriverVersion");
        d.release = ffi::nvml_driver_release(&n);
        std::mem::forget(n);
    }
    report.driver = Some(d);
    Some(lib)
}

/// The tracked modules mapped into this process, deduplicated (Linux: in address order;
/// Windows: in the loader's module-list order).
pub fn list_modules() -> Vec<Module> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for p in sys::loaded_module_paths() {
        let Some(name) = Path::new(&p).file_name().map(|n| n.to_string_lossy().into_owned()) else { continue };
        let Some(kind) = module_kind(&name) else { continue };
        if seen.insert(p.clone()) {
            out.push(Module { path: p.to_string_lossy().into_owned(), name, kind });
        }
    }
    out
}

/// Reads a NUL-terminated C string returned by a library (static storage); `None` for null.
fn c_str(p: *const std::ffi::c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: the libraries return pointers to static NUL-terminated strings.
    Some(unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_kinds_from_names() {
        for (n, k) in [
            ("libcudnn.so.9", Some(ModuleKind::Cudnn)),
            ("libcudnn_ops_infer.so.8", Some(ModuleKind::Cudnn)),
            ("cudnn_graph64_9.dll", Some(ModuleKind::Cudnn)),
            ("libcublasLt.so.12", Some(ModuleKind::CublasLt)),
            ("cublasLt64_12.dll", Some(ModuleKind::CublasLt)),
            ("libcublas.so.12", Some(ModuleKind::Cublas)),
            ("libnvrtc-builtins.so.12.6", Some(ModuleKind::Nvrtc)),
            ("nvrtc64_120_0.dll", Some(ModuleKind::Nvrtc)),
            ("libcudart.so.12", Some(ModuleKind::Cudart)),
            ("cudart64_110.dll", Some(ModuleKind::Cudart)),
            ("libcuda.so.1", Some(ModuleKind::Driver)),
            ("libcuda.so.580.65.06", Some(ModuleKind::Driver)),
            ("nvcuda.dll", Some(ModuleKind::Driver)),
            ("zlibwapi.dll", Some(ModuleKind::Zlib)),
            ("libc.so.6", None),
            ("libcurl.so.4", None),
            ("KERNEL32.DLL", None),
        ] {
            assert_eq!(module_kind(n), k, "{n}");
        }
    }

    #[test]
    fn cudart_names() {
        if cfg!(windows) {
            assert_eq!(cudart_name(11), "cudart64_110.dll");
            assert_eq!(cudart_name(12), "cudart64_12.dll");
            assert_eq!(cudart_name(13), "cudart64_13.dll");
        } else {
            assert_eq!(cudart_name(11), "libcudart.so.11.0");
            assert_eq!(cudart_name(12), "libcudart.so.12");
            assert_eq!(cudart_name(13), "libcudart.so.13");
        }
    }

    #[test]
    fn report_round_trips_through_json() {
        let r = Report {
            schema: SCHEMA,
            os: "linux".into(),
            major: 9,
            dispatcher: LoadAttempt { name: "libcudnn.so.9".into(), loaded: true, error: None },
            cudnn: Some(CudnnVersions { version: 90500, cudart_version: 12060, max_device_version: Some(900) }),
            version_checks: Some(VersionChecks {
                file: Some("/x/libcudnn.so.9".into()),
                checks: vec![VersionCheck {
                    name: "cudnnCnnVersionCheck".into(),
                    library: Some("libcudnn_cnn.so.9".into()),
                    status: Status { code: 1002, name: "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH".into() },
                }],
                error: None,
                unchecked: vec!["libcudnn_heuristic.so.9".into()],
                not_called: vec![],
            }),
            companions: Some(vec![crate::companion::Load {
                wanted: crate::companion::Wanted {
                    family: "nvrtc".into(),
                    major: 12,
                    names: vec!["libnvrtc.so.12".into(), "libnvrtc.so".into()],
                    asked_by: "/x/libcudnn_graph.so.9".into(),
                    untold: None,
                },
                loaded: Some("libnvrtc.so.12".into()),
                path: Some("/t/lib64/libnvrtc.so.12.6.77".into()),
                error: None,
                version: Some("12.6".into()),
                compile: Some(crate::companion::Compile { code: 0, name: "NVRTC_SUCCESS".into(), log: String::new(), ms: 31.5 }),
            }]),
            cudart: None,
            driver: None,
            driver_absent: Some("libcuda.so.1 could not be loaded".into()),
            handle: Some(Status { code: 1001, name: "CUDNN_STATUS_NOT_INITIALIZED".into() }),
            conv: Conv::Skipped { why: "no NVIDIA driver".into() },
            modules: vec![Module { path: "/x/libcudnn.so.9".into(), name: "libcudnn.so.9".into(), kind: ModuleKind::Cudnn }],
            elapsed_ms: 1.5,
        };
        let s = serde_json::to_string(&r).unwrap();
        assert!(s.contains(r#""conv":{"state":"skipped","why":"no NVIDIA driver"}"#), "{s}");
        let back: Report = serde_json::from_str(&s).unwrap();
        assert_eq!(back, r);
        // A schema 1 report (older check.json files) has no version checks and still reads.
        let old = s.replace(r#""schema":2"#, r#""schema":1"#);
        let start = old.find(r#","version_checks""#).unwrap();
        let end = old.find(r#","cudart""#).unwrap();
        let old = format!("{}{}", &old[..start], &old[end..]);
        let back: Report = serde_json::from_str(&old).unwrap();
        assert_eq!(back.version_checks, None);
    }

    #[test]
    fn version_checks_are_named_by_the_exports() {
        // The exports of the real 9.5.0.50 and 8.9.4.25 dispatchers (`nm -D --defined-only`)
        // give exactly the checks their headers declare: the list only cross-checks.
        let v9 = ["cudnnGetVersion", "cudnnOpsVersionCheck", "cudnnCnnVersionCheck", "cudnnAdvVersionCheck", "cudnnGraphVersionCheck", "cudnnCreate"];
        assert_eq!(version_check_names(&v9), ["cudnnAdvVersionCheck", "cudnnCnnVersionCheck", "cudnnGraphVersionCheck", "cudnnOpsVersionCheck"]);
        let v8: Vec<String> = ["Ops", "Cnn", "Adv"].iter().flat_map(|s| ["Infer", "Train"].map(|t| format!("cudnn{s}{t}VersionCheck"))).collect();
        assert_eq!(version_check_names(&v8).len(), 6);
        // A newer release's check is called as well; look-alikes are not.
        assert_eq!(
            version_check_names(&["cudnnExtVersionCheck", "cudnnVersionCheck", "VersionCheck", "cudnnGetVersion", "xcudnnOpsVersionCheck"]),
            ["cudnnExtVersionCheck"]
        );
    }

    #[test]
    fn a_check_names_the_stem_of_its_sub_library() {
        for (check, stem) in [
            ("cudnnCnnVersionCheck", Some("cnn")),
            ("cudnnGraphVersionCheck", Some("graph")),
            ("cudnnOpsTrainVersionCheck", Some("ops_train")),
            ("cudnnAdvInferVersionCheck", Some("adv_infer")),
            ("cudnnVersionCheck", None),
            ("cudnnGetVersion", None),
        ] {
            assert_eq!(check_stem(check).as_deref(), stem, "{check}");
        }
        // Each stem names a real file of its release (docs/facts.md §2).
        assert_eq!(
            crate::cudnn::libname::sub_library_name(&check_stem("cudnnCnnVersionCheck").unwrap(), 9, crate::cudnn::libname::Os::Windows),
            "cudnn_cnn64_9.dll"
        );
        assert_eq!(
            crate::cudnn::libname::sub_library_name(&check_stem("cudnnOpsTrainVersionCheck").unwrap(), 8, crate::cudnn::libname::Os::Linux),
            "libcudnn_ops_train.so.8"
        );
    }
}
