//! Ensuring the store holds what the profiles name with `from` (and `<home>/toolkits` their
//! CUDA runtimes from wheels): [`ensure`] / [`ensure_reachable`], the downloads started
//! ahead of need, and one function per kind of cuDNN source.

use std::path::Path;

use super::runtimes::{RuntimesAhead, cuda_major, ensure_runtime, pin_fits, pinned_wheels, runtime_endpoints};
use super::{Cx, Error, PinMismatch, fetch_source, find_cudnn, is_url, plain_version, unpinned_reason, unreachable, validate};
use crate::cudnn::platform::Platform;
use crate::cudnn::version::Version;
use crate::fetch::{self, Endpoints};
use crate::home::layout::Layout;
use crate::home::writer_lock::WriterLock;
use crate::profile::{Profile, ProfileFile, Source, Spanned};
use crate::store::{AddOptions, Added, Store};
use crate::sys::progress::Progress;
use crate::sys::sha256::Sha256;

/// Makes sure every `from` source of `file` for `platform` is in the store (and every
/// `from = "pypi"` CUDA runtime in `<home>/toolkits`); `pins` are `platform`'s section of
/// `lab.lock`. Returns one `+` line per thing fetched or imported.
///
/// For a `platform` other than the host's, only profiles whose CUDA side comes from PyPI
/// can be served (an installed toolkit of another machine cannot be seen): any other is
/// an error at its `cuda` value.
pub fn ensure(
    layout: &Layout,
    writer: &WriterLock,
    file: &ProfileFile,
    platform: Platform,
    pins: &crate::profile::lockfile::Pins,
    ep: &Endpoints,
    progress: &dyn Progress,
) -> Result<Vec<String>, Error> {
    Ok(ensure_reachable(layout, writer, file, platform, pins, ep, false, progress)?.lines)
}

/// What [`ensure_reachable`] got.
#[derive(Debug, Default)]
pub struct Ensured {
    /// One `+` line per thing fetched or imported.
    pub lines: Vec<String>,
    /// The profiles whose sources could not be reached, each with why (only with
    /// `allow_unreachable`): nothing of theirs was fetched.
    pub unreachable: Vec<(String, String)>,
}

/// [`ensure`]; with `allow_unreachable`, a profile whose cuDNN or CUDA runtime source cannot
/// be reached (no answer, offline, a server error) is left out and named in
/// [`Ensured::unreachable`] instead of failing the whole call. Its cuDNN is looked up
/// before its CUDA runtime is fetched, so a profile left out downloads nothing.
///
/// A cuDNN `from` list (`["pypi", "nvidia"]`) is tried in order, the next source only when
/// one answers that it has no such file; a profile `lab.lock` pins to one source
/// (`cudnn-source`) is fetched from that source alone.
///
/// Without `allow_unreachable`, the downloads it will make (those the pins and the sources'
/// metadata name) start at once, the cuDNN archives first ([`fetch::Prefetch`]), so that an archive is imported while the next ones download; the
/// imports stay in profile order, and on an error the downloads still running stop and
/// are deleted.
#[allow(clippy::too_many_arguments)]
pub fn ensure_reachable(
    layout: &Layout,
    writer: &WriterLock,
    file: &ProfileFile,
    platform: Platform,
    pins: &crate::profile::lockfile::Pins,
    ep: &Endpoints,
    allow_unreachable: bool,
    progress: &dyn Progress,
) -> Result<Ensured, Error> {
    validate(file)?;
    // A pin taken from another source than `from` names now is stale: dropped, and the new
    // source imported and pinned (`plan` says the same: it fetches).
    let (fresh, stale) = crate::profile::lockfile::fresh_pins(pins, file);
    let pins = &fresh;
    let cx = Cx { layout, writer, ep, progress, prefetch: None, runtimes: None, stale: &stale };
    // With allow_unreachable a profile left out must download nothing, and a file another
    // platform cannot serve fails before any download: no prefetch there.
    let host = Platform::host() == Some(platform);
    if allow_unreachable || ep.offline || (!host && file.profiles.iter().any(|p| p.cuda.from.is_none())) {
        return ensure_with(&cx, file, platform, pins, allow_unreachable);
    }
    let (downloads, roots) = planned_downloads(&cx, file, platform, pins);
    let prefetch = fetch::Prefetch::new(downloads);
    if prefetch.is_empty() {
        return ensure_with(&cx, file, platform, pins, allow_unreachable);
    }
    let runtimes = RuntimesAhead::new(roots);
    let client = fetch::Client::new(ep.offline);
    std::thread::scope(|s| {
        for _ in 0..prefetch.threads() {
            s.spawn(|| prefetch.run(layout, writer, &client, progress));
        }
        let ahead = Cx { prefetch: Some(&prefetch), ..cx };
        let builder = &runtimes;
        s.spawn(move || builder.run(&ahead, platform));
        let r = ensure_with(&Cx { prefetch: Some(&prefetch), runtimes: Some(&runtimes), ..cx }, file, platform, pins, allow_unreachable);
        runtimes.cancel();
        prefetch.cancel();
        r
    })
}

