//! PyTorch's Linux fallback at import (docs/loader.md C2): `torch/__init__.py`
//! `_load_global_deps` opens `torch/lib/libtorch_global_deps.so`; when that fails on a CUDA
//! library (its `DT_RUNPATH` `$ORIGIN/../../nvidia/*/lib` does not reach the nvidia wheels, as
//! when torch and the wheels sit in different site-packages folders), it preloads each CUDA
//! library, cuDNN among them, **by full path** from the first `sys.path` entry holding a match
//! (`_preload_cuda_deps`, `_get_cuda_dep_paths`), and opens `libtorch_global_deps.so` again.
//! `libtorch_cuda.so`'s `DT_NEEDED` `libcudnn.so.<N>` then gets the preloaded copy.
//!
//! Read from the installed `torch/__init__.py` (torch 2.9.1's and 2.4.1's real files in the
//! real-input suite): the cuDNN pattern of its `cuda_libs` (`"cudnn": "libcudnn.so.*[0-9]"`),
//! and which folders `_get_cuda_dep_paths` globs (`nvidia/<pkg>/lib`; from 2.9 also
//! `nvidia/cu<major>/lib` with `torch/version.py`'s `cuda`, and `<pkg>/lib`).

use std::path::PathBuf;

use super::Scene;
use super::te::{fnmatch, matches_in};
use crate::doctor::loader::{self, Object};
use crate::pyenv::PyEnv;

/// What `import torch` does on Linux in one site-packages folder when its fallback runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchFallback {
    /// The site-packages folder holding `torch`.
    pub site_packages: PathBuf,
    /// The library of `libtorch_global_deps.so`'s `DT_NEEDED` that does not resolve from it
    /// (the one the `OSError` names).
    pub missing: String,
    /// The cuDNN file it preloads by full path; `None` when no `sys.path` entry holds one (its
    /// import raises `ValueError: libcudnn.so.*[0-9] not found in the system path`).
    pub cudnn: Option<PathBuf>,
    /// The folders searched, in order, for the message.
    pub searched: Vec<PathBuf>,
}

/// The cuDNN pattern of the `cuda_libs` dict in torch's `__init__.py` text:
/// `"cudnn": "libcudnn.so.*[0-9]"` (2.9; 2.4 writes single quotes).
fn cudnn_pattern(text: &str) -> Option<String> {
    ["\"cudnn\": \"", "'cudnn': '"].iter().find_map(|key| {
        let at = text.find(key)? + key.len();
        Some(text[at..].split(['"', '\'']).next()?.to_string())
    })
}

/// The library stems of `cuda_libs` (`lib.split(".")[0]`: `libcublas`, `libcudnn`, ...): an
/// `OSError` naming one of them starts the fallback.
fn cuda_stems(text: &str) -> Vec<String> {
    let Some(at) = text.find("cuda_libs") else { return Vec::new() };
    let block = &text[at..];
    let block = &block[..block.find('}').unwrap_or(block.len())];
    block.split(':').skip(1).filter_map(|v| v.trim().strip_prefix(['"', '\''])?.split(['"', '\'']).next()?.split('.').next().map(str::to_string)).collect()
}

/// The `sys.path` entries a process of `env` searches, as far as doctor knows them: the
/// `PYTHONPATH` entries, then the env's site-packages folders in import order.
fn sys_path(env: &PyEnv, scene: &Scene) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        (scene.get)("PYTHONPATH").map(|v| std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect()).unwrap_or_default();
    out.extend(env.site_packages.iter().cloned());
    out
}

