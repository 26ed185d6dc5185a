//! Hermetic tests of `cuenv check`'s probe and classification: stub cuDNN libraries built
//! with the C compiler at test time (`$CC`, else `cc`), loaded by the real `cuenv __probe`
//! child. Linux only (the stubs are ELF shared objects found through LD_LIBRARY_PATH).
#![cfg(target_os = "linux")]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use cuenv::check::{CheckStatus, Expected, ProbeEnd, ReasonKind, classify, run_probe};

use crate::support::stubs::Stubs;

fn env_with(ld: &[&Path]) -> Vec<(OsString, OsString)> {
    let mut env = vec![(OsString::from("LD_LIBRARY_PATH"), std::env::join_paths(ld).unwrap())];
    if let Some(p) = std::env::var_os("PATH") {
        env.push(("PATH".into(), p));
    }
    env
}

fn cuenv() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_cuenv"))
}

fn expected(entry: &Path, version: &str) -> Expected {
    Expected { entry_dir: entry.to_path_buf(), version: version.parse().unwrap(), cuda_major: Some(12) }
}

const T: Duration = Duration::from_secs(30);

#[test]
fn a_stub_of_the_right_version_loads_from_the_entry() {
    let s = Stubs::new();
    let entry = s.build("entry", "libcudnn.so.9", &["VERSION=90500"]);
    let rt = s.cudart();
    let o = run_probe(cuenv(), &env_with(&[&entry, &rt]), 9, false, T);
    assert_eq!(o.end, ProbeEnd::Exited { code: 0 }, "{o:?}");
    let r = o.report.as_ref().expect("a report");
    assert_eq!(r.cudnn.as_ref().unwrap().version, 90500);
    assert_eq!(r.cudnn.as_ref().unwrap().max_device_version, None, "the stub does not export cudnnGetMaxDeviceVersion");
    assert_eq!(r.cudart.as_ref().unwrap().runtime_version, Some(12060));
    let c = classify(&o, &expected(&entry, "9.5.0.50"));
    // Without a driver: no-gpu; on a machine with one, the stub's handle is fine: pass.
    assert!(matches!(c.status, CheckStatus::NoGpu | CheckStatus::Pass), "{:?}", c.reasons);
    assert!(!c.reasons.iter().any(|x| x.kind.is_failure()), "{:?}", c.reasons);
    assert!(c.notes.iter().any(|n| n.contains("cuDNN loaded from the profile's entry: libcudnn.so.9")), "{:?}", c.notes);
}

#[test]
fn a_stub_reporting_another_version_is_a_version_mismatch() {
    let s = Stubs::new();
    let entry = s.build("entry", "libcudnn.so.9", &["VERSION=90100"]);
    let rt = s.cudart();
    let o = run_probe(cuenv(), &env_with(&[&entry, &rt]), 9, false, T);
    let c = classify(&o, &expected(&entry, "9.5.0.50"));
    assert_eq!(c.status, CheckStatus::Fail);
    let m = c.reasons.iter().find(|x| x.kind == ReasonKind::VersionMismatch).unwrap_or_else(|| panic!("{:?}", c.reasons));
    assert_eq!(m.message, "cuDNN reports version 9.1.0, but the profile's entry is cuDNN 9.5.0.50", "versions print as 9.1.0, never 90100");
}

#[test]
fn a_stub_earlier_on_ld_library_path_shadows_the_entry() {
    let s = Stubs::new();
    let entry = s.build("entry/lib", "libcudnn.so.9", &["VERSION=90500"]);
    let other = s.build("framework/lib", "libcudnn.so.9", &["VERSION=90300"]);
    let rt = s.cudart();
    let o = run_probe(cuenv(), &env_with(&[&other, &entry, &rt]), 9, false, T);
    let c = classify(&o, &expected(entry.parent().unwrap(), "9.5.0.50"));
    assert_eq!(c.status, CheckStatus::Fail);
    let sh = c.reasons.iter().find(|x| x.kind == ReasonKind::Shadowed).unwrap_or_else(|| panic!("{:?}", c.reasons));
    let won = std::fs::canonicalize(&other).unwrap();
    assert!(sh.message.contains(&format!("came from {}", won.display())), "{sh}");
    assert!(sh.message.contains("LD_LIBRARY_PATH lists"), "{sh}");
    assert!(c.has(ReasonKind::VersionMismatch), "{:?}", c.reasons);
}

