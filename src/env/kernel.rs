//! Jupyter kernelspecs bound to a profile. Jupyter kernels never run a conda
//! env's `activate.d` scripts: a kernel gets the server's environment merged with the `env`
//! block of its `kernel.json` (jupyter_client's `KernelManager.pre_start_kernel`, which also
//! expands `${VAR}` there from the server's environment with `string.Template.safe_substitute`).
//! So cuenv writes the profile's variables into that block, through the stable view
//! (`<home>/profiles/<name>/...`), so that `use` and `rollback` never leave it stale; in the
//! link-free mode it names the real folders and a switch rewrites it (the `follow` module).
//!
//! Where kernelspecs live (jupyter_client's `jupyter_data_dir` / `jupyter_path`): `--user`:
//! `$JUPYTER_DATA_DIR/kernels`, else `~/.local/share/jupyter/kernels` (Linux),
//! `%APPDATA%\jupyter\kernels` (Windows); `--prefix DIR`: `DIR/share/jupyter/kernels`. `list`
//! also reads each folder of `$JUPYTER_PATH` and the system folders
//! (`/usr/local/share/jupyter`, `/usr/share/jupyter`; `%PROGRAMDATA%\jupyter` on Windows).
//! A cuenv kernelspec is one whose `metadata.cuenv.profile` is set.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::env::export::Exported;

/// The user's kernelspec folder (see the module docs).
pub fn user_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("JUPYTER_DATA_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("kernels"));
    }
    if cfg!(windows) {
        std::env::var_os("APPDATA").map(|a| PathBuf::from(a).join("jupyter").join("kernels"))
    } else {
        dirs::home_dir().map(|h| h.join(".local/share/jupyter/kernels"))
    }
}

/// Every folder `list` reads, in jupyter_client's order (user, `$JUPYTER_PATH`, system).
pub fn search_dirs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = user_dir().into_iter().collect();
    if let Some(p) = std::env::var_os("JUPYTER_PATH") {
        v.extend(std::env::split_paths(&p).map(|d| d.join("kernels")));
    }
    if cfg!(windows) {
        v.extend(std::env::var_os("PROGRAMDATA").map(|p| PathBuf::from(p).join("jupyter").join("kernels")));
    } else {
        v.extend([PathBuf::from("/usr/local/share/jupyter/kernels"), PathBuf::from("/usr/share/jupyter/kernels")]);
    }
    v
}

/// The `kernel.json` of a profile's kernel: the usual ipykernel argv for `python`, the display
/// name, and the profile's variables in `env`. `PATH` is the profile's folders followed by
/// `${PATH}` (the server's, which jupyter_client substitutes; PATH is always set); other list
/// variables hold the profile's folders alone, since `${VAR}` of an unset variable would stay
/// literal in the kernel's environment.
pub fn spec(e: &Exported, python: &Path, display_name: &str, home: &Path, sep: char) -> serde_json::Value {
    serde_json::json!({
        "argv": [python.to_string_lossy(), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": display_name,
        "language": "python",
        "env": env_block(e, sep),
        "metadata": {"cuenv": {"profile": e.profile, "home": home.to_string_lossy()}, "debugger": true},
    })
}

/// The `env` block of a profile's `kernel.json` (see [`spec`]): variable name to value.
pub fn env_block(e: &Exported, sep: char) -> serde_json::Map<String, serde_json::Value> {
    let mut env = serde_json::Map::new();
    for (k, dirs) in &e.prepend {
        let mut v = dirs.join(&sep.to_string());
        if k.eq_ignore_ascii_case("PATH") {
            v.push(sep);
            v.push_str("${PATH}");
        }
        env.insert(k.clone(), v.into());
    }
    for (k, v) in &e.set {
        env.insert(k.clone(), v.clone().into());
    }
    env
}

/// The text of a cuenv `kernel.json` (`text`, as [`spec`] wrote it and the user may have
/// edited it) with its profile's variables brought to `new`: every variable of `old` (the
/// block the kernelspec was written from, when known) or `new` is replaced by `new`'s value
/// or dropped; the argv, the display name, the metadata and variables cuenv never sets stay.
/// `None` when `text` is not a JSON object.
pub fn refreshed(text: &str, old: Option<&serde_json::Map<String, serde_json::Value>>, new: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    let mut v: serde_json::Value = serde_json::from_str(text).ok()?;
    let obj = v.as_object_mut()?;
    let mut env = obj.get("env").and_then(|e| e.as_object()).cloned().unwrap_or_default();
    env.retain(|k, _| !new.contains_key(k) && !old.is_some_and(|o| o.contains_key(k)));
    env.extend(new.iter().map(|(k, v)| (k.clone(), v.clone())));
    obj.insert("env".into(), env.into());
    Some(format!("{v:#}\n"))
}

/// Whether `python` can import `ipykernel_launcher`, the module the kernelspec's argv runs
/// (ipykernel's launcher; jupyter_client itself does not ship it). Runs
/// `python -c "..."` with the caller's environment (so `PYTHONPATH` counts, as it will when
/// Jupyter starts the kernel). `Ok(false)`: it ran and the module is missing; `Err`: the
/// interpreter could not be run or ended another way (the error says how).
pub fn has_ipykernel(python: &Path) -> Result<bool, String> {
    let out = std::process::Command::new(python)
        .args(["-c", "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('ipykernel_launcher') else 3)"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    match out.status.code() {
        Some(0) => Ok(true),
        Some(3) => Ok(false),
        _ => Err(format!("{} did not run as a Python interpreter ({})", python.display(), out.status)),
    }
}

/// A cuenv kernelspec found on disk.
#[derive(Debug, Serialize)]
pub struct Found {
    /// The kernel's name (its folder's name).
    pub name: String,
    /// Its `kernel.json`.
    pub path: PathBuf,
    /// The profile it is bound to.
    pub profile: String,
    /// The cuenv home it points into.
    pub home: String,
}

/// The cuenv kernelspecs in `dirs` (the first of a name wins, as in jupyter_client).
pub fn list(dirs: &[PathBuf]) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(d) else { continue };
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            if out.iter().any(|f| f.name == name) {
                continue;
            }
            let path = e.path().join("kernel.json");
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else { continue };
            if let Some(profile) = v["metadata"]["cuenv"]["profile"].as_str() {
                out.push(Found { name, path, profile: profile.to_string(), home: v["metadata"]["cuenv"]["home"].as_str().unwrap_or("").to_string() });
            }
        }
    }
    out
}
