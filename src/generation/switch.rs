//! Switching generations: the pointer that says which one is current (the `profiles` link,
//! or the `current` file when link-free), the journal written before a switch, the switch
//! itself, the apply transaction ([`ApplyTx`]) that commits only after the checks, and
//! [`recover`], which finishes or undoes a switch a kill cut short.

use super::history::append_history;
use super::shims::{Failed, sync_shims, sync_shims_pending};
use super::*;

/// What the pointer file `<home>/current` says: `None` when there is none (the `profiles`
/// link decides), `Some(None)` when it holds no number.
pub(super) fn pointed(layout: &Layout) -> Option<Option<u64>> {
    let text = fs::read_to_string(layout.current_pointer()).ok()?;
    Some(text.trim().parse().ok())
}

/// Makes generation `to` current (`None`: none), in the way its mode needs, in one atomic
/// step for every reader.
///
/// - Link-free `to`: the pointer file `<home>/current` is replaced by one rename
///   ([`fsutil::write_atomic`], the commit point); a `profiles` link left by a linked
///   generation is removed after it (the pointer wins while both exist).
/// - Linked `to`: the `profiles` link is retargeted; when a pointer file was there (the
///   generation before was link-free), deleting it is the commit point.
/// - `None`: the link, then the pointer file are removed.
pub(super) fn set_current(layout: &Layout, to: Option<u64>) -> Result<(), Error> {
    let (profiles, pointer) = (layout.profiles_dir(), layout.current_pointer());
    let drop_pointer = || match fs::remove_file(&pointer) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io_at("remove the pointer file", &pointer)(e)),
        _ => Ok(()),
    };
    match to {
        None => {
            link::remove(&profiles).map_err(io_at("remove the link", &profiles))?;
            drop_pointer()?;
        }
        Some(n) if read(layout, n)?.link_mode.is_link_free() => {
            // First, so that a cuenv that cannot read pointer files refuses the home.
            let format = layout.format_file();
            layout.raise_format(crate::home::layout::LINK_FREE_FORMAT).map_err(io_at("record the home's format in", &format))?;
            fault_error("set-current").map_err(io_at("replace the pointer file", &pointer))?;
            write_pointer(&pointer, &layout.current_staging(), &format!("{n}\n"))?;
            if link::is_link(&profiles) {
                link::remove(&profiles).map_err(io_at("remove the link", &profiles))?;
            }
        }
        Some(n) => {
            let views = layout.generation_dir(n).join("views");
            fault_error("set-current").map_err(io_at("replace the link", &profiles))?;
            link::set(LinkKind::native(), &profiles, &views, &layout.profiles_staging())?;
            fsutil::sync_dir(layout.home());
            drop_pointer()?;
            // An active profile a link-free generation recorded as a pointer file becomes
            // the link `env --setup` shells follow.
            let active = layout.active_link();
            if !link::is_link(&active)
                && let Ok(text) = fs::read_to_string(&active)
            {
                let name = text.trim_end_matches(['\r', '\n']).to_string();
                fs::remove_file(&active).map_err(io_at("remove the pointer file", &active))?;
                if !name.is_empty() {
                    let target = crate::env::view::stable_home(layout).join("profiles").join(name);
                    link::create(LinkKind::native(), &target, &active)?;
                }
            }
        }
    }
    fsutil::sync_dir(layout.home());
    Ok(())
}

/// Replaces the pointer file `path` with one holding `text`: written whole (and synced) at
/// `staging`, in the same folder, then renamed over `path` (atomic for every reader, on FAT
/// and exFAT too; durable against a killed process, not against a power loss there), then
/// the folder is synced. A kill before the rename leaves `staging`, which
/// [`clean_leftovers`] removes. The debug-only hook `CUENV_TEST_ABORT_AT=pointer-staged`
/// kills the process between the two steps.
///
/// Errors: [`Error::Io`] naming the file that could not be written or renamed.
pub fn write_pointer(path: &Path, staging: &Path, text: &str) -> Result<(), Error> {
    use std::io::Write as _;
    // Whatever sits at `staging` (a planted link or FIFO) goes first; the new file is created
    // exclusively, so it is never written through a link.
    fsutil::remove_tree(staging).map_err(io_at("remove", staging))?;
    let mut f = fs::OpenOptions::new().write(true).create_new(true).open(staging).map_err(io_at("write the pointer file", staging))?;
    f.write_all(text.as_bytes()).and_then(|()| f.sync_all()).map_err(io_at("write the pointer file", staging))?;
    drop(f);
    fault_point("pointer-staged");
    fsutil::rename_with_retry(staging, path).map_err(io_at("replace the pointer file", path))?;
    if let Some(dir) = path.parent() {
        fsutil::sync_dir(dir);
    }
    Ok(())
}

