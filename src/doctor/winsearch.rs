//! The Windows search order for a DLL asked for by bare name, as one ordered list of places
//! (Microsoft Learn, "Dynamic-link library search order",
//! <https://learn.microsoft.com/en-us/windows/win32/dlls/dynamic-link-library-search-order>;
//! `SetDefaultDllDirectories`,
//! <https://learn.microsoft.com/en-us/windows/win32/api/libloaderapi/nf-libloaderapi-setdefaultdlldirectories>).
//! Every by-name load doctor predicts on Windows (cuDNN's sub-libraries, `zlibwapi.dll`, the
//! CUDA libraries cuDNN names) goes through [`WinSearch::find`] (docs/loader.md W1, W6-W9).
//!
//! Standard order (safe DLL search mode, the default since Windows XP SP2): a module already
//! loaded under the name; the KnownDLLs list (served from System32); the application's folder
//! (the folder of the host's exe); System32; the 16-bit System folder; the Windows folder; the
//! current folder; `PATH` in order. A host that called
//! `SetDefaultDllDirectories(LOAD_LIBRARY_SEARCH_DEFAULT_DIRS)` ([`Mode::DefaultDirs`]) has:
//! loaded modules, KnownDLLs, the application's folder, the `AddDllDirectory` folders,
//! System32: no current folder and no `PATH`.
//!
//! CPython (3.8+) and conda-forge's python do not call `SetDefaultDllDirectories`: CPython
//! loads extension modules with `LoadLibraryExW(..., LOAD_LIBRARY_SEARCH_DEFAULT_DIRS |
//! LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR)` per call, conda-forge's python adds its env folders with
//! `AddDllDirectory` only (conda-forge/python-feedstock,
//! `recipe/patches/0007-Add-CondaEcosystemModifyDllSearchPath.patch`), so cuDNN's own
//! `LoadLibrary` by bare name, made with no flags, gets the standard order in a Python process
//! (docs/loader.md W3). doctor therefore models a Python host with [`Mode::Standard`].

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::sys::windirs::{self, SystemDirs};

/// One place of the search order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    /// A module the process has already loaded under the same file name.
    Loaded,
    /// A name on the KnownDLLs list: the System32 copy, whatever the folders hold.
    KnownDll,
    /// The folder of the host's exe.
    AppDir,
    /// A folder added with `AddDllDirectory` (only with [`Mode::DefaultDirs`]).
    UserDir,
    /// `GetSystemDirectoryW`.
    System32,
    /// `<Windows folder>\System`.
    System16,
    /// `GetWindowsDirectoryW`.
    WindowsDir,
    /// The process's current folder.
    CurrentDir,
    /// A `PATH` entry.
    Path,
}

impl Place {
    /// In words, for "found ... (this)".
    pub fn describe(self) -> &'static str {
        match self {
            Place::Loaded => "as a module the process has already loaded under that name",
            Place::KnownDll => "through the KnownDLLs list (from System32)",
            Place::AppDir => "from the application's folder (the host's exe), which comes before System32 and PATH",
            Place::UserDir => "from a folder added with AddDllDirectory",
            Place::System32 => "from System32, which comes before PATH",
            Place::System16 => "from the 16-bit System folder, which comes before PATH",
            Place::WindowsDir => "from the Windows folder, which comes before PATH",
            Place::CurrentDir => "from the current folder, which comes before PATH",
            Place::Path => "through PATH",
        }
    }
}

/// Which order the host uses for a load made with no `LOAD_LIBRARY_SEARCH_*` flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The standard order (every Python host, see the module documentation).
    #[default]
    Standard,
    /// After `SetDefaultDllDirectories(LOAD_LIBRARY_SEARCH_DEFAULT_DIRS)`.
    DefaultDirs,
}

/// A file the search finds, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The file (for [`Place::Loaded`], the loaded module's path).
    pub path: PathBuf,
    /// The place that gave it.
    pub place: Place,
    /// For [`Place::Path`], its position in `PATH` (from 1, empty entries counted); else 0.
    pub position: usize,
}

