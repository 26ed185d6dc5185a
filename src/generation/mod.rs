//! Generations: immutable, numbered sets of views and shims, and the switch between them.
//!
//! On disk, under the cuenv home:
//! ```text
//! generations/<N>/manifest.toml        what generation N is (never modified once published)
//! generations/<N>/views/<profile>/     cuda, cudnn, cudnn-lib, cuda-lib: links (none when link-free)
//! generations/<N>/shims/<i>            the exact bytes of each conda shim of N
//! generations/<N>/check.json           check results, written after the checks ran
//! profiles  -> generations/<N>/views   the stable path: one link for all profiles
//! current                              link-free generations: the pointer file naming the current one
//! active    -> profiles/<profile>      the active profile (`cuenv use`; link-free: a pointer file)
//! journal.toml                         present only while a switch (or an apply's transaction) is in progress
//! history.jsonl                        one line per switch (apply, rollback)
//! ```
//!
//! **Commit point.** The current generation *is* what the pointer file `current` names
//! (link-free generations, `link-mode = "none"`), else the target of the `profiles` link; no
//! other state says which generation is current ([`current`]; `set_current` makes it). A switch writes the journal, brings the
//! conda shims to the new generation's set, retargets `profiles` in one atomic step (the
//! commit point), appends to the history and deletes the journal. Consumers only see
//! `profiles/<name>` and `active`, so at every instant each resolves to a complete view of
//! the old or the new generation. A crash leaves the journal behind; [`recover`] (run by
//! every writing command under the lock) then finishes the switch if `profiles` already
//! points at the new generation, and otherwise puts the old generation's shims back.
//!
//! **Apply transaction.** `apply` with checks commits later: its journal ([`ApplyTx`],
//! phase `checking`, with the lock file's old text) stays from before the switch until the
//! checks gave their verdict and `lab.lock` is written. Until then, any failure, signal or
//! kill ends with the previous generation current (none for a first generation), its shims,
//! the history saying `revert` and the old lock file: [`ApplyTx::revert`] in process,
//! [`recover`] after a kill.

pub mod active;
pub mod gc;
pub mod profile_check;
pub mod rollback;
pub mod status;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::home::layout::Layout;
use crate::link::{self, LinkKind};
use crate::sys::fsutil;

/// How a generation's views reach their store entries: `symlink`, `junction` or `copy`
/// in `manifest.toml` (see `docs/design.md`, link modes).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ViewMode {
    /// Symbolic links (Linux, or `link-mode = "symlink"`).
    Symlink,
    /// NTFS junctions (Windows).
    Junction,
    /// The cuDNN entry is copied into the view; the other view links stay links (generations
    /// built by cuenv before the link-free mode; `link-mode = "copy"` now builds
    /// [`ViewMode::LinkFree`]).
    Copy,
    /// No links (`none`): the generation has no views; shims and activations name the store
    /// entries and toolkit roots themselves, and the pointer file `<home>/current` says that
    /// the generation is current (see the module docs).
    #[serde(rename = "none")]
    LinkFree,
}

impl ViewMode {
    /// Whether generations of this mode make no links (no views; current through the pointer file).
    pub fn is_link_free(self) -> bool {
        self == ViewMode::LinkFree
    }
}

impl std::fmt::Display for ViewMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ViewMode::Symlink => "symlink",
            ViewMode::Junction => "junction",
            ViewMode::Copy => "copy",
            ViewMode::LinkFree => "none",
        })
    }
}

/// What a switch was for, as the history and the journal record it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SwitchOp {
    /// `cuenv apply` made a new generation current.
    Apply,
    /// `cuenv rollback` (or `rollback --to N`).
    Rollback,
    /// A failed check put the previous generation back.
    Revert,
}

impl std::fmt::Display for SwitchOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SwitchOp::Apply => "apply",
            SwitchOp::Rollback => "rollback",
            SwitchOp::Revert => "revert",
        })
    }
}

/// One view's record in a manifest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ViewRecord {
    /// Profile name.
    pub name: String,
    /// Toolkit root the view's `cuda` link points to.
    pub toolkit_root: PathBuf,
    /// That toolkit's version.
    pub toolkit_version: String,
    /// Store entry id and folder name.
    pub cudnn_id: String,
    pub cudnn_name: String,
    /// cuDNN version of the entry.
    pub cudnn_version: String,
    /// CUDA major of the entry.
    pub cuda_major: u64,
    /// The store entry folder.
    pub entry_dir: PathBuf,
    /// The entry's library folder, relative to the entry (`bin`, `bin/x64`, `lib`).
    pub cudnn_lib: String,
    /// The toolkit's runtime library folder (absolute).
    pub cuda_lib: PathBuf,
    /// The conda env prefix the shims are written into, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conda_env: Option<PathBuf>,
    /// What to check.
    pub check: crate::profile::Check,
    /// `true` when the view holds a copy of the entry instead of a link.
    #[serde(default)]
    pub copied: bool,
}

/// A conda shim written by a generation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ShimRecord {
    /// Where the shim lives (inside a conda env's `etc/conda/{activate,deactivate}.d`).
    pub path: PathBuf,
    /// The profile it belongs to.
    pub profile: String,
    /// File name of its stored copy under `generations/<N>/shims/`.
    pub stored: String,
    /// SHA-256 of its content.
    pub sha256: String,
}

/// `manifest.toml` of one generation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// The generation number (1, 2, ...).
    pub number: u64,
    /// When it was built (RFC 3339).
    pub created: String,
    /// The profile file it was built from, and that file's SHA-256.
    pub source: PathBuf,
    pub source_sha256: String,
    /// How the views were made.
    pub link_mode: ViewMode,
    /// The views, in profile-file order.
    pub profiles: Vec<ViewRecord>,
    /// The conda shims.
    #[serde(default)]
    pub shims: Vec<ShimRecord>,
}

