//! The words doctor puts beside a failed load: what the loader model says next to cuDNN's
//! own version check, which files are of the other release, and the hint for each kind of
//! failure found without a profile.

use std::path::Path;

use super::loader;
use crate::check::ReasonKind;
use crate::cudnn::version::Version;

/// What the loader model ([`loader::folder_versions`]: the releases the files of the
/// dispatcher's folder tell) says beside a failed version check of cuDNN `major` loaded from
/// `d`, as the end of the sentence: the check is an observation, so where the model saw
/// one release it is overruled (docs/decisions.md 7, docs/loader.md C2).
pub(super) fn model_beside_check(d: &Path, major: u64) -> String {
    let Some(dir) = d.parent() else { return String::new() };
    let found = loader::folder_versions(dir, major);
    let list = |f: &[(Version, Vec<String>)]| f.iter().map(|(v, n)| format!("{v}: {}", n.join(", "))).collect::<Vec<_>>().join("; ");
    match found.len() {
        0 => format!("; the files in the dispatcher's folder {} tell no release, so they show no mismatch: cuDNN's own check wins", dir.display()),
        1 => format!(
            "; the files in the dispatcher's folder {} that tell their release all say {} (the others tell none; a sub-library from another folder is not among them): cuDNN's own check wins",
            dir.display(),
            found[0].0
        ),
        _ => format!("; the files' own versions say so too ({})", list(&found)),
    }
}

/// The files of the folder of the dispatcher `d` that are of another release than most, in
/// words (`libcudnn_ops_train.so.8 (8.9.2)`), when the files tell two or more releases
/// ([`loader::folder_versions`]); the release with the most files, the dispatcher's own
/// breaking a tie, counts as the folder's.
pub(super) fn odd_files(d: &Path, major: u64) -> Option<String> {
    let found = loader::folder_versions(d.parent()?, major);
    if found.len() < 2 {
        return None;
    }
    let own = loader::file_version(d);
    let main = found.iter().max_by_key(|(v, files)| (files.len(), own.as_ref().is_some_and(|o| loader::same_release(o, v))))?;
    let odd: Vec<String> = found.iter().filter(|(v, _)| v != &main.0).flat_map(|(v, files)| files.iter().map(move |f| format!("{f} ({v})"))).collect();
    Some(odd.join(", "))
}

/// What to do about a failed load of cuDNN `major` found without a profile.
pub(super) fn hint_for(kind: ReasonKind, major: u64, search_var: &str) -> String {
    match kind {
        ReasonKind::MixedVersions => {
            format!("keep every cuDNN {major} library of one release in one folder, or let a cuenv profile provide them (`cuenv apply`, then activate it)")
        }
        ReasonKind::SubLibraryMismatch => format!(
            "keep every cuDNN {major} library of one release in one folder: replace the sub-library the check names (and whatever came with it) with its release's own copy"
        ),
        ReasonKind::WrongCudaMajor => {
            "put the CUDA runtime of the major this cuDNN was built for ahead of the others, or use a cuDNN built for the runtime you have".into()
        }
        ReasonKind::MissingLibrary => {
            format!("put the folder that holds it on {search_var} (a cuenv profile's activation puts the profile's CUDA runtime there), or install it")
        }
        ReasonKind::Crash | ReasonKind::Timeout | ReasonKind::BadReport => {
            "`cuenv doctor --json` shows the probe's output (what cuDNN printed before it ended)".into()
        }
        _ => "`cuenv doctor --json` shows the probe's full report".into(),
    }
}
