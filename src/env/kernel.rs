//! Jupyter kernelspecs bound to a profile. Jupyter kernels never run a conda
//! env's `activate.d` scripts: a kernel gets the server's environment merged with the `env`
//! block of its `kernel.json` (jupyter_client's `KernelManager.pre_start_kernel`, which also
//! expands `${VAR}` there from the server's environment with `string.Template.safe_substitute`).
//! So cuenv writes the profile's variables into that block, through the stable view
//! (`<home>/profiles/<name>/...`), so that `use` and `rollback` never leave it stale; in the
//! link-free mode it names the real folders and a switch rewrites it (the `follow` module).
//!
//! Where kernelspecs live: the `jupyter` module (jupyter_client's search order). `--user`
//! installs into `<jupyter data dir>/kernels`, `--prefix DIR` into `DIR/share/jupyter/kernels`.
//! A cuenv kernelspec is one whose `metadata.cuenv.profile` is set. [`find_all`] reads every
//! kernelspec there, bound or not, and [`merged_env`] makes the environment jupyter_client
//! starts one with; [`what_it_gets`] reads the cuDNN and CUDA folders out of that.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::env::export::Exported;
use crate::env::jupyter;

/// This process's environment as a [`jupyter::Vars`] lookup.
pub fn process_var(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// The user's kernelspec folder, `<jupyter data dir>/kernels` ([`jupyter::data_dir`]).
pub fn user_dir() -> Option<PathBuf> {
    jupyter::data_dir(&process_var).map(|d| d.join("kernels"))
}

/// Every folder Jupyter reads kernelspecs from, in its order ([`jupyter::kernel_dirs`]), for
/// the server this environment would start ([`jupyter::Server::find`]).
pub fn search_dirs() -> Vec<PathBuf> {
    jupyter::kernel_dirs(&process_var, &jupyter::Server::find(None, &process_var))
}

/// The `kernel.json` of a profile's kernel: the usual ipykernel argv for `python`, the display
/// name, and the profile's variables in `env` (with `CUENV_PYTHON_HOOK=<profile>`, so an env hook of another profile steps aside). `PATH` is the profile's folders followed by
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
    // The kernelspec names its profile explicitly: an env hook of another profile in the
    // kernel's interpreter steps aside (docs/decisions.md 5).
    env.insert(crate::pyenv::hook::VAR.into(), e.profile.clone().into());
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

/// One kernelspec as Jupyter finds it, bound to a cuenv profile or not.
#[derive(Debug, Clone, Serialize)]
pub struct Spec {
    /// The kernel's name: its folder's name, lowercased (jupyter_client's `_list_kernels_in`).
    pub name: String,
    /// Its `kernel.json`.
    pub path: PathBuf,
    /// `argv` (empty when missing).
    pub argv: Vec<String>,
    /// `language` (empty when missing).
    pub language: String,
    /// The `env` block, as written (`${VAR}` not yet substituted).
    pub env: serde_json::Map<String, serde_json::Value>,
    /// `metadata.cuenv.profile`, for a cuenv kernelspec.
    pub profile: Option<String>,
    /// `metadata.cuenv.home`, for a cuenv kernelspec.
    pub home: Option<String>,
    /// Why the file could not be read as a kernelspec (then Jupyter cannot start it either).
    pub error: Option<String>,
    /// The `kernel.json` of the same name in an earlier folder, which Jupyter uses instead.
    pub hidden_by: Option<PathBuf>,
}

/// Every kernelspec in `dirs` (highest precedence first, [`search_dirs`]): each folder's
/// subfolders holding a `kernel.json`, sorted by name; a name seen in an earlier folder makes
/// the later one [`Spec::hidden_by`] it, as `KernelSpecManager.find_kernel_specs` keeps the
/// first.
pub fn find_all(dirs: &[PathBuf]) -> Vec<Spec> {
    let mut out: Vec<Spec> = Vec::new();
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(d) else { continue };
        let mut entries: Vec<_> = rd.flatten().filter(|e| e.path().join("kernel.json").is_file()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().to_lowercase();
            let hidden_by = out.iter().find(|s| s.name == name && s.hidden_by.is_none()).map(|s| s.path.clone());
            out.push(read_spec(name, e.path().join("kernel.json"), hidden_by));
        }
    }
    out
}

