//! The parent side of `cuenv check`: run the probe in a fresh process with a profile's exact
//! environment ([`run_probe`]), then turn what it reported into one status with reasons in
//! words ([`classify`]).
//!
//! Invariants:
//! - cuenv itself never loads cuDNN. A child that crashes, hangs or prints garbage is a
//!   finding ([`ReasonKind::Crash`], [`ReasonKind::Timeout`], [`ReasonKind::BadReport`]), never
//!   a cuenv failure; a hung child is killed at the deadline.
//! - The child's environment is exactly the one given (cleared first), so what the loader
//!   picks is what the profile's activation produces.
//! - [`classify`] reads nothing but the outcome, the expectation and (to compare paths)
//!   the file system's canonical names; it never runs native code.
//! - `fail` wins over `no-gpu`, which wins over `pass`: a profile whose cuDNN is shadowed
//!   fails on a machine without a GPU too.
//!
//! Facts relied on (field notes §2, §5, §7): cuDNN aborts the process when a sub-library is
//! missing ("Could not load library libcudnn_ops_infer.so.8", "Unable to load any of
//! {libcudnn_graph.so.9, ...}", "Could not locate cudnn_graph64_9.dll"); without a GPU the
//! version calls work and `cudnnCreate` returns `CUDNN_STATUS_NOT_INITIALIZED`;
//! `LD_LIBRARY_PATH` beats the libraries' own `$ORIGIN` RUNPATH.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::probe::{self, Conv, LoadAttempt, ModuleKind, Report, STEP_PREFIX};
use crate::version::Version;

/// What a profile's check expects to find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// The store entry's folder (any path that resolves to it: the view's link works too).
    pub entry_dir: PathBuf,
    /// The entry's cuDNN version (3 or 4 parts).
    pub version: Version,
    /// The profile's CUDA major; 0 when unknown (`cuenv doctor` without a profile): the CUDA
    /// major is then not checked.
    pub cuda_major: u64,
}

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

/// A profile's check status.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum CheckStatus {
    /// Loaded from the entry, the right versions, and (with a GPU) a correct convolution.
    #[serde(rename = "pass")]
    Pass,
    /// Something is wrong; see the reasons.
    #[serde(rename = "fail")]
    Fail,
    /// No driver or no device; the load and version checks passed.
    #[serde(rename = "no-gpu")]
    NoGpu,
}

impl fmt::Display for CheckStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CheckStatus::Pass => "pass",
            CheckStatus::Fail => "fail",
            CheckStatus::NoGpu => "no-gpu",
        })
    }
}

/// The class of a reason.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum ReasonKind {
    /// A cuDNN module came from outside the profile's entry.
    Shadowed,
    /// cuDNN modules came from several folders.
    MixedVersions,
    /// cuDNN or the runtime is for another CUDA major.
    WrongCudaMajor,
    /// `cudnnGetVersion` differs from the entry's version.
    VersionMismatch,
    /// A library or sub-library could not be found.
    MissingLibrary,
    /// The OS loader refused a library for another reason.
    LoaderError,
    /// A cuDNN call returned an error status.
    CudnnStatus,
    /// The convolution ran but its result is wrong.
    WrongResult,
    /// A convolution call failed.
    ConvFailed,
    /// The probe process crashed.
    Crash,
    /// The probe process hung and was killed.
    Timeout,
    /// The probe ended without a readable report, or could not start.
    BadReport,
    /// No NVIDIA driver (not a failure: status `no-gpu`).
    NoDriver,
    /// A driver but no usable device (not a failure: status `no-gpu`).
    NoDevice,
}

impl ReasonKind {
    /// Whether this reason makes the check fail (all but `NoDriver` and `NoDevice`).
    pub fn is_failure(self) -> bool {
        !matches!(self, ReasonKind::NoDriver | ReasonKind::NoDevice)
    }
}

/// One reason, in words.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Reason {
    /// Its class.
    pub kind: ReasonKind,
    /// What happened and, where known, why.
    pub message: String,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind_word(), self.message)
    }
}

impl Reason {
    fn new(kind: ReasonKind, message: impl Into<String>) -> Self {
        Reason { kind, message: message.into() }
    }

    fn kind_word(&self) -> &'static str {
        match self.kind {
            ReasonKind::Shadowed => "shadowed",
            ReasonKind::MixedVersions => "mixed sub-library versions",
            ReasonKind::WrongCudaMajor => "wrong CUDA major",
            ReasonKind::VersionMismatch => "version mismatch",
            ReasonKind::MissingLibrary => "missing library",
            ReasonKind::LoaderError => "loader error",
            ReasonKind::CudnnStatus => "cuDNN error",
            ReasonKind::WrongResult => "wrong convolution result",
            ReasonKind::ConvFailed => "convolution failed",
            ReasonKind::Crash => "crash",
            ReasonKind::Timeout => "timeout",
            ReasonKind::BadReport => "no report",
            ReasonKind::NoDriver => "no driver",
            ReasonKind::NoDevice => "no GPU",
        }
    }
}

/// The verdict on one profile.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckResult {
    /// `pass`, `fail` or `no-gpu`.
    pub status: CheckStatus,
    /// Why it failed (failures) or why there is no GPU; empty on `pass`.
    pub reasons: Vec<Reason>,
    /// What was verified, and harmless oddities, in words.
    pub notes: Vec<String>,
    /// The child's report, when there was one.
    pub report: Option<Report>,
}

impl CheckResult {
    /// The reasons as sentences (`"shadowed: ..."`).
    pub fn messages(&self) -> Vec<String> {
        self.reasons.iter().map(|r| r.to_string()).collect()
    }

    /// Whether some reason is of `kind`.
    pub fn has(&self, kind: ReasonKind) -> bool {
        self.reasons.iter().any(|r| r.kind == kind)
    }
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
    cmd.arg("__probe").arg("--major").arg(major.to_string());
    if conv {
        cmd.arg("--conv");
    }
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

/// The loader's search variable, its folders, and `LD_PRELOAD`, from the child's environment.
/// The value of `name` in a complete environment `env` (the last one wins; names compare
/// without regard to case on Windows, as the OS does).
pub(crate) fn env_var<'e>(env: &'e [(OsString, OsString)], name: &str) -> Option<&'e OsString> {
    env.iter().rev().find(|(k, _)| if cfg!(windows) { k.eq_ignore_ascii_case(name) } else { k == OsStr::new(name) }).map(|(_, v)| v)
}

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

// ---------------------------------------------------------------------------------------
// Classification
// ---------------------------------------------------------------------------------------

