//! Wheel toolkit roots: CUDA toolkit roots assembled from PyPI wheels, for profiles that take their CUDA side
//! from PyPI instead of an installed toolkit (`cuda = { version = "12.6", from = "pypi" }`).
//!
//! cuDNN needs, at run time, the CUDA runtime (`cudart`), cuBLAS/cuBLASLt and NVRTC of its
//! CUDA major (docs/facts.md §2). Those ship as the wheels `nvidia-cuda-runtime-cu<N>`,
//! `nvidia-cublas-cu<N>` and `nvidia-cuda-nvrtc-cu<N>` (`nvidia/<pkg>/lib/*.so*` on Linux,
//! `nvidia/<pkg>/bin/*.dll` on Windows) up to CUDA 12, and for CUDA 13 as the unsuffixed
//! `nvidia-cuda-runtime`, `nvidia-cublas`, `nvidia-cuda-nvrtc` 13.x, which share one folder
//! (`nvidia/cu13/lib/*.so*`, `nvidia/cu13/bin/x86_64/*.dll`). Their libraries are gathered into one folder of a
//! root laid out like an installed toolkit, with a `version.json`, so `cuenv toolkits`
//! logic (`toolkit::inspect_root`) and views treat it like any toolkit root:
//!
//! ```text
//! <home>/toolkits/cuda-12.6.77-linux-x86_64-<12 hex>/
//!     version.json     {"cuda": {"name": "CUDA SDK", "version": "12.6.77"}}
//!     runtime.toml     platform and the wheels it came from (project, version, url, sha256)
//!     lib/ (Linux) or bin/ (Windows)
//! ```
//!
//! Like store entries, a root is staged in `<home>/toolkits/.tmp-*`, named by the SHA-256 of
//! its libraries, made read-only and published with one rename.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::cudnn::platform::Platform;
use crate::cudnn::version::Version;
use crate::fetch::{self, Endpoints};
use crate::home::layout::Layout;
use crate::home::writer_lock::WriterLock;
use crate::sys::fsutil;
use crate::sys::progress::Progress;

/// One wheel a wheel toolkit root was made from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WheelRecord {
    pub project: String,
    pub version: String,
    pub url: String,
    pub sha256: String,
}

impl WheelRecord {
    /// True when `a` and `b` name the same wheels in the same order: projects, versions and
    /// SHA-256s (compared without regard to case); URLs may differ (another mirror).
    pub fn same_wheels(a: &[WheelRecord], b: &[WheelRecord]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.project == b.project && a.version == b.version && a.sha256.eq_ignore_ascii_case(&b.sha256))
    }
}

/// `runtime.toml` of a wheel toolkit root.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RuntimeMeta {
    /// The CUDA runtime version (the `nvidia-cuda-runtime[-cu<N>]` wheel's version).
    pub version: Version,
    /// The platform of the libraries.
    pub platform: Platform,
    /// The wheels, runtime first.
    pub wheels: Vec<WheelRecord>,
}

/// Errors assembling a wheel toolkit root.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Fetch(#[from] fetch::Error),
    #[error("cannot read the wheel {}", path.display())]
    Wheel {
        path: PathBuf,
        #[source]
        source: zip::result::ZipError,
    },
    #[error(transparent)]
    Extract(#[from] crate::store::Error),
    #[error("the wheel {} holds no {what}", path.display())]
    Empty { path: PathBuf, what: String },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{project} has SHA-256 {served}, but lab.lock pins {pinned}")]
    PinMismatch { project: String, pinned: String, served: String },
}

crate::error::diagnose! {
    impl Diagnose for Error {
        transparent Fetch, Extract;
        fn hint(&self) -> Option<String> {
            match self {
                Error::Wheel { .. } | Error::Empty { .. } => Some("the index served an unexpected wheel; check `pypi-index` / CUENV_PYPI_INDEX".into()),
                Error::Write { path, source } => Some(crate::error::io_hint(path, source)),
                Error::PinMismatch { .. } => Some(
                    "the index serves a different file for this version: check `pypi-index` / CUENV_PYPI_INDEX, or delete `cuda-wheels` from lab.lock to accept it"
                        .into(),
                ),
            }
        }
        fn exit_code(&self) -> crate::error::ExitCode {
            match self {
                Error::PinMismatch { .. } => crate::error::ExitCode::Invalid,
                _ => crate::error::ExitCode::Failure,
            }
        }
    }
}

