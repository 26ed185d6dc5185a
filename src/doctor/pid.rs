//! `cuenv doctor --pid PID`: which cuDNN and CUDA libraries a running process has mapped,
//! where each comes from (attributed like the probe's: [`super::origin`](fn@super::origin)), and whether the
//! cuDNN it loaded is still what its profile gives today.
//!
//! The process is only read ([`crate::sys::procmods`]): its mapped files, and on Linux its
//! environment's `CUENV_PROFILE` (set by cuenv's shims and `cuenv env`; `active` follows
//! `<home>/active`). `--profile NAME` names the profile where the environment cannot be read
//! (Windows) or says something else. A process that loaded another store entry than the one
//! its profile resolves to now is a problem: it keeps the old libraries until it restarts.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::origin::{origin, store_entry, wheel_version};
use super::{Finding, Severity};
use crate::cudnn::libname;
use crate::generation;
use crate::home::layout::Layout;
use crate::home::settings::PROFILE_VAR;
use crate::probe::{self, ModuleKind};
use crate::sys::paths;
use crate::sys::procmods::{self, ProcError};
use crate::toolkit::Toolkit;

/// One tracked library mapped into the process.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessModule {
    /// The mapped file.
    #[serde(serialize_with = "crate::sys::paths::ser_lossy")]
    pub path: PathBuf,
    /// Its file name.
    pub name: String,
    /// What it is (cuDNN, cuBLAS, the runtime, ...).
    pub kind: ModuleKind,
    /// Where it comes from, in words ([`super::origin`](fn@super::origin)).
    pub origin: String,
    /// Its release (`9.5.0.50`), where the store entry's name, the file name, the DLL's
    /// VERSIONINFO or the wheel's dist-info tells.
    pub version: Option<String>,
    /// Linux: the file was deleted after the process mapped it.
    pub deleted: bool,
}

/// What the process's profile gives in the current generation.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileNow {
    /// The profile.
    pub name: String,
    /// Its cuDNN release.
    pub cudnn_version: String,
    /// Its store entry's folder name.
    pub entry: String,
    /// Whether the process's cuDNN dispatcher is that entry's.
    pub current: bool,
}

/// Everything `doctor --pid` found.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessDiagnosis {
    /// The process id.
    pub pid: u32,
    /// The profile the process runs under (`CUENV_PROFILE`, or `--profile`).
    pub profile: Option<String>,
    /// Where `profile` came from: `CUENV_PROFILE`, `<home>/active` or `--profile`.
    pub profile_from: Option<String>,
    /// The cuDNN, cuBLAS, NVRTC, cudart, driver and zlib libraries it has mapped.
    pub modules: Vec<ProcessModule>,
    /// The release of the cuDNN dispatcher it mapped.
    pub cudnn: Option<String>,
    /// What its profile gives now, when the current generation has it.
    pub profile_now: Option<ProfileNow>,
    /// The Python environments of the process ([`crate::pyenv`]): its `VIRTUAL_ENV` and
    /// `CONDA_PREFIX`, and the venv or conda prefix of its executable (Linux `/proc/PID/exe`,
    /// a `python` inside one: a venv started by full path, never activated).
    pub environments: Vec<crate::pyenv::PyEnv>,
    /// Problems first, then warnings.
    pub findings: Vec<Finding>,
}

impl ProcessDiagnosis {
    /// Whether any finding is a [`Severity::Problem`].
    pub fn has_problems(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Problem)
    }
}

/// The release a store entry's folder name carries (`cudnn-9.5.0.50-cuda12-...` -> `9.5.0.50`).
fn entry_version(entry: &str) -> Option<String> {
    let rest = entry.strip_prefix("cudnn-")?;
    let v = rest.split('-').next()?;
    v.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())).then(|| v.to_string())
}

/// A mapped library's release: the store entry's name, else the file name
/// (`libcudnn.so.9.5.0`), else the DLL's VERSIONINFO, else the wheel's dist-info.
fn module_version(path: &Path, name: &str, layout: &Layout) -> Option<String> {
    if let Some(v) = store_entry(path, layout).as_deref().and_then(entry_version) {
        return Some(v);
    }
    if let Some(v) = libname::parse(name).and_then(|l| l.version).filter(|v| v.contains('.')) {
        return Some(v);
    }
    if let Ok(info) = crate::sys::binfmt::inspect(path)
        && let Some(v) = info.file_version
    {
        return Some(v.to_string());
    }
    let text = path.to_string_lossy().replace('\\', "/");
    let i = text.to_ascii_lowercase().find("/site-packages/nvidia/cudnn/")?;
    wheel_version(Path::new(&text[..i + "/site-packages".len()]))
}

