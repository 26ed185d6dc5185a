//! Paths cuenv cannot take as they are: folders whose names are
//! not UTF-8 (on `LD_LIBRARY_PATH`, above a toolkit root, above the cuenv home, a stray shim's
//! name; for `doctor`, `toolkits`, `plan`, `apply`, `env --setup`, `status --json`), and a cuenv
//! home on a file system that cannot hold links (exFAT through FUSE on a loop device).
//! Never a panic: the path is named (lossy, U+FFFD for the bad bytes) with what to do.
//! Linux only: non-UTF-8 names and the loop mount are Linux's (the classification of the OS
//! errors is unit-tested in `src/link/mod.rs` on every platform).
#![cfg(target_os = "linux")]

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::lab::{host_archive, toolkit};
use crate::support::stubs::Stubs;
use crate::support::*;

/// The folder name `cudnn-\xff`: not UTF-8 (shown as `cudnn-\u{FFFD}`).
fn odd_name() -> &'static OsStr {
    OsStr::from_bytes(b"cudnn-\xff")
}

/// What a non-UTF-8 `path` looks like in cuenv's output.
fn lossy(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// `cuenv --home <home> args` with no toolkit root or home of this machine leaking in.
fn cuenv(home: &Path, args: &[&OsStr], env: &[(&str, &OsStr)]) -> (i32, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_remove("CUENV_HOME").env("CUENV_TOOLKIT_PATHS", "").env("CUDA_HOME", "").env("CUDA_PATH", "").env_remove("LD_LIBRARY_PATH");
    c.arg("--home").arg(home).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

/// A cuDNN 9 stub (and a CUDA runtime) in a folder whose name is not UTF-8, on
/// `LD_LIBRARY_PATH`: `doctor --json` used to panic (exit 101) serializing the folder.
/// Now the JSON parses, shows the folder lossy, and a warning names it with what to do.
#[test]
fn doctor_with_a_non_utf8_folder_on_the_search_path() {
    let s = Stubs::new();
    let built = s.build("stub", "libcudnn.so.9", &["VERSION=90500"]);
    let odd = s.tmp.path().join(odd_name());
    fs::rename(&built, &odd).unwrap();
    let rt = s.cudart();
    let home = tempfile::tempdir().unwrap();
    let ld = std::env::join_paths([&odd, &rt]).unwrap();
    let (code, out, err) = cuenv(home.path(), &[os("doctor"), os("--major"), os("9"), os("--json")], &[("LD_LIBRARY_PATH", &ld)]);
    assert_ne!(code, 101, "doctor panicked:\n{err}");
    let d: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}\n{err}"));
    assert_eq!(d["search_path"][0]["path"], lossy(&odd), "{d}");
    let f = d["findings"].as_array().unwrap();
    let named = f.iter().find(|f| f["message"].as_str().unwrap().contains(&lossy(&odd))).unwrap_or_else(|| panic!("no finding names the folder: {d}"));
    assert!(named["message"].as_str().unwrap().contains("not valid UTF-8"), "{named}");
    assert!(named["hint"].as_str().unwrap_or_default().contains("rename"), "{named}");

    // The same in words.
    let (code, out, err) = cuenv(home.path(), &[os("doctor"), os("--major"), os("9")], &[("LD_LIBRARY_PATH", &ld)]);
    assert_ne!(code, 101, "doctor panicked:\n{err}");
    assert!(out.contains(&format!("1. {}: libcudnn.so.9", lossy(&odd))), "{out}\n{err}");
    assert!(out.contains("not valid UTF-8") && out.contains("hint: rename"), "{out}");
}

/// A home with cuDNN 9.5 in its store, and a CUDA 12.6 toolkit root under a folder whose
/// name is not UTF-8.
struct OddToolkit {
    ctx: TestContext,
    root: PathBuf,
    lab: PathBuf,
}

impl OddToolkit {
    fn new() -> OddToolkit {
        let ctx = TestContext::new();
        ctx.add_ok(&host_archive(&ctx.work, &Release::V9), &[]);
        let parent = ctx.work.join(odd_name());
        let root = toolkit(&parent, "12.6.77", 12);
        let lab = ctx.path("lab.toml");
        fs::write(&lab, "[profiles.a]\ncuda = \"12\"\ncudnn = \"9.5\"\n").unwrap();
        OddToolkit { ctx, root, lab }
    }
}

/// `cuenv toolkits` lists such a root (lossy) and warns that no profile can use it, with what
/// to do; `--json` parses. (It listed the root before, without the warning.)
#[test]
fn toolkits_names_a_non_utf8_root() {
    let t = OddToolkit::new();
    let var = [("CUENV_TOOLKIT_PATHS", t.root.as_os_str())];
    let (code, out, err) = cuenv(&t.ctx.home, &[os("toolkits")], &var);
    assert_eq!(code, 0, "{out}\n{err}");
    let warning = out.lines().find(|l| l.starts_with(&format!("warning: {}: ", lossy(&t.root)))).unwrap_or_else(|| panic!("no warning names the root:\n{out}"));
    assert!(warning.contains("not valid UTF-8") && warning.contains("rename"), "{warning}");
    let (code, out, err) = cuenv(&t.ctx.home, &[os("toolkits"), os("--json")], &var);
    assert_eq!(code, 0, "{out}\n{err}");
    let d: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}\n{err}"));
    assert_eq!(d["toolkits"][0]["root"], lossy(&t.root), "{d}");
    assert!(d["toolkits"][0]["problems"].to_string().contains("not valid UTF-8"), "{d}");
}

