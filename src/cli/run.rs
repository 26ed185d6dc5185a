//! `cuenv run [-p PROFILE] -- CMD [ARGS...]`: runs a command in a profile's environment,
//! without a shell. The environment is the one `check` computes for the profile
//! ([`profile_check::profile_env`]: the conda env's activation scripts when the profile
//! names one, else cuenv's own activation on top of this process's environment). On Unix the
//! command replaces this process (`exec`), so its exit code, signals and stdio are its own; on
//! Windows it is spawned with the environment block and its exit code is returned.

use std::ffi::OsString;

use super::Ctx;
use super::diagnostics::Report;
use crate::check::CheckStatus;
use crate::error::{ExitCode, Hinted};
use crate::generation::rollback::NoGeneration;
use crate::{generation, generation::profile_check, generation::status, profile::project};

/// The profile a command without `-p` means: the nearest `.cuenv-profile` from the current
/// folder upward, else the active profile. `Err` when neither names one.
pub fn default_profile(ctx: &Ctx) -> Result<(String, Option<std::path::PathBuf>), Report> {
    let cwd = std::env::current_dir().map_err(|e| crate::error::IoError::new("find the current folder", ".", e))?;
    if let Some(pin) = project::find(&cwd)? {
        return Ok((pin.profile, Some(pin.file)));
    }
    match status::active_profile(&ctx.layout) {
        Some((name, _)) => Ok((name, None)),
        None => Err(Hinted::new(
            format!("no profile given, no {} in {} or a folder above it, and no active profile", project::FILE_NAME, cwd.display()),
            format!("pass -p PROFILE, write a profile name into {}, or make one active with `cuenv use <profile>`", project::FILE_NAME),
            ExitCode::Invalid,
        )
        .into()),
    }
}

/// The profile `cuenv use` without a name means: the nearest `.cuenv-profile` (a global switch,
/// as `use` always is): the profile and the pin file that names it.
pub fn pinned_profile() -> Result<(String, std::path::PathBuf), Report> {
    let cwd = std::env::current_dir().map_err(|e| crate::error::IoError::new("find the current folder", ".", e))?;
    match project::find(&cwd)? {
        Some(pin) => Ok((pin.profile, pin.file)),
        None => Err(Hinted::new(
            format!("no profile given and no {} in {} or a folder above it", project::FILE_NAME, cwd.display()),
            format!("name the profile (`cuenv use <profile>`), write it into {}, or clear the active one with `cuenv use --none`", project::FILE_NAME),
            ExitCode::Invalid,
        )
        .into()),
    }
}

/// Runs `command` in `profile`'s environment. Returns only on failure to start it (Unix) or
/// with the child's exit code (Windows); see the module docs.
pub fn run(ctx: &Ctx, profile: Option<&str>, strict: bool, command: &[OsString]) -> Result<ExitCode, Report> {
    let (name, pin) = match profile {
        Some(p) => (p.to_string(), None),
        None => default_profile(ctx)?,
    };
    let cur = generation::current(&ctx.layout).ok_or(NoGeneration)?;
    let manifest = generation::read(&ctx.layout, cur)?;
    let view = match (manifest.profile(&name), &pin) {
        (Ok(v), _) => v.clone(),
        (Err(e), Some(file)) => {
            return Err(Hinted::new(
                format!("{} names profile {name}, but {e}", file.display()),
                format!("write one of the current generation's profiles into {}, or pass -p PROFILE", file.display()),
                ExitCode::Invalid,
            )
            .into());
        }
        (Err(e), None) => return Err(e.in_home(&ctx.layout).into()),
    };
    // The last check of this generation, if this profile failed it.
    let failed =
        profile_check::load(&ctx.layout, cur).and_then(|f| f.profiles.into_iter().find(|p| p.profile == name)).filter(|p| p.result.status == CheckStatus::Fail);
    if let Some(pc) = failed {
        let what = format!("profile {name} failed its last check ({})", profile_check::summary(&pc));
        if strict {
            return Err(Hinted::new(what, "fix the profile and run `cuenv check`, or run without --strict", ExitCode::CheckFailed).into());
        }
        if !ctx.quiet {
            writeln!(ctx.err(), "warning: {what}");
        }
    }
    let base: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let env = profile_check::profile_env(&ctx.layout, manifest.link_mode, &view, &base).map_err(|e| {
        let hint = if view.python_env.is_some() {
            "recreate the profile's python-env, or point `python-env` at the env you use and run `cuenv apply`"
        } else {
            "fix or remove the failing activation script of the conda env"
        };
        Hinted::new(e.to_string(), hint, ExitCode::Failure)
    })?;
    let (program, args) = command.split_first().expect("clap requires a command");
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).env_clear().envs(env);
    // An explicit run wins over an env hook of another profile (docs/decisions.md 5); a hook the
    // user turned off stays off.
    if !std::env::var(crate::pyenv::hook::VAR).is_ok_and(|v| crate::pyenv::hook::is_off(&v)) {
        cmd.env(crate::pyenv::hook::VAR, &name);
    }
    sys::run(ctx, cmd, program)
}

/// The program `run` was asked to start could not be started (`err`: why). `run` exits as a
/// shell does: 127 when it is not found, 126 when it cannot be run.
#[derive(Debug, thiserror::Error)]
#[error("cannot run {program}: {err}")]
struct CannotRun {
    program: String,
    err: std::io::Error,
}

impl crate::error::Diagnose for CannotRun {
    fn hint(&self) -> Option<String> {
        Some("check the command's name and that it is on the profile's PATH".into())
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::Failure
    }
}

impl CannotRun {
    /// Reports the failure on stderr and exits with the shell's code for it.
    fn exit(ctx: &Ctx, program: &std::ffi::OsStr, err: std::io::Error) -> ! {
        let code = if err.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
        ctx.report("error", &CannotRun { program: program.to_string_lossy().into_owned(), err });
        std::process::exit(code);
    }
}

#[cfg(unix)]
mod sys {
    use super::*;
    use std::os::unix::process::CommandExt;

    pub fn run(ctx: &Ctx, mut cmd: std::process::Command, program: &std::ffi::OsStr) -> Result<ExitCode, Report> {
        let _ = std::io::Write::flush(&mut std::io::stdout());
        let err = cmd.exec();
        CannotRun::exit(ctx, program, err)
    }
}

#[cfg(windows)]
mod sys {
    use super::*;

    pub fn run(ctx: &Ctx, mut cmd: std::process::Command, program: &std::ffi::OsStr) -> Result<ExitCode, Report> {
        let _ = std::io::Write::flush(&mut std::io::stdout());
        match cmd.status() {
            Ok(status) => std::process::exit(status.code().unwrap_or(1)),
            Err(err) => CannotRun::exit(ctx, program, err),
        }
    }
}
