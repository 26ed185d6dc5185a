//! TransformerEngine's cuDNN finder, read from the installed
//! `transformer_engine/common/__init__.py` (docs/loader.md C6). TransformerEngine opens cuDNN
//! itself at `import transformer_engine`, and its releases search in three different orders
//! (read from the real `transformer_engine` wheels on PyPI):
//!
//! - 1.11 to 2.3, `_load_cudnn`: the wheel's `nvidia/cudnn/lib/libcudnn.so.*[0-9]` under
//!   `sysconfig.get_path("purelib")` (exactly one, else an `AssertionError`), then the first
//!   of `CUDNN_HOME` / `CUDNN_PATH` that is set, then the first of `CUDA_HOME` / `CUDA_PATH`,
//!   else `/usr/local/cuda`, each globbed `<root>/**/libcudnn.so*` and sorted by file name
//!   descending, then `ctypes.CDLL("libcudnn.so")` by name;
//! - 2.5 to 2.10, `_load_cudnn`: the two roots first, then every `lib*.so.*[0-9]` of the
//!   wheel's `nvidia/cudnn/lib`, then (2.7 and later) the first `ldconfig -p` line naming
//!   `libcudnn`, then the load by name;
//! - 2.14 and later, `_load_cuda_library("cudnn")`: `CUDNN_HOME`, `CUDNN_PATH`, `CUDA_HOME`,
//!   `CUDA_PATH`, `/usr/local/cuda` each tried in turn (`stub` paths dropped), then the load by
//!   name, then the wheels (`nvidia/cu13/cudnn/lib`, `nvidia/cu13/lib`, `nvidia/cudnn/lib`,
//!   `nvidia/cuda_cudnn/lib`).
//!
//! Every step but the load by name opens its file **by full path** (`ctypes.CDLL(path,
//! RTLD_GLOBAL)`). The file is not matched against a list of releases: the steps are read from
//! the function's text (its `os.environ.get`, `glob.glob`, `ldconfig` and `ctypes.CDLL` calls,
//! in the order written), and a text with a call cuenv does not account for is "not verified".

use std::path::{Path, PathBuf};

use super::{Finder, Load, Scene, canon};
use crate::cudnn::libname;
use crate::doctor::loader::{self, Object};
use crate::doctor::{Finding, Severity};
use crate::pyenv::PyEnv;

/// One step of TransformerEngine's cuDNN search, in its order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TeStep {
    /// Glob `<root>/**/<pattern>` (Python's recursive glob), sorted by file name descending,
    /// the first loaded by full path. `roots` are tried in order: with `first_set`, only the
    /// first root whose variable is set (`os.environ.get(a) or os.environ.get(b) or default`);
    /// otherwise each set one in turn until one yields a file. A root is a variable name
    /// (`CUDNN_HOME`) or, for a literal, a path (`/usr/local/cuda`).
    Roots { roots: Vec<Root>, first_set: bool, pattern: String, drop_stubs: bool },
    /// The wheel's dispatcher, `<purelib>/<dir>/<pattern>`: exactly one match is loaded by full
    /// path; more than one raises `AssertionError` at import.
    WheelDispatcher { dir: String, pattern: String },
    /// `<purelib>/nvidia/<dir>/<pattern>` for each (dir, pattern) in turn: every match of the
    /// first that has any is loaded by full path (the dispatcher and its sub-libraries).
    Wheels { globs: Vec<(String, String)> },
    /// `ldconfig -p` (through `grep <grep>` when given): the first line naming `libcudnn`
    /// (`"libcudnn" in line and "=>" in line`), its path loaded by full path.
    Ldcache { grep: Option<String> },
    /// `ctypes.CDLL(name)`: the system loader by name from Python (L1).
    ByName(String),
}

/// A root of [`TeStep::Roots`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Root {
    /// An environment variable holding a folder.
    Var(String),
    /// A folder written in the source.
    Path(String),
}

