//! Fetching cuDNN releases (and the CUDA runtime wheels `toolkit::wheel` builds toolkit roots from) from NVIDIA's redist server or
//! a PyPI index, verified, into the store.
//!
//! Data flow:
//!
//! ```text
//! FetchRequest --nvidia::resolve / pypi::resolve--> Artifact {url, sha256, size}
//!   --(store already holds source.sha256 == artifact.sha256? done)-->
//!   http::Client::download --> <home>/store/.downloads/download-<random>/<file name>
//!   --Store::add(--sha256, --cuda)--> store entry; the download folder is deleted
//! ```
//!
//! Invariants:
//! - Nothing is imported unless its size and SHA-256 match what the manifest or index
//!   published; the hash is computed while the bytes arrive, and `Store::add` checks it again.
//! - No partial file survives an error: a download lives in a temporary file inside a
//!   temporary folder under [`Layout::downloads_dir`], deleted on drop. A crash may leave one
//!   behind; the next fetch (holding the writer lock) deletes other processes' folders first.
//! - Downloads are not kept in `Layout::staging_dir`, because every `Store::add` empties that.
//! - Offline (`--offline`, `CUENV_OFFLINE=1`), nothing touches the network: resolving fails with
//!   [`Error::Offline`] naming what is missing and the URL it needs; an already resolved
//!   [`Artifact`] (e.g. pinned in `lab.lock`) whose sha256 the store holds is still found.
//! - The caller holds the [`WriterLock`] for the whole fetch.

pub mod findlinks;
pub mod http;
pub mod nvidia;
mod prefetch;
pub mod pypi;
mod stream;
pub mod url_rule;

use std::fs;
use std::path::{Path, PathBuf};

use crate::cudnn::platform::Platform;
use crate::cudnn::version::Version;
use crate::error::ExitCode;
use crate::home::layout::Layout;
use crate::home::writer_lock::WriterLock;
use crate::store::entry::EntryMeta;
use crate::store::{AddOptions, Added, Store};
use crate::sys::fsutil;
use crate::sys::progress::Progress;
use crate::sys::sha256::Sha256;

pub use prefetch::{Fetched, Prefetch};

pub use http::Client;

/// Errors of fetching. Each names the URL (or index, or manifest) involved.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("offline: cannot get {what}; that needs {url}")]
    Offline { what: String, url: String },
    #[error("cannot reach {url} (tried {attempts} times)")]
    Connect {
        url: String,
        attempts: u32,
        #[source]
        source: ureq::Error,
    },
    #[error("GET {url}: HTTP {status}{}", if attempts > &1 { format!(" (tried {attempts} times)") } else { String::new() })]
    Status { url: String, status: u16, attempts: u32 },
    #[error("GET {url}: not found (HTTP 404)")]
    NotFound { url: String },
    #[error("download of {url} broke off after {received} bytes{} (tried {attempts} times)", expected.map(|e| format!(" of {e}")).unwrap_or_default())]
    Interrupted {
        url: String,
        received: u64,
        expected: Option<u64>,
        attempts: u32,
        #[source]
        source: std::io::Error,
    },
    #[error("{url}: got {actual} bytes, but {expected} were expected")]
    SizeMismatch { url: String, expected: u64, actual: u64 },
    #[error("{url}: SHA-256 is {actual}, but {expected} was expected")]
    Sha256Mismatch { url: String, expected: Sha256, actual: Sha256 },
    #[error("{url}: not the expected JSON: {detail}")]
    BadJson { url: String, detail: String },
    #[error("no project `{project}` on the index {index}")]
    NoSuchProject { project: String, index: String },
    #[error("`{project}` has no version {version} on {index}{}", if nearby.is_empty() { String::new() } else { format!("; nearby versions: {}", nearby.join(", ")) })]
    NoSuchVersion { project: String, version: String, index: String, nearby: Vec<String> },
    #[error("`{project}` {version} has no wheel for {platform}{}", if offered.is_empty() { " (it has no wheels at all)".to_string() } else { format!("; its wheels: {}", offered.join(", ")) })]
    NoWheel { project: String, version: String, platform: Platform, offered: Vec<String> },
    #[error("no NVIDIA redist manifest for cuDNN {version} under {base} (tried {})", tried.join(", "))]
    NoManifest { version: String, base: String, tried: Vec<String> },
    #[error("cuDNN {version} has no archive for {platform} and CUDA {cuda} at {base}; {}", if offered.is_empty() { "the manifests offer none".to_string() } else { format!("offered: {}", offered.join(", ")) })]
    NoArtifact { version: String, platform: Platform, cuda: u64, base: String, offered: Vec<String> },
    #[error("{url} describes cuDNN {found}, not {wanted}")]
    ManifestVersion { url: String, wanted: String, found: String },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] crate::store::Error),
}

