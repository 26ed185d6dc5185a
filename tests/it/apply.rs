//! `plan`, `apply`, `use`, `rollback`, `generations`, `status`, `gc`: integration tests on a
//! temporary home with fake cuDNN releases and toolkit roots built at test time.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::lab::*;

fn entry_of(lab: &Lab, version: &str) -> PathBuf {
    lab.ctx.entry_dirs().into_iter().find(|d| d.file_name().unwrap().to_string_lossy().starts_with(&format!("cudnn-{version}"))).unwrap()
}

#[test]
fn plan_apply_and_apply_again() {
    let lab = Lab::new();
    let file = lab.three();
    let before = (tree_digest(&lab.tk12), tree_digest(&lab.tk11));
    let plan = lab.ok(&["plan", file.to_str().unwrap()]);
    assert!(plan.contains("+ profile torch2: cuDNN 9.5.0.50"), "{plan}");
    assert!(plan.contains("+ profile tf: cuDNN 8.8.0.121"), "{plan}");
    assert!(plan.contains("+ profile legacy: cuDNN 8.9.4.25"), "{plan}");
    // Each platform's own shells: `.bat`/`.ps1` on Windows; `.sh`, `.fish`, `.csh`
    // elsewhere (POSIX-family shims hold `:`-separated lists, which `C:\` paths would break).
    assert!(plan.contains("+ shim "), "{plan}");
    assert_eq!(plan.contains("cuenv-torch2.bat"), cfg!(windows), "{plan}");
    assert_eq!(plan.contains("cuenv-torch2.sh") && plan.contains("cuenv-torch2.csh"), cfg!(unix), "{plan}");
    assert!(!lab.ctx.home.join("generations").exists(), "plan touches nothing");
    assert!(!lab.ctx.path("lab.lock").exists(), "plan writes no lock");

    let out = lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    assert!(out.contains("generation 1 is current"), "{out}");
    assert_eq!(lab.current(), 1);
    // Views link to the entry, its library folder, the toolkit root and its runtime folder.
    let v = lab.profiles().join("torch2");
    assert_eq!(fs::read_link(v.join("cudnn")).unwrap(), entry_of(&lab, "9.5.0.50"));
    assert_eq!(fs::read_link(v.join("cudnn-lib")).unwrap(), entry_of(&lab, "9.5.0.50").join("lib"));
    assert_eq!(fs::read_link(v.join("cuda")).unwrap(), lab.tk12);
    assert_eq!(fs::read_link(v.join("cuda-lib")).unwrap(), lab.tk12.join("lib64"));
    assert!(v.join("cudnn-lib/libcudnn.so.9").exists());
    assert_eq!(fs::read_link(lab.profiles().join("tf/cuda")).unwrap(), lab.tk11);
    // Shims in every shell, with cuenv's marker, in both envs; none for the profile without an env.
    for (env, p) in [(&lab.env_a, "torch2"), (&lab.env_b, "tf")] {
        let exts: &[&str] = if cfg!(windows) { &["bat", "ps1"] } else { &["sh", "fish", "csh"] };
        for ext in exts {
            for d in ["activate.d", "deactivate.d"] {
                let s = env.join("etc/conda").join(d).join(format!("cuenv-{p}.{ext}"));
                let text = fs::read_to_string(&s).unwrap_or_else(|_| panic!("{} missing", s.display()));
                assert!(text.lines().next().unwrap().contains("cuenv-shim"), "{}", s.display());
            }
        }
    }
    // The lock records each profile's choice.
    let lock = fs::read_to_string(lab.ctx.path("lab.lock")).unwrap();
    let host = if cfg!(windows) { "windows-x86_64" } else { "linux-x86_64" };
    assert!(lock.contains(&format!("[platforms.{host}.profiles.torch2]")) && lock.contains("9.5.0.50") && lock.contains("11.8.89"), "{lock}");
    // cuenv never writes inside a toolkit root.
    assert_eq!((tree_digest(&lab.tk12), tree_digest(&lab.tk11)), before);

    let again = lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    assert!(again.contains("no changes"), "{again}");
    assert_eq!(lab.current(), 1);
    let plan2 = lab.ok(&["plan", file.to_str().unwrap()]);
    assert!(plan2.contains("no changes"), "{plan2}");

    let status = lab.ok(&["status", "--json"]);
    let s: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(s["generation"], 1);
    assert_eq!(s["healthy"], true, "{status}");
}

