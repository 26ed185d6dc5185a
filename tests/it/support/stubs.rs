//! Stub cuDNN libraries built with the C compiler at test time (Linux ELF shared objects):
//! a dispatcher reporting a chosen version, one that loads a sub-library by name (like
//! cuDNN 9), crashing and hanging ones, and a stub CUDA runtime. Used by the check and
//! doctor tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// One C source for every stub; `-D` flags pick the behaviour.
pub const STUB_C: &str = r#"
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <dlfcn.h>

#ifdef LOADS
/* Like cuDNN's sub-libraries: loads a CUDA library of its major by name (a string in .rodata). */
void *stub_load_cuda_library(void) { return dlopen(LOADS, RTLD_LAZY); }
#endif

#ifdef NAMES
/* Like cuDNN's dispatcher and graph library: the names of the sub-libraries it loads by
   name, in its read-only data (space-separated here). */
__attribute__((used)) const char stub_names[] = NAMES;
#endif

#ifdef OWN_VERSION
/* Like every 8.x sub-library and 9.x graph/ops/adv: its own version as exported data,
   M << 16 | m << 8 | p (binfmt::exported_version). */
__attribute__((visibility("default"))) const unsigned int cudnn_stub_version = OWN_VERSION;
#endif

#ifdef MARKER
/* The version marker NVIDIA embeds in libcudnn_ops_infer.so.8 / libcudnn_graph.so.9. */
__attribute__((used)) const char stub_marker[] = MARKER;
#endif

#ifdef GRAPH
/* A stub sub-library: reports its own version. */
size_t stub_graph_version(void) { return VERSION; }
#ifdef STUB_CHECK
/* What its version check answers when the dispatcher forwards one to it. */
int stub_check(void) { return STUB_CHECK; }
#endif
#elif defined(CUDART)
int cudaRuntimeGetVersion(int *v) { *v = CUDART; return 0; }
const char *cudaGetErrorName(int e) { return e == 0 ? "cudaSuccess" : "cudaErrorUnknown"; }
#else
/* A stub dispatcher. */
#ifndef SUBLIB
#define SUBLIB "libcudnn_graph.so.9"
#endif
/* Like cuDNN's own loads of its sub-libraries: dlopen by name from inside the dispatcher,
   so the loader applies the dispatcher's DT_RUNPATH (the loader tests call it). */
void *stub_dlopen(const char *name) { return dlopen(name, RTLD_NOW); }
size_t cudnnGetVersion(void) {
#if defined(MODE_SUB)
    /* Like cuDNN 9: the version comes from a sub-library loaded by name at the first call. */
    void *h = dlopen(SUBLIB, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "Unable to load any of {libcudnn_graph.so.9.5.0, libcudnn_graph.so.9.5, libcudnn_graph.so.9, libcudnn_graph.so}\n");
        fprintf(stderr, "Invalid handle. Cannot load symbol cudnnGetVersion\n");
        abort();
    }
    size_t (*f)(void) = (size_t (*)(void))dlsym(h, "stub_graph_version");
    return f();
#elif defined(MODE_ABORT)
    fprintf(stderr, "stub: giving up\n");
    abort();
#elif defined(MODE_SEGV)
    volatile int *p = 0;
    return (size_t)*p;
#elif defined(MODE_HANG)
    for (;;) sleep(1);
#else
    return VERSION;
