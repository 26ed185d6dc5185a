//! What the frameworks of a Python env require of cuDNN and CUDA, read from the files they
//! install, never by importing them (docs/requirements.md):
//! - a wheel's `*.dist-info/METADATA` `Requires-Dist` pins of NVIDIA's wheels
//!   (`nvidia-cudnn-cu12==9.1.0.70`, `nvidia-cuda-runtime-cu12==12.1.105`), their markers
//!   and extras read as pip reads them ([`pip`]);
//! - the build facts a framework writes into its own files: `torch/version.py` (`cuda`) and
//!   a `+cuNNN` local version, TensorFlow's `build_info.py` (`cuda_version`, `cudnn_version`,
//!   which holds the major only) ([`build`]);
//! - conda's package records (`conda-meta/*.json` `depends`) ([`conda`]).
//!
//! Each requirement is judged by the rule the frameworks apply at run time ([`Need::judge`]):
//! the same major as the release the framework was built against, and a minor not older than
//! it (PyTorch's `torch/backends/cudnn/__init__.py` from cuDNN 7 on, XLA's
//! `IsSourceCompatibleWithCudnnLibrary`; CUDA's minor-version compatibility, where a
//! framework built with 12.8 can miss symbols in a 12.6 cuBLAS). A spec in a form not read is
//! "not verified", never "fine".

pub mod build;
pub mod conda;
pub mod pip;
pub mod propose;

use std::path::PathBuf;

use crate::cudnn::platform::Platform;
use crate::pyenv::PyEnv;

/// Which library a requirement is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lib {
    /// cuDNN: the release of its dispatcher and sub-libraries.
    Cudnn,
    /// The CUDA runtime libraries (cudart, cuBLAS, NVRTC): the CUDA toolkit release.
    Cuda,
}

impl Lib {
    /// The library in words: "cuDNN", "CUDA".
    pub fn noun(self) -> &'static str {
        match self {
            Lib::Cudnn => "cuDNN",
            Lib::Cuda => "CUDA",
        }
    }
}

/// A requirement in the form it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// A PEP 440 specifier set from `Requires-Dist` (`==9.1.0.70`, `>=9.8,<10`).
    Pip(pep508_rs::pep440_rs::VersionSpecifiers),
    /// A conda version spec from a package record (`>=9.13.1.26,<10.0a0`).
    Conda(String),
    /// The release a framework's build facts say it was built with: major and, where written,
    /// minor (`torch/version.py` `cuda = '12.1'`: (12, Some(1)); TensorFlow's
    /// `cudnn_version = '8'`: (8, None)).
    BuiltWith(u64, Option<u64>),
}

/// One framework's requirement on cuDNN or CUDA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// The framework and its version: "torch 2.4.1", "jaxlib 0.7.2".
    pub framework: String,
    /// The file it was read from (METADATA, version.py, build_info.py, a conda record).
    pub file: PathBuf,
    /// The library it is on.
    pub lib: Lib,
    /// The requirement.
    pub spec: Spec,
    /// The requirement as written there: "nvidia-cudnn-cu12==9.1.0.70",
    /// "cudnn >=9.13.1.26,<10.0a0", "cuda_version '12.3'".
    pub text: String,
}

/// How a release fits a [`Need`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It is a release the requirement names.
    Fits,
    /// Same major, newer than the release the framework declares: it loads and runs (the
    /// rule above), but it is not the release the framework was tested with. The words say how.
    Newer(String),
    /// The framework cannot work with it: another major, or an older minor. The words say why.
    Misfit(String),
    /// The requirement is in a form cuenv does not read. The words say what.
    NotVerified(String),
}

impl Need {
    /// The (major, minor) the requirement's lowest admitted release has: the release the
    /// framework was built against. `None` when the spec states no lower bound cuenv reads.
    pub fn floor(&self) -> Option<(u64, Option<u64>)> {
        match &self.spec {
            Spec::BuiltWith(major, minor) => Some((*major, *minor)),
            Spec::Conda(s) => conda::floor(s).map(|(a, b)| (a, Some(b))),
            Spec::Pip(s) => pip::floor(s).map(|(a, b)| (a, Some(b))),
        }
    }

