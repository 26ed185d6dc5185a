//! Path spelling and identity: the one place that knows Windows' `\\?\` verbatim prefix,
//! how two spellings of one folder compare, and which share a UNC path is on.
//!
//! Two layers, kept apart on purpose:
//!
//! - **Host paths** ([`canonicalize`], [`simplified`]): paths the running OS produced. They
//!   use the `dunce` crate (as uv-fs does): on Windows the `\\?\` prefix that
//!   `fs::canonicalize` adds is dropped only where that is safe (a local drive, under 260
//!   characters, no reserved names such as `CON`, no trailing dots or spaces); a share stays
//!   `\\?\UNC\...`. Elsewhere they are `std`'s. Use them for identity and further I/O.
//! - **Windows spellings as text, on any host** ([`shown`], [`strip_verbatim`],
//!   [`same_path`], [`key`], [`is_under`], [`unc_share`], [`nt_path`]): plain string rules
//!   that run the same on Linux, so cuenv handles Windows spellings wherever they come from
//!   (a shim written for cmd.exe, text read from a lock file or from a Wine process) and its
//!   tests check them on Linux. On Linux `\\?\C:\x` is not a Windows path (it is a relative
//!   file name), so `dunce` rightly leaves it alone there; these functions do not.
//!
//! Invariants:
//! - Stripping never makes a path relative: `\\?\C:\x` -> `C:\x`, `\\?\UNC\srv\share\x` ->
//!   `\\srv\share\x`; any other verbatim form (`\\?\Volume{...}\`, `\\?\GLOBALROOT\`) is
//!   kept as it is (a bare cut of `\\?\` once turned a share into the relative
//!   `UNC\srv\share\x`).
//! - What users and shims see is the [`shown`] spelling (no `\\?\` on a drive or a share).
//! - Two paths are the same when their [`key`]s are equal: either slash, no trailing
//!   separator, no verbatim prefix, and case-folded on Windows (docs/facts.md §6: Windows
//!   file systems are case-insensitive; Linux paths are case-sensitive).

use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Diagnose, ExitCode};

/// The host's canonical path (symlinks and junctions resolved, absolute), through
/// `dunce::canonicalize`: on Windows without the `\\?\` prefix where dropping it is safe,
/// otherwise (long paths, reserved names, shares) with it. On Unix exactly
/// `std::fs::canonicalize`.
///
/// Errors: as `std::fs::canonicalize` (the path does not exist, a component is not a folder).
pub fn canonicalize(p: &Path) -> io::Result<PathBuf> {
    dunce::canonicalize(p)
}

/// `p` without the `\\?\` prefix where dropping it is safe on this host (`dunce::simplified`;
/// see [`canonicalize`] for the rules). Unchanged on Unix. No I/O.
pub fn simplified(p: &Path) -> &Path {
    dunce::simplified(p)
}

/// [`canonicalize`], then spelled as users see it ([`shown`]); for paths that are both
/// compared and printed.
pub fn canonical_shown(p: &Path) -> io::Result<PathBuf> {
    canonicalize(p).map(|c| shown(&c))
}

/// The verbatim prefix removed from Windows-syntax text, on any host:
/// `\\?\C:\x` -> `C:\x`, `\\?\UNC\srv\share\x` -> `\\srv\share\x`. Any other string
/// (another verbatim form such as `\\?\Volume{...}\x`, a device path `\\.\x`, an ordinary
/// path) is returned unchanged, so the result is never relative when the input was not.
pub fn strip_verbatim(s: &str) -> Cow<'_, str> {
    if let Some(rest) = s.strip_prefix(r"\\?\UNC\") {
        return Cow::Owned(format!(r"\\{rest}"));
    }
    if let Some(rest) = s.strip_prefix(r"\\?\") {
        let b = rest.as_bytes();
        if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
            return Cow::Borrowed(rest);
        }
    }
    Cow::Borrowed(s)
}

/// The spelling users and shims see: [`strip_verbatim`] applied to `p` (string rules, any
/// host; a path that is not valid Unicode is returned unchanged). On Unix an absolute path
/// never starts with `\\?\`, so this changes only Windows spellings.
pub fn shown(p: &Path) -> PathBuf {
    match p.to_str() {
        Some(s) => match strip_verbatim(s) {
            Cow::Borrowed(b) if b.len() == s.len() => p.to_path_buf(),
            other => PathBuf::from(other.into_owned()),
        },
        None => p.to_path_buf(),
    }
}

