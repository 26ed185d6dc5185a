//! Getting what profiles name with `from`: cuDNN releases from NVIDIA's redist server, PyPI,
//! a URL or a local path, and wheel toolkit roots (CUDA toolkit roots built from wheels) from PyPI wheels ([`crate::toolkit::wheel`]).
//!
//! Runs in `apply` before resolution, under the writer lock: after it, the store and
//! `<home>/toolkits` hold what the profiles need, and resolution proceeds as for anything
//! imported by hand. A pin in `lab.lock` (`cudnn-sha256`) must be matched by what the source
//! serves, so `apply` on another machine (through any index or mirror) imports exactly the
//! same bytes, or fails.

use std::path::Path;

use crate::change::{Change, Kind, Subject};
use crate::cudnn::platform::Platform;
use crate::cudnn::version::{Op, Version};
use crate::fetch::{self, Endpoints};
use crate::home::layout::Layout;
use crate::home::writer_lock::WriterLock;
use crate::profile::{self, Profile, ProfileFile, Requirement, Source};
use crate::store::{AddOptions, Store};
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
    lock: &'a WriterLock,
    ep: &'a Endpoints,
    progress: &'a dyn Progress,
    /// Downloads started ahead of need ([`ensure_reachable`]).
    prefetch: Option<&'a fetch::Prefetch>,
    /// Pinned CUDA runtime roots being built ahead of need ([`ensure_reachable`]).
    runtimes: Option<&'a RuntimesAhead>,
}

/// The pinned CUDA runtime roots [`ensure_reachable`] builds on one background thread, in
/// profile order, while the profiles' cuDNN archives import (a root's copy is bounded by
/// one large library, e.g. cuBLAS's 575 MB `libcublasLt`, which one core inflates alone).
/// Each result goes to the first profile that asks for its wheels; any other runtime is
/// made only once the thread is done, so two roots are never staged at once.
struct RuntimesAhead {
    state: std::sync::Mutex<AheadState>,
    changed: std::sync::Condvar,
}

type RuntimeResult = Result<(std::path::PathBuf, bool), crate::toolkit::wheel::Error>;

struct AheadState {
    /// The pinned wheels of each root, its endpoints, and its result once built (`None`
    /// inside the `Some` once taken).
    slots: Vec<(Vec<crate::toolkit::wheel::WheelRecord>, Endpoints, Option<Option<RuntimeResult>>)>,
    done: bool,
    cancelled: bool,
}

impl RuntimesAhead {
    fn new(planned: Vec<(Vec<crate::toolkit::wheel::WheelRecord>, Endpoints)>) -> RuntimesAhead {
        let slots = planned.into_iter().map(|(w, ep)| (w, ep, None)).collect();
        RuntimesAhead { state: std::sync::Mutex::new(AheadState { slots, done: false, cancelled: false }), changed: std::sync::Condvar::new() }
    }

    /// Builds each planned root in turn (stops early once cancelled).
    fn run(&self, cx: &Cx, platform: Platform) {
        // Marks the thread done however it ends, so that a panic here never leaves
        // `take` waiting forever (the scope then re-raises the panic).
        struct Done<'a>(&'a RuntimesAhead);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).done = true;
                self.0.changed.notify_all();
            }
        }
        let _done = Done(self);
        let n = self.state.lock().unwrap().slots.len();
        for i in 0..n {
            let (pinned, ep) = {
                let st = self.state.lock().unwrap();
                if st.cancelled {
                    break;
                }
                (st.slots[i].0.clone(), st.slots[i].1.clone())
            };
            let r = crate::toolkit::wheel::ensure_pinned(cx.layout, cx.lock, &ep, &pinned, platform, cx.prefetch, cx.progress);
            self.state.lock().unwrap().slots[i].2 = Some(Some(r));
            self.changed.notify_all();
        }
    }

    /// The result of the root of exactly these `pinned` wheels, waiting while it is built;
    /// `None` when it was not planned or was taken already (the caller then waits for
    /// [`RuntimesAhead::wait_done`] and makes or finds it itself).
    fn take(&self, pinned: &[crate::toolkit::wheel::WheelRecord]) -> Option<RuntimeResult> {
        let same = |a: &[crate::toolkit::wheel::WheelRecord]| {
            a.len() == pinned.len()
                && a.iter().zip(pinned).all(|(a, b)| a.project == b.project && a.version == b.version && a.sha256.eq_ignore_ascii_case(&b.sha256))
        };
        let mut st = self.state.lock().unwrap();
        let i = st.slots.iter().position(|(w, _, _)| same(w))?;
        loop {
            if let Some(r) = &mut st.slots[i].2 {
                return r.take();
            }
            if st.done {
                return None;
            }
            st = self.changed.wait(st).unwrap();
        }
    }

    /// Waits until the thread has built (or given up on) every planned root.
    fn wait_done(&self) {
        let mut st = self.state.lock().unwrap();
        while !st.done {
            st = self.changed.wait(st).unwrap();
        }
    }

    /// Starts no further root.
    fn cancel(&self) {
        self.state.lock().unwrap().cancelled = true;
    }
}