crate::error::diagnose! {
    impl Diagnose for Error {
        transparent Store;
        fn hint(&self) -> Option<String> {
            use Error::*;
            Some(match self {
                Offline { .. } => "drop --offline (or unset CUENV_OFFLINE); without network, copy the wheels into a folder and name it with CUENV_FIND_LINKS=DIR or `[settings] find-links` (`pip download --no-deps --only-binary=:all: <project>==<version>` gets them on another machine), or import a cuDNN archive or wheel with `cuenv store add <file> --sha256 <hex>`".into(),
                Connect { source, .. } if source.to_string().contains("certificate") => "the server's TLS certificate is not trusted: if a proxy intercepts TLS, add its CA to the system store, or point SSL_CERT_FILE at a bundle that holds it".into(),
                Connect { .. } | Interrupted { .. } => "check the network; behind a proxy set HTTPS_PROXY (and NO_PROXY); CUENV_HTTP_RETRIES and CUENV_HTTP_TIMEOUT (seconds) tune retries and timeouts".into(),
                Status { status, .. } if *status >= 500 => "the server failed; try again later, or use the other source (--from nvidia|pypi)".into(),
                Status { .. } => "check the URL; for a mirror, check CUENV_NVIDIA_MIRROR / CUENV_PYPI_INDEX".into(),
                NotFound { .. } => "the index or manifest points at a file the server lacks; check the mirror (CUENV_NVIDIA_MIRROR / CUENV_PYPI_INDEX)".into(),
                SizeMismatch { .. } | Sha256Mismatch { .. } => "the server sent other bytes than the manifest or index publishes; nothing was imported. Try again, or check the mirror or proxy".into(),
                BadJson { .. } => "the URL does not serve a PyPI JSON API or an NVIDIA redist manifest; check CUENV_PYPI_INDEX / CUENV_NVIDIA_MIRROR".into(),
                NoSuchProject { .. } => "check the index URL (CUENV_PYPI_INDEX) and the CUDA major (--cuda)".into(),
                NoSuchVersion { nearby, .. } => {
                    if nearby.is_empty() { "check the version; PyPI wheels need the full 4-part version (e.g. 9.5.0.50)".into() } else { format!("pick one of: {}", nearby.join(", ")) }
                },
                NoWheel { .. } => "pass --platform for another platform, or use --from nvidia".into(),
                NoManifest { .. } => "check the version (NVIDIA publishes redistrib_<version>.json for cuDNN 8.3 and later), or the mirror (CUENV_NVIDIA_MIRROR)".into(),
                NoArtifact { .. } => "pick a CUDA major and platform the release is built for (--cuda, --platform)".into(),
                ManifestVersion { .. } => "the manifest's name and content disagree; check the mirror".into(),
                Write { path, source } => crate::error::io_hint(path, source),
            })
        }

        fn exit_code(&self) -> ExitCode {
            use Error::*;
            match self {
                NoSuchProject { .. } | NoSuchVersion { .. } | NoWheel { .. } | NoManifest { .. } | NoArtifact { .. } => ExitCode::Invalid,
                SizeMismatch { .. } | Sha256Mismatch { .. } | ManifestVersion { .. } | BadJson { .. } => ExitCode::Invalid,
                Offline { .. } | Connect { .. } | Status { .. } | NotFound { .. } | Interrupted { .. } | Write { .. } => ExitCode::Failure,
            }
        }
    }
}

