//! The stable paths cuenv publishes and what activates them: `<home>/profiles/<name>` (four
//! links per view, [`VIEW_LINKS`]), `<home>/active`, and the [`Activation`] a shell or a check
//! gets through them.
//!
//! Everything here is computed from the layout alone; nothing is read or written.
//!
//! Every path published here is written as text (into a generation's TOML manifest, shims,
//! `--json` output), so it must be valid Unicode: [`require_unicode`] refuses one that is not
//! with a [`NotUnicode`] naming it (lossy, U+FFFD for the bad bytes) and the folder to rename.

use std::path::{Path, PathBuf};

use crate::binfmt::Platform;
use crate::error::{Diagnose, ExitCode};
use crate::layout::Layout;
use crate::shim::Activation;

/// What a path that must be written as text is (for [`NotUnicode`]'s message and hint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathRole {
    /// The cuenv home.
    Home,
    /// The profile file a generation is built from (its path goes into the manifest).
    ProfileFile,
    /// A profile's toolkit root (or its runtime folder).
    ToolkitRoot {
        /// The profile.
        profile: String,
    },
    /// A profile's conda env (its shims are written there).
    CondaEnv {
        /// The profile.
        profile: String,
    },
}

impl std::fmt::Display for PathRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathRole::Home => f.write_str("the cuenv home"),
            PathRole::ProfileFile => f.write_str("the profile file"),
            PathRole::ToolkitRoot { profile } => write!(f, "the toolkit root of profile `{profile}`"),
            PathRole::CondaEnv { profile } => write!(f, "the conda env of profile `{profile}`"),
        }
    }
}

/// A path cuenv must write as text (a manifest, a shim) is not valid Unicode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{role} {} is not valid UTF-8 (the name of the folder {} is not; shown with U+FFFD for its bad bytes), and cuenv writes this path into its manifests and shims as text",
    path.display(),
    folder.display()
)]
pub struct NotUnicode {
    /// What the path is.
    pub role: PathRole,
    /// The path.
    pub path: PathBuf,
    /// Its first component that is not valid UTF-8 (the folder to rename), as a path prefix.
    pub folder: PathBuf,
}

impl Diagnose for NotUnicode {
    fn hint(&self) -> Option<String> {
        let rename = format!("rename the folder {} to a UTF-8 name", self.folder.display());
        Some(match self.role {
            PathRole::Home => format!("{rename}, or use a cuenv home whose path is UTF-8 (--home DIR or CUENV_HOME)"),
            PathRole::ProfileFile => format!("{rename}, or keep the profile file in a folder whose path is UTF-8"),
            PathRole::ToolkitRoot { .. } => {
                format!("{rename}, or point [toolkits] (or CUENV_TOOLKIT_PATHS / CUDA_HOME) at a toolkit root whose path is UTF-8")
            }
            PathRole::CondaEnv { .. } => format!("{rename}, or use a conda env whose path is UTF-8"),
        })
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::Invalid
    }
}

/// The first prefix of `path` whose last component is not valid UTF-8 (the folder to
/// rename), or `None` when the whole path is valid Unicode.
pub fn first_non_unicode(path: &Path) -> Option<PathBuf> {
    if path.to_str().is_some() {
        return None;
    }
    let mut prefix = PathBuf::new();
    for c in path.components() {
        prefix.push(c);
        if c.as_os_str().to_str().is_none() {
            return Some(prefix);
        }
    }
    Some(path.to_path_buf())
}

/// Serializes a path as its lossy text (U+FFFD for bytes that are not UTF-8), as the text
/// output shows it: serde's own `Path` serialization fails on such a name, and every
/// `--json` printer treats a serialization error as a bug (it panicked). For
/// `#[serde(serialize_with = "crate::view::ser_lossy")]` on paths found on disk or in the
/// environment.
pub(crate) fn ser_lossy<S: serde::Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

/// [`ser_lossy`] for an optional path.
pub(crate) fn ser_lossy_opt<S: serde::Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Some(p) => s.serialize_some(&p.to_string_lossy()),
        None => s.serialize_none(),
    }
}

/// `Ok` when `path` is valid Unicode, else a [`NotUnicode`] naming it as `role`.
pub fn require_unicode(role: PathRole, path: &Path) -> Result<(), NotUnicode> {
    match first_non_unicode(path) {
        None => Ok(()),
        Some(folder) => Err(NotUnicode { role, path: path.to_path_buf(), folder }),
    }
}

/// The four links of every view, by name: toolkit root, store entry, the entry's library
/// folder, the toolkit's runtime library folder.
pub const VIEW_LINKS: [&str; 4] = ["cuda", "cudnn", "cudnn-lib", "cuda-lib"];

/// The activation of a profile, through its stable path `<home>/profiles/<name>`:
/// cuDNN's library folder and the toolkit's runtime folder first on PATH (Windows) or
/// LD_LIBRARY_PATH (Linux, where PATH gets the toolkit's `bin`), and CUDA_PATH, CUDA_HOME,
/// CUDNN_PATH pointing into the view.
pub fn activation(layout: &Layout, profile: &str, platform: Platform) -> Activation {
    let view = stable_home(layout).join("profiles").join(profile);
    let folders = Folders { cuda: view.join("cuda"), cudnn: view.join("cudnn"), cudnn_lib: view.join("cudnn-lib"), cuda_lib: view.join("cuda-lib") };
    activation_at(profile, &folders, platform)
}

