//! Consumers' finders: which copy of the cuDNN dispatcher each program present in a Python
//! env would load there, each found the way that program finds it (docs/loader.md
//! "Consumers' finders"), and what happens when two of them run in one process.
//!
//! Modelled, on Linux:
//! - **`cuda.pathfinder`** (`load_nvidia_dynamic_lib("cudnn")`, the finder of CuPy 14 and
//!   numba-cuda), read from the installed package's own catalog
//!   (`cuda/pathfinder/_dynamic_libs/descriptor_catalog.py`: the sonames and folders it
//!   searches), in its order (`load_nvidia_dynamic_lib.py` `_load_lib_no_cache`,
//!   `search_steps.py`): the `nvidia/...` wheel folders of every site-packages, then
//!   `$CONDA_PREFIX`, then a library of that soname already loaded in the process (which wins
//!   over both), then the system loader by name, then `CUDNN_PATH`, then `CUDA_PATH` /
//!   `CUDA_HOME`. A catalog cuenv cannot read is said ("not verified"), never guessed.
//! - **The libraries that name the dispatcher** (`DT_NEEDED`: PyTorch's `libtorch_cuda.so`,
//!   a JAX plugin, onnxruntime's older CUDA provider; [`super::envs::consumers`]): ld.so's
//!   search from that library ([`loader::find`]).
//! - **TensorFlow**: the major its `tensorflow/python/platform/build_info.py` names
//!   (`cudnn_version`), opened by name with `dlopen` from `libtensorflow_framework.so.2`, so
//!   with that library's search path (TF 2.16's has none into the nvidia wheels).
//!
//! - **TransformerEngine** ([`te_finder`], [`te_cudnn`]): its own search at import, read
//!   from the installed `transformer_engine/common/__init__.py` (its releases search in three
//!   orders: roots such as `CUDNN_HOME`, the wheel, `ldconfig -p`, the unversioned
//!   `libcudnn.so` by name), each file but the one by name opened by full path.
//!
//! A library the env hook ([`crate::pyenv::hook`]) preloads is already loaded when any of
//! them asks: on glibc a later `DT_NEEDED` or by-name `dlopen` of the same soname gets that
//! copy, and pathfinder's first question is "already loaded?". A full-path `dlopen` of
//! another file still maps a second copy.
//!
//! Modelled, on Windows ([`loads_windows`]):
//! - **PyTorch**: `import torch` loads every DLL of `torch\lib` by full path
//!   (`torch/__init__.py` `_load_dll_libraries`: `glob("torch/lib/*.dll")`, each with
//!   `LoadLibraryExW(dll, None, 0x1100)`), so a `cudnn64_<N>.dll` there is torch's copy.
//! - **`onnxruntime.preload_dlls()`** (onnxruntime-gpu 1.31 `__init__.py`): with a PyTorch
//!   whose version names the same CUDA major (`+cu121` and a build `cuda_version` of 12.x),
//!   the DLLs of `torch\lib`; otherwise `site-packages\nvidia\cudnn\bin\...` by full path,
//!   then by name (`ctypes.CDLL`, which on Python >= 3.8 searches the loaded modules, the
//!   application folder, System32 and the `os.add_dll_directory` folders, not PATH).
//! - **TensorFlow 2.10** (the last release with GPU support on native Windows): the DLL its
//!   `build_info.py` names (`cudnn_dll_name`), loaded by name in the standard search order
//!   with `PATH` (`tensorflow/core/platform/windows/load_library.cc`).
//! - **`cuda.pathfinder`** (cuda-pathfinder 1.9.1, `load_nvidia_dynamic_lib.py`,
//!   `search_steps.py`, `load_dl_windows.py`; [`pathfinder_cudnn_windows`]): the same phases as
//!   on Linux with the catalog's `windows_*` fields for x64: `nvidia\cudnn\bin` of every
//!   site-packages, `$CONDA_PREFIX\Library\bin\x64` and `bin`, a module already loaded,
//!   then `LoadLibraryExW(name, NULL, 0)`, the standard search order *with* `PATH` (its
//!   docstring: Python's restricted defaults do not apply to this call), then `CUDNN_PATH`,
//!   `CUDA_PATH`, and `Program Files\NVIDIA\CUDNN\v9.*` newest first. A DLL that is not x86-64
//!   is passed over.
//!
//! On both systems a load by name of a name already loaded gets the loaded copy, and a load by
//! full path of another file maps a second copy whose own imports, by name, bind to the
//! modules already loaded: two consumers of one major with different copies in one process
//! mix releases ([`judge`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::envs::Consumer;
use super::loader::{self, LinuxEnv, Object};
use super::{Finding, Severity};
use crate::cudnn::libname::{self, Os};
use crate::pyenv::PyEnv;
use crate::pyenv::hook::{self, Hook};

