//! Where toolkits are looked for (the platform's default locations, `CUDA_PATH*`,
//! `CUENV_TOOLKIT_PATHS`) and how the roots found are merged: one toolkit per canonical path,
//! found by every name that led to it. Never fails: bad roots are left out (named ones are
//! reported as skipped).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::env::nonempty;
use super::inspect::dir_entries;
use super::*;

/// One place to look at, and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The path as found.
    pub path: PathBuf,
    /// The `found_by` label.
    pub found_by: String,
    /// True when a variable named it (then a bad root is reported in [`Discovery::skipped`]).
    pub named: bool,
}

impl Candidate {
    fn new(path: impl Into<PathBuf>, found_by: &str, named: bool) -> Self {
        Candidate { path: path.into(), found_by: found_by.to_string(), named }
    }
}

/// The platform's default search locations, in order (see the module docs for the facts).
/// Windows: the `v*` folders under `%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA`,
/// `CUDA_PATH`, then every `CUDA_PATH_V<maj>_<min>` sorted by name. Linux:
/// `/usr/local/cuda-*` (sorted), `/usr/local/cuda`, `/opt/cuda`, `CUDA_HOME`, `CUDA_PATH`.
pub fn default_roots(env: &dyn Env) -> Vec<Candidate> {
    #[cfg(windows)]
    {
        default_roots_windows(env)
    }
    #[cfg(not(windows))]
    {
        default_roots_linux(env)
    }
}

/// The Windows default locations (not cfg-gated so it can be tested anywhere).
#[cfg_attr(not(windows), allow(dead_code))]
fn default_roots_windows(env: &dyn Env) -> Vec<Candidate> {
    let mut out = Vec::new();
    if let Some(pf) = nonempty(env.var("ProgramFiles")) {
        let base = PathBuf::from(pf).join("NVIDIA GPU Computing Toolkit").join("CUDA");
        for (name, path) in dir_entries(&base) {
            if name.starts_with(['v', 'V']) && path.is_dir() {
                out.push(Candidate::new(path, WINDOWS_GLOB_LABEL, false));
            }
        }
    }
    if let Some(p) = nonempty(env.var("CUDA_PATH")) {
        out.push(Candidate::new(p, "CUDA_PATH", true));
    }
    let mut versioned: Vec<(String, OsString)> = env.vars().into_iter().filter(|(k, v)| is_cuda_path_versioned(k) && !v.is_empty()).collect();
    versioned.sort_by_key(|(k, _)| k.to_ascii_uppercase());
    for (k, v) in versioned {
        out.push(Candidate::new(v, &k, true));
    }
    out
}

/// The Linux default locations (not cfg-gated so it can be tested anywhere).
#[cfg_attr(windows, allow(dead_code))]
fn default_roots_linux(env: &dyn Env) -> Vec<Candidate> {
    let mut out = Vec::new();
    if let Some(sys) = env.fixed_root() {
        let local = sys.join("usr").join("local");
        for (name, path) in dir_entries(&local) {
            if name.starts_with("cuda-") {
                out.push(Candidate::new(path, "/usr/local/cuda-*", false));
            }
        }
        out.push(Candidate::new(local.join("cuda"), "/usr/local/cuda", false));
        out.push(Candidate::new(sys.join("opt").join("cuda"), "/opt/cuda", false));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(p) = nonempty(env.var(var)) {
            out.push(Candidate::new(p, var, true));
        }
    }
    out
}

/// True for `CUDA_PATH_V<digits>_<digits>` (any case, as Windows variable names are).
fn is_cuda_path_versioned(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    let Some(rest) = upper.strip_prefix("CUDA_PATH_V") else { return false };
    let mut parts = rest.split('_');
    let digits = |s: Option<&str>| s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    digits(parts.next()) && digits(parts.next()) && parts.next().is_none()
}

/// The roots named by [`TOOLKIT_PATHS_VAR`] (`std::env::split_paths`; empty entries ignored).
fn extra_roots(env: &dyn Env) -> Vec<Candidate> {
    match nonempty(env.var(TOOLKIT_PATHS_VAR)) {
        Some(v) => std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).map(|p| Candidate::new(p, TOOLKIT_PATHS_VAR, true)).collect(),
        None => Vec::new(),
    }
}

/// Finds the CUDA toolkits in [`default_roots`] and [`TOOLKIT_PATHS_VAR`]: deduplicated by
/// canonical path (compared case-insensitively on Windows; a `/usr/local/cuda` link to
/// `/usr/local/cuda-12.6` is one toolkit found by two names), sorted by version (unknown
/// last) then root. Roots that are missing or are not toolkits are left out; see
/// [`discover_all`] for why. Never fails.
pub fn discover(env: &dyn Env) -> Vec<Toolkit> {
    discover_all(env).toolkits
}