    /// Whether the release `have` (`9.5.0.50`, `12.4`) is one the spec names; `None` where
    /// the spec cannot say (a build fact, a form not read).
    fn names(&self, have: &str) -> Option<bool> {
        match &self.spec {
            Spec::BuiltWith(..) => None,
            Spec::Conda(s) => conda::satisfies(have, s),
            Spec::Pip(s) => have.parse::<pep508_rs::pep440_rs::Version>().ok().map(|v| s.contains(&v)),
        }
    }

    /// Judges the release `have` of [`Need::lib`] (`"9.5.0.50"`, a toolkit's `"12.4"`) by
    /// the run-time rule in the module doc: another major or an older minor than the
    /// requirement's floor is a [`Verdict::Misfit`]; a release the spec names
    /// [`Verdict::Fits`]; the same major and a newer minor that the spec does not name (an
    /// exact pin, an upper bound inside the major) [`Verdict::Newer`]; a spec without a floor
    /// cuenv reads [`Verdict::NotVerified`].
    pub fn judge(&self, have: &str) -> Verdict {
        let got = conda_parts(have);
        let lib = self.lib.noun();
        let Some((major, minor)) = self.floor() else {
            return match self.names(have) {
                Some(true) => Verdict::Fits,
                _ => Verdict::NotVerified(format!("{} requires {} `{}`, a form cuenv does not judge {lib} {have} by", self.framework, lib, self.text)),
            };
        };
        if got.0 != major {
            return Verdict::Misfit(format!(
                "{} was built against {lib} {major} ({}); {lib} {have} is another major, which it cannot load or use",
                self.framework, self.text
            ));
        }
        if let Some(m) = minor
            && got.1 < m
        {
            return Verdict::Misfit(format!(
                "{} was built against {lib} {major}.{m} ({}); {have} is an older minor, which it refuses (or misses symbols in) at its first use of {lib}",
                self.framework, self.text
            ));
        }
        match (self.names(have), minor) {
            (Some(true), _) => Verdict::Fits,
            (None, None) => Verdict::NotVerified(format!(
                "{} was built against {lib} {major} ({}), which gives no minor: {have} has the same major, its minor is not verified",
                self.framework, self.text
            )),
            (None, Some(_)) => Verdict::Fits,
            (Some(false), _) => Verdict::Newer(format!(
                "{} declares {} and {lib} {have} is a newer release of the same major: it loads and works, but it is not the release {} was tested with",
                self.framework,
                self.text,
                self.framework.split(' ').next().unwrap_or(&self.framework)
            )),
        }
    }
}

