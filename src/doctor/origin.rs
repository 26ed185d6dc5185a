//! Where what the doctor finds comes from: the origin of a loaded library in words (a cuenv
//! store entry or runtime root, a toolkit root, a pip wheel, PyTorch's bundled copy, a conda
//! env), the profile view the shell is activated for, the cuDNN copies frameworks load in the
//! conda env, and cuDNN copied by hand into a toolkit root.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::search_path::scan_search_path;
use super::{Dispatcher, Finding, Inputs, Loaded, Severity, loader};
use crate::check::{self, ProbeOutcome};
use crate::cudnn::libname::{self, Os};
use crate::cudnn::version::Version;
use crate::generation::{self, ViewRecord};
use crate::home::layout::Layout;
use crate::home::settings::PROFILE_VAR;
use crate::probe;
use crate::sys::paths;
use crate::toolkit::Toolkit;

/// The profile this shell is activated for ([`super::Diagnosis::active_profile`]), whether
/// it follows `<home>/active`, and its view in the current generation.
pub(super) struct Active {
    pub(super) profile: Option<String>,
    pub(super) follows: bool,
    pub(super) view: Option<ViewRecord>,
}

/// The active profile from `CUENV_PROFILE` (`cuenv_profile`), or `<home>/active`'s when the
/// shell follows it, and its view; a finding when there is no such profile.
pub(super) fn active_profile(layout: &Layout, cuenv_profile: Option<OsString>, findings: &mut Vec<Finding>) -> Active {
    let mut active_profile = cuenv_profile.map(|v| v.to_string_lossy().into_owned()).filter(|s| !s.is_empty());
    let follows_active = active_profile.as_deref() == Some("active");
    let active_link = layout.active_link();
    if follows_active {
        // `cuenv env --setup`: the shell follows `<home>/active`, whichever profile
        // `cuenv use` made active.
        let target = crate::generation::active::name(layout);
        if target.is_none() {
            findings.push(Finding {
                rule: None,
                severity: Severity::Warning,
                message: format!("this shell follows {} (`cuenv env --setup`), but no profile is active", active_link.display()),
                hint: Some("`cuenv use <profile>` makes one active".into()),
            });
        }
        active_profile = target;
    } else if active_profile.is_none()
        && let Some(name) = crate::generation::active::name(layout)
    {
        // `cuenv use` made a profile active, but nothing in this shell follows it: no conda
        // shim, no `.cuenv-profile` hook, no `cuenv env --setup` (decisions 5).
        findings.push(Finding {
            rule: None,
            severity: Severity::Warning,
            message: format!(
                "`cuenv use` made profile `{name}` active ({}), but this shell does not follow it ({PROFILE_VAR} is unset), so nothing of `{name}` is on its search path",
                active_link.display()
            ),
            hint: Some(format!(
                "run `eval \"$(cuenv env --setup)\"` in this shell (PowerShell: `cuenv env --setup --shell powershell | Out-String | Invoke-Expression`) and add that line to its startup file so new shells follow `cuenv use` too; or run one command in it with `cuenv run -p {name} -- COMMAND`"
            )),
        });
    }
    let active_view = active_profile.as_ref().and_then(|name| {
        let view = generation::current_manifest(layout).and_then(|m| m.profiles.into_iter().find(|p| &p.name == name));
        if view.is_none() {
            let (message, hint) = if follows_active {
                (
                    format!("{} points at profile `{name}`, which the current generation does not have", active_link.display()),
                    "`cuenv use <profile>` picks one of the current generation (`cuenv status` lists them), `cuenv use --none` clears it, or `cuenv rollback --to N` goes back to a generation that has it",
                )
            } else {
                (
                    format!("{PROFILE_VAR} says profile `{name}` is active, but the current generation has no such profile"),
                    "deactivate and activate the conda env (or the `cuenv env` shell) again, or run `cuenv status` to see the profiles",
                )
            };
            findings.push(Finding { rule: None, severity: Severity::Problem, message, hint: Some(hint.into()) });
        }
        view
    });
    Active { profile: active_profile, follows: follows_active, view: active_view }
}

pub(super) fn describe_load(o: &ProbeOutcome, inp: &Inputs, conda_prefix: Option<&Path>) -> Loaded {
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
        let own = l.dispatcher.as_deref().and_then(Path::parent).map(Path::to_path_buf);
        // cuDNN forwards cudnnGetVersion to the first sub-library its dispatcher names (`graph`
        // in 9.x, `ops_infer` in 8.x in every real dispatcher; docs/facts.md §2).
        let reporter = l.dispatcher.as_deref().and_then(|d| super::loader::named_first(d, o.major)).unwrap_or_default();
        l.version_from = r
            .modules
            .iter()
            .find(|m| m.kind == probe::ModuleKind::Cudnn && libname::parse(&m.name).and_then(|x| x.stem).as_deref() == Some(reporter.as_str()))
            .map(|m| PathBuf::from(&m.path))
            .filter(|p| own.as_deref().is_some_and(|own| p.parent().is_some_and(|d| !paths::same_path(d, own))));
        l.built_for_cuda = (v.cudart_version > 0).then(|| check::cuda_version(v.cudart_version));
    }
    l
}

