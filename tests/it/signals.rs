//! Issue 29's half-states: every terminating signal during `apply`'s check is undone before
//! cuenv exits (not only SIGINT and SIGTERM, whose test is in `apply_tx.rs`), and a switch
//! whose last step fails (the rename that switches `profiles`, hook
//! `CUENV_TEST_FAIL_AT=set-current`) puts the envs' shims back with it. The Windows console
//! handler is unit-tested in `src/apply/interrupt.rs` (by calling it; `scripts/test-windows.sh
//! --lib -- interrupt`).

use std::fs;

use crate::apply_tx::second;
use crate::support::lab::{Lab, tree_digest};

/// What the conda envs hold (every shim, activate and deactivate), as file digests.
fn envs(lab: &Lab) -> Vec<(String, String)> {
    [&lab.env_a, &lab.env_b].into_iter().flat_map(|e| tree_digest(e)).collect()
}

/// `rollback` whose switch of `profiles` (or of the pointer file) fails: exit 1 naming the
/// failure, and nothing half-switched: generation 2 stays current with its own shims in the
/// envs (generation 1's torch2 shim, written before the switch, is gone again), no journal,
/// `status` healthy (exit 0). A rollback afterwards goes through. Fails before issue 29:
/// the envs held generation 1's shims, the journal stayed and `status` said exit 3.
#[test]
fn a_rollback_whose_switch_fails_leaves_the_envs_as_they_were() {
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    lab.ok(&["apply", "--no-check", lab.lab(&second(&lab, true)).to_str().unwrap()]);
    let torch2 = lab.env_a.join(format!("etc/conda/activate.d/cuenv-torch2.{}", crate::support::lab::SHIM_EXT));
    assert!(!torch2.exists(), "generation 2 has no torch2 shim");
    let before = envs(&lab);
    let out = lab.ctx.cmd().arg("rollback").env("CUENV_TEST_FAIL_AT", "set-current").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("failure injected at set-current") && err.contains("hint:"), "{err}");
    assert_eq!(lab.current(), 2, "{err}");
    assert_eq!(envs(&lab), before, "the envs do not hold generation 2's shims after the failed rollback");
    assert!(!lab.ctx.home.join("journal.toml").exists(), "the undone switch left its journal");
    let (code, status, serr) = lab.run(&["status", "--json"]);
    assert_eq!(code, 0, "status after the failed rollback:\n{status}\n{serr}");
    let s: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(s["healthy"], true, "{s}");
    assert_eq!(s["interrupted_switch"], false, "{s}");
    // The failed rollback changed nothing: the next one goes to generation 1, with its shims.
    lab.ok(&["rollback"]);
    assert_eq!(lab.current(), 1);
    assert!(torch2.exists(), "generation 1's torch2 shim");
    lab.ok(&["status"]);
}

/// The same step failing inside `apply`'s transaction (switching to the new generation) is
/// undone with the apply: generation 1 current, its shims, its lock, `status` healthy.
#[test]
fn an_apply_whose_switch_fails_is_undone_with_its_shims() {
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    let lock_before = fs::read_to_string(lab.ctx.path("lab.lock")).unwrap();
    let before = envs(&lab);
    let f2 = lab.lab(&second(&lab, true));
    let out = lab.ctx.cmd().args(["apply", "--timeout", "30", f2.to_str().unwrap()]).env("CUENV_TEST_FAIL_AT", "set-current").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("failure injected at set-current"), "{err}");
    assert_eq!(envs(&lab), before, "{err}");
    crate::apply_tx::assert_old_generation_is_back(&lab, "set-current", &lock_before, &f2);
}

/// SIGHUP (a dropped ssh session), SIGQUIT (Ctrl+\) and the other signals whose default
/// action ends the process (`interrupt::SIGNALS`), sent while the check runs (a conda activation script that
/// sleeps): cuenv switches generation 1 back before it exits, and ends by that signal
/// (SIGQUIT without a core dump). Fails before issue 29: SIGHUP and SIGQUIT killed cuenv
/// with generation 2, unchecked, current.
#[cfg(unix)]
#[test]
fn every_terminating_signal_during_the_check_reverts_before_exiting() {
    use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
    // SIGINT and SIGTERM: `apply_tx::a_signal_during_the_check_reverts_before_exiting`.
    let signals: Vec<i32> = cuenv::apply::interrupt::SIGNALS.iter().map(|(s, _)| *s).filter(|s| ![libc::SIGINT, libc::SIGTERM].contains(s)).collect();
    assert!(signals.contains(&libc::SIGHUP) && signals.contains(&libc::SIGQUIT), "{signals:?}");
    for sig in signals {
        let lab = Lab::new();
        lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
        let lock_before = fs::read_to_string(lab.ctx.path("lab.lock")).unwrap();
        // tf keeps its env: its activation (run by the check) sleeps.
        let slow = lab.env_b.join("etc/conda/activate.d/00-slow.sh");
        fs::write(&slow, "sleep 20\n").unwrap();
        let f2 = lab.lab(&second(&lab, false));
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_cuenv"));
        // Core files allowed (and written, were there one, into the lab): cuenv itself
        // must not dump one after its undo.
        // SAFETY: setrlimit is async-signal-safe; it only raises this child's soft limit.
        unsafe {
            cmd.pre_exec(|| {
                let mut core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
                libc::getrlimit(libc::RLIMIT_CORE, &mut core);
                libc::setrlimit(libc::RLIMIT_CORE, &libc::rlimit { rlim_cur: core.rlim_max, ..core });
                Ok(())
            });
        }
        let (out, _) = crate::apply_tx::signal_during_check(&lab, cmd, &f2, sig);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.signal(), Some(sig), "signal {sig}: {:?}\n{err}", out.status);
        assert!(!out.status.core_dumped(), "signal {sig}: dumped core");
        assert!(err.contains("generation 1 stays current"), "signal {sig}: {err}");
        fs::remove_file(&slow).unwrap();
        crate::apply_tx::assert_old_generation_is_back(&lab, &format!("signal {sig}"), &lock_before, &f2);
    }
}
