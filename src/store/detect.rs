//! Recognizing a cuDNN release inside an extracted tree: where its root is, which CUDA
//! variant to keep, its version, CUDA major, platform, library set and layout.
//!
//! Facts used (docs/facts.md §2, §7b):
//! - The dispatcher is `cudnn64_<major>.dll` (Windows) or `libcudnn.so.<major>` (Linux),
//!   as [`crate::cudnn::libname`] reads names; it sits in `bin`, `bin/x64` (Windows, 9.18+), `lib`, `lib64` (legacy) or, in NVIDIA's
//!   Windows installer tree, `bin/<cuda major.minor>/[x64]`.
//! - The release root is the first ancestor of the dispatcher's folder that is not one of
//!   `bin`, `lib`, `lib64`, `x64` or a `<major>.<minor>` variant folder.
//! - The full 4-part version only comes from a wheel's METADATA or name, an official
//!   archive's name, or a Windows DLL's VERSIONINFO; `cudnn_version.h` has 3 parts.
//! - The CUDA major comes from the CUDA libraries the cuDNN libraries load by name
//!   (`libcublasLt.so.13`, `cublasLt64_13.dll`; read statically, docs/facts.md §10), `_cudaNN`
//!   (archive), `cuNN` (wheel), the installer's variant folder, or `--cuda`; it is never
//!   guessed. A name or `--cuda` that the libraries contradict is refused
//!   ([`Error::CudaContradicted`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::Error;
use super::extract::{Item, native};
use crate::cudnn::libname;
use crate::cudnn::platform::Platform;
use crate::cudnn::set;
use crate::cudnn::version::{self, Version};
use crate::sys::binfmt;

/// Where the parts of a release are inside a store entry (relative, `/` separators).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct EntryLayout {
    /// Folder holding the shared libraries on Windows (`bin`, `bin/x64`, `bin/12.6`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bin: Option<String>,
    /// Folder holding shared libraries on Linux, or import libraries (`lib/x64`) on Windows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lib: Option<String>,
    /// Folder holding `cudnn_version.h` / `cudnn.h`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include: Option<String>,
}

/// Facts about the source beyond its content: its file (or folder) name, the CUDA major
/// the user passed, and the text of a wheel's METADATA if one was found.
#[derive(Debug, Default)]
pub struct Hints {
    /// File name of the archive or wheel, or the folder name.
    pub source_name: String,
    /// `--cuda MAJOR` as given.
    pub cuda: Option<u64>,
    /// METADATA text of the wheel (inside it, or beside a `site-packages/nvidia/cudnn`).
    pub metadata: Option<(String, String)>,
    /// `--allow-incomplete`: keep a set that lacks sub-libraries (see [`required_set`]).
    pub allow_incomplete: bool,
}

/// What was recognized. Paths are relative to the raw tree.
#[derive(Debug)]
pub struct Detected {
    /// The release root inside the raw tree (`""` for the tree itself).
    pub root: String,
    /// Items to keep, relative to `root`.
    pub keep: BTreeMap<String, Item>,
    /// The cuDNN version (3 or 4 parts) and where it came from.
    pub version: Version,
    pub version_source: String,
    /// The CUDA major variant and where it came from.
    pub cuda_major: u64,
    pub cuda_source: String,
    /// Sub-libraries the release ships that the set lacks (non-empty only when allowed).
    pub missing: Vec<String>,
    /// The platform, from the dispatcher's PE/ELF header.
    pub platform: Platform,
    /// File names of every shared library in the library folder, sorted.
    pub libraries: Vec<String>,
    /// Layout relative to the entry root.
    pub layout: EntryLayout,
}

static VARIANT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\d+\.\d+$").unwrap());
/// `cudnn-windows-x86_64-9.5.0.50_cuda12-archive`, `..._cuda11.5-archive`
static ARCHIVE_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)cudnn-(windows|linux)-([a-z0-9_]+)-(\d+\.\d+\.\d+(?:\.\d+)?)_cuda(\d+)(?:\.\d+)?-archive").unwrap());
/// `cudnn-11.2-windows-x64-v8.1.1.33`, `cudnn-10.2-linux-x64-v8.2.1.32`
static LEGACY_NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)cudnn-(\d+)\.(\d+)-(windows|linux)\d*-x64-v(\d+\.\d+\.\d+(?:\.\d+)?)").unwrap());
/// `nvidia_cudnn_cu12-9.5.0.50-py3-none-win_amd64.whl`
static WHEEL_NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)nvidia[_-]cudnn[_-]cu(\d+)-(\d+\.\d+\.\d+(?:\.\d+)?)").unwrap());

