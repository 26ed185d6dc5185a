//! Small file-system helpers shared by the modules that write: atomic file writes,
//! renames retried while Windows antivirus or indexers hold a new file (errors 5 and 32),
//! making a tree read-only or writable again, and deleting whatever is at a path.
//!
//! Invariant: nothing here follows a link out of the tree it was given. A link is removed
//! as a link, never walked into, never has its target's mode changed (a root that is a link
//! included: `walkdir`'s `follow_root_links` is off, and on Unix the walk opens each folder
//! with `O_NOFOLLOW` relative to its parent's descriptor). A folder outside the home that
//! cuenv writes into (a conda env's shim folder, a lab folder, a kernelspec folder) is
//! *pinned* ([`pin_folder`]) when a command first touches it (the leftover cleanup every
//! writing command starts with, the shim sync, an export); every later write or
//! delete there opens the folder and compares its identity (device and inode; volume serial
//! and file index) with the pin, and refuses when the folder was swapped (for a link, say)
//! meanwhile. The home itself is guarded by the writer lock instead.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as sys;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as sys;

/// Renames `from` to `to`, retrying with backoff (10 ms doubling, 6 tries, about 0.6 s)
/// when the OS reports a transient lock: `PermissionDenied` (Windows error 5) or a
/// sharing violation (Windows error 32). Other errors return at once.
pub fn rename_with_retry(from: &Path, to: &Path) -> io::Result<()> {
    let mut delay = Duration::from_millis(10);
    let mut tries = 0;
    loop {
        match fs::rename(from, to) {
            Ok(()) => {
                forget_folder(from);
                return Ok(());
            }
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
/// The full name is `.cuenv-tmp-<pid>-<unique>`: the writer's process id tells the next
/// command whether the writer is gone.
pub const ATOMIC_TMP_PREFIX: &str = ".cuenv-tmp";

/// A fresh temporary name for this process: `.cuenv-tmp-<pid>-<counter><nanoseconds>`.
fn temp_name() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    format!("{ATOMIC_TMP_PREFIX}-{}-{}{nanos:08x}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// The writer's process id in a temporary name of [`temp_name`]'s shape; `None` for other names.
fn temp_owner(name: &str) -> Option<u32> {
    name.strip_prefix(ATOMIC_TMP_PREFIX)?.strip_prefix('-')?.split('-').next()?.parse().ok()
}

/// The folders pinned in this process (see the module docs): path as given, identity.
static PINS: Mutex<Vec<(PathBuf, sys::Id)>> = Mutex::new(Vec::new());

fn pins() -> std::sync::MutexGuard<'static, Vec<(PathBuf, sys::Id)>> {
    PINS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Pins the folder `dir` (outside the home; see the module docs): from now on this process
/// writes and deletes there only while `dir` is still the folder it is now. A folder that
/// does not exist (yet) or is already pinned is left as it is. Returns whether `dir` is pinned.
pub fn pin_folder(dir: &Path) -> bool {
    let Ok(dir) = std::path::absolute(dir) else { return false };
    let dir = dir.as_path();
    let mut pins = pins();
    if pins.iter().any(|(p, _)| p == dir) {
        return true;
    }
    match sys::identity(dir) {
        Ok(id) => {
            pins.push((dir.to_path_buf(), id));
            true
        }
        Err(_) => false,
    }
}

/// Drops the pins of `dir` and of every folder under it: cuenv itself removed or moved it.
fn forget_folder(dir: &Path) {
    let Ok(dir) = std::path::absolute(dir) else { return };
    pins().retain(|(p, _)| !p.starts_with(&dir));
}

/// The error for a pinned folder that is another one now.
fn swapped(dir: &Path) -> io::Error {
    io::Error::other(format!(
        "{} is no longer the folder it was when cuenv started (it was replaced, perhaps by a link, while cuenv ran); cuenv writes nothing through it",
        dir.display()
    ))
}

/// Opens `dir` for a write or a delete, checking it against its pin.
fn open_checked(dir: &Path) -> io::Result<sys::Dir> {
    let d = sys::Dir::open(dir)?;
    let key = std::path::absolute(dir)?;
    let pinned = pins().iter().find(|(p, _)| *p == key).map(|(_, id)| *id);
    if let Some(id) = pinned
        && d.id()? != id
    {
        return Err(swapped(dir));
    }
    Ok(d)
}

fn split(path: &Path) -> io::Result<(&Path, &std::ffi::OsStr)> {
    let name = path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{} names no file", path.display())))?;
    Ok((path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")), name))
}

/// Writes `bytes` to `path` atomically: a temporary file in the same folder (see
/// [`ATOMIC_TMP_PREFIX`]), `sync_all`, then a rename over `path`. Readers see the old
/// content or the new, never a mix. Never through a link swapped in for the folder: the
/// folder is opened once and checked against its pin ([`pin_folder`]); the replaced file's
/// permissions are kept (else 0644). The debug-only fault point `tmp:<file name>#<k>` fires
/// between the temporary file's sync and the rename ([`fault_point`]).
///
/// Errors: the folder's or the file's I/O error; a swapped pinned folder (kind `Other`).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (dir, name) = split(path)?;
    let d = open_checked(dir)?;
    // What a killed writer left here before (its process is gone, or it is a minute old):
    // whoever writes in this folder next removes it. Best effort: the write is what counts.
    let _ = remove_atomic_leftovers(dir, Duration::from_secs(60));
    let step = temp_point(&name.to_string_lossy());
    trace_temp_point(&step, dir);
    d.write_new(name, &temp_name, bytes, &|| {
        // `tmp:<name>` is its first pass, `tmp:<name>#<k>` its k-th.
        fault_point(&step);
        if step.ends_with("#1") {
            fault_point(step.trim_end_matches("#1"));
        }
    })
}

/// The name of this process's next temp-file point for a file named `name`: `tmp:<name>#<k>`,
/// its k-th write of a file of that name.
fn temp_point(name: &str) -> String {
    static SEEN: Mutex<Vec<(String, usize)>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let k = match seen.iter_mut().find(|(n, _)| n == name) {
        Some((_, k)) => {
            *k += 1;
            *k
        }
        None => {
            seen.push((name.to_string(), 1));
            1
        }
    };
    format!("tmp:{name}#{k}")
}

/// Debug builds: the file to which [`write_atomic`] appends each temp-file point it passes
/// (`tmp:<file name>#<k>`, a tab, the folder), so that a test can kill a writer at every one.
pub const TEST_TRACE_VAR: &str = "CUENV_TEST_TRACE_TMP";

#[cfg(debug_assertions)]
fn trace_temp_point(step: &str, dir: &Path) {
    use std::io::Write as _;
    if let Some(file) = std::env::var_os(TEST_TRACE_VAR)
        && let Ok(mut f) = fs::OpenOptions::new().create(true).append(true).open(file)
    {
        let _ = writeln!(f, "{step}\t{}", dir.display());
    }
}

#[cfg(not(debug_assertions))]
fn trace_temp_point(_step: &str, _dir: &Path) {}

/// Deletes the file (or link) at `path`, in a folder checked against its pin
/// ([`pin_folder`]). A missing file is `NotFound`, as with `fs::remove_file`.
pub fn remove_file(path: &Path) -> io::Result<()> {
    let (dir, name) = split(path)?;
    open_checked(dir)?.remove_file(name)
}

/// Removes the temporary files [`write_atomic`] left in `dir` when a kill cut it short
/// (`.cuenv-tmp*` entries): at once when the process that wrote it is gone, else once last
/// modified at least `min_age` ago. A folder other cuenv homes also write into (a lab
/// folder, a conda env) may hold another live cuenv's file, so there a file of a live (or
/// unknown) process stays until old; in cuenv's own home, under the writer lock, every one
/// goes (`Duration::ZERO`). A leftover that is a link is removed as a link; in the home
/// (`min_age` zero) a folder of that name goes too, and a `dir` that is itself a link is not
/// read at all. Returns how many it removed; a missing
/// folder has none.
pub fn remove_atomic_leftovers(dir: &Path, min_age: std::time::Duration) -> io::Result<usize> {
    // The home's own folders are never read through a link (a planted one); a folder outside
    // it may be one the user made, and is the folder the user named.
    if min_age.is_zero() && !fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        return Ok(0);
    }
    let Ok(rd) = fs::read_dir(dir) else { return Ok(0) };
    let mut removed = 0;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with(ATOMIC_TMP_PREFIX) {
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(e.path()) else { continue };
        let age = meta.modified().ok().and_then(|m| m.elapsed().ok()).unwrap_or_default();
        let dead = temp_owner(&name).is_some_and(|pid| pid != std::process::id() && !sys::process_alive(pid));
        if !(dead || age >= min_age) || (meta.is_dir() && !min_age.is_zero()) {
            continue;
        }
        if meta.is_dir() {
            remove_tree(&e.path())?
        } else {
            remove_file(&e.path())?
        }
        removed += 1;
    }
    Ok(removed)
}

/// What to clean in the folder `dir`, never through a link: its entries when `dir` is a
/// real folder; `[dir]` itself when a link, a file or anything else sits where the folder
/// should be (that is the leftover: removing it removes the link, not what it points at);
/// nothing when `dir` is missing or cannot be read.
pub fn entries_or_self(dir: &Path) -> Vec<PathBuf> {
    match fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => fs::read_dir(dir).map(|rd| rd.flatten().map(|e| e.path()).collect()).unwrap_or_default(),
        Ok(_) => vec![dir.to_path_buf()],
        Err(_) => Vec::new(),
    }
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
/// so that `root` can still be renamed into place). Links are left as they are and never
/// followed (see the module docs).
pub fn make_tree_readonly(root: &Path) -> io::Result<()> {
    sys::set_tree_readonly(root, true, false)
}

/// Undoes [`make_tree_readonly`] as far as a deletion needs (`root` included): on Unix
/// every folder gets its owner's write permission back (a file's own mode does not matter
/// to `unlink`); on Windows every file loses its read-only attribute. Never follows a link,
/// `root` included: a `root` that is a link is left as it is.
pub fn make_tree_writable(root: &Path) -> io::Result<()> {
    sys::set_tree_readonly(root, false, true)
}

/// Deletes whatever is at `root`: a link is removed as a link (its target untouched), a
/// file as a file, a folder with everything in it, read-only files included, never
/// following a link inside (`fs::remove_dir_all` does not follow links). A missing `root`
/// is not an error.
pub fn remove_tree(root: &Path) -> io::Result<()> {
    let meta = match fs::symlink_metadata(root) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(m) => m,
    };
    forget_folder(root);
    if meta.file_type().is_symlink() || !meta.is_dir() {
        #[cfg(windows)]
        if !meta.file_type().is_symlink() {
            sys::set_tree_readonly(root, false, true)?;
        }
        // A junction or a folder symlink on Windows is removed as a folder.
        return fs::remove_file(root).or_else(|e| if cfg!(windows) && meta.is_dir() { fs::remove_dir(root) } else { Err(e) });
    }
    make_tree_writable(root)?;
    fs::remove_dir_all(root)
}

/// Removes the folder `dir` if it is empty (what an undo does with a folder it created):
/// `fs::remove_dir`, and the folder's pin goes with it.
pub fn remove_empty_dir(dir: &Path) -> io::Result<()> {
    fs::remove_dir(dir)?;
    forget_folder(dir);
    Ok(())
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
/// `store-pruned`; of every atomic write ([`write_atomic`]): `tmp:<file name>#<k>` (the k-th
/// write of a file of that name; `tmp:<file name>` is the first), between the
/// temporary file's sync and its rename (a test lists them with [`TEST_TRACE_VAR`]). Only in debug builds (what
/// `cargo test` builds, on Linux and for Wine): a release binary has no fault points and
/// reads no such variable.
#[cfg(debug_assertions)]
pub fn fault_point(step: &str) {
    if std::env::var(TEST_ABORT_AT_VAR).is_ok_and(|s| s == step) {
        std::process::abort();
    }
    if std::env::var(TEST_PAUSE_AT_VAR).is_ok_and(|s| s == step)
        && let Some(flag) = std::env::var_os(TEST_PAUSE_FILE_VAR)
    {
        let flag = PathBuf::from(flag);
        let _ = fs::write(&flag, step);
        let start = std::time::Instant::now();
        while flag.exists() && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Debug builds: the step of [`fault_point`] at which the process pauses: it creates the
/// file named by [`TEST_PAUSE_FILE_VAR`] and waits (up to 60 s) until a test deletes it, so
/// that the test can change the file system at exactly that moment (swap a folder for a link).
pub const TEST_PAUSE_AT_VAR: &str = "CUENV_TEST_PAUSE_AT";
/// Debug builds: the flag file of [`TEST_PAUSE_AT_VAR`].
pub const TEST_PAUSE_FILE_VAR: &str = "CUENV_TEST_PAUSE_FILE";

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
