//! `apply` and `plan`: from a profile file to a new generation.
//!
//! Pure part: [`desire`] resolves the file against the store, the toolkit roots and the
//! lock into the desired views and shims, and [`plan`] compares that with the current
//! generation (`+` / `-` / `~` lines). Effects: [`build`] writes a new generation folder
//! (staged as `generations/.tmp-<N>`, published with one rename), then
//! [`crate::generation::switch`] makes it current.
//!
//! cuenv never writes inside a toolkit root or a store entry: views only link to them.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::binfmt::Platform;
use crate::change::{Change, Kind, Subject};
use crate::error::{Diagnose, ExitCode};
use crate::fsutil;
use crate::generation::{self, Manifest, ShimRecord, ViewMode, ViewRecord};
use crate::layout::Layout;
use crate::link::{self, LinkKind};
use crate::lockfile;
use crate::profile::{LinkMode, ProfileFile};
use crate::resolve::{Candidates, CudnnCandidate, Resolved, ToolkitCandidate};
use crate::shim::{self, Shell};
use crate::store::Store;
use crate::toolkit;

mod run;

pub use crate::view::{VIEW_LINKS, activation, stable_home};
pub use run::{Deleted, GcPlan, NoGeneration, Options, Outcome, Reporter, Rollback, RollbackError, check_failed, gc, gc_plan, headline_changes, rollback, run};

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
    Lock(#[from] crate::writer_lock::LockError),
    /// An I/O error while building or deleting a generation.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// An I/O error, said with what cuenv was doing.
    #[error("{message}")]
    At {
        /// What failed (e.g. `cannot create <path>`).
        message: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Walking a store entry to copy it failed.
    #[error(transparent)]
    Walk(#[from] walkdir::Error),
    /// A manifest could not be written as TOML.
    #[error(transparent)]
    Manifest(#[from] toml::ser::Error),
    /// cuDNN has no build for this machine.
    #[error("cuDNN is not built for this platform")]
    UnsupportedPlatform,
    /// What resolution chose is gone (another process changed the store meanwhile).
    #[error("{0}")]
    Vanished(&'static str),
}

impl Diagnose for Error {
    fn hint(&self) -> Option<String> {
        match self {
            Error::Profile(e) => e.hint(),
            Error::Lockfile(e) => e.hint(),
            Error::Drift(e) => e.hint(),
            Error::Sources(e) => e.hint(),
            Error::Generation(e) => e.hint(),
            Error::Link(e) => e.hint(),
            Error::Store(e) => e.hint(),
            Error::Lock(e) => e.hint(),
            Error::Io(_) | Error::At { .. } | Error::Walk(_) | Error::Manifest(_) | Error::UnsupportedPlatform | Error::Vanished(_) => None,
        }
    }
    fn exit_code(&self) -> ExitCode {
        match self {
            Error::Profile(e) => e.exit_code(),
            Error::Lockfile(e) => e.exit_code(),
            Error::Drift(e) => e.exit_code(),
            Error::Sources(e) => e.exit_code(),
            Error::Generation(e) => e.exit_code(),
            Error::Link(e) => e.exit_code(),
            Error::Store(e) => e.exit_code(),
            Error::Lock(e) => e.exit_code(),
            Error::Io(_) | Error::At { .. } | Error::Walk(_) | Error::Manifest(_) | Error::UnsupportedPlatform | Error::Vanished(_) => ExitCode::Failure,
        }
    }
}

/// What a profile file asks for, resolved.
#[derive(Debug)]
pub struct Desired {
    /// The parsed profile file.
    pub file: ProfileFile,
    /// The resolution (for `lab.lock`).
    pub resolved: Resolved,
    /// How it differs from `lab.lock` (`+`/`-`/`~` lines; empty when the lock already says it).
    pub lock_changes: Vec<String>,
    /// The views to build.
    pub views: Vec<ViewRecord>,
    /// The shims to write, with their bytes (as [`shim::encode`] makes them).
    pub shims: Vec<(ShimRecord, Vec<u8>)>,
    /// `symlink`, `junction` or `copy`.
    pub link_mode: ViewMode,
}

/// The link kind for a profile file's `link-mode` on this platform (`None`: copy).
pub fn link_kind(mode: LinkMode) -> Option<LinkKind> {
    match mode {
        LinkMode::Auto => Some(LinkKind::native()),
        LinkMode::Junction => Some(LinkKind::Junction),
        LinkMode::Symlink => Some(LinkKind::Symlink),
        LinkMode::Copy => None,
    }
}

fn mode_name(mode: LinkMode) -> ViewMode {
    match link_kind(mode) {
        Some(LinkKind::Junction) => ViewMode::Junction,
        Some(LinkKind::Symlink) => ViewMode::Symlink,
        None => ViewMode::Copy,
    }
}

/// A profile file resolved for one platform, preferring the choices of that platform's
/// section of `lab.lock`.
#[derive(Debug)]
pub struct Locking {
    /// Every profile of the file, resolved.
    pub resolved: Resolved,
    /// How that differs from the lock (`+`/`-`/`~` lines; empty when the lock already says it).
    pub changes: Vec<String>,
    /// The toolkit candidates, with what `cuenv toolkits` knows of each.
    toolkits: Vec<(ToolkitCandidate, toolkit::Toolkit)>,
    /// The store entries.
    entries: Vec<(PathBuf, crate::store::entry::EntryMeta)>,
}

/// Resolves `file` for `platform` against the store, the toolkit roots and `platform`'s
/// section of `lab.lock`. `locked`: fail with [`LockedDrift`] instead of changing the lock.
///
/// Errors: profile errors (file, line, column; exit code 2), lock file errors, [`LockedDrift`].
pub fn resolve_locked(layout: &Layout, file: &ProfileFile, platform: Platform, locked: bool) -> Result<Locking, Error> {
    let entries = Store::new(layout).entries();
    let cudnn: Vec<CudnnCandidate> = entries
        .iter()
        .map(|(_, m)| CudnnCandidate { id: m.id.clone(), name: m.name.clone(), version: m.version.clone(), cuda_major: m.cuda_major, platform: m.platform })
        .collect();
    let toolkits = crate::candidates::toolkit_candidates(layout, file, platform)?;
    let tk: Vec<ToolkitCandidate> = toolkits.iter().map(|t| t.0.clone()).collect();
    let candidates = Candidates { toolkits: &tk, store: &cudnn, platform };
    let lock_path = lockfile::lock_path(&file.path);
    let mut lock = lockfile::read(&lock_path, platform)?;
    // Roots inside the cuenv home are written home-relative, so a lock travels between machines.
    if let Some(l) = lock.as_mut() {
        for p in &mut l.profiles {
            if let Some(root) = from_home_token(&p.toolkit_root, &stable_home(layout)) {
                p.toolkit_root = root;
            }
        }
    }
    let honoured = crate::resolve::honour(lock.as_ref(), file, &candidates)?;
    if locked {
        if let Some(drift) = missing_section(lock.as_ref(), file, platform) {
            return Err(drift.into());
        }
        if !honoured.changes.is_empty() {
            let mut msg = format!("{} does not match {} for {platform}:", lock_path.display(), file.path.display());
            for c in &honoured.changes {
                msg.push_str(&format!("\n  {c}"));
            }
            return Err(LockedDrift::new(msg, &file.path, platform, false).into());
        }
    }
    Ok(Locking { resolved: honoured.resolved, changes: honoured.changes, toolkits, entries })
}

/// The folder holding a toolkit's CUDA runtime library.
fn runtime_dir(t: &toolkit::Toolkit, platform: Platform) -> PathBuf {
    match t.runtime.as_ref().and_then(|r| r.parent()) {
        Some(p) => p.to_path_buf(),
        None => t.root.join(if platform.is_windows() { "bin" } else { "lib64" }),
    }
}

/// Resolves `file` into the desired generation content for this host. `locked`: fail
/// instead of changing `lab.lock`. Errors carry the file, line and column (profile errors)
/// and exit code 2.
pub fn desire(layout: &Layout, file: ProfileFile, locked: bool) -> Result<Desired, Error> {
    let platform = Platform::host().ok_or(Error::UnsupportedPlatform)?;
    let Locking { resolved, changes, toolkits, entries } = resolve_locked(layout, &file, platform, locked)?;
    let base_dir = file.path.parent().map(Path::to_path_buf).unwrap_or_default();
    let home_dir = dirs::home_dir();
    let mut views = Vec::new();
    let mut shims = Vec::new();
    for r in &resolved.profiles {
        let (entry_dir, meta) = entries.iter().find(|(_, m)| m.id == r.cudnn_id).cloned().ok_or(Error::Vanished("resolved entry vanished from the store"))?;
        let t = &toolkits.iter().find(|(c, _)| c.root == r.toolkit_root).ok_or(Error::Vanished("resolved toolkit vanished"))?.1;
        let cudnn_lib = if platform.is_windows() { meta.layout.bin.clone() } else { meta.layout.lib.clone() }.unwrap_or_else(|| "lib".into());
        let profile = file.profile(&r.name).expect("resolved from this file");
        let conda_env = match &profile.conda_env {
            None => None,
            Some(env) => Some(crate::conda::resolve(&env.value, &base_dir, &|k| std::env::var_os(k), home_dir.as_deref()).map_err(|nf| {
                let hint = if nf.known.is_empty() {
                    format!("create it with `conda create -n {}`, or give the env's folder as a path", env.value)
                } else {
                    format!("envs found: {}", nf.known.join(", "))
                };
                file.error_at(
                    env.span.clone(),
                    format!(
                        "conda env `{}` does not exist (looked in {})",
                        env.value,
                        nf.searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
                    ),
                    Some(hint),
                )
            })?),
        };
        let view = ViewRecord {
            name: r.name.clone(),
            toolkit_root: r.toolkit_root.clone(),
            toolkit_version: r.toolkit_version.to_string(),
            cudnn_id: r.cudnn_id.clone(),
            cudnn_name: r.cudnn_name.clone(),
            cudnn_version: r.cudnn_version.to_string(),
            cuda_major: meta.cuda_major,
            entry_dir: entry_dir.clone(),
            cudnn_lib,
            cuda_lib: runtime_dir(t, platform),
            conda_env: conda_env.clone(),
            check: r.check,
            copied: file.settings.link_mode == LinkMode::Copy,
        };
        if let Some(env) = &conda_env {
            let act = activation(layout, &view.name, platform);
            // Windows: `C:\...` paths cannot go into the `:`-separated lists of the POSIX and
            // fish shims (every Windows path holds a `:`), so only cmd and PowerShell shims are
            // written there; before, any profile with a conda env failed to apply on Windows.
            let shells: &[Shell] = if platform.is_windows() { &[Shell::Cmd, Shell::PowerShell] } else { &Shell::ALL };
            for &shell in shells {
                shim::validate(shell, &act).map_err(|e| {
                    file.error_at(
                        profile.name_span.clone(),
                        format!("cannot write the {} shims of profile `{}`: {e}", shell.extension(), view.name),
                        Some("move the cuenv home (--home or CUENV_HOME) to a path without that character".into()),
                    )
                })?;
                for (dir, text) in [("activate.d", shim::render_activate(shell, &act)), ("deactivate.d", shim::render_deactivate(shell, &act))] {
                    let path = env.join("etc").join("conda").join(dir).join(shim::file_name(&view.name, shell));
                    let bytes = shim::encode(shell, &text);
                    let sha = hex::encode(Sha256::digest(&bytes));
                    shims.push((ShimRecord { path, profile: view.name.clone(), stored: String::new(), sha256: sha }, bytes));
                }
            }
        }
        views.push(view);
    }
    for (i, (rec, _)) in shims.iter_mut().enumerate() {
        rec.stored = format!("{i}-{}", rec.path.file_name().unwrap_or_default().to_string_lossy());
    }
    Ok(Desired { link_mode: mode_name(file.settings.link_mode), file, resolved, lock_changes: changes, views, shims })
}

/// How a path inside the cuenv home is written in `lab.lock`.
pub const HOME_TOKEN: &str = "${CUENV_HOME}";

/// `path` inside `home` as `${CUENV_HOME}/a/b` (always `/`, so a lock written on Windows reads
/// the same on Linux); `None` for a path outside `home`.
pub fn to_home_token(path: &Path, home: &Path) -> Option<PathBuf> {
    let rest = path.strip_prefix(home).ok()?;
    let parts: Vec<String> = rest.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    Some(PathBuf::from(format!("{HOME_TOKEN}/{}", parts.join("/"))))
}

/// The inverse of [`to_home_token`]: `${CUENV_HOME}/a/b` (or `${CUENV_HOME}\a\b`) under
/// `home`; `None` for a path that does not start with the token.
pub fn from_home_token(path: &Path, home: &Path) -> Option<PathBuf> {
    let text = path.to_string_lossy();
    let rest = text.strip_prefix(HOME_TOKEN)?;
    if !(rest.is_empty() || rest.starts_with(['/', '\\'])) {
        return None;
    }
    Some(rest.split(['/', '\\']).filter(|c| !c.is_empty()).fold(home.to_path_buf(), |acc, c| acc.join(c)))
}

/// Writes this host's section of `lab.lock` for `desired`; see [`write_lock_section`].
pub fn write_lock(layout: &Layout, desired: &Desired) -> Result<bool, Error> {
    let platform = Platform::host().ok_or(Error::UnsupportedPlatform)?;
    write_lock_section(layout, &desired.file, platform, &desired.resolved)
}

/// Writes `platform`'s section of `lab.lock` for `resolved`: toolkit roots inside the cuenv
/// home written relative to [`HOME_TOKEN`], and for each profile with a `from` source the
/// SHA-256 of the file its entry came from (and the URL, for a URL source), and the runtime
/// wheels of a `cuda = { from = "pypi" }` root. Returns whether the file changed.
pub fn write_lock_section(layout: &Layout, file: &ProfileFile, platform: Platform, resolved: &Resolved) -> Result<bool, Error> {
    let path = lockfile::lock_path(&file.path);
    let home = stable_home(layout);
    let mut portable = resolved.clone();
    for p in &mut portable.profiles {
        if let Some(t) = to_home_token(&p.toolkit_root, &home) {
            p.toolkit_root = t;
        }
    }
    let entries = Store::new(layout).entries();
    let runtimes = crate::wheel_toolkit::list(layout);
    let mut pins = lockfile::Pins::new();
    for r in &resolved.profiles {
        let Some(profile) = file.profile(&r.name) else { continue };
        let mut pin = lockfile::Pin { sha256: None, url: None, cuda_wheels: Vec::new() };
        if let Some(from) = &profile.cudnn.from
            && let Some((_, meta)) = entries.iter().find(|(_, m)| m.id == r.cudnn_id)
        {
            pin.sha256 = meta.source.sha256.clone();
            pin.url = match &from.value {
                crate::profile::Source::Location(l) if crate::sources::is_url(l) => Some(l.clone()),
                _ => None,
            };
        }
        if profile.cuda.from.is_some()
            && let Some((_, m)) = runtimes.iter().find(|(root, _)| crate::paths::same_path(root, &r.toolkit_root))
        {
            pin.cuda_wheels = m.wheels.iter().map(|w| (w.project.clone(), w.version.clone(), w.sha256.clone())).collect();
        }
        if pin.sha256.is_some() || !pin.cuda_wheels.is_empty() {
            pins.insert(r.name.clone(), pin);
        }
    }
    // One atomic write: the choices and their pins never land apart.
    Ok(lockfile::write(&path, platform, &portable, &pins)?)
}

/// For `--locked`: the drift when `lock` (`platform`'s section of `file`'s lock; `None`: no
/// lock file) holds nothing to verify against: no file, or no section for `platform` while
/// `file` has profiles. `None` when the section is there.
pub fn missing_section(lock: Option<&lockfile::LockFile>, file: &ProfileFile, platform: Platform) -> Option<LockedDrift> {
    let why = match lock {
        None => "the lock file does not exist".to_string(),
        Some(l) if l.profiles.is_empty() && !file.profiles.is_empty() => format!("the lock file has no {platform} section"),
        Some(_) => return None,
    };
    let message = format!("{} does not match {} for {platform}:\n  {why}", lockfile::lock_path(&file.path).display(), file.path.display());
    Some(LockedDrift::new(message, &file.path, platform, true))
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

/// The change from the current generation to `desired` (see [`crate::change`]); empty when
/// nothing would change. When a profile changes, every link of the new views follows.
pub fn plan(layout: &Layout, desired: &Desired) -> Vec<Change> {
    let cur = generation::current(layout).and_then(|n| generation::read(layout, n).ok());
    let (empty_views, empty_shims) = (Vec::new(), Vec::new());
    let (cur_views, cur_shims) = cur.as_ref().map(|m| (&m.profiles, &m.shims)).unwrap_or((&empty_views, &empty_shims));
    let mut out = Vec::new();
    for v in &desired.views {
        match cur_views.iter().find(|c| c.name == v.name) {
            None => out.push(Change::new(
                Kind::Add,
                Subject::Profile,
                &v.name,
                Some(format!("cuDNN {} ({}) on CUDA {} ({})", v.cudnn_version, v.cudnn_name, v.toolkit_version, v.toolkit_root.display())),
            )),
            Some(c) if c != v => {
                let mut what = Vec::new();
                if c.cudnn_id != v.cudnn_id {
                    what.push(format!("cuDNN {} -> {} ({})", c.cudnn_version, v.cudnn_version, v.cudnn_name));
                }
                if c.toolkit_root != v.toolkit_root {
                    what.push(format!("toolkit {} -> {}", c.toolkit_root.display(), v.toolkit_root.display()));
                }
                if c.conda_env != v.conda_env {
                    what.push(format!("conda env {} -> {}", opt_path(&c.conda_env), opt_path(&v.conda_env)));
                }
                if what.is_empty() {
                    what.push("settings changed".into());
                }
                out.push(Change::new(Kind::Change, Subject::Profile, &v.name, Some(what.join(", "))));
            }
            Some(_) => {}
        }
    }
    for c in cur_views.iter().filter(|c| !desired.views.iter().any(|v| v.name == c.name)) {
        out.push(Change::new(Kind::Remove, Subject::Profile, &c.name, None));
    }
    if let Some(m) = cur.as_ref().filter(|m| m.link_mode != desired.link_mode) {
        out.push(Change::new(Kind::Change, Subject::LinkMode, "", Some(format!("{} -> {}", m.link_mode, desired.link_mode))));
    }
    let profiles_changed = !out.is_empty();
    for (s, _) in &desired.shims {
        let path = s.path.display().to_string();
        match cur_shims.iter().find(|c| c.path == s.path) {
            None => out.push(Change::new(Kind::Add, Subject::Shim, path, None)),
            Some(c) if c.sha256 != s.sha256 => out.push(Change::new(Kind::Change, Subject::Shim, path, None)),
            _ => {}
        }
    }
    for c in cur_shims.iter().filter(|c| !desired.shims.iter().any(|(s, _)| s.path == c.path)) {
        out.push(Change::new(Kind::Remove, Subject::Shim, c.path.display().to_string(), None));
    }
    if profiles_changed {
        for v in &desired.views {
            for name in VIEW_LINKS {
                out.push(Change::new(Kind::Link, Subject::Link, format!("profiles/{}/{}", v.name, name), Some(view_target(v, name).display().to_string())));
            }
        }
    }
    out
}

fn opt_path(p: &Option<PathBuf>) -> String {
    p.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "(none)".into())
}

fn view_target(v: &ViewRecord, name: &str) -> PathBuf {
    match name {
        "cuda" => v.toolkit_root.clone(),
        "cudnn" => v.entry_dir.clone(),
        "cudnn-lib" => crate::store::extract::native(&v.entry_dir, &v.cudnn_lib),
        _ => v.cuda_lib.clone(),
    }
}

/// Builds generation N+1 from `desired` and publishes it (not yet current). On any error
/// nothing is left behind (the staging folder is removed).
pub fn build(layout: &Layout, desired: &Desired) -> Result<u64, Error> {
    let gens = layout.generations_dir();
    fs::create_dir_all(&gens).map_err(|source| Error::At { message: format!("cannot create {}", gens.display()), source })?;
    for e in fs::read_dir(&gens)?.flatten() {
        if e.file_name().to_string_lossy().starts_with(".tmp-") {
            remove_generation_tree(&e.path())?;
        }
    }
    let n = generation::list(layout).last().copied().unwrap_or(0) + 1;
    let tmp = gens.join(format!(".tmp-{n}"));
    let dest = generation::dir(layout, n);
    let result = build_into(&tmp, &dest, n, desired);
    if let Err(e) = result {
        let _ = remove_generation_tree(&tmp);
        return Err(e);
    }
    fsutil::rename_with_retry(&tmp, &dest).map_err(|source| Error::At { message: format!("cannot publish {}", dest.display()), source })?;
    fsutil::sync_dir(&gens);
    Ok(n)
}

fn build_into(tmp: &Path, dest: &Path, n: u64, desired: &Desired) -> Result<(), Error> {
    fs::create_dir(tmp).map_err(|source| Error::At { message: format!("cannot create {}", tmp.display()), source })?;
    let kind = link_kind(desired.file.settings.link_mode);
    for v in &desired.views {
        let view = tmp.join("views").join(&v.name);
        fs::create_dir_all(&view).map_err(|source| Error::At { message: format!("cannot create {}", view.display()), source })?;
        for name in VIEW_LINKS {
            let at = view.join(name);
            match kind {
                Some(k) => link::create(k, &view_target(v, name), &at)?,
                None if name == "cudnn" => copy_tree(&v.entry_dir, &at)?,
                // Links store absolute targets: point at the copy's place once published.
                None if name == "cudnn-lib" => {
                    let published = dest.join("views").join(&v.name).join("cudnn");
                    link::create(LinkKind::native(), &crate::store::extract::native(&published, &v.cudnn_lib), &at)?
                }
                None => link::create(LinkKind::native(), &view_target(v, name), &at)?,
            }
        }
    }
    let shim_dir = tmp.join("shims");
    fs::create_dir_all(&shim_dir)?;
    for (rec, text) in &desired.shims {
        fs::write(shim_dir.join(&rec.stored), text)?;
    }
    let manifest = Manifest {
        number: n,
        created: generation::now(),
        source: std::path::absolute(&desired.file.path).unwrap_or_else(|_| desired.file.path.clone()),
        source_sha256: hex::encode(Sha256::digest(desired.file.source.as_bytes())),
        link_mode: desired.link_mode,
        profiles: desired.views.clone(),
        shims: desired.shims.iter().map(|(r, _)| r.clone()).collect(),
    };
    let path = tmp.join("manifest.toml");
    fsutil::write_atomic(&path, toml::to_string(&manifest)?.as_bytes())?;
    fsutil::make_tree_readonly(&tmp.join("shims"))?;
    Ok(())
}

/// Copies a store entry (files, folders, symlinks) for `link-mode = "copy"`.
fn copy_tree(from: &Path, to: &Path) -> Result<(), Error> {
    for e in walkdir::WalkDir::new(from) {
        let e = e?;
        let rel = e.path().strip_prefix(from).expect("under root");
        let dest = to.join(rel);
        if e.file_type().is_dir() {
            fs::create_dir_all(&dest)?;
        } else if e.file_type().is_symlink() {
            #[cfg(unix)]
            std::os::unix::fs::symlink(fs::read_link(e.path())?, &dest)?;
            #[cfg(not(unix))]
            fs::copy(e.path(), &dest)?;
        } else {
            fs::copy(e.path(), &dest).map_err(|source| Error::At { message: format!("cannot copy {} to {}", e.path().display(), dest.display()), source })?;
        }
    }
    Ok(())
}

/// Deletes a generation folder: links are removed as links (never followed), copies and
/// files normally.
pub fn remove_generation_tree(dir: &Path) -> Result<(), Error> {
    fsutil::make_tree_writable(dir).ok();
    let views = dir.join("views");
    if let Ok(rd) = fs::read_dir(&views) {
        for v in rd.flatten() {
            for name in VIEW_LINKS {
                let p = v.path().join(name);
                if link::is_link(&p) {
                    link::remove(&p)?;
                }
            }
        }
    }
    fs::remove_dir_all(dir).map_err(|source| Error::At { message: format!("cannot delete {}", dir.display()), source })
}

/// True when `desired` equals what the current generation already has.
pub fn unchanged(layout: &Layout, desired: &Desired) -> bool {
    let Some(cur) = generation::current(layout).and_then(|n| generation::read(layout, n).ok()) else { return false };
    cur.profiles == desired.views
        && cur.link_mode == desired.link_mode
        && cur.shims.len() == desired.shims.len()
        && cur.shims.iter().zip(&desired.shims).all(|(a, (b, _))| a.path == b.path && a.sha256 == b.sha256)
}

/// Store entry ids referenced by any generation.
pub fn referenced_entries(layout: &Layout) -> BTreeSet<String> {
    generation::list(layout).into_iter().filter_map(|n| generation::read(layout, n).ok()).flat_map(|m| m.profiles.into_iter().map(|p| p.cudnn_id)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_token_round_trips_with_forward_slashes_on_every_platform() {
        let home = std::env::temp_dir().join("cuenv home ü");
        let root = home.join("toolkits").join("cuda-12.6.77-linux-x86_64-efd7971adb22");
        let t = to_home_token(&root, &home).unwrap();
        // As text: on Windows `PathBuf ==` would also take `\` for `/`.
        assert_eq!(t.to_str(), Some("${CUENV_HOME}/toolkits/cuda-12.6.77-linux-x86_64-efd7971adb22"));
        assert_eq!(from_home_token(&t, &home).unwrap(), root);
        // Written by an older cuenv on Windows.
        let back = PathBuf::from(r"${CUENV_HOME}\toolkits\cuda-12.6.77-linux-x86_64-efd7971adb22");
        assert_eq!(from_home_token(&back, &home).unwrap(), root);
        assert_eq!(to_home_token(Path::new("/usr/local/cuda-12.6"), &home), None);
        assert_eq!(from_home_token(Path::new("/usr/local/cuda-12.6"), &home), None);
        assert_eq!(from_home_token(Path::new("${CUENV_HOME}x/y"), &home), None);
    }
}
