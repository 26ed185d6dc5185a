//! The parent side of `cuenv check`: run the probe in a fresh process with a profile's exact
//! environment ([`run_probe`], file `run.rs`), then turn what it reported into one status with
//! reasons in words ([`classify()`], file `classify.rs`; the wording of loader and cuDNN errors
//! is in `explain.rs`). This file holds the verdict types both halves share.
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
//! Facts relied on (docs/facts.md §2, §5, §7): cuDNN aborts the process when a sub-library is
//! missing ("Could not load library libcudnn_ops_infer.so.8", "Unable to load any of
//! {libcudnn_graph.so.9, ...}", "Could not locate cudnn_graph64_9.dll"); without a GPU the
//! version calls work and `cudnnCreate` returns `CUDNN_STATUS_NOT_INITIALIZED`;
//! `LD_LIBRARY_PATH` beats the libraries' own `$ORIGIN` RUNPATH.

pub mod activate;
pub mod gpufit;

mod classify;
mod explain;
#[cfg(test)]
mod fixtures;
mod run;

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::cudnn::version::Version;
use crate::probe::Report;

pub use classify::classify;
pub(crate) use explain::{cuda_version, decode_cudnn};
pub use explain::{explain_windows_error, missing_libraries};
pub(crate) use run::env_var;
pub use run::{ProbeEnd, ProbeOutcome, run_driver_probe, run_probe, signal_name};

/// What a profile's check expects to find.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// The store entry's folder (any path that resolves to it: the view's link works too).
    pub entry_dir: PathBuf,
    /// The entry's cuDNN version (3 or 4 parts).
    pub version: Version,
    /// The profile's CUDA major; `None` when unknown (`cuenv doctor` without a profile): the CUDA
    /// major is then not checked.
    pub cuda_major: Option<u64>,
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
    /// One of cuDNN's own version checks (`cudnn<Sub>VersionCheck`) returned an error: the
    /// sub-library it concerns and the libraries it depends on are of two releases.
    SubLibraryMismatch,
    /// A CUDA library around cuDNN is wrong: one cuDNN loads by name is missing or of another
    /// CUDA major, NVRTC cannot compile (its builtins), an nvJitLink is older than its user,
    /// or one family is mapped in two majors ([`crate::companion`], docs/loader.md F1-F4).
    Companion,
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
    /// The driver is too old for the profile's CUDA runtime ([`crate::check::gpufit`]).
    DriverTooOld,
    /// A GPU's compute capability is outside what the profile's cuDNN supports ([`crate::check::gpufit`]).
    UnsupportedGpu,
    /// A framework in the profile's bound env was built against another cuDNN or CUDA major,
    /// or a newer minor, than the profile's ([`crate::requires`]).
    FrameworkMisfit,
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
    /// The docs/loader.md rule this reason is a verdict of, when it judges the cuDNN set
    /// (decisions.md 7: the id `store add`, `doctor` and `doctor --pid` give the same set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<crate::error::Rule>,
    /// What to do next, where the rule that made the reason says it (the CUDA library rules,
    /// [`crate::companion::Verdict::hint`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind_word(), self.message)
    }
}

impl Reason {
    /// A reason of `kind` citing no rule.
    pub fn new(kind: ReasonKind, message: impl Into<String>) -> Self {
        Reason { kind, message: message.into(), rule: None, hint: None }
    }

    /// The reason as `check` prints it: its kind with the rule's id when it cites one
    /// (`sub-library version check[V2]: ...`). Its `Display` leaves the id out, for sentences
    /// that embed it under a label of their own (doctor's `problem[V2]:`).
    pub fn cited(&self) -> String {
        format!("{}: {}", crate::error::rule::labelled(self.kind_word(), self.rule), self.message)
    }

    /// The same reason with `hint`.
    pub fn hinting(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The same reason citing `rule`.
    pub fn citing(mut self, rule: crate::error::Rule) -> Self {
        self.rule = Some(rule);
        self
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
            ReasonKind::SubLibraryMismatch => "sub-library version check",
            ReasonKind::Companion => "CUDA library",
            ReasonKind::WrongResult => "wrong convolution result",
            ReasonKind::ConvFailed => "convolution failed",
            ReasonKind::Crash => "crash",
            ReasonKind::Timeout => "timeout",
            ReasonKind::BadReport => "no report",
            ReasonKind::NoDriver => "no driver",
            ReasonKind::NoDevice => "no GPU",
            ReasonKind::DriverTooOld => "driver too old",
            ReasonKind::UnsupportedGpu => "unsupported GPU",
            ReasonKind::FrameworkMisfit => "framework misfit",
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

    /// Adds what rules the profile out on this machine ([`crate::check::gpufit::judge`]) as the
    /// first reasons (they explain what the probe saw, e.g. `CUDNN_STATUS_NOT_INITIALIZED`
    /// under a driver too old for the runtime); any of them makes the status `fail`.
    pub fn add_misfits(&mut self, misfits: &[crate::check::gpufit::Misfit]) {
        if misfits.is_empty() {
            return;
        }
        let front = misfits.iter().map(|m| Reason {
            kind: match m.kind {
                crate::check::gpufit::MisfitKind::DriverTooOld => ReasonKind::DriverTooOld,
                crate::check::gpufit::MisfitKind::UnsupportedGpu => ReasonKind::UnsupportedGpu,
            },
            message: m.to_string(),
            rule: None,
            hint: None,
        });
        self.reasons.splice(0..0, front);
        self.status = CheckStatus::Fail;
    }

    /// Adds a framework misfit ([`crate::requires`]) as a failing reason: the profile's cuDNN
    /// or CUDA cannot serve a framework of its bound env, whatever the probe saw.
    pub fn add_framework_misfit(&mut self, message: String) {
        self.reasons.push(Reason {
            kind: ReasonKind::FrameworkMisfit,
            message,
            rule: None,
            hint: Some("give the profile the cuDNN and toolkit the framework was built for, or install a framework build that matches the profile".into()),
        });
        self.status = CheckStatus::Fail;
    }

    /// Adds the verdicts of the CUDA library rules judged without the probe
    /// ([`crate::companion::judge_jitlink_users`] over the profile's folders) as failing
    /// reasons citing their rule; any of them makes the status `fail`.
    pub fn add_companion_verdicts(&mut self, verdicts: Vec<crate::companion::Verdict>) {
        for v in verdicts {
            if self.reasons.iter().any(|r| r.message == v.message) {
                continue;
            }
            self.reasons.push(Reason::new(ReasonKind::Companion, v.message).citing(v.rule).hinting(v.hint));
            self.status = CheckStatus::Fail;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::classify::is_under;
    use super::*;
    use std::path::Path;

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
