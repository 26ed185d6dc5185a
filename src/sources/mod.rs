//! Getting what profiles name with `from`: cuDNN releases from NVIDIA's redist server, PyPI,
//! a URL or a local path, and wheel toolkit roots (CUDA toolkit roots built from wheels) from PyPI wheels ([`crate::toolkit::wheel`]).
//!
//! Runs in `apply` before resolution, under the writer lock: after it, the store and
//! `<home>/toolkits` hold what the profiles need, and resolution proceeds as for anything
//! imported by hand. A pin in `lab.lock` (`cudnn-sha256`) must be matched by what the source
//! serves, so `apply` on another machine (through any index or mirror) imports exactly the
//! same bytes, or fails.

mod ensure;
mod preflight;
mod runtimes;

pub use ensure::{Ensured, ensure, ensure_reachable};
pub use preflight::{Preflight, preflight};

use std::path::Path;

use crate::cudnn::version::{Op, Version};
use crate::fetch::{self, Endpoints};
use crate::home::layout::Layout;
use crate::home::writer_lock::WriterLock;
use crate::profile::{self, ProfileFile, Requirement, Source};
use crate::sys::progress::Progress;

/// True when a `from` location is an http(s) URL (else it is a path).
pub fn is_url(location: &str) -> bool {
    location.starts_with("http://") || location.starts_with("https://")
}

/// The endpoints for `file`: `[settings] pypi-index` / `nvidia-mirror` / `find-links`,
/// overridden by `CUENV_PYPI_INDEX` / `CUENV_NVIDIA_MIRROR` / `CUENV_FIND_LINKS`;
/// `CUENV_OFFLINE` or `offline` keep off the network.
pub fn endpoints(file: &ProfileFile, offline: bool) -> Endpoints {
    let env = Endpoints::from_env();
    let base = file.path.parent().unwrap_or(Path::new("."));
    Endpoints {
        pypi_index: env.pypi_index.or_else(|| file.settings.pypi_index.clone()),
        nvidia_mirror: env.nvidia_mirror.or_else(|| file.settings.nvidia_mirror.clone()),
        offline: offline || env.offline,
        // `[settings] find-links` is relative to the profile file.
        find_links: env.find_links.or_else(|| file.settings.find_links.as_ref().map(|d| base.join(d))),
    }
}

/// The one version a fetchable requirement names (`"9.5.0.50"`, `"12.6"`, `"=9.5"`).
fn plain_version(file: &ProfileFile, req: &Requirement, what: &str) -> Result<Version, profile::Error> {
    match req.version.comparators() {
        [c] if matches!(c.op, Op::Prefix | Op::Exact) => Ok(c.version.clone()),
        _ => Err(file.error_at(
            req.span.clone(),
            format!("`{what} = \"{}\"` cannot be fetched: a `from` source needs one version", req.version),
            Some("write the version to fetch, e.g. `version = \"9.5.0.50\"` (or a prefix like \"9.5\" for the newest 9.5.x)".into()),
        )),
    }
}

/// What every fetch needs: the home, the writer lock, the endpoints and a progress sink.
struct Cx<'a> {
    layout: &'a Layout,
    writer: &'a WriterLock,
    ep: &'a Endpoints,
    progress: &'a dyn Progress,
    /// Downloads started ahead of need ([`ensure_reachable`]).
    prefetch: Option<&'a fetch::Prefetch>,
    /// Pinned CUDA runtime roots being built ahead of need ([`ensure_reachable`]).
    runtimes: Option<&'a runtimes::RuntimesAhead>,
    /// The profiles whose lab.lock pin was stale ([`crate::profile::lockfile::fresh_pins`]).
    stale: &'a [String],
}

/// True when `e` says a source could not be reached (no answer, offline, a server failing),
/// as opposed to a source that answered that it has no such file.
fn unreachable(e: &fetch::Error) -> bool {
    matches!(e, fetch::Error::Offline { .. } | fetch::Error::Connect { .. } | fetch::Error::Interrupted { .. })
        || matches!(e, fetch::Error::Status { status, .. } if *status >= 500)
}

/// True when `e` says a source answered that it has no such file (no such project,
/// version, wheel for the platform, manifest or archive): the next source of a list is tried.
fn not_offered(e: &fetch::Error) -> bool {
    matches!(
        e,
        fetch::Error::NoSuchProject { .. }
            | fetch::Error::NoSuchVersion { .. }
            | fetch::Error::NoWheel { .. }
            | fetch::Error::NoManifest { .. }
            | fetch::Error::NoArtifact { .. }
    )
}

/// `PyPI` / `NVIDIA`.
fn source_label(s: fetch::Source) -> &'static str {
    match s {
        fetch::Source::Pypi => "PyPI",
        fetch::Source::Nvidia => "NVIDIA",
    }
}

/// The fetch source of a profile source (`None` for a URL or a path).
fn fetch_source(s: &Source) -> Option<fetch::Source> {
    match s {
        Source::Pypi => Some(fetch::Source::Pypi),
        Source::Nvidia => Some(fetch::Source::Nvidia),
        Source::Location(_) => None,
    }
}