/// The folder name of the store entry the file or folder `path` lies in, if any (both
/// canonical, without Windows' `\\?\` verbatim prefix).
pub(super) fn store_entry(path: &Path, layout: &Layout) -> Option<String> {
    let canon = |p: &Path| paths::canonical_shown(p).unwrap_or_else(|_| p.to_path_buf());
    let rest = canon(path).strip_prefix(canon(&layout.store_dir())).ok()?.to_path_buf();
    rest.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned())
}

/// Where the file at `path` comes from, in words: a store entry, a toolkit root, a pip wheel,
/// PyTorch's bundled copy, a conda env, or just its folder.
pub fn origin(path: &Path, layout: &Layout, toolkits: &[Toolkit], conda_prefix: Option<&Path>) -> String {
    // Canonical, but without Windows' `\\?\` verbatim prefix (never shown to users).
    let canon = |p: &Path| paths::canonical_shown(p).unwrap_or_else(|_| p.to_path_buf());
    let file = canon(path);
    if let Some(entry) = store_entry(&file, layout) {
        return format!("cuenv store entry {entry}");
    }
    let toolkits_dir = canon(&layout.toolkits_dir());
    if let Ok(rest) = file.strip_prefix(&toolkits_dir)
        && let Some(root) = rest.components().next()
    {
        return format!("cuenv CUDA runtime root {}", root.as_os_str().to_string_lossy());
    }
    if let Some(t) = toolkits.iter().find(|t| file.starts_with(canon(&t.root))) {
        let v = t.version.as_ref().map(|v| format!("CUDA {v} ")).unwrap_or_default();
        let how = if copied_into_toolkit(&file) { " (copied in by hand)" } else { "" };
        return format!("the {v}toolkit root {}{how}", t.root.display());
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

/// Whether a file found in a CUDA toolkit root is one the toolkit does not ship, so someone
/// put it there: a cuDNN library or `zlibwapi.dll` (NVIDIA ships both apart from the toolkit;
/// docs/facts.md §1, §2). The toolkit's own libraries (its CUDA runtime, cuBLAS, NVRTC, the
/// driver stubs) and files cuenv cannot name are not called copies.
fn copied_into_toolkit(file: &Path) -> bool {
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    matches!(probe::module_kind(&name), Some(probe::ModuleKind::Cudnn | probe::ModuleKind::Zlib))
}

/// cuDNN copies that frameworks load ahead of the search path, in the Python env `env`
/// ([`crate::pyenv`]): PyTorch's `torch/lib` (Windows wheels bundle cuDNN there), the
/// `nvidia-cudnn-cu*` pip wheel (`site-packages/nvidia/cudnn`, which Linux PyTorch wheels load
/// through their RPATH; the `-cu13` wheel keeps this folder, while CUDA 13's own wheels moved to
/// `nvidia/cu13`, docs/facts.md), in each of its site-packages, and a conda prefix's own
/// library folder (conda's `cudnn` package). Returns (folder, what, dispatcher).
pub fn framework_copies(env: &crate::pyenv::PyEnv) -> Vec<(PathBuf, String, Dispatcher)> {
    let prefix = env.prefix.as_path();
    let mut places: Vec<(PathBuf, String)> = env.conda_lib().map(|lib| (lib, "conda's cudnn package".to_string())).into_iter().collect();
    for sp in &env.site_packages {
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
                if d.version.is_none() {
                    let record = if what.starts_with("conda's") { conda_record_version(prefix) } else { None };
                    (d.version, d.version_from) = copy_version(&dir, d.major, record);
                }
                out.push((dir.clone(), what.clone(), d));
            }
        }
    }
    out
}

/// The version of a framework copy of cuDNN `major` in `dir` whose dispatcher's own file does
/// not tell it, from what can be read, with where each part came from: the release the
/// folder's files carry (the `cudnn_version_...` marker of `graph` / `ops_infer`,
/// [`loader::folder_versions`]) and a package record, `(version, record file)`. Both agree:
/// the record's (it has the build number), naming both; they disagree: the files' (they are
/// what loads), naming what the record says.
fn copy_version(dir: &Path, major: u64, record: Option<(Version, String)>) -> (Option<String>, Option<String>) {
    let found = loader::folder_versions(dir, major);
    let files = (found.len() == 1).then(|| found[0].clone());
    match (files, record) {
        (Some((fv, names)), Some((rv, rec))) if loader::same_release(&fv, &rv) => {
            let v = if rv.to_string().len() >= fv.to_string().len() { rv } else { fv };
            (Some(v.to_string()), Some(format!("{rec}; the version marker of {}", names.join(", "))))
        }
        (Some((fv, names)), Some((rv, rec))) => (Some(fv.to_string()), Some(format!("the version marker of {}; {rec} says {rv}", names.join(", ")))),
        (Some((fv, names)), None) => (Some(fv.to_string()), Some(format!("the version marker of {}", names.join(", ")))),
        (None, Some((rv, rec))) => (Some(rv.to_string()), Some(rec)),
        (None, None) => (None, None),
    }
}

