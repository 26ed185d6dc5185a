//! The apply pipeline, one call per stage in order (see the picture in [`super`]):
//! parse -> fetch what is missing -> resolve -> plan -> build -> switch -> check (switch
//! back if a profile fails) -> record. Each stage is a module below this one; none of them
//! calls a later stage.
//!
//! Nothing here prints: progress and per-profile check results go to a [`Reporter`], and
//! [`run`] returns a typed [`Outcome`] for the CLI to render.

use std::path::Path;

use super::desire::{self, Desired};
use super::{Error, build, plan, record};
use crate::binfmt::Platform;
use crate::change::{Change, Kind};
use crate::generation::{self, SwitchOp};
use crate::generation_check::{self, ProfileCheck};
use crate::layout::Layout;
use crate::profile::{self, ProfileFile};
use crate::progress::Progress;
use crate::writer_lock::WriterLock;
use crate::{lockfile, shim, sources};

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
    /// Another profile file may replace the one that built the current generation.
    pub replace: bool,
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
    // 1. Parse.
    let parsed = profile::load(file)?;
    // 2. Fetch what the store and `<home>/toolkits` lack.
    let fetched = fetch_missing(layout, lock, &parsed, opts.offline, progress)?;
    reporter.fetched(&fetched);
    // 3. Resolve: file + lock + candidates -> the desired views and shims.
    let desired = desire::desire(layout, parsed, opts.locked)?;
    if plan::unchanged(layout, &desired) {
        // 8. Record only. --locked: the lock already says all this; it is never rewritten
        // (not even to migrate its format).
        if !opts.locked {
            record::write_lock(layout, &desired)?;
        }
        return Ok(Outcome::Unchanged { generation: generation::current(layout).unwrap_or(0) });
    }
    // 4. Plan. Another lab's file may not silently remove that lab's profiles.
    if !opts.replace
        && let Some(r) = plan::replacing(layout, &desired)
    {
        return Err(r.into());
    }
    let changes = plan::plan(layout, &desired);
    if cfg!(windows) {
        warn_cmd_line_limit(layout, &desired, reporter);
    }
    generation::preflight_shims(&desired.shims.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>())?;
    let previous = generation::current(layout);
    // 5. Build generation N (not yet current).
    let n = build::build(layout, &desired)?;
    reporter.built(&changes);
    // 6. Switch. The check runs through the stable paths, so the new generation is
    // switched in first.
    generation::switch(layout, n, SwitchOp::Apply)?;
    // 7. Check; if a profile fails, switch the previous generation back.
    let checks = check(layout, n, opts, reporter)?;
    if !generation_check::acceptable(&checks, opts.require_gpu) {
        switch_back(layout, previous)?;
        let failed = checks.iter().filter(|c| !generation_check::acceptable(std::slice::from_ref(c), opts.require_gpu)).map(|c| c.profile.clone()).collect();
        return Ok(Outcome::Reverted { generation: n, current: previous, checks, failed });
    }
    // 8. Record the lock.
    let lock_changed = !opts.locked && record::write_lock(layout, &desired)?;
    Ok(Outcome::Applied { generation: n, changes, checks, lock_changed, profiles: desired.views.len() })
}

/// Stage 2: fetches what `file`'s `from` sources name and the store lacks, for this host,
/// matching the pins of `lab.lock` ([`sources::ensure`]). Returns one `+` line per fetch.
fn fetch_missing(layout: &Layout, lock: &WriterLock, file: &ProfileFile, offline: bool, progress: &dyn Progress) -> Result<Vec<String>, Error> {
    let host = Platform::host().ok_or(Error::UnsupportedPlatform)?;
    let pins = lockfile::read_pins(&lockfile::lock_path(&file.path), host);
    let endpoints = sources::endpoints(file, offline);
    Ok(sources::ensure(layout, lock, file, host, &pins, &endpoints, progress)?)
}

/// Stage 7: runs the checks of generation `n` (now current) and saves their results; no
/// checks with `--no-check`.
fn check(layout: &Layout, n: u64, opts: &Options, reporter: &mut dyn Reporter) -> Result<Vec<ProfileCheck>, Error> {
    let Some(check) = &opts.check else { return Ok(Vec::new()) };
    let m = generation::read(layout, n)?;
    let results = generation_check::run(layout, &m, &[], check, &mut |pc| reporter.checked(pc));
    generation_check::save(layout, n, &results)?;
    Ok(results)
}

/// After a failed check: makes `previous` current again (none: no generation is current).
fn switch_back(layout: &Layout, previous: Option<u64>) -> Result<(), Error> {
    match previous {
        Some(p) => generation::switch(layout, p, SwitchOp::Revert)?,
        None => generation::clear(layout, SwitchOp::Revert)?,
    }
    Ok(())
}

/// Windows: the `.bat` shim refuses to activate past cmd.exe's line limit; say so now.
fn warn_cmd_line_limit(layout: &Layout, desired: &Desired, reporter: &mut dyn Reporter) {
    let path_len = std::env::var_os("PATH").map(|p| p.len()).unwrap_or(0);
    for v in desired.views.iter().filter(|v| v.conda_env.is_some()) {
        let act = crate::view::activation(layout, &v.name, Platform::WindowsX86_64);
        if let Err(why) = shim::check_cmd_line_limit(path_len, &act) {
            reporter.warning(&format!("warning: profile {}: {why}", v.name));
        }
    }
}

/// The plan's lines without the view links (what `apply` prints once the generation is built).
pub fn headline_changes(changes: &[Change]) -> impl Iterator<Item = &Change> {
    changes.iter().filter(|c| c.kind != Kind::Link)
}
