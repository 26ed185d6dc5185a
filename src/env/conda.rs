//! Finding a conda environment's prefix from a name or a path, the way conda does.
//!
//! Names are looked up in conda's envs directories: `CONDA_ENVS_PATH` / `CONDA_ENVS_DIRS`
//! (path lists), `<root prefix>/envs` for the root prefixes named by `CONDA_ROOT`,
//! `MAMBA_ROOT_PREFIX`, `CONDA_PREFIX` (the root of the env the shell is in), `CONDA_EXE`
//! (two folders up), `envs_dirs` in `~/.condarc`, then `~/.conda/envs`, and the
//! paths listed in `~/.conda/environments.txt`. `base` is the root prefix itself.
//! A prefix is a folder holding `conda-meta/` (created by conda for every env).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Where the lookup looked, for the error message.
#[derive(Debug)]
pub struct NotFound {
    /// Folders searched for a name, or the path that does not exist.
    pub searched: Vec<PathBuf>,
    /// Env names that do exist there (for a "did you mean").
    pub known: Vec<String>,
}

/// True when `value` is written as a path (contains a separator, or starts with `~` or `.`).
pub fn is_path(value: &str) -> bool {
    value.contains('/') || value.contains('\\') || value.starts_with('~') || value.starts_with('.') || value.as_bytes().get(1) == Some(&b':')
}