/// The kernel jupyter_client adds itself: when no kernelspec folder holds `python3` and the
/// server's Python can import ipykernel, `KernelSpecManager.find_kernel_specs` lists
/// `python3` at ipykernel's `resources` folder, and starts it as `[sys.executable, "-m",
/// "ipykernel_launcher", "-f", "{connection_file}"]` with no env block
/// (`jupyter_client/kernelspec.py`, `ensure_native_kernel`; `ipykernel/kernelspec.py`,
/// `RESOURCES` and `make_ipkernel_cmd`, ipykernel 7.4.0). Asked of `python` with `env` as its
/// environment (so `PYTHONPATH` counts), without importing ipykernel (`find_spec` of the
/// package). `None` when it has no ipykernel or cannot be run. The spec's `path` is
/// `<resources>/kernel.json`, a file that does not exist: the kernel has none.
pub fn native(python: &Path, env: &[(std::ffi::OsString, std::ffi::OsString)]) -> Option<Spec> {
    let out = std::process::Command::new(python)
        .args(["-c", "import importlib.util, os, sys\ns = importlib.util.find_spec('ipykernel')\nsys.exit(3) if s is None or not s.origin else print(os.path.join(os.path.dirname(os.path.abspath(s.origin)), 'resources'))"])
        .env_clear()
        .envs(env.iter().cloned())
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let resources = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim_end_matches(['\r', '\n']));
    let argv = [python.to_string_lossy().into_owned(), "-m".into(), "ipykernel_launcher".into(), "-f".into(), "{connection_file}".into()];
    Some(Spec {
        name: NATIVE.into(),
        path: resources.join("kernel.json"),
        argv: argv.into(),
        language: "python".into(),
        env: Default::default(),
        profile: None,
        home: None,
        error: None,
        hidden_by: None,
    })
}

/// The name of the kernel jupyter_client adds itself ([`native`]): `NATIVE_KERNEL_NAME`.
pub const NATIVE: &str = "python3";

fn read_spec(name: String, path: PathBuf, hidden_by: Option<PathBuf>) -> Spec {
    let mut s = Spec { name, path, argv: Vec::new(), language: String::new(), env: Default::default(), profile: None, home: None, error: None, hidden_by };
    let v: serde_json::Value =
        match std::fs::read_to_string(&s.path).map_err(|e| e.to_string()).and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string())) {
            Ok(v) => v,
            Err(e) => {
                s.error = Some(e);
                return s;
            }
        };
    s.argv = v["argv"].as_array().map(|a| a.iter().map(|x| x.as_str().unwrap_or_default().to_string()).collect()).unwrap_or_default();
    if s.argv.is_empty() {
        s.error = Some("it has no argv".into());
    }
    s.language = v["language"].as_str().unwrap_or_default().to_string();
    s.env = v["env"].as_object().cloned().unwrap_or_default();
    s.profile = v["metadata"]["cuenv"]["profile"].as_str().map(str::to_string);
    s.home = v["metadata"]["cuenv"]["home"].as_str().map(str::to_string);
    s
}

/// Python's `string.Template(text).safe_substitute(vars)`, as jupyter_client applies it to each
/// value of a kernelspec's `env` (`KernelProvisionerBase.__apply_env_substitutions`): `$$` is
/// `$`; `$name` and `${name}` (name: `[_A-Za-z][_A-Za-z0-9]*`) become the variable's value when
/// it is set and stay as written when not; any other `$` stays.
pub fn safe_substitute(text: &str, vars: &dyn Fn(&str) -> Option<String>) -> String {
    let ident = |s: &str| -> usize {
        let b = s.as_bytes();
        if b.first().is_none_or(|c| !(c.is_ascii_alphabetic() || *c == b'_')) {
            return 0;
        }
        b.iter().take_while(|c| c.is_ascii_alphanumeric() || **c == b'_').count()
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(a) = after.strip_prefix('$') {
            out.push('$');
            rest = a;
        } else if let Some(braced) = after.strip_prefix('{') {
            let n = ident(braced);
            if n > 0 && braced[n..].starts_with('}') {
                match vars(&braced[..n]) {
                    Some(v) => out.push_str(&v),
                    None => out.push_str(&rest[i..i + n + 3]),
                }
                rest = &braced[n + 1..];
            } else {
                out.push('$');
                rest = after;
            }
        } else {
            let n = ident(after);
            match (n, vars(&after[..n])) {
                (0, _) => out.push('$'),
                (_, Some(v)) => out.push_str(&v),
                (_, None) => out.push_str(&rest[i..i + n + 1]),
            }
            rest = &after[n..];
        }
    }
    out.push_str(rest);
    out
}

