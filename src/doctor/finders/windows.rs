//! The consumers' finders on Windows (module documentation of [`super`]): PyTorch's
//! `torch\lib`, `onnxruntime.preload_dlls()`, and the env hooks torch overrides. They read
//! files only, so they run (and are tested) on every host.

use std::path::{Path, PathBuf};

use super::{Finder, Load, Scene, onnxruntime_preloads};
use crate::cudnn::libname::{self, Os};
use crate::doctor::{Finding, Severity};
use crate::pyenv::PyEnv;
use crate::pyenv::hook::Hook;

/// A module-level string assignment `key = 'value'` (or `"value"`) in Python source, as
/// onnxruntime's `capi/build_and_package_info.py` writes its build facts
/// (`cuda_version = '13.0'` in onnxruntime-gpu 1.31.1). `None` when absent.
pub fn assigned_str(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.trim_start().strip_prefix('=')?.trim();
        let q = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
        let rest = &rest[1..];
        Some(rest[..rest.find(q)?].to_string())
    })
}

/// The version of the distribution `name` installed in `sp`, as `importlib.metadata.version`
/// reports it: the `Version:` line of its `<name>-<version>.dist-info/METADATA`, else the
/// folder's own `<version>` (`torch-2.4.1+cu121.dist-info`: `2.4.1+cu121`).
pub fn dist_version(sp: &Path, name: &str) -> Option<String> {
    let prefix = format!("{name}-");
    let dir = std::fs::read_dir(sp).ok()?.flatten().find(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        n.starts_with(&prefix) && n.ends_with(".dist-info")
    })?;
    let folder = dir.file_name().to_string_lossy().into_owned();
    let from_metadata = std::fs::read_to_string(dir.path().join("METADATA"))
        .ok()
        .and_then(|m| m.lines().take_while(|l| !l.is_empty()).find_map(|l| l.strip_prefix("Version:").map(|v| v.trim().to_string())));
    from_metadata.or_else(|| folder.strip_prefix(&prefix)?.strip_suffix(".dist-info").map(str::to_string))
}

/// The CUDA major of a PyTorch version with a `+cuNNN` local part, read as onnxruntime's
/// `preload_dlls` reads it (the first two digits after `+cu`: `2.4.1+cu121` is 12).
fn torch_cuda_major(version: &str) -> Option<u64> {
    let cu = version.split_once("+cu")?.1;
    cu.get(..2)?.parse().ok()
}

