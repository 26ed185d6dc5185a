//! Checking a generation's profiles: each one's environment (as its activation produces it,
//! [`crate::check::activate`]) is handed to a fresh probe process ([`crate::check::run_probe`]) and
//! the outcome is judged against the profile's store entry ([`crate::check::classify`]).
//!
//! Results are written to `generations/<N>/check.json` (the manifest itself is never
//! modified) and read back by `status` and `generations`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::check::activate;
use crate::check::gpufit;
use crate::check::{self, CheckResult, CheckStatus, Expected};
use crate::cudnn::platform::Platform;
use crate::generation::{self, Manifest, ViewMode, ViewRecord};
use crate::home::layout::Layout;
use crate::profile::Check;

/// One profile's check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProfileCheck {
    /// Profile name.
    pub profile: String,
    /// What was asked (`conv` or `load`).
    pub check: Check,
    /// The verdict, reasons and the probe's report.
    pub result: CheckResult,
    /// Wall time of the probe process in milliseconds.
    pub elapsed_ms: u64,
    /// The GPU-fit verdict (`fits`, `misfit`, `unknown`: not verified, docs/loader.md G3);
    /// absent when no GPU was known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<gpufit::GpuVerdict>,
}

/// `generations/<N>/check.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckFile {
    /// When the checks ran (RFC 3339).
    pub time: String,
    /// One entry per checked profile.
    pub profiles: Vec<ProfileCheck>,
}

/// Options of a check run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The cuenv executable to run as the probe child.
    pub exe: PathBuf,
    /// The environment to start from (the caller's).
    pub base_env: Vec<(OsString, OsString)>,
    /// Per-profile deadline.
    pub timeout: Duration,
    /// `CUENV_OVERRIDE_DRIVER_CUDA` / `CUENV_OVERRIDE_COMPUTE_CAPABILITY` ([`crate::check::gpufit`]).
    pub overrides: crate::check::gpufit::Overrides,
    /// For a profile bound to a Python env (`python-env`): the notes on the consumers in that
    /// env that would load another cuDNN than the profile's (`crate::doctor`'s finders, given
    /// here by the CLI, as this module is below `doctor`). Each note starts with
    /// [`NoteKind::Consumer`]'s lead.
    pub consumer_notes: Option<ConsumerNotes>,
}

/// [`Options::consumer_notes`]: (the profile's view, the folder of its cuDNN as the check
/// sees it, the profile's environment) to notes.
pub type ConsumerNotes = fn(&ViewRecord, &Path, &[(OsString, OsString)]) -> Vec<String>;

/// The environment a profile's activation produces from `base`, for a generation built in
/// `mode` (link-free: the real folders, as its shims name them).
pub fn profile_env(
    layout: &Layout,
    mode: ViewMode,
    view: &ViewRecord,
    base: &[(OsString, OsString)],
) -> Result<Vec<(OsString, OsString)>, activate::ActivateError> {
    let platform = Platform::host().unwrap_or(Platform::LinuxX86_64);
    match (&view.conda_env, &view.python_env) {
        (Some(prefix), _) => activate::conda_env(prefix, base),
        // No hooks in the env: its own activation (what `bin/activate` does), then the
        // profile's on top, so the profile's folders come first.
        // An env removed since `apply` must not quietly become the shell's own Python.
        (None, Some(prefix)) if crate::pyenv::kind_of(prefix).is_none() => Err(activate::ActivateError {
            env: prefix.display().to_string(),
            detail: format!(
                "profile {}'s python-env is no longer a Python environment (no pyvenv.cfg, no conda-meta/): recreate it, or change `python-env` and run `cuenv apply`",
                view.name
            ),
        }),
        (None, Some(prefix)) => {
            Ok(activate::apply_activation(&activate::python_env(prefix, base), &crate::generation::activation_of(layout, mode, view, platform)))
        }
        (None, None) => Ok(activate::apply_activation(base, &crate::generation::activation_of(layout, mode, view, platform))),
    }
}

