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