fn is_library(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    l.ends_with(".dll") || l.ends_with(".so") || l.contains(".so.")
}

fn parent(path: &str) -> &str {
    path.rfind('/').map(|i| &path[..i]).unwrap_or("")
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn rel_to(root: &str, path: &str) -> String {
    if root.is_empty() { path.to_string() } else { path[root.len() + 1..].to_string() }
}

/// Finds the release root and the variant folder (if any) of a dispatcher's library folder.
fn root_of(lib_dir: &str) -> (String, Option<String>) {
    let mut dir = lib_dir;
    let mut variant = None;
    loop {
        let name = file_name(dir);
        let l = name.to_ascii_lowercase();
        if dir.is_empty() {
            return (String::new(), variant);
        }
        if matches!(l.as_str(), "bin" | "lib" | "lib64" | "x64") {
            dir = parent(dir);
        } else if VARIANT.is_match(name) {
            variant = Some(name.to_string());
            dir = parent(dir);
        } else {
            return (dir.to_string(), variant);
        }
    }
}

/// Recognizes the cuDNN release in the raw tree at `raw` with the given `items`.
///
/// Errors: no dispatcher ([`Error::NoCudnn`]); several release roots
/// ([`Error::SeveralReleases`]); CUDA variants to choose from without `--cuda`
/// ([`Error::CudaUnknown`]); disagreeing or missing version / CUDA major; mixed or
/// unknown platforms. Each names what to pass or fix.
pub fn detect(source: &Path, raw: &Path, items: &BTreeMap<String, Item>, hints: &Hints) -> Result<Detected, Error> {
    // 1. Dispatchers and their roots.
    let (root, variants) = release_root(source, items)?;

    // 2. CUDA evidence from names.
    let (mut cuda, versions) = named_evidence(hints, &root);

    // 3. Pick the CUDA variant folder when the tree holds several.
    let chosen_variant = choose_variant(source, &variants, &mut cuda)?;
    let dispatcher = variants.get(&chosen_variant).expect("chosen among keys")[0].clone();

    // 4. Keep the chosen variant only.
    let keep = keep_variant(source, items, &root, chosen_variant.as_deref())?;

    // 5. CUDA major: the libraries' own word first (the CUDA libraries they load by name, read
    // without loading them, in the same pass as the cuDNN libraries they name, for step 9),
    // then all evidence must agree, and there must be some.
    let lib_rel = rel_to(&root, parent(&dispatcher));
    let refs = read_references(raw, &root, &keep, &lib_rel);
    let (cuda_major, cuda_source) = agreed_cuda_major(source, &refs, cuda)?;

    // 6. Layout.
    let (info, platform) = dispatcher_platform(source, raw, items, hints, &root, &dispatcher)?;
    let (header, layout) = entry_layout(&keep, chosen_variant.as_ref(), &lib_rel, platform);

    // 7. Library set and platform agreement.
    let (libraries, file_versions) = library_set(source, raw, &root, &keep, &lib_rel, &info, platform)?;

    // 8. Version: header (3 parts) and every 4-part source must agree.
    let best = agreed_version(source, raw, &root, header.as_ref(), &file_versions, info.file_version, &dispatcher, versions)?;

    // 9. The whole set: every sub-library the release's own files name, found beside the dispatcher.
    let found = required_set(&best.0, platform, &keep, &refs, &rel_to(&root, &dispatcher), &lib_rel);
    let missing = complete_set(source, &best.0, &found, &lib_rel, hints.allow_incomplete)?;
    Ok(Detected { root, keep, version: best.0, version_source: best.1, cuda_major, cuda_source, platform, libraries, layout, missing })
}

/// Claims of a CUDA major or version, each with where it was read (`--cuda`, a name, ...).
type Claims<T> = Vec<(T, String)>;

/// The file names of libraries, each with the release version the file itself says.
type FileVersions = Vec<(String, Version)>;

/// The dispatchers of `items` under one release root, by CUDA variant folder (`None`: none).
type Variants<'a> = BTreeMap<Option<String>, Vec<&'a String>>;

/// Step 1 of [`detect`]: the release root of the tree's dispatchers, and the dispatchers by
/// variant folder. Errors: [`Error::NoCudnn`], [`Error::SeveralReleases`].
fn release_root<'a>(source: &Path, items: &'a BTreeMap<String, Item>) -> Result<(String, Variants<'a>), Error> {
    let dispatchers: Vec<&String> =
        items.iter().filter(|(p, it)| !matches!(it, Item::Dir) && libname::dispatcher_major(file_name(p)).is_some()).map(|(p, _)| p).collect();
    if dispatchers.is_empty() {
        return Err(Error::NoCudnn { path: source.into() });
    }
    let mut roots: BTreeMap<String, Variants> = BTreeMap::new();
    for d in &dispatchers {
        let (root, variant) = root_of(parent(d));
        roots.entry(root).or_default().entry(variant).or_default().push(d);
    }
    if roots.len() > 1 {
        return Err(Error::SeveralReleases { path: source.into(), roots: roots.keys().map(|r| if r.is_empty() { ".".into() } else { r.clone() }).collect() });
    }
    Ok(roots.into_iter().next().expect("one root"))
}