#endif
}
#ifndef CUDNN_CUDART
#define CUDNN_CUDART 12060
#endif
size_t cudnnGetCudartVersion(void) { return CUDNN_CUDART; }
const char *cudnnGetErrorString(int s) {
    return s == 0 ? "CUDNN_STATUS_SUCCESS" : s == 1001 ? "CUDNN_STATUS_NOT_INITIALIZED"
        : s == 14 ? "CUDNN_STATUS_VERSION_MISMATCH" : s == 1002 ? "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH" : "CUDNN_STATUS_UNKNOWN";
}
int cudnnCreate(void **h) { *h = (void *)1; return 0; }
/* cuDNN's version checks (cudnnStatus_t f(void)), each exported only when its -D flag is
   given, answering that code: VCHECK_GRAPH=0, VCHECK_CNN=1002, VCHECK_OPS_TRAIN=14, ...
   VCHECK_NEW is a check no release has (yet): the probe must find it by the export table.
   VCHECK_CNN_FROM="libcudnn_cnn.so.9" forwards cudnnCnnVersionCheck to that sub-library,
   loaded by name like cuDNN does (its stub_check answers; cuDNN aborts when it is missing). */
#ifdef VCHECK_GRAPH
int cudnnGraphVersionCheck(void) { return VCHECK_GRAPH; }
#endif
#ifdef VCHECK_OPS
int cudnnOpsVersionCheck(void) { return VCHECK_OPS; }
#endif
#ifdef VCHECK_CNN
int cudnnCnnVersionCheck(void) { return VCHECK_CNN; }
#endif
#ifdef VCHECK_CNN_FROM
int cudnnCnnVersionCheck(void) {
    void *h = dlopen(VCHECK_CNN_FROM, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "Unable to load any of {libcudnn_cnn.so.9.5.0, libcudnn_cnn.so.9.5, libcudnn_cnn.so.9, libcudnn_cnn.so}\n");
        fprintf(stderr, "Invalid handle. Cannot load symbol cudnnCnnVersionCheck\n");
        abort();
    }
    int (*f)(void) = (int (*)(void))dlsym(h, "stub_check");
    return f();
}
#endif
#ifdef VCHECK_ADV
int cudnnAdvVersionCheck(void) { return VCHECK_ADV; }
#endif
#ifdef VCHECK_OPS_TRAIN
int cudnnOpsTrainVersionCheck(void) { return VCHECK_OPS_TRAIN; }
#endif
#ifdef VCHECK_NEW
int cudnnNewVersionCheck(void) { return VCHECK_NEW; }
#endif
int cudnnDestroy(void *h) { (void)h; return 0; }
#endif
"#;

pub struct Stubs {
    /// Holds the sources and every library built.
    pub tmp: tempfile::TempDir,
    /// The C compiler (`$CC`, else `cc`).
    pub cc: String,
}

impl Stubs {
    pub fn new() -> Stubs {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("stub.c"), STUB_C).unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        Stubs { tmp, cc }
    }

    /// Builds `<dir>/<file>` from the stub source with `defines`; returns the folder.
    pub fn build(&self, dir: &str, file: &str, defines: &[&str]) -> PathBuf {
        let d = self.tmp.path().join(dir);
        std::fs::create_dir_all(&d).unwrap();
        let out = Command::new(&self.cc)
            .args(["-shared", "-fPIC", "-o"])
            .arg(d.join(file))
            .arg(self.tmp.path().join("stub.c"))
            .args(defines.iter().map(|x| format!("-D{x}")))
            .arg("-ldl")
            .output()
            .unwrap_or_else(|e| panic!("cannot run the C compiler `{}` (set CC): {e}", self.cc));
        assert!(out.status.success(), "cc failed: {}", String::from_utf8_lossy(&out.stderr));
        d
    }

    /// Builds `<dir>/<file>` like [`Stubs::build`], with extra compiler arguments (`-L`, `-l`).
    pub fn build_with(&self, dir: &str, file: &str, defines: &[&str], extra: &[&str]) -> PathBuf {
        let d = self.tmp.path().join(dir);
        std::fs::create_dir_all(&d).unwrap();
        let out = Command::new(&self.cc)
            .args(["-shared", "-fPIC", "-o"])
            .arg(d.join(file))
            .arg(self.tmp.path().join("stub.c"))
            .args(defines.iter().map(|x| format!("-D{x}")))
            .args(extra)
            .arg("-ldl")
            .output()
            .unwrap_or_else(|e| panic!("cannot run the C compiler `{}` (set CC): {e}", self.cc));
        assert!(out.status.success(), "cc failed: {}", String::from_utf8_lossy(&out.stderr));
        d
    }

    /// A stub CUDA 12 runtime in `<tmp>/cudart`.
    pub fn cudart(&self) -> PathBuf {
        self.build("cudart", "libcudart.so.12", &["CUDART=12060"])
    }
}

