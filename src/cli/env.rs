//! `cuenv env [PROFILE] --shell SHELL` / `cuenv env --setup`: prints an activation.

use super::Ctx;
use super::diagnostics::Report;
use crate::apply::NoGeneration;
use crate::binfmt::Platform;
use crate::error::{ExitCode, Hinted};
use crate::shim::{self, Shell};
use crate::{generation, status, view};

/// Prints the activation of `profile` (default: the active one), or with `setup` the one
/// through `<home>/active` ([`view::setup_activation`]).
pub fn env(ctx: &Ctx, profile: Option<&str>, shell: Shell, setup: bool) -> Result<ExitCode, Report> {
    let platform = Platform::host().ok_or_else(|| Hinted::unsupported_platform("cuDNN is not built for this platform", "run cuenv on one of those"))?;
    let act = if setup {
        view::setup_activation(&ctx.layout, platform)
    } else {
        let name = match profile {
            Some(p) => p.to_string(),
            None => status::active_profile(&ctx.layout).map(|(name, _)| name).ok_or_else(|| {
                Hinted::new("no profile given and none is active", "pass a profile name, or make one active with `cuenv use <profile>`", ExitCode::Invalid)
            })?,
        };
        let cur = generation::current(&ctx.layout).ok_or(NoGeneration)?;
        generation::read(&ctx.layout, cur)?.profile(&name)?;
        let mut act = view::activation(&ctx.layout, &name, platform);
        // PATH gets a folder only where it exists (runtime roots from PyPI have no `bin`).
        act.path_prepend.retain(|p| p.is_dir());
        act
    };
    view::require_unicode(view::PathRole::Home, &view::stable_home(&ctx.layout))?;
    shim::validate(shell, &act).map_err(|e| Hinted::new(format!("cannot render the activation for this shell: {e}"), e.hint(), ExitCode::Failure))?;
    write!(ctx.out(), "{}", shim::render_activate(shell, &act));
    Ok(ExitCode::Success)
}

/// `cuenv env --hook SHELL`: prints the directory hook ([`shim::render_hook`]).
pub fn hook(ctx: &Ctx, shell: &str) -> Result<ExitCode, Report> {
    let exe = std::env::current_exe().map_err(|e| crate::error::IoError::new("find the path of", "cuenv", e))?;
    let home = view::stable_home(&ctx.layout);
    let text = shim::render_hook(shell, &exe, &home).expect("clap allows only shells with a hook");
    write!(ctx.out(), "{text}");
    Ok(ExitCode::Success)
}

/// `cuenv env --hook-apply --shell S`, run by the hook when the folder changed: prints the
/// HOOK-layer activation of the profile the nearest `.cuenv-profile` names, the deactivation
/// of the hook's profile when there is none (or it names no profile of the current
/// generation), or nothing when that profile is already in effect. Never fails: the shell
/// evaluates the output at every change of folder, so problems are one line on stderr.
pub fn hook_apply(ctx: &Ctx, shell: Shell) -> ExitCode {
    let current = std::env::var("CUENV_HOOK_PROFILE").ok().filter(|p| !p.is_empty());
    let platform = Platform::host().unwrap_or(crate::binfmt::Platform::LinuxX86_64);
    let layered = |name: &str| {
        let mut a = view::activation(&ctx.layout, name, platform);
        a.layer = shim::Layer::Hook;
        a.path_prepend.retain(|p| p.is_dir());
        a
    };
    let wanted = match std::env::current_dir().map(|d| crate::project::find(&d)) {
        Ok(Ok(Some(pin))) => {
            let known = generation::current(&ctx.layout).and_then(|n| generation::read(&ctx.layout, n).ok()).is_some_and(|m| m.profile(&pin.profile).is_ok());
            if known {
                Some(pin.profile)
            } else {
                writeln!(ctx.err(), "cuenv: {} names profile {}, which the current generation does not have", pin.file.display(), pin.profile);
                None
            }
        }
        Ok(Err(e)) => {
            writeln!(ctx.err(), "cuenv: {e}");
            None
        }
        _ => None,
    };
    let text = match (&wanted, &current) {
        (Some(w), Some(c)) if w == c => return ExitCode::Success,
        (Some(w), _) => {
            let a = layered(w);
            if shim::validate(shell, &a).is_err() {
                return ExitCode::Success;
            }
            shim::render_activate(shell, &a)
        }
        (None, Some(c)) => {
            let a = layered(c);
            if shim::validate(shell, &a).is_err() {
                return ExitCode::Success;
            }
            shim::render_deactivate(shell, &a)
        }
        (None, None) => return ExitCode::Success,
    };
    write!(ctx.out(), "{text}");
    ExitCode::Success
}