/// The cuDNN finder of an installed TransformerEngine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeFinder {
    /// The `transformer_engine` distribution's version (`dist-info`), when found.
    pub version: Option<String>,
    /// The file read: `<site-packages>/transformer_engine/common/__init__.py`.
    pub file: PathBuf,
    /// Its steps, in order.
    pub steps: Vec<TeStep>,
    /// The oldest cuDNN its import accepts (`MIN_CUDNN_VERSION = (9, 12, 0)` with a
    /// `check_cudnn_version` call, TransformerEngine 2.20), as `major.minor.patch`.
    pub min_cudnn: Option<(u64, u64, u64)>,
}

/// The text of the top-level `def name(` in `text`, to the next top-level statement.
fn function<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let head = format!("\ndef {name}(");
    let at = text.find(&head)? + 1;
    let body = &text[at..];
    let end = body[1..]
        .match_indices('\n')
        .map(|(i, _)| i + 2)
        .find(|&i| body[i..].chars().next().is_some_and(|c| !c.is_whitespace() && c != '#' && c != ')'))
        .unwrap_or(body.len());
    Some(&body[..end])
}

/// A Python string or f-string literal starting at `s` (`"..."`, `f"..."`, `'...'`) with
/// `{lib_name}`, `{lib_name.upper()}`, `{ext}` and `{_get_sys_extension()}` put in; `None`
/// when it is no literal or another `{...}` is left.
fn literal(s: &str, ext: &str) -> Option<String> {
    let s = s.trim_start();
    let s = s.strip_prefix('f').unwrap_or(s);
    let q = s.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let body = &s[1..];
    let v = body[..body.find(q)?]
        .replace("{lib_name}", "cudnn")
        .replace("{lib_name.upper()}", "CUDNN")
        .replace("{_get_sys_extension()}", ext)
        .replace("{ext}", ext);
    (!v.contains('{')).then_some(v)
}

/// The arguments after `call` in `text` up to the call's closing `)`: each a literal (see
/// [`literal`]) or the name `lib_name` (as `cudnn`); `None` for anything else.
fn call_args(text: &str, call: &str, ext: &str) -> Option<Vec<Option<String>>> {
    let mut rest = &text[text.find(call)? + call.len()..];
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        if rest.starts_with(')') || rest.is_empty() {
            return Some(out);
        }
        let quoted = rest.strip_prefix('f').unwrap_or(rest);
        if let Some(q) = quoted.chars().next().filter(|c| *c == '"' || *c == '\'') {
            let len = quoted[1..].find(q)? + 2;
            out.push(literal(&quoted[..len], ext));
            rest = &quoted[len..];
        } else if let Some(r) = rest.strip_prefix("lib_name") {
            out.push(Some("cudnn".into()));
            rest = r;
        } else {
            out.push(None);
            rest = &rest[rest.find([',', ')'])?..];
        }
    }
}

/// The pattern after `{root}/**/` in a `glob.glob(f"{<root>}/**/<pattern>", recursive=True)`.
fn root_pattern(seg: &str, ext: &str) -> Option<String> {
    let at = seg.find("glob.glob(")? + "glob.glob(".len();
    let lit = literal(&seg[at..].replacen("{cudnn_home}", "", 1).replacen("{cuda_home}", "", 1).replacen("{path}", "", 1), ext)?;
    lit.strip_prefix("/**/").map(str::to_string)
}

