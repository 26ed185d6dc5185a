//! Stage 3, resolve: from the parsed profile file to the [`Desired`] generation content.
//!
//! Two steps. Gathering ([`gather`], the only I/O here) lists the store, finds the toolkit
//! roots ([`crate::resolve::candidates`]) and reads `platform`'s section of `lab.lock`; then
//! [`crate::resolve::honour`] (pure: file + lock + candidates -> choices) picks each
//! profile's toolkit and store entry, keeping a locked choice while it still satisfies the
//! file ([`resolve_locked`]). [`desire_in`] turns those choices into the views and conda shims
//! a generation will hold (finding each profile's conda env on disk).
//!
//! Below plan, build and record; calls nothing of theirs.

use std::path::{Path, PathBuf};

use crate::cudnn::platform::Platform;
use crate::env::view::stable_home;
use crate::generation::{ShimRecord, ViewMode, ViewRecord};
use crate::home::layout::Layout;
use crate::link::{self, LinkKind};
use crate::profile::lockfile;
use crate::profile::{LinkMode, ProfileFile};
use crate::resolve::{Candidates, CudnnCandidate, Resolved, ToolkitCandidate};
use crate::shim::{self, Shell};
use crate::store::Store;
use crate::store::entry::EntryMeta;
use crate::sys::paths::{PathRole, require_unicode};
use crate::toolkit;

use super::error::{Error, LockedDrift};
use super::home_token::from_home_token;

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
        LinkMode::Copy | LinkMode::None => None,
    }
}

/// A `link-mode` this host cannot make (`junction` off Windows) is an error at the file's
/// `link-mode` line, before anything is resolved or built. Checked here, not when parsing:
/// one lab file serves Linux and Windows machines.
fn validate_link_mode(file: &ProfileFile) -> Result<(), crate::profile::Error> {
    if file.settings.link_mode != LinkMode::Junction || cfg!(windows) {
        return Ok(());
    }
    Err(file.error_at(
        file.settings.link_mode_span.clone().unwrap_or(0..0),
        "`link-mode = \"junction\"` cannot be used on this machine: junctions exist only on Windows",
        Some("use `link-mode = \"auto\"` (junctions on Windows, symbolic links elsewhere) so one lab file serves both".into()),
    ))
}

/// At apply time, before anything is fetched or built: `validate_link_mode`, and for
/// `link-mode = "symlink"` a test link in the home ([`link::probe`] in
/// [`Layout::link_probe`]), because a Windows process without administrator rights or
/// Developer Mode cannot make symlinks (error 1314), and Wine says it made one but did not
/// (docs/facts.md §7). A refused test link is an error at the file's `link-mode` line (exit 2)
/// with the reason and what to do; one lab file serves machines that can and machines that
/// cannot, so this is never checked when parsing. `plan` writes nothing and does not try.
///
/// For `link-mode = "auto"` the same test link, of the native kind, decides the mode: when
/// the home's file system refuses it (exFAT, FAT32, a network share, a cloud-drive folder,
/// Wine's refused junctions), the generation is built link-free and [`LinkChoice::no_links`]
/// holds the refusal, for the caller to say once.
///
/// Errors: the profile error at the `link-mode` line; [`link::LinkError::Io`] (exit 1) when
/// the probe folder cannot be made or removed.
pub fn validate_link_mode_works(layout: &Layout, file: &ProfileFile) -> Result<LinkChoice, Error> {
    validate_link_mode(file)?;
    let named = LinkChoice { mode: mode_name(file.settings.link_mode), no_links: None };
    if file.settings.link_mode == LinkMode::Auto {
        return match link::probe(LinkKind::native(), &layout.link_probe()) {
            Ok(()) => Ok(named),
            Err(e @ link::LinkError::Io { .. }) => Err(e.into()),
            Err(e) => Ok(LinkChoice { mode: ViewMode::LinkFree, no_links: Some(e) }),
        };
    }
    if file.settings.link_mode != LinkMode::Symlink {
        return Ok(named);
    }
    match link::probe(LinkKind::Symlink, &layout.link_probe()) {
        Ok(()) => Ok(named),
        Err(e @ link::LinkError::Io { .. }) => Err(e.into()),
        Err(e) => {
            use crate::error::Diagnose as _;
            let hint = match &e {
                link::LinkError::NoLinks { .. } => e.hint(),
                _ if cfg!(windows) => Some(
                    "turn on Developer Mode (Settings > System > For developers) or run cuenv as administrator, or use `link-mode = \"auto\"`: junctions need no privilege"
                        .into(),
                ),
                _ => e.hint(),
            };
            Err(file
                .error_at(file.settings.link_mode_span.clone().unwrap_or(0..0), format!("`link-mode = \"symlink\"` cannot be used on this machine: {e}"), hint)
                .into())
        }
    }
}