/// `plan` and `apply` with the only CUDA 12 root under a non-UTF-8 folder: exit 2, the root
/// named, with the hint to rename the folder; nothing is built.
#[test]
fn apply_names_a_non_utf8_toolkit_root() {
    let t = OddToolkit::new();
    let var = [("CUENV_TOOLKIT_PATHS", t.root.as_os_str())];
    for cmd in [&["apply", "--no-check"][..], &["plan"]] {
        let args: Vec<&OsStr> = cmd.iter().map(|a| os(a)).chain([t.lab.as_os_str()]).collect();
        let (code, out, err) = cuenv(&t.ctx.home, &args, &var);
        assert_eq!(code, 2, "{cmd:?}:\n{out}\n{err}");
        assert!(err.contains(&lossy(&t.root)) && err.contains("not valid UTF-8"), "{cmd:?}: {err}");
        assert!(err.contains("hint: rename"), "{cmd:?}: {err}");
    }
    assert!(!t.ctx.home.join("generations").exists() || fs::read_dir(t.ctx.home.join("generations")).unwrap().next().is_none());
}

/// A cuenv home under a non-UTF-8 folder: `apply` (after `store add`, which works there) is
/// refused with exit 2 naming the home, with the hint to rename the folder or use another home.
#[test]
fn apply_names_a_non_utf8_home() {
    let ctx = TestContext::new();
    let home = ctx.work.join(odd_name()).join("home");
    let archive = host_archive(&ctx.work, &Release::V9);
    let tk = toolkit(&ctx.work, "12.6.77", 12);
    let lab = ctx.path("lab.toml");
    fs::write(&lab, format!("[toolkits]\n\"12.6\" = '{}'\n\n[profiles.a]\ncuda = \"12\"\ncudnn = \"9.5\"\n", tk.display())).unwrap();
    let (code, out, err) = cuenv(&home, &[os("store"), os("add"), archive.as_os_str()], &[]);
    assert_eq!(code, 0, "store add:\n{out}\n{err}");
    for cmd in [&["apply", "--no-check"][..], &["plan"]] {
        let args: Vec<&OsStr> = cmd.iter().map(|a| os(a)).chain([lab.as_os_str()]).collect();
        let (code, out, err) = cuenv(&home, &args, &[]);
        assert_eq!(code, 2, "{cmd:?}:\n{out}\n{err}");
        assert!(err.contains(&lossy(&home)) && err.contains("not valid UTF-8"), "{cmd:?}: {err}");
        assert!(err.contains("hint: ") && err.contains("rename"), "{cmd:?}: {err}");
    }
    assert!(fs::symlink_metadata(home.join("profiles")).is_err(), "no generation became current");
}

