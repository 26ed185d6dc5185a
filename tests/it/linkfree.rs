//! The link-free mode: `link-mode = "none"` (or `copy`, its old name, or `auto` on
//! a home that cannot hold links) makes no link anywhere. Generations have no views; shims,
//! `cuenv env`, exports and `env --setup` name the store entries and toolkit roots
//! themselves; the current generation is the pointer file `<home>/current` and the active
//! profile the pointer file `<home>/active`, each replaced by one rename. Here: the main flow
//! (apply of two profile files, use, rollback, gc, status, a switch of mode and back), the
//! kill matrix of its switch, and the same flow on an exFAT loop mount (Linux, as root).

use std::fs;
use std::path::{Path, PathBuf};

use crate::kill_matrix::{killed, whole};
use crate::support::lab::Lab;

/// `[settings] link-mode = "none"` in front of `profiles`.
fn none(profiles: &str) -> String {
    format!("[settings]\nlink-mode = \"none\"\n\n{profiles}")
}

/// The generation `<home>/current` names.
fn pointed(home: &Path) -> u64 {
    fs::read_to_string(home.join("current")).unwrap().trim().parse().unwrap()
}

/// The store entry of cuDNN `version` (a prefix such as `9.5`).
fn entry(lab: &Lab, version: &str) -> PathBuf {
    lab.ctx.entry_dirs().into_iter().find(|d| d.file_name().unwrap().to_string_lossy().starts_with(&format!("cudnn-{version}"))).unwrap()
}

/// The entry's library folder as the host's loader is given it.
fn lib_dir(entry: &Path) -> PathBuf {
    if cfg!(windows) { entry.join("bin") } else { entry.join("lib") }
}

/// The activate shim of `profile` in `env`, for this host's default shell.
fn shim(env: &Path, profile: &str) -> PathBuf {
    let ext = if cfg!(windows) { "bat" } else { "sh" };
    env.join("etc/conda/activate.d").join(format!("cuenv-{profile}.{ext}"))
}

/// Generation 1 (three profiles: torch2 and tf with conda envs, legacy) and generation 2
/// (legacy and tf; torch2 gone, so its shim goes), both link-free; 2 current.
fn two_generations() -> Lab {
    let lab = Lab::new();
    let f1 = lab.three();
    fs::write(&f1, fs::read_to_string(&f1).unwrap().replacen("[toolkits]", "[settings]\nlink-mode = \"none\"\n\n[toolkits]", 1)).unwrap();
    lab.ok(&["apply", "--no-check", f1.to_str().unwrap()]);
    let f2 = lab.lab(&none(&format!(
        "[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n\n[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\nconda-env = '{}'\n",
        lab.env_b.display()
    )));
    lab.ok(&["apply", "--no-check", f2.to_str().unwrap()]);
    lab
}