/// The comparison key of a path: separators unified (`/` -> `\` on Windows), the verbatim
/// prefix removed ([`strip_verbatim`]), trailing separators trimmed, and on Windows
/// lowercased (Unicode case folding, so `Ë` and `ë` match). Two paths name the same place
/// (as far as text can tell) when their keys are equal.
pub fn key(p: &Path) -> String {
    let s = p.to_string_lossy().replace('/', std::path::MAIN_SEPARATOR_STR);
    let s = strip_verbatim(&s).trim_end_matches(std::path::MAIN_SEPARATOR).to_string();
    if cfg!(windows) { s.to_lowercase() } else { s }
}

/// Compares two paths as the platform does: equal [`key`]s (case-insensitively on
/// Windows, ignoring a `\\?\` prefix, either slash and a trailing separator). No I/O: it
/// does not resolve links; canonicalize both sides first where that matters.
pub fn same_path(a: &Path, b: &Path) -> bool {
    key(a) == key(b)
}

/// Whether `a` and `b` name the same file, by identity rather than spelling: equal by
/// [`same_path`], or equal once the folders holding them are resolved (symlinks, junctions,
/// `subst` drives, 8.3 names, case on Windows: what `canonicalize` resolves). The files
/// themselves need not exist; their folders must, for the second test. Use it wherever cuenv
/// decides "same or different" about files it writes or deletes.
pub fn same_place(a: &Path, b: &Path) -> bool {
    if same_path(a, b) {
        return true;
    }
    let resolved = |p: &Path| -> Option<PathBuf> {
        let name = p.file_name()?;
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        Some(canonicalize(parent).ok()?.join(name))
    };
    match (resolved(a), resolved(b)) {
        (Some(x), Some(y)) => same_path(&x, &y),
        _ => false,
    }
}

/// Whether `p` is `dir` or lies inside it, compared by [`key`] and whole components
/// (`/a/bc` is not inside `/a/b`). No I/O.
pub fn is_under(p: &Path, dir: &Path) -> bool {
    let (p, d) = (key(p), key(dir));
    p == d || (p.starts_with(&d) && p[d.len()..].starts_with(std::path::MAIN_SEPARATOR))
}

/// `\\server\share` when `s` is a UNC path in Windows syntax (either slash; also the
/// verbatim `\\?\UNC\` form), `\\server` when no share is named. Local verbatim (`\\?\C:\`)
/// and device (`\\.\`) paths are not shares. Pure string parsing: runs the same on every
/// platform (whether a path *is* on a share on this host is `link::network_share`).
pub fn unc_share(s: &str) -> Option<String> {
    let s = s.replace('/', "\\");
    let rest = if let Some(r) = s.strip_prefix(r"\\?\UNC\") {
        r
    } else if s.starts_with(r"\\?\") || s.starts_with(r"\\.\") {
        return None;
    } else {
        s.strip_prefix(r"\\")?
    };
    let mut parts = rest.split('\\').filter(|p| !p.is_empty());
    let server = parts.next()?;
    match parts.next() {
        Some(share) => Some(format!(r"\\{server}\{share}")),
        None => Some(format!(r"\\{server}")),
    }
}

/// The NT object-manager spelling of an absolute Windows path (what a junction's
/// substitute name holds): `C:\x` and `\\?\C:\x` -> `\??\C:\x`; `\\srv\share\x` and
/// `\\?\UNC\srv\share\x` -> `\??\UNC\srv\share\x`; `\\.\X` -> `\??\X`. String rules, any
/// host; `/` is read as `\`.
pub fn nt_path(s: &str) -> String {
    let s = s.replace('/', "\\");
    if let Some(rest) = s.strip_prefix(r"\\?\").or_else(|| s.strip_prefix(r"\\.\")).or_else(|| s.strip_prefix(r"\??\")) {
        format!(r"\??\{rest}")
    } else if let Some(rest) = s.strip_prefix(r"\\") {
        format!(r"\??\UNC\{rest}")
    } else {
        format!(r"\??\{s}")
    }
}

// ------------------------------------------------------------------ paths written as text

// Every path cuenv publishes is written as text (into a generation's TOML manifest, shims,
// `--json` output), so it must be valid Unicode: [`require_unicode`] refuses one that is not
// with a [`NotUnicode`] naming it (lossy, U+FFFD for the bad bytes) and the folder to rename.

