//! The CUDA libraries around cuDNN (docs/loader.md "CUDA library families", F1-F4): one rule
//! set, one verdict (decisions.md 7). `check` of a profile, `doctor` with the same folders on
//! `LD_LIBRARY_PATH` and `doctor --pid` of a process that loaded the same cuDNN give the same
//! class and rule id; the real loader (glibc's ld.so, through a C child and the probe) is the
//! judge of what each fixture does.
//!
//! The fixtures are gcc stubs that behave like the real files where the rules look: the cuDNN
//! graph library names `libnvrtc.so.%d`, `libnvrtc.so` and `libcublasLt.so.12` as whole strings
//! (like 9.5.0.50's `libcudnn_graph.so.9` and `libcudnn_adv.so.9`); the NVRTC stub names its
//! builtins and, like the real one, loads them by name in `nvrtcCompileProgram` and answers
//! `NVRTC_ERROR_BUILTIN_OPERATION_FAILURE` (7) when it cannot; the nvJitLink stubs export
//! `__nvJitLinkCreate_12_<k>` for each minor up to theirs, and the cuSPARSE stub imports the
//! 12.6 one. The ignored `real_*` tests run the same rules on real NVIDIA files
//! (`scripts/fetch-real-members.py`).
#![cfg(target_os = "linux")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::support::stubs::Stubs;
use crate::support::*;

use crate::support::stubs::cc_lib as cc;

fn nvrtc_src(builtins: &str, minor: u32) -> String {
    crate::support::stubs::nvrtc_src(builtins, 12, minor)
}

/// An nvJitLink 12.`minor` stub: `__nvJitLinkCreate_12_0` .. `__nvJitLinkCreate_12_<minor>`.
fn jitlink_src(minor: u32) -> String {
    (0..=minor).map(|k| format!("int __nvJitLinkCreate_12_{k}(void) {{ return 0; }}\n")).collect()
}

const CUSPARSE_SRC: &str = "extern int __nvJitLinkCreate_12_6(void);\nint cusparseStub(void) { return __nvJitLinkCreate_12_6(); }\n";

/// The graph library's names of the CUDA libraries it loads (9.5.0.50's, as whole strings).
const NAMES_SRC: &str = r#"
__attribute__((used)) const char cuenv_n1[] = "libnvrtc.so.%d";
__attribute__((used)) const char cuenv_n2[] = "libnvrtc.so";
__attribute__((used)) const char cuenv_n3[] = "libcublasLt.so.12";
"#;

/// A C program that loads each argument by name (`RTLD_NOW`), says `ready` and waits for
/// stdin to close; on a failed load it prints the loader's words and exits 1.
const CHILD_SRC: &str = r#"#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) if (!dlopen(argv[i], RTLD_NOW)) { printf("%s\n", dlerror()); fflush(stdout); return 1; }
    printf("ready\n"); fflush(stdout);
    getchar();
    return 0;
}
"#;

fn child_exe(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("child.c"), CHILD_SRC).unwrap();
    let exe = dir.join("child");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc).arg("-o").arg(&exe).arg(dir.join("child.c")).arg("-ldl").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// Starts the child loading `libs` with `LD_LIBRARY_PATH` = `ld`: `Ok` once ready, `Err` with
/// the loader's words when a load failed.
fn start(exe: &Path, libs: &[&str], ld: &[PathBuf]) -> Result<Child, String> {
    use std::io::BufRead as _;
    let mut child = Command::new(exe)
        .args(libs)
        .env_clear()
        .env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    if line.trim() == "ready" {
        Ok(child)
    } else {
        let _ = child.wait();
        Err(line)
    }
}

fn stop(mut child: Child) {
    use std::io::Write as _;
    let _ = child.stdin.take().map(|mut s| s.write_all(b"\n"));
    let _ = child.wait();
}

/// A verdict: its class and the rule ids it cites.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Verdict {
    class: &'static str,
    rules: BTreeSet<String>,
}

/// The class of a command's result (a machine without a GPU, which `check` warns about, is
/// none of the rules' business).
fn verdict(code: i32, text: &str) -> Verdict {
    let re = regex::Regex::new(r"\[([RVLWCF]\d+)\]: ").unwrap();
    let rules = re.captures_iter(text).map(|c| c[1].to_string()).collect();
    let class = if code != 0 {
        "problem"
    } else if text.lines().any(|l| l.trim_start().starts_with("warning") && !l.contains("no GPU here")) {
        "warning"
    } else {
        "ok"
    };
    Verdict { class, rules }
}

fn v(class: &'static str, rules: &[&str]) -> Verdict {
    Verdict { class, rules: rules.iter().map(|r| r.to_string()).collect() }
}

