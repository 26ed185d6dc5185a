//! Whole-output snapshots of a cuenv command, as uv's `uv_snapshot!` takes them
//! (`crates/uv/tests/it/common/mod.rs`): the exit code, stdout and stderr in one text,
//!
//! ```text
//! success: true
//! exit_code: 0
//! ----- stdout -----
//! ...
//! ----- stderr -----
//! ...
//! ```
//!
//! matched against an insta snapshot after filters that hide what differs between machines
//! and runs (the temporary folder, the cuenv binary's path, content hashes of fixtures built with the local gcc, sizes,
//! times, dates, process ids). Use through [`cuenv_snapshot!`].

use std::process::Command;

use super::TestContext;

/// Runs `cmd` and renders its outcome in the layout of the module doc. Panics when the
/// command cannot be started.
pub fn render(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let code = out.status.code().map_or_else(|| format!("{:?}", out.status), |c| c.to_string());
    format!(
        "success: {}\nexit_code: {code}\n----- stdout -----\n{}\n----- stderr -----\n{}",
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n"),
        String::from_utf8_lossy(&out.stderr).replace("\r\n", "\n"),
    )
}

impl TestContext {
    /// The cuenv binary in a closed environment, for snapshots: nothing from the outer
    /// environment but `PATH`; `HOME`, the XDG folders and Jupyter's data folder inside the
    /// work folder; toolkit discovery limited to `CUENV_TOOLKIT_PATHS` (empty: none until the
    /// caller sets it); offline. No `--quiet`: the snapshot is what a user sees.
    pub fn snap_cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
        let user = self.path("user-home");
        std::fs::create_dir_all(&user).unwrap();
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &user)
            .env("XDG_DATA_HOME", user.join(".local/share"))
            .env("XDG_CACHE_HOME", user.join(".cache"))
            .env("XDG_CONFIG_HOME", user.join(".config"))
            .env("JUPYTER_DATA_DIR", user.join("jupyter"))
            .env("CUENV_HOME", &self.home)
            .env("CUENV_TOOLKIT_PATHS", "")
            .env("CUDA_HOME", "")
            .env("CUDA_PATH", "")
            .env("CUENV_OFFLINE", "1")
            .env("LANG", "C.UTF-8")
            .current_dir(&self.work);
        if cfg!(windows) {
            for k in ["SYSTEMROOT", "WINDIR", "TEMP", "TMP", "LOCALAPPDATA", "APPDATA", "USERPROFILE"] {
                if let Some(v) = std::env::var_os(k) {
                    c.env(k, v);
                }
            }
        }
        c
    }

    /// [`TestContext::snapshot_settings`] plus the filters of the module doc.
    pub fn cli_snapshot_settings(&self) -> insta::Settings {
        let mut s = self.snapshot_settings();
        // The binary's own path (e.g. in `env --hook`'s script) depends on the target folder.
        s.add_filter(&regex::escape(env!("CARGO_BIN_EXE_cuenv")), "[CUENV]");
        // Entry names end in a content hash of the fixture's bytes (gcc-built stubs differ
        // between machines); SHA-256 digests likewise.
        s.add_filter(r"\b[0-9a-f]{12,64}\b", "[HASH]");
        // Whether this machine has an NVIDIA driver: a check's `no driver` reason is left out.
        s.add_filter(r"(?m)^    no driver: .*\n", "");
        // A size's digits vary, and so would the padding of its table column: one space is kept.
        s.add_filter(r" *\b\d+(\.\d+)? ?(B|bytes|KiB|MiB|GiB|kB|MB|GB)\b", " [SIZE]");
        s.add_filter(r"\b\d+(\.\d+)? ?(ns|µs|us|ms|s)\b", "[TIME]");
        s.add_filter(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?( ?UTC|Z|[+-]\d{2}:?\d{2})?", "[DATE]");
        s
    }
}

/// Asserts that `$cmd`'s whole outcome ([`render`]) in the [`TestContext`] `$ctx` matches the
/// insta snapshot `$name` (`tests/it/snapshots/`), with [`TestContext::cli_snapshot_settings`].
/// Extra filters may follow as `(regex, replacement)` pairs.
macro_rules! cuenv_snapshot {
    ($ctx:expr, $name:expr, $cmd:expr $(, ($re:expr, $to:expr))* $(,)?) => {{
        let text = $crate::support::snapshot::render(&mut $cmd);
        #[allow(unused_mut)]
        let mut settings = $ctx.cli_snapshot_settings();
        $(settings.add_filter($re, $to);)*
        settings.bind(|| insta::assert_snapshot!($name, text));
    }};
}
pub(crate) use cuenv_snapshot;