/// Where a release is downloaded from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// NVIDIA's redist server (official `.zip` / `.tar.xz` archives), or a mirror of it.
    Nvidia,
    /// A PyPI index (`nvidia-cudnn-cu<N>` wheels).
    Pypi,
}

impl Source {
    /// `nvidia` or `pypi`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Nvidia => "nvidia",
            Source::Pypi => "pypi",
        }
    }
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Source {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "nvidia" => Ok(Source::Nvidia),
            "pypi" => Ok(Source::Pypi),
            _ => Err(format!("unknown source `{s}` (expected `nvidia` or `pypi`)")),
        }
    }
}

/// NVIDIA's redist folder for cuDNN (docs/facts.md §3).
pub const DEFAULT_NVIDIA_MIRROR: &str = "https://developer.download.nvidia.com/compute/cudnn/redist/";
/// The public PyPI.
pub const DEFAULT_PYPI_INDEX: &str = "https://pypi.org";

/// Where to fetch from, and whether the network may be used.
#[derive(Debug, Clone, Default)]
pub struct Endpoints {
    /// PyPI base URL (the JSON API is under `<index>/pypi/...`); default [`DEFAULT_PYPI_INDEX`].
    pub pypi_index: Option<String>,
    /// The redist folder holding `redistrib_<version>.json`; default [`DEFAULT_NVIDIA_MIRROR`].
    pub nvidia_mirror: Option<String>,
    /// Refuse to touch the network.
    pub offline: bool,
    /// A local folder of wheels asked before the PyPI index ([`findlinks`]; `CUENV_FIND_LINKS`,
    /// `[settings] find-links`).
    pub find_links: Option<PathBuf>,
}

impl Endpoints {
    /// From `CUENV_PYPI_INDEX`, `CUENV_NVIDIA_MIRROR`, `CUENV_FIND_LINKS` and `CUENV_OFFLINE` (read by
    /// [`crate::home::settings::offline`]; a malformed value means off here: the CLI refuses it
    /// before any command runs).
    pub fn from_env() -> Endpoints {
        use crate::home::settings;
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Endpoints {
            pypi_index: var(settings::PYPI_INDEX_VAR),
            nvidia_mirror: var(settings::NVIDIA_MIRROR_VAR),
            offline: crate::home::settings::offline().unwrap_or(false),
            find_links: var(settings::FIND_LINKS_VAR).map(PathBuf::from),
        }
    }

    /// The PyPI index in use, without a trailing `/`.
    pub fn pypi_index(&self) -> String {
        self.pypi_index.as_deref().unwrap_or(DEFAULT_PYPI_INDEX).trim_end_matches('/').to_string()
    }

    /// The NVIDIA redist folder in use, with a trailing `/`.
    pub fn nvidia_mirror(&self) -> String {
        let base = self.nvidia_mirror.as_deref().unwrap_or(DEFAULT_NVIDIA_MIRROR).trim_end_matches('/');
        format!("{base}/")
    }
}

/// What to fetch: one cuDNN release for one CUDA major and platform.
#[derive(Debug, Clone)]
pub struct FetchRequest {
    /// The cuDNN version: 4 parts (`9.5.0.50`), or 3 (`9.5.0`: the build is looked up).
    pub version: Version,
    /// The CUDA major the build is for.
    pub cuda_major: u64,
    /// Where to fetch from.
    pub from: Source,
    /// The platform of the build.
    pub platform: Platform,
    /// URLs and the offline switch.
    pub endpoints: Endpoints,
}

impl FetchRequest {
    /// `cuDNN 9.5.0.50 for CUDA 12 (linux-x86_64) from PyPI`.
    pub fn describe(&self) -> String {
        let from = match self.from {
            Source::Nvidia => "NVIDIA",
            Source::Pypi => "PyPI",
        };
        format!("cuDNN {} for CUDA {} ({}) from {from}", self.version, self.cuda_major, self.platform)
    }
}

/// One downloadable file, as a manifest or index publishes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Artifact {
    /// Absolute URL.
    pub url: String,
    /// The file name to store it under (the URL's last segment): `Store::add` reads the
    /// version and CUDA major from it.
    pub file_name: String,
    /// SHA-256 (lowercase hex in JSON).
    pub sha256: Sha256,
    /// Size in bytes, when published.
    pub size: Option<u64>,
    /// The exact version the manifest or index names (4 parts).
    pub version: String,
}