#[test]
fn a_sub_library_from_another_folder_is_mixed() {
    let s = Stubs::new();
    let entry = s.build("entry/lib", "libcudnn.so.9", &["MODE_SUB"]);
    s.build("entry/lib", "libcudnn_graph.so.9", &["GRAPH", "VERSION=90500"]);
    let old = s.build("old/lib", "libcudnn_graph.so.9", &["GRAPH", "VERSION=90100"]);
    let rt = s.cudart();
    // The old folder comes first, so the dispatcher's by-name load of the sub-library takes it.
    let o = run_probe(cuenv(), &env_with(&[&old, &entry, &rt]), 9, false, T);
    // The dispatcher itself is only in the entry.
    let c = classify(&o, &expected(entry.parent().unwrap(), "9.5.0.50"));
    assert_eq!(c.status, CheckStatus::Fail, "{:?}", c.reasons);
    assert!(c.has(ReasonKind::MixedVersions), "{:?}", c.reasons);
    assert!(c.has(ReasonKind::VersionMismatch), "{:?}", c.reasons);
    let sh = c.reasons.iter().find(|x| x.kind == ReasonKind::Shadowed).unwrap();
    assert!(sh.message.starts_with("libcudnn_graph.so.9 came from"), "{sh}");
}

/// docs/loader.md C1: the probe calls every `cudnn*VersionCheck` the dispatcher's export
/// table names (a check no release has yet included), each forwarded as the dispatcher
/// forwards it, and a non-zero answer fails the check naming the check, its status and the
/// sub-library with the file the loader mapped.
#[test]
fn every_exported_version_check_is_called_and_a_mismatch_fails_the_check() {
    let s = Stubs::new();
    let entry = s.build("entry/lib", "libcudnn.so.9", &["VERSION=90500", "VCHECK_GRAPH=0", "VCHECK_CNN_FROM=\"libcudnn_cnn.so.9\"", "VCHECK_NEW=0"]);
    s.build("entry/lib", "libcudnn_cnn.so.9", &["GRAPH", "VERSION=90400", "STUB_CHECK=1002"]);
    // Each check's sub-library is in the set (a check whose library is nowhere is not called).
    for n in ["libcudnn_heuristic.so.9", "libcudnn_graph.so.9", "libcudnn_new.so.9"] {
        s.build("entry/lib", n, &["GRAPH", "VERSION=90500"]);
    }
    let rt = s.cudart();
    let o = run_probe(cuenv(), &env_with(&[&entry, &rt]), 9, false, T);
    assert_eq!(o.end, ProbeEnd::Exited { code: 0 }, "{o:?}");
    let vc = o.report.as_ref().unwrap().version_checks.clone().expect("version checks");
    let got: Vec<(String, i64, String)> = vc.checks.iter().map(|c| (c.name.clone(), c.status.code, c.status.name.clone())).collect();
    assert_eq!(
        got,
        [
            ("cudnnCnnVersionCheck".to_string(), 1002, "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH".to_string()),
            ("cudnnGraphVersionCheck".to_string(), 0, "CUDNN_STATUS_SUCCESS".to_string()),
            ("cudnnNewVersionCheck".to_string(), 0, "CUDNN_STATUS_SUCCESS".to_string()),
        ]
    );
    assert_eq!(vc.unchecked, ["libcudnn_heuristic.so.9"]);
    let c = classify(&o, &expected(entry.parent().unwrap(), "9.5.0.50"));
    assert_eq!(c.status, CheckStatus::Fail, "{:?}", c.reasons);
    let r = c.reasons.iter().find(|x| x.kind == ReasonKind::SubLibraryMismatch).unwrap_or_else(|| panic!("{:?}", c.reasons));
    let cnn = std::fs::canonicalize(entry.join("libcudnn_cnn.so.9")).unwrap();
    for want in ["cudnnCnnVersionCheck returned CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH (1002)", "libcudnn_cnn.so.9 (`cnn`)", &cnn.display().to_string()] {
        assert!(r.message.contains(want), "{want}: {r}");
    }
    assert!(c.notes.iter().any(|n| n.starts_with("not verified: libcudnn_heuristic.so.9 has no version check")), "{:?}", c.notes);

    // Every check answering 0: no failure, and the note lists them.
    s.build("entry/lib", "libcudnn_cnn.so.9", &["GRAPH", "VERSION=90500", "STUB_CHECK=0"]);
    let o = run_probe(cuenv(), &env_with(&[&entry, &rt]), 9, false, T);
    let c = classify(&o, &expected(entry.parent().unwrap(), "9.5.0.50"));
    assert!(!c.reasons.iter().any(|x| x.kind.is_failure()), "{:?}", c.reasons);
    assert!(c.notes.iter().any(|n| n.contains("version checks passed: cudnnCnnVersionCheck, cudnnGraphVersionCheck, cudnnNewVersionCheck")), "{:?}", c.notes);
}

