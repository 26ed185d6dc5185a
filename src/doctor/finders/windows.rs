//! The consumers' finders on Windows (module documentation of [`super`]): PyTorch's
//! `torch\lib`, `onnxruntime.preload_dlls()`, and the env hooks torch overrides. They read
//! files only, so they run (and are tested) on every host.

use std::path::{Path, PathBuf};

use super::{Finder, Load, Scene, first_in, glob_dirs, onnxruntime_preloads, tuple_after};
use crate::cudnn::libname::{self, Os};
use crate::doctor::winsearch::WinSearch;
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
/// `torch\lib` copy, `onnxruntime.preload_dlls()`, and `cuda.pathfinder`
/// ([`pathfinder_cudnn_windows`]). Reads files only, so it runs (and is tested) on any host; [`super::loads`] calls it on
/// Windows. `scene.preloaded` are modules loaded before any consumer (the env hook's).
pub fn loads_windows(env: &PyEnv, scene: &Scene) -> Vec<Load> {
    let mut out = Vec::new();
    let described = env.describe();
    // The standard search order from python.exe (KnownDLLs, its folder, the system folders, the
    // current folder, PATH): one for the env, whatever site-packages a consumer sits in.
    let search = WinSearch::standard(scene.path_folders, env.python.as_deref().and_then(Path::parent).map(Path::to_path_buf));
    let loaded_as = |name: &str| loaded_module(scene.preloaded, name);
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
        if let Some(l) = tensorflow_windows(sp, &described, scene.preloaded, &search) {
            out.push(l);
        }
        if let Some(cat) = pathfinder_catalog_windows(sp) {
            let consumer = format!("cuda.pathfinder{}", dist_version(sp, "cuda_pathfinder").map(|v| format!(" {v}")).unwrap_or_default());
            let (library, path, how, found_via, verified) = match cat {
                Ok(cat) => {
                    let library = cat.dlls.first().cloned().unwrap_or_else(|| libname::dispatcher_name(9, Os::Windows));
                    match pathfinder_cudnn_windows(&cat, env, scene, &search) {
                        Some((f, via)) => (library, Some(f), format!("its {via} step (found_via `{via}`)"), Some(via), true),
                        None => (
                            library,
                            None,
                            "none of its steps finds it (site-packages, $CONDA_PREFIX\\Library, loaded modules, the system search with PATH, CUDNN_PATH, CUDA_PATH, Program Files\\NVIDIA\\CUDNN): it raises DynamicLibNotFoundError".into(),
                            None,
                            true,
                        ),
                    }
                }
                Err(why) => (libname::dispatcher_name(9, Os::Windows), None, format!("not verified: {why}, so cuenv cannot say what it loads"), None, false),
            };
            let major = libname::loader_dispatcher_major(&library, Os::Windows).unwrap_or(9);
            out.push(Load { finder: Finder::Pathfinder, env: described.clone(), consumer, library, major, path, how, found_via, full_path: false, verified });
        }
    }
    out
}

/// The module of `loaded` whose file name is `name`, ignoring case (Windows compares module
/// base names without case): what a load by that name gets.
fn loaded_module(loaded: &[PathBuf], name: &str) -> Option<PathBuf> {
    loaded.iter().find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case(name))).cloned()
}