/// Errors while reading or switching generations.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O step failed: `cannot <doing> <path>`.
    #[error("cannot {doing} {}", path.display())]
    Io {
        doing: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("generation {number} is unreadable: {detail}")]
    BadManifest { number: u64, detail: String },
    #[error("there is no generation {0}")]
    NoSuchGeneration(u64),
    #[error("{} exists and was not written by cuenv; refusing to overwrite or delete it", path.display())]
    ForeignShim { path: PathBuf },
    #[error(transparent)]
    Link(#[from] link::LinkError),
    #[error("generation {number} is incomplete: {} is missing (a deletion or a build of it was interrupted)", missing.display())]
    Incomplete { number: u64, missing: PathBuf },
    #[error(transparent)]
    Fs(#[from] crate::error::IoError),
}

impl crate::error::Diagnose for Error {
    fn hint(&self) -> Option<String> {
        match self {
            Error::ForeignShim { .. } => {
                Some("move that file away (cuenv only touches files that start with its marker line), then run the command again".into())
            }
            Error::NoSuchGeneration(_) => Some("run `cuenv generations` to see the generations that exist".into()),
            Error::BadManifest { .. } => Some("the generation folder was edited or damaged; apply the profile file again".into()),
            Error::Link(e) => e.hint(),
            Error::Io { path, source, .. } => Some(crate::error::io_hint(path, source)),
            Error::Incomplete { .. } => Some("`cuenv gc` deletes it; `cuenv generations` lists the others to switch to".into()),
            Error::Fs(e) => e.hint(),
        }
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        match self {
            Error::NoSuchGeneration(_) | Error::ForeignShim { .. } => crate::error::ExitCode::Invalid,
            Error::Incomplete { .. } => crate::error::ExitCode::Damaged,
            _ => crate::error::ExitCode::Failure,
        }
    }
}

/// A profile name not in the current generation.
#[derive(Debug, thiserror::Error)]
#[error("generation {generation} has no profile `{name}`")]
pub struct UnknownProfile {
    /// The name asked for.
    pub name: String,
    /// The generation that lacks it.
    pub generation: u64,
    /// The profiles that generation has.
    pub known: Vec<String>,
    /// Other generations that have it, newest first ([`UnknownProfile::in_home`]).
    pub elsewhere: Vec<u64>,
    /// The profile file generation `generation` was built from, when it declares the profile
    /// now (edited since; [`UnknownProfile::in_home`]).
    pub declared_in: Option<PathBuf>,
}

impl UnknownProfile {
    /// `name` is not among the profiles of generation `m`.
    pub fn new(name: &str, m: &Manifest) -> UnknownProfile {
        UnknownProfile { name: name.into(), generation: m.number, known: m.profile_names(), elsewhere: Vec::new(), declared_in: None }
    }

    /// Notes the other generations of `layout` that have the profile, and whether the profile
    /// file of generation `generation` declares it now, so the hint points to `rollback --to N`
    /// or `apply` instead of telling the user to add a profile the file already has.
    pub fn in_home(mut self, layout: &Layout) -> UnknownProfile {
        let mut with: Vec<u64> =
            list(layout).into_iter().filter(|n| *n != self.generation && read(layout, *n).is_ok_and(|m| m.profile(&self.name).is_ok())).collect();
        with.reverse();
        self.elsewhere = with;
        if self.elsewhere.is_empty()
            && let Ok(m) = read(layout, self.generation)
            && crate::profile::load(&m.source).is_ok_and(|f| f.profile(&self.name).is_some())
        {
            self.declared_in = Some(m.source);
        }
        self
    }
}

impl crate::error::Diagnose for UnknownProfile {
    fn hint(&self) -> Option<String> {
        if let Some(g) = self.elsewhere.first() {
            let name = &self.name;
            let others =
                if self.known.is_empty() { String::new() } else { format!(", or use one of generation {}'s: {}", self.generation, self.known.join(", ")) };
            return Some(format!("generation {g} has `{name}`: `cuenv rollback --to {g}` makes it current again{others}"));
        }
        if let Some(file) = &self.declared_in {
            return Some(format!(
                "{} declares `{}` but generation {} was built before it did: `cuenv apply {}` builds a generation with it",
                file.display(),
                self.name,
                self.generation,
                file.display()
            ));
        }
        if self.known.is_empty() {
            return Some("the current generation has no profiles; add one to your profile file and run `cuenv apply`".into());
        }
        let known: Vec<&str> = self.known.iter().map(String::as_str).collect();
        let guess = crate::profile::did_you_mean(&self.name, &known).map(|g| format!("did you mean `{g}`? ")).unwrap_or_default();
        Some(format!("{guess}profiles: {}; or add it to your profile file and run `cuenv apply`", known.join(", ")))
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        crate::error::ExitCode::Invalid
    }
}

impl ViewRecord {
    /// The real folders behind this view's links: the toolkit root, the store entry, the
    /// entry's library folder (`entry_dir` + `cudnn_lib`, `/`-separated in the manifest) and
    /// the toolkit's runtime folder. What the link-free mode names directly.
    pub fn real_folders(&self) -> crate::env::view::Folders {
        let mut cudnn_lib = self.entry_dir.clone();
        cudnn_lib.extend(self.cudnn_lib.split('/').filter(|c| !c.is_empty()));
        crate::env::view::Folders { cuda: self.toolkit_root.clone(), cudnn: self.entry_dir.clone(), cudnn_lib, cuda_lib: self.cuda_lib.clone() }
    }
}

/// The activation of profile `view` of a generation built in `mode`: the real folders in the
/// link-free mode ([`ViewRecord::real_folders`]), else through the stable path
/// `<home>/profiles/<name>` ([`crate::env::view::activation`]). Shims, `cuenv env`, exports and
/// the check all take theirs from here (../shared/decisions.md 4).
pub fn activation_of(layout: &Layout, mode: ViewMode, view: &ViewRecord, platform: crate::cudnn::platform::Platform) -> crate::shim::Activation {
    if mode.is_link_free() {
        crate::env::view::activation_at(&view.name, &view.real_folders(), platform)
    } else {
        crate::env::view::activation(layout, &view.name, platform)
    }
}

/// Profile `name`'s activation as the current generation makes it ([`activation_of`]);
/// through the stable path when there is no current generation or it lacks `name`.
pub fn activation(layout: &Layout, name: &str, platform: crate::cudnn::platform::Platform) -> crate::shim::Activation {
    match current_manifest(layout) {
        Some(m) if m.link_mode.is_link_free() => match m.profile(name) {
            Ok(v) => activation_of(layout, m.link_mode, v, platform),
            Err(_) => crate::env::view::activation(layout, name, platform),
        },
        _ => crate::env::view::activation(layout, name, platform),
    }
}

/// The exported environment of `profile` for `platform` ([`activation`]: through the stable
/// paths; in the link-free mode the real folders, as of the current generation).
pub fn exported(layout: &Layout, profile: &str, platform: crate::cudnn::platform::Platform) -> crate::env::export::Exported {
    let direct = current_manifest(layout).is_some_and(|m| m.link_mode.is_link_free() && m.profile(profile).is_ok());
    crate::env::export::from_activation(activation(layout, profile, platform), profile, direct)
}

/// The exported environment of every profile of generation `m` (whether or not it is
/// current), as [`activation_of`] gives it: what a switch rewrites followed exports and
/// kernelspecs with (the `follow` module).
pub fn follow_side(layout: &Layout, m: &Manifest, platform: crate::cudnn::platform::Platform) -> crate::env::follow::Side {
    crate::env::follow::Side {
        link_free: m.link_mode.is_link_free(),
        profiles: m
            .profiles
            .iter()
            .map(|v| {
                (v.name.clone(), crate::env::export::from_activation(activation_of(layout, m.link_mode, v, platform), &v.name, m.link_mode.is_link_free()))
            })
            .collect(),
    }
}

/// The hex SHA-256 of a shim's bytes, as [`ShimRecord::sha256`] records it.
pub fn shim_sha256(bytes: &[u8]) -> String {
    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes))
}