fn mode_name(mode: LinkMode) -> ViewMode {
    match link_kind(mode) {
        Some(LinkKind::Junction) => ViewMode::Junction,
        Some(LinkKind::Symlink) => ViewMode::Symlink,
        None => ViewMode::LinkFree,
    }
}

/// The mode `apply` builds in ([`validate_link_mode_works`]).
#[derive(Debug)]
pub struct LinkChoice {
    /// The generation's mode.
    pub mode: ViewMode,
    /// `link-mode = "auto"` found that the home cannot hold links: the refused test link
    /// (the reason to say once), and `mode` is link-free.
    pub no_links: Option<link::LinkError>,
}

/// The mode a preview (`cuenv plan`, which makes no test link) expects: the file's, except
/// that `auto` stays link-free when the `current` generation is (the home refused links then).
pub fn planned_mode(file: &ProfileFile, current: Option<&crate::generation::Manifest>) -> ViewMode {
    match file.settings.link_mode {
        LinkMode::Auto if current.is_some_and(|m| m.link_mode.is_link_free()) => ViewMode::LinkFree,
        mode => mode_name(mode),
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
    entries: Vec<(PathBuf, EntryMeta)>,
}

/// What resolution runs against, read from disk (the only I/O of this stage): the store's
/// entries, the toolkit roots ([`crate::resolve::candidates`]) and `platform`'s section of `lab.lock`.
struct Gathered {
    /// The store entries.
    entries: Vec<(PathBuf, EntryMeta)>,
    /// The toolkit candidates, with what `cuenv toolkits` knows of each.
    toolkits: Vec<(ToolkitCandidate, toolkit::Toolkit)>,
    /// `platform`'s section of `lab.lock` (`None`: no lock file).
    lock: Option<lockfile::LockFile>,
}

/// Gathers what [`resolve_locked`] resolves against: lists the store, finds the toolkit
/// roots, takes `platform`'s section of the `lab.lock` the command read.
fn gather(layout: &Layout, file: &ProfileFile, platform: Platform, lock: &lockfile::LockText) -> Result<Gathered, Error> {
    let entries = Store::new(layout).entries();
    let toolkits = crate::resolve::candidates::toolkit_candidates(layout, file, platform)?;
    let lock = lock.section(platform)?;
    Ok(Gathered { entries, toolkits, lock })
}

/// Resolves `file` for `platform` against the store, the toolkit roots and `platform`'s
/// section of `lab.lock`. `locked`: fail with [`LockedDrift`] instead of changing the lock.
///
/// Gathering (`gather`) is the only I/O; the choice itself is [`crate::resolve::honour`]
/// (pure: file + lock + candidates -> choices).
///
/// Errors: profile errors (file, line, column; exit code 2), lock file errors, [`LockedDrift`].
pub fn resolve_locked(layout: &Layout, file: &ProfileFile, platform: Platform, locked: bool, lock: &lockfile::LockText) -> Result<Locking, Error> {
    resolve_locked_holding(layout, file, platform, locked, &[], lock)
}

/// [`resolve_locked`] for every profile of `file` but the `held` ones (profiles `cuenv lock
/// --allow-unreachable` could not fetch for): those are neither resolved nor compared with
/// the lock (the caller keeps or unpins their lock entries).
pub fn resolve_locked_holding(
    layout: &Layout,
    file: &ProfileFile,
    platform: Platform,
    locked: bool,
    held: &[String],
    lock_text: &lockfile::LockText,
) -> Result<Locking, Error> {
    let mut held_file;
    let file = if held.is_empty() {
        file
    } else {
        held_file = file.clone();
        held_file.profiles.retain(|p| !held.contains(&p.name));
        &held_file
    };
    let Gathered { entries, toolkits, mut lock } = gather(layout, file, platform, lock_text)?;
    if let Some(l) = lock.as_mut() {
        l.profiles.retain(|p| !held.contains(&p.name));
        l.unpinned.retain(|p| !held.contains(&p.name));
    }
    // Complete sets first: among entries of one version, resolution takes the first, and an
    // entry added with --allow-incomplete must never win over a complete one.
    let mut ordered: Vec<_> = entries.iter().collect();
    ordered.sort_by_key(|(_, m)| !m.incomplete.is_empty());
    let cudnn: Vec<CudnnCandidate> = ordered
        .into_iter()
        .map(|(_, m)| CudnnCandidate { id: m.id.clone(), name: m.name.clone(), version: m.version.clone(), cuda_major: m.cuda_major, platform: m.platform })
        .collect();
    let tk: Vec<ToolkitCandidate> = toolkits.iter().map(|t| t.0.clone()).collect();
    let candidates = Candidates { toolkits: &tk, store: &cudnn, platform };
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
        if let Some(drift) = missing_section(lock.as_ref(), file, platform).or_else(|| unpinned_drift(lock.as_ref(), file, platform)) {
            return Err(drift.into());
        }
        if !honoured.changes.is_empty() {
            let mut msg = format!("{} does not match {} for {platform}:", lockfile::lock_path(&file.path).display(), file.path.display());
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

/// Resolves `file` into the desired generation content for this host, built in `mode` (what
/// [`validate_link_mode_works`] chose, or [`planned_mode`] for a preview): link-free shims
/// name the store entries and toolkit roots themselves. `locked`: fail instead of changing
/// `lab.lock`. Errors carry the file, line and column (profile errors) and exit code 2.
pub fn desire_in(layout: &Layout, file: ProfileFile, locked: bool, mode: ViewMode, lock: &lockfile::LockText) -> Result<Desired, Error> {
    let platform = Platform::host().ok_or(Error::UnsupportedPlatform)?;
    validate_link_mode(&file)?;
    // Paths written as text into the manifest and shims.
    require_unicode(PathRole::Home, &stable_home(layout))?;
    require_unicode(PathRole::ProfileFile, &file.path)?;
    let Locking { resolved, changes, toolkits, entries } = resolve_locked(layout, &file, platform, locked, lock)?;
    let base_dir = file.path.parent().map(Path::to_path_buf).unwrap_or_default();
    let home_dir = dirs::home_dir();
    let mut views = Vec::new();
    let mut shims = Vec::new();
    for r in &resolved.profiles {
        let (entry_dir, meta) = entries.iter().find(|(_, m)| m.id == r.cudnn_id).cloned().ok_or(Error::Vanished("resolved entry vanished from the store"))?;
        let t = &toolkits.iter().find(|(c, _)| c.root == r.toolkit_root).ok_or(Error::Vanished("resolved toolkit vanished"))?.1;
        let cudnn_lib = if platform.is_windows() { meta.layout.bin.clone() } else { meta.layout.lib.clone() }.unwrap_or_else(|| "lib".into());
        let profile = file.profile(&r.name).expect("resolved from this file");
        let conda_env = conda_env(&file, profile, &base_dir, home_dir.as_deref())?;
        let python_env = python_env(&file, profile, &base_dir)?;
        let view = ViewRecord {
            name: r.name.clone(),
            toolkit_root: r.toolkit_root.clone(),
            toolkit_version: r.toolkit_version.to_string(),
            cudnn_id: r.cudnn_id.clone(),
            cudnn_name: r.cudnn_name.clone(),
            cudnn_version: r.cudnn_version.clone(),
            cuda_major: meta.cuda_major,
            entry_dir: entry_dir.clone(),
            cudnn_lib,
            cuda_lib: runtime_dir(t, platform),
            conda_env: conda_env.clone(),
            python_env,
            check: r.check,
            copied: false,
        };
        let profile_name = || view.name.clone();
        for p in [&view.toolkit_root, &view.cuda_lib] {
            require_unicode(PathRole::ToolkitRoot { profile: profile_name() }, p)?;
        }
        if let Some(env) = &conda_env {
            require_unicode(PathRole::CondaEnv { profile: profile_name() }, env)?;
            let mut act = crate::generation::activation_of(layout, mode, &view, platform);
            if !platform.is_windows() {
                // conda cannot take a Linux shim's PATH entry back out on a switch (its slice
                // there is the single `<env>/bin`), and the loader needs only LD_LIBRARY_PATH:
                // docs/design.md, "Activation layers", 5.
                act.path_prepend.clear();
            }
            // `[settings] shells`, else the platform's shells. Windows: `C:\...` paths cannot go
            // into the `:`-separated lists of the POSIX, csh and fish shims, so only cmd and
            // PowerShell shims are written there.
            let shells: Vec<Shell> = match &file.settings.shells {
                Some(chosen) => chosen.iter().copied().filter(|s| !platform.is_windows() || matches!(s, Shell::Cmd | Shell::PowerShell)).collect(),
                None => Shell::defaults(platform.is_windows()).to_vec(),
            };
            for &shell in &shells {
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
                    let sha = crate::generation::shim_sha256(&bytes);
                    shims.push((ShimRecord { path, profile: view.name.clone(), stored: String::new(), sha256: sha }, bytes));
                }
            }
        }
        if let Some(env) = &view.python_env {
            let span = profile.python_env.as_ref().map(|e| e.span.clone()).unwrap_or_else(|| profile.name_span.clone());
            if let Some(other) = views.iter().find(|v: &&ViewRecord| v.python_env.as_deref().is_some_and(|e| crate::sys::paths::same_place(e, env))) {
                return Err(file
                    .error_at(
                        span,
                        format!("profile `{}` binds {}, which profile `{}` binds already", view.name, env.display(), other.name),
                        Some("a Python env gets one profile's hook: bind the other profile to another env, or drop one of the two `python-env` lines".into()),
                    )
                    .into());
            }
            let (path, bytes) = env_hook(layout, mode, &view, platform, &meta).map_err(|msg| {
                file.error_at(span, msg, Some("create the env with `python -m venv` or `uv venv` (or repair it), then run `cuenv apply` again".into()))
            })?;
            let sha = crate::generation::shim_sha256(&bytes);
            shims.push((ShimRecord { path, profile: view.name.clone(), stored: String::new(), sha256: sha }, bytes));
        }
        let shim_paths: Vec<PathBuf> = shims.iter().filter(|(r, _)| r.profile == view.name).map(|(r, _)| r.path.clone()).collect();
        let lib_dir = mode.is_link_free().then(|| view.real_folders().cudnn_lib);
        validate_max_path(platform, layout, &file, profile.name_span.clone(), &view.name, lib_dir.as_deref(), &meta.libraries, &shim_paths)?;
        views.push(view);
    }
    for (i, (rec, _)) in shims.iter_mut().enumerate() {
        rec.stored = format!("{i}-{}", rec.path.file_name().unwrap_or_default().to_string_lossy());
    }
    Ok(Desired { link_mode: mode, file, resolved, lock_changes: changes, views, shims })
}

/// The env hook of `view`, bound to the Python env `view.python_env` (docs/design.md, "The env
/// hook"): its path, `<first site-packages>/00-cuenv-<profile>.pth`, and its bytes. It preloads
/// the entry's dispatcher and the members the rest of its set shares
/// ([`crate::cudnn::set::shared_members`], read from the entry's own files), through the stable
/// view `<home>/profiles/<p>/cudnn-lib` in the link modes and the entry's folder in the link-free
/// mode, and carries the profile's activation for child processes.
///
/// Errors: the env has no site-packages folder (the message to show at `python-env`).
fn env_hook(layout: &Layout, mode: ViewMode, view: &ViewRecord, platform: Platform, meta: &EntryMeta) -> Result<(PathBuf, Vec<u8>), String> {
    use crate::cudnn::libname::{self, Os};
    let prefix = view.python_env.as_deref().expect("a bound view");
    let site = crate::pyenv::at(prefix, "python-env").and_then(|e| e.site_packages.into_iter().next()).ok_or_else(|| {
        format!("{} has no site-packages folder, so cuenv cannot write the hook that makes profile `{}` win there", prefix.display(), view.name)
    })?;
    let os = if platform.is_windows() { Os::Windows } else { Os::Linux };
    let real_lib = view.real_folders().cudnn_lib;
    let members: Vec<(String, Vec<String>)> = meta
        .libraries
        .iter()
        .filter(|n| libname::parse(n).is_some_and(|l| l.os == os && l.is_loader_name()))
        .map(|n| {
            let file = real_lib.join(n);
            let needs = if os == Os::Windows {
                crate::sys::binfmt::pe_imports(&file).ok().flatten()
            } else {
                crate::sys::binfmt::elf_dynamic(&file).ok().flatten().map(|d| d.needed)
            };
            (n.clone(), needs.unwrap_or_default())
        })
        .collect();
    let act = crate::generation::activation_of(layout, mode, view, platform);
    let lib = if mode.is_link_free() { real_lib.clone() } else { stable_home(layout).join("profiles").join(&view.name).join("cudnn-lib") };
    let mut preload: Vec<PathBuf> = members.iter().filter(|(n, _)| libname::parse(n).is_some_and(|l| l.is_dispatcher())).map(|(n, _)| lib.join(n)).collect();
    preload.extend(crate::cudnn::set::shared_members(&members, os).into_iter().map(|n| lib.join(n)));
    // Windows: `import torch` loads every DLL of `torch\lib` by full path, and a DLL's imports
    // take a module already loaded under that name (W1). Preloading the profile's graph there
    // would hand torch's own sub-libraries another release's graph; with a cuDNN of this major in
    // `torch\lib`, torch keeps its copy whole and the hook preloads nothing (doctor says so).
    if os == Os::Windows && preload.first().and_then(|d| d.file_name()).is_some_and(|d| torch_bundles(&site, d)) {
        preload.clear();
    }
    let hook =
        crate::pyenv::hook::Hook { profile: view.name.clone(), preload, path: act.path_prepend, ld_library_path: act.ld_library_path_prepend, set: act.set };
    Ok((site.join(crate::pyenv::hook::file_name(&view.name)), crate::pyenv::hook::render(&hook).into_bytes()))
}

/// Whether `site`'s `torch\lib` holds a DLL named `dispatcher` (compared without regard to case).
fn torch_bundles(site: &Path, dispatcher: &std::ffi::OsStr) -> bool {
    std::fs::read_dir(site.join("torch").join("lib"))
        .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().eq_ignore_ascii_case(&dispatcher.to_string_lossy())))
        .unwrap_or(false)
}

