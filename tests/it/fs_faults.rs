//! Faults of the file system under `apply` and `status`: a shim
//! folder that refuses writes, and a full disk under the cuenv home or a conda env. After a
//! failed command the previous generation is current and whole, the env holds exactly its
//! shims, and the error names the path and the step, with a hint.
//!
//! These tests need root (read-only bind mounts, `chattr +i`, small tmpfs mounts); without
//! it they print why and return.
#![cfg(target_os = "linux")]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::lab::{Lab, host_archive, toolkit};
use crate::support::*;

// ------------------------------------------------------------------ mounts

/// Something made read-only or mounted for a test, undone on drop.
struct Guard {
    undo: Vec<(&'static str, Vec<String>)>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        for (prog, args) in self.undo.drain(..).rev() {
            let _ = Command::new(prog).args(&args).status();
        }
    }
}

fn sh(prog: &str, args: &[&str]) -> bool {
    Command::new(prog).args(args).output().is_ok_and(|o| o.status.success())
}

/// Whether a file can be created in `dir` now.
fn writable(dir: &Path) -> bool {
    let probe = dir.join(".cuenv-probe");
    let ok = fs::write(&probe, b"x").is_ok();
    let _ = fs::remove_file(&probe);
    ok
}

/// Makes `dir` refuse new files: a read-only bind mount, else `chattr +i`. `None` (with the
/// reason printed) when neither works here.
fn read_only(dir: &Path) -> Option<Guard> {
    let d = dir.to_str().unwrap();
    if sh("mount", &["--bind", d, d]) {
        let guard = Guard { undo: vec![("umount", vec![d.into()])] };
        if sh("mount", &["-o", "remount,bind,ro", d, d]) && !writable(dir) {
            return Some(guard);
        }
        drop(guard);
    }
    if sh("chattr", &["+i", d]) {
        let guard = Guard { undo: vec![("chattr", vec!["-i".into(), d.into()])] };
        if !writable(dir) {
            return Some(guard);
        }
    }
    crate::support::skipped(format!("cannot make {d} read-only (no read-only bind mount, no chattr +i: not root?)"));
    None
}

/// Mounts a tmpfs of `size` (e.g. `4m`) on `dir` (created). `None` (with the reason
/// printed) when it cannot be mounted here.
fn tmpfs(dir: &Path, size: &str) -> Option<Guard> {
    fs::create_dir_all(dir).unwrap();
    let d = dir.to_str().unwrap();
    if sh("mount", &["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs", d]) {
        return Some(Guard { undo: vec![("umount", vec!["-l".into(), d.into()])] });
    }
    crate::support::skipped(format!("cannot mount a tmpfs on {d} (not root?)"));
    None
}

/// Fills the file system of `dir` with `dir/.filler`, then frees `leave` bytes of it.
fn fill(dir: &Path, leave: u64) -> PathBuf {
    use std::io::Write;
    let path = dir.join(".filler");
    let mut f = fs::OpenOptions::new().create(true).append(true).open(&path).unwrap();
    let chunk = vec![0xa5u8; 4096];
    while f.write_all(&chunk).is_ok() {}
    // A short write may have left part of a chunk: that is fine, the file is as long as it is.
    let _ = f.sync_all();
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(leave)).unwrap();
    path
}

// ------------------------------------------------------------------ helpers

/// Every `cuenv-*` file under the env's `etc/conda/{activate,deactivate}.d` with its bytes,
/// plus any other file there (leftover temporary files count too).
fn env_files(env: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v = Vec::new();
    for d in ["activate.d", "deactivate.d"] {
        for e in fs::read_dir(env.join("etc/conda").join(d)).into_iter().flatten().flatten() {
            v.push((e.path(), fs::read(e.path()).unwrap_or_default()));
        }
    }
    v.sort();
    v
}

fn names(files: &[(PathBuf, Vec<u8>)]) -> Vec<String> {
    files.iter().map(|(p, _)| p.display().to_string()).collect()
}

fn current(home: &Path) -> u64 {
    let t = fs::read_link(home.join("profiles")).unwrap();
    t.parent().unwrap().file_name().unwrap().to_str().unwrap().parse().unwrap()
}

// ------------------------------------------------------------------ case 4