/// Where a fetched entry came from: what `lab.lock` records.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FetchedFrom {
    /// The artifact's URL.
    pub url: String,
    /// Its SHA-256 (lowercase hex in JSON).
    pub sha256: Sha256,
    /// Its size in bytes (0 when neither published nor downloaded).
    pub size: u64,
    /// False when the store already held an entry imported from these bytes.
    pub downloaded: bool,
}

/// A verified download: a file in its own temporary folder under
/// [`Layout::downloads_dir`], deleted (with the folder) on drop.
///
/// Valid while the caller holds the writer lock (the next fetch empties that folder).
#[derive(Debug)]
pub struct Download {
    dir: tempfile::TempDir,
    path: PathBuf,
    /// Where it came from.
    pub url: String,
    /// Its SHA-256, computed while downloading.
    pub sha256: Sha256,
    /// Its size in bytes.
    pub size: u64,
}

impl Download {
    /// The downloaded file (named like the URL's last segment).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The temporary folder holding it.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// A wheel extracted while it downloaded ([`crate::store::extract::streamed`]), never written
/// whole: its members in a temporary folder under [`Layout::downloads_dir`], deleted on drop.
/// The archive's SHA-256 and size were checked against the published ones before it was
/// handed over; each file's digest is RECORD's (authenticated through that SHA-256) or was
/// computed as it was written.
///
/// Valid while the caller holds the writer lock (the next fetch empties that folder).
#[derive(Debug)]
pub struct Unpacked {
    dir: tempfile::TempDir,
    /// Where it came from.
    pub url: String,
    /// The wheel's file name (the URL's last segment).
    pub file_name: String,
    /// The archive's SHA-256 (the published one: the stream was checked against it).
    pub sha256: Sha256,
    /// Every member, by normalized relative path under [`Unpacked::root`].
    pub items: std::collections::BTreeMap<String, crate::store::extract::Item>,
}

impl Unpacked {
    /// The folder its members were extracted into (`a/b.so` is `root/a/b.so`).
    pub fn root(&self) -> &Path {
        self.dir.path()
    }
}

/// A wheel fetched for its files ([`fetch_wheels`]): downloaded whole, or extracted while it
/// downloaded.
#[derive(Debug)]
pub enum Wheel {
    /// Downloaded whole (the server serves no byte ranges, or the stream could not be used).
    Whole(Download),
    /// Extracted while it downloaded.
    Unpacked(Unpacked),
}

impl Wheel {
    /// Where it came from.
    pub fn url(&self) -> &str {
        match self {
            Wheel::Whole(d) => &d.url,
            Wheel::Unpacked(u) => &u.url,
        }
    }

    /// The archive's SHA-256, checked against the published one.
    pub fn sha256(&self) -> Sha256 {
        match self {
            Wheel::Whole(d) => d.sha256,
            Wheel::Unpacked(u) => u.sha256,
        }
    }

