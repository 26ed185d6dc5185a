//! The loader model `cuenv doctor` reasons with (docs/loader.md states it with its sources and
//! the test that proves each rule): which file a library asked for *by name* resolves to.
//!
//! **Linux** (ld.so(8), glibc `dl-load.c`): a name without a slash, asked for by an object
//! (a `DT_NEEDED` entry, or `dlopen` called from inside that object), is searched for in
//! 1. the `DT_RPATH` of the asking object, then of the objects that loaded it, in turn (only
//!    when the asking object has no `DT_RUNPATH`),
//! 2. `LD_LIBRARY_PATH`, in order,
//! 3. the `DT_RUNPATH` of the asking object only (never its loaders'),
//! 4. the ld.so cache (`/etc/ld.so.cache`, parsed: [`read_ld_so_cache`]), then the default
//!    folders (`/lib*`, `/usr/lib*`); where the cache cannot be read, the folders
//!    `/etc/ld.so.conf` lists stand in for it.
//!
//! An object with a `DT_RUNPATH` lends no `DT_RPATH` to anything: glibc drops an object's
//! `DT_RPATH` when it has a `DT_RUNPATH` (`elf/get-dynamic-info.h`), so in the chain of
//! loaders only those without one count.
//!
//! `$ORIGIN` in either list is the folder of the object that carries it. cuDNN's dispatcher
//! loads its sub-libraries with `dlopen` by name: cuDNN 8 asks for `libcudnn_<stem>.so.8`;
//! cuDNN 9 for `libcudnn_<stem>.so.<M>.<m>.<p>`, then `.so.<M>.<m>`, `.so.<M>` and `.so`
//! (the strings `%s.%d.%d.%d` and "Unable to load any of {%s, %s, %s, %s}" in
//! `libcudnn.so.9`), each through the whole search before the next. The real wheels'
//! dispatchers carry `DT_RUNPATH` `$ORIGIN`, so an `LD_LIBRARY_PATH` folder holding a
//! sub-library beats the dispatcher's own folder.
//!
//! **Windows** (Microsoft Learn, "Dynamic-link library search order"): the whole order is
//! [`super::winsearch`] (already-loaded modules, KnownDLLs, the application's folder,
//! System32, the 16-bit System folder, the Windows folder, the current folder, `PATH`; or a
//! host's `SetDefaultDllDirectories` order). cuDNN's dispatcher loads its sub-libraries by bare
//! name through that order: folders added with `AddDllDirectory` (`os.add_dll_directory`) are
//! not searched, and the dispatcher's own folder is not searched unless it is one of the
//! places (proven under Wine by `tests/it/loader_windows.rs`).
//!
//! Reads headers and folders only; loads nothing.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::winsearch::{self, WinSearch};
use crate::cudnn::libname::{self, Os};
use crate::cudnn::set;
use crate::cudnn::version::Version;
use crate::sys::binfmt::{self, ElfDynamic};
use crate::sys::paths;

/// Where the loader found a library, in the model's terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Via {
    /// A `DT_RPATH` entry of `object` (the asking object or one of its loaders).
    Rpath {
        /// The object whose `DT_RPATH` it is.
        #[serde(serialize_with = "crate::sys::paths::ser_lossy")]
        object: PathBuf,
        /// The entry as written (`$ORIGIN/../lib`).
        entry: String,
    },
    /// `LD_LIBRARY_PATH` (Linux) or `PATH` (Windows), at `position` (from 1).
    SearchVar {
        /// The entry's position in the variable, from 1.
        position: usize,
    },
    /// A `DT_RUNPATH` entry of the asking object.
    Runpath {
        /// The asking object.
        #[serde(serialize_with = "crate::sys::paths::ser_lossy")]
        object: PathBuf,
        /// The entry as written.
        entry: String,
    },
    /// An entry of the ld.so cache (`/etc/ld.so.cache`) for the name.
    Cache,
    /// The ld.so cache's folders (`/etc/ld.so.conf`, when the cache could not be read) or the
    /// default folders.
    System,
    /// Windows: a place of the search order other than `PATH` ([`winsearch::Place`]).
    Windows {
        /// The place.
        place: winsearch::Place,
    },
}

