//! The CUDA libraries around cuDNN (its *companions*: cuBLAS, cuBLASLt, NVRTC and NVRTC's
//! builtins, nvJitLink and the libraries that link it), and the one rule set that judges them
//! (decisions.md 7; docs/loader.md "CUDA library families", F1-F4). `check` (through the
//! probe's observations), `doctor`, `doctor --pid` and `store add` (what it can see: the
//! names) apply these functions; none has a rule of its own.
//!
//! Everything is read from the files, never from a list of releases:
//! - a library's *family* and major come from its file name (`libcublasLt.so.12`,
//!   `cufft64_11.dll`, `nvJitLink_120_0.dll`), or, for an unversioned name, from the file it
//!   resolves to (`libnvrtc.so -> libnvrtc.so.11.2.152`) or its `DT_SONAME` ([`of_file`]);
//! - which companions cuDNN loads, and by which names, is what its files name
//!   ([`crate::sys::binfmt::References::companions`]): 9.x `libcudnn_graph.so.9` names
//!   `libnvrtc.so.%d` (filled with the CUDA major it was built for) and the unversioned
//!   fallback `libnvrtc.so`, tried in that order (its `nvrtcHelper::load`; docs/facts.md §10);
//!   the others name `libcublasLt.so.12`;
//! - the builtins NVRTC needs are the ones its own file names (`libnvrtc-builtins.so.12.6`
//!   in `libnvrtc.so.12` 12.6.77);
//! - what a library needs of nvJitLink is the versioned symbols it imports
//!   (`__nvJitLinkAddData_12_6`), and what an nvJitLink gives is what it exports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use crate::error::Rule;
use crate::sys::binfmt;

/// What a CUDA library's file name says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaLib {
    /// The family, as its name spells it (`cublasLt`, `nvrtc`, `nvrtc-builtins`,
    /// `nvJitLink`, `cufft`); lowercased for Windows names. The `alt` variant of NVRTC
    /// (`libnvrtc.alt.so.12`) is of the same family.
    pub family: String,
    /// The major the name carries (`12`; `11` for `cufft64_11.dll`, whose family numbers
    /// itself, not CUDA).
    pub major: u64,
    /// The minor, where the name carries one (`libnvrtc-builtins.so.12.6`,
    /// `nvrtc-builtins64_126.dll`, `cudart64_110.dll`).
    pub minor: Option<u64>,
}

impl CudaLib {
    /// `cublasLt 12`, `nvrtc-builtins 12.6`.
    pub fn describe(&self) -> String {
        match self.minor {
            Some(m) => format!("{} {}.{m}", self.family, self.major),
            None => format!("{} {}", self.family, self.major),
        }
    }

    /// Whether the family is one of the CUDA toolkit's libraries ([`FAMILIES`], and NPP's
    /// `npp*`): a `cu`/`nv` prefix alone does not make one (`libcurl.so.4`, `libnvpair.so.3`).
    fn is_toolkit_library(&self) -> bool {
        let f = self.family.to_ascii_lowercase();
        f.starts_with("npp") || FAMILIES.iter().any(|k| k.eq_ignore_ascii_case(&f))
    }
}

/// The library families of the CUDA toolkit that these rules recognise by name: the shared
/// libraries of the components in NVIDIA's redistributable manifest for CUDA 12.6 and 13.0
/// (`redistrib_12.6.3.json`, `redistrib_13.0.0.json` under
/// <https://developer.download.nvidia.com/compute/cuda/redist/>; docs/facts.md §10b). A file
/// of another family is no CUDA library to these rules (not judged, never "fine").
pub const FAMILIES: &[&str] = &[
    "cudart",
    "cublas",
    "cublasLt",
    "nvblas",
    "cufft",
    "cufftw",
    "curand",
    "cusolver",
    "cusolverMg",
    "cusparse",
    "cupti",
    "nvrtc",
    "nvrtc-builtins",
    "nvJitLink",
    "nvToolsExt",
    "nvjpeg",
    "nvfatbin",
    "nvptxcompiler",
    "cufile",
    "cudla",
];

