//! The toolkit roots a profile file may resolve against, for one platform: the CUDA runtime
//! roots cuenv assembled from PyPI wheels under `<home>/toolkits`, and (for the host's
//! platform only) the installed roots the file's `[toolkits]` names or discovery finds.
//!
//! Below both `sources` (which needs the installed versions before fetching) and `apply`
//! (which resolves against all of them); it calls only discovery and inspection.

use crate::cudnn::platform::Platform;
use crate::home::layout::Layout;
use crate::profile::{self, ProfileFile};
use crate::resolve::{Origin, ToolkitCandidate};
use crate::toolkit::{self, ProcessEnv};

/// Toolkit candidates for `platform`: the wheel toolkit roots (CUDA toolkit roots built from wheels) under `<home>/toolkits` built
/// for it, plus [`installed_toolkits`] when `platform` is the host's (the roots of another
/// platform's machine cannot be seen from here).
///
/// Errors: those of [`installed_toolkits`].
pub fn toolkit_candidates(layout: &Layout, file: &ProfileFile, platform: Platform) -> Result<Vec<(ToolkitCandidate, toolkit::Toolkit)>, profile::Error> {
    let mut out = Vec::new();
    // wheel toolkit roots (CUDA toolkit roots built from wheels) assembled from PyPI wheels are candidates too.
    for (root, meta) in crate::toolkit::wheel::list(layout) {
        if meta.platform != platform {
            continue;
        }
        if let Ok(t) = toolkit::inspect_root(&root)
            && let Some(v) = t.version.clone()
        {
            out.push((ToolkitCandidate { root: t.root.clone(), version: v, origin: Origin::Wheel }, t));
        }
    }
    if Platform::host() == Some(platform) {
        out.extend(installed_toolkits(file)?);
    }
    Ok(out)
}

/// The installed toolkit roots a profile file may use: its `[toolkits]` roots (each must be
/// a toolkit with a version, else an error at its line), else the roots `cuenv toolkits` finds.
pub fn installed_toolkits(file: &ProfileFile) -> Result<Vec<(ToolkitCandidate, toolkit::Toolkit)>, profile::Error> {
    let mut out = Vec::new();
    if file.toolkits.is_empty() {
        for t in toolkit::discover(&ProcessEnv) {
            if let Some(v) = t.version.clone() {
                out.push((ToolkitCandidate { root: t.root.clone(), version: v, origin: Origin::Discovered }, t));
            }
        }
        return Ok(out);
    }
    for decl in &file.toolkits {
        let root = &decl.root.value;
        let t = toolkit::inspect_root(root).map_err(|e| {
            let hint = crate::error::Diagnose::hint(&e);
            file.error_at(decl.root.span.clone(), format!("toolkit `{}`: {e}", decl.label.value), hint)
        })?;
        let Some(v) = t.version.clone() else {
            return Err(file.error_at(
                decl.root.span.clone(),
                format!("toolkit root {} has no version.json or version.txt", root.display()),
                Some("point at the folder that holds version.json (e.g. CUDA\\v12.6)".into()),
            ));
        };
        out.push((ToolkitCandidate { root: t.root.clone(), version: v, origin: Origin::Declared }, t));
    }
    Ok(out)
}
