//! `plan`, `apply` and `lock`: parse the arguments, call [`crate::apply`], render.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::diagnostics::Report;
use super::{Ctx, lock_and_recover, warn_dangling_active};
use crate::apply::{self, Outcome, Preview};
use crate::change::{self, Change};
use crate::cudnn::platform::Platform;
use crate::error::{ExitCode, Hinted};
use crate::generation::profile_check::ProfileCheck;
use crate::profile::lockfile;

#[derive(Serialize)]
struct PlanPending<'a> {
    changes: [(); 0],
    fetch: &'a [Change],
    unresolved: String,
}

#[derive(Serialize)]
struct PlanJson<'a> {
    changes: &'a [Change],
    lock_changes: &'a [String],
    resolved: &'a crate::resolve::Resolved,
}

/// `cuenv plan FILE` / `cuenv apply --dry-run FILE`.
pub fn plan(ctx: &Ctx, file: &Path, locked: bool, json: bool) -> Result<ExitCode, Report> {
    let (changes, desired, current) = match apply::preview(&ctx.layout, file, locked)? {
        Preview::Pending { fetches, unresolved } => {
            // A profile its env's frameworks cannot use is said before anything is fetched.
            if let (Ok(parsed), Some(host)) = (crate::profile::load(file), crate::cudnn::platform::Platform::host()) {
                let misfits = apply::declared_fit(&parsed, host);
                if !misfits.profiles.is_empty() {
                    ctx.report("error", &misfits);
                    return Ok(crate::error::Diagnose::exit_code(&misfits));
                }
            }
            if json {
                ctx.print_json_sorted(&PlanPending { changes: [], fetch: &fetches, unresolved });
            } else {
                for c in &fetches {
                    writeln!(ctx.out(), "{c}");
                }
                writeln!(ctx.out(), "(the views are planned once these are fetched; `cuenv apply` fetches them)");
            }
            return Ok(ExitCode::Success);
        }
        Preview::Ready { changes, desired, current } => (changes, desired, current),
    };
    if json {
        ctx.print_json_sorted(&PlanJson { changes: &changes, lock_changes: &desired.lock_changes, resolved: &desired.resolved });
    } else if changes.is_empty() {
        let n = current.as_ref().map_or(0, |(n, _)| *n);
        // What `apply` of this file would put back in the current generation.
        let damage = match &current {
            Some((_, m)) => apply::damage(&ctx.layout, m)?,
            None => apply::Repair::default(),
        };
        if damage.repaired.is_empty() {
            writeln!(ctx.out(), "no changes: generation {n} already matches {}", file.display());
        } else {
            for r in &damage.repaired {
                writeln!(ctx.out(), "~ repair {}", r.describe());
            }
            writeln!(ctx.out(), "generation {n} already matches {}; `cuenv apply` puts back what is listed (its content does not change)", file.display());
        }
    } else {
        // The view links list every link of the new generation, changed or not: --verbose.
        let links = changes.iter().filter(|c| c.kind == change::Kind::Link).count();
        let shown: Vec<Change> = changes.iter().filter(|c| ctx.verbose || c.kind != change::Kind::Link).cloned().collect();
        for l in change::render(&shown) {
            writeln!(ctx.out(), "{l}");
        }
        if links > 0 && !ctx.verbose {
            writeln!(ctx.out(), "  (the new generation's views hold {links} links; --verbose lists them)");
        }
    }
    // The truth about `apply`: another lab's file that would remove profiles is refused
    // without --replace; say so here rather than only when apply runs.
    if let Some(r) = apply::replacing(current.as_ref(), &desired) {
        ctx.report("warning", &WouldRefuse(r));
    }
    // The frameworks of each profile's bound env, as `apply` judges them: a misfit is the
    // refusal `apply` would give (exit 4), the rest are warnings.
    if let Some(host) = crate::cudnn::platform::Platform::host() {
        let misfits = apply::framework_fit(&desired, host, &mut Printer { ctx, json });
        if !misfits.profiles.is_empty() {
            ctx.report("error", &misfits);
            return Ok(crate::error::Diagnose::exit_code(&misfits));
        }
    }
    Ok(ExitCode::Success)
}

/// Options of `cuenv apply`.
pub struct ApplyOpts {
    pub locked: bool,
    pub json: bool,
    /// Check each profile after the switch (`--no-check` turns it off).
    pub check: bool,
    /// A profile without a GPU fails the check.
    pub require_gpu: bool,
    /// Seconds per profile check.
    pub timeout: u64,
    /// Never touch the network (fetching what the store lacks fails).
    pub offline: bool,
    /// Another profile file may replace the current generation's (`--replace`).
    pub replace: bool,
    /// Apply profiles this machine is known not to run (`--force`).
    pub force: bool,
}