/// The SHA-256 of every shim the generations other than `m` recorded: a shim holding one of
/// them was written by cuenv for another generation, not changed by hand.
pub fn other_generations_shim_hashes(layout: &Layout, m: &Manifest) -> std::collections::HashSet<String> {
    list(layout).into_iter().filter(|n| *n != m.number).filter_map(|n| read(layout, n).ok()).flat_map(|g| g.shims.into_iter().map(|s| s.sha256)).collect()
}

impl Manifest {
    /// The names of its profiles, in manifest order.
    pub fn profile_names(&self) -> Vec<String> {
        self.profiles.iter().map(|p| p.name.clone()).collect()
    }

    /// The view of profile `name`, or [`UnknownProfile`].
    pub fn profile(&self, name: &str) -> Result<&ViewRecord, UnknownProfile> {
        self.profiles.iter().find(|p| p.name == name).ok_or_else(|| UnknownProfile::new(name, self))
    }
}

/// An [`Error::Io`] saying what cuenv was `doing` (a verb phrase: `write the shim`) at `path`.
fn io_at<'a>(doing: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> Error + 'a {
    move |source| Error::Io { doing, path: path.into(), source }
}

/// Reads generation `n`'s manifest.
pub fn read(layout: &Layout, n: u64) -> Result<Manifest, Error> {
    let path = layout.manifest(n);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Error::NoSuchGeneration(n)),
        Err(e) => return Err(Error::BadManifest { number: n, detail: e.to_string() }),
    };
    toml::from_str(&text).map_err(|e| Error::BadManifest { number: n, detail: e.to_string() })
}

/// Numbers of all published generations, ascending.
pub fn list(layout: &Layout) -> Vec<u64> {
    let mut out: Vec<u64> =
        fs::read_dir(layout.generations_dir()).into_iter().flatten().flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
    out.sort();
    out
}

/// The current generation: the one the pointer file `<home>/current` names (link-free mode),
/// else the one `<home>/profiles` points at (none before the first apply).
pub fn current(layout: &Layout) -> Option<u64> {
    if let Some(n) = pointed(layout) {
        return n;
    }
    let target = link::read(&layout.profiles_dir()).ok()?;
    // .../generations/<N>/views
    target.parent()?.file_name()?.to_str()?.parse().ok()
}

/// What the pointer file `<home>/current` says: `None` when there is none (the `profiles`
/// link decides), `Some(None)` when it holds no number.
fn pointed(layout: &Layout) -> Option<Option<u64>> {
    let text = fs::read_to_string(layout.current_pointer()).ok()?;
    Some(text.trim().parse().ok())
}

/// Makes generation `to` current (`None`: none), in the way its mode needs, in one atomic
/// step for every reader.
///
/// - Link-free `to`: the pointer file `<home>/current` is replaced by one rename
///   ([`fsutil::write_atomic`], the commit point); a `profiles` link left by a linked
///   generation is removed after it (the pointer wins while both exist).
/// - Linked `to`: the `profiles` link is retargeted; when a pointer file was there (the
///   generation before was link-free), deleting it is the commit point.
/// - `None`: the link, then the pointer file are removed.
fn set_current(layout: &Layout, to: Option<u64>) -> Result<(), Error> {
    let (profiles, pointer) = (layout.profiles_dir(), layout.current_pointer());
    let drop_pointer = || match fs::remove_file(&pointer) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_at("remove the pointer file", &pointer)(e)),
        _ => Ok(()),
    };
    match to {
        None => {
            link::remove(&profiles).map_err(io_at("remove the link", &profiles))?;
            drop_pointer()?;
        }
        Some(n) if read(layout, n)?.link_mode.is_link_free() => {
            // First, so that a cuenv that cannot read pointer files refuses the home.
            let format = layout.format_file();
            layout.raise_format(crate::home::layout::LINK_FREE_FORMAT).map_err(io_at("record the home's format in", &format))?;
            write_pointer(&pointer, &layout.current_staging(), &format!("{n}\n"))?;
            if link::is_link(&profiles) {
                link::remove(&profiles).map_err(io_at("remove the link", &profiles))?;
            }
        }
        Some(n) => {
            let views = layout.generation_dir(n).join("views");
            link::set(LinkKind::native(), &profiles, &views, &layout.profiles_staging())?;
            fsutil::sync_dir(layout.home());
            drop_pointer()?;
            // An active profile a link-free generation recorded as a pointer file becomes
            // the link `env --setup` shells follow.
            let active = layout.active_link();
            if !link::is_link(&active)
                && let Ok(text) = fs::read_to_string(&active)
            {
                let name = text.trim_end_matches(['\r', '\n']).to_string();
                fs::remove_file(&active).map_err(io_at("remove the pointer file", &active))?;
                if !name.is_empty() {
                    let target = crate::env::view::stable_home(layout).join("profiles").join(name);
                    link::create(LinkKind::native(), &target, &active)?;
                }
            }
        }
    }
    fsutil::sync_dir(layout.home());
    Ok(())
}

