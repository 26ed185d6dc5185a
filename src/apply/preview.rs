//! `cuenv plan` (and `apply --dry-run`): stages 1–4 of the pipeline without effects. What a
//! `from` source still has to fetch is looked up (metadata only) and listed first; every
//! error that resolution, the sources or the conda envs would meet is reported at once
//! ([`desire::validate_all`]); when resolution needs the fetches, the preview stops there and
//! says so instead of failing.

use std::path::Path;

use super::Error;
use super::desire::{self, Desired};
use crate::change::Change;
use crate::cudnn::platform::Platform;
use crate::home::layout::Layout;
use crate::{profile, sources};

/// What `plan` shows.
#[derive(Debug)]
pub enum Preview {
    /// Resolution needs what is still to be fetched: the fetches, and why it cannot resolve yet.
    Pending {
        /// One `+ fetch` change per source to fetch.
        fetches: Vec<Change>,
        /// The resolution error the fetches would cure.
        unresolved: String,
    },
    /// The fetches (if any) and the changes to the views and shims.
    Ready {
        /// Fetches first, then the plan ([`super::plan::plan`]).
        changes: Vec<Change>,
        /// The resolution behind them.
        desired: Box<Desired>,
        /// The current generation and its manifest, as the preview read them.
        current: Option<(u64, crate::generation::Manifest)>,
    },
}

/// Previews applying `file` on this host; touches nothing. `locked`: fail with
/// [`super::LockedDrift`] where `lab.lock` would change.
pub fn preview(layout: &Layout, file: &Path, locked: bool) -> Result<Preview, Error> {
    let parsed = profile::load(file)?;
    let host = Platform::host().ok_or(Error::UnsupportedPlatform)?;
    // Everything that can be known without downloading: the sources' metadata, resolution
    // against what exists plus what would be fetched, the conda envs; every error at once.
    let current = crate::generation::current_with_manifest(layout);
    let lock_text = crate::profile::lockfile::LockText::read(&crate::profile::lockfile::lock_path(&parsed.path))?;
    let pre = sources::preflight(layout, &parsed, host, Some(&sources::endpoints(&parsed, false)));
    let fetches = pre.fetches.clone();
    desire::validate_all(layout, &parsed, host, pre)?;
    // --locked with no lock (or no section, or unpinned profiles) fails here too, not only
    // once resolution can run.
    if locked {
        let lock = lock_text.section(host)?;
        if let Some(drift) = desire::missing_section(lock.as_ref(), &parsed, host).or_else(|| desire::unpinned_drift(lock.as_ref(), &parsed, host)) {
            return Err(drift.into());
        }
    }
    let mode = desire::planned_mode(&parsed, current.as_ref().map(|(_, m)| m));
    let desired = match desire::desire_in(layout, parsed, locked, mode, &lock_text) {
        Ok(d) => d,
        // What is still to be fetched cannot be resolved yet: show the fetches.
        Err(e) if !fetches.is_empty() => return Ok(Preview::Pending { fetches, unresolved: e.to_string() }),
        Err(e) => return Err(e),
    };
    let mut changes = fetches;
    changes.extend(super::plan::plan(current.as_ref(), &desired));
    Ok(Preview::Ready { changes, desired: Box::new(desired), current })
}