impl Via {
    /// In words, for a sentence "found ... (this)".
    pub fn describe(&self, search_var: &str) -> String {
        let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match self {
            Via::Rpath { object, entry } => format!("through the DT_RPATH `{entry}` of {}", name(object)),
            Via::SearchVar { position } => format!("through {search_var} (position {position})"),
            Via::Runpath { object, entry } => format!("through the DT_RUNPATH `{entry}` of {}", name(object)),
            Via::Cache => "through the ld.so cache (/etc/ld.so.cache)".into(),
            Via::System => "in the ld.so cache's or the default folders".into(),
            Via::Windows { place } => place.describe().into(),
        }
    }
}

/// A file the model says the loader takes, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pick {
    /// The file as found (not resolved: the loader maps what the link points at).
    #[serde(serialize_with = "crate::sys::paths::ser_lossy")]
    pub path: PathBuf,
    /// How the search reached it.
    pub via: Via,
}

impl Pick {
    /// The folder the file is in.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new(""))
    }
}

/// An ELF object and what the loader reads from it.
#[derive(Debug, Clone)]
pub struct Object {
    /// Its path.
    pub path: PathBuf,
    /// Its dynamic section (empty when unreadable).
    pub dynamic: ElfDynamic,
}

impl Object {
    /// Reads the dynamic section of the ELF file at `path`; `None` when it is not a 64-bit ELF
    /// file or cannot be read.
    pub fn read(path: &Path) -> Option<Object> {
        Some(Object { path: path.to_path_buf(), dynamic: binfmt::elf_dynamic(path).ok()?? })
    }

    /// An object with no `DT_RPATH` / `DT_RUNPATH` (a program that asks by name, like the probe).
    pub fn bare(path: &Path) -> Object {
        Object { path: path.to_path_buf(), dynamic: ElfDynamic::default() }
    }

    /// `$ORIGIN` for this object: the folder of the path it was loaded by (not resolved, as
    /// glibc takes it from the object's name).
    pub fn origin(&self) -> PathBuf {
        self.path.parent().map(Path::to_path_buf).unwrap_or_default()
    }
}

/// `$ORIGIN` / `${ORIGIN}` in a search-list entry replaced by `origin` (ld.so(8), "Dynamic
/// string tokens"; `$LIB` and `$PLATFORM` are left as written and match no folder).
pub fn expand(entry: &str, origin: &Path) -> PathBuf {
    let o = origin.to_string_lossy();
    PathBuf::from(entry.replace("${ORIGIN}", &o).replace("$ORIGIN", &o))
}

/// The process's search inputs for the Linux model.
#[derive(Debug, Clone, Default)]
pub struct LinuxEnv {
    /// `LD_LIBRARY_PATH`'s entries in order (empty ones kept, for positions; they are skipped).
    pub ld_library_path: Vec<PathBuf>,
    /// The ld.so cache's entries of this machine's word size and architecture, (name, file),
    /// in file order; `None` when it was not read.
    pub cache: Option<Vec<(String, PathBuf)>>,
    /// The folders searched after the cache, in order: the default folders, preceded by the
    /// ld.so cache's folders when the cache was not read.
    pub system: Vec<PathBuf>,
}