mod notes;
mod pathfinder;
mod te;
mod torch;
mod windows;
pub use notes::profile_consumer_notes;
pub use pathfinder::{PathfinderCatalog, pathfinder_catalog, pathfinder_cudnn};
use pathfinder::{first_in, glob_dirs, pathfinder_cudnn_entry, tuple_after};
pub use te::{Root, TeFinder, TeStep, order_words as te_order_words, te_cudnn, te_finder};
pub use torch::{TorchFallback, torch_fallbacks};
pub use windows::{PathfinderWindows, assigned_str, dist_version, loads_windows, pathfinder_catalog_windows, pathfinder_cudnn_windows, torch_keeps_its_copy};

/// Which finder a [`Load`] follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finder {
    /// ld.so, for a library that names the dispatcher in `DT_NEEDED`.
    Needed,
    /// `cuda.pathfinder`'s `load_nvidia_dynamic_lib`.
    Pathfinder,
    /// TensorFlow's `dlopen` by name (from `libtensorflow_framework.so.2`).
    Tensorflow,
    /// `onnxruntime.preload_dlls()`: the wheel's file by full path, else by name.
    Onnxruntime,
    /// PyTorch on Windows: `import torch` loads every DLL of `torch\lib` by full path.
    Torch,
    /// TransformerEngine's own search at import (`transformer_engine/common/__init__.py`).
    TransformerEngine,
}

/// What one consumer present in a Python env would load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Load {
    /// The finder the model follows.
    pub finder: Finder,
    /// The env, in words ([`PyEnv::describe`]).
    pub env: String,
    /// The consumer in words: "cuda.pathfinder 1.9.1", "PyTorch's libtorch_cuda.so".
    pub consumer: String,
    /// The library it asks for: `libcudnn.so.9`.
    pub library: String,
    /// The cuDNN major of `library`.
    pub major: u64,
    /// The file it would get; `None` when it finds none, or when cuenv could not model it
    /// (then `how` says so and `verified` is false).
    #[serde(serialize_with = "crate::sys::paths::ser_lossy_opt")]
    pub path: Option<PathBuf>,
    /// Why, in words: "its site-packages step (found_via `site-packages`)".
    pub how: String,
    /// The label `cuda.pathfinder` itself reports for this way (`found_via`), for pathfinder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found_via: Option<String>,
    /// Whether it opens `path` by its full path without first asking whether a library of
    /// that soname is loaded (then a different file already loaded does not stop it mapping a
    /// second copy). False for pathfinder, which asks first.
    pub full_path: bool,
    /// Whether the model covers this consumer; false: "not verified".
    pub verified: bool,
}

impl Load {
    /// A consumer present in an env whose finder cuenv could not read: no file, `how` is
    /// "not verified: `why`", and the judges say so rather than judge it.
    pub fn not_verified(finder: Finder, env: &str, consumer: &str, library: String, major: u64, full_path: bool, why: String) -> Load {
        Load {
            finder,
            env: env.to_string(),
            consumer: consumer.to_string(),
            library,
            major,
            path: None,
            how: format!("not verified: {why}"),
            found_via: None,
            full_path,
            verified: false,
        }
    }
}

/// The env hooks of `env` that run in a process with the variables `get`: those whose
/// `CUENV_PYTHON_HOOK` switch lets them ([`hook::is_off`]; a value naming another profile makes
/// a hook step aside, as `hook.py` does).
pub fn active_hooks(env: &PyEnv, get: &dyn Fn(&str) -> Option<OsString>) -> Vec<(PathBuf, Hook)> {
    let switch = get(hook::VAR).map(|v| v.to_string_lossy().into_owned()).unwrap_or_default();
    let on = |profile: &str| {
        let s = switch.to_ascii_lowercase();
        !hook::is_off(&switch) && (matches!(s.as_str(), "" | "1" | "on" | "yes" | "true") || switch == profile)
    };
    env.site_packages.iter().flat_map(|sp| hook::installed(sp)).filter(|(_, h)| on(&h.profile)).collect()
}

