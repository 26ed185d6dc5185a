//! The errors of `apply`, `plan` and `lock`: [`Error`] wraps the error of the stage that
//! failed (each carries its own hint and exit code), and [`LockedDrift`] is `--locked`
//! meeting a lock that would change. A leaf of the pipeline: every stage returns these.

use std::path::{Path, PathBuf};

use crate::cudnn::platform::Platform;
use crate::error::{Diagnose, ExitCode};
use crate::{generation, link, profile::lockfile};

/// Why `apply`, `plan` or `lock` failed: the error of the step that failed (with its hint
/// and exit code), or an I/O error while building a generation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The profile file is invalid, or names what cannot be had (with its line and column).
    #[error(transparent)]
    Profile(#[from] crate::profile::Error),
    /// `lab.lock` cannot be read or written.
    #[error(transparent)]
    Lockfile(#[from] lockfile::Error),
    /// `--locked`, and the lock would change.
    #[error(transparent)]
    Drift(#[from] LockedDrift),
    /// Another profile file would remove the current lab's profiles (no `--replace`).
    #[error(transparent)]
    Replacing(#[from] Replacing),
    /// Fetching a `from` source failed.
    #[error(transparent)]
    Sources(#[from] crate::sources::Error),
    /// Reading, switching or recording a generation failed.
    #[error(transparent)]
    Generation(#[from] generation::Error),
    /// A view's link could not be made.
    #[error(transparent)]
    Link(#[from] link::LinkError),
    /// The store could not remove an entry (`gc`).
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    /// The writer lock could not be taken.
    #[error(transparent)]
    Lock(#[from] crate::home::writer_lock::LockError),
    /// An I/O step failed (what cuenv was doing, where, and a hint by the kind of failure).
    #[error(transparent)]
    Io(#[from] crate::error::IoError),
    /// Walking a store entry to copy it failed.
    #[error(transparent)]
    Walk(#[from] walkdir::Error),
    /// A path that goes into the manifest or a shim is not valid Unicode.
    #[error(transparent)]
    NotUnicode(#[from] crate::sys::paths::NotUnicode),
    /// A manifest could not be written as TOML.
    #[error(transparent)]
    Manifest(#[from] toml::ser::Error),
    /// A profile cannot run on this machine's driver or GPU (no `--force`).
    #[error(transparent)]
    GpuFit(#[from] crate::check::gpufit::Refusal),
    /// A profile does not fit the frameworks of the env it is bound to (no `--force`).
    #[error(transparent)]
    Frameworks(#[from] crate::requires::Refusal),
    /// cuDNN has no build for this machine.
    #[error("cuDNN is not built for this platform")]
    UnsupportedPlatform,
    /// What resolution chose is gone (another process changed the store meanwhile).
    #[error("{0}")]
    Vanished(&'static str),
    /// `lab.lock` must change but is read-only (found before anything was built).
    #[error("the lock file {} is read-only, and this apply must change it", path.display())]
    LockReadOnly {
        /// The lock file.
        path: std::path::PathBuf,
    },
    /// A signal or a Windows console event ([`super::interrupt`]) came during the
    /// transaction: it was undone.
    #[error("interrupted by {}: generation {built} was built but {}", super::interrupt::name(*signal), current.map(|c| format!("generation {c} stays current")).unwrap_or_else(|| "no generation is current".into()))]
    Interrupted {
        /// The signal or console event, as [`super::interrupt::caught`] reports it.
        signal: i32,
        /// The generation built.
        built: u64,
        /// The generation current again.
        current: Option<u64>,
    },
}

crate::error::diagnose! {
    impl Diagnose for Error {
        transparent Profile, Lockfile, Drift, Replacing, Sources, Generation, Link, Store, Lock, Io, NotUnicode, GpuFit, Frameworks;
        fn hint(&self) -> Option<String> {
            match self {
                Error::Walk(e) => Some(match e.path() {
                    Some(p) => format!("cuenv could not read {} while copying a store entry; `cuenv store verify` checks the store", p.display()),
                    None => "cuenv could not read a store entry while copying it; `cuenv store verify` checks the store".into(),
                }),
                Error::Manifest(_) => Some("this is a bug in cuenv: please report it with the profile file".into()),
                Error::UnsupportedPlatform => Some("cuDNN exists for windows-x86_64, linux-x86_64, linux-sbsa, linux-aarch64 and linux-ppc64le only".into()),
                Error::Vanished(_) => Some("another process changed the store while apply ran; run `cuenv apply` again".into()),
                Error::LockReadOnly { path } => Some(format!(
                    "nothing was built or switched; make it writable (`chmod u+w {}`) and apply again, or apply with --locked to keep it as it is",
                    path.display()
                )),
                Error::Interrupted { .. } => Some("run `cuenv apply` again to apply the profile file".into()),
            }
        }
        fn exit_code(&self) -> ExitCode {
            match self {
                Error::Walk(_) | Error::Manifest(_) | Error::UnsupportedPlatform | Error::Vanished(_) | Error::Interrupted { .. } => ExitCode::Failure,
                Error::LockReadOnly { .. } => ExitCode::Invalid,
            }
        }
    }
}

/// `--locked` and the lock file disagree.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct LockedDrift {
    /// The lock, the profile file, the platform, and each difference on its own line.
    pub message: String,
    /// What to do: the exact command that updates the lock.
    pub hint: String,
}

impl LockedDrift {
    /// The drift of `platform`'s section of `file`'s lock: `message`, and a hint naming the
    /// command that rewrites that section (`cuenv apply` on this host, `cuenv lock` otherwise).
    pub fn new(message: String, file: &Path, platform: Platform, missing: bool) -> LockedDrift {
        let update = if Platform::host() == Some(platform) {
            format!("cuenv apply {}", file.display())
        } else {
            format!("cuenv lock {} --platform {platform}", file.display())
        };
        let hint = if missing {
            format!("run `{update}` to write it")
        } else {
            format!("run `{update}` (without --locked) to update the lock file, or restore the store entries and toolkits it names")
        };
        LockedDrift { message, hint }
    }
}

impl Diagnose for LockedDrift {
    fn hint(&self) -> Option<String> {
        Some(self.hint.clone())
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::Invalid
    }
}

/// Applying another profile file than the one that built the current generation would
/// remove profiles (and their conda shims) that the other file declared: `apply` refuses
/// that unless told `--replace` (see `replacing`).
#[derive(Debug, thiserror::Error)]
#[error(
    "generation {generation} was built from {}, not from {}: applying it would remove {} {} (and their conda shims)",
    current.display(),
    file.display(),
    if lost.len() == 1 { "profile" } else { "profiles" },
    lost.join(", ")
)]
pub struct Replacing {
    /// The current generation.
    pub generation: u64,
    /// The profile file that built it.
    pub current: PathBuf,
    /// The profile file being applied.
    pub file: PathBuf,
    /// The profiles (with their shims) that would go.
    pub lost: Vec<String>,
}

impl crate::error::Diagnose for Replacing {
    fn hint(&self) -> Option<String> {
        Some(format!(
            "to replace that lab with this one, run `cuenv apply --replace {}`; to keep both, give each lab its own home (--home DIR or CUENV_HOME)",
            self.file.display()
        ))
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        crate::error::ExitCode::Invalid
    }
}

/// `apply`'s verdict when a profile's check failed: generation `generation` was built, and the
/// previous one (or none) is current again. Exit code 4.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the check failed for {}; generation {generation} was built but {}",
    profiles.iter().map(|p| format!("profile {p}")).collect::<Vec<_>>().join(", "),
    current.map(|p| format!("generation {p} stays current")).unwrap_or_else(|| "no generation is current".into())
)]
pub struct CheckReverted {
    /// The profiles whose check failed.
    pub profiles: Vec<String>,
    /// The generation built and then reverted.
    pub generation: u64,
    /// The generation current again (`None`: none is).
    pub current: Option<u64>,
}

impl Diagnose for CheckReverted {
    fn hint(&self) -> Option<String> {
        Some("fix what the reasons above say (or set `check = \"none\"` for that profile), then apply again; `cuenv check` re-runs the checks".into())
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::CheckFailed
    }
}
