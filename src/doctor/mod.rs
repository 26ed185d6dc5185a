//! `cuenv doctor`: which cuDNN does *this* environment actually load, and why.
//!
//! It answers the question cuenv exists for on a machine as it is, profile or not:
//! 1. **Loader**: for each cuDNN major asked (default 9 and 8), a fresh `cuenv __probe`
//!    child runs with the caller's environment unchanged and loads the dispatcher by name
//!    (`libcudnn.so.<N>`, `cudnn64_<N>.dll`), like a framework does. Where the loader mapped
//!    it, its version, the CUDA runtime it pulled in and every other cuDNN module are
//!    attributed to their origin: a cuenv store entry, a toolkit root (copied by hand), a pip
//!    wheel, PyTorch's bundled copy, a conda env, or some other folder.
//! 2. **Search path**: every folder of the loader's variable (`LD_LIBRARY_PATH` on Linux,
//!    `PATH` on Windows; docs/facts.md §5) that holds a cuDNN dispatcher, in search order:
//!    the first of each major wins, later ones are shadowed.
//! 3. **Toolkit roots** (as `cuenv toolkits` finds them): cuDNN copied in by hand, and the
//!    oddities [`crate::toolkit::inspect_root`] reports.
//! 4. **Framework copies** in the active conda env (`CONDA_PREFIX`): PyTorch's `torch/lib`,
//!    the `nvidia-cudnn-cu*` wheel, conda's own `cudnn` package: frameworks load these
//!    ahead of the search path (docs/facts.md §5).
//! 5. **The active profile** (`CUENV_PROFILE`, set by cuenv's shims): judged exactly like
//!    `cuenv check` judges it ([`crate::check::classify`]), so a shadowed profile is named with
//!    the folder that won and why.
//!
//! Pure except for running the probe children and reading folders; touches nothing.
//!
//! [`pid`] answers the same question for a running process (`cuenv doctor --pid PID`), from its maps.

pub mod deps;
pub mod envs;
pub mod finders;
pub mod frameworks;
pub mod imports;
pub mod loader;
mod origin;
pub mod pid;
mod requires;
pub mod scripts;
mod search_path;
pub mod stubs;
pub mod winsearch;
mod wording;

use wording::{hint_for, model_beside_check, odd_files};

pub use origin::{framework_copies, origin};

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::check::gpufit;
use crate::check::{self, CheckResult, Expected, ProbeOutcome, ReasonKind};
use crate::cudnn::libname::{self, Os};
use crate::cudnn::version::Version;
use crate::generation::{self, ViewRecord};
use crate::home::layout::Layout;
use crate::probe;
use crate::sys::paths;
use crate::toolkit::Toolkit;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Something loads the wrong cuDNN, or cannot load it: `cuenv doctor` exits 4.
    Problem,
    /// A trap that has not sprung in this environment (a shadowed copy, a hand-copied cuDNN).
    Warning,
}