/// What a path that must be written as text is (for [`NotUnicode`]'s message and hint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathRole {
    /// The cuenv home.
    Home,
    /// The profile file a generation is built from (its path goes into the manifest).
    ProfileFile,
    /// A profile's toolkit root (or its runtime folder).
    ToolkitRoot {
        /// The profile.
        profile: String,
    },
    /// A profile's conda env (its shims are written there).
    CondaEnv {
        /// The profile.
        profile: String,
    },
}

impl std::fmt::Display for PathRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathRole::Home => f.write_str("the cuenv home"),
            PathRole::ProfileFile => f.write_str("the profile file"),
            PathRole::ToolkitRoot { profile } => write!(f, "the toolkit root of profile `{profile}`"),
            PathRole::CondaEnv { profile } => write!(f, "the conda env of profile `{profile}`"),
        }
    }
}

/// A path cuenv must write as text (a manifest, a shim) is not valid Unicode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{role} {} is not valid UTF-8 (the name of the folder {} is not; shown with U+FFFD for its bad bytes), and cuenv writes this path into its manifests and shims as text",
    path.display(),
    folder.display()
)]
pub struct NotUnicode {
    /// What the path is.
    pub role: PathRole,
    /// The path.
    pub path: PathBuf,
    /// Its first component that is not valid UTF-8 (the folder to rename), as a path prefix.
    pub folder: PathBuf,
}

impl Diagnose for NotUnicode {
    fn hint(&self) -> Option<String> {
        let rename = format!("rename the folder {} to a UTF-8 name", self.folder.display());
        Some(match self.role {
            PathRole::Home => format!("{rename}, or use a cuenv home whose path is UTF-8 (--home DIR or CUENV_HOME)"),
            PathRole::ProfileFile => format!("{rename}, or keep the profile file in a folder whose path is UTF-8"),
            PathRole::ToolkitRoot { .. } => {
                format!("{rename}, or point [toolkits] (or CUENV_TOOLKIT_PATHS / CUDA_HOME) at a toolkit root whose path is UTF-8")
            }
            PathRole::CondaEnv { .. } => format!("{rename}, or use a conda env whose path is UTF-8"),
        })
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::Invalid
    }
}

/// The first prefix of `path` whose last component is not valid UTF-8 (the folder to
/// rename), or `None` when the whole path is valid Unicode.
pub fn first_non_unicode(path: &Path) -> Option<PathBuf> {
    if path.to_str().is_some() {
        return None;
    }
    let mut prefix = PathBuf::new();
    for c in path.components() {
        prefix.push(c);
        if c.as_os_str().to_str().is_none() {
            return Some(prefix);
        }
    }
    Some(path.to_path_buf())
}

/// Serializes a path as its lossy text (U+FFFD for bytes that are not UTF-8), as the text
/// output shows it: serde's own `Path` serialization fails on such a name, and every
/// `--json` printer treats a serialization error as a bug (it panicked). For
/// `#[serde(serialize_with = "crate::sys::paths::ser_lossy")]` on paths found on disk or in the
/// environment.
pub(crate) fn ser_lossy<S: serde::Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

/// [`ser_lossy`] for an optional path.
pub(crate) fn ser_lossy_opt<S: serde::Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Some(p) => s.serialize_some(&p.to_string_lossy()),
        None => s.serialize_none(),
    }
}

/// `Ok` when `path` is valid Unicode, else a [`NotUnicode`] naming it as `role`.
pub fn require_unicode(role: PathRole, path: &Path) -> Result<(), NotUnicode> {
    match first_non_unicode(path) {
        None => Ok(()),
        Some(folder) => Err(NotUnicode { role, path: path.to_path_buf(), folder }),
    }
}