/// Writing a shim failed mid-apply (here: `deactivate.d` read-only, so the
/// `activate.d` shim is written and the `deactivate.d` one fails). The env was left holding
/// shims of two generations, `apply` exited 1 and `status` 0. The sync is now undone before
/// the error returns, and `status` reports cuenv shims that are not the current
/// generation's.
#[test]
fn a_failing_shim_sync_is_undone_and_status_reports_stray_shims() {
    let lab = Lab::new();
    let env = lab.env_b.clone();
    let lab_file = |name: &str| lab.lab(&format!("[profiles.{name}]\ncuda = \"11.8\"\ncudnn = \"8.8\"\nconda-env = '{}'\n", env.display()));
    lab.ok(&["apply", "--no-check", lab_file("tf").to_str().unwrap()]);
    let before = env_files(&env);
    assert!(names(&before).iter().any(|n| n.ends_with("activate.d/cuenv-tf.sh")), "{:?}", names(&before));
    let deactivate = env.join("etc/conda/deactivate.d");
    {
        let Some(_ro) = read_only(&deactivate) else { return };
        let (code, out, err) = lab.run(&["apply", "--no-check", lab_file("tf2").to_str().unwrap()]);
        assert!(code != 0 && code != 101, "exit {code}:\n{out}{err}");
        assert!(err.contains("error:") && err.contains(&deactivate.display().to_string()) && err.contains("hint:"), "{err}");
        assert_eq!(names(&env_files(&env)), names(&before), "the env holds exactly generation 1's shims");
        assert_eq!(env_files(&env), before, "with generation 1's bytes");
        assert_eq!(current(&lab.ctx.home), 1);
    }
    let (code, out, err) = lab.run(&["status"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(env_files(&env), before);

    // A cuenv shim the current generation does not own: stray.
    let stray = env.join("etc/conda/activate.d/cuenv-old.sh");
    fs::copy(env.join("etc/conda/activate.d/cuenv-tf.sh"), &stray).unwrap();
    let (code, out, err) = lab.run(&["status"]);
    assert_eq!(code, 3, "{out}{err}");
    let line = out.lines().find(|l| l.contains(&stray.display().to_string())).unwrap_or_else(|| panic!("{out}"));
    assert!(line.trim_start().starts_with("stray"), "{out}");
    assert!(err.contains("hint:") && err.contains(&stray.display().to_string()), "{err}");
    let s: serde_json::Value = serde_json::from_str(&lab.run(&["status", "--json"]).1).unwrap();
    assert_eq!(s["healthy"], false, "{s}");
    fs::remove_file(&stray).unwrap();

    // A file of the current manifest holding another generation's bytes (generation 2 was
    // built, never made current): stray too.
    let gen2: toml::Table = toml::from_str(&fs::read_to_string(lab.ctx.home.join("generations/2/manifest.toml")).unwrap()).unwrap();
    let other = gen2["shims"].as_array().unwrap().iter().find(|s| s["path"].as_str().unwrap().ends_with("activate.d/cuenv-tf2.sh")).unwrap();
    let ours = env.join("etc/conda/activate.d/cuenv-tf.sh");
    fs::copy(lab.ctx.home.join("generations/2/shims").join(other["stored"].as_str().unwrap()), &ours).unwrap();
    let (code, out, err) = lab.run(&["status"]);
    assert_eq!(code, 3, "{out}{err}");
    let line = out.lines().find(|l| l.contains(&ours.display().to_string())).unwrap_or_else(|| panic!("{out}"));
    assert!(line.trim_start().starts_with("stray"), "{out}");
    // `apply` of the generation's file rewrites it.
    assert!(err.contains("hint: `cuenv apply ") && err.contains("puts back generation 1's"), "{err}");
    let out = lab.ok(&["apply", "--no-check", lab_file("tf").to_str().unwrap()]);
    assert!(out.contains(&format!("repaired: shim {} (held another generation's shim", ours.display())), "{out}");
    assert_eq!(env_files(&env), before, "generation 1's shims again");
    assert_eq!(lab.run(&["status"]).0, 0);
}

// ------------------------------------------------------------------ case 11

/// A home and a conda env, each on its own small tmpfs, one store entry per cuDNN release.
struct TmpfsLab {
    // Dropped first (fields drop in order): unmounted before the context deletes its folder.
    _mounts: Vec<Guard>,
    ctx: TestContext,
    env: PathBuf,
    tk11: PathBuf,
    tk12: PathBuf,
}

impl TmpfsLab {
    fn new() -> Option<TmpfsLab> {
        let ctx = TestContext::new();
        let home = tmpfs(&ctx.home, "4m")?;
        let env = ctx.path("env");
        let env_mount = tmpfs(&env, "256k")?;
        fs::create_dir_all(env.join("conda-meta")).unwrap();
        for r in [Release::V9, Release::V8_CU11] {
            let a = host_archive(&ctx.work, &r);
            ctx.add_ok(&a, &[]);
        }
        let tk12 = toolkit(&ctx.work, "12.6.77", 12);
        let tk11 = toolkit(&ctx.work, "11.8.89", 11);
        Some(TmpfsLab { _mounts: vec![home, env_mount], ctx, env, tk11, tk12 })
    }

    fn lab(&self, profiles: &str) -> PathBuf {
        let text = format!("[toolkits]\n\"12.6\" = '{}'\n\"11.8\" = '{}'\n\n{profiles}", self.tk12.display(), self.tk11.display());
        let p = self.ctx.path("lab.toml");
        fs::write(&p, text).unwrap();
        p
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.ctx.cmd().args(args).output().unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Of 66 `apply` runs failing on a full disk, 44 printed no `hint:` and
/// 40 only "No space left on device (os error 28)" with no path. Here the home's or the
/// env's tmpfs is filled so that `apply` fails at different steps; every failure names a
/// path under the home or the env, has a hint, and leaves the previous generation current
/// and whole.
#[test]
fn a_full_disk_fails_apply_with_the_path_the_step_and_a_hint() {
    let Some(lab) = TmpfsLab::new() else { return };
    let (home, env) = (lab.ctx.home.clone(), lab.env.clone());
    let first = lab.lab(&format!("[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\nconda-env = '{}'\n", env.display()));
    let (code, out, err) = lab.run(&["apply", "--no-check", first.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let good = env_files(&env);
    let second = format!(
        "[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\nconda-env = '{}'\n\n[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\nconda-env = '{}'\n",
        env.display(),
        env.display()
    );
    let mut failures = Vec::new();
    for (where_, dir) in [("home", &home), ("env", &env)] {
        // From a full file system up, a page at a time, until apply has room to succeed: each
        // run fails at a later step (building the generation, the journal, the shims, the
        // switch, the history).
        for leave in (0..64u64).map(|i| i * 4096) {
            let filler = fill(dir, leave);
            let file = lab.lab(&second);
            let (code, out, err) = lab.run(&["apply", "--no-check", file.to_str().unwrap()]);
            fs::remove_file(&filler).unwrap();
            let what = format!("{where_} full but {leave} bytes: exit {code}\n{out}{err}");
            if code == 0 {
                eprintln!("succeeded: {what}");
                // Enough space: go back to generation 1 for the next try.
                let (code, out, err) = lab.run(&["rollback", "--to", "1"]);
                assert_eq!(code, 0, "{what}\nrollback: {out}{err}");
                break;
            }
            assert_ne!(code, 101, "a panic: {what}");
            let first_line = err.lines().find(|l| l.starts_with("error:")).unwrap_or_else(|| panic!("no error line: {what}"));
            assert!(
                first_line.contains(&home.display().to_string()) || first_line.contains(&env.display().to_string()),
                "the error names no path under the home or the env: {what}"
            );
            assert!(err.lines().any(|l| l.starts_with("hint: ")), "no hint: {what}");
            failures.push(first_line.to_string());
            // Space freed: the previous generation is current and whole, the env holds its shims.
            let (code, out, err) = lab.run(&["status"]);
            assert_eq!(code, 0, "status after {what}\n{out}{err}");
            assert_eq!(current(&home), 1, "{what}");
            assert_eq!(names(&env_files(&env)), names(&good), "{what}");
            assert_eq!(env_files(&env), good, "{what}");
        }
    }
    eprintln!("{} failing runs:\n{}", failures.len(), failures.join("\n"));
    assert!(failures.len() >= 4, "too few runs failed to mean anything: {failures:?}");
}

/// A member larger than 8 MiB is inflated in pieces, each written as it comes: on a full disk
/// a write fails with ENOSPC, an error naming the file with a hint, never a signal; nothing is
/// kept and no staging is left. Pinned (RECORD's digests) and unpinned alike.
#[test]
fn a_full_disk_under_a_large_member_is_an_error_not_a_signal() {
    let ctx = TestContext::new();
    let Some(_home) = tmpfs(&ctx.home, "6m") else { return };
    let wheel = crate::store_integrity::wheel_with_big_member(&ctx.work);
    let sha = {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(fs::read(&wheel).unwrap()))
    };
    for args in [vec![], vec!["--sha256", sha.as_str()]] {
        let out = ctx.cmd().args(["store", "add"]).arg(&wheel).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.code().is_some(), "killed by a signal ({:?}): {err}", out.status);
        assert_ne!(out.status.code(), Some(0), "{err}");
        assert_ne!(out.status.code(), Some(101), "a panic: {err}");
        let first = err.lines().find(|l| l.starts_with("error")).unwrap_or_else(|| panic!("no error line: {err}"));
        assert!(first.contains(&ctx.home.display().to_string()) && first.contains("cudnn_big_extra.dat"), "{args:?}: {err}");
        assert!(err.lines().any(|l| l.starts_with("hint: ")), "no hint: {err}");
        ctx.assert_store_unchanged();
    }
}
