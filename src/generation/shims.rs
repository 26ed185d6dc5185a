//! A generation's conda shims: their recorded hashes, the check before a switch that every
//! shim path is ours to write, and bringing the envs' shims from one generation's set to
//! another's (with an undo for a switch cut short).

use super::*;

/// The SHA-256 of a shim's bytes, as [`ShimRecord::sha256`] records it.
pub fn shim_sha256(bytes: &[u8]) -> Sha256 {
    Sha256::of(bytes)
}

/// The SHA-256 of every shim the generations other than `m` recorded: a shim holding one of
/// them was written by cuenv for another generation, not changed by hand.
pub fn other_generations_shim_hashes(layout: &Layout, m: &Manifest) -> std::collections::HashSet<Sha256> {
    list(layout).into_iter().filter(|n| *n != m.number).filter_map(|n| read(layout, n).ok()).flat_map(|g| g.shims.into_iter().map(|s| s.sha256)).collect()
}

/// The shims of generation `n` (none for `None`).
pub(super) fn shims_of(layout: &Layout, n: Option<u64>) -> Result<Vec<ShimRecord>, Error> {
    match n {
        Some(n) => Ok(read(layout, n)?.shims),
        None => Ok(Vec::new()),
    }
}

/// Checks that every shim path of `to` is free or ours, so a switch never fails halfway on
/// a foreign file.
pub fn preflight_shims(shims: &[ShimRecord]) -> Result<(), Error> {
    for s in shims {
        if let Ok(text) = fs::read_to_string(&s.path) {
            if !crate::shim::is_ours(&text) {
                return Err(Error::ForeignShim { path: s.path.clone() });
            }
        } else if s.path.exists() {
            return Err(Error::ForeignShim { path: s.path.clone() });
        }
    }
    Ok(())
}

/// Makes the conda shims on disk equal to generation `to`'s set, given that `from`'s set
/// may be there: writes `to`'s shims (atomically, only where the content differs) and
/// deletes `from`'s shims that `to` lacks (only files that carry cuenv's marker).
///
/// All or nothing: every file it writes or deletes is first recorded with its old bytes
/// ([`ShimUndo`]); when a step fails (a full disk, a read-only `deactivate.d`), what it did
/// so far is undone before the error returns, so the env holds `from`'s shims again, never
/// a mix of two generations. (Should the undo itself fail, the journal left by the switch
/// makes the next writing command put `from`'s set back: [`recover`].)
pub(super) fn sync_shims(layout: &Layout, from: Option<u64>, to: Option<u64>) -> Result<(), Error> {
    sync_shims_pending(layout, from, to).map(ShimUndo::commit).map_err(Failed::into_error)
}

/// How a step of a switch failed: whether what it did was undone.
#[derive(Debug)]
pub(super) enum Failed {
    /// Undone: the shims and the current generation are as they were before the step.
    Undone(Error),
    /// Not (wholly) undone: the undo failed, or the step failed past the commit point. The
    /// switch's journal must stay, for the next writer's [`recover`].
    Left(Error),
}

impl Failed {
    /// The error the step failed with.
    pub(super) fn into_error(self) -> Error {
        match self {
            Failed::Undone(e) | Failed::Left(e) => e,
        }
    }
}

/// [`sync_shims`] whose changes are not yet kept: the caller commits the returned undo log
/// once the switch they belong to has reached its commit point, or undoes it
/// ([`ShimUndo::undo`]) when the switch fails before it. A failure inside is undone here.
pub(super) fn sync_shims_pending(layout: &Layout, from: Option<u64>, to: Option<u64>) -> Result<ShimUndo, Failed> {
    let mut tx = ShimUndo::default();
    match write_shim_set(layout, from, to, &mut tx) {
        Ok(()) => Ok(tx),
        Err(e) if tx.undo() => Err(Failed::Undone(e)),
        Err(e) => Err(Failed::Left(e)),
    }
}

