//! Classification: turns one [`ProbeOutcome`] and the profile's [`Expected`] into `pass`,
//! `fail` or `no-gpu` with reasons in words.
//!
//! Invariants: reads nothing but the outcome, the expectation and (to compare paths) the file
//! system's canonical names; never runs native code. `fail` wins over `no-gpu`, which wins
//! over `pass`.

use std::path::{Path, PathBuf};

use super::explain::{
    cuda_version, decode_cudnn, describe_end, explain_cudnn_status, explain_dlerror, explain_windows_error, human_ms, missing_libraries, stderr_suffix,
};
use super::{CheckResult, CheckStatus, Expected, ProbeEnd, ProbeOutcome, Reason, ReasonKind};
use crate::cudnn::libname;
use crate::error::Rule;
use crate::probe::{self, Conv, LoadAttempt, ModuleKind, Report};
pub(super) use crate::sys::paths::is_under;
use crate::sys::paths::{self, same_path};

// ---------------------------------------------------------------------------------------
// Classification
// ---------------------------------------------------------------------------------------

/// Turns a probe outcome into `pass`, `fail` or `no-gpu` with reasons in words.
pub fn classify(outcome: &ProbeOutcome, expected: &Expected) -> CheckResult {
    let mut c = Classifier { outcome, expected, reasons: Vec::new(), notes: Vec::new() };
    c.run();
    let status = if c.reasons.iter().any(|r| r.kind.is_failure()) {
        CheckStatus::Fail
    } else if c.reasons.is_empty() {
        CheckStatus::Pass
    } else {
        CheckStatus::NoGpu
    };
    CheckResult { status, reasons: c.reasons, notes: c.notes, report: outcome.report.clone() }
}

struct Classifier<'a> {
    outcome: &'a ProbeOutcome,
    expected: &'a Expected,
    reasons: Vec<Reason>,
    notes: Vec<String>,
}