/// A version check whose sub-library is present but cannot be loaded aborts the process (as
/// cuDNN does): the step line written before the call names the check. One whose
/// sub-library is nowhere to be found is not called (the report survives) and is "not verified".
#[test]
fn a_version_check_of_a_broken_sub_library_is_the_step_that_died() {
    let s = Stubs::new();
    let entry = s.build("entry", "libcudnn.so.9", &["VERSION=90500", "VCHECK_CNN_FROM=\"libcudnn_cnn.so.9\""]);
    let rt = s.cudart();
    let o = run_probe(cuenv(), &env_with(&[&entry, &rt]), 9, false, T);
    assert_eq!(o.end, ProbeEnd::Exited { code: 0 }, "{o:?}");
    let vc = o.report.as_ref().unwrap().version_checks.clone().unwrap();
    assert_eq!((vc.checks.len(), vc.not_called.clone()), (0, vec!["cudnnCnnVersionCheck".to_string()]));
    let c = classify(&o, &expected(&entry, "9.5.0.50"));
    assert!(c.notes.iter().any(|n| n.starts_with("not verified: cudnnCnnVersionCheck not called")), "{:?}", c.notes);

    std::fs::write(entry.join("libcudnn_cnn.so.9"), b"not a library").unwrap();
    let o = run_probe(cuenv(), &env_with(&[&entry, &rt]), 9, false, T);
    assert_eq!(o.end, ProbeEnd::Signaled { signal: 6, name: "SIGABRT".into() }, "{o:?}");
    assert_eq!(o.last_step.as_deref(), Some("cudnnCnnVersionCheck"));
    let c = classify(&o, &expected(&entry, "9.5.0.50"));
    let m = c.reasons.iter().find(|x| x.kind == ReasonKind::MissingLibrary).unwrap_or_else(|| panic!("{:?}", c.reasons));
    assert!(m.message.contains("libcudnn_cnn.so.9"), "{m}");
}

#[test]
fn a_missing_sub_library_crashes_the_child_not_cuenv() {
    let s = Stubs::new();
    let entry = s.build("entry", "libcudnn.so.9", &["MODE_SUB"]);
    let rt = s.cudart();
    let o = run_probe(cuenv(), &env_with(&[&entry, &rt]), 9, false, T);
    assert_eq!(o.end, ProbeEnd::Signaled { signal: 6, name: "SIGABRT".into() }, "{o:?}");
    assert_eq!(o.last_step.as_deref(), Some("cudnnGetVersion"));
    let c = classify(&o, &expected(&entry, "9.5.0.50"));
    assert_eq!(c.status, CheckStatus::Fail);
    let missing = c.reasons.iter().find(|x| x.kind == ReasonKind::MissingLibrary).unwrap_or_else(|| panic!("{:?}", c.reasons));
    assert!(missing.message.contains("libcudnn_graph.so.9"), "{missing}");
    let crash = c.reasons.iter().find(|x| x.kind == ReasonKind::Crash).unwrap();
    assert!(
        crash.message.contains("SIGABRT") && crash.message.contains("during cudnnGetVersion") && crash.message.contains("Unable to load any of"),
        "{crash}"
    );
}