/// TensorFlow on Windows (2.10, the last release with GPU support there), from the
/// `tensorflow/python/platform/build_info.py` of `sp`: the DLL its build names
/// (`cudnn_dll_name`, `'cudnn64_8.dll'` in the real 2.10.1 win_amd64 wheel; else `cudnn` +
/// `cudnn_version` + `.dll`, as TensorFlow's `FormatLibraryFileName` joins `'64_8'`), loaded by
/// name with `LoadLibraryExW(name, NULL, LOAD_WITH_ALTERED_SEARCH_PATH)`
/// (`tensorflow/core/platform/windows/load_library.cc`): for a bare name the standard order,
/// `PATH` last, after a module of that name already loaded. `None` without TensorFlow, or for
/// a build without CUDA (`is_cuda_build` False: it loads no cuDNN).
fn tensorflow_windows(sp: &Path, described: &str, preloaded: &[PathBuf], search: &WinSearch) -> Option<Load> {
    let info = sp.join("tensorflow").join("python").join("platform").join("build_info.py");
    let text = std::fs::read_to_string(&info).ok()?;
    if super::is_cpu_build(&text) {
        return None;
    }
    let dll = super::build_info_value(&text, "cudnn_dll_name").or_else(|| super::build_info_value(&text, "cudnn_version").map(|v| format!("cudnn{v}.dll")));
    let major = dll.as_deref().and_then(|d| libname::loader_dispatcher_major(d, Os::Windows));
    let (Some(name), Some(major)) = (dll, major) else {
        return Some(Load::not_verified(
            Finder::Tensorflow,
            described,
            "TensorFlow",
            libname::dispatcher_name(8, Os::Windows),
            0,
            false,
            format!("{} names no cudnn_dll_name or cudnn_version cuenv reads as a cuDNN DLL", info.display()),
        ));
    };
    let cuda = super::build_info_value(&text, "cuda_version").map(|c| format!(" for CUDA {c}")).unwrap_or_default();
    let (path, how) = match loaded_module(preloaded, &name) {
        Some(p) => (Some(p), "a module of that name is already loaded (the env hook's), and a load by name gets it".to_string()),
        None => match crate::doctor::loader::windows_find(&name, search) {
            Some(p) => (Some(p.path), p.via.describe("PATH")),
            None => (None, "no folder of the standard search order (python.exe's folder, the system folders, the current folder, PATH) holds it".into()),
        },
    };
    Some(Load {
        finder: Finder::Tensorflow,
        env: described.to_string(),
        consumer: "TensorFlow".into(),
        library: name.clone(),
        major,
        path,
        how: format!("its build_info.py names {name}{cuda}, which it loads by name (LoadLibraryExW, the standard search order with PATH): {how}"),
        found_via: None,
        full_path: false,
        verified: true,
    })
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

/// The cuDNN entry of an installed `cuda.pathfinder`'s catalog, for Windows x64
/// (`descriptor_catalog.py` of cuda-pathfinder 1.9.1: the `windows_*` fields of
/// `DescriptorSpec(name="cudnn", ...)`, each `WindowsSearchDirs` read for `x64`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathfinderWindows {
    /// `windows_dlls`: `["cudnn64_9.dll"]`.
    pub dlls: Vec<String>,
    /// `site_packages_windows` (x64): `["nvidia/cudnn/bin"]`, under every site-packages.
    pub site_packages: Vec<String>,
    /// `anchor_rel_dirs_windows` (x64; the catalog's `DEFAULT_WINDOWS_CTK_ANCHOR_DIRS` when the
    /// entry sets none): under `$CONDA_PREFIX\Library`, `CUDA_PATH` and the Program Files roots.
    pub anchor_dirs: Vec<String>,
    /// `install_root_env_vars_windows`: `["CUDNN_PATH"]` (empty when `supported_windows_arch`
    /// lacks `x64`, as pathfinder skips them then).
    pub root_vars: Vec<String>,
    /// `install_root_env_rel_dirs_windows` (x64): `["bin/x64", "bin"]`.
    pub root_dirs: Vec<String>,
    /// `program_files_root_globs_windows` (x64): `["NVIDIA/CUDNN/v9.*"]`.
    pub program_files: Vec<String>,
    /// `requires_windows_binary_arch_check`: a DLL that is not x86-64 is passed over.
    pub arch_check: bool,
}

/// The text of the call that starts at `text[0]` (`Name(`...`)`), parentheses balanced.
fn call_text(text: &str) -> &str {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return &text[..=i];
                }
            }
            _ => {}
        }
    }
    text
}

