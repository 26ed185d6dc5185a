//! Windows side of the probe's loader access (windows-sys).

use std::ffi::OsString;
use std::os::windows::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use libloading::Library;
use windows_sys::Win32::Foundation::{GetLastError, HMODULE};
use windows_sys::Win32::System::Diagnostics::Debug::{SEM_FAILCRITICALERRORS, SEM_NOGPFAULTERRORBOX, SEM_NOOPENFILEERRORBOX, SetErrorMode};
use windows_sys::Win32::System::LibraryLoader::{GetModuleFileNameW, LoadLibraryExW};
use windows_sys::Win32::System::ProcessStatus::K32EnumProcessModules;
use windows_sys::Win32::System::Threading::GetCurrentProcess;

use crate::probe::LoadError;

/// No "cannot find DLL" or crash dialogs: errors come back as codes.
pub fn prepare_process() {
    // SAFETY: plain Win32 call with documented flags.
    unsafe { SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX | SEM_NOOPENFILEERRORBOX) };
}

/// `LoadLibraryExW(name, NULL, 0)`: the standard search order for a bare name. On failure the
/// code is `GetLastError()` (126 module or dependency not found, 127 procedure not found,
/// 193 not a valid image for this process).
pub fn load(name: &str) -> Result<Library, LoadError> {
    let wide: Vec<u16> = std::ffi::OsStr::new(name).encode_wide().chain(Some(0)).collect();
    // SAFETY: `wide` is NUL-terminated; initializers run in this throwaway child process.
    let h: HMODULE = unsafe { LoadLibraryExW(wide.as_ptr(), std::ptr::null_mut(), 0) };
    if h.is_null() {
        // SAFETY: read right after the failing call.
        let code = unsafe { GetLastError() } as i32;
        let message = std::io::Error::from_raw_os_error(code).to_string();
        return Err(LoadError { message, code: Some(code as i64) });
    }
    // SAFETY: `h` is a module handle we own one reference to.
    Ok(unsafe { libloading::os::windows::Library::from_raw(h as isize) }.into())
}

/// Every module of this process, from `EnumProcessModules` and `GetModuleFileNameW`.
pub fn loaded_module_paths() -> Vec<PathBuf> {
    let mut mods: Vec<HMODULE> = vec![std::ptr::null_mut(); 1024];
    loop {
        let mut needed: u32 = 0;
        let cb = (mods.len() * std::mem::size_of::<HMODULE>()) as u32;
        // SAFETY: `mods` has room for `cb` bytes.
        let ok = unsafe { K32EnumProcessModules(GetCurrentProcess(), mods.as_mut_ptr(), cb, &mut needed) };
        if ok == 0 {
            return Vec::new();
        }
        let n = needed as usize / std::mem::size_of::<HMODULE>();
        if n <= mods.len() {
            mods.truncate(n);
            break;
        }
        mods.resize(n + 16, std::ptr::null_mut());
    }
    let mut out = Vec::new();
    for m in mods {
        let mut buf = vec![0u16; 32768];
        // SAFETY: `buf` holds `buf.len()` UTF-16 units.
        let len = unsafe { GetModuleFileNameW(m, buf.as_mut_ptr(), buf.len() as u32) } as usize;
        if len == 0 {
            continue;
        }
        let p = PathBuf::from(OsString::from_wide(&buf[..len]));
        let p = crate::sys::paths::shown(&p);
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}
