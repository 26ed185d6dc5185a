//! The environment toolkit discovery reads: variables and the folder the fixed Linux locations
//! are resolved against, behind a trait so that tests can give their own.

use std::ffi::OsString;
use std::path::PathBuf;

/// What discovery reads from its surroundings, so that tests can fake it.
pub trait Env {
    /// The value of one environment variable (case-insensitive names on Windows).
    fn var(&self, name: &str) -> Option<OsString>;
    /// All environment variables whose names are valid UTF-8 (for `CUDA_PATH_V<maj>_<min>`).
    fn vars(&self) -> Vec<(String, OsString)>;
    /// The folder the fixed Linux locations (`/usr/local/cuda-*`, `/usr/local/cuda`,
    /// `/opt/cuda`) are resolved against: `/` for the real system, a temporary folder in
    /// tests, `None` to skip them. Not used on Windows (its default location comes from
    /// `%ProgramFiles%`, which is a variable).
    fn fixed_root(&self) -> Option<PathBuf>;
}

/// The real process environment and file system (`/` as the fixed root).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<OsString> {
        std::env::var_os(name)
    }
    fn vars(&self) -> Vec<(String, OsString)> {
        std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v))).collect()
    }
    fn fixed_root(&self) -> Option<PathBuf> {
        Some(PathBuf::from("/"))
    }
}

pub(super) fn nonempty(v: Option<OsString>) -> Option<OsString> {
    v.filter(|v| !v.is_empty())
}
