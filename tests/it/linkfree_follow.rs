//! Kernelspecs and exports follow their profile across switches (../shared/decisions.md 4):
//! in the link-free mode they name the real folders of the current generation, so `apply`
//! and `rollback` rewrite them inside the switch's transaction (a killed switch leaves them
//! matching the generation that stays); in the link modes they name the stable paths and
//! no switch touches them.

use std::fs;
use std::path::{Path, PathBuf};

use crate::apply::Lab;
use crate::kill_matrix::{killed, whole};

/// The store entry of cuDNN `version` (a prefix such as `9.5`).
fn entry(lab: &Lab, version: &str) -> PathBuf {
    lab.ctx.entry_dirs().into_iter().find(|d| d.file_name().unwrap().to_string_lossy().starts_with(&format!("cudnn-{version}"))).unwrap()
}

/// The entry's library folder as the host's loader is given it.
fn lib_dir(entry: &Path) -> String {
    (if cfg!(windows) { entry.join("bin") } else { entry.join("lib") }).display().to_string()
}

/// `lab.three()` with `mode` as its link mode (`None`: the default).
fn first(lab: &Lab, mode: Option<&str>) -> PathBuf {
    let f = lab.three();
    if let Some(mode) = mode {
        fs::write(&f, fs::read_to_string(&f).unwrap().replacen("[toolkits]", &format!("[settings]\nlink-mode = \"{mode}\"\n\n[toolkits]"), 1)).unwrap();
    }
    f
}

/// The second lab file: `legacy` moves from cuDNN 8.9.4 to 9.5, `torch2` goes.
fn second(lab: &Lab, mode: Option<&str>) -> PathBuf {
    let settings = mode.map(|m| format!("[settings]\nlink-mode = \"{m}\"\n\n")).unwrap_or_default();
    lab.lab(&format!(
        "{settings}[profiles.legacy]\ncuda = \"12\"\ncudnn = \"9.5\"\n\n[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\nconda-env = '{}'\n",
        lab.env_b.display()
    ))
}

/// Where the test's files go: Jupyter's data folder and the export folder.
struct Followers {
    data: PathBuf,
    out: PathBuf,
}

impl Followers {
    /// Installs kernel `legacy` (into `data`) and exports every profile as dotenv and json
    /// into `out`.
    fn install(lab: &Lab) -> Followers {
        let (data, out) = (lab.ctx.path("jupyter data"), lab.ctx.path("exported"));
        // No interpreter: the spec is written anyway (with a warning).
        let py = lab.ctx.path("no-python/python");
        let o = lab.ctx.cmd().env("JUPYTER_DATA_DIR", &data).args(["kernel", "install", "legacy", "--python"]).arg(&py).output().unwrap();
        assert!(o.status.success(), "{o:?}");
        for format in ["dotenv", "json"] {
            lab.ok(&["export", "--all", "--format", format, "--out", out.to_str().unwrap()]);
        }
        Followers { data, out }
    }

    fn kernel(&self) -> PathBuf {
        self.data.join("kernels/cuenv-legacy/kernel.json")
    }

    /// The three files that hold `legacy`.
    fn legacy(&self) -> [PathBuf; 3] {
        [self.kernel(), self.out.join("legacy.env"), self.out.join("legacy.json")]
    }
}