/// Finds the cuDNN artifact of `req` (its `from` left to set) among `sources`, in order: the
/// next source is tried only when one answers that it has no such file (a source that cannot
/// be reached stops the search, so that which source serves a platform never depends on a
/// network failure). Returns the artifact and its source, or every source tried with its error.
fn find_cudnn(
    client: &fetch::Client,
    req: &fetch::FetchRequest,
    sources: &[fetch::Source],
) -> Result<(fetch::Artifact, fetch::Source), Vec<(fetch::Source, fetch::Error)>> {
    let mut tried = Vec::new();
    for &from in sources {
        match fetch::resolve_cudnn(client, &fetch::FetchRequest { from, ..req.clone() }) {
            Ok(a) => return Ok((a, from)),
            Err(e) => {
                let next = not_offered(&e);
                tried.push((from, e));
                if !next {
                    break;
                }
            }
        }
    }
    Err(tried)
}

/// Why a profile is left unpinned: what was asked, then each source tried and its answer,
/// e.g. `cuDNN 8.8.0.121 for CUDA 11 (windows-x86_64): PyPI has no windows-x86_64 wheel;
/// NVIDIA could not be reached`.
fn unpinned_reason(what: &str, tried: &[(fetch::Source, fetch::Error)]) -> String {
    let each: Vec<String> = tried
        .iter()
        .map(|(s, e)| {
            let said = match e {
                fetch::Error::NoWheel { platform, .. } => format!("has no {platform} wheel"),
                fetch::Error::NoSuchProject { .. } | fetch::Error::NoSuchVersion { .. } => "has no such version".to_string(),
                fetch::Error::NoManifest { .. } | fetch::Error::NoArtifact { .. } => "has no such archive".to_string(),
                fetch::Error::Offline { .. } => "was not asked (offline)".to_string(),
                _ => "could not be reached".to_string(),
            };
            format!("{} {said}", source_label(*s))
        })
        .collect();
    format!("{what}: {}", each.join("; "))
}

/// Checks every cuDNN `from` of `file` before anything is fetched or planned: a location
/// that is neither "pypi", "nvidia" nor an http(s) URL must be a path that exists (relative
/// to the profile file). Every bad `from` is reported (with its line and a hint), not only
/// the first. (A CUDA `from` other than "pypi" is refused by [`crate::profile::parse`].)
pub fn validate(file: &ProfileFile) -> Result<(), profile::Error> {
    let mut errors = Vec::new();
    for p in &file.profiles {
        if let Some(dir) = runtimes::wheel_folder(file, p)
            && !dir.is_dir()
        {
            let from = p.cuda.from.as_ref().expect("a wheel folder is a `from`");
            errors.push(file.error_at(
                from.span.clone(),
                format!("`from = {}` is not a folder (of the CUDA runtime's wheels: {})", file.text(&from.span), dir.display()),
                Some("name the folder holding the nvidia-cuda-runtime, nvidia-cublas and nvidia-cuda-nvrtc wheels (relative to the profile file), or use `from = \"pypi\"`".into()),
            ));
        }
        if let Some(from) = &p.cudnn.from
            && let Source::Location(loc) = &from.value
            && !is_url(loc)
            && !file.path.parent().unwrap_or(Path::new(".")).join(loc).exists()
        {
            let guess = profile::did_you_mean(loc, &["pypi", "nvidia"]).map(|g| format!("did you mean `from = \"{g}\"`? ")).unwrap_or_default();
            errors.push(file.error_at(
                from.span.clone(),
                format!("`from = \"{loc}\"` is neither \"pypi\", \"nvidia\", an http(s) URL, nor a path that exists"),
                Some(format!("{guess}write `from = \"pypi\"`, `from = \"nvidia\"`, a URL with `sha256 = \"...\"`, or the path of an archive, wheel or folder (relative to the profile file)")),
            ));
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(profile::Error::combine(errors)) }
}

/// The source now serves other bytes than `lab.lock` pins.
#[derive(Debug, thiserror::Error)]
#[error("profile {profile}: {url} has SHA-256 {served}, but lab.lock pins {pinned}")]
pub struct PinMismatch {
    pub profile: String,
    pub url: String,
    pub pinned: String,
    pub served: String,
}

impl crate::error::Diagnose for PinMismatch {
    fn hint(&self) -> Option<String> {
        Some("the index or mirror serves a different file for this version: check `pypi-index` / `nvidia-mirror`, or delete the pin from lab.lock to accept the new bytes".into())
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        crate::error::ExitCode::Invalid
    }
}

/// Why the `from` sources of a profile file could not be brought into the store: the error of
/// the step that failed, with its hint and exit code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `from` the profile file cannot serve (with its line and column).
    #[error(transparent)]
    Profile(#[from] profile::Error),
    /// Building a wheel toolkit root from PyPI wheels failed.
    #[error(transparent)]
    Runtime(#[from] crate::toolkit::wheel::Error),
    /// Finding or downloading a cuDNN release failed.
    #[error(transparent)]
    Fetch(#[from] fetch::Error),
    /// Importing into the store failed.
    #[error(transparent)]
    Store(#[from] crate::store::Error),
    /// The source serves other bytes than `lab.lock` pins.
    #[error(transparent)]
    Pin(#[from] PinMismatch),
}

crate::error::diagnose!(impl Diagnose for Error { transparent Profile, Runtime, Fetch, Store, Pin; });