/// The downloads [`ensure_with`] will make, in the order it makes them, as far as the pins of
/// `lab.lock` and the sources' metadata tell without downloading: the pinned CUDA runtime
/// wheels of a runtime root not yet made, and each cuDNN archive the store lacks whose
/// source serves what the pin names, with its CUDA major (a runtime wheel has none).
/// Whatever cannot be looked up is left out (the fetch itself reports it).
#[allow(clippy::type_complexity)]
fn planned_downloads(
    cx: &Cx,
    file: &ProfileFile,
    platform: Platform,
    pins: &crate::profile::lockfile::Pins,
) -> (Vec<(fetch::Artifact, Option<u64>)>, Vec<(Vec<crate::toolkit::wheel::WheelRecord>, Endpoints)>) {
    let mut out = Vec::new();
    let mut roots: Vec<(Vec<crate::toolkit::wheel::WheelRecord>, Endpoints)> = Vec::new();
    let client = fetch::Client::new(cx.ep.offline);
    let host = Platform::host() == Some(platform);
    let installed: Vec<Version> =
        if host { crate::resolve::candidates::installed_toolkits(file).unwrap_or_default().into_iter().map(|(c, _)| c.version).collect() } else { Vec::new() };
    for p in &file.profiles {
        let pin = pins.get(&p.name);
        let Ok(Some(major)) = cuda_major(cx, file, p, &installed, platform) else { continue };
        if p.cuda.from.is_some()
            && let Ok(v) = plain_version(file, &p.cuda, "cuda")
        {
            let pinned = pinned_wheels(pin);
            if pin_fits(&pinned, &v) && crate::toolkit::wheel::find_pinned(cx.layout, &pinned, platform).is_none() {
                let ep = runtime_endpoints(file, p, cx.ep);
                let mut found = Vec::new();
                for w in &pinned {
                    let what = format!("{} {} ({platform}) from PyPI", w.project, w.version);
                    match fetch::resolve_wheel(&client, &ep, &w.project, &w.version, platform, &what) {
                        Ok(a) if w.sha256.parse::<Sha256>().ok() == Some(a.sha256) => found.push(a),
                        _ => break,
                    }
                }
                // A root whose every wheel the index serves as pinned is built ahead, once.
                if found.len() == pinned.len() && !roots.iter().any(|(r, _)| r == &pinned) {
                    roots.push((pinned.clone(), ep));
                }
                out.extend(found.into_iter().map(|a| (a, None)));
            }
        }
        let Some(from) = &p.cudnn.from else { continue };
        // A pin that is not a SHA-256 matches nothing: the profile is left to `ensure`.
        let Some(sha) = pin.and_then(|pin| pin.sha256.as_deref()?.parse::<Sha256>().ok()) else { continue };
        if fetch::find_by_source_sha256(cx.layout, &sha).is_some() {
            continue;
        }
        let artifact = match &from.value {
            Source::Pypi | Source::Nvidia => {
                let Ok(version) = plain_version(file, &p.cudnn, "cudnn") else { continue };
                let (req, order) = cudnn_request(p, pin, version, major, platform, cx.ep);
                match find_cudnn(&client, &req, &order) {
                    Ok((a, _)) if a.sha256 == sha => a,
                    _ => continue,
                }
            }
            Source::Location(loc) if is_url(loc) && p.cudnn.sha256.is_none() => {
                fetch::Artifact { url: loc.clone(), file_name: fetch::file_name_of(loc), sha256: sha, size: None, version: String::new() }
            }
            Source::Location(_) => continue,
        };
        out.push((artifact, Some(major)));
    }
    (out, roots)
}