/// The x64 folders of a `WindowsSearchDirs` value after `key=` in `block`: `WindowsSearchDirs(x64=(...), ...)`,
/// `WindowsSearchDirs.x64_only(...)`, `WindowsSearchDirs.arm64_only(...)` (no x64 folders), or
/// the name `DEFAULT_WINDOWS_CTK_ANCHOR_DIRS` (read from `text`). `None` when `key=` is absent
/// or its value is in another form.
fn x64_dirs(block: &str, key: &str, text: &str) -> Option<Vec<String>> {
    let at = block.find(&format!("{key}="))? + key.len() + 1;
    let rest = block[at..].trim_start();
    let strings = |s: &str| -> Vec<String> { s.split(',').filter_map(|p| p.trim().strip_prefix('"')?.strip_suffix('"').map(str::to_string)).collect() };
    if let Some(r) = rest.strip_prefix("WindowsSearchDirs.x64_only(") {
        return Some(strings(&r[..r.find(')')?]));
    }
    if rest.starts_with("WindowsSearchDirs.arm64_only(") {
        return Some(Vec::new());
    }
    if rest.starts_with("WindowsSearchDirs(") {
        let call = call_text(rest);
        return Some(tuple_after(call, "x64").unwrap_or_default());
    }
    if rest.starts_with("DEFAULT_WINDOWS_CTK_ANCHOR_DIRS") {
        let def = text.find("DEFAULT_WINDOWS_CTK_ANCHOR_DIRS = ")?;
        return x64_dirs(&text[def..].replacen(" = ", "=", 1), "DEFAULT_WINDOWS_CTK_ANCHOR_DIRS", text);
    }
    None
}

/// Reads the Windows x64 cuDNN entry of the `cuda.pathfinder` installed in `site_packages`
/// ([`PathfinderWindows`]). `None` when it is not installed there; `Some(Err(why))` when
/// installed but the catalog is not in the form cuda-pathfinder 1.9.1 writes.
pub fn pathfinder_catalog_windows(site_packages: &Path) -> Option<Result<PathfinderWindows, String>> {
    let entry = super::pathfinder_cudnn_entry(site_packages)?;
    let read = || -> Result<PathfinderWindows, String> {
        let (file, text, block) = entry?;
        let block = block.as_str();
        let dlls =
            tuple_after(block, "windows_dlls").filter(|s| !s.is_empty()).ok_or_else(|| format!("{}'s cudnn entry has no windows_dlls", file.display()))?;
        let x64 = tuple_after(block, "supported_windows_arch").unwrap_or_default().iter().any(|a| a == "x64");
        let default_anchor = "anchor_rel_dirs_windows=DEFAULT_WINDOWS_CTK_ANCHOR_DIRS";
        let anchor_dirs = x64_dirs(block, "anchor_rel_dirs_windows", &text)
            .or_else(|| x64_dirs(default_anchor, "anchor_rel_dirs_windows", &text))
            .ok_or_else(|| format!("{} names no anchor_rel_dirs_windows in a form cuenv reads", file.display()))?;
        Ok(PathfinderWindows {
            dlls,
            site_packages: x64_dirs(block, "site_packages_windows", &text).unwrap_or_default(),
            anchor_dirs,
            root_vars: if x64 { tuple_after(block, "install_root_env_vars_windows").unwrap_or_default() } else { Vec::new() },
            root_dirs: if x64 { x64_dirs(block, "install_root_env_rel_dirs_windows", &text).unwrap_or_default() } else { Vec::new() },
            program_files: x64_dirs(block, "program_files_root_globs_windows", &text).unwrap_or_default(),
            arch_check: block.contains("requires_windows_binary_arch_check=True"),
        })
    };
    Some(read())
}