/// The notes a check adds beyond the probe's own, each told by how its text starts
/// ([`NoteKind::lead`]); `check` prints them as warnings. The notes stay text (`notes` in
/// `--json` and in the saved results); [`NoteKind::of`] tells a note's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    /// The profile's store entry was added with `--allow-incomplete`.
    Incomplete,
    /// An activation script of another shell that the check did not run
    /// ([`activate::unrun_scripts`]).
    Unrun,
    /// The profile's own conda shim (the one the check runs) is missing or no longer what
    /// the generation wrote.
    Damaged,
    /// The profile's fit to a GPU could not be verified (docs/loader.md G3).
    NotVerified,
    /// A consumer in the profile's Python env (torch, onnxruntime, TransformerEngine, ...) would
    /// load another cuDNN than the profile's, in a process that runs the env hook.
    Consumer,
    /// A framework of the profile's bound env declares another release of the same major
    /// than the profile's, or a requirement cuenv does not read ([`crate::requires`]).
    Framework,
}

impl NoteKind {
    /// Every kind.
    pub const ALL: [NoteKind; 6] = [NoteKind::Incomplete, NoteKind::Unrun, NoteKind::Damaged, NoteKind::NotVerified, NoteKind::Consumer, NoteKind::Framework];

    /// The text a note of this kind starts with.
    pub fn lead(self) -> &'static str {
        match self {
            NoteKind::Incomplete => "incomplete set:",
            NoteKind::Unrun => "other shell:",
            NoteKind::Damaged => "damaged shim:",
            NoteKind::NotVerified => "not verified for this GPU:",
            NoteKind::Consumer => "consumer:",
            NoteKind::Framework => "framework:",
        }
    }

    /// The kind of `note`; `None` for the probe's own notes.
    pub fn of(note: &str) -> Option<NoteKind> {
        NoteKind::ALL.into_iter().find(|k| note.starts_with(k.lead()))
    }
}

/// The note for profile `view`'s activate shim of this platform's shell (`.sh`; `.bat` on
/// Windows) in generation `m`, when it is missing or its bytes differ from the recorded hash:
/// the check then ran the env's activation without it, so a failure names the wrong cause
/// unless this is said.
fn damaged_shim_note(m: &crate::generation::Manifest, view: &crate::generation::ViewRecord) -> Option<String> {
    let ext = if cfg!(windows) { "bat" } else { "sh" };
    let s = m.shims.iter().find(|s| {
        s.profile == view.name
            && s.path.parent().and_then(|p| p.file_name()).is_some_and(|n| n == "activate.d")
            && s.path.extension().is_some_and(|e| e.eq_ignore_ascii_case(ext))
    })?;
    let state = match std::fs::read(&s.path) {
        Err(_) => "is missing",
        Ok(b) if crate::generation::shim_sha256(&b) != s.sha256 => "was changed since cuenv wrote it",
        Ok(_) => return None,
    };
    Some(format!(
        "{} {} {state}, so the check ran the conda env's activation without it; `cuenv apply {}` puts it back",
        NoteKind::Damaged.lead(),
        s.path.display(),
        m.source.display()
    ))
}

/// The note for a store entry that lacks sub-libraries (`store add --allow-incomplete`), if it does.
fn incomplete_note(entry_dir: &std::path::Path) -> Option<String> {
    let meta = crate::store::entry::EntryMeta::read(entry_dir).ok()?;
    (!meta.incomplete.is_empty()).then(|| {
        format!(
            "{} the store entry {} was added with --allow-incomplete and lacks {}: the loader takes those from another folder, or cuDNN fails when it needs them",
            NoteKind::Incomplete.lead(),
            meta.name,
            meta.incomplete.join(", ")
        )
    })
}

/// The profiles of `m` that [`run`] checks, in its order: those named in `only` (all when
/// empty) whose `check` is not `none`.
pub fn to_check<'a>(m: &'a Manifest, only: &'a [String]) -> impl Iterator<Item = &'a crate::generation::ViewRecord> + 'a {
    m.profiles.iter().filter(move |v| v.check != Check::None && (only.is_empty() || only.contains(&v.name)))
}