/// Step 2 of [`detect`]: the CUDA majors and versions that `--cuda`, the source name, the
/// release folder name and a wheel's METADATA claim, each with where it was read.
fn named_evidence(hints: &Hints, root: &str) -> (Claims<u64>, Claims<Version>) {
    let mut cuda: Vec<(u64, String)> = Vec::new();
    let mut versions: Vec<(Version, String)> = Vec::new();
    if let Some(c) = hints.cuda {
        cuda.push((c, "--cuda".into()));
    }
    let names = [(hints.source_name.as_str(), "the source name"), (file_name(root), "the release folder name")];
    for (name, what) in names {
        if let Some(m) = ARCHIVE_NAME.captures(name) {
            cuda.push((m[4].parse().unwrap_or(0), format!("{what} `{name}`")));
            versions.push((m[3].parse().expect("regex digits"), format!("{what} `{name}`")));
        } else if let Some(m) = LEGACY_NAME.captures(name) {
            cuda.push((m[1].parse().unwrap_or(0), format!("{what} `{name}`")));
            versions.push((m[4].parse().expect("regex digits"), format!("{what} `{name}`")));
        } else if let Some(m) = WHEEL_NAME.captures(name) {
            cuda.push((m[1].parse().unwrap_or(0), format!("{what} `{name}`")));
            versions.push((m[2].parse().expect("regex digits"), format!("{what} `{name}`")));
        }
    }
    if let Some((meta_name, text)) = &hints.metadata {
        let field = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(str::trim);
        if let Some(v) = field("Version:").and_then(|v| v.parse::<Version>().ok()) {
            versions.push((v, format!("wheel METADATA ({meta_name})")));
        }
        if let Some(m) = field("Name:").and_then(|n| Regex::new(r"(?i)cudnn[-_]cu(\d+)").unwrap().captures(n).map(|c| c[1].to_string())) {
            cuda.push((m.parse().unwrap_or(0), format!("wheel METADATA ({meta_name})")));
        }
    }
    (cuda, versions)
}

/// Step 3 of [`detect`]: the CUDA variant folder to keep (`None` for a tree without one),
/// chosen by the first CUDA major claimed in `cuda` when the tree holds several; the chosen
/// folder is added to `cuda` as evidence. Errors: [`Error::CudaUnknown`] when there is
/// nothing to choose by, [`Error::CudaConflict`] when no variant has that major.
fn choose_variant(source: &Path, variants: &Variants, cuda: &mut Vec<(u64, String)>) -> Result<Option<String>, Error> {
    let named_cuda = cuda.first().cloned();
    let chosen_variant: Option<String> = if variants.len() == 1 {
        variants.keys().next().cloned().flatten()
    } else {
        let all: Vec<String> = variants.keys().flatten().cloned().collect();
        let Some((want, said_by)) = named_cuda else {
            return Err(Error::CudaUnknown { path: source.into(), variants: all });
        };
        let mut matching: Vec<&String> = all.iter().filter(|v| v.split('.').next() == Some(&want.to_string())).collect();
        matching.sort_by_key(|v| v.parse::<Version>().ok());
        match matching.last() {
            Some(v) => Some((*v).clone()),
            None => {
                return Err(Error::CudaConflict {
                    path: source.into(),
                    // Named as what said it: `--cuda`, the file name, the wheel's METADATA.
                    claims: vec![(want, said_by)],
                    detail: format!("this tree only holds CUDA variants {}", all.join(", ")),
                });
            }
        }
    };
    if let Some(v) = &chosen_variant {
        let major: u64 = v.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
        cuda.push((major, format!("the variant folder `{v}`")));
    }
    Ok(chosen_variant)
}