/// The loads of the consumers present in `env` on Windows (module documentation): PyTorch's
/// `torch\lib` copy, `onnxruntime.preload_dlls()`, and a `cuda.pathfinder` said not
/// verified. Reads files only, so it runs (and is tested) on any host; [`super::loads`] calls it on
/// Windows. `scene.preloaded` are modules loaded before any consumer (the env hook's).
pub fn loads_windows(env: &PyEnv, scene: &Scene) -> Vec<Load> {
    let mut out = Vec::new();
    let described = env.describe();
    let loaded_as = |name: &str| scene.preloaded.iter().find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case(name))).cloned();
    for sp in &env.site_packages {
        let torch_lib = sp.join("torch").join("lib");
        let torch_version = dist_version(sp, "torch");
        let mut torch_copies: Vec<(u64, PathBuf, String)> = std::fs::read_dir(&torch_lib)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                Some((libname::loader_dispatcher_major(&n, Os::Windows)?, e.path(), n))
            })
            .collect();
        torch_copies.sort();
        for (major, file, name) in &torch_copies {
            out.push(Load {
                finder: Finder::Torch,
                env: described.clone(),
                consumer: format!("PyTorch{}", torch_version.as_deref().map(|v| format!(" {v}")).unwrap_or_default()),
                library: name.clone(),
                major: *major,
                path: Some(file.clone()),
                how: format!(
                    "`import torch` loads every DLL of {} by full path (torch/__init__.py `_load_dll_libraries`), whatever is on PATH",
                    torch_lib.display()
                ),
                found_via: None,
                full_path: true,
                verified: true,
            });
        }
        let ort = sp.join("onnxruntime");
        if let Some(preloads) = std::fs::read_to_string(ort.join("__init__.py")).ok().as_deref().and_then(|t| onnxruntime_preloads(t, Os::Windows)) {
            let built = std::fs::read_to_string(ort.join("capi").join("build_and_package_info.py")).ok().and_then(|t| assigned_str(&t, "cuda_version"));
            let ort_major = built.as_deref().and_then(|v| v.split('.').next()?.parse::<u64>().ok());
            // preload_dlls returns early without a CUDA build of 12 or newer.
            if let Some(ort_major) = ort_major.filter(|m| *m >= 12) {
                let from_torch = torch_version.as_deref().and_then(torch_cuda_major) == Some(ort_major) && torch_lib.is_dir();
                for (rel, name) in preloads {
                    let major = libname::loader_dispatcher_major(&name, Os::Windows).unwrap_or(0);
                    let file = if from_torch { torch_lib.join(&name) } else { sp.join(&rel) };
                    let (path, how, full_path) = if file.is_file() {
                        let why = if from_torch {
                            format!(
                                "PyTorch {} is built for CUDA {ort_major} like this onnxruntime (CUDA {}), so it loads from torch\\lib",
                                torch_version.as_deref().unwrap_or_default(),
                                built.as_deref().unwrap_or_default()
                            )
                        } else {
                            "it loads the nvidia wheel's file".into()
                        };
                        (Some(file.clone()), format!("`onnxruntime.preload_dlls()` opens {} by full path: {why}", file.display()), true)
                    } else {
                        let (p, how) = match loaded_as(&name) {
                            Some(p) => (Some(p), "a module of that name is already loaded (the env hook's), and a load by name gets it".to_string()),
                            None => match env.python.as_deref().and_then(Path::parent).map(|d| d.join(&name)).filter(|f| f.is_file()) {
                                Some(f) => (Some(f), "the application folder (python.exe's) holds it".to_string()),
                                None => (
                                    None,
                                    "by name `ctypes.CDLL` searches the loaded modules, the application folder, System32 and the os.add_dll_directory folders (not PATH), and none here holds it".to_string(),
                                ),
                            },
                        };
                        (p, format!("`onnxruntime.preload_dlls()` finds no {} and opens {name} by name: {how}", file.display()), false)
                    };
                    out.push(Load {
                        finder: Finder::Onnxruntime,
                        env: described.clone(),
                        consumer: "onnxruntime.preload_dlls()".into(),
                        library: name,
                        major,
                        path,
                        how,
                        found_via: None,
                        full_path,
                        verified: true,
                    });
                }
            }
        }
        if sp.join("cuda").join("pathfinder").join("__init__.py").is_file() {
            out.push(Load {
                finder: Finder::Pathfinder,
                env: described.clone(),
                consumer: "cuda.pathfinder".into(),
                library: libname::dispatcher_name(9, Os::Windows),
                major: 9,
                path: None,
                how: "not verified: cuenv models cuda.pathfinder's search on Linux only, so it cannot say what it loads on Windows".into(),
                found_via: None,
                full_path: false,
                verified: false,
            });
        }
    }
    out
}

/// Windows: the env hooks `hooks` of `env` that cannot make their profile win inside PyTorch.
/// `import torch` loads every DLL of `torch\lib` by full path (`torch/__init__.py`
/// `_load_dll_libraries`: `os.add_dll_directory` of that folder, then `LoadLibraryExW` of each
/// file), so a `torch\lib` holding a cuDNN dispatcher (`cudnn64_<N>.dll`, `os`'s names) gives
/// PyTorch that copy whatever the hook puts on PATH, and the hook preloads nothing there
/// (`apply` leaves torch's copy whole). One warning per such hook, naming torch, the copy and the
/// fix.
pub fn torch_keeps_its_copy(env: &PyEnv, hooks: &[(PathBuf, Hook)], os: Os) -> Vec<Finding> {
    let mut out = Vec::new();
    for (file, h) in hooks {
        for sp in &env.site_packages {
            let lib = sp.join("torch").join("lib");
            let Ok(rd) = std::fs::read_dir(&lib) else { continue };
            let mut copies: Vec<(u64, PathBuf)> =
                rd.flatten().filter_map(|e| Some((libname::loader_dispatcher_major(&e.file_name().to_string_lossy(), os)?, e.path()))).collect();
            copies.sort();
            for (major, copy) in copies {
                out.push(Finding {
                    rule: None,
                    severity: Severity::Warning,
                    message: format!(
                        "PyTorch in {} loads its own cuDNN {major} ({}) by full path when it is imported, so profile {}'s env hook ({}) cannot give it the profile's cuDNN: inside torch this copy wins",
                        env.describe(),
                        copy.display(),
                        h.profile,
                        file.display()
                    ),
                    hint: Some(format!(
                        "install the PyTorch build whose cuDNN is the profile's (`python -c \"import torch; print(torch.backends.cudnn.version())\"` prints this one's), or give profile {} the cuDNN this torch carries",
                        h.profile
                    )),
                });
            }
        }
    }
    out
}
