//! What the loader model ([`super::loader`], docs/loader.md) predicts for cuDNN copies that
//! frameworks carry in a conda env, and for the sub-libraries of a dispatcher the probe
//! loaded: every sentence here about which copy wins is derived from that model.
//!
//! - Linux: the libraries in `torch/lib` that name `libcudnn.so.<N>` in `DT_NEEDED` are read
//!   (`DT_RPATH` / `DT_RUNPATH`), the dispatcher they get is found as ld.so would find it with
//!   this shell's `LD_LIBRARY_PATH`, and then each sub-library the dispatcher loads by name.
//! - Windows: cuDNN's dispatcher, however it was loaded, finds its sub-libraries by name
//!   through the standard search order (PATH), so a copy's own folder counts only where it
//!   is on PATH first, or where its framework loaded those DLLs itself (PyTorch's
//!   `import torch` loads every DLL of `torch\lib`: pytorch/pytorch `torch/__init__.py`,
//!   `_load_dll_libraries`).

use std::path::{Path, PathBuf};

use super::envs::Consumer;
use super::loader::{self, LinuxEnv, Object, SubPick};
use super::winsearch::WinSearch;
use super::{Dispatcher, Finding, Severity};
use crate::cudnn::libname::{self, Os};
use crate::cudnn::version::Version;
use crate::pyenv::PyEnv;
use crate::sys::paths;

/// The release of the cuDNN `major` dispatcher at `dispatcher`: its own file's version
/// ([`loader::file_version`]), else the one release its folder's files tell, else the
/// `nvidia_cudnn_cu*` wheel's version when the folder is a wheel's.
pub fn own_release(dispatcher: &Path, major: u64) -> Option<Version> {
    if let Some(v) = loader::file_version(dispatcher) {
        return Some(v);
    }
    let dir = dispatcher.parent()?;
    let found = loader::folder_versions(dir, major);
    if found.len() == 1 {
        return Some(found[0].0.clone());
    }
    if !found.is_empty() {
        return None;
    }
    // site-packages/nvidia/cudnn/{lib,bin} -> site-packages
    super::origin::wheel_version(dir.ancestors().nth(3)?).and_then(|v| v.parse().ok()).filter(|v: &Version| v.major() == major)
}

fn shown(v: Option<&str>) -> String {
    v.map(str::to_string).unwrap_or_else(|| "version unknown".into())
}

fn canon(p: &Path) -> PathBuf {
    paths::canonical_shown(p).unwrap_or_else(|_| p.to_path_buf())
}

fn same_dir(a: &Path, b: &Path) -> bool {
    paths::same_path(&canon(a), &canon(b))
}

/// A sub-library's release in words: its file's own version; else, when the other files of
/// its folder carry one release ([`loader::folder_versions`], the same reading the search
/// path's listing shows), that one, saying so; else "version unknown".
fn sub_release(own: Option<&str>, file: &Path) -> String {
    if let Some(v) = own {
        return v.to_string();
    }
    let major = file.file_name().and_then(|n| libname::parse(&n.to_string_lossy())?.major);
    match (file.parent(), major) {
        (Some(dir), Some(major)) => match loader::folder_versions(dir, major).as_slice() {
            [(v, _)] => format!("{v}, as the other files of its folder say"),
            _ => shown(None),
        },
        _ => shown(None),
    }
}

/// Sub-libraries of the set `subs` that the model places outside the dispatcher's folder,
/// in words (`libcudnn_cnn_infer.so.8 from /x (8.8.0) through LD_LIBRARY_PATH (position 1)`).
fn away(subs: &[SubPick], search_var: &str, skip: &dyn Fn(&str) -> bool) -> Vec<String> {
    subs.iter()
        .filter(|s| !s.own_folder && !skip(&s.stem))
        .filter_map(|s| {
            let p = s.pick.as_ref()?;
            Some(format!(
                "{} from {} ({}) {}",
                p.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                canon(p.dir()).display(),
                sub_release(s.version.as_deref(), &p.path),
                p.via.describe(search_var)
            ))
        })
        .collect()
}