/// The environment jupyter_client starts `spec` with from the server's `server` environment
/// (`KernelProvisionerBase.pre_launch`): a copy of the server's, each `env` value substituted
/// against the server's ([`safe_substitute`]) and set over it, and `PYTHONEXECUTABLE` removed
/// for a kernel whose language starts with `python` (`_finalize_env`). On Windows names match
/// without regard to case (Python's `os.environ` there is case-insensitive).
pub fn merged_env(server: &[(OsString, OsString)], spec: &Spec) -> Vec<(OsString, OsString)> {
    let same = |a: &OsString, b: &str| if cfg!(windows) { a.to_string_lossy().eq_ignore_ascii_case(b) } else { a == b };
    let lookup = |k: &str| server.iter().find(|(n, _)| same(n, k)).map(|(_, v)| v.to_string_lossy().into_owned());
    let mut env = server.to_vec();
    for (k, v) in &spec.env {
        let text = match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let value = OsString::from(safe_substitute(&text, &lookup));
        match env.iter_mut().find(|(n, _)| same(n, k)) {
            Some(slot) => slot.1 = value,
            None => env.push((k.into(), value)),
        }
    }
    if spec.language.to_lowercase().starts_with("python") {
        env.retain(|(n, _)| !same(n, "PYTHONEXECUTABLE"));
    }
    env
}

/// What a kernel's process gets, read from its merged environment ([`merged_env`]).
#[derive(Debug, Clone, Serialize)]
pub struct Gets {
    /// The loader's search variable read (`LD_LIBRARY_PATH`; `PATH` on Windows).
    pub search_var: String,
    /// The first folder on it that holds a cuDNN dispatcher the loader finds by name
    /// (`libcudnn.so.<N>`, `cudnn64_<N>.dll`), with that file's name.
    pub cudnn: Option<(PathBuf, String)>,
    /// The first folder on it that holds a CUDA runtime (`libcudart.so.<N>`, `cudart64_<N>.dll`).
    pub cuda_runtime: Option<(PathBuf, String)>,
    /// `CUDA_PATH`, `CUDA_HOME`, `CUDNN_PATH`, `CUDNN_HOME` ([`crate::env::view::SCALARS`]) and
    /// `CUENV_PROFILE`, as set (unset ones left out).
    pub vars: Vec<(String, String)>,
}

/// Reads [`Gets`] out of a merged environment, looking into the folders of its search variable.
pub fn what_it_gets(env: &[(OsString, OsString)]) -> Gets {
    use crate::cudnn::libname::{Os, loader_dispatcher_major};
    let (search_var, os) = if cfg!(windows) { ("PATH", Os::Windows) } else { ("LD_LIBRARY_PATH", Os::Linux) };
    let get = |k: &str| env.iter().find(|(n, _)| if cfg!(windows) { n.to_string_lossy().eq_ignore_ascii_case(k) } else { n == k }).map(|(_, v)| v.clone());
    let folders: Vec<PathBuf> = get(search_var).map(|v| std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect()).unwrap_or_default();
    let first = |is: &dyn Fn(&str) -> bool| {
        folders.iter().find_map(|d| {
            let mut names: Vec<String> = std::fs::read_dir(d).ok()?.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
            names.sort();
            names.into_iter().find(|n| is(n)).map(|n| (d.clone(), n))
        })
    };
    let cudnn = first(&|n| loader_dispatcher_major(n, os).is_some());
    let cuda_runtime = first(&|n| {
        let l = n.to_ascii_lowercase();
        match os {
            Os::Windows => l.starts_with("cudart64_") && l.ends_with(".dll"),
            Os::Linux => n.strip_prefix("libcudart.so.").is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())),
        }
    });
    let vars =
        crate::env::view::SCALARS.iter().chain(&["CUENV_PROFILE"]).filter_map(|k| get(k).map(|v| (k.to_string(), v.to_string_lossy().into_owned()))).collect();
    Gets { search_var: search_var.into(), cudnn, cuda_runtime, vars }
}

