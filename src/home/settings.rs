//! The `CUENV_*` settings that hold a number or a switch: their names, defaults, the values
//! they accept, and the error a malformed value is.
//!
//! Invariant: a set but malformed value is an error naming the variable and the value
//! ([`SettingError`], exit 2), never a silent default; an unset or empty variable means the
//! default. The CLI checks them all ([`validate_all`]) before a command reads or writes
//! anything, so a bad setting stops every command the same way. Path and URL variables
//! (`CUENV_HOME`, `CUENV_TOOLKIT_PATHS`, `CUENV_PYPI_INDEX`, ...) are read where they are used.
//!
//! Every `CUENV_*` variable cuenv reads has its name here, once, as a constant; the code
//! names the constant, not the text.

use crate::error::{Diagnose, ExitCode};

/// Seconds a writer waits for another cuenv's lock.
pub const LOCK_TIMEOUT: Setting = Setting { var: "CUENV_LOCK_TIMEOUT", default: 300, min: 0, max: u64::MAX, unit: "a whole number of seconds" };
/// Seconds each HTTP step (resolve, connect, response, read) may take.
pub const HTTP_TIMEOUT: Setting = Setting { var: "CUENV_HTTP_TIMEOUT", default: 30, min: 1, max: u64::MAX, unit: "a whole number of seconds, at least 1" };
/// More attempts after a failed download.
pub const HTTP_RETRIES: Setting = Setting { var: "CUENV_HTTP_RETRIES", default: 3, min: 0, max: 10, unit: "a whole number from 0 to 10" };
/// The variable that keeps cuenv off the network.
pub const OFFLINE_VAR: &str = "CUENV_OFFLINE";
/// The cuenv home folder, when `--home` is not given.
pub const HOME_VAR: &str = "CUENV_HOME";
/// The profile in effect: set by the shims, `cuenv env` and `cuenv export`, and for the check's
/// child; read by `doctor`.
pub const PROFILE_VAR: &str = "CUENV_PROFILE";
/// The profile the shell hook put in effect (the hook layer's `PROFILE` state variable, see
/// `shim::Layer::prefix`).
pub const HOOK_PROFILE_VAR: &str = "CUENV_HOOK_PROFILE";
/// Extra CUDA toolkit roots, separated like `PATH` (`:` on Linux, `;` on Windows).
pub const TOOLKIT_PATHS_VAR: &str = "CUENV_TOOLKIT_PATHS";
/// The PyPI base URL (its JSON API is under `<index>/pypi/...`).
pub const PYPI_INDEX_VAR: &str = "CUENV_PYPI_INDEX";
/// The redist folder holding NVIDIA's `redistrib_<version>.json` (a mirror of NVIDIA's).
pub const NVIDIA_MIRROR_VAR: &str = "CUENV_NVIDIA_MIRROR";
/// A local folder of wheels asked before the PyPI index.
pub const FIND_LINKS_VAR: &str = "CUENV_FIND_LINKS";
/// The variable that stands for the driver's CUDA version (`major.minor`).
pub const OVERRIDE_DRIVER_CUDA: &str = "CUENV_OVERRIDE_DRIVER_CUDA";
/// The variable that stands for every GPU's compute capability (`major.minor`).
pub const OVERRIDE_COMPUTE_CAPABILITY: &str = "CUENV_OVERRIDE_COMPUTE_CAPABILITY";
/// Debug builds: a lower cap, in bytes, on what an archive may expand to, so tests need not
/// write gigabytes.
pub const TEST_MAX_EXPANSION_VAR: &str = "CUENV_TEST_MAX_EXPANSION";
// The test hooks of the fault points (debug builds) are read in `sys`, below `home`, and
// named there.
pub use crate::sys::fsutil::{TEST_ABORT_AT_VAR, TEST_FAIL_AT_VAR};

/// A variable holding a whole number in `min..=max`.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The variable's name.
    pub var: &'static str,
    /// The value when unset or empty.
    pub default: u64,
    /// The smallest value accepted.
    pub min: u64,
    /// The largest value accepted.
    pub max: u64,
    /// What the value must be, for the message.
    pub unit: &'static str,
}

/// A `CUENV_*` variable set to a value cuenv cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{var} is set to `{value}`, which is not {expected}")]
pub struct SettingError {
    /// The variable.
    pub var: &'static str,
    /// Its value as set (lossy UTF-8).
    pub value: String,
    /// What it must be.
    pub expected: &'static str,
    /// What unsetting it means.
    pub default: String,
}

impl Diagnose for SettingError {
    fn hint(&self) -> Option<String> {
        Some(format!("set {} to {}, or unset it for the default ({})", self.var, self.expected, self.default))
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::Invalid
    }
}

/// The variable's value; `None` when unset or empty (blank).
fn raw(var: &str) -> Option<String> {
    let v = std::env::var_os(var)?;
    let v = v.to_string_lossy().into_owned();
    (!v.trim().is_empty()).then_some(v)
}

impl Setting {
    /// The value in effect: the variable's, else the default.
    pub fn get(&self) -> Result<u64, SettingError> {
        let Some(v) = raw(self.var) else { return Ok(self.default) };
        match v.trim().parse::<u64>() {
            Ok(n) if (self.min..=self.max).contains(&n) => Ok(n),
            _ => Err(SettingError { var: self.var, value: v, expected: self.unit, default: self.default.to_string() }),
        }
    }
}

/// `CUENV_OFFLINE`: `1`, `true`, `yes`, `on` turn it on; `0`, `false`, `no`, `off` (or
/// unset, or empty) leave it off; any case.
pub fn offline() -> Result<bool, SettingError> {
    let Some(v) = raw(OFFLINE_VAR) else { return Ok(false) };
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(SettingError { var: OFFLINE_VAR, value: v, expected: "one of 1, true, yes, on, 0, false, no, off", default: "off".into() }),
    }
}

/// Checks every setting this module knows; the first malformed one is the error.
pub fn validate_all() -> Result<(), SettingError> {
    for s in [LOCK_TIMEOUT, HTTP_TIMEOUT, HTTP_RETRIES] {
        s.get()?;
    }
    offline().map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_names_the_variable_the_value_and_the_default() {
        let e = SettingError { var: "CUENV_LOCK_TIMEOUT", value: "abc".into(), expected: LOCK_TIMEOUT.unit, default: "300".into() };
        assert_eq!(e.to_string(), "CUENV_LOCK_TIMEOUT is set to `abc`, which is not a whole number of seconds");
        assert_eq!(e.hint().unwrap(), "set CUENV_LOCK_TIMEOUT to a whole number of seconds, or unset it for the default (300)");
        assert_eq!(e.exit_code(), ExitCode::Invalid);
    }
}