static LINUX: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"^lib((?:cu|nv)[A-Za-z]+(?:-builtins)?)(?:\.alt)?\.so\.(\d+)(?:\.(\d+))?(?:\.\d+)*$").unwrap());
static WINDOWS: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r"(?i)^((?:cu|nv)[a-z]+(?:-builtins)??)(?:64)?_(\d{1,3})(?:_\d+)?\.dll$").unwrap());

/// The CUDA library a file name names, or `None` for anything else (cuDNN, the driver,
/// `libnvidia-*`, unversioned `libnvrtc.so`: see [`of_file`]). Windows numbers: two digits
/// are the major (`cublas64_12.dll`), three the major and a minor digit (`nvrtc64_120_0.dll`,
/// `nvrtc-builtins64_126.dll`, `cudart64_110.dll`).
pub fn parse(file_name: &str) -> Option<CudaLib> {
    let lib = if let Some(c) = LINUX.captures(file_name) {
        CudaLib { family: c[1].to_string(), major: c[2].parse().ok()?, minor: c.get(3).and_then(|m| m.as_str().parse().ok()) }
    } else {
        let c = WINDOWS.captures(file_name)?;
        let digits = &c[2];
        let n: u64 = digits.parse().ok()?;
        let family = c[1].to_ascii_lowercase();
        let family = match family.as_str() {
            "nvjitlink" => "nvJitLink".to_string(),
            "cublaslt" => "cublasLt".to_string(),
            _ => family,
        };
        if digits.len() == 3 { CudaLib { family, major: n / 10, minor: Some(n % 10) } } else { CudaLib { family, major: n, minor: None } }
    };
    lib.is_toolkit_library().then_some(lib)
}

/// The CUDA library the file at `path` is: the name of the file it resolves to
/// (`libnvrtc.so -> libnvrtc.so.11.2.152` is NVRTC 11.2), else its own name, else its
/// `DT_SONAME`. `None` when none of them names a CUDA library.
pub fn of_file(path: &Path) -> Option<CudaLib> {
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    std::fs::canonicalize(path)
        .ok()
        .and_then(|p| name(&p))
        .and_then(|n| parse(&n))
        .or_else(|| name(path).and_then(|n| parse(&n)))
        .or_else(|| binfmt::elf_dynamic(path).ok().flatten().and_then(|d| d.soname).and_then(|s| parse(&s)))
}

/// The cuDNN `major` library files of this host's naming in `dir` (one path per file, links
/// to the same file once), sorted: the files [`wanted_by`] reads for a dispatcher there.
pub fn cudnn_files(dir: &Path, major: u64) -> Vec<PathBuf> {
    use crate::cudnn::libname::{self, Os};
    let Ok(rd) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| libname::parse(&n.to_string_lossy())).is_some_and(|l| l.os == Os::HOST && l.major == Some(major)))
        .collect();
    paths.sort();
    let mut seen = std::collections::HashSet::new();
    paths.retain(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
    paths
}

/// One companion cuDNN loads by name at run time, and the names it tries, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wanted {
    /// The family (`cublasLt`, `nvrtc`).
    pub family: String,
    /// The CUDA major the set was built for, which the file must carry.
    pub major: u64,
    /// The names tried, in order (`libnvrtc.so.12`, then `libnvrtc.so`).
    pub names: Vec<String>,
    /// The library of the set whose files name it (the first one).
    pub asked_by: PathBuf,
    /// A name cuDNN also tries that its files do not spell out: 8.8.0.121 for CUDA 11 builds
    /// `libnvrtc.so.%d.%d` (major and minor of its build, which no name in the files tells),
    /// written with the major filled (`libnvrtc.so.11.%d`). When none of `names` is found,
    /// such a companion is "not verified", never a problem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untold: Option<String>,
}