/// One thing the doctor noticed, in words, with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The docs/loader.md rule this finding is a verdict of, when it judges a cuDNN set
    /// (decisions.md 7: the same id as `store add`, `check` and `doctor --pid` give it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<crate::error::Rule>,
    /// Problem or warning.
    pub severity: Severity,
    /// What is wrong and where.
    pub message: String,
    /// What to do next.
    pub hint: Option<String>,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = match self.severity {
            Severity::Problem => "problem",
            Severity::Warning => "warning",
        };
        write!(f, "{}: {}", crate::error::rule::labelled(word, self.rule), self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

/// What the loader did for one cuDNN major in the caller's environment.
#[derive(Debug, Clone, Serialize)]
pub struct Loaded {
    /// The cuDNN major asked for.
    pub major: u64,
    /// The dispatcher file the loader mapped (symlinks resolved), when it loaded.
    #[serde(serialize_with = "crate::sys::paths::ser_lossy_opt")]
    pub dispatcher: Option<PathBuf>,
    /// Where that file comes from, in words (see [`origin`](fn@origin)).
    pub origin: Option<String>,
    /// `cudnnGetVersion()` as `major.minor.patch`.
    pub version: Option<String>,
    /// `cudnnGetCudartVersion()` as `major.minor`: the CUDA the build is for.
    pub built_for_cuda: Option<String>,
    /// The module that reported `version` (cuDNN forwards `cudnnGetVersion` to
    /// `libcudnn_ops_infer.so.8` / `libcudnn_graph.so.9`), when it is not in the
    /// dispatcher's folder: the version belongs to that file, not to the dispatcher.
    #[serde(serialize_with = "crate::sys::paths::ser_lossy_opt")]
    pub version_from: Option<PathBuf>,
    /// The loader's error when the dispatcher did not load.
    pub error: Option<String>,
    /// Every cuDNN, cuBLAS, NVRTC, cudart and driver module mapped by the end.
    pub modules: Vec<probe::Module>,
}

/// A folder of the loader's search variable that holds cuDNN dispatchers.
#[derive(Debug, Clone, Serialize)]
pub struct SearchDir {
    /// Its position in the variable, from 1.
    pub position: usize,
    /// The folder as written in the variable (in JSON lossy: U+FFFD for bytes that are not
    /// UTF-8, as in the text output).
    #[serde(serialize_with = "crate::sys::paths::ser_lossy")]
    pub path: PathBuf,
    /// The dispatchers in it: (file name, cuDNN major, version when its file tells).
    pub dispatchers: Vec<Dispatcher>,
    /// In a folder without a dispatcher: the cuDNN sub-libraries it holds (by the names the
    /// loader asks for), which a dispatcher elsewhere loads from here when this folder comes
    /// first (docs/loader.md). Empty in a folder with a dispatcher.
    pub sub_libraries: Vec<SubLibrary>,
}

/// A cuDNN sub-library file found in a search folder that holds no dispatcher.
#[derive(Debug, Clone, Serialize)]
pub struct SubLibrary {
    /// `libcudnn_ops_infer.so.8`, `cudnn_graph64_9.dll`.
    pub file: String,
    /// Its cuDNN major.
    pub major: u64,
    /// The version the file itself tells ([`loader::file_version`]); `None` when unknown.
    pub version: Option<String>,
}

/// A cuDNN dispatcher file found in a folder.
#[derive(Debug, Clone, Serialize)]
pub struct Dispatcher {
    /// `libcudnn.so.9`, `cudnn64_8.dll`.
    pub file: String,
    /// Its cuDNN major.
    pub major: u64,
    /// Its version: the DLL's VERSIONINFO, or a `libcudnn.so.X.Y.Z` beside it; `None` when
    /// neither tells.
    pub version: Option<String>,
    /// Where `version` was read, when that is not the dispatcher's own file (a framework
    /// copy's files or package record: `conda-meta/cudnn-9.5.0.50-h1234.json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version_from: Option<String>,
    /// Whether it is the first of its major in search order (the one the variable makes win).
    pub first: bool,
}

/// Everything `cuenv doctor` found.
#[derive(Debug, Clone, Serialize)]
pub struct Diagnosis {
    /// `LD_LIBRARY_PATH` or `PATH`.
    pub search_var: String,
    /// The folders of `search_var` holding a cuDNN dispatcher, in search order.
    pub search_path: Vec<SearchDir>,
    /// One per major asked.
    pub loaded: Vec<Loaded>,
    /// The profile this shell is activated for: `CUENV_PROFILE` as a cuenv shim or
    /// `cuenv env` set it, or, in a `cuenv env --setup` shell (`CUENV_PROFILE=active`), the
    /// profile `<home>/active` points at.
    pub active_profile: Option<String>,
    /// Whether the shell was set up by `cuenv env --setup` (follows `<home>/active`).
    pub follows_active: bool,
    /// The check of the active profile in this environment, when it is in the current generation.
    pub active_check: Option<CheckResult>,
    /// The driver's CUDA version and release and the GPUs, as the probe saw them (or the
    /// override variables say).
    pub machine: gpufit::Machine,
    /// The Python environments looked at ([`crate::pyenv`]): `--python`'s, `VIRTUAL_ENV`, `CONDA_PREFIX`.
    pub environments: Vec<crate::pyenv::PyEnv>,
    /// What each consumer present in those environments would load ([`finders`]).
    pub consumers: Vec<finders::Load>,
    /// Problems first, then warnings.
    pub findings: Vec<Finding>,
}

impl Diagnosis {
    /// Whether any finding is a [`Severity::Problem`].
    pub fn has_problems(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Problem)
    }
}