/// Replaces the pointer file `path` with one holding `text`: written whole (and synced) at
/// `staging`, in the same folder, then renamed over `path` (atomic for every reader, on FAT
/// and exFAT too; durable against a killed process, not against a power loss there), then
/// the folder is synced. A kill before the rename leaves `staging`, which
/// [`clean_leftovers`] removes. The debug-only hook `CUENV_TEST_ABORT_AT=pointer-staged`
/// kills the process between the two steps.
///
/// Errors: [`Error::Io`] naming the file that could not be written or renamed.
pub fn write_pointer(path: &Path, staging: &Path, text: &str) -> Result<(), Error> {
    use std::io::Write as _;
    let mut f = fs::File::create(staging).map_err(io_at("write the pointer file", staging))?;
    f.write_all(text.as_bytes()).and_then(|()| f.sync_all()).map_err(io_at("write the pointer file", staging))?;
    drop(f);
    fault_point("pointer-staged");
    fsutil::rename_with_retry(staging, path).map_err(io_at("replace the pointer file", path))?;
    if let Some(dir) = path.parent() {
        fsutil::sync_dir(dir);
    }
    Ok(())
}

/// The current generation's manifest, when there is a current generation and its manifest
/// reads (commands that only inform, like `doctor` or the directory hook, go on without it).
pub fn current_manifest(layout: &Layout) -> Option<Manifest> {
    current(layout).and_then(|n| read(layout, n).ok())
}

/// The generation before the current one, by history (else the highest number below it).
pub fn previous(layout: &Layout) -> Option<u64> {
    let cur = current(layout)?;
    let hist = history(layout);
    if let Some(h) = hist.iter().rev().find(|h| h.to == cur)
        && let Some(from) = h.from
    {
        return Some(from);
    }
    list(layout).into_iter().filter(|n| *n < cur).max()
}

/// One history line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoryRecord {
    /// RFC 3339 time of the switch.
    pub time: String,
    /// What the switch was for.
    pub op: SwitchOp,
    /// Generation current before (none for the first apply).
    pub from: Option<u64>,
    /// Generation current after.
    pub to: u64,
}

/// All history records, oldest first. Unreadable lines are skipped.
pub fn history(layout: &Layout) -> Vec<HistoryRecord> {
    fs::read_to_string(layout.history()).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// Appends one record as one `write` of the whole line (record and newline together), so a
/// kill leaves either the whole line or a prefix of it, never a record whose newline comes
/// with the next one. A last line left unterminated by such a kill is ended first, so the
/// next record starts a line of its own (the cut line alone is lost; [`history`] skips it).
fn append_history(layout: &Layout, rec: &HistoryRecord) -> Result<(), Error> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let path = layout.history();
    let mut f = fs::OpenOptions::new().create(true).read(true).append(true).open(&path).map_err(io_at("open the history", &path))?;
    let len = f.metadata().map_err(io_at("read the history", &path))?.len();
    let mut line = String::new();
    if len > 0 {
        let mut last = [0u8; 1];
        f.seek(SeekFrom::Start(len - 1)).and_then(|_| f.read_exact(&mut last)).map_err(io_at("read the history", &path))?;
        if last[0] != b'\n' {
            line.push('\n');
        }
    }
    line.push_str(&serde_json::to_string(rec).expect("serializable"));
    line.push('\n');
    f.write_all(line.as_bytes()).map_err(io_at("append to the history", &path))?;
    f.sync_all().map_err(io_at("append to the history", &path))
}

/// The switch in progress, written before the first effect and deleted after the last.
#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    op: SwitchOp,
    from: Option<u64>,
    to: u64,
    /// `checking`: an apply whose verdict is still pending ([`ApplyTx`]); [`recover`] undoes
    /// it wherever it stopped. Absent: a plain switch, finished or undone by the commit point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    phase: Option<Phase>,
    /// The lock file an apply rewrites, as it was before: put back when the apply is undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lock: Option<LockBackup>,
}

/// Where an apply's transaction stands, as its journal records it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Phase {
    /// Switched (or switching) to the new generation; its checks have not given a verdict.
    Checking,
}

/// A lock file as it was before an apply rewrote it (`before`: `None` when there was none).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LockBackup {
    /// The lock file (`lab.lock` next to the profile file).
    pub path: PathBuf,
    /// Its text before the apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
}

impl LockBackup {
    /// Puts the lock file back as it was (deletes it when there was none); nothing is
    /// written when it already is.
    fn restore(&self) -> Result<(), Error> {
        use crate::error::IoError;
        let now = fs::read_to_string(&self.path).ok();
        if now == self.before {
            return Ok(());
        }
        match &self.before {
            Some(text) => fsutil::write_atomic(&self.path, text.as_bytes()).map_err(|e| IoError::new("put back the lock file", &self.path, e))?,
            None => match fs::remove_file(&self.path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(IoError::new("remove the lock file written by the undone apply", &self.path, e).into());
                }
                _ => {}
            },
        }
        Ok(())
    }
}

