//! `cuda.pathfinder`'s cuDNN search on Linux (module documentation of [`super`]), read from
//! the installed package's catalog (`cuda/pathfinder/_dynamic_libs/descriptor_catalog.py`),
//! and the folder globbing its Windows model shares.

use std::path::{Path, PathBuf};

use super::{Scene, already_loaded, dist_version};
use crate::doctor::loader::{self, Object};
use crate::pyenv::PyEnv;

/// The cuDNN entry of an installed `cuda.pathfinder`'s catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathfinderCatalog {
    /// The package's version (its `.dist-info` folder), when found.
    pub version: Option<String>,
    /// `linux_sonames`: `["libcudnn.so.9"]`.
    pub sonames: Vec<String>,
    /// `site_packages_linux`: `["nvidia/cudnn/lib"]` (may hold `*`).
    pub site_packages: Vec<String>,
    /// `anchor_rel_dirs_linux` (the dataclass default when the entry sets none): under
    /// `$CONDA_PREFIX` and `CUDA_PATH`.
    pub anchor_dirs: Vec<String>,
    /// `install_root_env_vars_linux`: `["CUDNN_PATH"]`.
    pub root_vars: Vec<String>,
    /// `install_root_env_rel_dirs_linux`: `["lib", "lib64"]`.
    pub root_dirs: Vec<String>,
}

/// The quoted strings of the tuple after `key=` in `block` (`key=("a", "b")`), or `None`
/// when `key=` is absent.
pub(super) fn tuple_after(block: &str, key: &str) -> Option<Vec<String>> {
    let at = block.find(&format!("{key}="))? + key.len() + 1;
    let rest = &block[at..];
    let rest = rest.strip_prefix('(')?;
    let end = rest.find(')')?;
    Some(rest[..end].split(',').filter_map(|s| s.trim().strip_prefix('"')?.strip_suffix('"').map(str::to_string)).collect())
}

/// Reads the cuDNN entry of the `cuda.pathfinder` installed in `site_packages`
/// (`cuda/pathfinder/_dynamic_libs/descriptor_catalog.py`, a `DescriptorSpec(name="cudnn", ...)`
/// call with tuples of string literals, as cuda-pathfinder 1.9 writes it). `None` when it is
/// not installed there; `Some(Err(why))` when installed but the catalog is not in that form.
pub fn pathfinder_catalog(site_packages: &Path) -> Option<Result<PathfinderCatalog, String>> {
    let entry = pathfinder_cudnn_entry(site_packages)?;
    let version = dist_version(site_packages, "cuda_pathfinder");
    let read = || -> Result<PathfinderCatalog, String> {
        let (file, text, block) = entry?;
        let block = block.as_str();
        let sonames =
            tuple_after(block, "linux_sonames").filter(|s| !s.is_empty()).ok_or_else(|| format!("{}'s cudnn entry has no linux_sonames", file.display()))?;
        let site_packages = tuple_after(block, "site_packages_linux").unwrap_or_default();
        let default_anchor = text
            .find("anchor_rel_dirs_linux: tuple[str, ...] = ")
            .and_then(|at| tuple_after(&text[at..].replacen(": tuple[str, ...] = ", "=", 1), "anchor_rel_dirs_linux"));
        let anchor_dirs =
            tuple_after(block, "anchor_rel_dirs_linux").or(default_anchor).ok_or_else(|| format!("{} names no anchor_rel_dirs_linux", file.display()))?;
        Ok(PathfinderCatalog {
            version: version.clone(),
            sonames,
            site_packages,
            anchor_dirs,
            root_vars: tuple_after(block, "install_root_env_vars_linux").unwrap_or_default(),
            root_dirs: tuple_after(block, "install_root_env_rel_dirs_linux").unwrap_or_default(),
        })
    };
    Some(read())
}

/// The `cudnn` entry of the `cuda.pathfinder` catalog installed in `site_packages`
/// (`cuda/pathfinder/_dynamic_libs/descriptor_catalog.py`): (the file, its text, the entry's
/// text from `name="cudnn"` to the next `DescriptorSpec(`). `None` when pathfinder is not
/// installed there; `Some(Err(why))` when the file cannot be read or has no such entry.
pub(super) fn pathfinder_cudnn_entry(site_packages: &Path) -> Option<Result<(PathBuf, String, String), String>> {
    let pkg = site_packages.join("cuda").join("pathfinder");
    if !pkg.join("__init__.py").is_file() {
        return None;
    }
    let file = pkg.join("_dynamic_libs").join("descriptor_catalog.py");
    let read = || -> Result<(PathBuf, String, String), String> {
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{} cannot be read: {e}", file.display()))?;
        let start = text.find("name=\"cudnn\"").ok_or_else(|| format!("{} has no `name=\"cudnn\"` entry", file.display()))?;
        let block = &text[start..];
        let block = block[..block.find("DescriptorSpec(").unwrap_or(block.len())].to_string();
        Ok((file.clone(), text, block))
    };
    Some(read())
}

