//! The environment a profile's activation produces, computed the way `conda activate`
//! would, for the check to run its probe in.
//!
//! With a conda env, every script in the env's `etc/conda/activate.d` for the platform's
//! shell (`.sh` on Linux via bash, `.bat` on Windows via cmd) is run in conda's order (sorted
//! by file name), cuenv's shim and other packages' alike: another package's script can put
//! its own folder ahead of cuenv's, and the check must see that. `CONDA_PREFIX` is set to the
//! env first, as conda does. Without a conda env, cuenv's own activation is applied to the
//! caller's environment directly.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use crate::shim::Activation;

/// An environment: `(name, value)` pairs.
pub type Env = Vec<(OsString, OsString)>;

/// Why a profile's env could not be activated: its conda activation scripts failed, or its
/// `python-env` is gone.
#[derive(Debug, thiserror::Error)]
#[error("activating {env} failed: {detail}")]
pub struct ActivateError {
    pub env: String,
    pub detail: String,
}

/// `base` with `act` applied: its folders prepended to PATH and LD_LIBRARY_PATH (with the
/// platform's separator) and its variables set, plus CUENV_PROFILE.
pub fn apply_activation(base: &[(OsString, OsString)], act: &Activation) -> Env {
    let mut env: Env = base.to_vec();
    let mut prepend = |name: &str, dirs: &[std::path::PathBuf]| {
        if dirs.is_empty() {
            return;
        }
        let key = find(&env, name);
        let old: Vec<std::path::PathBuf> = key.map(|i| std::env::split_paths(&env[i].1).collect()).unwrap_or_default();
        let new = std::env::join_paths(dirs.iter().cloned().chain(old.into_iter().filter(|p| !dirs.contains(p)))).unwrap_or_default();
        set(&mut env, name, new);
    };
    prepend("PATH", &act.path_prepend);
    prepend("LD_LIBRARY_PATH", &act.ld_library_path_prepend);
    for (k, v) in &act.set {
        set(&mut env, k, v.clone().into_os_string());
    }
    set(&mut env, crate::home::settings::PROFILE_VAR, OsString::from(&act.profile));
    env
}

fn find(env: &Env, name: &str) -> Option<usize> {
    env.iter().position(|(k, _)| if cfg!(windows) { k.to_string_lossy().eq_ignore_ascii_case(name) } else { k == name })
}

fn set(env: &mut Env, name: &str, value: OsString) {
    match find(env, name) {
        Some(i) => env[i].1 = value,
        None => env.push((name.into(), value)),
    }
}

/// What activating the Python env at `prefix` (a `python-env` binding) does to `base`, without
/// running any script: a venv's `bin/activate` (CPython's `Lib/venv/scripts/common/activate`)
/// sets `VIRTUAL_ENV`, puts `<venv>/bin` (Windows `Scripts`) first on `PATH` and unsets
/// `PYTHONHOME`; a conda or pixi prefix gets `CONDA_PREFIX` and conda's env folders first on
/// `PATH` ([`env_path_dirs`]; its `activate.d` scripts are the conda binding's, not run here).
pub fn python_env(prefix: &Path, base: &[(OsString, OsString)]) -> Env {
    let mut env: Env = base.to_vec();
    let conda = crate::pyenv::kind_of(prefix).is_some_and(crate::pyenv::Kind::is_conda);
    let dirs = if conda {
        set(&mut env, "CONDA_PREFIX", prefix.as_os_str().to_owned());
        env_path_dirs(prefix)
    } else {
        set(&mut env, "VIRTUAL_ENV", prefix.as_os_str().to_owned());
        if let Some(i) = find(&env, "PYTHONHOME") {
            env.remove(i);
        }
        vec![prefix.join(if cfg!(windows) { "Scripts" } else { "bin" })]
    };
    let old: Vec<std::path::PathBuf> = find(&env, "PATH").map(|i| std::env::split_paths(&env[i].1).collect()).unwrap_or_default();
    set(&mut env, "PATH", std::env::join_paths(dirs.into_iter().chain(old)).unwrap_or_default());
    env
}

/// Runs every activation script of the conda env at `prefix` on top of `base`, in conda's
/// order, and returns the resulting environment.
pub fn conda_env(prefix: &Path, base: &[(OsString, OsString)]) -> Result<Env, ActivateError> {
    let dir = prefix.join("etc").join("conda").join("activate.d");
    let ext = if cfg!(windows) { "bat" } else { "sh" };
    let mut scripts: Vec<_> = std::fs::read_dir(&dir)
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case(ext))).collect())
        .unwrap_or_default();
    scripts.sort();
    let mut base: Env = base.to_vec();
    set(&mut base, "CONDA_PREFIX", prefix.as_os_str().to_owned());
    // conda puts the env's own folders first on PATH before it runs the scripts
    // (`_add_prefix_to_path` / `_get_path_dirs` in conda/activate.py): the Windows shims insert
    // their block right after `<env>`, and a command run in the profile finds the env's tools.
    let old_path: Vec<std::path::PathBuf> = find(&base, "PATH").map(|i| std::env::split_paths(&base[i].1).collect()).unwrap_or_default();
    let new_path = std::env::join_paths(env_path_dirs(prefix).into_iter().chain(old_path)).unwrap_or_default();
    set(&mut base, "PATH", new_path);
    let err = |detail: String| ActivateError { env: prefix.display().to_string(), detail };
    let out = sys_run(&scripts, &base).map_err(|e| err(e.to_string()))?;
    if !out.status.success() {
        return Err(err(format!("exit status {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(parse_env(&out.stdout))
}

/// The activation scripts of the conda env at `prefix` that the check does not run: those
/// for another shell conda supports (`.fish`, `.csh`, `.xsh`, `.ps1`, and `.sh` on Windows /
/// `.bat` elsewhere is skipped as the other platform's; docs/facts.md §6) that are not
/// cuenv's own shims (`cuenv-*`) and change `PATH` or `LD_LIBRARY_PATH` (their text names the
/// variable). Returns (script, the variables it names), sorted by file name. A shell of that
/// kind started in the env runs them after (or instead of) what the check saw.
pub fn unrun_scripts(prefix: &Path) -> Vec<(std::path::PathBuf, Vec<&'static str>)> {
    let others: &[&str] = if cfg!(windows) { &["ps1", "sh", "fish", "xsh"] } else { &["fish", "csh", "xsh", "ps1"] };
    let dir = prefix.join("etc").join("conda").join("activate.d");
    let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| others.iter().any(|o| e.eq_ignore_ascii_case(o))))
                .filter(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("cuenv-")))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            let words: Vec<&str> = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).collect();
            let vars: Vec<&'static str> = ["PATH", "LD_LIBRARY_PATH"].into_iter().filter(|v| words.iter().any(|w| w.eq_ignore_ascii_case(v))).collect();
            (!vars.is_empty()).then_some((p, vars))
        })
        .collect()
}

