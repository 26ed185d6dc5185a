//! Running the probe child: spawn `cuenv __probe` with exactly the environment given,
//! capture its output (bounded), kill it at the deadline, and read its JSON report.
//!
//! Invariants: nothing of this process's environment reaches the child; stdout and stderr are
//! read on their own threads so a chatty child never blocks; a hung child is killed, never
//! waited on past the deadline. What the parent saw is a [`ProbeOutcome`]; judging it is
//! [`super::classify()`]'s job.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::probe::{self, Report, STEP_PREFIX};

/// How the probe process ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProbeEnd {
    /// It exited with this code.
    Exited { code: i32 },
    /// A signal ended it (Unix).
    Signaled { signal: i32, name: String },
    /// It ran past the deadline and was killed.
    TimedOut { after_ms: u64 },
    /// It could not be started.
    SpawnFailed { error: String },
}

/// Everything the parent saw of one probe run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProbeOutcome {
    /// The cuDNN major probed.
    pub major: u64,
    /// How the process ended.
    pub end: ProbeEnd,
    /// The report, when stdout held one.
    pub report: Option<Report>,
    /// Why stdout held no usable report (when it did not).
    pub report_error: Option<String>,
    /// The last native step the child announced before it ended.
    pub last_step: Option<String>,
    /// The end of the child's stderr, step lines removed.
    pub stderr_tail: String,
    /// Wall time of the child, spawn to exit, in milliseconds.
    pub elapsed_ms: u64,
    /// The variable the loader searches (`LD_LIBRARY_PATH`, or `PATH` on Windows).
    pub search_var: String,
    /// Its folders, in order, as given to the child.
    pub search_path: Vec<PathBuf>,
    /// `LD_PRELOAD` as given to the child (Unix).
    pub preload: Vec<PathBuf>,
}

// ---------------------------------------------------------------------------------------
// Running the child
// ---------------------------------------------------------------------------------------

/// Keep at most this much of the child's stdout (the report is a few KB).
const STDOUT_CAP: usize = 16 << 20;
/// Keep at most the last this-many bytes of the child's stderr.
const STDERR_CAP: usize = 256 << 10;
/// The stderr shown in reasons: at most this many lines from the end.
const TAIL_LINES: usize = 20;

/// Runs `cuenv __probe --major <major> [--conv] --json` with exactly `env` (the complete
/// environment: nothing of this process's environment is inherited), captures its output,
/// kills it at `timeout`, and parses its report.
pub fn run_probe(cuenv_exe: &Path, env: &[(OsString, OsString)], major: u64, conv: bool, timeout: Duration) -> ProbeOutcome {
    run_probe_with(cuenv_exe, env, major, if conv { &["--conv"] } else { &[] }, timeout)
}

/// Runs `cuenv __probe --driver-only --json` with exactly `env`: the driver's CUDA version,
/// its release (NVML) and the GPUs, without loading cuDNN (what `apply`'s GPU-fit gate reads).
pub fn run_driver_probe(cuenv_exe: &Path, env: &[(OsString, OsString)], timeout: Duration) -> ProbeOutcome {
    run_probe_with(cuenv_exe, env, 0, &["--driver-only"], timeout)
}

fn run_probe_with(cuenv_exe: &Path, env: &[(OsString, OsString)], major: u64, extra: &[&str], timeout: Duration) -> ProbeOutcome {
    let (search_var, search_path, preload) = loader_env(env);
    let mut outcome = ProbeOutcome {
        major,
        end: ProbeEnd::SpawnFailed { error: String::new() },
        report: None,
        report_error: None,
        last_step: None,
        stderr_tail: String::new(),
        elapsed_ms: 0,
        search_var,
        search_path,
        preload,
    };
    let mut cmd = Command::new(cuenv_exe);
    cmd.arg("__probe").arg("--major").arg(major.to_string()).args(extra);
    cmd.arg("--json").env_clear().envs(env.iter().map(|(k, v)| (k, v))).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            outcome.end = ProbeEnd::SpawnFailed { error: format!("cannot run {}: {e}", cuenv_exe.display()) };
            return outcome;
        }
    };
    let out_rx = reader(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>), STDOUT_CAP);
    let err_rx = reader(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>), STDERR_CAP);

    let deadline = start + timeout;
    let mut pause = Duration::from_millis(2);
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {}
            Err(_) => break None,
        }
        let now = Instant::now();
        if now >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            outcome.end = ProbeEnd::TimedOut { after_ms: timeout.as_millis() as u64 };
            break None;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(25));
    };
    outcome.elapsed_ms = start.elapsed().as_millis() as u64;
    if let Some(st) = status {
        outcome.end = end_of(st);
    } else if !matches!(outcome.end, ProbeEnd::TimedOut { .. }) {
        let _ = child.kill();
        let _ = child.wait();
        outcome.end = ProbeEnd::SpawnFailed { error: "lost track of the probe process".into() };
    }
    // A grandchild could hold the pipes open: wait for the readers only briefly.
    let stdout = out_rx.recv_timeout(Duration::from_secs(2)).unwrap_or_default();
    let stderr = err_rx.recv_timeout(Duration::from_secs(2)).unwrap_or_default();

    let (last_step, tail) = split_stderr(&String::from_utf8_lossy(&stderr));
    outcome.last_step = last_step;
    outcome.stderr_tail = tail;
    match parse_report(&String::from_utf8_lossy(&stdout)) {
        Ok(r) => outcome.report = Some(r),
        Err(e) => outcome.report_error = Some(e),
    }
    outcome
}

