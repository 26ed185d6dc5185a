//! Hermetic tests of `cuenv check`'s probe and classification: stub cuDNN libraries built
//! with the C compiler at test time (`$CC`, else `cc`), loaded by the real `cuenv __probe`
//! child. Linux only (the stubs are ELF shared objects found through LD_LIBRARY_PATH).
#![cfg(target_os = "linux")]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use cuenv::check::{CheckStatus, Expected, ProbeEnd, ReasonKind, classify, run_probe};

/// One C source for every stub; `-D` flags pick the behaviour.
const STUB_C: &str = r#"
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <dlfcn.h>

#ifdef GRAPH
/* A stub sub-library: reports its own version. */
size_t stub_graph_version(void) { return VERSION; }
#elif defined(CUDART)
int cudaRuntimeGetVersion(int *v) { *v = CUDART; return 0; }
const char *cudaGetErrorName(int e) { return e == 0 ? "cudaSuccess" : "cudaErrorUnknown"; }
#else
/* A stub dispatcher. */
size_t cudnnGetVersion(void) {
#if defined(MODE_SUB)
    /* Like cuDNN 9: the version comes from a sub-library loaded by name at the first call. */
    void *h = dlopen("libcudnn_graph.so.9", RTLD_NOW);
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
size_t cudnnGetCudartVersion(void) { return 12060; }
const char *cudnnGetErrorString(int s) {
    return s == 0 ? "CUDNN_STATUS_SUCCESS" : s == 1001 ? "CUDNN_STATUS_NOT_INITIALIZED" : "CUDNN_STATUS_UNKNOWN";
}
int cudnnCreate(void **h) { *h = (void *)1; return 0; }
int cudnnDestroy(void *h) { (void)h; return 0; }
#endif
"#;

struct Stubs {
    tmp: tempfile::TempDir,
    cc: String,
}

impl Stubs {
    fn new() -> Stubs {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("stub.c"), STUB_C).unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        Stubs { tmp, cc }
    }

    /// Builds `<dir>/<file>` from the stub source with `defines`; returns the folder.
    fn build(&self, dir: &str, file: &str, defines: &[&str]) -> PathBuf {
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

    /// A stub CUDA 12 runtime in `<tmp>/cudart`.
    fn cudart(&self) -> PathBuf {
        self.build("cudart", "libcudart.so.12", &["CUDART=12060"])
    }
}

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
    Expected { entry_dir: entry.to_path_buf(), version: version.parse().unwrap(), cuda_major: 12 }
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
    assert!(m.message.contains("90100 (9.1.0)") && m.message.contains("90500"), "{m}");
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
    assert!(crash.message.contains("SIGABRT") && crash.message.contains("during cudnnGetVersion") && crash.message.contains("Unable to load any of"), "{crash}");
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
