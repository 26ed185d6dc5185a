//! What another running process has loaded, without touching it: the files it has mapped
//! (Linux: `/proc/<pid>/maps`; Windows: `EnumProcessModulesEx` + `GetModuleFileNameExW` on a
//! handle opened for query and read) and its environment (Linux: `/proc/<pid>/environ`;
//! Windows: not read, the caller names the profile). Used by `cuenv doctor --pid`.
//!
//! Reads only; needs the rights the OS asks for reading another process (same user, or root /
//! administrator). A leaf: names no other cuenv module but `error` and `paths`.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::error::{Diagnose, ExitCode};

/// One file mapped into the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    /// The file (symlinks resolved by the kernel on Linux).
    pub path: PathBuf,
    /// Linux: the file was deleted (or replaced) after the process mapped it.
    pub deleted: bool,
}

/// Why a process could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// No process has this id.
    #[error("no process with id {pid} is running")]
    NoSuchProcess {
        /// The id asked for.
        pid: u32,
    },
    /// The OS refused to let this user read it.
    #[error("cannot read process {pid}: {source}")]
    Denied {
        /// The id asked for.
        pid: u32,
        /// The OS error.
        source: std::io::Error,
    },
    /// This platform has no way to list another process's modules.
    #[error("reading another process's libraries is not supported on this platform")]
    Unsupported,
}

impl Diagnose for ProcError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            ProcError::NoSuchProcess { .. } => "check the id (`ps`, `pgrep -f jupyter`, Task Manager's Details tab)".into(),
            ProcError::Denied { .. } => "run `cuenv doctor --pid` as the user that owns the process (or as root / administrator)".into(),
            ProcError::Unsupported => "`cuenv doctor --pid` works on Linux and Windows".into(),
        })
    }
    fn exit_code(&self) -> ExitCode {
        match self {
            ProcError::NoSuchProcess { .. } => ExitCode::Invalid,
            ProcError::Denied { .. } | ProcError::Unsupported => ExitCode::Failure,
        }
    }
}

/// The files mapped into process `pid`, in address order (Linux) or the loader's module order
/// (Windows), each once. Errors: no such process (exit 2), no right to read it (exit 1).
pub fn mapped_files(pid: u32) -> Result<Vec<Mapped>, ProcError> {
    imp::mapped_files(pid)
}

/// Process `pid`'s environment as it was when it started (Linux: `/proc/<pid>/environ`);
/// `Ok(None)` where the platform does not let cuenv read it (Windows).
pub fn environment(pid: u32) -> Result<Option<Vec<(OsString, OsString)>>, ProcError> {
    imp::environment(pid)
}

/// Parses `/proc/<pid>/maps` text: the path of each line that maps a file (a path starts at
/// the first `/` after the five fixed fields), each once, with its ` (deleted)` mark.
pub fn parse_maps(maps: &[u8]) -> Vec<Mapped> {
    let mut out: Vec<Mapped> = Vec::new();
    for m in map_lines(maps) {
        if !out.iter().any(|o| o.path == m.path) {
            out.push(m);
        }
    }
    out
}

/// Every line of `/proc/<pid>/maps` text that maps a file, in address order, repeats kept:
/// `address perms offset dev inode path`, the path starting at the first `/` after the five
/// fixed fields, with its ` (deleted)` mark split off.
pub fn map_lines(maps: &[u8]) -> impl Iterator<Item = Mapped> + '_ {
    maps.split(|b| *b == b'\n').filter_map(|line| {
        let mut fields = 0;
        let mut i = 0;
        while i < line.len() && fields < 5 {
            while i < line.len() && line[i] != b' ' {
                i += 1;
            }
            while i < line.len() && line[i] == b' ' {
                i += 1;
            }
            fields += 1;
        }
        let path = &line[i.min(line.len())..];
        if !path.starts_with(b"/") {
            return None;
        }
        let deleted = path.ends_with(b" (deleted)");
        let path = if deleted { &path[..path.len() - b" (deleted)".len()] } else { path };
        Some(Mapped { path: bytes_path(path), deleted })
    })
}

#[cfg(unix)]
fn bytes_path(b: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(OsString::from_vec(b.to_vec()))
}

#[cfg(not(unix))]
fn bytes_path(b: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(b).into_owned())
}

/// Parses `/proc/<pid>/environ` (NUL-separated `NAME=value`).
pub fn parse_environ(bytes: &[u8]) -> Vec<(OsString, OsString)> {
    bytes
        .split(|b| *b == 0)
        .filter(|kv| !kv.is_empty())
        .filter_map(|kv| {
            let eq = kv.iter().position(|b| *b == b'=')?;
            Some((bytes_path(&kv[..eq]).into_os_string(), bytes_path(&kv[eq + 1..]).into_os_string()))
        })
        .collect()
}

#[cfg(target_os = "linux")]
mod imp {
    use super::*;

    fn read(pid: u32, what: &str) -> Result<Vec<u8>, ProcError> {
        let dir = PathBuf::from(format!("/proc/{pid}"));
        if !dir.is_dir() {
            return Err(ProcError::NoSuchProcess { pid });
        }
        std::fs::read(dir.join(what)).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ProcError::NoSuchProcess { pid },
            _ => ProcError::Denied { pid, source: e },
        })
    }

    pub fn mapped_files(pid: u32) -> Result<Vec<Mapped>, ProcError> {
        Ok(parse_maps(&read(pid, "maps")?))
    }

    pub fn environment(pid: u32) -> Result<Option<Vec<(OsString, OsString)>>, ProcError> {
        Ok(Some(parse_environ(&read(pid, "environ")?)))
    }
}

