//! `cuenv doctor --pid PID` on a child process that really loaded a cuDNN library: a
//! small C program built with gcc at test time loads `libcudnn.so.9` by name with
//! a profile's activation (`LD_LIBRARY_PATH` = the view's folders, `CUENV_PROFILE`), then waits
//! on stdin. Linux only (`/proc/<pid>/maps` and `environ`, ELF libraries).
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::support::Release;
use crate::support::lab::{Lab, host_archive};
use serde_json::Value;

const CHILD_C: &str = r#"
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
/* argv[1]: the library to load by name; argv[2] = "call": also call cudnnGetVersion (cuDNN 9
   then loads libcudnn_graph.so.9 itself). */
int main(int argc, char **argv) {
    void *h = dlopen(argc > 1 ? argv[1] : "libcudnn.so.9", RTLD_NOW);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    if (argc > 2) {
        size_t (*f)(void) = (size_t (*)(void))dlsym(h, "cudnnGetVersion");
        if (!f) { fprintf(stderr, "no cudnnGetVersion\n"); return 1; }
        fprintf(stderr, "cudnnGetVersion: %zu\n", f());
    }
    printf("ready\n"); fflush(stdout);
    getchar(); /* until the test closes stdin */
    return 0;
}
"#;

/// Builds the child program in `dir`.
pub(crate) fn build_child(dir: &Path) -> PathBuf {
    std::fs::write(dir.join("child.c"), CHILD_C).unwrap();
    let exe = dir.join("child");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc).arg("-o").arg(&exe).arg(dir.join("child.c")).arg("-ldl").output().expect("a C compiler (set CC)");
    assert!(out.status.success(), "cc failed: {}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// Starts the child (with `args`) with `LD_LIBRARY_PATH` = `ld` and `CUENV_PROFILE` =
/// `profile`; returns once it has loaded the library.
pub(crate) fn start(exe: &Path, args: &[&str], ld: &[PathBuf], profile: &str) -> Child {
    let mut child = Command::new(exe)
        .args(args)
        .env_clear()
        .env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap())
        .env("CUENV_PROFILE", profile)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "the child did not load cuDNN");
    child
}

pub(crate) fn stop(mut child: Child) {
    let _ = child.stdin.take().map(|mut s| s.write_all(b"\n"));
    let _ = child.wait();
}

