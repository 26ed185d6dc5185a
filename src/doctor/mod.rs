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
//! [`pid`] answers the same question for a process that is already running
//! (`cuenv doctor --pid PID`), from what it has mapped.

pub mod deps;
pub mod frameworks;
pub mod loader;
pub mod pid;
pub mod scripts;

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::check::gpufit;
use crate::check::{self, CheckResult, Expected, ProbeOutcome, ReasonKind};
use crate::cudnn::libname::{self, Os};
use crate::cudnn::version::Version;
use crate::generation;
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
        write!(f, "{word}: {}", self.message)?;
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
    /// Where that file comes from, in words (see [`origin`]).
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
}

/// Examines `env` (the caller's complete environment): see the module documentation.
pub fn examine(inp: &Inputs, env: &[(OsString, OsString)]) -> Diagnosis {
    let get = |name: &str| check::env_var(env, name).cloned();
    let search_var = if cfg!(windows) { "PATH" } else { "LD_LIBRARY_PATH" }.to_string();
    // Every entry, empty ones included, so positions are those in the variable.
    let folders: Vec<PathBuf> = get(&search_var).map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
    let conda_prefix = get("CONDA_PREFIX").map(PathBuf::from);
    let mut findings = Vec::new();

    let search_path = scan_search_path(&folders);
    for d in &search_path {
        if let Some(folder) = crate::sys::paths::first_non_unicode(&d.path) {
            findings.push(Finding {
                severity: Severity::Warning,
                message: format!(
                    "the folder {} on {search_var} (position {}) holds cuDNN, but its path is not valid UTF-8 (the name of {} is not; shown with U+FFFD for its bad bytes): no cuenv profile can use it, and tools that print it may mangle it",
                    d.path.display(),
                    d.position,
                    folder.display()
                ),
                hint: Some(format!("rename the folder {} to a UTF-8 name, then update {search_var}", folder.display())),
            });
        }
    }
    let damaged = damaged_images(&search_path);
    let cut_short = damaged.iter().any(|f| f.message.contains(" is cut short: "));
    findings.extend(damaged);
    for d in &search_path {
        let majors: std::collections::BTreeSet<u64> = d.dispatchers.iter().map(|x| x.major).chain(d.sub_libraries.iter().map(|x| x.major)).collect();
        for major in majors {
            findings.extend(mixed_releases(&d.path, major, &format!("on {search_var} (position {})", d.position)));
        }
    }
    for major in search_path.iter().flat_map(|d| d.dispatchers.iter().map(|x| x.major)).collect::<std::collections::BTreeSet<_>>() {
        let holders: Vec<&SearchDir> = search_path.iter().filter(|d| d.dispatchers.iter().any(|x| x.major == major)).collect();
        if holders.len() > 1 {
            let later: Vec<String> = holders[1..].iter().map(|d| d.path.display().to_string()).collect();
            findings.push(Finding {
                severity: Severity::Warning,
                message: format!(
                    "{} folders on {search_var} hold cuDNN {major}: {} comes first and wins; shadowed: {}",
                    holders.len(),
                    holders[0].path.display(),
                    later.join(", ")
                ),
                hint: Some(format!("keep one cuDNN {major} on {search_var} (a cuenv profile's activation puts its own first)")),
            });
        }
    }

    // The active profile (set by cuenv's shims) is judged like `cuenv check` judges it.
    let mut active_profile = get("CUENV_PROFILE").map(|v| v.to_string_lossy().into_owned()).filter(|s| !s.is_empty());
    let follows_active = active_profile.as_deref() == Some("active");
    let active_link = inp.layout.active_link();
    if follows_active {
        // `cuenv env --setup`: the shell follows `<home>/active`, whichever profile
        // `cuenv use` made active.
        let target = crate::generation::active::name(inp.layout);
        if target.is_none() {
            findings.push(Finding {
                severity: Severity::Warning,
                message: format!("this shell follows {} (`cuenv env --setup`), but no profile is active", active_link.display()),
                hint: Some("`cuenv use <profile>` makes one active".into()),
            });
        }
        active_profile = target;
    }
    let active_view = active_profile.as_ref().and_then(|name| {
        let view = generation::current_manifest(inp.layout).and_then(|m| m.profiles.into_iter().find(|p| &p.name == name));
        if view.is_none() {
            let (message, hint) = if follows_active {
                (
                    format!("{} points at profile `{name}`, which the current generation does not have", active_link.display()),
                    "`cuenv use <profile>` picks one of the current generation (`cuenv status` lists them), `cuenv use --none` clears it, or `cuenv rollback --to N` goes back to a generation that has it",
                )
            } else {
                (
                    format!("CUENV_PROFILE says profile `{name}` is active, but the current generation has no such profile"),
                    "deactivate and activate the conda env (or the `cuenv env` shell) again, or run `cuenv status` to see the profiles",
                )
            };
            findings.push(Finding { severity: Severity::Problem, message, hint: Some(hint.into()) });
        }
        view
    });
    let active_major = active_view.as_ref().map(|v| v.cudnn_version.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(9));
    let mut majors: Vec<u64> = Vec::new();
    for &m in inp.majors {
        if !majors.contains(&m) {
            majors.push(m);
        }
    }
    if let Some(m) = active_major
        && !majors.contains(&m)
    {
        majors.push(m);
    }

    let mut loaded = Vec::new();
    let mut active_check = None;
    let mut machine = gpufit::Machine::from_report(None, &inp.overrides);
    for major in majors {
        let o = check::run_probe(inp.exe, env, major, false, inp.timeout);
        if o.report.as_ref().is_some_and(|r| r.driver.is_some()) {
            machine = gpufit::Machine::from_report(o.report.as_ref(), &inp.overrides);
        }
        let l = describe_load(&o, inp, conda_prefix.as_deref());
        if let Some(d) = &l.dispatcher {
            // The sub-libraries the probe did not map (without a GPU it maps few): where the
            // dispatcher's own loads by name would find them (docs/loader.md).
            let mapped: Vec<String> = l.modules.iter().filter(|m| m.kind == probe::ModuleKind::Cudnn).map(|m| m.name.clone()).collect();
            findings.extend(frameworks::probe_set(d, major, &mapped, &folders, &search_var));
            findings.extend(deps::judge(d, major, l.version.as_deref(), &folders, &search_var));
        }
        if let (Some(v), Some(name)) = (active_view.as_ref().filter(|_| active_major == Some(major)), &active_profile) {
            let expected = Expected {
                entry_dir: v.entry_dir.clone(),
                version: v.cudnn_version.parse().unwrap_or_else(|_| Version::new(&[major])),
                cuda_major: Some(v.cuda_major),
            };
            let mut c = check::classify(&o, &expected);
            c.add_misfits(&gpufit::judge(&machine, &gpufit::Want::new(expected.version.clone(), &v.toolkit_version, v.cuda_major)));
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
                    _ => format!("`cuenv check {name}` runs the same check in the profile's own environment"),
                };
                findings.push(Finding {
                    severity: Severity::Problem,
                    message: format!("profile `{name}` is active, but in this environment: {r}"),
                    hint: Some(hint),
                });
            }
            active_check = Some(c);
        } else if let Some(d) = &l.dispatcher {
            // Judge the load against the dispatcher's own folder: sub-libraries from another
            // folder, a runtime of another CUDA major, a crash while loading.
            let expected = Expected {
                entry_dir: d.parent().map(Path::to_path_buf).unwrap_or_default(),
                version: l.version.as_deref().and_then(|v| v.parse().ok()).unwrap_or_else(|| Version::new(&[major])),
                cuda_major: l.built_for_cuda.as_deref().and_then(|c| c.split('.').next()?.parse().ok()),
            };
            let c = check::classify(&o, &expected);
            // Against its own folder, "shadowed" and "version mismatch" say nothing new (a
            // sub-library from elsewhere is reported as mixed versions).
            // When the version came from a stray sub-library, so did the CUDA build it
            // reports: the runtime it asks for is the stray's, not this set's.
            let stray_cuda = |r: &check::Reason| {
                l.version_from.is_some()
                    && (r.kind == ReasonKind::WrongCudaMajor || (r.kind == ReasonKind::MissingLibrary && r.message.contains("the CUDA runtime")))
            };
            for r in c.reasons.iter().filter(|r| r.kind.is_failure() && !matches!(r.kind, ReasonKind::VersionMismatch | ReasonKind::Shadowed) && !stray_cuda(r))
            {
                findings.push(Finding {
                    severity: Severity::Problem,
                    message: format!("cuDNN {major} from {}: {r}", d.display()),
                    hint: Some(hint_for(r.kind, major, &search_var)),
                });
            }
            // Driver and GPU fit of the cuDNN loaded here, for the CUDA it was built for.
            if let Some(cuda) = l.built_for_cuda.as_deref() {
                let want = gpufit::Want::new(expected.version.clone(), cuda, expected.cuda_major.unwrap_or(0));
                for m in gpufit::judge_as(&machine, &want, "it was built for CUDA") {
                    findings.push(Finding {
                        severity: Severity::Problem,
                        message: format!("cuDNN {major} from {}: {}", d.display(), m.message),
                        hint: Some(m.hint),
                    });
                }
            }
        } else if o.report.is_none() {
            let c = check::classify(&o, &Expected { entry_dir: PathBuf::new(), version: Version::new(&[major]), cuda_major: None });
            for r in c.reasons.iter().filter(|r| r.kind.is_failure()) {
                let hint = if cut_short && r.kind == ReasonKind::Crash {
                    "a cuDNN library on the search path is cut short (see its problem): copy it again; the crash follows from it".to_string()
                } else {
                    hint_for(r.kind, major, &search_var)
                };
                findings.push(Finding { severity: Severity::Problem, message: format!("cuDNN {major}: {r}"), hint: Some(hint) });
            }
        } else if let Some(dir) = search_path.iter().find(|d| d.dispatchers.iter().any(|x| x.major == major && x.first)) {
            // Not loadable although the search path holds a dispatcher of this major: every
            // load of cuDNN in this shell fails. A missing dependency (zlibwapi.dll for cuDNN
            // 8 on Windows, a CUDA runtime) is told apart from an unusable file.
            let file = dir.path.join(libname::dispatcher_name(major, Os::HOST));
            let c = check::classify(&o, &Expected { entry_dir: dir.path.clone(), version: Version::new(&[major]), cuda_major: None });
            let missing = c.reasons.iter().find(|r| r.kind == ReasonKind::MissingLibrary);
            let (message, hint) = match missing {
                Some(r) => (format!("cuDNN {major} from {}: {r}", file.display()), hint_for(r.kind, major, &search_var)),
                None => (
                    format!("cuDNN {major} cannot be loaded: {}", l.error.as_deref().unwrap_or("the loader refused it")),
                    format!(
                        "{} is not a usable {} library: remove it, or its folder from {search_var}",
                        file.display(),
                        if cfg!(windows) { "64-bit Windows" } else { "Linux" }
                    ),
                ),
            };
            findings.push(Finding { severity: Severity::Problem, message, hint: Some(hint) });
        }
        loaded.push(l);
    }

    if let (Some(prefix), None) = (&conda_prefix, &active_profile)
        && let Some(f) = shim_not_run(prefix)
    {
        findings.push(f);
    }
    if let Some(prefix) = &conda_prefix {
        let copies = framework_copies(prefix);
        let mut judged: Vec<&Path> = Vec::new();
        for (dir, what, d) in &copies {
            if !judged.contains(&dir.as_path()) && !search_path.iter().any(|s| paths::same_path(&s.path, dir)) {
                findings.extend(mixed_releases(dir, d.major, &format!("({what} in the conda env)")));
                judged.push(dir);
            }
        }
        findings.extend(frameworks::judge(prefix, &copies, &folders, &search_var));
    }
    // Activation scripts of the env in use and of every env the current generation shims.
    let mut envs: Vec<PathBuf> = conda_prefix.iter().cloned().collect();
    for e in generation::current_manifest(inp.layout).map(|m| m.profiles.into_iter().filter_map(|v| v.conda_env).collect::<Vec<_>>()).unwrap_or_default() {
        if !envs.iter().any(|x| paths::same_path(x, &e)) {
            envs.push(e);
        }
    }
    for e in &envs {
        findings.extend(scripts::judge(e));
    }

    findings.extend(installer_layout(&folders, &loaded, &search_var));
    if cfg!(target_os = "linux") {
        findings.extend(deps::wsl_driver(Path::new("/usr/lib/wsl/lib"), &folders));
    }
    if inp.asked {
        findings.extend(unreachable_majors(inp.majors, &loaded, &search_path, conda_prefix.as_deref(), &search_var));
    }

    for t in inp.toolkits {
        let label = t.version.as_ref().map(|v| format!("CUDA {v}")).unwrap_or_else(|| "toolkit".into());
        if let Some(h) = &t.hand_copied_cudnn {
            let v = h.version.as_ref().map(|v| format!("cuDNN {v}")).unwrap_or_else(|| "a cuDNN".into());
            findings.push(Finding {
                severity: Severity::Warning,
                message: format!("{v} was copied by hand into the {label} root {} ({}): whatever puts that folder on {search_var} loads it, ahead of any profile that comes later", t.root.display(), h.dispatcher.display()),
                hint: Some("import the release with `cuenv store add <archive or wheel>`, declare it in a profile, then delete the copied files from the toolkit root".into()),
            });
        }
        for p in t.problems.iter().filter(|p| p.contains("cuDNN")) {
            findings.push(Finding { severity: Severity::Warning, message: format!("{label} root {}: {p}", t.root.display()), hint: None });
        }
    }

    findings.sort_by_key(|f| f.severity);
    // One hint said once is enough.
    let mut said = std::collections::HashSet::new();
    for f in &mut findings {
        if let Some(h) = &f.hint
            && !said.insert(h.clone())
        {
            f.hint = None;
        }
    }
    Diagnosis { search_var, search_path, loaded, active_profile, follows_active, active_check, machine, findings }
}

