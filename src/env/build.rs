//! Building against a profile: what `gcc -lcudnn`, CMake's `find_library(cudnn)` /
//! FindCUDNN and MSVC's linker need, which a store entry alone cannot always give.
//!
//! The link editor resolves `-lcudnn` to `libcudnn.so` (or `libcudnn.a`) in its search folders
//! (`-L`, then `LIBRARY_PATH` as gcc passes it, then the defaults); it never looks for
//! `libcudnn.so.9`. NVIDIA's archives ship the unversioned `libcudnn.so` link, but the wheels
//! hold only `libcudnn.so.<N>` files and no links at all (docs/facts.md §2, field notes 7b), so
//! `-lcudnn` against a wheel entry fails with "cannot find -lcudnn". A store entry is
//! content-addressed and read-only (cuenv never adds a file to one), and the link-free mode
//! allows no symlink, so cuenv writes, beside the entry, a **GNU ld linker script** for each
//! library that lacks its unversioned name: a regular file `libcudnn.so` holding
//! `INPUT("<entry>/lib/libcudnn.so.9")`. GNU ld reads a file it cannot parse as an object as a
//! linker script (ld manual, "Implicit Linker Scripts"; glibc's own `libc.so` is one), and the
//! program then records the library's `DT_SONAME` (`libcudnn.so.9`) as `DT_NEEDED`, exactly as
//! when linking against the real link: at run time the loader finds it through
//! `LD_LIBRARY_PATH` as always. CMake's `find_library` only checks that `libcudnn.so` exists
//! and passes its path to the linker, which reads the script. lld and gold accept the same
//! `INPUT` command.
//!
//! The script names the entry's real file (the entry never changes, so neither does the
//! script). Where the scripts live ([`BUILD_LIB`]): in the link modes a real folder in each
//! profile's view, `<home>/profiles/<p>/build-lib` (so the stable path follows `use` and
//! `rollback` as the view links do); in the link-free mode one folder per store entry,
//! `<home>/store/.build/<entry>/lib`, a derived cache of that entry (written once by `apply`,
//! removed with the entry).
//!
//! Windows: MSVC links against import libraries (`cudnn.lib`), which the archives ship in
//! `lib\x64` (`lib` before 8.8) and the wheels do not; cuenv names them where they exist and
//! says so where they do not (it does not synthesize import libraries).

use std::io;
use std::path::{Path, PathBuf};

use crate::cudnn::libname::{self, Os};
use crate::shim::Shell;

/// The name of the folder holding the linker scripts in a view (and the last component of
/// the link-free folder's parent's `lib`).
pub const BUILD_LIB: &str = "build-lib";

/// The linker scripts `lib_dir` (an entry's library folder, absolute) needs: for each cuDNN
/// library there named `lib<x>.so.<N>` with no `lib<x>.so` beside it, (`lib<x>.so`, its text).
/// A path holding `"` or a line break cannot be written in a script and gets none. Sorted by
/// name.
pub fn linker_scripts(lib_dir: &Path) -> io::Result<Vec<(String, String)>> {
    let mut names: Vec<String> = std::fs::read_dir(lib_dir)?.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let mut out = Vec::new();
    for n in &names {
        if libname::parse(n).filter(|l| l.os == Os::Linux && l.is_loader_name()).is_none() {
            continue;
        }
        let Some((dev, _)) = n.split_once(".so.") else { continue };
        let dev = format!("{dev}.so");
        if names.contains(&dev) || out.iter().any(|(d, _): &(String, String)| *d == dev) {
            continue;
        }
        let target = lib_dir.join(n);
        let t = target.to_string_lossy();
        if t.contains('"') || t.contains('\n') || t.contains('\r') {
            continue;
        }
        out.push((
            dev,
            format!("/* GNU ld script written by cuenv: -l{} links {n} of the store entry. */\nINPUT(\"{t}\")\n", &n[3..n.find(".so").unwrap_or(3)]),
        ));
    }
    Ok(out)
}