/// Prints what [`apply::run`] reports as it goes (nothing on stdout with `--json`).
struct Printer<'a> {
    ctx: &'a Ctx,
    json: bool,
}

impl apply::Reporter for Printer<'_> {
    fn fetched(&mut self, lines: &[String]) {
        if !self.json {
            for l in lines {
                writeln!(self.ctx.out(), "{l}");
            }
        }
    }
    fn warning(&mut self, message: &str) {
        self.ctx.note(message);
    }
    fn built(&mut self, changes: &[Change]) {
        if !self.json {
            for c in apply::headline_changes(changes) {
                writeln!(self.ctx.out(), "{c}");
            }
        }
    }
    fn checked(&mut self, pc: &ProfileCheck) {
        super::check::print_check(self.ctx, pc, self.json);
    }
}

#[derive(Serialize)]
struct Unchanged<'a> {
    changed: bool,
    generation: u64,
    /// The links and shims put back (only when there were any, so the JSON of an
    /// undamaged home stays as it was).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    repaired: &'a [apply::Repaired],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    unrepaired: &'a [apply::Unrepaired],
}

#[derive(Serialize)]
struct Reverted<'a> {
    changed: bool,
    checks: &'a [ProfileCheck],
    current: Option<u64>,
    generation: u64,
    reverted: bool,
}

#[derive(Serialize)]
struct Applied<'a> {
    changed: bool,
    changes: Vec<String>,
    checks: &'a [ProfileCheck],
    generation: u64,
}

/// Pins the folder of the profile file `file` ([`crate::sys::fsutil::pin_folder`]).
fn pin_lab_folder(file: &Path) {
    if let Some(dir) = std::path::absolute(file).ok().as_deref().and_then(Path::parent) {
        crate::sys::fsutil::pin_folder(dir);
    }
}

/// `cuenv apply FILE`.
pub fn apply(ctx: &Ctx, file: &Path, opts: ApplyOpts) -> Result<ExitCode, Report> {
    let writer = lock_and_recover(ctx)?;
    // The lab folder is the user's: lab.lock is written there only while it is the folder it is now.
    pin_lab_folder(file);
    let check = if opts.check { Some(super::check::options(opts.timeout)?) } else { None };
    // Driver and GPU fit: what this machine offers, read by a driver-only probe child (plus
    // the override variables), unless --force.
    let machine = if opts.force {
        None
    } else {
        let overrides = crate::check::gpufit::Overrides::from_process()?;
        let env: Vec<_> = std::env::vars_os().collect();
        let o = crate::check::run_driver_probe(&crate::generation::profile_check::current_exe(), &env, std::time::Duration::from_secs(opts.timeout.min(30)));
        Some(crate::check::gpufit::Machine::from_report(o.report.as_ref(), &overrides))
    };
    let run_opts = apply::Options {
        locked: opts.locked,
        check,
        require_gpu: opts.require_gpu,
        offline: opts.offline,
        replace: opts.replace,
        machine,
        judge_frameworks: !opts.force,
    };
    let progress = super::reporter::for_stderr(ctx.quiet || opts.json);
    let lock_path = lockfile::lock_path(file);
    let outcome = match apply::run(&ctx.layout, &writer, file, &run_opts, progress.as_ref(), &mut Printer { ctx, json: opts.json }) {
        // A signal or console event: the transaction was undone; say so, then end the way
        // that signal or event would have (`interrupt::reraise`).
        Err(e @ apply::Error::Interrupted { signal, .. }) => {
            write!(ctx.err(), "{}", Report::from(e).render());
            drop(writer);
            apply::interrupt::reraise(signal)
        }
        r => r?,
    };
    match outcome {
        Outcome::Unchanged { generation: n, repair } => {
            if opts.json {
                ctx.print_json_sorted(&Unchanged { changed: false, generation: n, repaired: &repair.repaired, unrepaired: &repair.unrepaired });
            } else if repair.repaired.is_empty() {
                if repair.unrepaired.is_empty() {
                    writeln!(ctx.out(), "no changes: generation {n} already matches {}", file.display());
                }
            } else {
                for r in &repair.repaired {
                    writeln!(ctx.out(), "{r}");
                }
                let count = |kind: apply::RepairKind| repair.repaired.iter().filter(|r| r.kind == kind).count();
                let (links, shims) = (count(apply::RepairKind::Link), count(apply::RepairKind::Shim));
                let said = |k: usize, one: &str| (k > 0).then(|| format!("{k} {one}{}", if k == 1 { "" } else { "s" }));
                let what: Vec<String> = [said(links, "link"), said(shims, "shim")].into_iter().flatten().collect();
                writeln!(
                    ctx.out(),
                    "generation {n} already matches {}; put back {} as its records say (its content is unchanged)",
                    file.display(),
                    what.join(" and ")
                );
            }
            if repair.unrepaired.is_empty() {
                return Ok(ExitCode::Success);
            }
            // What is damaged but not cuenv's to replace: one error naming each, a hint, exit 3.
            let left = apply::NotRepaired { unrepaired: repair.unrepaired, file: file.to_path_buf() };
            if !opts.json {
                ctx.report("error", &left);
            }
            Ok(crate::error::Diagnose::exit_code(&left))
        }
        Outcome::Reverted { generation: n, current, checks, failed } => {
            if opts.json {
                ctx.print_json_sorted(&Reverted { changed: false, checks: &checks, current, generation: n, reverted: true });
                return Ok(ExitCode::CheckFailed);
            }
            let reverted = apply::CheckReverted { profiles: failed, generation: n, current };
            ctx.report("error", &reverted);
            Ok(crate::error::Diagnose::exit_code(&reverted))
        }
        Outcome::Applied { generation: n, changes, checks, lock_changed, profiles: k } => {
            warn_dangling_active(ctx);
            if opts.json {
                // The JSON keeps one string per change, without the `why:` line plan shows.
                let changes: Vec<Change> = changes.into_iter().map(|c| Change { why: None, ..c }).collect();
                ctx.print_json_sorted(&Applied { changed: true, changes: change::render(&changes), checks: &checks, generation: n });
            } else {
                let lock_said = if lock_changed { "written to" } else { "unchanged:" };
                writeln!(ctx.out(), "generation {n} is current ({k} profile{}); lock {lock_said} {}", if k == 1 { "" } else { "s" }, lock_path.display());
            }
            Ok(ExitCode::Success)
        }
    }
}