/// What is loaded in a process of `env` before a framework's libraries ask: `scene.preloaded`
/// (the env hook's), then on Linux the cuDNN torch's fallback preloads when its global deps do
/// not load ([`torch_fallbacks`]).
pub fn loaded_before(env: &PyEnv, scene: &Scene) -> Vec<PathBuf> {
    let mut out = scene.preloaded.to_vec();
    if cfg!(target_os = "linux") {
        out.extend(torch_fallbacks(env, scene).into_iter().filter_map(|f| f.cudnn));
    }
    out
}

/// The preloaded file that a by-name load of `name` gets: one whose `DT_SONAME` (or, without
/// one, file name) is `name`.
pub(crate) fn already_loaded(preloaded: &[PathBuf], name: &str) -> Option<PathBuf> {
    preloaded
        .iter()
        .find(|p| {
            let soname = Object::read(p).and_then(|o| o.dynamic.soname);
            soname.as_deref().or(p.file_name().and_then(|n| n.to_str())) == Some(name)
        })
        .cloned()
}

/// The process inputs the finders read: the variables of the process and the loader's inputs.
pub struct Scene<'a> {
    /// The process's environment variables.
    pub get: &'a dyn Fn(&str) -> Option<OsString>,
    /// ld.so's inputs ([`LinuxEnv::new`] of the process's `LD_LIBRARY_PATH`).
    pub linux: &'a LinuxEnv,
    /// Files loaded before any consumer asks (the env hook's preloads), in order.
    pub preloaded: &'a [PathBuf],
    /// The process's `PATH` entries in order, empty ones kept: the end of a Windows by-name
    /// search ([`WinSearch::standard`](crate::doctor::winsearch::WinSearch::standard)).
    pub path_folders: &'a [PathBuf],
}

/// TensorFlow's build facts (`tensorflow/python/platform/build_info.py`): the value of `key`
/// (`cudnn_version`, `cuda_version`) as written, in either form TensorFlow generates it: a
/// dict literal (`'cudnn_version': '8'`) or, as 2.16.1 writes it, an `OrderedDict` of pairs
/// (`('cudnn_version', '8')`).
pub fn build_info_value(text: &str, key: &str) -> Option<String> {
    let at = text.find(&format!("'{key}'")).or_else(|| text.find(&format!("\"{key}\"")))? + key.len() + 2;
    let rest = text[at..].trim_start();
    let rest = rest.strip_prefix(':').or_else(|| rest.strip_prefix(','))?.trim_start();
    let q = rest.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let rest = &rest[1..];
    Some(rest[..rest.find(q)?].to_string())
}

/// Whether a TensorFlow `build_info.py` says its build has no CUDA (`is_cuda_build` False, as
/// `tensorflow-cpu` and the Windows releases after 2.10 write it): such a build loads no cuDNN.
pub fn is_cpu_build(text: &str) -> bool {
    ["'is_cuda_build', False", "'is_cuda_build': False", "\"is_cuda_build\": False"].iter().any(|p| text.contains(p))
}

/// The cuDNN dispatchers `onnxruntime.preload_dlls()` loads on `os`, read from the installed
/// `onnxruntime/__init__.py` (`_get_nvidia_dll_paths`, onnxruntime-gpu 1.31: tuples such as
/// `("nvidia", "cudnn", "lib", "libcudnn.so.9")` for Linux and
/// `("nvidia", "cudnn", "bin", "cudnn64_9.dll")` for Windows, joined under site-packages):
/// each (relative path, file name). `None` when the file has no `preload_dlls`.
pub fn onnxruntime_preloads(init_py: &str, os: Os) -> Option<Vec<(PathBuf, String)>> {
    if !init_py.contains("def preload_dlls") {
        return None;
    }
    let mut out = Vec::new();
    for (at, _) in init_py.match_indices("(\"nvidia\",") {
        let Some(end) = init_py[at..].find(')') else { continue };
        let parts: Vec<&str> = init_py[at + 1..at + end].split(',').map(|p| p.trim().trim_matches('"')).filter(|p| !p.is_empty()).collect();
        if let Some(name) = parts.last()
            && libname::loader_dispatcher_major(name, os).is_some()
        {
            let rel: PathBuf = parts.iter().collect();
            if !out.iter().any(|(r, _)| r == &rel) {
                out.push((rel, name.to_string()));
            }
        }
    }
    Some(out)
}