/// The companions the cuDNN library files `files` load at run time, read from their names
/// ([`binfmt::References::companions`]): each family once, with the names tried in order.
/// A name completed at run time (`libnvrtc.so.%d`, `nvrtc64_%d_0.dll`) is completed with the
/// CUDA major the set's other names carry (`libcublasLt.so.12`: 12; on Windows `%d` is the
/// major and a `0`, `nvrtc64_120_0.dll`, and `112` for CUDA 11, NVRTC's own names since 11.2);
/// when no name tells that major, such a name is left out. Unversioned names
/// (`libnvrtc.so`) come after the versioned ones of their family. The CUDA runtime is left
/// out (the probe loads and judges it itself). Unreadable files name nothing.
pub fn wanted_by(files: &[PathBuf]) -> Vec<Wanted> {
    let refs: Vec<(PathBuf, binfmt::References)> = files.iter().filter_map(|f| binfmt::referenced_libraries(f).ok().map(|r| (f.clone(), r))).collect();
    let Some(cuda_major) = refs.iter().flat_map(|(_, r)| r.cuda.iter()).find(|(_, n)| !n.to_ascii_lowercase().contains("cudart")).map(|(m, _)| *m) else {
        return Vec::new();
    };
    let mut out: Vec<Wanted> = Vec::new();
    for (file, r) in &refs {
        for raw in &r.companions {
            if raw.matches("%d").count() > 1 {
                let filled = raw.replacen("%d", &cuda_major.to_string(), 1);
                let stem = filled.split(".so").next().unwrap_or_default().trim_start_matches("lib").to_string();
                match out.iter_mut().find(|w| w.family == stem) {
                    Some(w) => w.untold = Some(filled),
                    None => out.push(Wanted { family: stem, major: cuda_major, names: Vec::new(), asked_by: file.clone(), untold: Some(filled) }),
                }
                continue;
            }
            let Some((family, name, versioned)) = complete(raw, cuda_major) else { continue };
            if family.ends_with("-builtins") || family == "nvJitLink" {
                continue;
            }
            match out.iter_mut().find(|w| w.family == family) {
                Some(w) if !w.names.contains(&name) => {
                    let at = if versioned { w.names.iter().position(|n| parse(n).is_none()).unwrap_or(w.names.len()) } else { w.names.len() };
                    w.names.insert(at, name);
                }
                Some(_) => {}
                None => out.push(Wanted { family, major: cuda_major, names: vec![name], asked_by: file.clone(), untold: None }),
            }
        }
    }
    out
}

/// A name as written in a library, completed: `(family, name, versioned)`.
fn complete(raw: &str, cuda_major: u64) -> Option<(String, String, bool)> {
    let windows = raw.to_ascii_lowercase().ends_with(".dll");
    let digits = if windows { if cuda_major == 11 { "112".to_string() } else { format!("{cuda_major}0") } } else { cuda_major.to_string() };
    let name = raw.replace("%d", &digits);
    if let Some(l) = parse(&name) {
        return Some((l.family, name, true));
    }
    // Unversioned Linux names: `libnvrtc.so`, `libcublasLt.so`.
    let stem = name.strip_prefix("lib")?.strip_suffix(".so")?;
    let family = stem.strip_suffix(".alt").unwrap_or(stem);
    Some((family.to_string(), name, false))
}

/// The builtins library the NVRTC file at `nvrtc` names (`libnvrtc-builtins.so.12.6`,
/// `nvrtc-builtins64_126.dll`): the one it loads when it compiles. `None` when it names none
/// or cannot be read.
pub fn builtins_named_by(nvrtc: &Path) -> Option<String> {
    binfmt::referenced_libraries(nvrtc).ok()?.companions.into_iter().find(|n| parse(n).is_some_and(|l| l.family.ends_with("-builtins")))
}

