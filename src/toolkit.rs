//! CUDA toolkit roots: where they are, which CUDA version each one is, whether its CUDA
//! runtime library is there, and which cuDNN (if any) was copied into it by hand.
//!
//! Facts this module relies on (CUDA installer layout; field notes §1, §2, §5):
//! - A toolkit root holds `version.json` (CUDA 11.1 and later:
//!   `{"cuda": {"name": "CUDA SDK", "version": "12.6.2"}, ...}`) or `version.txt` (older:
//!   `CUDA Version 10.2.89`).
//! - Its runtime is `bin\cudart64_<N>.dll` on Windows (`cudart64_110.dll` for 11.x,
//!   `cudart64_12.dll` for 12.x; `bin\x64\` is also accepted, since CUDA 13 era Windows
//!   packages moved DLLs there — an uncertain fact, so both are looked at), and
//!   `lib64/libcudart.so*` (a link to `targets/<arch>-linux/lib`), `lib/` or
//!   `targets/*/lib/` on Linux.
//! - The Windows installer puts toolkits in `%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\v<maj>.<min>`
//!   and sets `CUDA_PATH` (the last one installed) and `CUDA_PATH_V<maj>_<min>` (each one).
//!   Linux packages install `/usr/local/cuda-<maj>.<min>` with a `/usr/local/cuda` link;
//!   some distributions use `/opt/cuda`; `CUDA_HOME` / `CUDA_PATH` are conventions of build tools.
//! - Users often copy cuDNN's files into the toolkit by hand (`bin\cudnn*64_<N>.dll`,
//!   `lib64/libcudnn*.so*`, `include\cudnn*.h`). The dispatcher (`cudnn64_<N>.dll`,
//!   `libcudnn.so.<N>`) loads its sub-libraries at run time, so a dispatcher alone fails.
//!
//! Layout checks are the same on every platform (a Windows toolkit seen from Linux, e.g.
//! under WSL's `/mnt/c`, is recognised); only the default search locations
//! ([`default_roots`]) differ by platform.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};

use crate::binfmt::{self, Platform};
use crate::error::{Diagnose, ExitCode};
use crate::version::{Version, parse_cudnn_header};

/// The variable that names extra toolkit roots, separated like `PATH` (`:` on Linux, `;` on Windows).
pub const PATHS_VAR: &str = "CUENV_TOOLKIT_PATHS";

/// The `found_by` label of the Windows installer's default location.
pub const WINDOWS_GLOB_LABEL: &str = r"%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\v*";

/// The largest version file read (real ones are a few KiB).
const MAX_VERSION_FILE: u64 = 1 << 20;

// ---------------------------------------------------------------------------------------
// The environment
// ---------------------------------------------------------------------------------------

/// What discovery reads from its surroundings, so that tests can fake it.
pub trait Env {
    /// The value of one environment variable (case-insensitive names on Windows).
    fn var(&self, name: &str) -> Option<OsString>;
    /// All environment variables whose names are valid UTF-8 (for `CUDA_PATH_V<maj>_<min>`).
    fn vars(&self) -> Vec<(String, OsString)>;
    /// The folder the fixed Linux locations (`/usr/local/cuda-*`, `/usr/local/cuda`,
    /// `/opt/cuda`) are resolved against: `/` for the real system, a temporary folder in
    /// tests, `None` to skip them. Not used on Windows (its default location comes from
    /// `%ProgramFiles%`, which is a variable).
    fn fixed_root(&self) -> Option<PathBuf>;
}

/// The real process environment and file system (`/` as the fixed root).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<OsString> {
        std::env::var_os(name)
    }
    fn vars(&self) -> Vec<(String, OsString)> {
        std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v))).collect()
    }
    fn fixed_root(&self) -> Option<PathBuf> {
        Some(PathBuf::from("/"))
    }
}

/// An environment given as data, for tests: variables (looked up by exact name, or
/// case-insensitively on Windows) and an optional fixed root (default `None`: the fixed
/// Linux locations are not searched).
#[derive(Debug, Clone, Default)]
pub struct FakeEnv {
    /// The variables, in order.
    pub vars: Vec<(String, OsString)>,
    /// See [`Env::fixed_root`].
    pub fixed_root: Option<PathBuf>,
}

impl FakeEnv {
    /// An empty environment with no fixed root.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds (or replaces) a variable.
    pub fn set(mut self, name: &str, value: impl Into<OsString>) -> Self {
        self.vars.retain(|(k, _)| !same_var_name(k, name));
        self.vars.push((name.to_string(), value.into()));
        self
    }
    /// Sets the fixed root (see [`Env::fixed_root`]).
    pub fn with_fixed_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.fixed_root = Some(root.into());
        self
    }
}