/// Step 4 of [`detect`]: the items under `root` (relative to it), without the variant
/// folders other than `chosen_variant`; every kept symlink is checked to stay within them.
/// Errors: [`Error::BadMember`].
fn keep_variant(source: &Path, items: &BTreeMap<String, Item>, root: &str, chosen_variant: Option<&str>) -> Result<BTreeMap<String, Item>, Error> {
    let mut keep = BTreeMap::new();
    for (p, it) in items {
        let in_root = root.is_empty() || p.starts_with(&format!("{root}/"));
        if !in_root {
            continue;
        }
        let rel = rel_to(root, p);
        let mut comps = rel.split('/');
        let _first = comps.next();
        if let Some(second) = comps.next()
            && VARIANT.is_match(second)
            && Some(second) != chosen_variant
        {
            continue;
        }
        keep.insert(rel, it.clone());
    }
    // Symlinks were checked against the archive root while extracting; the entry is only
    // the release root (and one variant), so check them again against what is kept: a
    // link may not climb out of the entry nor point at something left behind.
    for (rel, it) in &keep {
        let Item::Symlink { target } = it else { continue };
        let member = if root.is_empty() { rel.clone() } else { format!("{root}/{rel}") };
        let bad = |rule: String| Error::BadMember { archive: source.into(), member: member.clone(), rule };
        let resolved = super::member::resolve_symlink(rel, target).map_err(|r| bad(r.0))?;
        if !resolved.is_empty() && !keep.contains_key(&resolved) {
            return Err(bad(format!("the symlink target `{target}` resolves to `{resolved}`, which is not part of the entry")));
        }
    }
    Ok(keep)
}

/// Step 5 of [`detect`]: the CUDA major all of `cuda` and the libraries agree on, with where
/// it was read. Errors: [`Error::CudaContradicted`], [`Error::CudaConflict`],
/// [`Error::CudaUnknown`].
fn agreed_cuda_major(source: &Path, refs: &References, mut cuda: Vec<(u64, String)>) -> Result<(u64, String), Error> {
    // One set whose libraries name CUDA libraries of two majors cannot load into one process
    // without two majors of a family (docs/loader.md F1).
    let by_library = libraries_naming_cuda(refs);
    if by_library.iter().map(|c| c.0).collect::<BTreeSet<u64>>().len() > 1 {
        return Err(Error::CudaConflict { path: source.into(), claims: by_library, detail: LIBRARIES_NAME_TWO_MAJORS.into() });
    }
    let named_by_libraries = cuda_named_by_libraries(refs);
    if let Some((read, library, loads)) = &named_by_libraries {
        if let Some(claim) = cuda.iter().find(|c| c.0 != *read) {
            return Err(Error::CudaContradicted {
                path: source.into(),
                claim: Box::new(claim.clone()),
                read: *read,
                evidence: Box::new((library.clone(), loads.clone())),
            });
        }
        cuda.insert(0, (*read, format!("the libraries (`{library}` loads `{loads}`)")));
    } else if cuda.len() == 1 && cuda[0].1 == "--cuda" {
        cuda[0].1 = CUDA_FROM_USER.to_string();
    }
    let mut distinct: BTreeSet<u64> = cuda.iter().map(|c| c.0).collect();
    if distinct.len() > 1 {
        return Err(Error::CudaConflict { path: source.into(), claims: cuda, detail: String::new() });
    }
    let Some(cuda_major) = distinct.pop_first() else {
        return Err(Error::CudaUnknown { path: source.into(), variants: Vec::new() });
    };
    let cuda_source = cuda.iter().find(|c| c.0 == cuda_major).map(|c| c.1.clone()).unwrap_or_default();
    Ok((cuda_major, cuda_source))
}

