//! Resolution: a profile's requirements plus what exists (toolkit roots, store entries)
//! give one toolkit root and one store entry per profile.
//!
//! Invariants:
//! - Pure: the caller probes toolkit roots and lists the store; nothing here touches disk.
//! - Among matches the newest version wins (ties: the first candidate given).
//! - A store entry is chosen only if its CUDA major equals the chosen toolkit's major and its
//!   platform is the host's: a cuda12 cuDNN needs a CUDA 12 runtime (docs/facts.md §4).
//! - A lock is honoured ([`honour`]): a locked choice is kept while it still exists among the
//!   candidates and still satisfies the profile's requirements; anything else is re-resolved
//!   and reported as a change (which `--locked` turns into a failure).
//! - Every failure is a [`crate::profile::Error::Invalid`] at the span of the offending value, saying
//!   what exists and what would satisfy it.

pub mod candidates;

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::Serialize;

use crate::cudnn::platform::Platform;
use crate::cudnn::version::Version;
use crate::profile::lockfile::{LockFile, LockedProfile};
use crate::profile::{Check, Error, Profile, ProfileFile};

/// A store entry that a profile may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudnnCandidate {
    /// The store entry id (its content address).
    pub id: String,
    /// The store entry's readable name.
    pub name: String,
    /// The cuDNN version, 1 to 4 parts (`9.5.0.50`).
    pub version: Version,
    /// The CUDA major the build targets (11, 12, 13).
    pub cuda_major: u64,
    /// The platform the build targets.
    pub platform: Platform,
}

/// A toolkit root that a profile may use, with the version read from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolkitCandidate {
    /// The toolkit root.
    pub root: PathBuf,
    /// The CUDA version (`11.8` or `12.6.77`).
    pub version: Version,
    /// Where it comes from: decides which profiles may choose it ([`Pool`]).
    pub origin: Origin,
}

/// Where a toolkit candidate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    /// Found by discovery (what `cuenv toolkits` lists).
    #[default]
    Discovered,
    /// Named under the profile file's `[toolkits]`.
    Declared,
    /// A CUDA runtime root cuenv assembled from PyPI wheels (`<home>/toolkits`).
    Wheel,
}

/// The toolkit candidates one profile chooses among:
/// - `cuda = { ..., from = "pypi" }`: only CUDA runtimes fetched from PyPI;
/// - else, in a file that lists `[toolkits]`: only those roots;
/// - else: installed (discovered) toolkits and fetched runtimes alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// Runtimes from PyPI wheels only.
    Wheels,
    /// The file's `[toolkits]` roots only.
    Declared,
    /// Discovered toolkits and wheel runtimes.
    Any,
}

impl Pool {
    /// The pool of `profile` in `file`.
    pub fn of(file: &ProfileFile, profile: &Profile) -> Pool {
        if profile.cuda.from.is_some() {
            Pool::Wheels
        } else if !file.toolkits.is_empty() {
            Pool::Declared
        } else {
            Pool::Any
        }
    }

    /// True when a candidate of `origin` is in this pool.
    pub fn admits(self, origin: Origin) -> bool {
        match self {
            Pool::Wheels => origin == Origin::Wheel,
            Pool::Declared => origin == Origin::Declared,
            Pool::Any => origin != Origin::Declared,
        }
    }

    /// The pool in words, for the reason `plan` gives and for errors.
    pub fn describe(self) -> &'static str {
        match self {
            Pool::Wheels => "CUDA runtimes from PyPI (`from = \"pypi\"`)",
            Pool::Declared => "roots under [toolkits] (a file that lists [toolkits] chooses only among them)",
            Pool::Any => "installed toolkits and CUDA runtimes fetched from PyPI",
        }
    }
}

/// What exists, as the caller found it.
#[derive(Debug, Clone, Copy)]
pub struct Candidates<'a> {
    /// The toolkit roots: those declared in `[toolkits]` when the file has that table,
    /// else the discovered ones.
    pub toolkits: &'a [ToolkitCandidate],
    /// Every store entry (all platforms; those for other platforms are skipped).
    pub store: &'a [CudnnCandidate],
    /// The host platform.
    pub platform: Platform,
}

/// One profile with its toolkit root and store entry chosen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolvedProfile {
    /// The profile name.
    pub name: String,
    /// The chosen toolkit root.
    pub toolkit_root: PathBuf,
    /// Its CUDA version.
    pub toolkit_version: Version,
    /// The chosen store entry's id.
    pub cudnn_id: String,
    /// The chosen store entry's name.
    pub cudnn_name: String,
    /// Its cuDNN version.
    pub cudnn_version: Version,
    /// `conda-env` as written (an env name or a path).
    pub conda_env: Option<String>,
    /// What `apply` checks.
    pub check: Check,
    /// Why this toolkit root won, in words (for `plan`; not in the lock or JSON).
    #[serde(skip)]
    pub toolkit_why: Why,
}

/// A reason in words. Two resolutions that make the same choices are equal whatever their
/// reasons say (a choice kept from the lock equals the same choice made afresh).
#[derive(Debug, Clone, Default, Eq)]
pub struct Why(pub String);

impl PartialEq for Why {
    fn eq(&self, _: &Why) -> bool {
        true
    }
}

impl std::ops::Deref for Why {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

/// Every profile of a file, resolved, in file order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Resolved {
    /// One per profile, in file order.
    pub profiles: Vec<ResolvedProfile>,
}

