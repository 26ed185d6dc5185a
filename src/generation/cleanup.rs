//! Removing generations: a generation's tree (links removed as links, never followed), a
//! whole generation in one rename, and the leftovers of builds and deletions cut short.

use super::switch::pointed;
use super::*;

/// Deletes a generation folder: links are removed as links (never followed), copies and
/// files normally. A `dir` that is itself a link or a file (planted, or left by something
/// else) is removed as such, and nothing it points at is touched.
pub fn remove_tree(dir: &Path) -> Result<(), Error> {
    use crate::error::IoError;
    if fs::symlink_metadata(dir).is_ok_and(|m| !m.is_dir()) {
        return fsutil::remove_tree(dir).map_err(|e| IoError::new("delete", dir, e).into());
    }
    fsutil::make_tree_writable(dir).ok();
    if let Ok(rd) = fs::read_dir(dir.join("views")) {
        for v in rd.flatten() {
            for name in crate::env::view::VIEW_LINKS {
                let p = v.path().join(name);
                if link::is_link(&p) {
                    link::remove(&p).map_err(|e| IoError::new("remove the link", &p, e))?;
                }
            }
        }
    }
    fault_point("gc-links");
    fs::remove_dir_all(dir).map_err(|e| IoError::new("delete", dir, e).into())
}

/// Deletes generation `n` as one step for every reader: one rename moves it to
/// `generations/.trash-<n>`, then it is deleted there. A kill leaves either the whole
/// generation or a trash folder, which the next writer removes ([`clean_leftovers`]).
/// The current generation is never deleted (the caller's keep rules ensure it).
pub fn delete(layout: &Layout, n: u64) -> Result<(), Error> {
    use crate::error::IoError;
    let (dir, trash) = (layout.generation_dir(n), layout.generation_trash(n));
    if trash.exists() {
        remove_tree(&trash)?;
    }
    fsutil::rename_with_retry(&dir, &trash).map_err(|e| IoError::new("move aside", &dir, e))?;
    fsutil::sync_dir(&layout.generations_dir());
    fault_point("gc-trashed");
    remove_tree(&trash)
}

/// Removes what an interrupted build (`generations/.tmp-<n>`), deletion
/// (`generations/.trash-<n>`), atomic write (`.cuenv-tmp*` in the home and in every
/// generation's folder, and, once its writer is gone or it is a minute old, in the conda env
/// shim folders and lab folders of every generation and the followed files' folders) or link
/// replacement (`.profiles.new`, `.active.new`) left behind. Needs the writer lock (no live
/// cuenv owns them then). Returns how many it removed.
pub fn clean_leftovers(layout: &Layout) -> Result<usize, Error> {
    use crate::home::layout::{GENERATION_STAGING_PREFIX, GENERATION_TRASH_PREFIX};
    use std::time::Duration;
    let mut removed = 0;
    for e in fs::read_dir(layout.generations_dir()).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // A link or a file named like a generation is none (`list` skips it): planted, removed.
        let not_folder = name.parse::<u64>().is_ok() && !e.file_type().is_ok_and(|t| t.is_dir());
        if name.starts_with(GENERATION_STAGING_PREFIX) || name.starts_with(GENERATION_TRASH_PREFIX) || not_folder {
            remove_tree(&e.path())?;
            removed += 1;
        }
    }
    // The home's own: half-written files and the staging links of a switch or a `use`
    // (a switch in progress was finished or undone by `recover` before this runs).
    let home = layout.home();
    removed += fsutil::remove_atomic_leftovers(home, Duration::ZERO).map_err(io_at("clean up", home))?;
    // A half-saved `check.json` (or any atomic write) inside a kept generation.
    for n in list(layout) {
        let dir = layout.generation_dir(n);
        removed += fsutil::remove_atomic_leftovers(&dir, Duration::ZERO).map_err(io_at("clean up", &dir))?;
    }
    // The staged links, and the pointer files of the link-free mode, staged by a killed
    // switch or `use`: whatever sits there (a link removed as a link, a planted folder or FIFO
    // too), so that the next switch can stage again.
    for staging in [layout.profiles_staging(), layout.active_staging(), layout.current_staging()] {
        if fs::symlink_metadata(&staging).is_ok() {
            fsutil::remove_tree(&staging).map_err(io_at("remove", &staging))?;
            removed += 1;
        }
    }
    // A `profiles` link a kill left behind a switch to a link-free generation (the pointer
    // file wins; the link only points at the generation before).
    let profiles = layout.profiles_dir();
    if pointed(layout).is_some() && link::is_link(&profiles) {
        link::remove(&profiles).map_err(io_at("remove the link", &profiles))?;
        removed += 1;
    }
    // The folder of apply's link test, left by a kill during it (under the writer lock, as here).
    let probe = layout.link_probe();
    if fs::symlink_metadata(&probe).is_ok() {
        remove_tree(&probe)?;
        removed += 1;
    }
    // Folders other homes may write too (the conda envs' shim folders, the lab folder):
    // only files no live cuenv is still writing.
    // Every generation's envs and lab folder: a kill during a rollback can leave a file in an
    // env the current generation no longer names.
    let mut dirs: Vec<PathBuf> = Vec::new();
    for m in list(layout).into_iter().filter_map(|n| read(layout, n).ok()) {
        dirs.extend(m.shims.iter().filter_map(|s| s.path.parent().map(Path::to_path_buf)));
        dirs.extend(m.source.parent().map(Path::to_path_buf));
    }
    dirs.extend(crate::env::follow::folders(layout));
    dirs.sort();
    dirs.dedup();
    for d in dirs {
        // Pinned now, before the first read: a swap later in this command is refused.
        fsutil::pin_folder(&d);
        removed += fsutil::remove_atomic_leftovers(&d, Duration::from_secs(60)).map_err(io_at("clean up", &d))?;
    }
    Ok(removed)
}