impl LinuxEnv {
    /// The model's inputs for `ld_library_path` (the variable's entries) on this machine:
    /// the ld.so cache ([`read_ld_so_cache`] of `/etc/ld.so.cache`; when it cannot be read,
    /// the folders of `/etc/ld.so.conf` and the files it includes instead), then `/lib64`,
    /// `/lib`, `/usr/lib64`, `/usr/lib` and their `x86_64-linux-gnu` / `aarch64-linux-gnu`
    /// children.
    pub fn new(ld_library_path: Vec<PathBuf>) -> LinuxEnv {
        let mut system = Vec::new();
        let cache = read_ld_so_cache(Path::new("/etc/ld.so.cache"));
        if cache.is_none() {
            read_ld_so_conf(Path::new("/etc/ld.so.conf"), &mut system, 0);
        }
        for base in ["/lib64", "/lib", "/usr/lib64", "/usr/lib"] {
            for sub in ["", "x86_64-linux-gnu", "aarch64-linux-gnu"] {
                let d = Path::new(base).join(sub);
                if !system.contains(&d) {
                    system.push(d);
                }
            }
        }
        LinuxEnv { ld_library_path, cache, system }
    }
}

/// The entries of the ld.so cache `file` for libraries of this machine (glibc's format
/// `glibc-ld.so.cache1.1`, `elf/cache.c` and `sysdeps/generic/dl-cache.h`: a 48-byte header
/// with the entry count, then entries of 24 bytes, `flags: i32, key: u32, value: u32,
/// osversion: u32, hwcap: u64`, whose key and value are offsets of the name and the file from
/// the start of the file; `flags` holds the ELF class and architecture, `0x0303` for x86-64
/// libc6 and `0x0a03` for AArch64), as (name, file) in file order. An old-format prefix
/// (`ld.so-1.7.0`) is skipped. `None` when the file is absent or not in that format.
pub fn read_ld_so_cache(file: &Path) -> Option<Vec<(String, PathBuf)>> {
    const MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
    let bytes = std::fs::read(file).ok()?;
    let start = bytes.windows(MAGIC.len()).position(|w| w == MAGIC)?;
    let b = &bytes[start..];
    let u32_at = |at: usize| -> Option<u32> { Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?)) };
    let count = u32_at(20)? as usize;
    let want: u32 = if cfg!(target_arch = "aarch64") { 0x0a03 } else { 0x0303 };
    let cstr = |at: usize| -> Option<String> {
        let rest = b.get(at..)?;
        let end = rest.iter().position(|&c| c == 0)?;
        Some(String::from_utf8_lossy(&rest[..end]).into_owned())
    };
    let mut out = Vec::new();
    for i in 0..count.min(1 << 20) {
        let at = 48 + i * 24;
        let (flags, key, value) = (u32_at(at)?, u32_at(at + 4)? as usize, u32_at(at + 8)? as usize);
        if flags & 0xffff != want {
            continue;
        }
        if let (Some(k), Some(v)) = (cstr(key), cstr(value)) {
            out.push((k, PathBuf::from(v)));
        }
    }
    Some(out)
}

fn read_ld_so_conf(file: &Path, out: &mut Vec<PathBuf>, depth: u8) {
    let Ok(text) = std::fs::read_to_string(file) else { return };
    for line in text.lines().map(|l| l.split('#').next().unwrap_or("").trim()) {
        if let Some(pattern) = line.strip_prefix("include").map(str::trim) {
            if depth > 4 {
                continue;
            }
            // Only `<dir>/*.conf`-style patterns (what distributions ship).
            let p = Path::new(pattern);
            let (Some(dir), Some(name)) = (p.parent(), p.file_name().map(|n| n.to_string_lossy().into_owned())) else { continue };
            let suffix = name.strip_prefix('*').unwrap_or(&name).to_string();
            let Ok(rd) = std::fs::read_dir(dir) else { continue };
            let mut files: Vec<PathBuf> = rd.flatten().map(|e| e.path()).filter(|f| f.to_string_lossy().ends_with(&suffix)).collect();
            files.sort();
            for f in files {
                read_ld_so_conf(&f, out, depth + 1);
            }
        } else if line.starts_with('/') {
            out.push(PathBuf::from(line));
        }
    }
}