#[cfg(windows)]
mod imp {
    use super::*;
    use std::os::windows::ffi::OsStringExt;
    use windows_sys::Win32::Foundation::{CloseHandle, ERROR_INVALID_PARAMETER, GetLastError, HMODULE};
    use windows_sys::Win32::System::ProcessStatus::{K32EnumProcessModulesEx, K32GetModuleFileNameExW, LIST_MODULES_ALL};
    use windows_sys::Win32::System::Threading::{OpenProcess, PROCESS_QUERY_INFORMATION, PROCESS_VM_READ};

    pub fn mapped_files(pid: u32) -> Result<Vec<Mapped>, ProcError> {
        // SAFETY: plain Win32 call; the handle is closed below.
        let h = unsafe { OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ, 0, pid) };
        if h.is_null() {
            // SAFETY: read right after the failing call.
            let code = unsafe { GetLastError() };
            return Err(if code == ERROR_INVALID_PARAMETER {
                ProcError::NoSuchProcess { pid }
            } else {
                ProcError::Denied { pid, source: std::io::Error::from_raw_os_error(code as i32) }
            });
        }
        let mut mods: Vec<HMODULE> = vec![std::ptr::null_mut(); 1024];
        let result = loop {
            let mut needed: u32 = 0;
            let cb = (mods.len() * std::mem::size_of::<HMODULE>()) as u32;
            // SAFETY: `mods` has room for `cb` bytes; `h` is a process handle opened for query + read.
            let ok = unsafe { K32EnumProcessModulesEx(h, mods.as_mut_ptr(), cb, &mut needed, LIST_MODULES_ALL) };
            if ok == 0 {
                // SAFETY: read right after the failing call.
                let code = unsafe { GetLastError() };
                break Err(ProcError::Denied { pid, source: std::io::Error::from_raw_os_error(code as i32) });
            }
            let n = needed as usize / std::mem::size_of::<HMODULE>();
            if n <= mods.len() {
                mods.truncate(n);
                break Ok(());
            }
            mods.resize(n + 16, std::ptr::null_mut());
        };
        let mut out: Vec<Mapped> = Vec::new();
        if result.is_ok() {
            for m in &mods {
                let mut buf = vec![0u16; 32768];
                // SAFETY: `buf` holds `buf.len()` UTF-16 units; `m` came from the enumeration.
                let len = unsafe { K32GetModuleFileNameExW(h, *m, buf.as_mut_ptr(), buf.len() as u32) } as usize;
                if len == 0 {
                    continue;
                }
                let p = crate::sys::paths::shown(&PathBuf::from(OsString::from_wide(&buf[..len])));
                if !out.iter().any(|x| x.path == p) {
                    out.push(Mapped { path: p, deleted: false });
                }
            }
        }
        // SAFETY: `h` was opened above and is closed once.
        unsafe { CloseHandle(h) };
        result.map(|()| out)
    }

    pub fn environment(_pid: u32) -> Result<Option<Vec<(OsString, OsString)>>, ProcError> {
        Ok(None)
    }
}

#[cfg(not(any(target_os = "linux", windows)))]
mod imp {
    use super::*;

    pub fn mapped_files(_pid: u32) -> Result<Vec<Mapped>, ProcError> {
        Err(ProcError::Unsupported)
    }

    pub fn environment(_pid: u32) -> Result<Option<Vec<(OsString, OsString)>>, ProcError> {
        Err(ProcError::Unsupported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_give_paths_once_with_their_deleted_mark() {
        let maps = b"7f00-7f01 r--p 00000000 08:01 42   /store/e/lib/libcudnn.so.9.5.0\n\
7f01-7f02 r-xp 00001000 08:01 42   /store/e/lib/libcudnn.so.9.5.0\n\
7f02-7f03 rw-p 00000000 00:00 0 \n\
7f03-7f04 r--p 00000000 08:01 43   /old/libcudnn_graph.so.9 (deleted)\n\
7ffd-7ffe rw-p 00000000 00:00 0    [stack]\n\
7f05-7f06 r--p 00000000 08:01 44   /a dir/with space/libcudart.so.12\n";
        let m = parse_maps(maps);
        assert_eq!(
            m,
            vec![
                Mapped { path: "/store/e/lib/libcudnn.so.9.5.0".into(), deleted: false },
                Mapped { path: "/old/libcudnn_graph.so.9".into(), deleted: true },
                Mapped { path: "/a dir/with space/libcudart.so.12".into(), deleted: false },
            ]
        );
    }

    #[test]
    fn environ_splits_at_nul_and_the_first_equals() {
        let e = parse_environ(b"CUENV_PROFILE=tf\0A=b=c\0\0NOEQ\0");
        assert_eq!(e, vec![("CUENV_PROFILE".into(), "tf".into()), ("A".into(), "b=c".into())]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_maps_libc_and_a_missing_pid_is_exit_2() {
        let m = mapped_files(std::process::id()).unwrap();
        assert!(m.iter().any(|x| x.path.to_string_lossy().contains("libc")), "{m:?}");
        let env = environment(std::process::id()).unwrap().unwrap();
        assert!(env.iter().any(|(k, _)| k == "PATH" || k == "HOME"), "{env:?}");
        let e = mapped_files(u32::MAX - 1).unwrap_err();
        assert!(matches!(e, ProcError::NoSuchProcess { .. }), "{e}");
        assert_eq!(e.exit_code(), ExitCode::Invalid);
    }
}
