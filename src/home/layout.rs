//! Where cuenv keeps its files: every path cuenv owns, derived from one home folder.
//!
//! The home is chosen, in order, by `--home`, `CUENV_HOME`, then the platform default:
//! `%LOCALAPPDATA%\cuenv` on Windows, `$XDG_DATA_HOME/cuenv` or `~/.local/share/cuenv`
//! elsewhere. A `Layout` is passed explicitly to everything that touches disk (no global
//! state), so tests can use many homes in one process.
//!
//! The home carries a format version in `<home>/format` (one decimal number). A home
//! without that file is format 1 (every home written before the file existed); cuenv
//! reads homes of its own format or older and refuses newer ones
//! ([`Layout::validate_format`]), so an old cuenv never half-understands a newer home.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The format of the homes this cuenv writes. Bump it when a file cuenv keeps in the home
/// changes in a way an older cuenv would misread, and teach [`Layout::validate_format`] to
/// read (or migrate) the older ones.
pub const HOME_FORMAT: u32 = 1;

/// The format of a home that holds link-free generations (the pointer files `current` and
/// `active`): a cuenv from before them would find no `profiles` link and take the
/// home for one without a generation, so the first switch to a link-free generation raises
/// the home to this format ([`Layout::raise_format`]) and older cuenvs refuse it. Homes that
/// only ever held linked generations stay at [`HOME_FORMAT`].
pub const LINK_FREE_FORMAT: u32 = 2;

/// The newest format this cuenv reads.
pub const NEWEST_FORMAT: u32 = LINK_FREE_FORMAT;

/// The name of a generation's manifest inside its folder (also inside its staging folder,
/// before it is published): see [`Layout::manifest`].
pub const MANIFEST_FILE: &str = "manifest.toml";

/// The prefix of a generation's staging folder's name: see [`Layout::generation_staging`].
pub const GENERATION_STAGING_PREFIX: &str = ".tmp-";

/// The prefix of a generation folder being deleted: see [`Layout::generation_trash`].
pub const GENERATION_TRASH_PREFIX: &str = ".trash-";

