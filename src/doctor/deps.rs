//! Run-time dependencies of the cuDNN the loader picks that are no CUDA library (those are
//! [`crate::companion`]'s, judged from the probe's observations through `check::classify`):
//! on Windows `zlibwapi.dll`,
//! which cuDNN 8.3 to 9.1 loads by name (NVIDIA's cuDNN installation notes for Windows:
//! "zlib is a data-compression software library that is needed by cuDNN", dropped when 9.2
//! linked zlib statically), and which must be the x64 build (a 32-bit one fails with error 193).

use std::path::{Path, PathBuf};

use super::{Finding, Severity};
use crate::cudnn::version::Version;
use crate::sys::binfmt;

/// On Windows: the `zlibwapi.dll` finding for the cuDNN of `version` (as `cudnnGetVersion`
/// reported it), with the loader's search folders `folders`; nothing for a release that does
/// not load it or an unknown version.
pub fn zlibwapi_for(version: Option<&str>, folders: &[PathBuf]) -> Option<Finding> {
    let v = version.and_then(|v| v.parse::<Version>().ok())?;
    if needs_zlibwapi(&v) { zlibwapi(&v, folders) } else { None }
}

/// Whether cuDNN `v` loads `zlibwapi.dll` at run time: 8.3 <= v < 9.2 (see the module doc).
pub fn needs_zlibwapi(v: &Version) -> bool {
    let key = (v.major(), v.minor());
    ((8, 3)..(9, 2)).contains(&key)
}

fn zlibwapi(v: &Version, folders: &[PathBuf]) -> Option<Finding> {
    let first = folders.iter().filter(|d| !d.as_os_str().is_empty()).find_map(|d| find_ci(d, "zlibwapi.dll"));
    match first {
        None => Some(Finding {
            rule: None,
            severity: Severity::Problem,
            message: format!("cuDNN {v} loads zlibwapi.dll at run time (cuDNN 8.3 to 9.1 do), and no folder on PATH holds it: convolutions fail"),
            hint: Some("put an x64 zlibwapi.dll in a folder on PATH (conda: `conda install zlib-wapi`), or use cuDNN 9.2 or later".into()),
        }),
        Some(p) => {
            let info = binfmt::inspect(&p).ok()?;
            (info.platform != Some(crate::cudnn::platform::Platform::WindowsX86_64)).then(|| Finding {
                rule: None,
                severity: Severity::Problem,
                message: format!("the first zlibwapi.dll on PATH, {}, is {}: cuDNN {v} cannot load it (error 193)", p.display(), info.describe),
                hint: Some(format!(
                    "replace it with the x64 build, or put a folder holding the x64 zlibwapi.dll ahead of {} on PATH",
                    p.parent().unwrap_or(&p).display()
                )),
            })
        }
    }
}

/// WSL: the driver's libraries live in `wsl_lib` (`/usr/lib/wsl/lib`); the ld.so cache has only
/// `libcuda.so.1` from there, but cuDNN 8 loads the unversioned `libcuda.so` by name
/// (docs/facts.md §10), which only `LD_LIBRARY_PATH` can reach. A warning when `wsl_lib`
/// holds `libcuda.so` and is not on `ld_library_path`.
pub fn wsl_driver(wsl_lib: &Path, ld_library_path: &[PathBuf]) -> Option<Finding> {
    if !wsl_lib.join("libcuda.so").exists() || ld_library_path.iter().any(|d| d == wsl_lib) {
        return None;
    }
    Some(Finding {
        rule: None,
        severity: Severity::Warning,
        message: format!(
            "this is WSL: the GPU driver's libraries are in {}, which is not on LD_LIBRARY_PATH; the ld.so cache holds only libcuda.so.1 from there, and cuDNN 8 loads the unversioned libcuda.so, so it finds no driver",
            wsl_lib.display()
        ),
        hint: Some(format!("add {} to LD_LIBRARY_PATH (e.g. in ~/.bashrc)", wsl_lib.display())),
    })
}

/// `dir/name` matched without regard to case, when such a file exists.
fn find_ci(dir: &Path, name: &str) -> Option<PathBuf> {
    let exact = dir.join(name);
    if exact.is_file() {
        return Some(exact);
    }
    std::fs::read_dir(dir).ok()?.flatten().find(|e| e.file_name().to_string_lossy().eq_ignore_ascii_case(name)).map(|e| e.path())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wsl_driver_folder_must_be_on_the_search_path() {
        let tmp = tempfile::tempdir().unwrap();
        let wsl = tmp.path().join("usr/lib/wsl/lib");
        assert!(wsl_driver(&wsl, &[]).is_none(), "not WSL");
        std::fs::create_dir_all(&wsl).unwrap();
        std::fs::write(wsl.join("libcuda.so"), "x").unwrap();
        let f = wsl_driver(&wsl, &[PathBuf::from("/opt/x")]).unwrap();
        assert!(f.message.contains("cuDNN 8 loads the unversioned libcuda.so") && f.hint.unwrap().contains("add"), "{}", f.message);
        assert!(wsl_driver(&wsl, &[PathBuf::from("/opt/x"), wsl.clone()]).is_none());
    }

    #[test]
    fn zlibwapi_is_needed_from_8_3_to_9_1() {
        let v = |s: &str| s.parse::<Version>().unwrap();
        assert!(!needs_zlibwapi(&v("8.2.4")));
        assert!(needs_zlibwapi(&v("8.3.0")) && needs_zlibwapi(&v("8.9.4.25")) && needs_zlibwapi(&v("9.1.1")));
        assert!(!needs_zlibwapi(&v("9.2.0")) && !needs_zlibwapi(&v("9.5.0")));
    }
}
