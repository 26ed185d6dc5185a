//! Unix: every step relative to an open folder descriptor, never following a link
//! (`openat` with `O_NOFOLLOW`, `renameat`, `unlinkat`, `fchmod` on what was opened), so a
//! folder swapped for a link between two steps cannot redirect the next one.

use std::ffi::{CStr, OsStr};
use std::fs;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, fchmod, fstat, fsync, openat, renameat, statat, unlinkat};
use rustix::io::Errno;

/// A folder's identity: (device, inode).
pub(super) type Id = (u64, u64);

/// The identity of the folder at `dir` (links in the path followed: the folder the user named).
pub(super) fn identity(dir: &Path) -> io::Result<Id> {
    use std::os::unix::fs::MetadataExt;
    let m = fs::metadata(dir)?;
    Ok((m.dev(), m.ino()))
}

/// An open folder: what [`super::write_atomic`] and [`super::remove_file`] act through.
pub(super) struct Dir {
    fd: OwnedFd,
}

const DIR_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);

impl Dir {
    /// Opens the folder `dir` (links in its path followed, as the user named it).
    pub(super) fn open(dir: &Path) -> io::Result<Dir> {
        match openat(CWD, dir, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => Ok(Dir { fd }),
            // A folder one may write but not list (`-wx`): Linux's `O_PATH` still serves the
            // `*at` calls (only the folder's fsync is lost).
            #[cfg(target_os = "linux")]
            Err(Errno::ACCESS) => Ok(Dir { fd: openat(CWD, dir, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())? }),
            Err(e) => Err(e.into()),
        }
    }

    /// The identity of the opened folder.
    pub(super) fn id(&self) -> io::Result<Id> {
        let st = fstat(&self.fd)?;
        Ok((st.st_dev, st.st_ino))
    }

    /// Writes `bytes` to `name` in this folder through a temporary file `tmp_name` (created
    /// exclusively, never through a link), `sync_all`, then `renameat`. `before_rename` runs
    /// between the two (the tests' fault point). The new file keeps the mode of the regular
    /// file it replaces, else 0644.
    pub(super) fn write_new(&self, name: &OsStr, tmp_name: &dyn Fn() -> String, bytes: &[u8], before_rename: &dyn Fn()) -> io::Result<()> {
        let mode = match statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => st.st_mode & 0o7777,
            _ => 0o644,
        };
        let flags = OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let (tmp, fd) = loop {
            let tmp = tmp_name();
            match openat(&self.fd, tmp.as_str(), flags, Mode::from_raw_mode(0o600)) {
                Ok(fd) => break (tmp, fd),
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(e.into()),
            }
        };
        let mut file = fs::File::from(fd);
        let written = (|| -> io::Result<()> {
            // Explicit: the umask applied at creation.
            fchmod(&file, Mode::from_raw_mode(mode))?;
            file.write_all(bytes)?;
            file.sync_all()?;
            before_rename();
            Ok(renameat(&self.fd, tmp.as_str(), &self.fd, name)?)
        })();
        if written.is_err() {
            let _ = unlinkat(&self.fd, tmp.as_str(), AtFlags::empty());
        }
        written?;
        let _ = fsync(&self.fd);
        Ok(())
    }

    /// Deletes the entry `name` of this folder (a link as a link).
    pub(super) fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        Ok(unlinkat(&self.fd, name, AtFlags::empty())?)
    }
}

/// Sets the write permission of the tree at `root` without following any link: `readonly`
/// clears it on every file and sub-folder (deepest first; `root` itself only when
/// `with_root`), else it adds the owner's write permission to every folder (`root` too),
/// which is all a deletion needs on Unix (a file's own mode does not matter). A `root` that
/// is a link or no folder is left as it is.
pub(super) fn set_tree_readonly(root: &Path, readonly: bool, with_root: bool) -> io::Result<()> {
    match openat(CWD, root, DIR_FLAGS | OFlags::NOFOLLOW, Mode::empty()) {
        Ok(fd) => walk(fd, readonly, with_root),
        // A link (ELOOP) or a file (ENOTDIR): nothing to walk; a missing root neither.
        Err(Errno::LOOP | Errno::NOTDIR | Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn walk(dir: OwnedFd, readonly: bool, chmod_self: bool) -> io::Result<()> {
    let mode = fstat(&dir)?.st_mode & 0o7777;
    if !readonly && chmod_self && mode & 0o200 == 0 {
        fchmod(&dir, Mode::from_raw_mode(mode | 0o200))?;
    }
    let mut children: Vec<(std::ffi::CString, FileType)> = Vec::new();
    for e in rustix::fs::Dir::read_from(&dir)? {
        let e = e?;
        let name: &CStr = e.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        children.push((name.to_owned(), e.file_type()));
    }
    for (name, ty) in children {
        let ty = match ty {
            FileType::Unknown => match statat(&dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => FileType::from_raw_mode(st.st_mode),
                Err(Errno::NOENT) => continue,
                Err(e) => return Err(e.into()),
            },
            t => t,
        };
        match ty {
            FileType::Directory => match openat(&dir, name.as_c_str(), DIR_FLAGS | OFlags::NOFOLLOW, Mode::empty()) {
                Ok(child) => walk(child, readonly, true)?,
                // Swapped for a link or a file, or gone, since it was listed: not ours to walk.
                Err(Errno::LOOP | Errno::NOTDIR | Errno::NOENT) => {}
                Err(e) => return Err(e.into()),
            },
            FileType::RegularFile if readonly => {
                let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
                match openat(&dir, name.as_c_str(), flags, Mode::empty()) {
                    Ok(f) => {
                        let st = fstat(&f)?;
                        if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile {
                            let m = st.st_mode & 0o7777;
                            if m & 0o222 != 0 {
                                fchmod(f.as_fd(), Mode::from_raw_mode(m & !0o222))?;
                            }
                        }
                    }
                    Err(Errno::LOOP | Errno::NOENT) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            _ => {}
        }
    }
    if readonly && chmod_self && mode & 0o222 != 0 {
        fchmod(&dir, Mode::from_raw_mode(mode & !0o222))?;
    }
    Ok(())
}

/// Whether process `pid` is alive (`kill(pid, 0)`: success or EPERM).
pub(super) fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
}