/// The CUDA major a profile's cuDNN must be built for, found without fetching anything: the
/// major of `cuda`'s version when it has `from = "pypi"`, else of the newest installed or
/// wheel toolkit root that matches it. `None` when no toolkit matches (resolution reports that).
fn cuda_major(cx: &Cx, file: &ProfileFile, p: &Profile, installed: &[Version], platform: Platform) -> Result<Option<u64>, Error> {
    if p.cuda.from.is_some() {
        return Ok(Some(plain_version(file, &p.cuda, "cuda")?.major()));
    }
    // Runtime roots are listed afresh: an earlier profile may have just made one. A file
    // that lists [toolkits] chooses only among them (resolve::Pool).
    let wheels = if file.toolkits.is_empty() { crate::toolkit::wheel::list(cx.layout) } else { Vec::new() };
    let best = installed
        .iter()
        .cloned()
        .chain(wheels.into_iter().filter(|(_, m)| m.platform == platform).map(|(_, m)| m.version))
        .filter(|v| p.cuda.version.matches(v))
        .max();
    Ok(best.map(|v| v.major()))
}

/// Gets the wheel toolkit root of a profile whose `cuda` has `from = "pypi"` (the wheels
/// `pin` names while they still satisfy `cuda`, else the newest of its version); nothing
/// for a profile on an installed toolkit.
fn ensure_runtime(
    cx: &Cx,
    file: &ProfileFile,
    p: &Profile,
    lines: &mut Vec<String>,
    pin: Option<&crate::profile::lockfile::Pin>,
    platform: Platform,
) -> Result<(), Error> {
    if p.cuda.from.is_none() {
        return Ok(());
    }
    let v = plain_version(file, &p.cuda, "cuda")?;
    let pinned = pinned_wheels(pin);
    let pin_fits = pin_fits(&pinned, &v);
    let ep = runtime_endpoints(file, p, cx.ep);
    let ahead = if pin_fits { cx.runtimes.and_then(|r| r.take(&pinned)) } else { None };
    let (root, made) = match ahead {
        Some(r) => r?,
        None => {
            if let Some(r) = cx.runtimes {
                r.wait_done();
            }
            if pin_fits {
                crate::toolkit::wheel::ensure_pinned(cx.layout, cx.lock, &ep, &pinned, platform, cx.prefetch, cx.progress)?
            } else {
                crate::toolkit::wheel::ensure(cx.layout, cx.lock, &ep, &v, platform, cx.prefetch, cx.progress)?
            }
        }
    };
    if made {
        let from = wheel_folder(file, p).map(|d| d.display().to_string()).unwrap_or_else(|| "PyPI".into());
        lines.push(format!("+ CUDA runtime {} from {from} at {}", v, root.display()));
    }
    Ok(())
}

/// The CUDA runtime wheels `pin` names (`cuda-wheels` of `lab.lock`), without URLs.
fn pinned_wheels(pin: Option<&crate::profile::lockfile::Pin>) -> Vec<crate::toolkit::wheel::WheelRecord> {
    pin.map(|pin| {
        pin.cuda_wheels
            .iter()
            .map(|(project, version, sha256)| crate::toolkit::wheel::WheelRecord {
                project: project.clone(),
                version: version.clone(),
                url: String::new(),
                sha256: sha256.clone(),
            })
            .collect()
    })
    .unwrap_or_default()
}

