//! `cuenv doctor --for FILE`: what one executable or library would load, import by import, in
//! the environment doctor looks at (docs/loader.md, "One file's imports").
//!
//! The walk is breadth-first, as the loaders map dependencies (glibc `elf/dl-deps.c`
//! `_dl_map_object_deps`: every `DT_NEEDED` of an object before those of its dependencies):
//! - **ELF** (`DT_NEEDED`): each name through [`loader::find`] with the importing object as the
//!   asker and its chain of importers as the loaders (L1: `DT_RPATH` of the asker and of the
//!   loaders without `DT_RUNPATH`, `LD_LIBRARY_PATH`, the asker's own `DT_RUNPATH`, the ld.so
//!   cache, the default folders). A name an object already loaded answers to (its name or
//!   `DT_SONAME`) is that object (glibc `_dl_name_match_p`); a name with a slash is a path.
//!   `$ORIGIN` of a program is the folder of its resolved path, of a library the folder of
//!   the name it was found by.
//! - **PE** (the import table): each DLL through [`loader::windows_find`] (the standard order
//!   of [`super::winsearch`]; the application's folder is the file's own folder for an `.exe`,
//!   the env's `python.exe` folder for a DLL, as for the rest of doctor). API-set names
//!   (`api-ms-win-*`, `ext-ms-win-*`) are served by the API set schema, not by files. A name a
//!   mapped module already has is that module (W1).
//!
//! Libraries of the system (resolved from the ld.so cache or the default folders, System32 or
//! the Windows folder, or API sets; none of CUDA's or cuDNN's) are not walked unless `all`: the
//! text lists them on one line. An import that no place holds is a problem (the loader refuses
//! to start the program or to load the library), named with the chain of importers leading to
//! it; so is a `libcuda.so` that would come from a toolkit's `stubs` folder ([`super::stubs`]).
//!
//! Reads headers and folders only; loads nothing.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::loader::{self, LinuxEnv, Object, Via};
use super::winsearch::{self, Place, WinSearch};
use super::{Finding, Severity};
use crate::sys::binfmt;

/// One import of one file, and what it resolves to.
#[derive(Debug, Clone, Serialize)]
pub struct Dep {
    /// The name as the importer writes it (`libcudnn.so.9`, `cublasLt64_12.dll`).
    pub name: String,
    /// The file it resolves to (as found, not through links); `None` when nothing holds it
    /// or it is an API set.
    #[serde(serialize_with = "crate::sys::paths::ser_lossy_opt")]
    pub path: Option<PathBuf>,
    /// The search rule that found it; `None` when not searched for (already loaded, a path,
    /// an API set) or not found.
    pub via: Option<Via>,
    /// Why it resolves there (or that it does not), in words.
    pub why: String,
    /// An object loaded earlier in the walk already answers to the name (not walked again).
    pub already_loaded: bool,
    /// A library of the system (see the module documentation).
    pub system: bool,
    /// `libcuda.so*` from a `stubs` folder: NVIDIA's link-time stub, not the driver.
    pub stub: bool,
    /// Whether no place holds it.
    pub missing: bool,
    /// Its own imports (empty for a missing, already loaded, API-set or unwalked system one).
    pub deps: Vec<Dep>,
}

impl Dep {
    /// An import named `name`, not yet resolved.
    fn named(name: String) -> Dep {
        Dep { name, path: None, via: None, why: String::new(), already_loaded: false, system: false, stub: false, missing: false, deps: Vec::new() }
    }
}

/// What `doctor --for FILE` found.
#[derive(Debug, Clone, Serialize)]
pub struct ForFile {
    /// The file asked about.
    #[serde(serialize_with = "crate::sys::paths::ser_lossy")]
    pub file: PathBuf,
    /// `elf` or `pe`.
    pub format: &'static str,
    /// Whether the file is a program (an ELF with `PT_INTERP`, a PE named `.exe`).
    pub program: bool,
    /// `LD_LIBRARY_PATH` or `PATH`.
    pub search_var: String,
    /// Whether system libraries were walked and listed one by one (`--all`).
    pub all: bool,
    /// The file's imports, each with its own.
    pub imports: Vec<Dep>,
    /// Problems first (the first import that does not resolve, with its chain), then warnings.
    pub findings: Vec<Finding>,
}