/// Folders of the search variable that hold no cuDNN library themselves but whose
/// `<CUDA version>\\`, `<CUDA version>\\x64\\` or `x64\\` child does: the layout of NVIDIA's
/// exe installer (`CUDNN\\v9.5\\bin\\12.6\\`, newer `bin\\12.9\\x64\\`; docs/facts.md §2). The
/// loader does not look into subfolders, so say which folder to put on the variable: a problem
/// when that major did not load by name, else a warning.
fn installer_layout(folders: &[PathBuf], loaded: &[Loaded], search_var: &str) -> Vec<Finding> {
    let holds = |dir: &Path| -> Vec<u64> {
        let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
        let mut m: Vec<u64> = rd.flatten().filter_map(|e| libname::loader_dispatcher_major(&e.file_name().to_string_lossy(), Os::HOST)).collect();
        m.sort_unstable();
        m.dedup();
        m
    };
    let has_cudnn = |dir: &Path| {
        std::fs::read_dir(dir)
            .map(|rd| rd.flatten().any(|e| libname::parse(&e.file_name().to_string_lossy()).is_some_and(|l| l.os == Os::HOST)))
            .unwrap_or(false)
    };
    let cuda_named = |n: &str| {
        let mut parts = n.split('.');
        let ok = |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
        ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
    };
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, f) in folders.iter().enumerate() {
        if f.as_os_str().is_empty() || !seen.insert(f.clone()) || !f.is_dir() || has_cudnn(f) {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(f) else { continue };
        let mut kids: Vec<PathBuf> = Vec::new();
        let mut names: Vec<String> = rd.flatten().filter(|e| e.path().is_dir()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        for n in names {
            if n.eq_ignore_ascii_case("x64") {
                kids.push(f.join(&n));
            } else if cuda_named(&n) {
                kids.push(f.join(&n));
                kids.push(f.join(&n).join("x64"));
            }
        }
        let found: Vec<(PathBuf, Vec<u64>)> = kids
            .into_iter()
            .map(|k| {
                let m = holds(&k);
                (k, m)
            })
            .filter(|(_, m)| !m.is_empty())
            .collect();
        let Some((first, majors)) = found.first() else { continue };
        let loads = majors.iter().all(|m| loaded.iter().any(|l| l.major == *m && l.dispatcher.is_some()));
        let names: Vec<String> = majors.iter().map(|m| libname::dispatcher_name(*m, Os::HOST)).collect();
        let others: Vec<String> = found.iter().skip(1).map(|(k, _)| k.display().to_string()).collect();
        out.push(Finding {
            severity: if loads { Severity::Warning } else { Severity::Problem },
            message: format!(
                "the folder {} on {search_var} (position {}) holds no cuDNN library, but its subfolder {} holds {} (the layout of NVIDIA's exe installer: one subfolder per CUDA version); the loader does not look into subfolders",
                f.display(),
                i + 1,
                first.display(),
                names.join(", ")
            ),
            hint: Some(if others.is_empty() {
                format!("put {} on {search_var} instead of {}", first.display(), f.display())
            } else {
                format!("put the subfolder for your CUDA version on {search_var} instead of {}: {} (or {})", f.display(), first.display(), others.join(", "))
            }),
        });
    }
    out
}

/// Every cuDNN library file in the search folders that is not a complete image for this
/// machine (issue 13, item 3): cut short (its headers say it is longer than it is:
/// [`crate::sys::binfmt::truncated`]) or built for another machine ([`crate::sys::binfmt::inspect`]).
/// Files that are no PE/ELF image at all are judged by the load itself.
fn damaged_images(search_path: &[SearchDir]) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in search_path {
        let Ok(rd) = std::fs::read_dir(&d.path) else { continue };
        let mut names: Vec<String> = rd.flatten().filter(|e| e.path().is_file()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        let mut seen = Vec::new();
        for n in names.into_iter().filter(|n| libname::parse(n).is_some_and(|l| l.os == Os::HOST)) {
            let file = d.path.join(&n);
            let real = paths::canonicalize(&file).unwrap_or_else(|_| file.clone());
            if seen.contains(&real) {
                continue;
            }
            seen.push(real);
            if let Ok(Some((need, have))) = crate::sys::binfmt::truncated(&file) {
                out.push(Finding {
                    severity: Severity::Problem,
                    message: format!(
                        "{} is cut short: its headers need {need} bytes, the file has {have} (an interrupted copy or download); the loader maps it and the process dies (SIGBUS) or refuses it",
                        file.display()
                    ),
                    hint: Some(format!("copy {n} again from its release (or import the release with `cuenv store add` and use a profile)")),
                });
            } else if let Ok(info) = crate::sys::binfmt::inspect(&file)
                && info.platform != crate::cudnn::platform::Platform::host()
            {
                out.push(Finding {
                    severity: Severity::Problem,
                    message: format!("{} is built for {}, not for this machine: the loader refuses it", file.display(), info.describe),
                    hint: Some(format!(
                        "replace it with the {} build, or remove it from {}",
                        crate::cudnn::platform::Platform::host().map(|p| p.as_str()).unwrap_or("native"),
                        d.path.display()
                    )),
                });
            }
        }
    }
    out
}

/// The conda env at `prefix` holds cuenv shims (`etc/conda/activate.d/cuenv-<profile>.<ext>`),
/// but this shell has no `CUENV_PROFILE`: it ran none of them (a shell conda has no script
/// for, or the env entered without `conda activate`). A warning naming the shims.
fn shim_not_run(prefix: &Path) -> Option<Finding> {
    let dir = prefix.join("etc").join("conda").join("activate.d");
    let mut shims: Vec<String> =
        std::fs::read_dir(&dir).ok()?.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("cuenv-")).collect();
    if shims.is_empty() {
        return None;
    }
    shims.sort();
    Some(Finding {
        severity: Severity::Warning,
        message: format!(
            "the conda env {} has cuenv shims ({}), but this shell ran none of them (CUENV_PROFILE is unset): its cuDNN is whatever the search path gives",
            prefix.display(),
            shims.join(", ")
        ),
        hint: Some(
            "activate the env with `conda activate` in a shell conda has a script for (bash/zsh, fish, PowerShell, cmd), or run `cuenv env <profile>` for this shell".into(),
        ),
    })
}

