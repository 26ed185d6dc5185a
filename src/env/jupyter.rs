//! Where Jupyter looks for kernelspecs, as jupyter_client's `KernelSpecManager.kernel_dirs`
//! computes them: jupyter_core's `jupyter_path("kernels")` (`jupyter_core/paths.py`, commit
//! 2e63fd3928a979844fa0c2a247ee1937bbae9a99 of github.com/jupyter/jupyter_core) followed by
//! IPython's `<ipython dir>/kernels` (`jupyter_client/kernelspec.py`, `_kernel_dirs_default`,
//! commit 8d760b1efeff2ac7aa2b4b75c44023e59c6945f8 of github.com/jupyter/jupyter_client).
//!
//! The order, highest first (a kernel name found in an earlier folder hides the same name in a
//! later one; names are compared lowercased):
//! 1. every folder of `$JUPYTER_PATH` (when set and not empty);
//! 2. the user folders: the data dir ([`data_dir`]) and, while Python's user site is enabled,
//!    `<user base>/share/jupyter`; and the env folder `<sys.prefix>/share/jupyter` of the
//!    server's Python, env before user when [`prefers_env`] (a venv or a non-base conda env
//!    the user owns, or `JUPYTER_PREFER_ENV_PATH`), else user before env;
//! 3. the system folders ([`system_dirs`]) not already listed;
//! 4. `$IPYTHONDIR/kernels` (default `~/.ipython/kernels`), which jupyter_client adds when
//!    IPython is importable (taken here when the folder exists).
//!
//! `sys.prefix` is the Jupyter server's: cuenv is not that process, so [`Server`] says which
//! Python it is (`--python EXE`, else `VIRTUAL_ENV`, else `CONDA_PREFIX`, else `python3` on
//! `PATH`), and its prefix is read from the interpreter's place (`<prefix>/bin/python`,
//! `<prefix>\python.exe`, `<prefix>\Scripts\python.exe`) without running it.
//! Variables are read through a lookup function, so the rules are tested without touching the
//! process's environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A variable lookup: the value of a variable, or `None` when unset.
pub type Vars<'a> = &'a dyn Fn(&str) -> Option<OsString>;

/// The Jupyter server's Python as far as kernelspec search needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// The interpreter (what jupyter_client puts for a kernel `argv[0]` `python`, `python3`,
    /// `python3.X`: its own `sys.executable`).
    pub python: Option<PathBuf>,
    /// Its `sys.prefix`.
    pub prefix: Option<PathBuf>,
    /// Where the guess came from (`--python`, `VIRTUAL_ENV`, `CONDA_PREFIX`, `PATH`), for output.
    pub from: &'static str,
}

impl Server {
    /// The server named by `python` (`--python EXE`), else the environment's: `VIRTUAL_ENV`,
    /// `CONDA_PREFIX`, then `python3` / `python` found on `PATH`.
    pub fn find(python: Option<&Path>, vars: Vars) -> Server {
        if let Some(p) = python {
            return Server { python: Some(p.to_path_buf()), prefix: Some(prefix_of(p)), from: "--python" };
        }
        // The shell's env, found as everywhere else (decisions.md 9: `crate::pyenv`).
        if let Some(e) = crate::pyenv::from_vars(&|k| vars(k)).into_iter().next() {
            let from = if e.found_by == "VIRTUAL_ENV" { "VIRTUAL_ENV" } else { "CONDA_PREFIX" };
            let python = e.python.clone().unwrap_or_else(|| match (cfg!(windows), e.kind.is_conda()) {
                (true, true) => e.prefix.join("python.exe"),
                (true, false) => e.prefix.join("Scripts").join("python.exe"),
                (false, _) => e.prefix.join("bin").join("python"),
            });
            return Server { python: Some(python), prefix: Some(e.prefix), from };
        }
        let names: &[&str] = if cfg!(windows) { &["python.exe", "python3.exe"] } else { &["python3", "python"] };
        let found = vars("PATH").and_then(|path| names.iter().find_map(|n| std::env::split_paths(&path).map(|d| d.join(n)).find(|p| p.is_file())));
        match found {
            Some(p) => Server { prefix: Some(prefix_of(&p)), python: Some(p), from: "PATH" },
            None => Server { python: None, prefix: None, from: "PATH" },
        }
    }
}