/// The version `(major, minor)` an nvJitLink entry point is for: `__nvJitLinkAddData_12_6`
/// gives `(12, 6)`; `None` for other names.
pub fn jitlink_symbol_version(symbol: &str) -> Option<(u64, u64)> {
    let rest = symbol.strip_prefix("__nvJitLink")?;
    let mut parts = rest.rsplitn(3, '_');
    let minor = parts.next()?.parse().ok()?;
    let major = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The versioned nvJitLink entry points the file at `path` imports (empty when none, or
/// unreadable).
pub fn jitlink_needs(path: &Path) -> Vec<String> {
    binfmt::imported_symbols(path).map(|v| v.into_iter().filter(|s| jitlink_symbol_version(s).is_some()).collect()).unwrap_or_default()
}

/// The versioned nvJitLink entry points the nvJitLink file at `path` exports.
pub fn jitlink_gives(path: &Path) -> Vec<String> {
    binfmt::exported_names(path).map(|v| v.into_iter().filter(|s| jitlink_symbol_version(s).is_some()).collect()).unwrap_or_default()
}

/// One verdict of this rule set: always a problem (a process that has it fails when it uses
/// the library), with the rule's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// F1-F4 (docs/loader.md).
    pub rule: Rule,
    /// What is wrong, naming the files.
    pub message: String,
    /// What to do next.
    pub hint: String,
}

/// What the probe observed of one companion: loaded by each of its names in turn, in the
/// environment of the process under check (its activation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// What cuDNN asks for.
    pub wanted: Wanted,
    /// The name that loaded, if one did.
    pub loaded: Option<String>,
    /// The file the loader mapped for it (symlinks resolved).
    pub path: Option<String>,
    /// The loader's words for the last name tried, when none loaded.
    pub error: Option<String>,
    /// For NVRTC: `nvrtcVersion()` as `major.minor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// For NVRTC: compiling a trivial program (no GPU needed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile: Option<Compile>,
}

/// NVRTC compiling `extern "C" __global__ void cuenv_k() {}` (`nvrtcCreateProgram`,
/// `nvrtcCompileProgram`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compile {
    /// The `nvrtcResult` (0 = `NVRTC_SUCCESS`; 7 = `NVRTC_ERROR_BUILTIN_OPERATION_FAILURE`).
    pub code: i64,
    /// `nvrtcGetErrorString`'s name for it.
    pub name: String,
    /// The program log, when NVRTC wrote one (trimmed).
    pub log: String,
    /// Wall time of create + compile + destroy, in milliseconds.
    pub ms: f64,
}

fn var() -> &'static str {
    if cfg!(windows) { "PATH" } else { "LD_LIBRARY_PATH" }
}

/// Where a family's files come from, for hints.
fn wheel_of(family: &str, major: u64) -> String {
    match family {
        "nvrtc" | "nvrtc-builtins" => format!("nvidia-cuda-nvrtc-cu{major}"),
        "cublas" | "cublasLt" => format!("nvidia-cublas-cu{major}"),
        "nvJitLink" => format!("nvidia-nvjitlink-cu{major}"),
        other => format!("nvidia-{}-cu{major}", other.to_ascii_lowercase()),
    }
}

