//! The index from an archive's SHA-256 to the entry imported from it:
//! `<home>/store/.sources.toml`, one `[sources.<sha256>]` table with `entry` (the folder name)
//! and `size` (the archive's bytes) per entry made from an archive.
//!
//! It lets a re-import of bytes already in the store hash the archive once and stop there
//! ([`Store::find_by_source`]), and lets `fetch` skip a download, without reading every
//! `entry.toml`.
//!
//! Crash safety: the index is derived data and never trusted alone. A line is written (one
//! atomic replace, under the writer lock) before the entry's commit rename, and lines whose
//! folder is gone are dropped by the next write and by `store remove` / `gc` after their rename;
//! so after any crash every published entry has its line, and a line may name an entry that
//! is not there. A lookup reads the named entry's own `entry.toml` and accepts it only when
//! that says the same SHA-256; a missing or unreadable index makes every lookup read the
//! entries themselves (and the next write rebuilds it from them).

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use super::entry::EntryMeta;
use super::{Error, Store};
use crate::home::writer_lock::WriterLock;
use crate::sys::fsutil;
use crate::sys::sha256::Sha256;

/// The index's file name under `<home>/store`.
pub const SOURCES_FILE: &str = ".sources.toml";

/// One archive the store imported.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Source {
    /// The entry's folder name.
    entry: String,
    /// The archive's size in bytes.
    size: u64,
}

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Index {
    #[serde(default)]
    sources: BTreeMap<Sha256, Source>,
}

impl Store<'_> {
    /// `<home>/store/.sources.toml`.
    pub fn sources_path(&self) -> PathBuf {
        self.layout.store_dir().join(SOURCES_FILE)
    }

    /// The index as written; `None` when it is missing or unreadable.
    fn read_sources(&self) -> Option<BTreeMap<Sha256, Source>> {
        let text = fs::read_to_string(self.sources_path()).ok()?;
        toml::from_str::<Index>(&text).ok().map(|i| i.sources)
    }

    /// The index rebuilt from every entry's `entry.toml`.
    fn scan_sources(&self) -> BTreeMap<Sha256, Source> {
        self.entries().into_iter().filter_map(|(_, m)| Some((m.source.sha256?, Source { entry: m.name.clone(), size: m.source.size? }))).collect()
    }

    /// True when some entry was imported from an archive of exactly `size` bytes (only then
    /// is hashing an input before extracting it worth it).
    pub(crate) fn holds_source_of_size(&self, size: u64) -> bool {
        self.read_sources().unwrap_or_else(|| self.scan_sources()).values().any(|s| s.size == size)
    }

    /// The entry imported from an archive whose SHA-256 is `sha256`, checked
    /// against that entry's own `entry.toml`; the entries themselves are read when the index
    /// is missing, unreadable, or names an entry that is gone or says otherwise.
    pub fn find_by_source(&self, sha256: &Sha256) -> Option<(PathBuf, EntryMeta)> {
        let want = *sha256;
        let index = self.read_sources();
        if let Some(hit) = index.as_ref().and_then(|i| i.get(&want)) {
            let dir = self.layout.store_dir().join(&hit.entry);
            // A link planted at the top of the store is never an entry.
            if fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir())
                && let Ok(meta) = EntryMeta::read(&dir)
                && meta.source.sha256 == Some(want)
            {
                return Some((dir, meta));
            }
        } else if index.is_some() {
            // Every published entry has its line (written before the commit rename).
            return None;
        }
        self.entries().into_iter().find(|(_, m)| m.source.sha256 == Some(want))
    }

    /// Rewrites the index (atomically), dropping lines whose entry folder
    /// is gone; rebuilt from the entries when missing or unreadable. Needs the writer lock.
    /// `adding` names an entry about to be published, kept although its folder is not there yet.
    fn update_sources(&self, _writer: &WriterLock, adding: Option<(Sha256, Source)>) -> Result<(), Error> {
        let mut sources = self.read_sources().unwrap_or_else(|| self.scan_sources());
        let store = self.layout.store_dir();
        sources.retain(|_, s| store.join(&s.entry).is_dir());
        if let Some((sha256, source)) = adding {
            sources.insert(sha256, source);
        }
        let path = self.sources_path();
        let text = toml::to_string(&Index { sources }).map_err(|e| Error::Write { path: path.clone(), source: crate::error::unserializable(e) })?;
        fsutil::write_atomic(&path, text.as_bytes()).map_err(|source| Error::Write { path, source })
    }

    /// Records that the entry `name`, about to be published, was imported from an archive of
    /// `size` bytes whose SHA-256 is `sha256`. Written before the commit rename.
    pub(crate) fn record_source(&self, writer: &WriterLock, sha256: Sha256, size: u64, name: &str) -> Result<(), Error> {
        self.update_sources(writer, Some((sha256, Source { entry: name.to_string(), size })))
    }

    /// Drops the lines of entries that are gone (after `store remove` / `gc`'s rename).
    pub(crate) fn prune_sources(&self, writer: &WriterLock) -> Result<(), Error> {
        if !self.sources_path().exists() {
            return Ok(());
        }
        self.update_sources(writer, None)
    }
}
