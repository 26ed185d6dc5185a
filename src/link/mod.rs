//! Folder links: how views point at toolkit roots and store entries, and how stable paths
//! point at generations.
//!
//! Windows uses NTFS directory junctions (no privilege needed; local NTFS/ReFS only; the
//! target is stored absolute), Linux uses symlinks (docs/facts.md §6). After creating any
//! link, [`create`] reads it back and checks that it exists and points where intended:
//! Wine reports symlink creation as successful without creating anything (docs/facts.md §7).
//!
//! [`retarget`] switches an existing link to a new target in one step, which is what makes
//! a generation switch atomic: a `rename(2)` of a fresh symlink over the old one on Unix,
//! one `FSCTL_SET_REPARSE_POINT` on the open junction on Windows.
//!
//! A file system that cannot hold links at all (exFAT, FAT32, some FUSE and network mounts)
//! is told apart from other refusals by the OS error ([`cannot_hold_links`]) and reported as
//! [`LinkError::NoLinks`], naming the folder and its file system type where the OS tells it
//! (Linux: `statfs(2)`'s `f_type`, docs/facts.md §6; Windows: the volume's file system name).

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as sys;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as sys;

use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Diagnose, ExitCode};
use crate::sys::paths::same_path;

/// The kind of link to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkKind {
    /// An NTFS directory junction (Windows).
    Junction,
    /// A symbolic link.
    Symlink,
}

impl LinkKind {
    /// The platform's natural link kind: junctions on Windows, symlinks elsewhere.
    pub fn native() -> LinkKind {
        if cfg!(windows) { LinkKind::Junction } else { LinkKind::Symlink }
    }
}

/// Why a link could not be made.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The volume or OS refused to create the link.
    #[error("cannot create a {kind} at {}: {why}", link.display())]
    Refused {
        link: PathBuf,
        kind: &'static str,
        why: String,
        #[source]
        source: io::Error,
    },
    /// The OS said yes, but reading the link back shows nothing, or another target.
    #[error("the {kind} at {} was reported created but {found}", link.display())]
    NotCreated { link: PathBuf, kind: &'static str, found: String },
    /// A junction to or on a network share: NTFS junctions only work between local volumes
    /// (docs/facts.md §6), so this is refused before anything is created.
    #[error("cannot create a junction at {}: {} is on a network share ({share}), and junctions work only between local NTFS/ReFS volumes", link.display(), remote.display())]
    NetworkShare { link: PathBuf, remote: PathBuf, share: String },
    /// The file system of `folder` cannot hold links at all (exFAT, FAT32, some FUSE and
    /// network mounts): no link mode that makes links works there.
    #[error(
        "cannot create a {kind} at {}: the file system of {}{} cannot hold links",
        link.display(),
        folder.display(),
        fs_type.as_ref().map(|t| format!(" ({t})")).unwrap_or_default()
    )]
    NoLinks {
        link: PathBuf,
        kind: &'static str,
        /// The folder the link was to be made in.
        folder: PathBuf,
        /// Its file system type, where the OS tells it (`exFAT`, `FUSE`, `NFS`, ...).
        fs_type: Option<String>,
        #[source]
        source: io::Error,
    },
    /// This kind of link does not exist on this platform (a junction off Windows).
    #[error("{kind}s do not exist on this platform")]
    Unsupported { kind: &'static str },
    /// Other I/O.
    #[error("cannot update the link {}", link.display())]
    Io {
        link: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl Diagnose for LinkError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            LinkError::Refused { link, source, .. } => match source.raw_os_error() {
                Some(448) if cfg!(windows) => {
                    "move the cuenv home (--home or CUENV_HOME) to a local NTFS folder outside the cloud drive, e.g. %LOCALAPPDATA%\\cuenv".into()
                }
                Some(1314) if cfg!(windows) => {
                    "turn on Developer Mode (or run as administrator), or use `link-mode = \"auto\"`: junctions need no privilege".into()
                }
                _ => crate::error::io_hint(link, source),
            },
            LinkError::NotCreated { .. } => {
                "this volume does not support links (FAT32/exFAT, a network share, a cloud-drive folder, or Wine): move the cuenv home (--home or CUENV_HOME) to a local NTFS or ext4 folder, or set `link-mode = \"none\"` (or `auto`) under [settings]: the link-free mode makes no links".into()
            }
            LinkError::NetworkShare { .. } => {
                "keep the cuenv home (CUENV_HOME), its store and the CUDA toolkit roots on a local NTFS drive, e.g. %LOCALAPPDATA%\\cuenv (a mapped network drive is a network share too)".into()
            }
            LinkError::NoLinks { .. } => "move the cuenv home (--home or CUENV_HOME) to a folder on a local file system that holds links (ext4, XFS or Btrfs on Linux; NTFS on Windows), or set `link-mode = \"none\"` (or `auto`) under [settings]: the link-free mode makes no links".into(),
            LinkError::Unsupported { kind } => {
                format!("`link-mode = \"{kind}\"` cannot work here: use `link-mode = \"auto\"`, which picks junctions on Windows and symlinks elsewhere")
            }
            LinkError::Io { link, source } => crate::error::io_hint(link, source),
        })
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::Failure
    }
}