/// F4 (and F2 for NVRTC): the probe's observations `loads`, judged. `also` gives a second
/// chance to a companion no name loaded by: the file the loader model (docs/loader.md L1)
/// says the asking library would find itself (its `DT_RUNPATH`, which a by-name load from the
/// probe does not use), or `None`.
pub fn judge_loads(loads: &[Load], also: impl Fn(&Wanted) -> Option<PathBuf>) -> Vec<Verdict> {
    let mut out = Vec::new();
    for l in loads {
        let w = &l.wanted;
        let asked = w.asked_by.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let path = match &l.path {
            Some(p) => PathBuf::from(p),
            None => match also(w) {
                Some(p) => p,
                // cuDNN may find it by the name its files do not tell: not verified.
                None if w.untold.is_some() => continue,
                None => {
                    out.push(Verdict {
                        rule: Rule::CompanionMissing,
                        message: format!(
                            "cuDNN loads {} at run time ({} names {}), and the loader finds none{}: cuDNN fails when a network needs it",
                            w.family,
                            asked,
                            w.names.join(", then "),
                            l.error.as_deref().map(|e| format!(" ({e})")).unwrap_or_default()
                        ),
                        hint: format!(
                            "put the lib folder of a CUDA {} toolkit (or of the {} wheel) on {}; a cuenv profile's toolkit root gives it when it holds {}",
                            w.major,
                            wheel_of(&w.family, w.major),
                            var(),
                            w.names.first().map(String::as_str).unwrap_or(&w.family)
                        ),
                    });
                    continue;
                }
            },
        };
        if let Some(got) = of_file(&path)
            && got.major != w.major
        {
            out.push(Verdict {
                rule: Rule::CompanionMissing,
                message: format!(
                    "cuDNN, built for CUDA {}, loads {} as {}, and that name gives {}, a {} library: {} needs the CUDA {} one",
                    w.major,
                    w.family,
                    l.loaded.as_deref().unwrap_or(&w.family),
                    path.display(),
                    got.describe(),
                    asked,
                    w.major
                ),
                hint: format!(
                    "put a folder holding {} (the {} wheel, or a CUDA {} toolkit's lib) ahead of {} on {}",
                    w.names.first().map(String::as_str).unwrap_or(&w.family),
                    wheel_of(&w.family, w.major),
                    w.major,
                    path.parent().unwrap_or(&path).display(),
                    var()
                ),
            });
            continue;
        }
        if let Some(c) = l.compile.as_ref().filter(|c| c.code != 0) {
            let builtins = builtins_named_by(&path);
            out.push(Verdict {
                rule: Rule::BuiltinsOfNvrtc,
                message: format!(
                    "NVRTC {} cannot compile a trivial program: nvrtcCompileProgram returned {} ({}){}{}",
                    path.display(),
                    c.name,
                    c.code,
                    builtins
                        .as_deref()
                        .map(|b| format!("; it loads {b}, which must be of its own release and beside it or on the loader's path"))
                        .unwrap_or_default(),
                    if c.log.is_empty() { String::new() } else { format!(": {}", c.log) }
                ),
                hint: match builtins {
                    Some(b) => format!(
                        "put {b} of the same NVRTC release next to {} (reinstall the {} wheel or the toolkit's NVRTC)",
                        path.display(),
                        wheel_of("nvrtc", w.major)
                    ),
                    None => format!("reinstall NVRTC ({}) so that its builtins library is beside it", wheel_of("nvrtc", w.major)),
                },
            });
        }
    }
    out
}

