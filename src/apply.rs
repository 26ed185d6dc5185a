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

use anyhow::Context as _;
use sha2::{Digest, Sha256};

use crate::binfmt::Platform;
use crate::fsutil;
use crate::generation::{self, Manifest, ShimRecord, ViewRecord};
use crate::layout::Layout;
use crate::link::{self, LinkKind};
use crate::lockfile;
use crate::profile::{LinkMode, ProfileFile};
use crate::resolve::{Candidates, CudnnCandidate, Resolved, ToolkitCandidate};
use crate::shim::{self, Activation, Shell};
use crate::store::Store;
use crate::toolkit::{self, ProcessEnv};

/// The four links of every view, by name: toolkit root, store entry, the entry's library
/// folder, the toolkit's runtime library folder.
pub const VIEW_LINKS: [&str; 4] = ["cuda", "cudnn", "cudnn-lib", "cuda-lib"];

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
    pub link_mode: String,
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

fn mode_name(mode: LinkMode) -> String {
    match link_kind(mode) {
        Some(LinkKind::Junction) => "junction".into(),
        Some(LinkKind::Symlink) => "symlink".into(),
        None => "copy".into(),
    }
}

/// Toolkit candidates for `platform`: the CUDA runtime roots under `<home>/toolkits` built
/// for it, plus [`installed_toolkits`] when `platform` is the host's (the roots of another
/// platform's machine cannot be seen from here).
fn toolkit_candidates(layout: &Layout, file: &ProfileFile, platform: Platform) -> anyhow::Result<Vec<(ToolkitCandidate, toolkit::Toolkit)>> {
    let mut out = Vec::new();
    // CUDA runtime roots assembled from PyPI wheels are candidates too.
    for (root, meta) in crate::wheel_toolkit::list(layout) {
        if meta.platform != platform {
            continue;
        }
        if let Ok(t) = toolkit::inspect_root(&root)
            && let Some(v) = t.version.clone()
        {
            out.push((ToolkitCandidate { root: t.root.clone(), version: v }, t));
        }
    }
    if Platform::host() == Some(platform) {
        out.extend(installed_toolkits(file)?);
    }
    Ok(out)
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
pub fn resolve_locked(layout: &Layout, file: &ProfileFile, platform: Platform, locked: bool) -> anyhow::Result<Locking> {
    let entries = Store::new(layout).entries();
    let cudnn: Vec<CudnnCandidate> = entries
        .iter()
        .map(|(_, m)| CudnnCandidate { id: m.id.clone(), name: m.name.clone(), version: m.version.clone(), cuda_major: m.cuda_major, platform: m.platform })
        .collect();
    let toolkits = toolkit_candidates(layout, file, platform)?;
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

/// The installed toolkit roots a profile file may use: its `[toolkits]` roots (each must be
/// a toolkit with a version, else an error at its line), else the roots `cuenv toolkits` finds.
pub fn installed_toolkits(file: &ProfileFile) -> anyhow::Result<Vec<(ToolkitCandidate, toolkit::Toolkit)>> {
    let mut out = Vec::new();
    if file.toolkits.is_empty() {
        for t in toolkit::discover(&ProcessEnv) {
            if let Some(v) = t.version.clone() {
                out.push((ToolkitCandidate { root: t.root.clone(), version: v }, t));
            }
        }
        return Ok(out);
    }
    for decl in &file.toolkits {
        let root = &decl.root.value;
        let t = toolkit::inspect_root(root).map_err(|e| {
            let hint = crate::error::Diagnose::hint(&e);
            file.error_at(decl.root.span.clone(), format!("toolkit `{}`: {e}", decl.label.value), hint)
        })?;
        let Some(v) = t.version.clone() else {
            return Err(file
                .error_at(
                    decl.root.span.clone(),
                    format!("toolkit root {} has no version.json or version.txt", root.display()),
                    Some("point at the folder that holds version.json (e.g. CUDA\\v12.6)".into()),
                )
                .into());
        };
        out.push((ToolkitCandidate { root: t.root.clone(), version: v }, t));
    }
    Ok(out)
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
pub fn desire(layout: &Layout, file: ProfileFile, locked: bool) -> anyhow::Result<Desired> {
    let platform = Platform::host().context("cuDNN is not built for this platform")?;
    let Locking { resolved, changes, toolkits, entries } = resolve_locked(layout, &file, platform, locked)?;
    let base_dir = file.path.parent().map(Path::to_path_buf).unwrap_or_default();
    let home_dir = dirs::home_dir();
    let mut views = Vec::new();
    let mut shims = Vec::new();
    for r in &resolved.profiles {
        let (entry_dir, meta) = entries.iter().find(|(_, m)| m.id == r.cudnn_id).cloned().context("resolved entry vanished from the store")?;
        let t = &toolkits.iter().find(|(c, _)| c.root == r.toolkit_root).context("resolved toolkit vanished")?.1;
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
            check: format!("{:?}", r.check).to_lowercase(),
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
pub fn write_lock(layout: &Layout, desired: &Desired) -> anyhow::Result<bool> {
    let platform = Platform::host().context("cuDNN is not built for this platform")?;
    write_lock_section(layout, &desired.file, platform, &desired.resolved)
}

/// Writes `platform`'s section of `lab.lock` for `resolved`: toolkit roots inside the cuenv
/// home written relative to [`HOME_TOKEN`], and for each profile with a `from` source the
/// SHA-256 of the file its entry came from (and the URL, for a URL source), and the runtime
/// wheels of a `cuda = { from = "pypi" }` root. Returns whether the file changed.
pub fn write_lock_section(layout: &Layout, file: &ProfileFile, platform: Platform, resolved: &Resolved) -> anyhow::Result<bool> {
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
            && let Some((_, m)) = runtimes.iter().find(|(root, _)| link::same_path(root, &r.toolkit_root))
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

impl crate::error::Diagnose for LockedDrift {
    fn hint(&self) -> Option<String> {
        Some(self.hint.clone())
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        crate::error::ExitCode::Invalid
    }
}

/// The activation of a profile, through its stable path `<home>/profiles/<name>`:
/// cuDNN's library folder and the toolkit's runtime folder first on PATH (Windows) or
/// LD_LIBRARY_PATH (Linux, where PATH gets the toolkit's `bin`), and CUDA_PATH, CUDA_HOME,
/// CUDNN_PATH pointing into the view.
pub fn activation(layout: &Layout, profile: &str, platform: Platform) -> Activation {
    let view = stable_home(layout).join("profiles").join(profile);
    let (path_prepend, ld) = if platform.is_windows() {
        (vec![view.join("cudnn-lib"), view.join("cuda-lib")], Vec::new())
    } else {
        (vec![view.join("cuda").join("bin")], vec![view.join("cudnn-lib"), view.join("cuda-lib")])
    };
    Activation {
        profile: profile.into(),
        path_prepend,
        ld_library_path_prepend: ld,
        set: vec![("CUDA_PATH".into(), view.join("cuda")), ("CUDA_HOME".into(), view.join("cuda")), ("CUDNN_PATH".into(), view.join("cudnn"))],
    }
}

/// The home as an absolute path without a `\\?\` prefix (what shims and users see).
pub fn stable_home(layout: &Layout) -> PathBuf {
    let abs = std::path::absolute(layout.home()).unwrap_or_else(|_| layout.home().to_path_buf());
    // shim_path also turns `\\?\UNC\srv\share` into `\\srv\share` (a bare strip of `\\?\`
    // left the relative `UNC\srv\share`).
    if abs.to_string_lossy().starts_with(r"\\?\") { PathBuf::from(shim::shim_path(&abs)) } else { abs }
}

/// The change from the current generation to `desired`, as `+`/`-`/`~` lines; empty when
/// nothing would change.
pub fn plan(layout: &Layout, desired: &Desired) -> Vec<String> {
    let cur = generation::current(layout).and_then(|n| generation::read(layout, n).ok());
    let (empty_views, empty_shims) = (Vec::new(), Vec::new());
    let (cur_views, cur_shims) = cur.as_ref().map(|m| (&m.profiles, &m.shims)).unwrap_or((&empty_views, &empty_shims));
    let mut lines = Vec::new();
    for v in &desired.views {
        match cur_views.iter().find(|c| c.name == v.name) {
            None => lines.push(format!(
                "+ profile {}: cuDNN {} ({}) on CUDA {} ({})",
                v.name,
                v.cudnn_version,
                v.cudnn_name,
                v.toolkit_version,
                v.toolkit_root.display()
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
                lines.push(format!("~ profile {}: {}", v.name, what.join(", ")));
            }
            Some(_) => {}
        }
    }
    for c in cur_views.iter().filter(|c| !desired.views.iter().any(|v| v.name == c.name)) {
        lines.push(format!("- profile {}", c.name));
    }
    if cur.as_ref().is_some_and(|m| m.link_mode != desired.link_mode) {
        lines.push(format!("~ link mode {} -> {}", cur.as_ref().unwrap().link_mode, desired.link_mode));
    }
    let profiles_changed = !lines.is_empty();
    for (s, _) in &desired.shims {
        match cur_shims.iter().find(|c| c.path == s.path) {
            None => lines.push(format!("+ shim {}", s.path.display())),
            Some(c) if c.sha256 != s.sha256 => lines.push(format!("~ shim {}", s.path.display())),
            _ => {}
        }
    }
    for c in cur_shims.iter().filter(|c| !desired.shims.iter().any(|(s, _)| s.path == c.path)) {
        lines.push(format!("- shim {}", c.path.display()));
    }
    if profiles_changed {
        lines.push("  the new generation's views (every link, changed or not):".into());
        for v in &desired.views {
            for name in VIEW_LINKS {
                lines.push(format!("  link profiles/{}/{} -> {}", v.name, name, view_target(v, name).display()));
            }
        }
    }
    lines
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
pub fn build(layout: &Layout, desired: &Desired) -> anyhow::Result<u64> {
    let gens = layout.generations_dir();
    fs::create_dir_all(&gens).with_context(|| format!("cannot create {}", gens.display()))?;
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
    fsutil::rename_with_retry(&tmp, &dest).with_context(|| format!("cannot publish {}", dest.display()))?;
    fsutil::sync_dir(&gens);
    Ok(n)
}

fn build_into(tmp: &Path, dest: &Path, n: u64, desired: &Desired) -> anyhow::Result<()> {
    fs::create_dir(tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let kind = link_kind(desired.file.settings.link_mode);
    for v in &desired.views {
        let view = tmp.join("views").join(&v.name);
        fs::create_dir_all(&view).with_context(|| format!("cannot create {}", view.display()))?;
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
        link_mode: desired.link_mode.clone(),
        profiles: desired.views.clone(),
        shims: desired.shims.iter().map(|(r, _)| r.clone()).collect(),
    };
    let path = tmp.join("manifest.toml");
    fsutil::write_atomic(&path, toml::to_string(&manifest)?.as_bytes())?;
    fsutil::make_tree_readonly(&tmp.join("shims"))?;
    Ok(())
}

/// Copies a store entry (files, folders, symlinks) for `link-mode = "copy"`.
fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
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
            fs::copy(e.path(), &dest).with_context(|| format!("cannot copy {} to {}", e.path().display(), dest.display()))?;
        }
    }
    Ok(())
}

/// Deletes a generation folder: links are removed as links (never followed), copies and
/// files normally.
pub fn remove_generation_tree(dir: &Path) -> anyhow::Result<()> {
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
    fs::remove_dir_all(dir).with_context(|| format!("cannot delete {}", dir.display()))
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
