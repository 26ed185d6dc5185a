//! Junctions (and symlinks) on Windows.
//!
//! Creation uses the `junction` crate. Retargeting an existing junction is one
//! `FSCTL_SET_REPARSE_POINT` call on the open junction with a new mount-point buffer: a
//! reparse point with the same tag is replaced in place, so the path never disappears
//! (a folder cannot be renamed over an existing one on Windows; docs/facts.md §6).

use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::AsRawHandle;
use std::path::{Path, PathBuf};

use super::LinkKind;

const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
const FILE_FLAG_BACKUP_SEMANTICS: u32 = 0x0200_0000;
const IO_REPARSE_TAG_MOUNT_POINT: u32 = 0xA000_0003;
const FSCTL_SET_REPARSE_POINT: u32 = 0x0009_00A4;

pub fn create(kind: LinkKind, target: &Path, link: &Path) -> io::Result<()> {
    match kind {
        LinkKind::Junction => junction::create(target, link),
        LinkKind::Symlink => std::os::windows::fs::symlink_dir(target, link),
    }
}

pub fn retarget(kind: LinkKind, link: &Path, target: &Path, _scratch: &Path) -> io::Result<()> {
    match kind {
        LinkKind::Junction => set_mount_point(link, target),
        LinkKind::Symlink => {
            // Windows cannot replace a directory symlink atomically; remove, then create.
            std::fs::remove_dir(link)?;
            std::os::windows::fs::symlink_dir(target, link)
        }
    }
}

fn set_mount_point(link: &Path, target: &Path) -> io::Result<()> {
    let abs = std::path::absolute(target)?;
    let text = abs.as_os_str().to_string_lossy().replace('/', "\\");
    let wide = |s: &str| -> Vec<u16> { std::ffi::OsStr::new(s).encode_wide().collect() };
    // The substitute name is the NT spelling (`\??\C:\x`, `\??\UNC\srv\share\x`); the print
    // name is the one users see (`C:\x`, `\\srv\share\x`), never the relative `UNC\...`.
    let substitute = wide(&crate::sys::paths::nt_path(&text));
    let print = wide(&crate::sys::paths::strip_verbatim(&text));
    let (sub_bytes, print_bytes) = (substitute.len() * 2, print.len() * 2);
    // MountPointReparseBuffer: 4 u16 offsets/lengths, then both names, each NUL-terminated.
    let data_len = 8 + sub_bytes + 2 + print_bytes + 2;
    if data_len > 16 * 1024 - 8 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "junction target path is too long"));
    }
    let mut buf: Vec<u8> = Vec::with_capacity(8 + data_len);
    buf.extend_from_slice(&IO_REPARSE_TAG_MOUNT_POINT.to_le_bytes());
    buf.extend_from_slice(&(data_len as u16).to_le_bytes());
    buf.extend_from_slice(&0u16.to_le_bytes());
    buf.extend_from_slice(&0u16.to_le_bytes());
    buf.extend_from_slice(&(sub_bytes as u16).to_le_bytes());
    buf.extend_from_slice(&((sub_bytes + 2) as u16).to_le_bytes());
    buf.extend_from_slice(&(print_bytes as u16).to_le_bytes());
    for w in substitute.iter().chain([&0u16]).chain(print.iter()).chain([&0u16]) {
        buf.extend_from_slice(&w.to_le_bytes());
    }
    let file = std::fs::OpenOptions::new().read(true).write(true).custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS).open(link)?;
    let mut returned = 0u32;
    // SAFETY: the handle is open for the call's duration; `buf` outlives the call and its
    // length is passed; no output buffer is used.
    let ok = unsafe {
        windows_sys::Win32::System::IO::DeviceIoControl(
            file.as_raw_handle() as _,
            FSCTL_SET_REPARSE_POINT,
            buf.as_ptr().cast(),
            buf.len() as u32,
            std::ptr::null_mut(),
            0,
            &mut returned,
            std::ptr::null_mut(),
        )
    };
    if ok == 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

pub fn read(link: &Path) -> io::Result<PathBuf> {
    match std::fs::read_link(link) {
        Ok(p) => Ok(p),
        Err(_) => junction::get_target(link),
    }
}

pub fn remove(link: &Path) -> io::Result<()> {
    if junction::exists(link).unwrap_or(false) {
        junction::delete(link)?;
    }
    std::fs::remove_dir(link).or_else(|_| std::fs::remove_file(link))
}

/// `X:` when `p` is on a drive letter that Windows reports as a network drive
/// (`GetDriveTypeW` = `DRIVE_REMOTE`, e.g. a mapped `\\server\share`); `None` otherwise,
/// including when the path cannot be made absolute.
pub fn remote_drive(p: &Path) -> Option<String> {
    use std::path::{Component, Prefix};
    const DRIVE_REMOTE: u32 = 4;
    #[link(name = "kernel32")]
    unsafe extern "system" {
        fn GetDriveTypeW(root: *const u16) -> u32;
    }
    let abs = std::path::absolute(p).ok()?;
    let letter = match abs.components().next()? {
        Component::Prefix(pre) => match pre.kind() {
            Prefix::Disk(d) | Prefix::VerbatimDisk(d) => d as char,
            _ => return None,
        },
        _ => return None,
    };
    let root: Vec<u16> = format!("{letter}:\\").encode_utf16().chain([0]).collect();
    // SAFETY: `root` is a NUL-terminated UTF-16 string that outlives the call.
    let kind = unsafe { GetDriveTypeW(root.as_ptr()) };
    (kind == DRIVE_REMOTE).then(|| format!("{letter}:"))
}

/// The file system name of the volume holding `folder` (`NTFS`, `FAT32`, `exFAT`, ...), from
/// `GetVolumePathNameW` and `GetVolumeInformationW`; `None` when Windows does not tell.
pub fn fs_type(folder: &Path) -> Option<String> {
    #[link(name = "kernel32")]
    unsafe extern "system" {
        fn GetVolumePathNameW(file: *const u16, volume: *mut u16, len: u32) -> i32;
        fn GetVolumeInformationW(
            root: *const u16,
            name: *mut u16,
            name_len: u32,
            serial: *mut u32,
            max_component: *mut u32,
            flags: *mut u32,
            fs_name: *mut u16,
            fs_name_len: u32,
        ) -> i32;
    }
    let abs = std::path::absolute(folder).ok()?;
    let path: Vec<u16> = abs.as_os_str().encode_wide().chain([0]).collect();
    let mut root = vec![0u16; path.len().max(261) + 1];
    let mut fs = [0u16; 261];
    // SAFETY: `path` is NUL-terminated; `root` and `fs` are writable buffers of the lengths
    // passed; the other out-pointers may be null.
    let ok = unsafe {
        GetVolumePathNameW(path.as_ptr(), root.as_mut_ptr(), root.len() as u32) != 0
            && GetVolumeInformationW(
                root.as_ptr(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                fs.as_mut_ptr(),
                fs.len() as u32,
            ) != 0
    };
    if ok { super::utf16_until_nul(&fs) } else { None }
}
