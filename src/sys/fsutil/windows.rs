//! Windows: an opened folder is held without `FILE_SHARE_DELETE`, so nobody can rename or
//! delete it (swap it for a junction) while cuenv writes into it; files and folders whose
//! attributes change are opened with `FILE_FLAG_OPEN_REPARSE_POINT`, so a junction or a
//! symbolic link is never followed, only seen (and left alone).

use std::ffi::OsStr;
use std::fs;
use std::io::{self, Write};
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::AsRawHandle;
use std::path::Path;

use windows_sys::Win32::Storage::FileSystem::{
    BY_HANDLE_FILE_INFORMATION, FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT, FILE_READ_ATTRIBUTES, FILE_SHARE_READ, FILE_SHARE_WRITE,
    FILE_WRITE_ATTRIBUTES, GetFileInformationByHandle,
};

/// A folder's identity: (volume serial number, file index).
pub(super) type Id = (u64, u64);

fn handle_id(f: &fs::File) -> io::Result<Id> {
    // SAFETY: a zeroed plain-data struct, filled by the call from a handle we own.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    if unsafe { GetFileInformationByHandle(f.as_raw_handle() as _, &mut info) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((u64::from(info.dwVolumeSerialNumber), (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow)))
}

fn open_dir(dir: &Path, share_delete: bool) -> io::Result<fs::File> {
    let share = FILE_SHARE_READ | FILE_SHARE_WRITE | if share_delete { windows_sys::Win32::Storage::FileSystem::FILE_SHARE_DELETE } else { 0 };
    fs::OpenOptions::new().access_mode(FILE_READ_ATTRIBUTES).share_mode(share).custom_flags(FILE_FLAG_BACKUP_SEMANTICS).open(dir)
}

/// The identity of the folder at `dir` (junctions in the path followed: the folder the user named).
pub(super) fn identity(dir: &Path) -> io::Result<Id> {
    handle_id(&open_dir(dir, true)?)
}

/// An open folder, held so that it cannot be renamed or deleted while cuenv writes into it.
pub(super) struct Dir {
    handle: fs::File,
    path: std::path::PathBuf,
}

impl Dir {
    /// Opens the folder `dir`, denying others the right to rename or delete it meanwhile.
    pub(super) fn open(dir: &Path) -> io::Result<Dir> {
        let handle = match open_dir(dir, false) {
            // Another program holds the folder with delete access (a scanner, say): it cannot
            // be held against a swap then, and the identity check alone stands.
            Err(e) if e.raw_os_error() == Some(32) => open_dir(dir, true)?,
            other => other?,
        };
        Ok(Dir { handle, path: dir.to_path_buf() })
    }

    /// The identity of the opened folder.
    pub(super) fn id(&self) -> io::Result<Id> {
        handle_id(&self.handle)
    }

    /// Writes `bytes` to `name` in this folder through a temporary file named by `tmp_name`,
    /// `sync_all`, then a rename retried while a scanner holds the new file. `before_rename`
    /// runs between the two (the tests' fault point).
    pub(super) fn write_new(&self, name: &OsStr, tmp_name: &dyn Fn() -> String, bytes: &[u8], before_rename: &dyn Fn()) -> io::Result<()> {
        let target = self.path.join(name);
        let (tmp, mut file) = loop {
            let tmp = self.path.join(tmp_name());
            match fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(f) => break (tmp, f),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        };
        let written = (|| -> io::Result<()> {
            file.write_all(bytes)?;
            file.sync_all()?;
            drop(file);
            before_rename();
            super::rename_with_retry(&tmp, &target)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written
    }

    /// Deletes the entry `name` of this folder (a link as a link: Windows never follows one
    /// to delete it).
    pub(super) fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        let p = self.path.join(name);
        fs::remove_file(&p).or_else(|e| if fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) { fs::remove_dir(&p) } else { Err(e) })
    }
}

/// Sets the read-only attribute under `root` without following a junction or a symbolic
/// link: each file is opened with `FILE_FLAG_OPEN_REPARSE_POINT` and changed only when what
/// was opened is no reparse point. Folders are left as they are (Windows ignores a folder's
/// read-only attribute for deletion). A `root` that is a link is left as it is.
pub(super) fn set_tree_readonly(root: &Path, readonly: bool, _with_root: bool) -> io::Result<()> {
    match fs::symlink_metadata(root) {
        Ok(m) if m.file_type().is_symlink() => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    for entry in walkdir::WalkDir::new(root).follow_links(false).follow_root_links(false) {
        let entry = entry.map_err(io::Error::other)?;
        if !entry.file_type().is_file() {
            continue;
        }
        let f = match fs::OpenOptions::new()
            .access_mode(FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
            .open(entry.path())
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let meta = f.metadata()?;
        if meta.file_type().is_symlink() || meta.is_dir() || meta.permissions().readonly() == readonly {
            continue;
        }
        let mut perms = meta.permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(readonly);
        f.set_permissions(perms)?;
    }
    Ok(())
}

/// Whether process `pid` is alive (it can be opened and has no exit code yet).
pub(super) fn process_alive(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, STILL_ACTIVE};
    use windows_sys::Win32::System::Threading::{GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION};
    // SAFETY: opens, queries and closes a handle we own.
    unsafe {
        let h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
        if h.is_null() {
            // Access denied means it exists (another user's process).
            return io::Error::last_os_error().raw_os_error() == Some(5);
        }
        let mut code = 0u32;
        let alive = GetExitCodeProcess(h, &mut code) != 0 && code == STILL_ACTIVE as u32;
        CloseHandle(h);
        alive
    }
}
