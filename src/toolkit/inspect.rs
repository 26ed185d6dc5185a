//! Inspecting one toolkit root: its CUDA version (version.json / version.txt), its CUDA
//! runtime library, its platform, and the cuDNN copied into it by hand, if any. Reads only
//! inside the root; a malformed version file is a problem listed on the toolkit, not an error.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use super::*;
use crate::cudnn::libname::{self, Os};
use crate::cudnn::version::parse_cudnn_header;
use crate::sys::binfmt;

/// Inspects one explicitly named toolkit root (a `CUENV_TOOLKIT_PATHS` entry, a
/// `[toolkits]` entry of lab.toml): its version, runtime, platform and hand-copied cuDNN.
/// The returned `found_by` is empty and `root` is canonical.
///
/// Errors: [`Error::NotFound`], [`Error::NotAFolder`], [`Error::Io`] (unreadable), and
/// [`Error::NotAToolkit`] when the folder has neither a version file nor a CUDA runtime
/// library (with a suggestion when the parent or a child folder is a toolkit). A
/// malformed version file is not an error: the toolkit is returned with `version: None`
/// and the reason in `problems`.
pub fn inspect_root(path: &Path) -> Result<Toolkit, Error> {
    let io_err = |source: io::Error| Error::Io { path: path.to_path_buf(), source };
    let meta = fs::metadata(path).map_err(|e| if e.kind() == io::ErrorKind::NotFound { Error::NotFound { path: path.to_path_buf() } } else { io_err(e) })?;
    if !meta.is_dir() {
        return Err(Error::NotAFolder { path: path.to_path_buf() });
    }
    let canonical = crate::sys::paths::canonicalize(path).map_err(io_err)?;
    fs::read_dir(&canonical).map_err(io_err)?;
    let root = crate::sys::paths::shown(&canonical);

    let mut problems = Vec::new();
    // Shown lossy (U+FFFD); a profile cannot use it: its path goes into manifests and shims.
    if let Some(folder) = crate::sys::paths::first_non_unicode(&root) {
        problems.push(format!(
            "its path is not valid UTF-8 (the name of the folder {} is not), so no profile can use it: rename that folder to a UTF-8 name",
            folder.display()
        ));
    }
    let (mut version, mut version_source, has_version_file) = read_version(&root, &mut problems);
    let runtime = find_runtime(&root);
    if version.is_none()
        && let Some((v, source)) = fallback_version(&root, &mut problems)
    {
        (version, version_source) = (Some(v), Some(source.to_string()));
    }
    if !has_version_file && runtime.is_none() {
        return Err(Error::NotAToolkit { path: path.to_path_buf(), suggestion: suggest_root(&root) });
    }
    let platform = runtime.as_ref().and_then(|rt| match binfmt::inspect(rt) {
        Ok(info) => info.platform,
        Err(e) => {
            problems.push(format!("{}: cannot read its library header: {e}", rel(&root, rt)));
            None
        }
    });
    let hand_copied_cudnn = find_hand_copied(&root, &mut problems);
    Ok(Toolkit { root, version, version_source, found_by: Vec::new(), runtime, platform, hand_copied_cudnn, problems })
}

