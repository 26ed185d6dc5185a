//! The apply sequence, top to bottom: parse the profile file, fetch what the store lacks,
//! resolve and plan, build a new generation, switch to it, check its profiles through the
//! stable paths, switch back if a check failed, and record the lock. Also `rollback` and
//! `gc`, the other commands that decide which generation is current or kept.
//!
//! Nothing here prints: progress and per-profile check results go to a [`Reporter`], and each
//! command returns a typed outcome for the CLI to render.

use std::path::{Path, PathBuf};

use super::{Desired, Error};
use crate::binfmt::Platform;
use crate::change::{Change, Kind};
use crate::generation::{self, RollbackTarget};
use crate::generation_check::{self, ProfileCheck};
use crate::layout::Layout;
use crate::progress::Progress;
use crate::writer_lock::WriterLock;
use crate::{lockfile, profile, shim, sources};

/// Options of [`run`].
pub struct Options {
    /// Fail instead of changing `lab.lock`.
    pub locked: bool,
    /// Check each profile after the switch (`None`: `--no-check`).
    pub check: Option<generation_check::Options>,
    /// A profile without a GPU fails the check.
    pub require_gpu: bool,
    /// Never touch the network (fetching what the store lacks fails).
    pub offline: bool,
}

/// What [`run`] tells its caller while it works.
pub trait Reporter {
    /// One `+` line per thing fetched or imported (before resolution).
    fn fetched(&mut self, lines: &[String]);
    /// A warning that does not stop the apply.
    fn warning(&mut self, message: &str);
    /// The new generation is built (not yet current); `changes` is its plan.
    fn built(&mut self, changes: &[Change]);
    /// One profile's check ended.
    fn checked(&mut self, check: &ProfileCheck);
}

/// How an apply ended.
#[derive(Debug)]
pub enum Outcome {
    /// The current generation already matches the file (the lock was rewritten unless `--locked`).
    Unchanged {
        /// The current generation (0: none).
        generation: u64,
    },
    /// A check failed: generation `generation` was built, and `current` is current again.
    Reverted {
        /// The generation built.
        generation: u64,
        /// The generation current again (`None`: none is).
        current: Option<u64>,
        /// Every check's result.
        checks: Vec<ProfileCheck>,
        /// The profiles whose check failed.
        failed: Vec<String>,
    },
    /// Generation `generation` is current.
    Applied {
        /// The new generation.
        generation: u64,
        /// What changed.
        changes: Vec<Change>,
        /// Every check's result (empty with `--no-check`).
        checks: Vec<ProfileCheck>,
        /// Whether `lab.lock` was rewritten.
        lock_changed: bool,
        /// How many profiles the generation has.
        profiles: usize,
    },
}

/// Applies the profile file `file`: see the module doc for the sequence. The caller holds
/// the writer `lock` (and has recovered an interrupted switch).
pub fn run(layout: &Layout, lock: &WriterLock, file: &Path, opts: &Options, progress: &dyn Progress, reporter: &mut dyn Reporter) -> Result<Outcome, Error> {
    let parsed = profile::load(file)?;
    let host = Platform::host().ok_or(Error::UnsupportedPlatform)?;
    let lock_path = lockfile::lock_path(file);
    let endpoints = sources::endpoints(&parsed, opts.offline);
    let fetched = sources::ensure(layout, lock, &parsed, host, &lockfile::read_pins(&lock_path, host), &endpoints, progress)?;
    reporter.fetched(&fetched);
    let desired = super::desire(layout, parsed, opts.locked)?;
    if super::unchanged(layout, &desired) {
        // --locked: the lock already says all this; it is never rewritten (not even to
        // migrate its format).
        if !opts.locked {
            super::write_lock(layout, &desired)?;
        }
        return Ok(Outcome::Unchanged { generation: generation::current(layout).unwrap_or(0) });
    }
    let changes = super::plan(layout, &desired);
    if cfg!(windows) {
        warn_cmd_line_limit(layout, &desired, reporter);
    }
    generation::preflight_shims(&desired.shims.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>())?;
    let previous = generation::current(layout);
    let n = super::build(layout, &desired)?;
    reporter.built(&changes);
    // The check runs through the stable paths, so the new generation is switched in first;
    // if a profile fails, the previous generation is switched back.
    generation::switch(layout, n, generation::SwitchOp::Apply)?;
    let checks = match &opts.check {
        Some(check) => {
            let m = generation::read(layout, n)?;
            let results = generation_check::run(layout, &m, &[], check, &mut |pc| reporter.checked(pc));
            generation_check::save(layout, n, &results).map_err(|e| Error::At { message: e.to_string(), source: e.source })?;
            results
        }
        None => Vec::new(),
    };
    if !generation_check::acceptable(&checks, opts.require_gpu) {
        match previous {
            Some(p) => generation::switch(layout, p, generation::SwitchOp::Revert)?,
            None => generation::clear(layout, generation::SwitchOp::Revert)?,
        }
        let failed = checks.iter().filter(|c| !generation_check::acceptable(std::slice::from_ref(c), opts.require_gpu)).map(|c| c.profile.clone()).collect();
        return Ok(Outcome::Reverted { generation: n, current: previous, checks, failed });
    }
    let lock_changed = !opts.locked && super::write_lock(layout, &desired)?;
    Ok(Outcome::Applied { generation: n, changes, checks, lock_changed, profiles: desired.views.len() })
}