fn write_journal(layout: &Layout, journal: &Journal) -> Result<(), Error> {
    let jpath = layout.journal();
    fsutil::write_atomic(&jpath, toml::to_string(journal).expect("serializable").as_bytes()).map_err(io_at("write the journal", &jpath))
}

pub use crate::sys::fsutil::{fault_error, fault_point};

/// The shims of generation `n` (none for `None`).
fn shims_of(layout: &Layout, n: Option<u64>) -> Result<Vec<ShimRecord>, Error> {
    match n {
        Some(n) => Ok(read(layout, n)?.shims),
        None => Ok(Vec::new()),
    }
}

/// Checks that every shim path of `to` is free or ours, so a switch never fails halfway on
/// a foreign file.
pub fn preflight_shims(shims: &[ShimRecord]) -> Result<(), Error> {
    for s in shims {
        if let Ok(text) = fs::read_to_string(&s.path) {
            if !crate::shim::is_ours(&text) {
                return Err(Error::ForeignShim { path: s.path.clone() });
            }
        } else if s.path.exists() {
            return Err(Error::ForeignShim { path: s.path.clone() });
        }
    }
    Ok(())
}

/// Makes the conda shims on disk equal to generation `to`'s set, given that `from`'s set
/// may be there: writes `to`'s shims (atomically, only where the content differs) and
/// deletes `from`'s shims that `to` lacks (only files that carry cuenv's marker).
///
/// All or nothing: every file it writes or deletes is first recorded with its old bytes
/// ([`ShimUndo`]); when a step fails (a full disk, a read-only `deactivate.d`), what it did
/// so far is undone before the error returns, so the env holds `from`'s shims again, never
/// a mix of two generations. (Should the undo itself fail, the journal left by the switch
/// makes the next writing command put `from`'s set back: [`recover`].)
fn sync_shims(layout: &Layout, from: Option<u64>, to: Option<u64>) -> Result<(), Error> {
    let want = shims_of(layout, to)?;
    let had = shims_of(layout, from)?;
    let mut tx = ShimUndo::default();
    for s in &want {
        let stored = layout.generation_dir(to.expect("shims imply a generation")).join("shims").join(&s.stored);
        let bytes = fs::read(&stored).map_err(io_at("read the stored shim", &stored))?;
        let old = match fs::read(&s.path) {
            Ok(old) if old == bytes => continue,
            Ok(old) if !crate::shim::is_ours(&String::from_utf8_lossy(&old)) => return Err(Error::ForeignShim { path: s.path.clone() }),
            Ok(old) => Some(old),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_at("read the shim", &s.path)(e)),
        };
        if let Some(parent) = s.path.parent() {
            tx.create_dir_all(parent)?;
        }
        tx.wrote(&s.path, old);
        fsutil::write_atomic(&s.path, &bytes).map_err(io_at("write the shim", &s.path))?;
    }
    // Never delete what the new set writes, however its path is spelled (an env named
    // through a symlink is the same env).
    for s in had.iter().filter(|h| !want.iter().any(|w| crate::sys::paths::same_place(&w.path, &h.path))) {
        match fs::read(&s.path) {
            Ok(old) if crate::shim::is_ours(&String::from_utf8_lossy(&old)) => {
                tx.wrote(&s.path, Some(old));
                fs::remove_file(&s.path).map_err(io_at("delete the shim", &s.path))?;
            }
            _ => {}
        }
    }
    // Kernelspecs and exports follow the shims in the link-free mode (`crate::env::follow`).
    if let Some(to_m) = to.map(|n| read(layout, n)).transpose()?
        && let Some(platform) = crate::cudnn::platform::Platform::host()
    {
        let from_m = from.and_then(|n| read(layout, n).ok());
        let before = from_m.as_ref().map(|m| follow_side(layout, m, platform));
        for r in crate::env::follow::plan(layout, before.as_ref(), &follow_side(layout, &to_m, platform), platform) {
            match fsutil::write_atomic(&r.path, &r.new) {
                Ok(()) => tx.wrote(&r.path, Some(r.old)),
                Err(e) if crate::env::follow::can_skip(&e) => {}
                Err(e) => return Err(io_at("rewrite", &r.path)(e)),
            }
        }
    }
    tx.commit();
    Ok(())
}

/// The undo log of one [`sync_shims`]: each shim path it touched with the bytes it held
/// before (`None`: there was no file), and the folders it created. Dropped without
/// [`ShimUndo::commit`] (an error, a panic), it puts every old file back and removes the
/// new ones and the folders it made, newest first: rustup's `dist::component::Transaction`
/// in small.
#[derive(Default)]
struct ShimUndo {
    files: Vec<(PathBuf, Option<Vec<u8>>)>,
    dirs: Vec<PathBuf>,
    committed: bool,
}

impl ShimUndo {
    /// Records that `path` is about to be written or deleted; `old` is what it holds now.
    fn wrote(&mut self, path: &Path, old: Option<Vec<u8>>) {
        self.files.push((path.to_path_buf(), old));
    }

    /// `fs::create_dir_all`, remembering the folders that did not exist.
    fn create_dir_all(&mut self, dir: &Path) -> Result<(), Error> {
        let missing: Vec<PathBuf> = dir.ancestors().take_while(|d| !d.as_os_str().is_empty() && !d.exists()).map(Path::to_path_buf).collect();
        fs::create_dir_all(dir).map_err(io_at("create the folder", dir))?;
        // Outermost first, so the undo (newest first) removes the deepest first.
        self.dirs.extend(missing.into_iter().rev());
        Ok(())
    }

    /// The sync is complete: keep what it did.
    fn commit(mut self) {
        self.committed = true;
    }
}