/// The folder of `profile`'s `conda-env` (`None` without one), found like conda does
/// (names relative to the envs folders, paths relative to the profile file's `base_dir`).
///
/// Errors: the env does not exist, at the `conda-env` value, with the envs found or how to
/// create it.
fn conda_env(
    file: &ProfileFile,
    profile: &crate::profile::Profile,
    base_dir: &Path,
    home_dir: Option<&Path>,
) -> Result<Option<PathBuf>, crate::profile::Error> {
    let Some(env) = &profile.conda_env else { return Ok(None) };
    crate::env::conda::resolve(&env.value, base_dir, &|k| std::env::var_os(k), home_dir).map(Some).map_err(|nf| {
        let hint = if crate::env::conda::is_path(&env.value) {
            format!("check the path (a conda env is a folder holding `conda-meta/`), or create the env there with `conda create -p {}`", env.value)
        } else if nf.known.is_empty() {
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
    })
}

/// The prefix of `profile`'s `python-env` (`None` without one), relative to the profile
/// file's `base_dir` ([`crate::pyenv::resolve_binding`]).
///
/// Errors: the folder is no Python environment, at the `python-env` value, with how to make one.
fn python_env(file: &ProfileFile, profile: &crate::profile::Profile, base_dir: &Path) -> Result<Option<PathBuf>, crate::profile::Error> {
    let Some(env) = &profile.python_env else { return Ok(None) };
    crate::pyenv::resolve_binding(&env.value, base_dir).map(Some).map_err(|(message, hint)| file.error_at(env.span.clone(), message, Some(hint)))
}

/// Every error resolving `file` for `platform` would meet, found before anything is
/// fetched or built: `pre`'s (bad `from`, versions no source has,
/// sources that cannot be reached), each profile's toolkit and cuDNN against what exists
/// plus what `pre` would fetch ([`crate::resolve::validate_all`]), and each conda env. One
/// error for all of them, in file order, or `Ok` when there is none.
///
/// Errors: the combined profile error (exit 2); a bad `[toolkits]` root alone.
pub fn validate_all(layout: &Layout, file: &ProfileFile, platform: Platform, pre: crate::sources::Preflight) -> Result<(), Error> {
    let mut errors = pre.errors;
    let mut toolkits: Vec<ToolkitCandidate> = match crate::resolve::candidates::toolkit_candidates(layout, file, platform) {
        Ok(t) => t.into_iter().map(|(c, _)| c).collect(),
        Err(e) => {
            errors.push(e);
            Vec::new()
        }
    };
    toolkits.extend(pre.toolkits);
    let mut store: Vec<CudnnCandidate> = Store::new(layout)
        .entries()
        .into_iter()
        .map(|(_, m)| CudnnCandidate { id: m.id, name: m.name, version: m.version, cuda_major: m.cuda_major, platform: m.platform })
        .collect();
    store.extend(pre.entries);
    errors.extend(crate::resolve::validate_all(file, &Candidates { toolkits: &toolkits, store: &store, platform }, &pre.unsure));
    if Platform::host() == Some(platform) {
        let base_dir = file.path.parent().map(Path::to_path_buf).unwrap_or_default();
        let home_dir = dirs::home_dir();
        for p in &file.profiles {
            errors.extend(conda_env(file, p, &base_dir, home_dir.as_deref()).err());
            errors.extend(python_env(file, p, &base_dir).err());
        }
    }
    if errors.is_empty() { Ok(()) } else { Err(crate::profile::Error::combine(errors).into()) }
}

/// For a `platform` that has it (Windows), the full-path check of profile `name`
/// (MAX_PATH, docs/windows.md): its longest DLL path in the stable view (`<home>/profiles/<name>/cudnn-lib/<the
/// longest of libraries>`) and its staging view folder (link-free: in `lib_dir`, the entry's
/// own library folder, and no view), and its conda shims (`shim_paths`) must
/// each fit [`WINDOWS_MAX_PATH`] UTF-16 units. Pure: a function of the planned paths and the
/// platform, so it is tested on every host.
///
/// Errors: the profile error at the profile's name (`name_span`; exit 2) naming the first path
/// too long and its length, with the hint to move the home or the env, or shorten the name.
#[allow(clippy::too_many_arguments)] // the planned paths, each its own argument, so tests drive it on every host
fn validate_max_path(
    platform: Platform,
    layout: &Layout,
    file: &ProfileFile,
    name_span: std::ops::Range<usize>,
    name: &str,
    lib_dir: Option<&Path>,
    libraries: &[String],
    shim_paths: &[PathBuf],
) -> Result<(), crate::profile::Error> {
    if !platform.is_windows() {
        return Ok(());
    }
    let longest_lib = libraries.iter().max_by_key(|n| n.len()).cloned().unwrap_or_default();
    let mut paths = match lib_dir {
        Some(dir) => vec![dir.join(&longest_lib)],
        None => {
            let view_dir = stable_home(layout).join("profiles").join(name);
            vec![view_dir.join("cudnn-lib").join(&longest_lib), layout.generation_staging(999_999).join("views").join(name).join("cudnn-lib")]
        }
    };
    paths.extend(shim_paths.iter().cloned());
    match over_max_path(&paths) {
        None => Ok(()),
        Some((path, len)) => Err(file.error_at(
            name_span,
            format!(
                "on Windows, profile `{name}` needs the path {} ({len} characters), past the {WINDOWS_MAX_PATH} that DLL loading and cmd.exe accept",
                path.display()
            ),
            Some("move the cuenv home (--home or CUENV_HOME) or the conda env to a shorter folder, or shorten the profile name".into()),
        )),
    }
}

/// The longest path Windows loads a DLL from or cmd.exe runs a script at without long-path
/// support: `MAX_PATH` (260) less the terminating NUL (Microsoft Learn, "Maximum Path Length
/// Limitation"; docs/facts.md §6).
pub const WINDOWS_MAX_PATH: usize = 259;

/// The first of `paths` longer than [`WINDOWS_MAX_PATH`] UTF-16 units, with its length.
fn over_max_path(paths: &[PathBuf]) -> Option<(PathBuf, usize)> {
    paths.iter().map(|p| (p.clone(), p.to_string_lossy().encode_utf16().count())).find(|(_, n)| *n > WINDOWS_MAX_PATH)
}

/// For `--locked`: the drift when `lock` (`platform`'s section of `file`'s lock; `None`: no
/// lock file) holds nothing to verify against: no file, or no section for `platform` while
/// `file` has profiles. `None` when the section is there.
pub fn missing_section(lock: Option<&lockfile::LockFile>, file: &ProfileFile, platform: Platform) -> Option<LockedDrift> {
    let why = match lock {
        None => "the lock file does not exist".to_string(),
        Some(l) if l.profiles.is_empty() && l.unpinned.is_empty() && !file.profiles.is_empty() => format!("the lock file has no {platform} section"),
        Some(_) => return None,
    };
    let message = format!("{} does not match {} for {platform}:\n  {why}", lockfile::lock_path(&file.path).display(), file.path.display());
    Some(LockedDrift::new(message, &file.path, platform, true))
}

/// For `--locked`: the drift when `lock` (`platform`'s section of `file`'s lock) names
/// profiles of `file` unpinned (`cuenv lock --allow-unreachable` could not reach their
/// sources): there is nothing to verify them against. `None` when it names none.
pub fn unpinned_drift(lock: Option<&lockfile::LockFile>, file: &ProfileFile, platform: Platform) -> Option<LockedDrift> {
    let lock = lock?;
    let unpinned: Vec<&lockfile::UnpinnedProfile> = file.profiles.iter().filter_map(|p| lock.unpinned(&p.name)).collect();
    let first = unpinned.first()?;
    let mut message = format!("{} does not match {} for {platform}:", lockfile::lock_path(&file.path).display(), file.path.display());
    for u in &unpinned {
        message
            .push_str(&format!("\n  profile {} is unpinned for {platform} (its sources could not be reached when the lock was written): {}", u.name, u.reason));
    }
    let hint = format!(
        "the first `cuenv apply {}` without --locked on a {platform} machine pins {} (or run `cuenv lock {} --platform {platform}` where its sources can be reached); commit the lock, then --locked holds",
        file.path.display(),
        if unpinned.len() == 1 { format!("profile {}", first.name) } else { "those profiles".to_string() },
        file.path.display(),
    );
    Some(LockedDrift { message, hint })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_past_max_path_is_found_in_utf16_units() {
        let short = PathBuf::from(r"C:\Users\ana\cuenv\profiles\tf\cudnn-lib\cudnn_engines_precompiled64_9.dll");
        assert_eq!(over_max_path(std::slice::from_ref(&short)), None);
        let long = PathBuf::from(format!(r"C:\{}\cudnn64_9.dll", "d".repeat(250)));
        assert_eq!(over_max_path(&[short.clone(), long.clone()]), Some((long, 267)));
        // 259 exactly is fine; a non-ASCII character counts as one UTF-16 unit.
        let edge = PathBuf::from(format!(r"C:\{}", "é".repeat(256)));
        assert_eq!(over_max_path(&[edge]), None);
    }

    /// The Windows full-path check is a function of the planned paths and
    /// the target platform, so it is driven here on every host: a home long enough that the
    /// profile's DLL path in its view passes 259 characters is refused at the profile's name
    /// for Windows, and not for Linux, where no such limit applies.
    #[test]
    fn the_windows_path_limit_is_checked_for_windows_only() {
        let text = "[profiles.tf]\ncuda = \"12\"\ncudnn = \"9.5\"\n";
        let file = crate::profile::parse(text, Path::new("lab.toml")).unwrap();
        let span = file.profile("tf").unwrap().name_span.clone();
        let libs = ["cudnn64_9.dll".to_string(), "cudnn_engines_precompiled64_9.dll".to_string()];
        let root = std::env::temp_dir();
        // The longest DLL path in the view, `<home>/profiles/tf/cudnn-lib/<the longest library>`,
        // for a home `<temp>/hhh...` of `h` letters.
        let home = |h: usize| root.join("h".repeat(h));
        let dll_of = |h: usize| stable_home(&Layout::new(home(h))).join("profiles").join("tf").join("cudnn-lib").join(&libs[1]);
        let fits = 259 - (dll_of(1).as_os_str().len() - 1);
        for (h, refused) in [(fits, false), (fits + 1, true)] {
            let layout = Layout::new(home(h));
            let dll = dll_of(h);
            assert_eq!(dll.as_os_str().len(), if refused { 260 } else { 259 }, "{}", dll.display());
            assert!(validate_max_path(Platform::LinuxX86_64, &layout, &file, span.clone(), "tf", None, &libs, &[]).is_ok());
            let got = validate_max_path(Platform::WindowsX86_64, &layout, &file, span.clone(), "tf", None, &libs, &[]);
            if !refused {
                assert!(got.is_ok(), "{got:?}");
                continue;
            }
            let e = got.unwrap_err();
            let msg = e.to_string();
            assert!(msg.starts_with("lab.toml:1:11: "), "{msg}");
            assert!(msg.contains(&format!("on Windows, profile `tf` needs the path {} (260 characters), past the 259", dll.display())), "{msg}");
            use crate::error::Diagnose as _;
            assert!(e.hint().unwrap().starts_with("move the cuenv home (--home or CUENV_HOME) or the conda env"), "{e:?}");
            assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid);
        }
        // A conda shim path past the limit is refused too, with a short home.
        let layout = Layout::new(root.join("h"));
        let shim = root.join("e".repeat(300)).join("cuenv-tf.bat");
        let e = validate_max_path(Platform::WindowsX86_64, &layout, &file, span, "tf", None, &libs, std::slice::from_ref(&shim)).unwrap_err();
        assert!(e.to_string().contains(&format!("needs the path {}", shim.display())), "{e}");
    }
}