/// The fallback of every torch in `env` whose `libtorch_global_deps.so` would not load (see
/// the module documentation), with the process inputs `scene` (`scene.preloaded` are loaded
/// first and satisfy a `DT_NEEDED` of their soname). Empty when every torch loads its global
/// deps, when a missing library is not a CUDA one (the import fails), or when torch's
/// `__init__.py` has no `_preload_cuda_deps` in the form read here.
pub fn torch_fallbacks(env: &PyEnv, scene: &Scene) -> Vec<TorchFallback> {
    let mut out = Vec::new();
    for sp in &env.site_packages {
        let torch = sp.join("torch");
        let Ok(text) = std::fs::read_to_string(torch.join("__init__.py")) else { continue };
        let (Some(pattern), true) = (cudnn_pattern(&text), text.contains("def _preload_cuda_deps")) else { continue };
        let Some(deps) = Object::read(&torch.join("lib").join("libtorch_global_deps.so")) else { continue };
        let missing = deps
            .dynamic
            .needed
            .iter()
            .find(|n| super::already_loaded(scene.preloaded, n).is_none() && loader::find(n, &deps, &[], scene.linux).is_none())
            .cloned();
        let Some(missing) = missing else { continue };
        let stems = cuda_stems(&text);
        if !stems.iter().any(|s| missing.contains(s.as_str())) {
            continue;
        }
        // `_get_cuda_dep_paths(path, "cudnn", pattern)` for each sys.path entry.
        let cu = text
            .contains("f\"cu{maj_cuda_version}\"")
            .then(|| std::fs::read_to_string(torch.join("version.py")).ok().and_then(|v| super::assigned_str(&v, "cuda")))
            .flatten()
            .and_then(|c| c.split('.').next().map(str::to_string));
        let own_folder = text.contains("os.path.join(path, lib_folder, \"lib\", lib_name)");
        let re = fnmatch(&pattern);
        let mut searched = Vec::new();
        let mut cudnn = None;
        for path in sys_path(env, scene) {
            let mut dirs = vec![path.join("nvidia").join("cudnn").join("lib")];
            if let Some(cu) = &cu {
                dirs.push(path.join("nvidia").join(format!("cu{cu}")).join("lib"));
            }
            if own_folder {
                dirs.push(path.join("cudnn").join("lib"));
            }
            let found: Vec<PathBuf> = dirs.iter().flat_map(|d| matches_in(d, &re)).collect();
            searched.extend(dirs);
            if let Some(f) = found.into_iter().next() {
                cudnn = Some(f);
                break;
            }
        }
        out.push(TorchFallback { site_packages: sp.clone(), missing, cudnn, searched });
    }
    out
}

/// The words for a torch fallback, for a [`super::Load`]'s `how`.
pub fn fallback_words(f: &TorchFallback) -> String {
    match &f.cudnn {
        Some(p) => format!(
            "libtorch_global_deps.so does not load ({} does not resolve from its search path), so `import torch` preloads {} by full path, the first sys.path match of torch's cuDNN pattern (torch/__init__.py `_preload_cuda_deps`), and this library's DT_NEEDED gets that copy",
            f.missing,
            p.display()
        ),
        None => format!(
            "libtorch_global_deps.so does not load ({} does not resolve from its search path), and torch's fallback (`_preload_cuda_deps`) finds no cuDNN in {}: `import torch` raises ValueError",
            f.missing,
            f.searched.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cuda_libs_of_torch_init_are_read() {
        let text = "        cuda_libs: dict[str, str] = {\n            \"cublas\": \"libcublas.so.*[0-9]\",\n            \"cudnn\": \"libcudnn.so.*[0-9]\",\n            \"cuda_runtime\": \"libcudart.so.*[0-9]\",\n        }\n";
        assert_eq!(cudnn_pattern(text).as_deref(), Some("libcudnn.so.*[0-9]"));
        assert_eq!(cuda_stems(text), ["libcublas", "libcudnn", "libcudart"]);
        assert_eq!(cudnn_pattern("import os\n"), None);
        let old =
            "        cuda_libs: Dict[str, str] = {\n            'cublas': 'libcublas.so.*[0-9]',\n            'cudnn': 'libcudnn.so.*[0-9]',\n        }\n";
        assert_eq!(cudnn_pattern(old).as_deref(), Some("libcudnn.so.*[0-9]"));
        assert_eq!(cuda_stems(old), ["libcublas", "libcudnn"]);
    }
}
