//! The kill matrix for the commands beside `apply` (whose own fault points are in
//! `apply_tx.rs` and `apply.rs`): `use`, `rollback`, `gc`, `store add` and `store remove`
//! are killed (`CUENV_TEST_ABORT_AT`, debug builds) at every step where a kill could leave
//! a half-state. After each kill, the next writing command must leave the old state or the
//! new one: a whole current generation, an active link that points at a profile, a store
//! whose entries all verify, no leftovers, and `status` healthy.

use std::fs;
use std::path::Path;

use crate::support::Release;
use crate::support::lab::{Lab, host_archive};

/// Runs `args` with the abort hook at `step`; asserts the hook fired (the process died).
pub(crate) fn killed(lab: &Lab, step: &str, args: &[&str]) {
    let out = lab.ctx.cmd().args(args).env("CUENV_TEST_ABORT_AT", step).output().unwrap();
    assert!(!out.status.success(), "{args:?} at {step}: the abort hook did not fire: {}", String::from_utf8_lossy(&out.stderr));
}

/// Everything that must hold once the next writer has run.
pub(crate) fn whole(lab: &Lab, what: &str) {
    lab.ok(&["gc", "--dry-run"]); // a writer: recovers and cleans up
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{what}: {s}");
    assert_eq!(s["interrupted_switch"], false, "{what}: {s}");
    let home = &lab.ctx.home;
    for leftover in [".profiles.new", ".active.new", ".current.new", "journal.toml"] {
        assert!(fs::symlink_metadata(home.join(leftover)).is_err(), "{what}: {leftover} left");
    }
    for e in fs::read_dir(home.join("generations")).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(name.parse::<u64>().is_ok(), "{what}: generations/{name} left");
    }
    let staging = home.join("store/.tmp");
    assert!(fs::read_dir(&staging).map(|mut d| d.next().is_none()).unwrap_or(true), "{what}: store staging not empty");
    let (code, out, err) = lab.run(&["store", "verify"]);
    assert_eq!(code, 0, "{what}: store verify:\n{out}{err}");
}

/// Generation 1 (three profiles) and 2 (one), 2 current, `tf` of generation 1 was active.
fn two_generations() -> Lab {
    let lab = Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let f2 = lab.lab("[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n");
    lab.ok(&["apply", "--no-check", f2.to_str().unwrap()]);
    lab
}

#[cfg(unix)]
#[test]
fn a_killed_use_leaves_the_old_or_the_new_active_profile() {
    let lab = two_generations();
    lab.ok(&["use", "legacy"]);
    // `use` replaces the link through `.active.new`; kill between the two steps.
    let f3 = lab.lab("[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n\n[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\n");
    lab.ok(&["apply", "--no-check", f3.to_str().unwrap()]);
    killed(&lab, "link-staged", &["use", "tf"]);
    whole(&lab, "use at link-staged");
    let active = fs::read_link(lab.ctx.home.join("active")).unwrap();
    assert!(active.ends_with("profiles/legacy") || active.ends_with("profiles/tf"), "{}", active.display());
}

#[cfg(unix)]
#[test]
fn a_killed_rollback_leaves_the_old_or_the_new_generation() {
    for step in ["journal", "shims", "link-staged", "commit", "history"] {
        let lab = two_generations();
        killed(&lab, step, &["rollback"]);
        whole(&lab, &format!("rollback at {step}"));
        let cur = lab.current();
        assert!(cur == 1 || cur == 2, "rollback at {step}: generation {cur}");
        // The env's shims are exactly the current generation's: generation 1 has torch2's.
        let shim = lab.env_a.join("etc/conda/activate.d/cuenv-torch2.sh");
        assert_eq!(shim.exists(), cur == 1, "rollback at {step}: shims of the wrong generation");
    }
}