impl Classifier<'_> {
    fn fail(&mut self, kind: ReasonKind, msg: impl Into<String>) {
        self.reasons.push(Reason::new(kind, msg));
    }

    /// [`Classifier::fail`] with the docs/loader.md rule the reason is a verdict of.
    fn fail_citing(&mut self, kind: ReasonKind, msg: impl Into<String>, rule: Option<Rule>) {
        let r = Reason::new(kind, msg);
        self.reasons.push(match rule {
            Some(rule) => r.citing(rule),
            None => r,
        });
    }

    fn run(&mut self) {
        let o = self.outcome;
        let during = o.last_step.as_deref().map(|s| format!(" during {s}")).unwrap_or_default();
        match &o.end {
            ProbeEnd::SpawnFailed { error } => {
                self.fail(ReasonKind::BadReport, format!("the probe could not run: {error}"));
                return;
            }
            ProbeEnd::TimedOut { after_ms } => {
                self.fail(
                    ReasonKind::Timeout,
                    format!("the probe did not finish within {}{during} and was killed{}", human_ms(*after_ms), stderr_suffix(&o.stderr_tail)),
                );
                self.missing_from_text(&o.stderr_tail);
                return;
            }
            _ => {}
        }
        let Some(report) = &o.report else {
            match &o.end {
                ProbeEnd::Exited { code: 0 } => self.fail(
                    ReasonKind::BadReport,
                    format!("the probe exited without a report: {}{}", o.report_error.as_deref().unwrap_or("unknown"), stderr_suffix(&o.stderr_tail)),
                ),
                end => {
                    self.missing_from_text(&o.stderr_tail);
                    let abort = matches!(end, ProbeEnd::Signaled { signal: 6, .. } | ProbeEnd::Exited { code: 3 | 9 | 134 })
                        || matches!(end, ProbeEnd::Exited { code } if *code as u32 == 0xC000_0409);
                    let hint = if abort { "; cuDNN aborts the process when it cannot load a sub-library" } else { "" };
                    self.fail(ReasonKind::Crash, format!("the probe process {}{during}{hint}{}", describe_end(end), stderr_suffix(&o.stderr_tail)));
                }
            }
            return;
        };
        if !matches!(o.end, ProbeEnd::Exited { code: 0 }) {
            self.notes.push(format!("the probe process {} after it had reported", describe_end(&o.end)));
        }
        self.report(report);
    }

    fn report(&mut self, r: &Report) {
        let gpu = self.driver(r);
        if !r.dispatcher.loaded {
            self.load_failure(&r.dispatcher, "the cuDNN dispatcher");
            return;
        }
        self.modules(r);
        self.versions(r);
        self.version_checks(r);
        self.companions(r);
        if let Some(rt) = &r.cudart {
            if !rt.load.loaded {
                self.load_failure(&rt.load, "the CUDA runtime");
            } else if let Some(v) = rt.runtime_version {
                if let Some(want) = self.expected.cuda_major.filter(|want| (v / 1000) as u64 != *want) {
                    self.fail(
                        ReasonKind::WrongCudaMajor,
                        format!("the CUDA runtime {} is version {}, but the profile is for CUDA {}", rt.load.name, cuda_version(v as u64), want),
                    );
                } else {
                    self.notes.push(format!("CUDA runtime {} (version {})", rt.load.name, cuda_version(v as u64)));
                }
            } else if let Some(e) = &rt.runtime_error {
                self.notes.push(format!("CUDA runtime {} loaded; cudaRuntimeGetVersion returned {} ({})", rt.load.name, e.name, e.code));
            }
        }
        if let Some(h) = &r.handle
            && !h.ok()
        {
            if !gpu && h.name.contains("NOT_INITIALIZED") {
                self.notes.push(format!("cudnnCreate returned {} ({}), as expected without a GPU", h.name, h.code));
            } else {
                let mut msg = format!("cudnnCreate returned {} ({})", h.name, h.code);
                if let Some(extra) = explain_cudnn_status(&h.name) {
                    msg.push_str(&format!(": {extra}"));
                }
                if h.name.contains("ARCH_MISMATCH")
                    && let Some(dev) = r.driver.as_ref().and_then(|d| d.devices.first())
                {
                    msg.push_str(&format!(
                        "; the GPU {} has compute capability {}.{}{}",
                        dev.name,
                        dev.compute_capability[0],
                        dev.compute_capability[1],
                        r.cudnn
                            .as_ref()
                            .and_then(|v| v.max_device_version)
                            .map(|m| format!(", and this cuDNN supports up to {}.{}", m / 100, m % 100 / 10))
                            .unwrap_or_default()
                    ));
                }
                self.fail(ReasonKind::CudnnStatus, msg);
            }
        }
        match &r.conv {
            Conv::NotRequested => {}
            Conv::Done(c) if c.matches => self
                .notes
                .push(format!("convolution matched the CPU reference (max abs error {:.1e}) with {} in {:.3} ms", c.max_abs_error, c.algo, c.forward_ms)),
            Conv::Done(c) => self.fail(
                ReasonKind::WrongResult,
                format!(
                    "the GPU convolution ({}) differs from the CPU reference by up to {} (the limit is {:.0e})",
                    c.algo,
                    if c.max_abs_error == f64::MAX { "a non-finite value".to_string() } else { format!("{:.3e}", c.max_abs_error) },
                    probe::MAX_ABS_ERROR
                ),
            ),
            Conv::Failed { step, status } => {
                let mut msg = format!("{step} returned {} ({})", status.name, status.code);
                if let Some(extra) = explain_cudnn_status(&status.name) {
                    msg.push_str(&format!(": {extra}"));
                }
                self.fail(ReasonKind::ConvFailed, msg)
            }
            Conv::Skipped { why } => {
                if gpu && !self.reasons.iter().any(|x| x.kind.is_failure()) {
                    self.fail(ReasonKind::ConvFailed, format!("the convolution did not run: {why}"));
                } else if !gpu {
                    self.notes.push(format!("convolution skipped: {why}"));
                }
            }
        }
    }

    /// Records no-driver / no-device; returns whether a usable GPU is present.
    fn driver(&mut self, r: &Report) -> bool {
        match &r.driver {
            None => {
                let why = r.driver_absent.clone().unwrap_or_else(|| format!("{} could not be loaded", probe::driver_name()));
                self.fail(ReasonKind::NoDriver, format!("no NVIDIA driver: {why}"));
                false
            }
            Some(d) => {
                let ver = d.version.map(|v| format!(", CUDA {}", cuda_version(v as u64))).unwrap_or_default();
                if !d.init.ok() {
                    // CUDA_ERROR_STUB_LIBRARY (34, cuda.h): the toolkit's link-time stub answered,
                    // not the driver (docs/loader.md D1).
                    let stub = match r.modules.iter().find(|m| m.kind == ModuleKind::Driver) {
                        Some(m) if d.init.code == 34 => format!(
                            " ({} is the CUDA toolkit's link-time stub libcuda, not the driver: keep `stubs` folders off LD_LIBRARY_PATH, they are for linking only)",
                            m.path
                        ),
                        _ => String::new(),
                    };
                    self.fail(
                        ReasonKind::NoDevice,
                        format!("the NVIDIA driver ({}{ver}) found no usable GPU: cuInit returned {}{stub}", d.library, d.init.name),
                    );
                    false
                } else if d.devices.is_empty() {
                    self.fail(ReasonKind::NoDevice, format!("the NVIDIA driver ({}{ver}) reports no devices", d.library));
                    false
                } else {
                    let dev = &d.devices[0];
                    self.notes.push(format!(
                        "GPU 0: {} (compute capability {}.{}, {} MiB), driver{ver}",
                        dev.name,
                        dev.compute_capability[0],
                        dev.compute_capability[1],
                        dev.total_memory >> 20
                    ));
                    true
                }
            }
        }
    }

    fn load_failure(&mut self, attempt: &LoadAttempt, role: &str) {
        let Some(err) = &attempt.error else {
            self.fail(ReasonKind::LoaderError, format!("{role} {} did not load", attempt.name));
            return;
        };
        let var = &self.outcome.search_var;
        let path_list = if self.outcome.search_path.is_empty() {
            format!("{var} is empty")
        } else {
            format!(
                "{var} is {}",
                self.outcome.search_path.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(if cfg!(windows) { ";" } else { ":" })
            )
        };
        if let Some(code) = err.code {
            let text = explain_windows_error(code).map_or_else(|| format!("error {code}: {}", err.message), str::to_string);
            let kind = if code == 126 { ReasonKind::MissingLibrary } else { ReasonKind::LoaderError };
            self.fail(kind, format!("{role} {} could not be loaded: {text} ({path_list})", attempt.name));
            return;
        }
        let missing = missing_libraries(&err.message);
        if let Some(m) = missing.first() {
            if *m == attempt.name {
                self.fail(
                    ReasonKind::MissingLibrary,
                    format!("{role} {} was not found: no folder on {var}, in the ld.so cache or in the default folders holds it ({path_list})", attempt.name),
                );
            } else {
                self.fail(ReasonKind::MissingLibrary, format!("{role} {} needs {m}, which was not found: {}", attempt.name, err.message));
            }
            return;
        }
        let hint = explain_dlerror(&err.message).map(|h| format!(" ({h})")).unwrap_or_default();
        self.fail(ReasonKind::LoaderError, format!("the OS loader could not load {role} {}: {}{hint}", attempt.name, err.message));
    }

    fn missing_from_text(&mut self, text: &str) {
        for m in missing_libraries(text) {
            self.fail_citing(
                ReasonKind::MissingLibrary,
                format!(
                    "cuDNN could not load its sub-library {m}; it is missing from the folder the dispatcher came from and from {}",
                    self.outcome.search_var
                ),
                libname::parse(&m).is_some_and(|l| l.stem.is_some()).then_some(Rule::IncompleteSet),
            );
        }
    }

    fn modules(&mut self, r: &Report) {
        let entry = canonical(&self.expected.entry_dir);
        let cudnn: Vec<(&probe::Module, PathBuf)> =
            r.modules.iter().filter(|m| m.kind == ModuleKind::Cudnn).map(|m| (m, canonical(Path::new(&m.path)))).collect();
        if cudnn.is_empty() {
            self.notes.push("no cuDNN module appears in the process's module list".into());
            return;
        }
        // Folders in load order, with the modules each gave.
        let mut folders: Vec<(PathBuf, Vec<String>)> = Vec::new();
        for (m, p) in &cudnn {
            let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
            match folders.iter_mut().find(|(d, _)| same_path(d, &dir)) {
                Some((_, names)) => names.push(m.name.clone()),
                None => folders.push((dir, vec![m.name.clone()])),
            }
        }
        if folders.len() > 1 {
            self.fail(
                ReasonKind::MixedVersions,
                format!(
                    "cuDNN modules were loaded from {} folders: {}; all of them must come from one release",
                    folders.len(),
                    folders.iter().map(|(d, n)| format!("{} ({})", d.display(), n.join(", "))).collect::<Vec<_>>().join("; ")
                ),
            );
        }
        let mut inside_names = Vec::new();
        for (dir, names) in &folders {
            if is_under(dir, &entry) {
                inside_names.extend(names.iter().cloned());
                continue;
            }
            let dispatcher = names.iter().any(|n| libname::is_dispatcher(n));
            let what =
                if dispatcher { format!("the cuDNN dispatcher {}", names.iter().find(|n| libname::is_dispatcher(n)).unwrap()) } else { names.join(", ") };
            let why = self.why_loaded_from(dir, &entry, &names[0]);
            self.fail(ReasonKind::Shadowed, format!("{what} came from {}, not from the profile's entry {}: {why}", dir.display(), entry.display()));
        }
        if !inside_names.is_empty() && folders.len() == 1 {
            self.notes.push(format!("cuDNN loaded from the profile's entry: {}", inside_names.join(", ")));
        }
    }

    /// Why the loader probably took `name` from `dir` rather than from the entry.
    fn why_loaded_from(&self, dir: &Path, entry: &Path, name: &str) -> String {
        let o = self.outcome;
        let var = &o.search_var;
        let search: Vec<PathBuf> = o.search_path.iter().map(|p| canonical(p)).collect();
        // The first folder that is the winner, or holds `name` as a link into it.
        let pos_won = o.search_path.iter().zip(&search).position(|(raw, canon)| {
            same_path(canon, dir) || {
                let f = raw.join(name);
                f.exists() && canonical(&f).parent().is_some_and(|p| same_path(p, dir))
            }
        });
        let shown = |i: usize| {
            if same_path(&search[i], dir) { dir.display().to_string() } else { format!("{} (which links {name} to it)", o.search_path[i].display()) }
        };
        let pos_entry = search.iter().position(|p| is_under(p, entry));
        let mut why = if o.preload.iter().any(|p| same_path(&canonical(p).parent().map(Path::to_path_buf).unwrap_or_default(), dir)) {
            "LD_PRELOAD loads it before anything else".to_string()
        } else {
            match (pos_won, pos_entry) {
                (Some(w), Some(e)) if w < e => format!("{var} lists {} (position {}) before the profile's folder (position {})", shown(w), w + 1, e + 1),
                (Some(w), None) => format!("{var} lists {} (position {}) and does not list the profile's folder at all", shown(w), w + 1),
                (Some(_), Some(_)) => {
                    format!("the profile's folder comes first on {var} but the loader did not take {name} from it (is it missing from the entry?)")
                }
                (None, _) if cfg!(windows) => format!(
                    "{} is not on PATH: the loader found it first in the application's folder, System32, the Windows folder or the current folder, or a copy with that name was already loaded in the process",
                    dir.display()
                ),
                (None, e) => {
                    let system = ["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib"].iter().any(|s| dir.starts_with(s));
                    let base = if system {
                        format!("{} is a system folder, which the loader searches after {var} (ld.so cache, default folders)", dir.display())
                    } else {
                        format!("{} is not on {var}: it came through another library's RPATH/RUNPATH or the ld.so cache", dir.display())
                    };
                    if e.is_none() { format!("{base}, and the profile's folder is not on {var}") } else { base }
                }
            }
        };
        let s = dir.to_string_lossy().to_ascii_lowercase();
        if s.contains("site-packages") || s.contains("dist-packages") {
            why.push_str(" (a Python package's bundled copy)");
        } else if dir.parent().is_some_and(|p| p.join("conda-meta").is_dir() || p.parent().is_some_and(|pp| pp.join("conda-meta").is_dir())) {
            why.push_str(" (the conda environment's own libraries)");
        }
        why
    }

    fn versions(&mut self, r: &Report) {
        let Some(v) = &r.cudnn else {
            self.fail(ReasonKind::LoaderError, format!("{} does not export cudnnGetVersion: it is not a cuDNN dispatcher", r.dispatcher.name));
            return;
        };
        let want = self.expected.version.cudnn_encoded();
        if v.version != want {
            self.fail(
                ReasonKind::VersionMismatch,
                format!("cuDNN reports version {}, but the profile's entry is cuDNN {}", decode_cudnn(v.version), self.expected.version),
            );
        } else {
            self.notes.push(format!("cuDNN reports version {}, as the profile's entry ({})", decode_cudnn(v.version), self.expected.version));
        }
        if v.cudart_version == 0 {
            self.notes.push("cudnnGetCudartVersion is not exported; the CUDA major of this cuDNN build is not checked".into());
        } else if let Some(want) = self.expected.cuda_major.filter(|want| v.cudart_version / 1000 != *want) {
            self.fail(
                ReasonKind::WrongCudaMajor,
                format!("this cuDNN was built for CUDA {}, but the profile is for CUDA {}", cuda_version(v.cudart_version), want),
            );
        } else {
            self.notes.push(format!("this cuDNN was built for CUDA {}", cuda_version(v.cudart_version)));
        }
    }
}