/// `env --setup` with a home under a non-UTF-8 folder: the activation would hold the home's
/// path, so it is refused with exit 2 naming the home and the folder to rename (was exit 1).
#[test]
fn env_setup_names_a_non_utf8_home() {
    let ctx = TestContext::new();
    let home = ctx.work.join(odd_name()).join("home");
    let (code, out, err) = cuenv(&home, &[os("env"), os("--setup")], &[]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.starts_with(&format!("error: the cuenv home {} is not valid UTF-8", lossy(&home))), "{err}");
    assert!(err.contains(&format!("hint: rename the folder {} to a UTF-8 name", lossy(&ctx.work.join(odd_name())))), "{err}");
}

/// An exFAT file system mounted through FUSE on a loop device, unmounted on drop: a file
/// system that cannot hold links (symlink(2) fails with ENOSYS). Needs root, a loop device,
/// `/dev/fuse` and Debian's `exfatprogs` + `exfat-fuse` (the mount needs a loop device: `losetup -f --show img`, then `mount.exfat-fuse`).
pub(crate) struct ExfatMount {
    _tmp: tempfile::TempDir,
    pub(crate) mnt: PathBuf,
    loop_dev: String,
}

impl ExfatMount {
    /// The mount, or why it cannot be made here (the test then skips).
    pub(crate) fn new() -> Result<ExfatMount, String> {
        let run = |cmd: &mut Command| -> Result<String, String> {
            let out = cmd.output().map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
            if !out.status.success() {
                return Err(format!("{:?} failed: {}", cmd.get_program(), String::from_utf8_lossy(&out.stderr).trim()));
            }
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        };
        if run(Command::new("id").arg("-u"))? != "0" {
            return Err("not root (losetup and mount need it)".into());
        }
        let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
        let img = tmp.path().join("exfat.img");
        fs::File::create(&img).and_then(|f| f.set_len(32 << 20)).map_err(|e| e.to_string())?;
        run(Command::new("mkfs.exfat").arg(&img)).map_err(|e| format!("{e} (apt-get install exfatprogs)"))?;
        let loop_dev = run(Command::new("losetup").args(["-f", "--show"]).arg(&img))?;
        let mnt = tmp.path().join("mnt");
        fs::create_dir(&mnt).map_err(|e| e.to_string())?;
        if let Err(e) = run(Command::new("mount.exfat-fuse").arg(&loop_dev).arg(&mnt)) {
            let _ = Command::new("losetup").arg("-d").arg(&loop_dev).output();
            return Err(format!("{e} (apt-get install exfat-fuse)"));
        }
        Ok(ExfatMount { _tmp: tmp, mnt, loop_dev })
    }
}

impl Drop for ExfatMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).output();
        let _ = Command::new("losetup").arg("-d").arg(&self.loop_dev).output();
    }
}