/// The model's prediction for the sub-libraries of the dispatcher `dispatcher` that a probe
/// loaded by name with the search folders `folders`, for those the probe did not map itself
/// (`mapped`: file names of the cuDNN modules it mapped; those are facts and judged
/// elsewhere); `win`: the host's Windows search order ([`super::winsearch`]). One problem naming every sub-library that would come from another folder.
/// `reported`: the version the probe's `cudnnGetVersion` gave, when a library of the
/// dispatcher's own folder reported it (said when the files do not tell the release).
pub fn probe_set(
    dispatcher: &Path,
    major: u64,
    mapped: &[String],
    reported: Option<&str>,
    folders: &[PathBuf],
    win: &WinSearch,
    search_var: &str,
) -> Option<Finding> {
    let own = dispatcher.parent()?;
    let release = own_release(dispatcher, major);
    let subs = if cfg!(windows) {
        loader::windows_set(own, major, win)
    } else {
        loader::linux_set(dispatcher, major, release.as_ref(), &[], &LinuxEnv::new(folders.to_vec()))
    };
    let mapped_stems: Vec<String> = mapped.iter().filter_map(|m| libname::parse(m)?.stem).collect();
    let list = away(&subs, search_var, &|stem| mapped_stems.iter().any(|m| m == stem));
    if list.is_empty() {
        return None;
    }
    let rule = if cfg!(windows) {
        "cuDNN loads its sub-libraries by name through the standard search order, where a module already loaded under that name, then PATH, decide".to_string()
    } else {
        let runpath = loader::Object::read(dispatcher).and_then(|o| o.dynamic.runpath).map(|r| format!(" `{}`", r.join(":"))).unwrap_or_default();
        format!("cuDNN loads its sub-libraries by name, and the loader searches {search_var} before the dispatcher's DT_RUNPATH{runpath}")
    };
    Some(Finding {
        rule: None,
        severity: Severity::Problem,
        message: format!(
            "cuDNN {major} from {} ({}): {rule}, so it would load {}: a set of libraries from more than one folder",
            dispatcher.display(),
            match (&release, reported) {
                (Some(v), _) => v.to_string(),
                (None, Some(r)) => format!("{r}, as cudnnGetVersion reports"),
                (None, None) => shown(None),
            },
            list.join("; ")
        ),
        hint: Some(format!(
            "remove the folders holding stray cuDNN {major} libraries from {search_var} (or the script that adds them), or keep every cuDNN {major} library of one release in one folder"
        )),
    })
}

/// The linkage of `o` in words: `DT_RUNPATH `$ORIGIN/...`` or `DT_RPATH `...``.
fn linkage(o: &Object) -> String {
    match &o.dynamic.runpath {
        Some(r) => format!("DT_RUNPATH `{}`", r.join(":")),
        None if !o.dynamic.rpath.is_empty() => format!("DT_RPATH `{}`", o.dynamic.rpath.join(":")),
        None => "neither DT_RPATH nor DT_RUNPATH".into(),
    }
}