/// Options of `cuenv lock`.
pub struct LockOpts {
    /// The platforms whose sections to write (empty: this host's).
    pub platforms: Vec<Platform>,
    /// Fail instead of changing lab.lock.
    pub locked: bool,
    /// Keep or unpin a profile whose sources cannot be reached, instead of failing.
    pub allow_unreachable: bool,
    /// Never use the network.
    pub offline: bool,
    pub json: bool,
}

#[derive(Serialize)]
struct LockJson {
    lock: PathBuf,
    platforms: Vec<apply::PlatformLock>,
}

/// `cuenv lock FILE [--platform P]...`: resolves the profile file for each platform,
/// fetching and verifying what its `from` sources name (bytes pinned in lab.lock must
/// match), and writes those platforms' sections of lab.lock. Builds no generation.
pub fn lock(ctx: &Ctx, file: &Path, opts: LockOpts) -> Result<ExitCode, Report> {
    let writer = lock_and_recover(ctx)?;
    // The lab folder is the user's: lab.lock is written there only while it is the folder it is now.
    pin_lab_folder(file);
    let platforms = if opts.platforms.is_empty() {
        vec![Platform::host().ok_or_else(|| {
            Hinted::unsupported_platform("cuDNN is not built for this platform: name one with --platform", "lock for one of those with --platform")
        })?]
    } else {
        opts.platforms.clone()
    };
    let progress = super::reporter::for_stderr(ctx.quiet || opts.json);
    let lock_path = lockfile::lock_path(file);
    let report = apply::lock(&ctx.layout, &writer, file, &platforms, opts.locked, opts.offline, opts.allow_unreachable, progress.as_ref())?;
    if opts.json {
        ctx.print_json_sorted(&LockJson { lock: lock_path, platforms: report });
        return Ok(ExitCode::Success);
    }
    for p in &report {
        for l in p.fetched.iter().chain(&p.changes) {
            writeln!(ctx.out(), "{l}");
        }
        for u in &p.unreachable {
            let kept = if u.kept { "its pin is kept" } else { "unpinned" };
            writeln!(ctx.out(), "? {}: {kept}: {}", u.profile, u.reason);
        }
        let said = if p.changed { "written to" } else { "unchanged in" };
        let k = p.resolved.profiles.len() + p.unreachable.iter().filter(|u| u.kept).count();
        let unpinned = p.unreachable.iter().filter(|u| !u.kept).count();
        let unpinned = if unpinned == 0 { String::new() } else { format!(", {unpinned} unpinned") };
        writeln!(ctx.out(), "{}: {k} profile{} locked{unpinned}, {said} {}", p.platform, if k == 1 { "" } else { "s" }, lock_path.display());
    }
    Ok(ExitCode::Success)
}

/// `plan`'s warning that `apply` of the same file would refuse it ([`apply::Replacing`]),
/// with that error's hint.
#[derive(Debug, thiserror::Error)]
#[error("`cuenv apply` refuses this: {0}")]
struct WouldRefuse(apply::Replacing);

impl crate::error::Diagnose for WouldRefuse {
    fn hint(&self) -> Option<String> {
        self.0.hint()
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::Success
    }
}