#[test]
fn a_process_that_loaded_an_older_entry_is_told_to_restart() {
    let lab = Lab::new();
    let v96 = Release { version: [9, 6, 0, 74], cuda: 12 };
    lab.ctx.add_ok(&host_archive(&lab.ctx.work, &v96), &[]);
    let file = lab.lab("[profiles.tf]\ncuda = \"12\"\ncudnn = \"9.5\"\n");
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let view = lab.profiles().join("tf");
    let exe = build_child(&lab.ctx.work);
    let child = start(&exe, &[], &[view.join("cudnn-lib"), view.join("cuda-lib")], "tf");
    let pid = child.id().to_string();

    // Still what the profile gives.
    let (code, out, err) = lab.run(&["doctor", "--pid", &pid]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains(&format!("process {pid}: profile tf (from CUENV_PROFILE)")), "{out}");
    assert!(out.contains("libcudnn.so.9.5.0 (9.5.0.50)") && out.contains("from cuenv store entry cudnn-9.5.0.50-cuda12-"), "{out}");
    assert!(out.contains("profile tf now gives cuDNN 9.5.0.50 (cudnn-9.5.0.50-cuda12-") && out.contains("the cuDNN this process loaded"), "{out}");
    assert!(out.contains("no problems found"), "{out}");

    // The profile moves on to 9.6; the running process keeps 9.5.
    std::fs::write(&file, std::fs::read_to_string(&file).unwrap().replace("cudnn = \"9.5\"", "cudnn = \"9.6\"")).unwrap();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let (code, out, err) = lab.run(&["doctor", "--pid", &pid]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(
        out.contains(&format!("problem: process {pid} loaded cuDNN 9.5.0.50 (cuenv store entry cudnn-9.5.0.50-cuda12-"))
            && out.contains("; profile `tf` now gives 9.6.0.74 (cudnn-9.6.0.74-cuda12-")
            && out.contains("): restart it"),
        "{out}"
    );
    assert!(out.contains("hint: a running process keeps the libraries it loaded"), "{out}");

    let (code, out, _) = lab.run(&["doctor", "--pid", &pid, "--json"]);
    assert_eq!(code, 4);
    let d: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(d["pid"].as_u64(), Some(child.id() as u64));
    assert_eq!(d["profile"], "tf");
    assert_eq!(d["cudnn"], "9.5.0.50");
    assert_eq!(d["profile_now"]["cudnn_version"], "9.6.0.74");
    assert_eq!(d["profile_now"]["current"], false);
    let m = d["modules"].as_array().unwrap().iter().find(|m| m["name"] == "libcudnn.so.9.5.0").unwrap_or_else(|| panic!("{d}"));
    assert_eq!(m["kind"], "cudnn");
    assert!(m["origin"].as_str().unwrap().starts_with("cuenv store entry cudnn-9.5.0.50-"), "{m}");
    assert_eq!(d["findings"][0]["severity"], "problem");

    // --profile names another profile than the environment's.
    let (code, out, _) = lab.run(&["doctor", "--pid", &pid, "--profile", "nope"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("profile nope (from --profile)") && out.contains("which the current generation does not have"), "{out}");
    stop(child);
}

/// A process under a profile that has not loaded cuDNN (yet) is told so: not "not what this
/// process loaded", and no problem.
#[test]
fn a_process_without_cudnn_mapped_is_not_called_stale() {
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    let exe = build_child(&lab.ctx.work);
    // The child loads libm (no cuDNN) and waits.
    let child = start(&exe, &["libm.so.6"], &[], "legacy");
    let pid = child.id().to_string();
    let (code, out, err) = lab.run(&["doctor", "--pid", &pid]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("no cuDNN or CUDA library is mapped into it"), "{out}");
    assert!(out.contains("profile legacy now gives cuDNN") && out.contains("this process has not loaded cuDNN (yet"), "{out}");
    assert!(!out.contains("not what this process loaded"), "{out}");
    stop(child);
}

#[test]
fn a_process_that_does_not_exist_is_exit_2() {
    let lab = Lab::new();
    let (code, _, err) = lab.run(&["doctor", "--pid", "4294967294"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("error: no process with id 4294967294 is running") && err.contains("hint: check the id"), "{err}");
}

/// A process that loaded a CUDA toolkit root's own runtime (`<root>/targets/x86_64-linux/lib/
/// libcudart.so.13`) is told the file comes from that toolkit root, not that it was copied in
/// by hand; a cuDNN dispatcher in the same root is.
#[test]
fn a_toolkit_roots_own_runtime_is_not_called_copied_in_by_hand() {
    let ctx = crate::support::TestContext::new();
    let s = crate::support::stubs::Stubs::new();
    let root = ctx.path("cuda-13.0");
    let lib = root.join("targets/x86_64-linux/lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(root.join("version.json"), r#"{"cuda": {"name": "CUDA SDK", "version": "13.0.2"}}"#).unwrap();
    let built = s.build("rt", "libcudart.so.13", &["CUDART=13000"]);
    std::fs::copy(built.join("libcudart.so.13"), lib.join("libcudart.so.13")).unwrap();
    let disp = s.build("d", "libcudnn.so.9", &["VERSION=90500"]);
    std::fs::copy(disp.join("libcudnn.so.9"), lib.join("libcudnn.so.9")).unwrap();
    let exe = build_child(&ctx.work);
    let root = std::fs::canonicalize(&root).unwrap();
    for (name, copied) in [("libcudart.so.13", false), ("libcudnn.so.9", true)] {
        let child = start(&exe, &[name], std::slice::from_ref(&lib), "");
        let pid = child.id().to_string();
        let out = ctx.cmd().env("CUENV_TOOLKIT_PATHS", &root).args(["doctor", "--pid", &pid, "--json"]).output().unwrap();
        stop(child);
        let d: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        let m = d["modules"].as_array().unwrap().iter().find(|m| m["name"] == name).unwrap_or_else(|| panic!("{d}"));
        let want = format!("the CUDA 13.0.2 toolkit root {}{}", root.display(), if copied { " (copied in by hand)" } else { "" });
        assert_eq!(m["origin"].as_str(), Some(want.as_str()), "{name}: {m}");
    }
}
