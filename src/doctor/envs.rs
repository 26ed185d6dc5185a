//! The Python environments doctor looks at ([`crate::pyenv`]: the shell's `VIRTUAL_ENV` and
//! `CONDA_PREFIX`, an interpreter named with `--python`), and what each holds that decides
//! which cuDNN a process there loads: the framework copies ([`super::framework_copies`]), the
//! libraries that load cuDNN ([`consumers`]: PyTorch's `torch/lib` and any other package's,
//! a JAX plugin, CTranslate2, onnxruntime), and the CUDA libraries the copies' own files name
//! (cuBLAS, NVRTC: `nvidia/cublas/lib` for CUDA 12 wheels, `nvidia/cu13/lib` for CUDA 13's,
//! found as their `DT_RUNPATH` says; docs/loader.md).

use std::path::{Path, PathBuf};

use super::search_path::mixed_releases;
use super::{Finding, SearchDir, Severity, frameworks};
use crate::cudnn::libname::{self, Os};
use crate::pyenv::PyEnv;
use crate::sys::{binfmt, paths};

/// A library in an env's site-packages that loads a cuDNN dispatcher by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consumer {
    /// The library file.
    pub path: PathBuf,
    /// It in words: "PyTorch's libtorch_cuda.so", "jax_cuda12_plugin's xla_cuda_plugin.so".
    pub who: String,
    /// The cuDNN major of the dispatcher it names.
    pub major: u64,
    /// Whether it is PyTorch's (`torch/lib`): `import torch` loads that folder's DLLs itself.
    pub torch: bool,
    /// Whether it names the dispatcher only in its data, not as a library it needs: it opens
    /// it by name itself (`dlopen` / `LoadLibrary`) when it first needs cuDNN, with its own
    /// search path (XLA's loader in a JAX plugin, newer onnxruntime CUDA providers).
    pub lazy: bool,
}

/// Most library files [`consumers`] reads the headers of, per site-packages folder.
const MAX_FILES: usize = 4000;

/// The libraries of `env`'s site-packages that name a cuDNN dispatcher as a library they need:
/// ELF `DT_NEEDED` on Linux, the PE import table on Windows (headers only, at most
/// 4000 files per folder). Looked for in `torch/lib` and in every other package up to
/// three folders deep, except NVIDIA's own wheels (`nvidia/`), which provide cuDNN rather than
/// load it. Sorted by path, each (file, major) once.
pub fn consumers(env: &PyEnv) -> Vec<Consumer> {
    let mut out: Vec<Consumer> = Vec::new();
    for sp in &env.site_packages {
        let mut files: Vec<(PathBuf, String)> = Vec::new();
        let walker = walkdir::WalkDir::new(sp).min_depth(2).max_depth(4).sort_by_file_name().into_iter().filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            !(e.depth() == 1 && (name == "nvidia" || name.ends_with(".dist-info") || name.starts_with('.')) || name == "__pycache__")
        });
        for e in walker.flatten() {
            if files.len() >= MAX_FILES {
                break;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            let lower = name.to_ascii_lowercase();
            let library = if cfg!(windows) { lower.ends_with(".dll") || lower.ends_with(".pyd") } else { lower.contains(".so") };
            if !e.file_type().is_file() || !library || libname::parse(&name).is_some() {
                continue;
            }
            let Ok(rel) = e.path().strip_prefix(sp) else { continue };
            let package = rel.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned()).unwrap_or_default();
            files.push((e.path().to_path_buf(), package));
        }
        for (file, package) in files {
            let torch = package == "torch" && file.parent().is_some_and(|d| d.ends_with("torch/lib") || d.ends_with("torch\\lib"));
            for (major, lazy) in named_dispatchers(&file) {
                let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let who = if torch { format!("PyTorch's {name}") } else { format!("{package}'s {name}") };
                if !out.iter().any(|c| c.path == file && c.major == major) {
                    out.push(Consumer { path: file.clone(), who, major, torch, lazy });
                }
            }
        }
    }
    out
}

/// Files larger than this are not scanned for names in their data (real consumers' data
/// sections are a few to 256 MiB; [`binfmt::referenced_libraries`] skips larger sections).
const MAX_SCANNED: u64 = 2 << 30;

/// The cuDNN majors whose dispatcher the library at `file` loads by name, each with whether
/// only lazily: first the libraries it needs (Linux `DT_NEEDED`, Windows imports); when it
/// needs none, the dispatcher names written in its data (`.rodata`, `.rdata`: a name it
/// passes to `dlopen` / `LoadLibrary` itself, [`binfmt::referenced_libraries`]). Empty when
/// it is not a library of this host's format.
fn named_dispatchers(file: &Path) -> Vec<(u64, bool)> {
    let names: Vec<String> = if cfg!(windows) {
        binfmt::pe_imports(file).ok().flatten().unwrap_or_default()
    } else {
        binfmt::elf_dynamic(file).ok().flatten().map(|d| d.needed).unwrap_or_default()
    };
    let mut majors: Vec<(u64, bool)> = names.iter().filter_map(|n| libname::loader_dispatcher_major(n, Os::HOST)).map(|m| (m, false)).collect();
    if majors.is_empty() && std::fs::metadata(file).is_ok_and(|m| m.len() <= MAX_SCANNED) {
        let data = binfmt::referenced_libraries(file).map(|r| r.cudnn).unwrap_or_default();
        majors = data.iter().filter_map(|n| libname::loader_dispatcher_major(n, Os::HOST)).map(|m| (m, true)).collect();
    }
    // A library whose own search path leads into a folder holding a dispatcher loads it from
    // there by a name it builds at run time (XLA's loader in jax_cuda12_pjrt 0.4.35 writes
    // no `libcudnn.so.9` anywhere; its DT_RPATH names `$ORIGIN/../../nvidia/cudnn/lib`).
    if majors.is_empty()
        && !cfg!(windows)
        && let Some(o) = super::loader::Object::read(file)
    {
        let entries = o.dynamic.runpath.clone().unwrap_or_else(|| o.dynamic.rpath.clone());
        for e in entries {
            let dir = super::loader::expand(&e, &o.origin());
            let Ok(rd) = std::fs::read_dir(&dir) else { continue };
            for f in rd.flatten() {
                if let Some(m) = libname::loader_dispatcher_major(&f.file_name().to_string_lossy(), Os::HOST) {
                    majors.push((m, true));
                }
            }
        }
    }
    majors.sort();
    majors.dedup();
    majors
}