/// Like [`discover`], and also reports the explicitly named roots (variables) that were
/// skipped, with the reason [`inspect_root`] gives.
pub fn discover_all(env: &dyn Env) -> Discovery {
    let mut candidates = default_roots(env);
    candidates.extend(extra_roots(env));
    discover_from(candidates)
}

/// Inspects the given candidates in order, merging those with the same canonical path.
pub fn discover_from(candidates: Vec<Candidate>) -> Discovery {
    enum Seen {
        Toolkit(usize),
        Skipped(Option<usize>),
    }
    let mut seen: HashMap<OsString, Seen> = HashMap::new();
    let mut out = Discovery::default();
    let skip = |out: &mut Discovery, c: &Candidate, reason: String| -> Option<usize> {
        c.named.then(|| {
            out.skipped.push(Skipped { path: c.path.clone(), found_by: vec![c.found_by.clone()], reason });
            out.skipped.len() - 1
        })
    };
    for c in candidates {
        let canonical = match crate::sys::paths::canonicalize(&c.path) {
            Ok(p) => p,
            Err(_) => {
                // Report with inspect_root's precise reason (missing, unreadable, ...).
                if c.named {
                    let reason = match inspect_root(&c.path) {
                        Err(e) => e.to_string(),
                        Ok(_) => "cannot resolve its path".to_string(),
                    };
                    skip(&mut out, &c, reason);
                }
                continue;
            }
        };
        let key = dedup_key(&canonical);
        match seen.get_mut(&key) {
            Some(Seen::Toolkit(i)) => {
                let t = &mut out.toolkits[*i];
                if !t.found_by.contains(&c.found_by) {
                    t.found_by.push(c.found_by.clone());
                }
            }
            Some(Seen::Skipped(slot)) => match slot {
                Some(i) => {
                    let s = &mut out.skipped[*i];
                    if !s.found_by.contains(&c.found_by) {
                        s.found_by.push(c.found_by.clone());
                    }
                }
                None => {
                    if c.named {
                        let reason = inspect_root(&c.path).err().map(|e| e.to_string()).unwrap_or_default();
                        *slot = skip(&mut out, &c, reason);
                    }
                }
            },
            None => match inspect_root(&c.path) {
                Ok(mut t) => {
                    t.found_by.push(c.found_by.clone());
                    out.toolkits.push(t);
                    seen.insert(key, Seen::Toolkit(out.toolkits.len() - 1));
                }
                Err(e) => {
                    let slot = skip(&mut out, &c, e.to_string());
                    seen.insert(key, Seen::Skipped(slot));
                }
            },
        }
    }
    out.toolkits.sort_by(|a, b| (a.version.is_none(), &a.version, &a.root).cmp(&(b.version.is_none(), &b.version, &b.root)));
    out
}

/// Two roots are one when their canonical paths compare equal ([`crate::sys::paths::key`]).
fn dedup_key(canonical: &Path) -> OsString {
    OsString::from(crate::sys::paths::key(canonical))
}

#[cfg(test)]
mod tests {
    use tempfile::TempDir;

    use super::*;
    use crate::toolkit::fixtures::*;

    #[cfg(unix)]
    #[test]
    fn symlinked_root_is_one_toolkit_found_by_several_names() {
        let sys = TempDir::new().unwrap();
        let real = sys.path().join("usr/local/cuda-12.6");
        linux_toolkit(&real, "12.6.2");
        std::os::unix::fs::symlink("cuda-12.6", sys.path().join("usr/local/cuda")).unwrap();
        let old = sys.path().join("usr/local/cuda-11.8");
        linux_toolkit(&old, "11.8.0");
        std::fs::create_dir_all(sys.path().join("usr/local/cuda-notes")).unwrap(); // not a toolkit: silently skipped
        let env = FakeEnv::new().with_fixed_root(sys.path()).set("CUDA_HOME", sys.path().join("usr/local/cuda"));
        let d = discover_all(&env);
        assert_eq!(d.toolkits.len(), 2, "{d:?}");
        assert!(d.skipped.is_empty(), "{d:?}");
        assert_eq!(d.toolkits[0].version, Some(v("11.8.0")));
        assert_eq!(d.toolkits[0].found_by, ["/usr/local/cuda-*"]);
        assert_eq!(d.toolkits[1].root, canon(&real));
        assert_eq!(d.toolkits[1].found_by, ["/usr/local/cuda-*", "/usr/local/cuda", "CUDA_HOME"]);
    }

    #[cfg(windows)]
    #[test]
    fn windows_roots_differing_in_case_are_one_toolkit() {
        let tmp = TempDir::new().unwrap();
        let tk = tmp.path().join("v12.6");
        write(&tk.join("version.json"), &version_json("12.6.2"));
        write(&tk.join("bin/cudart64_12.dll"), "fake");
        let upper = PathBuf::from(tk.to_string_lossy().to_uppercase());
        let env = FakeEnv::new().set("CUDA_PATH", &tk).set("cuda_path_v12_6", upper);
        let found = discover_from(default_roots_windows(&env));
        assert_eq!(found.toolkits.len(), 1, "{found:?}");
        assert_eq!(found.toolkits[0].found_by, ["CUDA_PATH", "cuda_path_v12_6"]);
    }