fn kind_name(kind: LinkKind) -> &'static str {
    match kind {
        LinkKind::Junction => "junction",
        LinkKind::Symlink => "symlink",
    }
}

/// Whose numbering a raw OS error code is in: the host's ([`Os::HOST`]), or another's in
/// tests, so the Windows mapping is tested on every host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Os {
    /// `errno` values, as the host's libc numbers them.
    Unix,
    /// Windows system error codes (`GetLastError`).
    Windows,
}

impl Os {
    /// The host's numbering.
    const HOST: Os = if cfg!(windows) { Os::Windows } else { Os::Unix };
}

/// Windows `ERROR_INVALID_FUNCTION`: what FAT32 and exFAT answer to a junction or symlink.
const ERROR_INVALID_FUNCTION: i32 = 1;
/// Windows `ERROR_NOT_SUPPORTED`: what Wine answers to a junction (docs/facts.md §7).
const ERROR_NOT_SUPPORTED: i32 = 50;

/// Whether `e`, from a link call, means that the file system cannot hold links at all.
/// Linux and other Unix: `ENOSYS` (exFAT through FUSE), `EOPNOTSUPP`, and `EPERM`, which
/// `symlink(2)` returns when "the file system containing linkpath does not support the
/// creation of symbolic links" (vfat, exFAT). Windows: `ERROR_INVALID_FUNCTION` (1, FAT32 and
/// exFAT) and `ERROR_NOT_SUPPORTED` (50; what Wine answers, docs/facts.md §7).
pub fn cannot_hold_links(e: &io::Error) -> bool {
    e.raw_os_error().is_some_and(|code| no_links_code(Os::HOST, code))
}

/// Pure: whether the raw OS error `code`, numbered as `os` numbers them, means that the file
/// system cannot hold links (see [`cannot_hold_links`]). Unix numbers exist only on a Unix
/// host (they differ between Unixes): elsewhere `Os::Unix` is never one.
fn no_links_code(os: Os, code: i32) -> bool {
    match os {
        Os::Windows => [ERROR_INVALID_FUNCTION, ERROR_NOT_SUPPORTED].contains(&code),
        #[cfg(unix)]
        Os::Unix => [libc::ENOSYS, libc::EOPNOTSUPP, libc::ENOTSUP, libc::EPERM].contains(&code),
        #[cfg(not(unix))]
        Os::Unix => false,
    }
}

/// The error for a link call that failed with `source`: [`LinkError::NoLinks`] when the file
/// system cannot hold links ([`cannot_hold_links`]), else [`LinkError::Refused`] with the
/// reason in words.
fn refused(kind: &'static str, link: &Path, source: io::Error) -> LinkError {
    classify(Os::HOST, kind, link, source, &sys::fs_type)
}