impl Env for FakeEnv {
    fn var(&self, name: &str) -> Option<OsString> {
        self.vars.iter().find(|(k, _)| same_var_name(k, name)).map(|(_, v)| v.clone())
    }
    fn vars(&self) -> Vec<(String, OsString)> {
        self.vars.clone()
    }
    fn fixed_root(&self) -> Option<PathBuf> {
        self.fixed_root.clone()
    }
}

fn same_var_name(a: &str, b: &str) -> bool {
    if cfg!(windows) { a.eq_ignore_ascii_case(b) } else { a == b }
}

fn nonempty(v: Option<OsString>) -> Option<OsString> {
    v.filter(|v| !v.is_empty())
}

// ---------------------------------------------------------------------------------------
// Data
// ---------------------------------------------------------------------------------------

/// One CUDA toolkit root, as `cuenv toolkits` shows it (and `--json` prints it).
///
/// JSON shape: `{"root": "/usr/local/cuda-12.6", "version": "12.6.2" | null,
/// "version_source": "version.json" | "version.txt" | null, "found_by": ["/usr/local/cuda-*", ...],
/// "runtime": "<path>" | null, "platform": "linux-x86_64" | null,
/// "hand_copied_cudnn": {...} | null, "problems": ["..."]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Toolkit {
    /// The root, canonicalized (symlinks resolved; on Windows without the `\\?\` prefix).
    #[serde(serialize_with = "ser_path")]
    pub root: PathBuf,
    /// The CUDA version: the numeric dotted prefix (1 to 4 parts) of the version file's
    /// version. `None` when no version file could be read (see `problems`).
    pub version: Option<Version>,
    /// `"version.json"` or `"version.txt"`: the file `version` came from.
    pub version_source: Option<String>,
    /// How the root was found, in search order: a variable name (`CUDA_PATH`,
    /// `CUDA_PATH_V12_6`, `CUDA_HOME`, `CUENV_TOOLKIT_PATHS`) or a location
    /// (`/usr/local/cuda-*`, `/usr/local/cuda`, `/opt/cuda`, [`WINDOWS_GLOB_LABEL`]).
    /// Empty for a root inspected directly with [`inspect_root`].
    pub found_by: Vec<String>,
    /// The CUDA runtime library found (`bin/cudart64_12.dll`, `lib64/libcudart.so.12`, ...).
    #[serde(serialize_with = "ser_opt_path")]
    pub runtime: Option<PathBuf>,
    /// The platform the runtime library was built for (from its PE/ELF header).
    pub platform: Option<Platform>,
    /// A cuDNN copied into the toolkit's library folder by hand, if any.
    pub hand_copied_cudnn: Option<HandCopiedCudnn>,
    /// Warnings: an unreadable or malformed version file, disagreeing cuDNN versions,
    /// a dispatcher without its sub-libraries, a stray cuDNN header, ...
    pub problems: Vec<String>,
}

/// A cuDNN copied by hand into a toolkit (users copy the DLLs into `CUDA\vXX.Y\bin`).
///
/// JSON shape: `{"version": "9.5.0.50" | null, "dispatcher": "<path>",
/// "source": "VERSIONINFO" | "include/cudnn_version.h" | "include/cudnn.h" | "file name" | "unknown",
/// "libraries": ["cudnn64_9.dll", "cudnn_ops64_9.dll", ...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandCopiedCudnn {
    /// The cuDNN version: the dispatcher DLL's VERSIONINFO file version (4 parts) when it
    /// has one, else the header's 3 parts, else the `libcudnn.so.X.Y.Z` file name.
    pub version: Option<Version>,
    /// The dispatcher library: `bin/cudnn64_<N>.dll` or `lib64/libcudnn.so.<N>`.
    #[serde(serialize_with = "ser_path")]
    pub dispatcher: PathBuf,
    /// Where `version` came from (see the JSON shape above).
    pub source: String,
    /// The file names of every cuDNN library in the dispatcher's folder, sorted.
    pub libraries: Vec<String>,
}

/// A root that was named explicitly (by a variable) but is not a usable toolkit.
/// Fixed locations that do not exist are not reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The path as named.
    #[serde(serialize_with = "ser_path")]
    pub path: PathBuf,
    /// The variables that named it.
    pub found_by: Vec<String>,
    /// Why it was skipped (the message of the [`Error`] from [`inspect_root`]).
    pub reason: String,
}

/// The result of [`discover_all`]: the toolkits found and the named roots that were skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Discovery {
    /// Toolkits, deduplicated by canonical path, sorted by version (unknown last) then root.
    pub toolkits: Vec<Toolkit>,
    /// Explicitly named roots that are missing or are not toolkits.
    pub skipped: Vec<Skipped>,
}

fn ser_path<S: Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

fn ser_opt_path<S: Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Some(p) => s.serialize_some(&p.to_string_lossy()),
        None => s.serialize_none(),
    }
}

// ---------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------