/// A sort key of a folder name that orders its runs of digits as numbers (`v9.10` after
/// `v9.2`), as pathfinder's `numeric_aware_path_sort_key`.
fn numeric_key(name: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut chars = name.chars().peekable();
    while let Some(&c) = chars.peek() {
        let digit = c.is_ascii_digit();
        let mut run = String::new();
        while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit() == digit) {
            run.push(d);
            chars.next();
        }
        out.push(if digit { (run.parse().unwrap_or(u64::MAX), String::new()) } else { (0, run.to_lowercase()) });
    }
    out
}

/// Whether the PE file `f` is built for x86-64 (pathfinder's binary arch check); a file
/// that cannot be read or parsed is not.
fn is_x64(f: &Path) -> bool {
    use object::Object as _;
    std::fs::read(f).ok().and_then(|b| object::File::parse(&*b).ok().map(|o| o.architecture() == object::Architecture::X86_64)).unwrap_or(false)
}

/// What `cuda.pathfinder` (Windows catalog `cat`) loads for `"cudnn"` in `env` on Windows
/// x64, following `load_nvidia_dynamic_lib._load_lib_no_cache` and `search_steps.py` of
/// cuda-pathfinder 1.9.1: first the files it finds (the site-packages folders of every
/// site-packages, then `$CONDA_PREFIX\Library` with the anchor folders); then a module of that
/// name already loaded wins; then the file found; then `LoadLibraryExW(name, NULL, 0)`, the
/// standard search order with `PATH` (`search`, [`WinSearch::find`]); then `CUDNN_PATH`'s
/// folders, `CUDA_PATH` (or `CUDA_HOME`) with the anchor folders, and the Program Files
/// roots (`PROGRAMW6432`, else `PROGRAMFILES`), newest version first. Returns the file and
/// pathfinder's `found_via` label, or `None` when it finds none (`DynamicLibNotFoundError`).
pub fn pathfinder_cudnn_windows(cat: &PathfinderWindows, env: &PyEnv, scene: &Scene, search: &WinSearch) -> Option<(PathBuf, String)> {
    let var = |k: &str| (scene.get)(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let under = |root: &Path, rels: &[String]| -> Option<PathBuf> {
        rels.iter()
            .flat_map(|rel| glob_dirs(root, rel, true))
            .find_map(|d| first_in(std::slice::from_ref(&d), &cat.dlls).filter(|f| !cat.arch_check || is_x64(f)))
    };
    let early = cat
        .site_packages
        .iter()
        .find_map(|rel| env.site_packages.iter().find_map(|sp| under(sp, std::slice::from_ref(rel))).map(|f| (f, "site-packages")))
        .or_else(|| under(&var("CONDA_PREFIX")?.join("Library"), &cat.anchor_dirs).map(|f| (f, "conda")));
    let loaded = cat.dlls.iter().find_map(|name| loaded_module(scene.preloaded, name).or_else(|| loaded_module(&search.loaded, name)));
    if let Some(p) = loaded {
        return Some((p, "was-already-loaded-from-elsewhere".into()));
    }
    if let Some((f, via)) = early {
        return Some((f, via.into()));
    }
    if let Some(f) = cat.dlls.iter().find_map(|n| search.find(n)) {
        return Some((f.path, "system-search".into()));
    }
    for v in &cat.root_vars {
        if let Some(f) = var(v).and_then(|root| under(&root, &cat.root_dirs)) {
            return Some((f, v.clone()));
        }
    }
    if let Some(f) = var("CUDA_PATH").or_else(|| var("CUDA_HOME")).and_then(|root| under(&root, &cat.anchor_dirs)) {
        return Some((f, "CUDA_PATH".into()));
    }
    let program_files = var("PROGRAMW6432").or_else(|| var("PROGRAMFILES"))?;
    for g in &cat.program_files {
        let mut roots = glob_dirs(&program_files, g, true);
        roots.sort_by_key(|r| std::cmp::Reverse(numeric_key(&r.file_name().unwrap_or_default().to_string_lossy())));
        if let Some(f) = roots.iter().find_map(|r| under(r, &cat.anchor_dirs)) {
            return Some((f, "ProgramFiles".into()));
        }
    }
    None
}