/// What [`examine`] needs besides the environment.
pub struct Inputs<'a> {
    /// The cuenv home (to recognise store entries and the current generation).
    pub layout: &'a Layout,
    /// The cuenv executable to run as the probe child.
    pub exe: &'a Path,
    /// The toolkit roots `cuenv toolkits` finds.
    pub toolkits: &'a [Toolkit],
    /// The cuDNN majors to probe.
    pub majors: &'a [u64],
    /// Whether `majors` were asked for (`--major N`): then a major of which no cuDNN is
    /// reachable (by name, or as a framework's copy in the conda env) is a problem.
    pub asked: bool,
    /// Per probe.
    pub timeout: Duration,
    /// `CUENV_OVERRIDE_DRIVER_CUDA` / `CUENV_OVERRIDE_COMPUTE_CAPABILITY` ([`crate::check::gpufit`]).
    pub overrides: gpufit::Overrides,
    /// `--python PATH`: an interpreter whose environment is looked at too ([`crate::pyenv::ask`]).
    pub python: Option<&'a Path>,
}

/// Examines `env` (the caller's complete environment): see the module documentation.
pub fn examine(inp: &Inputs, env: &[(OsString, OsString)]) -> Diagnosis {
    let get = |name: &str| check::env_var(env, name).cloned();
    let search_var = if cfg!(windows) { "PATH" } else { "LD_LIBRARY_PATH" }.to_string();
    // Every entry, empty ones included, so positions are those in the variable.
    let folders: Vec<PathBuf> = get(&search_var).map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
    let conda_prefix = get("CONDA_PREFIX").map(PathBuf::from);

    let search_path = search_path::scan_search_path(&folders);
    let (mut findings, cut_short) = search_path::judge(&search_path, &search_var);

    // The active profile (set by cuenv's shims) is judged like `cuenv check` judges it.
    let active = origin::active_profile(inp.layout, get(crate::home::settings::PROFILE_VAR), &mut findings);
    let mut environments = envs::discover(inp.python, &|k| get(k), &mut findings);
    // The active profile's own env, bound without shims (`python-env`).
    if let (Some(prefix), Some(name)) = (active.view.as_ref().and_then(|v| v.python_env.as_ref()), &active.profile)
        && !environments.iter().any(|e| paths::same_path(&e.prefix, prefix))
        && let Some(e) = crate::pyenv::at(prefix, &format!("profile {name}'s python-env"))
    {
        environments.push(e);
    }
    // The host a prediction is for: the env's python.exe (its folder is the application's
    // folder), in doctor's current folder, with this PATH (docs/loader.md W6).
    let win = winsearch::WinSearch::standard(&folders, winsearch::python_app_dir(conda_prefix.as_deref()));
    let scene =
        Scene { inp, env, search_var: &search_var, folders: &folders, win: &win, search_path: &search_path, conda_prefix: conda_prefix.as_deref(), cut_short };
    let (loaded, active_check, machine) = probe_majors(&scene, &active, &mut findings);

    let linux = loader::LinuxEnv::new(folders.clone());
    let mut consumers = Vec::new();
    for e in &environments {
        let users = envs::consumers(e);
        // The env hook's preloads are in the process before any consumer asks.
        let hooks = finders::active_hooks(e, &get);
        if cfg!(windows) {
            findings.extend(finders::torch_keeps_its_copy(e, &hooks, Os::Windows));
        }
        let preloaded: Vec<PathBuf> = hooks.into_iter().flat_map(|(_, h)| h.preload).collect();
        let scene = finders::Scene { get: &get, linux: &linux, preloaded: &preloaded, path_folders: &folders };
        let before = finders::loaded_before(e, &scene);
        findings.extend(envs::judge(e, &users, active.profile.is_some(), &search_path, &folders, &search_var, &before));
        let loads = finders::loads(e, &users, &scene);
        let by_name: Vec<(u64, Option<PathBuf>)> = loaded.iter().map(|l| (l.major, l.dispatcher.clone())).collect();
        findings.extend(finders::judge(e, &loads, &by_name, if cfg!(windows) { Os::Windows } else { Os::Linux }));
        consumers.extend(loads);
    }
    findings.extend(activation_scripts(inp.layout, conda_prefix.as_deref()));
    findings.extend(search_path::installer_layout(&folders, &loaded, &search_var));
    if cfg!(windows) {
        findings.extend(search_path::runtime_folder_off_path(inp.toolkits, &folders));
    }
    if cfg!(target_os = "linux") {
        findings.extend(deps::wsl_driver(Path::new("/usr/lib/wsl/lib"), &folders));
        findings.extend(stubs::on_loader_path(&folders));
    }
    // nvJitLink against the libraries on the search path that import it (F3).
    for v in crate::companion::judge_jitlink_users(&folders, |n, a| crate::companion::search(&folders, n, a)) {
        findings.push(Finding { rule: Some(v.rule), severity: Severity::Problem, message: v.message, hint: Some(v.hint) });
    }
    if inp.asked {
        findings.extend(unreachable_majors(inp.majors, &loaded, &search_path, &environments, &search_var));
    }
    findings.extend(origin::hand_copies(inp.toolkits, &search_var));

    settle(&mut findings);
    let origin::Active { profile: active_profile, follows: follows_active, .. } = active;
    Diagnosis { search_var, search_path, loaded, active_profile, follows_active, active_check, machine, environments, consumers, findings }
}