/// Turns a probe outcome into `pass`, `fail` or `no-gpu` with reasons in words.
pub fn classify(outcome: &ProbeOutcome, expected: &Expected) -> CheckResult {
    let mut c = Classifier { outcome, expected, reasons: Vec::new(), notes: Vec::new() };
    c.run();
    let status = if c.reasons.iter().any(|r| r.kind.is_failure()) {
        CheckStatus::Fail
    } else if c.reasons.is_empty() {
        CheckStatus::Pass
    } else {
        CheckStatus::NoGpu
    };
    CheckResult { status, reasons: c.reasons, notes: c.notes, report: outcome.report.clone() }
}

struct Classifier<'a> {
    outcome: &'a ProbeOutcome,
    expected: &'a Expected,
    reasons: Vec<Reason>,
    notes: Vec<String>,
}

impl Classifier<'_> {
    fn fail(&mut self, kind: ReasonKind, msg: impl Into<String>) {
        self.reasons.push(Reason::new(kind, msg));
    }

    fn run(&mut self) {
        let o = self.outcome;
        let during = o.last_step.as_deref().map(|s| format!(" during {s}")).unwrap_or_default();
        match &o.end {
            ProbeEnd::SpawnFailed { error } => {
                self.fail(ReasonKind::BadReport, format!("the probe could not run: {error}"));
                return;
            }
            ProbeEnd::TimedOut { after_ms } => {
                self.fail(
                    ReasonKind::Timeout,
                    format!("the probe did not finish within {}{during} and was killed{}", human_ms(*after_ms), stderr_suffix(&o.stderr_tail)),
                );
                self.missing_from_text(&o.stderr_tail);
                return;
            }
            _ => {}
        }
        let Some(report) = &o.report else {
            match &o.end {
                ProbeEnd::Exited { code: 0 } => self.fail(
                    ReasonKind::BadReport,
                    format!("the probe exited without a report: {}{}", o.report_error.as_deref().unwrap_or("unknown"), stderr_suffix(&o.stderr_tail)),
                ),
                end => {
                    self.missing_from_text(&o.stderr_tail);
                    let abort = matches!(end, ProbeEnd::Signaled { signal: 6, .. } | ProbeEnd::Exited { code: 3 | 9 | 134 })
                        || matches!(end, ProbeEnd::Exited { code } if *code as u32 == 0xC000_0409);
                    let hint = if abort { "; cuDNN aborts the process when it cannot load a sub-library" } else { "" };
                    self.fail(ReasonKind::Crash, format!("the probe process {}{during}{hint}{}", describe_end(end), stderr_suffix(&o.stderr_tail)));
                }
            }
            return;
        };
        if !matches!(o.end, ProbeEnd::Exited { code: 0 }) {
            self.notes.push(format!("the probe process {} after it had reported", describe_end(&o.end)));
        }
        self.report(report);
    }

    fn report(&mut self, r: &Report) {
        let gpu = self.driver(r);
        if !r.dispatcher.loaded {
            self.load_failure(&r.dispatcher, "the cuDNN dispatcher");
            return;
        }
        self.modules(r);
        self.versions(r);
        if let Some(rt) = &r.cudart {
            if !rt.load.loaded {
                self.load_failure(&rt.load, "the CUDA runtime");
            } else if let Some(v) = rt.runtime_version {
                if self.expected.cuda_major != 0 && (v / 1000) as u64 != self.expected.cuda_major {
                    self.fail(
                        ReasonKind::WrongCudaMajor,
                        format!(
                            "the CUDA runtime {} is version {}, but the profile is for CUDA {}",
                            rt.load.name,
                            cuda_version(v as u64),
                            self.expected.cuda_major
                        ),
                    );
                } else {
                    self.notes.push(format!("CUDA runtime {} (version {})", rt.load.name, cuda_version(v as u64)));
                }
            } else if let Some(e) = &rt.runtime_error {
                self.notes.push(format!("CUDA runtime {} loaded; cudaRuntimeGetVersion returned {} ({})", rt.load.name, e.name, e.code));
            }
        }
        if let Some(h) = &r.handle
            && !h.ok()
        {
            if !gpu && h.name.contains("NOT_INITIALIZED") {
                self.notes.push(format!("cudnnCreate returned {} ({}), as expected without a GPU", h.name, h.code));
            } else {
                let mut msg = format!("cudnnCreate returned {} ({})", h.name, h.code);
                if let Some(extra) = explain_cudnn_status(&h.name) {
                    msg.push_str(&format!(": {extra}"));
                }
                if h.name.contains("ARCH_MISMATCH")
                    && let Some(dev) = r.driver.as_ref().and_then(|d| d.devices.first())
                {
                    msg.push_str(&format!(
                        "; the GPU {} has compute capability {}.{}{}",
                        dev.name,
                        dev.compute_capability[0],
                        dev.compute_capability[1],
                        r.cudnn
                            .as_ref()
                            .and_then(|v| v.max_device_version)
                            .map(|m| format!(", and this cuDNN supports up to {}.{}", m / 100, m % 100 / 10))
                            .unwrap_or_default()
                    ));
                }
                self.fail(ReasonKind::CudnnStatus, msg);
            }
        }
        match &r.conv {
            Conv::NotRequested => {}
            Conv::Done(c) if c.matches => self
                .notes
                .push(format!("convolution matched the CPU reference (max abs error {:.1e}) with {} in {:.3} ms", c.max_abs_error, c.algo, c.forward_ms)),
            Conv::Done(c) => self.fail(
                ReasonKind::WrongResult,
                format!(
                    "the GPU convolution ({}) differs from the CPU reference by up to {} (the limit is {:.0e})",
                    c.algo,
                    if c.max_abs_error == f64::MAX { "a non-finite value".to_string() } else { format!("{:.3e}", c.max_abs_error) },
                    probe::MAX_ABS_ERROR
                ),
            ),
            Conv::Failed { step, status } => {
                let mut msg = format!("{step} returned {} ({})", status.name, status.code);
                if let Some(extra) = explain_cudnn_status(&status.name) {
                    msg.push_str(&format!(": {extra}"));
                }
                self.fail(ReasonKind::ConvFailed, msg)
            }
            Conv::Skipped { why } => {
                if gpu && !self.reasons.iter().any(|x| x.kind.is_failure()) {
                    self.fail(ReasonKind::ConvFailed, format!("the convolution did not run: {why}"));
                } else if !gpu {
                    self.notes.push(format!("convolution skipped: {why}"));
                }
            }
        }
    }

    /// Records no-driver / no-device; returns whether a usable GPU is present.
    fn driver(&mut self, r: &Report) -> bool {
        match &r.driver {
            None => {
                let why = r.driver_absent.clone().unwrap_or_else(|| format!("{} could not be loaded", probe::driver_name()));
                self.fail(ReasonKind::NoDriver, format!("no NVIDIA driver: {why}"));
                false
            }
            Some(d) => {
                let ver = d.version.map(|v| format!(", CUDA {}", cuda_version(v as u64))).unwrap_or_default();
                if !d.init.ok() {
                    self.fail(ReasonKind::NoDevice, format!("the NVIDIA driver ({}{ver}) found no usable GPU: cuInit returned {}", d.library, d.init.name));
                    false
                } else if d.devices.is_empty() {
                    self.fail(ReasonKind::NoDevice, format!("the NVIDIA driver ({}{ver}) reports no devices", d.library));
                    false
                } else {
                    let dev = &d.devices[0];
                    self.notes.push(format!(
                        "GPU 0: {} (compute capability {}.{}, {} MiB), driver{ver}",
                        dev.name,
                        dev.compute_capability[0],
                        dev.compute_capability[1],
                        dev.total_memory >> 20
                    ));
                    true
                }
            }
        }
    }

    fn load_failure(&mut self, attempt: &LoadAttempt, role: &str) {
        let Some(err) = &attempt.error else {
            self.fail(ReasonKind::LoaderError, format!("{role} {} did not load", attempt.name));
            return;
        };
        let var = &self.outcome.search_var;
        let path_list = if self.outcome.search_path.is_empty() {
            format!("{var} is empty")
        } else {
            format!(
                "{var} is {}",
                self.outcome.search_path.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(if cfg!(windows) { ";" } else { ":" })
            )
        };
        if let Some(code) = err.code {
            let text = explain_windows_error(code).map_or_else(|| format!("error {code}: {}", err.message), str::to_string);
            let kind = if code == 126 { ReasonKind::MissingLibrary } else { ReasonKind::LoaderError };
            self.fail(kind, format!("{role} {} could not be loaded: {text} ({path_list})", attempt.name));
            return;
        }
        let missing = missing_libraries(&err.message);
        if let Some(m) = missing.first() {
            if *m == attempt.name {
                self.fail(
                    ReasonKind::MissingLibrary,
                    format!("{role} {} was not found: no folder on {var}, in the ld.so cache or in the default folders holds it ({path_list})", attempt.name),
                );
            } else {
                self.fail(ReasonKind::MissingLibrary, format!("{role} {} needs {m}, which was not found: {}", attempt.name, err.message));
            }
            return;
        }
        let hint = explain_dlerror(&err.message).map(|h| format!(" ({h})")).unwrap_or_default();
        self.fail(ReasonKind::LoaderError, format!("the OS loader could not load {role} {}: {}{hint}", attempt.name, err.message));
    }

    fn missing_from_text(&mut self, text: &str) {
        for m in missing_libraries(text) {
            self.fail(
                ReasonKind::MissingLibrary,
                format!(
                    "cuDNN could not load its sub-library {m}; it is missing from the folder the dispatcher came from and from {}",
                    self.outcome.search_var
                ),
            );
        }
    }

    fn modules(&mut self, r: &Report) {
        let entry = canonical(&self.expected.entry_dir);
        let cudnn: Vec<(&probe::Module, PathBuf)> =
            r.modules.iter().filter(|m| m.kind == ModuleKind::Cudnn).map(|m| (m, canonical(Path::new(&m.path)))).collect();
        if cudnn.is_empty() {
            self.notes.push("no cuDNN module appears in the process's module list".into());
            return;
        }
        // Folders in load order, with the modules each gave.
        let mut folders: Vec<(PathBuf, Vec<String>)> = Vec::new();
        for (m, p) in &cudnn {
            let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
            match folders.iter_mut().find(|(d, _)| same_path(d, &dir)) {
                Some((_, names)) => names.push(m.name.clone()),
                None => folders.push((dir, vec![m.name.clone()])),
            }
        }
        if folders.len() > 1 {
            self.fail(
                ReasonKind::MixedVersions,
                format!(
                    "cuDNN modules were loaded from {} folders: {}; all of them must come from one release",
                    folders.len(),
                    folders.iter().map(|(d, n)| format!("{} ({})", d.display(), n.join(", "))).collect::<Vec<_>>().join("; ")
                ),
            );
        }
        let mut inside_names = Vec::new();
        for (dir, names) in &folders {
            if is_under(dir, &entry) {
                inside_names.extend(names.iter().cloned());
                continue;
            }
            let dispatcher = names.iter().any(|n| probe::is_dispatcher(n));
            let what = if dispatcher { format!("the cuDNN dispatcher {}", names.iter().find(|n| probe::is_dispatcher(n)).unwrap()) } else { names.join(", ") };
            let why = self.why_loaded_from(dir, &entry, &names[0]);
            self.fail(ReasonKind::Shadowed, format!("{what} came from {}, not from the profile's entry {}: {why}", dir.display(), entry.display()));
        }
        if !inside_names.is_empty() && folders.len() == 1 {
            self.notes.push(format!("cuDNN loaded from the profile's entry: {}", inside_names.join(", ")));
        }
    }

    /// Why the loader probably took `name` from `dir` rather than from the entry.
    fn why_loaded_from(&self, dir: &Path, entry: &Path, name: &str) -> String {
        let o = self.outcome;
        let var = &o.search_var;
        let search: Vec<PathBuf> = o.search_path.iter().map(|p| canonical(p)).collect();
        // The first folder that is the winner, or holds `name` as a link into it.
        let pos_won = o.search_path.iter().zip(&search).position(|(raw, canon)| {
            same_path(canon, dir) || {
                let f = raw.join(name);
                f.exists() && canonical(&f).parent().is_some_and(|p| same_path(p, dir))
            }
        });
        let shown = |i: usize| {
            if same_path(&search[i], dir) { dir.display().to_string() } else { format!("{} (which links {name} to it)", o.search_path[i].display()) }
        };
        let pos_entry = search.iter().position(|p| is_under(p, entry));
        let mut why = if o.preload.iter().any(|p| same_path(&canonical(p).parent().map(Path::to_path_buf).unwrap_or_default(), dir)) {
            "LD_PRELOAD loads it before anything else".to_string()
        } else {
            match (pos_won, pos_entry) {
                (Some(w), Some(e)) if w < e => format!("{var} lists {} (position {}) before the profile's folder (position {})", shown(w), w + 1, e + 1),
                (Some(w), None) => format!("{var} lists {} (position {}) and does not list the profile's folder at all", shown(w), w + 1),
                (Some(_), Some(_)) => {
                    format!("the profile's folder comes first on {var} but the loader did not take {name} from it (is it missing from the entry?)")
                }
                (None, _) if cfg!(windows) => format!(
                    "{} is not on PATH: the loader found it first in the application's folder, System32, the Windows folder or the current folder, or a copy with that name was already loaded in the process",
                    dir.display()
                ),
                (None, e) => {
                    let system = ["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib"].iter().any(|s| dir.starts_with(s));
                    let base = if system {
                        format!("{} is a system folder, which the loader searches after {var} (ld.so cache, default folders)", dir.display())
                    } else {
                        format!("{} is not on {var}: it came through another library's RPATH/RUNPATH or the ld.so cache", dir.display())
                    };
                    if e.is_none() { format!("{base}, and the profile's folder is not on {var}") } else { base }
                }
            }
        };
        let s = dir.to_string_lossy().to_ascii_lowercase();
        if s.contains("site-packages") || s.contains("dist-packages") {
            why.push_str(" (a Python package's bundled copy)");
        } else if dir.parent().is_some_and(|p| p.join("conda-meta").is_dir() || p.parent().is_some_and(|pp| pp.join("conda-meta").is_dir())) {
            why.push_str(" (the conda environment's own libraries)");
        }
        why
    }

    fn versions(&mut self, r: &Report) {
        let Some(v) = &r.cudnn else {
            self.fail(ReasonKind::LoaderError, format!("{} does not export cudnnGetVersion: it is not a cuDNN dispatcher", r.dispatcher.name));
            return;
        };
        let want = self.expected.version.cudnn_encoded();
        if v.version != want {
            self.fail(
                ReasonKind::VersionMismatch,
                format!(
                    "cuDNN reports version {} ({}), but the profile's entry is cuDNN {} ({want})",
                    v.version,
                    decode_cudnn(v.version),
                    self.expected.version
                ),
            );
        } else {
            self.notes.push(format!("cudnnGetVersion() = {} ({})", v.version, self.expected.version));
        }
        if v.cudart_version == 0 {
            self.notes.push("cudnnGetCudartVersion is not exported; the CUDA major of this cuDNN build is not checked".into());
        } else if self.expected.cuda_major != 0 && v.cudart_version / 1000 != self.expected.cuda_major {
            self.fail(
                ReasonKind::WrongCudaMajor,
                format!(
                    "this cuDNN was built for CUDA {} (cudnnGetCudartVersion() = {}), but the profile is for CUDA {}",
                    cuda_version(v.cudart_version),
                    v.cudart_version,
                    self.expected.cuda_major
                ),
            );
        } else {
            self.notes.push(format!("cudnnGetCudartVersion() = {} (CUDA {})", v.cudart_version, cuda_version(v.cudart_version)));
        }
    }
}