#[test]
fn an_aborting_or_segfaulting_stub_is_a_crash() {
    let s = Stubs::new();
    for (dir, mode, sig) in [("abort", "MODE_ABORT", "SIGABRT"), ("segv", "MODE_SEGV", "SIGSEGV")] {
        let entry = s.build(dir, "libcudnn.so.9", &[mode]);
        let o = run_probe(cuenv(), &env_with(&[&entry]), 9, false, T);
        let c = classify(&o, &expected(&entry, "9.5.0.50"));
        assert_eq!(c.status, CheckStatus::Fail);
        let crash = c.reasons.iter().find(|x| x.kind == ReasonKind::Crash).unwrap_or_else(|| panic!("{:?}", c.reasons));
        assert!(crash.message.contains(sig), "{crash}");
    }
}

#[test]
fn a_hanging_stub_is_killed_at_the_timeout() {
    let s = Stubs::new();
    let entry = s.build("entry", "libcudnn.so.9", &["MODE_HANG"]);
    let t = Instant::now();
    let o = run_probe(cuenv(), &env_with(&[&entry]), 9, false, Duration::from_millis(1500));
    assert!(t.elapsed() < Duration::from_secs(10), "took {:?}", t.elapsed());
    assert_eq!(o.end, ProbeEnd::TimedOut { after_ms: 1500 });
    let c = classify(&o, &expected(&entry, "9.5.0.50"));
    assert_eq!(c.status, CheckStatus::Fail);
    let r = c.reasons.iter().find(|x| x.kind == ReasonKind::Timeout).unwrap();
    assert!(r.message.contains("within 1.5 s during cudnnGetVersion and was killed"), "{r}");
}

#[test]
fn no_dispatcher_on_the_path_is_a_missing_library() {
    let s = Stubs::new();
    let empty = s.tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = run_probe(cuenv(), &env_with(&[&empty]), 9, true, T);
    let r = o.report.as_ref().expect("a report");
    assert!(!r.dispatcher.loaded);
    let c = classify(&o, &expected(&empty, "9.5.0.50"));
    assert_eq!(c.status, CheckStatus::Fail);
    let m = c.reasons.iter().find(|x| x.kind == ReasonKind::MissingLibrary).unwrap_or_else(|| panic!("{:?}", c.reasons));
    assert!(m.message.contains("libcudnn.so.9 was not found") && m.message.contains(&empty.display().to_string()), "{m}");
}

#[test]
fn a_missing_cuenv_binary_is_a_finding() {
    let o = run_probe(Path::new("/nonexistent/cuenv"), &[], 9, false, T);
    assert!(matches!(o.end, ProbeEnd::SpawnFailed { .. }), "{o:?}");
    let c = classify(&o, &expected(Path::new("/nonexistent"), "9.5.0"));
    assert_eq!(c.status, CheckStatus::Fail);
    assert!(c.has(ReasonKind::BadReport));
}

// ---------------------------------------------------------------------------------------
// A fake GPU: stub driver, runtime and cuDNN convolution API, so the probe's convolution path
// (descriptor calls, algorithm search, forward, copy back, CPU comparison) runs without one.
// The stubs check every argument the probe passes against the prototypes and enum values of
// the real headers (cudnn_ops.h / cudnn_cnn.h 9.5, cuda.h, cuda_runtime_api.h) and return
// CUDNN_STATUS_BAD_PARAM (2000) on anything else; host memory stands in for device memory.
// ---------------------------------------------------------------------------------------