impl Drop for ShimUndo {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        for (path, old) in self.files.drain(..).rev() {
            match old {
                // Atomically if the disk allows; else in place (replacing the file frees
                // its space first).
                Some(bytes) => {
                    if fsutil::write_atomic(&path, &bytes).is_err() {
                        let _ = fs::write(&path, &bytes);
                    }
                }
                None => {
                    let _ = fs::remove_file(&path);
                }
            }
        }
        for dir in self.dirs.drain(..).rev() {
            // Only while empty: never anything another program put there meanwhile.
            let _ = fs::remove_dir(&dir);
        }
    }
}

/// Generation `n`'s manifest, after checking that the generation is whole: every view the
/// manifest names has all of its links (or, in copy mode, its copied entry). A generation
/// whose deletion or build was cut short is never switched to.
///
/// Errors: [`Error::NoSuchGeneration`], [`Error::BadManifest`], [`Error::Incomplete`].
pub fn read_complete(layout: &Layout, n: u64) -> Result<Manifest, Error> {
    let m = read(layout, n)?;
    if m.link_mode.is_link_free() {
        // No views: the shims it writes are all it holds besides the manifest.
        let at = layout.generation_dir(n).join("shims");
        return if at.is_dir() { Ok(m) } else { Err(Error::Incomplete { number: n, missing: at }) };
    }
    let views = layout.generation_dir(n).join("views");
    for p in &m.profiles {
        for name in crate::env::view::VIEW_LINKS {
            let at = views.join(&p.name).join(name);
            let whole = if p.copied && name == "cudnn" { at.is_dir() } else { link::read(&at).is_ok() };
            if !whole {
                return Err(Error::Incomplete { number: n, missing: at });
            }
        }
    }
    Ok(m)
}

/// Deletes a generation folder: links are removed as links (never followed), copies and
/// files normally.
pub fn remove_tree(dir: &Path) -> Result<(), Error> {
    use crate::error::IoError;
    fsutil::make_tree_writable(dir).ok();
    if let Ok(rd) = fs::read_dir(dir.join("views")) {
        for v in rd.flatten() {
            for name in crate::env::view::VIEW_LINKS {
                let p = v.path().join(name);
                if link::is_link(&p) {
                    link::remove(&p).map_err(|e| IoError::new("remove the link", &p, e))?;
                }
            }
        }
    }
    fault_point("gc-links");
    fs::remove_dir_all(dir).map_err(|e| IoError::new("delete", dir, e).into())
}

/// Deletes generation `n` as one step for every reader: one rename moves it to
/// `generations/.trash-<n>`, then it is deleted there. A kill leaves either the whole
/// generation or a trash folder, which the next writer removes ([`clean_leftovers`]).
/// The current generation is never deleted (the caller's keep rules ensure it).
pub fn delete(layout: &Layout, n: u64) -> Result<(), Error> {
    use crate::error::IoError;
    let (dir, trash) = (layout.generation_dir(n), layout.generation_trash(n));
    if trash.exists() {
        remove_tree(&trash)?;
    }
    fsutil::rename_with_retry(&dir, &trash).map_err(|e| IoError::new("move aside", &dir, e))?;
    fsutil::sync_dir(&layout.generations_dir());
    fault_point("gc-trashed");
    remove_tree(&trash)
}

/// Removes what an interrupted build (`generations/.tmp-<n>`), deletion
/// (`generations/.trash-<n>`), atomic write (`.cuenv-tmp*` in the home, and, once a minute
/// old, in the conda env shim folders and lab folders of every generation) or link
/// replacement (`.profiles.new`, `.active.new`) left behind. Needs the writer lock (no live
/// cuenv owns them then). Returns how many it removed.
pub fn clean_leftovers(layout: &Layout) -> Result<usize, Error> {
    use crate::home::layout::{GENERATION_STAGING_PREFIX, GENERATION_TRASH_PREFIX};
    use std::time::Duration;
    let mut removed = 0;
    for e in fs::read_dir(layout.generations_dir()).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(GENERATION_STAGING_PREFIX) || name.starts_with(GENERATION_TRASH_PREFIX) {
            remove_tree(&e.path())?;
            removed += 1;
        }
    }
    // The home's own: half-written files and the staging links of a switch or a `use`
    // (a switch in progress was finished or undone by `recover` before this runs).
    let home = layout.home();
    removed += fsutil::remove_atomic_leftovers(home, Duration::ZERO).map_err(io_at("clean up", home))?;
    for staging in [layout.profiles_staging(), layout.active_staging()] {
        if link::is_link(&staging) {
            link::remove(&staging).map_err(io_at("remove the link", &staging))?;
            removed += 1;
        }
    }
    // The pointer files of the link-free mode, staged by a killed switch or `use`.
    for staging in [layout.current_staging(), layout.active_staging()] {
        if !link::is_link(&staging) && staging.is_file() {
            fs::remove_file(&staging).map_err(io_at("remove", &staging))?;
            removed += 1;
        }
    }
    // A `profiles` link a kill left behind a switch to a link-free generation (the pointer
    // file wins; the link only points at the generation before).
    let profiles = layout.profiles_dir();
    if pointed(layout).is_some() && link::is_link(&profiles) {
        link::remove(&profiles).map_err(io_at("remove the link", &profiles))?;
        removed += 1;
    }
    // The folder of apply's link test, left by a kill during it (under the writer lock, as here).
    let probe = layout.link_probe();
    if fs::symlink_metadata(&probe).is_ok() {
        remove_tree(&probe)?;
        removed += 1;
    }
    // Folders other homes may write too (the conda envs' shim folders, the lab folder):
    // only files no live cuenv is still writing.
    // Every generation's envs and lab folder: a kill during a rollback can leave a file in an
    // env the current generation no longer names.
    let mut dirs: Vec<PathBuf> = Vec::new();
    for m in list(layout).into_iter().filter_map(|n| read(layout, n).ok()) {
        dirs.extend(m.shims.iter().filter_map(|s| s.path.parent().map(Path::to_path_buf)));
        dirs.extend(m.source.parent().map(Path::to_path_buf));
    }
    dirs.extend(crate::env::follow::folders(layout));
    dirs.sort();
    dirs.dedup();
    for d in dirs {
        removed += fsutil::remove_atomic_leftovers(&d, Duration::from_secs(60)).map_err(io_at("clean up", &d))?;
    }
    Ok(removed)
}