/// Reads the cuDNN finder of the TransformerEngine installed in `site_packages`. `None` when
/// none is installed there; `Some(Err(why))` when its text is in a form cuenv does not read.
pub fn te_finder(site_packages: &Path) -> Option<Result<TeFinder, String>> {
    let file = site_packages.join("transformer_engine").join("common").join("__init__.py");
    if !file.is_file() {
        return None;
    }
    let version = super::dist_version(site_packages, "transformer_engine");
    let read = || -> Result<TeFinder, String> {
        let text = std::fs::read_to_string(&file).map_err(|e| format!("{} cannot be read: {e}", file.display()))?;
        let text = text.replace("\r\n", "\n");
        let unread = |what: &str| format!("{}: {what}, a form cuenv does not read", file.display());
        let ext_fn = function(&text, "_get_sys_extension").ok_or_else(|| unread("no `_get_sys_extension`"))?;
        let ext = if ext_fn.contains("return \".so\"") {
            ".so"
        } else if ext_fn.contains("extension = \"so\"") {
            "so"
        } else {
            return Err(unread("`_get_sys_extension` names no Linux extension"));
        };
        let steps = if let Some(body) = function(&text, "_load_cudnn") {
            steps_load_cudnn(&text, body, ext).map_err(|w| unread(&w))?
        } else if text.contains("_load_cuda_library(\"cudnn\")") {
            steps_load_cuda_library(&text, ext).map_err(|w| unread(&w))?
        } else {
            return Err(unread("neither `_load_cudnn` nor `_load_cuda_library(\"cudnn\")`"));
        };
        let min_cudnn = text.contains("check_cudnn_version(").then(|| min_version(&text)).flatten();
        Ok(TeFinder { version: version.clone(), file: file.clone(), steps, min_cudnn })
    };
    Some(read())
}

/// `MIN_CUDNN_VERSION = (9, 12, 0)`.
fn min_version(text: &str) -> Option<(u64, u64, u64)> {
    let line = text.lines().find_map(|l| l.strip_prefix("MIN_CUDNN_VERSION = ("))?;
    let v: Vec<u64> = line.split(')').next()?.split(',').filter_map(|p| p.trim().parse().ok()).collect();
    Some((*v.first()?, *v.get(1).unwrap_or(&0), *v.get(2).unwrap_or(&0)))
}

/// The steps of a `_load_cudnn` (TransformerEngine 1.11 to 2.10): its markers in the order
/// written; every `ctypes.CDLL(` of the body must belong to one.
fn steps_load_cudnn(text: &str, body: &str, ext: &str) -> Result<Vec<TeStep>, String> {
    let mut found: Vec<(usize, TeStep, usize)> = Vec::new();
    let seg_from = |at: usize| {
        let rest = &body[at..];
        let end = rest[1..].find("\n    # ").map(|i| i + 1).unwrap_or(rest.len());
        &rest[..end]
    };
    let cudnn = "os.environ.get(\"CUDNN_HOME\") or os.environ.get(\"CUDNN_PATH\")";
    if let Some(at) = body.find(cudnn) {
        let seg = seg_from(at);
        let pattern = root_pattern(seg, ext).ok_or("its CUDNN_HOME step globs no `**/` pattern")?;
        found.push((
            at,
            TeStep::Roots {
                roots: vec![Root::Var("CUDNN_HOME".into()), Root::Var("CUDNN_PATH".into())],
                first_set: true,
                pattern,
                drop_stubs: seg.contains("\"stub\""),
            },
            1,
        ));
    }
    let cuda = "os.environ.get(\"CUDA_HOME\") or os.environ.get(\"CUDA_PATH\") or \"/usr/local/cuda\"";
    if let Some(at) = body.find(cuda) {
        let seg = seg_from(at);
        let pattern = root_pattern(seg, ext).ok_or("its CUDA_HOME step globs no `**/` pattern")?;
        found.push((
            at,
            TeStep::Roots {
                roots: vec![Root::Var("CUDA_HOME".into()), Root::Var("CUDA_PATH".into()), Root::Path("/usr/local/cuda".into())],
                first_set: true,
                pattern,
                drop_stubs: seg.contains("\"stub\""),
            },
            1,
        ));
    }
    if let Some(at) = body.find("sysconfig.get_path(\"purelib\")") {
        let args = call_args(&body[at..], "sysconfig.get_path(\"purelib\"),", ext).ok_or("its wheel step is in another form")?;
        let rel = args.first().cloned().flatten().ok_or("its wheel step globs no literal")?;
        let (dir, pattern) = rel.rsplit_once('/').ok_or("its wheel step globs no folder")?;
        found.push((at, TeStep::WheelDispatcher { dir: dir.into(), pattern: pattern.into() }, 1));
    }
    if let Some(at) = body.find("_load_nvidia_cuda_library(\"cudnn\")") {
        let f = function(text, "_load_nvidia_cuda_library").ok_or("`_load_nvidia_cuda_library` is not defined")?;
        let args = call_args(f, "sysconfig.get_path(\"purelib\"),", ext).ok_or("`_load_nvidia_cuda_library` globs in another form")?;
        let rel = args.first().cloned().flatten().ok_or("`_load_nvidia_cuda_library` globs no literal")?;
        let rel = rel.strip_prefix("nvidia/").ok_or("`_load_nvidia_cuda_library` globs outside nvidia/")?;
        let (dir, pattern) = rel.rsplit_once('/').ok_or("`_load_nvidia_cuda_library` globs no folder")?;
        found.push((at, TeStep::Wheels { globs: vec![(dir.into(), pattern.into())] }, 0));
    }
    if let Some(at) = body.find("subprocess.check_output(").filter(|&at| seg_from(at).contains("ldconfig")) {
        let seg = seg_from(at);
        let grep = seg.find("grep '").and_then(|g| literal(&seg[g + 5..], ext));
        found.push((at, TeStep::Ldcache { grep }, 1));
    }
    if let Some(at) = body.rfind("ctypes.CDLL(f\"libcudnn").or_else(|| body.rfind("ctypes.CDLL(\"libcudnn")) {
        let name = literal(&body[at + "ctypes.CDLL(".len()..], ext).ok_or("its load by name is no literal")?;
        // A load by name ends the function; one inside a step's segment is that step's.
        if !found.iter().any(|(a, _, _)| *a < at && seg_from(*a).len() + a > at) {
            found.push((at, TeStep::ByName(name), 1));
        }
    }
    let accounted: usize = found.iter().map(|(_, _, n)| n).sum();
    let calls = body.matches("ctypes.CDLL(").count();
    if calls != accounted || found.is_empty() {
        return Err(format!("`_load_cudnn` makes {calls} `ctypes.CDLL` calls where its steps account for {accounted}"));
    }
    found.sort_by_key(|(at, _, _)| *at);
    Ok(found.into_iter().map(|(_, s, _)| s).collect())
}