/// ld.so's search for `name` asked for by `asker`, which `loaders` loaded (closest first):
/// see the module documentation. `None` when no folder holds a file of that name.
pub fn find(name: &str, asker: &Object, loaders: &[&Object], env: &LinuxEnv) -> Option<Pick> {
    let hit = |dir: &Path| {
        let f = dir.join(name);
        f.is_file().then_some(f)
    };
    if asker.dynamic.runpath.is_none() {
        // glibc ignores the DT_RPATH of an object that has a DT_RUNPATH.
        for o in std::iter::once(asker).chain(loaders.iter().copied()).filter(|o| o.dynamic.runpath.is_none()) {
            for entry in &o.dynamic.rpath {
                if let Some(path) = hit(&expand(entry, &o.origin())) {
                    return Some(Pick { path, via: Via::Rpath { object: o.path.clone(), entry: entry.clone() } });
                }
            }
        }
    }
    for (i, dir) in env.ld_library_path.iter().enumerate() {
        if dir.as_os_str().is_empty() {
            continue;
        }
        if let Some(path) = hit(dir) {
            return Some(Pick { path, via: Via::SearchVar { position: i + 1 } });
        }
    }
    for entry in asker.dynamic.runpath.iter().flatten() {
        if let Some(path) = hit(&expand(entry, &asker.origin())) {
            return Some(Pick { path, via: Via::Runpath { object: asker.path.clone(), entry: entry.clone() } });
        }
    }
    if let Some(path) = env.cache.iter().flatten().find(|(k, p)| k == name && p.is_file()).map(|(_, p)| p.clone()) {
        return Some(Pick { path, via: Via::Cache });
    }
    env.system.iter().find_map(|d| hit(d)).map(|path| Pick { path, via: Via::System })
}

/// What the model says one sub-library resolves to.
#[derive(Debug, Clone, Serialize)]
pub struct SubPick {
    /// The stem (`ops_infer`, `graph`).
    pub stem: String,
    /// The file the loader takes; `None` when no name the dispatcher tries is found.
    pub pick: Option<Pick>,
    /// Its version ([`file_version`]); `None` when unknown.
    pub version: Option<String>,
    /// Whether it is in the dispatcher's own folder.
    pub own_folder: bool,
}

/// The names cuDNN's dispatcher of `major` tries for sub-library `stem`, in order, when it
/// is version `version` (see the module documentation).
pub fn sub_names(stem: &str, major: u64, version: Option<&Version>, os: Os) -> Vec<String> {
    if os == Os::Windows {
        return vec![libname::sub_library_name(stem, major, os)];
    }
    let base = format!("libcudnn_{stem}.so");
    match version.filter(|v| major >= 9 && v.major() == major && v.parts().len() >= 3) {
        Some(v) => {
            vec![format!("{base}.{}.{}.{}", v.major(), v.minor(), v.patch()), format!("{base}.{}.{}", v.major(), v.minor()), format!("{base}.{major}"), base]
        }
        None if major >= 9 => vec![format!("{base}.{major}"), base],
        None => vec![format!("{base}.{major}")],
    }
}

/// The cuDNN library names the file at `path` carries ([`binfmt::References::cudnn`]);
/// empty when it cannot be read.
fn names_in(path: &Path) -> Vec<String> {
    binfmt::referenced_libraries(path).map(|r| r.cudnn).unwrap_or_default()
}

/// The Linux model's answer for cuDNN `major` whose dispatcher is `dispatcher`, loaded by
/// `loaders` (closest first; empty for a program without `DT_RPATH`): the set the release
/// loads ([`set::walk`]: the sub-libraries the dispatcher names, then those the files it gets
/// name in turn), each looked up by L1 and L4 with the library that names it as the asking
/// object. `version` is the dispatcher's release when known (it picks the names cuDNN 9 tries
/// first, and the table's rows when the dispatcher names nothing).
pub fn linux_set(dispatcher: &Path, major: u64, version: Option<&Version>, loaders: &[&Object], env: &LinuxEnv) -> Vec<SubPick> {
    let own = dispatcher.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut picks: Vec<(String, Pick)> = Vec::new();
    let find = |stem: &str, asker: &PathBuf| {
        let asker = Object::read(asker).unwrap_or_else(|| Object::bare(asker));
        let pick = sub_names(stem, major, version, Os::Linux).iter().find_map(|n| find(n, &asker, loaders, env))?;
        picks.push((stem.to_string(), pick.clone()));
        Some(pick.path)
    };
    let name = dispatcher.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let walked = set::walk(&dispatcher.to_path_buf(), &name, major, Os::Linux, version, |p| names_in(p), find);
    sub_picks(&walked, picks, &own)
}

