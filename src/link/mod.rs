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
use crate::paths::same_path;

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
    /// This kind of link does not exist on this platform.
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
            LinkError::Refused { .. } | LinkError::NotCreated { .. } => {
                "this volume does not support links (FAT32/exFAT, a network share, a cloud-drive folder, or Wine): move the cuenv home (--home or CUENV_HOME) to a local NTFS or ext4 folder; when only the store or a toolkit lives on such a volume, set `link-mode = \"copy\"` under [settings] to copy store entries into the views".into()
            }
            LinkError::NetworkShare { .. } => {
                "keep the cuenv home (CUENV_HOME), its store and the CUDA toolkit roots on a local NTFS drive, e.g. %LOCALAPPDATA%\\cuenv (a mapped network drive is a network share too)".into()
            }
            LinkError::Unsupported { .. } => "use `link-mode = \"auto\"`, which picks junctions on Windows and symlinks elsewhere".into(),
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

/// Puts the failure of a link call into words (the raw OS error stays as the source).
fn explain(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(1) if cfg!(windows) => "the volume does not support junctions (\"Incorrect function\": FAT32 or exFAT)".into(),
        Some(50) if cfg!(windows) => "the file system does not support junctions (\"The request is not supported\")".into(),
        Some(448) if cfg!(windows) => "a cloud-drive filter (e.g. OneDrive) refuses junctions here".into(),
        Some(1314) if cfg!(windows) => "creating symlinks needs administrator rights or Developer Mode".into(),
        _ => e.to_string(),
    }
}

/// Creates a link at `link` (which must not exist) pointing to the folder `target`, then
/// reads it back. On failure nothing is left at `link` (Wine leaves an empty folder behind
/// a refused junction; it is removed).
///
/// Errors: [`LinkError::Refused`] with the reason in words; [`LinkError::NotCreated`] when
/// the read-back disagrees; [`LinkError::Unsupported`] for junctions off Windows.
pub fn create(kind: LinkKind, target: &Path, link: &Path) -> Result<(), LinkError> {
    let name = kind_name(kind);
    refuse_network_junction(kind, target, link)?;
    if let Err(source) = sys::create(kind, target, link) {
        cleanup_failed(link);
        if source.kind() == io::ErrorKind::Unsupported {
            return Err(LinkError::Unsupported { kind: name });
        }
        return Err(LinkError::Refused { link: link.into(), kind: name, why: explain(&source), source });
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
    refuse_network_junction(kind, target, link)?;
    sys::retarget(kind, link, target, scratch).map_err(|source| LinkError::Refused { link: link.into(), kind: name, why: explain(&source), source })?;
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
    if let Some(share) = crate::paths::unc_share(&p.to_string_lossy()) {
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
            Err(LinkError::Refused { .. } | LinkError::NotCreated { .. }) if cfg!(windows) => {
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
}