/// A pin is kept while the runtime it names still satisfies `cuda` (version `v`).
fn pin_fits(pinned: &[crate::toolkit::wheel::WheelRecord], v: &Version) -> bool {
    pinned.first().and_then(|w| w.version.parse::<Version>().ok()).is_some_and(|pv| pv.starts_with(v))
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

/// The folder of wheels a profile's `cuda = { ..., from = "<folder>" }` names, relative to
/// the profile file; `None` for `from = "pypi"` or no `from`.
fn wheel_folder(file: &ProfileFile, p: &Profile) -> Option<std::path::PathBuf> {
    match &p.cuda.from.as_ref()?.value {
        Source::Location(dir) => Some(file.path.parent().unwrap_or(Path::new(".")).join(dir)),
        _ => None,
    }
}

/// The endpoints for a profile's CUDA runtime: `ep`, or, for a folder of wheels, that folder
/// alone (find-links, never the network).
fn runtime_endpoints(file: &ProfileFile, p: &Profile, ep: &Endpoints) -> Endpoints {
    match wheel_folder(file, p) {
        Some(dir) => Endpoints { find_links: Some(dir), offline: true, ..ep.clone() },
        None => ep.clone(),
    }
}

/// Checks every cuDNN `from` of `file` before anything is fetched or planned: a location
/// that is neither "pypi", "nvidia" nor an http(s) URL must be a path that exists (relative
/// to the profile file). Every bad `from` is reported (with its line and a hint), not only
/// the first. (A CUDA `from` other than "pypi" is refused by [`crate::profile::parse`].)
pub fn check(file: &ProfileFile) -> Result<(), profile::Error> {
    let mut errors = Vec::new();
    for p in &file.profiles {
        if let Some(dir) = wheel_folder(file, p)
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

/// Makes sure every `from` source of `file` for `platform` is in the store (and every
/// `from = "pypi"` CUDA runtime in `<home>/toolkits`); `pins` are `platform`'s section of
/// `lab.lock`. Returns one `+` line per thing fetched or imported.
///
/// For a `platform` other than the host's, only profiles whose CUDA side comes from PyPI
/// can be served (an installed toolkit of another machine cannot be seen): any other is
/// an error at its `cuda` value.
pub fn ensure(
    layout: &Layout,
    lock: &WriterLock,
    file: &ProfileFile,
    platform: Platform,
    pins: &crate::profile::lockfile::Pins,
    ep: &Endpoints,
    progress: &dyn Progress,
) -> Result<Vec<String>, Error> {
    Ok(ensure_reachable(layout, lock, file, platform, pins, ep, false, progress)?.lines)
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
/// metadata name) start at once, up to [`fetch::MAX_PARALLEL_DOWNLOADS`] at a time
/// ([`fetch::Prefetch`]), so that an archive is imported while the next ones download; the
/// imports stay in profile order, and on an error the downloads still running stop and
/// are deleted.
#[allow(clippy::too_many_arguments)]
pub fn ensure_reachable(
    layout: &Layout,
    lock: &WriterLock,
    file: &ProfileFile,
    platform: Platform,
    pins: &crate::profile::lockfile::Pins,
    ep: &Endpoints,
    allow_unreachable: bool,
    progress: &dyn Progress,
) -> Result<Ensured, Error> {
    check(file)?;
    let cx = Cx { layout, lock, ep, progress, prefetch: None, runtimes: None };
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
        for _ in 0..prefetch.len().min(fetch::MAX_PARALLEL_DOWNLOADS) {
            s.spawn(|| prefetch.run(layout, lock, &client, progress));
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
/// source serves what the pin names. Whatever cannot be looked up is left out (the fetch
/// itself reports it).
#[allow(clippy::type_complexity)]
fn planned_downloads(
    cx: &Cx,
    file: &ProfileFile,
    platform: Platform,
    pins: &crate::profile::lockfile::Pins,
) -> (Vec<fetch::Artifact>, Vec<(Vec<crate::toolkit::wheel::WheelRecord>, Endpoints)>) {
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
                        Ok(a) if a.sha256.eq_ignore_ascii_case(&w.sha256) => found.push(a),
                        _ => break,
                    }
                }
                // A root whose every wheel the index serves as pinned is built ahead, once.
                if found.len() == pinned.len() && !roots.iter().any(|(r, _)| r == &pinned) {
                    roots.push((pinned.clone(), ep));
                }
                out.extend(found);
            }
        }
        let Some(from) = &p.cudnn.from else { continue };
        let pin_sha = pin.and_then(|pin| pin.sha256.clone());
        let Some(sha) = pin_sha.clone() else { continue };
        if fetch::find_by_source_sha256(cx.layout, &sha).is_some() {
            continue;
        }
        let artifact = match &from.value {
            Source::Pypi | Source::Nvidia => {
                let Ok(version) = plain_version(file, &p.cudnn, "cudnn") else { continue };
                let (req, order) = cudnn_request(p, pin, version, major, platform, cx.ep);
                match find_cudnn(&client, &req, &order) {
                    Ok((a, _)) if a.sha256.eq_ignore_ascii_case(&sha) => a,
                    _ => continue,
                }
            }
            Source::Location(loc) if is_url(loc) && p.cudnn.sha256.is_none() => {
                fetch::Artifact { url: loc.clone(), file_name: fetch::file_name_of(loc), sha256: sha, size: None, version: String::new() }
            }
            Source::Location(_) => continue,
        };
        out.push(artifact);
    }
    (out, roots)
}

/// [`ensure_reachable`] with the downloads of `cx.prefetch` (if any) taken from it.
fn ensure_with(cx: &Cx, file: &ProfileFile, platform: Platform, pins: &crate::profile::lockfile::Pins, allow_unreachable: bool) -> Result<Ensured, Error> {
    let Cx { layout, lock, ep, progress, .. } = *cx;
    let mut out = Ensured::default();
    let host = Platform::host() == Some(platform);
    if !host && let Some(p) = file.profiles.iter().find(|p| p.cuda.from.is_none()) {
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
    // Versions of the installed toolkit roots, found once. A bad `[toolkits]` root is reported
    // (at its line) by resolution, after the fetches.
    let installed: Vec<Version> =
        if host { crate::resolve::candidates::installed_toolkits(file).unwrap_or_default().into_iter().map(|(c, _)| c.version).collect() } else { Vec::new() };
    for p in &file.profiles {
        let pin = pins.get(&p.name);
        let Some(major) = cuda_major(cx, file, p, &installed, platform)? else { continue };
        let runtime = |lines: &mut Vec<String>| -> Result<bool, Error> {
            match ensure_runtime(cx, file, p, lines, pin, platform) {
                Err(Error::Runtime(crate::toolkit::wheel::Error::Fetch(e))) if allow_unreachable && unreachable(&e) => Ok(false),
                other => other.map(|()| true),
            }
        };
        let runtime_unreachable = |out: &mut Ensured| {
            let reason = format!("CUDA runtime {} ({platform}): PyPI could not be reached", p.cuda.version);
            out.unreachable.push((p.name.clone(), reason));
        };
        let Some(from) = &p.cudnn.from else {
            if !runtime(&mut out.lines)? {
                runtime_unreachable(&mut out);
            }
            continue;
        };
        let store = Store::new(layout);
        let pin_sha = pin.and_then(|pin| pin.sha256.clone());
        let have = match &pin_sha {
            Some(sha) => fetch::find_by_source_sha256(layout, sha).is_some(),
            None => store.entries().into_iter().any(|(_, m)| m.platform == platform && m.cuda_major == major && p.cudnn.version.matches(&m.version)),
        };
        if have {
            if !runtime(&mut out.lines)? {
                runtime_unreachable(&mut out);
            }
            continue;
        }
        let client = fetch::Client::new(ep.offline);
        let import = |artifact: &fetch::Artifact| match cx.prefetch {
            Some(pf) => fetch::import_artifact_prefetched(layout, lock, &client, artifact, Some(major), pf, progress),
            None => fetch::import_artifact(layout, lock, &client, artifact, Some(major), progress),
        };
        let (added, from_what) = match &from.value {
            Source::Pypi | Source::Nvidia => {
                let version = plain_version(file, &p.cudnn, "cudnn")?;
                let (req, order) = cudnn_request(p, pin, version, major, platform, ep);
                let artifact = match find_cudnn(&client, &req, &order) {
                    Ok((a, _)) => a,
                    Err(tried) if allow_unreachable && tried.last().is_some_and(|(_, e)| unreachable(e)) => {
                        let what = format!("cuDNN {} for CUDA {major} ({platform})", req.version);
                        out.unreachable.push((p.name.clone(), unpinned_reason(&what, &tried)));
                        continue;
                    }
                    Err(mut tried) => return Err(tried.pop().expect("at least one source is tried").1.into()),
                };
                if let Some(pinned) = pin_sha.as_ref().filter(|sha| !sha.eq_ignore_ascii_case(&artifact.sha256)) {
                    return Err(PinMismatch { profile: p.name.clone(), url: artifact.url, pinned: pinned.clone(), served: artifact.sha256 }.into());
                }
                if !runtime(&mut out.lines)? {
                    runtime_unreachable(&mut out);
                    continue;
                }
                let (a, f) = import(&artifact)?;
                (a, f.url)
            }
            Source::Location(loc) if is_url(loc) => {
                let Some(sha) = p.cudnn.sha256.as_ref().map(|s| s.value.clone()).or_else(|| pin_sha.clone()) else {
                    return Err(file
                        .error_at(
                            from.span.clone(),
                            format!("a URL source needs its `sha256` (profile `{}`)", p.name),
                            Some("add `sha256 = \"<64 hex digits>\"` from the publisher's manifest".into()),
                        )
                        .into());
                };
                if !runtime(&mut out.lines)? {
                    runtime_unreachable(&mut out);
                    continue;
                }
                let artifact = fetch::Artifact { url: loc.clone(), file_name: fetch::file_name_of(loc), sha256: sha, size: None, version: String::new() };
                let (a, f) = import(&artifact)?;
                (a, f.url)
            }
            Source::Location(loc) => {
                if !runtime(&mut out.lines)? {
                    runtime_unreachable(&mut out);
                    continue;
                }
                let base = file.path.parent().unwrap_or(Path::new("."));
                let path = base.join(loc);
                let sha256 = p.cudnn.sha256.as_ref().map(|s| s.value.clone()).or_else(|| pin_sha.clone());
                let opts = AddOptions { sha256, cuda: Some(major), ..Default::default() };
                (store.add(lock, &path, &opts, progress)?, path.display().to_string())
            }
        };
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
        if !added.existed {
            out.lines.push(format!("+ cuDNN {} for CUDA {major} from {from_what}", added.meta.version));
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Preflight: what the sources would serve, from their metadata only (issue 18, item 3)
// ---------------------------------------------------------------------------------------------

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

/// What [`ensure`] would fetch for `platform`, found without downloading anything: with
/// `ep` (and not offline), each source is asked for its metadata only (PyPI's JSON API,
/// NVIDIA's `redistrib_<version>.json`): the version exists for the platform, and its size.
/// Without `ep`, nothing is asked (the stand-ins take the version as written).
///
/// Never fails: every problem is one of [`Preflight::errors`], at its line, so `plan` can
/// report them all in one run (with resolution's and the conda envs').
pub fn preflight(layout: &Layout, file: &ProfileFile, platform: Platform, ep: Option<&Endpoints>) -> Preflight {
    use crate::resolve::{CudnnCandidate, Origin, Pool, ToolkitCandidate};
    let mut out = Preflight::default();
    if let Err(e) = check(file) {
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

impl crate::error::Diagnose for Error {
    fn hint(&self) -> Option<String> {
        match self {
            Error::Profile(e) => e.hint(),
            Error::Runtime(e) => e.hint(),
            Error::Fetch(e) => e.hint(),
            Error::Store(e) => e.hint(),
            Error::Pin(e) => e.hint(),
        }
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        match self {
            Error::Profile(e) => e.exit_code(),
            Error::Runtime(e) => e.exit_code(),
            Error::Fetch(e) => e.exit_code(),
            Error::Store(e) => e.exit_code(),
            Error::Pin(e) => e.exit_code(),
        }
    }
}