/// Resolves an env name or path to its prefix. `env` reads environment variables
/// (injected for tests); `home` is the user's home folder.
pub fn resolve(value: &str, base_dir: &Path, env: &dyn Fn(&str) -> Option<OsString>, home: Option<&Path>) -> Result<PathBuf, NotFound> {
    if is_path(value) {
        let p = match (value.strip_prefix("~/").or(value.strip_prefix("~\\")), home) {
            (Some(rest), Some(h)) => h.join(rest),
            _ => base_dir.join(value),
        };
        // A folder without `conda-meta/` is not a conda env (conda would not activate it, and
        // shims written into its `etc/conda` would never run).
        return if p.join("conda-meta").is_dir() { Ok(std::path::absolute(&p).unwrap_or(p)) } else { Err(NotFound { searched: vec![p], known: Vec::new() }) };
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    for var in ["CONDA_ROOT", "MAMBA_ROOT_PREFIX"] {
        if let Some(v) = env(var) {
            roots.push(PathBuf::from(v));
        }
    }
    // The root of the env the shell is in, when it is a named env: `<root>/envs/<name>`.
    if let Some(prefix) = env("CONDA_PREFIX").map(PathBuf::from)
        && let Some(envs) = prefix.parent().filter(|p| p.file_name().is_some_and(|n| n == "envs"))
    {
        roots.extend(envs.parent().map(Path::to_path_buf));
    }
    if let Some(exe) = env("CONDA_EXE")
        && let Some(root) = Path::new(&exe).parent().and_then(Path::parent)
    {
        roots.push(root.to_path_buf());
    }
    if value == "base"
        && let Some(r) = roots.iter().find(|r| r.join("conda-meta").is_dir())
    {
        return Ok(r.clone());
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    for var in ["CONDA_ENVS_PATH", "CONDA_ENVS_DIRS"] {
        if let Some(v) = env(var) {
            dirs.extend(std::env::split_paths(&v));
        }
    }
    if let Some(h) = home {
        dirs.extend(condarc_envs_dirs(&h.join(".condarc"), h));
    }
    dirs.extend(roots.iter().map(|r| r.join("envs")));
    if let Some(h) = home {
        dirs.push(h.join(".conda").join("envs"));
    }
    let mut known = Vec::new();
    for d in &dirs {
        let cand = d.join(value);
        if cand.join("conda-meta").is_dir() {
            return Ok(cand);
        }
        if let Ok(rd) = std::fs::read_dir(d) {
            known.extend(rd.flatten().filter(|e| e.path().join("conda-meta").is_dir()).map(|e| e.file_name().to_string_lossy().into_owned()));
        }
    }
    if let Some(h) = home
        && let Ok(text) = std::fs::read_to_string(h.join(".conda").join("environments.txt"))
    {
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let p = PathBuf::from(line);
            if p.file_name().is_some_and(|n| n == value) && p.join("conda-meta").is_dir() {
                return Ok(p);
            }
        }
    }
    known.sort();
    known.dedup();
    Err(NotFound { searched: dirs, known })
}

/// The `envs_dirs:` list of a `.condarc` file (conda's YAML; only the block-list form
/// `envs_dirs:` + `  - path` lines and the flow form `envs_dirs: [a, b]` are read, `~` expanded
/// against `home`). A missing or unreadable file gives nothing.
fn condarc_envs_dirs(file: &Path, home: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(file) else { return Vec::new() };
    let unquote = |v: &str| v.trim().trim_matches(|c| c == '"' || c == '\'').to_string();
    let expand = |v: String| match v.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(v),
    };
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("envs_dirs:") else { continue };
        let rest = rest.split(" #").next().unwrap_or("").trim();
        if let Some(flow) = rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            out.extend(flow.split(',').map(unquote).filter(|v| !v.is_empty()).map(expand));
        }
        while let Some(next) = lines.peek() {
            let t = next.trim_start();
            match t.strip_prefix("- ") {
                Some(item) if next.starts_with(char::is_whitespace) || next.starts_with('-') => {
                    out.push(expand(unquote(item.split(" #").next().unwrap_or(""))));
                    lines.next();
                }
                _ if t.is_empty() || t.starts_with('#') => {
                    lines.next();
                }
                _ => break,
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        let dir = tempfile::tempdir().unwrap();
        let envs = dir.path().join("envs");
        std::fs::create_dir_all(envs.join("tf28/conda-meta")).unwrap();
        let vars = envs.clone().into_os_string();
        let env = move |k: &str| (k == "CONDA_ENVS_PATH").then(|| vars.clone());
        assert_eq!(resolve("tf28", dir.path(), &env, None).unwrap(), envs.join("tf28"));
        let err = resolve("tf29", dir.path(), &env, None).unwrap_err();
        assert_eq!(err.known, vec!["tf28".to_string()]);
        assert!(resolve("./envs/tf28", dir.path(), &env, None).is_ok());
        assert!(resolve("./envs/nope", dir.path(), &env, None).is_err());
        assert!(is_path(r"D:\envs\torch2") && !is_path("torch2"));
    }

    /// A name is found the way conda finds it, also through the root of the env the
    /// shell is in (`CONDA_PREFIX`) and `envs_dirs` in `~/.condarc`.
    #[test]
    fn names_through_conda_prefix_and_condarc() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("miniforge3");
        std::fs::create_dir_all(root.join("envs/tf28/conda-meta")).unwrap();
        std::fs::create_dir_all(root.join("envs/torch/conda-meta")).unwrap();
        let torch = root.join("envs/torch").into_os_string();
        let env = move |k: &str| (k == "CONDA_PREFIX").then(|| torch.clone());
        assert_eq!(resolve("tf28", dir.path(), &env, None).unwrap(), root.join("envs/tf28"));
        let none = |_: &str| None;
        assert!(resolve("tf28", dir.path(), &none, None).is_err());

        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("my envs/jax/conda-meta")).unwrap();
        std::fs::write(home.join(".condarc"), "channels:\n  - conda-forge\nenvs_dirs:\n  - ~/my envs   # mine\n  - /nowhere\nauto_activate_base: false\n")
            .unwrap();
        assert_eq!(resolve("jax", dir.path(), &none, Some(&home)).unwrap(), home.join("my envs/jax"));
        std::fs::write(home.join(".condarc"), "envs_dirs: ['/nowhere', \"~/my envs\"]\n").unwrap();
        assert_eq!(resolve("jax", dir.path(), &none, Some(&home)).unwrap(), home.join("my envs/jax"));
    }
}
