//! The apply pipeline, one call per stage in order (see the picture in [`super`]):
//! parse -> fetch what is missing -> resolve -> plan -> (can lab.lock be written?) -> build
//! -> [journal -> record lab.lock -> switch -> check -> verdict] -> commit, or revert when a
//! profile fails, on any error and on a terminating signal or console event
//! ([`interrupt`]). The bracket is one transaction ([`generation::ApplyTx`]): a kill inside
//! it is undone by the next writer. Each stage is a module below this one; none of them
//! calls a later stage.
//!
//! Nothing here prints: progress and per-profile check results go to a [`Reporter`], and
//! [`run`] returns a typed [`Outcome`] for the CLI to render.

use std::path::Path;

use super::desire::{self, Desired};
use super::repair::{self, Repair};
use super::{Error, build, interrupt, plan, record};
use crate::change::{Change, Kind};
use crate::cudnn::platform::Platform;
use crate::generation;
use crate::generation::profile_check::{self, ProfileCheck};
use crate::home::layout::Layout;
use crate::home::writer_lock::WriterLock;
use crate::profile::lockfile::{self, LockText};
use crate::profile::{self, ProfileFile};
use crate::sys::progress::Progress;
use crate::{shim, sources};

/// Options of [`run`].
pub struct Options {
    /// Fail instead of changing `lab.lock`.
    pub locked: bool,
    /// Check each profile after the switch (`None`: `--no-check`).
    pub check: Option<profile_check::Options>,
    /// A profile without a GPU fails the check.
    pub require_gpu: bool,
    /// Never touch the network (fetching what the store lacks fails).
    pub offline: bool,
    /// Another profile file may replace the one that built the current generation.
    pub replace: bool,
    /// This machine's driver and GPUs ([`crate::check::gpufit`]); `None` (`--force`): not judged.
    pub machine: Option<crate::check::gpufit::Machine>,
    /// Judge each profile against the frameworks of its bound env ([`crate::requires`]) and
    /// refuse a misfit (`false`: `--force`).
    pub judge_frameworks: bool,
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
        /// The links and shims of that generation put back from its records ([`crate::apply::repair()`]).
        repair: Repair,
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

/// What one apply reads once, at its start and under the writer lock, and hands down to its
/// stages: the host platform, the profile file's `lab.lock` (one read; the lock is written at
/// most once, over this text) and the current generation with its manifest.
struct Inputs {
    host: Platform,
    lock: LockText,
    current: Option<(u64, generation::Manifest)>,
}

/// Applies the profile file `file`: see the module doc for the sequence. The caller holds
/// the writer lock `writer` (and has recovered an interrupted switch).
pub fn run(layout: &Layout, writer: &WriterLock, file: &Path, opts: &Options, progress: &dyn Progress, reporter: &mut dyn Reporter) -> Result<Outcome, Error> {
    // 1. Parse, and read the inputs every later stage uses.
    let parsed = profile::load(file)?;
    let host = Platform::host().ok_or(Error::UnsupportedPlatform)?;
    let mut inputs = Inputs { host, lock: LockText::read(&lockfile::lock_path(&parsed.path))?, current: generation::current_with_manifest(layout) };
    // A link mode this host cannot make is an error at its line before anything is fetched.
    let choice = desire::validate_link_mode_works(layout, &parsed)?;
    // `auto` on a home that cannot hold links: said once (not again while the current
    // generation is link-free), with the reason.
    if let Some(why) = &choice.no_links
        && !inputs.current.as_ref().is_some_and(|(_, m)| m.link_mode.is_link_free())
    {
        reporter.warning(&format!(
            "note: this home cannot hold links ({why}): `link-mode = \"auto\"` builds the generation without links; shims and activations name the store entries and toolkit roots directly"
        ));
    }
    // --locked on a section that names a profile unpinned: said before anything is fetched.
    if opts.locked
        && let Some(drift) = desire::unpinned_drift(inputs.lock.section(host)?.as_ref(), &parsed, host)
    {
        return Err(drift.into());
    }
    // 2. Validate: every error resolution and the conda envs would meet, at once, before
    // anything is downloaded (the sources are asked when fetching, not here).
    desire::validate_all(layout, &parsed, host, sources::preflight(layout, &parsed, host, None))?;
    // 3. Fetch what the store and `<home>/toolkits` lack.
    // Another lab's file is refused before its `from` sources are imported into the store.
    if !opts.replace
        && let Some(r) = plan::replacing_file(inputs.current.as_ref(), &parsed)
    {
        return Err(r.into());
    }
    let fetched = fetch_missing(layout, writer, &parsed, &inputs, opts.offline, progress)?;
    reporter.fetched(&fetched);
    // 4. Resolve: file + lock + candidates -> the desired views and shims.
    let desired = desire::desire_in(layout, parsed, opts.locked, choice.mode, &inputs.lock)?;
    // 5. GPU fit: a profile known not to run on this machine's driver or GPU is refused
    // before the plan: nothing is built, switched or recorded (`--force` skips this).
    if let Some(m) = &opts.machine {
        gpu_fit(m, &desired, inputs.current.as_ref().map(|(n, _)| *n), opts.check.is_some(), reporter)?;
    }
    // The frameworks of each profile's bound env: a misfit is refused as a GPU misfit is; a
    // newer minor or a requirement not read is a warning.
    let misfits = framework_fit(&desired, host, reporter);
    if opts.judge_frameworks && !misfits.profiles.is_empty() {
        return Err(misfits.into());
    }
    for (p, why) in &misfits.profiles {
        for w in why {
            reporter.warning(&format!("warning: profile {p} (applied with --force): {w}"));
        }
    }
    let current = inputs.current.as_ref();
    if plan::unchanged(current, &desired) {
        // 9. Record only. --locked: the lock already says all this; it is never rewritten
        // (not even to migrate its format).
        if !opts.locked {
            record::preflight_lock(layout, &desired, host, &inputs.lock)?;
            record::write_lock(layout, &desired, host, &mut inputs.lock)?;
        }
        // What `status` finds damaged in the current generation is put back from its records.
        let repaired = match current {
            Some((_, m)) => repair::repair(layout, m)?,
            None => Repair::default(),
        };
        return Ok(Outcome::Unchanged { generation: current.map_or(0, |(n, _)| *n), repair: repaired });
    }
    // 6. Plan. Another lab's file may not silently remove that lab's profiles.
    if !opts.replace
        && let Some(r) = plan::replacing(current, &desired)
    {
        return Err(r.into());
    }
    let changes = plan::plan(current, &desired);
    if cfg!(windows) {
        warn_cmd_line_limit(layout, &desired, reporter);
    }
    generation::preflight_shims(&desired.shims.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>())?;
    // Everything that can fail is tried before anything is built: lab.lock can take the change.
    let lock_backup = if opts.locked { None } else { Some(record::preflight_lock(layout, &desired, host, &inputs.lock)?) };
    // 7. Build generation N (not yet current).
    let n = build::build(layout, &desired)?;
    reporter.built(&changes);
    // 8-11. One transaction under the journal: lab.lock, switch, check, verdict. The
    // terminating signals (SIGINT, SIGTERM, SIGHUP, SIGQUIT, ...) and the Windows console's
    // events only set a flag from here on, which the transaction polls.
    let _signals = interrupt::catch();
    let tx = generation::begin_apply(layout, n, opts.check.is_some(), lock_backup)?;
    match transaction(layout, &tx, n, &desired, &mut inputs, opts, progress, reporter) {
        Ok(Verdict::Pass { checks, lock_changed }) => {
            tx.commit(layout)?;
            Ok(Outcome::Applied { generation: n, changes, checks, lock_changed, profiles: desired.views.len() })
        }
        Ok(Verdict::Fail { checks, failed }) => {
            let current = tx.from();
            tx.revert(layout)?;
            Ok(Outcome::Reverted { generation: n, current, checks, failed })
        }
        Err(e) => {
            // Undo before returning; if the undo fails too, the journal stays and the next
            // writer finishes it. The first error is the one to report.
            let _ = tx.revert(layout);
            Err(e)
        }
    }
}

/// Stage 5, GPU fit: refuses `desired` when one of its profiles is known not to run on
/// `machine`'s driver or GPU ([`crate::check::gpufit::assess`], judged by the GPU code its
/// store entry's libraries carry); warns through `reporter` where the fit is not verified.
/// `current` and `checked` say what `--force` would do instead ([`crate::check::gpufit::Refusal`]).
fn gpu_fit(machine: &crate::check::gpufit::Machine, desired: &Desired, current: Option<u64>, checked: bool, reporter: &mut dyn Reporter) -> Result<(), Error> {
    let mut refused: Vec<(String, Vec<crate::check::gpufit::Misfit>)> = Vec::new();
    for v in &desired.views {
        let code = crate::store::entry::EntryMeta::read(&v.entry_dir).ok().map(|meta| meta.gpu_code_or_read(&v.entry_dir));
        let want = crate::check::gpufit::Want::new(v.cudnn_version.clone(), &v.toolkit_version, v.cuda_major).with_code(code);
        let fit = crate::check::gpufit::assess(machine, &want, "this profile's runtime is");
        for nv in &fit.not_verified {
            reporter.warning(&format!("warning: profile {}: {nv}", v.name));
        }
        if !fit.misfits.is_empty() {
            refused.push((v.name.clone(), fit.misfits));
        }
    }
    if refused.is_empty() { Ok(()) } else { Err(crate::check::gpufit::Refusal { profiles: refused, current, checked }.into()) }
}

/// The frameworks of each profile's bound env (`conda-env`, `python-env`) judged against the
/// profile's cuDNN and toolkit ([`crate::requires::judge_profile`]): the misfits, per profile;
/// each newer release or requirement not read is a warning through `reporter`.
pub fn framework_fit(desired: &Desired, platform: Platform, reporter: &mut dyn Reporter) -> crate::requires::Refusal {
    let mut refusal = crate::requires::Refusal { profiles: Vec::new() };
    for v in &desired.views {
        let Some((prefix, by)) = v.bound_env() else { continue };
        let mut misfits = Vec::new();
        for j in crate::requires::judge_profile(prefix, by, platform, &v.cudnn_version.to_string(), &v.toolkit_version) {
            match j.verdict {
                crate::requires::Verdict::Misfit(_) => misfits.push(crate::requires::describe(&j)),
                _ => reporter.warning(&format!("warning: profile {}: {}", v.name, crate::requires::describe(&j))),
            }
        }
        if !misfits.is_empty() {
            refusal.profiles.push((v.name.clone(), misfits));
        }
    }
    refusal
}

/// [`framework_fit`] before resolution (`plan` while something is still to be fetched): each
/// profile bound to an env whose cuDNN or toolkit requirement names one version (`cudnn =
/// "8.9.7.29"`, `cuda = { version = "12.6", from = "pypi" }`) is judged by that version, so a
/// misfit is said before anything is downloaded. A requirement that gives the major only is
/// judged on the major; ranges and bindings by conda env name are left to `apply`.
pub fn declared_fit(file: &crate::profile::ProfileFile, platform: Platform) -> crate::requires::Refusal {
    use crate::cudnn::version::Op;
    let mut refusal = crate::requires::Refusal { profiles: Vec::new() };
    let base = std::path::absolute(&file.path).ok().and_then(|p| p.parent().map(Path::to_path_buf)).unwrap_or_default();
    let one = |r: &crate::profile::Requirement| match r.version.comparators() {
        [c] if matches!(c.op, Op::Prefix | Op::Exact) => Some(c.version.clone()),
        _ => None,
    };
    for p in &file.profiles {
        let prefix = match (&p.python_env, &p.conda_env) {
            (Some(v), _) => crate::pyenv::resolve_binding(&v.value, &base).ok(),
            (None, Some(v)) if p.conda_env_is_path() == Some(true) && !v.value.starts_with('~') => Some(base.join(&v.value)),
            _ => None,
        };
        let Some(prefix) = prefix else { continue };
        let (Some(cudnn), Some(cuda)) = (one(&p.cudnn), one(&p.cuda)) else { continue };
        let mut misfits = Vec::new();
        for j in crate::requires::judge_profile(&prefix, "profile", platform, &cudnn.to_string(), &cuda.to_string()) {
            let given = if j.need.lib == crate::requires::Lib::Cudnn { &cudnn } else { &cuda };
            let major_only_ok = given.parts().len() < 2 && j.need.floor().is_some_and(|(m, _)| m == given.major());
            if matches!(j.verdict, crate::requires::Verdict::Misfit(_)) && !major_only_ok {
                misfits.push(crate::requires::describe(&j));
            }
        }
        if !misfits.is_empty() {
            refusal.profiles.push((p.name.clone(), misfits));
        }
    }
    refusal
}

/// How a transaction's checks ended.
enum Verdict {
    /// The new generation stays current.
    Pass { checks: Vec<ProfileCheck>, lock_changed: bool },
    /// A profile failed: the previous generation is to be current again.
    Fail { checks: Vec<ProfileCheck>, failed: Vec<String> },
}

/// Stages 8 to 11 inside the apply transaction `tx` (its journal is written): writes
/// `lab.lock` (over the text `inputs` read), switches to generation `n`, checks it and gives
/// the verdict. Any error, or a caught signal, is returned for the caller to revert.
#[allow(clippy::too_many_arguments)]
fn transaction(
    layout: &Layout,
    tx: &generation::ApplyTx,
    n: u64,
    desired: &Desired,
    inputs: &mut Inputs,
    opts: &Options,
    progress: &dyn Progress,
    reporter: &mut dyn Reporter,
) -> Result<Verdict, Error> {
    let interrupted = || match interrupt::caught() {
        Some(signal) => Err(Error::Interrupted { signal, built: n, current: tx.from() }),
        None => Ok(()),
    };
    // 8. Record the lock (put back if the transaction is undone).
    if !opts.locked {
        generation::fault_error("write-lock")
            .map_err(|e| crate::error::IoError::new("write the lock file", crate::profile::lockfile::lock_path(&desired.file.path), e))?;
    }
    let lock_changed = !opts.locked && record::write_lock(layout, desired, inputs.host, &mut inputs.lock)?;
    generation::fault_point("lock");
    interrupted()?;
    // 9. Switch. The check runs through the stable paths, so the new generation is
    // switched in first.
    tx.switch(layout)?;
    interrupted()?;
    generation::fault_point("check-start");
    // 10. Check.
    let checks = check(layout, n, opts, progress, reporter, &interrupted)?;
    generation::fault_point("check-saved");
    interrupted()?;
    // 11. Verdict.
    if !profile_check::acceptable(&checks, opts.require_gpu) {
        let failed = checks.iter().filter(|c| !profile_check::acceptable(std::slice::from_ref(c), opts.require_gpu)).map(|c| c.profile.clone()).collect();
        return Ok(Verdict::Fail { checks, failed });
    }
    generation::fault_point("verdict");
    Ok(Verdict::Pass { checks, lock_changed })
}

/// Stage 3: fetches what `file`'s `from` sources name and the store lacks, for the host,
/// matching the pins of the `lab.lock` that `inputs` read ([`sources::ensure`]). Returns one
/// `+` line per fetch.
fn fetch_missing(
    layout: &Layout,
    writer: &WriterLock,
    file: &ProfileFile,
    inputs: &Inputs,
    offline: bool,
    progress: &dyn Progress,
) -> Result<Vec<String>, Error> {
    let pins = inputs.lock.pins(inputs.host);
    let endpoints = sources::endpoints(file, offline);
    Ok(sources::ensure(layout, writer, file, inputs.host, &pins, &endpoints, progress)?)
}

/// Stage 10: runs the checks of generation `n` (now current) and saves their results; no
/// checks with `--no-check`. The checks run on a worker thread while this one reports
/// their results and polls `interrupted` (a signal stops the children and returns at once).
fn check(
    layout: &Layout,
    n: u64,
    opts: &Options,
    progress: &dyn Progress,
    reporter: &mut dyn Reporter,
    interrupted: &dyn Fn() -> Result<(), Error>,
) -> Result<Vec<ProfileCheck>, Error> {
    use std::sync::mpsc::{RecvTimeoutError, channel};
    let Some(check) = &opts.check else { return Ok(Vec::new()) };
    let m = generation::read(layout, n)?;
    // The profiles profile_check::run checks, in its order: several run at once
    // (profile_check::MAX_PARALLEL_CHECKS) and are reported in this order, so the busy phase
    // names the next one to be reported until its result arrives (cleared before the result
    // is reported).
    let names: Vec<String> = profile_check::to_check(&m, &[]).map(|v| v.name.clone()).collect();
    let mut next = names.iter();
    if let Some(first) = next.next() {
        progress.busy(&format!("checking {first}"));
    }
    let (tx, rx) = channel();
    let worker = {
        let (layout, check) = (layout.clone(), check.clone());
        std::thread::spawn(move || {
            profile_check::run(&layout, &m, &[], &check, &mut |pc| {
                let _ = tx.send(pc.clone());
            });
        })
    };
    let mut results = Vec::new();
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(20)) {
            Ok(pc) => {
                progress.finish();
                reporter.checked(&pc);
                results.push(pc);
                if let Some(name) = next.next() {
                    progress.busy(&format!("checking {name}"));
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                progress.finish();
                break;
            }
        }
        if let Err(e) = interrupted() {
            progress.finish();
            interrupt::stop_children();
            return Err(e);
        }
    }
    if let Err(panic) = worker.join() {
        std::panic::resume_unwind(panic);
    }
    generation::fault_error("save-checks").map_err(|e| crate::error::IoError::new("save the check results to", layout.check_results(n), e))?;
    profile_check::save(layout, n, &results)?;
    Ok(results)
}

/// Windows: the `.bat` shim refuses to activate past cmd.exe's line limit; say so now.
fn warn_cmd_line_limit(layout: &Layout, desired: &Desired, reporter: &mut dyn Reporter) {
    let path_len = std::env::var_os("PATH").map(|p| p.len()).unwrap_or(0);
    for v in desired.views.iter().filter(|v| v.conda_env.is_some()) {
        let act = generation::activation_of(layout, desired.link_mode, v, Platform::WindowsX86_64);
        if let Err(why) = shim::validate_cmd_line_limit(path_len, &act) {
            reporter.warning(&format!("warning: profile {}: {why}", v.name));
        }
    }
}

/// The plan's lines without the view links (what `apply` prints once the generation is built).
pub fn headline_changes(changes: &[Change]) -> impl Iterator<Item = &Change> {
    changes.iter().filter(|c| c.kind != Kind::Link)
}