/// `path` relative to `root` for messages (`bin/cudnn64_9.dll`), or the whole path.
fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// The sorted `(file name, path)` pairs of a folder; empty when it cannot be read.
/// Names that are not UTF-8 are skipped (no CUDA or cuDNN file has one).
pub(super) fn dir_entries(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = match fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| {
                let e = e.ok()?;
                Some((e.file_name().into_string().ok()?, e.path()))
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    out.sort();
    out
}

/// True when `dir` has a version file or a CUDA runtime (the cheap test for suggestions).
fn looks_like_toolkit(dir: &Path) -> bool {
    dir.join("version.json").is_file() || dir.join("version.txt").is_file() || find_runtime(dir).is_some()
}

fn suggest_root(root: &Path) -> Option<PathBuf> {
    let name = root.file_name()?.to_string_lossy().to_ascii_lowercase();
    if matches!(name.as_str(), "bin" | "lib" | "lib64" | "include" | "x64") {
        let mut up = root.parent();
        while let Some(p) = up {
            if looks_like_toolkit(p) {
                return Some(p.to_path_buf());
            }
            // bin/x64 -> bin -> root: look at most two levels up.
            if p.file_name().is_some_and(|n| n.eq_ignore_ascii_case("bin")) {
                up = p.parent();
            } else {
                break;
            }
        }
    }
    dir_entries(root)
        .into_iter()
        .filter(|(n, p)| {
            let lower = n.to_ascii_lowercase();
            (lower.starts_with('v') || lower.starts_with("cuda")) && p.is_dir() && looks_like_toolkit(p)
        })
        .map(|(_, p)| p)
        .next_back()
}

/// Reads the bytes of a small text file (at most [`MAX_VERSION_FILE`]).
fn read_small(path: &Path) -> Result<String, String> {
    let file = fs::File::open(path).map_err(|e| format!("cannot read it: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_VERSION_FILE + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_VERSION_FILE {
        return Err("it is larger than 1 MiB, which no CUDA version file is".into());
    }
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".into())
}

/// `(version, source, whether a version file exists)`. `version.json` wins; a malformed
/// one adds a problem and falls back to `version.txt` if there is one.
fn read_version(root: &Path, problems: &mut Vec<String>) -> (Option<Version>, Option<String>, bool) {
    let mut exists = false;
    type Parser = fn(&str) -> Result<Version, String>;
    let parsers: [(&str, Parser); 2] = [("version.json", parse_version_json), ("version.txt", parse_version_txt)];
    for (name, parse) in parsers {
        let path = root.join(name);
        if !path.is_file() {
            continue;
        }
        exists = true;
        match read_small(&path).and_then(|text| parse(&text)) {
            Ok(v) => return (Some(v), Some(name.to_string()), true),
            Err(msg) => problems.push(format!("{name}: {msg}; the CUDA version is unknown")),
        }
    }
    (None, None, exists)
}

/// Where a toolkit root without a readable version file gets its version, in this order
/// (docs/facts.md §1; `nvcc` is never run):
/// 1. [`SOURCE_RUNTIME_NAME`]: the CUDA runtime's full file name
///    (`targets/x86_64-linux/lib/libcudart.so.13.0.96` -> 13.0.96), or on Windows
///    [`SOURCE_RUNTIME_VERSIONINFO`]: `cudart64_*.dll`'s VERSIONINFO (`ProductName`
///    `NVIDIA CUDA 13.0.96 Runtime` -> 13.0.96; else the fixed FileVersion `6.14.11.13000`,
///    whose last part is `CUDART_VERSION`, -> 13.0);
/// 2. [`SOURCE_HEADER`]: `#define CUDART_VERSION 13000` in `include/cuda_runtime_api.h` (or
///    `targets/*/include/`) -> 13.0 (major.minor only);
/// 3. [`SOURCE_FOLDER`]: the root's folder name, `cuda-13.0` or `v13.0`;
/// 4. the runtime's name with its major only (`libcudart.so.13`, `cudart64_13.dll`) -> 13.
///
/// The first source that gives major.minor wins; a later one that names another major.minor
/// is reported in `problems`. `None` when no source gives a version.
fn fallback_version(root: &Path, problems: &mut Vec<String>) -> Option<(Version, &'static str)> {
    let (runtime, runtime_major) = runtime_version(root);
    let found: Vec<(Version, &'static str)> =
        [runtime, header_cuda_version(root).map(|v| (v, SOURCE_HEADER)), folder_version(root).map(|v| (v, SOURCE_FOLDER))].into_iter().flatten().collect();
    let Some((chosen, source)) = found.first().cloned() else {
        return runtime_major.map(|m| (Version::new(&[m]), SOURCE_RUNTIME_NAME));
    };
    for (other, other_source) in &found[1..] {
        if other.truncated(2) != chosen.truncated(2) {
            problems.push(format!("CUDA versions disagree: the {source} says {chosen} but the {other_source} says {other}; {chosen} is used"));
        }
    }
    Some((chosen, source))
}

/// `version_source` of a version read from the runtime library's file name.
pub const SOURCE_RUNTIME_NAME: &str = "runtime file name";
/// `version_source` of a version read from `cudart64_*.dll`'s VERSIONINFO.
pub const SOURCE_RUNTIME_VERSIONINFO: &str = "runtime VERSIONINFO";
/// `version_source` of a version read from `CUDART_VERSION` in `cuda_runtime_api.h`.
pub const SOURCE_HEADER: &str = "include/cuda_runtime_api.h";
/// `version_source` of a version read from the root's folder name.
pub const SOURCE_FOLDER: &str = "folder name";

/// The runtime's version with at least major.minor (from a Linux file name or a DLL's
/// VERSIONINFO), and separately the major a runtime name alone carries.
fn runtime_version(root: &Path) -> (Option<(Version, &'static str)>, Option<u64>) {
    let mut best: Option<Version> = None;
    let mut major = None;
    for (dir, windows) in library_dirs(root) {
        for (name, path) in dir_entries(&dir) {
            if !is_cudart(&name, windows) {
                continue;
            }
            if windows {
                // cudart64_110.dll (every CUDA 11.x) -> 11; cudart64_13.dll -> 13.
                let digits = &name[name.find('_').map_or(0, |i| i + 1)..name.len() - ".dll".len()];
                major = major.or(digits.parse::<u64>().ok().map(|d| if digits.len() >= 3 { d / 10 } else { d }));
                if let Ok(info) = binfmt::inspect(&path)
                    && let Some(v) = cudart_versioninfo(&info)
                {
                    return (Some((v, SOURCE_RUNTIME_VERSIONINFO)), major);
                }
            } else if let Some(v) = name.strip_prefix("libcudart.so.").and_then(numeric_prefix) {
                major = major.or(Some(v.major()));
                if v.parts().len() >= 2 && best.as_ref().is_none_or(|b| v.parts().len() > b.parts().len()) {
                    best = Some(v);
                }
            }
        }
    }
    (best.map(|v| (v, SOURCE_RUNTIME_NAME)), major)
}

/// The CUDA version in a `cudart64_*.dll`'s VERSIONINFO: the version in a `ProductName` or
/// `FileDescription` that mentions CUDA (`NVIDIA CUDA 13.0.96 Runtime`), else the fixed
/// FileVersion's last part read as `CUDART_VERSION` (`6.14.11.13000` -> 13.0).
fn cudart_versioninfo(info: &binfmt::BinaryInfo) -> Option<Version> {
    static IN_TEXT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b(\d+\.\d+(?:\.\d+)*)\b").unwrap());
    for key in ["ProductName", "FileDescription"] {
        if let Some((_, value)) = info.version_strings.iter().find(|(k, v)| k == key && v.contains("CUDA"))
            && let Some(m) = IN_TEXT.captures(value)
            && let Some(v) = numeric_prefix(&m[1])
        {
            return Some(v);
        }
    }
    let fixed = info.file_version.as_ref()?;
    let encoded = *fixed.parts().get(3)?;
    (1000..100_000).contains(&encoded).then(|| Version::new(&[encoded / 1000, encoded % 1000 / 10]))
}

/// `CUDART_VERSION` of `include/cuda_runtime_api.h` (or `targets/*/include/`) as major.minor.
fn header_cuda_version(root: &Path) -> Option<Version> {
    static DEFINE: LazyLock<regex::bytes::Regex> =
        LazyLock::new(|| regex::bytes::Regex::new(r"(?m-u)^[ \t]*#[ \t]*define[ \t]+CUDART_VERSION[ \t]+(\d{4,6})\b").unwrap());
    let mut candidates = vec![root.join("include")];
    candidates.extend(dir_entries(&root.join("targets")).into_iter().map(|(_, t)| t.join("include")));
    candidates.into_iter().find_map(|dir| {
        let mut bytes = Vec::new();
        fs::File::open(dir.join("cuda_runtime_api.h")).ok()?.take(MAX_HEADER).read_to_end(&mut bytes).ok()?;
        let m = DEFINE.captures(&bytes)?;
        let encoded: u64 = std::str::from_utf8(&m[1]).ok()?.parse().ok()?;
        Some(Version::new(&[encoded / 1000, encoded % 1000 / 10]))
    })
}

/// The largest part of `cuda_runtime_api.h` read (the real one is about 0.6 MiB; the define
/// is near its top).
const MAX_HEADER: u64 = 8 << 20;

/// The version in the root's folder name: `cuda-13.0` (Linux packages), `v13.0` (the Windows
/// installer), `cuda-12.6.2`.
fn folder_version(root: &Path) -> Option<Version> {
    static NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(?:cuda-|[vV])(\d+\.\d+(?:\.\d+)?)$").unwrap());
    let name = root.file_name()?.to_str()?;
    numeric_prefix(&NAME.captures(name)?[1])
}

/// The numeric dotted prefix of `s`, up to 4 parts of at most 9 digits each
/// (`12.6.2` -> 12.6.2, `11.1.20200923` -> 11.1.20200923, `12.4.1-rc` -> 12.4.1).
fn numeric_prefix(s: &str) -> Option<Version> {
    let mut parts = Vec::new();
    for piece in s.trim().split('.') {
        let digits: String = piece.chars().take_while(|c| c.is_ascii_digit()).collect();
        if digits.is_empty() || digits.len() > 9 {
            break;
        }
        parts.push(digits.parse::<u64>().ok()?);
        if digits.len() != piece.len() || parts.len() == 4 {
            break;
        }
    }
    (!parts.is_empty()).then(|| Version::new(&parts))
}

/// Parses `version.json` (CUDA 11.1+): the string at `cuda.version`.
fn parse_version_json(text: &str) -> Result<Version, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON ({e})"))?;
    let v = value
        .get("cuda")
        .and_then(|c| c.get("version"))
        .and_then(|v| v.as_str())
        .ok_or_else(|| "has no \"cuda\": {\"version\": \"...\"} string".to_string())?;
    numeric_prefix(v).ok_or_else(|| format!("\"cuda\".\"version\" is `{v}`, which does not start with a version number"))
}

/// Parses `version.txt` (before CUDA 11.1): a line `CUDA Version 10.2.89`.
fn parse_version_txt(text: &str) -> Result<Version, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.lines()
        .find_map(|line| line.trim().strip_prefix("CUDA Version").and_then(numeric_prefix))
        .ok_or_else(|| "has no `CUDA Version <x.y.z>` line".to_string())
}

/// The library folders of a toolkit and whether they use Windows names:
/// `bin`, `bin/x64` (Windows names), then `lib64`, `lib`, `targets/*/lib` (Linux names).
fn library_dirs(root: &Path) -> Vec<(PathBuf, bool)> {
    let mut dirs = vec![(root.join("bin"), true), (root.join("bin").join("x64"), true), (root.join("lib64"), false), (root.join("lib"), false)];
    for (_, target) in dir_entries(&root.join("targets")) {
        dirs.push((target.join("lib"), false));
    }
    dirs
}

fn is_cudart(name: &str, windows: bool) -> bool {
    if windows {
        let lower = name.to_ascii_lowercase();
        lower.strip_prefix("cudart64_").and_then(|r| r.strip_suffix(".dll")).is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    } else {
        name == "libcudart.so" || name.starts_with("libcudart.so.")
    }
}

/// The cuDNN major a dispatcher name carries (`cudnn64_9.dll` -> 9, `libcudnn.so.8.9.4` -> 8),
/// `Some(None)` for the bare `libcudnn.so`, `None` when `name` is not a dispatcher.
fn dispatcher_major(name: &str, windows: bool) -> Option<Option<u64>> {
    libname::parse(name).filter(|l| l.is_dispatcher() && (l.os == Os::Windows) == windows).map(|l| l.major)
}

fn is_cudnn_library(name: &str, windows: bool) -> bool {
    libname::parse(name).is_some_and(|l| (l.os == Os::Windows) == windows)
}

fn find_runtime(root: &Path) -> Option<PathBuf> {
    library_dirs(root).into_iter().find_map(|(dir, windows)| dir_entries(&dir).into_iter().find(|(n, _)| is_cudart(n, windows)).map(|(_, p)| p))
}

/// The cuDNN version in the toolkit's `include/` (`cudnn_version.h` for 8.x/9.x, `cudnn.h` for 7.x).
fn header_version(root: &Path) -> Option<(Version, &'static str)> {
    for name in ["cudnn_version.h", "cudnn.h"] {
        let path = root.join("include").join(name);
        if let Ok(text) = read_small(&path)
            && let Some(v) = parse_cudnn_header(&text)
        {
            return Some((v, if name == "cudnn.h" { "include/cudnn.h" } else { "include/cudnn_version.h" }));
        }
    }
    None
}

fn find_hand_copied(root: &Path, problems: &mut Vec<String>) -> Option<HandCopiedCudnn> {
    let header = header_version(root);
    for (dir, windows) in library_dirs(root) {
        let entries = dir_entries(&dir);
        let dispatchers: Vec<(&String, &PathBuf, Option<u64>)> = entries.iter().filter_map(|(n, p)| dispatcher_major(n, windows).map(|m| (n, p, m))).collect();
        if dispatchers.is_empty() {
            continue;
        }
        let libraries: Vec<String> = entries.iter().filter(|(n, _)| is_cudnn_library(n, windows)).map(|(n, _)| n.clone()).collect();
        let mut majors: Vec<u64> = dispatchers.iter().filter_map(|d| d.2).collect();
        majors.sort();
        majors.dedup();
        if majors.len() > 1 {
            let names: Vec<&str> = dispatchers.iter().map(|d| d.0.as_str()).collect();
            problems.push(format!("cuDNN of several majors was copied into {}: {}; the highest is reported", rel(root, &dir), names.join(", ")));
        }
        let major = majors.last().copied();
        // The dispatcher: the soname / DLL of the highest major, else the bare libcudnn.so.
        let pick = dispatchers.iter().filter(|d| d.2 == major).min_by_key(|d| d.0.len()).or_else(|| dispatchers.first()).expect("non-empty");
        let dispatcher = pick.1.clone();

        let versioninfo = if windows {
            match binfmt::inspect(&dispatcher) {
                Ok(info) => info.file_version,
                Err(e) => {
                    problems.push(format!("{}: cannot read its library header: {e}", rel(root, &dispatcher)));
                    None
                }
            }
        } else {
            None
        };
        let from_name = (!windows)
            .then(|| {
                entries.iter().find_map(|(n, _)| {
                    let v: Version = libname::parse(n).filter(|l| l.os == Os::Linux && l.is_dispatcher())?.version?.parse().ok()?;
                    (v.parts().len() >= 3 && Some(v.major()) == major.or(Some(v.major()))).then_some(v)
                })
            })
            .flatten();
        // The release's marker, embedded in one sub-library (docs/facts.md §7b): wheel-style
        // names carry only the major.
        let from_marker = || {
            entries.iter().filter(|(n, _)| libname::parse(n).is_some_and(|l| l.major == major && !l.is_dispatcher())).find_map(|(n, p)| {
                let v = binfmt::library_version(p).ok()??;
                (v.parts().len() >= 3).then(|| (v, format!("the marker in {n}")))
            })
        };
        let own = versioninfo
            .map(|v| (v, "VERSIONINFO".to_string()))
            .or_else(|| from_name.map(|v| (v, "file name".to_string())))
            .or_else(|| if windows { None } else { from_marker() });
        let (version, source, mut found) = choose_cudnn_version(own, header.as_ref().map(|(v, s)| (v.clone(), *s)));
        problems.append(&mut found);
        if let (Some(v), Some(m)) = (&version, major)
            && v.major() != m
        {
            problems.push(format!("{} is named for cuDNN {m} but its version is {v}", rel(root, &dispatcher)));
        }
        let cudnn_major = major.or(version.as_ref().map(Version::major));
        let has_sublibraries = libraries.iter().any(|n| libname::parse(n).is_some_and(|l| !l.is_dispatcher()));
        if cudnn_major.is_some_and(|m| m >= 8) && !has_sublibraries {
            problems.push(format!(
                "only the cuDNN dispatcher {} was copied into {}: cuDNN 8 and later load their \
                 sub-libraries (cudnn_ops*, cudnn_cnn*, ...) at run time and fail without them",
                pick.0,
                rel(root, &dir)
            ));
        }
        return Some(HandCopiedCudnn { version, dispatcher, source, libraries });
    }
    if let Some((v, source)) = header {
        problems.push(format!(
            "{source} (cuDNN {v}) was copied into the toolkit without a cuDNN library; \
             a build that searches the toolkit's include folder may pick it up instead of the selected cuDNN's header"
        ));
    }
    None
}

/// Chooses a hand-copied cuDNN's version: the library's own version when a file tells it
/// (`own`: the DLL's VERSIONINFO, the `libcudnn.so.X.Y.Z` file name, or the
/// `cudnn_version_*` marker a sub-library embeds; with where it was read), else the header
/// (3 parts). A header that disagrees with the library's own version is named as the stale
/// one. Returns `(version, source, problems)`.
fn choose_cudnn_version(own: Option<(Version, String)>, header: Option<(Version, &str)>) -> (Option<Version>, String, Vec<String>) {
    let mut problems = Vec::new();
    let (version, source) = match (&own, &header) {
        (Some((v, s)), _) => (Some(v.clone()), s.clone()),
        (None, Some((v, s))) => (Some(v.clone()), s.to_string()),
        (None, None) => (None, "unknown".to_string()),
    };
    if let (Some((chosen, from)), Some((h, hs))) = (&own, &header)
        && !crate::sys::binfmt::same_release(chosen, h)
    {
        problems.push(format!("{hs} says cuDNN {h}, but the library's own version is {chosen} ({from}): the header is stale; replace it with the header of the release the libraries come from"));
    }
    (version, source, problems)
}

#[cfg(test)]
mod tests {
    use tempfile::TempDir;

    use super::*;
    use crate::toolkit::fixtures::*;

    #[test]
    fn version_json_toolkit() {
        let tmp = TempDir::new().unwrap();
        linux_toolkit(tmp.path(), "12.6.2");
        let t = inspect_root(tmp.path()).unwrap();
        assert_eq!(t.version, Some(v("12.6.2")));
        assert_eq!(t.version_source.as_deref(), Some("version.json"));
        assert_eq!(t.runtime, Some(canon(tmp.path()).join("lib64/libcudart.so.12")));
        assert_eq!(t.root, canon(tmp.path()));
        assert!(t.found_by.is_empty());
        assert!(t.hand_copied_cudnn.is_none());
        // The fake runtime is not an ELF file: reported, not fatal.
        assert!(t.problems.iter().any(|p| p.contains("libcudart.so.12") && p.contains("header")), "{:?}", t.problems);
        // On Windows the root is shown without canonicalize's `\\?\` prefix.
        assert!(!t.root.to_string_lossy().starts_with(r"\\?\"), "{}", t.root.display());
    }

    #[test]
    fn version_strings() {
        assert_eq!(numeric_prefix("12.6.2"), Some(v("12.6.2")));
        assert_eq!(numeric_prefix("11.1.20200923"), Some(v("11.1.20200923")));
        assert_eq!(numeric_prefix("12.4.1-rc2"), Some(v("12.4.1")));
        assert_eq!(numeric_prefix("12.4.1.2.3"), Some(v("12.4.1.2")));
        assert_eq!(numeric_prefix(" 10.2.89\r"), Some(v("10.2.89")));
        assert_eq!(numeric_prefix("rc"), None);
        assert_eq!(numeric_prefix(""), None);
        assert_eq!(parse_version_json(&format!("\u{feff}{}", version_json("13.0.1"))), Ok(v("13.0.1")));
        assert!(parse_version_json(r#"{"cuda": {"version": 12}}"#).unwrap_err().contains("cuda"));
        assert!(parse_version_json(r#"{"cuda": {"version": "beta"}}"#).unwrap_err().contains("beta"));
        assert_eq!(parse_version_txt("CUDA Version 10.2.89\r\n"), Ok(v("10.2.89")));
        assert!(parse_version_txt("hello").is_err());
    }

    #[test]
    fn version_txt_toolkit() {
        let tmp = TempDir::new().unwrap();
        write(&tmp.path().join("version.txt"), "CUDA Version 10.2.89\r\n");
        write(&tmp.path().join("lib64/libcudart.so.10.2"), "fake");
        let t = inspect_root(tmp.path()).unwrap();
        assert_eq!(t.version, Some(v("10.2.89")));
        assert_eq!(t.version_source.as_deref(), Some("version.txt"));
    }

    #[test]
    fn malformed_version_json_is_listed_with_a_problem() {
        let tmp = TempDir::new().unwrap();
        write(&tmp.path().join("version.json"), "{\"cuda\": {\"version\": ");
        let t = inspect_root(tmp.path()).unwrap();
        assert_eq!(t.version, None);
        assert_eq!(t.version_source, None);
        assert!(t.runtime.is_none());
        assert_eq!(t.problems.len(), 1);
        assert!(t.problems[0].starts_with("version.json: not valid JSON"), "{:?}", t.problems);

        // ... and falls back to version.txt when there is one.
        write(&tmp.path().join("version.txt"), "CUDA Version 11.0.207\n");
        let t = inspect_root(tmp.path()).unwrap();
        assert_eq!(t.version, Some(v("11.0.207")));
        assert_eq!(t.version_source.as_deref(), Some("version.txt"));
        assert_eq!(t.problems.len(), 1);

        // discover lists it too, after the toolkits with a known version.
        let good = TempDir::new().unwrap();
        linux_toolkit(good.path(), "12.1.0");
        fs::remove_file(tmp.path().join("version.txt")).unwrap();
        let paths = std::env::join_paths([tmp.path(), good.path()]).unwrap();
        let found = discover(&FakeEnv::new().set(TOOLKIT_PATHS_VAR, paths));
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].version, Some(v("12.1.0")));
        assert_eq!(found[1].version, None);
    }

    #[test]
    fn runtime_without_version_file() {
        let tmp = TempDir::new().unwrap();
        write(&tmp.path().join("targets/x86_64-linux/lib/libcudart.so.12.6.77"), "fake");
        let t = inspect_root(tmp.path()).unwrap();
        assert_eq!(t.version, Some(v("12.6.77")));
        assert_eq!(t.version_source.as_deref(), Some(SOURCE_RUNTIME_NAME));
        assert_eq!(t.runtime, Some(canon(tmp.path()).join("targets/x86_64-linux/lib/libcudart.so.12.6.77")));
        assert!(!t.problems.iter().any(|p| p.contains("version")), "{:?}", t.problems);
    }

    const CUDART_13000: &str = "/* fake */\n#ifndef __CUDA_RUNTIME_API_H__\n#define CUDART_VERSION 13000\n#endif\n";

    /// A CUDA 13.0 root laid out like the real `/usr/local/cuda-13.0` (no
    /// version.json; the runtime and the headers under `targets/x86_64-linux`, `lib64` and
    /// `include` links to them) gets its version from each source in turn.
    #[test]
    fn cuda13_linux_root_without_version_json() {
        let tmp = TempDir::new().unwrap();
        let root = tmp.path().join("cuda-13.0");
        let target = root.join("targets/x86_64-linux");
        write(&target.join("lib/libcudart.so.13.0.96"), "fake");
        write(&target.join("lib/libcudart.so.13"), "fake");
        write(&target.join("lib/libcudart_static.a"), "fake");
        write(&target.join("include/cuda_runtime_api.h"), CUDART_13000);
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("targets/x86_64-linux/lib", root.join("lib64")).unwrap();
            std::os::unix::fs::symlink("targets/x86_64-linux/include", root.join("include")).unwrap();
        }
        let version = |root: &Path| {
            let t = inspect_root(root).unwrap();
            assert!(t.problems.iter().all(|p| p.contains("header")), "{:?}", t.problems);
            (t.version.map(|v| v.to_string()), t.version_source)
        };
        // 1. The runtime's full file name.
        assert_eq!(version(&root), (Some("13.0.96".into()), Some(SOURCE_RUNTIME_NAME.into())));
        // 2. Without it: CUDART_VERSION, major.minor.
        fs::remove_file(target.join("lib/libcudart.so.13.0.96")).unwrap();
        assert_eq!(version(&root), (Some("13.0".into()), Some(SOURCE_HEADER.into())));
        // 3. Without the header: the folder name.
        fs::remove_file(target.join("include/cuda_runtime_api.h")).unwrap();
        assert_eq!(version(&root), (Some("13.0".into()), Some(SOURCE_FOLDER.into())));
        // 4. A folder named otherwise: the major the runtime's name carries.
        let other = tmp.path().join("toolkit");
        fs::rename(&root, &other).unwrap();
        assert_eq!(version(&other), (Some("13".into()), Some(SOURCE_RUNTIME_NAME.into())));
        // version.json, when there is one, still wins.
        write(&other.join("version.json"), &version_json("13.0.2"));
        assert_eq!(version(&other), (Some("13.0.2".into()), Some("version.json".into())));
    }

    /// The Windows layout of a CUDA 13 root: `bin/x64/cudart64_13.dll`, no version.json. The fake
    /// DLL has no VERSIONINFO, so the header, then the folder name decide.
    #[test]
    fn cuda13_windows_root_without_version_json() {
        let tmp = TempDir::new().unwrap();
        let root = tmp.path().join("v13.0");
        write(&root.join("bin/x64/cudart64_13.dll"), "fake");
        write(&root.join("include/cuda_runtime_api.h"), &CUDART_13000.replace("13000", "13010"));
        let t = inspect_root(&root).unwrap();
        assert_eq!(t.runtime, Some(canon(&root).join("bin/x64/cudart64_13.dll")));
        assert_eq!((t.version, t.version_source.as_deref()), (Some(v("13.1")), Some(SOURCE_HEADER)));
        // The folder says 13.0 while the header says 13.1: reported, the header is used.
        assert!(
            t.problems.iter().any(|p| p == "CUDA versions disagree: the include/cuda_runtime_api.h says 13.1 but the folder name says 13.0; 13.1 is used"),
            "{:?}",
            t.problems
        );
        fs::remove_file(root.join("include/cuda_runtime_api.h")).unwrap();
        let t = inspect_root(&root).unwrap();
        assert_eq!((t.version, t.version_source.as_deref()), (Some(v("13.0")), Some(SOURCE_FOLDER)));
        // CUDA 11's runtime name carries 110 for every 11.x: only the major is read from it.
        let old = tmp.path().join("cuda11");
        write(&old.join("bin/cudart64_110.dll"), "fake");
        let t = inspect_root(&old).unwrap();
        assert_eq!((t.version, t.version_source.as_deref()), (Some(v("11")), Some(SOURCE_RUNTIME_NAME)));
    }

    #[test]
    fn cudart_versioninfo_reads_the_product_name_then_the_fixed_version() {
        let info = |fixed: Option<&str>, strings: &[(&str, &str)]| binfmt::BinaryInfo {
            platform: Some(Platform::WindowsX86_64),
            describe: String::new(),
            file_version: fixed.map(v),
            version_strings: strings.iter().map(|(k, s)| (k.to_string(), s.to_string())).collect(),
        };
        // As in the real cudart64_13.dll of nvidia-cuda-runtime 13.0.96.
        let real = info(Some("6.14.11.13000"), &[("FileDescription", "NVIDIA CUDA Runtime, Version 13.0.96"), ("ProductName", "NVIDIA CUDA 13.0.96 Runtime")]);
        assert_eq!(cudart_versioninfo(&real), Some(v("13.0.96")));
        assert_eq!(cudart_versioninfo(&info(Some("6.14.11.12060"), &[])), Some(v("12.6")));
        assert_eq!(cudart_versioninfo(&info(Some("6.14.11.12060"), &[("ProductName", "Something 1.2.3")])), Some(v("12.6")));
        assert_eq!(cudart_versioninfo(&info(Some("1.2.3.4"), &[])), None);
        assert_eq!(cudart_versioninfo(&info(None, &[])), None);
    }

    #[test]
    fn not_a_toolkit_errors() {
        let tmp = TempDir::new().unwrap();
        // Empty folder.
        let empty = tmp.path().join("empty");
        fs::create_dir(&empty).unwrap();
        let e = inspect_root(&empty).unwrap_err();
        assert!(matches!(&e, Error::NotAToolkit { suggestion: None, .. }), "{e:?}");
        assert!(e.to_string().contains("no version.json or version.txt"));
        assert!(e.hint().unwrap().contains("CUENV_TOOLKIT_PATHS or [toolkits]"));
        assert_eq!(e.exit_code(), ExitCode::Invalid);
        // Missing.
        let e = inspect_root(&tmp.path().join("nope")).unwrap_err();
        assert!(matches!(e, Error::NotFound { .. }), "{e:?}");
        assert!(e.to_string().contains("does not exist"));
        // A file.
        write(&tmp.path().join("file"), "x");
        assert!(matches!(inspect_root(&tmp.path().join("file")).unwrap_err(), Error::NotAFolder { .. }));
        // bin/ of a toolkit named instead of the toolkit: suggest the parent.
        let tk = tmp.path().join("v12.6");
        write(&tk.join("version.json"), &version_json("12.6.2"));
        write(&tk.join("bin/cudart64_12.dll"), "fake");
        let e = inspect_root(&tk.join("bin")).unwrap_err();
        match &e {
            Error::NotAToolkit { suggestion: Some(s), .. } => assert_eq!(s, &canon(&tk)),
            other => panic!("{other:?}"),
        }
        assert!(e.hint().unwrap().starts_with("did you mean"));
        // The folder above the toolkits named: suggest the toolkit below.
        match inspect_root(tmp.path()).unwrap_err() {
            Error::NotAToolkit { suggestion: Some(s), .. } => assert_eq!(s, canon(&tk)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn hand_copied_cudnn_with_header() {
        let tmp = TempDir::new().unwrap();
        linux_toolkit(tmp.path(), "12.6.2");
        let lib = tmp.path().join("lib64");
        for n in ["libcudnn.so.9", "libcudnn_ops.so.9", "libcudnn_graph.so.9"] {
            write(&lib.join(n), "fake");
        }
        write(&tmp.path().join("include/cudnn_version.h"), "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 5\n#define CUDNN_PATCHLEVEL 0\n");
        let t = inspect_root(tmp.path()).unwrap();
        let c = t.hand_copied_cudnn.as_ref().unwrap();
        assert_eq!(c.version, Some(v("9.5.0")));
        assert_eq!(c.source, "include/cudnn_version.h");
        assert_eq!(c.dispatcher, canon(tmp.path()).join("lib64/libcudnn.so.9"));
        assert_eq!(c.libraries, ["libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ops.so.9"]);
        assert!(!t.problems.iter().any(|p| p.contains("cuDNN")), "{:?}", t.problems);

        // Dispatcher alone: reported.
        fs::remove_file(lib.join("libcudnn_ops.so.9")).unwrap();
        fs::remove_file(lib.join("libcudnn_graph.so.9")).unwrap();
        let t = inspect_root(tmp.path()).unwrap();
        assert!(t.problems.iter().any(|p| p.contains("only the cuDNN dispatcher libcudnn.so.9")), "{:?}", t.problems);

        // A stale header without a library: reported, no hand-copied cuDNN.
        fs::remove_file(lib.join("libcudnn.so.9")).unwrap();
        let t = inspect_root(tmp.path()).unwrap();
        assert!(t.hand_copied_cudnn.is_none());
        assert!(t.problems.iter().any(|p| p.contains("without a cuDNN library")), "{:?}", t.problems);
    }

    #[test]
    fn hand_copied_cudnn_from_file_name_and_several_majors() {
        let tmp = TempDir::new().unwrap();
        linux_toolkit(tmp.path(), "12.2.0");
        let lib = tmp.path().join("lib");
        for n in ["libcudnn.so", "libcudnn.so.8", "libcudnn.so.8.9.4", "libcudnn_ops_infer.so.8", "libcudnn.so.9"] {
            write(&lib.join(n), "fake");
        }
        let t = inspect_root(tmp.path()).unwrap();
        let c = t.hand_copied_cudnn.unwrap();
        assert_eq!(c.dispatcher, canon(tmp.path()).join("lib/libcudnn.so.9"));
        // The 8.9.4 file name does not belong to major 9: no version.
        assert_eq!(c.version, None);
        assert_eq!(c.source, "unknown");
        assert!(t.problems.iter().any(|p| p.contains("several majors")), "{:?}", t.problems);

        fs::remove_file(lib.join("libcudnn.so.9")).unwrap();
        let t = inspect_root(tmp.path()).unwrap();
        let c = t.hand_copied_cudnn.unwrap();
        assert_eq!(c.version, Some(v("8.9.4")));
        assert_eq!(c.source, "file name");
        assert_eq!(c.dispatcher, canon(tmp.path()).join("lib/libcudnn.so.8"));
    }

    #[test]
    fn version_choice_prefers_the_librarys_own_and_names_a_stale_header() {
        let vi = |s: &str| Some((v(s), "VERSIONINFO".to_string()));
        let (ver, src, p) = choose_cudnn_version(vi("9.5.0.50"), Some((v("9.5.0"), "include/cudnn_version.h")));
        assert_eq!((ver, src.as_str(), p.len()), (Some(v("9.5.0.50")), "VERSIONINFO", 0));
        let (ver, src, p) = choose_cudnn_version(vi("9.5.0.50"), Some((v("8.9.4"), "include/cudnn_version.h")));
        assert_eq!((ver, src.as_str()), (Some(v("9.5.0.50")), "VERSIONINFO"));
        assert_eq!(p.len(), 1);
        assert!(
            p[0].contains("include/cudnn_version.h says cuDNN 8.9.4, but the library's own version is 9.5.0.50 (VERSIONINFO): the header is stale"),
            "{p:?}"
        );
        // The file name is the library's own version; the header used to win here
        // and the library was blamed.
        let (ver, src, p) = choose_cudnn_version(Some((v("8.9.7"), "file name".into())), Some((v("8.9.4"), "include/cudnn_version.h")));
        assert_eq!((ver, src.as_str()), (Some(v("8.9.7")), "file name"));
        assert!(p[0].contains("says cuDNN 8.9.4, but the library's own version is 8.9.7 (file name): the header is stale"), "{p:?}");
        let (ver, src, p) = choose_cudnn_version(None, Some((v("8.9.4"), "include/cudnn_version.h")));
        assert_eq!((ver, src.as_str(), p.len()), (Some(v("8.9.4")), "include/cudnn_version.h", 0));
        let (ver, src, p) = choose_cudnn_version(None, None);
        assert_eq!((ver, src.as_str(), p.len()), (None, "unknown", 0));
    }

    #[test]
    fn windows_layout_is_detected_on_any_platform() {
        let tmp = TempDir::new().unwrap();
        write(&tmp.path().join("version.json"), &version_json("12.6.2"));
        write(&tmp.path().join("bin/cudart64_12.dll"), "fake");
        write(&tmp.path().join("bin/cudart32_12.dll"), "fake");
        write(&tmp.path().join("bin/cudnn64_9.dll"), "fake");
        write(&tmp.path().join("bin/cudnn_ops64_9.dll"), "fake");
        write(&tmp.path().join("include/cudnn_version.h"), "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 5\n#define CUDNN_PATCHLEVEL 0\n");
        let t = inspect_root(tmp.path()).unwrap();
        assert_eq!(t.runtime, Some(canon(tmp.path()).join("bin/cudart64_12.dll")));
        let c = t.hand_copied_cudnn.as_ref().unwrap();
        assert_eq!(c.dispatcher, canon(tmp.path()).join("bin/cudnn64_9.dll"));
        // No VERSIONINFO readable from the fake DLL: the header decides, and the unreadable DLL is reported.
        assert_eq!(c.version, Some(v("9.5.0")));
        assert_eq!(c.source, "include/cudnn_version.h");
        assert!(t.problems.iter().any(|p| p.contains("cudnn64_9.dll") && p.contains("header")), "{:?}", t.problems);

        // CUDA 13-style bin/x64.
        let x64 = TempDir::new().unwrap();
        write(&x64.path().join("bin/x64/cudart64_13.dll"), "fake");
        assert_eq!(inspect_root(x64.path()).unwrap().runtime, Some(canon(x64.path()).join("bin/x64/cudart64_13.dll")));
    }
}