/// Why a named folder is not a usable toolkit root.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Nothing exists at the path.
    #[error("toolkit root {} does not exist", path.display())]
    NotFound {
        /// The path as named.
        path: PathBuf,
    },
    /// The path is a file, not a folder.
    #[error("toolkit root {} is not a folder", path.display())]
    NotAFolder {
        /// The path as named.
        path: PathBuf,
    },
    /// The folder has no version file and no CUDA runtime library.
    #[error(
        "{} is not a CUDA toolkit: it has no version.json or version.txt, and no CUDA runtime \
         (bin/cudart64_*.dll, lib64/libcudart.so*, lib/libcudart.so*, targets/*/lib/libcudart.so*)",
        path.display()
    )]
    NotAToolkit {
        /// The path as named.
        path: PathBuf,
        /// A nearby folder that is a toolkit: the parent (when `bin/` or `lib64/` was
        /// named) or a `v*` / `cuda-*` child (when the folder above the toolkits was named).
        suggestion: Option<PathBuf>,
    },
    /// The folder could not be read.
    #[error("cannot read toolkit root {}", path.display())]
    Io {
        /// The path as named.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

const ROOT_HINT: &str = "point CUENV_TOOLKIT_PATHS or [toolkits] at a folder that holds version.json and bin/ or lib64/";

impl Diagnose for Error {
    fn hint(&self) -> Option<String> {
        match self {
            Error::NotAToolkit { suggestion: Some(s), .. } => Some(format!("did you mean {}? {ROOT_HINT}", s.display())),
            Error::Io { .. } => Some("check the folder's permissions".into()),
            _ => Some(ROOT_HINT.into()),
        }
    }
    fn exit_code(&self) -> ExitCode {
        match self {
            Error::Io { .. } => ExitCode::Failure,
            _ => ExitCode::Invalid,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Where to look
// ---------------------------------------------------------------------------------------

/// One place to look at, and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The path as found.
    pub path: PathBuf,
    /// The `found_by` label.
    pub found_by: String,
    /// True when a variable named it (then a bad root is reported in [`Discovery::skipped`]).
    pub named: bool,
}

impl Candidate {
    fn new(path: impl Into<PathBuf>, found_by: &str, named: bool) -> Self {
        Candidate { path: path.into(), found_by: found_by.to_string(), named }
    }
}

/// The platform's default search locations, in order (see the module docs for the facts).
/// Windows: the `v*` folders under `%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA`,
/// `CUDA_PATH`, then every `CUDA_PATH_V<maj>_<min>` sorted by name. Linux:
/// `/usr/local/cuda-*` (sorted), `/usr/local/cuda`, `/opt/cuda`, `CUDA_HOME`, `CUDA_PATH`.
pub fn default_roots(env: &dyn Env) -> Vec<Candidate> {
    #[cfg(windows)]
    {
        default_roots_windows(env)
    }
    #[cfg(not(windows))]
    {
        default_roots_linux(env)
    }
}

/// The Windows default locations (not cfg-gated so it can be tested anywhere).
#[cfg_attr(not(windows), allow(dead_code))]
fn default_roots_windows(env: &dyn Env) -> Vec<Candidate> {
    let mut out = Vec::new();
    if let Some(pf) = nonempty(env.var("ProgramFiles")) {
        let base = PathBuf::from(pf).join("NVIDIA GPU Computing Toolkit").join("CUDA");
        for (name, path) in dir_entries(&base) {
            if name.starts_with(['v', 'V']) && path.is_dir() {
                out.push(Candidate::new(path, WINDOWS_GLOB_LABEL, false));
            }
        }
    }
    if let Some(p) = nonempty(env.var("CUDA_PATH")) {
        out.push(Candidate::new(p, "CUDA_PATH", true));
    }
    let mut versioned: Vec<(String, OsString)> = env.vars().into_iter().filter(|(k, v)| is_cuda_path_versioned(k) && !v.is_empty()).collect();
    versioned.sort_by_key(|(k, _)| k.to_ascii_uppercase());
    for (k, v) in versioned {
        out.push(Candidate::new(v, &k, true));
    }
    out
}

/// The Linux default locations (not cfg-gated so it can be tested anywhere).
#[cfg_attr(windows, allow(dead_code))]
fn default_roots_linux(env: &dyn Env) -> Vec<Candidate> {
    let mut out = Vec::new();
    if let Some(sys) = env.fixed_root() {
        let local = sys.join("usr").join("local");
        for (name, path) in dir_entries(&local) {
            if name.starts_with("cuda-") {
                out.push(Candidate::new(path, "/usr/local/cuda-*", false));
            }
        }
        out.push(Candidate::new(local.join("cuda"), "/usr/local/cuda", false));
        out.push(Candidate::new(sys.join("opt").join("cuda"), "/opt/cuda", false));
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(p) = nonempty(env.var(var)) {
            out.push(Candidate::new(p, var, true));
        }
    }
    out
}

/// True for `CUDA_PATH_V<digits>_<digits>` (any case, as Windows variable names are).
fn is_cuda_path_versioned(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    let Some(rest) = upper.strip_prefix("CUDA_PATH_V") else { return false };
    let mut parts = rest.split('_');
    let digits = |s: Option<&str>| s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
    digits(parts.next()) && digits(parts.next()) && parts.next().is_none()
}

/// The roots named by [`PATHS_VAR`] (`std::env::split_paths`; empty entries ignored).
fn extra_roots(env: &dyn Env) -> Vec<Candidate> {
    match nonempty(env.var(PATHS_VAR)) {
        Some(v) => std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).map(|p| Candidate::new(p, PATHS_VAR, true)).collect(),
        None => Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------
// Discovery
// ---------------------------------------------------------------------------------------

/// Finds the CUDA toolkits in [`default_roots`] and [`PATHS_VAR`]: deduplicated by
/// canonical path (compared case-insensitively on Windows; a `/usr/local/cuda` link to
/// `/usr/local/cuda-12.6` is one toolkit found by two names), sorted by version (unknown
/// last) then root. Roots that are missing or are not toolkits are left out; see
/// [`discover_all`] for why. Never fails.
pub fn discover(env: &dyn Env) -> Vec<Toolkit> {
    discover_all(env).toolkits
}

/// Like [`discover`], and also reports the explicitly named roots (variables) that were
/// skipped, with the reason [`inspect_root`] gives.
pub fn discover_all(env: &dyn Env) -> Discovery {
    let mut candidates = default_roots(env);
    candidates.extend(extra_roots(env));
    discover_from(candidates)
}

/// Inspects the given candidates in order, merging those with the same canonical path.
pub fn discover_from(candidates: Vec<Candidate>) -> Discovery {
    enum Seen {
        Toolkit(usize),
        Skipped(Option<usize>),
    }
    let mut seen: HashMap<OsString, Seen> = HashMap::new();
    let mut out = Discovery::default();
    let skip = |out: &mut Discovery, c: &Candidate, reason: String| -> Option<usize> {
        c.named.then(|| {
            out.skipped.push(Skipped { path: c.path.clone(), found_by: vec![c.found_by.clone()], reason });
            out.skipped.len() - 1
        })
    };
    for c in candidates {
        let canonical = match fs::canonicalize(&c.path) {
            Ok(p) => p,
            Err(_) => {
                // Report with inspect_root's precise reason (missing, unreadable, ...).
                if c.named {
                    let reason = match inspect_root(&c.path) {
                        Err(e) => e.to_string(),
                        Ok(_) => "cannot resolve its path".to_string(),
                    };
                    skip(&mut out, &c, reason);
                }
                continue;
            }
        };
        let key = dedup_key(&canonical);
        match seen.get_mut(&key) {
            Some(Seen::Toolkit(i)) => {
                let t = &mut out.toolkits[*i];
                if !t.found_by.contains(&c.found_by) {
                    t.found_by.push(c.found_by.clone());
                }
            }
            Some(Seen::Skipped(slot)) => match slot {
                Some(i) => {
                    let s = &mut out.skipped[*i];
                    if !s.found_by.contains(&c.found_by) {
                        s.found_by.push(c.found_by.clone());
                    }
                }
                None => {
                    if c.named {
                        let reason = inspect_root(&c.path).err().map(|e| e.to_string()).unwrap_or_default();
                        *slot = skip(&mut out, &c, reason);
                    }
                }
            },
            None => match inspect_root(&c.path) {
                Ok(mut t) => {
                    t.found_by.push(c.found_by.clone());
                    out.toolkits.push(t);
                    seen.insert(key, Seen::Toolkit(out.toolkits.len() - 1));
                }
                Err(e) => {
                    let slot = skip(&mut out, &c, e.to_string());
                    seen.insert(key, Seen::Skipped(slot));
                }
            },
        }
    }
    out.toolkits.sort_by(|a, b| (a.version.is_none(), &a.version, &a.root).cmp(&(b.version.is_none(), &b.version, &b.root)));
    out
}

fn dedup_key(canonical: &Path) -> OsString {
    if cfg!(windows) { OsString::from(canonical.to_string_lossy().to_lowercase()) } else { canonical.as_os_str().to_os_string() }
}

/// Removes the `\\?\` prefix `fs::canonicalize` adds on Windows (`\\?\C:\x` -> `C:\x`,
/// `\\?\UNC\server\share` -> `\\server\share`). Other strings are returned unchanged.
fn simplify_verbatim(p: &str) -> String {
    if let Some(rest) = p.strip_prefix(r"\\?\UNC\") {
        return format!(r"\\{rest}");
    }
    if let Some(rest) = p.strip_prefix(r"\\?\") {
        let b = rest.as_bytes();
        if b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
            return rest.to_string();
        }
    }
    p.to_string()
}

fn display_root(canonical: PathBuf) -> PathBuf {
    if cfg!(windows) {
        match canonical.to_str() {
            Some(s) => PathBuf::from(simplify_verbatim(s)),
            None => canonical,
        }
    } else {
        canonical
    }
}

// ---------------------------------------------------------------------------------------
// Inspecting one root
// ---------------------------------------------------------------------------------------

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
    let canonical = fs::canonicalize(path).map_err(io_err)?;
    fs::read_dir(&canonical).map_err(io_err)?;
    let root = display_root(canonical);

    let mut problems = Vec::new();
    let (version, version_source, has_version_file) = read_version(&root, &mut problems);
    let runtime = find_runtime(&root);
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
fn dir_entries(dir: &Path) -> Vec<(String, PathBuf)> {
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
    if windows {
        let lower = name.to_ascii_lowercase();
        let d = lower.strip_prefix("cudnn64_")?.strip_suffix(".dll")?;
        (!d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())).then(|| d.parse().ok())
    } else if name == "libcudnn.so" {
        Some(None)
    } else {
        let rest = name.strip_prefix("libcudnn.so.")?;
        Some(rest.split('.').next().and_then(|m| m.parse().ok()))
    }
}

fn is_cudnn_library(name: &str, windows: bool) -> bool {
    if windows {
        let lower = name.to_ascii_lowercase();
        lower.starts_with("cudnn") && lower.ends_with(".dll")
    } else {
        name.starts_with("libcudnn") && name.contains(".so")
    }
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
                    let v: Version = n.strip_prefix("libcudnn.so.")?.parse().ok()?;
                    (v.parts().len() >= 3 && Some(v.major()) == major.or(Some(v.major()))).then_some(v)
                })
            })
            .flatten();
        let (version, source, mut found) = choose_cudnn_version(versioninfo, header.as_ref().map(|(v, s)| (v.clone(), *s)), from_name);
        problems.append(&mut found);
        if let (Some(v), Some(m)) = (&version, major)
            && v.major() != m
        {
            problems.push(format!("{} is named for cuDNN {m} but its version is {v}", rel(root, &dispatcher)));
        }
        let cudnn_major = major.or(version.as_ref().map(Version::major));
        let has_sublibraries = libraries.iter().any(|n| dispatcher_major(n, windows).is_none());
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