/// The writes and deletions of [`sync_shims`], each recorded in `tx` before it is made.
fn write_shim_set(layout: &Layout, from: Option<u64>, to: Option<u64>, tx: &mut ShimUndo) -> Result<(), Error> {
    let want = shims_of(layout, to)?;
    let had = shims_of(layout, from)?;
    // The envs' shim folders are not the home's: written only while each is the folder it is now.
    for s in want.iter().chain(&had) {
        s.path.parent().map(fsutil::pin_folder);
    }
    for s in &want {
        let stored = layout.generation_dir(to.expect("shims imply a generation")).join("shims").join(&s.stored);
        let bytes = fs::read(&stored).map_err(io_at("read the stored shim", &stored))?;
        let old = match fs::read(&s.path) {
            Ok(old) if old == bytes => continue,
            Ok(old) if !crate::shim::is_ours(&String::from_utf8_lossy(&old)) => return Err(Error::ForeignShim { path: s.path.clone() }),
            Ok(old) => Some(old),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_at("read the shim", &s.path)(e)),
        };
        if let Some(parent) = s.path.parent() {
            tx.create_dir_all(parent)?;
        }
        tx.wrote(&s.path, old);
        fsutil::write_atomic(&s.path, &bytes).map_err(io_at("write the shim", &s.path))?;
    }
    // Never delete what the new set writes, however its path is spelled (an env named
    // through a symlink is the same env).
    for s in had.iter().filter(|h| !want.iter().any(|w| crate::sys::paths::same_place(&w.path, &h.path))) {
        match fs::read(&s.path) {
            Ok(old) if crate::shim::is_ours(&String::from_utf8_lossy(&old)) => {
                tx.wrote(&s.path, Some(old));
                fsutil::remove_file(&s.path).map_err(io_at("delete the shim", &s.path))?;
            }
            _ => {}
        }
    }
    // Kernelspecs and exports follow the shims in the link-free mode (`crate::env::follow`).
    if let Some(to_m) = to.map(|n| read(layout, n)).transpose()?
        && let Some(platform) = crate::cudnn::platform::Platform::host()
    {
        let from_m = from.and_then(|n| read(layout, n).ok());
        let before = from_m.as_ref().map(|m| follow_side(layout, m, platform));
        for r in crate::env::follow::plan(layout, before.as_ref(), &follow_side(layout, &to_m, platform), platform) {
            match fsutil::write_atomic(&r.path, &r.new) {
                Ok(()) => tx.wrote(&r.path, Some(r.old)),
                Err(e) if crate::env::follow::can_skip(&e) => {}
                Err(e) => return Err(io_at("rewrite", &r.path)(e)),
            }
        }
    }
    Ok(())
}

/// The undo log of one [`sync_shims`]: each shim path it touched with the bytes it held
/// before (`None`: there was no file), and the folders it created. [`ShimUndo::undo`], or a
/// drop without [`ShimUndo::commit`] (a panic), puts every old file back and removes the
/// new ones and the folders it made, newest first: rustup's `dist::component::Transaction`
/// in small.
#[derive(Default)]
#[must_use = "a pending shim sync ends with commit or undo"]
pub(super) struct ShimUndo {
    files: Vec<(PathBuf, Option<Vec<u8>>)>,
    dirs: Vec<PathBuf>,
    committed: bool,
}

impl ShimUndo {
    /// Records that `path` is about to be written or deleted; `old` is what it holds now.
    fn wrote(&mut self, path: &Path, old: Option<Vec<u8>>) {
        self.files.push((path.to_path_buf(), old));
    }

    /// `fs::create_dir_all`, remembering the folders that did not exist.
    fn create_dir_all(&mut self, dir: &Path) -> Result<(), Error> {
        let missing: Vec<PathBuf> = dir.ancestors().take_while(|d| !d.as_os_str().is_empty() && !d.exists()).map(Path::to_path_buf).collect();
        fs::create_dir_all(dir).map_err(io_at("create the folder", dir))?;
        fsutil::pin_folder(dir);
        // Outermost first, so the undo (newest first) removes the deepest first.
        self.dirs.extend(missing.into_iter().rev());
        Ok(())
    }

    /// The sync is complete (and the switch it belongs to committed): keep what it did.
    pub(super) fn commit(mut self) {
        self.committed = true;
    }

    /// Puts back what the sync did; true when every file is as it was before it.
    pub(super) fn undo(mut self) -> bool {
        self.committed = true;
        self.restore()
    }

    /// The undo itself (see the type's docs); true when every file was put back.
    fn restore(&mut self) -> bool {
        let mut whole = true;
        for (path, old) in self.files.drain(..).rev() {
            whole &= match old {
                // Atomically if the disk allows; else in place (replacing the file frees
                // its space first).
                // Never in place into a folder swapped since it was pinned (kind `Other`).
                Some(bytes) => match fsutil::write_atomic(&path, &bytes) {
                    Ok(()) => true,
                    Err(e) if e.kind() != io::ErrorKind::Other => fs::write(&path, &bytes).is_ok(),
                    Err(_) => false,
                },
                None => !matches!(fsutil::remove_file(&path), Err(e) if e.kind() != io::ErrorKind::NotFound),
            };
        }
        for dir in self.dirs.drain(..).rev() {
            // Only while empty: never anything another program put there meanwhile.
            let _ = fsutil::remove_empty_dir(&dir);
        }
        whole
    }
}

impl Drop for ShimUndo {
    fn drop(&mut self) {
        if !self.committed {
            self.restore();
        }
    }
}