/// Resolves every profile of `file` against `candidates`, in file order.
///
/// Errors: the first profile that cannot be resolved, as described at [`resolve_toolkit`]
/// and [`resolve_cudnn`].
pub fn resolve(file: &ProfileFile, candidates: &Candidates) -> Result<Resolved, Error> {
    let profiles = file
        .profiles
        .iter()
        .map(|p| {
            let toolkit = resolve_toolkit(file, p, candidates)?;
            let entry = resolve_cudnn(file, p, toolkit, candidates)?;
            Ok(resolved_profile(p, toolkit, entry).why(toolkit_reason(file, p, toolkit, candidates)))
        })
        .collect::<Result<_, Error>>()?;
    Ok(Resolved { profiles })
}

/// Every resolution error of `file` against `candidates`, in file order, instead of the
/// first: each profile's toolkit, and its cuDNN against the chosen toolkit or, when no
/// toolkit matches, against the CUDA major its `cuda` names (so one run shows both).
///
/// `unsure`: profiles whose cuDNN cannot be judged yet (only their toolkit is).
pub fn validate_all(file: &ProfileFile, candidates: &Candidates, unsure: &[String]) -> Vec<Error> {
    let mut errors = Vec::new();
    for p in &file.profiles {
        let judge_cudnn = !unsure.contains(&p.name);
        match resolve_toolkit(file, p, candidates) {
            Ok(t) => errors.extend(resolve_cudnn(file, p, t, candidates).err().filter(|_| judge_cudnn)),
            Err(e) => {
                errors.push(e);
                if let Some(version) = fetchable_version(p).parse::<Version>().ok().filter(|_| judge_cudnn) {
                    let asked = ToolkitCandidate { root: PathBuf::new(), version, origin: Origin::Wheel };
                    errors.extend(resolve_cudnn(file, p, &asked, candidates).err());
                }
            }
        }
    }
    errors
}

/// Joins a profile with its chosen toolkit root and store entry.
pub fn resolved_profile(profile: &Profile, toolkit: &ToolkitCandidate, entry: &CudnnCandidate) -> ResolvedProfile {
    ResolvedProfile {
        name: profile.name.clone(),
        toolkit_root: toolkit.root.clone(),
        toolkit_version: toolkit.version.clone(),
        cudnn_id: entry.id.clone(),
        cudnn_name: entry.name.clone(),
        cudnn_version: entry.version.clone(),
        conda_env: profile.conda_env.as_ref().map(|e| e.value.clone()),
        check: profile.check,
        toolkit_why: Why::default(),
    }
}

impl ResolvedProfile {
    /// With `why` as [`ResolvedProfile::toolkit_why`].
    pub fn why(mut self, why: String) -> ResolvedProfile {
        self.toolkit_why = Why(why);
        self
    }
}

/// Why `chosen` won for `profile`: the pool it was chosen from and what else matched, e.g.
/// "CUDA 12.6 at /opt/cuda: the newest match for `cuda = "12"` among roots under
/// `[toolkits]` (...); also matching: 12.2 at /opt/cuda-12.2; matching but not candidates:
/// 12.6.77 at ...".
pub fn toolkit_reason(file: &ProfileFile, profile: &Profile, chosen: &ToolkitCandidate, candidates: &Candidates) -> String {
    let pool = Pool::of(file, profile);
    let matching = |t: &&ToolkitCandidate| profile.cuda.version.matches(&t.version) && t.root != chosen.root;
    let also: Vec<String> =
        candidates.toolkits.iter().filter(|t| pool.admits(t.origin)).filter(matching).map(|t| format!("{} at {}", t.version, t.root.display())).collect();
    let left_out: Vec<String> =
        candidates.toolkits.iter().filter(|t| !pool.admits(t.origin)).filter(matching).map(|t| format!("{} at {}", t.version, t.root.display())).collect();
    let mut why = format!(
        "CUDA {} at {}: the newest match for `cuda = {}` among {}",
        chosen.version,
        chosen.root.display(),
        file.text(&profile.cuda.span),
        pool.describe()
    );
    if !also.is_empty() {
        why.push_str(&format!("; also matching: {}", also.join(", ")));
    }
    if !left_out.is_empty() {
        why.push_str(&format!("; matching but not candidates: {}", left_out.join(", ")));
    }
    why
}

/// The newest toolkit of the profile's [`Pool`] whose version matches the profile's `cuda`.
///
/// Errors: none matches; the error points at the `cuda` value, lists the toolkits of its
/// pool (and those that match but are not candidates), and hints at what converges: the
/// runtime from PyPI (`cuda = { version = "11.8", from = "pypi" }`), never another version
/// that the cuDNN may not fit.
pub fn resolve_toolkit<'a>(file: &ProfileFile, profile: &Profile, candidates: &Candidates<'a>) -> Result<&'a ToolkitCandidate, Error> {
    let pool = Pool::of(file, profile);
    if let Some(t) = profile.cuda.version.best(candidates.toolkits.iter().filter(|t| pool.admits(t.origin)), |t| &t.version) {
        return Ok(t);
    }
    let written = file.text(&profile.cuda.span);
    let message = format!("no CUDA toolkit matches `cuda = {written}` (profile `{}`)", profile.name);
    let version = fetchable_version(profile);
    let from_pypi = format!("take the CUDA runtime from PyPI: `cuda = {{ version = \"{version}\", from = \"pypi\" }}`");
    let none_in_pool = !candidates.toolkits.iter().any(|t| pool.admits(t.origin));
    let hint = match pool {
        Pool::Wheels => format!("`cuenv apply` fetches the CUDA {version} runtime from PyPI; `cuenv plan` checks that PyPI has it"),
        Pool::Declared if none_in_pool => {
            format!("check that the roots under [toolkits] are CUDA toolkits (with version.json or version.txt), or {from_pypi}")
        }
        Pool::Declared => format!("{from_pypi}, or add the root of a CUDA {version} toolkit under [toolkits]"),
        Pool::Any if none_in_pool => {
            format!(
                "{from_pypi}, or install a CUDA {version} toolkit (or declare its root under [toolkits], like `\"{version}\" = '/usr/local/cuda-{version}'`)"
            )
        }
        Pool::Any => format!("{from_pypi}, or install a CUDA {version} toolkit (or declare its root under [toolkits])"),
    };
    let mut e = file.error_at(profile.cuda.span.clone(), message, Some(hint)).with_note(toolkit_list(candidates, pool));
    let left_out: Vec<String> = candidates
        .toolkits
        .iter()
        .filter(|t| !pool.admits(t.origin) && profile.cuda.version.matches(&t.version))
        .map(|t| format!("{} at {}", t.version, t.root.display()))
        .collect();
    if !left_out.is_empty() {
        e = e.with_note(format!("matching but not candidates (only {} are): {}", pool.describe(), left_out.join(", ")));
    }
    Err(e)
}