/// Writes `scripts` ([`linker_scripts`]) into `dir` (created), each file whole.
pub fn write_scripts(dir: &Path, scripts: &[(String, String)]) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in scripts {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

/// The folder of an entry (`entry_dir`, the release root) holding its headers: the nearest
/// `include` with `cudnn_version.h` or `cudnn.h`, looking beside the library folder `lib_dir`
/// and upward to the entry (archives: `<entry>/include`; wheels: `nvidia/cudnn/include`).
/// Both are resolved first (through a view's links); the result is named under `entry_dir`
/// as given.
pub fn include_dir(entry_dir: &Path, lib_dir: &Path) -> Option<PathBuf> {
    let (entry, lib) = (dunce::canonicalize(entry_dir).ok()?, dunce::canonicalize(lib_dir).ok()?);
    let mut at = Some(lib.as_path());
    while let Some(d) = at {
        let inc = d.join("include");
        if inc.join("cudnn_version.h").is_file() || inc.join("cudnn.h").is_file() {
            return Some(entry_dir.join(inc.strip_prefix(&entry).ok()?));
        }
        if d == entry {
            break;
        }
        at = d.parent().filter(|p| p.starts_with(&entry));
    }
    None
}

/// Where the import libraries of a Windows entry are (`lib\x64`, else `lib`, holding
/// `cudnn.lib`), if it has any.
pub fn import_lib_dir(entry_dir: &Path) -> Option<PathBuf> {
    [entry_dir.join("lib").join("x64"), entry_dir.join("lib")].into_iter().find(|d| d.join("cudnn.lib").is_file())
}

/// The variables a build gets (`cuenv env --build`): scalars and folders put in front of a
/// list variable, plus notes for stderr.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BuildVars {
    /// `CUDNN_INCLUDE_DIR` and `CUDNN_LIBRARY` (the library file), which FindCUDNN modules
    /// read from the environment (PyTorch's `cmake/Modules_CUDA_fix/FindCUDNN.cmake`:
    /// `set(CUDNN_LIBRARY $ENV{CUDNN_LIBRARY} ...)`, documented there as "Path to the cudnn
    /// library file (e.g., libcudnn.so)"), and the usual `-DCUDNN_LIBRARY=` / `-DCUDNN_INCLUDE_DIR=`.
    pub set: Vec<(String, PathBuf)>,
    /// Linux: `LIBRARY_PATH` (gcc hands it to ld as `-L`, so `-lcudnn` resolves) and `CPATH`
    /// (gcc's include path); Windows: `LIB` and `INCLUDE` (MSVC's). Both: `CMAKE_LIBRARY_PATH`
    /// and `CMAKE_INCLUDE_PATH`, the environment variables every `find_library` /
    /// `find_path` searches (CMake's documentation of `find_library`, step 2 of its search), so
    /// that any FindCUDNN module's `find_library(... cudnn ...)` finds the profile's first.
    pub prepend: Vec<(String, Vec<PathBuf>)>,
    /// What is missing (a Windows entry without import libraries).
    pub notes: Vec<String>,
}

/// The build variables of a profile whose entry is `entry_dir` with library folder `lib_dir`
/// (both as the caller names them: through the view, or real) and linker scripts in
/// `build_lib` (`None` when it has none). `cuda_include`: the toolkit root's `include`, when
/// it has one (cuDNN's `cudnn.h` includes `cuda_runtime.h`), put after cuDNN's in the include
/// paths. `windows`: the entry's platform.
pub fn build_vars(entry_dir: &Path, lib_dir: &Path, build_lib: Option<&Path>, cuda_include: Option<&Path>, windows: bool) -> BuildVars {
    let mut v = BuildVars::default();
    let inc = include_dir(entry_dir, lib_dir);
    let includes: Vec<PathBuf> = inc.iter().cloned().chain(cuda_include.map(Path::to_path_buf)).collect();
    if let Some(i) = &inc {
        v.set.push(("CUDNN_INCLUDE_DIR".into(), i.clone()));
    }
    if windows {
        match import_lib_dir(entry_dir) {
            Some(l) => {
                v.set.push(("CUDNN_LIBRARY".into(), l.join("cudnn.lib")));
                v.prepend.push(("LIB".into(), vec![l.clone()]));
                v.prepend.push(("CMAKE_LIBRARY_PATH".into(), vec![l]));
            }
            None => v.notes.push(format!(
                "{} has no import library (cudnn.lib; the pip wheels ship none): MSVC cannot link against it; use NVIDIA's archive of the same release",
                entry_dir.display()
            )),
        }
        if !includes.is_empty() {
            v.prepend.push(("INCLUDE".into(), includes.clone()));
            v.prepend.push(("CMAKE_INCLUDE_PATH".into(), includes));
        }
        return v;
    }
    let lib = match build_lib.filter(|b| b.join("libcudnn.so").is_file()) {
        Some(b) => Some(b.join("libcudnn.so")),
        None => Some(lib_dir.join("libcudnn.so")).filter(|p| p.exists()),
    };
    if let Some(l) = lib {
        v.set.push(("CUDNN_LIBRARY".into(), l));
    }
    let mut dirs: Vec<PathBuf> = build_lib.map(Path::to_path_buf).into_iter().collect();
    dirs.push(lib_dir.to_path_buf());
    v.prepend.push(("LIBRARY_PATH".into(), dirs.clone()));
    v.prepend.push(("CMAKE_LIBRARY_PATH".into(), dirs));
    if !includes.is_empty() {
        v.prepend.push(("CPATH".into(), includes.clone()));
        v.prepend.push(("CMAKE_INCLUDE_PATH".into(), includes));
    }
    v
}