/// The `sys.prefix` of the interpreter at `python`, from its place: `<prefix>/bin/python`
/// (Unix), `<prefix>\Scripts\python.exe` (a Windows venv) or `<prefix>\python.exe` (a Windows
/// conda env or installation).
pub fn prefix_of(python: &Path) -> PathBuf {
    let dir = python.parent().unwrap_or(Path::new(""));
    let name = dir.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase());
    match name.as_deref() {
        Some("bin") | Some("scripts") => dir.parent().unwrap_or(dir).to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

/// jupyter_core's `envset`: set to anything but `no`, `n`, `false`, `off`, `0`, `0.0` (any case).
fn envset(vars: Vars, name: &str) -> Option<bool> {
    let v = vars(name)?;
    Some(!["no", "n", "false", "off", "0", "0.0"].contains(&v.to_string_lossy().to_lowercase().as_str()))
}

fn nonempty(vars: Vars, name: &str) -> Option<PathBuf> {
    vars(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

fn home(vars: Vars) -> Option<PathBuf> {
    let var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
    nonempty(vars, var).or_else(dirs::home_dir)
}

/// jupyter_core's `jupyter_data_dir()`: `$JUPYTER_DATA_DIR`; with `JUPYTER_PLATFORM_DIRS`
/// platformdirs' user data dir; else `~/Library/Jupyter` (macOS), `%APPDATA%\jupyter`
/// (Windows), `$XDG_DATA_HOME/jupyter` or `~/.local/share/jupyter`.
pub fn data_dir(vars: Vars) -> Option<PathBuf> {
    if let Some(d) = nonempty(vars, "JUPYTER_DATA_DIR") {
        return Some(d);
    }
    let platform_dirs = envset(vars, "JUPYTER_PLATFORM_DIRS").unwrap_or(false);
    if cfg!(target_os = "macos") {
        let sub = if platform_dirs { "Library/Application Support/Jupyter" } else { "Library/Jupyter" };
        return home(vars).map(|h| h.join(sub));
    }
    if cfg!(windows) {
        if platform_dirs {
            return nonempty(vars, "LOCALAPPDATA").map(|a| a.join("Jupyter"));
        }
        return match nonempty(vars, "APPDATA") {
            Some(a) => Some(a.join("jupyter")),
            None => nonempty(vars, "JUPYTER_CONFIG_DIR").or_else(|| home(vars).map(|h| h.join(".jupyter"))).map(|c| c.join("data")),
        };
    }
    let xdg = nonempty(vars, "XDG_DATA_HOME").or_else(|| home(vars).map(|h| h.join(".local").join("share")))?;
    Some(xdg.join("jupyter"))
}

/// jupyter_core's `SYSTEM_JUPYTER_PATH`: on Windows `%PROGRAMDATA%\jupyter` only when
/// `JUPYTER_USE_PROGRAMDATA` is set, else the server's `<sys.prefix>\share\jupyter`; with
/// `JUPYTER_PLATFORM_DIRS` on Linux each folder of `$XDG_DATA_DIRS` (default
/// `/usr/local/share:/usr/share`) + `jupyter`; else `/usr/local/share/jupyter`,
/// `/usr/share/jupyter`.
pub fn system_dirs(vars: Vars, prefix: Option<&Path>) -> Vec<PathBuf> {
    let platform_dirs = envset(vars, "JUPYTER_PLATFORM_DIRS").unwrap_or(false);
    if cfg!(windows) {
        let programdata = envset(vars, "JUPYTER_USE_PROGRAMDATA").unwrap_or(false).then(|| nonempty(vars, "PROGRAMDATA")).flatten();
        return match programdata {
            Some(p) => vec![p.join(if platform_dirs { "Jupyter" } else { "jupyter" })],
            None => prefix.map(|p| p.join("share").join("jupyter")).into_iter().collect(),
        };
    }
    if cfg!(target_os = "macos") && platform_dirs {
        return vec![PathBuf::from("/Library/Application Support/Jupyter")];
    }
    if platform_dirs {
        let dirs = vars("XDG_DATA_DIRS").map(|v| v.to_string_lossy().trim().to_string()).filter(|v| !v.is_empty());
        let dirs = dirs.unwrap_or_else(|| "/usr/local/share:/usr/share".into());
        return dirs.split(':').filter(|d| !d.is_empty()).map(|d| PathBuf::from(d).join("jupyter")).collect();
    }
    vec![PathBuf::from("/usr/local/share/jupyter"), PathBuf::from("/usr/share/jupyter")]
}

/// Whether `prefix` is a venv (`sys.prefix != sys.base_prefix`: it holds `pyvenv.cfg`;
/// [`crate::pyenv::kind_of`]).
fn is_venv(prefix: &Path) -> bool {
    crate::pyenv::kind_of(prefix).is_some_and(|k| matches!(k, crate::pyenv::Kind::Venv | crate::pyenv::Kind::Uv))
}

/// jupyter_core's `_do_i_own`: the nearest existing folder at or above `path` belongs to this
/// user (Unix: its owner is the effective uid; elsewhere: it is writable).
fn do_i_own(path: &Path) -> bool {
    let mut p = path;
    while !p.exists() {
        match p.parent() {
            Some(up) => p = up,
            None => return false,
        }
    }
    owned(p)
}

#[cfg(unix)]
fn owned(p: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    std::fs::metadata(p).is_ok_and(|m| m.uid() == me)
}

#[cfg(not(unix))]
fn owned(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| !m.permissions().readonly())
}

/// jupyter_core's `prefer_environment_over_user()`: `JUPYTER_PREFER_ENV_PATH` when set; else
/// true for a venv the user owns, or a conda env (`sys.prefix` under `CONDA_PREFIX`,
/// `CONDA_DEFAULT_ENV` not `base`) the user owns.
pub fn prefers_env(vars: Vars, prefix: Option<&Path>) -> bool {
    if let Some(v) = envset(vars, "JUPYTER_PREFER_ENV_PATH") {
        return v;
    }
    let Some(prefix) = prefix else { return false };
    if is_venv(prefix) && do_i_own(prefix) {
        return true;
    }
    let conda = vars("CONDA_PREFIX").is_some_and(|c| prefix.to_string_lossy().starts_with(&*c.to_string_lossy()));
    let base = vars("CONDA_DEFAULT_ENV").map(|v| v == "base").unwrap_or(true);
    conda && !base && do_i_own(prefix)
}

/// Python's user base (`site.getuserbase()`) while the user site is enabled
/// (`site.ENABLE_USER_SITE`): not in a venv without `include-system-site-packages = true`,
/// not with `PYTHONNOUSERSITE`. `$PYTHONUSERBASE`, else `%APPDATA%\Python` (Windows),
/// `~/.local` elsewhere (a macOS framework build's `~/Library/Python/X.Y` is not modelled).
fn user_base(vars: Vars, prefix: Option<&Path>) -> Option<PathBuf> {
    if vars("PYTHONNOUSERSITE").is_some_and(|v| !v.is_empty()) {
        return None;
    }
    if let Some(p) = prefix.filter(|p| is_venv(p)) {
        let cfg = std::fs::read_to_string(p.join("pyvenv.cfg")).unwrap_or_default();
        let system = cfg
            .lines()
            .filter_map(|l| l.split_once('='))
            .any(|(k, v)| k.trim().eq_ignore_ascii_case("include-system-site-packages") && v.trim().eq_ignore_ascii_case("true"));
        if !system {
            return None;
        }
    }
    if let Some(b) = nonempty(vars, "PYTHONUSERBASE") {
        return Some(b);
    }
    if cfg!(windows) { nonempty(vars, "APPDATA").map(|a| a.join("Python")) } else { home(vars).map(|h| h.join(".local")) }
}

/// Every kernelspec folder, highest precedence first (see the module docs).
pub fn kernel_dirs(vars: Vars, server: &Server) -> Vec<PathBuf> {
    let prefix = server.prefix.as_deref();
    let mut paths: Vec<PathBuf> = Vec::new();
    if let Some(jp) = vars("JUPYTER_PATH").filter(|v| !v.is_empty()) {
        let sep = if cfg!(windows) { ';' } else { ':' };
        let trim: &[char] = if cfg!(windows) { &['\\'] } else { &['/'] };
        paths.extend(jp.to_string_lossy().split(sep).map(|p| PathBuf::from(p.trim_end_matches(trim))));
    }
    let mut user: Vec<PathBuf> = data_dir(vars).into_iter().collect();
    if let Some(b) = user_base(vars, prefix) {
        let d = b.join("share").join("jupyter");
        if !user.contains(&d) {
            user.push(d);
        }
    }
    let system = system_dirs(vars, prefix);
    let env_dirs: Vec<PathBuf> = prefix.map(|p| p.join("share").join("jupyter")).into_iter().collect();
    let env_dirs: Vec<PathBuf> = if env_dirs == system { env_dirs } else { env_dirs.into_iter().filter(|p| !system.contains(p)).collect() };
    if prefers_env(vars, prefix) {
        paths.extend(env_dirs);
        paths.extend(user);
    } else {
        paths.extend(user);
        paths.extend(env_dirs);
    }
    for s in system {
        if !paths.contains(&s) {
            paths.push(s);
        }
    }
    let mut dirs: Vec<PathBuf> = paths.into_iter().map(|p| p.join("kernels")).collect();
    let ipython = nonempty(vars, "IPYTHONDIR").or_else(|| home(vars).map(|h| h.join(".ipython")));
    if let Some(k) = ipython.map(|d| d.join("kernels")).filter(|k| k.is_dir()) {
        dirs.push(k);
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let m: HashMap<String, OsString> = pairs.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        move |k: &str| m.get(k).cloned()
    }

    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn the_order_is_jupyter_path_user_env_system() {
        let v = vars(&[("JUPYTER_PATH", "/a/:/b"), ("XDG_DATA_HOME", "/x"), ("HOME", "/h"), ("PYTHONUSERBASE", "/ub")]);
        let server = Server { python: None, prefix: Some(PathBuf::from("/nonexistent/env")), from: "--python" };
        let got = kernel_dirs(&v, &server);
        let want: Vec<PathBuf> =
            ["/a", "/b", "/x/jupyter", "/ub/share/jupyter", "/nonexistent/env/share/jupyter", "/usr/local/share/jupyter", "/usr/share/jupyter"]
                .iter()
                .map(|p| Path::new(p).join("kernels"))
                .collect();
        assert_eq!(got, want);
        // JUPYTER_PREFER_ENV_PATH puts the env before the user folders; JUPYTER_DATA_DIR wins.
        let v = vars(&[("JUPYTER_PREFER_ENV_PATH", "1"), ("JUPYTER_DATA_DIR", "/d"), ("HOME", "/h"), ("PYTHONNOUSERSITE", "1")]);
        let got = kernel_dirs(&v, &server);
        assert_eq!(got[..2], [PathBuf::from("/nonexistent/env/share/jupyter/kernels"), PathBuf::from("/d/kernels")]);
        // JUPYTER_PREFER_ENV_PATH=0 (envset) keeps the user first; the system prefix is not repeated.
        let v = vars(&[("JUPYTER_PREFER_ENV_PATH", "off"), ("JUPYTER_DATA_DIR", "/d"), ("PYTHONNOUSERSITE", "1")]);
        let usr = Server { python: None, prefix: Some(PathBuf::from("/usr")), from: "PATH" };
        let got = kernel_dirs(&v, &usr);
        assert_eq!(got, ["/d", "/usr/local/share/jupyter", "/usr/share/jupyter"].iter().map(|p| Path::new(p).join("kernels")).collect::<Vec<_>>());
        // JUPYTER_PLATFORM_DIRS reads XDG_DATA_DIRS for the system folders.
        let v = vars(&[("JUPYTER_PLATFORM_DIRS", "1"), ("XDG_DATA_DIRS", "/s1:/s2"), ("JUPYTER_DATA_DIR", "/d"), ("PYTHONNOUSERSITE", "1")]);
        let got = kernel_dirs(&v, &Server { python: None, prefix: None, from: "PATH" });
        assert_eq!(got, ["/d", "/s1/jupyter", "/s2/jupyter"].iter().map(|p| Path::new(p).join("kernels")).collect::<Vec<_>>());
    }

    #[test]
    fn a_venv_the_user_owns_comes_before_the_user_folders() {
        let venv = tempfile::tempdir().unwrap();
        std::fs::write(venv.path().join("pyvenv.cfg"), "home = /usr/bin\ninclude-system-site-packages = false\n").unwrap();
        let v = vars(&[("JUPYTER_DATA_DIR", "/d")]);
        let server = Server { python: None, prefix: Some(venv.path().to_path_buf()), from: "VIRTUAL_ENV" };
        let got = kernel_dirs(&v, &server);
        assert_eq!(got[0], venv.path().join("share").join("jupyter").join("kernels"));
        assert_eq!(got[1], Path::new("/d").join("kernels"));
        // The venv has no user site: no `~/.local/share/jupyter` from the user base.
        assert!(!got.iter().any(|p| p.to_string_lossy().contains(".local")), "{got:?}");
    }

    #[test]
    fn the_prefix_is_read_from_the_interpreters_place() {
        assert_eq!(prefix_of(Path::new("/opt/env/bin/python3")), Path::new("/opt/env"));
        assert_eq!(prefix_of(Path::new("C:/envs/x/python.exe")), Path::new("C:/envs/x"));
        assert_eq!(prefix_of(Path::new("C:/venv/Scripts/python.exe")), Path::new("C:/venv"));
    }
}