/// `cuenv <args>` with a clean environment and `LD_LIBRARY_PATH` = `ld`.
fn cuenv(ctx: &TestContext, args: &[&str], ld: &[PathBuf]) -> (i32, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("CUENV_HOME", &ctx.home);
    c.env("CUENV_TOOLKIT_PATHS", "").env("CUDA_HOME", "").env("CUDA_PATH", "");
    c.env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap());
    let out = c.args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// A whole stub cuDNN 9.5 set in `<root>/lib` whose graph names NVRTC and cuBLASLt.
fn cudnn_set(s: &Stubs, ctx: &TestContext) -> PathBuf {
    let runpath = ["-Wl,-rpath,$ORIGIN", "-Wl,--enable-new-dtags"];
    let names = ctx.work.join("names.c");
    std::fs::write(&names, NAMES_SRC).unwrap();
    s.build_with("cudnn/lib", "libcudnn.so.9", &["MODE_SUB", "NAMES=\"libcudnn_graph.so\"", "VCHECK_GRAPH=0"], &runpath);
    let mut extra = runpath.to_vec();
    extra.push(names.to_str().unwrap());
    s.build_with(
        "cudnn/lib",
        "libcudnn_graph.so.9",
        &["GRAPH", "VERSION=90500", "MARKER=\"cudnn_version_9_5_0_50_34937467_e0\"", "OWN_VERSION=0x090500"],
        &extra,
    );
    let root = s.tmp.path().join("cudnn");
    std::fs::create_dir_all(root.join("include")).unwrap();
    std::fs::write(root.join("include/cudnn_version.h"), version_header(9, 5, 0)).unwrap();
    root
}

/// The CUDA 12.6 toolkit roots of the cases: `lib64` with the stub runtime, cuBLASLt and
/// what each case says of NVRTC.
fn toolkit_case(s: &Stubs, ctx: &TestContext, case: &str) -> PathBuf {
    let tk = crate::support::lab::toolkit(&ctx.work.join(case), "12.6.77", 12);
    let lib = tk.join("lib64");
    std::fs::copy(s.cudart().join("libcudart.so.12"), lib.join("libcudart.so.12")).unwrap();
    cc(&lib, "libcublasLt.so.12", "int cublasLtStub(void) { return 0; }\n", &[]);
    match case {
        "whole" => {
            cc(&lib, "libnvrtc.so.12", &nvrtc_src("libnvrtc-builtins.so.12.8", 8), &["-Wl,-rpath,$ORIGIN", "-Wl,--enable-new-dtags"]);
            cc(&lib, "libnvrtc-builtins.so.12.8", "int b(void) { return 0; }\n", &[]);
        }
        "no-nvrtc" => {}
        "alt-builtins" => {
            cc(&lib, "libnvrtc.so.12", &nvrtc_src("libnvrtc-builtins.so.12.8", 8), &["-Wl,-rpath,$ORIGIN", "-Wl,--enable-new-dtags"]);
            cc(&lib, "libnvrtc-builtins.alt.so.12.8", "int b(void) { return 0; }\n", &[]);
        }
        "inherited-11.2" => {
            cc(&lib, "libnvrtc.so.11.2", &nvrtc_src("libnvrtc-builtins.so.11.2", 2), &[]);
            std::os::unix::fs::symlink("libnvrtc.so.11.2", lib.join("libnvrtc.so")).unwrap();
        }
        other => panic!("{other}"),
    }
    tk
}