impl ForFile {
    /// Whether any finding is a problem.
    pub fn has_problems(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Problem)
    }
}

/// Why `doctor --for` cannot walk a file.
#[derive(Debug, thiserror::Error)]
pub enum ForError {
    /// The file cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Neither a 64-bit ELF nor a 64-bit PE file, or one of the other platform's.
    #[error("{} is {what}", path.display())]
    NotForThisLoader {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        what: String,
    },
}

impl crate::error::Diagnose for ForError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            ForError::Read { .. } => "give the path of an executable or shared library you can read".into(),
            ForError::NotForThisLoader { .. } => {
                "doctor --for models the loader of the machine it runs on: aim it at a 64-bit ELF file on Linux, a 64-bit PE file (.exe, .dll, .pyd) on Windows"
                    .into()
            }
        })
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        crate::error::ExitCode::Invalid
    }
}

/// One node of the breadth-first walk.
struct Node {
    dep: Dep,
    parent: Option<usize>,
    /// ELF: the object as read (its dynamic section), for the lookups of its own imports.
    object: Option<Object>,
    children: Vec<usize>,
}

/// Walks the imports of `file` in the environment `env` (the caller's variables): see the
/// module documentation. `all`: walk and list system libraries too.
///
/// Errors: [`ForError`] when the file cannot be read or is not for this machine's loader.
pub fn walk(file: &Path, env: &[(OsString, OsString)], all: bool) -> Result<ForFile, ForError> {
    let read = |e| ForError::Read { path: file.to_path_buf(), source: e };
    let get = |name: &str| crate::check::env_var(env, name).cloned();
    let not_ours = |what: &str| ForError::NotForThisLoader { path: file.to_path_buf(), what: what.to_string() };
    let info = match binfmt::inspect(file) {
        Ok(i) => i,
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => return Err(not_ours(&e.to_string())),
        Err(e) => return Err(read(e)),
    };
    if cfg!(windows) {
        let Some(_) = binfmt::pe_imports(file).map_err(read)? else { return Err(not_ours(&format!("not a 64-bit PE file ({})", info.describe))) };
        let program = !is_dll(file);
        let path: Vec<PathBuf> = get("PATH").map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
        let app_dir = if program { file.parent().map(Path::to_path_buf) } else { winsearch::python_app_dir(get("CONDA_PREFIX").map(PathBuf::from).as_deref()) };
        let win = WinSearch::standard(&path, app_dir);
        Ok(finish(file, "pe", program, "PATH", all, walk_pe(file, &win, all)))
    } else {
        let Some(dynamic) = binfmt::elf_dynamic(file).map_err(read)? else { return Err(not_ours(&format!("not a 64-bit ELF file ({})", info.describe))) };
        let program = dynamic.interp.is_some();
        let ld: Vec<PathBuf> = get("LD_LIBRARY_PATH").map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
        let env = LinuxEnv::new(ld);
        // A program's $ORIGIN is the folder of its resolved path (the kernel's, through
        // /proc/self/exe); a library's, the folder of the name it was opened by.
        let path = if program { std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf()) } else { file.to_path_buf() };
        Ok(finish(file, "elf", program, "LD_LIBRARY_PATH", all, walk_elf(Object { path, dynamic }, &env, all)))
    }
}

/// Whether the PE file is a DLL rather than a program, by its name (anything but `.exe`:
/// `.dll`, `.pyd`).
fn is_dll(file: &Path) -> bool {
    let ext = file.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    ext != "exe"
}

