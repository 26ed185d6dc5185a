//! The stable paths cuenv publishes and what activates them: `<home>/profiles/<name>` (four
//! links per view, [`VIEW_LINKS`]), `<home>/active`, and the [`Activation`] a shell or a check
//! gets through them.
//!
//! Everything here is computed from the layout alone; nothing is read or written.
//!
//! Every path published here is written as text (into a generation's TOML manifest, shims,
//! `--json` output), so it must be valid Unicode ([`crate::sys::paths::require_unicode`]).

use std::path::PathBuf;

use crate::cudnn::platform::Platform;
use crate::home::layout::Layout;
use crate::shim::Activation;

/// The variables an activation sets to a folder, in the order shims set them: the toolkit root
/// as `CUDA_PATH` (NVIDIA's Windows installer, CMake's FindCUDAToolkit) and `CUDA_HOME`
/// (PyTorch's `torch.utils.cpp_extension`), the store entry as `CUDNN_PATH` and `CUDNN_HOME`.
/// TransformerEngine reads `CUDNN_HOME` before `CUDNN_PATH`: its
/// `transformer_engine/common/__init__.py` (`_load_cuda_library_from_system`, commit
/// d0067d0da6cb01811b8072a7d304f0e00344ce2b of github.com/NVIDIA/TransformerEngine) globs
/// `{LIB}_HOME`, then `{LIB}_PATH`, then `CUDA_HOME`, `CUDA_PATH` for `libcudnn.so*`; so a
/// `CUDNN_HOME` left from elsewhere would beat the profile's `CUDNN_PATH`.
pub const SCALARS: [&str; 4] = ["CUDA_PATH", "CUDA_HOME", "CUDNN_PATH", "CUDNN_HOME"];

/// The four links of every view, by name: toolkit root, store entry, the entry's library
/// folder, the toolkit's runtime library folder.
pub const VIEW_LINKS: [&str; 4] = ["cuda", "cudnn", "cudnn-lib", "cuda-lib"];

/// The activation of a profile, through its stable path `<home>/profiles/<name>`:
/// cuDNN's library folder and the toolkit's runtime folder first on PATH (Windows) or
/// LD_LIBRARY_PATH (Linux, where PATH gets the toolkit's `bin`), and CUDA_PATH, CUDA_HOME,
/// CUDNN_PATH, CUDNN_HOME pointing into the view ([`SCALARS`]).
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
    /// The store entry (`CUDNN_PATH`, `CUDNN_HOME`).
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
        set: vec![
            ("CUDA_PATH".into(), folders.cuda.clone()),
            ("CUDA_HOME".into(), folders.cuda.clone()),
            ("CUDNN_PATH".into(), folders.cudnn.clone()),
            ("CUDNN_HOME".into(), folders.cudnn.clone()),
        ],
    }
}

/// The home as an absolute path without a `\\?\` prefix (what shims and users see).
pub fn stable_home(layout: &Layout) -> PathBuf {
    let abs = std::path::absolute(layout.home()).unwrap_or_else(|_| layout.home().to_path_buf());
    // `\\?\UNC\srv\share` becomes `\\srv\share` (a bare strip of `\\?\` left the relative
    // `UNC\srv\share`).
    crate::sys::paths::shown(&abs)
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
            assert!(a.set.contains(&("CUDNN_HOME".into(), h.join("active").join("cudnn"))));
            let names: Vec<&str> = a.set.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(names, SCALARS);
        }
    }
}
