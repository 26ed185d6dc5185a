//! Symlinks on Unix. Junctions do not exist here.

use std::io;
use std::path::Path;

use super::LinkKind;

pub fn create(kind: LinkKind, target: &Path, link: &Path) -> io::Result<()> {
    match kind {
        LinkKind::Symlink => std::os::unix::fs::symlink(target, link),
        LinkKind::Junction => Err(io::Error::new(io::ErrorKind::Unsupported, "junctions are Windows-only")),
    }
}

/// A new symlink at `scratch`, then `rename(2)` over `link`: atomic on POSIX.
pub fn retarget(kind: LinkKind, link: &Path, target: &Path, scratch: &Path) -> io::Result<()> {
    let _ = std::fs::remove_file(scratch);
    create(kind, target, scratch)?;
    crate::fsutil::fault_point("link-staged");
    std::fs::rename(scratch, link).inspect_err(|_| {
        let _ = std::fs::remove_file(scratch);
    })
}

pub fn read(link: &Path) -> io::Result<std::path::PathBuf> {
    std::fs::read_link(link)
}

pub fn remove(link: &Path) -> io::Result<()> {
    std::fs::remove_file(link)
}