    /// The wheel's file name (e.g. `nvidia_cublas_cu12-12.6.4.1-py3-none-manylinux2014_x86_64.whl`).
    pub fn file_name(&self) -> &str {
        match self {
            Wheel::Whole(d) => d.path.file_name().and_then(|n| n.to_str()).unwrap_or(""),
            Wheel::Unpacked(u) => &u.file_name,
        }
    }
}

/// Resolves `req` to the artifact NVIDIA's manifest or the PyPI index publishes.
///
/// Errors: [`Error::Offline`] offline; lookup errors of [`nvidia::resolve`] / [`pypi::resolve`].
pub fn resolve_cudnn(client: &Client, req: &FetchRequest) -> Result<Artifact, Error> {
    match req.from {
        Source::Nvidia => nvidia::resolve(client, &req.endpoints.nvidia_mirror(), &req.version, req.cuda_major, req.platform, &req.describe()),
        Source::Pypi => {
            let project = pypi::cudnn_project(req.cuda_major);
            resolve_wheel(client, &req.endpoints, &project, &req.version.to_string(), req.platform, &req.describe())
        }
    }
}

/// Finds the wheel of `project` at `version` for `platform`: in the `find_links` folder of
/// `endpoints` first ([`findlinks`]), else on the PyPI index ([`pypi::resolve`]). Offline, a
/// folder that holds other versions of the project answers [`Error::NoSuchVersion`] (so a
/// caller may try another version, as for cuBLAS 11.11 under CUDA 11.8).
///
/// Errors: those of [`findlinks::find`] and [`pypi::resolve`].
pub fn resolve_wheel(client: &Client, endpoints: &Endpoints, project: &str, version: &str, platform: Platform, what: &str) -> Result<Artifact, Error> {
    if let Some(dir) = &endpoints.find_links {
        match findlinks::find(dir, project, version, platform)? {
            findlinks::Found::Wheel(a) => return Ok(a),
            findlinks::Found::OtherVersions(nearby) if endpoints.offline => {
                return Err(Error::NoSuchVersion { project: project.into(), version: version.into(), index: dir.display().to_string(), nearby });
            }
            _ => {}
        }
    }
    pypi::resolve(client, &endpoints.pypi_index(), project, version, platform, what)
}

/// Fetches one cuDNN release into the store: resolve, skip if the store already holds an
/// entry imported from the same bytes, else download (verified) and `Store::add` it with
/// the artifact's sha256 and `req.cuda_major`. The download is deleted afterwards.
///
/// Errors: [`Error`]; on any error the store is unchanged and no download is left behind.
pub fn fetch_cudnn(layout: &Layout, writer: &WriterLock, req: &FetchRequest, progress: &dyn Progress) -> Result<(Added, FetchedFrom), Error> {
    let client = Client::new(req.endpoints.offline);
    let artifact = resolve_cudnn(&client, req)?;
    import_artifact(layout, writer, &client, &artifact, Some(req.cuda_major), progress)
}

/// The store entry imported from a file whose SHA-256 is `sha256`, if any.
pub fn find_by_source_sha256(layout: &Layout, sha256: &Sha256) -> Option<(PathBuf, EntryMeta)> {
    Store::new(layout).find_by_source(sha256)
}

/// Imports a known artifact (for example one pinned in `lab.lock`): returns the entry
/// already imported from these bytes, or downloads, verifies and adds it. For `apply`: the
/// entry is not recorded as added by hand (`store fetch` uses [`import_artifact_by_hand`]).
///
/// Works offline when the store already holds it.
pub fn import_artifact(
    layout: &Layout,
    writer: &WriterLock,
    client: &Client,
    artifact: &Artifact,
    cuda: Option<u64>,
    progress: &dyn Progress,
) -> Result<(Added, FetchedFrom), Error> {
    import_artifact_as(layout, writer, client, artifact, cuda, false, None, progress)
}

/// [`import_artifact`], taking the download from `prefetch` when it holds (or is getting)
/// this artifact ([`Prefetch::take`]), else downloading it here.
pub fn import_artifact_prefetched(
    layout: &Layout,
    writer: &WriterLock,
    client: &Client,
    artifact: &Artifact,
    cuda: Option<u64>,
    prefetch: &Prefetch,
    progress: &dyn Progress,
) -> Result<(Added, FetchedFrom), Error> {
    import_artifact_as(layout, writer, client, artifact, cuda, false, Some(prefetch), progress)
}

/// [`import_artifact`] for `store fetch`: the entry, new or already present, is recorded as
/// added by hand (a gc root until `store remove`, see `Store::hand_added_ids`).
pub fn import_artifact_by_hand(
    layout: &Layout,
    writer: &WriterLock,
    client: &Client,
    artifact: &Artifact,
    cuda: Option<u64>,
    progress: &dyn Progress,
) -> Result<(Added, FetchedFrom), Error> {
    import_artifact_as(layout, writer, client, artifact, cuda, true, None, progress)
}

#[allow(clippy::too_many_arguments)]
fn import_artifact_as(
    layout: &Layout,
    writer: &WriterLock,
    client: &Client,
    artifact: &Artifact,
    cuda: Option<u64>,
    by_hand: bool,
    prefetch: Option<&Prefetch>,
    progress: &dyn Progress,
) -> Result<(Added, FetchedFrom), Error> {
    if let Some((dir, meta)) = find_by_source_sha256(layout, &artifact.sha256) {
        if by_hand {
            Store::new(layout).record_hand_added(writer, &meta.id, &meta.name)?;
        }
        let size = artifact.size.or(meta.source.size).unwrap_or(0);
        let from = FetchedFrom { url: artifact.url.clone(), sha256: artifact.sha256, size, downloaded: false };
        return Ok((Added { meta, dir, existed: true }, from));
    }
    let (fetched, imported_as_asked) = match prefetch.and_then(|p| p.take(artifact)) {
        // A prefetch imports as `apply` does: not by hand.
        Some(r) => (r?, !by_hand),
        None => (stream::import_or_download(layout, writer, client, artifact, cuda, by_hand, progress)?, true),
    };
    let download = match fetched {
        Fetched::Imported(done) if imported_as_asked => return Ok(*done),
        Fetched::Download(d) => d,
        // Imported ahead but not by hand as asked, or unpacked for another use: downloaded here.
        Fetched::Imported(_) | Fetched::Unpacked(_) => download(layout, writer, client, artifact, progress)?,
    };
    // The download hashed the bytes as it wrote them: the import does not read them again.
    let opts = AddOptions { sha256: Some(download.sha256), cuda, source_url: Some(download.url.clone()), allow_incomplete: false, sha256_computed: true };
    let store = Store::new(layout);
    let added = if by_hand { store.add_by_hand(writer, download.path(), &opts, progress)? } else { store.add(writer, download.path(), &opts, progress)? };
    let from = FetchedFrom { url: download.url.clone(), sha256: download.sha256, size: download.size, downloaded: true };
    drop(download);
    Ok((added, from))
}

/// Downloads a wheel of `project` (e.g. `nvidia-cuda-runtime-cu12`) at exactly `version`
/// for `platform` from the PyPI index of `endpoints`, verified against the index's size and
/// sha256. The caller imports it and drops the [`Download`], which deletes it.
pub fn fetch_wheel(
    layout: &Layout,
    writer: &WriterLock,
    endpoints: &Endpoints,
    project: &str,
    version: &str,
    platform: Platform,
    progress: &dyn Progress,
) -> Result<Download, Error> {
    let client = Client::new(endpoints.offline);
    let what = format!("{project} {version} ({platform}) from PyPI");
    let artifact = resolve_wheel(&client, endpoints, project, version, platform, &what)?;
    download(layout, writer, &client, &artifact, progress)
}

/// At most this many downloads run at once ([`fetch_wheels`]).
pub const MAX_PARALLEL_DOWNLOADS: usize = 3;

/// Fetches every wheel of `artifacts` for its files, up to [`MAX_PARALLEL_DOWNLOADS`] at once,
/// each drawn on its own progress line ([`Progress::task`]): extracted while it downloads where
/// the server serves byte ranges, else downloaded whole (`stream::unpack_or_download`).
/// Returns one result per artifact, in their order (the caller reports the first error in that
/// order).
///
/// An artifact `prefetch` holds (or is getting) is taken from it ([`Prefetch::take`]).
pub fn fetch_wheels(
    layout: &Layout,
    writer: &WriterLock,
    client: &Client,
    artifacts: &[Artifact],
    prefetch: Option<&Prefetch>,
    progress: &dyn Progress,
) -> Vec<Result<Wheel, Error>> {
    crate::sys::pool::map_in_order(
        artifacts,
        MAX_PARALLEL_DOWNLOADS,
        &|| progress.task(),
        &|task, a| match prefetch.and_then(|p| p.take(a)) {
            Some(Ok(Fetched::Download(d))) => Ok(Wheel::Whole(d)),
            Some(Ok(Fetched::Unpacked(u))) => Ok(Wheel::Unpacked(u)),
            Some(Err(e)) => Err(e),
            // Only a cuDNN is imported into the store ahead; this file is fetched here.
            Some(Ok(Fetched::Imported(_))) | None => stream::unpack_or_download(layout, writer, client, a, task.as_ref()),
        },
        &mut |_| (),
    )
}

/// Downloads `artifact` into a fresh folder `download-<pid>-<random>` under
/// [`Layout::downloads_dir`] (after deleting folders other processes left there), checking
/// its size and sha256.
pub fn download(layout: &Layout, _writer: &WriterLock, client: &Client, artifact: &Artifact, progress: &dyn Progress) -> Result<Download, Error> {
    let dir = download_dir(layout)?;
    // A wheel of a local folder (find-links) is copied, not downloaded: no network.
    let local = findlinks::local_path(&artifact.url).is_some();
    if !local {
        client.check_online(&artifact.url, &artifact.file_name)?;
    }
    let path = dir.path().join(&artifact.file_name);
    let expect = http::Expect { size: artifact.size, sha256: Some(artifact.sha256) };
    let got = if local { findlinks::copy_local(&artifact.url, &path, &expect)? } else { client.download(&artifact.url, &path, &expect, progress)? };
    Ok(Download { dir, path, url: artifact.url.clone(), sha256: got.sha256, size: got.size })
}

/// A fresh folder `download-<pid>-<random>` under [`Layout::downloads_dir`] (deleted on drop),
/// after deleting the folders other processes left there: under the writer lock, those are
/// left by a crash (this process's own may still be in use: several wheels fetched for one
/// apply).
fn download_dir(layout: &Layout) -> Result<tempfile::TempDir, Error> {
    let root = layout.downloads_dir();
    let mine = format!("download-{}-", std::process::id());
    // Never through a link: one planted where the folder should be is removed itself.
    for p in fsutil::entries_or_self(&root) {
        if !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&mine)) {
            fsutil::remove_tree(&p).map_err(|source| Error::Write { path: p.clone(), source })?;
        }
    }
    fs::create_dir_all(&root).map_err(|source| Error::Write { path: root.clone(), source })?;
    tempfile::Builder::new().prefix(&mine).tempdir_in(&root).map_err(|source| Error::Write { path: root.clone(), source })
}

