//! `cuenv lock FILE [--platform P]...`: stages 1–3 and 8 of the pipeline for any platform —
//! fetch what each platform's `from` sources name (the bytes pinned in lab.lock must match),
//! resolve, and write those platforms' sections of lab.lock. Builds no generation.
//!
//! All or nothing: with `--locked`, every platform's section must exist before anything is
//! fetched; every platform is fetched and resolved before any section is written, so a
//! failure leaves lab.lock as it was.

use std::path::Path;

use serde::Serialize;

use super::Error;
use crate::binfmt::Platform;
use crate::layout::Layout;
use crate::progress::Progress;
use crate::resolve::Resolved;
use crate::writer_lock::WriterLock;
use crate::{lockfile, profile, sources};

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
}

/// Locks `file` for `platforms` (sorted, each once): see the module doc. `locked`: fail
/// instead of changing lab.lock; `offline`: never use the network.
pub fn lock(
    layout: &Layout,
    writer: &WriterLock,
    file: &Path,
    platforms: &[Platform],
    locked: bool,
    offline: bool,
    progress: &dyn Progress,
) -> Result<Vec<PlatformLock>, Error> {
    let parsed = profile::load(file)?;
    let lock_path = lockfile::lock_path(file);
    let mut platforms = platforms.to_vec();
    platforms.sort_by_key(|p| p.as_str());
    platforms.dedup();
    if locked {
        // Nothing to verify against: say so before fetching anything, for every platform.
        for &platform in &platforms {
            if let Some(drift) = super::missing_section(lockfile::read(&lock_path, platform)?.as_ref(), &parsed, platform) {
                return Err(drift.into());
            }
        }
    }
    let endpoints = sources::endpoints(&parsed, offline);
    let mut done = Vec::new();
    for &platform in &platforms {
        let fetched = sources::ensure(layout, writer, &parsed, platform, &lockfile::read_pins(&lock_path, platform), &endpoints, progress)?;
        let locking = super::resolve_locked(layout, &parsed, platform, locked)?;
        done.push((platform, fetched, locking));
    }
    let mut out = Vec::new();
    for (platform, fetched, locking) in done {
        let changed = if locked { false } else { super::write_lock_section(layout, &parsed, platform, &locking.resolved)? };
        out.push(PlatformLock { changed, changes: locking.changes, fetched, platform, resolved: locking.resolved });
    }
    Ok(out)
}
