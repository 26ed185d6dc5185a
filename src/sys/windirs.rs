//! The Windows folders and lists the loader's standard search order reads (Microsoft Learn,
//! "Dynamic-link library search order",
//! <https://learn.microsoft.com/en-us/windows/win32/dlls/dynamic-link-library-search-order>):
//! System32 (`GetSystemDirectoryW`), the 16-bit System folder (`<Windows folder>\System`), the
//! Windows folder (`GetWindowsDirectoryW`) and the KnownDLLs list
//! (`HKLM\System\CurrentControlSet\Control\Session Manager\KnownDLLs`, one value per DLL, its
//! data the file name). Read only; on other platforms there is none. A leaf: names no other
//! cuenv module.

use std::path::PathBuf;

/// The system folders of the standard search order, as this Windows reports them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SystemDirs {
    /// `GetSystemDirectoryW` (`C:\Windows\System32`).
    pub system32: PathBuf,
    /// The 16-bit System folder, `<Windows folder>\System` (searched whether or not it exists).
    pub system16: PathBuf,
    /// `GetWindowsDirectoryW` (`C:\Windows`).
    pub windows: PathBuf,
}

/// The registry key of the KnownDLLs list, below `HKEY_LOCAL_MACHINE`.
pub const KNOWN_DLLS_KEY: &str = r"System\CurrentControlSet\Control\Session Manager\KnownDLLs";

/// This machine's system folders; `None` off Windows or when Windows does not answer.
pub fn system_dirs() -> Option<SystemDirs> {
    imp::system_dirs()
}

/// The file names the KnownDLLs list holds (the data of each value of [`KNOWN_DLLS_KEY`],
/// as written: `kernel32.dll`); `None` off Windows or when the key cannot be opened (Wine 8
/// and 10 have no such key).
pub fn known_dlls() -> Option<Vec<String>> {
    imp::known_dlls()
}

#[cfg(windows)]
mod imp {
    use std::ffi::OsString;
    use std::os::windows::ffi::{OsStrExt, OsStringExt};
    use std::path::PathBuf;

    use windows_sys::Win32::System::Registry::{HKEY, HKEY_LOCAL_MACHINE, KEY_READ, REG_SZ, RegCloseKey, RegEnumValueW, RegOpenKeyExW};
    use windows_sys::Win32::System::SystemInformation::{GetSystemDirectoryW, GetWindowsDirectoryW};

    use super::SystemDirs;

    fn dir(get: unsafe extern "system" fn(*mut u16, u32) -> u32) -> Option<PathBuf> {
        let mut buf = vec![0u16; 1024];
        // SAFETY: the buffer is valid for `buf.len()` u16s; the call writes at most that many.
        let n = unsafe { get(buf.as_mut_ptr(), buf.len() as u32) } as usize;
        (n > 0 && n < buf.len()).then(|| PathBuf::from(OsString::from_wide(&buf[..n])))
    }

    pub fn system_dirs() -> Option<SystemDirs> {
        let system32 = dir(GetSystemDirectoryW)?;
        let windows = dir(GetWindowsDirectoryW)?;
        Some(SystemDirs { system16: windows.join("System"), system32, windows })
    }

    pub fn known_dlls() -> Option<Vec<String>> {
        let key: Vec<u16> = std::ffi::OsStr::new(super::KNOWN_DLLS_KEY).encode_wide().chain(Some(0)).collect();
        let mut h: HKEY = std::ptr::null_mut();
        // SAFETY: `key` is NUL-terminated; `h` receives the handle, closed below.
        if unsafe { RegOpenKeyExW(HKEY_LOCAL_MACHINE, key.as_ptr(), 0, KEY_READ, &mut h) } != 0 {
            return None;
        }
        let mut out = Vec::new();
        for i in 0..4096u32 {
            let mut name = [0u16; 256];
            let mut name_len = name.len() as u32;
            let mut data = [0u8; 1024];
            let mut data_len = data.len() as u32;
            let mut kind = 0u32;
            // SAFETY: every buffer is valid for the length passed with it.
            let r = unsafe { RegEnumValueW(h, i, name.as_mut_ptr(), &mut name_len, std::ptr::null(), &mut kind, data.as_mut_ptr(), &mut data_len) };
            if r != 0 {
                break;
            }
            if kind == REG_SZ {
                let wide: Vec<u16> = data[..data_len as usize].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).take_while(|&c| c != 0).collect();
                out.push(String::from_utf16_lossy(&wide));
            }
        }
        // SAFETY: `h` was opened above.
        unsafe { RegCloseKey(h) };
        Some(out)
    }
}

#[cfg(not(windows))]
mod imp {
    use super::SystemDirs;

    pub fn system_dirs() -> Option<SystemDirs> {
        None
    }

    pub fn known_dlls() -> Option<Vec<String>> {
        None
    }
}
