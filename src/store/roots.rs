//! The record of store entries added by hand (`cuenv store add`, `cuenv store fetch`): gc
//! roots until `cuenv store remove` (docs/design.md, "Store": entries added by hand stay until removed).
//!
//! The record is `<home>/store/.roots.toml`, a table `[hand_added]` of `"<id>" = "<name>"`.
//! Entries that `apply` imports for a profile are not in it; gc collects them once no kept
//! generation names them.
//!
//! Invariants:
//! - Written only under the [`WriterLock`], atomically (`fsutil::write_atomic`).
//! - A missing file is a store from before the record existed: every entry is a root (the
//!   safe default). The first writer to import anything seeds the file with every entry present.
//! - A hand-added id is recorded before the entry's commit rename, so a published hand-added
//!   entry is always a root; an id whose entry is absent (a crash before that rename, or a
//!   remove) is harmless and pruned by the next write.
//! - An unreadable file: readers treat every entry as a root; a hand import fails naming it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{Error, Store};
use crate::home::writer_lock::WriterLock;
use crate::sys::fsutil;

/// The file name of the record, at the top of `<home>/store/` (hidden: no entry name starts with `.`).
pub const ROOTS_FILE: &str = ".roots.toml";

const HEADER: &str = "# Store entries added by hand (`cuenv store add`, `cuenv store fetch`): `cuenv gc` keeps them\n# until `cuenv store remove`. Written by cuenv; without this file every entry is kept.\n";

#[derive(Debug, Default, Serialize, Deserialize)]
struct RootsFile {
    #[serde(default)]
    hand_added: BTreeMap<String, String>,
}

impl Store<'_> {
    /// The path of the record of hand-added entries.
    pub fn roots_path(&self) -> PathBuf {
        self.layout.store_dir().join(ROOTS_FILE)
    }

    /// The record: `None` when the file does not exist.
    fn read_roots(&self) -> Result<Option<BTreeMap<String, String>>, Error> {
        let path = self.roots_path();
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::BadRoots { path, detail: e.to_string() }),
        };
        let file: RootsFile = toml::from_str(&text).map_err(|e| Error::BadRoots { path: path.clone(), detail: e.to_string() })?;
        Ok(Some(file.hand_added))
    }

    /// The ids of the entries that are gc roots because they were added by hand (`store add`,
    /// `store fetch`), until `store remove`. Without a readable record (a store from before
    /// it existed, or a damaged one), every entry's id: the safe default.
    pub fn hand_added_ids(&self) -> BTreeSet<String> {
        match self.read_roots() {
            Ok(Some(map)) => map.into_keys().collect(),
            Ok(None) | Err(_) => self.entries().into_iter().map(|(_, m)| m.id).collect(),
        }
    }

    /// Rewrites the record: seeded with every entry when missing, ids whose entry folder is gone
    /// pruned, then `edit` applied. Writes only when something changed.
    fn update_roots(&self, _writer: &WriterLock, edit: impl FnOnce(&mut BTreeMap<String, String>)) -> Result<(), Error> {
        let existing = self.read_roots()?;
        let missing = existing.is_none();
        let mut map = existing.unwrap_or_else(|| self.entries().into_iter().map(|(_, m)| (m.id, m.name)).collect());
        let before = map.clone();
        // An entry folder's name ends with the first 12 hex digits of its id (readable
        // entry.toml or not): an id is pruned only when no folder carries it.
        let suffixes: BTreeSet<String> =
            self.list().into_iter().filter_map(|(d, _)| d.file_name()?.to_string_lossy().rsplit('-').next().map(str::to_string)).collect();
        map.retain(|id, _| id.get(..12).is_some_and(|s| suffixes.contains(s)));
        edit(&mut map);
        if !missing && map == before {
            return Ok(());
        }
        let store = self.layout.store_dir();
        fs::create_dir_all(&store).map_err(|source| Error::Write { path: store.clone(), source })?;
        let path = self.roots_path();
        let body = toml::to_string(&RootsFile { hand_added: map }).map_err(|e| Error::Write { path: path.clone(), source: crate::error::unserializable(e) })?;
        let text = format!("{HEADER}{body}");
        fsutil::write_atomic(&path, text.as_bytes()).map_err(|source| Error::Write { path, source })
    }

    /// Records the entry `id` (folder `name`) as added by hand.
    ///
    /// Errors: [`Error::BadRoots`] when the record is unreadable; [`Error::Write`].
    pub(crate) fn record_hand_added(&self, writer: &WriterLock, id: &str, name: &str) -> Result<(), Error> {
        self.update_roots(writer, |m| {
            m.insert(id.to_string(), name.to_string());
        })
    }

    /// Before an import that is not by hand (`apply`): makes sure the record exists, so that
    /// the new entry does not become a root by the missing-file default. A damaged record is
    /// left as it is (every entry stays a root).
    pub(crate) fn ensure_roots(&self, writer: &WriterLock) -> Result<(), Error> {
        match self.read_roots() {
            Ok(Some(_)) | Err(_) => Ok(()),
            Ok(None) => self.update_roots(writer, |_| {}),
        }
    }

    /// After an entry folder is gone: drops ids without a folder. A damaged record is left alone.
    pub(crate) fn prune_roots(&self, writer: &WriterLock) -> Result<(), Error> {
        match self.read_roots() {
            Err(_) => Ok(()),
            Ok(_) => self.update_roots(writer, |_| {}),
        }
    }
}