/// Step 6 of [`detect`], the platform: the dispatcher's headers and the platform they name
/// (a Jetson build when the names say `linux-aarch64`). Errors: [`Error::BadLibrary`].
fn dispatcher_platform(
    source: &Path,
    raw: &Path,
    items: &BTreeMap<String, Item>,
    hints: &Hints,
    root: &str,
    dispatcher: &str,
) -> Result<(binfmt::BinaryInfo, Platform), Error> {
    let dispatcher_path = native(raw, &resolve_link(items, dispatcher));
    let info =
        binfmt::inspect(&dispatcher_path).map_err(|e| Error::BadLibrary { path: source.into(), member: dispatcher.to_string(), detail: e.to_string() })?;
    let Some(mut platform) = info.platform else {
        return Err(Error::BadLibrary {
            path: source.into(),
            member: dispatcher.to_string(),
            detail: format!("built for {}, which no cuDNN release targets", info.describe),
        });
    };
    if platform == Platform::LinuxSbsa && (hints.source_name.contains("linux-aarch64") || root.contains("linux-aarch64")) {
        platform = Platform::LinuxAarch64;
    }
    Ok((info, platform))
}

/// Step 6 of [`detect`], the layout: the header (`cudnn_version.h`, else `cudnn.h`) of the
/// chosen variant, and the entry's `bin` / `lib` / `include` folders.
fn entry_layout(keep: &BTreeMap<String, Item>, chosen_variant: Option<&String>, lib_rel: &str, platform: Platform) -> (Option<String>, EntryLayout) {
    let mut layout = EntryLayout::default();
    let in_variant = |p: &str| chosen_variant.is_none_or(|v| p.split('/').any(|c| c == v));
    let header = keep
        .iter()
        .filter(|(p, it)| matches!(it, Item::File { .. }) && in_variant(p))
        .map(|(p, _)| p)
        .filter(|p| matches!(file_name(p).to_ascii_lowercase().as_str(), "cudnn_version.h" | "cudnn.h"))
        .min_by_key(|p| (file_name(p) != "cudnn_version.h", p.len()))
        .cloned();
    if let Some(h) = &header {
        layout.include = Some(parent(h).to_string());
    }
    if platform.is_windows() {
        layout.bin = Some(lib_rel.to_string());
        layout.lib = keep.keys().filter(|p| file_name(p).eq_ignore_ascii_case("cudnn.lib") && in_variant(p)).map(|p| parent(p).to_string()).next();
    } else {
        layout.lib = Some(lib_rel.to_string());
    }
    (header, layout)
}

/// Step 7 of [`detect`]: the file names of the shared libraries in the library folder
/// `lib_rel` (sorted), and the release each file says it is of (where it says one).
/// Errors: [`Error::BadLibrary`] for a library of another machine than the dispatcher.
fn library_set(
    source: &Path,
    raw: &Path,
    root: &str,
    keep: &BTreeMap<String, Item>,
    lib_rel: &str,
    info: &binfmt::BinaryInfo,
    platform: Platform,
) -> Result<(Vec<String>, FileVersions), Error> {
    let mut libraries = Vec::new();
    let mut file_versions: Vec<(String, Version)> = Vec::new();
    for (p, it) in keep {
        if parent(p) != lib_rel || matches!(it, Item::Dir) || !is_library(file_name(p)) {
            continue;
        }
        libraries.push(file_name(p).to_string());
        if let Item::File { .. } = it {
            let member = if root.is_empty() { p.clone() } else { format!("{root}/{p}") };
            // What the file itself says of its release (decisions.md 2: two releases in one
            // set are refused): a dotted name (`libcudnn_ops.so.9.5.0`), the embedded
            // `cudnn_version_*` marker or VERSIONINFO. Unknown is never a mismatch.
            if let Some(l) = libname::parse(file_name(p)) {
                let named = l.version.filter(|v| v.matches('.').count() >= 2).and_then(|v| v.parse().ok());
                if let Some(v) = named.or_else(|| binfmt::library_version(&native(raw, &member)).ok().flatten()) {
                    file_versions.push((file_name(p).to_string(), v));
                }
            }
            if let Ok(other) = binfmt::inspect(&native(raw, &member)) {
                // Same machine as the dispatcher (before the Jetson renaming above).
                if other.platform.is_none() || other.platform != info.platform {
                    return Err(Error::BadLibrary {
                        path: source.into(),
                        member,
                        detail: format!("built for {}, but the dispatcher is {}", other.describe, platform),
                    });
                }
            }
        }
    }
    libraries.sort();
    Ok((libraries, file_versions))
}

