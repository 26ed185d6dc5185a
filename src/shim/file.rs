//! Writing and removing shim files, never touching a file cuenv did not write.
//!
//! A file is cuenv's when its first line is the marker ([`super::is_ours`]). [`write`] creates a
//! new file or replaces one of ours (atomically: temp file + rename); [`remove`] deletes one of
//! ours. Either refuses a foreign file with [`Error::Foreign`] and leaves it as it was.

use std::io;
use std::path::{Path, PathBuf};

use super::{Shell, is_ours};
use crate::error::{Diagnose, ExitCode};

/// Failures of [`write()`] and [`remove`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file exists and was not written by cuenv (no marker line).
    #[error("{} exists and was not written by cuenv; leaving it alone", path.display())]
    Foreign { path: PathBuf },
    /// Reading, writing or deleting failed.
    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl Diagnose for Error {
    fn hint(&self) -> Option<String> {
        match self {
            Error::Foreign { path } => Some(format!(
                "move or delete {} yourself if cuenv should manage it (cuenv only replaces files \
                 whose first line contains \"{}\")",
                path.display(),
                super::MARKER
            )),
            Error::Io { path, source, .. } => Some(crate::error::io_hint(path, source)),
        }
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::Failure
    }
}

/// What [`write()`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// There was no file.
    Created,
    /// cuenv's older shim was replaced.
    Updated,
    /// cuenv's shim already had this content; nothing was written.
    Unchanged,
}

/// The bytes of a shim file: UTF-8, with a BOM for PowerShell only (Windows PowerShell 5.1
/// reads a .ps1 without BOM in the ANSI code page; cmd would run a BOM as part of the first
/// command, and POSIX shells and fish want none).
pub fn encode(shell: Shell, text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + 3);
    if shell == Shell::PowerShell {
        out.extend_from_slice("\u{feff}".as_bytes());
    }
    out.extend_from_slice(text.as_bytes());
    out
}

/// Reads `path` and tells whether it is cuenv's: `Ok(None)` when there is no file.
fn existing(path: &Path) -> Result<Option<(bool, Vec<u8>)>, Error> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let ours = is_ours(&String::from_utf8_lossy(&bytes));
            Ok(Some((ours, bytes)))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Io { action: "read", path: path.to_path_buf(), source }),
    }
}

/// Writes the shim `text` for `shell` to `path` (the folder must exist), unless a file that is
/// not cuenv's is there.
pub fn write(path: &Path, shell: Shell, text: &str) -> Result<WriteOutcome, Error> {
    debug_assert!(is_ours(text), "a shim must start with the marker line");
    let bytes = encode(shell, text);
    let outcome = match existing(path)? {
        None => WriteOutcome::Created,
        Some((false, _)) => {
            return Err(Error::Foreign { path: path.to_path_buf() });
        }
        Some((true, old)) if old == bytes => return Ok(WriteOutcome::Unchanged),
        Some((true, _)) => WriteOutcome::Updated,
    };
    crate::sys::fsutil::write_atomic(path, &bytes).map_err(|source| Error::Io { action: "write", path: path.to_path_buf(), source })?;
    Ok(outcome)
}

/// Deletes the shim at `path` if it is cuenv's: `Ok(true)` when deleted, `Ok(false)` when
/// there was no file.
pub fn remove(path: &Path) -> Result<bool, Error> {
    match existing(path)? {
        None => Ok(false),
        Some((false, _)) => Err(Error::Foreign { path: path.to_path_buf() }),
        Some((true, _)) => match crate::sys::fsutil::remove_file(path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(Error::Io { action: "delete", path: path.to_path_buf(), source }),
        },
    }
}