/// The profiles of `m` that [`run`] skips because their `check` is `none`: those named in
/// `only` (all when empty), with the sentence `check` prints for each.
pub fn skipped<'a>(m: &'a Manifest, only: &'a [String]) -> impl Iterator<Item = (&'a str, String)> + 'a {
    m.profiles.iter().filter(move |v| v.check == Check::None && (only.is_empty() || only.contains(&v.name))).map(|v| {
        (
            v.name.as_str(),
            format!(
                "skipped: its profile says check = \"none\", so nothing was loaded or run for it (no GPU was required of it); set check = \"load\" or \"conv\" in profile {} of the lab file and re-apply to check it",
                v.name
            ),
        )
    })
}

/// At most this many profiles are checked at once: each probe is its own process, mostly one
/// core loading cuDNN's libraries (and, for `conv`, one small convolution on the GPU, which
/// the probes share), so a lab of 3 profiles on 2 cores ends in about the time of its longest
/// check instead of the sum of all (docs/performance.md).
pub const MAX_PARALLEL_CHECKS: usize = 4;

/// Checks the profiles of manifest `m` named in `only` (all when empty), skipping those
/// with `check = "none"`, up to [`MAX_PARALLEL_CHECKS`] at once. Calls `on_result` for each
/// profile in the order of [`to_check`] (a later profile that ends first waits for the ones
/// before it), on the calling thread; returns the results in that order.
pub fn run(layout: &Layout, m: &Manifest, only: &[String], opts: &Options, on_result: &mut dyn FnMut(&ProfileCheck)) -> Vec<ProfileCheck> {
    let views: Vec<&ViewRecord> = to_check(m, only).collect();
    crate::sys::pool::map_in_order(&views, MAX_PARALLEL_CHECKS, &|| (), &|(), view| check_view(layout, m, view, opts), on_result)
}