/// Step 8 of [`detect`]: the release version that the header, the dispatcher's VERSIONINFO
/// (`file_version`), the names in `versions` and the libraries' own word (`file_versions`)
/// agree on, with where it was read. Errors: [`Error::StaleHeader`],
/// [`Error::VersionUnknown`], [`Error::VersionConflict`], [`Error::MixedReleases`].
#[allow(clippy::too_many_arguments)]
fn agreed_version(
    source: &Path,
    raw: &Path,
    root: &str,
    header: Option<&String>,
    file_versions: &[(String, Version)],
    file_version: Option<Version>,
    dispatcher: &str,
    mut versions: Vec<(Version, String)>,
) -> Result<(Version, String), Error> {
    if let Some(h) = header {
        let text = std::fs::read_to_string(native(raw, &if root.is_empty() { h.clone() } else { format!("{root}/{h}") })).unwrap_or_default();
        if let Some(v) = version::parse_cudnn_header(&text) {
            // A header that disagrees with what the libraries themselves say, when they agree
            // among themselves, is the stale file, not the libraries.
            if let Some((f, lv)) = file_versions.first()
                && file_versions.iter().all(|(_, w)| binfmt::same_release(w, lv))
                && !binfmt::same_release(lv, &v)
            {
                return Err(Error::StaleHeader {
                    path: source.into(),
                    header: Box::new((h.clone(), v.to_string())),
                    library: Box::new((f.clone(), lv.to_string())),
                });
            }
            versions.push((v, format!("`{h}`")));
        }
    }
    if let Some(fv) = file_version {
        versions.push((fv, format!("the VERSIONINFO of `{}`", file_name(dispatcher))));
    }
    // A folder extracted from a wheel has only the 3-part header and would lose its build
    // number: the 4-part release a library states itself (the `cudnn_version_8_9_4_25` marker
    // a wheel's `libcudnn_ops_infer.so.8` carries) completes it, when every library that
    // states one agrees and it only adds parts to what the other sources say.
    let fullest = versions.iter().map(|v| v.0.parts().len()).max().unwrap_or(0);
    if fullest < 4
        && let Some((f, v)) = file_versions.iter().find(|(_, v)| v.parts().len() >= 4)
        && file_versions.iter().all(|(_, w)| binfmt::same_release(w, v))
        && versions.iter().all(|(o, _)| v.starts_with(o))
    {
        versions.push((v.clone(), format!("the version string in `{f}`")));
    }
    let Some(best) = versions.iter().max_by_key(|v| v.0.parts().len()).cloned() else {
        return Err(Error::VersionUnknown { path: source.into() });
    };
    for (v, from) in &versions {
        if !best.0.starts_with(&v.truncated(3)) || !v.starts_with(&best.0.truncated(v.parts().len().min(3))) {
            return Err(Error::VersionConflict {
                path: source.into(),
                claims: Box::new([(best.0.to_string(), best.1.clone()), (v.to_string(), from.clone())]),
            });
        }
    }
    let odd: Vec<(String, String)> = file_versions.iter().filter(|(_, v)| !binfmt::same_release(v, &best.0)).map(|(f, v)| (f.clone(), v.to_string())).collect();
    if !odd.is_empty() {
        return Err(Error::MixedReleases { path: source.into(), release: Box::new((best.0.to_string(), best.1.clone())), odd });
    }
    let dispatcher_major: u64 = libname::dispatcher_major(file_name(dispatcher)).unwrap_or(0);
    if dispatcher_major != best.0.major() {
        return Err(Error::VersionConflict {
            path: source.into(),
            claims: Box::new([
                (best.0.to_string(), best.1.clone()),
                (dispatcher_major.to_string(), format!("the dispatcher name `{}`", file_name(dispatcher))),
            ]),
        });
    }
    Ok(best)
}

