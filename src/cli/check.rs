//! `cuenv check [PROFILE...]`: checks the current generation's profiles and prints each
//! verdict as it ends (also used by `apply`).

use serde::Serialize;

use super::diagnostics::Report;
use super::{Ctx, lock_and_recover};
use crate::check::CheckStatus;
use crate::error::ExitCode;
use crate::generation;
use crate::generation::profile_check::{self, NoteKind, ProfileCheck};
use crate::generation::rollback::NoGeneration;

/// The check options for this process: this executable as the probe child, this process's
/// environment, `timeout` seconds per profile, the GPU-fit override variables. Errors: an
/// override variable that is not `major.minor` (exit 2).
pub fn options(timeout: u64) -> Result<profile_check::Options, crate::check::gpufit::BadOverride> {
    Ok(profile_check::Options {
        exe: profile_check::current_exe(),
        base_env: std::env::vars_os().collect(),
        timeout: std::time::Duration::from_secs(timeout),
        overrides: crate::check::gpufit::Overrides::from_process()?,
        consumer_notes: Some(crate::doctor::finders::profile_consumer_notes),
    })
}

/// Prints one profile's verdict and reasons (nothing on stdout with `--json`), and warns on
/// stderr when it found no GPU.
pub fn print_check(ctx: &Ctx, pc: &ProfileCheck, json: bool) {
    if json {
        return;
    }
    writeln!(ctx.out(), "check {}", profile_check::summary(pc));
    // Reasons say what is wrong: always for a failed profile; otherwise with --verbose.
    if ctx.verbose || pc.result.status == CheckStatus::Fail {
        for r in &pc.result.reasons {
            writeln!(ctx.out(), "    {}", r.cited());
            if let Some(h) = &r.hint {
                writeln!(ctx.out(), "      hint: {h}");
            }
        }
    }
    if ctx.verbose {
        for n in pc.result.notes.iter().filter(|n| !matches!(NoteKind::of(n), Some(NoteKind::Incomplete | NoteKind::Damaged | NoteKind::NotVerified))) {
            writeln!(ctx.out(), "    note: {n}");
        }
    }
    for n in pc.result.notes.iter().filter(|n| NoteKind::of(n).is_some()) {
        let rule = (NoteKind::of(n) == Some(NoteKind::Incomplete)).then_some(crate::error::Rule::IncompleteSet);
        writeln!(ctx.err(), "{}: profile {}: {n}", crate::error::rule::labelled("warning", rule), pc.profile);
    }
    // No GPU: said once per run (each profile with --verbose).
    static NO_GPU_SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if pc.result.status == CheckStatus::NoGpu && !ctx.quiet {
        if ctx.verbose {
            writeln!(ctx.err(), "warning: profile {}: no GPU here, so only loading and versions were checked (--require-gpu makes this an error)", pc.profile);
        } else if !NO_GPU_SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
            writeln!(ctx.err(), "warning: no GPU here, so only loading and versions are checked (--require-gpu makes this an error)");
        }
    }
}

#[derive(Serialize)]
struct CheckJson<'a> {
    generation: u64,
    profiles: &'a [ProfileCheck],
    /// Profiles not checked (`check = "none"`), named or with `--require-gpu`: profile -> why.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    skipped: std::collections::BTreeMap<&'a str, String>,
}

/// `cuenv check [PROFILE...]`: checks the current generation's profiles.
pub fn check(ctx: &Ctx, profiles: &[String], timeout: u64, require_gpu: bool, json: bool) -> Result<ExitCode, Report> {
    super::require_home(ctx)?;
    let _writer = lock_and_recover(ctx)?;
    let n = generation::current(&ctx.layout).ok_or(NoGeneration)?;
    let m = generation::read(&ctx.layout, n)?;
    for p in profiles {
        m.profile(p).map_err(|e| e.in_home(&ctx.layout))?;
    }
    // Each profile's check shows as a busy phase on a terminal, cleared before its line prints.
    let progress = super::reporter::for_stderr(ctx.quiet || json);
    let names: Vec<String> = profile_check::to_check(&m, profiles).map(|v| v.name.clone()).collect();
    let mut next = names.iter();
    if let Some(first) = next.next() {
        progress.busy(&format!("checking {first}"));
    }
    let results = profile_check::run_and_record(&ctx.layout, n, &m, profiles, &options(timeout)?, &mut |pc| {
        progress.finish();
        print_check(ctx, pc, json);
        if let Some(name) = next.next() {
            progress.busy(&format!("checking {name}"));
        }
    });
    progress.finish();
    let results = results?;
    // A profile whose check is `none` is said to be skipped, and why, when it was named or a
    // GPU was required (else a silent run would look like a pass).
    let skipped: std::collections::BTreeMap<&str, String> =
        if !profiles.is_empty() || require_gpu { profile_check::skipped(&m, profiles).collect() } else { Default::default() };
    if !json {
        for (p, why) in &skipped {
            writeln!(ctx.out(), "check {p}: {why}");
        }
    }
    if json {
        ctx.print_json_sorted(&CheckJson { generation: n, profiles: &results, skipped });
    }
    if profile_check::acceptable(&results, require_gpu) {
        return Ok(ExitCode::Success);
    }
    // The verdict, as an error line: a failed check, or (--require-gpu) one that found no GPU.
    let failed = profile_check::CheckFailed {
        profiles: results.iter().filter(|r| !profile_check::acceptable(std::slice::from_ref(*r), require_gpu)).map(|r| r.profile.clone()).collect(),
        no_gpu: require_gpu && results.iter().all(|r| r.result.status != CheckStatus::Fail),
    };
    if !json {
        ctx.report("error", &failed);
    }
    Ok(crate::error::Diagnose::exit_code(&failed))
}