/// The four folders an activation names, one per view link ([`VIEW_LINKS`]): through a
/// view (`<home>/profiles/<p>/cuda`, ...) in the link modes, or the real folders themselves
/// (toolkit root, store entry, ...) in the link-free mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folders {
    /// The toolkit root (`CUDA_PATH`, `CUDA_HOME`; its `bin` goes on Linux's PATH).
    pub cuda: PathBuf,
    /// The store entry (`CUDNN_PATH`).
    pub cudnn: PathBuf,
    /// The entry's library folder (first on PATH on Windows, LD_LIBRARY_PATH elsewhere).
    pub cudnn_lib: PathBuf,
    /// The toolkit's runtime library folder (second).
    pub cuda_lib: PathBuf,
}

/// The activation of `profile` naming `folders` as they are (no view in between): what
/// [`activation`] makes through a view, and the link-free mode makes with the store entry's
/// and toolkit root's own folders.
pub fn activation_at(profile: &str, folders: &Folders, platform: Platform) -> Activation {
    let (path_prepend, ld) = if platform.is_windows() {
        (vec![folders.cudnn_lib.clone(), folders.cuda_lib.clone()], Vec::new())
    } else {
        (vec![folders.cuda.join("bin")], vec![folders.cudnn_lib.clone(), folders.cuda_lib.clone()])
    };
    Activation {
        profile: profile.into(),
        layer: Default::default(),
        path_prepend,
        ld_library_path_prepend: ld,
        set: vec![("CUDA_PATH".into(), folders.cuda.clone()), ("CUDA_HOME".into(), folders.cuda.clone()), ("CUDNN_PATH".into(), folders.cudnn.clone())],
    }
}

/// The home as an absolute path without a `\\?\` prefix (what shims and users see).
pub fn stable_home(layout: &Layout) -> PathBuf {
    let abs = std::path::absolute(layout.home()).unwrap_or_else(|_| layout.home().to_path_buf());
    // `\\?\UNC\srv\share` becomes `\\srv\share` (a bare strip of `\\?\` left the relative
    // `UNC\srv\share`).
    crate::paths::shown(&abs)
}

/// The one-time setup activation: [`activation`] of the `active` profile, but through
/// `<home>/active` (which `cuenv use` points at a profile) instead of `<home>/profiles/active`;
/// `CUENV_PROFILE=active` stands for whichever profile is active.
pub fn setup_activation(layout: &Layout, platform: Platform) -> Activation {
    let mut a = activation(layout, "active", platform);
    a.layer = crate::shim::Layer::Setup;
    let active = stable_home(layout).join("active");
    let view = stable_home(layout).join("profiles").join("active");
    let fix = |p: PathBuf| p.strip_prefix(&view).map(|r| active.join(r)).unwrap_or(p);
    a.path_prepend = a.path_prepend.into_iter().map(fix).collect();
    a.ld_library_path_prepend = a.ld_library_path_prepend.into_iter().map(fix).collect();
    a.set = a.set.into_iter().map(|(k, v)| (k, fix(v))).collect();
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setup_activation_goes_through_home_active() {
        let home = std::env::temp_dir().join("cuenv-view-test");
        let layout = Layout::new(&home);
        let h = stable_home(&layout);
        for platform in [Platform::LinuxX86_64, Platform::WindowsX86_64] {
            let a = setup_activation(&layout, platform);
            assert_eq!(a.profile, "active");
            let all: Vec<&PathBuf> = a.path_prepend.iter().chain(&a.ld_library_path_prepend).chain(a.set.iter().map(|(_, v)| v)).collect();
            assert!(!all.is_empty());
            for p in all {
                assert!(p.starts_with(h.join("active")), "{}", p.display());
            }
            assert!(a.set.contains(&("CUDNN_PATH".into(), h.join("active").join("cudnn"))));
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_non_unicode_path_is_named_with_the_folder_to_rename() {
        use std::os::unix::ffi::OsStrExt;
        let odd = Path::new("/data").join(std::ffi::OsStr::from_bytes(b"cudnn-\xff"));
        let home = odd.join("cuenv");
        assert_eq!(first_non_unicode(Path::new("/data/cuenv")), None);
        assert_eq!(first_non_unicode(&home), Some(odd.clone()));
        let e = require_unicode(PathRole::Home, &home).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the cuenv home /data/cudnn-\u{FFFD}/cuenv is not valid UTF-8 (the name of the folder /data/cudnn-\u{FFFD} is not; shown with U+FFFD for its bad bytes), and cuenv writes this path into its manifests and shims as text"
        );
        assert!(e.hint().unwrap().starts_with("rename the folder /data/cudnn-\u{FFFD} to a UTF-8 name"), "{:?}", e.hint());
        assert_eq!(e.exit_code(), ExitCode::Invalid);
        assert!(require_unicode(PathRole::Home, Path::new("/data/ünï")).is_ok());
    }
}