/// The loads of every consumer present in `env`: on Linux the `DT_NEEDED` consumers `named`,
/// `cuda.pathfinder`, TensorFlow, `onnxruntime.preload_dlls()`; on Windows [`loads_windows`].
pub fn loads(env: &PyEnv, named: &[Consumer], scene: &Scene) -> Vec<Load> {
    let mut out = Vec::new();
    if cfg!(windows) {
        return loads_windows(env, scene);
    }
    let described = env.describe();
    let by_name = |name: &str, asker: &Object| -> (Option<PathBuf>, String) {
        if let Some(p) = already_loaded(scene.preloaded, name) {
            return (Some(p), "already loaded: the env hook preloads it, and a load by name of the same soname gets that copy".into());
        }
        match loader::find(name, asker, &[], scene.linux) {
            Some(p) => (Some(p.path.clone()), p.via.describe("LD_LIBRARY_PATH")),
            None => (None, "no folder it searches holds it".into()),
        }
    };
    // PyTorch's fallback when libtorch_global_deps.so does not load: its cuDNN preloaded by
    // full path from sys.path, which torch's own libraries then get (module `torch`).
    let fallbacks = torch_fallbacks(env, scene);
    for c in named {
        let Some(o) = Object::read(&c.path) else { continue };
        let name = libname::dispatcher_name(c.major, Os::Linux);
        let fallback = fallbacks.iter().find(|f| c.path.starts_with(f.site_packages.join("torch")));
        let (path, how) = match fallback {
            Some(f) if already_loaded(scene.preloaded, &name).is_none() => (f.cudnn.clone(), torch::fallback_words(f)),
            _ => by_name(&name, &o),
        };
        out.push(Load {
            finder: Finder::Needed,
            env: described.clone(),
            consumer: c.who.clone(),
            library: name,
            major: c.major,
            path,
            how,
            found_via: None,
            full_path: false,
            verified: true,
        });
    }
    for sp in &env.site_packages {
        match pathfinder_catalog(sp) {
            None => {}
            Some(Err(why)) => out.push(Load::not_verified(
                Finder::Pathfinder,
                &described,
                "cuda.pathfinder",
                libname::dispatcher_name(9, Os::Linux),
                9,
                true,
                format!("{why}, so cuenv cannot say what it loads"),
            )),
            Some(Ok(cat)) => {
                let who = format!("cuda.pathfinder {}", cat.version.as_deref().unwrap_or("(version unknown)"));
                let got = pathfinder_cudnn(&cat, env, scene);
                let how = match &got {
                    Some((_, via)) => format!("`load_nvidia_dynamic_lib(\"cudnn\")` finds it with found_via `{via}`"),
                    None => "`load_nvidia_dynamic_lib(\"cudnn\")` finds it in none of the places it searches and raises DynamicLibNotFoundError".into(),
                };
                for s in cat.sonames.iter().take(1) {
                    out.push(Load {
                        finder: Finder::Pathfinder,
                        env: described.clone(),
                        consumer: who.clone(),
                        library: s.clone(),
                        major: libname::loader_dispatcher_major(s, Os::Linux).unwrap_or(0),
                        path: got.as_ref().map(|(p, _)| p.clone()),
                        how: how.clone(),
                        found_via: got.as_ref().map(|(_, v)| v.clone()),
                        full_path: false,
                        verified: true,
                    });
                }
            }
        }
        if let Some(preloads) = std::fs::read_to_string(sp.join("onnxruntime/__init__.py")).ok().as_deref().and_then(|t| onnxruntime_preloads(t, Os::Linux)) {
            for (rel, name) in preloads {
                let file = sp.join(&rel);
                let major = libname::loader_dispatcher_major(&name, Os::Linux).unwrap_or(0);
                let (path, how, full_path) = if file.is_file() {
                    (Some(file.clone()), format!("`onnxruntime.preload_dlls()` opens {} by full path", file.display()), true)
                } else {
                    let (p, how) = by_name(&name, &Object::bare(Path::new("/")));
                    (p, format!("`onnxruntime.preload_dlls()` finds no {} and opens {name} by name: {how}", rel.display()), false)
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
        match te_finder(sp) {
            None => {}
            Some(Err(why)) => out.push(Load::not_verified(
                Finder::TransformerEngine,
                &described,
                "TransformerEngine",
                "libcudnn.so".into(),
                0,
                true,
                format!("{why}, so cuenv cannot say which cuDNN it loads"),
            )),
            Some(Ok(te)) => {
                // `sysconfig.get_path("purelib")`: the env's own site-packages, not the user site.
                let purelib = env.site_packages.iter().find(|p| p.starts_with(&env.prefix)).unwrap_or(sp);
                let got = te_cudnn(&te, purelib, env.python.as_deref(), scene);
                let (path, how, full_path) = match got {
                    Ok((p, step)) => {
                        let by_name = step.starts_with("its load by name");
                        (Some(p), format!("`import transformer_engine` loads it through {step}; its order: {}", te_order_words(&te)), !by_name)
                    }
                    Err(why) => (None, format!("{why}; its order: {}", te_order_words(&te)), true),
                };
                let soname = path.as_deref().and_then(Object::read).and_then(|o| o.dynamic.soname);
                let name = soname.or_else(|| path.as_ref().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()));
                let major = name.as_deref().and_then(libname::parse).and_then(|l| l.major).unwrap_or(0);
                out.push(Load {
                    finder: Finder::TransformerEngine,
                    env: described.clone(),
                    consumer: format!("TransformerEngine {}", te.version.as_deref().unwrap_or("(version unknown)")),
                    library: name.unwrap_or_else(|| "libcudnn.so".into()),
                    major,
                    path,
                    how,
                    found_via: None,
                    full_path,
                    verified: true,
                });
            }
        }
        let info = sp.join("tensorflow/python/platform/build_info.py");
        if let Ok(text) = std::fs::read_to_string(&info)
            && !is_cpu_build(&text)
        {
            let cudnn = build_info_value(&text, "cudnn_version");
            let cuda = build_info_value(&text, "cuda_version");
            let major = cudnn.as_deref().and_then(|v| v.split('.').next()?.parse::<u64>().ok());
            let Some(major) = major else {
                out.push(Load::not_verified(
                    Finder::Tensorflow,
                    &described,
                    "TensorFlow",
                    "libcudnn.so".into(),
                    0,
                    false,
                    format!("{} names no cudnn_version (a CPU build, or a form cuenv does not read)", info.display()),
                ));
                continue;
            };
            let name = libname::dispatcher_name(major, Os::Linux);
            let framework = sp.join("tensorflow/libtensorflow_framework.so.2");
            let asker = Object::read(&framework).unwrap_or_else(|| Object::bare(&framework));
            let (path, how) = by_name(&name, &asker);
            let how = format!(
                "its build_info.py names cuDNN {}{}, which it opens by name from libtensorflow_framework.so.2 ({}): {how}",
                cudnn.as_deref().unwrap_or("?"),
                cuda.map(|c| format!(" for CUDA {c}")).unwrap_or_default(),
                match &asker.dynamic.runpath {
                    Some(r) => format!("DT_RUNPATH `{}`", r.join(":")),
                    None if !asker.dynamic.rpath.is_empty() => format!("DT_RPATH `{}`", asker.dynamic.rpath.join(":")),
                    None => "no DT_RUNPATH".into(),
                }
            );
            out.push(Load {
                finder: Finder::Tensorflow,
                env: described.clone(),
                consumer: "TensorFlow".into(),
                library: name,
                major,
                path,
                how,
                found_via: None,
                full_path: false,
                verified: true,
            });
        }
    }
    out
}

/// The nvidia wheel folders of `env` holding `name` (`nvidia/*/lib/<name>`, on Windows
/// `nvidia/*/bin/<name>`).
fn wheel_copies(env: &PyEnv, name: &str, os: Os) -> Vec<PathBuf> {
    let rel = if os == Os::Windows { "nvidia/*/bin" } else { "nvidia/*/lib" };
    env.site_packages.iter().flat_map(|sp| glob_dirs(sp, rel, os == Os::Windows)).map(|d| d.join(name)).filter(|f| f.is_file()).collect()
}

fn canon(p: &Path) -> PathBuf {
    crate::sys::paths::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The findings of the loads `loads` of one env `env`:
/// - a consumer that finds no copy while a wheel of the env holds one (it does not search the
///   wheel folders: TensorFlow 2.16's libraries have no DT_RUNPATH into them);
/// - two consumers of one major that would get different files: in one process glibc keeps
///   one copy per soname for loads by name, so the first import decides, and a full-path load
///   of the other file maps a second copy whose sub-libraries, loaded by name, come from the
///   first;
/// - a consumer the model does not cover ("not verified").
/// - a consumer whose copy is another release than the one a load by name gets here
///   (`by_name`: (major, dispatcher) of doctor's probe), which doctor's first lines report.
/// - two consumers that need different cuDNN majors (a process that imports both carries two
///   releases).
///
/// `os` words the loader's rule (glibc's sonames, Windows' module names).
pub fn judge(env: &PyEnv, loads: &[Load], by_name: &[(u64, Option<PathBuf>)], os: Os) -> Vec<Finding> {
    let mut out = Vec::new();
    let release = |p: &Path, major: u64| super::frameworks::own_release(p, major);
    for l in loads.iter().filter(|l| l.verified && l.finder != Finder::TransformerEngine) {
        let (Some(got), Some((_, Some(bare)))) = (&l.path, by_name.iter().find(|(m, _)| *m == l.major)) else { continue };
        let (g, b) = (canon(got), canon(bare));
        let (gv, bv) = (release(&g, l.major), release(&b, l.major));
        if g == b || matches!((&gv, &bv), (Some(x), Some(y)) if loader::same_release(x, y)) {
            continue;
        }
        let v = |x: &Option<crate::cudnn::version::Version>| x.as_ref().map(|v| v.to_string()).unwrap_or_else(|| "version unknown".into());
        out.push(Finding {
            rule: None,
            severity: Severity::Warning,
            message: format!(
                "{} in {} would load {} ({}) {}, not the {} ({}) a load by name gets in this environment",
                l.consumer,
                l.env,
                g.display(),
                v(&gv),
                l.how,
                b.display(),
                v(&bv)
            ),
            hint: Some(format!(
                "what this program runs with is {}: keep it at the cuDNN release you want, or bind the env to a cuenv profile (`python-env`) so its env hook preloads the profile's copy before any framework imports",
                g.display()
            )),
        });
    }
    for l in loads {
        if !l.verified {
            out.push(Finding {
                rule: None,
                severity: Severity::Warning,
                message: format!("{} in {}: {}", l.consumer, l.env, l.how),
                hint: Some("`cuenv doctor --pid PID` on a running process shows what it mapped".into()),
            });
            continue;
        }
        // A library that names the dispatcher and finds none is judged with its framework
        // copies (`frameworks::judge`).
        // Pathfinder finding none is no problem by itself (CuPy runs without cuDNN).
        if l.path.is_none() && l.finder == Finder::Tensorflow {
            let wheels = wheel_copies(env, &l.library, os);
            let (message, hint) = if let Some(w) = wheels.first() {
                (
                    format!(
                        "{} in {} loads {} by name, and {} would not resolve for it: {}; the env's wheel copy {} is in a folder it does not search (the wheel folders are not on the loader path)",
                        l.consumer,
                        l.env,
                        l.library,
                        l.library,
                        l.how,
                        w.display()
                    ),
                    format!(
                        "bind this env to a cuenv profile (`python-env`) so its env hook preloads cuDNN {}, or put {} on {} in the env's activation",
                        l.major,
                        w.parent().map(|d| d.display().to_string()).unwrap_or_default(),
                        if os == Os::Windows { "PATH" } else { "LD_LIBRARY_PATH" }
                    ),
                )
            } else if os == Os::Windows {
                (
                    format!("{} in {} loads {}, and none resolves: {}", l.consumer, l.env, l.library, l.how),
                    format!(
                        "put a folder holding {} (the cuDNN {} its build names) on PATH: a cuenv profile with that cuDNN major does it (`cuenv apply`, then activate it or bind the env with `python-env`)",
                        l.library, l.major
                    ),
                )
            } else {
                (
                    format!("{} in {} loads {}, and none resolves: {}", l.consumer, l.env, l.library, l.how),
                    format!("install the cuDNN {} it was built for (the nvidia-cudnn-cu* wheel), or bind the env to a profile that has it", l.major),
                )
            };
            out.push(Finding { rule: None, severity: Severity::Problem, message, hint: Some(hint) });
        }
    }
    out.extend(te::judge_transformer_engine(env, loads, by_name));
    // Two consumers, one soname, different files.
    let found: Vec<&Load> = loads.iter().filter(|l| l.verified && l.path.is_some()).collect();
    let mut told: Vec<String> = Vec::new();
    for (i, a) in found.iter().enumerate() {
        for b in &found[i + 1..] {
            let (pa, pb) = (canon(a.path.as_ref().unwrap()), canon(b.path.as_ref().unwrap()));
            if a.library != b.library || pa == pb || told.contains(&a.library) {
                continue;
            }
            told.push(a.library.clone());
            let (va, vb) = (super::frameworks::own_release(&pa, a.major), super::frameworks::own_release(&pb, b.major));
            let v = |x: &Option<crate::cudnn::version::Version>| x.as_ref().map(|v| v.to_string()).unwrap_or_else(|| "version unknown".into());
            let full = [a, b].iter().filter(|l| l.full_path).map(|l| l.consumer.clone()).collect::<Vec<_>>();
            let opens = if full.len() > 1 { "open their copies" } else { "opens its copy" };
            let second = match (full.is_empty(), os) {
                (true, Os::Linux) => {
                    "in one process glibc keeps one copy per soname for loads by name, so whichever is imported first decides which copy both get".to_string()
                }
                (true, Os::Windows) => {
                    "in one process Windows keeps one module per DLL name for loads by name, so whichever is imported first decides which copy both get"
                        .to_string()
                }
                (false, Os::Linux) => format!(
                    "in one process {} {} by full path, so after the other's import a second copy is mapped, and its sub-libraries, loaded by name, come from the first copy's release",
                    full.join(" and "),
                    opens
                ),
                (false, Os::Windows) => format!(
                    "in one process {} {} by full path, so after the other's import a second copy is mapped, and the DLLs it imports by name bind to the modules of those names already loaded, from the first copy's release (where the releases differ this fails as `WinError 127`, the specified procedure could not be found, or as a sub-library version mismatch)",
                    full.join(" and "),
                    opens
                ),
            };
            out.push(Finding {
                rule: None,
                severity: Severity::Warning,
                message: format!(
                    "in {}, {} would load {} ({}) and {} would load {} ({}): {second}",
                    a.env,
                    a.consumer,
                    pa.display(),
                    v(&va),
                    b.consumer,
                    pb.display(),
                    v(&vb)
                ),
                hint: Some(format!(
                    "keep one cuDNN {} in this env (remove the other copy), or bind the env to a cuenv profile (`python-env`) so its env hook preloads one copy before any framework imports",
                    a.major
                )),
            });
        }
    }
    // Two consumers, two majors. A consumer that names two majors (a library that tries one,
    // then the other) takes no part: which it loads depends on what it finds.
    let one_major = |l: &Load| loads.iter().all(|o| o.consumer != l.consumer || o.major == l.major);
    let mut majors: Vec<&Load> = Vec::new();
    for l in loads.iter().filter(|l| l.verified && l.major > 0 && one_major(l)) {
        if !majors.iter().any(|m| m.major == l.major) {
            majors.push(l);
        }
    }
    majors.sort_by_key(|l| l.major);
    if let [low, .., high] = majors.as_slice() {
        let at = |l: &Load| l.path.as_ref().map(|p| format!(" ({})", p.display())).unwrap_or_default();
        out.push(Finding {
            rule: None,
            severity: Severity::Warning,
            message: format!(
                "in {}, {} needs cuDNN {} ({}{}) and {} needs cuDNN {} ({}{}): a process that imports both carries two cuDNN releases, side by side under different names, which neither is built or tested with",
                env.describe(),
                low.consumer,
                low.major,
                low.library,
                at(low),
                high.consumer,
                high.major,
                high.library,
                at(high)
            ),
            hint: Some(format!("run them in separate processes (one profile each), or install releases of both built for cuDNN {}", high.major)),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_info_value_is_read_as_written() {
        let text = "build_info = {'cpu_compiler': '/usr/bin/clang', 'cuda_version': '12.3', 'cudnn_version': '8', 'is_cuda_build': True}\n";
        assert_eq!(build_info_value(text, "cudnn_version").as_deref(), Some("8"));
        assert_eq!(build_info_value(text, "cuda_version").as_deref(), Some("12.3"));
        assert_eq!(build_info_value(text, "nccl_version"), None);
        // TensorFlow 2.16.1's own form (its wheel's build_info.py).
        let pairs = "build_info = collections.OrderedDict([('cuda_version', '12.3'), ('cudnn_version', '8'), ('is_cuda_build', True)])";
        assert_eq!(build_info_value(pairs, "cudnn_version").as_deref(), Some("8"));
        assert_eq!(build_info_value(pairs, "cuda_version").as_deref(), Some("12.3"));
    }

    #[test]
    fn a_cpu_build_of_tensorflow_is_told_apart_from_a_form_cuenv_does_not_read() {
        assert!(is_cpu_build("build_info = collections.OrderedDict([('is_cuda_build', False), ('is_rocm_build', False)])"));
        assert!(is_cpu_build("build_info = {'is_cuda_build': False}"));
        assert!(!is_cpu_build("build_info = collections.OrderedDict([('cudnn_version', '8'), ('is_cuda_build', True)])"));
        assert!(!is_cpu_build("build_info = load()"), "a form cuenv does not read stays \"not verified\"");
    }

    #[test]
    fn a_torch_lib_holding_a_dispatcher_is_named_for_each_hook_on_windows() {
        let tmp = tempfile::tempdir().unwrap();
        let sp = tmp.path().join("Lib/site-packages");
        std::fs::create_dir_all(sp.join("torch/lib")).unwrap();
        std::fs::write(sp.join("torch/lib/cudnn64_9.dll"), b"MZ").unwrap();
        std::fs::write(sp.join("torch/lib/cudnn_graph64_9.dll"), b"MZ").unwrap();
        let env =
            PyEnv { kind: crate::pyenv::Kind::Venv, prefix: tmp.path().to_path_buf(), site_packages: vec![sp.clone()], python: None, found_by: "test".into() };
        let hook = Hook { profile: "torch".into(), preload: vec![], path: vec![], ld_library_path: vec![], set: vec![] };
        let hooks = vec![(sp.join("00-cuenv-torch.pth"), hook)];
        let f = torch_keeps_its_copy(&env, &hooks, Os::Windows);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].message.contains("cudnn64_9.dll") && f[0].message.contains("profile torch's env hook"), "{}", f[0].message);
        // No hook, or a torch/lib without a dispatcher: nothing.
        assert!(torch_keeps_its_copy(&env, &[], Os::Windows).is_empty());
        std::fs::remove_file(sp.join("torch/lib/cudnn64_9.dll")).unwrap();
        assert!(torch_keeps_its_copy(&env, &hooks, Os::Windows).is_empty());
    }

    #[test]
    fn onnxruntime_preloads_are_read_from_its_tuples() {
        let text = "def _get_nvidia_dll_paths(is_windows, cuda=True, cudnn=True):\n    cudnn_dll_paths = [\n        (\"nvidia\", \"cudnn\", \"bin\", \"cudnn64_9.dll\"),\n    ]\n    cudnn_dll_paths = [\n        (\"nvidia\", \"cudnn\", \"lib\", \"libcudnn.so.9\"),\n    ]\n(\"nvidia\", \"cublas\", \"lib\", \"libcublas.so.12\")\ndef preload_dlls(cuda=True):\n    pass\n";
        assert_eq!(onnxruntime_preloads(text, Os::Linux).unwrap(), vec![(PathBuf::from("nvidia/cudnn/lib/libcudnn.so.9"), "libcudnn.so.9".to_string())]);
        assert_eq!(onnxruntime_preloads("import os\n", Os::Linux), None);
    }

    #[test]
    fn a_tuple_of_literals_is_read_and_a_missing_key_is_none() {
        let block = "name=\"cudnn\",\n linux_sonames=(\"libcudnn.so.9\",),\n site_packages_linux=(\"nvidia/cu13/lib\", \"nvidia/cudnn/lib\"),";
        assert_eq!(tuple_after(block, "linux_sonames").unwrap(), ["libcudnn.so.9"]);
        assert_eq!(tuple_after(block, "site_packages_linux").unwrap(), ["nvidia/cu13/lib", "nvidia/cudnn/lib"]);
        assert_eq!(tuple_after(block, "windows_dlls"), None);
    }
}