/// Pure but for `fs_type` (the file system name of a folder, asked only for a file system
/// that cannot hold links): the [`LinkError`] for a link call at `link` that failed with
/// `source`, whose raw OS error is numbered as `os` numbers them.
fn classify(os: Os, kind: &'static str, link: &Path, source: io::Error, fs_type: &dyn Fn(&Path) -> Option<String>) -> LinkError {
    if source.raw_os_error().is_some_and(|code| no_links_code(os, code)) {
        let folder = link.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
        let fs_type = fs_type(&folder);
        return LinkError::NoLinks { link: link.into(), kind, folder, fs_type, source };
    }
    LinkError::Refused { link: link.into(), kind, why: explain(os, &source), source }
}

/// Puts the failure of a link call into words (the raw OS error, numbered as `os` numbers
/// them, stays as the source).
fn explain(os: Os, e: &io::Error) -> String {
    match (os, e.raw_os_error()) {
        (Os::Windows, Some(448)) => "a cloud-drive filter (e.g. OneDrive) refuses junctions here".into(),
        (Os::Windows, Some(1314)) => "creating symlinks needs administrator rights or Developer Mode".into(),
        _ => e.to_string(),
    }
}

/// The text of a UTF-16 buffer that Windows filled up to a NUL (a file system name from
/// `GetVolumeInformationW`); `None` when it is empty. Unpaired surrogates become U+FFFD.
/// Pure, so it is tested on every host.
#[cfg_attr(not(windows), allow(dead_code))]
fn utf16_until_nul(buf: &[u16]) -> Option<String> {
    let len = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    (len > 0).then(|| String::from_utf16_lossy(&buf[..len]))
}

/// Creates a link at `link` (which must not exist) pointing to the folder `target`, then
/// reads it back. On failure nothing is left at `link` (Wine leaves an empty folder behind
/// a refused junction; it is removed).
///
/// Errors: [`LinkError::NoLinks`] when the file system cannot hold links;
/// [`LinkError::Refused`] with the reason in words for other refusals;
/// [`LinkError::NotCreated`] when the read-back disagrees; [`LinkError::Unsupported`] for
/// junctions off Windows.
pub fn create(kind: LinkKind, target: &Path, link: &Path) -> Result<(), LinkError> {
    let name = kind_name(kind);
    refuse_unsupported(kind)?;
    refuse_network_junction(kind, target, link)?;
    if let Err(source) = sys::create(kind, target, link) {
        cleanup_failed(link);
        return Err(refused(name, link, source));
    }
    match read(link) {
        Ok(found) if same_path(&found, target) => Ok(()),
        Ok(found) => {
            cleanup_failed(link);
            Err(LinkError::NotCreated { link: link.into(), kind: name, found: format!("points to {}", found.display()) })
        }
        Err(_) => {
            cleanup_failed(link);
            Err(LinkError::NotCreated { link: link.into(), kind: name, found: "nothing is there".into() })
        }
    }
}

/// Points the existing link `link` at `target` in one atomic step, then reads it back.
/// `scratch` is a free path in the same folder (Unix builds the new symlink there first).
pub fn retarget(kind: LinkKind, link: &Path, target: &Path, scratch: &Path) -> Result<(), LinkError> {
    let name = kind_name(kind);
    refuse_unsupported(kind)?;
    refuse_network_junction(kind, target, link)?;
    sys::retarget(kind, link, target, scratch).map_err(|source| refused(name, link, source))?;
    match read(link) {
        Ok(found) if same_path(&found, target) => Ok(()),
        Ok(found) => Err(LinkError::NotCreated { link: link.into(), kind: name, found: format!("points to {}", found.display()) }),
        Err(_) => Err(LinkError::NotCreated { link: link.into(), kind: name, found: "nothing is there".into() }),
    }
}