/// The fetch request of profile `p`'s cuDNN `version` for CUDA `major` on `platform`, and the
/// sources to ask in order: the source the lock pins this platform to, alone; else the
/// profile's `from` list (which holds at least the PyPI or NVIDIA source `p` names).
fn cudnn_request(
    p: &crate::profile::Profile,
    pin: Option<&crate::profile::lockfile::Pin>,
    version: Version,
    major: u64,
    platform: Platform,
    ep: &Endpoints,
) -> (fetch::FetchRequest, Vec<fetch::Source>) {
    let order: Vec<fetch::Source> = match pin.and_then(|pin| pin.source) {
        Some(s) => vec![s],
        None => p.cudnn.sources().filter_map(|s| fetch_source(&s.value)).collect(),
    };
    (fetch::FetchRequest { version, cuda_major: major, from: order[0], platform, endpoints: ep.clone() }, order)
}

/// [`ensure_reachable`] with the downloads of `cx.prefetch` (if any) taken from it.
fn ensure_with(cx: &Cx, file: &ProfileFile, platform: Platform, pins: &crate::profile::lockfile::Pins, allow_unreachable: bool) -> Result<Ensured, Error> {
    let mut out = Ensured::default();
    let host = Platform::host() == Some(platform);
    if !host {
        refuse_installed_cuda(file, platform)?;
    }
    // Versions of the installed toolkit roots, found once. A bad `[toolkits]` root is reported
    // (at its line) by resolution, after the fetches.
    let installed: Vec<Version> =
        if host { crate::resolve::candidates::installed_toolkits(file).unwrap_or_default().into_iter().map(|(c, _)| c.version).collect() } else { Vec::new() };
    for p in &file.profiles {
        let pin = pins.get(&p.name);
        let Some(major) = cuda_major(cx, file, p, &installed, platform)? else { continue };
        let job = Job { cx, file, p, pin, platform, major, allow_unreachable };
        ensure_profile(&job, &mut out)?;
    }
    Ok(out)
}

/// For a `platform` other than the host's: an error at the first profile that takes CUDA
/// from an installed toolkit.
fn refuse_installed_cuda(file: &ProfileFile, platform: Platform) -> Result<(), Error> {
    if let Some(p) = file.profiles.iter().find(|p| p.cuda.from.is_none()) {
        return Err(file
            .error_at(
                p.cuda.span.clone(),
                format!("profile `{}` takes CUDA from an installed toolkit, which only a {platform} machine can see", p.name),
                Some(format!(
                    "run `cuenv lock` on a {platform} machine, or take the CUDA runtime from PyPI: `cuda = {{ version = \"{}\", from = \"pypi\" }}`",
                    p.cuda.version
                )),
            )
            .into());
    }
    Ok(())
}

/// One profile of [`ensure_with`]: its pin and the CUDA major its cuDNN is for.
struct Job<'a> {
    cx: &'a Cx<'a>,
    file: &'a ProfileFile,
    p: &'a Profile,
    pin: Option<&'a crate::profile::lockfile::Pin>,
    platform: Platform,
    major: u64,
    allow_unreachable: bool,
}