/// The root node for `file`.
fn root(name: String, path: PathBuf, object: Option<Object>) -> Node {
    let dep = Dep { path: Some(path), ..Dep::named(name) };
    Node { dep, parent: None, object, children: Vec::new() }
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// A name of CUDA's or cuDNN's families (never collapsed as a system library).
fn cuda_family(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    let n = n.strip_prefix("lib").unwrap_or(&n);
    ["cu", "nv", "nccl", "onnxruntime"].iter().any(|p| n.starts_with(p))
}

/// The ELF walk from `root`.
fn walk_elf(root_obj: Object, env: &LinuxEnv, all: bool) -> Vec<Node> {
    let mut nodes = vec![root(file_name(&root_obj.path), root_obj.path.clone(), None)];
    // Names every loaded object answers to: the name it was asked by and its DT_SONAME.
    let mut loaded: Vec<(String, PathBuf)> = vec![(file_name(&root_obj.path), root_obj.path.clone())];
    if let Some(s) = &root_obj.dynamic.soname {
        loaded.push((s.clone(), root_obj.path.clone()));
    }
    let mut system_files: Vec<PathBuf> = Vec::new();
    // A program's interpreter is loaded first; libc's `DT_NEEDED` on it is that object.
    if let Some(interp) = &root_obj.dynamic.interp {
        let p = PathBuf::from(interp);
        loaded.push((file_name(&p), p.clone()));
        system_files.push(p);
    }
    nodes[0].object = Some(root_obj);
    let mut queue = VecDeque::from([0usize]);
    while let Some(i) = queue.pop_front() {
        let Some(asker) = nodes[i].object.clone() else { continue };
        // The chain of importers, closest first.
        let mut chain: Vec<Object> = Vec::new();
        let mut up = nodes[i].parent;
        while let Some(p) = up {
            chain.extend(nodes[p].object.clone());
            up = nodes[p].parent;
        }
        let loaders: Vec<&Object> = chain.iter().collect();
        for name in asker.dynamic.needed.clone() {
            let mut dep = Dep::named(name.clone());
            if let Some((_, p)) = loaded.iter().find(|(n, _)| *n == name) {
                dep.system = system_files.contains(p);
                dep.path = Some(p.clone());
                dep.already_loaded = true;
                dep.why = "already loaded under that name".into();
            } else if name.contains('/') {
                let p = PathBuf::from(&name);
                dep.missing = !p.is_file();
                dep.why = if dep.missing { "a path, and no file is there".into() } else { "a path, opened as written".into() };
                dep.path = Some(p).filter(|_| !dep.missing);
            } else {
                match loader::find(&name, &asker, &loaders, env) {
                    Some(pick) => {
                        dep.why = pick.via.describe("LD_LIBRARY_PATH");
                        dep.system = matches!(pick.via, Via::Cache | Via::System) && !cuda_family(&name);
                        dep.path = Some(pick.path);
                        dep.via = Some(pick.via);
                    }
                    None => {
                        dep.missing = true;
                        dep.why = format!("searched: {}", searched_linux(&asker, &loaders, env));
                    }
                }
            }
            let object = match &dep.path {
                Some(p) if !dep.already_loaded => {
                    loaded.push((name.clone(), p.clone()));
                    if dep.system {
                        system_files.push(p.clone());
                    }
                    let o = Object::read(p).unwrap_or_else(|| Object::bare(p));
                    if let Some(s) = &o.dynamic.soname {
                        loaded.push((s.clone(), p.clone()));
                    }
                    dep.stub = super::stubs::is_stub_libcuda(p);
                    Some(o)
                }
                _ => None,
            };
            let walk = object.is_some() && (all || !dep.system);
            let j = nodes.len();
            nodes.push(Node { dep, parent: Some(i), object: object.filter(|_| walk), children: Vec::new() });
            nodes[i].children.push(j);
            if walk {
                queue.push_back(j);
            }
        }
    }
    nodes
}

/// The places searched for a name `asker` asks for, in order, in words.
fn searched_linux(asker: &Object, loaders: &[&Object], env: &LinuxEnv) -> String {
    let mut parts: Vec<String> = Vec::new();
    let name = |p: &Path| file_name(p);
    let origin = |o: &Object| o.path.parent().map(Path::to_path_buf).unwrap_or_default();
    if asker.dynamic.runpath.is_none() {
        for o in std::iter::once(asker).chain(loaders.iter().copied()).filter(|o| o.dynamic.runpath.is_none()) {
            for e in &o.dynamic.rpath {
                parts.push(format!("{} (DT_RPATH of {})", loader::expand(e, &origin(o)).display(), name(&o.path)));
            }
        }
    }
    let ld: Vec<String> = env.ld_library_path.iter().filter(|d| !d.as_os_str().is_empty()).map(|d| d.display().to_string()).collect();
    parts.push(if ld.is_empty() { "LD_LIBRARY_PATH (unset)".into() } else { format!("LD_LIBRARY_PATH {}", ld.join(":")) });
    for e in asker.dynamic.runpath.iter().flatten() {
        parts.push(format!("{} (DT_RUNPATH of {})", loader::expand(e, &origin(asker)).display(), name(&asker.path)));
    }
    parts.push(if env.cache.is_some() { "the ld.so cache".into() } else { "the ld.so cache's folders".into() });
    parts.push("the default folders".into());
    parts.join(", ")
}

/// Whether a DLL name is an API set's (served by the API set schema, not by a file).
fn api_set(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("api-ms-win-") || n.starts_with("ext-ms-win-")
}

/// The PE walk from `file`.
fn walk_pe(file: &Path, win: &WinSearch, all: bool) -> Vec<Node> {
    let mut nodes = vec![root(file_name(file), file.to_path_buf(), None)];
    let mut loaded: Vec<(String, PathBuf)> = vec![(file_name(file), file.to_path_buf())];
    let mut system_files: Vec<PathBuf> = Vec::new();
    let mut queue = VecDeque::from([0usize]);
    while let Some(i) = queue.pop_front() {
        let Some(path) = nodes[i].dep.path.clone() else { continue };
        let imports = binfmt::pe_imports(&path).ok().flatten().unwrap_or_default();
        for name in imports {
            let mut dep = Dep::named(name.clone());
            let mut walk = false;
            if api_set(&name) {
                dep.system = true;
                dep.why = "an API set: the API set schema maps it to a system DLL (no file of that name is looked for)".into();
            } else if let Some((_, p)) = loaded.iter().find(|(n, _)| n.eq_ignore_ascii_case(&name)) {
                dep.system = system_files.contains(p);
                dep.path = Some(p.clone());
                dep.already_loaded = true;
                dep.why = "already loaded under that name".into();
            } else {
                match loader::windows_find(&name, win) {
                    Some(pick) => {
                        dep.why = pick.via.describe("PATH");
                        dep.system = matches!(pick.via, Via::Windows { place: Place::KnownDll | Place::System32 | Place::System16 | Place::WindowsDir })
                            && !cuda_family(&name);
                        loaded.push((name.clone(), pick.path.clone()));
                        if dep.system {
                            system_files.push(pick.path.clone());
                        }
                        dep.path = Some(pick.path);
                        dep.via = Some(pick.via);
                        walk = all || !dep.system;
                    }
                    None => {
                        dep.missing = true;
                        dep.why = format!("searched: {}", win.describe());
                    }
                }
            }
            let j = nodes.len();
            nodes.push(Node { dep, parent: Some(i), object: None, children: Vec::new() });
            nodes[i].children.push(j);
            if walk {
                queue.push_back(j);
            }
        }
    }
    nodes
}

/// The tree of `nodes` under node `i`.
fn tree(nodes: &mut [Node], i: usize) -> Dep {
    let children = std::mem::take(&mut nodes[i].children);
    let deps: Vec<Dep> = children.into_iter().map(|c| tree(nodes, c)).collect();
    let mut d = nodes[i].dep.clone();
    d.deps = deps;
    d
}

/// The importers of node `i`, closest first (file names).
fn chain(nodes: &[Node], i: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut up = nodes[i].parent;
    while let Some(p) = up {
        out.push(nodes[p].dep.name.clone());
        up = nodes[p].parent;
    }
    out
}

/// The report from the walked `nodes`: the first import that does not resolve (breadth-first,
/// the loader's order), and every stub `libcuda`.
fn finish(file: &Path, format: &'static str, program: bool, search_var: &str, all: bool, mut nodes: Vec<Node>) -> ForFile {
    let mut findings = Vec::new();
    let what = if program { "it refuses to start the program" } else { "loading the library fails" };
    let order: Vec<usize> = breadth_first(&nodes);
    let missing: Vec<usize> = order.iter().copied().filter(|&i| nodes[i].dep.missing).collect();
    if let Some(&i) = missing.first() {
        let d = &nodes[i].dep;
        let by = chain(&nodes, i);
        let chain_words = by.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", imported by ");
        let others = if missing.len() > 1 {
            format!(
                " ({} more do not resolve either: {})",
                missing.len() - 1,
                missing[1..].iter().map(|&j| nodes[j].dep.name.clone()).collect::<Vec<_>>().join(", ")
            )
        } else {
            String::new()
        };
        findings.push(Finding {
            rule: None,
            severity: Severity::Problem,
            message: format!(
                "`{}`, imported by {chain_words}, does not resolve ({}): the first import the loader cannot find, so {what}{others}",
                d.name, d.why
            ),
            hint: Some(format!(
                "put the folder holding {} on {search_var} (or install the package that ships it), then run `cuenv doctor --for {}` again",
                d.name,
                file.display()
            )),
        });
    }
    for &i in order.iter().filter(|&&i| nodes[i].dep.stub) {
        findings.push(super::stubs::finding(&nodes[i].dep.name, nodes[i].dep.path.as_deref().unwrap_or(Path::new("")), &chain(&nodes, i).join(" <- ")));
    }
    let root = tree(&mut nodes, 0);
    ForFile { file: file.to_path_buf(), format, program, search_var: search_var.to_string(), all, imports: root.deps, findings }
}