/// F1, F2 and F3 over the files mapped into one process (`mapped`: any files; those that are
/// no CUDA library are ignored): one major per family; builtins of the release NVRTC names;
/// every versioned nvJitLink entry point a mapped library imports given by the nvJitLink
/// mapped.
pub fn judge_mapped(mapped: &[PathBuf]) -> Vec<Verdict> {
    let libs: Vec<(PathBuf, CudaLib)> = mapped.iter().filter_map(|p| of_file(p).map(|l| (p.clone(), l))).collect();
    let mut out = Vec::new();
    // F1: one major per family (the alt NVRTC is the same family).
    let mut by_family: BTreeMap<&str, Vec<&(PathBuf, CudaLib)>> = BTreeMap::new();
    for l in &libs {
        by_family.entry(l.1.family.as_str()).or_default().push(l);
    }
    for (family, files) in &by_family {
        let mut majors: Vec<u64> = files.iter().map(|(_, l)| l.major).collect();
        majors.sort();
        majors.dedup();
        if majors.len() > 1 {
            let list: Vec<String> = files.iter().map(|(p, l)| format!("{} ({})", p.display(), l.describe())).collect();
            out.push(Verdict {
                rule: Rule::OneMajorPerFamily,
                message: format!("one process has {family} of {} majors mapped: {}", majors.len(), list.join(", ")),
                hint: format!(
                    "one process can use one {family} major: make every library come from one CUDA major (a profile's toolkit root; remove the other folder from {})",
                    var()
                ),
            });
        }
    }
    // F2: the builtins mapped are the ones NVRTC names.
    for (p, l) in &libs {
        if l.family != "nvrtc" {
            continue;
        }
        let Some(want) = builtins_named_by(p) else { continue };
        let Some(want_lib) = parse(&want) else { continue };
        for (bp, bl) in libs.iter().filter(|(_, b)| b.family == "nvrtc-builtins") {
            if (bl.major, bl.minor) != (want_lib.major, want_lib.minor) {
                out.push(Verdict {
                    rule: Rule::BuiltinsOfNvrtc,
                    message: format!("NVRTC {} names {want}, and the process has {} ({}) mapped instead", p.display(), bp.display(), bl.describe()),
                    hint: format!("put {want} of NVRTC's own release beside {}", p.display()),
                });
            }
        }
    }
    // F3: nvJitLink gives what its users import.
    let jit: Vec<&(PathBuf, CudaLib)> = libs.iter().filter(|(_, l)| l.family == "nvJitLink").collect();
    if !jit.is_empty() {
        let gives: Vec<String> = jit.iter().flat_map(|(p, _)| jitlink_gives(p)).collect();
        for (p, l) in libs.iter().filter(|(_, l)| l.family != "nvJitLink") {
            if let Some(v) = jitlink_older(p, &gives, jit[0].0.as_path()) {
                let _ = l;
                out.push(v);
            }
        }
    }
    out
}

/// F3 for one user: the versioned nvJitLink entry points `user` imports that `gives` (what
/// the nvJitLink at `jitlink` exports) lacks, as a verdict.
fn jitlink_older(user: &Path, gives: &[String], jitlink: &Path) -> Option<Verdict> {
    let needs = jitlink_needs(user);
    let missing: Vec<&String> = needs.iter().filter(|s| !gives.contains(s)).collect();
    if missing.is_empty() {
        return None;
    }
    let newest = missing.iter().filter_map(|s| jitlink_symbol_version(s)).max()?;
    let has = gives.iter().filter_map(|s| jitlink_symbol_version(s)).max();
    let shown: Vec<&str> = missing.iter().take(3).map(|s| s.as_str()).collect();
    Some(Verdict {
        rule: Rule::JitLinkOlderThanUser,
        message: format!(
            "{} needs nvJitLink {}.{} or later ({}{}), and the nvJitLink it gets, {}, is {}: loading it fails with an undefined symbol",
            user.display(),
            newest.0,
            newest.1,
            shown.join(", "),
            if missing.len() > 3 { format!(" and {} more", missing.len() - 3) } else { String::new() },
            jitlink.display(),
            has.map(|(a, b)| format!("{a}.{b}")).unwrap_or_else(|| "of no version it can tell".into())
        ),
        hint: format!(
            "install an nvJitLink {}.{} or later ({} >= {}.{}) and put its folder ahead of {} on {}",
            newest.0,
            newest.1,
            wheel_of("nvJitLink", newest.0),
            newest.0,
            newest.1,
            jitlink.parent().unwrap_or(jitlink).display(),
            var()
        ),
    })
}