/// Findings for the framework copies `copies` ([`super::framework_copies`]) in the Python env
/// `env`, used by `consumers` (the libraries of the env that name a cuDNN dispatcher,
/// [`super::envs::consumers`]), with the loader's search folders `folders` (`LD_LIBRARY_PATH` / `PATH`)
/// and `preloaded`, the files loaded before any consumer asks (the env hook's, torch's fallback
/// preload: [`super::finders::torch_fallbacks`]; on Linux a consumer
/// naming a preloaded soname gets that copy, whatever its search path says).
pub fn judge(
    env: &PyEnv,
    copies: &[(PathBuf, String, Dispatcher)],
    consumers: &[Consumer],
    folders: &[PathBuf],
    win: &WinSearch,
    search_var: &str,
    preloaded: &[PathBuf],
) -> Vec<Finding> {
    let mut out = Vec::new();
    // Sentences the model derives for each copy, by folder: (folder, hint).
    let mut derived: Vec<(PathBuf, String)> = Vec::new();
    if cfg!(windows) {
        windows(copies, consumers, win, search_var, &mut out, &mut derived);
    } else {
        linux(consumers, folders, search_var, preloaded, &mut out, &mut derived);
    }
    for (dir, what, d) in copies {
        let v = match (&d.version, &d.version_from) {
            (Some(v), Some(from)) => format!("cuDNN {v} (from {from})"),
            (Some(v), None) => format!("cuDNN {v}"),
            (None, _) => format!("cuDNN {} (its files do not tell the exact version)", d.major),
        };
        let hint = derived.iter().find(|(f, _)| same_dir(f, dir)).map(|(_, h)| h.clone()).unwrap_or_else(|| {
            if cfg!(windows) {
                format!("cuDNN finds its sub-libraries by name through PATH: keep {} at the profile's cuDNN version, or remove it", dir.display())
            } else {
                format!(
                    "no library in the env's site-packages names {} with a search path leading here, so which copy a process loads depends on how it loads cuDNN: `cuenv doctor --pid PID` shows what a running process mapped",
                    libname::dispatcher_name(d.major, Os::Linux)
                )
            }
        });
        out.push(Finding {
            rule: None,
            severity: Severity::Warning,
            message: format!("{what} in {} carries its own {v}: {}", env.describe(), dir.join(&d.file).display()),
            hint: Some(hint),
        });
    }
    out
}

fn linux(consumers: &[Consumer], folders: &[PathBuf], search_var: &str, preloaded: &[PathBuf], out: &mut Vec<Finding>, derived: &mut Vec<(PathBuf, String)>) {
    let env = LinuxEnv::new(folders.to_vec());
    let alone = LinuxEnv { ld_library_path: Vec::new(), ..env.clone() };
    {
        for c in consumers {
            let Some(consumer) = Object::read(&c.path) else { continue };
            let (major, who) = (c.major, c.who.clone());
            let name = libname::dispatcher_name(major, Os::Linux);
            let link = linkage(&consumer);
            let own = loader::find(&name, &consumer, &[], &alone);
            // The env hook loaded a file of that soname first: the consumer gets it, and
            // neither its search path nor the copies it would find take part.
            if let Some(hooked) = super::finders::already_loaded(preloaded, &name) {
                if let Some(own) = &own {
                    derived.push((
                        own.dir().to_path_buf(),
                        format!(
                            "{who} does not load this copy here: {} is loaded before it asks (by the env hook, or by torch's own fallback preload), and a later load of {name} gets that one",
                            hooked.display()
                        ),
                    ));
                }
                continue;
            }
            let Some(got) = loader::find(&name, &consumer, &[], &env) else {
                out.push(Finding {
                    rule: None,
                    severity: Severity::Problem,
                    message: if c.lazy {
                        format!("{who} opens {name} by name itself (with {link}) when it first needs cuDNN, but no folder it searches holds it: that first use fails")
                    } else {
                        format!("{who} names {name} (with {link}), but no folder it searches holds it: importing it fails")
                    },
                    hint: Some(format!(
                        "install the cuDNN {major} its build expects (the nvidia-cudnn-cu* wheel), or put a folder holding {name} on {search_var}"
                    )),
                });
                continue;
            };
            let got_v = own_release(&got.path, major);
            match &own {
                Some(own) if !same_dir(own.dir(), got.dir()) => {
                    let own_v = own_release(&own.path, major);
                    let same = matches!((&got_v, &own_v), (Some(a), Some(b)) if loader::same_release(a, b));
                    if !same {
                        out.push(Finding {
                            rule: None,
                            severity: Severity::Problem,
                            message: format!(
                                "{who} names {name} with {link}, and the loader searches {search_var} before DT_RUNPATH: it takes {} ({}) {}, not its own {} ({})",
                                canon(&got.path).display(),
                                shown(got_v.as_ref().map(|v| v.to_string()).as_deref()),
                                got.via.describe(search_var),
                                canon(&own.path).display(),
                                shown(own_v.as_ref().map(|v| v.to_string()).as_deref())
                            ),
                            hint: Some(format!(
                                "remove {} from {search_var} (or the script that adds it) in this env, or make it hold the same cuDNN release as {}",
                                canon(got.dir()).display(),
                                canon(own.dir()).display()
                            )),
                        });
                    }
                }
                _ => {
                    let why = match &got.via {
                        loader::Via::Rpath { .. } => format!("which the loader searches before {search_var}"),
                        loader::Via::Runpath { .. } => {
                            format!(
                                "since no {search_var} folder holds {name}; one that does, put on {search_var}, would win over it (DT_RUNPATH comes after {search_var})"
                            )
                        }
                        _ => String::new(),
                    };
                    derived.push((
                        got.dir().to_path_buf(),
                        format!("{who} finds {name} here {} {why}; keep this copy at the profile's cuDNN version", got.via.describe(search_var))
                            .replace(" ;", ";"),
                    ));
                }
            }
            // The sub-libraries the dispatcher it gets loads by name.
            let subs = loader::linux_set(&got.path, major, got_v.as_ref(), &[&consumer], &env);
            let list = away(&subs, search_var, &|_| false);
            if !list.is_empty() {
                let runpath = Object::read(&got.path).and_then(|o| o.dynamic.runpath).map(|r| format!(" `{}`", r.join(":"))).unwrap_or_default();
                out.push(Finding {
                    rule: None,
                    severity: Severity::Problem,
                    message: format!(
                        "{who} gets the cuDNN {major} dispatcher {} ({}), which loads its sub-libraries by name, and the loader searches {search_var} before the dispatcher's DT_RUNPATH{runpath}: it would load {}: a set of libraries from more than one folder",
                        canon(&got.path).display(),
                        shown(got_v.as_ref().map(|v| v.to_string()).as_deref()),
                        list.join("; ")
                    ),
                    hint: Some(format!(
                        "remove the folders holding stray cuDNN {major} libraries from {search_var} (or the script that adds them) in this env"
                    )),
                });
            }
        }
    }
}

