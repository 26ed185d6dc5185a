//! Run-time dependencies of the cuDNN the loader picks, read without
//! loading anything: the CUDA libraries its files name by major (cuBLAS, cuBLASLt, NVRTC;
//! [`crate::sys::binfmt::referenced_cuda_libraries`]), each looked up the way the loader model
//! (docs/loader.md) says the library naming it would find it; and on Windows `zlibwapi.dll`,
//! which cuDNN 8.3 to 9.1 loads by name (NVIDIA's cuDNN installation notes for Windows:
//! "zlib is a data-compression software library that is needed by cuDNN", dropped when 9.2
//! linked zlib statically), and which must be the x64 build (a 32-bit one fails with error 193).

use std::path::{Path, PathBuf};

use super::loader::{self, LinuxEnv, Object};
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
/// folders `folders`.
pub fn judge(dispatcher: &Path, major: u64, version: Option<&str>, folders: &[PathBuf], search_var: &str) -> Vec<Finding> {
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
                folders.iter().any(|d| !d.as_os_str().is_empty() && find_ci(d, &name).is_some())
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
    if cfg!(windows)
        && let Some(v) = version.and_then(|v| v.parse::<Version>().ok())
        && needs_zlibwapi(&v)
    {
        out.extend(zlibwapi(&v, folders));
    }
    out
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