/// What the steps of [`examine`] read: its inputs, the caller's environment and its search path.
struct Scene<'a> {
    inp: &'a Inputs<'a>,
    env: &'a [(OsString, OsString)],
    /// `LD_LIBRARY_PATH` or `PATH`.
    search_var: &'a str,
    /// The entries of `search_var`, empty ones included.
    folders: &'a [PathBuf],
    /// Windows: the host's whole search order for by-name loads.
    win: &'a winsearch::WinSearch,
    /// The folders of `search_var` holding cuDNN.
    search_path: &'a [SearchDir],
    /// `CONDA_PREFIX`.
    conda_prefix: Option<&'a Path>,
    /// Whether a cuDNN library on the search path is cut short.
    cut_short: bool,
}

/// The majors to probe: those asked, each once, then the active profile's (`active_major`).
fn majors_to_probe(asked: &[u64], active_major: Option<u64>) -> Vec<u64> {
    let mut majors: Vec<u64> = Vec::new();
    for &m in asked {
        if !majors.contains(&m) {
            majors.push(m);
        }
    }
    if let Some(m) = active_major
        && !majors.contains(&m)
    {
        majors.push(m);
    }
    majors
}

/// Probes each cuDNN major in the caller's environment and judges each load: against the
/// active profile when it is of that major, else against the dispatcher's own folder, else
/// why nothing loaded. Returns the loads, the active profile's check and the machine.
fn probe_majors(s: &Scene, active: &origin::Active, findings: &mut Vec<Finding>) -> (Vec<Loaded>, Option<CheckResult>, gpufit::Machine) {
    let inp = s.inp;
    let active_major = active.view.as_ref().map(|v| v.cudnn_version.major());
    let mut loaded = Vec::new();
    let mut active_check = None;
    let mut machine = gpufit::Machine::from_report(None, &inp.overrides);
    for major in majors_to_probe(inp.majors, active_major) {
        let o = check::run_probe(inp.exe, s.env, major, false, inp.timeout);
        if o.report.as_ref().is_some_and(|r| r.driver.is_some()) {
            machine = gpufit::Machine::from_report(o.report.as_ref(), &inp.overrides);
        }
        let l = origin::describe_load(&o, inp, s.conda_prefix);
        if let Some(d) = &l.dispatcher {
            findings.extend(predicted_loads(s, d, &l, major));
        }
        if let (Some(v), Some(name)) = (active.view.as_ref().filter(|_| active_major == Some(major)), &active.profile) {
            let (c, found) = judge_active(&o, v, name, &machine, s.search_var);
            findings.extend(found);
            active_check = Some(c);
        } else if let Some(d) = &l.dispatcher {
            findings.extend(judge_own_folder(&o, &l, d, major, &machine, s.search_var));
            findings.extend(lacking_set(d, major, inp.layout, &format!("cuDNN {major} from {}", d.display())));
        } else if o.report.is_none() {
            findings.extend(judge_no_report(&o, major, s.cut_short, s.search_path, s.search_var));
        } else if let Some(dir) = s.search_path.iter().find(|d| d.dispatchers.iter().any(|x| x.major == major && x.first)) {
            findings.push(judge_unloadable(&o, &l, dir, major, s.search_var));
        }
        loaded.push(l);
    }
    (loaded, active_check, machine)
}

/// For a dispatcher `d` that loaded: the sub-libraries the probe did not map (without a GPU
/// it maps few): where the dispatcher's own loads by name would find them (docs/loader.md).
fn predicted_loads(s: &Scene, d: &Path, l: &Loaded, major: u64) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mapped: Vec<String> = l.modules.iter().filter(|m| m.kind == probe::ModuleKind::Cudnn).map(|m| m.name.clone()).collect();
    let reported = l.version.as_deref().filter(|_| l.version_from.is_none());
    findings.extend(frameworks::probe_set(d, major, &mapped, reported, s.folders, s.win, s.search_var));
    if cfg!(windows) {
        findings.extend(deps::zlibwapi(d, l.version.as_deref(), s.win));
    }
    findings
}