impl Job<'_> {
    /// Gets the profile's CUDA runtime ([`ensure_runtime`]); `false` when its source cannot
    /// be reached and `allow_unreachable` lets the profile be left out.
    fn runtime(&self, lines: &mut Vec<String>) -> Result<bool, Error> {
        let Job { cx, file, p, pin, platform, allow_unreachable, .. } = *self;
        match ensure_runtime(cx, file, p, lines, pin, platform) {
            Err(Error::Runtime(crate::toolkit::wheel::Error::Fetch(e))) if allow_unreachable && unreachable(&e) => Ok(false),
            other => other.map(|()| true),
        }
    }

    /// Names the profile in [`Ensured::unreachable`]: its CUDA runtime's source could not be reached.
    fn runtime_unreachable(&self, out: &mut Ensured) {
        let Job { p, platform, .. } = *self;
        let reason = format!("CUDA runtime {} ({platform}): PyPI could not be reached", p.cuda.version);
        out.unreachable.push((p.name.clone(), reason));
    }

    /// Imports `artifact` (taken from `cx.prefetch` when it is there) as a cuDNN for the profile's CUDA major.
    fn import(&self, client: &fetch::Client, artifact: &fetch::Artifact) -> Result<(Added, fetch::FetchedFrom), fetch::Error> {
        let Cx { layout, writer, progress, .. } = *self.cx;
        let major = self.major;
        match self.cx.prefetch {
            Some(pf) => fetch::import_artifact_prefetched(layout, writer, client, artifact, Some(major), pf, progress),
            None => fetch::import_artifact(layout, writer, client, artifact, Some(major), progress),
        }
    }
}

/// Makes sure the store holds the cuDNN profile `j.p` names (and gets its CUDA runtime).
fn ensure_profile(j: &Job, out: &mut Ensured) -> Result<(), Error> {
    let Job { cx, p, pin, platform, major, .. } = *j;
    let Cx { layout, ep, .. } = *cx;
    let Some(from) = &p.cudnn.from else {
        if !j.runtime(&mut out.lines)? {
            j.runtime_unreachable(out);
        }
        return Ok(());
    };
    let store = Store::new(layout);
    let pin_sha = pin.and_then(|pin| pin.sha256.clone());
    let have = match &pin_sha {
        Some(sha) => sha.parse::<Sha256>().is_ok_and(|sha| fetch::find_by_source_sha256(layout, &sha).is_some()),
        // A stale pin's profile imports its new source (to pin its bytes), even when an entry
        // of the version is stored (a re-import of stored bytes only hashes them).
        None if cx.stale.contains(&p.name) => false,
        None => store.entries().into_iter().any(|(_, m)| m.platform == platform && m.cuda_major == major && p.cudnn.version.matches(&m.version)),
    };
    if have {
        if !j.runtime(&mut out.lines)? {
            j.runtime_unreachable(out);
        }
        return Ok(());
    }
    let client = fetch::Client::new(ep.offline);
    let got = match &from.value {
        Source::Pypi | Source::Nvidia => fetch_named(j, &client, &pin_sha, out)?,
        Source::Location(loc) if is_url(loc) => fetch_url(j, &client, from, loc, &pin_sha, out)?,
        Source::Location(loc) => import_path(j, &store, loc, &pin_sha, out)?,
    };
    let Some((added, from_what)) = got else { return Ok(()) };
    validate_added(j, from, &added, &from_what)?;
    if !added.existed {
        out.lines.push(format!("+ cuDNN {} for CUDA {major} from {from_what}", added.meta.version));
    }
    Ok(())
}

/// The cuDNN of a `from = "pypi"` / `"nvidia"` source: found among the profile's sources in
/// order, matched against the pin, then imported. `None` when the profile is left out (its
/// source cannot be reached, with `allow_unreachable`).
fn fetch_named(j: &Job, client: &fetch::Client, pin_sha: &Option<String>, out: &mut Ensured) -> Result<Option<(Added, String)>, Error> {
    let Job { file, p, pin, platform, major, allow_unreachable, .. } = *j;
    let Cx { ep, .. } = *j.cx;
    let version = plain_version(file, &p.cudnn, "cudnn")?;
    let (req, order) = cudnn_request(p, pin, version, major, platform, ep);
    let artifact = match find_cudnn(client, &req, &order) {
        Ok((a, _)) => a,
        Err(tried) if allow_unreachable && tried.last().is_some_and(|(_, e)| unreachable(e)) => {
            let what = format!("cuDNN {} for CUDA {major} ({platform})", req.version);
            out.unreachable.push((p.name.clone(), unpinned_reason(&what, &tried)));
            return Ok(None);
        }
        Err(mut tried) => return Err(tried.pop().expect("at least one source is tried").1.into()),
    };
    if let Some(pinned) = pin_sha.as_ref().filter(|sha| sha.parse::<Sha256>().ok() != Some(artifact.sha256)) {
        return Err(PinMismatch { profile: p.name.clone(), url: artifact.url, pinned: pinned.clone(), served: artifact.sha256.to_string() }.into());
    }
    if !j.runtime(&mut out.lines)? {
        j.runtime_unreachable(out);
        return Ok(None);
    }
    let (a, f) = j.import(client, &artifact)?;
    Ok(Some((a, f.url)))
}