/// The one version a profile's `cuda` names, to suggest in a hint (`"11.8"` for `cuda =
/// "11.8"` or `"=11.8"`); the requirement as written when it names a range.
pub fn fetchable_version(profile: &Profile) -> String {
    use crate::cudnn::version::Op;
    match profile.cuda.version.comparators() {
        [c] if matches!(c.op, Op::Prefix | Op::Exact) => c.version.to_string(),
        _ => profile.cuda.version.to_string(),
    }
}

/// The file name of the placeholder root a CUDA runtime that `plan` would fetch gets among the
/// candidates (`<home>/toolkits/(to fetch: CUDA <version>)`; nothing exists there).
pub fn to_fetch_name(version: &Version) -> String {
    format!("(to fetch: CUDA {version})")
}

fn toolkit_list(candidates: &Candidates, pool: Pool) -> String {
    let mut ts: Vec<&ToolkitCandidate> = candidates.toolkits.iter().filter(|t| pool.admits(t.origin)).collect();
    if ts.is_empty() {
        return match pool {
            Pool::Wheels => "no CUDA runtime from PyPI is in this home yet".into(),
            Pool::Declared => "no root under [toolkits] is a CUDA toolkit".into(),
            Pool::Any => "no CUDA toolkit was found".into(),
        };
    }
    ts.sort_by(|a, b| b.version.cmp(&a.version));
    // A runtime `plan` would fetch has a placeholder root ([`to_fetch_name`]): say that, not
    // a path that does not exist.
    let items: Vec<String> = ts
        .iter()
        .map(|t| {
            if t.root.file_name().is_some_and(|n| *n == *to_fetch_name(&t.version)) {
                format!("{} (to be fetched from PyPI)", t.version)
            } else {
                format!("{} at {}", t.version, t.root.display())
            }
        })
        .collect();
    format!("toolkits: {}", items.join(", "))
}

/// The newest store entry whose version matches the profile's `cudnn`, built for `toolkit`'s
/// CUDA major and the host platform.
///
/// Errors, each pointing at the `cudnn` value:
/// - entries match the version but only for another CUDA major (a cuda12 cuDNN on a v11.8 root);
/// - entries match but only for another platform;
/// - the store holds nothing for this platform (run `cuenv store add <archive>`);
/// - nothing matches (the entries for this CUDA major are listed).
pub fn resolve_cudnn<'a>(file: &ProfileFile, profile: &Profile, toolkit: &ToolkitCandidate, candidates: &Candidates<'a>) -> Result<&'a CudnnCandidate, Error> {
    let req = &profile.cudnn.version;
    let major = toolkit.version.major();
    let host = candidates.platform;
    let fits = |e: &&CudnnCandidate| e.platform == host && e.cuda_major == major;
    if let Some(e) = req.best(candidates.store.iter().filter(fits), |e| &e.version) {
        return Ok(e);
    }
    let matching: Vec<&CudnnCandidate> = candidates.store.iter().filter(|e| req.matches(&e.version)).collect();
    let cx = Miss { file, profile, toolkit, major, host, written: file.text(&profile.cudnn.span) };
    Err(if matching.iter().any(|e| e.platform == host) {
        cx.other_cuda_major(&matching)
    } else if !matching.is_empty() {
        cx.other_platform(&matching)
    } else if !candidates.store.iter().any(|e| e.platform == host) {
        cx.empty_store()
    } else {
        cx.no_match(candidates.store)
    })
}

/// What a failed cuDNN resolution knows, to word its error.
struct Miss<'a> {
    file: &'a ProfileFile,
    profile: &'a Profile,
    toolkit: &'a ToolkitCandidate,
    major: u64,
    host: Platform,
    written: &'a str,
}