/// The folders `root/rel` names, as pathfinder's `find_sub_dirs` and Python's `glob` find
/// them: a component ending in `*` matches the sub-folders whose names start with what comes
/// before it (`*` alone: all of them; `v9.*`: `v9.2`, `v9.10`), each level sorted by name;
/// `fold_case` compares names without case, as `glob` does on Windows. Symbolic links (and
/// junctions) are resolved, as pathfinder's `resolve_path` does.
pub(super) fn glob_dirs(root: &Path, rel: &str, fold_case: bool) -> Vec<PathBuf> {
    let fold = |s: &str| if fold_case { s.to_lowercase() } else { s.to_string() };
    let mut out = vec![root.to_path_buf()];
    for part in rel.split(['/', '\\']).filter(|p| !p.is_empty()) {
        let mut next = Vec::new();
        for d in &out {
            if let Some(prefix) = part.strip_suffix('*') {
                let prefix = fold(prefix);
                let mut kids: Vec<PathBuf> = std::fs::read_dir(d)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter(|e| fold(&e.file_name().to_string_lossy()).starts_with(&prefix))
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect();
                kids.sort();
                next.extend(kids);
            } else if d.join(part).is_dir() {
                next.push(d.join(part));
            }
        }
        out = next;
    }
    out.into_iter().map(|d| std::fs::canonicalize(&d).unwrap_or(d)).collect()
}

/// The first of `sonames` in the first of `dirs` that holds one.
pub(super) fn first_in(dirs: &[PathBuf], sonames: &[String]) -> Option<PathBuf> {
    dirs.iter().find_map(|d| sonames.iter().map(|s| d.join(s)).find(|f| f.is_file()))
}

/// What `cuda.pathfinder` (catalog `cat`) loads for `"cudnn"` in `env`: see the module
/// documentation for the order. Returns the file and pathfinder's own `found_via` label
/// (`site-packages`, `conda`, `was-already-loaded-from-elsewhere`, `system-search`,
/// `CUDNN_PATH`, `CUDA_PATH`), or `None` when it finds none (it raises `DynamicLibNotFoundError`).
pub fn pathfinder_cudnn(cat: &PathfinderCatalog, env: &PyEnv, scene: &Scene) -> Option<(PathBuf, String)> {
    let var = |k: &str| (scene.get)(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    // Phase 1: the wheel folders of every site-packages, then $CONDA_PREFIX.
    let early = cat
        .site_packages
        .iter()
        .find_map(|rel| {
            first_in(&env.site_packages.iter().flat_map(|sp| glob_dirs(sp, rel, false)).collect::<Vec<_>>(), &cat.sonames).map(|f| (f, "site-packages"))
        })
        .or_else(|| {
            let prefix = var("CONDA_PREFIX")?;
            first_in(&cat.anchor_dirs.iter().flat_map(|rel| glob_dirs(&prefix, rel, false)).collect::<Vec<_>>(), &cat.sonames).map(|f| (f, "conda"))
        });
    // Phase 2: a library of that soname already in the process wins.
    if let Some(p) = cat.sonames.iter().find_map(|s| already_loaded(scene.preloaded, s)) {
        return Some((p, "was-already-loaded-from-elsewhere".into()));
    }
    if let Some((f, via)) = early {
        return Some((f, via.into()));
    }
    // Phase 3: the system loader by name (from Python's ctypes: the interpreter's DT_RPATH,
    // LD_LIBRARY_PATH, the ld.so cache, the default folders).
    let python = env.python.as_deref().and_then(Object::read);
    let caller = Object::bare(Path::new("/"));
    for s in &cat.sonames {
        let loaders: Vec<&Object> = python.iter().collect();
        if let Some(p) = loader::find(s, &caller, &loaders, scene.linux) {
            return Some((p.path, "system-search".into()));
        }
    }
    // Then the install roots its catalog names (CUDNN_PATH), then CUDA_PATH / CUDA_HOME.
    for v in &cat.root_vars {
        if let Some(root) = var(v)
            && let Some(f) = first_in(&cat.root_dirs.iter().flat_map(|rel| glob_dirs(&root, rel, false)).collect::<Vec<_>>(), &cat.sonames)
        {
            return Some((f, v.clone()));
        }
    }
    let cuda = var("CUDA_PATH").or_else(|| var("CUDA_HOME"))?;
    first_in(&cat.anchor_dirs.iter().flat_map(|rel| glob_dirs(&cuda, rel, false)).collect::<Vec<_>>(), &cat.sonames).map(|f| (f, "CUDA_PATH".into()))
}