/// The last segment of `url`'s path, if it is a plain file name; else `download`.
pub fn file_name_of(url: &str) -> String {
    let path = url.split(['?', '#']).next().unwrap_or("");
    let last = path.rsplit('/').next().unwrap_or("");
    let ok = !last.is_empty() && last != "." && last != ".." && !last.contains(['\\', ':', '%']) && !last.starts_with('.');
    if ok { last.to_string() } else { "download".to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names() {
        assert_eq!(
            file_name_of("https://x/a/nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl#sha256=00"),
            "nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl"
        );
        assert_eq!(
            file_name_of("https://x/cudnn/linux-x86_64/cudnn-linux-x86_64-9.5.0.50_cuda12-archive.tar.xz?x=1"),
            "cudnn-linux-x86_64-9.5.0.50_cuda12-archive.tar.xz"
        );
        assert_eq!(file_name_of("https://x/"), "download");
        assert_eq!(file_name_of("https://x/a/.."), "download");
        assert_eq!(file_name_of("https://x/a%2F..%2Fb"), "download");
    }

    #[test]
    fn endpoints_defaults_and_slashes() {
        let e = Endpoints::default();
        assert_eq!(e.pypi_index(), "https://pypi.org");
        assert_eq!(e.nvidia_mirror(), DEFAULT_NVIDIA_MIRROR);
        let e = Endpoints { pypi_index: Some("http://127.0.0.1:1/".into()), nvidia_mirror: Some("http://m/redist".into()), offline: false, find_links: None };
        assert_eq!(e.pypi_index(), "http://127.0.0.1:1");
        assert_eq!(e.nvidia_mirror(), "http://m/redist/");
    }

    #[test]
    fn sources_parse() {
        assert_eq!("pypi".parse::<Source>().unwrap(), Source::Pypi);
        assert_eq!("nvidia".parse::<Source>().unwrap(), Source::Nvidia);
        assert!("conda".parse::<Source>().unwrap_err().contains("expected `nvidia` or `pypi`"));
    }
}