#[test]
fn a_link_free_switch_rewrites_kernelspecs_and_exports() {
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", first(&lab, Some("none")).to_str().unwrap()]);
    let f = Followers::install(&lab);
    let (v8, v9) = (lib_dir(&entry(&lab, "8.9.4")), lib_dir(&entry(&lab, "9.5")));
    for p in f.legacy() {
        let t = fs::read_to_string(&p).unwrap();
        assert!(t.contains(&v8) && !t.contains(&v9), "{}: {t}", p.display());
    }
    // A variable the user added to the kernelspec stays; a copy of it in Jupyter's folder
    // (not recorded by cuenv) is found there and follows too.
    let mut spec: serde_json::Value = serde_json::from_str(&fs::read_to_string(f.kernel()).unwrap()).unwrap();
    spec["env"]["MINE"] = "kept".into();
    fs::write(f.kernel(), serde_json::to_string_pretty(&spec).unwrap()).unwrap();
    let copy = f.data.join("kernels/copied/kernel.json");
    fs::create_dir_all(copy.parent().unwrap()).unwrap();
    fs::copy(f.kernel(), &copy).unwrap();
    let torch2 = fs::read(f.out.join("torch2.env")).unwrap();

    // apply: legacy now resolves to 9.5.
    let file = second(&lab, Some("none"));
    let o = lab.ctx.cmd().env("JUPYTER_DATA_DIR", &f.data).args(["apply", "--no-check", file.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{o:?}");
    for p in f.legacy().iter().chain([&copy]) {
        let t = fs::read_to_string(p).unwrap();
        assert!(t.contains(&v9) && !t.contains(&v8), "{}: {t}", p.display());
    }
    let spec: serde_json::Value = serde_json::from_str(&fs::read_to_string(f.kernel()).unwrap()).unwrap();
    assert_eq!(spec["env"]["MINE"], "kept", "{spec}");
    assert_eq!(spec["metadata"]["cuenv"]["profile"], "legacy", "{spec}");
    assert!(spec["env"]["PATH"].as_str().unwrap().ends_with("${PATH}"), "{spec}");
    // torch2 is gone from generation 2: its export is left as it was.
    assert_eq!(fs::read(f.out.join("torch2.env")).unwrap(), torch2);

    // rollback (without JUPYTER_DATA_DIR: the record in the home finds the kernelspec).
    lab.ok(&["rollback"]);
    for p in f.legacy() {
        let t = fs::read_to_string(&p).unwrap();
        assert!(t.contains(&v8) && !t.contains(&v9), "{}: {t}", p.display());
    }
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{s}");
}

/// An export to stdout cannot be followed: the link-free mode says so (not with --out).
#[test]
fn a_link_free_export_to_stdout_says_it_goes_stale() {
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", first(&lab, Some("none")).to_str().unwrap()]);
    let export = |extra: &[&str]| {
        let o = assert_cmd::Command::new(env!("CARGO_BIN_EXE_cuenv"))
            .env_remove("CUENV_HOME")
            .arg("--home")
            .arg(&lab.ctx.home)
            .args(["export", "legacy", "--format", "dotenv"])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{o:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let note = "note: this export names real folders; re-run it after use/rollback, or use --out DIR so cuenv keeps it current\n";
    assert_eq!(export(&[]), note);
    let out = lab.ctx.path("out");
    assert_eq!(export(&["--out", out.to_str().unwrap()]), "");
}

/// A killed link-free rollback: the next writer finishes or undoes it, kernelspec and export
/// with it.
#[test]
fn a_killed_link_free_switch_leaves_followers_matching_the_generation() {
    for (step, lands) in [("journal", 2), ("shims", 2), ("commit", 1)] {
        let lab = Lab::new();
        lab.ok(&["apply", "--no-check", first(&lab, Some("none")).to_str().unwrap()]);
        let f = Followers::install(&lab);
        lab.ok(&["apply", "--no-check", second(&lab, Some("none")).to_str().unwrap()]);
        killed(&lab, step, &["rollback"]);
        whole(&lab, &format!("rollback at {step}"));
        assert_eq!(lab.current(), lands, "rollback at {step}");
        let (want, not) = if lands == 1 { ("8.9.4", "9.5") } else { ("9.5", "8.9.4") };
        for p in f.legacy() {
            let t = fs::read_to_string(&p).unwrap();
            assert!(t.contains(&lib_dir(&entry(&lab, want))) && !t.contains(&lib_dir(&entry(&lab, not))), "rollback at {step}: {}: {t}", p.display());
        }
    }
}

/// In a link home, kernelspecs and exports name the stable paths: no switch rewrites them.
#[cfg(unix)]
#[test]
fn a_linked_switch_leaves_kernelspecs_and_exports_alone() {
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", first(&lab, None).to_str().unwrap()]);
    assert!(fs::symlink_metadata(lab.profiles()).unwrap().file_type().is_symlink(), "a link home");
    let f = Followers::install(&lab);
    let before: Vec<Vec<u8>> = f.legacy().iter().map(|p| fs::read(p).unwrap()).collect();
    let stable = lab.ctx.home.join("profiles/legacy").display().to_string();
    assert!(String::from_utf8_lossy(&before[0]).contains(&stable), "{}", String::from_utf8_lossy(&before[0]));
    let file = second(&lab, None);
    let o = lab.ctx.cmd().env("JUPYTER_DATA_DIR", &f.data).args(["apply", "--no-check", file.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{o:?}");
    lab.ok(&["rollback"]);
    lab.ok(&["rollback", "--to", "2"]);
    let after: Vec<Vec<u8>> = f.legacy().iter().map(|p| fs::read(p).unwrap()).collect();
    assert_eq!(before, after);
    // A switch to a link-free generation removes the `profiles` link: they follow it to the
    // real folders.
    lab.ok(&["apply", "--no-check", second(&lab, Some("none")).to_str().unwrap()]);
    let v9 = lib_dir(&entry(&lab, "9.5"));
    for p in f.legacy() {
        let t = fs::read_to_string(&p).unwrap();
        assert!(t.contains(&v9) && !t.contains(&stable), "{}: {t}", p.display());
    }
}