#[test]
fn use_rollback_generations_gc() {
    let lab = Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    lab.ok(&["use", "tf"]);
    let active = lab.ctx.home.join("active");
    assert_eq!(fs::read_link(&active).unwrap(), lab.profiles().join("tf"));
    assert!(active.join("cudnn-lib/libcudnn.so.8").exists());
    let (code, _, err) = lab.run(&["use", "nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no profile `nope`") && err.contains("hint: profiles: torch2, tf, legacy"), "{err}");

    // Edit: drop `legacy`, move tf to 8.8.0.121 exactly; apply builds generation 2.
    let file = lab.lab(&format!(
        "[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\nconda-env = '{}'\n\n[profiles.tf]\ncuda = \"11\"\ncudnn = \"8.8.0.121\"\nconda-env = '{}'\n",
        lab.env_a.display(),
        lab.env_b.display()
    ));
    let out = lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    assert!(out.contains("- profile legacy"), "{out}");
    assert_eq!(lab.current(), 2);
    assert!(!lab.profiles().join("legacy").exists());
    // `active` follows the switch through the stable path.
    assert!(active.join("cudnn-lib/libcudnn.so.8").exists());

    let said = lab.ok(&["rollback"]);
    assert!(said.contains("rolled back: generation 1 is current (was 2)"), "{said}");
    assert_eq!(lab.current(), 1);
    assert!(lab.profiles().join("legacy/cudnn-lib/libcudnn.so.8").exists());
    let gens = lab.ok(&["generations"]);
    assert!(gens.lines().any(|l| l.starts_with("*") && l.contains(" 1 ")), "{gens}");
    // Rollback walks back by number; it does not toggle back to 2.
    let (code, _, err) = lab.run(&["rollback"]);
    assert_eq!(code, 2, "{err}");
    // Generation 1 is the oldest: no older one exists (not "none passed its check").
    assert!(err.contains("no generation is older than 1; there is nothing to roll back to") && err.contains("hint: `cuenv generations` lists them"), "{err}");
    let said = lab.ok(&["rollback", "--to", "2"]);
    assert!(said.contains("switched forward: generation 2 is current (was 1)"), "{said}");
    assert_eq!(lab.current(), 2);
    let (code, _, err) = lab.run(&["rollback", "--to", "9"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no generation 9"), "{err}");

    // The history records every switch, rollbacks included.
    let hist: serde_json::Value = serde_json::from_str(&lab.ok(&["generations", "--json"])).unwrap();
    let ops: Vec<&str> = hist["history"].as_array().unwrap().iter().map(|h| h["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["apply", "apply", "rollback", "rollback"]);

    // A referenced entry cannot be removed.
    let (code, _, err) = lab.run(&["store", "remove", "cudnn-9.5.0.50"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("used by generation"), "{err}");

    // gc keeps current and previous; with --keep 1 nothing else exists to delete here, so add gen 3.
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    assert_eq!(lab.current(), 3);
    let dry = lab.ok(&["gc", "--keep", "1", "--dry-run"]);
    assert!(dry.contains("would delete generation 1"), "{dry}");
    assert!(lab.ctx.home.join("generations/1").exists());
    lab.ok(&["gc", "--keep", "1"]);
    assert!(!lab.ctx.home.join("generations/1").exists());
    assert!(lab.ctx.home.join("generations/2").exists() && lab.ctx.home.join("generations/3").exists());
    // Entries still referenced (by generations 2 and 3, and lab.lock) survive.
    assert_eq!(lab.ctx.entry_dirs().len(), 3);
    lab.ok(&["use", "--none"]);
    assert!(fs::symlink_metadata(&active).is_err());
}

fn assert_invalid(lab: &Lab, file: &Path, needles: &[&str]) {
    let (code, out, err) = lab.run(&["apply", "--no-check", file.to_str().unwrap()]);
    assert_eq!(code, 2, "stdout:\n{out}\nstderr:\n{err}");
    for n in needles {
        assert!(err.contains(n), "`{n}` not in:\n{err}");
    }
    assert!(err.lines().any(|l| l.starts_with("hint: ")), "no hint:\n{err}");
    assert!(!lab.ctx.home.join("generations").exists(), "a generation was written");
    assert!(!lab.ctx.path("lab.lock").exists(), "a lock was written");
    assert!(fs::symlink_metadata(lab.profiles()).is_err());
}

#[test]
fn unknown_key_names_file_line_column() {
    let lab = Lab::new();
    let f = lab.lab("[profiles.a]\ncuda = \"12\"\ncudnn = \"9.5\"\ncuddn = \"9\"\n");
    assert_invalid(&lab, &f, &["lab.toml:9:1", "cuddn"]);
}

#[test]
fn every_broken_profile_is_reported_at_once() {
    let lab = Lab::new();
    let f = lab.lab("[settings]\nlink-mode = \"hardlink\"\n\n[profiles.a]\ncuda = \"12\"\ncudnn = \"9.x\"\n\n[profiles.ok]\ncuda = \"12\"\ncudnn = \"9.5\"\n\n[profiles.b]\ncuda = \"12\"\ncudnn = \"9.5\"\ncuddn = \"9\"\n");
    assert_invalid(
        &lab,
        &f,
        &[
            "lab.toml:7:13: `link-mode = \"hardlink\"` is not a valid link-mode",
            "lab.toml:11:9: `cudnn = \"9.x\"`",
            "lab.toml:20:1: unknown key `cuddn`",
            "3 errors in",
            "nothing was changed",
        ],
    );
    let (_, _, err) = lab.run(&["plan", f.to_str().unwrap()]);
    assert_eq!(err.lines().filter(|l| l.starts_with("hint: ")).count(), 3, "one hint per error:\n{err}");
}

#[test]
fn plan_refuses_a_bad_from_like_apply_does() {
    let lab = Lab::new();
    let f = lab.lab("[profiles.a]\ncuda = { version = \"12.6\", from = \"pyip\" }\ncudnn = { version = \"9.1.0.70\", from = \"pyppi\" }\n");
    for cmd in ["plan", "apply"] {
        let (code, out, err) = lab.run(&[cmd, f.to_str().unwrap()]);
        assert_eq!(code, 2, "{cmd}: {out}\n{err}");
        assert!(err.contains("lab.toml:7:35: only `from = \"pypi\"` can provide a CUDA runtime"), "{cmd}: {err}");
        assert!(err.contains("hint: did you mean `from = \"pypi\"`? install the toolkit"), "{cmd}: {err}");
        assert!(err.contains("lab.toml:8:40: `from = \"pyppi\"` is neither"), "{cmd}: {err}");
        assert!(err.contains("hint: did you mean `from = \"pypi\"`?"), "{cmd}: {err}");
        assert!(err.contains("2 errors in"), "{cmd}: {err}");
    }
    assert!(!lab.ctx.home.join("generations").exists());
}

#[test]
fn a_missing_from_path_is_refused_by_plan_and_apply() {
    let lab = Lab::new();
    let f = lab.lab("[profiles.a]\ncuda = \"12\"\ncudnn = { version = \"9.5\", from = \"./no/such/cudnn.zip\" }\n");
    for cmd in ["plan", "apply"] {
        let (code, out, err) = lab.run(&[cmd, f.to_str().unwrap()]);
        assert_eq!(code, 2, "{cmd}: {out}\n{err}");
        assert!(
            err.contains("lab.toml:8:35: `from = \"./no/such/cudnn.zip\"` is neither \"pypi\", \"nvidia\", an http(s) URL, nor a path that exists"),
            "{cmd}: {err}"
        );
        assert!(err.contains("hint: write `from = \"pypi\"`"), "{cmd}: {err}");
    }
}

#[test]
fn broken_toml_is_located_and_changes_nothing() {
    let lab = Lab::new();
    let f = lab.lab("[profiles.a]\ncuda = \"12\ncudnn = \"9.5\"\n");
    assert_invalid(&lab, &f, &["lab.toml:7:", "invalid TOML", "hint: fix the TOML syntax"]);
}

#[test]
fn bad_version_is_shown_at_its_span() {
    let lab = Lab::new();
    let f = lab.lab("[profiles.a]\ncuda = \"12\"\ncudnn = \"9.x\"\n");
    assert_invalid(&lab, &f, &["lab.toml:8:9", "9.x", "^^^^^"]);
}

#[test]
fn cuda12_cudnn_on_a_cuda11_root_is_refused() {
    let lab = Lab::new();
    let f = lab.lab("[profiles.a]\ncuda = \"11.8\"\ncudnn = \"9.5\"\n");
    assert_invalid(&lab, &f, &["lab.toml:8:9", "9.5.0.50", "cuda12"]);
}

#[test]
fn unsatisfiable_requirements_list_what_exists() {
    let lab = Lab::new();
    let f = lab.lab("[profiles.a]\ncuda = \"13\"\ncudnn = \"9.5\"\n");
    assert_invalid(&lab, &f, &["lab.toml:7:8", "no CUDA toolkit matches `cuda = \"13\"`", "12.6.77", "11.8.89"]);
    let f = lab.lab("[profiles.a]\ncuda = \"12\"\ncudnn = \"9.9\"\n");
    assert_invalid(&lab, &f, &["lab.toml:8:9", "9.5.0.50"]);
}

#[test]
fn missing_conda_env_is_refused() {
    let lab = Lab::new();
    let f = lab.lab("[profiles.a]\ncuda = \"12\"\ncudnn = \"9.5\"\nconda-env = \"no-such-env-for-cuenv\"\n");
    assert_invalid(&lab, &f, &["lab.toml:9:13", "no-such-env-for-cuenv", "does not exist"]);
}

#[test]
fn locked_fails_on_drift_and_changes_nothing() {
    let lab = Lab::new();
    let file = lab.three();
    let (code, _, err) = lab.run(&["apply", "--no-check", "--locked", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("lab.lock") && err.contains("does not exist"), "{err}");
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    lab.ok(&["apply", "--no-check", "--locked", file.to_str().unwrap()]);
    let lock_before = fs::read_to_string(lab.ctx.path("lab.lock")).unwrap();
    // A format-1 lock (one section, no platform) is honoured by --locked and not rewritten;
    // a plain apply migrates it to format 2, byte for byte what was there.
    let host = if cfg!(windows) { "windows-x86_64" } else { "linux-x86_64" };
    let v1 = lock_before.replace("version = 3", "version = 1").replace(&format!("[platforms.{host}.profiles."), "[profiles.");
    fs::write(lab.ctx.path("lab.lock"), &v1).unwrap();
    lab.ok(&["apply", "--no-check", "--locked", file.to_str().unwrap()]);
    assert_eq!(fs::read_to_string(lab.ctx.path("lab.lock")).unwrap(), v1, "--locked never writes the lock");
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    assert_eq!(fs::read_to_string(lab.ctx.path("lab.lock")).unwrap(), lock_before);
    // A lock without this platform's section is not a lock for --locked.
    let other = if cfg!(windows) { "linux-x86_64" } else { "windows-x86_64" };
    fs::write(lab.ctx.path("lab.lock"), lock_before.replace(host, other)).unwrap();
    let (code, _, err) = lab.run(&["apply", "--no-check", "--locked", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("the lock file has no {host} section")) && err.contains("to write it"), "{err}");
    fs::write(lab.ctx.path("lab.lock"), &lock_before).unwrap();
    // Asking for another cuDNN is drift.
    let f2 = fs::read_to_string(&file).unwrap().replace("cudnn = \"8.9.4\"", "cudnn = \"9.5\"");
    fs::write(&file, f2).unwrap();
    let (code, _, err) = lab.run(&["apply", "--no-check", "--locked", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("legacy"), "{err}");
    assert_eq!(fs::read_to_string(lab.ctx.path("lab.lock")).unwrap(), lock_before);
    assert_eq!(lab.current(), 1);
}

#[test]
fn foreign_shim_file_is_never_overwritten() {
    let lab = Lab::new();
    let file = lab.three();
    // A file with the name of one of cuenv's shims for this host (no .sh shims on Windows).
    let theirs = lab.env_a.join(if cfg!(windows) { "etc/conda/activate.d/cuenv-torch2.bat" } else { "etc/conda/activate.d/cuenv-torch2.sh" });
    fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    fs::write(&theirs, "echo somebody else's script\n").unwrap();
    let (code, _, err) = lab.run(&["apply", "--no-check", file.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("was not written by cuenv"), "{err}");
    assert_eq!(fs::read_to_string(&theirs).unwrap(), "echo somebody else's script\n");
    assert!(fs::symlink_metadata(lab.profiles()).is_err(), "no generation became current");
    assert!(!lab.env_b.join("etc").exists(), "no shim was written anywhere");
}

/// A link the volume refuses fails `apply` with the reason in words and the hint to move the home,
/// and leaves no generation, staging folder or empty link folder behind. Linux: junctions do
/// not exist: that is an error at the `link-mode` line before anything
/// is built (exit 2), not a refused link. Windows: `link-mode = "junction"`, which asks for
/// junctions by name; under Wine the junction is refused (os error 50, as a FAT32 drive
/// refuses with error 1); on real Windows NTFS it is created, and the apply succeeds. (`auto`
/// falls back to the link-free mode there instead: `wine_main_job.rs`.)
#[test]
fn refused_links_leave_nothing_behind() {
    let lab = Lab::new();
    let file = lab.lab("[settings]\nlink-mode = \"junction\"\n\n[profiles.a]\ncuda = \"12\"\ncudnn = \"9.5\"\n");
    let (code, out, err) = lab.run(&["apply", "--no-check", file.to_str().unwrap()]);
    if cfg!(windows) && native_links_work(&lab.ctx.work) {
        assert_eq!(code, 0, "junctions work on this volume, so apply must too:\n{out}\n{err}");
        return;
    }
    assert_eq!(code, if cfg!(windows) { 1 } else { 2 }, "{out}\n{err}");
    if cfg!(windows) {
        // Wine's refusal (os error 50, ERROR_NOT_SUPPORTED) is a file system that cannot hold
        // links, as a FAT32 drive's (error 1): the raw OS error stays as the cause, and the
        // hint is to move the home or use the link-free mode.
        assert!(err.starts_with("error: cannot create a junction at "), "{err}");
        assert!(err.contains("cannot hold links") && err.contains("os error 50"), "{err}");
        assert!(err.contains("hint: move the cuenv home"), "{err}");
    } else {
        assert!(err.contains("lab.toml:7:13: `link-mode = \"junction\"` cannot be used on this machine") && err.contains("hint:"), "{err}");
    }
    let gens: Vec<_> = fs::read_dir(lab.ctx.home.join("generations")).map(|r| r.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    assert!(gens.is_empty(), "left behind: {gens:?}");
    assert!(fs::symlink_metadata(lab.profiles()).is_err(), "no generation became current");
    assert!(!lab.ctx.path("lab.lock").exists(), "no lock for a failed apply");
}

/// `link-mode = "copy"` is the old name of the link-free mode: nothing is copied
/// and no view is made; the shims and activations name the store entry itself. Before: the
/// entry was copied into `profiles/a/cudnn`.
#[test]
fn copy_mode_is_the_link_free_mode() {
    let lab = Lab::new();
    let file = lab.lab("[settings]\nlink-mode = \"copy\"\n\n[profiles.a]\ncuda = \"12\"\ncudnn = \"9.5\"\n");
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    assert!(fs::symlink_metadata(lab.profiles()).is_err(), "no `profiles` link");
    assert_eq!(fs::read_to_string(lab.ctx.home.join("current")).unwrap(), "1\n");
    assert!(!lab.ctx.home.join("generations/1/views").exists(), "nothing copied");
    let shell = if cfg!(windows) { "cmd" } else { "sh" };
    let env = lab.ok(&["env", "a", "--shell", shell]);
    assert!(env.contains(&entry_of(&lab, "9.5").display().to_string()), "{env}");
}

/// Aborts the process at each step of a switch, then checks that the next command finishes
/// (after the commit point) or undoes (before it) the switch, leaving shims that match the
/// current generation and no journal.
#[test]
fn a_crash_at_any_step_is_finished_or_undone() {
    for (step, expect) in [("journal", 1), ("shims", 1), ("commit", 2), ("history", 2)] {
        let lab = Lab::new();
        let file = lab.three();
        lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
        // Generation 2 drops torch2's env shims (torch2 loses its conda env).
        let f2 = lab.lab(&format!(
            "[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\n\n[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\nconda-env = '{}'\n",
            lab.env_b.display()
        ));
        let out = lab.ctx.cmd().args(["apply", "--no-check", f2.to_str().unwrap()]).env("CUENV_TEST_ABORT_AT", step).output().unwrap();
        assert!(!out.status.success(), "{step}: the abort hook did not fire");
        assert!(lab.ctx.home.join("journal.toml").exists(), "{step}: no journal left by the crash");
        // Any writing command recovers.
        lab.ok(&["gc", "--dry-run"]);
        assert!(!lab.ctx.home.join("journal.toml").exists(), "{step}: journal not cleared");
        assert_eq!(lab.current(), expect, "{step}");
        let torch_shim = lab.env_a.join(format!("etc/conda/activate.d/cuenv-torch2.{SHIM_EXT}"));
        assert_eq!(torch_shim.exists(), expect == 1, "{step}: shims do not match generation {expect}");
        let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
        assert_eq!(s["healthy"], true, "{step}: {s}");
        let hist: serde_json::Value = serde_json::from_str(&lab.ok(&["generations", "--json"])).unwrap();
        assert_eq!(hist["history"].as_array().unwrap().len(), expect as usize, "{step}: history");
    }
}

/// The fake libraries load but export no cuDNN API: the check fails, so `apply` reports
/// the failure (exit 4) and keeps the previous generation current.
#[test]
fn a_failing_check_keeps_the_previous_generation() {
    let lab = Lab::new();
    let file = lab.three();
    // First apply with a failing check: nothing becomes current, no lock is written.
    let (code, out, err) = lab.run(&["apply", "--timeout", "30", file.to_str().unwrap()]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(out.contains("check torch2: fail"), "{out}");
    assert!(err.contains("generation 1 was built but no generation is current"), "{err}");
    assert!(fs::symlink_metadata(lab.profiles()).is_err());
    assert!(!lab.ctx.path("lab.lock").exists());
    assert!(!lab.env_a.join("etc/conda/activate.d/cuenv-torch2.sh").exists(), "shims removed again");
    // A generation applied without the check, then a failing one: the first stays current.
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    assert_eq!(lab.current(), 2);
    let f2 = fs::read_to_string(&file).unwrap().replace("cudnn = \"8.9.4\"", "cudnn = \"9.5\"");
    fs::write(&file, f2).unwrap();
    let (code, out, err) = lab.run(&["apply", file.to_str().unwrap()]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(err.contains("generation 2 stays current"), "{err}");
    assert_eq!(lab.current(), 2);
    let hist: serde_json::Value = serde_json::from_str(&lab.ok(&["generations", "--json"])).unwrap();
    let ops: Vec<&str> = hist["history"].as_array().unwrap().iter().map(|h| h["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["apply", "revert", "apply", "apply", "revert"]);
    // The same file applied without the check is generation 4; rolling back skips 3, whose
    // check failed, and lands on 2.
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    assert_eq!(lab.current(), 4);
    let (code, out, err) = lab.run(&["rollback"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("rolled back: generation 2 is current (was 4; skipped 3, whose check failed)"), "{out}");
    assert_eq!(lab.current(), 2);
    // `cuenv check` re-runs the checks of the current generation and records them.
    let (code, out, _) = lab.run(&["check", "--json"]);
    assert_eq!(code, 4);
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["profiles"].as_array().unwrap().len(), 3);
    assert_eq!(report["profiles"][0]["result"]["status"], "fail");
    let status: serde_json::Value = serde_json::from_str(&lab.run(&["status", "--json"]).1).unwrap();
    assert_eq!(status["profiles"][0]["check"]["result"]["status"], "fail", "{status}");
    let (code, _, err) = lab.run(&["check", "nope"]);
    assert_eq!(code, 2, "{err}");
}

/// `eval "$(cuenv env --setup)"` makes `<home>/active` effective; a switch that drops the
/// active profile warns, and `status` reports the dangling `active` link as damage.
#[cfg(unix)]
#[test]
fn env_setup_and_a_dangling_active_profile() {
    let lab = Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    lab.ok(&["use", "legacy"]);
    let home = lab.ctx.home.display().to_string();
    let script = format!(
        "eval \"$('{}' --home '{home}' env --setup)\" && printf '%s\\n' \"$CUDNN_PATH\" \"$LD_LIBRARY_PATH\" \"$CUENV_PROFILE\"",
        env!("CARGO_BIN_EXE_cuenv")
    );
    let out = std::process::Command::new("bash").arg("-c").arg(&script).env_remove("LD_LIBRARY_PATH").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let active = std::path::absolute(lab.ctx.home.join("active")).unwrap();
    assert_eq!(lines[0], active.join("cudnn").display().to_string(), "{text}");
    assert!(lines[1].starts_with(&active.join("cudnn-lib").display().to_string()), "{text}");
    assert_eq!(lines[2], "active");
    assert!(Path::new(lines[0]).join("include/cudnn_version.h").exists());

    // Drop `legacy`: the switch warns, and status reports the dangling link (exit 3).
    let f2 = lab.lab(&format!("[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\nconda-env = '{}'\n", lab.env_a.display()));
    let out = lab.ctx.cmd().args(["apply", "--no-check", f2.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("the active profile `legacy` is not in generation 2"), "{err}");
    let (code, out, _) = lab.run(&["status", "--json"]);
    assert_eq!(code, 3, "{out}");
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(s["active_dangling"], true);
    lab.ok(&["use", "torch2"]);
    assert_eq!(lab.run(&["status"]).0, 0);
}

/// Writers serialize on `<home>/cuenv.lock`: while another process holds it, a writer says
/// it is waiting and gives up after CUENV_LOCK_TIMEOUT seconds with a hint.
#[test]
fn writers_wait_for_the_lock_and_time_out() {
    let lab = Lab::new();
    let held = fs::OpenOptions::new().read(true).write(true).open(lab.ctx.home.join("cuenv.lock")).unwrap();
    held.lock().unwrap();
    let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_cuenv"))
        .env_remove("CUENV_HOME")
        .arg("--home")
        .arg(&lab.ctx.home)
        .args(["use", "--none"])
        .env("CUENV_LOCK_TIMEOUT", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("waiting for another cuenv (pid"), "{err}");
    assert!(err.contains("has held") && err.contains("hint: wait for the other cuenv to finish, or raise CUENV_LOCK_TIMEOUT"), "{err}");
    drop(held); // closing the handle releases the lock
    lab.ok(&["use", "--none"]);
}

/// `cuenv doctor` in an activated profile's environment: clean when the profile's entry
/// wins, a problem naming the folder that won when another cuDNN comes first.
#[cfg(target_os = "linux")]
#[test]
fn doctor_judges_the_active_profile_like_check() {
    let lab = Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let view = lab.profiles().join("torch2");
    let run = |ld: &[&Path]| {
        let out = lab
            .ctx
            .cmd()
            .env("CUENV_PROFILE", "torch2")
            .env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap())
            .args(["doctor", "--major", "9"])
            .output()
            .unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (code, out) = run(&[&view.join("cudnn-lib"), &view.join("cuda-lib")]);
    assert!(out.contains("active profile (CUENV_PROFILE): torch2: "), "{out}");
    assert!(out.contains("from cuenv store entry cudnn-9.5.0.50-cuda12-"), "{out}");
    // The fixture's libraries are not a complete cuDNN (no cudnnCreate, no CUDA 12 runtime
    // for it), so findings follow; but the profile's own entry won: nothing is shadowed.
    assert!(!out.contains("shadowed"), "{out}");
    assert!(out.contains("hint: `cuenv check torch2` runs the same check"), "{out}");
    assert_eq!(code, 4, "{out}");

    let stubs = crate::support::stubs::Stubs::new();
    let shadow = stubs.build("shadow", "libcudnn.so.9", &["VERSION=90500"]);
    let (code, out) = run(&[&shadow, &view.join("cudnn-lib"), &view.join("cuda-lib")]);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains(&format!(
            "problem: profile `torch2` is active, but in this environment: shadowed: the cuDNN dispatcher libcudnn.so.9 came from {}",
            shadow.display()
        )),
        "{out}"
    );
    assert!(out.contains("hint: remove the folder that wins from LD_LIBRARY_PATH"), "{out}");

    // `cuenv env --setup` shells say CUENV_PROFILE=active: doctor follows `<home>/active`.
    let run_active = || {
        let out = lab.ctx.cmd().env("CUENV_PROFILE", "active").env("LD_LIBRARY_PATH", &shadow).args(["doctor", "--major", "9"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let out = run_active();
    assert!(out.contains("(`cuenv env --setup`), but no profile is active") && out.contains("hint: `cuenv use <profile>` makes one active"), "{out}");
    assert!(out.contains("this shell follows <home>/active (`cuenv env --setup`), and no profile is active"), "{out}");
    lab.ok(&["use", "torch2"]);
    let out = run_active();
    assert!(out.contains("active profile (<home>/active, through `cuenv env --setup`): torch2: fail"), "{out}");
    assert!(out.contains("problem: profile `torch2` is active, but in this environment: shadowed"), "{out}");
    // A shadowed dispatcher's sub-libraries are not reported again as "mixed".
    assert!(!out.contains("mixed sub-library"), "{out}");
}

// ---------------------------------------------------------------------------------------
// Transactions
// ---------------------------------------------------------------------------------------

/// A kill between a history record and its newline (the old code wrote
/// them with two `write`s) left an unterminated last line, and the next switch glued its
/// record to it: both records were lost. The next append now ends the cut line first.
#[test]
fn a_history_line_cut_by_a_kill_loses_no_other_record() {
    let lab = Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let history = lab.ctx.home.join("history.jsonl");
    let mut text = fs::read_to_string(&history).unwrap();
    // A whole record whose newline never reached the disk.
    text.push_str(r#"{"time":"2026-11-30T00:00:00Z","op":"rollback","from":1,"to":1}"#);
    fs::write(&history, &text).unwrap();
    let f2 = lab.lab(&format!("[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\nconda-env = '{}'\n", lab.env_b.display()));
    lab.ok(&["apply", "--no-check", f2.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_str(&lab.ok(&["generations", "--json"])).unwrap();
    let ops: Vec<(&str, u64)> = v["history"].as_array().unwrap().iter().map(|h| (h["op"].as_str().unwrap(), h["to"].as_u64().unwrap())).collect();
    assert_eq!(ops, [("apply", 1), ("rollback", 1), ("apply", 2)], "{}", fs::read_to_string(&history).unwrap());
    assert!(fs::read_to_string(&history).unwrap().ends_with("}\n"));
}

/// A relative `--home` / `CUENV_HOME` made relative links that all
/// dangled while `apply` said it succeeded. The home is made absolute once, at start.
#[test]
fn a_relative_home_makes_working_absolute_links() {
    let lab = Lab::new();
    let file = lab.three();
    let parent = lab.ctx.home.parent().unwrap();
    for (how, n) in [("--home", 1u64), ("CUENV_HOME", 2)] {
        let mut c = assert_cmd::Command::new(env!("CARGO_BIN_EXE_cuenv"));
        c.current_dir(&lab.ctx.work).env_remove("CUENV_HOME").arg("--quiet");
        if how == "--home" {
            c.args(["--home", "../home"]);
        } else {
            c.env("CUENV_HOME", "../home");
        }
        let f = if n == 1 { file.clone() } else { lab.lab("[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n") };
        let out = c.args(["apply", "--no-check", f.to_str().unwrap()]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{how}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(parent.join("home"), lab.ctx.home);
        let target = fs::read_link(lab.profiles()).unwrap();
        assert!(target.is_absolute(), "{how}: {}", target.display());
        assert_eq!(lab.current(), n);
        let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
        assert_eq!(s["healthy"], true, "{how}: {s}");
    }
}

/// Shims are written for the platform's shells by default (`.sh`, `.fish`, `.csh` on
/// Linux; before, `.bat` and `.ps1` too, and no `.csh`: a tcsh user got no profile), Linux shims
/// leave PATH alone (conda cannot take an entry back out on a switch), `[settings] shells`
/// chooses, and an unknown shell is refused at its line.
#[cfg(unix)]
#[test]
fn shims_are_written_for_the_chosen_shells() {
    let lab = Lab::new();
    let file = |extra: &str| lab.lab(&format!("{extra}[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\nconda-env = '{}'\n", lab.env_b.display()));
    let shim = |d: &str, ext: &str| lab.env_b.join("etc/conda").join(d).join(format!("cuenv-tf.{ext}"));
    lab.ok(&["apply", "--no-check", file("").to_str().unwrap()]);
    for ext in ["sh", "fish", "csh"] {
        assert!(shim("activate.d", ext).exists() && shim("deactivate.d", ext).exists(), "{ext}");
    }
    assert!(!shim("activate.d", "bat").exists() && !shim("activate.d", "ps1").exists());
    let sh = fs::read_to_string(shim("activate.d", "sh")).unwrap();
    assert!(sh.contains("CUENV_SHIM_ADDED_LD_LIBRARY_PATH='") && !sh.contains("CUENV_SHIM_ADDED_PATH='"), "{sh}");

    lab.ok(&["apply", "--no-check", file("[settings]\nshells = [\"bash\"]\n").to_str().unwrap()]);
    assert!(shim("activate.d", "sh").exists());
    assert!(!shim("activate.d", "fish").exists() && !shim("activate.d", "csh").exists(), "the others were removed");

    let bad = file("[settings]\nshells = [\"posix\", \"ksh93\"]\n");
    let (code, _, err) = lab.run(&["apply", "--no-check", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("lab.toml:7:20:") && err.contains("`\"ksh93\"` is not a shell cuenv writes shims for") && err.contains("shells = ["), "{err}");
    assert_eq!(lab.current(), 2);
}

/// A conda env named through a symlink is the same env. The old code
/// judged the "new" shims (through the link) identical and skipped them, then deleted the
/// "old" ones, which were the same files: every shim of the env was gone.
#[cfg(unix)]
#[test]
fn an_env_named_through_a_symlink_keeps_its_shims() {
    let lab = Lab::new();
    let tf = |env: &Path| lab.lab(&format!("[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\nconda-env = '{}'\n", env.display()));
    lab.ok(&["apply", "--no-check", tf(&lab.env_b).to_str().unwrap()]);
    let link = lab.ctx.path("tf-link");
    std::os::unix::fs::symlink(&lab.env_b, &link).unwrap();
    lab.ok(&["apply", "--no-check", tf(&link).to_str().unwrap()]);
    assert_eq!(lab.current(), 2);
    for d in ["activate.d", "deactivate.d"] {
        let shim = lab.env_b.join("etc/conda").join(d).join("cuenv-tf.sh");
        assert!(shim.exists(), "{} was deleted", shim.display());
    }
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{s}");
    // And back: the same files again, spelled the first way.
    lab.ok(&["rollback"]);
    assert!(lab.env_b.join("etc/conda/activate.d/cuenv-tf.sh").exists());
}

/// `gc` deleted a generation in steps, so a kill left a manifest without
/// some view links, and `rollback --to N` then made that half-deleted generation current.
/// A generation now disappears in one rename, nothing switches to an incomplete one, and
/// the next writer removes what an interrupted deletion left.
#[test]
fn a_half_deleted_generation_is_never_switched_to() {
    let lab = Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let f2 = lab.lab("[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n");
    lab.ok(&["apply", "--no-check", f2.to_str().unwrap()]);
    // What a kill in the middle of the old, step-by-step deletion left: generation 1's
    // manifest with some of its view links gone.
    let gen1 = lab.ctx.home.join("generations/1");
    let cut = gen1.join("views/torch2/cudnn-lib");
    cuenv::link::remove(&cut).unwrap();
    let (code, out, err) = lab.run(&["rollback", "--to", "1"]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(err.contains("generation 1 is incomplete") && err.contains("cudnn-lib") && err.contains("hint: `cuenv gc`"), "{err}");
    assert_eq!(lab.current(), 2, "the current generation stays");
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{s}");
    // A deletion interrupted after its rename leaves only a trash folder, removed by the next writer.
    let trash = lab.ctx.home.join("generations/.trash-1");
    fs::rename(&gen1, &trash).unwrap();
    let v: serde_json::Value = serde_json::from_str(&lab.ok(&["generations", "--json"])).unwrap();
    assert_eq!(v["generations"].as_array().unwrap().len(), 1, "a trash folder is no generation: {v}");
    lab.ok(&["use", "legacy"]);
    assert!(!trash.exists(), "the next writer removes the leftover");
}

/// `gc --dry-run` lists what would go, with sizes, and changes nothing.
#[test]
fn gc_dry_run_lists_what_would_go_with_sizes() {
    let lab = Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    for p in ["legacy", "tf"] {
        let f = lab.lab(&format!(
            "[profiles.{p}]\ncuda = \"{}\"\ncudnn = \"{}\"\n",
            if p == "tf" { "11.8" } else { "12" },
            if p == "tf" { "8.8" } else { "8.9.4" }
        ));
        lab.ok(&["apply", "--no-check", f.to_str().unwrap()]);
    }
    let dry = lab.ok(&["gc", "--keep", "1", "--dry-run"]);
    let line = dry.lines().find(|l| l.starts_with("would delete generation 1 (")).unwrap_or_else(|| panic!("{dry}"));
    assert!(line.ends_with("B)"), "{line}");
    assert!(dry.lines().last().unwrap().starts_with("would free "), "{dry}");
    assert!(lab.ctx.home.join("generations/1").exists(), "a dry run deletes nothing");
    let done = lab.ok(&["gc", "--keep", "1"]);
    assert!(done.contains("deleted generation 1 (") && done.lines().last().unwrap().starts_with("freed "), "{done}");
    assert!(!lab.ctx.home.join("generations/1").exists());
}

/// Applying another profile file than the one that built the current
/// generation silently removed that lab's profiles and conda shims. It now names what
/// would go and needs `--replace`.
#[test]
fn another_lab_file_needs_replace_to_remove_profiles() {
    let lab = Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let other_dir = lab.ctx.path("other-lab");
    fs::create_dir_all(&other_dir).unwrap();
    let other = other_dir.join("lab.toml");
    fs::copy(lab.lab("[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n"), &other).unwrap();
    lab.three(); // lab.toml says the three profiles again
    let shim = lab.env_a.join("etc/conda/activate.d/cuenv-torch2.sh");
    // `plan` shows the removals and says that `apply` would refuse them without --replace.
    let (code, out, err) = lab.run(&["plan", other.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("- profile torch2") || out.contains("profile torch2"), "{out}");
    assert!(
        err.contains("warning: `cuenv apply` refuses this: generation 1 was built from")
            && err.contains("hint: to replace that lab with this one, run `cuenv apply --replace"),
        "{err}"
    );
    let (code, out, err) = lab.run(&["apply", "--no-check", other.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("applying it would remove profiles torch2, tf") && err.contains("hint: to replace that lab with this one, run `cuenv apply --replace"),
        "{err}"
    );
    assert_eq!(lab.current(), 1, "nothing changed");
    assert_eq!(shim.exists(), cfg!(unix));
    // The same file again (even spelled another way) is no replacement.
    let spelled = lab.ctx.work.join(".").join("lab.toml");
    lab.ok(&["apply", "--no-check", spelled.to_str().unwrap()]);
    // --replace does it.
    let out = lab.ok(&["apply", "--no-check", "--replace", other.to_str().unwrap()]);
    assert!(out.contains("generation 2 is current (1 profile)"), "{out}");
    assert!(!shim.exists());
}

/// What a kill leaves (half-written `.cuenv-tmp*` files in the home, a
/// conda env and the lab folder; `.profiles.new` / `.active.new` staging links; the
/// `.link-probe` folder of apply's link test) is removed
/// by the next writer; in folders other cuenv homes also write to, only files a minute old.
#[cfg(unix)]
#[test]
fn the_next_writer_removes_what_a_kill_left() {
    let lab = Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let old = |p: &Path| {
        fs::write(p, "half").unwrap();
        let f = fs::File::options().write(true).open(p).unwrap();
        f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(300)).unwrap();
    };
    let home_tmp = lab.ctx.home.join(".cuenv-tmpAbC123");
    fs::write(&home_tmp, "half").unwrap();
    let env_dir = lab.env_a.join("etc/conda/activate.d");
    let (env_old, env_fresh) = (env_dir.join(".cuenv-tmpOld111"), env_dir.join(".cuenv-tmpNew222"));
    old(&env_old);
    fs::write(&env_fresh, "another cuenv is writing this").unwrap();
    let lab_tmp = lab.ctx.work.join(".cuenv-tmpLck333");
    old(&lab_tmp);
    let staging = lab.ctx.home.join(".profiles.new");
    std::os::unix::fs::symlink(lab.ctx.home.join("generations/1/views"), &staging).unwrap();
    let active_staging = lab.ctx.home.join(".active.new");
    std::os::unix::fs::symlink(lab.ctx.home.join("profiles/tf"), &active_staging).unwrap();
    let gen_staging = lab.ctx.home.join("generations/.tmp-7");
    fs::create_dir_all(gen_staging.join("views")).unwrap();
    // apply's link test, killed midway.
    let probe = lab.ctx.home.join(".link-probe");
    fs::create_dir_all(probe.join("target")).unwrap();
    std::os::unix::fs::symlink(probe.join("target"), probe.join("link")).unwrap();
    // An env only an older generation names (generation 2 below drops env_b).
    let env_b_old = lab.env_b.join("etc/conda/activate.d/.cuenv-tmpOld444");
    old(&env_b_old);
    let f2 = lab.lab("[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n");
    lab.ok(&["apply", "--no-check", "--replace", f2.to_str().unwrap()]);
    lab.ok(&["use", "legacy"]);
    for gone in [&home_tmp, &env_old, &lab_tmp, &staging, &active_staging, &gen_staging, &env_b_old, &probe] {
        assert!(fs::symlink_metadata(gone).is_err(), "{} survived", gone.display());
    }
    assert!(env_fresh.exists(), "a fresh file may belong to a live cuenv of another home");
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{s}");
}

/// The other cut: a record cut inside its JSON (the kill came mid-`write`)
/// is skipped alone; the records around it survive and the next one starts its own line.
#[test]
fn a_history_record_cut_mid_json_loses_only_itself() {
    let lab = Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let history = lab.ctx.home.join("history.jsonl");
    let mut text = fs::read_to_string(&history).unwrap();
    text.push_str(r#"{"time":"2026-11-30T00:00:00Z","op":"roll"#);
    fs::write(&history, &text).unwrap();
    let f2 = lab.lab("[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n");
    lab.ok(&["apply", "--no-check", f2.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_str(&lab.ok(&["generations", "--json"])).unwrap();
    let ops: Vec<(&str, u64)> = v["history"].as_array().unwrap().iter().map(|h| (h["op"].as_str().unwrap(), h["to"].as_u64().unwrap())).collect();
    assert_eq!(ops, [("apply", 1), ("apply", 2)], "{}", fs::read_to_string(&history).unwrap());
    let written = fs::read_to_string(&history).unwrap();
    assert_eq!(written.lines().count(), 3, "the cut line stays alone: {written}");
}

/// With checks on: the check fails (the stub cuDNN exports no API), and the
/// revert to the generation that named the env by its real path must not delete the shims
/// that the link-spelled generation "owned" (the same files).
#[cfg(unix)]
#[test]
fn a_revert_through_a_symlinked_env_keeps_its_shims() {
    let lab = Lab::new();
    let tf = |env: &Path| lab.lab(&format!("[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\nconda-env = '{}'\n", env.display()));
    lab.ok(&["apply", "--no-check", tf(&lab.env_b).to_str().unwrap()]);
    let link = lab.ctx.path("tf-link");
    std::os::unix::fs::symlink(&lab.env_b, &link).unwrap();
    let (code, out, err) = lab.run(&["apply", "--timeout", "30", tf(&link).to_str().unwrap()]);
    assert_eq!(code, 4, "the stub's check fails:\n{out}\n{err}");
    assert_eq!(lab.current(), 1, "reverted");
    for d in ["activate.d", "deactivate.d"] {
        let shim = lab.env_b.join("etc/conda").join(d).join("cuenv-tf.sh");
        assert!(shim.exists(), "{} was deleted by the revert", shim.display());
    }
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{s}");
}

/// Driver and GPU fit: under `CUENV_OVERRIDE_DRIVER_CUDA=11.4` a CUDA 12.6
/// profile is refused by `apply` before anything is written (exit 4, the home byte-identical),
/// `--force` applies it, and `check` and `doctor` say which fact rules it out. A bad override
/// value is exit 2 naming the variable.
#[test]
fn a_profile_the_driver_cannot_run_is_refused_unless_forced() {
    let lab = Lab::new();
    let file = lab.lab("[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\n");
    let f = file.to_str().unwrap();
    let before = home_digest(&lab.ctx.home);
    let run = |args: &[&str], vars: &[(&str, &str)]| {
        let mut c = lab.ctx.cmd();
        for (k, v) in vars {
            c.env(k, v);
        }
        let out = c.args(args).output().unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let old = [("CUENV_OVERRIDE_DRIVER_CUDA", "11.4")];
    let (code, out, err) = run(&["apply", "--no-check", f], &old);
    assert_eq!(code, 4, "{out}\n{err}");
    let floor = if cfg!(windows) { "527.41" } else { "525.60.13" };
    assert!(
        err.contains(&format!(
            "error: profile torch2 cannot run on this machine: the driver (CUDA version set by CUENV_OVERRIDE_DRIVER_CUDA) supports CUDA <= 11.4; this profile's runtime is 12.6: update the driver to R525 or newer (>= {floor}), or use a CUDA 11 profile"
        )),
        "{err}"
    );
    assert!(
        err.contains(
            "hint: nothing was built or switched; `cuenv apply --force --no-check` makes it current anyway (`cuenv check` then fails on the same rule)"
        ),
        "{err}"
    );
    assert_eq!(home_digest(&lab.ctx.home), before, "a refused apply writes nothing");
    assert!(!lab.ctx.path("lab.lock").exists());

    let (code, _, err) = run(&["apply", "--no-check", f], &[("CUENV_OVERRIDE_COMPUTE_CAPABILITY", "sm_61")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("CUENV_OVERRIDE_COMPUTE_CAPABILITY=\"sm_61\" is not a version like 6.1"), "{err}");

    // A GPU too new for cuDNN 9.5 (support matrix: 5.0 to 9.0).
    let (code, _, err) = run(&["apply", "--no-check", f], &[("CUENV_OVERRIDE_COMPUTE_CAPABILITY", "12.0")]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("has compute capability 12.0 (set by CUENV_OVERRIDE_COMPUTE_CAPABILITY); cuDNN 9.5.0.50 with CUDA 12.6 supports 5.0 to 9.0"), "{err}");

    let (code, out, err) = run(&["apply", "--no-check", "--force", f], &old);
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, out, err) = run(&["check", "torch2"], &old);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(out.contains("check torch2: fail"), "{out}");
    assert!(
        out.contains("    driver too old: the driver (CUDA version set by CUENV_OVERRIDE_DRIVER_CUDA) supports CUDA <= 11.4; this profile's runtime is 12.6"),
        "{out}"
    );
    if cfg!(target_os = "linux") {
        let view = lab.profiles().join("torch2");
        let ld = std::env::join_paths([view.join("cudnn-lib"), view.join("cuda-lib")]).unwrap();
        let (code, out, _) = run(&["doctor", "--major", "9"], &[old[0], ("CUENV_PROFILE", "torch2"), ("LD_LIBRARY_PATH", ld.to_str().unwrap())]);
        assert_eq!(code, 4, "{out}");
        assert!(out.contains("problem: profile `torch2` is active, but in this environment: driver too old: the driver (CUDA version set by CUENV_OVERRIDE_DRIVER_CUDA) supports CUDA <= 11.4"), "{out}");
    }
}

/// The refusal's hint says what `--force` does with the check on, and it does that: with no
/// generation current, a forced apply builds and switches, the check fails on the driver rule,
/// the apply is undone and no generation is current; `--force --no-check` keeps it.
#[test]
fn the_refusals_force_hint_says_what_force_does() {
    let lab = Lab::new();
    let file = lab.lab("[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\n");
    let f = file.to_str().unwrap();
    let run = |args: &[&str]| {
        let out = lab.ctx.cmd().env("CUENV_OVERRIDE_DRIVER_CUDA", "11.4").args(args).output().unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, out, err) = run(&["apply", f]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(
        err.contains("hint: nothing was built or switched; `cuenv apply --force` builds and switches to it anyway, but its check fails on the same rule, so the apply is undone and no generation is current; `--force --no-check` keeps it without a check"),
        "{err}"
    );
    assert!(!err.contains("applies it anyway"), "{err}");
    let (code, out, err) = run(&["apply", "--force", f]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(out.contains("driver too old"), "{out}\n{err}");
    assert!(err.contains("generation 1 was built but no generation is current"), "{out}\n{err}");
    let (code, out, err) = run(&["apply", "--force", "--no-check", f]);
    assert_eq!(code, 0, "{out}\n{err}");
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["generations", "--json"])).unwrap();
    let n = s["generations"].as_array().and_then(|g| g.iter().find(|g| g["current"] == true)).map(|g| g["number"].clone()).unwrap_or_else(|| panic!("{s}"));
    // A generation is current now: the hint names it.
    let (code, out, err) = run(&["apply", f]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(err.contains(&format!("so the apply is undone and generation {n} stays current;")), "{err}");
}

/// Records nothing: what `apply::run` reports is not under test here.
struct Quiet;

impl cuenv::apply::Reporter for Quiet {
    fn fetched(&mut self, _: &[String]) {}
    fn warning(&mut self, _: &str) {}
    fn built(&mut self, _: &[cuenv::change::Change]) {}
    fn checked(&mut self, _: &cuenv::generation::profile_check::ProfileCheck) {}
}

/// One apply reads `lab.lock` once, at its start, and writes it at most once; a second apply
/// with nothing to change reads it once and does not write it. The counts are those of
/// `lockfile::io_counts` on this thread, where `apply::run` reads and writes the lock.
#[test]
fn one_apply_reads_lab_lock_once_and_writes_it_at_most_once() {
    use cuenv::profile::lockfile::io_counts;
    let lab = Lab::new();
    let file = lab.three();
    let layout = cuenv::home::layout::Layout::new(&lab.ctx.home);
    let writer = cuenv::home::writer_lock::WriterLock::acquire(&layout, &mut |_| {}).unwrap();
    let opts = cuenv::apply::Options { locked: false, check: None, require_gpu: false, offline: true, replace: false, machine: None, judge_frameworks: true };
    let apply = || cuenv::apply::run(&layout, &writer, &file, &opts, &cuenv::sys::progress::NoProgress, &mut Quiet).unwrap();
    let delta = |before: (usize, usize)| {
        let after = io_counts();
        (after.0 - before.0, after.1 - before.1)
    };
    let before = io_counts();
    assert!(matches!(apply(), cuenv::apply::Outcome::Applied { generation: 1, lock_changed: true, .. }));
    assert_eq!(delta(before), (1, 1), "(reads, writes) of lab.lock by the first apply");
    let before = io_counts();
    assert!(matches!(apply(), cuenv::apply::Outcome::Unchanged { generation: 1, .. }));
    assert_eq!(delta(before), (1, 0), "(reads, writes) of lab.lock by an apply with nothing to change");
    assert!(lab.ctx.path("lab.lock").is_file());
}