/// Step 9 of [`detect`]: the members of the release's set (`found`, [`required_set`]) that
/// the library folder `lib_rel` lacks, as file names (recorded as the entry's `incomplete`).
/// Errors: [`Error::Incomplete`] when some are missing, unless `allow_incomplete`, or unless
/// the set is the table's for a release past its last checked one: then the table cannot
/// refuse, the set is "not verified" (docs/decisions.md 8) and the missing files are recorded.
fn complete_set(source: &Path, version: &Version, found: &set::RequiredSet<String>, lib_rel: &str, allow_incomplete: bool) -> Result<Vec<String>, Error> {
    let missing = found.missing();
    let unverified = found.basis == set::Basis::Table { beyond: true };
    if !missing.is_empty() && !allow_incomplete && !unverified {
        let named_by = found.members.iter().filter(|m| m.file.is_none()).map(|m| m.named_by.clone()).collect();
        return Err(Error::Incomplete {
            path: source.into(),
            set: Box::new(super::IncompleteSet {
                version: version.to_string(),
                major: version.major(),
                basis: found.basis,
                folder: if lib_rel.is_empty() { ".".into() } else { lib_rel.to_string() },
                missing,
                named_by,
            }),
        });
    }
    Ok(missing)
}

/// What the library files of the entry's folder name, read once ([`binfmt::referenced_libraries`]):
/// by path relative to the release root, for every file (not link) in the folder.
type References = BTreeMap<String, binfmt::References>;

/// Step 5 of [`detect`], first half: [`References`] of the library files in `lib_rel` of the
/// kept items. A file that cannot be read as PE or ELF names nothing.
///
/// The files are read side by side, one thread per core (at most 4), largest first: an
/// import ends with this step, and scanning the sections of the real 8.9.4.25 set was most of
/// what ran after the lab's last cuDNN wheel had arrived (perf, docs/performance.md).
fn read_references(raw: &Path, root: &str, keep: &BTreeMap<String, Item>, lib_rel: &str) -> References {
    let files: Vec<(&String, u64)> = keep
        .iter()
        .filter_map(|(p, it)| match it {
            Item::File { size, .. } if parent(p) == lib_rel && is_library(file_name(p)) => Some((p, *size)),
            _ => None,
        })
        .collect();
    let read = |p: &String| {
        let member = if root.is_empty() { p.clone() } else { format!("{root}/{p}") };
        binfmt::referenced_libraries(&native(raw, &member)).ok().map(|found| (p.clone(), found))
    };
    let mut files = files;
    files.sort_by_key(|f| std::cmp::Reverse(f.1));
    crate::sys::pool::map(&files, super::extract::worker_count(), &|(p, _)| read(p)).into_iter().flatten().collect()
}

/// The set of libraries the release in `keep` loads ([`set::walk`]): from the dispatcher
/// (`dispatcher`, relative to the root) through the names the files carry (`refs`), each
/// member looked up in the library folder `lib_rel` by the loader's name (any case on
/// Windows; on Linux the soname or a longer name of its chain, `libcudnn_ops.so.9.5.0`), links
/// followed inside the tree.
pub fn required_set(
    version: &Version,
    platform: Platform,
    keep: &BTreeMap<String, Item>,
    refs: &References,
    dispatcher: &str,
    lib_rel: &str,
) -> set::RequiredSet<String> {
    let os = if platform.is_windows() { libname::Os::Windows } else { libname::Os::Linux };
    let major = version.major();
    let in_folder: Vec<&String> = keep.keys().filter(|p| parent(p) == lib_rel && is_library(file_name(p))).collect();
    let find = |stem: &str, _asker: &String| -> Option<String> {
        let want = libname::sub_library_name(stem, major, os);
        let hit = in_folder.iter().find(|p| {
            let have = file_name(p);
            if os == libname::Os::Windows { have.eq_ignore_ascii_case(&want) } else { have == want || have.starts_with(&format!("{want}.")) }
        })?;
        Some(resolve_link(keep, hit))
    };
    let names_in = |file: &String| refs.get(&resolve_link(keep, file)).map(|r| r.cudnn.clone()).unwrap_or_default();
    set::walk(&dispatcher.to_string(), file_name(dispatcher), major, os, Some(version), names_in, find)
}

/// `cuda_source` of an entry whose CUDA major only the user gave (`--cuda`): its libraries
/// name no CUDA library by major, so nothing could check it (docs/decisions.md, 2).
pub const CUDA_FROM_USER: &str = "--cuda (taken from the user: the libraries name no CUDA library by major)";