/// F3 over folders without loading anything: every CUDA library in `dirs` that imports
/// versioned nvJitLink entry points, against the nvJitLink of its major that `find` says it
/// gets (`find(name, asker)`: the loader model's pick for a by-name load of `name` from
/// `asker`). A user whose nvJitLink is not found is left to the loader (F4 is about cuDNN's
/// companions; the process fails to load such a library with its own words).
pub fn judge_jitlink_users(dirs: &[PathBuf], find: impl Fn(&str, &Path) -> Option<PathBuf>) -> Vec<Verdict> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(d) else { continue };
        let mut names: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        names.sort();
        for p in names {
            let Some(l) = p.file_name().and_then(|n| parse(&n.to_string_lossy())) else { continue };
            if l.family == "nvJitLink" || !seen.insert(std::fs::canonicalize(&p).unwrap_or_else(|_| p.clone())) {
                continue;
            }
            let needs = jitlink_needs(&p);
            let Some(major) = needs.iter().filter_map(|s| jitlink_symbol_version(s)).map(|(m, _)| m).max() else { continue };
            let name = if cfg!(windows) { format!("nvJitLink_{major}0_0.dll") } else { format!("libnvJitLink.so.{major}") };
            let Some(jit) = find(&name, &p) else { continue };
            out.extend(jitlink_older(&p, &jitlink_gives(&jit), &jit));
        }
    }
    out
}

/// Where a by-name load of `name` from the library `asker` finds it, as far as these rules
/// model it (docs/loader.md L1, F4): the folders of the loader's variable `dirs` in order,
/// then the folders of `asker`'s `DT_RUNPATH` (`$ORIGIN` expanded: the wheels'
/// `$ORIGIN/../../cublas/lib`; an ELF file only). The ld.so cache and the default folders are left out (a CUDA
/// library there is found by the probe's own load, which is what `check` and `doctor`
/// observe). `None` when none holds it.
pub fn search(dirs: &[PathBuf], name: &str, asker: &Path) -> Option<PathBuf> {
    let hit = |d: &Path| {
        let f = d.join(name);
        (!d.as_os_str().is_empty() && f.is_file()).then_some(f)
    };
    if let Some(f) = dirs.iter().find_map(|d| hit(d)) {
        return Some(f);
    }
    let origin = asker.parent()?.to_string_lossy().into_owned();
    let runpath = binfmt::elf_dynamic(asker).ok().flatten().and_then(|d| d.runpath).unwrap_or_default();
    runpath.iter().filter(|e| !e.is_empty()).find_map(|e| hit(Path::new(&e.replace("${ORIGIN}", &origin).replace("$ORIGIN", &origin))))
}

/// What the model ([`search`]) says each companion the cuDNN files `set_files` name resolves
/// to with the loader's folders `dirs`, as [`Load`]s without observations (no compile); a
/// family some file of `mapped` already is (a process that loaded it) takes that file.
pub fn model_loads(set_files: &[PathBuf], dirs: &[PathBuf], mapped: &[PathBuf]) -> Vec<Load> {
    wanted_by(set_files)
        .into_iter()
        .map(|w| {
            let already = mapped
                .iter()
                .find(|p| of_file(p).is_some_and(|l| l.family == w.family))
                .map(|p| (p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), p.clone()));
            let found = already.or_else(|| w.names.iter().find_map(|n| search(dirs, n, &w.asked_by).map(|p| (n.clone(), p))));
            Load {
                loaded: found.as_ref().map(|(n, _)| n.clone()),
                path: found.map(|(_, p)| p.to_string_lossy().into_owned()),
                error: None,
                version: None,
                compile: None,
                wanted: w,
            }
        })
        .collect()
}