/// Library names cuDNN or the loader said they could not find, in order, deduplicated:
/// "Could not locate X" (Windows), "Could not load library X." (8.x), "Unable to load any of
/// {X.9.5.0, X.9.5, X.9, X}" (9.x), "X: cannot open shared object file" (dlerror).
pub fn missing_libraries(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        let s = s.trim().trim_end_matches(['.', ':', ',', '!']).trim_matches(['"', '\'']);
        let s = s.rsplit(['/', '\\']).next().unwrap_or(s);
        if !s.is_empty() && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    for line in text.lines() {
        for marker in ["Could not locate ", "Could not load library "] {
            if let Some(i) = line.find(marker)
                && let Some(name) = line[i + marker.len()..].split_whitespace().next()
            {
                push(name);
            }
        }
        if let Some(i) = line.find("Unable to load any of {") {
            let list = &line[i + "Unable to load any of {".len()..];
            let list = list.split('}').next().unwrap_or(list);
            let names: Vec<&str> = list.split(',').map(str::trim).collect();
            // Prefer the plain soname: `libX.so.<major>`.
            let pick =
                names.iter().find(|n| n.rsplit_once(".so.").is_some_and(|(_, v)| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))).or(names.first());
            if let Some(n) = pick {
                push(n);
            }
        }
        if let Some(i) = line.find(": cannot open shared object file") {
            let before = &line[..i];
            let name = before.rsplit([' ', '\t']).next().unwrap_or(before);
            push(name);
        }
    }
    out
}

