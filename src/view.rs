//! The stable paths cuenv publishes and what activates them: `<home>/profiles/<name>` (four
//! links per view, [`VIEW_LINKS`]), `<home>/active`, and the [`Activation`] a shell or a check
//! gets through them.
//!
//! Everything here is computed from the layout alone; nothing is read or written.

use std::path::PathBuf;

use crate::binfmt::Platform;
use crate::layout::Layout;
use crate::shim::Activation;

/// The four links of every view, by name: toolkit root, store entry, the entry's library
/// folder, the toolkit's runtime library folder.
pub const VIEW_LINKS: [&str; 4] = ["cuda", "cudnn", "cudnn-lib", "cuda-lib"];

/// The activation of a profile, through its stable path `<home>/profiles/<name>`:
/// cuDNN's library folder and the toolkit's runtime folder first on PATH (Windows) or
/// LD_LIBRARY_PATH (Linux, where PATH gets the toolkit's `bin`), and CUDA_PATH, CUDA_HOME,
/// CUDNN_PATH pointing into the view.
pub fn activation(layout: &Layout, profile: &str, platform: Platform) -> Activation {
    let view = stable_home(layout).join("profiles").join(profile);
    let (path_prepend, ld) = if platform.is_windows() {
        (vec![view.join("cudnn-lib"), view.join("cuda-lib")], Vec::new())
    } else {
        (vec![view.join("cuda").join("bin")], vec![view.join("cudnn-lib"), view.join("cuda-lib")])
    };
    Activation {
        profile: profile.into(),
        path_prepend,
        ld_library_path_prepend: ld,
        set: vec![("CUDA_PATH".into(), view.join("cuda")), ("CUDA_HOME".into(), view.join("cuda")), ("CUDNN_PATH".into(), view.join("cudnn"))],
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
}