/// The `detail` of a [`Error::CudaConflict`] among the libraries themselves (rule F1).
pub const LIBRARIES_NAME_TWO_MAJORS: &str = "one set cannot load CUDA libraries of two majors into one process";

/// The first CUDA library of each major the set's libraries name: `(major, "`<library>`
/// loading `<name>`")`.
fn libraries_naming_cuda(refs: &References) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = Vec::new();
    for (p, found) in refs {
        for (major, name) in &found.cuda {
            if !out.iter().any(|c| c.0 == *major) {
                out.push((*major, format!("`{}` loading `{name}`", file_name(p))));
            }
        }
    }
    out
}

/// The CUDA major the release's libraries name (`libcudnn_adv.so.9` loads `libcublasLt.so.13`;
/// [`binfmt::referenced_cuda_libraries`]), as read into `refs` ([`read_references`]), without
/// loading them. Returns `(major, library, name it loads)` from the first library (by name)
/// naming one; `None` when none names one, or when they name several majors (then nothing is
/// claimed).
fn cuda_named_by_libraries(refs: &References) -> Option<(u64, String, String)> {
    let mut first: Option<(u64, String, String)> = None;
    let mut majors = BTreeSet::new();
    for (p, found) in refs {
        for (major, name) in &found.cuda {
            majors.insert(*major);
            if first.is_none() {
                first = Some((*major, file_name(p).to_string(), name.clone()));
            }
        }
    }
    if majors.len() > 1 { None } else { first }
}

/// Follows symlinks inside the tree (at most 8 hops) to the file a path names.
fn resolve_link(items: &BTreeMap<String, Item>, path: &str) -> String {
    let mut p = path.to_string();
    for _ in 0..8 {
        match items.get(&p) {
            Some(Item::Symlink { target }) => match super::member::resolve_symlink(&p, target) {
                Ok(t) => p = t,
                Err(_) => break,
            },
            _ => break,
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots() {
        assert_eq!(root_of("cudnn-x-archive/bin"), ("cudnn-x-archive".into(), None));
        assert_eq!(root_of("cudnn-x-archive/bin/x64"), ("cudnn-x-archive".into(), None));
        assert_eq!(root_of("CUDNN/v9.5/bin/12.6/x64"), ("CUDNN/v9.5".into(), Some("12.6".into())));
        assert_eq!(root_of("nvidia/cudnn/lib"), ("nvidia/cudnn".into(), None));
        assert_eq!(root_of("cuda/lib64"), ("cuda".into(), None));
        assert_eq!(root_of("lib"), ("".into(), None));
    }

    #[test]
    fn names() {
        let m = ARCHIVE_NAME.captures("cudnn-windows-x86_64-9.5.0.50_cuda12-archive.zip").unwrap();
        assert_eq!((&m[3], &m[4]), ("9.5.0.50", "12"));
        let m = ARCHIVE_NAME.captures("cudnn-linux-x86_64-8.5.0.96_cuda11.5-archive.tar.xz").unwrap();
        assert_eq!((&m[3], &m[4]), ("8.5.0.96", "11"));
        let m = LEGACY_NAME.captures("cudnn-11.2-windows-x64-v8.1.1.33.zip").unwrap();
        assert_eq!((&m[1], &m[4]), ("11", "8.1.1.33"));
        let m = WHEEL_NAME.captures("nvidia_cudnn_cu12-9.5.0.50-py3-none-win_amd64.whl").unwrap();
        assert_eq!((&m[1], &m[2]), ("12", "9.5.0.50"));
        // A dispatcher with its major (the bare `libcudnn.so` names none).
        let dispatcher = |n: &str| libname::dispatcher_major(n).is_some();
        assert!(dispatcher("cudnn64_9.dll") && dispatcher("libcudnn.so.8") && dispatcher("libcudnn.so.8.9.4"));
        assert!(!dispatcher("libcudnn_ops.so.9") && !dispatcher("libcudnn.so") && !dispatcher("cudnn_ops64_9.dll"));
        // Windows names match in any case; Linux names only as the loader spells them (the
        // old pattern matched `LIBCUDNN.SO.9` too). A backup copy is no dispatcher.
        assert!(dispatcher("CUDNN64_9.DLL") && !dispatcher("LIBCUDNN.SO.9"));
        assert!(!dispatcher("libcudnn.so.9.bak") && !dispatcher("cudnn64_9.dll.old"));
    }
}