impl Miss<'_> {
    fn error(&self, message: String, hint: String) -> Error {
        self.file.error_at(self.profile.cudnn.span.clone(), message, Some(hint))
    }

    fn toolkit_note(&self) -> String {
        if self.toolkit.root.as_os_str().is_empty() {
            return format!("profile `{}` asks for CUDA {}, which no toolkit provides yet", self.profile.name, self.toolkit.version);
        }
        format!("profile `{}` uses the CUDA {} toolkit at {}", self.profile.name, self.toolkit.version, self.toolkit.root.display())
    }

    fn other_cuda_major(&self, matching: &[&CudnnCandidate]) -> Error {
        let here: Vec<&CudnnCandidate> = matching.iter().copied().filter(|e| e.platform == self.host).collect();
        let majors = join_set(here.iter().map(|e| format!("cuda{}", e.cuda_major)));
        // A toolkit no candidate provides yet (its own error comes first) is the profile's ask,
        // not a toolkit that exists.
        let what = if self.toolkit.root.as_os_str().is_empty() { "the profile asks for" } else { "the toolkit is" };
        let message = format!("`cudnn = {}` matches only {majors} store entries, but {what} CUDA {}", self.written, self.toolkit.version);
        let hint = format!(
            "add a cuda{m} build of cuDNN {} (`cuenv store add` a `..._cuda{m}-archive` or an nvidia-cudnn-cu{m} wheel), or change `cuda` to a toolkit of CUDA {}",
            self.profile.cudnn.version,
            here[0].cuda_major,
            m = self.major
        );
        self.error(message, hint).with_note(entry_list("matching store entries", &here)).with_note(self.toolkit_note())
    }

    fn other_platform(&self, matching: &[&CudnnCandidate]) -> Error {
        let platforms = join_set(matching.iter().map(|e| e.platform.to_string()));
        let message = format!("`cudnn = {}` matches only store entries for {platforms}, not this {} host", self.written, self.host);
        let hint = format!("add a {} build of that cuDNN with `cuenv store add <archive>`", self.host);
        self.error(message, hint).with_note(entry_list("matching store entries", matching))
    }

    /// `, or fetch it: \`cudnn = { version = "8.8", from = "pypi" }\`` for a profile whose
    /// `cudnn` names no source (the same version: hints converge).
    fn or_fetch(&self) -> String {
        if self.profile.cudnn.from.is_some() {
            return String::new();
        }
        format!(", or fetch it: `cudnn = {{ version = \"{}\", from = \"pypi\" }}`", self.profile.cudnn.version)
    }

    fn empty_store(&self) -> Error {
        let message = format!("nothing in the store matches `cudnn = {}`: the store holds no cuDNN for {}", self.written, self.host);
        let hint = format!("run `cuenv store add <archive>` with a cuDNN archive or wheel for CUDA {} on {}{}", self.major, self.host, self.or_fetch());
        self.error(message, hint)
    }

    fn no_match(&self, store: &[CudnnCandidate]) -> Error {
        let here: Vec<&CudnnCandidate> = store.iter().filter(|e| e.platform == self.host && e.cuda_major == self.major).collect();
        let message = format!("nothing in the store matches `cudnn = {}` for CUDA {}", self.written, self.major);
        let note = if here.is_empty() {
            format!("the store holds no cuda{} entries for {}", self.major, self.host)
        } else {
            entry_list(&format!("cuda{} store entries", self.major), &here)
        };
        let hint =
            format!("run `cuenv store add <archive>` to add a matching cuda{} build{}, or change `cudnn` to a version listed", self.major, self.or_fetch());
        self.error(message, hint).with_note(note).with_note(self.toolkit_note())
    }
}

/// `label: 9.5.0.50 (cuda12, name), ...`, newest first.
fn entry_list(label: &str, entries: &[&CudnnCandidate]) -> String {
    let mut es = entries.to_vec();
    es.sort_by(|a, b| b.version.cmp(&a.version).then(a.cuda_major.cmp(&b.cuda_major)));
    let items: Vec<String> = es.iter().map(|e| format!("{} (cuda{}, {})", e.version, e.cuda_major, e.name)).collect();
    format!("{label}: {}", items.join(", "))
}

/// The distinct strings, sorted, joined with " and ".
fn join_set(items: impl Iterator<Item = String>) -> String {
    items.collect::<BTreeSet<_>>().into_iter().collect::<Vec<_>>().join(" and ")
}

// ---------------------------------------------------------------------------------------------
// Honouring a lock
// ---------------------------------------------------------------------------------------------

/// What the lock file keeps of a resolved profile.
impl From<&ResolvedProfile> for LockedProfile {
    fn from(r: &ResolvedProfile) -> LockedProfile {
        LockedProfile {
            name: r.name.clone(),
            toolkit_root: r.toolkit_root.clone(),
            toolkit_version: r.toolkit_version.clone(),
            cudnn_id: r.cudnn_id.clone(),
            cudnn_name: r.cudnn_name.clone(),
            cudnn_version: r.cudnn_version.clone(),
        }
    }
}

/// A resolution as one platform's lock section (what [`crate::profile::lockfile::write`] records).
impl From<&Resolved> for LockFile {
    fn from(r: &Resolved) -> LockFile {
        LockFile { profiles: r.profiles.iter().map(LockedProfile::from).collect(), unpinned: Vec::new() }
    }
}

/// The result of honouring a lock: the resolution to apply, and how it differs from the lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Honoured {
    /// Every profile of the file, in file order.
    pub resolved: Resolved,
    /// One line per difference from the lock, `+` (profile not locked), `-` (locked profile no
    /// longer in the file) or `~` (a different toolkit root or store entry, and why). Empty
    /// when the lock already describes `resolved`.
    pub changes: Vec<String>,
}

/// Resolves `file` preferring the choices in `lock` (none: everything is new): a locked
/// toolkit root is kept while it is among the candidates and its version matches `cuda`; a
/// locked store entry while it is in the store, for the host platform and the toolkit's CUDA
/// major, and matches `cudnn`. Anything else is resolved afresh as [`resolve`] does.
///
/// Errors: those of [`resolve_toolkit`] and [`resolve_cudnn`] for a profile
/// that has to be re-resolved and cannot be.
pub fn honour(lock: Option<&LockFile>, file: &ProfileFile, candidates: &Candidates) -> Result<Honoured, Error> {
    let mut out = Honoured { resolved: Resolved::default(), changes: Vec::new() };
    for p in &file.profiles {
        let locked = lock.and_then(|l| l.profile(&p.name));
        let (r, changes) = honour_profile(locked, file, p, candidates)?;
        out.resolved.profiles.push(r);
        out.changes.extend(changes);
    }
    for gone in lock.iter().flat_map(|l| &l.profiles).filter(|l| file.profile(&l.name).is_none()) {
        out.changes.push(format!("- {}: no longer in {}", gone.name, file.path.display()));
    }
    Ok(out)
}