/// Chooses a hand-copied cuDNN's version: the DLL's VERSIONINFO (4 parts, most precise),
/// else the header (3 parts), else the `libcudnn.so.X.Y.Z` file name. A header that
/// disagrees with the chosen version is reported. Returns `(version, source, problems)`.
fn choose_cudnn_version(versioninfo: Option<Version>, header: Option<(Version, &str)>, from_name: Option<Version>) -> (Option<Version>, String, Vec<String>) {
    let mut problems = Vec::new();
    let (version, source) = if let Some(v) = versioninfo {
        (Some(v), "VERSIONINFO".to_string())
    } else if let Some((v, s)) = &header {
        (Some(v.clone()), s.to_string())
    } else if let Some(v) = from_name.clone() {
        (Some(v), "file name".to_string())
    } else {
        (None, "unknown".to_string())
    };
    if let (Some(chosen), Some((h, hs))) = (&version, &header) {
        let (short, long) = if chosen.parts().len() <= h.parts().len() { (chosen, h) } else { (h, chosen) };
        if !long.starts_with(short) {
            problems.push(format!("cuDNN versions disagree: {source} says {chosen} but {hs} says {h} (a stale header or a mix of files)"));
        }
    }
    if source.starts_with("include/")
        && let (Some(chosen), Some(n)) = (&version, &from_name)
        && !n.starts_with(chosen)
    {
        problems.push(format!("cuDNN versions disagree: {source} says {chosen} but the library file name says {n}"));
    }
    (version, source, problems)
}

