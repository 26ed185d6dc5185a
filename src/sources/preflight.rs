//! Preflight: what the sources would serve, from their metadata only:
//! what `plan` lists as fetches, with stand-ins for resolution, without downloading anything.

use super::runtimes::{runtime_endpoints, wheel_folder};
use super::{fetch_source, find_cudnn, not_offered, plain_version, source_label, unpinned_reason, unreachable, validate};
use crate::change::{Change, Kind, Subject};
use crate::cudnn::platform::Platform;
use crate::cudnn::version::Version;
use crate::fetch::{self, Endpoints};
use crate::home::layout::Layout;
use crate::profile::{self, Profile, ProfileFile, Source};
use crate::store::Store;

/// What [`preflight`] found: the fetches `apply` would make, the toolkit roots and store
/// entries they would add (stand-ins, for resolution to run against before anything is
/// downloaded), and every error found on the way.
#[derive(Debug, Default)]
pub struct Preflight {
    /// One `+ fetch` change per thing to fetch (with what the source said of it, when asked).
    pub fetches: Vec<Change>,
    /// Stand-ins for the CUDA runtimes to fetch ([`crate::resolve::Origin::Wheel`]; the root
    /// is `<home>/toolkits/(to fetch: CUDA <version>)`).
    pub toolkits: Vec<crate::resolve::ToolkitCandidate>,
    /// Stand-ins for the cuDNN releases to fetch (id `to-fetch:<profile>`).
    pub entries: Vec<crate::resolve::CudnnCandidate>,
    /// Every error: a bad `from`, a version no source has, a source that cannot be reached.
    pub errors: Vec<profile::Error>,
    /// Profiles whose cuDNN source no stand-in can speak for (a path or URL under a version
    /// range): resolution cannot judge their cuDNN before it is imported.
    pub unsure: Vec<String>,
}

/// What [`ensure`](fn@super::ensure) would fetch for `platform`, found without downloading anything: with
/// `ep` (and not offline), each source is asked for its metadata only (PyPI's JSON API,
/// NVIDIA's `redistrib_<version>.json`): the version exists for the platform, and its size.
/// Without `ep`, nothing is asked (the stand-ins take the version as written).
///
/// Never fails: every problem is one of [`Preflight::errors`], at its line, so `plan` can
/// report them all in one run (with resolution's and the conda envs').
pub fn preflight(layout: &Layout, file: &ProfileFile, platform: Platform, ep: Option<&Endpoints>) -> Preflight {
    use crate::resolve::{CudnnCandidate, Origin, Pool, ToolkitCandidate};
    let mut out = Preflight::default();
    if let Err(e) = validate(file) {
        out.errors.push(e);
    }
    let unchecked = if ep.is_some_and(|e| e.offline) { "; not checked (offline)" } else { "" };
    let ep = ep.filter(|e| !e.offline);
    let client = ep.map(|e| fetch::Client::new(e.offline));
    let entries = Store::new(layout).entries();
    let host = Platform::host() == Some(platform);
    let installed: Vec<Version> =
        if host { crate::resolve::candidates::installed_toolkits(file).unwrap_or_default().into_iter().map(|(c, _)| c.version).collect() } else { Vec::new() };
    let wheels: Vec<Version> = crate::toolkit::wheel::list(layout).into_iter().filter(|(_, m)| m.platform == platform).map(|(_, m)| m.version).collect();
    for p in &file.profiles {
        // The CUDA runtime from PyPI.
        let mut major = None;
        if p.cuda.from.is_some()
            && let Ok(v) = plain_version(file, &p.cuda, "cuda")
        {
            major = Some(v.major());
            if crate::toolkit::wheel::find(layout, &v, platform).is_none() && !out.toolkits.iter().any(|t| t.version.starts_with(&v)) {
                let folder = wheel_folder(file, p);
                let from = folder.as_ref().map(|d| d.display().to_string()).unwrap_or_else(|| "PyPI".into());
                let mut detail = format!("CUDA runtime {} (cudart, cuBLAS, NVRTC) from {from}", p.cuda.version);
                let mut version = v.clone();
                // A folder of wheels is always asked (no network); PyPI only when online.
                let asked = match (&folder, ep) {
                    (Some(_), _) => Some((fetch::Client::new(true), runtime_endpoints(file, p, &Endpoints::default()))),
                    (None, Some(ep)) => Some((fetch::Client::new(false), ep.clone())),
                    (None, None) => {
                        detail.push_str(unchecked);
                        None
                    }
                };
                if let Some((client, ep)) = &asked {
                    match lookup_runtime(client, ep, &v, platform) {
                        Ok((exact, size)) => {
                            let size = size.map(|s| format!(", {} to download (cudart, cuBLAS, NVRTC)", crate::sys::fsutil::human_size(s))).unwrap_or_default();
                            detail.push_str(&format!("; {} has {exact}{size}", if folder.is_some() { "the folder" } else { "PyPI" }));
                            version = exact.parse().unwrap_or(version);
                        }
                        Err(e) => out.errors.push(lookup_error(file, p, p.cuda.from.as_ref().map(|f| f.span.clone()), &format!("the CUDA {v} runtime"), &e)),
                    }
                }
                out.fetches.push(Change::new(Kind::Add, Subject::Fetch, &p.name, Some(detail)));
                let root = layout.toolkits_dir().join(crate::resolve::to_fetch_name(&version));
                out.toolkits.push(ToolkitCandidate { root, version, origin: Origin::Wheel });
            }
        }
        // The CUDA major the cuDNN must be built for: as resolution would choose the toolkit,
        // else (no toolkit matches) the major `cuda` names.
        let pool = Pool::of(file, p);
        let major = major.or_else(|| {
            let stand_ins = out.toolkits.iter().filter(|_| pool.admits(Origin::Wheel)).map(|t| t.version.clone());
            let existing = if pool.admits(Origin::Wheel) { wheels.clone() } else { Vec::new() };
            installed.iter().cloned().chain(existing).chain(stand_ins).filter(|v| p.cuda.version.matches(v)).max().map(|v| v.major())
        });
        let major = major.or_else(|| crate::resolve::fetchable_version(p).parse::<Version>().ok().map(|v| v.major()));
        let (Some(from), Some(major)) = (&p.cudnn.from, major) else { continue };
        let have = entries.iter().any(|(_, m)| m.platform == platform && m.cuda_major == major && p.cudnn.version.matches(&m.version));
        if have {
            continue;
        }
        let src = p
            .cudnn
            .sources()
            .map(|s| match &s.value {
                Source::Pypi => "PyPI".to_string(),
                Source::Nvidia => "NVIDIA".to_string(),
                Source::Location(l) => l.clone(),
            })
            .collect::<Vec<_>>()
            .join(", else ");
        let mut detail = format!("cuDNN {} from {src}", p.cudnn.version);
        let Ok(v) = plain_version(file, &p.cudnn, "cudnn") else {
            if matches!(from.value, Source::Pypi | Source::Nvidia) {
                out.errors.push(plain_version(file, &p.cudnn, "cudnn").expect_err("checked"));
            }
            out.unsure.push(p.name.clone());
            out.fetches.push(Change::new(Kind::Add, Subject::Fetch, &p.name, Some(detail)));
            continue;
        };
        let mut version = v.clone();
        if client.is_none() && matches!(from.value, Source::Pypi | Source::Nvidia) {
            detail.push_str(unchecked);
        }
        if let (Some(client), Some(ep), Source::Pypi | Source::Nvidia) = (&client, ep, &from.value) {
            let order: Vec<fetch::Source> = p.cudnn.sources().filter_map(|s| fetch_source(&s.value)).collect();
            let req = fetch::FetchRequest { version: v.clone(), cuda_major: major, from: order[0], platform, endpoints: ep.clone() };
            match find_cudnn(client, &req, &order) {
                Ok((a, served)) => {
                    let size = a.size.map(|s| format!(", {}", crate::sys::fsutil::human_size(s))).unwrap_or_default();
                    detail.push_str(&format!("; {} has {} for CUDA {major}{size}", source_label(served), a.version));
                    version = a.version.parse().unwrap_or(version);
                }
                Err(tried) => {
                    let what = format!("cuDNN {v} for CUDA {major} ({platform})");
                    let last = &tried.last().expect("at least one source is tried").1;
                    if tried.iter().all(|(_, e)| not_offered(e)) {
                        let message = format!("no source has {}", unpinned_reason(&what, &tried));
                        out.errors.push(file.error_at(p.cudnn.span.clone(), message, crate::error::Diagnose::hint(last)));
                    } else {
                        out.errors.push(lookup_error(file, p, Some(from.span.clone()), &what, last));
                    }
                }
            }
        }
        out.fetches.push(Change::new(Kind::Add, Subject::Fetch, &p.name, Some(detail)));
        out.entries.push(CudnnCandidate { id: format!("to-fetch:{}", p.name), name: format!("to fetch from {src}"), version, cuda_major: major, platform });
    }
    out
}

