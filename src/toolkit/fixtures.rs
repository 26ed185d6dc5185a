//! Test fixtures for toolkit discovery: an environment given as data ([`FakeEnv`]) and
//! toolkit folders written to temporary directories. Test builds only.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use super::Env;
use crate::cudnn::version::Version;

/// An environment given as data, for tests: variables (looked up by exact name, or
/// case-insensitively on Windows) and an optional fixed root (default `None`: the fixed
/// Linux locations are not searched).
#[derive(Debug, Clone, Default)]
pub(crate) struct FakeEnv {
    /// The variables, in order.
    pub(crate) vars: Vec<(String, OsString)>,
    /// See [`Env::fixed_root`].
    pub(crate) fixed_root: Option<PathBuf>,
}

impl FakeEnv {
    /// An empty environment with no fixed root.
    pub(crate) fn new() -> Self {
        Self::default()
    }
    /// Adds (or replaces) a variable.
    pub(crate) fn set(mut self, name: &str, value: impl Into<OsString>) -> Self {
        self.vars.retain(|(k, _)| !same_var_name(k, name));
        self.vars.push((name.to_string(), value.into()));
        self
    }
    /// Sets the fixed root (see [`Env::fixed_root`]).
    pub(crate) fn with_fixed_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.fixed_root = Some(root.into());
        self
    }
}

impl Env for FakeEnv {
    fn var(&self, name: &str) -> Option<OsString> {
        self.vars.iter().find(|(k, _)| same_var_name(k, name)).map(|(_, v)| v.clone())
    }
    fn vars(&self) -> Vec<(String, OsString)> {
        self.vars.clone()
    }
    fn fixed_root(&self) -> Option<PathBuf> {
        self.fixed_root.clone()
    }
}

pub(crate) fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

pub(crate) fn version_json(v: &str) -> String {
    format!(
        r#"{{"cuda": {{"name": "CUDA SDK", "version": "{v}"}},
            "cuda_cudart": {{"name": "CUDA Runtime (cudart)", "version": "{v}"}}}}"#
    )
}

/// A Linux-layout toolkit with version.json and lib64/libcudart.so.<major>.
pub(crate) fn linux_toolkit(dir: &Path, v: &str) {
    write(&dir.join("version.json"), &version_json(v));
    let major = v.split('.').next().unwrap();
    write(&dir.join("lib64").join(format!("libcudart.so.{major}")), "fake");
}

pub(crate) fn v(s: &str) -> Version {
    s.parse().unwrap()
}

pub(crate) fn canon(p: &Path) -> PathBuf {
    crate::sys::paths::shown(&fs::canonicalize(p).unwrap())
}

/// Whether two variable names are the same (without regard to case on Windows, as the OS does).
fn same_var_name(a: &str, b: &str) -> bool {
    if cfg!(windows) { a.eq_ignore_ascii_case(b) } else { a == b }
}

/// A Linux toolkit root 12.6.2 in `dir` with cuDNN 8.9.4 copied in by hand (dispatcher,
/// its soname link name, one sub-library), found through `CUENV_TOOLKIT_PATHS`.
pub(crate) fn toolkit_with_hand_copied_cudnn8(dir: &Path) -> super::Toolkit {
    linux_toolkit(dir, "12.6.2");
    write(&dir.join("lib64/libcudnn.so.8.9.4"), "fake");
    write(&dir.join("lib64/libcudnn.so.8"), "fake");
    write(&dir.join("lib64/libcudnn_ops_infer.so.8"), "fake");
    let mut t = super::inspect_root(dir).unwrap();
    t.found_by.push(crate::home::settings::TOOLKIT_PATHS_VAR.into());
    t
}

/// Two toolkit roots (12.6.2 in `a`, 11.8.0 in `b`) named by `CUENV_TOOLKIT_PATHS` together
/// with a missing folder and `a` a second time; returns what discovery finds.
pub(crate) fn two_roots_by_paths_var(a: &Path, b: &Path) -> super::Discovery {
    linux_toolkit(a, "12.6.2");
    linux_toolkit(b, "11.8.0");
    let missing = a.join("missing");
    let paths = std::env::join_paths([a, b, missing.as_path(), a]).unwrap();
    super::discover_all(&FakeEnv::new().set(crate::home::settings::TOOLKIT_PATHS_VAR, paths))
}