/// The steps of `_load_cuda_library("cudnn")` (TransformerEngine 2.14 and later): the system
/// (`_load_cuda_library_from_system`) and the wheels (`_load_cuda_library_from_python`) in the
/// order `_load_cuda_library` calls them.
fn steps_load_cuda_library(text: &str, ext: &str) -> Result<Vec<TeStep>, String> {
    let main = function(text, "_load_cuda_library").ok_or("`_load_cuda_library` is not defined")?;
    let sys_at = main.find("_load_cuda_library_from_system(lib_name)").ok_or("`_load_cuda_library` calls no `_load_cuda_library_from_system`")?;
    let py_at = main.find("_load_cuda_library_from_python(lib_name)").ok_or("`_load_cuda_library` calls no `_load_cuda_library_from_python`")?;
    // The system part: a tuple of roots, a recursive glob, then a load by name.
    let sys = function(text, "_load_cuda_library_from_system").ok_or("`_load_cuda_library_from_system` is not defined")?;
    let tuple_at = sys.find("paths = (").ok_or("`_load_cuda_library_from_system` has no `paths = (` tuple")?;
    let tuple = &sys[tuple_at + "paths = (".len()..];
    let tuple = &tuple[..tuple.find("\n    )").ok_or("its `paths` tuple does not end")?];
    let mut roots = Vec::new();
    for item in tuple.split(",\n").map(str::trim).filter(|s| !s.is_empty()) {
        let root = if let Some(arg) = item.strip_prefix("os.environ.get(").and_then(|a| a.strip_suffix(')')) {
            Root::Var(literal(arg, ext).ok_or("a `paths` entry names no literal variable")?)
        } else {
            Root::Path(literal(item.trim_end_matches(','), ext).ok_or("a `paths` entry is neither a variable nor a literal")?)
        };
        roots.push(root);
    }
    let pattern = root_pattern(sys, ext).ok_or("`_load_cuda_library_from_system` globs no `**/` pattern")?;
    let by_name_at = sys.rfind("ctypes.CDLL(f\"lib").ok_or("`_load_cuda_library_from_system` has no load by name")?;
    let name = literal(&sys[by_name_at + "ctypes.CDLL(".len()..], ext).ok_or("its load by name is no literal")?;
    if sys.matches("ctypes.CDLL(").count() != 2 {
        return Err("`_load_cuda_library_from_system` makes other `ctypes.CDLL` calls".into());
    }
    let system = vec![TeStep::Roots { roots, first_set: false, pattern, drop_stubs: sys.contains("\"stub\"") }, TeStep::ByName(name)];
    // The wheels: every `glob.glob(os.path.join(nvidia_dir, ...))`, in order.
    let py = function(text, "_load_cuda_library_from_python").ok_or("`_load_cuda_library_from_python` is not defined")?;
    let mut globs = Vec::new();
    let mut rest = py;
    while let Some(at) = rest.find("glob.glob(os.path.join(nvidia_dir,") {
        let args = call_args(&rest[at..], "glob.glob(os.path.join(nvidia_dir,", ext).ok_or("a wheel glob is in another form")?;
        let parts: Vec<String> = args.into_iter().collect::<Option<_>>().ok_or("a wheel glob names something other than literals")?;
        let rel = parts.join("/");
        let (dir, pattern) = rel.rsplit_once('/').ok_or("a wheel glob has no folder")?;
        globs.push((dir.to_string(), pattern.to_string()));
        rest = &rest[at + 1..];
    }
    if globs.is_empty() || py.matches("ctypes.CDLL(").count() != 1 {
        return Err("`_load_cuda_library_from_python` is in another form".into());
    }
    let wheels = vec![TeStep::Wheels { globs }];
    Ok(if sys_at < py_at { [system, wheels].concat() } else { [wheels, system].concat() })
}