/// Switches from the current generation to `to` (see the module docs for the steps and
/// the commit point). `op` is recorded in the history. `to` must be whole
/// ([`read_complete`]); nothing is touched when it is not.
pub fn switch(layout: &Layout, to: u64, op: SwitchOp) -> Result<(), Error> {
    read_complete(layout, to)?;
    let from = current(layout);
    write_journal(layout, &Journal { op, from, to, phase: None, lock: None })?;
    fault_point("journal");
    switch_steps(layout, from, to, op)?;
    remove_journal(layout)
}

/// The effects of a switch from `from` to `to`, under a journal already written: the shims,
/// the `profiles` link (the commit point), the history.
fn switch_steps(layout: &Layout, from: Option<u64>, to: u64, op: SwitchOp) -> Result<(), Error> {
    sync_shims(layout, from, Some(to))?;
    fault_point("shims");
    set_current(layout, Some(to))?;
    fault_point("commit");
    append_history(layout, &HistoryRecord { time: now(), op, from, to })?;
    fault_point("history");
    Ok(())
}

fn remove_journal(layout: &Layout) -> Result<(), Error> {
    let jpath = layout.journal();
    fs::remove_file(&jpath).map_err(io_at("remove the journal", &jpath))?;
    fsutil::sync_dir(layout.home());
    Ok(())
}

/// An apply's transaction: from [`begin_apply`] to [`ApplyTx::commit`] or
/// [`ApplyTx::revert`] its journal is on disk, so a kill anywhere in between is undone by
/// the next writer's [`recover`] when the apply checks its generation (the verdict was not
/// reached), and finished or undone at the commit point like any switch with `--no-check`.
/// The caller writes the lock file inside the transaction: undoing it puts the old one back.
#[derive(Debug)]
#[must_use = "an apply transaction ends with commit or revert"]
pub struct ApplyTx {
    from: Option<u64>,
    to: u64,
    lock: Option<LockBackup>,
}

/// Starts applying generation `to` (which must be whole): writes the journal (`op = apply`,
/// `from`, `to`, the phase `checking` when `checked`, and the `lock` file's old text).
/// Nothing else is touched yet.
pub fn begin_apply(layout: &Layout, to: u64, checked: bool, lock: Option<LockBackup>) -> Result<ApplyTx, Error> {
    read_complete(layout, to)?;
    let from = current(layout);
    let phase = checked.then_some(Phase::Checking);
    write_journal(layout, &Journal { op: SwitchOp::Apply, from, to, phase, lock: lock.clone() })?;
    fault_point("journal");
    Ok(ApplyTx { from, to, lock })
}

impl ApplyTx {
    /// The generation current before the apply (`None`: none was).
    pub fn from(&self) -> Option<u64> {
        self.from
    }

    /// Makes the new generation current (shims, the `profiles` link, the history); the
    /// journal stays until [`ApplyTx::commit`] or [`ApplyTx::revert`].
    pub fn switch(&self, layout: &Layout) -> Result<(), Error> {
        switch_steps(layout, self.from, self.to, SwitchOp::Apply)
    }

    /// The verdict let the new generation stay: ends the transaction (deletes the journal).
    pub fn commit(self, layout: &Layout) -> Result<(), Error> {
        remove_journal(layout)
    }

    /// Undoes the apply wherever it stands: the previous generation (or none) is current
    /// again with its shims, the history says `revert` if it had said `apply`, and the lock
    /// file is as it was. Then deletes the journal. A kill in here is finished by [`recover`].
    pub fn revert(self, layout: &Layout) -> Result<(), Error> {
        undo_apply(layout, self.from, self.to, self.lock.as_ref())?;
        remove_journal(layout)
    }
}

/// Undoes an apply from `from` to `to` (idempotent: each step checks what is already done).
fn undo_apply(layout: &Layout, from: Option<u64>, to: u64, lock: Option<&LockBackup>) -> Result<(), Error> {
    sync_shims(layout, Some(to), from)?;
    fault_point("revert-shims");
    if current(layout) != from {
        set_current(layout, from)?;
    }
    fault_point("revert-commit");
    if history(layout).last().is_some_and(|h| h.op == SwitchOp::Apply && h.from == from && h.to == to) {
        append_history(layout, &HistoryRecord { time: now(), op: SwitchOp::Revert, from: Some(to), to: from.unwrap_or(0) })?;
    }
    fault_point("revert-history");
    if let Some(lock) = lock {
        lock.restore()?;
    }
    Ok(())
}

/// Finishes or undoes a switch interrupted by a crash. Returns a sentence saying what it
/// did, or `None` when there was nothing to do. Needs the writer lock.
pub fn recover(layout: &Layout) -> Result<Option<String>, Error> {
    let jpath = layout.journal();
    let Ok(text) = fs::read_to_string(&jpath) else { return Ok(None) };
    let Ok(j) = toml::from_str::<Journal>(&text) else {
        fs::remove_file(&jpath).map_err(io_at("remove the journal", &jpath))?;
        return Ok(Some("removed an unreadable journal".into()));
    };
    let cur = current(layout);
    let stays = |from: Option<u64>| from.map(|n| n.to_string()).unwrap_or_else(|| "none".into());
    let said = if j.op == SwitchOp::Apply && j.phase == Some(Phase::Checking) {
        // An apply that did not reach its verdict failed: undo it wherever it stopped.
        undo_apply(layout, j.from, j.to, j.lock.as_ref())?;
        format!("undid an interrupted apply to generation {} (generation {} stays current)", j.to, stays(j.from))
    } else if cur == Some(j.to) {
        sync_shims(layout, j.from, Some(j.to))?;
        if !history(layout).last().is_some_and(|h| h.to == j.to && h.from == j.from) {
            append_history(layout, &HistoryRecord { time: now(), op: j.op, from: j.from, to: j.to })?;
        }
        format!("finished an interrupted {} to generation {}", j.op, j.to)
    } else {
        sync_shims(layout, Some(j.to), j.from)?;
        if let Some(lock) = &j.lock {
            lock.restore()?;
        }
        format!("undid an interrupted {} to generation {} (generation {} stays current)", j.op, j.to, stays(j.from))
    };
    fs::remove_file(&jpath).map_err(io_at("remove the journal", &jpath))?;
    Ok(Some(said))
}

