//! What `cuenv check` says of the consumers in a profile's Python env (`python-env`): each
//! consumer's load as [`super::loads`] models it in a process of that env started with the
//! profile's environment, the env hook of that profile having run first; a consumer that would
//! load another cuDNN than the profile's is named, with its copy and the fix (issue: "wherever
//! a consumer will still load another copy, doctor and check say so plainly").

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{Finder, Load, Scene, canon, loads};
use crate::cudnn::libname::Os;
use crate::doctor::loader::LinuxEnv;
use crate::generation::ViewRecord;
use crate::generation::profile_check::NoteKind;
use crate::pyenv::hook;

/// The fix for a consumer that gets another copy, by the way it finds cuDNN.
fn fix(l: &Load, entry: &Path) -> String {
    match l.finder {
        Finder::Onnxruntime => {
            "call `onnxruntime.preload_dlls(cudnn=False)` (the profile's copy is already loaded), or remove the env's nvidia-cudnn wheel".into()
        }
        Finder::TransformerEngine => {
            format!("set CUDNN_HOME to {} (TransformerEngine's first place, in its releases since 2.5)", entry.parent().unwrap_or(entry).display())
        }
        Finder::Torch => "install the PyTorch build whose torch\\lib cuDNN is the profile's, or give the profile the cuDNN this torch carries".into(),
        Finder::Tensorflow | Finder::Needed | Finder::Pathfinder => "`cuenv doctor --python <the env's python>` shows what this consumer searches".into(),
    }
}

/// [`crate::generation::profile_check::ConsumerNotes`]: the notes for profile `view`, whose
/// cuDNN is in `entry`, with the profile's environment `env` (see the module documentation).
pub fn profile_consumer_notes(view: &ViewRecord, entry: &Path, env: &[(OsString, OsString)]) -> Vec<String> {
    let Some(prefix) = &view.python_env else { return Vec::new() };
    let Some(py) = crate::pyenv::at(prefix, &format!("profile {}'s python-env", view.name)) else { return Vec::new() };
    let get = |k: &str| crate::check::env_var(env, k).cloned();
    let split = |k: &str| -> Vec<PathBuf> { get(k).map(|v| std::env::split_paths(&v).collect()).unwrap_or_default() };
    let linux = LinuxEnv::new(split("LD_LIBRARY_PATH"));
    let path = split("PATH");
    // The profile's own hook runs first in a process of its env (`hook::is_off` aside).
    let preloaded: Vec<PathBuf> =
        py.site_packages.iter().flat_map(|sp| hook::installed(sp)).filter(|(_, h)| h.profile == view.name).flat_map(|(_, h)| h.preload).collect();
    let scene = Scene { get: &get, linux: &linux, preloaded: &preloaded, path_folders: &path };
    let major = view.cudnn_version.major();
    let mine = canon(entry);
    let lead = NoteKind::Consumer.lead();
    let mut out = Vec::new();
    for l in loads(&py, &crate::doctor::envs::consumers(&py), &scene).iter().filter(|l| l.verified) {
        if l.major > 0 && l.major != major {
            out.push(format!(
                "{lead} {} in {} needs cuDNN {} ({}), not profile {}'s cuDNN {major}: a process importing it carries that release beside the profile's",
                l.consumer, l.env, l.major, l.library, view.name
            ));
            continue;
        }
        match &l.path {
            Some(p) if !canon(p).starts_with(&mine) => out.push(format!(
                "{lead} {} in {} would load {} ({}), not profile {}'s cuDNN {} in {}; fix: {}",
                l.consumer,
                l.env,
                p.display(),
                l.how,
                view.name,
                view.cudnn_version,
                entry.display(),
                fix(l, entry)
            )),
            None if l.major == major => out.push(format!("{lead} {} in {} finds no cuDNN {major}: {}", l.consumer, l.env, l.how)),
            _ => {}
        }
    }
    if cfg!(windows) {
        let hooks: Vec<_> = py.site_packages.iter().flat_map(|sp| hook::installed(sp)).filter(|(_, h)| h.profile == view.name).collect();
        for f in super::torch_keeps_its_copy(&py, &hooks, Os::Windows) {
            if !out.iter().any(|n| n.contains("PyTorch")) {
                out.push(format!("{lead} {}; fix: {}", f.message, f.hint.unwrap_or_default()));
            }
        }
    }
    out
}