/// The meaning of a Windows loader error code, in words.
pub fn explain_windows_error(code: i64) -> Option<&'static str> {
    Some(match code {
        126 => {
            "error 126 (ERROR_MOD_NOT_FOUND): the DLL, or a DLL it imports, was not found on the search path (application folder, System32, Windows folder, current folder, then PATH)"
        }
        127 => {
            "error 127 (ERROR_PROC_NOT_FOUND): a DLL lacks a function another one imports; DLLs of different versions are mixed (an older copy earlier on PATH, or already loaded by name)"
        }
        193 => "error 193 (ERROR_BAD_EXE_FORMAT): not a valid image for this 64-bit process (a 32-bit, damaged or non-Windows file)",
        1114 => "error 1114 (ERROR_DLL_INIT_FAILED): the DLL's initialization routine failed",
        _ => return None,
    })
}

fn explain_dlerror(msg: &str) -> Option<&'static str> {
    if msg.contains("wrong ELF class") {
        Some("a 32-bit library, or one for another architecture")
    } else if msg.contains("undefined symbol") || msg.contains("version `") {
        Some("a library of another version is mixed in")
    } else if msg.contains("invalid ELF header") || msg.contains("file too short") {
        Some("not a valid Linux library: damaged, or a file for another system")
    } else {
        None
    }
}

fn explain_cudnn_status(name: &str) -> Option<&'static str> {
    let n = name.trim_start_matches("CUDNN_STATUS_");
    Some(match n {
        "SUBLIBRARY_VERSION_MISMATCH" | "VERSION_MISMATCH" => "cuDNN's sub-libraries are of different versions",
        "SUBLIBRARY_LOADING_FAILED" => "a cuDNN sub-library could not be loaded",
        "NOT_SUPPORTED_ARCH_MISMATCH" | "ARCH_MISMATCH" => "this cuDNN does not support the GPU's architecture",
        "NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER" => "the NVIDIA driver is too old for this cuDNN's CUDA version",
        "NOT_SUPPORTED_INCOMPATIBLE_CUDART" => "the CUDA runtime is incompatible with this cuDNN",
        "NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING" | "RUNTIME_PREREQUISITE_MISSING" => "a library cuDNN needs at run time (cuBLAS, NVRTC) is missing",
        "NOT_INITIALIZED" => "the CUDA driver or device could not be initialized",
        "LICENSE_ERROR" => "cuDNN's license check failed",
        _ => return None,
    })
}

fn describe_end(end: &ProbeEnd) -> String {
    match end {
        ProbeEnd::Signaled { signal, name } => {
            format!("was killed by {name} (signal {signal})")
        }
        ProbeEnd::Exited { code } => {
            let c = *code as u32;
            let what = match c {
                3 => Some("abort() on Windows"),
                0xC000_0005 => Some("STATUS_ACCESS_VIOLATION"),
                0xC000_0409 => Some("STATUS_STACK_BUFFER_OVERRUN: a fail-fast exit, also what abort() uses"),
                0xC000_0135 => Some("STATUS_DLL_NOT_FOUND"),
                0xC000_0139 => Some("STATUS_ENTRYPOINT_NOT_FOUND"),
                0xC000_001D => Some("STATUS_ILLEGAL_INSTRUCTION"),
                0xC000_00FD => Some("STATUS_STACK_OVERFLOW"),
                _ => None,
            };
            match what {
                Some(w) if c > 0xFFFF => format!("ended with exit code {c:#010X} ({w})"),
                Some(w) => format!("ended with exit code {code} ({w})"),
                None => format!("ended with exit code {code}"),
            }
        }
        ProbeEnd::TimedOut { after_ms } => format!("was killed after {}", human_ms(*after_ms)),
        ProbeEnd::SpawnFailed { error } => format!("could not start: {error}"),
    }
}