/// The current time, RFC 3339, seconds.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
/// Which generations `gc` keeps and which it deletes: the `keep` newest of `all` (ascending
/// numbers), plus the current and the previous one whatever their age. Pure; like nix's
/// `deleteGenerationsGreaterThan`, but the live ones are never candidates.
pub fn gc_keep(all: &[u64], current: Option<u64>, previous: Option<u64>, keep: usize) -> (std::collections::BTreeSet<u64>, Vec<u64>) {
    let mut kept: std::collections::BTreeSet<u64> = all.iter().rev().take(keep).copied().collect();
    kept.extend(current);
    kept.extend(previous);
    let doomed = all.iter().copied().filter(|n| !kept.contains(n)).collect();
    (kept, doomed)
}

/// Where `rollback` goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollbackTarget {
    /// The generation to make current.
    pub target: u64,
    /// Newer generations passed over because their check failed (newest first).
    pub skipped: Vec<u64>,
    /// `--to N` named a generation whose check failed (it is still the target).
    pub target_failed: bool,
}

/// No generation older than the current one passed its check, or none is older at all
/// (`older` is 0): the message says which.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{}; there is nothing to roll back to",
    if *older == 0 { format!("no generation is older than {current}") } else { format!("no generation older than {current} passed its check") }
)]
pub struct NothingToRollBackTo {
    /// The current generation.
    pub current: u64,
    /// How many generations are older than `current` (every one failed its check).
    pub older: usize,
}

impl crate::error::Diagnose for NothingToRollBackTo {
    fn hint(&self) -> Option<String> {
        Some("`cuenv generations` lists them; `cuenv rollback --to N` goes to any of them".into())
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        crate::error::ExitCode::Invalid
    }
}

/// The generation `rollback` makes current: `to` if given (even one whose check failed, which
/// is flagged), else, like `nix-env --rollback`, the newest of `all` older than `current`, so
/// repeated rollbacks keep walking back, skipping those whose check `failed` (`apply` built
/// them, then kept the previous generation). `failed` is asked at most once per generation,
/// newest first. Pure.
pub fn rollback_target(all: &[u64], current: u64, to: Option<u64>, failed: &mut dyn FnMut(u64) -> bool) -> Result<RollbackTarget, NothingToRollBackTo> {
    if let Some(n) = to {
        return Ok(RollbackTarget { target: n, skipped: Vec::new(), target_failed: failed(n) });
    }
    let mut skipped = Vec::new();
    for &n in all.iter().filter(|n| **n < current).rev() {
        if !failed(n) {
            return Ok(RollbackTarget { target: n, skipped, target_failed: false });
        }
        skipped.push(n);
    }
    Err(NothingToRollBackTo { current, older: skipped.len() })
}

#[cfg(test)]
mod policy_tests {
    use super::*;

    #[test]
    fn gc_keeps_the_newest_and_the_live_generations() {
        let (kept, doomed) = gc_keep(&[1, 2, 3, 4, 5, 6], Some(2), Some(1), 3);
        assert_eq!(kept.into_iter().collect::<Vec<_>>(), [1, 2, 4, 5, 6]);
        assert_eq!(doomed, [3]);
        let (kept, doomed) = gc_keep(&[1, 2, 3], Some(3), Some(2), 0);
        assert_eq!(kept.into_iter().collect::<Vec<_>>(), [2, 3]);
        assert_eq!(doomed, [1]);
        let (kept, doomed) = gc_keep(&[], None, None, 3);
        assert!(kept.is_empty() && doomed.is_empty());
    }

    #[test]
    fn rollback_walks_back_past_failed_checks() {
        let mut asked = Vec::new();
        let t = rollback_target(&[1, 2, 3, 4, 5], 5, None, &mut |n| {
            asked.push(n);
            n == 4 || n == 3
        })
        .unwrap();
        assert_eq!(t, RollbackTarget { target: 2, skipped: vec![4, 3], target_failed: false });
        assert_eq!(asked, [4, 3, 2], "newest first, each once, none after the target");
        // From generation 3 of 5 (after a rollback): the walk continues below 3.
        assert_eq!(rollback_target(&[1, 2, 3, 4, 5], 3, None, &mut |_| false).unwrap().target, 2);
        assert_eq!(rollback_target(&[1, 2], 1, None, &mut |_| false), Err(NothingToRollBackTo { current: 1, older: 0 }));
        assert_eq!(rollback_target(&[1, 2, 3], 3, None, &mut |_| true), Err(NothingToRollBackTo { current: 3, older: 2 }));
    }

    #[test]
    fn rollback_to_a_named_generation_goes_there_but_flags_a_failed_check() {
        let t = rollback_target(&[1, 2, 3], 1, Some(3), &mut |n| n == 3).unwrap();
        assert_eq!(t, RollbackTarget { target: 3, skipped: vec![], target_failed: true });
    }

    #[test]
    fn nothing_to_roll_back_to_says_what_to_do() {
        use crate::error::Diagnose as _;
        let e = NothingToRollBackTo { current: 4, older: 3 };
        assert_eq!(e.to_string(), "no generation older than 4 passed its check; there is nothing to roll back to");
        // No older generation at all is said as such, not as a failed check.
        let none = NothingToRollBackTo { current: 1, older: 0 };
        assert_eq!(none.to_string(), "no generation is older than 1; there is nothing to roll back to");
        assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid);
        assert!(e.hint().unwrap().contains("cuenv rollback --to N"));
    }
}