/// A home cuenv cannot use as it is.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The home was written by a newer cuenv.
    #[error("the cuenv home {home} has format {found}, newer than this cuenv's format {NEWEST_FORMAT}")]
    Newer {
        /// The home folder.
        home: PathBuf,
        /// The format its `format` file names.
        found: u32,
    },
    /// `<home>/format` is not one decimal number.
    #[error("{path} does not hold a home format number (it holds `{text}`)")]
    Unreadable {
        /// The `format` file.
        path: PathBuf,
        /// What it holds (at most 40 characters).
        text: String,
    },
    /// `<home>/format` could not be read or written.
    #[error("cannot access {path}")]
    Io {
        /// The `format` file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

impl crate::error::Diagnose for FormatError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            FormatError::Newer { .. } => "upgrade cuenv, or use another home with --home DIR / CUENV_HOME".into(),
            FormatError::Unreadable { path, .. } => format!("write the number {HOME_FORMAT} into {} if this home was made by this cuenv", path.display()),
            FormatError::Io { .. } => "check the home folder's permissions, or use another home with --home DIR".into(),
        })
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        match self {
            FormatError::Io { .. } => crate::error::ExitCode::Failure,
            _ => crate::error::ExitCode::Invalid,
        }
    }
}

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

    /// `<home>/store/.build/<entry>/lib`: the linker scripts of store entry `entry` (its folder
    /// name) for the link-free mode ([`crate::env::build`]); derived from the entry, removed
    /// with it. Hidden from `Store::list` by its leading dot.
    pub fn entry_build_lib(&self, entry: &str) -> PathBuf {
        self.store_dir().join(".build").join(entry).join("lib")
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
    pub fn writer_lock_file(&self) -> PathBuf {
        self.home.join("cuenv.lock")
    }

    /// `<home>/.link-probe`: the folder where `apply` tries a link before building, when the
    /// profile file asks for a link kind this process may not be allowed to make
    /// (`link::probe`); removed again at once (and by the next probe, after a kill).
    pub fn link_probe(&self) -> PathBuf {
        self.home.join(".link-probe")
    }

    /// `<home>/toolkits`: wheel toolkit roots (CUDA toolkit roots built from wheels) assembled from PyPI wheels
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

    /// `<home>/current`: in the link-free mode, the pointer file naming the current
    /// generation (its number and a newline), replaced by one rename (the commit point of a
    /// switch to a link-free generation). While it exists it wins over the `profiles` link.
    pub fn current_pointer(&self) -> PathBuf {
        self.home.join("current")
    }

    /// `<home>/.current.new`: where the next pointer file `current` is written before one
    /// rename replaces the old one.
    pub fn current_staging(&self) -> PathBuf {
        self.home.join(".current.new")
    }

    /// `<home>/active`: the stable link to the active profile's view (in the link-free
    /// mode a pointer file holding the profile's name and a newline).
    pub fn active_link(&self) -> PathBuf {
        self.home.join("active")
    }

    /// `<home>/.active.new`: where the next `active` link is made before it replaces the
    /// old one with one rename.
    pub fn active_staging(&self) -> PathBuf {
        self.home.join(".active.new")
    }

    /// `<home>/.profiles.new`: where the next `profiles` link is made before it replaces
    /// the old one (the commit point of a switch).
    pub fn profiles_staging(&self) -> PathBuf {
        self.home.join(".profiles.new")
    }

    /// `<home>/journal.toml`: the record of a switch in progress; its presence means a
    /// switch was interrupted and the next writer finishes or undoes it.
    pub fn journal(&self) -> PathBuf {
        self.home.join("journal.toml")
    }

    /// `<home>/exports.toml`: the exported files and kernelspecs a switch keeps current in
    /// the link-free mode (the `follow` module).
    pub fn follow_record(&self) -> PathBuf {
        self.home.join("exports.toml")
    }

    /// `<home>/history.jsonl`: one JSON record per switch, appended.
    pub fn history(&self) -> PathBuf {
        self.home.join("history.jsonl")
    }

    /// `<home>/generations/<n>`: generation `n`'s folder.
    pub fn generation_dir(&self, n: u64) -> PathBuf {
        self.generations_dir().join(n.to_string())
    }

    /// `<home>/generations/.tmp-<n>`: where generation `n` is built before one rename
    /// publishes it.
    pub fn generation_staging(&self, n: u64) -> PathBuf {
        self.generations_dir().join(format!("{GENERATION_STAGING_PREFIX}{n}"))
    }

    /// `<home>/generations/.trash-<n>`: where generation `n` goes, in one rename, when it is
    /// deleted; the deletion then happens there, out of sight of every reader.
    pub fn generation_trash(&self, n: u64) -> PathBuf {
        self.generations_dir().join(format!("{GENERATION_TRASH_PREFIX}{n}"))
    }

    /// `<home>/generations/<n>/manifest.toml`: what generation `n` holds.
    pub fn manifest(&self, n: u64) -> PathBuf {
        self.generation_dir(n).join(MANIFEST_FILE)
    }

    /// `<home>/generations/<n>/check.json`: the last check results of generation `n`.
    pub fn check_results(&self, n: u64) -> PathBuf {
        self.generation_dir(n).join("check.json")
    }

    /// `<home>/format`: the home's format version ([`HOME_FORMAT`]).
    pub fn format_file(&self) -> PathBuf {
        self.home.join("format")
    }

    /// The home's format: the number in `<home>/format`, or 1 when there is no such file
    /// (or no home yet).
    ///
    /// Errors: [`FormatError::Unreadable`] for anything but one number; [`FormatError::Io`].
    pub fn format(&self) -> Result<u32, FormatError> {
        let path = self.format_file();
        match fs::read_to_string(&path) {
            Ok(text) => text.trim().parse().map_err(|_| FormatError::Unreadable { path, text: text.trim().chars().take(40).collect() }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(1),
            Err(source) => Err(FormatError::Io { path, source }),
        }
    }

    /// Checked at start by every command that reads the home: a home of a newer format is
    /// refused ([`FormatError::Newer`]). Returns the home's format.
    pub fn validate_format(&self) -> Result<u32, FormatError> {
        let found = self.format()?;
        if found > NEWEST_FORMAT {
            return Err(FormatError::Newer { home: self.home.clone(), found });
        }
        Ok(found)
    }

    /// Raises `<home>/format` to `to` when the home's format is lower (an atomic write);
    /// nothing is written when it is already `to` or newer.
    pub fn raise_format(&self, to: u32) -> io::Result<()> {
        let now = self.format().map_err(|e| io::Error::other(e.to_string()))?;
        if now >= to {
            return Ok(());
        }
        crate::sys::fsutil::write_atomic(&self.format_file(), format!("{to}\n").as_bytes())
    }

    /// Writes `<home>/format` when the home has none (a writer calls this once it holds the
    /// writer lock, so every home that cuenv writes says its format).
    pub fn record_format(&self) -> Result<(), FormatError> {
        let path = self.format_file();
        if path.exists() {
            return Ok(());
        }
        crate::sys::fsutil::write_atomic(&path, format!("{HOME_FORMAT}\n").as_bytes()).map_err(|source| FormatError::Io { path, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_home_without_a_format_file_is_format_1() {
        let tmp = tempfile::tempdir().unwrap();
        let l = Layout::new(tmp.path().join("never-made"));
        assert_eq!(l.validate_format().unwrap(), 1);
        let l = Layout::new(tmp.path());
        assert_eq!(l.validate_format().unwrap(), 1);
        l.record_format().unwrap();
        assert_eq!(fs::read_to_string(l.format_file()).unwrap(), format!("{HOME_FORMAT}\n"));
        assert_eq!(l.validate_format().unwrap(), HOME_FORMAT);
    }

    #[test]
    fn a_link_free_home_is_raised_to_its_format_and_never_lowered() {
        let tmp = tempfile::tempdir().unwrap();
        let l = Layout::new(tmp.path());
        l.record_format().unwrap();
        l.raise_format(LINK_FREE_FORMAT).unwrap();
        assert_eq!(l.validate_format().unwrap(), LINK_FREE_FORMAT);
        l.raise_format(HOME_FORMAT).unwrap();
        assert_eq!(fs::read_to_string(l.format_file()).unwrap(), format!("{LINK_FREE_FORMAT}\n"));
    }

    #[test]
    fn a_newer_or_unreadable_format_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let l = Layout::new(tmp.path());
        fs::write(l.format_file(), format!("{}\n", NEWEST_FORMAT + 1)).unwrap();
        let e = l.validate_format().unwrap_err();
        assert!(matches!(e, FormatError::Newer { found, .. } if found == NEWEST_FORMAT + 1), "{e}");
        assert!(e.to_string().contains("newer than this cuenv"), "{e}");
        fs::write(l.format_file(), "two").unwrap();
        assert!(matches!(l.validate_format().unwrap_err(), FormatError::Unreadable { .. }));
        // An existing format file is never rewritten.
        l.record_format().unwrap();
        assert_eq!(fs::read_to_string(l.format_file()).unwrap(), "two");
    }
}