/// Reads process `pid` and judges it: see the module documentation. `profile` overrides the
/// process's `CUENV_PROFILE`. Errors: no such process (exit 2), not allowed to read it (exit 1).
pub fn examine_pid(layout: &Layout, toolkits: &[Toolkit], pid: u32, profile: Option<&str>) -> Result<ProcessDiagnosis, ProcError> {
    let mapped = procmods::mapped_files(pid)?;
    let env = procmods::environment(pid)?;
    let get = |name: &str| env.as_ref().and_then(|e| e.iter().rev().find(|(k, _)| k == name)).map(|(_, v)| v.to_string_lossy().into_owned());
    let conda_prefix = get("CONDA_PREFIX").filter(|s| !s.is_empty()).map(PathBuf::from);
    let mut findings = Vec::new();
    let mut environments = crate::pyenv::from_vars(&|k| get(k).map(Into::into));
    if let Some(prefix) = python_exe_prefix(pid)
        && !environments.iter().any(|e| crate::sys::paths::same_path(&e.prefix, &prefix))
        && let Some(e) = crate::pyenv::at(&prefix, "its executable")
    {
        environments.push(e);
    }

    let modules: Vec<ProcessModule> = mapped
        .iter()
        .filter_map(|m| {
            let name = m.path.file_name()?.to_string_lossy().into_owned();
            let kind = probe::module_kind(&name)?;
            let version = if kind == ModuleKind::Cudnn { module_version(&m.path, &name, layout) } else { None };
            Some(ProcessModule {
                origin: origin(&m.path, layout, toolkits, conda_prefix.as_deref()),
                path: m.path.clone(),
                name,
                kind,
                version,
                deleted: m.deleted,
            })
        })
        .collect();
    let dispatcher = modules.iter().find(|m| m.kind == ModuleKind::Cudnn && libname::is_dispatcher(&m.name));
    let cudnn = dispatcher.and_then(|d| d.version.clone());

    for m in modules.iter().filter(|m| m.deleted) {
        findings.push(Finding {
            rule: None,
            severity: Severity::Warning,
            message: format!("process {pid} maps {}, which was deleted or replaced after it was loaded", m.path.display()),
            hint: Some("restart the process to load what its environment gives now".into()),
        });
    }
    // cuDNN libraries from more than one folder: a mixed set.
    let mut folders: Vec<PathBuf> = Vec::new();
    for m in modules.iter().filter(|m| m.kind == ModuleKind::Cudnn) {
        let f = m.path.parent().map(Path::to_path_buf).unwrap_or_default();
        if !folders.contains(&f) {
            folders.push(f);
        }
    }
    if folders.len() > 1 {
        findings.push(Finding {
            rule: None,
            severity: Severity::Problem,
            message: format!(
                "process {pid} has cuDNN libraries from {} folders mapped: {}",
                folders.len(),
                folders.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
            ),
            hint: Some("keep one cuDNN release on the process's search path (a cuenv profile's activation puts its own first), then restart it".into()),
        });
    }

    // The CUDA libraries around cuDNN it maps (F1-F3, crate::companion): one major per
    // family, NVRTC's own builtins, an nvJitLink not older than its users.
    // What it has not mapped yet (cuDNN loads cuBLAS and NVRTC when a network needs them) is
    // judged with the process's own search folders, as the loader would find it (F4, F2, F3).
    let cuda: Vec<PathBuf> = modules.iter().filter(|m| m.kind != ModuleKind::Cudnn).map(|m| m.path.clone()).collect();
    let var = if cfg!(windows) { "PATH" } else { "LD_LIBRARY_PATH" };
    let dirs: Vec<PathBuf> = get(var).map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
    let mut verdicts = crate::companion::judge_mapped(&cuda);
    // Only where the process's environment could be read (not on Windows): without its
    // folders the model would call everything missing.
    if let Some(d) = dispatcher.filter(|_| env.is_some())
        && let (Some(major), Some(dir)) = (libname::dispatcher_major(&d.name), d.path.parent())
    {
        let loads = crate::companion::model_loads(&crate::companion::cudnn_files(dir, major), &dirs, &cuda);
        verdicts.extend(crate::companion::judge_loads(&loads, |_| None));
        // The builtins of an NVRTC of the right major only (another one is F4 already).
        let right_major =
            |l: &&crate::companion::Load| l.path.as_deref().and_then(|p| crate::companion::of_file(Path::new(p))).is_some_and(|c| c.major == l.wanted.major);
        for l in loads.iter().filter(|l| l.wanted.family == "nvrtc").filter(right_major) {
            verdicts.extend(l.path.as_deref().and_then(|p| crate::companion::builtins_missing(Path::new(p), &dirs)));
        }
    }
    let mut user_dirs = dirs.clone();
    user_dirs.extend(cuda.iter().filter_map(|p| p.parent().map(Path::to_path_buf)));
    verdicts.extend(crate::companion::judge_jitlink_users(&user_dirs, |name, asker| crate::companion::search(&dirs, name, asker)));
    verdicts.dedup();
    for v in verdicts {
        findings.push(Finding { rule: Some(v.rule), severity: Severity::Problem, message: format!("process {pid}: {}", v.message), hint: Some(v.hint) });
    }

    // The set of the mapped dispatcher's folder, judged as `store add` would see it
    // (decisions.md 7): what the release's files name and lack (R2), and two releases (V2).
    if let Some(d) = dispatcher
        && let Some(major) = libname::dispatcher_major(&d.name)
        && let Some(dir) = d.path.parent()
    {
        findings.extend(super::lacking_set(&d.path, major, layout, &format!("process {pid} maps the cuDNN {major} dispatcher {}", d.path.display())));
        if let Some(mut f) = super::search_path::mixed_releases(dir, major, &format!("of the dispatcher process {pid} maps")) {
            f.message = f.message.replacen("so one process gets", "so the process gets", 1);
            findings.push(f);
        }
    }

    // zlibwapi.dll as the process's own search order finds it (docs/loader.md W7): what it
    // has already mapped comes first, so a mapped x64 copy settles it; before it is mapped the
    // process's PATH and current folder are not readable here, and nothing is said.
    if cfg!(windows)
        && let Some(d) = dispatcher
        && modules.iter().any(|m| m.kind == ModuleKind::Zlib)
    {
        let win = super::winsearch::WinSearch { loaded: mapped.iter().map(|m| m.path.clone()).collect(), ..Default::default() };
        findings.extend(super::deps::zlibwapi(&d.path, d.version.as_deref(), &win));
    }

    // The profile it runs under, and what that profile gives now.
    let (mut name, mut from) = match profile {
        Some(p) => (Some(p.to_string()), Some("--profile".to_string())),
        None => (get(PROFILE_VAR).filter(|s| !s.is_empty()), Some(PROFILE_VAR.to_string())),
    };
    if name.as_deref() == Some("active") {
        name = crate::generation::active::name(layout);
        from = Some("<home>/active".into());
    }
    if name.is_none() {
        from = None;
    }
    let mut profile_now = None;
    if let Some(p) = &name {
        let view = generation::current_manifest(layout).and_then(|m| m.profiles.into_iter().find(|v| &v.name == p));
        match view {
            None => findings.push(Finding {
                rule: None,
                severity: Severity::Warning,
                message: format!("process {pid} runs under profile `{p}`, which the current generation does not have"),
                hint: Some("`cuenv status` lists the profiles of the current generation".into()),
            }),
            Some(v) => {
                let canon = |x: &Path| paths::canonical_shown(x).unwrap_or_else(|_| x.to_path_buf());
                let current = dispatcher.is_some_and(|d| canon(&d.path).starts_with(canon(&v.entry_dir)));
                if let Some(d) = dispatcher.filter(|_| !current) {
                    let loaded = d.version.as_deref().map(|x| format!("cuDNN {x}")).unwrap_or_else(|| "a cuDNN".into());
                    let (message, hint) = if store_entry(&d.path, layout).is_some() {
                        (
                            format!("process {pid} loaded {loaded} ({}); profile `{p}` now gives {} ({}): restart it", d.origin, v.cudnn_version, v.cudnn_name),
                            "a running process keeps the libraries it loaded: restart it (the kernel, the notebook server) to load what the profile gives now"
                                .to_string(),
                        )
                    } else {
                        (
                            format!(
                                "process {pid} runs under profile `{p}` but loaded {loaded} from {}, not the profile's {} ({})",
                                d.origin, v.cudnn_version, v.cudnn_name
                            ),
                            "something in the process's environment put another cuDNN first: `cuenv doctor` in that environment names it".to_string(),
                        )
                    };
                    findings.push(Finding { rule: None, severity: Severity::Problem, message, hint: Some(hint) });
                }
                profile_now = Some(ProfileNow { name: v.name.clone(), cudnn_version: v.cudnn_version.to_string(), entry: v.cudnn_name.clone(), current });
            }
        }
    }
    findings.sort_by_key(|f| f.severity);
    Ok(ProcessDiagnosis { pid, profile: name, profile_from: from, modules, cudnn, profile_now, environments, findings })
}