/// The load of cuDNN judged against the active profile `name`'s view `v`, as
/// `cuenv check` judges it, with the driver and GPU fit.
fn judge_active(o: &ProbeOutcome, v: &ViewRecord, name: &str, machine: &gpufit::Machine, search_var: &str) -> (CheckResult, Vec<Finding>) {
    let mut findings = Vec::new();
    let expected = Expected { entry_dir: v.entry_dir.clone(), version: v.cudnn_version.clone(), cuda_major: Some(v.cuda_major) };
    let mut c = check::classify(o, &expected);
    // The GPU fit as apply and check judge it: by the code the entry's libraries carry (G1-G3).
    let code = crate::store::entry::EntryMeta::read(&v.entry_dir).ok().map(|meta| meta.gpu_code_or_read(&v.entry_dir));
    let fit =
        gpufit::assess(machine, &gpufit::Want::new(expected.version.clone(), &v.toolkit_version, v.cuda_major).with_code(code), "this profile's runtime is");
    c.add_misfits(&fit.misfits);
    for nv in &fit.not_verified {
        findings.push(Finding { rule: None, severity: Severity::Warning, message: format!("profile `{name}`: {}", nv.message), hint: Some(nv.hint.clone()) });
    }
    // A shadowed dispatcher drags its sub-libraries along: "mixed" then says nothing new.
    let shadowed = c.has(ReasonKind::Shadowed);
    for r in c.reasons.iter().filter(|r| r.kind.is_failure() && !(shadowed && r.kind == ReasonKind::MixedVersions)) {
        let hint = match r.kind {
            ReasonKind::Shadowed | ReasonKind::MixedVersions | ReasonKind::LoaderError => {
                format!("remove the folder that wins from {search_var} (or from the script that adds it), then run `cuenv doctor` again")
            }
            ReasonKind::DriverTooOld | ReasonKind::UnsupportedGpu => {
                format!("the reason says what to do; `cuenv check {name}` gives the same verdict in the profile's own environment")
            }
            _ => match &r.hint {
                Some(h) => format!("{h}; `cuenv check {name}` runs the same check in the profile's own environment"),
                None => format!("`cuenv check {name}` runs the same check in the profile's own environment"),
            },
        };
        findings.push(Finding {
            rule: r.rule,
            severity: Severity::Problem,
            message: format!("profile `{name}` is active, but in this environment: {r}"),
            hint: Some(hint),
        });
    }
    (c, findings)
}

/// Judge the load against the dispatcher's own folder: sub-libraries from another
/// folder, a runtime of another CUDA major, a crash while loading.
fn judge_own_folder(o: &ProbeOutcome, l: &Loaded, d: &Path, major: u64, machine: &gpufit::Machine, search_var: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    let expected = Expected {
        entry_dir: d.parent().map(Path::to_path_buf).unwrap_or_default(),
        version: l.version.as_deref().and_then(|v| v.parse().ok()).unwrap_or_else(|| Version::new(&[major])),
        cuda_major: l.built_for_cuda.as_deref().and_then(|c| c.split('.').next()?.parse().ok()),
    };
    let c = check::classify(o, &expected);
    // Against its own folder, "shadowed" and "version mismatch" say nothing new (a
    // sub-library from elsewhere is reported as mixed versions).
    // When the version came from a stray sub-library, so did the CUDA build it
    // reports: the runtime it asks for is the stray's, not this set's.
    let stray_cuda = |r: &check::Reason| {
        l.version_from.is_some() && (r.kind == ReasonKind::WrongCudaMajor || (r.kind == ReasonKind::MissingLibrary && r.message.contains("the CUDA runtime")))
    };
    for r in c.reasons.iter().filter(|r| r.kind.is_failure() && !matches!(r.kind, ReasonKind::VersionMismatch | ReasonKind::Shadowed) && !stray_cuda(r)) {
        let model = if r.kind == ReasonKind::SubLibraryMismatch { model_beside_check(d, major) } else { String::new() };
        let hint = match odd_files(d, major).filter(|_| r.kind == ReasonKind::SubLibraryMismatch) {
            // The files tell which ones are of the other release: name those, not the
            // library whose check failed (it may be the release's own, depending on them).
            Some(odd) => format!(
                "replace {odd} with the copies of the release the rest of the folder is, or keep every cuDNN {major} library of one release in one folder"
            ),
            None => r.hint.clone().unwrap_or_else(|| hint_for(r.kind, major, search_var)),
        };
        findings.push(Finding {
            rule: r.rule,
            severity: Severity::Problem,
            message: format!("cuDNN {major} from {}: {r}{model}", d.display()),
            hint: Some(hint),
        });
    }
    findings.extend(not_verified(o, d, major));
    // Driver and GPU fit of the cuDNN loaded here, for the CUDA it was built for.
    if let Some(cuda) = l.built_for_cuda.as_deref() {
        let want = gpufit::Want::new(expected.version.clone(), cuda, expected.cuda_major.unwrap_or(0));
        for m in gpufit::judge_as(machine, &want, "it was built for CUDA") {
            findings.push(Finding {
                rule: None,
                severity: Severity::Problem,
                message: format!("cuDNN {major} from {}: {}", d.display(), m.message),
                hint: Some(m.hint),
            });
        }
    }
    findings
}