/// The interpreter a kernel runs: its `argv[0]`, except that jupyter_client replaces `python`,
/// `python3` and `python3.<minor>` (of its own version) with the server's `sys.executable`
/// (`KernelManager.format_kernel_cmd`); then `server_python` (when known) stands for it.
/// The second value says whether it was replaced.
pub fn interpreter(spec: &Spec, server_python: Option<&Path>) -> (Option<PathBuf>, bool) {
    let Some(a0) = spec.argv.first() else { return (None, false) };
    let bare = a0 == "python" || a0 == "python3" || a0.strip_prefix("python3.").is_some_and(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()));
    if bare {
        return (server_python.map(Path::to_path_buf), true);
    }
    (Some(PathBuf::from(a0)), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(text: &str) -> String {
        safe_substitute(text, &|k: &str| match k {
            "PATH" => Some("/usr/bin".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        })
    }

    #[test]
    fn safe_substitute_is_pythons() {
        // Each case checked with Python 3.11: string.Template(t).safe_substitute({'PATH': '/usr/bin', 'EMPTY': ''}).
        assert_eq!(sub("/a:${PATH}"), "/a:/usr/bin");
        assert_eq!(sub("$PATH/x"), "/usr/bin/x");
        assert_eq!(sub("${UNSET}:$UNSET"), "${UNSET}:$UNSET");
        assert_eq!(sub("$$PATH"), "$PATH");
        assert_eq!(sub("a$"), "a$");
        assert_eq!(sub("${PATH"), "${PATH");
        assert_eq!(sub("$1x ${1x}"), "$1x ${1x}");
        assert_eq!(sub("x${EMPTY}y"), "xy");
        assert_eq!(sub("$PATHS"), "$PATHS");
        assert_eq!(sub("zoë ${PATH}"), "zoë /usr/bin");
    }

    #[test]
    fn the_kernel_env_is_set_over_the_servers() {
        let mut s = read_spec("k".into(), PathBuf::from("/nonexistent"), None);
        s.language = "python".into();
        s.env.insert("LD_LIBRARY_PATH".into(), "/cudnn:${LD_LIBRARY_PATH}".into());
        s.env.insert("NEW".into(), "$HOME/x".into());
        let server: Vec<(OsString, OsString)> =
            vec![("LD_LIBRARY_PATH".into(), "/srv".into()), ("PYTHONEXECUTABLE".into(), "/p".into()), ("HOME".into(), "/h".into())];
        let m = merged_env(&server, &s);
        let get = |k: &str| m.iter().find(|(n, _)| n == k).map(|(_, v)| v.to_string_lossy().into_owned());
        assert_eq!(get("LD_LIBRARY_PATH").as_deref(), Some("/cudnn:/srv"));
        assert_eq!(get("NEW").as_deref(), Some("/h/x"));
        assert_eq!(get("PYTHONEXECUTABLE"), None);
    }

    #[test]
    fn a_bare_python_argv_is_the_servers() {
        let mut s = read_spec("k".into(), PathBuf::from("/nonexistent"), None);
        s.argv = vec!["python3".into(), "-m".into(), "ipykernel_launcher".into()];
        assert_eq!(interpreter(&s, Some(Path::new("/srv/python"))), (Some(PathBuf::from("/srv/python")), true));
        s.argv[0] = "/env/bin/python".into();
        assert_eq!(interpreter(&s, Some(Path::new("/srv/python"))), (Some(PathBuf::from("/env/bin/python")), false));
    }
}