/// The switch in progress, written before the first effect and deleted after the last.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Journal {
    op: SwitchOp,
    from: Option<u64>,
    to: u64,
    /// `checking`: an apply whose verdict is still pending ([`ApplyTx`]); [`recover`] undoes
    /// it wherever it stopped. Absent: a plain switch, finished or undone by the commit point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    phase: Option<Phase>,
    /// The lock file an apply rewrites, as it was before: put back when the apply is undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lock: Option<LockBackup>,
}

/// Where an apply's transaction stands, as its journal records it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(super) enum Phase {
    /// Switched (or switching) to the new generation; its checks have not given a verdict.
    Checking,
}

/// A lock file as it was before an apply rewrote it (`before`: `None` when there was none).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LockBackup {
    /// The lock file (`lab.lock` next to the profile file).
    pub path: PathBuf,
    /// Its text before the apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
}

impl LockBackup {
    /// Puts the lock file back as it was (deletes it when there was none); nothing is
    /// written when it already is.
    fn restore(&self) -> Result<(), Error> {
        use crate::error::IoError;
        let now = fs::read_to_string(&self.path).ok();
        if now == self.before {
            return Ok(());
        }
        match &self.before {
            Some(text) => fsutil::write_atomic(&self.path, text.as_bytes()).map_err(|e| IoError::new("put back the lock file", &self.path, e))?,
            None => match fs::remove_file(&self.path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    return Err(IoError::new("remove the lock file written by the undone apply", &self.path, e).into());
                }
                _ => {}
            },
        }
        Ok(())
    }
}

pub(super) fn write_journal(layout: &Layout, journal: &Journal) -> Result<(), Error> {
    let jpath = layout.journal();
    let text = toml::to_string(journal).map_err(crate::error::unserializable).map_err(io_at("write the journal", &jpath))?;
    fsutil::write_atomic(&jpath, text.as_bytes()).map_err(io_at("write the journal", &jpath))
}

/// Switches from the current generation to `to` (see the module docs for the steps and
/// the commit point). `op` is recorded in the history. `to` must be whole
/// ([`read_complete`]); nothing is touched when it is not.
pub fn switch(layout: &Layout, to: u64, op: SwitchOp) -> Result<(), Error> {
    read_complete(layout, to)?;
    let from = current(layout);
    write_journal(layout, &Journal { op, from, to, phase: None, lock: None })?;
    fault_point("journal");
    match switch_steps(layout, from, to, op) {
        Ok(()) => remove_journal(layout),
        // Nothing was changed: the journal goes too (were it left, the next writer would
        // only redo the undo), so the home is as healthy as before the switch.
        Err(Failed::Undone(e)) => {
            let _ = remove_journal(layout);
            Err(e)
        }
        Err(Failed::Left(e)) => Err(e),
    }
}

/// The effects of a switch from `from` to `to`, under a journal already written: the shims
/// and the `profiles` link (the commit point), as one undo ([`shims_and_current`]), then
/// the history.
pub(super) fn switch_steps(layout: &Layout, from: Option<u64>, to: u64, op: SwitchOp) -> Result<(), Failed> {
    shims_and_current(layout, from, Some(to), "shims")?;
    fault_point("commit");
    append_history(layout, &HistoryRecord { time: now(), op, from, to }).map_err(Failed::Left)?;
    fault_point("history");
    Ok(())
}

/// Brings the envs' shims from `from`'s set to `to`'s, then makes `to` current
/// ([`set_current`], the commit point), as one undo: when making `to` current fails before
/// the commit point (the rename that switches `profiles` or the pointer file), the shims are
/// put back to `from`'s, so the envs never hold one generation's shims while another is
/// current. `point` is the fault point between the two steps (a kill there is the journal's
/// to undo). [`Failed::Undone`]: the shims and the current generation are as they were.
fn shims_and_current(layout: &Layout, from: Option<u64>, to: Option<u64>, point: &str) -> Result<(), Failed> {
    let shims = sync_shims_pending(layout, from, to)?;
    fault_point(point);
    if current(layout) == to {
        shims.commit();
        return Ok(());
    }
    match set_current(layout, to) {
        Ok(()) => {
            shims.commit();
            Ok(())
        }
        // Past the commit point (a later step failed): `to` is current, and so are its shims.
        Err(e) if current(layout) == to => {
            shims.commit();
            Err(Failed::Left(e))
        }
        Err(e) if shims.undo() => Err(Failed::Undone(e)),
        Err(e) => Err(Failed::Left(e)),
    }
}

pub(super) fn remove_journal(layout: &Layout) -> Result<(), Error> {
    let jpath = layout.journal();
    fs::remove_file(&jpath).map_err(io_at("remove the journal", &jpath))?;
    fsutil::sync_dir(layout.home());
    Ok(())
}

/// An apply's transaction: from [`begin_apply`] to [`ApplyTx::commit`] or
/// [`ApplyTx::revert`] its journal is on disk, so a kill anywhere in between is undone by
/// the next writer's [`recover`] when the apply checks its generation (the verdict was not
/// reached), and finished or undone at the commit point like any switch with `--no-check`.
/// The caller writes the lock file inside the transaction: undoing it puts the old one back.
#[derive(Debug)]
#[must_use = "an apply transaction ends with commit or revert"]
pub struct ApplyTx {
    from: Option<u64>,
    to: u64,
    lock: Option<LockBackup>,
}