fn write_err(path: &Path) -> impl FnOnce(io::Error) -> Error + '_ {
    move |source| Error::Write { path: path.into(), source }
}

/// The library folder of a wheel toolkit root for `platform`.
pub fn lib_dir_name(platform: Platform) -> &'static str {
    if platform.is_windows() { "bin" } else { "lib" }
}

/// Every wheel toolkit root under `<home>/toolkits` with its metadata, sorted by version.
pub fn list(layout: &Layout) -> Vec<(PathBuf, RuntimeMeta)> {
    let mut out: Vec<(PathBuf, RuntimeMeta)> = fs::read_dir(layout.toolkits_dir())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| {
            let text = fs::read_to_string(e.path().join("runtime.toml")).ok()?;
            Some((e.path(), toml::from_str(&text).ok()?))
        })
        .collect();
    out.sort_by(|a, b| a.1.version.cmp(&b.1.version));
    out
}

/// The newest wheel toolkit root for `platform` whose version starts with `prefix`.
pub fn find(layout: &Layout, prefix: &Version, platform: Platform) -> Option<PathBuf> {
    list(layout).into_iter().rev().find(|(_, m)| m.platform == platform && m.version.starts_with(prefix)).map(|(p, _)| p)
}

/// Returns the wheel toolkit root for CUDA `prefix` (e.g. `12.6`) on `platform`, assembling it from
/// PyPI wheels when the home has none. The second value is true when it was just made.
///
/// The runtime wheel must match `prefix`; cuBLAS and NVRTC take the newest release of the
/// same `major.minor`, else of the same major (cuBLAS for CUDA 11.8 is 11.11.x). A wheel
/// `prefetch` holds is taken from it ([`fetch::Prefetch::take`]).
pub fn ensure(
    layout: &Layout,
    writer: &WriterLock,
    endpoints: &Endpoints,
    prefix: &Version,
    platform: Platform,
    prefetch: Option<&fetch::Prefetch>,
    progress: &dyn Progress,
) -> Result<(PathBuf, bool), Error> {
    if let Some(root) = find(layout, prefix, platform) {
        return Ok((root, false));
    }
    let major = prefix.major();
    let projects = fetch::pypi::cuda_runtime_projects(major);
    // Looked up in order, then downloaded side by side.
    let client = fetch::Client::new(endpoints.offline);
    let mut artifacts = Vec::new();
    for (i, project) in projects.iter().enumerate() {
        let want = prefix.truncated(2).to_string();
        let what = |v: &str| format!("{project} {v} ({platform}) from PyPI");
        let a = match fetch::resolve_wheel(&client, endpoints, project, &want, platform, &what(&want)) {
            Err(fetch::Error::NoSuchVersion { .. }) if i > 0 => {
                let m = major.to_string();
                fetch::resolve_wheel(&client, endpoints, project, &m, platform, &what(&m))?
            }
            other => other?,
        };
        artifacts.push(a);
    }
    let mut wheels = Vec::new();
    for (project, w) in projects.iter().zip(fetch::fetch_wheels(layout, writer, &client, &artifacts, prefetch, progress)) {
        wheels.push((project.clone(), w?));
    }
    assemble(layout, prefix, platform, wheels)
}

/// Returns the wheel toolkit root made of exactly the `pinned` wheels (from `lab.lock`), fetching
/// each at its pinned version and refusing bytes whose SHA-256 differs from the pin. A wheel
/// `prefetch` holds is taken from it ([`fetch::Prefetch::take`]).
pub fn ensure_pinned(
    layout: &Layout,
    writer: &WriterLock,
    endpoints: &Endpoints,
    pinned: &[WheelRecord],
    platform: Platform,
    prefetch: Option<&fetch::Prefetch>,
    progress: &dyn Progress,
) -> Result<(PathBuf, bool), Error> {
    if let Some(root) = find_pinned(layout, pinned, platform) {
        return Ok((root, false));
    }
    let client = fetch::Client::new(endpoints.offline);
    let mut artifacts = Vec::new();
    for w in pinned {
        let what = format!("{} {} ({platform}) from PyPI", w.project, w.version);
        artifacts.push(fetch::resolve_wheel(&client, endpoints, &w.project, &w.version, platform, &what)?);
    }
    let mut wheels = Vec::new();
    for (w, got) in pinned.iter().zip(fetch::fetch_wheels(layout, writer, &client, &artifacts, prefetch, progress)) {
        let got = got?;
        if w.sha256.parse::<crate::sys::sha256::Sha256>().ok() != Some(got.sha256()) {
            return Err(Error::PinMismatch { project: format!("{}=={}", w.project, w.version), pinned: w.sha256.clone(), served: got.sha256().to_string() });
        }
        wheels.push((w.project.clone(), got));
    }
    let prefix: Version = pinned.first().and_then(|w| w.version.parse().ok()).unwrap_or_else(|| Version::new(&[0]));
    assemble(layout, &prefix, platform, wheels)
}

