//! What an interrupted store command leaves: `<home>/store/.tmp/import-*` (a killed import),
//! `.tmp/remove-*` (a killed remove), `.downloads/download-*` (a killed download) and
//! `.cuenv-tmp*` files of an atomic write at the top of the store (and in `.build`, a staged
//! folder of linker scripts) (whatever their kind: a
//! link there is removed as a link).
//!
//! Invariants:
//! - Only a holder of the [`WriterLock`] deletes them: a live writer owns its staging. Under
//!   the lock, everything there belongs to a dead process, except this process's own
//!   `download-<pid>-*` folders (several downloads of one command).
//! - Readers only measure them ([`Store::leftover_bytes`]) to say how much space is reclaimable.

use std::fs;
use std::path::PathBuf;

use super::{Error, Store};
use crate::home::writer_lock::WriterLock;
use crate::sys::fsutil;

impl Store<'_> {
    /// Every leftover path: children of `.tmp` and `.downloads` (but this process's own
    /// downloads), and `.cuenv-tmp*` at the top of the store.
    fn leftovers(&self) -> Vec<PathBuf> {
        // Never through a link: a link (or a file) where `.tmp` or `.downloads` should be is
        // itself the leftover (`fsutil::entries_or_self`).
        let mut out = fsutil::entries_or_self(&self.layout.staging_dir());
        let mine = format!("download-{}-", std::process::id());
        let own = |p: &PathBuf| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&mine));
        out.extend(fsutil::entries_or_self(&self.layout.downloads_dir()).into_iter().filter(|p| !own(p)));
        if fs::symlink_metadata(self.layout.store_dir()).is_ok_and(|m| m.is_dir()) {
            out.extend(
                fsutil::entries_or_self(&self.layout.store_dir())
                    .into_iter()
                    .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(fsutil::ATOMIC_TMP_PREFIX))),
            );
        }
        // A killed apply's staged linker-script folder (`.build/.cuenv-tmp-*`, env::build).
        let build = self.layout.store_dir().join(".build");
        if fs::symlink_metadata(&build).is_ok_and(|m| m.is_dir()) {
            out.extend(
                fsutil::entries_or_self(&build)
                    .into_iter()
                    .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(fsutil::ATOMIC_TMP_PREFIX))),
            );
        }
        out
    }

    /// Bytes held by leftovers of interrupted commands (see the module docs). Needs no lock;
    /// unreadable parts count as 0.
    pub fn leftover_bytes(&self) -> u64 {
        self.leftovers().iter().map(|p| tree_size(p)).sum()
    }

    /// For read-only commands (`status`): `N MiB of leftovers ...; the next ... removes them`,
    /// or `None` when there are none, or when another cuenv holds the writer lock (then they
    /// may be its live staging, not leftovers).
    pub fn leftover_note(&self) -> Option<String> {
        let leftovers = self.leftovers();
        if !leftovers.is_empty() && WriterLock::try_acquire(self.layout).is_none() && self.layout.home().is_dir() {
            return None;
        }
        match leftovers.iter().map(|p| tree_size(p)).sum() {
            0 if leftovers.is_empty() => None,
            n => Some(format!(
                "{} of leftovers from an interrupted command; the next `cuenv gc` or store command (`store list` too) removes them",
                fsutil::human_size(n)
            )),
        }
    }

    /// Deletes the leftovers of interrupted commands (see the module docs); returns the bytes
    /// freed. Call it right after taking the writer lock.
    ///
    /// Errors: [`Error::Write`] naming the leftover that could not be deleted.
    pub fn clean_leftovers(&self, _writer: &WriterLock) -> Result<u64, Error> {
        let mut freed = 0;
        for p in self.leftovers() {
            let n = tree_size(&p);
            fsutil::remove_tree(&p).map_err(|source| Error::Write { path: p.clone(), source })?;
            freed += n;
        }
        Ok(freed)
    }
}

/// Total size of the files under `p` (links not followed, `p` itself included).
fn tree_size(p: &std::path::Path) -> u64 {
    walkdir::WalkDir::new(p)
        .follow_root_links(false)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}