/// conda's `_get_path_dirs`: the folders of a conda env that activation puts on PATH, in order
/// (Windows: `<env>`, `Library\mingw-w64\bin`, `Library\usr\bin`, `Library\bin`, `Scripts`,
/// `bin`; elsewhere `<env>/bin`). conda also adds a `Library\<msys2 variant>\bin` that exists.
pub fn env_path_dirs(prefix: &Path) -> Vec<std::path::PathBuf> {
    if cfg!(windows) {
        let mut v = vec![prefix.to_path_buf()];
        if let Some(variant) = ["ucrt64", "clang64", "mingw64", "clangarm64"].iter().find(|v| prefix.join("Library").join(v).is_dir()) {
            v.push(prefix.join("Library").join(variant).join("bin"));
        }
        v.extend([
            prefix.join("Library").join("mingw-w64").join("bin"),
            prefix.join("Library").join("usr").join("bin"),
            prefix.join("Library").join("bin"),
            prefix.join("Scripts"),
            prefix.join("bin"),
        ]);
        v
    } else {
        vec![prefix.join("bin")]
    }
}

#[cfg(not(windows))]
fn sys_run(scripts: &[std::path::PathBuf], base: &Env) -> std::io::Result<std::process::Output> {
    // Each script path is passed as a positional argument: no quoting needed.
    let body = r#"for f in "$@"; do . "$f" || exit 97; done; exec env -0"#;
    Command::new("bash").arg("-c").arg(body).arg("cuenv-activate").args(scripts).env_clear().envs(base.iter().map(|(k, v)| (k, v))).output()
}

#[cfg(windows)]
fn sys_run(scripts: &[std::path::PathBuf], base: &Env) -> std::io::Result<std::process::Output> {
    // A driver batch file calls each script, then prints the environment with `set`.
    let dir = tempfile::tempdir()?;
    let driver = dir.path().join("cuenv-activate.bat");
    let mut text = String::from("@echo off\r\n");
    for s in scripts {
        text.push_str(&format!("call \"{}\"\r\n", s.display().to_string().replace('%', "%%")));
    }
    text.push_str("set\r\n");
    std::fs::write(&driver, text)?;
    Command::new("cmd").arg("/d").arg("/c").arg(&driver).env_clear().envs(base.iter().map(|(k, v)| (k, v))).output()
}

/// Parses `env -0` output (NUL-separated) or `set` output (lines) into pairs.
fn parse_env(bytes: &[u8]) -> Env {
    let sep = if bytes.contains(&0) { 0u8 } else { b'\n' };
    bytes
        .split(|b| *b == sep)
        .filter_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            let kv = kv.trim_end_matches('\r');
            let (k, v) = kv.split_once('=')?;
            (!k.is_empty()).then(|| (OsString::from(k), OsString::from(v)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn own_activation_prepends_once_and_sets() {
        let sep = if cfg!(windows) { ";" } else { ":" };
        let base: Env = vec![("PATH".into(), format!("/usr/bin{sep}/a").into())];
        let act = Activation {
            profile: "p".into(),
            layer: Default::default(),
            path_prepend: vec![PathBuf::from("/a"), PathBuf::from("/b")],
            ld_library_path_prepend: vec![],
            set: vec![("CUDNN_PATH".into(), PathBuf::from("/c"))],
        };
        let env = apply_activation(&base, &act);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.to_string_lossy().into_owned());
        assert_eq!(get("PATH").unwrap(), format!("/a{sep}/b{sep}/usr/bin"));
        assert_eq!(get("CUDNN_PATH").unwrap(), "/c");
        assert_eq!(get("CUENV_PROFILE").unwrap(), "p");
        assert_eq!(get("LD_LIBRARY_PATH"), None);
    }

    #[cfg(unix)]
    #[test]
    fn conda_scripts_run_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("etc/conda/activate.d");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("b.sh"), "export ORDER=\"$ORDER b\"\n").unwrap();
        std::fs::write(d.join("a.sh"), "export ORDER=\"$ORDER a\"\nexport SEEN_PREFIX=\"$CONDA_PREFIX\"\n").unwrap();
        std::fs::write(d.join("c.fish"), "set -gx ORDER nope\n").unwrap();
        let env = conda_env(dir.path(), &[("PATH".into(), std::env::var_os("PATH").unwrap())]).unwrap();
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.to_string_lossy().into_owned());
        assert_eq!(get("ORDER").unwrap(), " a b");
        assert_eq!(get("SEEN_PREFIX").unwrap(), dir.path().to_string_lossy());
    }
}
