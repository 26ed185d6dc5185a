//! The search path: the folders of the loader's variable (`LD_LIBRARY_PATH` on Linux, `PATH`
//! on Windows) that hold cuDNN, in search order (the first of each major wins), and what is
//! wrong with them: a path that is not UTF-8, a damaged image, two releases in one folder, a
//! shadowed copy, NVIDIA's exe installer layout.

use std::path::{Path, PathBuf};

use super::{Dispatcher, Finding, Loaded, SearchDir, Severity, SubLibrary, loader};
use crate::cudnn::libname::{self, Os};
use crate::sys::paths;

/// The findings of the search path alone, in order: folders whose path is not UTF-8, damaged
/// images ([`damaged_images`]), folders holding two releases of a major ([`mixed_releases`]),
/// majors held by more than one folder. Also returns whether an image is cut short.
pub(super) fn judge(search_path: &[SearchDir], search_var: &str) -> (Vec<Finding>, bool) {
    let mut findings = Vec::new();
    for d in search_path {
        if let Some(folder) = crate::sys::paths::first_non_unicode(&d.path) {
            findings.push(Finding {
                rule: None,
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
    let damaged = damaged_images(search_path);
    let cut_short = damaged.iter().any(|f| f.message.contains(" is cut short: "));
    findings.extend(damaged);
    for d in search_path {
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
                rule: None,
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
    (findings, cut_short)
}

/// The folders of the search path that hold a cuDNN dispatcher, in order.
/// `folders` are the variable's entries in order (positions count empty ones too, which
/// are skipped); a folder listed again (or another name of it) is scanned once.
pub(super) fn scan_search_path(folders: &[PathBuf]) -> Vec<SearchDir> {
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
                Some(Dispatcher { file: n.clone(), major, version: file_version(folder, n, major, &names), version_from: None, first: false })
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

/// Folders of the search variable that hold no cuDNN library themselves but whose
/// `<CUDA version>\\`, `<CUDA version>\\x64\\` or `x64\\` child does: the layout of NVIDIA's
/// exe installer (`CUDNN\\v9.5\\bin\\12.6\\`, newer `bin\\12.9\\x64\\`; docs/facts.md §2). The
/// loader does not look into subfolders, so say which folder to put on the variable: a problem
/// when that major did not load by name, else a warning.
pub(super) fn installer_layout(folders: &[PathBuf], loaded: &[Loaded], search_var: &str) -> Vec<Finding> {
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
            rule: None,
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
/// machine: cut short (its headers say it is longer than it is:
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
                    rule: None,
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
                    rule: None,
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

/// A problem when the folder `dir` holds cuDNN `major` libraries of two or more releases, as
/// their files tell ([`loader::folder_versions`]; files of unknown version count for none).
/// `where_` says where the folder was found (`on LD_LIBRARY_PATH (position 2)`).
pub(super) fn mixed_releases(dir: &Path, major: u64, where_: &str) -> Option<Finding> {
    let found = loader::folder_versions(dir, major);
    if found.len() < 2 {
        return None;
    }
    let parts: Vec<String> = found.iter().map(|(v, files)| format!("{v}: {}", files.join(", "))).collect();
    Some(Finding {
        rule: Some(crate::error::Rule::TwoReleases),
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

/// CUDA 13 Windows toolkit roots keep the runtime in `bin\x64` (`cudart64_13.dll`), not in
/// `bin` where 12.x had it (docs/facts.md §10c; `toolkit::inspect_root` finds it there). A root
/// among `toolkits` whose runtime is in `bin\x64` while `PATH` (`folders`) holds its `bin`
/// but not `bin\x64` is a warning naming the folder (W10): what loads the runtime by name
/// finds none there (or another root's). A root with no folder on `PATH` is not in use:
/// nothing is said.
pub(super) fn runtime_folder_off_path(toolkits: &[crate::toolkit::Toolkit], folders: &[PathBuf]) -> Vec<Finding> {
    let on_path = |d: &Path| folders.iter().any(|f| !f.as_os_str().is_empty() && paths::same_path(f, d));
    let mut out = Vec::new();
    for t in toolkits {
        let Some(runtime) = &t.runtime else { continue };
        let (bin, x64) = (t.root.join("bin"), t.root.join("bin").join("x64"));
        if !runtime.parent().is_some_and(|p| paths::same_path(p, &x64)) || on_path(&x64) || !on_path(&bin) {
            continue;
        }
        out.push(Finding {
            rule: None,
            severity: Severity::Warning,
            message: format!(
                "the CUDA toolkit root {} keeps its runtime in {} (the CUDA 13 layout), and PATH holds {} but not that folder: a program loading {} by name does not find this root's",
                t.root.display(),
                x64.display(),
                bin.display(),
                runtime.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
            ),
            hint: Some(format!("add {} to PATH (ahead of other CUDA folders), or activate a cuenv profile on this root", x64.display())),
        });
    }
    out
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
    fn a_cuda13_runtime_folder_off_path_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("v13.0");
        std::fs::create_dir_all(root.join("bin/x64")).unwrap();
        std::fs::write(root.join("bin/x64/cudart64_13.dll"), "x").unwrap();
        let t = crate::toolkit::inspect_root(&root).unwrap();
        let root = t.root.clone();
        let f = runtime_folder_off_path(std::slice::from_ref(&t), &[root.join("bin")]);
        assert_eq!(f.len(), 1);
        assert!(f[0].message.contains("keeps its runtime in") && f[0].hint.as_deref().unwrap().contains("x64"), "{}", f[0].message);
        assert!(runtime_folder_off_path(std::slice::from_ref(&t), &[root.join("bin"), root.join("bin/x64")]).is_empty());
        assert!(runtime_folder_off_path(std::slice::from_ref(&t), &[]).is_empty(), "a root not on PATH at all is not in use");
    }
}
