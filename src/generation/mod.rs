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
//! points at the new generation, and otherwise puts the old generation's shims back. A
//! switch that fails before its commit point (the retarget itself) does that in process: the
//! shim sync and the retarget are one undo, and with nothing switched the journal goes too.
//!
//! **Apply transaction.** `apply` with checks commits later: its journal ([`ApplyTx`],
//! phase `checking`, with the lock file's old text) stays from before the switch until the
//! checks gave their verdict and `lab.lock` is written. Until then, any failure, signal or
//! kill ends with the previous generation current (none for a first generation), its shims,
//! the history saying `revert` and the old lock file: [`ApplyTx::revert`] in process,
//! [`recover`] after a kill.
//!
//! The whole lifecycle lives here, one file per job: this file holds the records
//! (manifest, views, shims), reading them and the current pointer; `switch` (journal, switch,
//! [`ApplyTx`], [`recover`]), `shims` (bringing conda shims from one generation's set to
//! another's), `history` (`history.jsonl`), `cleanup` (deleting trees and leftovers), `gc`
//! and `rollback` (which generations are kept, which one to go back to, and the commands),
//! `active` (`cuenv use`), `profile_check` (running and recording each profile's check),
//! `status` (the health of links and shims) and `outside` (what other modules get from a
//! generation: activations, exports).

pub mod active;
mod cleanup;
pub mod gc;
mod history;
mod outside;
pub mod profile_check;
pub mod rollback;
mod shims;
pub mod status;
mod switch;

pub use cleanup::{clean_leftovers, delete, remove_tree};
pub use gc::gc_keep;
pub use history::{HistoryRecord, history};
pub use outside::{activation, activation_of, build_lib, exported, follow_side};
pub use rollback::{NothingToRollBackTo, RollbackTarget, rollback_target};
pub use shims::{other_generations_shim_hashes, preflight_shims, shim_sha256};
use switch::pointed;
pub use switch::{ApplyTx, LockBackup, begin_apply, recover, switch, write_pointer};

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::home::layout::Layout;
use crate::link::{self, LinkKind};
use crate::sys::fsutil;
use crate::sys::sha256::Sha256;

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
    pub cudnn_version: crate::cudnn::version::Version,
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
    /// The Python env (`python-env`) the profile is bound to without shims, if any: a venv,
    /// uv or pixi env prefix ([`crate::pyenv::resolve_binding`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_env: Option<PathBuf>,
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
    pub sha256: Sha256,
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
    pub source_sha256: Sha256,
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

crate::error::diagnose! {
    impl Diagnose for Error {
        transparent Link, Fs;
        fn hint(&self) -> Option<String> {
            match self {
                Error::ForeignShim { .. } => {
                    Some("move that file away (cuenv only touches files that start with its marker line), then run the command again".into())
                }
                Error::NoSuchGeneration(_) => Some("run `cuenv generations` to see the generations that exist".into()),
                Error::BadManifest { .. } => Some("the generation folder was edited or damaged; apply the profile file again".into()),
                Error::Io { path, source, .. } => Some(crate::error::io_hint(path, source)),
                Error::Incomplete { .. } => Some("`cuenv gc` deletes it; `cuenv generations` lists the others to switch to".into()),
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
    /// The Python env the profile is bound to and the key that binds it: `conda-env` first,
    /// else `python-env`; `None` for a profile bound to none.
    pub fn bound_env(&self) -> Option<(&Path, &'static str)> {
        self.conda_env.as_deref().map(|p| (p, "conda-env")).or(self.python_env.as_deref().map(|p| (p, "python-env")))
    }

    /// The real folders behind this view's links: the toolkit root, the store entry, the
    /// entry's library folder (`entry_dir` + `cudnn_lib`, `/`-separated in the manifest) and
    /// the toolkit's runtime folder. What the link-free mode names directly.
    pub fn real_folders(&self) -> crate::env::view::Folders {
        let mut cudnn_lib = self.entry_dir.clone();
        cudnn_lib.extend(self.cudnn_lib.split('/').filter(|c| !c.is_empty()));
        crate::env::view::Folders { cuda: self.toolkit_root.clone(), cudnn: self.entry_dir.clone(), cudnn_lib, cuda_lib: self.cuda_lib.clone() }
    }
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
    // Only real folders: a link or a file named like a generation is none (a planted one is
    // removed by `clean_leftovers`).
    let mut out: Vec<u64> = fs::read_dir(layout.generations_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
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

/// The current generation's manifest, when there is a current generation and its manifest
/// reads (commands that only inform, like `doctor` or the directory hook, go on without it).
pub fn current_manifest(layout: &Layout) -> Option<Manifest> {
    current_with_manifest(layout).map(|(_, m)| m)
}

/// The current generation's number and manifest, read once (`None`: no generation is
/// current, or its manifest cannot be read).
pub fn current_with_manifest(layout: &Layout) -> Option<(u64, Manifest)> {
    let n = current(layout)?;
    read(layout, n).ok().map(|m| (n, m))
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

pub use crate::sys::fsutil::{fault_error, fault_point};

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

/// The current time, RFC 3339, seconds.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}
