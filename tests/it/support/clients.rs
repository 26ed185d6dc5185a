//! Helpers for tests that drive real clients (shells, Lmod, direnv, Python packages): whether
//! one is installed, and reading back an environment dumped with `env -0`.

use std::collections::BTreeMap;
use std::process::Command;

/// An environment read back: name -> value.
pub type Env = BTreeMap<String, String>;

/// Whether `bin` is on PATH.
pub fn on_path(bin: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {bin}")).output().is_ok_and(|o| o.status.success())
}

/// `found`, after a note on stderr when it is false; with `CUENV_REQUIRE_SHELLS` set (.ci/run
/// installs every client) a missing client fails the test instead of skipping it.
pub fn have(what: &str, found: bool) -> bool {
    if !found {
        assert!(std::env::var_os("CUENV_REQUIRE_SHELLS").is_none(), "{what} is required (CUENV_REQUIRE_SHELLS) but not installed");
        super::skipped(format!("{what} is not installed: the cells that need it"));
    }
    found
}

/// [`have`] for a program on PATH (its Debian package has the same name).
pub fn have_bin(bin: &str) -> bool {
    have(&format!("{bin} (Debian: apt-get install {bin})"), on_path(bin))
}

/// The output of `env -0`, parsed (invalid UTF-8 shown with U+FFFD).
pub fn parse_env0(bytes: &[u8]) -> Env {
    String::from_utf8_lossy(bytes)
        .split('\0')
        .filter(|e| !e.is_empty())
        .map(|e| {
            let (k, v) = e.split_once('=').unwrap_or((e, ""));
            (k.to_string(), v.to_string())
        })
        .collect()
}