/// A cuenv home on exFAT (FUSE), which cannot hold links. `link-mode = "symlink"`,
/// which asks for links by name, is an error at its line found by apply's test link before
/// anything is built (exit 2). `auto` builds the generation link-free, saying once why (the
/// file system and folder that refused the test link); `copy`, the old name of the link-free
/// mode, does the same without a note. Skips, saying why, where the exFAT mount
/// cannot be made.
#[test]
fn a_home_on_a_file_system_without_links() {
    let m = match ExfatMount::new() {
        Ok(m) => m,
        Err(why) => {
            crate::support::skipped(format!("a_home_on_a_file_system_without_links: cannot mount exFAT: {why}"));
            return;
        }
    };
    let ctx = TestContext::new();
    let home = m.mnt.join("cuenv");
    // A Linux wheel: it holds no symlinks (docs/facts.md §7b), so the store takes it on exFAT
    // (extracting the official tar.xz, which holds symlinks, fails there).
    let archive = wheel(&ctx.work, &Release::V9, WheelOs::Linux);
    let tk = toolkit(&ctx.work, "12.6.77", 12);
    let (code, out, err) = cuenv(&home, &[os("store"), os("add"), archive.as_os_str()], &[]);
    assert_eq!(code, 0, "store add of a wheel on exFAT:\n{out}\n{err}");
    // `link-mode = "symlink"` asks for links by name: a mode this home cannot do, found by the
    // test link before anything is built, is an error at its line (exit 2; decisions.md 3).
    let lab = ctx.path("lab-symlink.toml");
    fs::write(
        &lab,
        format!("[settings]\nlink-mode = \"symlink\"\n\n[toolkits]\n\"12.6\" = '{}'\n\n[profiles.a]\ncuda = \"12\"\ncudnn = \"9.5\"\n", tk.display()),
    )
    .unwrap();
    let (code, out, err) = cuenv(&home, &[os("apply"), os("--no-check"), lab.as_os_str()], &[]);
    assert_eq!(code, 2, "symlink:\n{out}\n{err}");
    let probe = home.join(".link-probe");
    assert!(
        err.contains(&format!(
            "lab-symlink.toml:2:13: `link-mode = \"symlink\"` cannot be used on this machine: cannot create a symlink at {}: the file system of {} (FUSE, f_type 0x65735546) cannot hold links",
            probe.join("link").display(),
            probe.display()
        )),
        "{err}"
    );
    assert!(err.contains("hint: move the cuenv home (--home or CUENV_HOME)"), "{err}");
    assert!(err.contains("`link-mode = \"none\"`"), "the hint names the link-free mode: {err}");
    assert!(fs::symlink_metadata(&probe).is_err(), "the probe folder is removed");
    assert!(fs::symlink_metadata(home.join("generations")).is_err() || fs::read_dir(home.join("generations")).unwrap().next().is_none(), "nothing built");
    for (n, mode) in [(1, "auto"), (2, "copy")] {
        let lab = ctx.path(&format!("lab-{mode}.toml"));
        fs::write(
            &lab,
            format!(
                "[settings]\nlink-mode = \"{mode}\"\n\n[toolkits]\n\"12.6\" = '{}'\n\n[profiles.a]\ncuda = \"12\"\ncudnn = \"9.5\"\ncheck = \"{}\"\n",
                tk.display(),
                if mode == "auto" { "load" } else { "none" }
            ),
        )
        .unwrap();
        let (code, out, err) = cuenv(&home, &[os("apply"), os("--no-check"), os("--replace"), lab.as_os_str()], &[]);
        assert_eq!(code, 0, "{mode}:\n{out}\n{err}");
        let note = format!(
            "note: this home cannot hold links (cannot create a symlink at {}: the file system of {} (FUSE, f_type 0x65735546) cannot hold links): `link-mode = \"auto\"` builds the generation without links",
            probe.join("link").display(),
            probe.display()
        );
        // Said once: by the first apply that fell back, not while the home stays link-free.
        assert_eq!(err.contains(&note), mode == "auto", "{mode}:\n{err}");
        assert!(fs::symlink_metadata(home.join("profiles")).is_err(), "{mode}: no link");
        assert_eq!(fs::read_to_string(home.join("current")).unwrap(), format!("{n}\n"), "{mode}: the pointer file names the generation");
        let manifest = fs::read_to_string(home.join(format!("generations/{n}/manifest.toml"))).unwrap();
        assert!(manifest.contains("link_mode = \"none\""), "{mode}: {manifest}");
        assert!(!home.join(format!("generations/{n}/views")).exists(), "{mode}: no views, nothing copied");
    }
}

/// A stray cuenv shim whose file name is not UTF-8 in a profile's conda env: `status --json`
/// used to panic (exit 101) serializing its path; now it lists it lossy.
#[test]
fn status_json_with_a_non_utf8_stray_shim() {
    let lab = crate::support::lab::Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let activate = lab.env_a.join("etc/conda/activate.d");
    let ours = fs::read_dir(&activate).unwrap().flatten().find(|e| e.file_name().to_string_lossy().ends_with(".sh")).unwrap().path();
    let stray = activate.join(OsStr::from_bytes(b"cuenv-\xff.sh"));
    fs::copy(&ours, &stray).unwrap();
    let (code, out, err) = lab.run(&["status", "--json"]);
    assert_ne!(code, 101, "status panicked:\n{err}");
    let d: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}\n{err}"));
    assert!(d.to_string().contains(&serde_json::to_string(&lossy(&stray)).unwrap()), "{d}");
}