/// Creates the link if `link` does not exist, else retargets it.
pub fn set(kind: LinkKind, link: &Path, target: &Path, scratch: &Path) -> Result<(), LinkError> {
    if is_link(link) { retarget(kind, link, target, scratch) } else { create(kind, target, link) }
}

/// The target a link (symlink or junction) stores, as stored. Errors when `link` is not a link.
pub fn read(link: &Path) -> io::Result<PathBuf> {
    sys::read(link)
}

/// True when `path` is a symlink or a junction (whether or not its target exists).
pub fn is_link(path: &Path) -> bool {
    sys::read(path).is_ok()
}

/// Removes a link (never what it points to). A missing link is not an error.
pub fn remove(link: &Path) -> io::Result<()> {
    match sys::remove(link) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Tries whether this process can make a `kind` link in `dir` (a folder of its own, such as
/// `Layout::link_probe`; created, then removed with all it holds, also when a
/// kill left it behind): creates `dir/target` and the link `dir/link` to it, checks that the
/// link really leads to the folder (Wine reports `CreateSymbolicLinkW` as successful but
/// creates nothing, docs/facts.md §7), then removes both. What a Windows process without
/// administrator rights or Developer Mode finds out before building anything.
///
/// Errors: the [`LinkError`] of the refused link ([`LinkError::Refused`] for error 1314,
/// [`LinkError::NoLinks`], [`LinkError::NotCreated`], [`LinkError::Unsupported`]), or
/// [`LinkError::Io`] when `dir` itself cannot be made or emptied. The debug-only test hook
/// `CUENV_TEST_FAIL_AT=link-probe` ([`crate::sys::fsutil::fault_error`]) refuses the link.
pub fn probe(kind: LinkKind, dir: &Path) -> Result<(), LinkError> {
    let (target, link) = (dir.join("target"), dir.join("link"));
    let io = |at: &Path| {
        let at = at.to_path_buf();
        move |source| LinkError::Io { link: at, source }
    };
    clear_probe(dir).map_err(io(dir))?;
    std::fs::create_dir_all(&target).map_err(io(&target))?;
    let made = crate::sys::fsutil::fault_error("link-probe")
        .map_err(|e| refused(kind_name(kind), &link, e))
        .and_then(|()| create(kind, &target, &link))
        .and_then(|()| {
            // `create` read the link back; that it leads to the folder is the last word.
            match std::fs::metadata(&link) {
                Ok(m) if m.is_dir() => Ok(()),
                _ => Err(LinkError::NotCreated { link: link.clone(), kind: kind_name(kind), found: "it does not lead to its folder".into() }),
            }
        });
    let cleared = clear_probe(dir).map_err(io(dir));
    made.and(cleared)
}

/// Removes the probe folder `dir` of [`probe`] and what it holds (the link first, never
/// what it points to). A missing folder is not an error.
fn clear_probe(dir: &Path) -> io::Result<()> {
    if std::fs::symlink_metadata(dir).is_err() {
        return Ok(());
    }
    let link = dir.join("link");
    if is_link(&link) {
        remove(&link)?;
    }
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Junctions exist only on Windows.
fn refuse_unsupported(kind: LinkKind) -> Result<(), LinkError> {
    if kind == LinkKind::Junction && !cfg!(windows) {
        return Err(LinkError::Unsupported { kind: kind_name(kind) });
    }
    Ok(())
}

/// Junctions cannot point to a network share, nor live on one (docs/facts.md §6): refuse
/// before anything is created, with a hint that says so (instead of the OS's
/// "Incorrect function" after the link folder was made).
fn refuse_network_junction(kind: LinkKind, target: &Path, link: &Path) -> Result<(), LinkError> {
    if kind != LinkKind::Junction {
        return Ok(());
    }
    for p in [target, link] {
        if let Some(share) = network_share(p) {
            return Err(LinkError::NetworkShare { link: link.into(), remote: p.into(), share });
        }
    }
    Ok(())
}

/// The network share `p` is on (`\\server\share`), or `None` for a local path. Windows
/// only: a UNC path (`\\server\share\...`, `//server/share/...`, `\\?\UNC\server\share\...`)
/// or a drive letter the OS reports as a network drive. Elsewhere always `None` (`//x` is a
/// local path on Linux).
pub fn network_share(p: &Path) -> Option<String> {
    if !cfg!(windows) {
        return None;
    }
    if let Some(share) = crate::sys::paths::unc_share(&p.to_string_lossy()) {
        return Some(share);
    }
    #[cfg(windows)]
    if let Some(drive) = sys::remote_drive(p) {
        return Some(drive);
    }
    None
}

fn cleanup_failed(link: &Path) {
    // Only ever an empty folder or a dangling link of our own making: never recurse.
    if is_link(link) {
        let _ = sys::remove(link);
    } else {
        let _ = std::fs::remove_dir(link);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_read_retarget_remove() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        let link = dir.path().join("link");
        match create(LinkKind::native(), &a, &link) {
            Ok(()) => {}
            // Under Wine junctions are refused (os error 50): the refusal is the tested path.
            Err(LinkError::Refused { .. } | LinkError::NoLinks { .. } | LinkError::NotCreated { .. }) if cfg!(windows) => {
                assert!(!link.exists(), "a refused link leaves nothing behind");
                return;
            }
            Err(e) => panic!("{e}"),
        }
        assert!(same_path(&read(&link).unwrap(), &a));
        retarget(LinkKind::native(), &link, &b, &dir.path().join("scratch")).unwrap();
        assert!(same_path(&read(&link).unwrap(), &b));
        assert!(!dir.path().join("scratch").exists());
        remove(&link).unwrap();
        assert!(!link.exists() && a.exists() && b.exists());
    }

    #[test]
    fn existing_path_is_refused_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let busy = dir.path().join("busy");
        std::fs::create_dir(&busy).unwrap();
        std::fs::write(busy.join("f"), "x").unwrap();
        assert!(create(LinkKind::native(), dir.path(), &busy).is_err());
        assert!(busy.join("f").exists(), "never removes what was there");
    }

    #[test]
    fn network_shares_only_exist_on_windows() {
        let local = tempfile::tempdir().unwrap();
        assert_eq!(network_share(local.path()), None, "a temp folder is local");
        if cfg!(windows) {
            assert_eq!(network_share(Path::new(r"\\nas\cudnn\store")).as_deref(), Some(r"\\nas\cudnn"));
            assert_eq!(network_share(Path::new(r"C:\Windows")), None);
        } else {
            // `//x/y` is an ordinary path on Linux.
            assert_eq!(network_share(Path::new("//nas/cudnn/store")), None);
        }
    }

    /// A junction to a store on `\\server\share` (or in a home there) is refused before
    /// anything is created, with a hint; symlinks are left to the OS.
    #[test]
    fn junctions_to_or_on_network_shares_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("local");
        std::fs::create_dir(&local).unwrap();
        let link = dir.path().join("link");
        let remote = Path::new(r"\\nas\cudnn\store\cudnn-9.5.0.50-cuda12-windows-x86_64-0123456789ab");
        if cfg!(windows) {
            let e = create(LinkKind::Junction, remote, &link).unwrap_err();
            assert!(matches!(&e, LinkError::NetworkShare { share, .. } if share == r"\\nas\cudnn"), "{e:?}");
            let msg = e.to_string();
            assert!(msg.contains("network share") && msg.contains(r"\\nas\cudnn"), "{msg}");
            let hint = e.hint().unwrap();
            assert!(hint.contains("local NTFS") && hint.contains("CUENV_HOME"), "{hint}");
            assert!(std::fs::symlink_metadata(&link).is_err(), "nothing created");
            // The link on a share (a home on \\server\share).
            let e = create(LinkKind::Junction, &local, Path::new(r"\\nas\home\cuenv\profiles")).unwrap_err();
            assert!(matches!(e, LinkError::NetworkShare { .. }), "{e:?}");
            let e = retarget(LinkKind::Junction, &link, Path::new(r"\\?\UNC\nas\cudnn\x"), &dir.path().join("s")).unwrap_err();
            assert!(matches!(e, LinkError::NetworkShare { .. }), "{e:?}");
        } else {
            // Off Windows a junction is simply unsupported, whatever the target.
            assert!(matches!(create(LinkKind::Junction, remote, &link), Err(LinkError::Unsupported { .. })));
        }
        assert!(!matches!(create(LinkKind::Symlink, &local, &link), Err(LinkError::NetworkShare { .. })));
    }

    /// The OS errors that mean "this file system cannot hold links" are
    /// one error kind, whatever link mode was asked: before, `ENOSYS` / `EOPNOTSUPP` (Rust's
    /// `ErrorKind::Unsupported`) read "symlinks do not exist on this platform" with the hint to
    /// use `link-mode = "auto"`, which was in use.
    #[test]
    fn errors_that_mean_no_links_are_classified() {
        let os = io::Error::from_raw_os_error;
        #[cfg(unix)]
        let (no_links, other) = ([libc::ENOSYS, libc::EOPNOTSUPP, libc::ENOTSUP, libc::EPERM], [libc::EACCES, libc::EEXIST, libc::ENOSPC, libc::EROFS]);
        #[cfg(windows)]
        let (no_links, other) = ([1, 50], [5, 32, 183, 448, 1314]);
        for code in no_links {
            assert!(cannot_hold_links(&os(code)), "os error {code}");
            let dir = Path::new("home").join("generations");
            let e = refused("symlink", &dir.join("link"), os(code));
            let LinkError::NoLinks { folder, .. } = &e else { panic!("os error {code}: {e:?}") };
            assert_eq!(folder, &dir);
            let msg = e.to_string();
            assert!(msg.starts_with(&format!("cannot create a symlink at {}: the file system of {}", dir.join("link").display(), dir.display())), "{msg}");
            assert!(msg.ends_with("cannot hold links"), "{msg}");
            let hint = e.hint().unwrap();
            assert!(hint.starts_with("move the cuenv home") && !hint.contains("link-mode = \"auto\""), "{hint}");
            assert_eq!(e.exit_code(), ExitCode::Failure);
        }
        for code in other {
            assert!(!cannot_hold_links(&os(code)), "os error {code}");
            assert!(matches!(refused("symlink", Path::new("l"), os(code)), LinkError::Refused { .. }), "os error {code}");
        }
        // An error without an OS code is never one.
        assert!(!cannot_hold_links(&io::Error::new(io::ErrorKind::Unsupported, "x")));
        // A junction off Windows stays "does not exist on this platform", with the hint to use `auto`.
        if !cfg!(windows) {
            let e = refuse_unsupported(LinkKind::Junction).unwrap_err();
            assert_eq!(e.to_string(), "junctions do not exist on this platform");
            assert!(e.hint().unwrap().contains("link-mode = \"auto\""));
        }
    }

    /// The Windows half of telling a volume that cannot hold links, on every host (the Windows API calls themselves
    /// are only compile-checked here): errors 1 and 50 with the volume's file system name
    /// make one "cannot hold links" error naming both; other Windows codes are refusals in
    /// words.
    #[test]
    fn windows_errors_map_to_no_links_on_every_host() {
        let os = io::Error::from_raw_os_error;
        let folder = Path::new("D:").join("cuenv").join("generations");
        let link = folder.join(".tmp-2");
        for code in [ERROR_INVALID_FUNCTION, ERROR_NOT_SUPPORTED] {
            assert!(no_links_code(Os::Windows, code), "error {code}");
            let asked = std::cell::RefCell::new(Vec::new());
            let e = classify(Os::Windows, "junction", &link, os(code), &|p| {
                asked.borrow_mut().push(p.to_path_buf());
                Some("FAT32".into())
            });
            assert_eq!(asked.into_inner(), std::slice::from_ref(&folder), "the file system of the link's folder is asked, once");
            let msg = e.to_string();
            assert_eq!(msg, format!("cannot create a junction at {}: the file system of {} (FAT32) cannot hold links", link.display(), folder.display()));
            assert!(e.hint().unwrap().starts_with("move the cuenv home"), "{e:?}");
            assert_eq!(e.exit_code(), ExitCode::Failure);
            // Without a name from Windows, the folder alone.
            let e = classify(Os::Windows, "symlink", &link, os(code), &|_| None);
            assert!(e.to_string().ends_with(&format!("the file system of {} cannot hold links", folder.display())), "{e}");
        }
        let never = |_: &Path| -> Option<String> { panic!("the file system is asked only for a file system without links") };
        for (code, why) in [
            (448, Some("a cloud-drive filter (e.g. OneDrive) refuses junctions here")),
            (1314, Some("creating symlinks needs administrator rights or Developer Mode")),
            (5, None),
            (32, None),
            (183, None),
        ] {
            assert!(!no_links_code(Os::Windows, code), "error {code}");
            let e = classify(Os::Windows, "junction", &link, os(code), &never);
            let LinkError::Refused { why: said, .. } = &e else { panic!("error {code}: {e:?}") };
            if let Some(why) = why {
                assert_eq!(said, why);
            }
        }
        // Unix numbers are the host's: a Windows code means nothing there, and vice versa.
        #[cfg(unix)]
        {
            assert!(no_links_code(Os::Unix, libc::EOPNOTSUPP) && !no_links_code(Os::Windows, libc::EOPNOTSUPP));
            assert!(!no_links_code(Os::Unix, ERROR_NOT_SUPPORTED), "50 is not a link errno");
        }
        #[cfg(not(unix))]
        assert!(!no_links_code(Os::Unix, ERROR_NOT_SUPPORTED));
    }

    /// The file system name Windows writes into a NUL-padded UTF-16 buffer.
    #[test]
    fn file_system_names_are_read_up_to_the_nul() {
        let buf = |s: &str, len: usize| -> Vec<u16> {
            let mut v: Vec<u16> = s.encode_utf16().collect();
            v.resize(len, 0);
            v
        };
        assert_eq!(utf16_until_nul(&buf("NTFS", 261)).as_deref(), Some("NTFS"));
        assert_eq!(utf16_until_nul(&buf("exFAT", 261)).as_deref(), Some("exFAT"));
        assert_eq!(utf16_until_nul(&buf("", 261)), None, "Windows said nothing");
        assert_eq!(utf16_until_nul(&buf("FAT32", 5)).as_deref(), Some("FAT32"), "a full buffer without a NUL");
        assert_eq!(utf16_until_nul(&[0xD800, u16::from(b'x'), 0]).as_deref(), Some("\u{FFFD}x"), "an unpaired surrogate");
    }

    /// Linux: the file system type comes from statfs's `f_type` (docs/facts.md §6).
    #[cfg(target_os = "linux")]
    #[test]
    fn file_system_types_are_named() {
        assert_eq!(sys::fs_name(0x2011_BAB0), Some("exFAT"));
        assert_eq!(sys::fs_name(0x4d44), Some("FAT (msdos/vfat)"));
        assert_eq!(sys::fs_name(0x6573_5546), Some("FUSE"));
        assert_eq!(sys::fs_name(0x6969), Some("NFS"));
        assert_eq!(sys::fs_name(0xFF53_4D42), Some("CIFS/SMB"));
        assert_eq!(sys::fs_name(0x1234_5678), None);
        let t = sys::fs_type(Path::new("/")).expect("statfs of /");
        assert!(t.contains("f_type 0x"), "{t}");
        assert_eq!(sys::fs_type(Path::new("/no/such/folder")), None);
    }
}
