//! The probe's loads of the CUDA libraries around cuDNN ([`crate::companion`]): each by the
//! names cuDNN's files give, in order, in this process's environment (a profile's activation
//! for `check`); NVRTC also compiles a trivial program (docs/loader.md F2, F4).

use std::path::Path;

use super::{ffi, step, sys};

/// Loads each companion the cuDNN files of the folder of the mapped dispatcher `dispatcher` name, by the names
/// cuDNN tries, in order (each announced as a step); NVRTC is asked its version and compiles
/// a trivial program. Libraries stay mapped.
pub(super) fn load(dispatcher: &Path) -> Vec<crate::companion::Load> {
    let Some(dir) = dispatcher.parent() else { return Vec::new() };
    let Some(major) = dispatcher.file_name().and_then(|n| crate::cudnn::libname::dispatcher_major(&n.to_string_lossy())) else { return Vec::new() };
    let files = crate::companion::cudnn_files(dir, major);
    let mut out = Vec::new();
    for wanted in crate::companion::wanted_by(&files) {
        let mut load = crate::companion::Load { wanted: wanted.clone(), loaded: None, path: None, error: None, version: None, compile: None };
        for name in &wanted.names {
            step(&format!("load {name}"));
            match sys::load(name) {
                Ok(lib) => {
                    load.loaded = Some(name.clone());
                    load.path = sys::loaded_module_paths()
                        .into_iter()
                        .find(|p| {
                            p.file_name().is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case(name))
                                || crate::companion::of_file(p).is_some_and(|l| l.family == wanted.family)
                        })
                        .map(|p| p.to_string_lossy().into_owned());
                    if wanted.family == "nvrtc" {
                        load.version = ffi::nvrtc_version(&lib);
                        load.compile = ffi::nvrtc_compile(&lib);
                    }
                    std::mem::forget(lib);
                    load.error = None;
                    break;
                }
                Err(e) => load.error = Some(e.message),
            }
        }
        // A load by name from cuDNN's own library also searches that library's DT_RUNPATH
        // (after LD_LIBRARY_PATH, before the ld.so cache: docs/loader.md L1), which a load by
        // name from this program does not: the wheels' `$ORIGIN/../../cublas/lib`.
        if load.loaded.is_none()
            && let Some((name, file)) = runpath_hit(&wanted)
        {
            step(&format!("load {}", file.display()));
            if let Ok(lib) = sys::load(&file.to_string_lossy()) {
                load.loaded = Some(name);
                load.path = Some(std::fs::canonicalize(&file).unwrap_or(file).to_string_lossy().into_owned());
                if wanted.family == "nvrtc" {
                    load.version = ffi::nvrtc_version(&lib);
                    load.compile = ffi::nvrtc_compile(&lib);
                }
                std::mem::forget(lib);
                load.error = None;
            }
        }
        out.push(load);
    }
    out
}

/// The first of `wanted`'s names found in a folder of the asking library's `DT_RUNPATH`
/// (`$ORIGIN` expanded), with the file; `None` elsewhere (Windows has no such list).
fn runpath_hit(wanted: &crate::companion::Wanted) -> Option<(String, std::path::PathBuf)> {
    let dynamic = crate::sys::binfmt::elf_dynamic(&wanted.asked_by).ok()??;
    let origin = wanted.asked_by.parent()?.to_string_lossy().into_owned();
    for entry in dynamic.runpath.unwrap_or_default() {
        let dir = std::path::PathBuf::from(entry.replace("${ORIGIN}", &origin).replace("$ORIGIN", &origin));
        for name in &wanted.names {
            let f = dir.join(name);
            if !entry.is_empty() && f.is_file() {
                return Some((name.clone(), f));
            }
        }
    }
    None
}
