//! Run-time dependencies of the cuDNN the loader picks that are no CUDA library (those are
//! [`crate::companion`]'s, judged from the probe's observations through `check::classify`):
//! on Windows `zlibwapi.dll`,
//! which cuDNN 8.3 to 9.1 loads by name (NVIDIA's cuDNN installation notes for Windows:
//! "zlib is a data-compression software library that is needed by cuDNN", dropped when 9.2
//! linked zlib statically), and which must be the x64 build (a 32-bit one fails with error 193).

use std::path::{Path, PathBuf};

use super::loader;
use super::winsearch::WinSearch;
use super::{Finding, Severity};
use crate::cudnn::version::Version;
use crate::sys::binfmt;

/// Whether the dispatcher at `dispatcher` names `zlibwapi.dll` among the DLLs it loads by
/// name (the real 8.9.4.25 and 9.5.0.50 `cudnn64_*.dll` write it right after their
/// sub-libraries' names, before "Could not locate %s"; docs/facts.md §10): `None` when the
/// file cannot be read or is over 64 MiB (real dispatchers are under 1 MiB).
pub fn names_zlibwapi(dispatcher: &Path) -> Option<bool> {
    let meta = std::fs::metadata(dispatcher).ok()?;
    if meta.len() > 64 << 20 {
        return None;
    }
    let bytes = std::fs::read(dispatcher).ok()?;
    Some(bytes.windows(12).any(|w| w.eq_ignore_ascii_case(b"zlibwapi.dll")))
}

/// The table cross-check: 8.3 <= v < 9.2 needs `zlibwapi.dll` (see the module doc).
pub fn needs_zlibwapi(v: &Version) -> bool {
    let key = (v.major(), v.minor());
    ((8, 3)..(9, 2)).contains(&key)
}

/// `zlibwapi.dll` for the cuDNN whose dispatcher is `dispatcher` (`version`: its release when
/// known), found where the host's search order `win` finds it ([`WinSearch::find`]: a
/// System32 copy beats a `PATH` one, the current folder beats `PATH`; docs/loader.md W7).
/// Whether the release loads it is read from the dispatcher ([`names_zlibwapi`]); the table
/// ([`needs_zlibwapi`]) decides only when the file cannot be read. Where both say so: a
/// problem when none is found, or when the first found is not x64 (error 193). Where the
/// dispatcher names it but the table says the release links zlib itself (9.2 on; the real
/// 9.5.0.50 dispatcher still names it): a first copy that is not x64 is a warning, "not
/// verified" (decisions.md 8), and none found says nothing.
pub fn zlibwapi(dispatcher: &Path, version: Option<&str>, win: &WinSearch) -> Option<Finding> {
    let v = version.and_then(|v| v.parse::<Version>().ok());
    let table = v.as_ref().map(needs_zlibwapi);
    let named = names_zlibwapi(dispatcher);
    let agreed = match (named, table) {
        (Some(false), _) | (None, Some(false)) | (None, None) => return None,
        (Some(true), Some(false)) => false,
        (Some(true), _) | (None, Some(true)) => true,
    };
    let shown = v.as_ref().map(|v| v.to_string()).unwrap_or_else(|| "(version unknown)".into());
    let basis = match named {
        Some(true) => format!("its dispatcher {} names it", dispatcher.display()),
        _ => "by NVIDIA's installation notes".into(),
    };
    match loader::windows_find("zlibwapi.dll", win) {
        None if agreed => Some(Finding {
            rule: None,
            severity: Severity::Problem,
            message: format!(
                "cuDNN {shown} loads zlibwapi.dll at run time ({basis}; cuDNN 8.3 to 9.1 do), and no place the loader searches holds it (searched: {}): convolutions fail",
                win.describe()
            ),
            hint: Some("put an x64 zlibwapi.dll in a folder on PATH (conda: `conda install zlib-wapi`), or use cuDNN 9.2 or later".into()),
        }),
        None => None,
        Some(p) => {
            let info = binfmt::inspect(&p.path).ok()?;
            if info.platform == Some(crate::cudnn::platform::Platform::WindowsX86_64) {
                return None;
            }
            let dir = p.path.parent().unwrap_or(&p.path).display().to_string();
            let (severity, tail) = if agreed {
                (Severity::Problem, String::new())
            } else {
                (Severity::Warning, "; NVIDIA's notes say cuDNN 9.2 on links zlib itself, so whether this release fails on it is not verified".to_string())
            };
            Some(Finding {
                rule: None,
                severity,
                message: format!(
                    "the first zlibwapi.dll the loader finds, {} ({}), is {}: cuDNN {shown} cannot load it (error 193){tail}",
                    p.path.display(),
                    p.via.describe("PATH"),
                    info.describe
                ),
                hint: Some(format!("replace it with the x64 build, or remove it from {dir} (a place searched before the one holding the x64 zlibwapi.dll)")),
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
