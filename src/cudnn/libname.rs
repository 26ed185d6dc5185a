//! cuDNN's library file names: the dispatcher's name for a major and platform, and what a
//! file name says about itself (dispatcher or sub-library, its stem, its major, the version
//! a Linux name spells out).
//!
//! The rules come from how NVIDIA names the files (docs/facts.md §2), never from a closed
//! list of sub-libraries, since new ones appear (`engines_tensor_ir`, `ext`):
//!
//! - Windows: `cudnn64_<N>.dll` is the dispatcher of major `N`; `cudnn_<stem>64_<N>.dll` a
//!   sub-library (`cudnn_ops64_9.dll`, `cudnn_ops_infer64_8.dll`). Matched without regard to
//!   case (Windows file systems are case-insensitive, docs/facts.md §6); stems come back
//!   lowercased.
//! - Linux: `libcudnn.so[.<N>[.<m>...]]` is the dispatcher; `libcudnn_<stem>.so[.<N>...]` a
//!   sub-library (`libcudnn_ops.so.9`, `libcudnn_ops_infer.so.8`, `libcudnn_ops.so.9.5.0`).
//!   Case-sensitive, like the loader. The loader asks for the soname `libcudnn.so.<N>`
//!   (docs/facts.md §5); `libcudnn.so` and `libcudnn.so.<N>.<m>.<p>` are the rest of the
//!   symlink chain.
//! - The platform of a name is read from the name itself (`.dll` or `.so`), so a Windows
//!   release is recognised on a Linux host and back; [`Os::HOST`] is for names the loader of
//!   *this* process uses.
//! - Anything after the library suffix that is not a dotted number (`libcudnn.so.9.bak`,
//!   `cudnn64_9.dll.old`) makes the name no library at all: no loader would load it by that
//!   name.

/// The naming convention a library file follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    /// `cudnn*64_<N>.dll`, case-insensitive.
    Windows,
    /// `libcudnn*.so[.<N>...]`, case-sensitive.
    Linux,
}

impl Os {
    /// The convention of the platform this process runs on (the loader's names).
    pub const HOST: Os = if cfg!(windows) { Os::Windows } else { Os::Linux };
}

/// What a cuDNN library's file name says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudnnLib {
    /// The convention the name follows.
    pub os: Os,
    /// `None` for the dispatcher; the sub-library's stem otherwise (`ops`, `ops_infer`,
    /// `engines_precompiled`), lowercased on Windows.
    pub stem: Option<String>,
    /// The cuDNN major the name carries; `None` for Linux's bare `libcudnn.so` /
    /// `libcudnn_ops.so`.
    pub major: Option<u64>,
    /// The dotted version after `.so.` on Linux (`9`, `8.9.4`), as written; `None` on
    /// Windows (DLL names carry only the major) and for a bare `.so`.
    pub version: Option<String>,
}

impl CudnnLib {
    /// Whether this is the dispatcher (`cudnn64_<N>.dll`, `libcudnn.so*`).
    pub fn is_dispatcher(&self) -> bool {
        self.stem.is_none()
    }

    /// Whether this is the name the loader asks for: the DLL name on Windows, the soname
    /// `lib...so.<N>` (one number) on Linux.
    pub fn is_loader_name(&self) -> bool {
        match self.os {
            Os::Windows => true,
            Os::Linux => self.version.as_deref().is_some_and(|v| !v.contains('.')),
        }
    }
}

/// The dispatcher's file name for a cuDNN major: `cudnn64_9.dll` / `libcudnn.so.9`.
pub fn dispatcher_name(major: u64, os: Os) -> String {
    match os {
        Os::Windows => format!("cudnn64_{major}.dll"),
        Os::Linux => format!("libcudnn.so.{major}"),
    }
}

/// A sub-library's file name for a stem and major: `cudnn_ops64_9.dll` / `libcudnn_ops.so.9`.
pub fn sub_library_name(stem: &str, major: u64, os: Os) -> String {
    match os {
        Os::Windows => format!("cudnn_{stem}64_{major}.dll"),
        Os::Linux => format!("libcudnn_{stem}.so.{major}"),
    }
}

/// Reads a file name as a cuDNN library (see the module doc for the rules); `None` when it
/// is not one.
pub fn parse(file_name: &str) -> Option<CudnnLib> {
    parse_windows(file_name).or_else(|| parse_linux(file_name))
}