/// The cases of F4 and F2: `check` of a profile on each toolkit root, `doctor` with the set and
/// the root's `lib64` on `LD_LIBRARY_PATH`, and `doctor --pid` of a process that loaded that
/// cuDNN give one verdict with one rule.
#[test]
fn cudnns_companions_get_one_verdict_from_check_doctor_and_doctor_pid() {
    let s = Stubs::new();
    let work = TestContext::new();
    let set = cudnn_set(&s, &work);
    let exe = child_exe(&work.work.join("child"));
    for (case, want) in
        [("whole", v("ok", &[])), ("no-nvrtc", v("problem", &["F4"])), ("alt-builtins", v("problem", &["F2"])), ("inherited-11.2", v("problem", &["F4"]))]
    {
        // One home per case: each profile picks the one toolkit root its file names.
        let ctx = TestContext::new();
        let (code, out) = cuenv(&ctx, &["store", "add", "--cuda", "12", set.to_str().unwrap()], &[]);
        assert_eq!(code, 0, "{out}");
        let root = toolkit_case(&s, &work, case);
        let file = ctx.path("lab.toml");
        std::fs::write(&file, format!("[toolkits]\n\"12.6\" = '{}'\n[profiles.p]\ncuda = \"12\"\ncudnn = \"9.5\"\n", root.display())).unwrap();
        let (code, out) = cuenv(&ctx, &["apply", "--no-check", file.to_str().unwrap()], &[]);
        assert_eq!(code, 0, "{out}");
        let (code, out) = cuenv(&ctx, &["check", "p"], &[]);
        assert_eq!(verdict(code, &out), want, "check on {case}:\n{out}");
        if case == "alt-builtins" {
            assert!(out.contains("NVRTC_ERROR_BUILTIN_OPERATION_FAILURE (7)") && out.contains("libnvrtc-builtins.so.12.8"), "{out}");
        }
        let ld = [set.join("lib"), root.join("lib64")];
        let (code, out) = cuenv(&ctx, &["doctor", "--major", "9"], &ld);
        assert_eq!(verdict(code, &out), want, "doctor on {case}:\n{out}");
        let child = start(&exe, &["libcudnn.so.9"], &ld).unwrap();
        let (code, out) = cuenv(&ctx, &["doctor", "--pid", &child.id().to_string()], &[]);
        stop(child);
        assert_eq!(verdict(code, &out), want, "doctor --pid on {case}:\n{out}");
    }
}