/// The findings of the Python env `env`: its cuenv shims not run (a conda prefix, when no
/// profile is active), framework copies holding two releases, what the loader model predicts
/// for the copies and their consumers ([`frameworks::judge`]), and the CUDA libraries the
/// copies' files name that no folder they search holds (F4, [`crate::companion`]).
/// `users` are the env's [`consumers`] (read once by the caller, which models their finders too).
pub(super) fn judge(
    env: &PyEnv,
    users: &[Consumer],
    profile_active: bool,
    search_path: &[SearchDir],
    folders: &[PathBuf],
    search_var: &str,
    preloaded: &[PathBuf],
) -> Vec<Finding> {
    let mut findings = Vec::new();
    if env.kind.is_conda()
        && !profile_active
        && let Some(f) = super::origin::shim_not_run(&env.prefix)
    {
        findings.push(f);
    }
    let copies = super::framework_copies(env);
    // What the env's frameworks require of cuDNN, from conda's package records, against the
    // release conda's cudnn package holds (its files' version where they tell it).
    let conda_copy = copies.iter().find(|(_, what, _)| what.starts_with("conda's")).and_then(|(_, _, d)| Some((d.version.clone()?, d.version_from.clone()?)));
    findings.extend(super::requires::judge(env, conda_copy));
    let mut judged: Vec<&Path> = Vec::new();
    for (dir, what, d) in &copies {
        if !judged.contains(&dir.as_path()) && !search_path.iter().any(|s| paths::same_path(&s.path, dir)) {
            findings.extend(mixed_releases(dir, d.major, &format!("({what} in {})", env.describe())));
            judged.push(dir);
        }
    }
    // The env's python.exe is the host: its folder is the application's folder.
    let app_dir = env.python.as_deref().and_then(Path::parent).map(Path::to_path_buf).or_else(|| super::winsearch::python_app_dir(Some(&env.prefix)));
    let win = super::winsearch::WinSearch::standard(folders, app_dir);
    findings.extend(frameworks::judge(env, &copies, users, folders, &win, search_var, preloaded));
    // The CUDA libraries each wheel copy names, found as its own files search for them.
    let mut seen: Vec<&Path> = Vec::new();
    for (dir, what, d) in copies.iter().filter(|(_, what, _)| what.starts_with("the pip wheel")) {
        if seen.contains(&dir.as_path()) {
            continue;
        }
        seen.push(dir);
        let loads = crate::companion::model_loads(&crate::companion::cudnn_files(dir, d.major), folders, &[]);
        for v in crate::companion::judge_loads(&loads, |_| None) {
            findings.push(Finding {
                rule: Some(v.rule),
                severity: Severity::Problem,
                message: format!("{what} in {} ({}): {}", env.describe(), dir.display(), v.message),
                hint: Some(v.hint),
            });
        }
    }
    findings
}

/// The environments doctor looks at, in order: an interpreter named with `--python` (asked
/// with `-S -I`), then the shell's (`VIRTUAL_ENV`, `CONDA_PREFIX`), each prefix once. A named
/// interpreter that gives no answer is a problem finding; doctor goes on without it.
pub(super) fn discover(named: Option<&Path>, get: &dyn Fn(&str) -> Option<std::ffi::OsString>, findings: &mut Vec<Finding>) -> Vec<PyEnv> {
    let mut envs: Vec<PyEnv> = Vec::new();
    if let Some(python) = named {
        match crate::pyenv::ask(python, std::time::Duration::from_secs(20)) {
            Ok(e) => envs.push(e),
            Err(e) => findings.push(Finding {
                rule: None,
                severity: Severity::Problem,
                message: format!("--python: {e}"),
                hint: Some("name the interpreter the program runs with (its full path: `python -c \"import sys; print(sys.executable)\"` prints it)".into()),
            }),
        }
    }
    for e in crate::pyenv::from_vars(get) {
        if !envs.iter().any(|x| paths::same_path(&x.prefix, &e.prefix)) {
            envs.push(e);
        }
    }
    // A `VIRTUAL_ENV` that names no venv (deleted, moved) is said, not skipped in silence.
    if let Some(v) = get("VIRTUAL_ENV").filter(|v| !v.is_empty())
        && crate::pyenv::at(Path::new(&v), "VIRTUAL_ENV").is_none()
    {
        findings.push(Finding {
            rule: None,
            severity: Severity::Warning,
            message: format!(
                "VIRTUAL_ENV is {}, which is no Python environment (no pyvenv.cfg there): its site-packages were not looked at",
                Path::new(&v).display()
            ),
            hint: Some("`deactivate` the stale venv, or activate the one you run in (or name its interpreter with --python)".into()),
        });
    }
    envs
}