/// `fnmatch`'s pattern (`*`, `?`, `[...]`) as an anchored regex.
pub(super) fn fnmatch(pattern: &str) -> regex::Regex {
    let mut re = String::from("^");
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => {
                let mut class = String::new();
                for d in chars.by_ref() {
                    if d == ']' {
                        break;
                    }
                    class.push(d);
                }
                re.push('[');
                re.push_str(&class.replace('\\', "\\\\"));
                re.push(']');
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    regex::Regex::new(&re).unwrap_or_else(|_| regex::Regex::new("^$").expect("a valid regex"))
}

/// Files of `dir` whose names match `pattern`, in directory order (Python's `glob` does not
/// sort), hidden names skipped as `glob` skips them.
pub(super) fn matches_in(dir: &Path, pattern: &regex::Regex) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            !n.starts_with('.') && pattern.is_match(&n)
        })
        .map(|e| e.path())
        .collect()
}

/// Python's `glob.glob(f"{root}/**/{pattern}", recursive=True)`: the root, then every folder
/// below it depth first (links to folders followed, hidden ones skipped), each folder's
/// matches in directory order.
fn recursive_glob(root: &Path, pattern: &str) -> Vec<PathBuf> {
    let re = fnmatch(pattern);
    walkdir::WalkDir::new(root)
        .follow_links(true)
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'))
        .flatten()
        .filter(|e| e.file_type().is_dir())
        .flat_map(|d| matches_in(d.path(), &re))
        .collect()
}