/// The env prefix holding process `pid`'s executable when it is a Python interpreter
/// (`<prefix>/bin/python3.X`, `<venv>/bin/python`): Linux `/proc/PID/exe`, read as a link
/// (a venv's `bin/python` is itself a link, so `/proc/PID/exe` names the base interpreter:
/// the process's `/proc/PID/cmdline` argv[0] is tried first). `None` elsewhere.
fn python_exe_prefix(pid: u32) -> Option<PathBuf> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let argv0 =
        std::fs::read(proc.join("cmdline")).ok().and_then(|b| b.split(|c| *c == 0).next().map(|a| PathBuf::from(String::from_utf8_lossy(a).into_owned())));
    let cwd = std::fs::read_link(proc.join("cwd")).ok();
    let candidates =
        argv0.map(|a| if a.is_absolute() { a } else { cwd.clone().unwrap_or_default().join(a) }).into_iter().chain(std::fs::read_link(proc.join("exe")).ok());
    for exe in candidates {
        let is_python = exe.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python"));
        if let Some(prefix) = exe.parent().and_then(Path::parent).filter(|_| is_python)
            && (prefix.join("pyvenv.cfg").is_file() || prefix.join("conda-meta").is_dir())
        {
            return Some(prefix.to_path_buf());
        }
    }
    None
}

