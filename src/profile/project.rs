//! Per-project pinning: a `.cuenv-profile` file names the profile a project uses, found from a
//! folder upward like `.python-version` (pyenv) or `.nvmrc` (nvm).
//!
//! The file holds one profile name on its first non-empty line (`#` starts a comment line;
//! surrounding whitespace and a UTF-8 BOM are ignored). `cuenv use` without a name, `cuenv
//! run` without `-p` and the directory hook (`cuenv env --hook`) read it.

use std::path::{Path, PathBuf};

use crate::error::{Diagnose, ExitCode};

/// The pin file's name.
pub const FILE_NAME: &str = ".cuenv-profile";

/// A `.cuenv-profile` found: the file and the profile it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The file (absolute when `start` was).
    pub file: PathBuf,
    /// The profile name it holds.
    pub profile: String,
}

/// A pin file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// It could not be read.
    #[error("cannot read {}: {source}", file.display())]
    Read { file: PathBuf, source: std::io::Error },
    /// It names no profile, or something that is not a profile name.
    #[error("{}:{line}: {what}", file.display())]
    Invalid { file: PathBuf, line: usize, what: String },
}

impl Diagnose for Error {
    fn hint(&self) -> Option<String> {
        Some(match self {
            Error::Read { .. } => "check the file's permissions, or delete it".into(),
            Error::Invalid { .. } => format!("write one profile name (letters, digits, '_', '.', '-') on the first line of {FILE_NAME}, e.g. `tf28`"),
        })
    }
    fn exit_code(&self) -> ExitCode {
        match self {
            Error::Read { .. } => ExitCode::Failure,
            Error::Invalid { .. } => ExitCode::Invalid,
        }
    }
}

/// The nearest `.cuenv-profile` in `start` or a folder above it, read. `Ok(None)` when there
/// is none up to the root.
pub fn find(start: &Path) -> Result<Option<Pin>, Error> {
    for dir in start.ancestors() {
        let file = dir.join(FILE_NAME);
        match std::fs::read(&file) {
            Ok(bytes) => return parse(&file, &bytes).map(Some),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => continue,
            // A folder `.cuenv-profile` is not a pin file.
            Err(_) if file.is_dir() => continue,
            Err(source) => return Err(Error::Read { file, source }),
        }
    }
    Ok(None)
}

/// Reads the profile name out of a pin file's bytes.
pub fn parse(file: &Path, bytes: &[u8]) -> Result<Pin, Error> {
    let invalid = |line: usize, what: String| Error::Invalid { file: file.to_path_buf(), line, what };
    let text =
        std::str::from_utf8(bytes).map_err(|e| invalid(1 + bytes[..e.valid_up_to()].iter().filter(|b| **b == b'\n').count(), "not UTF-8 text".into()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (i, line) in text.lines().enumerate() {
        let name = line.trim();
        if name.is_empty() || name.starts_with('#') {
            continue;
        }
        let ok = name.len() <= crate::profile::MAX_NAME_LEN && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
        if !ok {
            return Err(invalid(i + 1, format!("\"{}\" is not a profile name", crate::store::member::escape(name))));
        }
        return Ok(Pin { file: file.to_path_buf(), profile: name.to_string() });
    }
    Err(invalid(1, "names no profile".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_file_wins_and_comments_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(find(&deep).unwrap(), None);
        std::fs::write(dir.path().join(FILE_NAME), "tf28\n").unwrap();
        std::fs::write(dir.path().join("a").join(FILE_NAME), "\u{feff}# the project's profile\n\n  torch2  \r\n").unwrap();
        let pin = find(&deep).unwrap().unwrap();
        assert_eq!((pin.profile.as_str(), pin.file.as_path()), ("torch2", dir.path().join("a").join(FILE_NAME).as_path()));
        assert_eq!(find(dir.path()).unwrap().unwrap().profile, "tf28");
    }

    #[test]
    fn a_bad_file_is_named_with_its_line() {
        let f = Path::new("/p/.cuenv-profile");
        let e = parse(f, b"# x\ntf 28\n").unwrap_err();
        assert_eq!(e.to_string(), "/p/.cuenv-profile:2: \"tf 28\" is not a profile name");
        assert_eq!(e.exit_code(), ExitCode::Invalid);
        assert!(parse(f, b"\n# only a comment\n").unwrap_err().to_string().ends_with(":1: names no profile"));
        assert!(parse(f, b"tf\xff\n").unwrap_err().to_string().ends_with(":1: not UTF-8 text"));
    }
}