impl Classifier<'_> {
    /// cuDNN's own version checks (docs/loader.md, C1): each non-zero answer is a failure
    /// naming the check, its status, the sub-library it concerns and the file the loader
    /// mapped for it; the libraries no check covers are said to be not verified.
    /// The CUDA libraries around cuDNN (F1-F4: [`crate::companion`]): what the probe observed
    /// loading them, and the files it had mapped at the end.
    fn companions(&mut self, r: &Report) {
        let Some(loads) = &r.companions else { return };
        let mapped: Vec<std::path::PathBuf> = r.modules.iter().map(|m| std::path::PathBuf::from(&m.path)).collect();
        let verdicts = crate::companion::judge_loads(loads, |_| None).into_iter().chain(crate::companion::judge_mapped(&mapped));
        let mut failed = false;
        for v in verdicts {
            failed = true;
            self.reasons.push(Reason::new(ReasonKind::Companion, v.message).citing(v.rule).hinting(v.hint));
        }
        if failed {
            return;
        }
        for l in loads {
            if let (None, Some(untold)) = (&l.path, &l.wanted.untold) {
                self.notes.push(format!(
                    "not verified: cuDNN also loads {} as {untold}, completed at run time with its build's CUDA version, which its files do not tell{}",
                    l.wanted.family,
                    if l.wanted.names.is_empty() { String::new() } else { format!("; {} was not found", l.wanted.names.join(", ")) }
                ));
            }
            if let Some(p) = &l.path {
                let compiled = l.compile.as_ref().map(|c| format!("; it compiled a trivial program in {:.0} ms", c.ms)).unwrap_or_default();
                self.notes.push(format!("{} {} from {}{compiled}", l.wanted.family, l.loaded.as_deref().unwrap_or_default(), p));
            }
        }
    }

    fn version_checks(&mut self, r: &Report) {
        let Some(vc) = &r.version_checks else { return };
        if let Some(e) = &vc.error {
            self.notes.push(format!("not verified: cuDNN's own version checks were not called ({e})"));
            return;
        }
        if vc.checks.is_empty() && vc.not_called.is_empty() {
            self.notes.push(format!(
                "not verified: the dispatcher {} exports no cuDNN version check, so the sub-libraries' releases are not compared",
                r.dispatcher.name
            ));
            return;
        }
        let entry = canonical(&self.expected.entry_dir);
        let os = if r.os == "windows" { libname::Os::Windows } else { libname::Os::Linux };
        let mut passed = Vec::new();
        for c in &vc.checks {
            if c.status.ok() {
                passed.push(c.name.as_str());
                continue;
            }
            // The library that exports the check (read from the files), else the name's convention.
            let stem = c.library.as_deref().and_then(libname::parse).and_then(|l| l.stem).or_else(|| probe::check_stem(&c.name)).unwrap_or_default();
            let file = libname::sub_library_name(&stem, r.major, os);
            let mapped =
                r.modules.iter().find(|m| m.kind == ModuleKind::Cudnn && libname::parse(&m.name).and_then(|l| l.stem).as_deref() == Some(stem.as_str()));
            let from = match mapped {
                Some(m) => {
                    let p = canonical(Path::new(&m.path));
                    let inside = if is_under(&p, &entry) { "inside" } else { "outside" };
                    format!("loaded from {} ({inside} {})", p.display(), entry.display())
                }
                None => "not among the modules the process mapped".to_string(),
            };
            let why = explain_cudnn_status(&c.status.name).unwrap_or("cuDNN refused the set");
            self.fail_citing(
                ReasonKind::SubLibraryMismatch,
                format!(
                    "cuDNN's own version check {} returned {} ({}): {why}; it concerns the sub-library {file} (`{stem}`), {from}, and the libraries it depends on",
                    c.name, c.status.name, c.status.code
                ),
                rule_of_status(c.status.code),
            );
        }
        if !vc.not_called.is_empty() {
            self.notes.push(format!(
                "not verified: {} not called: the sub-library is in neither the dispatcher's folder nor a folder on {} (cuDNN would abort the process at the call)",
                vc.not_called.join(", "),
                self.outcome.search_var
            ));
        }
        if passed.len() == vc.checks.len() && !passed.is_empty() {
            self.notes.push(format!("cuDNN's own version checks passed: {} (CUDNN_STATUS_SUCCESS)", passed.join(", ")));
        }
        if !vc.unchecked.is_empty() {
            self.notes.push(format!(
                "not verified: {} {} no version check of {} own, so cuDNN's checks say nothing of {}",
                vc.unchecked.join(", "),
                if vc.unchecked.len() == 1 { "has" } else { "have" },
                if vc.unchecked.len() == 1 { "its" } else { "their" },
                if vc.unchecked.len() == 1 { "it" } else { "them" },
            ));
        }
    }
}