/// An NVRTC 12.x-like stub naming `builtins` (a whole string, like the real `libnvrtc.so.12`)
/// and loading it by name in `nvrtcCompileProgram`, which answers 7
/// (`NVRTC_ERROR_BUILTIN_OPERATION_FAILURE`) when it cannot.
pub fn nvrtc_src(builtins: &str, major: u32, minor: u32) -> String {
    format!(
        r#"#include <dlfcn.h>
#include <stddef.h>
int nvrtcVersion(int *major, int *minor) {{ *major = {major}; *minor = {minor}; return 0; }}
int nvrtcCreateProgram(void **p, const char *src, const char *name, int n, const char *const *h, const char *const *i) {{ *p = (void *)1; return 0; }}
int nvrtcCompileProgram(void *p, int n, const char *const *o) {{ return dlopen("{builtins}", RTLD_NOW) ? 0 : 7; }}
int nvrtcDestroyProgram(void **p) {{ *p = 0; return 0; }}
const char *nvrtcGetErrorString(int r) {{ return r == 0 ? "NVRTC_SUCCESS" : r == 7 ? "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE" : "NVRTC_ERROR"; }}
"#
    )
}

/// Compiles `src` into `<dir>/<file>` (a shared library whose soname is `file`) with `extra`
/// compiler arguments; returns `dir`.
pub fn cc_lib(dir: &std::path::Path, file: &str, src: &str, extra: &[&str]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let c = dir.join(format!(".{file}.c"));
    std::fs::write(&c, src).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(dir.join(file))
        .arg(&c)
        .arg(format!("-Wl,-soname,{file}"))
        .args(extra)
        .arg("-ldl")
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` (set CC): {e}"));
    assert!(out.status.success(), "cc failed: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_file(&c).unwrap();
    dir.to_path_buf()
}

/// Stand-ins for the CUDA libraries cuDNN loads by name at run time (docs/loader.md F4), for
/// tests whose toolkit root comes from the real runtime wheel alone: `libcublas.so.<N>`,
/// `libcublasLt.so.<N>` and an NVRTC with its builtins, in `dir` (kept when present). CUDA 11
/// gets NVRTC's 11.x names: `libnvrtc.so.11.2` and the `libnvrtc.so` link an install has.
pub fn companion_stubs(dir: &std::path::Path, major: u32) {
    let rpath = ["-Wl,-rpath,$ORIGIN", "-Wl,--enable-new-dtags"];
    for lib in [format!("libcublas.so.{major}"), format!("libcublasLt.so.{major}")] {
        if !dir.join(&lib).exists() {
            cc_lib(dir, &lib, "int cuenv_stub(void) { return 0; }\n", &[]);
        }
    }
    let (nvrtc, builtins, minor) = if major == 11 {
        ("libnvrtc.so.11.2".to_string(), "libnvrtc-builtins.so.11.2".to_string(), 2)
    } else {
        (format!("libnvrtc.so.{major}"), format!("libnvrtc-builtins.so.{major}.0"), 0)
    };
    if !dir.join(&nvrtc).exists() {
        cc_lib(dir, &nvrtc, &nvrtc_src(&builtins, major, minor), &rpath);
        cc_lib(dir, &builtins, "int cuenv_stub(void) { return 0; }\n", &[]);
        #[cfg(unix)]
        if major == 11 {
            let _ = std::os::unix::fs::symlink(&nvrtc, dir.join("libnvrtc.so"));
        }
    }
}
