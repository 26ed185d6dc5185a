//! `gc`: which generations and store entries to delete ([`gc_plan`]), and deleting them
//! ([`gc`]). Generations are kept by [`generation::gc_keep`]; a store entry is kept while a
//! kept generation's manifest, or any platform's section of a kept generation's lock file,
//! names it. Not part of the apply pipeline; a generation disappears in one rename
//! ([`generation::delete`]).

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::generation;
use crate::home::layout::Layout;
use crate::home::writer_lock::WriterLock;
use crate::profile::lockfile;

/// Why `gc` or `store remove` failed: deleting a generation, or the store refusing or failing
/// to remove an entry (`store::Error::InUse` names the generations that still use it).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A generation could not be read or deleted.
    #[error(transparent)]
    Generation(#[from] generation::Error),
    /// The store could not find or remove an entry.
    #[error(transparent)]
    Store(#[from] crate::store::Error),
}

crate::error::diagnose!(impl Diagnose for Error { transparent Generation, Store; });

/// What `gc` deletes.
#[derive(Debug, Default)]
pub struct GcPlan {
    /// How many generations are kept.
    pub kept: usize,
    /// The generations to delete (ascending).
    pub generations: Vec<u64>,
    /// The store entries to delete: folder and name.
    pub entries: Vec<(PathBuf, String)>,
    /// Bytes each doomed generation holds on disk (links counted as links, not followed).
    pub generation_bytes: std::collections::BTreeMap<u64, u64>,
    /// Bytes each doomed store entry holds, by name.
    pub entry_bytes: std::collections::BTreeMap<String, u64>,
}

impl GcPlan {
    /// The bytes generation `n` holds (0 when unknown).
    pub fn bytes_of_generation(&self, n: u64) -> u64 {
        self.generation_bytes.get(&n).copied().unwrap_or(0)
    }
    /// The bytes store entry `name` holds (0 when unknown).
    pub fn bytes_of_entry(&self, name: &str) -> u64 {
        self.entry_bytes.get(name).copied().unwrap_or(0)
    }
    /// Everything `gc` would free, in bytes.
    pub fn total_bytes(&self) -> u64 {
        self.generation_bytes.values().chain(self.entry_bytes.values()).sum()
    }
}

/// Bytes under `dir` (files and links as they are; links are not followed).
fn tree_bytes(dir: &std::path::Path) -> u64 {
    walkdir::WalkDir::new(dir).into_iter().flatten().filter_map(|e| e.metadata().ok()).filter(|m| !m.is_dir()).map(|m| m.len()).sum()
}

/// Which generations and store entries `gc` deletes: generations by [`generation::gc_keep`];
/// store entries that no kept generation uses and that no platform's section of a kept
/// generation's lock file names (`cuenv lock --platform`).
pub fn gc_plan(layout: &Layout, keep: usize) -> GcPlan {
    let all = generation::list(layout);
    let (kept, doomed) = generation::gc_keep(&all, generation::current(layout), generation::previous(layout), keep);
    let mut needed = BTreeSet::new();
    for n in &kept {
        if let Ok(m) = generation::read(layout, *n) {
            needed.extend(m.profiles.iter().map(|p| p.cudnn_id.clone()));
            for (_, section) in lockfile::read_all(&lockfile::lock_path(&m.source)).unwrap_or_default() {
                needed.extend(section.profiles.iter().map(|p| p.cudnn_id.clone()));
            }
        }
    }
    let store = crate::store::Store::new(layout);
    // Entries added by hand (`store add`, `store fetch`) stay until `store remove`.
    needed.extend(store.hand_added_ids());
    let entries: Vec<(PathBuf, String)> = store.entries().into_iter().filter(|(_, m)| !needed.contains(&m.id)).map(|(d, m)| (d, m.name)).collect();
    let generation_bytes = doomed.iter().map(|n| (*n, tree_bytes(&layout.generation_dir(*n)))).collect();
    let entry_bytes = entries.iter().map(|(dir, name)| (name.clone(), tree_bytes(dir))).collect();
    GcPlan { kept: kept.len(), generations: doomed, entries, generation_bytes, entry_bytes }
}

/// One thing `gc` deleted.
pub enum Deleted<'a> {
    /// A generation.
    Generation(u64),
    /// A store entry, by name.
    Entry(&'a str),
}

/// Deletes what `plan` names, generations first; `done` hears of each deletion as it happens.
pub fn gc(layout: &Layout, writer: &WriterLock, plan: &GcPlan, done: &mut dyn FnMut(Deleted)) -> Result<(), Error> {
    for n in &plan.generations {
        generation::delete(layout, *n)?;
        done(Deleted::Generation(*n));
    }
    let store = crate::store::Store::new(layout);
    for (dir, name) in &plan.entries {
        store.remove(writer, dir)?;
        done(Deleted::Entry(name));
    }
    Ok(())
}

/// `cuenv store remove ID`: deletes the store entry `id` names (a name, or an id prefix of at
/// least 4 hex digits), unless a generation still uses it (`store::Error::InUse`, naming the
/// first such generation: deleting it would leave that generation's views dangling). Returns
/// what was removed. The entry stops being a hand-added gc root with it.
pub fn remove_entry(layout: &Layout, writer: &WriterLock, id: &str) -> Result<crate::store::entry::EntryMeta, Error> {
    let store = crate::store::Store::new(layout);
    let (dir, meta) = store.find(id)?;
    let current = generation::current(layout);
    let mut users: Vec<(u64, bool)> = generation::list(layout)
        .into_iter()
        .filter(|n| generation::read(layout, *n).is_ok_and(|m| m.profiles.iter().any(|p| p.cudnn_id == meta.id)))
        .map(|n| (n, Some(n) == current))
        .collect();
    if !users.is_empty() {
        // The current generation first, then the newest.
        users.sort_by_key(|(n, cur)| (!cur, std::cmp::Reverse(*n)));
        return Err(crate::store::Error::InUse { name: meta.name.clone(), generations: users }.into());
    }
    store.remove(writer, &dir)?;
    Ok(meta)
}
/// Which generations `gc` keeps and which it deletes: the `keep` newest of `all` (ascending
/// numbers), plus the current and the previous one whatever their age. Pure; like nix's
/// `deleteGenerationsGreaterThan`, but the live ones are never candidates.
pub fn gc_keep(all: &[u64], current: Option<u64>, previous: Option<u64>, keep: usize) -> (std::collections::BTreeSet<u64>, Vec<u64>) {
    let mut kept: std::collections::BTreeSet<u64> = all.iter().rev().take(keep).copied().collect();
    kept.extend(current);
    kept.extend(previous);
    let doomed = all.iter().copied().filter(|n| !kept.contains(n)).collect();
    (kept, doomed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gc_keeps_the_newest_and_the_live_generations() {
        let (kept, doomed) = gc_keep(&[1, 2, 3, 4, 5, 6], Some(2), Some(1), 3);
        assert_eq!(kept.into_iter().collect::<Vec<_>>(), [1, 2, 4, 5, 6]);
        assert_eq!(doomed, [3]);
        let (kept, doomed) = gc_keep(&[1, 2, 3], Some(3), Some(2), 0);
        assert_eq!(kept.into_iter().collect::<Vec<_>>(), [2, 3]);
        assert_eq!(doomed, [1]);
        let (kept, doomed) = gc_keep(&[], None, None, 3);
        assert!(kept.is_empty() && doomed.is_empty());
    }
}