/// Gathers the libraries of `downloads` into a new wheel toolkit root (or finds the identical one).
/// The runtime root under `<home>/toolkits` built from exactly the `pinned` wheels (same
/// projects, versions and SHA-256s, in order) for `platform`, if there is one.
pub fn find_pinned(layout: &Layout, pinned: &[WheelRecord], platform: Platform) -> Option<PathBuf> {
    let same = |m: &RuntimeMeta| m.platform == platform && WheelRecord::same_wheels(&m.wheels, pinned);
    list(layout).into_iter().find(|(_, m)| same(m)).map(|(root, _)| root)
}

fn assemble(layout: &Layout, prefix: &Version, platform: Platform, fetched: Vec<(String, fetch::Wheel)>) -> Result<(PathBuf, bool), Error> {
    let root = layout.toolkits_dir();
    fs::create_dir_all(&root).map_err(write_err(&root))?;
    if let Ok(rd) = fs::read_dir(&root) {
        for e in rd.flatten().filter(|e| e.file_name().to_string_lossy().starts_with(".tmp-")) {
            let _ = fsutil::remove_tree(&e.path());
        }
    }
    let staging = tempfile::Builder::new().prefix(".tmp-").tempdir_in(&root).map_err(write_err(&root))?;
    let lib = staging.path().join(lib_dir_name(platform));
    fs::create_dir(&lib).map_err(write_err(&lib))?;
    let mut files: Vec<(String, String)> = Vec::new();
    let mut wheels = Vec::new();
    let sources: Vec<Source> = fetched
        .iter()
        .map(|(_, w)| match w {
            fetch::Wheel::Whole(d) => Source::File(d.path(), Some(d.sha256)),
            fetch::Wheel::Unpacked(u) => Source::Unpacked(u),
        })
        .collect();
    files.extend(extract_libraries(&sources, &lib, staging.path(), platform)?);
    for (project, w) in &fetched {
        let version = w.file_name().split('-').nth(1).unwrap_or("").to_string();
        wheels.push(WheelRecord { project: project.clone(), version, url: w.url().to_string(), sha256: w.sha256().to_string() });
    }
    let version: Version = wheels[0].version.parse().unwrap_or_else(|_| prefix.clone());
    files.sort();
    let mut h = Sha256::new();
    for (name, sha) in &files {
        h.update(format!("{name}\t{sha}\n").as_bytes());
    }
    let id = hex::encode(h.finalize());
    let name = format!("cuda-{version}-{platform}-{}", &id[..12]);
    let dest = root.join(&name);
    if dest.exists() {
        return Ok((dest, false));
    }
    let json = serde_json::json!({ "cuda": { "name": "CUDA SDK", "version": version.to_string() } });
    let vj = staging.path().join("version.json");
    fs::write(&vj, format!("{json:#}")).map_err(write_err(&vj))?;
    let meta = RuntimeMeta { version, platform, wheels };
    let mt = staging.path().join("runtime.toml");
    let text = toml::to_string(&meta).map_err(crate::error::unserializable).map_err(write_err(&mt))?;
    fs::write(&mt, text).map_err(write_err(&mt))?;
    fsutil::make_tree_readonly(staging.path()).map_err(write_err(staging.path()))?;
    let tmp = staging.keep();
    fsutil::rename_with_retry(&tmp, &dest).map_err(write_err(&dest))?;
    fsutil::sync_dir(&root);
    Ok((dest, true))
}