    #[test]
    fn toolkit_paths_variable_with_two_roots() {
        let (a, b) = (TempDir::new().unwrap(), TempDir::new().unwrap());
        let d = two_roots_by_paths_var(a.path(), b.path());
        let versions: Vec<String> = d.toolkits.iter().map(|t| t.version.as_ref().unwrap().to_string()).collect();
        assert_eq!(versions, ["11.8.0", "12.6.2"]);
        assert!(d.toolkits.iter().all(|t| t.found_by == [TOOLKIT_PATHS_VAR]));
        assert_eq!(d.skipped.len(), 1);
        assert_eq!(d.skipped[0].path, a.path().join("missing"));
        assert!(d.skipped[0].reason.contains("does not exist"), "{:?}", d.skipped);
        // Unset / empty variable: nothing.
        assert!(discover(&FakeEnv::new().set(TOOLKIT_PATHS_VAR, "")).is_empty());
    }

    #[test]
    fn windows_default_roots() {
        let pf = TempDir::new().unwrap();
        let cuda = pf.path().join("NVIDIA GPU Computing Toolkit/CUDA");
        for (dir, ver) in [("v11.8", "11.8.0"), ("v12.6", "12.6.2")] {
            write(&cuda.join(dir).join("version.json"), &version_json(ver));
            write(&cuda.join(dir).join("bin/cudart64_1.dll"), "fake");
        }
        let elsewhere = TempDir::new().unwrap();
        linux_toolkit(elsewhere.path(), "12.1.0");
        let env = FakeEnv::new()
            .set("ProgramFiles", pf.path())
            .set("CUDA_PATH", cuda.join("v12.6"))
            .set("CUDA_PATH_V12_6", cuda.join("v12.6"))
            .set("CUDA_PATH_V11_8", cuda.join("v11.8"))
            .set("CUDA_PATH_V12_1", elsewhere.path())
            .set("CUDA_PATH_VX_Y", "/ignored")
            .set("CUDA_PATH_V12_9", cuda.join("v12.9"));
        let cands = default_roots_windows(&env);
        assert_eq!(cands.iter().filter(|c| c.found_by == WINDOWS_GLOB_LABEL).count(), 2);
        assert!(!cands.iter().any(|c| c.found_by == "CUDA_PATH_VX_Y"));
        let d = discover_from(cands);
        let summary: Vec<(String, Vec<String>)> = d.toolkits.iter().map(|t| (t.version.as_ref().unwrap().to_string(), t.found_by.clone())).collect();
        assert_eq!(
            summary,
            [
                ("11.8.0".to_string(), vec![WINDOWS_GLOB_LABEL.to_string(), "CUDA_PATH_V11_8".into()]),
                ("12.1.0".to_string(), vec!["CUDA_PATH_V12_1".into()]),
                ("12.6.2".to_string(), vec![WINDOWS_GLOB_LABEL.to_string(), "CUDA_PATH".into(), "CUDA_PATH_V12_6".into()]),
            ]
        );
        assert_eq!(d.skipped.len(), 1);
        assert_eq!(d.skipped[0].found_by, ["CUDA_PATH_V12_9"]);
    }

    #[test]
    fn linux_default_roots_order_and_variables() {
        let env = FakeEnv::new().set("CUDA_HOME", "/a").set("CUDA_PATH", "/b").set("CUDA_PATH_V12_6", "/c");
        let labels: Vec<String> = default_roots_linux(&env).into_iter().map(|c| c.found_by).collect();
        assert_eq!(labels, ["CUDA_HOME", "CUDA_PATH"]);
        let sys = TempDir::new().unwrap();
        let labels: Vec<String> = default_roots_linux(&FakeEnv::new().with_fixed_root(sys.path())).into_iter().map(|c| c.found_by).collect();
        assert_eq!(labels, ["/usr/local/cuda", "/opt/cuda"]);
        assert!(discover_all(&FakeEnv::new().with_fixed_root(sys.path())).skipped.is_empty());
    }

    #[test]
    fn variable_names() {
        assert!(is_cuda_path_versioned("CUDA_PATH_V12_6"));
        assert!(is_cuda_path_versioned("cuda_path_v11_8"));
        assert!(!is_cuda_path_versioned("CUDA_PATH"));
        assert!(!is_cuda_path_versioned("CUDA_PATH_V12"));
        assert!(!is_cuda_path_versioned("CUDA_PATH_V12_6_1"));
        assert!(!is_cuda_path_versioned("CUDA_PATH_VX_Y"));
    }
}