/// The node indices in breadth-first order (the order the walk resolved them).
fn breadth_first(nodes: &[Node]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut queue = VecDeque::from([0usize]);
    while let Some(i) = queue.pop_front() {
        out.push(i);
        queue.extend(nodes[i].children.iter().copied());
    }
    out
}

/// The report in words: the tree (system libraries collapsed into one line unless `all`),
/// then the findings.
pub fn render(f: &ForFile) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let kind = match (f.format, f.program) {
        ("elf", true) => "ELF program",
        ("elf", false) => "ELF library",
        (_, true) => "Windows program",
        _ => "Windows DLL",
    };
    let _ = writeln!(s, "imports of {} ({kind}), as the loader would resolve them in this environment:", f.file.display());
    let mut system: Vec<String> = Vec::new();
    fn lines(deps: &[Dep], depth: usize, all: bool, out: &mut String, system: &mut Vec<String>) {
        use std::fmt::Write as _;
        for d in deps {
            if d.system && !all {
                if !system.contains(&d.name) {
                    system.push(d.name.clone());
                }
                continue;
            }
            let pad = "  ".repeat(depth + 1);
            let stub = if d.stub { " [stub: not the driver]" } else { "" };
            match (&d.path, d.missing) {
                (_, true) => {
                    let _ = writeln!(out, "{pad}{} => NOT FOUND", d.name);
                }
                (Some(p), _) if d.already_loaded => {
                    let _ = writeln!(out, "{pad}{} => {} (already loaded){stub}", d.name, p.display());
                }
                (Some(p), _) => {
                    let _ = writeln!(out, "{pad}{} => {} ({}){stub}", d.name, p.display(), d.why);
                }
                (None, _) => {
                    let _ = writeln!(out, "{pad}{} ({})", d.name, d.why);
                }
            }
            lines(&d.deps, depth + 1, all, out, system);
        }
    }
    lines(&f.imports, 0, f.all, &mut s, &mut system);
    if f.imports.is_empty() {
        let _ = writeln!(s, "  (it imports nothing)");
    }
    if !system.is_empty() {
        let _ = writeln!(s, "system libraries (resolved, not walked; --all lists each): {}", system.join(", "));
    }
    // A cuDNN library also loads libraries by name at run time (its sub-libraries, cuBLAS,
    // NVRTC): the import table is not all it needs, and "resolves" must not read as "works".
    let by_name =
        f.file.file_name().is_some_and(|n| crate::cudnn::libname::parse(&n.to_string_lossy()).is_some_and(|l| l.os == crate::cudnn::libname::Os::HOST));
    let later = if by_name {
        "\nnot verified: a cuDNN library also loads its sub-libraries, cuBLAS and NVRTC by name at run time, which no import table lists: `cuenv doctor` (or `cuenv check`) judges those"
    } else {
        ""
    };
    if f.findings.is_empty() {
        let _ = writeln!(s, "\nevery import resolves{later}");
        return s;
    }
    let _ = writeln!(s);
    for x in &f.findings {
        let _ = writeln!(s, "{x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_sets_and_families() {
        assert!(api_set("API-MS-WIN-CRT-RUNTIME-L1-1-0.dll") && api_set("ext-ms-win-x.dll") && !api_set("kernel32.dll"));
        assert!(cuda_family("cublasLt64_12.dll") && cuda_family("libcudnn.so.9") && cuda_family("libnvrtc.so.12") && !cuda_family("libc.so.6"));
        assert!(is_dll(Path::new("a/b.DLL")) && is_dll(Path::new("x.pyd")) && !is_dll(Path::new("C:/x/app.EXE")));
    }
}
