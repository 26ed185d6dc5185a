//! The apply transaction: switch -> check -> verdict -> lock ->
//! (revert) is one journaled transaction. A kill anywhere before the verdict, a signal
//! during the check, or a lock that cannot be written leaves the previous generation
//! current, with its shims and its lock.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::lab::Lab;

/// Generation 2's profile file: torch2 loses its conda env (so its shim goes away).
pub(crate) fn second(lab: &Lab, check_none: bool) -> String {
    let check = if check_none { "check = \"none\"\n" } else { "" };
    format!(
        "[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\n{check}\n[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\nconda-env = '{}'\n{check}",
        lab.env_b.display()
    )
}

/// `cuenv gc --dry-run` without `--quiet` (so the recovery's note shows): exit code, stderr.
fn recover_loudly(lab: &Lab) -> (i32, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cuenv"))
        .env_remove("CUENV_HOME")
        .arg("--home")
        .arg(&lab.ctx.home)
        .args(["gc", "--dry-run"])
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn torch_shim(lab: &Lab) -> PathBuf {
    lab.env_a.join(format!("etc/conda/activate.d/cuenv-torch2.{}", crate::support::lab::SHIM_EXT))
}

/// What a kill or a signal must leave: generation 1 current, with its shims, its lock, no
/// journal, a healthy status, and an apply of the second file that rebuilds.
pub(crate) fn assert_old_generation_is_back(lab: &Lab, what: &str, lock_before: &str, f2: &Path) {
    assert!(!lab.ctx.home.join("journal.toml").exists(), "{what}: journal not cleared");
    assert_eq!(lab.current(), 1, "{what}: the unchecked generation stayed current");
    assert!(torch_shim(lab).exists(), "{what}: generation 1's shim is missing");
    assert!(lab.env_b.join(format!("etc/conda/activate.d/cuenv-tf.{}", crate::support::lab::SHIM_EXT)).exists(), "{what}: generation 1's tf shim is missing");
    assert_eq!(fs::read_to_string(lab.ctx.path("lab.lock")).unwrap(), lock_before, "{what}: lab.lock not restored");
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{what}: {s}");
    let out = lab.ok(&["apply", "--no-check", f2.to_str().unwrap()]);
    assert!(!out.contains("no changes"), "{what}: a second apply said {out}");
    assert!(lab.current() > 2, "{what}: {out}");
}

/// Aborts `apply` (checks on) at each step of its transaction; the next writer undoes the
/// apply, which never reached its verdict.
#[test]
fn a_kill_before_the_verdict_undoes_the_apply() {
    // (step, the second file's profiles skip the check, i.e. the verdict passes)
    let steps = [
        ("journal", false),
        ("lock", true),
        ("shims", false),
        ("commit", false),
        ("history", false),
        ("check-start", false),
        ("check-saved", false),
        ("revert-shims", false),
        ("revert-commit", false),
        ("revert-history", false),
        ("check-start", true),
        ("check-saved", true),
        ("verdict", true),
    ];
    for (step, pass) in steps {
        let what = format!("{step} (verdict {})", if pass { "pass" } else { "fail" });
        let lab = Lab::new();
        let file = lab.three();
        lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
        let lock_before = fs::read_to_string(lab.ctx.path("lab.lock")).unwrap();
        let f2 = lab.lab(&second(&lab, pass));
        let out = lab.ctx.cmd().args(["apply", "--timeout", "30", f2.to_str().unwrap()]).env("CUENV_TEST_ABORT_AT", step).output().unwrap();
        assert!(!out.status.success(), "{what}: the abort hook did not fire: {}", String::from_utf8_lossy(&out.stderr));
        assert!(lab.ctx.home.join("journal.toml").exists(), "{what}: no journal left by the crash");
        let (code, err) = recover_loudly(&lab);
        assert_eq!(code, 0, "{what}: {err}");
        assert!(err.contains("undid an interrupted apply to generation 2"), "{what}: {err}");
        assert_old_generation_is_back(&lab, &what, &lock_before, &f2);
    }
}

/// An error after the switch (saving the check results, writing lab.lock) is undone before
/// `apply` returns: the previous generation is current, with its shims and its lock.
#[test]
fn an_error_inside_the_transaction_is_undone_before_returning() {
    for (step, pass) in [("save-checks", true), ("save-checks", false), ("write-lock", true)] {
        let what = format!("{step} (verdict {})", if pass { "pass" } else { "fail" });
        let lab = Lab::new();
        let file = lab.three();
        lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
        let lock_before = fs::read_to_string(lab.ctx.path("lab.lock")).unwrap();
        let f2 = lab.lab(&second(&lab, pass));
        let out = lab.ctx.cmd().args(["apply", "--timeout", "30", f2.to_str().unwrap()]).env("CUENV_TEST_FAIL_AT", step).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        assert!(err.contains("failure injected") && err.contains("hint:"), "{what}: {err}");
        assert_old_generation_is_back(&lab, &what, &lock_before, &f2);
    }
}

/// The first generation fails its check and is killed while reverting: the next writer
/// ends with no generation current and no shims.
#[test]
fn a_first_generation_killed_mid_revert_is_cleared() {
    // Every kill point of a failing transaction (10), from the journal to the last step of
    // the revert (`verdict` is on the passing path only).
    let steps = ["journal", "lock", "shims", "commit", "history", "check-start", "check-saved", "revert-shims", "revert-commit", "revert-history"];
    for step in steps {
        let lab = Lab::new();
        let file = lab.three();
        let out = lab.ctx.cmd().args(["apply", "--timeout", "30", file.to_str().unwrap()]).env("CUENV_TEST_ABORT_AT", step).output().unwrap();
        assert!(!out.status.success(), "{step}: the abort hook did not fire");
        assert!(lab.ctx.home.join("journal.toml").exists(), "{step}: no journal left by the crash");
        let (code, err) = recover_loudly(&lab);
        assert_eq!(code, 0, "{step}: {err}");
        assert!(err.contains("undid an interrupted apply to generation 1 (generation none stays current)"), "{step}: {err}");
        assert!(!lab.ctx.home.join("journal.toml").exists(), "{step}");
        assert!(fs::symlink_metadata(lab.profiles()).is_err(), "{step}: a generation is current");
        assert!(!torch_shim(&lab).exists(), "{step}: shims left");
        assert!(!lab.env_b.join(format!("etc/conda/activate.d/cuenv-tf.{}", crate::support::lab::SHIM_EXT)).exists(), "{step}: shims left");
        assert!(!lab.ctx.path("lab.lock").exists(), "{step}: a lock for no generation");
        let hist: serde_json::Value = serde_json::from_str(&lab.ok(&["generations", "--json"])).unwrap();
        let last = hist["history"].as_array().unwrap().last().cloned();
        assert!(last.as_ref().is_none_or(|h| h["to"] == 0), "{step}: {hist}");
    }
}

/// Runs `cmd` (cuenv, not yet started) as `apply f2` on `lab`'s home, waits until generation 2
/// is current (its check runs), sends `sig`, and returns the output and the time from the
/// switch to the end. Asserts it ended within 15 s.
#[cfg(unix)]
pub(crate) fn signal_during_check(lab: &Lab, mut cmd: std::process::Command, f2: &Path, sig: i32) -> (std::process::Output, std::time::Duration) {
    use std::time::{Duration, Instant};
    let child = cmd
        .current_dir(&lab.ctx.work)
        .env_remove("CUENV_HOME")
        .args(["--home", lab.ctx.home.to_str().unwrap(), "--quiet", "apply", "--timeout", "60", f2.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Generation 2 is current while its check runs.
    let t = Instant::now();
    while fs::read_link(lab.profiles()).map(|p| !p.to_string_lossy().contains("/2/")).unwrap_or(true) {
        assert!(t.elapsed() < Duration::from_secs(30), "generation 2 never became current");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: sending a signal to the child we spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
    let out = child.wait_with_output().unwrap();
    assert!(t.elapsed() < Duration::from_secs(15), "signal {sig}: cuenv did not stop at the signal ({:?})", t.elapsed());
    (out, t.elapsed())
}

/// SIGTERM and SIGINT while the check runs (a conda activation script that sleeps) revert
/// before cuenv exits, and the exit status reports the signal.
#[cfg(unix)]
#[test]
fn a_signal_during_the_check_reverts_before_exiting() {
    use std::os::unix::process::ExitStatusExt as _;
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let lab = Lab::new();
        let file = lab.three();
        lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
        let lock_before = fs::read_to_string(lab.ctx.path("lab.lock")).unwrap();
        // tf keeps its env: its activation (run by the check) sleeps.
        let slow = lab.env_b.join("etc/conda/activate.d/00-slow.sh");
        fs::write(&slow, "sleep 20\n").unwrap();
        let f2 = lab.lab(&second(&lab, false));
        let (out, _) = signal_during_check(&lab, std::process::Command::new(env!("CARGO_BIN_EXE_cuenv")), &f2, sig);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.signal() == Some(sig) || out.status.code() == Some(128 + sig), "signal {sig}: {:?}\n{err}", out.status);
        assert!(err.contains("generation 1 stays current"), "signal {sig}: {err}");
        fs::remove_file(&slow).unwrap();
        assert_old_generation_is_back(&lab, &format!("signal {sig}"), &lock_before, &f2);
    }
}

/// A read-only bind mount of `dir`, undone on drop (root only; `None` with the reason).
#[cfg(target_os = "linux")]
struct ReadOnlyMount(PathBuf);

#[cfg(target_os = "linux")]
impl ReadOnlyMount {
    fn new(dir: &Path) -> Result<ReadOnlyMount, String> {
        let run = |args: &[&str]| {
            let out = std::process::Command::new("mount").args(args).output().map_err(|e| format!("cannot run mount: {e}"))?;
            if out.status.success() { Ok(()) } else { Err(format!("mount {args:?}: {}", String::from_utf8_lossy(&out.stderr).trim())) }
        };
        let d = dir.to_str().unwrap();
        run(&["--bind", d, d])?;
        let m = ReadOnlyMount(dir.to_path_buf());
        run(&["-o", "remount,bind,ro", d, d])?;
        if fs::write(dir.join(".probe"), "x").is_ok() {
            let _ = fs::remove_file(dir.join(".probe"));
            return Err("the read-only mount still takes writes".into());
        }
        Ok(m)
    }
}

#[cfg(target_os = "linux")]
impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// A lab whose `lab.toml` lives in its own folder `labdir` (so that folder alone can be
/// made read-only), with generation 1 applied and the file changed for a generation 2.
#[cfg(unix)]
fn lab_in_own_folder() -> (Lab, PathBuf, String) {
    let lab = Lab::new();
    let text = fs::read_to_string(lab.three()).unwrap();
    let dir = lab.ctx.path("labdir");
    fs::create_dir_all(&dir).unwrap();
    let file = dir.join("lab.toml");
    fs::write(&file, &text).unwrap();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let lock = fs::read_to_string(dir.join("lab.lock")).unwrap();
    let f2 = fs::read_to_string(lab.lab(&second(&lab, false))).unwrap();
    fs::write(&file, f2).unwrap();
    (lab, file, lock)
}

#[cfg(unix)]
fn generation_count(lab: &Lab) -> usize {
    fs::read_dir(lab.ctx.home.join("generations")).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().parse::<u64>().is_ok()).count()
}

/// `lab.lock`'s folder is read-only: apply fails before building, naming the folder.
#[cfg(target_os = "linux")]
#[test]
fn an_unwritable_lock_folder_fails_before_the_switch() {
    let (lab, file, lock_before) = lab_in_own_folder();
    let dir = file.parent().unwrap().to_path_buf();
    let _mount = match ReadOnlyMount::new(&dir) {
        Ok(m) => m,
        Err(why) => {
            crate::support::skipped(format!("cannot make {} read-only: {why}", dir.display()));
            return;
        }
    };
    for args in [&["apply", "--no-check"][..], &["apply", "--timeout", "30"][..]] {
        let mut a = args.to_vec();
        a.push(file.to_str().unwrap());
        let (code, out, err) = lab.run(&a);
        assert_ne!(code, 0, "{out}\n{err}");
        assert!(err.contains(&dir.join("lab.lock").display().to_string()) || err.contains(&dir.display().to_string()), "{err}");
        assert!(err.contains("hint:"), "{err}");
        assert_eq!(lab.current(), 1, "{err}");
        assert_eq!(generation_count(&lab), 1, "built a generation that cannot be recorded: {err}");
        assert!(torch_shim(&lab).exists());
        assert_eq!(fs::read_to_string(dir.join("lab.lock")).unwrap(), lock_before);
    }
}

/// A read-only `lab.lock` that must change is an error naming it (not silently replaced),
/// before anything is built.
#[cfg(unix)]
#[test]
fn a_read_only_lock_that_must_change_is_an_error() {
    use std::os::unix::fs::PermissionsExt as _;
    let (lab, file, lock_before) = lab_in_own_folder();
    let lock = file.parent().unwrap().join("lab.lock");
    fs::set_permissions(&lock, fs::Permissions::from_mode(0o444)).unwrap();
    let (code, out, err) = lab.run(&["apply", "--no-check", file.to_str().unwrap()]);
    assert_ne!(code, 0, "{out}\n{err}");
    assert!(err.contains(&lock.display().to_string()) && err.contains("read-only"), "{err}");
    assert!(err.contains("hint:"), "{err}");
    assert_eq!(lab.current(), 1);
    assert_eq!(generation_count(&lab), 1, "{err}");
    assert_eq!(fs::read_to_string(&lock).unwrap(), lock_before);
    assert_eq!(fs::metadata(&lock).unwrap().permissions().mode() & 0o777, 0o444, "lab.lock was replaced");
    // Once writable again, apply goes ahead.
    fs::set_permissions(&lock, fs::Permissions::from_mode(0o644)).unwrap();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    assert_eq!(lab.current(), 2);
}

/// A link that fails late, in the build step, after other links of the same view were made,
/// for a real cause and without privileges: a home whose path is so long that the view link
/// `<home>/generations/.tmp-1/views/<name>/cudnn-lib` passes Linux's `PATH_MAX` (4096 bytes
/// with the NUL) while `views/<name>/cuda` and `views/<name>/cudnn` still fit: `symlink(2)`
/// fails with `ENAMETOOLONG` at the third link. Nothing is half-changed: no generation (nor
/// staging folder, nor an empty `generations/`), the home byte-identical, no lab.lock, exit 1
/// naming the link. (Only the fixture's setup spells the home through a short symlink, since
/// the store's own files lie deeper than that view link; `apply` gets the long spelling.)
#[cfg(target_os = "linux")]
#[test]
fn a_link_failing_late_in_the_build_leaves_nothing_behind() {
    const PATH_MAX: usize = 4096;
    let name = "p".repeat(cuenv::profile::MAX_NAME_LEN);
    // `<home>` + `/generations/.tmp-1/views/` + name: the view folder, 10 bytes short of PATH_MAX,
    // so that `/cuda` (5) and `/cudnn` (6) fit and `/cudnn-lib` (10) does not.
    let view_len = PATH_MAX - 10;
    let home_len = view_len - "/generations/.tmp-1/views/".len() - name.len();
    let mut ctx = crate::support::TestContext::new();
    let root = ctx.work.parent().unwrap().to_path_buf();
    let mut deep = root.join("d");
    while deep.as_os_str().len() < home_len {
        let left = home_len - deep.as_os_str().len() - 1;
        deep.push("h".repeat(if left > 200 { 200.min(left - 2) } else { left }));
    }
    assert_eq!(deep.as_os_str().len(), home_len);
    fs::create_dir_all(&deep).unwrap();
    let short = root.join("h");
    std::os::unix::fs::symlink(&deep, &short).unwrap();
    ctx.home = short.clone();
    let mut lab = Lab::in_context(ctx);
    let file = lab.lab(&format!("[profiles.{name}]\ncuda = \"12\"\ncudnn = \"9.5\"\n"));
    let before = crate::support::lab::home_digest(&short);
    let work_before: Vec<_> = fs::read_dir(&lab.ctx.work).unwrap().flatten().map(|e| e.file_name()).collect();
    lab.ctx.home = deep.clone();
    let (code, out, err) = lab.run(&["apply", "--no-check", file.to_str().unwrap()]);
    lab.ctx.home = short.clone();
    eprintln!("{err}"); // shown with --nocapture, to read the message
    let view = deep.join("generations/.tmp-1/views").join(&name);
    assert_eq!(view.as_os_str().len(), view_len);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.starts_with(&format!("error: cannot create a symlink at {}: File name too long (os error 36)", view.join("cudnn-lib").display())), "{err}");
    assert!(
        err.contains(
            "hint: the path named above is longer than this system allows (a name over 255 bytes, or the whole path over its limit): move the cuenv home"
        ),
        "{err}"
    );
    let after = crate::support::lab::home_digest(&short);
    let changed: Vec<_> = after.iter().filter(|e| !before.contains(e)).chain(before.iter().filter(|e| !after.contains(e))).map(|(p, _)| p).collect();
    assert!(changed.is_empty(), "the home is byte-identical (no generation, no staging, no empty generations/), but these changed: {changed:?}");
    let work_after: Vec<_> = fs::read_dir(&lab.ctx.work).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(work_after, work_before, "no lab.lock, no leftovers beside the profile file");
}
