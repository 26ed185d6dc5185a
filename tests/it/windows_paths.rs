//! Windows path handling, run natively on Linux and under Wine (`scripts/test-windows.sh
//! --test it windows_paths::`): drive letters, `\\?\` verbatim prefixes (never shown to users or
//! written into shims), UNC paths (a store on a network share is refused for junctions, with
//! a hint), case-insensitive comparisons, and `%LOCALAPPDATA%\cuenv` as the default home.
//! The `cfg(windows)` halves are what Wine proves; the other halves pin the Linux behaviour.

use std::path::{Path, PathBuf};

use cuenv::apply::{activation, stable_home};
use cuenv::cudnn::platform::Platform;
use cuenv::home::layout::Layout;
use cuenv::link::{self, LinkError, LinkKind};
use cuenv::shim::{self, Shell};

fn has_verbatim(s: &str) -> bool {
    s.contains(r"\\?\")
}

#[test]
fn verbatim_prefixes_never_reach_a_shim() {
    assert_eq!(shim::shim_path(Path::new(r"\\?\C:\Program Files\cuenv")), r"C:\Program Files\cuenv");
    assert_eq!(shim::shim_path(Path::new(r"\\?\UNC\nas\share\cuenv")), r"\\nas\share\cuenv");
    assert_eq!(shim::shim_path(Path::new(r"D:\cu env (x86)")), r"D:\cu env (x86)");
    // A home given in verbatim form: every path in every Windows shim is the plain form.
    let layout = Layout::new(r"\\?\C:\Users\Zoë\AppData\Local\cuenv");
    let act = activation(&layout, "torch2", Platform::WindowsX86_64);
    for shell in [Shell::Cmd, Shell::PowerShell] {
        let (on, off) = (shim::render_activate(shell, &act), shim::render_deactivate(shell, &act));
        if cfg!(windows) {
            assert!(!has_verbatim(&on) && !has_verbatim(&off), "{shell:?}:\n{on}\n{off}");
            assert!(on.contains(r"C:\Users\Zoë\AppData\Local\cuenv\profiles\torch2\cudnn-lib"), "{shell:?}:\n{on}");
        }
    }
}

#[test]
fn stable_home_is_absolute_and_plain() {
    if cfg!(windows) {
        for (home, want) in [
            (r"\\?\C:\Users\x\AppData\Local\cuenv", r"C:\Users\x\AppData\Local\cuenv"),
            (r"C:\Users\x\cuenv", r"C:\Users\x\cuenv"),
            (r"D:\cu env (x86)\home", r"D:\cu env (x86)\home"),
            // Before the fix, `\\?\UNC\...` came out as the relative path `UNC\nas\...`.
            (r"\\?\UNC\nas\share\cuenv", r"\\nas\share\cuenv"),
            (r"\\nas\share\cuenv", r"\\nas\share\cuenv"),
        ] {
            assert_eq!(stable_home(&Layout::new(home)), PathBuf::from(want), "{home}");
        }
        // A relative home is made absolute on the current drive (Z: under Wine).
        let rel = stable_home(&Layout::new("cuenv-rel-home"));
        assert!(rel.is_absolute() && !has_verbatim(&rel.to_string_lossy()), "{}", rel.display());
        let s = rel.to_string_lossy();
        assert!(s.as_bytes()[0].is_ascii_alphabetic() && &s[1..3] == r":\", "{s}");
        // Windows activation: the profile's library folders first on PATH, no LD_LIBRARY_PATH.
        let act = activation(&Layout::new(r"\\?\D:\cuenv"), "tf", Platform::WindowsX86_64);
        assert_eq!(act.path_prepend, [PathBuf::from(r"D:\cuenv\profiles\tf\cudnn-lib"), PathBuf::from(r"D:\cuenv\profiles\tf\cuda-lib")]);
        assert!(act.ld_library_path_prepend.is_empty());
        assert!(act.set.iter().all(|(_, p)| !has_verbatim(&p.to_string_lossy())), "{:?}", act.set);
    } else {
        assert_eq!(stable_home(&Layout::new("/home/x/.local/share/cuenv")), PathBuf::from("/home/x/.local/share/cuenv"));
        assert!(stable_home(&Layout::new("rel")).is_absolute());
    }
}

#[test]
fn drive_letters_and_case_compare_like_windows() {
    if cfg!(windows) {
        assert!(cuenv::sys::paths::same_path(
            Path::new(r"c:\program files\NVIDIA GPU Computing Toolkit\CUDA\v12.6"),
            Path::new(r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.6\")
        ));
        assert!(cuenv::sys::paths::same_path(Path::new("C:/Users/x/cuenv"), Path::new(r"\\?\c:\users\X\CUENV")));
        assert!(cuenv::sys::paths::same_path(Path::new(r"\\NAS\Share\cudnn"), Path::new(r"\\?\UNC\nas\share\CUDNN")));
        assert!(!cuenv::sys::paths::same_path(Path::new(r"C:\cuenv"), Path::new(r"D:\cuenv")), "drive letters differ");
        // The real file system agrees: the temp folder under another case is the same folder.
        let dir = tempfile::tempdir().unwrap();
        let upper = PathBuf::from(dir.path().to_string_lossy().to_uppercase());
        assert!(upper.is_dir(), "{} (Windows lookups are case-insensitive)", upper.display());
        assert!(cuenv::sys::paths::same_path(&upper, dir.path()));
    } else {
        assert!(!cuenv::sys::paths::same_path(Path::new("/opt/CUDA"), Path::new("/opt/cuda")));
    }
}

#[test]
fn default_home_is_localappdata() {
    let home = Layout::default_home().expect("a default home");
    assert_eq!(home.file_name().and_then(|n| n.to_str()), Some("cuenv"));
    if cfg!(windows) {
        let local = std::env::var_os("LOCALAPPDATA").expect("%LOCALAPPDATA% is set on Windows (and Wine)");
        assert!(cuenv::sys::paths::same_path(&home, &Path::new(&local).join("cuenv")), "{} vs %LOCALAPPDATA%={}", home.display(), Path::new(&local).display());
        let s = home.to_string_lossy();
        assert!(s.as_bytes()[1] == b':' && !has_verbatim(&s), "{s}");
    } else if let Some(xdg) = std::env::var_os("XDG_DATA_HOME").filter(|v| Path::new(v).is_absolute()) {
        assert_eq!(home, Path::new(&xdg).join("cuenv"));
    }
}

/// A home (and so a store) on `\\server\share` cannot be linked with junctions: refused
/// before any folder is made, naming the share, with a hint to move the home.
#[test]
fn a_store_on_a_network_share_is_refused_for_junctions() {
    let store_entry = Path::new(r"\\nas\cudnn\cuenv\store\cudnn-9.5.0.50-cuda12-windows-x86_64-0123456789ab");
    let tmp = tempfile::tempdir().unwrap();
    let link_at = tmp.path().join("cudnn");
    let r = link::create(LinkKind::Junction, store_entry, &link_at);
    if cfg!(windows) {
        let e = r.unwrap_err();
        assert!(matches!(&e, LinkError::NetworkShare { share, .. } if share == r"\\nas\cudnn"), "{e:?}");
        assert!(e.to_string().contains("junctions work only between local NTFS/ReFS volumes"), "{e}");
        let hint = cuenv::error::Diagnose::hint(&e).unwrap();
        assert!(hint.contains("local NTFS drive") && hint.contains("CUENV_HOME"), "{hint}");
        assert!(std::fs::symlink_metadata(&link_at).is_err(), "nothing was created");
        // The verbatim UNC form and forward slashes are the same share.
        for p in [r"\\?\UNC\nas\cudnn\x", "//nas/cudnn/x"] {
            assert!(matches!(link::create(LinkKind::Junction, Path::new(p), &link_at), Err(LinkError::NetworkShare { .. })), "{p}");
        }
        // A local drive-letter path is not a share (Z: is Wine's view of `/`).
        assert_eq!(link::network_share(tmp.path()), None);
        assert_eq!(link::network_share(Path::new(r"\\?\C:\Windows")), None);
    } else {
        assert!(matches!(r, Err(LinkError::Unsupported { .. })), "{r:?}");
    }
}

/// Toolkit roots are shown (and stored in generations) without canonicalize's `\\?\` prefix,
/// whatever form they were given in.
#[test]
fn toolkit_roots_are_shown_without_verbatim_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("CUDA").join("v12.6");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::write(root.join("version.json"), r#"{"cuda": {"name": "CUDA SDK", "version": "12.6.77"}}"#).unwrap();
    let given = if cfg!(windows) { PathBuf::from(format!(r"\\?\{}", std::path::absolute(&root).unwrap().display())) } else { root.clone() };
    let t = cuenv::toolkit::inspect_root(&given).unwrap();
    assert!(!has_verbatim(&t.root.to_string_lossy()), "{}", t.root.display());
    assert!(cuenv::sys::paths::same_path(&t.root, &std::fs::canonicalize(&root).unwrap()), "{} vs {}", t.root.display(), root.display());
    assert_eq!(t.version.map(|v| v.to_string()).as_deref(), Some("12.6.77"));
}