/// `p` canonical, as users see it (no `\\?\` prefix); `p` itself when it cannot be resolved.
pub(super) fn canonical(p: &Path) -> PathBuf {
    paths::canonical_shown(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The rule a non-zero answer of a `cudnn*VersionCheck` is a verdict of (cuDNN API
/// reference, `cudnnStatus_t`): `CUDNN_STATUS_VERSION_MISMATCH` (14, 8.x) and
/// `CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH` (1002, 9.x) say two releases (V2);
/// `CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED` (3009, 9.x: the sub-library could not be loaded)
/// says the set lacks it (R2). Other answers cite no rule.
pub fn rule_of_status(code: i64) -> Option<Rule> {
    match code {
        14 | 1002 => Some(Rule::TwoReleases),
        3009 => Some(Rule::IncompleteSet),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use crate::probe::{Cudart, CudnnVersions, Driver, LoadError};

    fn classify_report(f: &Fx, r: Report) -> CheckResult {
        classify(&outcome(Some(r), ok_end(), vec![f.entry.join("lib")]), &expected(f))
    }

    fn kinds(c: &CheckResult) -> Vec<ReasonKind> {
        c.reasons.iter().map(|r| r.kind).collect()
    }

    #[test]
    fn pass_with_gpu_and_matching_convolution() {
        let f = fx();
        let c = classify_report(&f, report(&f));
        assert_eq!(c.status, CheckStatus::Pass, "{:?}", c.reasons);
        assert!(c.reasons.is_empty());
        let notes = c.notes.join("\n");
        assert!(notes.contains("convolution matched"), "{notes}");
        assert!(notes.contains("cuDNN reports version 9.5.0, as the profile's entry (9.5.0.50)"), "{notes}");
        assert!(notes.contains("this cuDNN was built for CUDA 12.6"), "{notes}");
        assert!(!notes.contains("90500") && !notes.contains("12060"), "versions print as 9.5.0 / 12.6: {notes}");
        assert!(notes.contains("NVIDIA H200"), "{notes}");
    }

    #[test]
    fn no_driver_is_no_gpu_and_not_initialized_is_expected() {
        let f = fx();
        let mut r = report(&f);
        r.driver = None;
        r.driver_absent = Some("libcuda.so.1 could not be loaded: libcuda.so.1: cannot open shared object file".into());
        r.handle = Some(status(1001, "CUDNN_STATUS_NOT_INITIALIZED"));
        r.conv = Conv::Skipped { why: "no NVIDIA driver".into() };
        let c = classify_report(&f, r);
        assert_eq!(c.status, CheckStatus::NoGpu);
        assert_eq!(kinds(&c), vec![ReasonKind::NoDriver]);
        assert!(c.reasons[0].message.contains("libcuda.so.1"), "{}", c.reasons[0]);
        assert!(c.notes.iter().any(|n| n.contains("NOT_INITIALIZED") && n.contains("as expected")), "{:?}", c.notes);
    }

    #[test]
    fn driver_without_device_is_no_gpu() {
        let f = fx();
        let mut r = report(&f);
        r.driver = Some(Driver { init: status(100, "CUDA_ERROR_NO_DEVICE"), devices: vec![], ..gpu() });
        r.handle = Some(status(1001, "CUDNN_STATUS_NOT_INITIALIZED"));
        r.conv = Conv::Skipped { why: "no usable GPU".into() };
        let c = classify_report(&f, r);
        assert_eq!(c.status, CheckStatus::NoGpu);
        assert_eq!(kinds(&c), vec![ReasonKind::NoDevice]);
        assert!(c.reasons[0].message.contains("CUDA_ERROR_NO_DEVICE"));
        let mut r = report(&f);
        r.driver = Some(Driver { devices: vec![], ..gpu() });
        r.handle = Some(status(1001, "CUDNN_STATUS_NOT_INITIALIZED"));
        assert_eq!(kinds(&classify_report(&f, r)), vec![ReasonKind::NoDevice]);
        // The toolkit's stub answered cuInit: the reason names the file the probe mapped.
        let mut r = report(&f);
        r.driver = Some(Driver { init: status(34, "CUDA_ERROR_STUB_LIBRARY"), devices: vec![], ..gpu() });
        r.modules.push(crate::probe::Module { path: "/usr/local/cuda/lib64/stubs/libcuda.so.1".into(), name: "libcuda.so.1".into(), kind: ModuleKind::Driver });
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::NoDevice]);
        assert!(c.reasons[0].message.contains("/usr/local/cuda/lib64/stubs/libcuda.so.1 is the CUDA toolkit's link-time stub"), "{}", c.reasons[0]);
    }

    #[test]
    fn shadowed_by_an_earlier_ld_library_path_folder_names_it() {
        let f = fx();
        let mut r = report(&f);
        r.modules = vec![module(&f.other.join("lib"), "libcudnn.so.9"), module(&f.other.join("lib"), "libcudnn_graph.so.9")];
        let o = outcome(Some(r), ok_end(), vec![f.other.join("lib"), f.entry.join("lib")]);
        let c = classify(&o, &expected(&f));
        assert_eq!(c.status, CheckStatus::Fail);
        assert_eq!(kinds(&c), vec![ReasonKind::Shadowed]);
        let m = &c.reasons[0].message;
        assert!(m.contains(&f.other.join("lib").display().to_string()), "{m}");
        assert!(m.contains("the cuDNN dispatcher libcudnn.so.9"), "{m}");
        assert!(m.contains("LD_LIBRARY_PATH lists") && m.contains("(position 1) before the profile's folder (position 2)"), "{m}");
    }

    #[test]
    fn shadowed_when_the_entry_is_not_on_the_search_path() {
        let f = fx();
        let mut r = report(&f);
        r.modules = vec![module(&f.other.join("lib"), "libcudnn.so.9")];
        let c = classify(&outcome(Some(r.clone()), ok_end(), vec![f.other.join("lib")]), &expected(&f));
        assert!(c.reasons[0].message.contains("does not list the profile's folder at all"), "{}", c.reasons[0]);
        let c = classify(&outcome(Some(r), ok_end(), vec![]), &expected(&f));
        if cfg!(windows) {
            // Windows explains the loader's own search order instead.
            assert!(c.reasons[0].message.contains("is not on PATH: the loader found it first"), "{}", c.reasons[0]);
        } else {
            assert!(c.reasons[0].message.contains("is not on LD_LIBRARY_PATH"), "{}", c.reasons[0]);
            assert!(c.reasons[0].message.contains("the profile's folder is not on LD_LIBRARY_PATH"), "{}", c.reasons[0]);
        }
    }

    #[test]
    fn shadowed_through_a_view_link_is_not_shadowed() {
        // The profile reaches the entry through a link (a view); the loader reports real paths.
        let f = fx();
        let view = f.entry.parent().unwrap().parent().unwrap().join("view");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&f.entry, &view).unwrap();
        #[cfg(windows)]
        if std::os::windows::fs::symlink_dir(&f.entry, &view).is_err() || !view.exists() {
            return; // no link privilege (or Wine): nothing to prove here
        }
        let exp = Expected { entry_dir: view.clone(), ..expected(&f) };
        let c = classify(&outcome(Some(report(&f)), ok_end(), vec![view.join("lib")]), &exp);
        assert_eq!(c.status, CheckStatus::Pass, "{:?}", c.reasons);
    }

    #[test]
    fn preload_and_conda_env_are_named() {
        let f = fx();
        let mut r = report(&f);
        r.modules = vec![module(&f.other.join("lib"), "libcudnn.so.9")];
        let mut o = outcome(Some(r.clone()), ok_end(), vec![f.entry.join("lib")]);
        o.preload = vec![f.other.join("lib/libcudnn.so.9")];
        let c = classify(&o, &expected(&f));
        assert!(c.reasons[0].message.contains("LD_PRELOAD"), "{}", c.reasons[0]);
        std::fs::create_dir_all(f.other.join("conda-meta")).unwrap();
        let c = classify(&outcome(Some(r), ok_end(), vec![f.other.join("lib"), f.entry.join("lib")]), &expected(&f));
        assert!(c.reasons[0].message.contains("conda environment"), "{}", c.reasons[0]);
    }

    #[test]
    fn mixed_folders_fail_with_both_named() {
        let f = fx();
        let mut r = report(&f);
        r.modules = vec![module(&f.entry.join("lib"), "libcudnn.so.9"), module(&f.other.join("lib"), "libcudnn_graph.so.9")];
        let c = classify(&outcome(Some(r), ok_end(), vec![f.other.join("lib"), f.entry.join("lib")]), &expected(&f));
        assert_eq!(c.status, CheckStatus::Fail);
        assert_eq!(kinds(&c), vec![ReasonKind::MixedVersions, ReasonKind::Shadowed]);
        let m = &c.reasons[0].message;
        assert!(m.contains("2 folders") && m.contains("libcudnn_graph.so.9") && m.contains(&f.other.join("lib").display().to_string()), "{m}");
        assert!(c.reasons[1].message.starts_with("libcudnn_graph.so.9 came from"), "{}", c.reasons[1]);
    }

    #[test]
    fn version_mismatch_names_both_versions() {
        let f = fx();
        let mut r = report(&f);
        r.cudnn.as_mut().unwrap().version = 90100;
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::VersionMismatch]);
        assert_eq!(c.reasons[0].message, "cuDNN reports version 9.1.0, but the profile's entry is cuDNN 9.5.0.50");
        // 8.x encoding
        let exp = Expected { version: "8.8.0.121".parse().unwrap(), ..expected(&f) };
        let mut r = report(&f);
        r.cudnn = Some(CudnnVersions { version: 8904, cudart_version: 12020, max_device_version: Some(900) });
        let c = classify(&outcome(Some(r), ok_end(), vec![]), &exp);
        assert!(
            c.reasons
                .iter()
                .any(|x| x.kind == ReasonKind::VersionMismatch && x.message == "cuDNN reports version 8.9.4, but the profile's entry is cuDNN 8.8.0.121"),
            "{:?}",
            c.reasons
        );
    }

    #[test]
    fn wrong_cuda_major_from_cudnn_or_runtime() {
        let f = fx();
        let mut r = report(&f);
        r.cudnn.as_mut().unwrap().cudart_version = 11080;
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::WrongCudaMajor]);
        assert!(c.reasons[0].message.contains("built for CUDA 11.8") && c.reasons[0].message.contains("profile is for CUDA 12"), "{}", c.reasons[0]);
        let mut r = report(&f);
        r.cudart.as_mut().unwrap().runtime_version = Some(11080);
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::WrongCudaMajor]);
        assert!(c.reasons[0].message.contains("libcudart.so.12 is version 11.8"), "{}", c.reasons[0]);
        // An unknown CUDA major (0) is not checked.
        let mut r = report(&f);
        r.cudnn.as_mut().unwrap().cudart_version = 11080;
        r.cudart.as_mut().unwrap().runtime_version = Some(11080);
        let unknown = Expected { cuda_major: None, ..expected(&f) };
        let c = classify(&outcome(Some(r), ok_end(), vec![f.entry.join("lib")]), &unknown);
        assert!(!c.has(ReasonKind::WrongCudaMajor), "{:?}", c.reasons);
    }

    #[test]
    fn missing_runtime_is_a_missing_library() {
        let f = fx();
        let mut r = report(&f);
        r.cudart = Some(Cudart {
            load: LoadAttempt {
                name: "libcudart.so.12".into(),
                loaded: false,
                error: Some(LoadError { message: "libcudart.so.12: cannot open shared object file: No such file or directory".into(), code: None }),
            },
            runtime_version: None,
            runtime_error: None,
        });
        r.conv = Conv::Skipped { why: "the CUDA runtime did not load".into() };
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::MissingLibrary], "{:?}", c.reasons);
        assert!(c.reasons[0].message.contains("the CUDA runtime libcudart.so.12 was not found"), "{}", c.reasons[0]);
    }

    fn dispatcher_error(f: &Fx, message: &str, code: Option<i64>) -> CheckResult {
        let mut r = report(f);
        r.dispatcher = LoadAttempt { name: "libcudnn.so.9".into(), loaded: false, error: Some(LoadError { message: message.into(), code }) };
        r.cudnn = None;
        r.cudart = None;
        r.handle = None;
        r.modules.clear();
        r.conv = Conv::Skipped { why: "the cuDNN dispatcher did not load".into() };
        classify_report(f, r)
    }

    #[test]
    fn loader_errors_in_words() {
        let f = fx();
        let c = dispatcher_error(&f, "libcudnn.so.9: cannot open shared object file: No such file or directory", None);
        assert_eq!(kinds(&c), vec![ReasonKind::MissingLibrary]);
        assert!(c.reasons[0].message.contains("libcudnn.so.9 was not found") && c.reasons[0].message.contains("LD_LIBRARY_PATH is "), "{}", c.reasons[0]);
        let c = dispatcher_error(&f, "libz.so.1: cannot open shared object file: No such file or directory", None);
        assert_eq!(kinds(&c), vec![ReasonKind::MissingLibrary]);
        assert!(c.reasons[0].message.contains("needs libz.so.1"), "{}", c.reasons[0]);
        let c = dispatcher_error(&f, "/x/libcudnn.so.9: wrong ELF class: ELFCLASS32", None);
        assert_eq!(kinds(&c), vec![ReasonKind::LoaderError]);
        assert!(c.reasons[0].message.contains("wrong ELF class") && c.reasons[0].message.contains("32-bit"), "{}", c.reasons[0]);
        let c = dispatcher_error(&f, "/x/libcudnn.so.9: undefined symbol: cudnnFoo", None);
        assert!(c.reasons[0].message.contains("another version is mixed in"), "{}", c.reasons[0]);
    }

    #[test]
    fn windows_loader_codes_in_words() {
        let f = fx();
        let c = dispatcher_error(&f, "The specified module could not be found.", Some(126));
        assert_eq!(kinds(&c), vec![ReasonKind::MissingLibrary]);
        assert!(c.reasons[0].message.contains("126 (ERROR_MOD_NOT_FOUND)"), "{}", c.reasons[0]);
        let c = dispatcher_error(&f, "The specified procedure could not be found.", Some(127));
        assert_eq!(kinds(&c), vec![ReasonKind::LoaderError]);
        assert!(c.reasons[0].message.contains("different versions are mixed"), "{}", c.reasons[0]);
        let c = dispatcher_error(&f, "%1 is not a valid Win32 application.", Some(193));
        assert!(c.reasons[0].message.contains("64-bit process"), "{}", c.reasons[0]);
        let c = dispatcher_error(&f, "Access is denied.", Some(5));
        assert!(c.reasons[0].message.contains("error 5: Access is denied."), "{}", c.reasons[0]);
    }

    #[test]
    fn cudnn_status_with_a_gpu_fails_and_names_the_architecture() {
        let f = fx();
        let mut r = report(&f);
        r.handle = Some(status(3007, "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"));
        r.conv = Conv::Skipped { why: "cudnnCreate returned CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH".into() };
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::CudnnStatus]);
        let m = &c.reasons[0].message;
        assert!(m.contains("ARCH_MISMATCH") && m.contains("compute capability 9.0") && m.contains("up to 9.0"), "{m}");
        // With a GPU, NOT_INITIALIZED is a failure too.
        let mut r = report(&f);
        r.handle = Some(status(1, "CUDNN_STATUS_NOT_INITIALIZED"));
        r.conv = Conv::Skipped { why: "x".into() };
        assert_eq!(kinds(&classify_report(&f, r)), vec![ReasonKind::CudnnStatus]);
    }

    #[test]
    fn cudnn_status_without_gpu_other_than_not_initialized_fails() {
        let f = fx();
        let mut r = report(&f);
        r.driver = None;
        r.handle = Some(status(1002, "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH"));
        r.conv = Conv::Skipped { why: "no NVIDIA driver".into() };
        let c = classify_report(&f, r);
        assert_eq!(c.status, CheckStatus::Fail, "fail wins over no-gpu");
        assert_eq!(kinds(&c), vec![ReasonKind::NoDriver, ReasonKind::CudnnStatus]);
        assert!(c.reasons[1].message.contains("sub-libraries are of different versions"), "{}", c.reasons[1]);
    }

    #[test]
    fn convolution_outcomes() {
        let f = fx();
        let mut r = report(&f);
        r.conv = done(3e-3);
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::WrongResult]);
        assert!(c.reasons[0].message.contains("3.000e-3"), "{}", c.reasons[0]);
        let mut r = report(&f);
        r.conv = done(f64::MAX);
        assert!(classify_report(&f, r).reasons[0].message.contains("non-finite"));
        let mut r = report(&f);
        r.conv = Conv::Failed { step: "cudnnFindConvolutionForwardAlgorithm".into(), status: status(3007, "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH") };
        let c = classify_report(&f, r);
        assert_eq!(kinds(&c), vec![ReasonKind::ConvFailed]);
        assert!(c.reasons[0].message.starts_with("cudnnFindConvolutionForwardAlgorithm returned CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"));
        let mut r = report(&f);
        r.conv = Conv::Skipped { why: "cudnnCreate is not exported".into() };
        assert_eq!(kinds(&classify_report(&f, r)), vec![ReasonKind::ConvFailed]);
        let mut r = report(&f);
        r.conv = Conv::NotRequested;
        assert_eq!(classify_report(&f, r).status, CheckStatus::Pass);
    }

    #[test]
    fn crash_reports_signal_step_stderr_and_missing_sub_library() {
        let f = fx();
        let mut o = outcome(None, ProbeEnd::Signaled { signal: 6, name: "SIGABRT".into() }, vec![]);
        o.last_step = Some("cudnnGetVersion".into());
        o.stderr_tail =
            "Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object file: No such file or directory".into();
        let c = classify(&o, &expected(&f));
        assert_eq!(c.status, CheckStatus::Fail);
        assert_eq!(kinds(&c), vec![ReasonKind::MissingLibrary, ReasonKind::Crash]);
        assert!(c.reasons[0].message.contains("sub-library libcudnn_ops_infer.so.8"), "{}", c.reasons[0]);
        let m = &c.reasons[1].message;
        assert!(m.contains("SIGABRT (signal 6) during cudnnGetVersion") && m.contains("Could not load library"), "{m}");
        // Windows: cuDNN's message and an exit code.
        o.end = ProbeEnd::Exited { code: 0xC000_0409_u32 as i32 };
        o.stderr_tail = "Could not locate cudnn_graph64_9.dll. Please make sure it is in your library path!".into();
        let c = classify(&o, &expected(&f));
        assert!(c.reasons[0].message.contains("cudnn_graph64_9.dll"), "{}", c.reasons[0]);
        assert!(c.reasons[1].message.contains("0xC0000409 (STATUS_STACK_BUFFER_OVERRUN"), "{}", c.reasons[1]);
        assert!(c.report.is_none());
    }

    #[test]
    fn timeout_names_the_step() {
        let f = fx();
        let mut o = outcome(None, ProbeEnd::TimedOut { after_ms: 5000 }, vec![]);
        o.last_step = Some("cudnnCreate".into());
        let c = classify(&o, &expected(&f));
        assert_eq!(kinds(&c), vec![ReasonKind::Timeout]);
        assert!(c.reasons[0].message.contains("within 5 s during cudnnCreate and was killed"), "{}", c.reasons[0]);
    }

    #[test]
    fn no_report_and_no_process() {
        let f = fx();
        let mut o = outcome(None, ok_end(), vec![]);
        o.report_error = Some("it printed nothing on stdout".into());
        let c = classify(&o, &expected(&f));
        assert_eq!(kinds(&c), vec![ReasonKind::BadReport]);
        assert!(c.reasons[0].message.contains("printed nothing"));
        let o = outcome(None, ProbeEnd::SpawnFailed { error: "cannot run /x/cuenv: No such file".into() }, vec![]);
        assert!(classify(&o, &expected(&f)).reasons[0].message.contains("could not run"));
    }

    #[test]
    fn report_then_abnormal_exit_is_a_note() {
        let f = fx();
        let c = classify(&outcome(Some(report(&f)), ProbeEnd::Signaled { signal: 11, name: "SIGSEGV".into() }, vec![]), &expected(&f));
        assert_eq!(c.status, CheckStatus::Pass);
        assert!(c.notes.iter().any(|n| n.contains("SIGSEGV") && n.contains("after it had reported")), "{:?}", c.notes);
    }

    #[test]
    fn a_failing_version_check_fails_the_check_naming_the_sub_library_and_its_file() {
        let f = fx();
        let mut r = report(&f);
        r.version_checks = Some(checks(&f, &[("Adv", 0), ("Cnn", 1002), ("Graph", 0), ("Ops", 0)]));
        r.modules.push(module(&f.entry.join("lib"), "libcudnn_cnn.so.9"));
        let c = classify_report(&f, r.clone());
        assert_eq!(c.status, CheckStatus::Fail);
        assert_eq!(kinds(&c), vec![ReasonKind::SubLibraryMismatch]);
        let m = &c.reasons[0].message;
        for want in ["cudnnCnnVersionCheck", "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH (1002)", "libcudnn_cnn.so.9 (`cnn`)", "inside"] {
            assert!(m.contains(want), "{want}: {m}");
        }
        assert!(m.contains(&f.entry.join("lib").join("libcudnn_cnn.so.9").display().to_string()), "{m}");
        assert!(!c.notes.iter().any(|n| n.contains("checks passed")), "{:?}", c.notes);
        // A Windows report names the DLL; an 8.x one its train/infer stem.
        r.os = "windows".into();
        let c = classify_report(&f, r.clone());
        assert!(c.reasons[0].message.contains("cudnn_cnn64_9.dll"), "{}", c.reasons[0]);
        r.os = "linux".into();
        r.major = 8;
        r.version_checks = Some(checks(&f, &[("OpsTrain", 14)]));
        let c = classify_report(&f, r);
        let m = &c.reasons.iter().find(|x| x.kind == ReasonKind::SubLibraryMismatch).unwrap().message;
        assert!(
            m.contains("cudnnOpsTrainVersionCheck returned CUDNN_STATUS_VERSION_MISMATCH (14)") && m.contains("libcudnn_ops_train.so.8 (`ops_train`)"),
            "{m}"
        );
        assert!(m.contains("not among the modules"), "{m}");
    }

    #[test]
    fn passing_version_checks_are_a_note_and_libraries_without_one_are_not_verified() {
        let f = fx();
        let c = classify_report(&f, report(&f));
        assert_eq!(c.status, CheckStatus::Pass, "{:?}", c.reasons);
        let notes = c.notes.join("\n");
        assert!(
            notes.contains("cuDNN's own version checks passed: cudnnAdvVersionCheck, cudnnCnnVersionCheck, cudnnGraphVersionCheck, cudnnOpsVersionCheck"),
            "{notes}"
        );
        assert!(notes.contains("not verified: libcudnn_engines_precompiled.so.9, libcudnn_heuristic.so.9 have no version check"), "{notes}");
        assert!(!notes.contains("fine"), "{notes}");
        // A dispatcher without checks, or one whose exports could not be read: not verified.
        let mut r = report(&f);
        r.version_checks = Some(probe::VersionChecks { checks: vec![], ..checks(&f, &[]) });
        let c = classify_report(&f, r.clone());
        assert_eq!(c.status, CheckStatus::Pass);
        assert!(c.notes.iter().any(|n| n.starts_with("not verified: the dispatcher libcudnn.so.9 exports no cuDNN version check")), "{:?}", c.notes);
        r.version_checks = Some(probe::VersionChecks { error: Some("its export table could not be read: x".into()), ..checks(&f, &[]) });
        let c = classify_report(&f, r);
        assert!(c.notes.iter().any(|n| n.contains("not verified: cuDNN's own version checks were not called")), "{:?}", c.notes);
    }
}