/// The cuDNN of a URL source: downloaded, checked against its `sha256` (or the pin), then
/// imported. `None` when the profile is left out (its CUDA runtime cannot be reached).
fn fetch_url(
    j: &Job,
    client: &fetch::Client,
    from: &Spanned<Source>,
    loc: &str,
    pin_sha: &Option<String>,
    out: &mut Ensured,
) -> Result<Option<(Added, String)>, Error> {
    let Job { file, p, .. } = *j;
    let Some(sha) = given_or_pinned(p, pin_sha)? else {
        return Err(file
            .error_at(
                from.span.clone(),
                format!("a URL source needs its `sha256` (profile `{}`)", p.name),
                Some("add `sha256 = \"<64 hex digits>\"` from the publisher's manifest".into()),
            )
            .into());
    };
    if !j.runtime(&mut out.lines)? {
        j.runtime_unreachable(out);
        return Ok(None);
    }
    let artifact = fetch::Artifact { url: loc.to_string(), file_name: fetch::file_name_of(loc), sha256: sha, size: None, version: String::new() };
    let (a, f) = j.import(client, &artifact)?;
    Ok(Some((a, f.url)))
}

/// The cuDNN of a path source (an archive, wheel or folder, relative to the profile file),
/// imported into the store. `None` when the profile is left out (its CUDA runtime cannot be
/// reached).
fn import_path(j: &Job, store: &Store, loc: &str, pin_sha: &Option<String>, out: &mut Ensured) -> Result<Option<(Added, String)>, Error> {
    let Job { cx, file, p, major, .. } = *j;
    let Cx { writer, progress, .. } = *cx;
    if !j.runtime(&mut out.lines)? {
        j.runtime_unreachable(out);
        return Ok(None);
    }
    let base = file.path.parent().unwrap_or(Path::new("."));
    let path = base.join(loc);
    let sha256 = given_or_pinned(p, pin_sha)?;
    let opts = AddOptions { sha256, cuda: Some(major), ..Default::default() };
    Ok(Some((store.add(writer, &path, &opts, progress)?, path.display().to_string())))
}

/// What `from` gave (`from_what`) must be for the platform and satisfy the profile.
fn validate_added(j: &Job, from: &Spanned<Source>, added: &Added, from_what: &str) -> Result<(), Error> {
    let Job { file, p, platform, major, .. } = *j;
    if added.meta.platform != platform {
        return Err(file
            .error_at(
                from.span.clone(),
                format!("{from_what} holds cuDNN for {}, but profile `{}` is being resolved for {platform}", added.meta.platform, p.name),
                Some(format!("name the {platform} release here (profile sources are per profile, not per platform), or use `from = \"pypi\"` / `\"nvidia\"`, which pick each platform's file")),
            )
            .into());
    }
    if !p.cudnn.version.matches(&added.meta.version) || added.meta.cuda_major != major {
        return Err(file
            .error_at(
                p.cudnn.span.clone(),
                format!("{from_what} holds cuDNN {} for CUDA {}, which does not satisfy profile `{}`", added.meta.version, added.meta.cuda_major, p.name),
                Some("fix the version or the source".into()),
            )
            .into());
    }
    Ok(())
}

/// The SHA-256 a path or URL source must have: the profile's `sha256`, else the pin of
/// `lab.lock`. Errors: [`crate::store::Error::BadSha256Arg`] for a pin that is not 64 hex
/// digits.
fn given_or_pinned(p: &Profile, pin_sha: &Option<String>) -> Result<Option<Sha256>, Error> {
    match (&p.cudnn.sha256, pin_sha) {
        (Some(s), _) => Ok(Some(s.value)),
        (None, Some(pin)) => Ok(Some(pin.parse::<Sha256>().map_err(|_| crate::store::Error::BadSha256Arg(pin.clone()))?)),
        (None, None) => Ok(None),
    }
}