#[test]
fn a_killed_gc_leaves_no_half_deleted_generation() {
    for step in ["gc-trashed", "gc-links"] {
        let lab = two_generations();
        let f3 = lab.lab("[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\n");
        lab.ok(&["apply", "--no-check", f3.to_str().unwrap()]);
        killed(&lab, step, &["gc", "--keep", "1"]);
        whole(&lab, &format!("gc at {step}"));
        // Generation 1 is gone as a whole: nothing can switch to a part of it.
        let (code, out, err) = lab.run(&["rollback", "--to", "1"]);
        assert_eq!(code, 2, "gc at {step}: rollback --to 1:\n{out}{err}");
        assert!(err.contains("there is no generation 1"), "{err}");
        assert_eq!(lab.current(), 3);
    }
}

#[test]
fn a_killed_store_add_leaves_no_entry_or_a_whole_one() {
    for step in ["store-staged", "store-rooted", "store-published"] {
        let lab = Lab::new();
        let dir = lab.ctx.path(step);
        fs::create_dir_all(&dir).unwrap();
        let archive = host_archive(&dir, &Release { version: [9, 1, 0, 70], cuda: 12 });
        killed(&lab, step, &["store", "add", archive.to_str().unwrap()]);
        whole(&lab, &format!("store add at {step}"));
        let listed = lab.ok(&["store", "list"]);
        assert_eq!(listed.contains("9.1.0.70"), step == "store-published", "store add at {step}:\n{listed}");
        // Added again, it is whole and a gc root.
        lab.ctx.add_ok(&archive, &[]);
        let gc = lab.ok(&["gc", "--dry-run"]);
        assert!(!gc.contains("9.1.0.70"), "store add at {step}: a hand-added entry is a root:\n{gc}");
    }
}

#[test]
fn a_killed_store_remove_leaves_the_entry_or_nothing() {
    for step in ["store-trashed", "store-pruned"] {
        let lab = Lab::new();
        let listed = lab.ok(&["store", "list"]);
        let name = listed
            .lines()
            .find(|l| l.contains("8.9.4.25"))
            .and_then(|l| l.split_whitespace().find(|w| w.starts_with("cudnn-")))
            .unwrap_or_else(|| panic!("{listed}"))
            .to_string();
        killed(&lab, step, &["store", "remove", &name]);
        whole(&lab, &format!("store remove at {step}"));
        assert!(!lab.ok(&["store", "list"]).contains(&name), "store remove at {step}: the entry is gone once renamed away");
        assert!(!Path::new(&lab.ctx.home.join("store").join(&name)).exists());
    }
}

#[cfg(unix)]
/// Every `.cuenv-tmp*` entry under `root` (links not followed).
fn temp_leftovers(root: &Path) -> Vec<String> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".cuenv-tmp"))
        .map(|e| e.path().display().to_string())
        .collect()
}

#[cfg(unix)]
/// One writer of the temp-file matrix: what it needs first, and its own command line.
struct Writer {
    name: &'static str,
    setup: fn(&Lab),
    args: fn(&Lab) -> Vec<String>,
}

#[cfg(unix)]
fn applied(lab: &Lab) {
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
}

#[cfg(unix)]
fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|a| a.to_string()).collect()
}

