//! Small file-system helpers shared by the modules that write: atomic file writes,
//! renames retried while Windows antivirus or indexers hold a new file (errors 5 and 32),
//! and making a tree read-only or writable again.

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

/// Renames `from` to `to`, retrying with backoff (10 ms doubling, 6 tries, about 0.6 s)
/// when the OS reports a transient lock: `PermissionDenied` (Windows error 5) or a
/// sharing violation (Windows error 32). Other errors return at once.
pub fn rename_with_retry(from: &Path, to: &Path) -> io::Result<()> {
    let mut delay = Duration::from_millis(10);
    let mut tries = 0;
    loop {
        match fs::rename(from, to) {
            Ok(()) => return Ok(()),
            Err(e) if tries < 6 && is_transient(&e) => {
                std::thread::sleep(delay);
                delay *= 2;
                tries += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

fn is_transient(e: &io::Error) -> bool {
    cfg!(windows) && (e.kind() == io::ErrorKind::PermissionDenied || e.raw_os_error() == Some(32))
}

/// The name prefix of [`write_atomic`]'s temporary files (what a kill can leave behind).
pub const ATOMIC_TMP_PREFIX: &str = ".cuenv-tmp";

/// Writes `bytes` to `path` atomically: a temporary file in the same folder, `sync_all`,
/// then a rename over `path`. Readers see the old content or the new, never a mix.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(ATOMIC_TMP_PREFIX).tempfile_in(dir)?;
    // tempfile creates 0600 files: keep the replaced file's permissions, else 0644 (umask applies
    // to neither, so be explicit).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(path).map(|m| m.permissions().mode() & 0o7777).unwrap_or(0o644);
        tmp.as_file().set_permissions(fs::Permissions::from_mode(mode))?;
    }
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    let tmp_path = tmp.into_temp_path();
    rename_with_retry(&tmp_path, path)?;
    // The rename consumed the temporary path; forget it so drop does not try to delete it.
    std::mem::forget(tmp_path);
    sync_dir(dir);
    Ok(())
}

/// Removes the temporary files [`write_atomic`] left in `dir` when a kill cut it short
/// (`.cuenv-tmp*` files), those last modified at least `min_age` ago: a folder other cuenv
/// homes also write into (a lab folder, a conda env) may hold another live cuenv's file, so
/// there only old ones go; in cuenv's own home, under the writer lock, every one does
/// (`Duration::ZERO`). Returns how many it removed; a missing folder has none.
pub fn remove_atomic_leftovers(dir: &Path, min_age: std::time::Duration) -> io::Result<usize> {
    let Ok(rd) = fs::read_dir(dir) else { return Ok(0) };
    let mut removed = 0;
    for e in rd.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(ATOMIC_TMP_PREFIX) {
            continue;
        }
        let Ok(meta) = e.metadata() else { continue };
        let age = meta.modified().ok().and_then(|m| m.elapsed().ok()).unwrap_or_default();
        if meta.is_file() && age >= min_age {
            fs::remove_file(e.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Flushes a folder's entries to disk where the platform supports it (Unix). Best effort.
pub fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(f) = fs::File::open(dir) {
        let _ = f.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Marks every file under `root` read-only, and every sub-folder too (not `root` itself,
/// so that `root` can still be renamed into place). Symlinks are left as they are.
pub fn make_tree_readonly(root: &Path) -> io::Result<()> {
    // Deepest first, so a folder is locked after its children.
    for entry in walkdir::WalkDir::new(root).min_depth(1).contents_first(true) {
        let entry = entry.map_err(io::Error::other)?;
        if entry.path_is_symlink() {
            continue;
        }
        set_readonly(entry.path(), true)?;
    }
    Ok(())
}

/// Undoes [`make_tree_readonly`] (and also clears read-only on `root`), so the tree can
/// be deleted.
pub fn make_tree_writable(root: &Path) -> io::Result<()> {
    for entry in walkdir::WalkDir::new(root) {
        let entry = entry.map_err(io::Error::other)?;
        if entry.path_is_symlink() {
            continue;
        }
        set_readonly(entry.path(), false)?;
    }
    Ok(())
}

/// Deletes a tree that may hold read-only files. A missing tree is not an error.
pub fn remove_tree(root: &Path) -> io::Result<()> {
    match fs::symlink_metadata(root) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    make_tree_writable(root)?;
    fs::remove_dir_all(root)
}

fn set_readonly(path: &Path, readonly: bool) -> io::Result<()> {
    let meta = fs::metadata(path)?;
    let mut perms = meta.permissions();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = perms.mode();
        let new = if readonly { mode & !0o222 } else { mode | 0o200 };
        if new == mode {
            return Ok(());
        }
        perms.set_mode(new);
    }
    #[cfg(not(unix))]
    {
        if meta.is_dir() {
            // Windows ignores the read-only attribute on folders for deletion purposes.
            return Ok(());
        }
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(readonly);
    }
    fs::set_permissions(path, perms)
}

/// Human-readable size in binary units (`1.50 MiB`), as indicatif's [`indicatif::BinaryBytes`] writes it.
pub fn human_size(bytes: u64) -> String {
    indicatif::BinaryBytes(bytes).to_string()
}

/// Debug builds: the step of [`fault_point`] at which the process aborts.
pub const TEST_ABORT_AT_VAR: &str = "CUENV_TEST_ABORT_AT";
/// Debug builds: the step of [`fault_error`] that fails with an I/O error.
pub const TEST_FAIL_AT_VAR: &str = "CUENV_TEST_FAIL_AT";

/// Test hook: `CUENV_TEST_ABORT_AT=<step>` aborts the process at that step, to prove that
/// the next writer finishes or undoes what was cut short (the kill matrix in
/// `tests/it/kill_matrix.rs` and `tests/it/apply_tx.rs`). Steps of a switch (`generation`):
/// `journal`, `shims`, `commit`, `history`; of an apply's transaction also `lock`
/// (lab.lock written), `check-start`, `check-saved`, `verdict` and, undoing it,
/// `revert-shims`, `revert-commit`, `revert-history`; of replacing a link (`link`):
/// `link-staged`; of deleting a generation: `gc-trashed`, `gc-links`; of `store add`:
/// `store-staged`, `store-rooted`, `store-published`; of `store remove`: `store-trashed`,
/// `store-pruned`. Only in debug builds (what
/// `cargo test` builds, on Linux and for Wine): a release binary has no fault points and
/// reads no such variable.
#[cfg(debug_assertions)]
pub fn fault_point(step: &str) {
    if std::env::var(TEST_ABORT_AT_VAR).is_ok_and(|s| s == step) {
        std::process::abort();
    }
}

/// Release builds: no fault points.
#[cfg(not(debug_assertions))]
pub fn fault_point(_step: &str) {}

/// Test hook beside [`fault_point`]: `CUENV_TEST_FAIL_AT=<step>` makes that step fail with an
/// I/O error instead of killing the process, to prove that an error is undone in process.
/// Steps (apply): `write-lock`, `save-checks`, `link-probe` (the test link of `link::probe`);
/// of every switch (`apply`, `rollback`): `set-current`, the rename that switches `profiles`
/// (or the pointer file `current`). Debug builds only.
#[cfg(debug_assertions)]
pub fn fault_error(step: &str) -> io::Result<()> {
    match std::env::var(TEST_FAIL_AT_VAR) {
        Ok(s) if s == step => Err(io::Error::other(format!("failure injected at {step} (CUENV_TEST_FAIL_AT)"))),
        _ => Ok(()),
    }
}

/// Release builds: no injected failures.
#[cfg(not(debug_assertions))]
pub fn fault_error(_step: &str) -> io::Result<()> {
    Ok(())
}