/// The [`SubPick`]s of a walked set, from the `picks` its `find` recorded (stem, pick).
fn sub_picks(walked: &set::RequiredSet<PathBuf>, picks: Vec<(String, Pick)>, own: &Path) -> Vec<SubPick> {
    walked
        .members
        .iter()
        .map(|m| {
            let pick = picks.iter().find(|(s, _)| *s == m.stem).map(|(_, p)| p.clone());
            let own_folder = pick.as_ref().is_some_and(|p| paths::same_path(&canon(p.dir()), &canon(own)));
            let version = pick.as_ref().and_then(|p| file_version(&p.path)).map(|v| v.to_string());
            SubPick { stem: m.stem.clone(), pick, version, own_folder }
        })
        .collect()
}

/// The Windows model's answer for the dispatcher `cudnn64_<major>.dll` in `own`, whose
/// sub-libraries cuDNN loads by name: the set the release loads ([`set::walk`] from that
/// dispatcher), each found where the host's search order `search` finds it
/// ([`WinSearch::find`]). `own` wins only where it is one of the places first.
pub fn windows_set(own: &Path, major: u64, search: &WinSearch) -> Vec<SubPick> {
    let dispatcher_name = libname::dispatcher_name(major, Os::Windows);
    let dispatcher = find_ci(own, &dispatcher_name).unwrap_or_else(|| own.join(&dispatcher_name));
    let mut picks: Vec<(String, Pick)> = Vec::new();
    let find = |stem: &str, _asker: &PathBuf| {
        let pick = windows_find(&libname::sub_library_name(stem, major, Os::Windows), search)?;
        picks.push((stem.to_string(), pick.clone()));
        Some(pick.path)
    };
    let version = file_version(&dispatcher);
    let walked = set::walk(&dispatcher, &dispatcher_name, major, Os::Windows, version.as_ref(), |p| names_in(p), find);
    sub_picks(&walked, picks, own)
}

/// [`WinSearch::find`] as a [`Pick`]: `PATH` entries as [`Via::SearchVar`], every other place
/// as [`Via::Windows`].
pub fn windows_find(name: &str, search: &WinSearch) -> Option<Pick> {
    let f = search.find(name)?;
    let via = match f.place {
        winsearch::Place::Path => Via::SearchVar { position: f.position },
        place => Via::Windows { place },
    };
    Some(Pick { path: f.path, via })
}

/// The set of the cuDNN `major` dispatcher in the folder `dir` ([`set::walk`]), each member
/// looked up in `dir` alone: what the release needs beside its dispatcher (`store add`'s rule
/// R2, docs/loader.md). Names of the loader's platform ([`Os::HOST`]); the walk reads through
/// links, so a linked dispatcher names its target's set. Empty when `dir` holds no dispatcher
/// of `major`.
pub fn folder_set(dir: &Path, major: u64) -> set::RequiredSet<PathBuf> {
    let os = Os::HOST;
    let dispatcher_name = libname::dispatcher_name(major, os);
    let Some(dispatcher) = find_ci(dir, &dispatcher_name).filter(|_| os == Os::Windows).or_else(|| Some(dir.join(&dispatcher_name)).filter(|p| p.is_file()))
    else {
        return set::RequiredSet { major, os, members: Vec::new(), basis: set::Basis::Files };
    };
    let version = file_version(&dispatcher);
    let find = |stem: &str, _asker: &PathBuf| match os {
        Os::Windows => find_ci(dir, &libname::sub_library_name(stem, major, os)),
        Os::Linux => sub_names(stem, major, version.as_ref(), os).into_iter().map(|n| dir.join(n)).find(|p| p.is_file()),
    };
    set::walk(&dispatcher, &dispatcher_name, major, os, version.as_ref(), |p| names_in(p), find)
}