#[cfg(unix)]
fn writers() -> Vec<Writer> {
    vec![
        Writer { name: "first apply", setup: |_| {}, args: |lab| s(&["apply", "--no-check", lab.three().to_str().unwrap()]) },
        Writer {
            name: "checked apply",
            setup: applied,
            args: |lab| {
                let f = lab.lab(&format!("[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\nconda-env = '{}'\n", lab.env_b.display()));
                s(&["apply", "--timeout", "30", f.to_str().unwrap()])
            },
        },
        Writer {
            name: "rollback",
            setup: |lab| {
                applied(lab);
                let f = lab.lab("[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n");
                lab.ok(&["apply", "--no-check", f.to_str().unwrap()]);
            },
            args: |_| s(&["rollback"]),
        },
        Writer { name: "use", setup: applied, args: |_| s(&["use", "tf"]) },
        Writer {
            name: "store add",
            setup: |_| {},
            args: |lab| {
                let dir = lab.ctx.path("more");
                fs::create_dir_all(&dir).unwrap();
                let a = host_archive(&dir, &Release { version: [9, 1, 0, 70], cuda: 12 });
                s(&["store", "add", a.to_str().unwrap()])
            },
        },
        Writer {
            name: "kernel install",
            setup: applied,
            args: |lab| {
                let py = std::env::split_paths(&std::env::var_os("PATH").unwrap()).map(|d| d.join("python3")).find(|p| p.is_file()).unwrap();
                let mut a = s(&["kernel", "install", "legacy", "--python", py.to_str().unwrap(), "--prefix"]);
                a.push(lab.ctx.path("kernel prefix").display().to_string());
                a
            },
        },
        Writer {
            name: "export --out",
            setup: applied,
            args: |lab| s(&["export", "--all", "--format", "dotenv", "--out", lab.ctx.path("exported").to_str().unwrap()]),
        },
        Writer {
            name: "gc",
            setup: |lab| {
                applied(lab);
                let f = lab.lab("[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n");
                lab.ok(&["apply", "--no-check", f.to_str().unwrap()]);
            },
            args: |_| s(&["gc", "--keep", "1"]),
        },
    ]
}

#[cfg(unix)]
/// The temp-file points `w` passes when it runs to its end (`CUENV_TEST_TRACE_TMP`).
fn temp_points(w: &Writer) -> Vec<String> {
    let lab = Lab::new();
    (w.setup)(&lab);
    let trace = lab.ctx.path("trace.txt");
    let args = (w.args)(&lab);
    let _ = lab.ctx.cmd().args(&args).env("CUENV_TEST_TRACE_TMP", &trace).output().unwrap();
    let text = fs::read_to_string(&trace).unwrap_or_default();
    text.lines().filter_map(|l| l.split('\t').next()).map(str::to_string).collect()
}

/// Issue 29, case 1: every writer killed at every one of its temp-file points (traced, not
/// listed: a new atomic write is in the matrix the day it is written). The next writing
/// command succeeds, and leaves no `.cuenv-tmp*` file in the home, the conda envs, the lab
/// folder, the kernelspec prefix or the export folder; the killed command then succeeds.
#[cfg(unix)]
#[test]
fn every_writer_killed_at_every_temp_file_point_leaves_nothing_behind() {
    let mut covered = 0;
    for w in writers() {
        // (`use` in a link mode writes only a link: its kill point is `link-staged`, above.)
        let points = temp_points(&w);
        for step in &points {
            let what = format!("{} at {step}", w.name);
            let lab = Lab::new();
            (w.setup)(&lab);
            let args = (w.args)(&lab);
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            killed(&lab, step, &refs);
            whole(&lab, &what);
            // The next writer owns the home, the conda envs and the lab folders of the generations.
            for root in [lab.ctx.home.clone(), lab.ctx.path("envs")] {
                assert_eq!(temp_leftovers(&root), Vec::<String>::new(), "{what}");
            }
            // The lab folder: only its own files (not the envs and store under the test's work folder).
            let lab_dir = lab.ctx.path("lab.toml").parent().unwrap().to_path_buf();
            let here: Vec<String> = fs::read_dir(&lab_dir)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".cuenv-tmp"))
                .collect();
            assert_eq!(here, Vec::<String>::new(), "{what}: in the lab folder");
            let (code, out, err) = lab.run(&refs);
            assert!(code == 0 || w.name == "checked apply", "{what}: the command again:\n{out}{err}");
            // A kernelspec or export folder belongs to the command that writes it: run again, it
            // removes what its killed run left.
            for root in [lab.ctx.path("kernel prefix"), lab.ctx.path("exported")] {
                assert_eq!(temp_leftovers(&root), Vec::<String>::new(), "{what}, then the command again");
            }
            covered += 1;
        }
    }
    assert!(covered >= 20, "only {covered} temp-file points");
    eprintln!("{covered} temp-file points killed");
}