/// The file name a wheel member is copied to when it is one of the shared libraries
/// [`extract_libraries`] gathers (`nvidia/<pkg>/<lib|bin>/<file>`, and on Windows also the
/// CUDA 13 wheels' `nvidia/cu13/bin/x86_64/<file>`); `None` for any other member.
fn library_name(name: &str, platform: Platform) -> Option<&str> {
    let parts: Vec<&str> = name.split('/').collect();
    let (first, dir, file) = match parts.as_slice() {
        [first, _pkg, dir, file] => (*first, *dir, *file),
        [first, _pkg, dir, "x86_64", file] if platform.is_windows() => (*first, *dir, *file),
        _ => return None,
    };
    let wanted = if platform.is_windows() { file.to_ascii_lowercase().ends_with(".dll") } else { file.contains(".so") };
    let ok = first == "nvidia" && dir == lib_dir_name(platform) && wanted && !file.is_empty() && !file.contains(['\\', ':']) && file != "..";
    ok.then_some(file)
}

/// A wheel [`extract_libraries`] takes the libraries of.
enum Source<'a> {
    /// A wheel file, with the SHA-256 its download was checked against (the index's published
    /// digest or the lab.lock pin), or `None` (its files are then hashed).
    File(&'a Path, Option<crate::sys::sha256::Sha256>),
    /// A wheel extracted while it downloaded (checked against its published SHA-256).
    Unpacked(&'a fetch::Unpacked),
}

/// Moves the shared libraries of `wheels` (`nvidia/<pkg>/lib/*.so*` or
/// `nvidia/<pkg>/bin/*.dll`; CUDA 13 wheels: `nvidia/cu13/lib/*.so*` or
/// `nvidia/cu13/bin/x86_64/*.dll`) into `dest`; returns (file name, sha256) of each, wheel by
/// wheel, each wheel's by member path. When two wheels hold the same file name, the later
/// wheel's file stays.
///
/// A wheel file is extracted as the store extracts a wheel ([`crate::store::extract::extract`]:
/// members inflated from the mapped archive on one thread per core, each CRC-32 checked,
/// each file synced) into its own folder under
/// `scratch`, and its libraries are then moved into `dest`. A wheel whose archive digest was
/// checked takes its libraries' SHA-256s from its RECORD ([`FileDigests::FromRecord`], the
/// store's rule for an authenticated wheel, docs/decisions.md 11): 1.5 GB of cuBLAS is not
/// hashed again. An [`fetch::Unpacked`] wheel was extracted while it downloaded
/// ([`crate::store::extract::streamed`]: each member CRC-32 checked, each file synced, the
/// same digests); its libraries are moved (copied where its folder is on another volume).
///
/// Errors: [`Error::Empty`] for a wheel without libraries (checked on the central directories
/// before anything is extracted); [`Error::Wheel`], [`Error::Extract`], [`Error::Write`].
///
/// [`FileDigests::FromRecord`]: crate::store::extract::FileDigests::FromRecord
fn extract_libraries(wheels: &[Source], dest: &Path, scratch: &Path, platform: Platform) -> Result<Vec<(String, String)>, Error> {
    use crate::store::extract::{self, FileDigests, Item, SourceKind};
    for w in wheels {
        let (has, path) = match w {
            Source::File(wheel, _) => {
                let f = fs::File::open(wheel).map_err(write_err(wheel))?;
                let zip = zip::ZipArchive::new(io::BufReader::new(f)).map_err(|source| Error::Wheel { path: wheel.to_path_buf(), source })?;
                (zip.file_names().flatten().any(|n| library_name(&n, platform).is_some()), wheel.to_path_buf())
            }
            Source::Unpacked(u) => (u.items.keys().any(|n| library_name(n, platform).is_some()), PathBuf::from(&u.url)),
        };
        if !has {
            return Err(Error::Empty { path, what: format!("nvidia/*/{}/ libraries", lib_dir_name(platform)) });
        }
    }
    let mut out = Vec::new();
    for (i, w) in wheels.iter().enumerate() {
        let raw = scratch.join(format!("wheel-{i}"));
        let extracted;
        let (items, from) = match w {
            Source::File(wheel, sha256) => {
                fs::create_dir_all(&raw).map_err(write_err(&raw))?;
                let digests = if sha256.is_some() { FileDigests::FromRecord } else { FileDigests::Hashed };
                extracted = extract::extract(wheel, SourceKind::Wheel, &raw, *sha256, digests, &crate::sys::progress::NoProgress)?.items;
                (&extracted, raw.as_path())
            }
            Source::Unpacked(u) => (&u.items, u.root()),
        };
        for (path, item) in items {
            let (Some(file), Item::File { sha256, .. }) = (library_name(path, platform), item) else { continue };
            let (at, to) = (extract::native(from, path), dest.join(file));
            if fs::rename(&at, &to).is_err() {
                fs::copy(&at, &to).map_err(write_err(&to))?;
            }
            out.push((file.to_string(), sha256.to_string()));
        }
        if matches!(w, Source::File(..)) {
            fsutil::remove_tree(&raw).map_err(write_err(&raw))?;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn wheel(dir: &Path, name: &str, members: &[(&str, &[u8])]) -> PathBuf {
        let path = dir.join(name);
        let mut zip = zip::ZipWriter::new(fs::File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (m, data) in members {
            zip.start_file(*m, opts).unwrap();
            zip.write_all(data).unwrap();
        }
        zip.finish().unwrap();
        path
    }

    fn sha(b: &[u8]) -> String {
        hex::encode(Sha256::digest(b))
    }

    #[test]
    fn libraries_of_several_wheels_are_copied_and_hashed_in_wheel_order() {
        let t = tempfile::tempdir().unwrap();
        let big = vec![7u8; 3 << 20];
        let a = wheel(t.path(), "a.whl", &[("nvidia/a/__init__.py", b""), ("nvidia/a/lib/liba.so.1", b"a1"), ("nvidia/a/lib/libbig.so.1", &big)]);
        let b = wheel(t.path(), "b.whl", &[("nvidia/b/lib/libb.so.2", b"b2"), ("nvidia/b/include/b.h", b"h"), ("other/lib/libx.so", b"x")]);
        let dest = t.path().join("lib");
        fs::create_dir(&dest).unwrap();
        let got = extract_libraries(&[Source::File(&a, None), Source::File(&b, None)], &dest, t.path(), Platform::LinuxX86_64).unwrap();
        assert_eq!(got, vec![("liba.so.1".to_string(), sha(b"a1")), ("libbig.so.1".to_string(), sha(&big)), ("libb.so.2".to_string(), sha(b"b2"))]);
        assert_eq!(fs::read(dest.join("libbig.so.1")).unwrap(), big);
        let mut names: Vec<String> = fs::read_dir(&dest).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["liba.so.1", "libb.so.2", "libbig.so.1"]);
    }

    #[test]
    fn a_name_two_wheels_share_keeps_the_last_wheels_file() {
        let t = tempfile::tempdir().unwrap();
        let a = wheel(t.path(), "a.whl", &[("nvidia/a/lib/libdup.so", b"first"), ("nvidia/a/lib/liba.so", b"a")]);
        let b = wheel(t.path(), "b.whl", &[("nvidia/b/lib/libdup.so", b"second")]);
        let dest = t.path().join("lib");
        fs::create_dir(&dest).unwrap();
        let got = extract_libraries(&[Source::File(&a, None), Source::File(&b, None)], &dest, t.path(), Platform::LinuxX86_64).unwrap();
        assert_eq!(got, vec![("liba.so".to_string(), sha(b"a")), ("libdup.so".to_string(), sha(b"first")), ("libdup.so".to_string(), sha(b"second"))]);
        assert_eq!(fs::read(dest.join("libdup.so")).unwrap(), b"second");
    }

    #[test]
    fn a_wheel_without_libraries_fails_before_anything_is_copied() {
        let t = tempfile::tempdir().unwrap();
        let a = wheel(t.path(), "a.whl", &[("nvidia/a/lib/liba.so", b"a")]);
        let b = wheel(t.path(), "b.whl", &[("nvidia/b/include/b.h", b"h")]);
        let dest = t.path().join("lib");
        fs::create_dir(&dest).unwrap();
        let e = extract_libraries(&[Source::File(&a, None), Source::File(&b, None)], &dest, t.path(), Platform::LinuxX86_64).unwrap_err();
        assert!(matches!(&e, Error::Empty { path, .. } if path == &b), "{e:?}");
        assert_eq!(fs::read_dir(&dest).unwrap().count(), 0);
    }
}