/// The exact version of the CUDA runtime wheel (`cudart`) PyPI has for `prefix`, and the
/// download size of all three wheels (cudart, cuBLAS, NVRTC, as
/// [`crate::toolkit::wheel::ensure`] picks them; `None` when an index gives no size);
/// metadata only.
fn lookup_runtime(client: &fetch::Client, ep: &Endpoints, prefix: &Version, platform: Platform) -> Result<(String, Option<u64>), fetch::Error> {
    let major = prefix.major();
    let want = prefix.truncated(2).to_string();
    let mut first: Option<String> = None;
    let mut total: Option<u64> = Some(0);
    for (i, project) in fetch::pypi::cuda_runtime_projects(major).iter().enumerate() {
        let what = format!("the CUDA {want} runtime ({project}) from PyPI");
        let a = match fetch::resolve_wheel(client, ep, project, &want, platform, &what) {
            Err(fetch::Error::NoSuchVersion { .. }) if i > 0 => fetch::resolve_wheel(client, ep, project, &major.to_string(), platform, &what)?,
            other => other?,
        };
        total = total.zip(a.size).map(|(t, n)| t + n);
        first.get_or_insert(a.version);
    }
    Ok((first.expect("three projects"), total))
}

/// A source that could not be asked about `what`, as an error at `span` (the `from` value).
fn lookup_error(file: &ProfileFile, p: &Profile, span: Option<profile::Span>, what: &str, e: &fetch::Error) -> profile::Error {
    let span = span.unwrap_or_else(|| p.name_span.clone());
    let message = if unreachable(e) { format!("cannot check {what} for profile `{}`: {e}", p.name) } else { format!("{what} for profile `{}`: {e}", p.name) };
    let hint = crate::error::Diagnose::hint(e).map(|h| format!("{h}; or plan offline (CUENV_OFFLINE=1), which lists the fetches unchecked"));
    file.error_at(span, message, hint)
}