/// What TransformerEngine's finder `te` loads for cuDNN in an env whose `purelib` is
/// `purelib`, with the process inputs `scene`, and the `python` that asks (for the load by
/// name): the file and the step, in words. `Err(words)` when it finds none, or when it fails
/// at import (more than one wheel dispatcher for a 1.x finder).
pub fn te_cudnn(te: &TeFinder, purelib: &Path, python: Option<&Path>, scene: &Scene) -> Result<(PathBuf, String), String> {
    let var = |k: &str| (scene.get)(k).map(|v| v.to_string_lossy().into_owned());
    for step in &te.steps {
        match step {
            TeStep::Roots { roots, first_set, pattern, drop_stubs } => {
                let mut tried: Vec<(String, String)> = Vec::new();
                for r in roots {
                    let (label, root) = match r {
                        Root::Var(v) => match var(v) {
                            Some(p) => (format!("${v}"), p),
                            None => continue,
                        },
                        Root::Path(p) => (p.clone(), p.clone()),
                    };
                    tried.push((label.clone(), root.clone()));
                    let mut libs: Vec<PathBuf> = recursive_glob(Path::new(&root), pattern);
                    if *drop_stubs {
                        libs.retain(|p| !p.to_string_lossy().contains("stub"));
                    }
                    // `sort(reverse=True, key=os.path.basename)`: stable, so ties keep glob order.
                    libs.sort_by(|a, b| b.file_name().cmp(&a.file_name()));
                    if let Some(first) = libs.into_iter().next() {
                        return Ok((first, format!("its `{label}/**/{pattern}` step (the file name sorting last of the matches), loaded by full path")));
                    }
                    if *first_set {
                        break;
                    }
                }
            }
            TeStep::WheelDispatcher { dir, pattern } => {
                let found = matches_in(&purelib.join(dir), &fnmatch(pattern));
                match found.as_slice() {
                    [] => {}
                    [one] => return Ok((one.clone(), format!("its wheel step (`{dir}/{pattern}` under purelib), loaded by full path"))),
                    more => {
                        return Err(format!(
                            "its wheel step finds {} files matching `{dir}/{pattern}` and its import fails with AssertionError (it wants exactly one)",
                            more.len()
                        ));
                    }
                }
            }
            TeStep::Wheels { globs } => {
                for (dir, pattern) in globs {
                    let found = matches_in(&purelib.join("nvidia").join(dir), &fnmatch(pattern));
                    if found.is_empty() {
                        continue;
                    }
                    let dispatcher = found.iter().find(|p| p.file_name().is_some_and(|n| libname::is_dispatcher(&n.to_string_lossy()))).unwrap_or(&found[0]);
                    return Ok((
                        dispatcher.clone(),
                        format!("its wheel step (`nvidia/{dir}/{pattern}` under purelib: every one of its {} files, loaded by full path)", found.len()),
                    ));
                }
            }
            TeStep::Ldcache { grep } => {
                let hit = scene.linux.cache.iter().flatten().find(|(name, path)| {
                    let line = format!("{name} => {}", path.display());
                    grep.as_deref().is_none_or(|g| line.contains(g)) && line.contains("libcudnn")
                });
                if let Some((name, path)) = hit {
                    return Ok((path.clone(), format!("its `ldconfig -p` step (the first ld.so cache entry naming libcudnn, {name}), loaded by full path")));
                }
                if let Some(g) = grep {
                    // `subprocess.check_output("ldconfig -p | grep ...", shell=True)`: grep
                    // exits 1 on no match, and check_output raises.
                    return Err(format!(
                        "its `ldconfig -p | grep '{g}'` step matches no ld.so cache entry, so grep exits 1 and its import fails with CalledProcessError before its load by name"
                    ));
                }
            }
            TeStep::ByName(name) => {
                let python = python.and_then(Object::read);
                let loaders: Vec<&Object> = python.iter().collect();
                if let Some(p) = loader::find(name, &Object::bare(Path::new("/")), &loaders, scene.linux) {
                    return Ok((p.path, format!("its load by name of the unversioned `{name}` ({})", p.via.describe("LD_LIBRARY_PATH"))));
                }
            }
        }
    }
    Err("it finds cuDNN in none of the places it searches, and its import fails (`cudnn shared object not found` or an OSError)".into())
}

/// The steps of `te` in words, for a message: "$CUDNN_HOME or $CUDNN_PATH, then ...".
pub fn order_words(te: &TeFinder) -> String {
    te.steps
        .iter()
        .map(|s| match s {
            TeStep::Roots { roots, first_set, .. } => {
                let names: Vec<String> = roots
                    .iter()
                    .map(|r| match r {
                        Root::Var(v) => format!("${v}"),
                        Root::Path(p) => p.clone(),
                    })
                    .collect();
                if *first_set { format!("the first set of {}", names.join(" or ")) } else { names.join(", ") }
            }
            TeStep::WheelDispatcher { .. } | TeStep::Wheels { .. } => "the nvidia wheel".into(),
            TeStep::Ldcache { .. } => "the ld.so cache (`ldconfig -p`)".into(),
            TeStep::ByName(n) => format!("a load by name of the unversioned {n}"),
        })
        .collect::<Vec<_>>()
        .join(", then ")
}