/// One profile's check: its environment, the probe, and the verdict on what the probe saw.
fn check_view(layout: &Layout, m: &Manifest, view: &ViewRecord, opts: &Options) -> ProfileCheck {
    let major = view.cudnn_version.major();
    let expected = Expected {
        // The entry as the profile sees it: the store entry, or the view's copy.
        entry_dir: if view.copied { layout.profiles_dir().join(&view.name).join("cudnn") } else { view.entry_dir.clone() },
        version: view.cudnn_version.clone(),
        cuda_major: Some(view.cuda_major),
    };
    match profile_env(layout, m.link_mode, view, &opts.base_env) {
        Ok(env) => {
            let outcome = check::run_probe(&opts.exe, &env, major, view.check == Check::Conv, opts.timeout);
            let elapsed_ms = outcome.elapsed_ms;
            let mut result = check::classify(&outcome, &expected);
            // Driver and GPU fit: which fact rules the profile out on this machine.
            let machine = gpufit::Machine::from_report(outcome.report.as_ref(), &opts.overrides);
            // The set's GPU code: the entry's record (read on demand for older entries).
            let code = crate::store::entry::EntryMeta::read(&view.entry_dir).ok().map(|meta| meta.gpu_code_or_read(&view.entry_dir));
            let want = gpufit::Want::new(expected.version.clone(), &view.toolkit_version, view.cuda_major).with_code(code);
            let fit = gpufit::assess(&machine, &want, "this profile's runtime is");
            result.add_misfits(&fit.misfits);
            result.notes.extend(fit.not_verified.iter().map(|nv| nv.to_string()));
            let gpu = fit.verdict();
            // nvJitLink against its users in the profile's folders (F3; the probe loads
            // neither).
            let var = if cfg!(windows) { "PATH" } else { "LD_LIBRARY_PATH" };
            let dirs: Vec<std::path::PathBuf> = env.iter().rev().find(|(k, _)| k == var).map(|(_, v)| std::env::split_paths(v).collect()).unwrap_or_default();
            result.add_companion_verdicts(crate::companion::judge_jitlink_users(&dirs, |n, a| crate::companion::search(&dirs, n, a)));
            if let Some(note) = incomplete_note(&view.entry_dir) {
                result.notes.push(note);
            }
            if let Some(note) = damaged_shim_note(m, view) {
                result.notes.push(note);
            }
            // The consumers of the bound Python env that would load another copy.
            if let (Some(notes), Some(_)) = (opts.consumer_notes, &view.python_env) {
                result.notes.extend(notes(view, &expected.entry_dir, &env));
            }
            // The frameworks of the bound env against the profile's releases: a misfit
            // fails the check; a newer release or a requirement not read is a note.
            if let (Some((prefix, by)), Some(platform)) = (view.bound_env(), crate::cudnn::platform::Platform::host()) {
                for j in crate::requires::judge_profile(prefix, by, platform, &view.cudnn_version.to_string(), &view.toolkit_version) {
                    match j.verdict {
                        crate::requires::Verdict::Misfit(_) => result.add_framework_misfit(crate::requires::describe(&j)),
                        _ => result.notes.push(format!("{} {}", NoteKind::Framework.lead(), crate::requires::describe(&j))),
                    }
                }
            }
            // Scripts of other shells the check did not run.
            for (script, vars) in view.conda_env.as_deref().map(activate::unrun_scripts).unwrap_or_default() {
                result.notes.push(format!(
                    "{} {} changes {} and was not run by the check (it ran the {} scripts only): in a shell that runs it, this profile may load another cuDNN than the check saw",
                    NoteKind::Unrun.lead(),
                    script.display(),
                    vars.join(" and "),
                    if cfg!(windows) { ".bat" } else { ".sh" }
                ));
            }
            ProfileCheck { profile: view.name.clone(), check: view.check, result, elapsed_ms, gpu }
        }
        Err(e) => ProfileCheck {
            profile: view.name.clone(),
            check: view.check,
            result: CheckResult {
                status: CheckStatus::Fail,
                reasons: vec![check::Reason::new(check::ReasonKind::LoaderError, e.to_string())],
                notes: Vec::new(),
                report: None,
            },
            elapsed_ms: 0,
            gpu: None,
        },
    }
}

/// Writes the results of generation `n`'s checks.
pub fn save(layout: &Layout, n: u64, results: &[ProfileCheck]) -> Result<(), crate::error::IoError> {
    let file = CheckFile { time: generation::now(), profiles: results.to_vec() };
    let path = layout.check_results(n);
    serde_json::to_string_pretty(&file)
        .map_err(crate::error::unserializable)
        .and_then(|text| crate::sys::fsutil::write_atomic(&path, text.as_bytes()))
        .map_err(|e| crate::error::IoError::new("save the check results to", path, e))
}

/// Runs the checks of generation `n` (manifest `m`; only the profiles in `only`, or all when
/// it is empty) and saves the results when every profile was checked: the results of a
/// partial check never replace those of the whole generation, which `status`,
/// `generations` and `rollback` read.
pub fn run_and_record(
    layout: &Layout,
    n: u64,
    m: &Manifest,
    only: &[String],
    opts: &Options,
    on_each: &mut dyn FnMut(&ProfileCheck),
) -> Result<Vec<ProfileCheck>, crate::error::IoError> {
    let results = run(layout, m, only, opts, on_each);
    if only.is_empty() {
        save(layout, n, &results)?;
    }
    Ok(results)
}

/// The saved results of generation `n`'s last check, if any.
pub fn load(layout: &Layout, n: u64) -> Option<CheckFile> {
    let text = std::fs::read_to_string(layout.check_results(n)).ok()?;
    serde_json::from_str(&text).ok()
}