/// The sub-libraries of the set loaded from `d` that nothing verifies: no version check of
/// cuDNN covers them (the probe's `unchecked`) and their file tells no release
/// ([`loader::file_version`]; one that does is compared by the two-releases rule, V1). A
/// warning each load, never "fine".
fn not_verified(o: &ProbeOutcome, d: &Path, major: u64) -> Vec<Finding> {
    let Some(vc) = o.report.as_ref().and_then(|r| r.version_checks.as_ref()) else { return Vec::new() };
    let Some(dir) = d.parent() else { return Vec::new() };
    let silent: Vec<&String> = vc.unchecked.iter().filter(|n| loader::file_version(&dir.join(n)).is_none()).collect();
    if silent.is_empty() || vc.checks.is_empty() {
        return Vec::new();
    }
    vec![Finding {
        rule: None,
        severity: Severity::Warning,
        message: format!(
            "cuDNN {major} from {}: not verified: {} {} no version check of cuDNN and {} no release, so a copy from another release would go unnoticed here",
            d.display(),
            silent.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "),
            if silent.len() == 1 { "has" } else { "have" },
            if silent.len() == 1 { "its file tells" } else { "their files tell" },
        ),
        hint: Some(format!(
            "make sure {} came with the rest of the release (a wheel's RECORD, `cuenv store verify`)",
            if silent.len() == 1 { "it" } else { "they" }
        )),
    }]
}

/// The probe of cuDNN `major` gave no report (it crashed, timed out or did not start):
/// why, with a hint (`cut_short`: a cuDNN library on the search path is cut short).
fn judge_no_report(o: &ProbeOutcome, major: u64, cut_short: bool, search_path: &[SearchDir], search_var: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    let c = check::classify(o, &Expected { entry_dir: PathBuf::new(), version: Version::new(&[major]), cuda_major: None });
    // What the files of the folder that wins say about the set, when it is incomplete.
    let incomplete =
        search_path.iter().find(|d| d.dispatchers.iter().any(|x| x.major == major && x.first)).and_then(|d| incomplete_set(&d.path, major, search_var));
    let missing = c.reasons.iter().any(|r| r.kind == ReasonKind::MissingLibrary);
    // cuDNN's own end when it cannot load a sub-library: abort() (SIGABRT; exit 3 or the
    // fail-fast 0xC0000409 on Windows, 9 under Wine), as the classifier reads it.
    let aborted = matches!(o.end, check::ProbeEnd::Signaled { signal: 6, .. } | check::ProbeEnd::Exited { code: 3 | 9 | 134 })
        || matches!(o.end, check::ProbeEnd::Exited { code } if code as u32 == 0xC000_0409);
    let incomplete = incomplete.filter(|_| missing || aborted);
    for r in c.reasons.iter().filter(|r| r.kind.is_failure()) {
        let hint = if cut_short && r.kind == ReasonKind::Crash {
            "a cuDNN library on the search path is cut short (see its problem): copy it again; the crash follows from it".to_string()
        } else if let Some(why) = incomplete.as_ref().filter(|_| matches!(r.kind, ReasonKind::Crash | ReasonKind::MissingLibrary)) {
            why.clone()
        } else if missing && r.kind == ReasonKind::Crash {
            "cuDNN aborts when it cannot load a sub-library: the crash follows from the missing library above".to_string()
        } else {
            hint_for(r.kind, major, search_var)
        };
        // A crash the folder's files explain as a missing sub-library is that rule's verdict.
        let rule = r.rule.or_else(|| {
            (incomplete.is_some() && matches!(r.kind, ReasonKind::Crash | ReasonKind::MissingLibrary)).then_some(crate::error::Rule::IncompleteSet)
        });
        findings.push(Finding { rule, severity: Severity::Problem, message: format!("cuDNN {major}: {r}"), hint: Some(hint) });
    }
    findings
}