/// Starts applying generation `to` (which must be whole): writes the journal (`op = apply`,
/// `from`, `to`, the phase `checking` when `checked`, and the `lock` file's old text).
/// Nothing else is touched yet.
pub fn begin_apply(layout: &Layout, to: u64, checked: bool, lock: Option<LockBackup>) -> Result<ApplyTx, Error> {
    read_complete(layout, to)?;
    let from = current(layout);
    let phase = checked.then_some(Phase::Checking);
    write_journal(layout, &Journal { op: SwitchOp::Apply, from, to, phase, lock: lock.clone() })?;
    fault_point("journal");
    Ok(ApplyTx { from, to, lock })
}

impl ApplyTx {
    /// The generation current before the apply (`None`: none was).
    pub fn from(&self) -> Option<u64> {
        self.from
    }

    /// Makes the new generation current (shims, the `profiles` link, the history); the
    /// journal stays until [`ApplyTx::commit`] or [`ApplyTx::revert`].
    pub fn switch(&self, layout: &Layout) -> Result<(), Error> {
        switch_steps(layout, self.from, self.to, SwitchOp::Apply).map_err(Failed::into_error)
    }

    /// The verdict let the new generation stay: ends the transaction (deletes the journal).
    pub fn commit(self, layout: &Layout) -> Result<(), Error> {
        remove_journal(layout)
    }

    /// Undoes the apply wherever it stands: the previous generation (or none) is current
    /// again with its shims, the history says `revert` if it had said `apply`, and the lock
    /// file is as it was. Then deletes the journal. A kill in here is finished by [`recover`].
    pub fn revert(self, layout: &Layout) -> Result<(), Error> {
        undo_apply(layout, self.from, self.to, self.lock.as_ref())?;
        remove_journal(layout)
    }
}

/// Undoes an apply from `from` to `to` (idempotent: each step checks what is already done).
pub(super) fn undo_apply(layout: &Layout, from: Option<u64>, to: u64, lock: Option<&LockBackup>) -> Result<(), Error> {
    shims_and_current(layout, Some(to), from, "revert-shims").map_err(Failed::into_error)?;
    fault_point("revert-commit");
    if history(layout).last().is_some_and(|h| h.op == SwitchOp::Apply && h.from == from && h.to == to) {
        append_history(layout, &HistoryRecord { time: now(), op: SwitchOp::Revert, from: Some(to), to: from.unwrap_or(0) })?;
    }
    fault_point("revert-history");
    if let Some(lock) = lock {
        lock.restore()?;
    }
    Ok(())
}

/// Finishes or undoes a switch interrupted by a crash. Returns a sentence saying what it
/// did, or `None` when there was nothing to do. Needs the writer lock.
pub fn recover(layout: &Layout) -> Result<Option<String>, Error> {
    let jpath = layout.journal();
    // Not a file (a planted folder or FIFO: reading would fail or block): no journal cuenv wrote.
    match fs::symlink_metadata(&jpath) {
        Ok(m) if !m.is_file() => {
            fsutil::remove_tree(&jpath).map_err(io_at("remove", &jpath))?;
            return Ok(Some("removed a journal that was not a file".into()));
        }
        _ => {}
    }
    let Ok(text) = fs::read_to_string(&jpath) else { return Ok(None) };
    let Ok(j) = toml::from_str::<Journal>(&text) else {
        fs::remove_file(&jpath).map_err(io_at("remove the journal", &jpath))?;
        return Ok(Some("removed an unreadable journal".into()));
    };
    let cur = current(layout);
    let stays = |from: Option<u64>| from.map(|n| n.to_string()).unwrap_or_else(|| "none".into());
    let said = if j.op == SwitchOp::Apply && j.phase == Some(Phase::Checking) {
        // An apply that did not reach its verdict failed: undo it wherever it stopped.
        undo_apply(layout, j.from, j.to, j.lock.as_ref())?;
        format!("undid an interrupted apply to generation {} (generation {} stays current)", j.to, stays(j.from))
    } else if cur == Some(j.to) {
        sync_shims(layout, j.from, Some(j.to))?;
        if !history(layout).last().is_some_and(|h| h.to == j.to && h.from == j.from) {
            append_history(layout, &HistoryRecord { time: now(), op: j.op, from: j.from, to: j.to })?;
        }
        format!("finished an interrupted {} to generation {}", j.op, j.to)
    } else {
        sync_shims(layout, Some(j.to), j.from)?;
        if let Some(lock) = &j.lock {
            lock.restore()?;
        }
        format!("undid an interrupted {} to generation {} (generation {} stays current)", j.op, j.to, stays(j.from))
    };
    fs::remove_file(&jpath).map_err(io_at("remove the journal", &jpath))?;
    Ok(Some(said))
}