/// True when the results let a generation stay current: no `fail`, and no `no-gpu` when a
/// GPU is required.
pub fn acceptable(results: &[ProfileCheck], require_gpu: bool) -> bool {
    results.iter().all(|r| match r.result.status {
        CheckStatus::Pass => true,
        CheckStatus::NoGpu => !require_gpu,
        CheckStatus::Fail => false,
    })
}

/// One line per profile for people: `torch2: no-gpu (cuDNN 9.5.0 for CUDA 12.6, 41 ms)`.
pub fn summary(pc: &ProfileCheck) -> String {
    let r = &pc.result;
    let mut what = Vec::new();
    if let Some(rep) = &r.report {
        if let Some(v) = &rep.cudnn {
            let cuda = if v.cudart_version > 0 { format!(" for CUDA {}", check::cuda_version(v.cudart_version)) } else { String::new() };
            what.push(format!("cuDNN {}{cuda}", check::decode_cudnn(v.version)));
        }
        if let Some(c) = conv_ms(rep) {
            what.push(c);
        }
    }
    what.push(format!("{} ms", pc.elapsed_ms));
    format!("{}: {} ({})", pc.profile, r.status, what.join(", "))
}

fn conv_ms(rep: &crate::probe::Report) -> Option<String> {
    match &rep.conv {
        crate::probe::Conv::Done(c) => Some(format!("conv {} max error {:.1e}, forward {:.3} ms", c.algo, c.max_abs_error, c.forward_ms)),
        _ => None,
    }
}

/// The path of the current executable, for the probe child.
pub fn current_exe() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| Path::new("cuenv").to_path_buf())
}

/// `cuenv check`'s verdict when a profile failed (or, with `--require-gpu`, found no GPU):
/// the error line after the per-profile results, with what to do next. Exit code 4.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the check failed for {}{}", profiles.join(", "), if *no_gpu { " (no GPU found, and --require-gpu asks for one)" } else { "" })]
pub struct CheckFailed {
    /// The profiles that did not pass, in check order.
    pub profiles: Vec<String>,
    /// Every profile that did not pass found no GPU (and `--require-gpu` asks for one).
    pub no_gpu: bool,
}

impl crate::error::Diagnose for CheckFailed {
    fn hint(&self) -> Option<String> {
        Some(if self.no_gpu {
            "run the check on a machine with an NVIDIA GPU and driver, or without --require-gpu".into()
        } else {
            "fix what the reasons above say (or set `check = \"none\"` for that profile), then run `cuenv check` again; --verbose shows every reason and note"
                .into()
        })
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        crate::error::ExitCode::CheckFailed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Check;

    /// A note's kind is told by its lead; the probe's own notes have none.
    #[test]
    fn a_note_kind_is_told_by_its_lead() {
        for k in NoteKind::ALL {
            assert_eq!(NoteKind::of(&format!("{} something", k.lead())), Some(k));
        }
        assert_eq!(NoteKind::of("cuDNN loaded from the profile's entry: libcudnn.so.9"), None);
    }

    /// Versions print as `9.5.0` and `12.6`, never as cuDNN's integers.
    #[test]
    fn the_summary_prints_dotted_versions() {
        let report: crate::probe::Report = serde_json::from_str(
            r#"{"schema":1,"os":"linux","major":9,"dispatcher":{"name":"libcudnn.so.9","loaded":true,"error":null},
            "cudnn":{"version":90500,"cudart_version":12060,"max_device_version":null},"cudart":null,"driver":null,
            "driver_absent":"x","handle":null,"conv":{"state":"not_requested"},"modules":[],"elapsed_ms":1.0}"#,
        )
        .unwrap();
        let pc = ProfileCheck {
            profile: "torch2".into(),
            check: Check::Load,
            result: CheckResult { status: CheckStatus::NoGpu, reasons: vec![], notes: vec![], report: Some(report) },
            elapsed_ms: 41,
            gpu: None,
        };
        assert_eq!(summary(&pc), "torch2: no-gpu (cuDNN 9.5.0 for CUDA 12.6, 41 ms)");
    }
}