/// The main job without a link: two applies, then `use`, `env`, `status`, `rollback`, `gc`;
/// every shim and activation names the real folders, and nothing is a link.
#[test]
fn the_main_flow_makes_no_link() {
    let lab = two_generations();
    let home = lab.ctx.home.clone();
    let (v9, v8) = (entry(&lab, "9.5"), entry(&lab, "8.9.4"));
    assert_eq!(pointed(&home), 2);
    assert!(fs::symlink_metadata(home.join("profiles")).is_err(), "no `profiles` link");
    // A cuenv from before the pointer files would take this home for one without a
    // generation: the home says format 2, which such a cuenv refuses.
    assert_eq!(fs::read_to_string(home.join("format")).unwrap(), format!("{}\n", cuenv::home::layout::LINK_FREE_FORMAT));
    for n in [1, 2] {
        let m = fs::read_to_string(home.join(format!("generations/{n}/manifest.toml"))).unwrap();
        assert!(m.contains("link_mode = \"none\""), "{m}");
        assert!(!home.join(format!("generations/{n}/views")).exists(), "generation {n} has no views");
    }
    for e in walkdir::WalkDir::new(&home) {
        let e = e.unwrap();
        assert!(!e.path_is_symlink() || e.path().starts_with(home.join("store")), "a link in the home: {}", e.path().display());
    }
    // torch2 (generation 1 only) lost its shim; tf's names its store entry's own folder.
    assert!(!shim(&lab.env_a, "torch2").exists());
    let tf = fs::read_to_string(shim(&lab.env_b, "tf")).unwrap();
    assert!(tf.contains(&lib_dir(&entry(&lab, "8.8")).display().to_string()), "{tf}");
    assert!(!tf.contains(&home.join("profiles").display().to_string()), "{tf}");

    // `use` writes the pointer file; `env --setup` reads it when the shell starts.
    let said = lab.ok(&["use", "legacy"]);
    assert!(said.contains(&lib_dir(&v8).display().to_string()), "{said}");
    assert_eq!(fs::read_to_string(home.join("active")).unwrap(), "legacy\n");
    let shell = if cfg!(windows) { "cmd" } else { "sh" };
    let setup = lab.ok(&["env", "--setup", "--shell", shell]);
    assert!(setup.contains(&lib_dir(&v8).display().to_string()), "{setup}");
    let env = lab.ok(&["env", "legacy", "--shell", shell]);
    assert!(env.contains(&lib_dir(&v8).display().to_string()) && !env.contains("profiles"), "{env}");
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{s}");
    assert_eq!(s["active"], "legacy", "{s}");
    let legacy = s["profiles"].as_array().unwrap().iter().find(|p| p["name"] == "legacy").unwrap();
    assert!(legacy["links"].as_array().unwrap().iter().all(|h| h["state"] == "ok (direct)"), "{legacy}");
    assert!(legacy["links"].as_array().unwrap().iter().any(|h| h["path"] == v8.display().to_string()), "{legacy}");

    // A shim edited by hand no longer points where the generation says: status sees it.
    let tf_shim = shim(&lab.env_b, "tf");
    crate::support::with_writable_dir(tf_shim.parent().unwrap(), || {
        fs::write(&tf_shim, tf.replace(&lib_dir(&entry(&lab, "8.8")).display().to_string(), &lib_dir(&v9).display().to_string())).unwrap();
    });
    let (code, out, _) = lab.run(&["status"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("modified"), "{out}");
    crate::support::with_writable_dir(tf_shim.parent().unwrap(), || fs::write(&tf_shim, &tf).unwrap());

    // Rollback: the pointer goes back, torch2's shim comes back naming 9.5's own folder.
    lab.ok(&["rollback"]);
    assert_eq!(pointed(&home), 1);
    let torch2 = fs::read_to_string(shim(&lab.env_a, "torch2")).unwrap();
    assert!(torch2.contains(&lib_dir(&v9).display().to_string()), "{torch2}");
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{s}");
    let hist: serde_json::Value = serde_json::from_str(&lab.ok(&["generations", "--json"])).unwrap();
    assert_eq!(hist["history"].as_array().unwrap().last().unwrap()["op"], "rollback", "{hist}");

    // Generation 3, then back to 2 by `rollback --to`; gc keeps 2 (current) and 3 (previous).
    let f3 = lab.lab(&none("[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\n"));
    lab.ok(&["apply", "--no-check", f3.to_str().unwrap()]);
    lab.ok(&["rollback", "--to", "2"]);
    let gc = lab.ok(&["gc", "--keep", "1"]);
    assert!(gc.contains("generation 1"), "{gc}");
    assert!(!home.join("generations/1").exists());
    assert_eq!(pointed(&home), 2);
    let (code, _, err) = lab.run(&["rollback", "--to", "1"]);
    assert_eq!(code, 2, "{err}");
    // Entries stay (added by hand: gc roots); the check runs through the real folders.
    assert!(v9.is_dir() && v8.is_dir());
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{s}");
}

/// A home that changes mode: a linked generation after link-free ones (the `profiles` link
/// comes back, the pointer files go, `active` becomes a link again), and back.
#[cfg(unix)]
#[test]
fn a_home_switches_between_linked_and_link_free_generations() {
    let lab = two_generations();
    let home = lab.ctx.home.clone();
    lab.ok(&["use", "legacy"]);
    let linked = lab.lab("[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n");
    lab.ok(&["apply", "--no-check", linked.to_str().unwrap()]);
    assert!(!home.join("current").exists(), "the pointer file is gone");
    assert_eq!(lab.current(), 3);
    assert!(fs::read_link(home.join("active")).unwrap().ends_with("profiles/legacy"), "active is a link again");
    let setup = lab.ok(&["env", "--setup", "--shell", "sh"]);
    assert!(setup.contains(&home.join("active").display().to_string()), "{setup}");
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{s}");
    // Back to a link-free generation: the pointer wins and the `profiles` link goes.
    lab.ok(&["rollback"]);
    assert_eq!(pointed(&home), 2);
    assert!(fs::symlink_metadata(home.join("profiles")).is_err(), "the link is gone");
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{s}");
    assert_eq!(s["active"], "legacy", "the active link still names the profile: {s}");
    lab.ok(&["use", "tf"]);
    assert_eq!(fs::read_to_string(home.join("active")).unwrap(), "tf\n", "a link-free `use` writes the pointer file over the link");
}

/// The kill matrix of the link-free switch: `rollback`, `apply --no-check` and `use` killed at
/// every step (journal written, shims synced, pointer staged, committed, history appended).
/// The next writer leaves the old or the new generation, with exactly its shims.
#[test]
fn a_killed_link_free_switch_is_finished_or_undone() {
    for step in ["journal", "shims", "pointer-staged", "commit", "history"] {
        let lab = two_generations();
        killed(&lab, step, &["rollback"]);
        whole(&lab, &format!("link-free rollback at {step}"));
        assert!(!lab.ctx.home.join(".current.new").exists(), "rollback at {step}: staged pointer left");
        let cur = pointed(&lab.ctx.home);
        assert!(cur == 1 || cur == 2, "rollback at {step}: generation {cur}");
        assert_eq!(cur, if matches!(step, "journal" | "shims" | "pointer-staged") { 2 } else { 1 }, "rollback at {step}");
        assert_eq!(shim(&lab.env_a, "torch2").exists(), cur == 1, "rollback at {step}: shims of the wrong generation");

        let f3 = lab.lab(&none(&format!("[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\nconda-env = '{}'\n", lab.env_b.display())));
        killed(&lab, step, &["apply", "--no-check", f3.to_str().unwrap()]);
        whole(&lab, &format!("link-free apply at {step}"));
        let now = pointed(&lab.ctx.home);
        assert_eq!(now, if matches!(step, "journal" | "shims" | "pointer-staged") { cur } else { 3 }, "apply at {step}");
        assert_eq!(shim(&lab.env_b, "torch2").exists(), now == 3, "apply at {step}: shims of the wrong generation");
    }
    let lab = two_generations();
    lab.ok(&["use", "legacy"]);
    killed(&lab, "pointer-staged", &["use", "tf"]);
    whole(&lab, "link-free use at pointer-staged");
    assert_eq!(fs::read_to_string(lab.ctx.home.join("active")).unwrap(), "legacy\n", "the old pointer stays whole");
    assert!(!lab.ctx.home.join(".active.new").exists());
}

/// The same main job on exFAT (FUSE on a loop device, as root): `auto` falls back to the
/// link-free mode; two generations over two cuDNN wheels, `use`, `rollback`, `gc` and
/// `status` work with the whole home on a file system that cannot hold a link. Skips,
/// saying why, where the mount cannot be made.
#[cfg(target_os = "linux")]
#[test]
fn the_main_flow_on_exfat() {
    use crate::support::{Release, TestContext, WheelOs, wheel};
    let m = match crate::odd_paths::ExfatMount::new() {
        Ok(m) => m,
        Err(why) => {
            eprintln!("SKIP the_main_flow_on_exfat: cannot mount exFAT: {why}");
            return;
        }
    };
    let ctx = TestContext::new();
    let home = m.mnt.join("cuenv");
    let env = ctx.path("envs/exfat-env");
    fs::create_dir_all(env.join("conda-meta")).unwrap();
    let tk = crate::support::lab::toolkit(&ctx.work, "12.6.77", 12);
    let run = |args: &[&str]| -> (i32, String, String) {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cuenv"))
            .env_remove("CUENV_HOME")
            .env("CUENV_TOOLKIT_PATHS", "")
            .env("CUDA_HOME", "")
            .env("CUDA_PATH", "")
            .env_remove("LD_LIBRARY_PATH")
            .arg("--home")
            .arg(&home)
            .args(args)
            .output()
            .unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let ok = |args: &[&str]| -> String {
        let (code, out, err) = run(args);
        assert_eq!(code, 0, "{args:?}:\n{out}\n{err}");
        out
    };
    for r in [Release::V9, Release::V8] {
        let w = wheel(&ctx.work, &r, WheelOs::Linux);
        ok(&["store", "add", w.to_str().unwrap()]);
    }
    let lab = |profiles: &str| -> String {
        let p = ctx.path("lab.toml");
        fs::write(&p, format!("[toolkits]\n\"12.6\" = '{}'\n\n{profiles}", tk.display())).unwrap();
        p.display().to_string()
    };
    let f1 =
        lab(&format!("[profiles.new]\ncuda = \"12\"\ncudnn = \"9.5\"\nconda-env = '{}'\n\n[profiles.old]\ncuda = \"12\"\ncudnn = \"8.9\"\n", env.display()));
    let (code, out, err) = run(&["apply", "--no-check", &f1]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(err.contains("note: this home cannot hold links"), "said once: {err}");
    let f2 = lab("[profiles.old]\ncuda = \"12\"\ncudnn = \"8.9\"\n");
    let (code, out, err) = run(&["apply", "--no-check", &f2]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!err.contains("cannot hold links"), "not said again: {err}");
    assert_eq!(fs::read_to_string(home.join("current")).unwrap(), "2\n");
    let activate = env.join("etc/conda/activate.d/cuenv-new.sh");
    assert!(!activate.exists(), "generation 2 has no conda shim");
    ok(&["use", "old"]);
    assert_eq!(fs::read_to_string(home.join("active")).unwrap(), "old\n");
    let setup = ok(&["env", "--setup", "--shell", "sh"]);
    assert!(setup.contains(&home.join("store").display().to_string()), "{setup}");
    ok(&["rollback"]);
    assert_eq!(fs::read_to_string(home.join("current")).unwrap(), "1\n");
    let text = fs::read_to_string(&activate).unwrap();
    assert!(text.contains(&home.join("store").display().to_string()) && text.contains("cudnn-9.5.0.50"), "{text}");
    let s: serde_json::Value = serde_json::from_str(&ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{s}");
    assert_eq!(s["generation"], 1, "{s}");
    let f3 = lab("[profiles.new]\ncuda = \"12\"\ncudnn = \"9.5\"\n");
    ok(&["apply", "--no-check", &f3]);
    ok(&["rollback", "--to", "2"]);
    ok(&["gc", "--keep", "1"]);
    assert!(!home.join("generations/1").exists(), "gc deleted generation 1");
    let s: serde_json::Value = serde_json::from_str(&ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{s}");
    for e in walkdir::WalkDir::new(&home) {
        assert!(!e.unwrap().path_is_symlink(), "no link on exFAT");
    }
}

/// check and doctor in the link-free mode: the loader takes cuDNN from the store entry's own
/// folder (no view), doctor attributes it to the entry and judges the profile like the check
/// (nothing shadowed), and `CUENV_PROFILE=active` follows the pointer file `<home>/active`.
#[cfg(target_os = "linux")]
#[test]
fn check_and_doctor_attribute_to_the_store_entry() {
    let lab = two_generations();
    lab.ok(&["rollback"]); // generation 1: torch2 (9.5) with its env
    let v9 = entry(&lab, "9.5");
    let (code, out, _) = lab.run(&["check", "torch2", "--json"]);
    assert_eq!(code, 4, "the fixture is not a whole cuDNN: {out}");
    assert!(!out.contains("shadowed"), "loaded from the entry itself: {out}");
    assert!(out.contains(&lib_dir(&v9).join("libcudnn.so.9").display().to_string()), "{out}");
    let doctor = |profile: &str| {
        let o = lab
            .ctx
            .cmd()
            .env("CUENV_PROFILE", profile)
            .env("LD_LIBRARY_PATH", std::env::join_paths([lib_dir(&v9), lab.tk12.join("lib64")]).unwrap())
            .args(["doctor", "--major", "9"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let out = doctor("torch2");
    assert!(out.contains("active profile (CUENV_PROFILE): torch2: "), "{out}");
    assert!(out.contains("from cuenv store entry cudnn-9.5.0.50-cuda12-"), "{out}");
    assert!(!out.contains("shadowed"), "{out}");
    lab.ok(&["use", "torch2"]);
    let out = doctor("active");
    assert!(out.contains("active profile (<home>/active, through `cuenv env --setup`): torch2"), "{out}");
    assert!(!out.contains("shadowed"), "{out}");
}