/// The process diagnosis in words.
pub fn render(d: &ProcessDiagnosis) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = match (&d.profile, &d.profile_from) {
        (Some(p), Some(from)) => writeln!(s, "process {}: profile {p} (from {from})", d.pid),
        _ => writeln!(s, "process {}: no cuenv profile (CUENV_PROFILE is unset in its environment)", d.pid),
    };
    for e in &d.environments {
        let _ = writeln!(s, "its Python environment ({}): {}", e.found_by, e.describe());
    }
    if d.modules.is_empty() {
        let _ = writeln!(s, "no cuDNN or CUDA library is mapped into it");
    } else {
        let _ = writeln!(s, "cuDNN and CUDA libraries mapped into it:");
        for m in &d.modules {
            let v = m.version.as_deref().map(|v| format!(" ({v})")).unwrap_or_default();
            let gone = if m.deleted { " [deleted]" } else { "" };
            let _ = writeln!(s, "  {}{v}{gone}\n    {}\n    from {}", m.name, m.path.display(), m.origin);
        }
    }
    if let Some(n) = &d.profile_now {
        // A process that has mapped no cuDNN yet (it loads cuDNN on first use) is neither
        // current nor stale: say that instead of "not what this process loaded".
        let state = if n.current {
            "the cuDNN this process loaded"
        } else if d.cudnn.is_none() {
            "this process has not loaded cuDNN (yet: a framework loads it on first use)"
        } else {
            "not what this process loaded"
        };
        let _ = writeln!(s, "profile {} now gives cuDNN {} ({}): {state}", n.name, n.cudnn_version, n.entry);
    }
    if d.findings.is_empty() {
        let _ = writeln!(s, "\nno problems found");
        return s;
    }
    let _ = writeln!(s);
    for f in &d.findings {
        let _ = writeln!(s, "{f}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_carry_their_release() {
        assert_eq!(entry_version("cudnn-9.5.0.50-cuda12-linux-x86_64-abc").as_deref(), Some("9.5.0.50"));
        assert_eq!(entry_version("cudnn-9.x-cuda12"), None);
        assert_eq!(entry_version("toolkit-12.6"), None);
    }
}