// ---------------------------------------------------------------------------------------
// Human output
// ---------------------------------------------------------------------------------------

/// The human output of `cuenv toolkits`: a table with the columns VERSION, ROOT, RUNTIME
/// (yes/no), CUDNN (the hand-copied cuDNN's version, `?` when unknown, `-` when none) and
/// FOUND BY, then one `warning:` line per problem. When `toolkits` is empty: a line saying
/// none were found and a `hint:` line naming [`PATHS_VAR`].
pub fn render_table(toolkits: &[Toolkit]) -> String {
    let mut out = String::new();
    if toolkits.is_empty() {
        let (sep, looked) = if cfg!(windows) {
            (";", r"%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\v*, CUDA_PATH, CUDA_PATH_V*")
        } else {
            (":", "/usr/local/cuda-*, /usr/local/cuda, /opt/cuda, CUDA_HOME, CUDA_PATH")
        };
        let _ = writeln!(out, "No CUDA toolkit found (looked in {looked} and {PATHS_VAR}).");
        let _ = writeln!(
            out,
            "hint: install the CUDA toolkit, or list toolkit folders in {PATHS_VAR} (separated by '{sep}'); \
             a toolkit folder holds version.json and bin/ or lib64/"
        );
        return out;
    }
    let header = ["VERSION", "ROOT", "RUNTIME", "CUDNN (BY HAND)", "FOUND BY"];
    let rows: Vec<[String; 5]> = toolkits
        .iter()
        .map(|t| {
            [
                t.version.as_ref().map_or("?".to_string(), |v| v.to_string()),
                t.root.display().to_string(),
                if t.runtime.is_some() { "yes" } else { "no" }.to_string(),
                match &t.hand_copied_cudnn {
                    None => "-".to_string(),
                    Some(c) => c.version.as_ref().map_or("?".to_string(), |v| v.to_string()),
                },
                t.found_by.join(", "),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut line = |cells: [&str; 5]| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                s.push_str(cell);
            } else {
                let _ = write!(s, "{cell}{}  ", " ".repeat(w - cell.chars().count()));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(header);
    for row in &rows {
        line([&row[0], &row[1], &row[2], &row[3], &row[4]]);
    }
    for t in toolkits {
        for p in &t.problems {
            let _ = writeln!(out, "warning: {}: {p}", t.root.display());
        }
    }
    out
}

/// [`render_table`] for a [`Discovery`], followed by one `note:` line per skipped named root
/// (`note: CUDA_PATH names C:\x, skipped: ...`).
pub fn render_discovery(d: &Discovery) -> String {
    let mut out = render_table(&d.toolkits);
    for s in &d.skipped {
        let _ = writeln!(out, "note: {} names {}, skipped: {}", s.found_by.join(", "), s.path.display(), s.reason);
    }
    out
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use tempfile::TempDir;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn version_json(v: &str) -> String {
        format!(
            r#"{{"cuda": {{"name": "CUDA SDK", "version": "{v}"}},
                "cuda_cudart": {{"name": "CUDA Runtime (cudart)", "version": "{v}"}}}}"#
        )
    }

    /// A Linux-layout toolkit with version.json and lib64/libcudart.so.<major>.
    fn linux_toolkit(dir: &Path, v: &str) {
        write(&dir.join("version.json"), &version_json(v));
        let major = v.split('.').next().unwrap();
        write(&dir.join("lib64").join(format!("libcudart.so.{major}")), "fake");
    }

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    fn canon(p: &Path) -> PathBuf {
        display_root(fs::canonicalize(p).unwrap())
    }

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
        let found = discover(&FakeEnv::new().set(PATHS_VAR, paths));
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].version, Some(v("12.1.0")));
        assert_eq!(found[1].version, None);
    }

    #[test]
    fn runtime_without_version_file() {
        let tmp = TempDir::new().unwrap();
        write(&tmp.path().join("targets/x86_64-linux/lib/libcudart.so.12.6.77"), "fake");
        let t = inspect_root(tmp.path()).unwrap();
        assert_eq!(t.version, None);
        assert_eq!(t.runtime, Some(canon(tmp.path()).join("targets/x86_64-linux/lib/libcudart.so.12.6.77")));
        assert!(!t.problems.iter().any(|p| p.contains("version")), "{:?}", t.problems);
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

    #[cfg(unix)]
    #[test]
    fn symlinked_root_is_one_toolkit_found_by_several_names() {
        let sys = TempDir::new().unwrap();
        let real = sys.path().join("usr/local/cuda-12.6");
        linux_toolkit(&real, "12.6.2");
        std::os::unix::fs::symlink("cuda-12.6", sys.path().join("usr/local/cuda")).unwrap();
        let old = sys.path().join("usr/local/cuda-11.8");
        linux_toolkit(&old, "11.8.0");
        fs::create_dir_all(sys.path().join("usr/local/cuda-notes")).unwrap(); // not a toolkit: silently skipped
        let env = FakeEnv::new().with_fixed_root(sys.path()).set("CUDA_HOME", sys.path().join("usr/local/cuda"));
        let d = discover_all(&env);
        assert_eq!(d.toolkits.len(), 2, "{d:?}");
        assert!(d.skipped.is_empty(), "{d:?}");
        assert_eq!(d.toolkits[0].version, Some(v("11.8.0")));
        assert_eq!(d.toolkits[0].found_by, ["/usr/local/cuda-*"]);
        assert_eq!(d.toolkits[1].root, canon(&real));
        assert_eq!(d.toolkits[1].found_by, ["/usr/local/cuda-*", "/usr/local/cuda", "CUDA_HOME"]);
    }

    #[cfg(windows)]
    #[test]
    fn windows_roots_differing_in_case_are_one_toolkit() {
        let tmp = TempDir::new().unwrap();
        let tk = tmp.path().join("v12.6");
        write(&tk.join("version.json"), &version_json("12.6.2"));
        write(&tk.join("bin/cudart64_12.dll"), "fake");
        let upper = PathBuf::from(tk.to_string_lossy().to_uppercase());
        let env = FakeEnv::new().set("CUDA_PATH", &tk).set("cuda_path_v12_6", upper);
        let found = discover_from(default_roots_windows(&env));
        assert_eq!(found.toolkits.len(), 1, "{found:?}");
        assert_eq!(found.toolkits[0].found_by, ["CUDA_PATH", "cuda_path_v12_6"]);
    }

    #[test]
    fn toolkit_paths_variable_with_two_roots() {
        let a = TempDir::new().unwrap();
        let b = TempDir::new().unwrap();
        linux_toolkit(a.path(), "12.6.2");
        linux_toolkit(b.path(), "11.8.0");
        let missing = a.path().join("missing");
        let paths = std::env::join_paths([a.path(), b.path(), missing.as_path(), a.path()]).unwrap();
        let d = discover_all(&FakeEnv::new().set(PATHS_VAR, paths));
        let versions: Vec<String> = d.toolkits.iter().map(|t| t.version.as_ref().unwrap().to_string()).collect();
        assert_eq!(versions, ["11.8.0", "12.6.2"]);
        assert!(d.toolkits.iter().all(|t| t.found_by == [PATHS_VAR]));
        assert_eq!(d.skipped.len(), 1);
        assert_eq!(d.skipped[0].path, missing);
        assert!(d.skipped[0].reason.contains("does not exist"), "{:?}", d.skipped);
        let text = render_discovery(&d);
        assert!(text.contains("note: CUENV_TOOLKIT_PATHS names"), "{text}");
        // Unset / empty variable: nothing.
        assert!(discover(&FakeEnv::new().set(PATHS_VAR, "")).is_empty());
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
    fn version_choice_prefers_versioninfo_and_reports_disagreement() {
        let (ver, src, p) = choose_cudnn_version(Some(v("9.5.0.50")), Some((v("9.5.0"), "include/cudnn_version.h")), None);
        assert_eq!((ver, src.as_str(), p.len()), (Some(v("9.5.0.50")), "VERSIONINFO", 0));
        let (ver, src, p) = choose_cudnn_version(Some(v("9.5.0.50")), Some((v("8.9.4"), "include/cudnn_version.h")), None);
        assert_eq!((ver, src.as_str()), (Some(v("9.5.0.50")), "VERSIONINFO"));
        assert_eq!(p.len(), 1);
        assert!(p[0].contains("VERSIONINFO says 9.5.0.50 but include/cudnn_version.h says 8.9.4"), "{p:?}");
        let (ver, src, p) = choose_cudnn_version(None, Some((v("8.9.4"), "include/cudnn_version.h")), Some(v("8.9.7")));
        assert_eq!((ver, src.as_str()), (Some(v("8.9.4")), "include/cudnn_version.h"));
        assert!(p[0].contains("file name says 8.9.7"), "{p:?}");
        let (ver, src, p) = choose_cudnn_version(None, None, None);
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

    #[test]
    fn windows_default_roots() {
        let pf = TempDir::new().unwrap();
        let cuda = pf.path().join("NVIDIA GPU Computing Toolkit/CUDA");
        for (dir, ver) in [("v11.8", "11.8.0"), ("v12.6", "12.6.2")] {
            write(&cuda.join(dir).join("version.json"), &version_json(ver));
            write(&cuda.join(dir).join("bin/cudart64_1.dll"), "fake");
        }
        let elsewhere = TempDir::new().unwrap();
        linux_toolkit(elsewhere.path(), "12.1.0");
        let env = FakeEnv::new()
            .set("ProgramFiles", pf.path())
            .set("CUDA_PATH", cuda.join("v12.6"))
            .set("CUDA_PATH_V12_6", cuda.join("v12.6"))
            .set("CUDA_PATH_V11_8", cuda.join("v11.8"))
            .set("CUDA_PATH_V12_1", elsewhere.path())
            .set("CUDA_PATH_VX_Y", "/ignored")
            .set("CUDA_PATH_V12_9", cuda.join("v12.9"));
        let cands = default_roots_windows(&env);
        assert_eq!(cands.iter().filter(|c| c.found_by == WINDOWS_GLOB_LABEL).count(), 2);
        assert!(!cands.iter().any(|c| c.found_by == "CUDA_PATH_VX_Y"));
        let d = discover_from(cands);
        let summary: Vec<(String, Vec<String>)> = d.toolkits.iter().map(|t| (t.version.as_ref().unwrap().to_string(), t.found_by.clone())).collect();
        assert_eq!(
            summary,
            [
                ("11.8.0".to_string(), vec![WINDOWS_GLOB_LABEL.to_string(), "CUDA_PATH_V11_8".into()]),
                ("12.1.0".to_string(), vec!["CUDA_PATH_V12_1".into()]),
                ("12.6.2".to_string(), vec![WINDOWS_GLOB_LABEL.to_string(), "CUDA_PATH".into(), "CUDA_PATH_V12_6".into()]),
            ]
        );
        assert_eq!(d.skipped.len(), 1);
        assert_eq!(d.skipped[0].found_by, ["CUDA_PATH_V12_9"]);
    }

    #[test]
    fn linux_default_roots_order_and_variables() {
        let env = FakeEnv::new().set("CUDA_HOME", "/a").set("CUDA_PATH", "/b").set("CUDA_PATH_V12_6", "/c");
        let labels: Vec<String> = default_roots_linux(&env).into_iter().map(|c| c.found_by).collect();
        assert_eq!(labels, ["CUDA_HOME", "CUDA_PATH"]);
        let sys = TempDir::new().unwrap();
        let labels: Vec<String> = default_roots_linux(&FakeEnv::new().with_fixed_root(sys.path())).into_iter().map(|c| c.found_by).collect();
        assert_eq!(labels, ["/usr/local/cuda", "/opt/cuda"]);
        assert!(discover_all(&FakeEnv::new().with_fixed_root(sys.path())).skipped.is_empty());
    }

    #[test]
    fn variable_names() {
        assert!(is_cuda_path_versioned("CUDA_PATH_V12_6"));
        assert!(is_cuda_path_versioned("cuda_path_v11_8"));
        assert!(!is_cuda_path_versioned("CUDA_PATH"));
        assert!(!is_cuda_path_versioned("CUDA_PATH_V12"));
        assert!(!is_cuda_path_versioned("CUDA_PATH_V12_6_1"));
        assert!(!is_cuda_path_versioned("CUDA_PATH_VX_Y"));
        assert_eq!(simplify_verbatim(r"\\?\C:\Program Files\x"), r"C:\Program Files\x");
        assert_eq!(simplify_verbatim(r"\\?\UNC\srv\share\x"), r"\\srv\share\x");
        assert_eq!(simplify_verbatim(r"\\?\Volume{abc}\x"), r"\\?\Volume{abc}\x");
        assert_eq!(simplify_verbatim("/usr/local"), "/usr/local");
    }

    #[test]
    fn table_and_json() {
        let tmp = TempDir::new().unwrap();
        linux_toolkit(tmp.path(), "12.6.2");
        write(&tmp.path().join("lib64/libcudnn.so.8.9.4"), "fake");
        write(&tmp.path().join("lib64/libcudnn.so.8"), "fake");
        write(&tmp.path().join("lib64/libcudnn_ops_infer.so.8"), "fake");
        let mut t = inspect_root(tmp.path()).unwrap();
        t.found_by.push(PATHS_VAR.into());
        let mut bare = t.clone();
        bare.version = None;
        bare.runtime = None;
        bare.hand_copied_cudnn = None;
        bare.problems.clear();
        let text = render_table(&[t.clone(), bare]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("VERSION  ROOT"), "{text}");
        assert!(lines[0].contains("RUNTIME") && lines[0].contains("CUDNN (BY HAND)") && lines[0].ends_with("FOUND BY"));
        assert!(lines[1].starts_with("12.6.2 ") && lines[1].contains(" yes ") && lines[1].contains(" 8.9.4 "), "{text}");
        assert!(lines[1].ends_with(PATHS_VAR));
        assert!(lines[2].starts_with("? ") && lines[2].contains(" no ") && lines[2].contains(" - "), "{text}");
        // Columns line up: ROOT starts at the same column on every row.
        let col = lines[0].find("ROOT").unwrap();
        assert_eq!(&lines[1][col..col + t.root.to_string_lossy().len()], t.root.to_string_lossy());
        assert!(lines[3..].iter().all(|l| l.starts_with("warning: ")), "{text}");

        let empty = render_table(&[]);
        assert!(empty.starts_with("No CUDA toolkit found"), "{empty}");
        assert!(empty.contains("hint: ") && empty.contains(PATHS_VAR));

        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["version"], "12.6.2");
        assert_eq!(json["version_source"], "version.json");
        assert_eq!(json["found_by"][0], PATHS_VAR);
        assert_eq!(json["root"], t.root.to_string_lossy().as_ref());
        assert!(json["runtime"].as_str().unwrap().ends_with("libcudart.so.12"));
        assert!(json["platform"].is_null());
        assert_eq!(json["hand_copied_cudnn"]["version"], "8.9.4");
        assert_eq!(json["hand_copied_cudnn"]["source"], "file name");
        assert!(json["problems"].is_array());
    }
}
