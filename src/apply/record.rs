//! Stage 8, record: writes `lab.lock` (the platform's section, with its pins) inside the
//! apply's transaction, or when the current generation already matches the file; and
//! tries beforehand that it can ([`preflight_lock`]), so a lock that cannot be written
//! stops `apply` before anything is built.
//!
//! Calls only the stages below it: the [`Desired`] of the resolve stage and
//! [`super::home_token`].

use crate::cudnn::platform::Platform;
use crate::env::view::stable_home;
use crate::home::layout::Layout;
use crate::profile::ProfileFile;
use crate::profile::lockfile;
use crate::resolve::Resolved;
use crate::store::Store;

use super::Error;
use super::desire::Desired;
use super::home_token::to_home_token;

/// Writes `platform`'s (the host's) section of `lab.lock` for `desired` over the `lock` the
/// apply read; see [`write_lock_section`].
pub fn write_lock(layout: &Layout, desired: &Desired, platform: Platform, lock: &mut lockfile::LockText) -> Result<bool, Error> {
    write_lock_section(layout, &desired.file, platform, &desired.resolved, lock)
}

/// Writes `platform`'s section of `lab.lock` for `resolved`: toolkit roots inside the cuenv
/// home written relative to [`super::HOME_TOKEN`], and for each profile with a `from` source the
/// SHA-256 of the file its entry came from (and the URL, for a URL source), and the runtime
/// wheels of a `cuda = { from = "pypi" }` root. Returns whether the file changed.
pub fn write_lock_section(layout: &Layout, file: &ProfileFile, platform: Platform, resolved: &Resolved, lock: &mut lockfile::LockText) -> Result<bool, Error> {
    write_lock_section_held(layout, file, platform, resolved, &Held::default(), lock)
}

/// The profiles of a file that `cuenv lock --allow-unreachable` could not resolve for a
/// platform (their sources could not be reached): each keeps the section's pin when it has
/// one, else is written unpinned.
#[derive(Debug, Default)]
pub struct Held {
    /// Profiles the section already pins: their choices and pins, as the lock says them.
    pub kept: Vec<(lockfile::LockedProfile, Option<lockfile::Pin>)>,
    /// Profiles written unpinned, with why.
    pub unpinned: Vec<lockfile::UnpinnedProfile>,
}

/// [`write_lock_section`] for `resolved` (every profile of `file` but those in `held`) and
/// the `held` profiles, in one atomic write.
pub fn write_lock_section_held(
    layout: &Layout,
    file: &ProfileFile,
    platform: Platform,
    resolved: &Resolved,
    held: &Held,
    lock: &mut lockfile::LockText,
) -> Result<bool, Error> {
    let (_, portable, mut pins) = lock_section(layout, file, resolved);
    let mut section = lockfile::LockFile::from(&portable);
    for (locked, pin) in &held.kept {
        section.profiles.push(locked.clone());
        if let Some(pin) = pin {
            pins.insert(locked.name.clone(), pin.clone());
        }
    }
    section.unpinned.extend(held.unpinned.iter().cloned());
    // One atomic write: the choices and their pins never land apart.
    Ok(lock.write(platform, section, &pins)?)
}

/// Tries, before anything is built or switched, that `lab.lock` can take `desired` (this
/// host's section): when it must change, it may not be read-only and its folder must take
/// a new file (the atomic write's temporary). Returns the lock file as the apply read it
/// (`lock`): what an undone apply puts back.
///
/// Errors: [`Error::LockReadOnly`]; an [`crate::error::IoError`] naming the lock file.
pub fn preflight_lock(layout: &Layout, desired: &Desired, platform: Platform, lock: &lockfile::LockText) -> Result<crate::generation::LockBackup, Error> {
    use crate::error::IoError;
    let (path, portable, pins) = lock_section(layout, &desired.file, &desired.resolved);
    let before = lock.raw().map(str::to_string);
    if lock.updated(platform, &portable, &pins).is_some() {
        if before.is_some() && std::fs::metadata(&path).is_ok_and(|m| m.permissions().readonly()) {
            return Err(Error::LockReadOnly { path });
        }
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        tempfile::Builder::new()
            .prefix(crate::sys::fsutil::ATOMIC_TMP_PREFIX)
            .tempfile_in(dir)
            .map_err(|e| IoError::new("write the lock file (its folder takes no new file)", &path, e))?;
    }
    Ok(crate::generation::LockBackup { path, before })
}

/// The lock file of `file`, and `resolved` as its section says it: toolkit roots in the home
/// written relative to [`super::HOME_TOKEN`], with the pins of the `from` sources.
fn lock_section(layout: &Layout, file: &ProfileFile, resolved: &Resolved) -> (std::path::PathBuf, Resolved, lockfile::Pins) {
    let path = lockfile::lock_path(&file.path);
    let home = stable_home(layout);
    let mut portable = resolved.clone();
    for p in &mut portable.profiles {
        if let Some(t) = to_home_token(&p.toolkit_root, &home) {
            p.toolkit_root = t;
        }
    }
    let entries = Store::new(layout).entries();
    let runtimes = crate::toolkit::wheel::list(layout);
    let mut pins = lockfile::Pins::new();
    for r in &resolved.profiles {
        let Some(profile) = file.profile(&r.name) else { continue };
        let mut pin = lockfile::Pin { sha256: None, url: None, source: None, from: None, cuda_wheels: Vec::new() };
        if let Some(from) = &profile.cudnn.from
            && let Some((_, meta)) = entries.iter().find(|(_, m)| m.id == r.cudnn_id)
        {
            pin.sha256 = meta.source.sha256.map(|s| s.to_string());
            (pin.url, pin.from) = match &from.value {
                crate::profile::Source::Location(l) if crate::sources::is_url(l) => (Some(l.clone()), None),
                crate::profile::Source::Location(l) => (None, Some(l.clone())),
                _ => (None, None),
            };
            // With a list of sources, the one that served this platform: a wheel came from
            // PyPI, an archive from NVIDIA.
            if !profile.cudnn.fallbacks.is_empty() {
                pin.source = Some(match meta.source.kind {
                    crate::store::extract::SourceKind::Wheel => crate::fetch::Source::Pypi,
                    _ => crate::fetch::Source::Nvidia,
                });
            }
        }
        if profile.cuda.from.is_some()
            && let Some((_, m)) = runtimes.iter().find(|(root, _)| crate::sys::paths::same_path(root, &r.toolkit_root))
        {
            pin.cuda_wheels = m.wheels.iter().map(|w| (w.project.clone(), w.version.clone(), w.sha256.clone())).collect();
        }
        if pin.sha256.is_some() || !pin.cuda_wheels.is_empty() {
            pins.insert(r.name.clone(), pin);
        }
    }
    (path, portable, pins)
}
