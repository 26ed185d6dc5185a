//! Run-time dependencies of the cuDNN the loader picks, read without
//! loading anything: the CUDA libraries its files name by major (cuBLAS, cuBLASLt, NVRTC;
//! [`crate::sys::binfmt::referenced_cuda_libraries`]), each looked up the way the loader model
//! (docs/loader.md) says the library naming it would find it; and on Windows `zlibwapi.dll`,
//! which cuDNN 8.3 to 9.1 loads by name (NVIDIA's cuDNN installation notes for Windows:
//! "zlib is a data-compression software library that is needed by cuDNN", dropped when 9.2
//! linked zlib statically), and which must be the x64 build (a 32-bit one fails with error 193).

use std::path::{Path, PathBuf};

use super::loader::{self, LinuxEnv, Object};
use super::winsearch::WinSearch;
use super::{Finding, Severity};
use crate::cudnn::libname::{self, Os};
use crate::cudnn::version::Version;
use crate::sys::binfmt;

/// The cuDNN `major` library files in `dir` (one name per file), sorted.
fn set_files(dir: &Path, major: u64) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut names: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut out = Vec::new();
    for n in names {
        if !libname::parse(&n).is_some_and(|l| l.os == Os::HOST && l.major == Some(major)) {
            continue;
        }
        let p = dir.join(&n);
        let real = std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone());
        if !seen.contains(&real) {
            seen.push(real);
            out.push(p);
        }
    }
    out
}

/// Problems with the run-time dependencies of the cuDNN `major` whose dispatcher is
/// `dispatcher` (`version`: the version it reports, when known), with the loader's search
/// folders `folders`; on Windows each is looked up in the host's whole search order `win`
/// ([`super::winsearch`]). `zlibwapi.dll` is judged by [`zlibwapi`].
pub fn judge(dispatcher: &Path, major: u64, version: Option<&str>, folders: &[PathBuf], win: &WinSearch, search_var: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(own) = dispatcher.parent() else { return out };
    let env = LinuxEnv::new(folders.to_vec());
    // (name, the library naming it), first naming library only.
    let mut missing: Vec<(String, String)> = Vec::new();
    for file in set_files(own, major) {
        let Ok(named) = binfmt::referenced_cuda_libraries(&file) else { continue };
        let by = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        for (_, name) in named {
            // The CUDA runtime is loaded and judged by the probe itself.
            if name.to_ascii_lowercase().contains("cudart") || missing.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
                continue;
            }
            let found = if cfg!(windows) {
                win.find(&name).is_some()
            } else {
                let asker = Object::read(&file).unwrap_or_else(|| Object::bare(&file));
                loader::find(&name, &asker, &[], &env).is_some()
            };
            if !found {
                missing.push((name, by.clone()));
            }
        }
    }
    if !missing.is_empty() {
        let list: Vec<String> = missing.iter().map(|(n, by)| format!("{n} (named by {by})")).collect();
        out.push(Finding {
            rule: None,
            severity: Severity::Problem,
            message: format!(
                "cuDNN {major} from {} loads {} at run time, and no folder its loader searches holds {}: cuDNN fails when a network needs {}",
                dispatcher.display(),
                list.join(", "),
                if missing.len() == 1 { "it" } else { "them" },
                if missing.len() == 1 { "it" } else { "them" }
            ),
            hint: Some(format!(
                "put the lib folder of the CUDA toolkit (or of the nvidia-cublas / nvidia-cuda-nvrtc wheels) of that CUDA major on {search_var}; a cuenv profile's activation puts its toolkit's there"
            )),
        });
    }
    let _ = version;
    out
}

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