/// The first of `names` found as a file in a folder of `PATH` (names first, then folders in
/// order); on Windows a name without an extension is also tried with `.exe`.
pub fn on_path(names: &[&str]) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    names.iter().find_map(|n| {
        let mut tries = vec![n.to_string()];
        if cfg!(windows) && std::path::Path::new(n).extension().is_none() {
            tries.push(format!("{n}.exe"));
        }
        std::env::split_paths(&path).flat_map(|d| tries.iter().map(move |t| d.join(t))).find(|p| p.is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_non_unicode_path_is_named_with_the_folder_to_rename() {
        use std::os::unix::ffi::OsStrExt;
        let odd = Path::new("/data").join(std::ffi::OsStr::from_bytes(b"cudnn-\xff"));
        let home = odd.join("cuenv");
        assert_eq!(first_non_unicode(Path::new("/data/cuenv")), None);
        assert_eq!(first_non_unicode(&home), Some(odd.clone()));
        let e = require_unicode(PathRole::Home, &home).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the cuenv home /data/cudnn-\u{FFFD}/cuenv is not valid UTF-8 (the name of the folder /data/cudnn-\u{FFFD} is not; shown with U+FFFD for its bad bytes), and cuenv writes this path into its manifests and shims as text"
        );
        assert!(e.hint().unwrap().starts_with("rename the folder /data/cudnn-\u{FFFD} to a UTF-8 name"), "{:?}", e.hint());
        assert_eq!(e.exit_code(), ExitCode::Invalid);
        assert!(require_unicode(PathRole::Home, Path::new("/data/ünï")).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn same_place_sees_through_a_linked_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let (real, other) = (tmp.path().join("env"), tmp.path().join("other"));
        std::fs::create_dir_all(&real).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::os::unix::fs::symlink(&real, tmp.path().join("link")).unwrap();
        // The file need not exist; its folder must.
        assert!(same_place(&real.join("a.sh"), &tmp.path().join("link/a.sh")));
        assert!(same_place(&real.join("a.sh"), &real.join("a.sh/")));
        assert!(!same_place(&real.join("a.sh"), &other.join("a.sh")));
        assert!(!same_place(&real.join("a.sh"), &tmp.path().join("link/b.sh")));
        assert!(!same_place(&tmp.path().join("missing/a.sh"), &other.join("a.sh")));
    }

    #[test]
    fn verbatim_prefix_is_stripped_only_where_the_path_stays_absolute() {
        assert_eq!(strip_verbatim(r"\\?\C:\Program Files\x"), r"C:\Program Files\x");
        assert_eq!(strip_verbatim(r"\\?\c:\x"), r"c:\x");
        // The share keeps its `\\`: the relative `UNC\srv\share\x` was the old bug.
        assert_eq!(strip_verbatim(r"\\?\UNC\srv\share\x"), r"\\srv\share\x");
        assert_eq!(strip_verbatim(r"\\?\UNC\srv\share"), r"\\srv\share");
        // Other verbatim forms have no shorter spelling: kept whole.
        assert_eq!(strip_verbatim(r"\\?\Volume{abc}\x"), r"\\?\Volume{abc}\x");
        assert_eq!(strip_verbatim(r"\\?\GLOBALROOT\Device\x"), r"\\?\GLOBALROOT\Device\x");
        assert_eq!(strip_verbatim(r"\\?\"), r"\\?\");
        assert_eq!(strip_verbatim(r"\\.\PhysicalDrive0"), r"\\.\PhysicalDrive0");
        assert_eq!(strip_verbatim(r"\\srv\share"), r"\\srv\share");
        assert_eq!(strip_verbatim(r"C:\x"), r"C:\x");
        assert_eq!(strip_verbatim("/usr/local"), "/usr/local");
        assert!(matches!(strip_verbatim("/usr/local"), Cow::Borrowed(_)));
    }

    #[test]
    fn shown_spelling_works_on_windows_text_on_any_host() {
        assert_eq!(shown(Path::new(r"\\?\C:\cuenv\bin")), PathBuf::from(r"C:\cuenv\bin"));
        assert_eq!(shown(Path::new(r"\\?\UNC\nas\home\cuenv")), PathBuf::from(r"\\nas\home\cuenv"));
        assert_eq!(shown(Path::new("/home/me/.cuenv")), PathBuf::from("/home/me/.cuenv"));
        assert!(!shown(Path::new(r"\\?\UNC\srv\share\x")).to_string_lossy().starts_with("UNC"), "never relative");
    }

    #[test]
    fn host_paths_go_through_dunce() {
        let dir = tempfile::tempdir().unwrap();
        let c = canonicalize(dir.path()).unwrap();
        assert!(c.is_absolute());
        assert!(!c.to_string_lossy().starts_with(r"\\?\"), "a short local path loses the prefix: {}", c.display());
        assert_eq!(canonical_shown(dir.path()).unwrap(), c);
        assert!(canonicalize(&dir.path().join("missing")).is_err());
        // Off Windows a `\\?\C:\x` string is a relative file name: the host layer leaves it.
        if cfg!(windows) {
            assert_eq!(simplified(Path::new(r"\\?\C:\x")), Path::new(r"C:\x"));
            assert_eq!(simplified(Path::new(r"\\?\C:\CON\x")), Path::new(r"\\?\C:\CON\x"), "reserved names keep the prefix");
            assert_eq!(simplified(Path::new(r"\\?\UNC\srv\share\x")), Path::new(r"\\?\UNC\srv\share\x"), "shares keep it too");
        } else {
            assert_eq!(simplified(Path::new(r"\\?\C:\x")), Path::new(r"\\?\C:\x"));
            assert_eq!(simplified(Path::new("/usr/lib")), Path::new("/usr/lib"));
        }
    }

    #[test]
    fn paths_compare_like_the_platform() {
        assert!(same_path(Path::new("/a/b/"), Path::new("/a/b")));
        assert!(!same_path(Path::new("/a/b"), Path::new("/a/bc")));
        // Verbatim prefixes are ignored on any host (text read from Windows).
        assert!(same_path(Path::new(r"\\?\C:\x\y"), Path::new(r"C:\x\y")));
        assert!(same_path(Path::new(r"\\?\UNC\srv\share\x"), Path::new(r"\\srv\share\x")));
        assert!(!same_path(Path::new(r"\\?\UNC\srv\share"), Path::new(r"UNC\srv\share")), "a share is not the relative UNC folder");
        assert!(!same_path(Path::new(r"\\?\Volume{a}\x"), Path::new(r"Volume{a}\x")));
        if cfg!(windows) {
            // Case-insensitive, either slash, a trailing separator, `\\?\` verbatim prefixes.
            assert!(same_path(Path::new(r"\\?\C:\X\y"), Path::new(r"c:\x\Y")));
            assert!(same_path(Path::new(r"C:/Program Files/NVIDIA/"), Path::new(r"c:\PROGRAM FILES\nvidia")));
            assert!(same_path(Path::new(r"\\?\UNC\Srv\Share\x"), Path::new(r"\\srv\share\X")));
            assert!(same_path(Path::new("C:\\Users\\ZO\u{CB}\\m"), Path::new("c:\\users\\zo\u{EB}\\M")), "non-ASCII letters fold too");
            assert!(!same_path(Path::new(r"C:\x"), Path::new(r"D:\x")));
            assert!(!same_path(Path::new(r"\\?\UNC\srv\share"), Path::new(r"C:\srv\share")));
        } else {
            assert!(!same_path(Path::new("/A/b"), Path::new("/a/b")), "Linux paths are case-sensitive");
            assert!(!same_path(Path::new(r"C:\X"), Path::new(r"c:\x")));
        }
    }

    #[test]
    fn inside_means_whole_components() {
        assert!(is_under(Path::new("/a/b"), Path::new("/a/b")));
        assert!(is_under(Path::new("/a/b/c"), Path::new("/a/b/")));
        assert!(!is_under(Path::new("/a/bc"), Path::new("/a/b")));
        assert!(!is_under(Path::new("/a"), Path::new("/a/b")));
        if cfg!(windows) {
            assert!(is_under(Path::new(r"\\?\C:\Store\e\bin"), Path::new(r"c:\store\E")));
        } else {
            assert!(!is_under(Path::new("/A/b/c"), Path::new("/a/b")));
        }
    }

    #[test]
    fn unc_paths_name_their_share() {
        assert_eq!(unc_share(r"\\server\share\cuenv\store").as_deref(), Some(r"\\server\share"));
        assert_eq!(unc_share("//server/share/cuenv").as_deref(), Some(r"\\server\share"));
        assert_eq!(unc_share(r"\\?\UNC\server\share\x").as_deref(), Some(r"\\server\share"));
        assert_eq!(unc_share(r"\\server").as_deref(), Some(r"\\server"));
        assert_eq!(unc_share(r"\\?\C:\cuenv"), None);
        assert_eq!(unc_share(r"\\.\PhysicalDrive0"), None);
        assert_eq!(unc_share(r"C:\Users\x"), None);
        assert_eq!(unc_share("/home/x"), None);
        assert_eq!(unc_share(r"\\"), None);
    }

    #[test]
    fn nt_spelling_of_drives_and_shares() {
        assert_eq!(nt_path(r"C:\cuenv\store\e"), r"\??\C:\cuenv\store\e");
        assert_eq!(nt_path(r"\\?\C:\cuenv"), r"\??\C:\cuenv");
        assert_eq!(nt_path("C:/cuenv"), r"\??\C:\cuenv");
        assert_eq!(nt_path(r"\\?\UNC\srv\share\x"), r"\??\UNC\srv\share\x");
        assert_eq!(nt_path(r"\\srv\share\x"), r"\??\UNC\srv\share\x");
        assert_eq!(nt_path(r"\\.\C:\x"), r"\??\C:\x");
        assert_eq!(nt_path(r"\??\C:\x"), r"\??\C:\x");
    }
}