/// (major, minor) of a release written `9.5.0.50`, `12.4`, `64_112` (TensorFlow's Windows
/// form: 11.2); missing parts are 0.
fn conda_parts(v: &str) -> (u64, u64) {
    let mut it = v.split(['.', '_', '+', '-']).map(|p| p.chars().take_while(char::is_ascii_digit).collect::<String>().parse::<u64>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

/// Every requirement the frameworks of `env` state on cuDNN and CUDA for `platform`: pip's
/// METADATA (and the CUDA major a `nvidia-cudnn-cuNN` pin implies), the build facts, conda's
/// records. A build fact is dropped where another
/// requirement of the same framework and library already says as much: the same major, and
/// the same minor where the fact gives one (TensorFlow 2.14+: `cudnn_version '8'` beside its
/// `and-cuda` pin `==8.9.4.25`; torch's `cuda '12.1'` beside `nvidia-cuda-runtime-cu12==12.1.105`).
/// Sorted by framework, then library, then file.
pub fn needs(env: &PyEnv, platform: Platform) -> Vec<Need> {
    let mut all = pip::needs(env, platform);
    // A pin of a cuDNN wheel built for one CUDA major (`nvidia-cudnn-cu11`) requires that major.
    let implied: Vec<Need> = all
        .iter()
        .filter(|n| n.lib == Lib::Cudnn)
        .filter_map(|n| {
            let name = n.text.split(|c: char| "=<>!~(; ".contains(c)).next()?;
            let major = name.rsplit_once("-cu")?.1.parse::<u64>().ok()?;
            Some(Need { lib: Lib::Cuda, spec: Spec::BuiltWith(major, None), text: format!("{name}: a cuDNN for CUDA {major}"), ..n.clone() })
        })
        .collect();
    all.extend(implied);
    all.extend(build::needs(env));
    if env.kind.is_conda() {
        all.extend(conda::needs(&env.prefix));
    }
    let base = |n: &Need| n.framework.split(' ').next().unwrap_or_default().to_ascii_lowercase().replace('_', "-");
    let said_by_another = |n: &Need| {
        let Spec::BuiltWith(major, minor) = n.spec else { return false };
        all.iter().any(|o| {
            !matches!(o.spec, Spec::BuiltWith(..))
                && o.lib == n.lib
                && base(o) == base(n)
                && o.floor().is_some_and(|(a, b)| a == major && b.is_some() && (minor.is_none() || b == minor))
        })
    };
    let keep: Vec<bool> = all.iter().map(|n| !said_by_another(n)).collect();
    let mut out: Vec<Need> = all.into_iter().zip(keep).filter(|(_, k)| *k).map(|(n, _)| n).collect();
    out.sort_by(|a, b| (&a.framework, a.lib as u8, &a.file).cmp(&(&b.framework, b.lib as u8, &b.file)));
    out.dedup();
    out
}

/// A requirement judged against a release.
#[derive(Debug, Clone)]
pub struct Judged {
    /// The requirement.
    pub need: Need,
    /// The release judged (`9.5.0.50`, a toolkit's `12.4`).
    pub have: String,
    /// How it fits.
    pub verdict: Verdict,
}

/// Judges the requirements of the frameworks in the env at `prefix` (`found_by`: how the
/// profile names it, `conda-env` / `python-env`) against a profile's cuDNN release `cudnn` and
/// toolkit release `cuda`, for `platform`; the requirements that fit are left out. Empty when
/// `prefix` is no Python env.
pub fn judge_profile(prefix: &std::path::Path, found_by: &str, platform: Platform, cudnn: &str, cuda: &str) -> Vec<Judged> {
    let Some(env) = crate::pyenv::at(prefix, found_by) else { return Vec::new() };
    needs(&env, platform)
        .into_iter()
        .filter_map(|need| {
            let have = match need.lib {
                Lib::Cudnn => cudnn,
                Lib::Cuda => cuda,
            };
            let verdict = need.judge(have);
            (verdict != Verdict::Fits).then(|| Judged { need, have: have.to_string(), verdict })
        })
        .collect()
}

/// Each profile whose bound env holds a framework that cannot work with the profile's cuDNN or
/// CUDA ([`Verdict::Misfit`]): `cuenv apply` refuses before anything is built (exit 4, as a
/// driver or GPU misfit), unless `--force`.
#[derive(Debug)]
pub struct Refusal {
    /// (profile, the misfits' words) for each profile refused.
    pub profiles: Vec<(String, Vec<String>)>,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (p, why)) in self.profiles.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "profile {p} does not fit the frameworks in its env: {}", why.join("; "))?;
        }
        Ok(())
    }
}

impl std::error::Error for Refusal {}

impl crate::error::Diagnose for Refusal {
    fn hint(&self) -> Option<String> {
        Some(
            "nothing was built or switched; give the profile a cuDNN and toolkit the frameworks were built for, or install framework builds that match it; `cuenv apply --force` builds it anyway, but its check fails on the same rule and the apply is undone; `--force --no-check` keeps it without a check"
                .into(),
        )
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        crate::error::ExitCode::CheckFailed
    }
}

/// The words for one judged requirement: the verdict's words (which name the framework, what
/// it declares and the release judged) and the file the requirement was read from.
pub fn describe(j: &Judged) -> String {
    let why = match &j.verdict {
        Verdict::Fits => format!("{} fits {} {}", j.need.framework, j.need.lib.noun(), j.have),
        Verdict::Newer(w) | Verdict::Misfit(w) | Verdict::NotVerified(w) => w.clone(),
    };
    format!("{why} (read from {})", j.need.file.display())
}

#[cfg(test)]
mod tests;