/// The inputs of one host's search order.
#[derive(Debug, Clone, Default)]
pub struct WinSearch {
    /// Standard or `SetDefaultDllDirectories`.
    pub mode: Mode,
    /// Modules the host has already loaded (full paths): `doctor --pid` knows them.
    pub loaded: Vec<PathBuf>,
    /// The KnownDLLs list ([`windirs::known_dlls`]); `None` when it could not be read.
    pub known_dlls: Option<Vec<String>>,
    /// The folder of the host's exe; `None` when not known (then not searched).
    pub app_dir: Option<PathBuf>,
    /// `AddDllDirectory` folders (searched only with [`Mode::DefaultDirs`]).
    pub user_dirs: Vec<PathBuf>,
    /// System32, the 16-bit System folder and the Windows folder; `None` off Windows.
    pub system: Option<SystemDirs>,
    /// The host's current folder; `None` when not known.
    pub cwd: Option<PathBuf>,
    /// `PATH`'s entries in order, empty ones kept (for positions).
    pub path: Vec<PathBuf>,
}

impl WinSearch {
    /// The standard order of a host whose exe is in `app_dir`, running in this process's
    /// current folder with `PATH` entries `path`, on this machine's system folders and
    /// KnownDLLs list.
    pub fn standard(path: &[PathBuf], app_dir: Option<PathBuf>) -> WinSearch {
        WinSearch {
            known_dlls: windirs::known_dlls(),
            app_dir,
            system: windirs::system_dirs(),
            cwd: std::env::current_dir().ok(),
            path: path.to_vec(),
            ..WinSearch::default()
        }
    }

    /// The folders searched, in order: (place, `PATH` position or 0, folder).
    pub fn folders(&self) -> Vec<(Place, usize, PathBuf)> {
        let mut out = Vec::new();
        if let Some(a) = &self.app_dir {
            out.push((Place::AppDir, 0, a.clone()));
        }
        if self.mode == Mode::DefaultDirs {
            out.extend(self.user_dirs.iter().map(|d| (Place::UserDir, 0, d.clone())));
        }
        if let Some(s) = &self.system {
            out.push((Place::System32, 0, s.system32.clone()));
            if self.mode == Mode::DefaultDirs {
                return out;
            }
            out.push((Place::System16, 0, s.system16.clone()));
            out.push((Place::WindowsDir, 0, s.windows.clone()));
        } else if self.mode == Mode::DefaultDirs {
            return out;
        }
        if let Some(c) = &self.cwd {
            out.push((Place::CurrentDir, 0, c.clone()));
        }
        out.extend(self.path.iter().enumerate().filter(|(_, d)| !d.as_os_str().is_empty()).map(|(i, d)| (Place::Path, i + 1, d.clone())));
        out
    }

    /// Where the host's loader finds `name` (a bare file name, matched without regard to
    /// case): see the module documentation. `None` when no place holds it.
    pub fn find(&self, name: &str) -> Option<Found> {
        let same = |p: &Path| p.file_name().is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case(name));
        if let Some(m) = self.loaded.iter().find(|m| same(m)) {
            return Some(Found { path: m.clone(), place: Place::Loaded, position: 0 });
        }
        if let (Some(list), Some(s)) = (&self.known_dlls, &self.system)
            && list.iter().any(|k| k.eq_ignore_ascii_case(name))
        {
            return Some(Found { path: s.system32.join(name), place: Place::KnownDll, position: 0 });
        }
        self.folders().into_iter().find_map(|(place, position, dir)| Some(Found { path: find_ci(&dir, name)?, place, position }))
    }

    /// Whether `name` is on the KnownDLLs list: `None` when the list was not read.
    pub fn is_known_dll(&self, name: &str) -> Option<bool> {
        self.known_dlls.as_ref().map(|l| l.iter().any(|k| k.eq_ignore_ascii_case(name)))
    }

    /// The places searched, in words (`the application's folder C:\env, System32 C:\...,
    /// ..., PATH`), for a sentence "no folder ... holds it (searched: ...)".
    pub fn describe(&self) -> String {
        let mut parts = vec!["the modules already loaded".to_string()];
        parts.push(match &self.known_dlls {
            Some(_) => "KnownDLLs".into(),
            None => "KnownDLLs (not read)".into(),
        });
        for (place, _, dir) in self.folders().into_iter().filter(|(p, _, _)| *p != Place::Path) {
            let what = match place {
                Place::AppDir => "the application's folder",
                Place::UserDir => "the AddDllDirectory folder",
                Place::System32 => "System32",
                Place::System16 => "the 16-bit System folder",
                Place::WindowsDir => "the Windows folder",
                Place::CurrentDir => "the current folder",
                _ => continue,
            };
            parts.push(format!("{what} {}", dir.display()));
        }
        if self.mode == Mode::Standard {
            parts.push("PATH".into());
        }
        parts.join(", ")
    }
}