fn honour_profile(locked: Option<&LockedProfile>, file: &ProfileFile, p: &Profile, c: &Candidates) -> Result<(ResolvedProfile, Vec<String>), Error> {
    let Some(l) = locked else {
        let toolkit = resolve_toolkit(file, p, c)?;
        let entry = resolve_cudnn(file, p, toolkit, c)?;
        let r = resolved_profile(p, toolkit, entry).why(toolkit_reason(file, p, toolkit, c));
        let line = format!("+ {}: CUDA {} at {}, cuDNN {} ({})", r.name, r.toolkit_version, r.toolkit_root.display(), r.cudnn_version, r.cudnn_name);
        return Ok((r, vec![line]));
    };
    let mut changes = Vec::new();
    let mut toolkit_why = None;
    let toolkit = match locked_toolkit(l, file, p, c) {
        Ok(t) => t,
        Err(why) => {
            let t = resolve_toolkit(file, p, c)?;
            changes.push(format!(
                "~ {}: toolkit {} at {} -> {} at {} ({why})",
                p.name,
                l.toolkit_version,
                l.toolkit_root.display(),
                t.version,
                t.root.display()
            ));
            toolkit_why = Some(toolkit_reason(file, p, t, c));
            t
        }
    };
    if toolkit.root == l.toolkit_root && toolkit.version != l.toolkit_version {
        changes.push(format!("~ {}: toolkit at {} is now CUDA {} (locked: {})", p.name, toolkit.root.display(), toolkit.version, l.toolkit_version));
    }
    let entry = match locked_entry(l, p, toolkit, c) {
        Ok(e) => e,
        Err(why) => {
            let e = resolve_cudnn(file, p, toolkit, c)?;
            changes.push(format!("~ {}: cuDNN {} ({}) -> {} ({}) ({why})", p.name, l.cudnn_version, l.cudnn_name, e.version, e.name));
            e
        }
    };
    if entry.id == l.cudnn_id && (entry.name != l.cudnn_name || entry.version != l.cudnn_version) {
        changes.push(format!("~ {}: store entry {} is {} ({}) (locked: {} ({}))", p.name, entry.id, entry.version, entry.name, l.cudnn_version, l.cudnn_name));
    }
    let why = toolkit_why.unwrap_or_else(|| format!("CUDA {} at {}: kept from lab.lock (it still matches)", toolkit.version, toolkit.root.display()));
    Ok((resolved_profile(p, toolkit, entry).why(why), changes))
}

/// The locked toolkit root among the candidates, or why it cannot be kept.
fn locked_toolkit<'a>(l: &LockedProfile, file: &ProfileFile, p: &Profile, c: &Candidates<'a>) -> Result<&'a ToolkitCandidate, String> {
    let t = c.toolkits.iter().find(|t| t.root == l.toolkit_root).ok_or("the locked toolkit root is gone")?;
    let pool = Pool::of(file, p);
    if !pool.admits(t.origin) {
        return Err(format!("the locked toolkit root is not a candidate: only {} are", pool.describe()));
    }
    if !p.cuda.version.matches(&t.version) {
        return Err(format!("CUDA {} no longer satisfies `cuda = \"{}\"`", t.version, p.cuda.version));
    }
    Ok(t)
}

