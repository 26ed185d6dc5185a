//! Linux (and other Unix) side of the probe's loader access.

use std::path::PathBuf;

use libloading::Library;

use crate::probe::LoadError;

/// Nothing to prepare on Unix.
pub fn prepare_process() {}

/// `dlopen(name, RTLD_NOW | RTLD_LOCAL)` through libloading; the error is `dlerror()`'s text.
pub fn load(name: &str) -> Result<Library, LoadError> {
    // SAFETY: loading runs the library's initializers; that is the point of the probe, and
    // it runs in a throwaway child process.
    unsafe { Library::new(name) }.map_err(|e| {
        let message = std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string());
        LoadError { message, code: None }
    })
}

/// The files mapped into this process, from `/proc/self/maps`, in address order, deduplicated;
/// files deleted since they were mapped are left out.
pub fn loaded_module_paths() -> Vec<PathBuf> {
    let Ok(maps) = std::fs::read("/proc/self/maps") else { return Vec::new() };
    let mut out: Vec<PathBuf> = Vec::new();
    for m in crate::sys::procmods::map_lines(&maps).filter(|m| !m.deleted) {
        if !out.contains(&m.path) {
            out.push(m.path);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lists_libc_and_missing_library_has_dlerror_text() {
        let paths = loaded_module_paths();
        assert!(paths.iter().any(|p| p.to_string_lossy().contains("libc")), "{paths:?}");
        let e = load("libcuenv-no-such-library.so.9").err().unwrap();
        assert!(e.message.contains("libcuenv-no-such-library.so.9"), "{}", e.message);
        assert!(e.message.contains("cannot open shared object file"), "{}", e.message);
    }
}
