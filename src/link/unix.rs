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
    crate::sys::fsutil::fault_point("link-staged");
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

/// The file system type of `folder` in words, from `statfs(2)`'s `f_type` (Linux; the magic
/// numbers of `include/uapi/linux/magic.h`, docs/facts.md §6), e.g. `exFAT, f_type
/// 0x2011bab0`; an unknown type as its number. `None` where `statfs` fails, and off Linux.
pub fn fs_type(folder: &Path) -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(folder.as_os_str().as_bytes()).ok()?;
        // SAFETY: `st` is plain data that statfs fills; `c` is NUL-terminated and outlives the call.
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
            return None;
        }
        // `f_type` is signed on some targets: the magic is its low 32 bits.
        let magic = st.f_type as u32;
        Some(match fs_name(magic) {
            Some(name) => format!("{name}, f_type {magic:#x}"),
            None => format!("f_type {magic:#x}"),
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = folder;
        None
    }
}

/// The name of a Linux file system magic number (`statfs(2)`'s `f_type`), for the file
/// systems that cannot hold links or are named in the advice (docs/facts.md §6).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(super) fn fs_name(magic: u32) -> Option<&'static str> {
    Some(match magic {
        0x2011_BAB0 => "exFAT",
        0x4d44 => "FAT (msdos/vfat)",
        0x6573_5546 => "FUSE",
        0x6969 => "NFS",
        0x517B => "SMB",
        0xFF53_4D42 => "CIFS/SMB",
        0xFE53_4D42 => "SMB2",
        0x0102_1997 => "9p",
        0x5346_544e => "NTFS",
        0xEF53 => "ext2/3/4",
        0x5846_5342 => "XFS",
        0x9123_683E => "Btrfs",
        0x0102_1994 => "tmpfs",
        0x794c_7630 => "overlayfs",
        _ => return None,
    })
}