/// The folder of a Python host's exe for the env `prefix`: `prefix` itself when it holds
/// `python.exe` (conda envs keep it at the root), else `None`.
pub fn python_app_dir(prefix: Option<&Path>) -> Option<PathBuf> {
    let p = prefix?;
    find_ci(p, "python.exe").map(|_| p.to_path_buf())
}

/// `dir/name` matched without regard to case (Windows names), when such a file exists.
pub(crate) fn find_ci(dir: &Path, name: &str) -> Option<PathBuf> {
    let exact = dir.join(name);
    if exact.is_file() {
        return Some(exact);
    }
    std::fs::read_dir(dir).ok()?.flatten().find(|e| e.file_name().to_string_lossy().eq_ignore_ascii_case(name) && e.path().is_file()).map(|e| e.path())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each place wins over every later one, and `DefaultDirs` drops the current folder and
    /// `PATH` and adds the `AddDllDirectory` folders (docs/loader.md W6, W9).
    #[test]
    fn each_place_beats_the_ones_after_it() {
        let tmp = tempfile::tempdir().unwrap();
        let d = |n: &str| {
            let p = tmp.path().join(n);
            std::fs::create_dir_all(&p).unwrap();
            p
        };
        let (app, user, s32, s16, win, cwd, p1, p2) = (d("app"), d("user"), d("s32"), d("s16"), d("win"), d("cwd"), d("p1"), d("p2"));
        let mut s = WinSearch {
            app_dir: Some(app.clone()),
            user_dirs: vec![user.clone()],
            system: Some(SystemDirs { system32: s32.clone(), system16: s16.clone(), windows: win.clone() }),
            cwd: Some(cwd.clone()),
            path: vec![PathBuf::new(), p1.clone(), p2.clone()],
            known_dlls: Some(vec!["KERNEL32.dll".into()]),
            ..WinSearch::default()
        };
        let order = [
            (Place::Path, p2.clone()),
            (Place::Path, p1.clone()),
            (Place::CurrentDir, cwd),
            (Place::WindowsDir, win),
            (Place::System16, s16),
            (Place::System32, s32.clone()),
            (Place::AppDir, app.clone()),
        ];
        for (place, dir) in order {
            std::fs::write(dir.join("X.DLL"), "x").unwrap();
            let f = s.find("x.dll").unwrap();
            assert_eq!((f.place, f.path.parent().unwrap()), (place, dir.as_path()));
        }
        assert_eq!(s.find("x.dll").unwrap().position, 0);
        std::fs::remove_file(app.join("X.DLL")).unwrap();
        std::fs::write(p1.join("only.dll"), "x").unwrap();
        assert_eq!(s.find("only.dll").map(|f| (f.place, f.position)), Some((Place::Path, 2)), "positions count the empty entry");
        assert_eq!(s.find("kernel32.dll").map(|f| (f.place, f.path)), Some((Place::KnownDll, s32.join("kernel32.dll"))));
        assert_eq!(s.is_known_dll("cudnn64_9.dll"), Some(false));
        s.loaded = vec![tmp.path().join("elsewhere/x.dll")];
        assert_eq!(s.find("X.dll").unwrap().place, Place::Loaded);
        s.loaded.clear();
        s.mode = Mode::DefaultDirs;
        assert_eq!(s.find("only.dll"), None, "no PATH");
        std::fs::write(user.join("x.dll"), "x").unwrap();
        assert_eq!(s.find("x.dll").unwrap().place, Place::UserDir, "user dirs before System32");
        assert!(!s.describe().contains("PATH") && !s.describe().contains("current folder"), "{}", s.describe());
    }
}