/// Windows: the `.bat` shim refuses to activate past cmd.exe's line limit; say so now.
fn warn_cmd_line_limit(layout: &Layout, desired: &Desired, reporter: &mut dyn Reporter) {
    let path_len = std::env::var_os("PATH").map(|p| p.len()).unwrap_or(0);
    for v in desired.views.iter().filter(|v| v.conda_env.is_some()) {
        let act = super::activation(layout, &v.name, Platform::WindowsX86_64);
        if let Err(why) = shim::check_cmd_line_limit(path_len, &act) {
            reporter.warning(&format!("warning: profile {}: {why}", v.name));
        }
    }
}

/// The plan's lines without the view links (what `apply` prints once the generation is built).
pub fn headline_changes(changes: &[Change]) -> impl Iterator<Item = &Change> {
    changes.iter().filter(|c| c.kind != Kind::Link)
}

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
    generation_check::load(layout, n).is_some_and(|c| !generation_check::acceptable(&c.profiles, false))
}

/// `rollback [--to N]`: makes [`generation::rollback_target`] current. `warn` hears that a
/// named target failed its check (before it is switched to).
pub fn rollback(layout: &Layout, to: Option<u64>, warn: &mut dyn FnMut(&str)) -> Result<Rollback, RollbackError> {
    let cur = generation::current(layout).ok_or(NoGeneration)?;
    let target = generation::rollback_target(&generation::list(layout), cur, to, &mut |n| check_failed(layout, n))?;
    if target.target_failed {
        warn(&format!("warning: generation {} failed its check when it was applied (`cuenv generations` shows why)", target.target));
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

/// What `gc` deletes.
#[derive(Debug, Default)]
pub struct GcPlan {
    /// How many generations are kept.
    pub kept: usize,
    /// The generations to delete (ascending).
    pub generations: Vec<u64>,
    /// The store entries to delete: folder and name.
    pub entries: Vec<(PathBuf, String)>,
}

/// Which generations and store entries `gc` deletes: generations by [`generation::gc_keep`];
/// store entries that no kept generation uses and that no platform's section of a kept
/// generation's lock file names (`cuenv lock --platform`).
pub fn gc_plan(layout: &Layout, keep: usize) -> GcPlan {
    let all = generation::list(layout);
    let (kept, doomed) = generation::gc_keep(&all, generation::current(layout), generation::previous(layout), keep);
    let mut needed = std::collections::BTreeSet::new();
    for n in &kept {
        if let Ok(m) = generation::read(layout, *n) {
            needed.extend(m.profiles.iter().map(|p| p.cudnn_id.clone()));
            for (_, section) in lockfile::read_all(&lockfile::lock_path(&m.source)).unwrap_or_default() {
                needed.extend(section.profiles.iter().map(|p| p.cudnn_id.clone()));
            }
        }
    }
    let store = crate::store::Store::new(layout);
    let entries = store.entries().into_iter().filter(|(_, m)| !needed.contains(&m.id)).map(|(d, m)| (d, m.name)).collect();
    GcPlan { kept: kept.len(), generations: doomed, entries }
}

/// One thing `gc` deleted.
pub enum Deleted<'a> {
    /// A generation.
    Generation(u64),
    /// A store entry, by name.
    Entry(&'a str),
}

/// Deletes what `plan` names, generations first; `done` hears of each deletion as it happens.
pub fn gc(layout: &Layout, lock: &WriterLock, plan: &GcPlan, done: &mut dyn FnMut(Deleted)) -> Result<(), Error> {
    for n in &plan.generations {
        super::remove_generation_tree(&generation::dir(layout, *n))?;
        done(Deleted::Generation(*n));
    }
    let store = crate::store::Store::new(layout);
    for (dir, name) in &plan.entries {
        store.remove(lock, dir)?;
        done(Deleted::Entry(name));
    }
    Ok(())
}
