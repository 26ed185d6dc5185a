//! `cuenv lock FILE [--platform P]...`: stages 1–3 and 8 of the pipeline for any platform —
//! fetch what each platform's `from` sources name (the bytes pinned in lab.lock must match),
//! resolve, and write those platforms' sections of lab.lock. Builds no generation.
//!
//! All or nothing: with `--locked`, every platform's section must exist before anything is
//! fetched; every platform is fetched and resolved before any section is written, so a
//! failure leaves lab.lock as it was. A source that cannot be reached fails the whole lock,
//! unless `--allow-unreachable`: then that profile keeps the section's pin if it has one, or
//! is written unpinned (`unpinned = "<why>"`), and the first `apply` on that platform pins it.

use std::path::Path;

use serde::Serialize;

use super::Error;
use super::record::Held;
use crate::cudnn::platform::Platform;
use crate::home::layout::Layout;
use crate::home::writer_lock::WriterLock;
use crate::resolve::Resolved;
use crate::sys::progress::Progress;
use crate::{profile, profile::lockfile, sources};

/// One platform's section, as `cuenv lock` made it.
#[derive(Debug, Serialize)]
pub struct PlatformLock {
    /// Whether its section of lab.lock was rewritten.
    pub changed: bool,
    /// How the resolution differs from what the section said (`+`/`-`/`~` lines).
    pub changes: Vec<String>,
    /// One `+` line per thing fetched or imported.
    pub fetched: Vec<String>,
    /// The platform.
    pub platform: Platform,
    /// The resolution written.
    pub resolved: Resolved,
    /// The profiles whose sources could not be reached (`--allow-unreachable`), with why:
    /// each keeps the section's pin when it has one, else is written unpinned.
    pub unreachable: Vec<Unreachable>,
}

/// A profile `cuenv lock --allow-unreachable` could not pin for a platform.
#[derive(Debug, Serialize)]
pub struct Unreachable {
    /// The profile.
    pub profile: String,
    /// Why (which sources were tried, and what each answered).
    pub reason: String,
    /// True when the section already pinned it (that pin is kept); false: written unpinned.
    pub kept: bool,
}

/// Locks `file` for `platforms` (sorted, each once): see the module doc. `locked`: fail
/// instead of changing lab.lock; `offline`: never use the network; `allow_unreachable`: a
/// profile whose sources cannot be reached does not fail the lock: the section keeps its pin
/// if it has one, else names it unpinned (without it, one such profile fails every platform).
#[allow(clippy::too_many_arguments)]
pub fn lock(
    layout: &Layout,
    writer: &WriterLock,
    file: &Path,
    platforms: &[Platform],
    locked: bool,
    offline: bool,
    allow_unreachable: bool,
    progress: &dyn Progress,
) -> Result<Vec<PlatformLock>, Error> {
    let parsed = profile::load(file)?;
    let lock_path = lockfile::lock_path(file);
    // Read once: every platform's section, pins and write go through this snapshot.
    let mut lock_text = lockfile::LockText::read(&lock_path)?;
    let mut platforms = platforms.to_vec();
    platforms.sort_by_key(|p| p.as_str());
    platforms.dedup();
    if locked {
        // Nothing to verify against: say so before fetching anything, for every platform.
        for &platform in &platforms {
            let section = lock_text.section(platform)?;
            if let Some(drift) = super::missing_section(section.as_ref(), &parsed, platform) {
                return Err(drift.into());
            }
            // An unpinned profile has nothing to verify against either, unless it is still
            // unreachable and the flag allows that (checked after fetching).
            if !allow_unreachable && let Some(drift) = super::desire::unpinned_drift(section.as_ref(), &parsed, platform) {
                return Err(drift.into());
            }
        }
    }
    let endpoints = sources::endpoints(&parsed, offline);
    let mut done = Vec::new();
    for &platform in &platforms {
        let pins = lock_text.pins(platform);
        let ensured = sources::ensure_reachable(layout, writer, &parsed, platform, &pins, &endpoints, allow_unreachable, progress)?;
        let section = lock_text.section(platform)?.unwrap_or_default();
        let mut held = Held::default();
        let mut unreachable = Vec::new();
        let mut new_unpinned = Vec::new();
        for (name, reason) in &ensured.unreachable {
            let kept = section.profile(name).cloned();
            unreachable.push(Unreachable { profile: name.clone(), reason: reason.clone(), kept: kept.is_some() });
            match kept {
                Some(l) => held.kept.push((l, pins.get(name).cloned())),
                None => {
                    if section.unpinned(name).is_none() {
                        new_unpinned.push(format!("+ {name}: unpinned ({reason})"));
                    }
                    held.unpinned.push(lockfile::UnpinnedProfile { name: name.clone(), reason: reason.clone() });
                }
            }
        }
        if locked && !new_unpinned.is_empty() {
            let mut msg = format!("{} does not match {} for {platform}:", lock_path.display(), file.display());
            for c in &new_unpinned {
                msg.push_str(&format!("\n  {c}"));
            }
            return Err(super::LockedDrift::new(msg, file, platform, false).into());
        }
        let names: Vec<String> = ensured.unreachable.iter().map(|(n, _)| n.clone()).collect();
        // (A new unpinned profile is reported through `unreachable`, not as a change line.)
        let locking = super::desire::resolve_locked_holding(layout, &parsed, platform, locked, &names, &lock_text)?;
        done.push((platform, ensured.lines, locking, held, unreachable));
    }
    let mut out = Vec::new();
    for (platform, fetched, locking, held, unreachable) in done {
        let changed = if locked { false } else { super::record::write_lock_section_held(layout, &parsed, platform, &locking.resolved, &held, &mut lock_text)? };
        out.push(PlatformLock { changed, changes: locking.changes, fetched, platform, resolved: locking.resolved, unreachable });
    }
    Ok(out)
}