/// The major of a cuDNN dispatcher name, of either platform (`cudnn64_9.dll` -> 9,
/// `libcudnn.so.8.9.4` -> 8); `None` for sub-libraries, the bare `libcudnn.so` and other
/// names.
pub fn dispatcher_major(file_name: &str) -> Option<u64> {
    parse(file_name).filter(CudnnLib::is_dispatcher)?.major
}

/// Whether `file_name` is a cuDNN dispatcher of either platform, the bare `libcudnn.so`
/// included.
pub fn is_dispatcher(file_name: &str) -> bool {
    parse(file_name).is_some_and(|l| l.is_dispatcher())
}

/// The major of a dispatcher name the loader of `os` finds by name (`libcudnn.so.9`,
/// `cudnn64_8.dll`); `None` for `libcudnn.so.9.5.0`, the bare `libcudnn.so`, sub-libraries
/// and names of the other platform.
pub fn loader_dispatcher_major(file_name: &str, os: Os) -> Option<u64> {
    parse(file_name).filter(|l| l.os == os && l.is_dispatcher() && l.is_loader_name())?.major
}

/// How many libraries a list of shared-library file names holds: the names of one Linux
/// symlink chain (`libcudnn.so`, `libcudnn.so.9`, `libcudnn.so.9.14.0`) are one library, as are
/// names that differ only by case on Windows (`cudnn64_9.dll`, `CUDNN64_9.DLL`). A Linux name
/// is keyed by what comes before `.so` and the major after it; a bare `lib<x>.so` is counted
/// only when no `lib<x>.so.<N>` is in the list. Works for any library name, cuDNN's or not.
pub fn count_libraries<S: AsRef<str>>(file_names: &[S]) -> usize {
    use std::collections::BTreeSet;
    let mut versioned: BTreeSet<(String, String)> = BTreeSet::new();
    let mut bare: BTreeSet<String> = BTreeSet::new();
    let mut other: BTreeSet<String> = BTreeSet::new();
    for name in file_names.iter().map(AsRef::as_ref) {
        match name.find(".so") {
            Some(i) if !name.to_ascii_lowercase().ends_with(".dll") => {
                let (base, tail) = (&name[..i], &name[i + ".so".len()..]);
                match tail.strip_prefix('.').and_then(|t| t.split('.').next()) {
                    Some(major) => {
                        versioned.insert((base.to_string(), major.to_string()));
                    }
                    None => {
                        bare.insert(base.to_string());
                    }
                }
            }
            _ => {
                other.insert(name.to_ascii_lowercase());
            }
        }
    }
    let lone_bare = bare.iter().filter(|b| !versioned.iter().any(|(base, _)| base == *b)).count();
    versioned.len() + lone_bare + other.len()
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn valid_stem(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn parse_windows(name: &str) -> Option<CudnnLib> {
    let lower = name.to_ascii_lowercase();
    let (head, digits) = lower.strip_suffix(".dll")?.rsplit_once("64_")?;
    if !all_digits(digits) {
        return None;
    }
    let stem = match head.strip_prefix("cudnn")? {
        "" => None,
        rest => Some(rest.strip_prefix('_').filter(|s| valid_stem(s))?.to_string()),
    };
    Some(CudnnLib { os: Os::Windows, stem, major: Some(digits.parse().ok()?), version: None })
}

fn parse_linux(name: &str) -> Option<CudnnLib> {
    let (head, tail) = match name.find(".so") {
        Some(i) => (&name[..i], &name[i + ".so".len()..]),
        None => return None,
    };
    let stem = match head.strip_prefix("libcudnn")? {
        "" => None,
        rest => Some(rest.strip_prefix('_').filter(|s| valid_stem(s))?.to_string()),
    };
    let version = match tail {
        "" => None,
        t => {
            let v = t.strip_prefix('.')?;
            if !v.split('.').all(all_digits) {
                return None;
            }
            Some(v.to_string())
        }
    };
    let major = match &version {
        Some(v) => Some(v.split('.').next()?.parse().ok()?),
        None => None,
    };
    Some(CudnnLib { os: Os::Linux, stem, major, version })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lib(os: Os, stem: Option<&str>, major: Option<u64>, version: Option<&str>) -> Option<CudnnLib> {
        Some(CudnnLib { os, stem: stem.map(str::to_string), major, version: version.map(str::to_string) })
    }

    #[test]
    fn dispatcher_names_per_major_and_platform() {
        assert_eq!(dispatcher_name(9, Os::Windows), "cudnn64_9.dll");
        assert_eq!(dispatcher_name(8, Os::Windows), "cudnn64_8.dll");
        assert_eq!(dispatcher_name(9, Os::Linux), "libcudnn.so.9");
        assert_eq!(dispatcher_name(10, Os::Linux), "libcudnn.so.10");
        assert_eq!(sub_library_name("graph", 9, Os::Windows), "cudnn_graph64_9.dll");
        assert_eq!(sub_library_name("ops_infer", 8, Os::Linux), "libcudnn_ops_infer.so.8");
        assert_eq!(dispatcher_name(9, Os::HOST), if cfg!(windows) { "cudnn64_9.dll" } else { "libcudnn.so.9" });
        // The names built here read back as what they were built for.
        for os in [Os::Windows, Os::Linux] {
            for major in [7, 8, 9, 10] {
                assert_eq!(parse(&dispatcher_name(major, os)), lib(os, None, Some(major), (os == Os::Linux).then(|| major.to_string()).as_deref()));
                let sub = parse(&sub_library_name("engines_precompiled", major, os)).unwrap();
                assert_eq!((sub.stem.as_deref(), sub.major, sub.os), (Some("engines_precompiled"), Some(major), os));
            }
        }
    }

    #[test]
    fn windows_names() {
        assert_eq!(parse("cudnn64_9.dll"), lib(Os::Windows, None, Some(9), None));
        assert_eq!(parse("cudnn64_8.dll"), lib(Os::Windows, None, Some(8), None));
        assert_eq!(parse("cudnn_ops64_9.dll"), lib(Os::Windows, Some("ops"), Some(9), None));
        assert_eq!(parse("cudnn_ops_infer64_8.dll"), lib(Os::Windows, Some("ops_infer"), Some(8), None));
        assert_eq!(parse("cudnn_engines_runtime_compiled64_9.dll"), lib(Os::Windows, Some("engines_runtime_compiled"), Some(9), None));
        // A sub-library NVIDIA adds later is recognised from its name alone.
        assert_eq!(parse("cudnn_engines_tensor_ir64_9.dll"), lib(Os::Windows, Some("engines_tensor_ir"), Some(9), None));
        // Case does not matter on Windows; the stem comes back lowercased.
        assert_eq!(parse("CUDNN64_9.DLL"), lib(Os::Windows, None, Some(9), None));
        assert_eq!(parse("Cudnn_Graph64_9.Dll"), lib(Os::Windows, Some("graph"), Some(9), None));
        for not in ["cudnn64_9.dll.old", "cudnn64_.dll", "cudnn64_x.dll", "cudnn64_+9.dll", "cudnn.dll", "cudnn64.dll", "cudnn_64_9.dll", "cudnnx64_9.dll"] {
            assert_eq!(parse(not), None, "{not}");
        }
        for not in ["cudnn.lib", "cudnn64_9.lib", "cudart64_12.dll", "cublas64_12.dll", "zlibwapi.dll", "nvcuda.dll"] {
            assert_eq!(parse(not), None, "{not}");
        }
    }

    #[test]
    fn linux_names() {
        assert_eq!(parse("libcudnn.so.9"), lib(Os::Linux, None, Some(9), Some("9")));
        assert_eq!(parse("libcudnn.so.8.9.4"), lib(Os::Linux, None, Some(8), Some("8.9.4")));
        assert_eq!(parse("libcudnn.so"), lib(Os::Linux, None, None, None));
        assert_eq!(parse("libcudnn_ops.so.9"), lib(Os::Linux, Some("ops"), Some(9), Some("9")));
        assert_eq!(parse("libcudnn_ops.so.9.5.0"), lib(Os::Linux, Some("ops"), Some(9), Some("9.5.0")));
        assert_eq!(parse("libcudnn_ops_infer.so.8"), lib(Os::Linux, Some("ops_infer"), Some(8), Some("8")));
        assert_eq!(parse("libcudnn_ops.so"), lib(Os::Linux, Some("ops"), None, None));
        assert_eq!(parse("libcudnn_ext.so.9"), lib(Os::Linux, Some("ext"), Some(9), Some("9")));
        for not in [
            "libcudnn.so.9.bak",
            "libcudnn.so.9.",
            "libcudnn.so.",
            "libcudnn.so.x",
            "libcudnn.so.9.5.0~old",
            "libcudnn_static.a",
            "libcudnn_ops_static.a",
            "libcudnn.a",
            "libcudnn_.so.9",
            "libcudnnx.so.9",
            "libcudart.so.12",
            "libcublasLt.so.12",
            "cudnn.h",
        ] {
            assert_eq!(parse(not), None, "{not}");
        }
        // Linux names are case-sensitive, as is the loader.
        assert_eq!(parse("LIBCUDNN.SO.9"), None);
        assert_eq!(parse("libCUDNN.so.9"), None);
    }

    #[test]
    fn dispatchers_and_their_majors() {
        for (name, major) in
            [("cudnn64_9.dll", Some(9)), ("CUDNN64_8.DLL", Some(8)), ("libcudnn.so.9", Some(9)), ("libcudnn.so.8.9.4", Some(8)), ("libcudnn.so", None)]
        {
            assert!(is_dispatcher(name), "{name}");
            assert_eq!(dispatcher_major(name), major, "{name}");
        }
        for name in ["libcudnn_ops.so.9", "cudnn_graph64_9.dll", "cudnn_ops64_9.dll", "libcudnn.so.9.bak", "cudnn64_9.dll.old", "libcudnn_ops_infer.so.8"] {
            assert!(!is_dispatcher(name), "{name}");
            assert_eq!(dispatcher_major(name), None, "{name}");
        }
    }

    #[test]
    fn libraries_are_counted_not_their_names() {
        // cuDNN 9.14 as a Linux distribution installs it: 8 libraries, 3 names each.
        let stems = ["", "_adv", "_cnn", "_engines_precompiled", "_engines_runtime_compiled", "_graph", "_heuristic", "_ops"];
        let mut names = Vec::new();
        for s in stems {
            names.extend([format!("libcudnn{s}.so"), format!("libcudnn{s}.so.9"), format!("libcudnn{s}.so.9.14.0")]);
        }
        assert_eq!(names.len(), 24);
        assert_eq!(count_libraries(&names), 8);
        // Wheels: one name each.
        assert_eq!(count_libraries(&["libcudnn.so.9", "libcudnn_ops.so.9"]), 2);
        // Two majors of one library are two libraries; a bare name joins them.
        assert_eq!(count_libraries(&["libcudnn.so", "libcudnn.so.8", "libcudnn.so.9", "libcudnn.so.9.5.0"]), 2);
        assert_eq!(count_libraries(&["libcudnn.so"]), 1);
        // Windows: one name per library; case does not make another.
        assert_eq!(count_libraries(&["cudnn64_9.dll", "cudnn_ops64_9.dll", "CUDNN64_9.DLL"]), 2);
        assert_eq!(count_libraries::<&str>(&[]), 0);
    }

    #[test]
    fn the_loaders_names() {
        assert_eq!(loader_dispatcher_major("cudnn64_9.dll", Os::Windows), Some(9));
        assert_eq!(loader_dispatcher_major("CUDNN64_8.DLL", Os::Windows), Some(8));
        assert_eq!(loader_dispatcher_major("cudnn_ops64_9.dll", Os::Windows), None);
        assert_eq!(loader_dispatcher_major("libcudnn.so.9", Os::Windows), None, "the other platform's name");
        assert_eq!(loader_dispatcher_major("libcudnn.so.9", Os::Linux), Some(9));
        assert_eq!(loader_dispatcher_major("libcudnn.so.9.5.0", Os::Linux), None);
        assert_eq!(loader_dispatcher_major("libcudnn.so", Os::Linux), None);
        assert_eq!(loader_dispatcher_major("libcudnn_ops.so.9", Os::Linux), None);
        assert_eq!(loader_dispatcher_major("cudnn64_9.dll", Os::Linux), None);
        assert!(parse("libcudnn_ops.so.9").unwrap().is_loader_name());
        assert!(!parse("libcudnn_ops.so.9.5.0").unwrap().is_loader_name());
        assert!(!parse("libcudnn.so").unwrap().is_loader_name());
    }
}