/// The locked store entry among the candidates, or why it cannot be kept with `toolkit`.
fn locked_entry<'a>(l: &LockedProfile, p: &Profile, toolkit: &ToolkitCandidate, c: &Candidates<'a>) -> Result<&'a CudnnCandidate, String> {
    let e = c.store.iter().find(|e| e.id == l.cudnn_id).ok_or("the locked store entry is no longer in the store")?;
    if e.platform != c.platform {
        return Err(format!("the locked store entry is for {}, not {}", e.platform, c.platform));
    }
    if e.cuda_major != toolkit.version.major() {
        return Err(format!("the locked store entry is for CUDA {}, the toolkit is CUDA {}", e.cuda_major, toolkit.version));
    }
    if !p.cudnn.version.matches(&e.version) {
        return Err(format!("cuDNN {} no longer satisfies `cudnn = \"{}\"`", e.version, p.cudnn.version));
    }
    Ok(e)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::path::Path;

    use super::*;
    use crate::error::{Diagnose, ExitCode};
    use crate::profile;

    pub(crate) fn entry(id: &str, version: &str, cuda_major: u64, platform: Platform) -> CudnnCandidate {
        CudnnCandidate { id: id.into(), name: format!("cudnn-{version}-cuda{cuda_major}-{platform}"), version: version.parse().unwrap(), cuda_major, platform }
    }

    pub(crate) fn toolkit(root: &str, version: &str) -> ToolkitCandidate {
        ToolkitCandidate { root: root.into(), version: version.parse().unwrap(), origin: Origin::Discovered }
    }

    pub(crate) const LINUX: Platform = Platform::LinuxX86_64;

    pub(crate) fn store() -> Vec<CudnnCandidate> {
        vec![
            entry("e895", "8.9.4.25", 12, LINUX),
            entry("e950", "9.5.0.50", 12, LINUX),
            entry("e880", "8.8.0.121", 11, LINUX),
            entry("w950", "9.5.0.50", 12, Platform::WindowsX86_64),
            entry("e897", "8.9.7.29", 12, LINUX),
        ]
    }

    pub(crate) fn toolkits() -> Vec<ToolkitCandidate> {
        vec![toolkit("/usr/local/cuda-11.8", "11.8.89"), toolkit("/usr/local/cuda-12.6", "12.6.77"), toolkit("/usr/local/cuda-12.2", "12.2")]
    }

    pub(crate) fn file(text: &str) -> ProfileFile {
        profile::parse(text, Path::new("lab.toml")).unwrap()
    }

    fn run(text: &str, store: &[CudnnCandidate], toolkits: &[ToolkitCandidate]) -> Result<Resolved, Error> {
        resolve(&file(text), &Candidates { toolkits, store, platform: LINUX })
    }

    #[test]
    fn picks_newest_toolkit_and_entry_in_file_order() {
        let text = "[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9\"\nconda-env = \"t\"\n[profiles.old]\ncuda = \"11\"\ncudnn = \"8\"\ncheck = \"none\"\n[profiles.mid]\ncuda = \"<12.5\"\ncudnn = \"8.9\"\n";
        let r = run(text, &store(), &toolkits()).unwrap();
        let names: Vec<&str> = r.profiles.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["torch2", "old", "mid"]);
        let t = &r.profiles[0];
        assert_eq!((t.toolkit_root.to_str().unwrap(), t.cudnn_id.as_str()), ("/usr/local/cuda-12.6", "e950"));
        assert_eq!(t.conda_env.as_deref(), Some("t"));
        assert_eq!((r.profiles[1].cudnn_id.as_str(), r.profiles[1].check), ("e880", Check::None));
        assert_eq!(r.profiles[2].toolkit_version.to_string(), "12.2");
        assert_eq!(r.profiles[2].cudnn_id, "e897");
        assert_eq!(r.profiles[2].cudnn_name, "cudnn-8.9.7.29-cuda12-linux-x86_64");
    }

    #[test]
    fn host_platform_decides_among_equal_versions() {
        let r = resolve(
            &file("[profiles.a]\ncuda = \"12\"\ncudnn = \"9.5\"\n"),
            &Candidates { toolkits: &toolkits(), store: &store(), platform: Platform::WindowsX86_64 },
        )
        .unwrap();
        assert_eq!(r.profiles[0].cudnn_id, "w950");
    }

    #[test]
    fn no_toolkit_lists_what_exists() {
        let e = run("[profiles.tf28]\ncuda = \"11.2\"\ncudnn = \"8\"\n", &store(), &toolkits()).unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("lab.toml:2:8: no CUDA toolkit matches `cuda = \"11.2\"` (profile `tf28`)"), "{s}");
        assert!(s.contains("= note: toolkits: 12.6.77 at /usr/local/cuda-12.6, 12.2 at /usr/local/cuda-12.2, 11.8.89 at /usr/local/cuda-11.8"), "{s}");
        // The hint converges: the same version from PyPI, not another version the cuDNN may not fit.
        assert_eq!(
            e.hint().unwrap(),
            "take the CUDA runtime from PyPI: `cuda = { version = \"11.2\", from = \"pypi\" }`, or install a CUDA 11.2 toolkit (or declare its root under [toolkits])"
        );
        assert_eq!(e.exit_code(), ExitCode::Invalid);
    }

    #[test]
    fn no_toolkit_at_all() {
        let e = run("[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\n", &store(), &[]).unwrap_err();
        assert!(e.to_string().contains("= note: no CUDA toolkit was found"));
        assert!(e.hint().unwrap().starts_with("take the CUDA runtime from PyPI: `cuda = { version = \"12\", from = \"pypi\" }`, or install a CUDA 12 toolkit"));
        let e = run("[toolkits]\nx = '/opt/x'\n[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\n", &store(), &[]).unwrap_err();
        assert!(e.hint().unwrap().contains("are CUDA toolkits"));
    }

    fn with_origin(mut t: ToolkitCandidate, origin: Origin) -> ToolkitCandidate {
        t.origin = origin;
        t
    }

    /// A file listing [toolkits] chooses only among them; `from = "pypi"`
    /// only among runtimes from PyPI; otherwise installed toolkits and runtimes alike.
    #[test]
    fn each_profile_chooses_among_its_pool_and_says_why() {
        let ts = vec![
            with_origin(toolkit("/home/u/.local/share/cuenv/toolkits/cuda-12.6.77", "12.6.77"), Origin::Wheel),
            with_origin(toolkit("/opt/cuda-12.2", "12.2"), Origin::Declared),
            toolkit("/usr/local/cuda-12.4", "12.4"),
        ];
        let pick = |text: &str| {
            let f = file(text);
            let r = resolve(&f, &Candidates { toolkits: &ts, store: &store(), platform: LINUX }).unwrap();
            let p = &r.profiles[0];
            (p.toolkit_root.display().to_string(), p.toolkit_why.0.clone())
        };
        let (root, why) = pick("[toolkits]\nx = '/opt/cuda-12.2'\n[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\n");
        assert_eq!(root, "/opt/cuda-12.2");
        assert_eq!(
            why,
            "CUDA 12.2 at /opt/cuda-12.2: the newest match for `cuda = \"12\"` among roots under [toolkits] (a file that lists [toolkits] chooses only among them); matching but not candidates: 12.6.77 at /home/u/.local/share/cuenv/toolkits/cuda-12.6.77, 12.4 at /usr/local/cuda-12.4"
        );
        let (root, why) = pick("[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\n");
        assert_eq!(root, "/home/u/.local/share/cuenv/toolkits/cuda-12.6.77");
        assert!(why.contains("among installed toolkits and CUDA runtimes fetched from PyPI; also matching: 12.4 at /usr/local/cuda-12.4"), "{why}");
        let (root, _) = pick("[toolkits]\nx = '/opt/cuda-12.2'\n[profiles.a]\ncuda = { version = \"12.6\", from = \"pypi\" }\ncudnn = \"9\"\n");
        assert_eq!(root, "/home/u/.local/share/cuenv/toolkits/cuda-12.6.77");
        // Only a declared 12.2 exists for `cuda = "12.4"`: the others are named as not candidates.
        let f = file("[toolkits]\nx = '/opt/cuda-12.2'\n[profiles.a]\ncuda = \"12.4\"\ncudnn = \"9\"\n");
        let e = resolve(&f, &Candidates { toolkits: &ts, store: &store(), platform: LINUX }).unwrap_err();
        let l = e.located().unwrap();
        assert_eq!(l.notes[0], "toolkits: 12.2 at /opt/cuda-12.2");
        assert!(l.notes[1].starts_with("matching but not candidates (only roots under [toolkits]"), "{:?}", l.notes);
        assert!(e.hint().unwrap().starts_with("take the CUDA runtime from PyPI: `cuda = { version = \"12.4\", from = \"pypi\" }`"), "{:?}", e.hint());
    }

    /// A lock that names a root the file's pool no longer admits is re-resolved, saying why.
    #[test]
    fn honour_drops_a_locked_root_outside_the_pool() {
        let ts = vec![with_origin(toolkit("/w/cuda-12.6.77", "12.6.77"), Origin::Wheel), with_origin(toolkit("/opt/cuda-12.2", "12.2"), Origin::Declared)];
        let plain = file("[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\n");
        let c = Candidates { toolkits: &ts, store: &store(), platform: LINUX };
        let first = resolve(&plain, &c).unwrap();
        assert_eq!(first.profiles[0].toolkit_root, PathBuf::from("/w/cuda-12.6.77"));
        let lock = lock_of(&LockFile::render_updated(None, LINUX, &first));
        let declared = file("[toolkits]\nx = '/opt/cuda-12.2'\n[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\n");
        let h = honour(Some(&lock), &declared, &c).unwrap();
        assert_eq!(h.resolved.profiles[0].toolkit_root, PathBuf::from("/opt/cuda-12.2"));
        assert!(
            h.changes[0].ends_with(
                "(the locked toolkit root is not a candidate: only roots under [toolkits] (a file that lists [toolkits] chooses only among them) are)"
            ),
            "{:?}",
            h.changes
        );
        // Kept from the lock: the reason says so.
        let kept = honour(Some(&lock), &plain, &c).unwrap();
        assert_eq!(&*kept.resolved.profiles[0].toolkit_why, "CUDA 12.6.77 at /w/cuda-12.6.77: kept from lab.lock (it still matches)");
    }

    #[test]
    fn cuda12_cudnn_on_a_cuda11_root() {
        let e = run("[profiles.a]\ncuda = \"11.8\"\ncudnn = \"9.5\"\n", &store(), &toolkits()).unwrap_err();
        let l = e.located().unwrap();
        assert_eq!(l.message, "`cudnn = \"9.5\"` matches only cuda12 store entries, but the toolkit is CUDA 11.8.89");
        assert_eq!((l.line, l.column), (3, 9));
        assert_eq!(l.notes[0], "matching store entries: 9.5.0.50 (cuda12, cudnn-9.5.0.50-cuda12-linux-x86_64)");
        assert_eq!(l.notes[1], "profile `a` uses the CUDA 11.8.89 toolkit at /usr/local/cuda-11.8");
        assert!(e.hint().unwrap().starts_with("add a cuda11 build"), "{:?}", e.hint());
        assert!(e.hint().unwrap().ends_with("toolkit of CUDA 12"));
    }

    #[test]
    fn only_another_platform_matches() {
        let store = vec![entry("w", "9.5.0.50", 12, Platform::WindowsX86_64), entry("l", "8.9.4.25", 12, LINUX)];
        let e = run("[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\n", &store, &toolkits()).unwrap_err();
        assert_eq!(e.located().unwrap().message, "`cudnn = \"9\"` matches only store entries for windows-x86_64, not this linux-x86_64 host");
    }

    #[test]
    fn empty_store_says_store_add() {
        let e = run("[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\n", &[], &toolkits()).unwrap_err();
        assert_eq!(e.located().unwrap().message, "nothing in the store matches `cudnn = \"9\"`: the store holds no cuDNN for linux-x86_64");
        assert!(e.hint().unwrap().starts_with("run `cuenv store add <archive>`"));
    }

    #[test]
    fn no_match_lists_entries_of_that_cuda_major() {
        let e = run("[profiles.a]\ncuda = \"12\"\ncudnn = { version = \"8.7\" }\n", &store(), &toolkits()).unwrap_err();
        let l = e.located().unwrap();
        assert_eq!(l.message, "nothing in the store matches `cudnn = \"8.7\"` for CUDA 12");
        assert_eq!((l.line, l.column, l.caret_len), (3, 21, 5));
        assert!(l.notes[0].starts_with("cuda12 store entries: 9.5.0.50 (cuda12"), "{}", l.notes[0]);
        assert!(l.notes[0].contains("8.9.7.29 (cuda12") && !l.notes[0].contains("cuda11"));
        assert!(e.hint().unwrap().contains("run `cuenv store add <archive>`"));

        let e = run("[profiles.a]\ncuda = \"11\"\ncudnn = \"9.9\"\n", &[entry("x", "9.5.0.50", 12, LINUX)], &toolkits()).unwrap_err();
        assert_eq!(e.located().unwrap().notes[0], "the store holds no cuda11 entries for linux-x86_64");
    }

    #[test]
    fn first_failing_profile_is_reported() {
        let text = "[profiles.good]\ncuda = \"12\"\ncudnn = \"9\"\n[profiles.bad]\ncuda = \"10\"\ncudnn = \"9\"\n";
        let e = run(text, &store(), &toolkits()).unwrap_err();
        assert_eq!(e.located().unwrap().line, 5);
    }

    #[test]
    fn resolved_serializes_for_json() {
        let r = run("[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\n", &store(), &toolkits()).unwrap();
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["profiles"][0]["cudnn_version"], "9.5.0.50");
        assert_eq!(j["profiles"][0]["check"], "conv");
    }

    const LAB: &str = "[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9\"\n[profiles.old]\ncuda = \"11\"\ncudnn = \"8\"\n";

    fn cands<'a>(t: &'a [ToolkitCandidate], s: &'a [CudnnCandidate]) -> Candidates<'a> {
        Candidates { toolkits: t, store: s, platform: LINUX }
    }

    fn resolved() -> Resolved {
        resolve(&file(LAB), &cands(&toolkits(), &store())).unwrap()
    }

    fn lock_of(text: &str) -> LockFile {
        crate::profile::lockfile::parse(text, Path::new("lab.lock"), LINUX).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn honour_without_lock_reports_every_profile_as_new() {
        let h = honour(None, &file(LAB), &cands(&toolkits(), &store())).unwrap();
        assert_eq!(h.resolved, resolved());
        assert_eq!(h.changes.len(), 2);
        assert_eq!(h.changes[0], "+ torch2: CUDA 12.6.77 at /usr/local/cuda-12.6, cuDNN 9.5.0.50 (cudnn-9.5.0.50-cuda12-linux-x86_64)");
    }

    #[test]
    fn honour_keeps_locked_choices_over_newer_ones() {
        let lock = lock_of(&LockFile::render_updated(None, LINUX, &resolved()));
        // A newer toolkit and a newer cuDNN appear: the lock still holds.
        let mut ts = toolkits();
        ts.push(toolkit("/usr/local/cuda-12.8", "12.8"));
        let mut s = store();
        s.push(entry("e990", "9.9.0.1", 12, LINUX));
        let h = honour(Some(&lock), &file(LAB), &cands(&ts, &s)).unwrap();
        assert_eq!(h.changes, Vec::<String>::new());
        assert_eq!(h.resolved, resolved());
        // Without the lock the newer ones win.
        let fresh = resolve(&file(LAB), &cands(&ts, &s)).unwrap();
        assert_eq!(fresh.profiles[0].cudnn_id, "e990");
    }

    #[test]
    fn honour_re_resolves_a_vanished_entry() {
        let lock = lock_of(&LockFile::render_updated(None, LINUX, &resolved()));
        let mut s: Vec<CudnnCandidate> = store().into_iter().filter(|e| e.id != "e950").collect();
        s.push(entry("e930", "9.3.0.75", 12, LINUX));
        let h = honour(Some(&lock), &file(LAB), &cands(&toolkits(), &s)).unwrap();
        assert_eq!(h.resolved.profiles[0].cudnn_id, "e930");
        assert_eq!(
            h.changes,
            [
                "~ torch2: cuDNN 9.5.0.50 (cudnn-9.5.0.50-cuda12-linux-x86_64) -> 9.3.0.75 (cudnn-9.3.0.75-cuda12-linux-x86_64) (the locked store entry is no longer in the store)"
            ]
        );
    }

    #[test]
    fn honour_follows_edited_requirements() {
        let lock = lock_of(&LockFile::render_updated(None, LINUX, &resolved()));
        let edited = "[profiles.torch2]\ncuda = \"12.2\"\ncudnn = \"8.9.4\"\n[profiles.new]\ncuda = \"11\"\ncudnn = \"8\"\n";
        let h = honour(Some(&lock), &file(edited), &cands(&toolkits(), &store())).unwrap();
        assert_eq!(h.changes.len(), 4, "{:#?}", h.changes);
        assert!(
            h.changes[0].starts_with(
                "~ torch2: toolkit 12.6.77 at /usr/local/cuda-12.6 -> 12.2 at /usr/local/cuda-12.2 (CUDA 12.6.77 no longer satisfies `cuda = \"12.2\"`)"
            ),
            "{}",
            h.changes[0]
        );
        assert!(h.changes[1].ends_with("(cuDNN 9.5.0.50 no longer satisfies `cudnn = \"8.9.4\"`)"), "{}", h.changes[1]);
        assert!(h.changes[2].starts_with("+ new: "));
        assert_eq!(h.changes[3], "- old: no longer in lab.toml");
    }

    #[test]
    fn honour_reports_a_toolkit_upgraded_in_place() {
        let lock = lock_of(&LockFile::render_updated(None, LINUX, &resolved()));
        let ts = vec![toolkit("/usr/local/cuda-11.8", "11.8.89"), toolkit("/usr/local/cuda-12.6", "12.6.85")];
        let h = honour(Some(&lock), &file(LAB), &cands(&ts, &store())).unwrap();
        assert_eq!(h.changes, ["~ torch2: toolkit at /usr/local/cuda-12.6 is now CUDA 12.6.85 (locked: 12.6.77)"]);
        assert_eq!(h.resolved.profiles[0].toolkit_version.to_string(), "12.6.85");
    }

    #[test]
    fn honour_replaces_an_entry_of_the_wrong_cuda_major() {
        let mut text = LockFile::render_updated(None, LINUX, &resolved());
        text = text.replace("cudnn-id = \"e880\"", "cudnn-id = \"e895\"");
        let lock = lock_of(&text);
        let h = honour(Some(&lock), &file(LAB), &cands(&toolkits(), &store())).unwrap();
        assert_eq!(h.resolved.profiles[1].cudnn_id, "e880");
        assert!(h.changes[0].ends_with("(the locked store entry is for CUDA 12, the toolkit is CUDA 11.8.89)"), "{:?}", h.changes);
    }

    #[test]
    fn honour_fails_where_re_resolution_fails() {
        let lock = lock_of(&LockFile::render_updated(None, LINUX, &resolved()));
        let e = honour(Some(&lock), &file(LAB), &cands(&toolkits(), &[])).unwrap_err();
        assert!(e.to_string().contains("nothing in the store matches"), "{e}");
    }
}