/// `vars` as lines for `shell` (to `eval` / `source` / `call`): each scalar set, each list's
/// folders put in front of its current value (no empty element when it was unset).
pub fn render(shell: Shell, vars: &BuildVars) -> String {
    use crate::shim::quote;
    let mut s = String::new();
    let sep = shell.list_separator().to_string();
    let join = |d: &[PathBuf]| d.iter().map(|p| p.to_string_lossy().into_owned()).collect::<Vec<_>>().join(&sep);
    for (k, p) in &vars.set {
        let v = p.to_string_lossy();
        s.push_str(&match shell {
            Shell::Posix => format!("export {k}={}\n", quote::posix(&v)),
            Shell::Fish => format!("set -gx {k} {}\n", quote::fish(&v)),
            Shell::Csh => format!("setenv {k} {}\n", quote::csh(&v)),
            Shell::PowerShell => format!("$env:{k} = {}\n", quote::powershell(&v)),
            Shell::Cmd => format!("@set \"{k}={}\"\r\n", quote::cmd(&v, false)),
        });
    }
    for (k, dirs) in &vars.prepend {
        let v = join(dirs);
        s.push_str(&match shell {
            Shell::Posix => format!("export {k}={}\"${{{k}:+:${k}}}\"\n", quote::posix(&v)),
            Shell::Fish => format!("set -gx {k} {} ${k}\n", dirs.iter().map(|d| quote::fish(&d.to_string_lossy())).collect::<Vec<_>>().join(" ")),
            Shell::Csh => format!("if ( $?{k} ) then\n  setenv {k} {}:\"${k}\"\nelse\n  setenv {k} {}\nendif\n", quote::csh(&v), quote::csh(&v)),
            Shell::PowerShell => {
                format!("if ($env:{k}) {{ $env:{k} = {} + ';' + $env:{k} }} else {{ $env:{k} = {} }}\n", quote::powershell(&v), quote::powershell(&v))
            }
            Shell::Cmd => format!("@if defined {k} (set \"{k}={};%{k}%\") else (set \"{k}={}\")\r\n", quote::cmd(&v, false), quote::cmd(&v, false)),
        });
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_is_written_only_where_the_unversioned_name_is_missing() {
        let d = tempfile::tempdir().unwrap();
        let lib = d.path().join("my lib");
        std::fs::create_dir_all(&lib).unwrap();
        for n in ["libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_ops.so", "libcudnn.so.9.5.0", "libother.so.1", "cudnn64_9.dll"] {
            std::fs::write(lib.join(n), b"x").unwrap();
        }
        let s = linker_scripts(&lib).unwrap();
        let names: Vec<&str> = s.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["libcudnn.so", "libcudnn_graph.so"]);
        assert!(s[0].1.contains(&format!("INPUT(\"{}\")", lib.join("libcudnn.so.9").display())), "{}", s[0].1);
        assert!(s[0].1.starts_with("/* ") && s[0].1.contains("-lcudnn links libcudnn.so.9"), "{}", s[0].1);
        assert!(s[1].1.contains("-lcudnn_graph"), "{}", s[1].1);
    }

    #[test]
    fn lists_are_prepended_without_an_empty_element() {
        let v = BuildVars {
            set: vec![("CUDNN_LIBRARY".into(), PathBuf::from("/b/libcudnn.so"))],
            prepend: vec![("LIBRARY_PATH".into(), vec!["/b".into(), "/it's".into()])],
            notes: vec![],
        };
        let t = render(Shell::Posix, &v);
        assert_eq!(t, "export CUDNN_LIBRARY='/b/libcudnn.so'\nexport LIBRARY_PATH='/b:/it'\\''s'\"${LIBRARY_PATH:+:$LIBRARY_PATH}\"\n");
        assert!(render(Shell::Fish, &v).contains("set -gx LIBRARY_PATH '/b' '/it\\'s' $LIBRARY_PATH"));
    }
}