/// The first sub-library the cuDNN `major` dispatcher at `dispatcher` names (in file order:
/// `graph` in 9.x, `ops_infer` in 8.x in every real dispatcher): the one it loads first and
/// forwards `cudnnGetVersion` to. Reads the dispatcher alone (the walk finds no member, so it
/// follows none); the table's first row when it names none.
pub fn named_first(dispatcher: &Path, major: u64) -> Option<String> {
    let name = dispatcher.file_name()?.to_string_lossy().into_owned();
    let os = libname::parse(&name)?.os;
    let set = set::walk(&dispatcher.to_path_buf(), &name, major, os, file_version(dispatcher).as_ref(), |p| names_in(p), |_, _| None);
    set.members.into_iter().next().map(|m| m.stem)
}

/// `dir/name` matched without regard to case (Windows names), when such a file exists.
fn find_ci(dir: &Path, name: &str) -> Option<PathBuf> {
    let exact = dir.join(name);
    if exact.is_file() {
        return Some(exact);
    }
    std::fs::read_dir(dir).ok()?.flatten().find(|e| e.file_name().to_string_lossy().eq_ignore_ascii_case(name)).map(|e| e.path())
}

fn canon(p: &Path) -> PathBuf {
    paths::canonical_shown(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The version of one cuDNN library file, from what the file itself says: the dotted version
/// of its real name (`libcudnn_ops.so.9.5.0`, after following links: the archives' layout),
/// the `cudnn_version_...` marker or VERSIONINFO it carries ([`binfmt::library_version`]).
/// `None` when none tells (most sub-libraries of the wheels): unknown, never a mismatch.
pub fn file_version(path: &Path) -> Option<Version> {
    for p in [path.to_path_buf(), canon(path)] {
        let name = p.file_name()?.to_string_lossy().into_owned();
        if let Some(v) = libname::parse(&name).and_then(|l| l.version).filter(|v| v.matches('.').count() >= 2)
            && let Ok(v) = v.parse()
        {
            return Some(v);
        }
    }
    binfmt::library_version(path).ok().flatten()
}

/// The releases the cuDNN `major` files in folder `dir` belong to, as far as the files tell
/// ([`file_version`]): every distinct release with the files carrying it (one name per file:
/// links to one file count once), in file-name order. Two or more: a folder holding libraries
/// of two releases. Files whose version is unknown are in none.
pub fn folder_versions(dir: &Path, major: u64) -> Vec<(Version, Vec<String>)> {
    let mut out: Vec<(Version, Vec<String>)> = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return out };
    let mut names: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let mut seen: Vec<PathBuf> = Vec::new();
    for n in names {
        let Some(l) = libname::parse(&n) else { continue };
        if l.major != Some(major) || l.os != Os::HOST {
            continue;
        }
        let real = canon(&dir.join(&n));
        if seen.contains(&real) {
            continue;
        }
        seen.push(real);
        let Some(v) = file_version(&dir.join(&n)) else { continue };
        // A 3-part version from a name and a 4-part one from a marker are one release.
        match out.iter_mut().find(|(w, _)| same_release(w, &v)) {
            Some(slot) => {
                if slot.0.parts().len() < v.parts().len() {
                    slot.0 = v;
                }
                slot.1.push(n);
            }
            None => out.push((v, vec![n])),
        }
    }
    out
}

/// Whether two versions name one release ([`binfmt::same_release`]).
pub fn same_release(a: &Version, b: &Version) -> bool {
    binfmt::same_release(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_expands_both_spellings() {
        let o = Path::new("/env/lib/python3.11/site-packages/torch/lib");
        assert_eq!(expand("$ORIGIN/../../nvidia/cudnn/lib", o), PathBuf::from("/env/lib/python3.11/site-packages/torch/lib/../../nvidia/cudnn/lib"));
        assert_eq!(expand("${ORIGIN}", o), o.to_path_buf());
        assert_eq!(expand("/opt/x", o), PathBuf::from("/opt/x"));
    }

    #[test]
    fn names_cudnn_tries() {
        let v: Version = "9.5.0.50".parse().unwrap();
        assert_eq!(
            sub_names("graph", 9, Some(&v), Os::Linux),
            ["libcudnn_graph.so.9.5.0", "libcudnn_graph.so.9.5", "libcudnn_graph.so.9", "libcudnn_graph.so"]
        );
        assert_eq!(sub_names("graph", 9, None, Os::Linux), ["libcudnn_graph.so.9", "libcudnn_graph.so"]);
        assert_eq!(sub_names("ops_infer", 8, Some(&"8.9.4".parse().unwrap()), Os::Linux), ["libcudnn_ops_infer.so.8"]);
        assert_eq!(sub_names("graph", 9, Some(&v), Os::Windows), ["cudnn_graph64_9.dll"]);
    }

    #[test]
    fn search_order_rpath_then_variable_then_runpath() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, c) = (tmp.path().join("a"), tmp.path().join("b"), tmp.path().join("c"));
        for d in [&a, &b, &c] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join("libx.so.1"), "x").unwrap();
        }
        let env = LinuxEnv { ld_library_path: vec![PathBuf::new(), b.clone()], ..Default::default() };
        let with = |rpath: &[&str], runpath: Option<&[&str]>| Object {
            path: c.join("libasker.so"),
            dynamic: ElfDynamic {
                rpath: rpath.iter().map(|s| s.to_string()).collect(),
                runpath: runpath.map(|r| r.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            },
        };
        let rp = a.to_string_lossy().into_owned();
        let p = find("libx.so.1", &with(&[&rp], None), &[], &env).unwrap();
        assert_eq!((p.dir(), &p.via), (a.as_path(), &Via::Rpath { object: c.join("libasker.so"), entry: rp.clone() }));
        // With a DT_RUNPATH, DT_RPATH is ignored and the variable comes first.
        let p = find("libx.so.1", &with(&[&rp], Some(&["$ORIGIN"])), &[], &env).unwrap();
        assert_eq!((p.dir(), &p.via), (b.as_path(), &Via::SearchVar { position: 2 }));
        let none = LinuxEnv::default();
        let p = find("libx.so.1", &with(&[], Some(&["$ORIGIN"])), &[], &none).unwrap();
        assert_eq!(p.dir(), c.as_path());
        // The loader's DT_RPATH serves an asker without DT_RUNPATH only.
        let loader = with(&[&rp], None);
        let bare = Object::bare(&tmp.path().join("nowhere/libd.so"));
        assert_eq!(find("libx.so.1", &bare, &[&loader], &none).unwrap().dir(), a.as_path());
        let runpath_asker = Object { dynamic: ElfDynamic { runpath: Some(vec![]), ..Default::default() }, ..bare.clone() };
        assert_eq!(find("libx.so.1", &runpath_asker, &[&loader], &none), None);
        // A loader with a DT_RUNPATH lends no DT_RPATH (glibc drops it), but one above it does.
        let both = Object { dynamic: ElfDynamic { runpath: Some(vec![]), ..loader.dynamic.clone() }, ..loader.clone() };
        assert_eq!(find("libx.so.1", &bare, &[&both], &none), None);
        assert_eq!(find("libx.so.1", &bare, &[&both, &loader], &none).unwrap().dir(), a.as_path());
    }

    #[test]
    fn releases_compare_on_common_parts() {
        let v = |s: &str| s.parse::<Version>().unwrap();
        assert!(same_release(&v("9.5.0"), &v("9.5.0.50")));
        assert!(!same_release(&v("9.5.0"), &v("9.1.0")));
        assert!(!same_release(&v("9"), &v("9.1.0")));
    }
}