/// What cuDNN `major` says when the sub-libraries `stems` cannot be found: it aborts at the
/// first one it loads, `first`: the first sub-library its dispatcher names (in file order,
/// the walk's first member: `graph` in 9.x, `ops_infer` in 8.x in every real dispatcher read,
/// docs/facts.md §2; cuDNN 9 forwards even `cudnnGetVersion` to it, "Could not locate
/// cudnn_graph64_9.dll" with the dispatcher alone). When that one is not among `stems`, which
/// of them it names is not known, and the sentence says so.
fn could_not_locate(major: u64, first: Option<&str>, stems: &[&str]) -> String {
    let name = |stem: &str| libname::sub_library_name(stem, major, Os::Windows);
    match first.filter(|first| stems.contains(first)) {
        Some(first) => format!("cuDNN aborts with \"Could not locate {}\"", name(first)),
        None => format!("cuDNN aborts with \"Could not locate ...\" at the first of {} it loads", stems.iter().map(|s| name(s)).collect::<Vec<_>>().join(", ")),
    }
}

fn windows(
    copies: &[(PathBuf, String, Dispatcher)],
    consumers: &[Consumer],
    win: &WinSearch,
    search_var: &str,
    out: &mut Vec<Finding>,
    derived: &mut Vec<(PathBuf, String)>,
) {
    for (dir, what, d) in copies {
        let torch = what == "PyTorch";
        let subs = loader::windows_set(dir, d.major, win);
        let list = away(&subs, search_var, &|_| false);
        let own_v = shown(d.version.as_deref());
        if !list.is_empty() {
            let torch_note = if torch {
                " (`import torch` loads every DLL of torch\\lib itself first, and Windows reuses a loaded module of the same name; any load of cuDNN before or without it gets the set above)"
            } else {
                ""
            };
            out.push(Finding {
                rule: None,
                severity: Severity::Problem,
                message: format!(
                    "{what}'s cuDNN {} dispatcher {} ({own_v}) loads its sub-libraries by name through the standard search order, not from its own folder: it would load {}{torch_note}",
                    d.major,
                    dir.join(&d.file).display(),
                    list.join("; ")
                ),
                hint: Some(format!(
                    "remove the folders holding other cuDNN {} DLLs from PATH, or delete those hand copies; put {} on PATH ahead of them",
                    d.major,
                    dir.display()
                )),
            });
            continue;
        }
        let unreachable: Vec<&str> = subs.iter().filter(|s| s.pick.is_none()).map(|s| s.stem.as_str()).collect();
        // W3 holds for every consumer that is not torch: `import torch` loads torch\lib's DLLs
        // itself, any other library that reaches this copy through os.add_dll_directory gets
        // the dispatcher and then cuDNN's by-name loads fail.
        let others: Vec<&Consumer> = consumers.iter().filter(|c| !c.torch && c.major == d.major).collect();
        if !unreachable.is_empty() && torch && !others.is_empty() {
            out.push(Finding {
                rule: None,
                severity: Severity::Problem,
                message: format!(
                    "{} {} {}, and the only cuDNN {} here is PyTorch's copy in {}, which is not on PATH: a process that loads {} without importing torch first gets the dispatcher only through os.add_dll_directory, whose folders cuDNN's by-name loads do not search: {}",
                    others.iter().map(|c| c.who.as_str()).collect::<Vec<_>>().join(", "),
                    if others.len() == 1 { "names" } else { "name" },
                    libname::dispatcher_name(d.major, Os::Windows),
                    d.major,
                    dir.display(),
                    if others.len() == 1 { "it" } else { "them" },
                    could_not_locate(d.major, subs.first().map(|s| s.stem.as_str()), &unreachable)
                ),
                hint: Some(format!(
                    "put {} on PATH (a cuenv profile's activation puts its own cuDNN there), or install the nvidia-cudnn-cu* wheel of the release PyTorch uses and put its bin on PATH",
                    dir.display()
                )),
            });
            continue;
        }
        if !unreachable.is_empty() && !torch {
            out.push(Finding {
                rule: None,
                severity: Severity::Problem,
                message: format!(
                    "{what}'s cuDNN {} dispatcher {} ({own_v}) finds its sub-libraries by name through PATH only (folders added with os.add_dll_directory are not searched), and {} is not on PATH: {}",
                    d.major,
                    dir.join(&d.file).display(),
                    dir.display(),
                    could_not_locate(d.major, subs.first().map(|s| s.stem.as_str()), &unreachable)
                ),
                hint: Some(format!("put {} on PATH (a cuenv profile's activation does this for its own cuDNN)", dir.display())),
            });
            continue;
        }
        let hint = if torch {
            format!(
                "`import torch` loads every DLL of {} itself, and Windows reuses a loaded module of the same name: inside PyTorch this copy wins; keep it at the profile's cuDNN version",
                dir.display()
            )
        } else {
            format!(
                "{} is on PATH ahead of any other cuDNN {}: its dispatcher finds its own sub-libraries; keep it at the profile's cuDNN version",
                dir.display(),
                d.major
            )
        };
        derived.push((dir.clone(), hint));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The predicted "Could not locate" names the sub-library the dispatcher loads first (the
    /// first it names), not the first in file-name order (`adv` sorts before `graph` and
    /// `ops_infer`).
    #[test]
    fn could_not_locate_names_the_sub_library_loaded_first() {
        let nine = ["adv", "cnn", "engines_precompiled", "engines_runtime_compiled", "graph", "heuristic", "ops"];
        assert_eq!(could_not_locate(9, Some("graph"), &nine), "cuDNN aborts with \"Could not locate cudnn_graph64_9.dll\"");
        let eight = ["adv_infer", "adv_train", "cnn_infer", "cnn_train", "ops_infer", "ops_train"];
        assert_eq!(could_not_locate(8, Some("ops_infer"), &eight), "cuDNN aborts with \"Could not locate cudnn_ops_infer64_8.dll\"");
        // Graph found, others not: which one cuDNN names first is not known, and not claimed.
        assert_eq!(
            could_not_locate(9, Some("graph"), &["adv", "ops"]),
            "cuDNN aborts with \"Could not locate ...\" at the first of cudnn_adv64_9.dll, cudnn_ops64_9.dll it loads"
        );
    }
}
