//! The rules a verdict cites, by the id docs/loader.md gives them.
//!
//! docs/decisions.md 7: `store add` (what it can see statically), `check`, `doctor` and
//! `doctor --pid` give the same verdict class and rule id for the same set; only the wording
//! differs. Each command attaches a [`Rule`] to the error, reason or finding it reports for
//! such a set, and prints it after the verdict word (`error[R2]:`, `problem[R2]:`); `--json`
//! outputs carry it as `"rule": "R2"`.

use std::fmt;

/// A rule of docs/loader.md that decides a verdict on a cuDNN set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// R2: the set lacks a sub-library its own files name (read from the dispatcher and each
    /// member; or observed: a version check that could not load its sub-library).
    IncompleteSet,
    /// V2: the set holds libraries of two releases (their files' own versions, or observed:
    /// a version check answering a version mismatch).
    TwoReleases,
    /// F1: one process maps libraries of one CUDA family (cudart, cuBLAS, NVRTC, ...) of two
    /// majors (`libcudart.so.12` and `libcudart.so.13`).
    OneMajorPerFamily,
    /// F2: NVRTC's builtins are not the ones its own file names (missing, or of another
    /// release; observed: compiling a trivial program fails).
    BuiltinsOfNvrtc,
    /// F3: a library imports versioned nvJitLink entry points (`__nvJitLinkAddData_12_6`)
    /// that the nvJitLink it gets does not export: that nvJitLink is older than its user.
    JitLinkOlderThanUser,
    /// F4: a CUDA library cuDNN loads by name at run time (cuBLAS, cuBLASLt, NVRTC) is not
    /// found, or the name gives a library of another CUDA major.
    CompanionMissing,
}

impl Rule {
    /// Every rule, in id order.
    pub const ALL: [Rule; 6] =
        [Rule::IncompleteSet, Rule::TwoReleases, Rule::OneMajorPerFamily, Rule::BuiltinsOfNvrtc, Rule::JitLinkOlderThanUser, Rule::CompanionMissing];

    /// The id docs/loader.md gives the rule.
    pub fn id(self) -> &'static str {
        match self {
            Rule::IncompleteSet => "R2",
            Rule::TwoReleases => "V2",
            Rule::OneMajorPerFamily => "F1",
            Rule::BuiltinsOfNvrtc => "F2",
            Rule::JitLinkOlderThanUser => "F3",
            Rule::CompanionMissing => "F4",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl serde::Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

impl<'de> serde::Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Rule, D::Error> {
        let id = String::deserialize(d)?;
        Rule::ALL.into_iter().find(|r| r.id() == id).ok_or_else(|| serde::de::Error::custom(format!("unknown rule id `{id}`")))
    }
}

/// `label` with the rule's id when there is one: `error[R2]`, `problem`.
pub fn labelled(label: &str, rule: Option<Rule>) -> String {
    match rule {
        Some(r) => format!("{label}[{}]", r.id()),
        None => label.to_string(),
    }
}
