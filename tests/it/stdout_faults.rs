//! Output and settings under faults: a stdout that cannot be
//! written (`/dev/full`, a closed pipe) never panics a command nor stops it half-way, and a
//! malformed `CUENV_*` setting is an error (exit 2) instead of a silent default.

use std::path::Path;
#[cfg(unix)]
use std::process::Stdio;
use std::process::{Command, Output};

use crate::support::lab::Lab;

/// The cuenv binary on `lab`'s home, like `TestContext::cmd` but a std `Command`, so that
/// stdout can be any `Stdio`.
fn cuenv(lab: &Lab, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_remove("CUENV_HOME").arg("--home").arg(&lab.ctx.home).arg("--quiet").args(args);
    c
}

/// The current generation, if `<home>/profiles` points at one.
fn current(lab: &Lab) -> Option<u64> {
    let home = &lab.ctx.home;
    (std::fs::symlink_metadata(home.join("profiles")).is_ok() || home.join("current").is_file()).then(|| lab.current())
}

/// Asserts that `out` is not a panic: no exit 101, no "panicked" on stderr.
#[cfg(unix)]
fn assert_no_panic(args: &[&str], out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(101), "cuenv {args:?} panicked:\n{err}");
    assert!(!err.contains("panicked"), "cuenv {args:?} panicked:\n{err}");
}

/// Runs `cuenv args` with stdout on `/dev/full` (every write fails with ENOSPC).
#[cfg(target_os = "linux")]
fn to_dev_full(lab: &Lab, args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = cuenv(lab, args).stdout(Stdio::from(full)).stderr(Stdio::piped()).output().unwrap();
    assert_no_panic(args, &out);
    out
}

/// Asserts the one report of a failed stdout: `error: cannot write to stdout`, its cause,
/// a hint, exit 1.
#[cfg(target_os = "linux")]
fn assert_cannot_write(args: &[&str], out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "cuenv {args:?}:\n{err}");
    assert!(err.starts_with("error: cannot write to stdout\n  caused by: No space left on device"), "cuenv {args:?}:\n{err}");
    assert!(err.contains("\nhint: "), "cuenv {args:?}:\n{err}");
    assert_eq!(err.matches("error:").count(), 1, "one report, not one per line:\n{err}");
}

/// `status`, `store list`, `generations` and `apply` with stdout on a full device: no
/// panic, the apply's generation becomes current, then one error with a hint and exit 1.
#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_is_an_error_after_the_work_is_done() {
    let lab = Lab::new();
    let file = lab.three();
    let f = file.to_str().unwrap();
    let args = ["apply", "--no-check", f];
    let out = to_dev_full(&lab, &args);
    assert_eq!(current(&lab), Some(1), "apply finished its switch: {}", String::from_utf8_lossy(&out.stderr));
    assert_cannot_write(&args, &out);
    assert!(lab.ctx.path("lab.lock").exists(), "the lock was written");
    for args in [&["status"][..], &["store", "list"], &["generations"], &["status", "--json"]] {
        let out = to_dev_full(&lab, args);
        assert_cannot_write(args, &out);
    }
    // The state is whole: status on a working stdout is clean.
    let (code, out, err) = lab.run(&["status"]);
    assert_eq!(code, 0, "{out}\n{err}");
}

/// `cuenv apply lab.toml | true`: the reader is gone before cuenv writes. cuenv does not
/// die of SIGPIPE between building and switching; it finishes, then exits 141 quietly.
#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_quietly_after_the_switch() {
    let lab = Lab::new();
    let file = lab.three();
    let args = ["apply", "--no-check", file.to_str().unwrap()];
    // A pipe whose read end is closed before the child starts: its first write fails (EPIPE),
    // whatever the timing.
    let closed_pipe = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        Stdio::from(writer)
    };
    let out = cuenv(&lab, &args).stdout(closed_pipe()).stderr(Stdio::piped()).output().unwrap();
    assert_no_panic(&args, &out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "an exit code, not death by a signal ({:?}):\n{err}", out.status);
    assert_eq!(err, "", "a closed pipe is not reported");
    assert_eq!(current(&lab), Some(1), "the new generation is current");
    let (code, out, err) = lab.run(&["status"]);
    assert_eq!(code, 0, "{out}\n{err}");
    // A read-only command on a closed pipe ends the same way.
    let out = cuenv(&lab, &["status"]).stdout(closed_pipe()).stderr(Stdio::piped()).output().unwrap();
    assert_eq!(out.status.code(), Some(141), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Asserts that `out` refused `var=value`: exit 2, both named, a hint.
fn assert_bad_setting(var: &str, value: &str, out: &Output) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{var}={value}:\n{err}");
    assert!(err.starts_with("error: ") && err.contains(var) && err.contains(&format!("`{value}`")), "{var}={value}:\n{err}");
    assert!(err.contains("\nhint: "), "{var}={value}:\n{err}");
}

/// A malformed `CUENV_LOCK_TIMEOUT`, `CUENV_HTTP_RETRIES`, `CUENV_HTTP_TIMEOUT` or
/// `CUENV_OFFLINE` is an error naming the variable and its value (exit 2) before anything
/// changes, not a silent default.
#[test]
fn a_malformed_setting_is_an_error() {
    let lab = Lab::new();
    let file = lab.three();
    let f = file.to_str().unwrap();
    let cases = [
        ("CUENV_LOCK_TIMEOUT", "abc"),
        ("CUENV_LOCK_TIMEOUT", "-1"),
        ("CUENV_LOCK_TIMEOUT", "1.5"),
        ("CUENV_HTTP_RETRIES", "abc"),
        ("CUENV_HTTP_RETRIES", "-2"),
        ("CUENV_HTTP_RETRIES", "11"),
        ("CUENV_HTTP_TIMEOUT", "0"),
        ("CUENV_HTTP_TIMEOUT", "2.5"),
        ("CUENV_OFFLINE", "maybe"),
    ];
    for (var, value) in cases {
        for args in [&["apply", "--no-check", f][..], &["use", "--none"], &["store", "list"]] {
            let out = cuenv(&lab, args).env(var, value).output().unwrap();
            assert_bad_setting(var, value, &out);
        }
        assert_eq!(current(&lab), None, "{var}={value}: nothing was applied");
    }
    // Well-formed values (and empty ones, which mean unset) work.
    let ok = [("CUENV_LOCK_TIMEOUT", "5"), ("CUENV_HTTP_RETRIES", "0"), ("CUENV_HTTP_TIMEOUT", ""), ("CUENV_OFFLINE", "yes")];
    let out = cuenv(&lab, &["apply", "--no-check", f]).envs(ok).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(current(&lab), Some(1));
    assert!(Path::new(&lab.ctx.home).join("cuenv.lock").exists());
}