/// Not loadable although the search path holds a dispatcher of this major: every
/// load of cuDNN in this shell fails. A missing dependency (zlibwapi.dll for cuDNN
/// 8 on Windows, a CUDA runtime) is told apart from an unusable file.
fn judge_unloadable(o: &ProbeOutcome, l: &Loaded, dir: &SearchDir, major: u64, search_var: &str) -> Finding {
    let file = dir.path.join(libname::dispatcher_name(major, Os::HOST));
    let c = check::classify(o, &Expected { entry_dir: dir.path.clone(), version: Version::new(&[major]), cuda_major: None });
    let missing = c.reasons.iter().find(|r| r.kind == ReasonKind::MissingLibrary);
    let rule = missing.and_then(|r| r.rule);
    let (message, hint) = match missing {
        Some(r) => (format!("cuDNN {major} from {}: {r}", file.display()), hint_for(r.kind, major, search_var)),
        None => (
            format!("cuDNN {major} cannot be loaded: {}", l.error.as_deref().unwrap_or("the loader refused it")),
            format!(
                "{} is not a usable {} library: remove it, or its folder from {search_var}",
                file.display(),
                if cfg!(windows) { "64-bit Windows" } else { "Linux" }
            ),
        ),
    };
    Finding { rule, severity: Severity::Problem, message, hint: Some(hint) }
}

/// R2 (docs/loader.md) for the dispatcher `d` of cuDNN `major` that a process loaded: the
/// members of its release's set ([`loader::folder_set`]: what its files name) that its folder
/// lacks, each with the library that names it; `subject` begins the sentence. A problem,
/// except in a store entry added with `--allow-incomplete` (the user's recorded override:
/// a warning, decisions.md 2). `None` when the folder holds the whole set, and when its files
/// name no sub-library (R3: the table's rows are a cross-check, decisions.md 8).
pub(crate) fn lacking_set(d: &Path, major: u64, layout: &Layout, subject: &str) -> Option<Finding> {
    let dir = d.parent()?;
    let set = loader::folder_set(dir, major);
    let missing = set.missing();
    // A set its files do not name is the table's guess (R3): `store add` judged it at import;
    // here it proves nothing about what loads.
    if missing.is_empty() || set.basis != crate::cudnn::set::Basis::Files {
        return None;
    }
    let named: Vec<String> = set.members.iter().filter(|m| m.file.is_none()).map(|m| format!("`{}` names `{}`", m.named_by, set.file_name(&m.stem))).collect();
    let allowed = origin::store_entry(dir, layout)
        .and_then(|e| crate::store::entry::EntryMeta::read(&layout.store_dir().join(e)).ok())
        .is_some_and(|m| !m.incomplete.is_empty());
    Some(Finding {
        rule: Some(crate::error::Rule::IncompleteSet),
        severity: if allowed { Severity::Warning } else { Severity::Problem },
        message: format!(
            "{subject}, whose folder lacks {} ({}){}: cuDNN takes those from whatever folder the loader finds next, or fails when it needs them",
            missing.join(", "),
            named.join(", "),
            if allowed { ", a store entry added with --allow-incomplete" } else { "" }
        ),
        hint: Some(format!(
            "give it a whole cuDNN {major} release in one folder (`cuenv store add` the archive or wheel as NVIDIA ships it, and use a profile)"
        )),
    })
}

/// The sub-libraries of cuDNN `major` that the folder `dir` lacks, as file names: the
/// members of its release's set ([`loader::folder_set`]) not beside the dispatcher (`store
/// add` refuses such a set).
fn missing_sublibraries_in(dir: &Path, major: u64) -> Vec<String> {
    loader::folder_set(dir, major).missing()
}

