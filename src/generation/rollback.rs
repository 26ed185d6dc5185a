//! `rollback [--to N]`: which generation becomes current again, and the switch to it. The
//! target rule itself ([`generation::rollback_target`]: skip generations whose check
//! failed, unless named) is the generation module's; this file adds the reads and the
//! switch. Not part of the apply pipeline; calls only the domain below it.

use crate::generation::profile_check;
use crate::generation::{self, RollbackTarget};
use crate::home::layout::Layout;

/// There is no generation yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no generation yet")]
pub struct NoGeneration;

impl crate::error::Diagnose for NoGeneration {
    fn hint(&self) -> Option<String> {
        Some("run `cuenv apply <lab.toml>` first".into())
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        crate::error::ExitCode::Invalid
    }
}

/// How a rollback ended.
#[derive(Debug)]
pub struct Rollback {
    /// The generation current before.
    pub from: u64,
    /// Where it went, and what it skipped.
    pub to: RollbackTarget,
    /// False when the target was already current.
    pub switched: bool,
}

/// True when generation `n` was checked and a check failed.
pub fn check_failed(layout: &Layout, n: u64) -> bool {
    profile_check::load(layout, n).is_some_and(|c| !profile_check::acceptable(&c.profiles, false))
}

/// `rollback [--to N]`: makes [`generation::rollback_target`] current. `warn` hears that a
/// named target failed its check (before it is switched to).
pub fn rollback(layout: &Layout, to: Option<u64>, warn: &mut dyn FnMut(&str)) -> Result<Rollback, RollbackError> {
    let cur = generation::current(layout).ok_or(NoGeneration)?;
    let target = generation::rollback_target(&generation::list(layout), cur, to, &mut |n| check_failed(layout, n))?;
    if target.target_failed {
        warn(&format!("warning: generation {}'s last check failed (`cuenv check` after the switch shows why)", target.target));
    }
    generation::read(layout, target.target)?;
    let switched = target.target != cur;
    if switched {
        generation::switch(layout, target.target, generation::SwitchOp::Rollback)?;
    }
    Ok(Rollback { from: cur, to: target, switched })
}

/// Why a rollback failed.
#[derive(Debug, thiserror::Error)]
pub enum RollbackError {
    /// There is no generation.
    #[error(transparent)]
    NoGeneration(#[from] NoGeneration),
    /// No older generation passed its check.
    #[error(transparent)]
    Nothing(#[from] generation::NothingToRollBackTo),
    /// Reading or switching failed.
    #[error(transparent)]
    Generation(#[from] generation::Error),
}

impl crate::error::Diagnose for RollbackError {
    fn hint(&self) -> Option<String> {
        match self {
            RollbackError::NoGeneration(e) => e.hint(),
            RollbackError::Nothing(e) => e.hint(),
            RollbackError::Generation(e) => e.hint(),
        }
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        match self {
            RollbackError::NoGeneration(e) => e.exit_code(),
            RollbackError::Nothing(e) => e.exit_code(),
            RollbackError::Generation(e) => e.exit_code(),
        }
    }
}