const FAKE_GPU_C: &str = r#"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifdef DRIVER
#ifndef DRIVER_VERSION
#define DRIVER_VERSION 13000
#endif
int cuDriverGetVersion(int *v) { *v = DRIVER_VERSION; return 0; }
int cuInit(unsigned int flags) {
#ifdef NO_DEVICE
    (void)flags; return 100; /* CUDA_ERROR_NO_DEVICE */
#else
    return flags == 0 ? 0 : 1;
#endif
}
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? 0 : 101; }
int cuDeviceGetName(char *name, int len, int dev) { (void)dev; strncpy(name, "Stub GPU", len); return 0; }
#ifndef CC_MAJOR
#define CC_MAJOR 9
#define CC_MINOR 0
#endif
int cuDeviceGetAttribute(int *v, int attr, int dev) { (void)dev; *v = attr == 75 ? CC_MAJOR : attr == 76 ? CC_MINOR : -1; return 0; }
int cuDeviceTotalMem_v2(size_t *b, int dev) { (void)dev; *b = (size_t)1 << 34; return 0; }
int cuGetErrorName(int e, const char **s) { *s = e == 0 ? "CUDA_SUCCESS" : e == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN"; return 0; }
#endif

#ifdef CUDART
int cudaRuntimeGetVersion(int *v) { *v = 12060; return 0; }
const char *cudaGetErrorName(int e) { return e == 0 ? "cudaSuccess" : "cudaErrorInvalidValue"; }
int cudaMalloc(void **p, size_t n) { *p = malloc(n); return *p ? 0 : 2; }
int cudaFree(void *p) { free(p); return 0; }
int cudaMemcpy(void *dst, const void *src, size_t n, int kind) {
    if (kind != 1 && kind != 2) return 1; /* cudaMemcpyHostToDevice = 1, DeviceToHost = 2 */
    memcpy(dst, src, n); return 0;
}
int cudaDeviceSynchronize(void) { return 0; }
#endif

#ifdef CUDNN
#define BAD 2000 /* CUDNN_STATUS_BAD_PARAM */
size_t cudnnGetVersion(void) { return 90500; }
size_t cudnnGetCudartVersion(void) { return 12060; }
size_t cudnnGetMaxDeviceVersion(void) { return 900; }
const char *cudnnGetErrorString(int s) {
    switch (s) {
    case 0: return "CUDNN_STATUS_SUCCESS";
    case 1001: return "CUDNN_STATUS_NOT_INITIALIZED";
    case 2000: return "CUDNN_STATUS_BAD_PARAM";
    case 3000: return "CUDNN_STATUS_NOT_SUPPORTED";
    case 3007: return "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH";
    default: return "CUDNN_STATUS_UNKNOWN";
    }
}
int cudnnCreate(void **h) {
#ifdef ARCH_MISMATCH
    (void)h; return 3007;
#elif defined(NOT_INITIALIZED)
    /* What a CUDA 12 build gets from cudaErrorInsufficientDriver under an older driver. */
    (void)h; return 1001;
#else
    *h = malloc(1); return 0;
#endif
}
int cudnnDestroy(void *h) { free(h); return 0; }

typedef struct { int n, c, h, w; } Tensor;
typedef struct { int k, c, r, s; } Filter;
typedef struct { int pad_h, pad_w, math; } Conv;
typedef struct { int algo; int status; float time; size_t memory; int determinism; int mathType; int reserved[3]; } Perf;

int cudnnCreateTensorDescriptor(void **d) { *d = calloc(1, sizeof(Tensor)); return 0; }
int cudnnDestroyTensorDescriptor(void *d) { free(d); return 0; }
int cudnnSetTensor4dDescriptor(void *d, int format, int dtype, int n, int c, int h, int w) {
    if (format != 0 || dtype != 0 || n <= 0 || c <= 0 || h <= 0 || w <= 0) return BAD; /* NCHW, FLOAT */
    Tensor *t = d; t->n = n; t->c = c; t->h = h; t->w = w; return 0;
}
int cudnnCreateFilterDescriptor(void **d) { *d = calloc(1, sizeof(Filter)); return 0; }
int cudnnDestroyFilterDescriptor(void *d) { free(d); return 0; }
int cudnnSetFilter4dDescriptor(void *d, int dtype, int format, int k, int c, int h, int w) {
    if (dtype != 0 || format != 0) return BAD;
    Filter *f = d; f->k = k; f->c = c; f->r = h; f->s = w; return 0;
}
int cudnnCreateConvolutionDescriptor(void **d) { *d = calloc(1, sizeof(Conv)); return 0; }
int cudnnDestroyConvolutionDescriptor(void *d) { free(d); return 0; }
int cudnnSetConvolution2dDescriptor(void *d, int ph, int pw, int u, int v, int dh, int dw, int mode, int ctype) {
    if (u != 1 || v != 1 || dh != 1 || dw != 1 || mode != 1 || ctype != 0) return BAD; /* CROSS_CORRELATION, FLOAT */
    Conv *c = d; c->pad_h = ph; c->pad_w = pw; return 0;
}
int cudnnSetConvolutionMathType(void *d, int math) {
    if (math != 3) return BAD; /* CUDNN_FMA_MATH */
    ((Conv *)d)->math = math; return 0;
}
int cudnnGetConvolution2dForwardOutputDim(void *cd, void *xd, void *wd, int *n, int *c, int *h, int *w) {
    Conv *cv = cd; Tensor *x = xd; Filter *f = wd;
    if (x->c != f->c) return BAD;
    *n = x->n; *c = f->k; *h = x->h + 2 * cv->pad_h - f->r + 1; *w = x->w + 2 * cv->pad_w - f->s + 1; return 0;
}
int cudnnFindConvolutionForwardAlgorithm(void *h, void *x, void *w, void *c, void *y, int req, int *ret, Perf *p) {
    if (!h || !x || !w || !c || !y || req < 2) return BAD;
    memset(p, 0, sizeof(Perf) * 2);
    p[0].algo = 4; p[0].status = 3000; p[0].time = -1; /* FFT: not supported */
    p[1].algo = 1; p[1].status = 0; p[1].time = 0.015f; p[1].memory = 64; p[1].mathType = 3; /* IMPLICIT_PRECOMP_GEMM */
    *ret = 2; return 0;
}
int cudnnGetConvolutionForwardWorkspaceSize(void *h, void *x, void *w, void *c, void *y, int algo, size_t *size) {
    (void)h; (void)x; (void)w; (void)c; (void)y;
    if (algo != 1) return BAD;
    *size = 64; return 0;
}
int cudnnConvolutionForward(void *h, const void *alpha, void *xd, const void *x, void *wd, const void *w, void *cd, int algo,
                            void *ws, size_t ws_size, const void *beta, void *yd, void *y) {
    Tensor *xt = xd, *yt = yd; Filter *f = wd; Conv *cv = cd;
    if (!h || algo != 1 || !ws || ws_size < 64) return BAD;
    float a = *(const float *)alpha, b = *(const float *)beta;
    const float *X = x, *W = w; float *Y = y;
    for (int n = 0; n < yt->n; n++) for (int k = 0; k < yt->c; k++) for (int i = 0; i < yt->h; i++) for (int j = 0; j < yt->w; j++) {
        float acc = 0;
        for (int c = 0; c < f->c; c++) for (int r = 0; r < f->r; r++) for (int s = 0; s < f->s; s++) {
            int yy = i + r - cv->pad_h, xx = j + s - cv->pad_w;
            if (yy < 0 || xx < 0 || yy >= xt->h || xx >= xt->w) continue;
            acc += X[((n * xt->c + c) * xt->h + yy) * xt->w + xx] * W[((k * f->c + c) * f->r + r) * f->s + s];
        }
#ifdef WRONG
        acc += 0.01f;
#endif
        float *o = &Y[((n * yt->c + k) * yt->h + i) * yt->w + j];
        /* cuDNN's contract: with beta == 0 the output is not read (it may hold garbage, even NaN). */
        *o = b == 0.0f ? a * acc : a * acc + b * *o;
    }
    return 0;
}
#endif
"#;

impl Stubs {
    /// Builds `<dir>/<file>` from the fake-GPU source.
    fn fake(&self, dir: &str, file: &str, defines: &[&str]) -> PathBuf {
        std::fs::write(self.tmp.path().join("fake.c"), FAKE_GPU_C).unwrap();
        let d = self.tmp.path().join(dir);
        std::fs::create_dir_all(&d).unwrap();
        let out = Command::new(&self.cc)
            .args(["-shared", "-fPIC", "-O1", "-o"])
            .arg(d.join(file))
            .arg(self.tmp.path().join("fake.c"))
            .args(defines.iter().map(|x| format!("-D{x}")))
            .output()
            .unwrap_or_else(|e| panic!("cannot run the C compiler `{}` (set CC): {e}", self.cc));
        assert!(out.status.success(), "cc failed: {}", String::from_utf8_lossy(&out.stderr));
        d
    }

    /// Folders for a fake GPU: (cuDNN entry, runtime, driver).
    fn fake_gpu(&self, cudnn: &[&str], driver: &[&str]) -> (PathBuf, PathBuf, PathBuf) {
        let mut c = vec!["CUDNN"];
        c.extend_from_slice(cudnn);
        let mut d = vec!["DRIVER"];
        d.extend_from_slice(driver);
        (self.fake("gpu/entry", "libcudnn.so.9", &c), self.fake("gpu/rt", "libcudart.so.12", &["CUDART"]), self.fake("gpu/drv", "libcuda.so.1", &d))
    }
}

#[test]
fn the_convolution_runs_and_matches_on_a_fake_gpu() {
    let s = Stubs::new();
    let (entry, rt, drv) = s.fake_gpu(&[], &[]);
    let o = run_probe(cuenv(), &env_with(&[&entry, &rt, &drv]), 9, true, T);
    let c = classify(&o, &expected(&entry, "9.5.0.50"));
    assert_eq!(c.status, CheckStatus::Pass, "{:?}\n{:?}\n{}", c.reasons, c.notes, o.stderr_tail);
    let r = o.report.unwrap();
    let d = r.driver.as_ref().unwrap();
    assert_eq!((d.version, d.devices.len()), (Some(13000), 1));
    assert_eq!((d.devices[0].name.as_str(), d.devices[0].compute_capability, d.devices[0].total_memory), ("Stub GPU", [9, 0], 1 << 34));
    let cuenv::probe::Conv::Done(conv) = &r.conv else { panic!("{:?}", r.conv) };
    assert_eq!(conv.algo, "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM", "the first algorithm that succeeded");
    assert_eq!(conv.algos.len(), 2);
    assert_eq!(conv.algos[0].status.name, "CUDNN_STATUS_NOT_SUPPORTED");
    assert_eq!((conv.workspace_bytes, conv.math_type.as_str()), (64, "CUDNN_FMA_MATH"));
    assert!(conv.matches && conv.max_abs_error < 1e-5, "{conv:?}");
    assert!(conv.forward_ms >= 0.0 && conv.iterations > 0);
    assert!(c.notes.iter().any(|n| n.contains("convolution matched")), "{:?}", c.notes);
}

#[test]
fn a_wrong_convolution_result_fails() {
    let s = Stubs::new();
    let (entry, rt, drv) = s.fake_gpu(&["WRONG"], &[]);
    let o = run_probe(cuenv(), &env_with(&[&entry, &rt, &drv]), 9, true, T);
    let c = classify(&o, &expected(&entry, "9.5.0.50"));
    assert_eq!(c.status, CheckStatus::Fail);
    let w = c.reasons.iter().find(|x| x.kind == ReasonKind::WrongResult).unwrap_or_else(|| panic!("{:?}", c.reasons));
    assert!(w.message.contains("1.000e-2"), "{w}");
}

#[test]
fn an_architecture_mismatch_names_the_gpu() {
    let s = Stubs::new();
    let (entry, rt, drv) = s.fake_gpu(&["ARCH_MISMATCH"], &[]);
    let o = run_probe(cuenv(), &env_with(&[&entry, &rt, &drv]), 9, true, T);
    let c = classify(&o, &expected(&entry, "9.5.0.50"));
    assert_eq!(c.status, CheckStatus::Fail);
    let m = c.reasons.iter().find(|x| x.kind == ReasonKind::CudnnStatus).unwrap_or_else(|| panic!("{:?}", c.reasons));
    assert!(m.message.contains("ARCH_MISMATCH") && m.message.contains("Stub GPU has compute capability 9.0"), "{m}");
    assert!(!c.has(ReasonKind::ConvFailed), "one reason, not two: {:?}", c.reasons);
}

#[test]
fn a_driver_without_devices_is_no_gpu() {
    let s = Stubs::new();
    let (entry, rt, drv) = s.fake_gpu(&[], &["NO_DEVICE"]);
    let o = run_probe(cuenv(), &env_with(&[&entry, &rt, &drv]), 9, true, T);
    let c = classify(&o, &expected(&entry, "9.5.0.50"));
    assert_eq!(c.status, CheckStatus::NoGpu, "{:?}", c.reasons);
    assert!(c.reasons[0].message.contains("CUDA_ERROR_NO_DEVICE") && c.reasons[0].message.contains("CUDA 13.0"), "{}", c.reasons[0]);
    assert!(matches!(o.report.unwrap().conv, cuenv::probe::Conv::Skipped { .. }));
}

/// A CUDA 12.6 profile under a driver that supports CUDA 11.4 only: cuDNN says
/// `CUDNN_STATUS_NOT_INITIALIZED` ("the CUDA driver or device could not be initialized"),
/// which names no cause; the driver's CUDA version in the probe report does.
#[test]
fn a_driver_too_old_for_the_runtime_is_named_as_such() {
    use cuenv::check::gpufit::{Machine, Overrides, Want, judge};
    let s = Stubs::new();
    let (entry, rt, drv) = s.fake_gpu(&["NOT_INITIALIZED"], &["DRIVER_VERSION=11040"]);
    let o = run_probe(cuenv(), &env_with(&[&entry, &rt, &drv]), 9, true, T);
    let mut c = classify(&o, &expected(&entry, "9.5.0.50"));
    // What the probe alone says: a cuDNN status without a cause.
    let status = c.reasons.iter().find(|x| x.kind == ReasonKind::CudnnStatus).unwrap_or_else(|| panic!("{:?}", c.reasons));
    assert!(status.message.contains("CUDNN_STATUS_NOT_INITIALIZED"), "{status}");
    let m = Machine::from_report(o.report.as_ref(), &Overrides::default());
    assert_eq!(m.driver_cuda.map(|v| v.to_string()).as_deref(), Some("11.4"));
    c.add_misfits(&judge(&m, &Want::new("9.5.0.50".parse().unwrap(), "12.6.77", 12)));
    assert_eq!(c.status, CheckStatus::Fail);
    assert_eq!(c.reasons[0].kind, ReasonKind::DriverTooOld, "{:?}", c.reasons);
    let floor = if cfg!(windows) { "527.41" } else { "525.60.13" };
    assert_eq!(
        c.reasons[0].to_string(),
        format!(
            "driver too old: the driver supports CUDA <= 11.4; this profile's runtime is 12.6: update the driver to R525 or newer (>= {floor}), or use a CUDA 11 profile"
        )
    );
    // A 12.x driver runs the same profile (minor-version compatibility): nothing to add.
    let (entry, rt, drv) = s.fake_gpu(&[], &["DRIVER_VERSION=12020"]);
    let o = run_probe(cuenv(), &env_with(&[&entry, &rt, &drv]), 9, true, T);
    let m = Machine::from_report(o.report.as_ref(), &Overrides::default());
    assert!(judge(&m, &Want::new("9.5.0.50".parse().unwrap(), "12.6.77", 12)).is_empty(), "{m:?}");
}

/// The GPU's compute capability as the driver reports it, against cuDNN 9.17's support matrix
/// (7.5 and newer): a Pascal GPU (6.1) is ruled out by name.
#[test]
fn a_gpu_older_than_the_cudnn_supports_is_named() {
    use cuenv::check::gpufit::{Machine, Overrides, Want, judge};
    let s = Stubs::new();
    let (entry, rt, drv) = s.fake_gpu(&[], &["CC_MAJOR=6", "CC_MINOR=1"]);
    let o = run_probe(cuenv(), &env_with(&[&entry, &rt, &drv]), 9, false, T);
    let m = Machine::from_report(o.report.as_ref(), &Overrides::default());
    assert_eq!(m.gpus[0].compute_capability.to_string(), "6.1");
    let why = judge(&m, &Want::new("9.17.0.29".parse().unwrap(), "13.0.88", 13));
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(why[0].message.starts_with("GPU 0 Stub GPU has compute capability 6.1; cuDNN 9.17.0.29 with CUDA 13.0 supports 7.5 to 12.0"), "{}", why[0]);
    assert!(judge(&m, &Want::new("9.5.0.50".parse().unwrap(), "12.6.77", 12)).is_empty(), "9.5 supports 6.1");
}
