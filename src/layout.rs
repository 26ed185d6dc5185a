//! Where cuenv keeps its files: every path cuenv owns, derived from one home folder.
//!
//! The home is chosen, in order, by `--home`, `CUENV_HOME`, then the platform default:
//! `%LOCALAPPDATA%\cuenv` on Windows, `$XDG_DATA_HOME/cuenv` or `~/.local/share/cuenv`
//! elsewhere. A `Layout` is passed explicitly to everything that touches disk (no global
//! state), so tests can use many homes in one process.

use std::path::{Path, PathBuf};

/// All paths under one cuenv home. Nothing is created by constructing it.
#[derive(Debug, Clone)]
pub struct Layout {
    home: PathBuf,
}

impl Layout {
    /// A layout rooted at `home` (taken as given; relative paths stay relative).
    pub fn new(home: impl Into<PathBuf>) -> Self {
        Layout { home: home.into() }
    }

    /// The platform's default home: `%LOCALAPPDATA%\cuenv` (Windows) or
    /// `$XDG_DATA_HOME/cuenv`, falling back to `~/.local/share/cuenv` (others).
    /// `None` when the platform reports no such folder.
    pub fn default_home() -> Option<PathBuf> {
        dirs::data_local_dir().map(|d| d.join("cuenv"))
    }

    /// The home folder itself.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// `<home>/store`: one folder per store entry.
    pub fn store_dir(&self) -> PathBuf {
        self.home.join("store")
    }

    /// `<home>/store/.downloads`: files being downloaded, and downloaded archives waiting
    /// to be imported (kept out of `staging_dir`, which every import empties). Hidden from
    /// store listings by its leading dot. Anything here is garbage once the lock is free.
    pub fn downloads_dir(&self) -> PathBuf {
        self.store_dir().join(".downloads")
    }

    /// `<home>/store/.tmp`: staging folders for imports in progress (same volume as the
    /// store, so publishing is one rename). Anything here is garbage once the lock is free.
    pub fn staging_dir(&self) -> PathBuf {
        self.store_dir().join(".tmp")
    }

    /// `<home>/cuenv.lock`: the file whose OS lock serializes writers across processes.
    pub fn lock_file(&self) -> PathBuf {
        self.home.join("cuenv.lock")
    }

    /// `<home>/toolkits`: CUDA runtime roots assembled from PyPI wheels
    /// (`cuda = { version = "12.6", from = "pypi" }`), one folder each, named by content.
    pub fn toolkits_dir(&self) -> PathBuf {
        self.home.join("toolkits")
    }

    /// `<home>/generations`: one numbered folder per generation.
    pub fn generations_dir(&self) -> PathBuf {
        self.home.join("generations")
    }

    /// `<home>/profiles`: one stable link per profile, retargeted on each switch.
    pub fn profiles_dir(&self) -> PathBuf {
        self.home.join("profiles")
    }

    /// `<home>/active`: the stable link to the active profile's view.
    pub fn active_link(&self) -> PathBuf {
        self.home.join("active")
    }
}