/// The version conda's record of the `cudnn` package in the env `prefix` names:
/// `conda-meta/cudnn-<version>-<build>.json`, its `"version"` field; with the record's path
/// relative to the env.
fn conda_record_version(prefix: &Path) -> Option<(Version, String)> {
    let meta = prefix.join("conda-meta");
    let mut names: Vec<String> = std::fs::read_dir(&meta)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.strip_prefix("cudnn-").is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit())) && n.ends_with(".json"))
        .collect();
    names.sort();
    let name = names.pop()?;
    let text = std::fs::read_to_string(meta.join(&name)).ok()?;
    let doc: serde_json::Value = serde_json::from_str(&text).ok()?;
    let v: Version = doc.get("name").and_then(|n| n.as_str()).filter(|n| *n == "cudnn").and(doc.get("version")?.as_str())?.parse().ok()?;
    Some((v, format!("conda-meta/{name}")))
}

/// The version of the `nvidia-cudnn-cu*` wheel installed in `site_packages`, from its
/// `nvidia_cudnn_cu<N>-<version>.dist-info` folder name.
pub(super) fn wheel_version(site_packages: &Path) -> Option<String> {
    std::fs::read_dir(site_packages).ok()?.flatten().find_map(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        let rest = name.strip_prefix("nvidia_cudnn_cu")?.strip_suffix(".dist-info")?;
        Some(rest.split_once('-')?.1.to_string())
    })
}

/// The conda env at `prefix` holds cuenv shims (`etc/conda/activate.d/cuenv-<profile>.<ext>`),
/// but this shell has no `CUENV_PROFILE`: it ran none of them (a shell conda has no script
/// for, or the env entered without `conda activate`). A warning naming the shims.
pub(super) fn shim_not_run(prefix: &Path) -> Option<Finding> {
    let dir = prefix.join("etc").join("conda").join("activate.d");
    let mut shims: Vec<String> =
        std::fs::read_dir(&dir).ok()?.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("cuenv-")).collect();
    if shims.is_empty() {
        return None;
    }
    shims.sort();
    Some(Finding {
        rule: None,
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

/// The toolkit roots' cuDNN findings: cuDNN copied in by hand, and the oddities about cuDNN
/// [`crate::toolkit::inspect_root`] reports.
pub(super) fn hand_copies(toolkits: &[Toolkit], search_var: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    for t in toolkits {
        let label = t.version.as_ref().map(|v| format!("CUDA {v}")).unwrap_or_else(|| "toolkit".into());
        if let Some(h) = &t.hand_copied_cudnn {
            let v = h.version.as_ref().map(|v| format!("cuDNN {v}")).unwrap_or_else(|| "a cuDNN".into());
            findings.push(Finding {
                rule: None,
                severity: Severity::Warning,
                message: format!("{v} was copied by hand into the {label} root {} ({}): whatever puts that folder on {search_var} loads it, ahead of any profile that comes later", t.root.display(), h.dispatcher.display()),
                hint: Some("import the release with `cuenv store add <archive or wheel>`, declare it in a profile, then delete the copied files from the toolkit root".into()),
            });
        }
        for p in t.problems.iter().filter(|p| p.contains("cuDNN")) {
            findings.push(Finding { rule: None, severity: Severity::Warning, message: format!("{label} root {}: {p}", t.root.display()), hint: None });
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// A toolkit root's own runtime is the toolkit's, not a copy; cuDNN in it is a copy.
    #[test]
    fn only_what_a_toolkit_does_not_ship_is_called_copied_in_by_hand() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = Layout::new(tmp.path().join("home"));
        let root = tmp.path().join("cuda-13.0");
        let lib = root.join("targets/x86_64-linux/lib");
        std::fs::create_dir_all(&lib).unwrap();
        let t = crate::toolkit::Toolkit {
            root: root.clone(),
            version: Some("13.0".parse().unwrap()),
            version_source: None,
            found_by: Vec::new(),
            runtime: Some(lib.join("libcudart.so.13")),
            platform: None,
            hand_copied_cudnn: None,
            problems: Vec::new(),
        };
        let tks = std::slice::from_ref(&t);
        for own in ["libcudart.so.13", "libcublasLt.so.13", "libnvrtc.so.13", "cudart64_13.dll"] {
            assert_eq!(origin(&lib.join(own), &layout, tks, None), format!("the CUDA 13.0 toolkit root {}", root.display()), "{own}");
        }
        for copy in ["libcudnn.so.9", "libcudnn_graph.so.9", "cudnn64_9.dll", "zlibwapi.dll"] {
            assert_eq!(origin(&lib.join(copy), &layout, tks, None), format!("the CUDA 13.0 toolkit root {} (copied in by hand)", root.display()), "{copy}");
        }
    }
}