/// Two CUDA runtime majors mapped into one process (F1), and an nvJitLink older than the
/// cuSPARSE that imports it (F3): the real loader refuses the old nvJitLink ("undefined
/// symbol"), and `doctor` (the folders on `LD_LIBRARY_PATH`), `doctor --pid` and `check` of
/// a profile whose toolkit root holds both say F3; nvJitLink is listed as a CUDA library.
#[test]
fn two_runtime_majors_and_an_old_nvjitlink_are_problems_everywhere() {
    let s = Stubs::new();
    let ctx = TestContext::new();
    let exe = child_exe(&ctx.work.join("child"));
    let rt12 = s.cudart();
    let rt13 = s.build("cudart13", "libcudart.so.13", &["CUDART=13000"]);
    let child = start(&exe, &["libcudart.so.12", "libcudart.so.13"], &[rt12.clone(), rt13.clone()]).unwrap();
    let (code, out) = cuenv(&ctx, &["doctor", "--pid", &child.id().to_string()], &[]);
    stop(child);
    assert_eq!(verdict(code, &out), v("problem", &["F1"]), "{out}");
    assert!(out.contains("cudart of 2 majors mapped"), "{out}");

    // cuSPARSE built against nvJitLink 12.6, next to an nvJitLink 12.4.
    let new_jit = cc(&ctx.work.join("jit126"), "libnvJitLink.so.12", &jitlink_src(6), &[]);
    let tk = crate::support::lab::toolkit(&ctx.work.join("tk"), "12.6.77", 12);
    let lib = tk.join("lib64");
    std::fs::copy(rt12.join("libcudart.so.12"), lib.join("libcudart.so.12")).unwrap();
    cc(&lib, "libcusparse.so.12", CUSPARSE_SRC, &["-L", new_jit.to_str().unwrap(), "-l:libnvJitLink.so.12"]);
    cc(&lib, "libnvJitLink.so.12", &jitlink_src(4), &[]);
    let err = start(&exe, &["libcusparse.so.12"], std::slice::from_ref(&lib)).unwrap_err();
    assert!(err.contains("undefined symbol: __nvJitLinkCreate_12_6"), "the real loader: {err}");
    let (code, out) = cuenv(&ctx, &["doctor"], std::slice::from_ref(&lib));
    assert_eq!(verdict(code, &out), v("problem", &["F3"]), "{out}");
    assert!(out.contains("needs nvJitLink 12.6 or later (__nvJitLinkCreate_12_6)") && out.contains("is 12.4"), "{out}");

    // With the 12.6 nvJitLink first, the loader takes cuSPARSE and doctor --pid lists nvJitLink.
    let child = start(&exe, &["libcusparse.so.12"], &[new_jit.clone(), lib.clone()]).unwrap();
    let (code, out) = cuenv(&ctx, &["doctor", "--pid", &child.id().to_string()], &[]);
    stop(child);
    assert_eq!(verdict(code, &out), v("ok", &[]), "{out}");
    assert!(out.contains("libnvJitLink.so.12") && !out.contains("no cuDNN or CUDA library is mapped"), "{out}");

    // check of a profile on that toolkit root.
    let set = cudnn_set(&s, &ctx);
    let (code, out) = cuenv(&ctx, &["store", "add", "--cuda", "12", set.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{out}");
    cc(&lib, "libcublasLt.so.12", "int cublasLtStub(void) { return 0; }\n", &[]);
    cc(&lib, "libnvrtc.so.12", &nvrtc_src("libnvrtc-builtins.so.12.8", 8), &["-Wl,-rpath,$ORIGIN", "-Wl,--enable-new-dtags"]);
    cc(&lib, "libnvrtc-builtins.so.12.8", "int b(void) { return 0; }\n", &[]);
    let file = ctx.path("lab.toml");
    std::fs::write(&file, format!("[toolkits]\n\"12.6\" = '{}'\n[profiles.p]\ncuda = \"12\"\ncudnn = \"9.5\"\n", tk.display())).unwrap();
    let (code, out) = cuenv(&ctx, &["apply", "--no-check", file.to_str().unwrap()], &[]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = cuenv(&ctx, &["check", "p"], &[]);
    assert_eq!(verdict(code, &out), v("problem", &["F3"]), "check:\n{out}");
}

/// The real files: 9.5.0.50's graph names `libnvrtc.so.%d` then `libnvrtc.so`, its adv
/// `libcublasLt.so.12`; NVRTC 12.6.77 names `libnvrtc-builtins.so.12.6`; cuSPARSE 12.5.4.2
/// imports `__nvJitLink*_12_6`, which nvJitLink 12.4.127 lacks and 12.6.85 gives; ld.so agrees.
#[test]
#[ignore = "real NVIDIA files: scripts/real-input.sh (CUENV_REAL_WHEELS)"]
fn real_companions_are_read_from_the_files() {
    let Some(cache) = std::env::var_os("CUENV_REAL_WHEELS").map(PathBuf::from) else { panic!("set CUENV_REAL_WHEELS") };
    let members = cache.join("members");
    let m = |wheel: &str, file: &str| members.join(wheel).join(file);
    // The cuDNN set, from the whole 9.5.0.50 wheel: graph and adv only.
    let tmp = tempfile::tempdir().unwrap();
    let whl = cache.join("nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl");
    let mut z = zip::ZipArchive::new(std::fs::File::open(&whl).unwrap()).unwrap();
    let mut files = Vec::new();
    for name in ["libcudnn_graph.so.9", "libcudnn_adv.so.9"] {
        let mut f = z.by_name(&format!("nvidia/cudnn/lib/{name}")).unwrap();
        let out = tmp.path().join(name);
        std::io::copy(&mut f, &mut std::fs::File::create(&out).unwrap()).unwrap();
        files.push(out);
    }
    let wanted = cuenv::companion::wanted_by(&files);
    let nvrtc = wanted.iter().find(|w| w.family == "nvrtc").expect("graph names NVRTC");
    assert_eq!(nvrtc.names, ["libnvrtc.so.12", "libnvrtc.so"]);
    assert_eq!(nvrtc.major, 12);
    assert!(wanted.iter().any(|w| w.family == "cublasLt" && w.names == ["libcublasLt.so.12"]), "{wanted:?}");

    let nv = m("nvidia_cuda_nvrtc_cu12-12.6.77-py3-none-manylinux2014_x86_64.whl", "libnvrtc.so.12");
    assert_eq!(cuenv::companion::builtins_named_by(&nv).as_deref(), Some("libnvrtc-builtins.so.12.6"));

    let sparse = m("nvidia_cusparse_cu12-12.5.4.2-py3-none-manylinux2014_x86_64.whl", "libcusparse.so.12");
    let old = m("nvidia_nvjitlink_cu12-12.4.127-py3-none-manylinux2014_x86_64.whl", "libnvJitLink.so.12");
    let new = m("nvidia_nvjitlink_cu12-12.6.85-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl", "libnvJitLink.so.12");
    let needs = cuenv::companion::jitlink_needs(&sparse);
    assert!(needs.iter().any(|n| n == "__nvJitLinkAddData_12_6"), "{needs:?}");
    for (jit, ok) in [(&old, false), (&new, true)] {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&sparse, dir.path().join("libcusparse.so.12")).unwrap();
        std::os::unix::fs::symlink(jit, dir.path().join("libnvJitLink.so.12")).unwrap();
        let verdicts = cuenv::companion::judge_jitlink_users(&[dir.path().to_path_buf()], |n, a| cuenv::companion::search(&[dir.path().to_path_buf()], n, a));
        assert_eq!(verdicts.is_empty(), ok, "{verdicts:?}");
        if !ok {
            assert!(verdicts[0].message.contains("needs nvJitLink 12.6 or later") && verdicts[0].message.contains("is 12.4"), "{}", verdicts[0].message);
        }
        // The real loader as judge.
        let exe = child_exe(&dir.path().join("child"));
        match start(&exe, &["libcusparse.so.12"], &[dir.path().to_path_buf()]) {
            Ok(c) => {
                assert!(ok, "ld.so loaded cuSPARSE 12.5.4.2 with nvJitLink 12.4");
                stop(c)
            }
            Err(e) => assert!(!ok && e.contains("undefined symbol: __nvJitLink"), "{e}"),
        }
    }
}

/// The real NVRTC 12.6.77 (no GPU needed): beside its own `libnvrtc-builtins.so.12.6` it
/// compiles, and `check` notes it; beside only a copy named `libnvrtc-builtins.alt.so.12.6`
/// the real `nvrtcCompileProgram` answers `NVRTC_ERROR_BUILTIN_OPERATION_FAILURE`, and
/// `check` and `doctor` say F2.
#[test]
#[ignore = "real NVIDIA files: scripts/real-input.sh (CUENV_REAL_WHEELS)"]
fn real_nvrtc_compiles_only_beside_its_own_builtins() {
    let Some(cache) = std::env::var_os("CUENV_REAL_WHEELS").map(PathBuf::from) else { panic!("set CUENV_REAL_WHEELS") };
    let real = cache.join("members/nvidia_cuda_nvrtc_cu12-12.6.77-py3-none-manylinux2014_x86_64.whl");
    let s = Stubs::new();
    let work = TestContext::new();
    let set = cudnn_set(&s, &work);
    for (case, builtins, want) in [("own", "libnvrtc-builtins.so.12.6", v("ok", &[])), ("alt", "libnvrtc-builtins.alt.so.12.6", v("problem", &["F2"]))] {
        let ctx = TestContext::new();
        let (code, out) = cuenv(&ctx, &["store", "add", "--cuda", "12", set.to_str().unwrap()], &[]);
        assert_eq!(code, 0, "{out}");
        let tk = crate::support::lab::toolkit(&work.work.join(case), "12.6.77", 12);
        let lib = tk.join("lib64");
        std::fs::copy(s.cudart().join("libcudart.so.12"), lib.join("libcudart.so.12")).unwrap();
        cc(&lib, "libcublasLt.so.12", "int cublasLtStub(void) { return 0; }\n", &[]);
        std::os::unix::fs::symlink(real.join("libnvrtc.so.12"), lib.join("libnvrtc.so.12")).unwrap();
        std::fs::copy(real.join("libnvrtc-builtins.so.12.6"), lib.join(builtins)).unwrap();
        // The real NVRTC's DT_RUNPATH is `$ORIGIN`: the folder of the link's target.
        let file = ctx.path("lab.toml");
        std::fs::write(&file, format!("[toolkits]\n\"12.6\" = '{}'\n[profiles.p]\ncuda = \"12\"\ncudnn = \"9.5\"\n", tk.display())).unwrap();
        let (code, out) = cuenv(&ctx, &["apply", "--no-check", file.to_str().unwrap()], &[]);
        assert_eq!(code, 0, "{out}");
        let (code, out) = cuenv(&ctx, &["--verbose", "check", "p"], &[]);
        println!("{out}");
        assert_eq!(verdict(code, &out), want, "check ({case}):\n{out}");
        if case == "alt" {
            assert!(out.contains("NVRTC_ERROR_BUILTIN_OPERATION_FAILURE"), "{out}");
        } else {
            assert!(out.contains("compiled a trivial program in"), "{out}");
        }
        let (code, out) = cuenv(&ctx, &["doctor", "--major", "9"], &[set.join("lib"), lib.clone()]);
        assert_eq!(verdict(code, &out), want, "doctor ({case}):\n{out}");
    }
}

/// `store add` sees only names (decisions.md 2: it runs nothing): a set whose libraries name
/// CUDA libraries of two majors is refused with F1, the rule `doctor --pid` gives a process
/// that maps two majors of a family.
#[test]
fn store_add_refuses_a_set_naming_two_cuda_majors() {
    let s = Stubs::new();
    let ctx = TestContext::new();
    let root = cudnn_set(&s, &ctx);
    s.build("cudnn/lib", "libcudnn_adv.so.9", &["GRAPH", "VERSION=90500", "LOADS=\"libcublasLt.so.13\""]);
    let (code, out) = cuenv(&ctx, &["store", "add", root.to_str().unwrap()], &[]);
    assert_eq!(verdict(code, &out), v("problem", &["F1"]), "{out}");
    assert!(out.contains("`libcudnn_adv.so.9` loading `libcublasLt.so.13`") && out.contains("`libcudnn_graph.so.9` loading `libcublasLt.so.12`"), "{out}");
}
