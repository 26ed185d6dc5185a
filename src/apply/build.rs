//! Stage 5, build: writes generation N+1 from the [`Desired`] content (views, shims,
//! manifest), staged as `generations/.tmp-<N>` ([`Layout::generation_staging`]) and
//! published with one rename. Not yet current: the switch ([`crate::generation::switch`])
//! does that.
//!
//! cuenv never writes inside a toolkit root or a store entry: views only link to them, and
//! a link-free generation (`link-mode = "none"`, or `auto` on a home that cannot hold links)
//! has no views at all (nothing is copied).

use std::fs;
use std::path::Path;

use crate::env::view::VIEW_LINKS;
use crate::error::IoError;
use crate::generation::{self, Manifest};
use crate::home::layout::{GENERATION_STAGING_PREFIX, Layout, MANIFEST_FILE};
use crate::link;
use crate::sys::fsutil;
use crate::sys::sha256::Sha256;

use super::Error;
use super::desire::{Desired, link_kind};
use super::plan::view_target;

/// Builds generation N+1 from `desired` and publishes it (not yet current). On any error
/// nothing is left behind: the staging folder is removed, and so is `generations/` when this
/// build made it (the home's first generation).
pub fn build(layout: &Layout, desired: &Desired) -> Result<u64, Error> {
    let gens = layout.generations_dir();
    let made_gens = fs::symlink_metadata(&gens).is_err();
    fs::create_dir_all(&gens).map_err(|e| IoError::new("create", &gens, e))?;
    build_in(layout, desired, &gens).inspect_err(|_| {
        if made_gens {
            // Only when empty: never more than this build made.
            let _ = fs::remove_dir(&gens);
        }
    })
}

fn build_in(layout: &Layout, desired: &Desired, gens: &Path) -> Result<u64, Error> {
    for e in fs::read_dir(gens).map_err(|e| IoError::new("read", gens, e))?.flatten() {
        if e.file_name().to_string_lossy().starts_with(GENERATION_STAGING_PREFIX) {
            remove_generation_tree(&e.path())?;
        }
    }
    if desired.link_mode.is_link_free() {
        for v in &desired.views {
            entry_build_lib(layout, v)?;
        }
    }
    let n = generation::list(layout).last().copied().unwrap_or(0) + 1;
    let tmp = layout.generation_staging(n);
    let dest = layout.generation_dir(n);
    let result = build_into(&tmp, n, desired);
    if let Err(e) = result {
        let _ = remove_generation_tree(&tmp);
        return Err(e);
    }
    fsutil::rename_with_retry(&tmp, &dest).map_err(|e| IoError::new("publish", &dest, e))?;
    fsutil::sync_dir(gens);
    Ok(n)
}

fn build_into(tmp: &Path, n: u64, desired: &Desired) -> Result<(), Error> {
    fs::create_dir(tmp).map_err(|e| IoError::new("create", tmp, e))?;
    // The link-free mode has no views: its shims name the real folders.
    if let Some(kind) = link_kind(desired.file.settings.link_mode).filter(|_| !desired.link_mode.is_link_free()) {
        for v in &desired.views {
            let view = tmp.join("views").join(&v.name);
            fs::create_dir_all(&view).map_err(|e| IoError::new("create", &view, e))?;
            for name in VIEW_LINKS {
                link::create(kind, &view_target(v, name), &view.join(name))?;
            }
            // Linker scripts for the names the entry lacks (`-lcudnn`), a real folder in the view.
            let lib = view_target(v, "cudnn-lib");
            let scripts = crate::env::build::linker_scripts(&lib).map_err(|e| IoError::new("read", &lib, e))?;
            if !scripts.is_empty() {
                let dir = view.join(crate::env::build::BUILD_LIB);
                crate::env::build::write_scripts(&dir, &scripts).map_err(|e| IoError::new("write", &dir, e))?;
            }
        }
    }
    let shim_dir = tmp.join("shims");
    fs::create_dir_all(&shim_dir).map_err(|e| IoError::new("create", &shim_dir, e))?;
    for (rec, text) in &desired.shims {
        let at = shim_dir.join(&rec.stored);
        fs::write(&at, text).map_err(|e| IoError::new("write", &at, e))?;
    }
    let manifest = Manifest {
        number: n,
        created: generation::now(),
        source: std::path::absolute(&desired.file.path).unwrap_or_else(|_| desired.file.path.clone()),
        source_sha256: Sha256::of(desired.file.source.as_bytes()),
        link_mode: desired.link_mode,
        profiles: desired.views.clone(),
        shims: desired.shims.iter().map(|(r, _)| r.clone()).collect(),
    };
    let path = tmp.join(MANIFEST_FILE);
    fsutil::write_atomic(&path, toml::to_string(&manifest)?.as_bytes()).map_err(|e| IoError::new("write", &path, e))?;
    fsutil::make_tree_readonly(&shim_dir).map_err(|e| IoError::new("make read-only", &shim_dir, e))?;
    Ok(())
}

/// Writes the link-free mode's linker scripts of `v`'s store entry
/// (`<home>/store/.build/<entry>/lib`, [`Layout::entry_build_lib`]) unless they exist: staged
/// beside and published with one rename (a pure function of the immutable entry, so a folder
/// that exists is kept).
fn entry_build_lib(layout: &Layout, v: &generation::ViewRecord) -> Result<(), Error> {
    let dest = layout.entry_build_lib(&v.cudnn_name);
    let lib = view_target(v, "cudnn-lib");
    let scripts = crate::env::build::linker_scripts(&lib).map_err(|e| IoError::new("read", &lib, e))?;
    if dest.is_dir() || scripts.is_empty() {
        return Ok(());
    }
    let parent = dest.parent().and_then(Path::parent).expect("<store>/.build/<entry>/lib");
    fs::create_dir_all(parent).map_err(|e| IoError::new("create", parent, e))?;
    let stage = parent.join(format!(".cuenv-tmp-{}-{}", std::process::id(), v.cudnn_name));
    let _ = fsutil::remove_tree(&stage);
    crate::env::build::write_scripts(&stage.join("lib"), &scripts).map_err(|e| IoError::new("write", &stage, e))?;
    let folder = dest.parent().expect("<entry>/lib");
    fsutil::rename_with_retry(&stage, folder).map_err(|e| IoError::new("publish", folder, e))?;
    fsutil::sync_dir(parent);
    Ok(())
}

/// Deletes a generation folder (see [`generation::remove_tree`]).
pub fn remove_generation_tree(dir: &Path) -> Result<(), Error> {
    Ok(generation::remove_tree(dir)?)
}