/// A hint when the folder `dir` that gives cuDNN `major` lacks sub-libraries, from its files:
/// a lone dispatcher that is a link into a folder holding the whole set (cuDNN looks for its
/// sub-libraries beside the name it was loaded by, docs/loader.md L8), or a set that lacks
/// them. `None` when the folder holds the whole set.
fn incomplete_set(dir: &Path, major: u64, search_var: &str) -> Option<String> {
    let missing = missing_sublibraries_in(dir, major);
    if missing.is_empty() {
        return None;
    }
    let name = libname::dispatcher_name(major, Os::HOST);
    let link = dir.join(&name);
    if std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink())
        && let Ok(target) = paths::canonical_shown(&link)
        && let Some(target_dir) = target.parent()
        && !paths::same_path(target_dir, &paths::canonical_shown(dir).unwrap_or_else(|_| dir.to_path_buf()))
        && missing_sublibraries_in(target_dir, major).is_empty()
    {
        return Some(format!(
            "{} is a link to {}: cuDNN looks for its sub-libraries beside the name it was loaded by, not beside the link's target, and {} lacks {}; put {} on {search_var} instead, or link the folder {} rather than the file",
            link.display(),
            target.display(),
            dir.display(),
            missing.join(", "),
            target_dir.display(),
            target_dir.display()
        ));
    }
    Some(format!(
        "{} lacks {} (cuDNN {major} ships them beside the dispatcher), and cuDNN aborts when it cannot load one: put the folder holding the whole set on {search_var}, or copy the missing files from the same release",
        dir.display(),
        missing.join(", ")
    ))
}

/// Activation scripts of the env in use and of every env the current generation shims.
fn activation_scripts(layout: &Layout, conda_prefix: Option<&Path>) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut envs: Vec<PathBuf> = conda_prefix.iter().map(|p| p.to_path_buf()).collect();
    for e in generation::current_manifest(layout).map(|m| m.profiles.into_iter().filter_map(|v| v.conda_env).collect::<Vec<_>>()).unwrap_or_default() {
        if !envs.iter().any(|x| paths::same_path(x, &e)) {
            envs.push(e);
        }
    }
    for e in &envs {
        findings.extend(scripts::judge(e));
    }
    findings
}

/// Problems first, then warnings; one hint said once is enough.
fn settle(findings: &mut [Finding]) {
    findings.sort_by_key(|f| f.severity);
    // One hint said once is enough.
    let mut said = std::collections::HashSet::new();
    for f in findings {
        if let Some(h) = &f.hint
            && !said.insert(h.clone())
        {
            f.hint = None;
        }
    }
}

/// `--major N` asked for and no cuDNN N reachable: neither loadable by name nor held by a
/// search folder (a folder whose copy fails to load is judged already) nor a framework's copy
/// in a Python env doctor looks at. One problem per such major, naming what is reachable instead.
fn unreachable_majors(asked: &[u64], loaded: &[Loaded], search_path: &[SearchDir], envs: &[crate::pyenv::PyEnv], search_var: &str) -> Vec<Finding> {
    let copies: Vec<_> = envs.iter().flat_map(framework_copies).collect();
    let mut reachable: Vec<String> = loaded
        .iter()
        .filter_map(|l| Some(format!("cuDNN {} by name ({})", l.version.as_deref().unwrap_or("of unknown version"), l.dispatcher.as_ref()?.display())))
        .collect();
    reachable.extend(
        copies
            .iter()
            .map(|(dir, what, d)| format!("cuDNN {} ({what}, {})", d.version.clone().unwrap_or_else(|| format!("{}.x", d.major)), dir.join(&d.file).display())),
    );
    let mut out = Vec::new();
    for &m in asked {
        let by_name = loaded.iter().any(|l| l.major == m && l.dispatcher.is_some());
        let on_path = search_path.iter().any(|d| d.dispatchers.iter().any(|x| x.major == m));
        let framework = copies.iter().any(|(_, _, d)| d.major == m);
        if by_name || on_path || framework {
            continue;
        }
        let instead = if reachable.is_empty() {
            format!(
                "no cuDNN of any major is: no folder on {search_var} holds a dispatcher{}",
                match envs {
                    [] => String::new(),
                    [e] => format!(" and {} holds none", e.describe()),
                    _ => " and the Python envs hold none".to_string(),
                }
            )
        } else {
            format!("reachable instead: {}", reachable.join("; "))
        };
        out.push(Finding {
            rule: None,
            severity: Severity::Problem,
            message: format!("cuDNN {m} was asked for (--major {m}), but none is reachable in this environment; {instead}"),
            hint: Some(format!(
                "put a folder holding {} on {search_var} (a cuenv profile with cudnn = \"{m}\" does it: `cuenv apply`, then activate it), or ask doctor for the major this environment has",
                libname::dispatcher_name(m, Os::HOST)
            )),
        });
    }
    out
}