/// Reads a pipe to the end on a thread, keeping at most the last `cap` bytes.
fn reader(src: Option<Box<dyn Read + Send>>, cap: usize) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut src) = src {
            let mut chunk = [0u8; 8192];
            loop {
                match src.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        buf.extend_from_slice(&chunk[..n]);
                        if buf.len() > cap * 2 {
                            buf.drain(..buf.len() - cap);
                        }
                    }
                }
            }
        }
        if buf.len() > cap {
            buf.drain(..buf.len() - cap);
        }
        let _ = tx.send(buf);
    });
    rx
}

#[cfg(unix)]
fn end_of(st: std::process::ExitStatus) -> ProbeEnd {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(code), _) => ProbeEnd::Exited { code },
        (None, Some(sig)) => ProbeEnd::Signaled { signal: sig, name: signal_name(sig).to_string() },
        (None, None) => ProbeEnd::Exited { code: -1 },
    }
}

#[cfg(not(unix))]
fn end_of(st: std::process::ExitStatus) -> ProbeEnd {
    ProbeEnd::Exited { code: st.code().unwrap_or(-1) }
}

/// The usual name of a Unix signal number (Linux numbering).
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => "signal",
    }
}

/// The value of `name` in a complete environment `env` (the last one wins; names compare
/// without regard to case on Windows, as the OS does).
pub(crate) fn env_var<'e>(env: &'e [(OsString, OsString)], name: &str) -> Option<&'e OsString> {
    env.iter().rev().find(|(k, _)| if cfg!(windows) { k.eq_ignore_ascii_case(name) } else { k == OsStr::new(name) }).map(|(_, v)| v)
}

/// The loader's search variable, its folders, and `LD_PRELOAD`, from the child's environment.
fn loader_env(env: &[(OsString, OsString)]) -> (String, Vec<PathBuf>, Vec<PathBuf>) {
    let var = if cfg!(windows) { "PATH" } else { "LD_LIBRARY_PATH" };
    let get = |name: &str| env_var(env, name);
    let split =
        |v: Option<&OsString>| -> Vec<PathBuf> { v.map(|v| std::env::split_paths(v).filter(|p| !p.as_os_str().is_empty()).collect()).unwrap_or_default() };
    let preload = if cfg!(windows) {
        Vec::new()
    } else {
        get("LD_PRELOAD").map(|v| v.to_string_lossy().split([' ', ':']).filter(|s| !s.is_empty()).map(PathBuf::from).collect()).unwrap_or_default()
    };
    (var.to_string(), split(get(var)), preload)
}

/// Splits the child's stderr into the last announced step and the other lines' tail.
fn split_stderr(text: &str) -> (Option<String>, String) {
    let mut last = None;
    let mut rest = Vec::new();
    for line in text.lines() {
        match line.strip_prefix(STEP_PREFIX) {
            Some(s) => last = Some(s.to_string()),
            None => rest.push(line),
        }
    }
    let start = rest.len().saturating_sub(TAIL_LINES);
    let mut tail = rest[start..].join("\n");
    if tail.len() > 4000 {
        let cut = tail.len() - 4000;
        let cut = (cut..tail.len()).find(|i| tail.is_char_boundary(*i)).unwrap_or(tail.len());
        tail = format!("...{}", &tail[cut..]);
    }
    (last, tail)
}

/// The report on the last stdout line that starts with `{` (cuDNN's own logging, if turned on,
/// may print before it).
fn parse_report(stdout: &str) -> Result<Report, String> {
    let Some(line) = stdout.lines().rev().map(str::trim).find(|l| l.starts_with('{')) else {
        return Err(if stdout.trim().is_empty() { "it printed nothing on stdout".into() } else { "its stdout holds no JSON report".into() });
    };
    let report: Report = serde_json::from_str(line).map_err(|e| format!("its report is not readable: {e}"))?;
    if report.schema != probe::SCHEMA {
        return Err(format!("its report has schema {}, this cuenv reads {}", report.schema, probe::SCHEMA));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{fx, report};
    use super::*;

    #[test]
    fn stdout_and_stderr_parsing() {
        let f = fx();
        let r = report(&f);
        let line = serde_json::to_string(&r).unwrap();
        assert_eq!(parse_report(&format!("cuDNN log noise\n{line}\n")).unwrap(), r);
        assert!(parse_report("").unwrap_err().contains("nothing"));
        assert!(parse_report("{not json").unwrap_err().contains("not readable"));
        let mut old = r.clone();
        old.schema = 99;
        assert!(parse_report(&serde_json::to_string(&old).unwrap()).unwrap_err().contains("schema 99"));
        let (step, tail) = split_stderr(&format!("{STEP_PREFIX}load x\nboom\n{STEP_PREFIX}cudnnCreate\nbang"));
        assert_eq!(step.as_deref(), Some("cudnnCreate"));
        assert_eq!(tail, "boom\nbang");
    }

    #[test]
    fn loader_env_reads_the_childs_variables() {
        let sep = if cfg!(windows) { ";" } else { ":" };
        let var = if cfg!(windows) { "Path" } else { "LD_LIBRARY_PATH" };
        let env =
            vec![(OsString::from(var), OsString::from(format!("/a{sep}{sep}/b"))), (OsString::from("LD_PRELOAD"), OsString::from("/p/libx.so /q/liby.so"))];
        let (v, path, pre) = loader_env(&env);
        assert_eq!(path, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
        if cfg!(windows) {
            assert_eq!(v, "PATH");
        } else {
            assert_eq!(v, "LD_LIBRARY_PATH");
            assert_eq!(pre, vec![PathBuf::from("/p/libx.so"), PathBuf::from("/q/liby.so")]);
        }
    }
}