fn stderr_suffix(tail: &str) -> String {
    let t = tail.trim();
    if t.is_empty() { String::new() } else { format!("; its stderr ends with:\n{t}") }
}

fn human_ms(ms: u64) -> String {
    if ms.is_multiple_of(1000) { format!("{} s", ms / 1000) } else { format!("{:.1} s", ms as f64 / 1000.0) }
}

/// `12060` -> `12.6`, `11080` -> `11.8` (CUDA's `M*1000 + m*10` encoding).
pub(crate) fn cuda_version(v: u64) -> String {
    format!("{}.{}", v / 1000, v % 1000 / 10)
}

/// The cuDNN integer encoding back to `M.m.p` (9.x: `M*10000+m*100+p`, 8.x: `M*1000+m*100+p`).
pub(crate) fn decode_cudnn(v: u64) -> String {
    if v >= 10000 { format!("{}.{}.{}", v / 10000, v % 10000 / 100, v % 100) } else { format!("{}.{}.{}", v / 1000, v % 1000 / 100, v % 100) }
}

fn canonical(p: &Path) -> PathBuf {
    let c = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    strip_verbatim(c)
}

/// `\\?\C:\x` -> `C:\x` (what `canonicalize` returns on Windows) so paths compare.
fn strip_verbatim(p: PathBuf) -> PathBuf {
    match p.to_str().and_then(|s| s.strip_prefix(r"\\?\")) {
        Some(s) if !s.starts_with("UNC\\") => PathBuf::from(s),
        _ => p,
    }
}

fn norm(p: &Path) -> String {
    let s = p.to_string_lossy();
    if cfg!(windows) { s.replace('/', "\\").trim_end_matches('\\').to_lowercase() } else { s.trim_end_matches('/').to_string() }
}

fn same_path(a: &Path, b: &Path) -> bool {
    norm(a) == norm(b)
}

/// Whether `p` is `dir` or inside it (after both are canonical).
fn is_under(p: &Path, dir: &Path) -> bool {
    let (p, d) = (norm(p), norm(dir));
    let sep = if cfg!(windows) { '\\' } else { '/' };
    p == d || (p.starts_with(&d) && p[d.len()..].starts_with(sep))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{ConvProblem, ConvResult, Cudart, CudnnVersions, Device, Driver, LoadError, Module, Status};

    /// A temp folder with an entry (`entry/lib`) and an intruder (`other/lib`) holding files.
    struct Fx {
        _tmp: tempfile::TempDir,
        entry: PathBuf,
        other: PathBuf,
    }

    fn fx() -> Fx {
        let tmp = tempfile::tempdir().unwrap();
        let entry = tmp.path().join("store/cudnn-9.5.0.50-cuda12-linux-x86_64-abc");
        let other = tmp.path().join("other");
        for d in [entry.join("lib"), other.join("lib")] {
            std::fs::create_dir_all(&d).unwrap();
            for n in ["libcudnn.so.9", "libcudnn_graph.so.9"] {
                std::fs::write(d.join(n), b"x").unwrap();
            }
        }
        Fx { entry: canonical(&entry), other: canonical(&other), _tmp: tmp }
    }

    fn module(dir: &Path, name: &str) -> Module {
        Module { path: dir.join(name).to_string_lossy().into_owned(), name: name.into(), kind: probe::module_kind(name).unwrap() }
    }

    fn status(code: i64, name: &str) -> Status {
        Status { code, name: name.into() }
    }

    fn gpu() -> Driver {
        Driver {
            library: "libcuda.so.1".into(),
            version: Some(13000),
            init: status(0, "CUDA_SUCCESS"),
            devices: vec![Device { index: 0, name: "NVIDIA H200".into(), compute_capability: [9, 0], total_memory: 150 << 30 }],
        }
    }

    fn done(err: f64) -> Conv {
        Conv::Done(ConvResult {
            problem: ConvProblem::STANDARD,
            math_type: "CUDNN_FMA_MATH".into(),
            algos: vec![],
            algo: "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM".into(),
            workspace_bytes: 0,
            max_abs_error: err,
            matches: err < probe::MAX_ABS_ERROR,
            forward_ms: 0.02,
            iterations: 20,
        })
    }

    /// A good report: cuDNN 9.5.0 for CUDA 12 from the entry, with a GPU and a matching conv.
    fn report(f: &Fx) -> Report {
        Report {
            schema: probe::SCHEMA,
            os: "linux".into(),
            major: 9,
            dispatcher: LoadAttempt { name: "libcudnn.so.9".into(), loaded: true, error: None },
            cudnn: Some(CudnnVersions { version: 90500, cudart_version: 12060, max_device_version: Some(900) }),
            cudart: Some(Cudart {
                load: LoadAttempt { name: "libcudart.so.12".into(), loaded: true, error: None },
                runtime_version: Some(12060),
                runtime_error: None,
            }),
            driver: Some(gpu()),
            driver_absent: None,
            handle: Some(status(0, "CUDNN_STATUS_SUCCESS")),
            conv: done(1e-6),
            modules: vec![module(&f.entry.join("lib"), "libcudnn.so.9"), module(&f.entry.join("lib"), "libcudnn_graph.so.9")],
            elapsed_ms: 100.0,
        }
    }

    fn outcome(report: Option<Report>, end: ProbeEnd, search: Vec<PathBuf>) -> ProbeOutcome {
        ProbeOutcome {
            major: 9,
            end,
            report,
            report_error: None,
            last_step: None,
            stderr_tail: String::new(),
            elapsed_ms: 50,
            search_var: "LD_LIBRARY_PATH".into(),
            search_path: search,
            preload: vec![],
        }
    }

    fn expected(f: &Fx) -> Expected {
        Expected { entry_dir: f.entry.clone(), version: "9.5.0.50".parse().unwrap(), cuda_major: 12 }
    }

    fn ok_end() -> ProbeEnd {
        ProbeEnd::Exited { code: 0 }
    }

    fn classify_report(f: &Fx, r: Report) -> CheckResult {
        classify(&outcome(Some(r), ok_end(), vec![f.entry.join("lib")]), &expected(f))
    }

    fn kinds(c: &CheckResult) -> Vec<ReasonKind> {
        c.reasons.iter().map(|r| r.kind).collect()
    }

    #[test]
    fn pass_with_gpu_and_matching_convolution() {
        let f = fx();
        let c = classify_report(&f, report(&f));
        assert_eq!(c.status, CheckStatus::Pass, "{:?}", c.reasons);
        assert!(c.reasons.is_empty());
        let notes = c.notes.join("\n");
        assert!(notes.contains("convolution matched"), "{notes}");
        assert!(notes.contains("cudnnGetVersion() = 90500"), "{notes}");
        assert!(notes.contains("NVIDIA H200"), "{notes}");
    }

    #[test]
    fn no_driver_is_no_gpu_and_not_initialized_is_expected() {
        let f = fx();
        let mut r = report(&f);
        r.driver = None;
        r.driver_absent = Some("libcuda.so.1 could not be loaded: libcuda.so.1: cannot open shared object file".into());
        r.handle = Some(status(1001, "CUDNN_STATUS_NOT_INITIALIZED"));
        r.conv = Conv::Skipped { why: "no NVIDIA driver".into() };
        let c = classify_report(&f, r);
        assert_eq!(c.status, CheckStatus::NoGpu);
        assert_eq!(kinds(&c), vec![ReasonKind::NoDriver]);
        assert!(c.reasons[0].message.contains("libcuda.so.1"), "{}", c.reasons[0]);
        assert!(c.notes.iter().any(|n| n.contains("NOT_INITIALIZED") && n.contains("as expected")), "{:?}", c.notes);
    }

    #[test]
    fn driver_without_device_is_no_gpu() {
        let f = fx();
        let mut r = report(&f);
        r.driver = Some(Driver { init: status(100, "CUDA_ERROR_NO_DEVICE"), devices: vec![], ..gpu() });
        r.handle = Some(status(1001, "CUDNN_STATUS_NOT_INITIALIZED"));
        r.conv = Conv::Skipped { why: "no usable GPU".into() };
        let c = classify_report(&f, r);
        assert_eq!(c.status, CheckStatus::NoGpu);
        assert_eq!(kinds(&c), vec![ReasonKind::NoDevice]);
        assert!(c.reasons[0].message.contains("CUDA_ERROR_NO_DEVICE"));
        let mut r = report(&f);
        r.driver = Some(Driver { devices: vec![], ..gpu() });
        r.handle = Some(status(1001, "CUDNN_STATUS_NOT_INITIALIZED"));
        assert_eq!(kinds(&classify_report(&f, r)), vec![ReasonKind::NoDevice]);
    }

    #[test]
    fn shadowed_by_an_earlier_ld_library_path_folder_names_it() {
        let f = fx();
        let mut r = report(&f);
        r.modules = vec![module(&f.other.join("lib"), "libcudnn.so.9"), module(&f.other.join("lib"), "libcudnn_graph.so.9")];
        let o = outcome(Some(r), ok_end(), vec![f.other.join("lib"), f.entry.join("lib")]);
        let c = classify(&o, &expected(&f));
        assert_eq!(c.status, CheckStatus::Fail);
        assert_eq!(kinds(&c), vec![ReasonKind::Shadowed]);
        let m = &c.reasons[0].message;
        assert!(m.contains(&f.other.join("lib").display().to_string()), "{m}");
        assert!(m.contains("the cuDNN dispatcher libcudnn.so.9"), "{m}");
        assert!(m.contains("LD_LIBRARY_PATH lists") && m.contains("(position 1) before the profile's folder (position 2)"), "{m}");
    }

    #[test]
    fn shadowed_when_the_entry_is_not_on_the_search_path() {
        let f = fx();
        let mut r = report(&f);
        r.modules = vec![module(&f.other.join("lib"), "libcudnn.so.9")];
        let c = classify(&outcome(Some(r.clone()), ok_end(), vec![f.other.join("lib")]), &expected(&f));
        assert!(c.reasons[0].message.contains("does not list the profile's folder at all"), "{}", c.reasons[0]);
        let c = classify(&outcome(Some(r), ok_end(), vec![]), &expected(&f));
        if cfg!(windows) {
            // Windows explains the loader's own search order instead.
            assert!(c.reasons[0].message.contains("is not on PATH: the loader found it first"), "{}", c.reasons[0]);
        } else {
            assert!(c.reasons[0].message.contains("is not on LD_LIBRARY_PATH"), "{}", c.reasons[0]);
            assert!(c.reasons[0].message.contains("the profile's folder is not on LD_LIBRARY_PATH"), "{}", c.reasons[0]);
        }
    }

    #[test]
    fn shadowed_through_a_view_link_is_not_shadowed() {
        // The profile reaches the entry through a link (a view); the loader reports real paths.
        let f = fx();
        let view = f.entry.parent().unwrap().parent().unwrap().join("view");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&f.entry, &view).unwrap();
        #[cfg(windows)]
        if std::os::windows::fs::symlink_dir(&f.entry, &view).is_err() || !view.exists() {
            return; // no link privilege (or Wine): nothing to prove here
        }
        let exp = Expected { entry_dir: view.clone(), ..expected(&f) };
        let c = classify(&outcome(Some(report(&f)), ok_end(), vec![view.join("lib")]), &exp);
        assert_eq!(c.status, CheckStatus::Pass, "{:?}", c.reasons);
    }

    #[test]
    fn preload_and_conda_env_are_named() {
        let f = fx();
        let mut r = report(&f);
        r.modules = vec![module(&f.other.join("lib"), "libcudnn.so.9")];
        let mut o = outcome(Some(r.clone()), ok_end(), vec![f.entry.join("lib")]);
        o.preload = vec![f.other.join("lib/libcudnn.so.9")];
        let c = classify(&o, &expected(&f));
        assert!(c.reasons[0].message.contains("LD_PRELOAD"), "{}", c.reasons[0]);
        std::fs::create_dir_all(f.other.join("conda-meta")).unwrap();
        let c = classify(&outcome(Some(r), ok_end(), vec![f.other.join("lib"), f.entry.join("lib")]), &expected(&f));
        assert!(c.reasons[0].message.contains("conda environment"), "{}", c.reasons[0]);
    }

    #[test]
    fn mixed_folders_fail_with_both_named() {
        let f = fx();
        let mut r = report(&f);
        r.modules = vec![module(&f.entry.join("lib"), "libcudnn.so.9"), module(&f.other.join("lib"), "libcudnn_graph.so.9")];
        let c = classify(&outcome(Some(r), ok_end(), vec![f.other.join("lib"), f.entry.join("lib")]), &expected(&f));
        assert_eq!(c.status, CheckStatus::Fail);
        assert_eq!(kinds(&c), vec![ReasonKind::MixedVersions, ReasonKind::Shadowed]);
        let m = &c.reasons[0].message;
        assert!(m.contains("2 folders") && m.contains("libcudnn_graph.so.9") && m.contains(&f.other.join("lib").display().to_string()), "{m}");
        assert!(c.reasons[1].message.starts_with("libcudnn_graph.so.9 came from"), "{}", c.reasons[1]);
    }

    #[test]
    fn version_mismatch_names_both_versions() {
        let f = fx();
        let mut r = report(&f);
        r.cudnn.as_mut().unwrap().version = 90100;
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::VersionMismatch]);
        assert!(c.reasons[0].message.contains("90100 (9.1.0)") && c.reasons[0].message.contains("9.5.0.50 (90500)"), "{}", c.reasons[0]);
        // 8.x encoding
        let exp = Expected { version: "8.8.0.121".parse().unwrap(), ..expected(&f) };
        let mut r = report(&f);
        r.cudnn = Some(CudnnVersions { version: 8904, cudart_version: 12020, max_device_version: Some(900) });
        let c = classify(&outcome(Some(r), ok_end(), vec![]), &exp);
        assert!(
            c.reasons.iter().any(|x| x.kind == ReasonKind::VersionMismatch && x.message.contains("8904 (8.9.4)") && x.message.contains("(8800)")),
            "{:?}",
            c.reasons
        );
    }

    #[test]
    fn wrong_cuda_major_from_cudnn_or_runtime() {
        let f = fx();
        let mut r = report(&f);
        r.cudnn.as_mut().unwrap().cudart_version = 11080;
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::WrongCudaMajor]);
        assert!(c.reasons[0].message.contains("built for CUDA 11.8") && c.reasons[0].message.contains("profile is for CUDA 12"), "{}", c.reasons[0]);
        let mut r = report(&f);
        r.cudart.as_mut().unwrap().runtime_version = Some(11080);
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::WrongCudaMajor]);
        assert!(c.reasons[0].message.contains("libcudart.so.12 is version 11.8"), "{}", c.reasons[0]);
        // An unknown CUDA major (0) is not checked.
        let mut r = report(&f);
        r.cudnn.as_mut().unwrap().cudart_version = 11080;
        r.cudart.as_mut().unwrap().runtime_version = Some(11080);
        let unknown = Expected { cuda_major: 0, ..expected(&f) };
        let c = classify(&outcome(Some(r), ok_end(), vec![f.entry.join("lib")]), &unknown);
        assert!(!c.has(ReasonKind::WrongCudaMajor), "{:?}", c.reasons);
    }

    #[test]
    fn missing_runtime_is_a_missing_library() {
        let f = fx();
        let mut r = report(&f);
        r.cudart = Some(Cudart {
            load: LoadAttempt {
                name: "libcudart.so.12".into(),
                loaded: false,
                error: Some(LoadError { message: "libcudart.so.12: cannot open shared object file: No such file or directory".into(), code: None }),
            },
            runtime_version: None,
            runtime_error: None,
        });
        r.conv = Conv::Skipped { why: "the CUDA runtime did not load".into() };
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::MissingLibrary], "{:?}", c.reasons);
        assert!(c.reasons[0].message.contains("the CUDA runtime libcudart.so.12 was not found"), "{}", c.reasons[0]);
    }

    fn dispatcher_error(f: &Fx, message: &str, code: Option<i64>) -> CheckResult {
        let mut r = report(f);
        r.dispatcher = LoadAttempt { name: "libcudnn.so.9".into(), loaded: false, error: Some(LoadError { message: message.into(), code }) };
        r.cudnn = None;
        r.cudart = None;
        r.handle = None;
        r.modules.clear();
        r.conv = Conv::Skipped { why: "the cuDNN dispatcher did not load".into() };
        classify_report(f, r)
    }

    #[test]
    fn loader_errors_in_words() {
        let f = fx();
        let c = dispatcher_error(&f, "libcudnn.so.9: cannot open shared object file: No such file or directory", None);
        assert_eq!(kinds(&c), vec![ReasonKind::MissingLibrary]);
        assert!(c.reasons[0].message.contains("libcudnn.so.9 was not found") && c.reasons[0].message.contains("LD_LIBRARY_PATH is "), "{}", c.reasons[0]);
        let c = dispatcher_error(&f, "libz.so.1: cannot open shared object file: No such file or directory", None);
        assert_eq!(kinds(&c), vec![ReasonKind::MissingLibrary]);
        assert!(c.reasons[0].message.contains("needs libz.so.1"), "{}", c.reasons[0]);
        let c = dispatcher_error(&f, "/x/libcudnn.so.9: wrong ELF class: ELFCLASS32", None);
        assert_eq!(kinds(&c), vec![ReasonKind::LoaderError]);
        assert!(c.reasons[0].message.contains("wrong ELF class") && c.reasons[0].message.contains("32-bit"), "{}", c.reasons[0]);
        let c = dispatcher_error(&f, "/x/libcudnn.so.9: undefined symbol: cudnnFoo", None);
        assert!(c.reasons[0].message.contains("another version is mixed in"), "{}", c.reasons[0]);
    }

    #[test]
    fn windows_loader_codes_in_words() {
        let f = fx();
        let c = dispatcher_error(&f, "The specified module could not be found.", Some(126));
        assert_eq!(kinds(&c), vec![ReasonKind::MissingLibrary]);
        assert!(c.reasons[0].message.contains("126 (ERROR_MOD_NOT_FOUND)"), "{}", c.reasons[0]);
        let c = dispatcher_error(&f, "The specified procedure could not be found.", Some(127));
        assert_eq!(kinds(&c), vec![ReasonKind::LoaderError]);
        assert!(c.reasons[0].message.contains("different versions are mixed"), "{}", c.reasons[0]);
        let c = dispatcher_error(&f, "%1 is not a valid Win32 application.", Some(193));
        assert!(c.reasons[0].message.contains("64-bit process"), "{}", c.reasons[0]);
        let c = dispatcher_error(&f, "Access is denied.", Some(5));
        assert!(c.reasons[0].message.contains("error 5: Access is denied."), "{}", c.reasons[0]);
    }

    #[test]
    fn cudnn_status_with_a_gpu_fails_and_names_the_architecture() {
        let f = fx();
        let mut r = report(&f);
        r.handle = Some(status(3007, "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"));
        r.conv = Conv::Skipped { why: "cudnnCreate returned CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH".into() };
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::CudnnStatus]);
        let m = &c.reasons[0].message;
        assert!(m.contains("ARCH_MISMATCH") && m.contains("compute capability 9.0") && m.contains("up to 9.0"), "{m}");
        // With a GPU, NOT_INITIALIZED is a failure too.
        let mut r = report(&f);
        r.handle = Some(status(1, "CUDNN_STATUS_NOT_INITIALIZED"));
        r.conv = Conv::Skipped { why: "x".into() };
        assert_eq!(kinds(&classify_report(&f, r)), vec![ReasonKind::CudnnStatus]);
    }

    #[test]
    fn cudnn_status_without_gpu_other_than_not_initialized_fails() {
        let f = fx();
        let mut r = report(&f);
        r.driver = None;
        r.handle = Some(status(1002, "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"));
        r.conv = Conv::Skipped { why: "no NVIDIA driver".into() };
        let c = classify_report(&f, r);
        assert_eq!(c.status, CheckStatus::Fail, "fail wins over no-gpu");
        assert_eq!(kinds(&c), vec![ReasonKind::NoDriver, ReasonKind::CudnnStatus]);
        assert!(c.reasons[1].message.contains("sub-libraries are of different versions"), "{}", c.reasons[1]);
    }

    #[test]
    fn convolution_outcomes() {
        let f = fx();
        let mut r = report(&f);
        r.conv = done(3e-3);
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::WrongResult]);
        assert!(c.reasons[0].message.contains("3.000e-3"), "{}", c.reasons[0]);
        let mut r = report(&f);
        r.conv = done(f64::MAX);
        assert!(classify_report(&f, r).reasons[0].message.contains("non-finite"));
        let mut r = report(&f);
        r.conv = Conv::Failed { step: "cudnnFindConvolutionForwardAlgorithm".into(), status: status(3007, "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH") };
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::ConvFailed]);
        assert!(c.reasons[0].message.starts_with("cudnnFindConvolutionForwardAlgorithm returned CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"));
        let mut r = report(&f);
        r.conv = Conv::Skipped { why: "cudnnCreate is not exported".into() };
        assert_eq!(kinds(&classify_report(&f, r)), vec![ReasonKind::ConvFailed]);
        let mut r = report(&f);
        r.conv = Conv::NotRequested;
        assert_eq!(classify_report(&f, r).status, CheckStatus::Pass);
    }

    #[test]
    fn crash_reports_signal_step_stderr_and_missing_sub_library() {
        let f = fx();
        let mut o = outcome(None, ProbeEnd::Signaled { signal: 6, name: "SIGABRT".into() }, vec![]);
        o.last_step = Some("cudnnGetVersion".into());
        o.stderr_tail =
            "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory".into();
        let c = classify(&o, &expected(&f));
        assert_eq!(c.status, CheckStatus::Fail);
        assert_eq!(kinds(&c), vec![ReasonKind::MissingLibrary, ReasonKind::Crash]);
        assert!(c.reasons[0].message.contains("sub-library libcudnn_ops_infer.so.8"), "{}", c.reasons[0]);
        let m = &c.reasons[1].message;
        assert!(m.contains("SIGABRT (signal 6) during cudnnGetVersion") && m.contains("Could not load library"), "{m}");
        // Windows: cuDNN's message and an exit code.
        o.end = ProbeEnd::Exited { code: 0xC000_0409_u32 as i32 };
        o.stderr_tail = "Could not locate cudnn_graph64_9.dll. Please make sure it is in your library path!".into();
        let c = classify(&o, &expected(&f));
        assert!(c.reasons[0].message.contains("cudnn_graph64_9.dll"), "{}", c.reasons[0]);
        assert!(c.reasons[1].message.contains("0xC0000409 (STATUS_STACK_BUFFER_OVERRUN"), "{}", c.reasons[1]);
        assert!(c.report.is_none());
    }

    #[test]
    fn timeout_names_the_step() {
        let f = fx();
        let mut o = outcome(None, ProbeEnd::TimedOut { after_ms: 5000 }, vec![]);
        o.last_step = Some("cudnnCreate".into());
        let c = classify(&o, &expected(&f));
        assert_eq!(kinds(&c), vec![ReasonKind::Timeout]);
        assert!(c.reasons[0].message.contains("within 5 s during cudnnCreate and was killed"), "{}", c.reasons[0]);
    }

    #[test]
    fn no_report_and_no_process() {
        let f = fx();
        let mut o = outcome(None, ok_end(), vec![]);
        o.report_error = Some("it printed nothing on stdout".into());
        let c = classify(&o, &expected(&f));
        assert_eq!(kinds(&c), vec![ReasonKind::BadReport]);
        assert!(c.reasons[0].message.contains("printed nothing"));
        let o = outcome(None, ProbeEnd::SpawnFailed { error: "cannot run /x/cuenv: No such file".into() }, vec![]);
        assert!(classify(&o, &expected(&f)).reasons[0].message.contains("could not run"));
    }

    #[test]
    fn report_then_abnormal_exit_is_a_note() {
        let f = fx();
        let c = classify(&outcome(Some(report(&f)), ProbeEnd::Signaled { signal: 11, name: "SIGSEGV".into() }, vec![]), &expected(&f));
        assert_eq!(c.status, CheckStatus::Pass);
        assert!(c.notes.iter().any(|n| n.contains("SIGSEGV") && n.contains("after it had reported")), "{:?}", c.notes);
    }

    #[test]
    fn missing_library_messages_parse() {
        let text = "Unable to load any of {libcudnn_graph.so.9.5.0, libcudnn_graph.so.9.5, libcudnn_graph.so.9, libcudnn_graph.so}\nInvalid handle. Cannot load symbol cudnnGetVersion";
        assert_eq!(missing_libraries(text), vec!["libcudnn_graph.so.9"]);
        assert_eq!(
            missing_libraries(
                "Could not load library libcudnn_cnn_infer.so.8. Error: libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory"
            ),
            vec!["libcudnn_cnn_infer.so.8"]
        );
        assert_eq!(missing_libraries("Could not locate zlibwapi.dll. Please make sure it is in your library path!"), vec!["zlibwapi.dll"]);
        assert_eq!(missing_libraries("/opt/x/libcublasLt.so.12: cannot open shared object file"), vec!["libcublasLt.so.12"]);
        assert!(missing_libraries("all fine").is_empty());
    }

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

    #[test]
    fn status_words_and_json() {
        assert_eq!(CheckStatus::NoGpu.to_string(), "no-gpu");
        assert_eq!(serde_json::to_string(&CheckStatus::NoGpu).unwrap(), "\"no-gpu\"");
        assert_eq!(serde_json::to_string(&ReasonKind::WrongCudaMajor).unwrap(), "\"wrong-cuda-major\"");
        assert_eq!(decode_cudnn(90500), "9.5.0");
        assert_eq!(decode_cudnn(8904), "8.9.4");
        assert_eq!(decode_cudnn(8101), "8.1.1");
        assert_eq!(cuda_version(12060), "12.6");
        assert!(is_under(Path::new("/a/b/c"), Path::new("/a/b")));
        assert!(!is_under(Path::new("/a/bc"), Path::new("/a/b")));
    }
}