/// `--major N` asked for and no cuDNN N reachable: neither loadable by name nor held by a
/// search folder (a folder whose copy fails to load is judged already) nor a framework's copy
/// in the conda env. One problem per such major, naming what is reachable instead.
fn unreachable_majors(asked: &[u64], loaded: &[Loaded], search_path: &[SearchDir], conda_prefix: Option<&Path>, search_var: &str) -> Vec<Finding> {
    let copies = conda_prefix.map(framework_copies).unwrap_or_default();
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
                if conda_prefix.is_some() { " and the conda env holds none" } else { "" }
            )
        } else {
            format!("reachable instead: {}", reachable.join("; "))
        };
        out.push(Finding {
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

/// A problem when the folder `dir` holds cuDNN `major` libraries of two or more releases, as
/// their files tell ([`loader::folder_versions`]; files of unknown version count for none).
/// `where_` says where the folder was found (`on LD_LIBRARY_PATH (position 2)`).
fn mixed_releases(dir: &Path, major: u64, where_: &str) -> Option<Finding> {
    let found = loader::folder_versions(dir, major);
    if found.len() < 2 {
        return None;
    }
    let parts: Vec<String> = found.iter().map(|(v, files)| format!("{v}: {}", files.join(", "))).collect();
    Some(Finding {
        severity: Severity::Problem,
        message: format!(
            "the folder {} {where_} holds cuDNN {major} libraries of {} releases ({}): the dispatcher loads its sub-libraries from there, so one process gets a set from two releases",
            dir.display(),
            found.len(),
            parts.join("; ")
        ),
        hint: Some(format!(
            "keep one release per folder: delete the files of the other release from {} (or reinstall the release that belongs there)",
            dir.display()
        )),
    })
}

/// What to do about a failed load of cuDNN `major` found without a profile.
fn hint_for(kind: ReasonKind, major: u64, search_var: &str) -> String {
    match kind {
        ReasonKind::MixedVersions => {
            format!("keep every cuDNN {major} library of one release in one folder, or let a cuenv profile provide them (`cuenv apply`, then activate it)")
        }
        ReasonKind::WrongCudaMajor => {
            "put the CUDA runtime of the major this cuDNN was built for ahead of the others, or use a cuDNN built for the runtime you have".into()
        }
        ReasonKind::MissingLibrary => {
            format!("put the folder that holds it on {search_var} (a cuenv profile's activation puts the profile's CUDA runtime there), or install it")
        }
        ReasonKind::Crash | ReasonKind::Timeout | ReasonKind::BadReport => {
            "`cuenv doctor --json` shows the probe's output; libraries from two releases in one process are the usual cause".into()
        }
        _ => "`cuenv doctor --json` shows the probe's full report".into(),
    }
}

fn describe_load(o: &ProbeOutcome, inp: &Inputs, conda_prefix: Option<&Path>) -> Loaded {
    let mut l =
        Loaded { major: o.major, dispatcher: None, origin: None, version: None, version_from: None, built_for_cuda: None, error: None, modules: Vec::new() };
    let Some(r) = &o.report else {
        l.error = Some(match &o.end {
            check::ProbeEnd::Signaled { name, .. } => format!("the probe crashed ({name}) while loading it"),
            check::ProbeEnd::TimedOut { after_ms } => format!("the probe did not finish within {after_ms} ms"),
            check::ProbeEnd::SpawnFailed { error } => error.clone(),
            check::ProbeEnd::Exited { code } => format!("the probe exited with code {code} without a report"),
        });
        return l;
    };
    l.modules = r.modules.clone();
    if !r.dispatcher.loaded {
        l.error = r.dispatcher.error.as_ref().map(|e| e.message.clone());
        return l;
    }
    let want = libname::dispatcher_name(o.major, Os::HOST);
    let d = r.modules.iter().find(|m| m.name.eq_ignore_ascii_case(&want)).or_else(|| r.modules.iter().find(|m| libname::is_dispatcher(&m.name)));
    if let Some(d) = d {
        let path = PathBuf::from(&d.path);
        l.origin = Some(origin(&path, inp.layout, inp.toolkits, conda_prefix));
        l.dispatcher = Some(path);
    }
    if let Some(v) = &r.cudnn {
        l.version = Some(check::decode_cudnn(v.version));
        let reporter = if o.major >= 9 { "graph" } else { "ops_infer" };
        let own = l.dispatcher.as_deref().and_then(Path::parent).map(Path::to_path_buf);
        l.version_from = r
            .modules
            .iter()
            .find(|m| m.kind == probe::ModuleKind::Cudnn && libname::parse(&m.name).and_then(|x| x.stem).as_deref() == Some(reporter))
            .map(|m| PathBuf::from(&m.path))
            .filter(|p| own.as_deref().is_some_and(|own| p.parent().is_some_and(|d| !paths::same_path(d, own))));
        l.built_for_cuda = (v.cudart_version > 0).then(|| check::cuda_version(v.cudart_version));
    }
    l
}

/// Where the file at `path` comes from, in words: a store entry, a toolkit root, a pip wheel,
/// PyTorch's bundled copy, a conda env, or just its folder.
pub fn origin(path: &Path, layout: &Layout, toolkits: &[Toolkit], conda_prefix: Option<&Path>) -> String {
    // Canonical, but without Windows' `\\?\` verbatim prefix (never shown to users).
    let canon = |p: &Path| paths::canonical_shown(p).unwrap_or_else(|_| p.to_path_buf());
    let file = canon(path);
    let store = canon(&layout.store_dir());
    if let Ok(rest) = file.strip_prefix(&store)
        && let Some(entry) = rest.components().next()
    {
        return format!("cuenv store entry {}", entry.as_os_str().to_string_lossy());
    }
    let toolkits_dir = canon(&layout.toolkits_dir());
    if let Ok(rest) = file.strip_prefix(&toolkits_dir)
        && let Some(root) = rest.components().next()
    {
        return format!("cuenv CUDA runtime root {}", root.as_os_str().to_string_lossy());
    }
    if let Some(t) = toolkits.iter().find(|t| file.starts_with(canon(&t.root))) {
        let v = t.version.as_ref().map(|v| format!("CUDA {v} ")).unwrap_or_default();
        return format!("the {v}toolkit root {} (copied in by hand)", t.root.display());
    }
    let text = file.to_string_lossy().replace('\\', "/");
    let lower = text.to_ascii_lowercase();
    if let Some(i) = lower.find("/site-packages/nvidia/") {
        return format!("a pip wheel (nvidia-*) in {}", &text[..i + "/site-packages".len()]);
    }
    if let Some(i) = lower.find("/torch/lib/") {
        return format!("PyTorch's bundled copy in {}", &text[..i + "/torch/lib".len()]);
    }
    if let Some(prefix) = conda_prefix
        && file.starts_with(canon(prefix))
    {
        return format!("the conda env {}", prefix.display());
    }
    format!("the folder {}", file.parent().unwrap_or(&file).display())
}

/// The folders of the search path that hold a cuDNN dispatcher, in order.
/// `folders` are the variable's entries in order (positions count empty ones too, which
/// are skipped); a folder listed again (or another name of it) is scanned once.
fn scan_search_path(folders: &[PathBuf]) -> Vec<SearchDir> {
    let mut out: Vec<SearchDir> = Vec::new();
    let mut seen_majors = std::collections::BTreeSet::new();
    let mut seen_folders = std::collections::HashSet::new();
    for (i, folder) in folders.iter().enumerate() {
        if folder.as_os_str().is_empty() || !seen_folders.insert(paths::canonicalize(folder).unwrap_or_else(|_| folder.clone())) {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(folder) else { continue };
        let names: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        let mut dispatchers: Vec<Dispatcher> = names
            .iter()
            .filter_map(|n| {
                let major = libname::loader_dispatcher_major(n, Os::HOST)?;
                Some(Dispatcher { file: n.clone(), major, version: file_version(folder, n, major, &names), first: false })
            })
            .collect();
        if dispatchers.is_empty() {
            let mut subs: Vec<SubLibrary> = names
                .iter()
                .filter_map(|n| {
                    let l = libname::parse(n).filter(|l| l.os == Os::HOST && !l.is_dispatcher() && l.is_loader_name())?;
                    Some(SubLibrary { file: n.clone(), major: l.major?, version: loader::file_version(&folder.join(n)).map(|v| v.to_string()) })
                })
                .collect();
            if subs.is_empty() {
                continue;
            }
            subs.sort_by(|a, b| a.file.cmp(&b.file));
            out.push(SearchDir { position: i + 1, path: folder.clone(), dispatchers, sub_libraries: subs });
            continue;
        }
        dispatchers.sort_by_key(|d| std::cmp::Reverse(d.major));
        for d in &mut dispatchers {
            d.first = seen_majors.insert(d.major);
        }
        out.push(SearchDir { position: i + 1, path: folder.clone(), dispatchers, sub_libraries: Vec::new() });
    }
    out
}

/// cuDNN copies that frameworks load ahead of the search path, in a conda env `prefix`:
/// PyTorch's `torch/lib` (Windows wheels bundle cuDNN there), the `nvidia-cudnn-cu*` pip
/// wheel (`site-packages/nvidia/cudnn`, which Linux PyTorch wheels load through their RPATH),
/// and the env's own library folder (conda's `cudnn` package). Returns (folder, what, dispatcher).
pub fn framework_copies(prefix: &Path) -> Vec<(PathBuf, String, Dispatcher)> {
    let mut places: Vec<(PathBuf, String)> = vec![(prefix.join(if cfg!(windows) { "Library/bin" } else { "lib" }), "conda's cudnn package".into())];
    for sp in site_packages(prefix) {
        places.push((sp.join("torch").join("lib"), "PyTorch".into()));
        places.push((sp.join("nvidia").join("cudnn").join(if cfg!(windows) { "bin" } else { "lib" }), "the pip wheel nvidia-cudnn".into()));
    }
    let mut out = Vec::new();
    for (dir, what) in places {
        for found in scan_search_path(std::slice::from_ref(&dir)) {
            for mut d in found.dispatchers {
                if d.version.is_none() && what.starts_with("the pip wheel") {
                    // site-packages/nvidia/cudnn/lib -> site-packages
                    d.version = wheel_version(dir.ancestors().nth(3).unwrap_or(&dir));
                }
                out.push((dir.clone(), what.clone(), d));
            }
        }
    }
    out
}

/// The `site-packages` folders of the conda env `prefix` that exist: `Lib/site-packages`
/// (Windows) and `lib/python*/site-packages`, sorted.
fn site_packages(prefix: &Path) -> Vec<PathBuf> {
    let mut site_packages: Vec<PathBuf> = vec![prefix.join("Lib").join("site-packages")];
    if let Ok(rd) = std::fs::read_dir(prefix.join("lib")) {
        let mut pythons: Vec<PathBuf> =
            rd.flatten().filter(|e| e.file_name().to_string_lossy().starts_with("python")).map(|e| e.path().join("site-packages")).collect();
        pythons.sort();
        site_packages.extend(pythons);
    }
    site_packages.retain(|p| p.is_dir());
    site_packages
}

/// The version of the `nvidia-cudnn-cu*` wheel installed in `site_packages`, from its
/// `nvidia_cudnn_cu<N>-<version>.dist-info` folder name.
fn wheel_version(site_packages: &Path) -> Option<String> {
    std::fs::read_dir(site_packages).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let rest = name.strip_prefix("nvidia_cudnn_cu")?.strip_suffix(".dist-info")?;
        Some(rest.split_once('-')?.1.to_string())
    })
}

/// A dispatcher's version: its VERSIONINFO (Windows DLL), else a `libcudnn.so.<major>.Y.Z`
/// beside it (the Linux archives' symlink chain).
fn file_version(folder: &Path, name: &str, major: u64, names: &[String]) -> Option<String> {
    if let Ok(info) = crate::sys::binfmt::inspect(&folder.join(name))
        && let Some(v) = info.file_version
    {
        return Some(v.to_string());
    }
    names
        .iter()
        .filter_map(|n| libname::parse(n))
        .filter(|l| l.os == Os::Linux && l.is_dispatcher() && l.major == Some(major))
        .filter_map(|l| l.version.filter(|v| v.contains('.')))
        .max_by_key(String::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatcher_names_are_the_loaders() {
        let dispatcher_major = |n: &str| libname::loader_dispatcher_major(n, Os::HOST);
        if cfg!(windows) {
            assert_eq!(dispatcher_major("cudnn64_9.dll"), Some(9));
            assert_eq!(dispatcher_major("CUDNN64_8.DLL"), Some(8));
            assert_eq!(dispatcher_major("cudnn_ops64_9.dll"), None);
        } else {
            assert_eq!(dispatcher_major("libcudnn.so.9"), Some(9));
            assert_eq!(dispatcher_major("libcudnn.so.9.5.0"), None);
            assert_eq!(dispatcher_major("libcudnn_ops.so.9"), None);
        }
    }

    /// The loader finds a dispatcher by its exact name: on Linux an upper-case
    /// `LIBCUDNN.SO.9` is not `libcudnn.so.9` (it used to be counted as one), and a
    /// `cudnn64_+9.dll` is no DLL name of major 9 (it used to be).
    #[test]
    fn only_the_loaders_exact_names_count() {
        let dir = tempfile::tempdir().unwrap();
        let odd = if cfg!(windows) { "cudnn64_+9.dll" } else { "LIBCUDNN.SO.9" };
        std::fs::write(dir.path().join(odd), "x").unwrap();
        std::fs::write(dir.path().join(format!("{}.bak", libname::dispatcher_name(9, Os::HOST))), "x").unwrap();
        assert!(scan_search_path(&[dir.path().to_path_buf()]).is_empty());
    }

    #[test]
    fn search_path_marks_the_first_of_each_major() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, c) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("c"));
        for d in [&a, &b, &c] {
            std::fs::create_dir(d).unwrap();
        }
        let name = |m: u64| libname::dispatcher_name(m, Os::HOST);
        std::fs::write(a.join(name(9)), "x").unwrap();
        std::fs::write(b.join(name(9)), "x").unwrap();
        std::fs::write(b.join(name(8)), "x").unwrap();
        if !cfg!(windows) {
            std::fs::write(b.join("libcudnn.so.9.1.0"), "x").unwrap();
        }
        let dirs = scan_search_path(&[c.clone(), a.clone(), PathBuf::new(), a.clone(), tmp.path().join("missing"), b.clone()]);
        assert_eq!(dirs.len(), 2, "{dirs:?}");
        assert_eq!((dirs[0].position, &dirs[0].path), (2, &a));
        assert!(dirs[0].dispatchers[0].first);
        assert_eq!((dirs[1].position, &dirs[1].path), (6, &b), "positions count the empty entry; `a` again is not a second folder");
        let majors: Vec<(u64, bool)> = dirs[1].dispatchers.iter().map(|d| (d.major, d.first)).collect();
        assert_eq!(majors, [(9, false), (8, true)]);
        if !cfg!(windows) {
            assert_eq!(dirs[1].dispatchers[0].version.as_deref(), Some("9.1.0"));
        }
    }

    #[test]
    fn origins_in_words() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = Layout::new(tmp.path().join("home"));
        let e = layout.store_dir().join("cudnn-9.5.0.50-cuda12-linux-x86_64-abc").join("lib");
        std::fs::create_dir_all(&e).unwrap();
        std::fs::write(e.join("libcudnn.so.9"), "x").unwrap();
        assert_eq!(origin(&e.join("libcudnn.so.9"), &layout, &[], None), "cuenv store entry cudnn-9.5.0.50-cuda12-linux-x86_64-abc");
        let sp = tmp.path().join("env/lib/python3.11/site-packages");
        assert!(origin(&sp.join("nvidia/cudnn/lib/libcudnn.so.9"), &layout, &[], None).starts_with("a pip wheel (nvidia-*) in "));
        assert!(origin(&sp.join("torch/lib/libcudnn.so.9"), &layout, &[], None).starts_with("PyTorch's bundled copy in "));
        let env = tmp.path().join("env");
        assert_eq!(origin(&env.join("lib/libcudnn.so.8"), &layout, &[], Some(&env)), format!("the conda env {}", env.display()));
        assert_eq!(origin(Path::new("/opt/x/libcudnn.so.8"), &layout, &[], None), "the folder /opt/x");
    }
}