/// F2 without compiling: the builtins the NVRTC file `nvrtc` names, looked up with [`search`]
/// (NVRTC's `DT_RUNPATH` is `$ORIGIN`); a verdict when none is found.
pub fn builtins_missing(nvrtc: &Path, dirs: &[PathBuf]) -> Option<Verdict> {
    let want = builtins_named_by(nvrtc)?;
    if search(dirs, &want, nvrtc).is_some() {
        return None;
    }
    let beside: Vec<String> = std::fs::read_dir(nvrtc.parent()?)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| parse(n).is_some_and(|l| l.family == "nvrtc-builtins"))
        .collect();
    Some(Verdict {
        rule: Rule::BuiltinsOfNvrtc,
        message: format!(
            "NVRTC {} loads {want} when it compiles, and no folder its loader searches holds it{}: nvrtcCompileProgram fails (NVRTC_ERROR_BUILTIN_OPERATION_FAILURE)",
            nvrtc.display(),
            if beside.is_empty() { String::new() } else { format!(" (beside it: {}, which is not that name)", beside.join(", ")) }
        ),
        hint: format!("put {want} of the same NVRTC release next to {}", nvrtc.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_tell_family_and_major() {
        let l = parse("libcublasLt.so.12").unwrap();
        assert_eq!((l.family.as_str(), l.major, l.minor), ("cublasLt", 12, None));
        let l = parse("libnvrtc-builtins.so.12.6").unwrap();
        assert_eq!((l.family.as_str(), l.major, l.minor), ("nvrtc-builtins", 12, Some(6)));
        let l = parse("libnvrtc-builtins.alt.so.12.8").unwrap();
        assert_eq!((l.family.as_str(), l.major, l.minor), ("nvrtc-builtins", 12, Some(8)));
        assert_eq!(parse("libnvrtc.alt.so.12").unwrap().family, "nvrtc");
        assert_eq!(parse("libnvrtc.so.11.2.152").unwrap().major, 11);
        let l = parse("nvrtc64_120_0.dll").unwrap();
        assert_eq!((l.family.as_str(), l.major, l.minor), ("nvrtc", 12, Some(0)));
        assert_eq!(parse("nvrtc-builtins64_126.dll").unwrap().describe(), "nvrtc-builtins 12.6");
        assert_eq!(parse("nvJitLink_120_0.dll").unwrap().family, "nvJitLink");
        assert_eq!(parse("cufft64_11.dll").unwrap().describe(), "cufft 11");
        assert_eq!(parse("CUBLASLT64_12.DLL").unwrap().family, "cublasLt");
        assert_eq!(parse("libnvJitLink.so.12").unwrap().family, "nvJitLink");
        for not in [
            "libcudnn.so.9",
            "libcudnn_ops.so.9",
            "cudnn64_9.dll",
            "libcuda.so.1",
            "nvcuda.dll",
            "libnvidia-ml.so.1",
            "libnvrtc.so",
            "libz.so.1",
            "zlibwapi.dll",
            "libcurl.so.4",
            "libnvpair.so.3",
            "libcups.so.2",
        ] {
            assert_eq!(parse(not), None, "{not}");
        }
    }

    #[test]
    fn jitlink_symbols_carry_their_version() {
        assert_eq!(jitlink_symbol_version("__nvJitLinkAddData_12_6"), Some((12, 6)));
        assert_eq!(jitlink_symbol_version("__nvJitLinkCreate_13_0"), Some((13, 0)));
        assert_eq!(jitlink_symbol_version("nvJitLinkCreate"), None);
        assert_eq!(jitlink_symbol_version("__nvJitLinkVersion"), None);
    }

    #[test]
    fn templates_are_completed_and_unversioned_names_come_last() {
        assert_eq!(complete("libnvrtc.so.%d", 12), Some(("nvrtc".into(), "libnvrtc.so.12".into(), true)));
        assert_eq!(complete("libnvrtc.so", 12), Some(("nvrtc".into(), "libnvrtc.so".into(), false)));
        assert_eq!(complete("nvrtc64_%d_0.dll", 12), Some(("nvrtc".into(), "nvrtc64_120_0.dll".into(), true)));
        assert_eq!(complete("nvrtc64_%d_0.dll", 11), Some(("nvrtc".into(), "nvrtc64_112_0.dll".into(), true)));
        assert_eq!(complete("libcublasLt.so.12", 12), Some(("cublasLt".into(), "libcublasLt.so.12".into(), true)));
    }
}
