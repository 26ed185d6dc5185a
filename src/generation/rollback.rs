//! `rollback [--to N]`: which generation becomes current again, and the switch to it. The
//! target rule itself ([`generation::rollback_target`]: skip generations whose check
//! failed, unless named) is the generation module's; this file adds the reads and the
//! switch. Not part of the apply pipeline; calls only the domain below it.

use crate::generation;
use crate::generation::profile_check;
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

crate::error::diagnose!(impl Diagnose for RollbackError { transparent NoGeneration, Nothing, Generation; });
/// Where `rollback` goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollbackTarget {
    /// The generation to make current.
    pub target: u64,
    /// Newer generations passed over because their check failed (newest first).
    pub skipped: Vec<u64>,
    /// `--to N` named a generation whose check failed (it is still the target).
    pub target_failed: bool,
}

/// No generation older than the current one passed its check, or none is older at all
/// (`older` is 0): the message says which.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{}; there is nothing to roll back to",
    if *older == 0 { format!("no generation is older than {current}") } else { format!("no generation older than {current} passed its check") }
)]
pub struct NothingToRollBackTo {
    /// The current generation.
    pub current: u64,
    /// How many generations are older than `current` (every one failed its check).
    pub older: usize,
}

impl crate::error::Diagnose for NothingToRollBackTo {
    fn hint(&self) -> Option<String> {
        Some("`cuenv generations` lists them; `cuenv rollback --to N` goes to any of them".into())
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        crate::error::ExitCode::Invalid
    }
}

/// The generation `rollback` makes current: `to` if given (even one whose check failed, which
/// is flagged), else, like `nix-env --rollback`, the newest of `all` older than `current`, so
/// repeated rollbacks keep walking back, skipping those whose check `failed` (`apply` built
/// them, then kept the previous generation). `failed` is asked at most once per generation,
/// newest first. Pure.
pub fn rollback_target(all: &[u64], current: u64, to: Option<u64>, failed: &mut dyn FnMut(u64) -> bool) -> Result<RollbackTarget, NothingToRollBackTo> {
    if let Some(n) = to {
        return Ok(RollbackTarget { target: n, skipped: Vec::new(), target_failed: failed(n) });
    }
    let mut skipped = Vec::new();
    for &n in all.iter().filter(|n| **n < current).rev() {
        if !failed(n) {
            return Ok(RollbackTarget { target: n, skipped, target_failed: false });
        }
        skipped.push(n);
    }
    Err(NothingToRollBackTo { current, older: skipped.len() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollback_walks_back_past_failed_checks() {
        let mut asked = Vec::new();
        let t = rollback_target(&[1, 2, 3, 4, 5], 5, None, &mut |n| {
            asked.push(n);
            n == 4 || n == 3
        })
        .unwrap();
        assert_eq!(t, RollbackTarget { target: 2, skipped: vec![4, 3], target_failed: false });
        assert_eq!(asked, [4, 3, 2], "newest first, each once, none after the target");
        // From generation 3 of 5 (after a rollback): the walk continues below 3.
        assert_eq!(rollback_target(&[1, 2, 3, 4, 5], 3, None, &mut |_| false).unwrap().target, 2);
        assert_eq!(rollback_target(&[1, 2], 1, None, &mut |_| false), Err(NothingToRollBackTo { current: 1, older: 0 }));
        assert_eq!(rollback_target(&[1, 2, 3], 3, None, &mut |_| true), Err(NothingToRollBackTo { current: 3, older: 2 }));
    }

    #[test]
    fn rollback_to_a_named_generation_goes_there_but_flags_a_failed_check() {
        let t = rollback_target(&[1, 2, 3], 1, Some(3), &mut |n| n == 3).unwrap();
        assert_eq!(t, RollbackTarget { target: 3, skipped: vec![], target_failed: true });
    }

    #[test]
    fn nothing_to_roll_back_to_says_what_to_do() {
        use crate::error::Diagnose as _;
        let e = NothingToRollBackTo { current: 4, older: 3 };
        assert_eq!(e.to_string(), "no generation older than 4 passed its check; there is nothing to roll back to");
        // No older generation at all is said as such, not as a failed check.
        let none = NothingToRollBackTo { current: 1, older: 0 };
        assert_eq!(none.to_string(), "no generation is older than 1; there is nothing to roll back to");
        assert_eq!(e.exit_code(), crate::error::ExitCode::Invalid);
        assert!(e.hint().unwrap().contains("cuenv rollback --to N"));
    }
}