/// TransformerEngine's loads (`loads` of one env `env`) judged: it finds none (its import
/// fails); its file is older than the `MIN_CUDNN_VERSION` its import checks (its import
/// fails); or its file is another release than the load by name doctor's first lines report
/// (`by_name`, the same major, else the newest major there). Its search is its own (module
/// [`te`]), so the hint names the first place it looks, not the env hook: its full-path loads
/// do not ask what is loaded.
pub(super) fn judge_transformer_engine(env: &PyEnv, loads: &[Load], by_name: &[(u64, Option<PathBuf>)]) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(te) = env.site_packages.iter().find_map(|sp| te_finder(sp)?.ok()) else { return out };
    let first = match te.steps.first() {
        Some(TeStep::Roots { roots, .. }) => match roots.first() {
            Some(Root::Var(v)) => format!("set {v} to the cuDNN root you want (the first place it looks)"),
            _ => format!("its first place is {}: put the cuDNN you want there", order_words(&te).split(", then ").next().unwrap_or_default()),
        },
        _ => format!("its first place is {}: put the cuDNN you want there", order_words(&te).split(", then ").next().unwrap_or_default()),
    };
    let v = |x: &Option<crate::cudnn::version::Version>| x.as_ref().map(|v| v.to_string()).unwrap_or_else(|| "version unknown".into());
    for l in loads.iter().filter(|l| l.verified && l.finder == Finder::TransformerEngine) {
        // "through its `$CUDNN_HOME/**/libcudnn.so*` step ..., loaded by full path"
        let step = l.how.split("; its order").next().unwrap_or_default();
        let step = step.strip_prefix("`import transformer_engine` loads it ").unwrap_or(step);
        let Some(got) = &l.path else {
            out.push(Finding {
                rule: None,
                severity: Severity::Problem,
                message: format!("{} in {}: {}", l.consumer, l.env, l.how),
                hint: Some(format!("{first}, or install the nvidia-cudnn wheel into the env's own site-packages")),
            });
            continue;
        };
        let release = crate::doctor::frameworks::own_release(&canon(got), l.major);
        if let (Some((a, b, c)), Some(r)) = (te.min_cudnn, &release)
            && r < &crate::cudnn::version::Version::new(&[a, b, c])
        {
            out.push(Finding {
                rule: None,
                severity: Severity::Problem,
                message: format!(
                    "{} in {} would load {} (cuDNN {r}) {step}, and its import refuses a cuDNN older than {a}.{b}.{c} (MIN_CUDNN_VERSION in {}): \"Transformer Engine requires cuDNN {a}.{b}.{c} or later\"",
                    l.consumer,
                    l.env,
                    got.display(),
                    te.file.display()
                ),
                hint: Some(format!("{first}, pointing at cuDNN {a}.{b}.{c} or later")),
            });
            continue;
        }
        let same = by_name.iter().find(|(m, p)| *m == l.major && p.is_some());
        let newest = by_name.iter().filter(|(_, p)| p.is_some()).max_by_key(|(m, _)| *m);
        let Some((_, Some(bare))) = same.or(newest) else { continue };
        let b = canon(bare);
        let bv =
            crate::doctor::frameworks::own_release(&b, libname::parse(&b.file_name().unwrap_or_default().to_string_lossy()).and_then(|l| l.major).unwrap_or(0));
        if canon(got) == b || matches!((&release, &bv), (Some(x), Some(y)) if loader::same_release(x, y)) {
            continue;
        }
        out.push(Finding {
            rule: None,
            severity: Severity::Warning,
            message: format!(
                "{} in {} would load {} ({}) {step}, not the {} ({}) a load by name gets in this environment; its order: {}",
                l.consumer,
                l.env,
                got.display(),
                v(&release),
                b.display(),
                v(&bv),
                order_words(&te)
            ),
            hint: Some(if l.full_path {
                format!("{first}; it opens that file by full path, so neither LD_LIBRARY_PATH nor an env hook's preload decides for it")
            } else {
                first.clone()
            }),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test stand-ins of TransformerEngine's two finder shapes (tests/it/support/te_shapes).
    const TE_27_SHAPE: &str = include_str!("../../../tests/it/support/te_shapes/load_cudnn_2_7.py");
    const TE_220_SHAPE: &str = include_str!("../../../tests/it/support/te_shapes/load_cuda_library_2_20.py");

    fn read(text: &str) -> Result<TeFinder, String> {
        let tmp = tempfile::tempdir().unwrap();
        let common = tmp.path().join("transformer_engine/common");
        std::fs::create_dir_all(&common).unwrap();
        std::fs::write(common.join("__init__.py"), text).unwrap();
        te_finder(tmp.path()).unwrap()
    }

    #[test]
    fn a_load_cudnn_is_read_in_the_order_written() {
        let te = read(TE_27_SHAPE).unwrap();
        assert_eq!(
            te.steps,
            vec![
                TeStep::Roots {
                    roots: vec![Root::Var("CUDNN_HOME".into()), Root::Var("CUDNN_PATH".into())],
                    first_set: true,
                    pattern: "libcudnn.so*".into(),
                    drop_stubs: false
                },
                TeStep::Roots {
                    roots: vec![Root::Var("CUDA_HOME".into()), Root::Var("CUDA_PATH".into()), Root::Path("/usr/local/cuda".into())],
                    first_set: true,
                    pattern: "libcudnn.so*".into(),
                    drop_stubs: false
                },
                TeStep::Wheels { globs: vec![("cudnn/lib".into(), "lib*.so.*[0-9]".into())] },
                TeStep::Ldcache { grep: Some("libcudnn.so".into()) },
                TeStep::ByName("libcudnn.so".into()),
            ]
        );
        assert_eq!(te.min_cudnn, None);
    }

    #[test]
    fn a_load_cuda_library_is_read_system_then_wheels() {
        let te = read(TE_220_SHAPE).unwrap();
        let roots = ["CUDNN_HOME", "CUDNN_PATH", "CUDA_HOME", "CUDA_PATH"].map(|v| Root::Var(v.into()));
        assert_eq!(
            te.steps,
            vec![
                TeStep::Roots {
                    roots: [roots.to_vec(), vec![Root::Path("/usr/local/cuda".into())]].concat(),
                    first_set: false,
                    pattern: "libcudnn.so*".into(),
                    drop_stubs: true
                },
                TeStep::ByName("libcudnn.so".into()),
                TeStep::Wheels { globs: vec![("cu13/cudnn/lib".into(), "lib*.so.*[0-9]".into()), ("cudnn/lib".into(), "lib*.so.*[0-9]".into())] },
            ]
        );
        assert_eq!(te.min_cudnn, Some((9, 12, 0)));
    }

    #[test]
    fn a_load_cudnn_with_a_call_cuenv_does_not_account_for_is_not_verified() {
        let odd = TE_27_SHAPE.replace("    # If all else fails", "    ctypes.CDLL(os.environ[\"MY_CUDNN\"])\n    # If all else fails");
        let why = read(&odd).unwrap_err();
        assert!(why.contains("a form cuenv does not read") && why.contains("ctypes.CDLL"), "{why}");
        assert!(read("import os\n").unwrap_err().contains("_get_sys_extension"));
    }

    #[test]
    fn fnmatch_patterns_match_as_pythons_do() {
        let re = fnmatch("lib*.so.*[0-9]");
        assert!(re.is_match("libcudnn.so.9") && re.is_match("libcudnn_ops.so.9.1.0"));
        assert!(!re.is_match("libcudnn.so") && !re.is_match("libcudnn.so.9.txt"));
        assert!(fnmatch("libcudnn.so*").is_match("libcudnn.so") && !fnmatch("libcudnn.so*").is_match("libcudnn_ops.so.9"));
    }
}
