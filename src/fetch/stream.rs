//! Importing a wheel while it downloads over HTTP: the central directory by range requests, then
//! the body once (a cuDNN wheel into the store, [`crate::store::Store::add_streamed`]; a CUDA
//! runtime wheel into a download folder, [`unpack_or_download`]). A wheel the stream cannot
//! take (the server serves no ranges, the stream broke off, an unusual member) is downloaded
//! whole instead ([`super::download`]), for the caller to import as before.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::http::Client;
use super::{Artifact, Error, Fetched, FetchedFrom, Unpacked, Wheel, findlinks};
use crate::home::layout::Layout;
use crate::home::writer_lock::WriterLock;
use crate::store::extract::FileDigests;
use crate::store::extract::streamed::{self, Remote};
use crate::store::{AddOptions, Store};
use crate::sys::progress::Progress;

/// A wheel on an HTTP server, read by range requests and one streamed GET.
struct HttpRemote<'a> {
    client: &'a Client,
    url: String,
    name: PathBuf,
    size: u64,
}

impl Remote for HttpRemote<'_> {
    fn name(&self) -> &Path {
        &self.name
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn range(&mut self, start: u64, end: u64) -> io::Result<Option<Vec<u8>>> {
        self.client.range(&self.url, start, end).map_err(io::Error::other)
    }
    fn body(&mut self) -> io::Result<Box<dyn Read + Send>> {
        self.client.open(&self.url).map_err(io::Error::other)
    }
}

/// `artifact` as a [`Remote`], where it may be imported while it downloads: a wheel on an
/// HTTP(S) server whose size the index publishes, online; `None` otherwise.
fn remote<'a>(client: &'a Client, artifact: &Artifact) -> Option<HttpRemote<'a>> {
    let streamable = !client.is_offline()
        && artifact.file_name.ends_with(".whl")
        && findlinks::local_path(&artifact.url).is_none()
        && (artifact.url.starts_with("http://") || artifact.url.starts_with("https://"));
    let size = artifact.size.filter(|_| streamable)?;
    let shown = artifact.url.split(['#', '?']).next().unwrap_or(&artifact.url);
    Some(HttpRemote { client, url: artifact.url.clone(), name: PathBuf::from(shown), size })
}

/// The outcome of a streamed import of `artifact`: `Ok(None)` when the stream could not do it
/// ([`crate::store::Error::Unstreamable`]: the caller downloads it whole); bytes other than
/// the published ones are [`Error::Sha256Mismatch`], as for a whole download.
fn unless_unstreamable<T>(artifact: &Artifact, r: Result<T, crate::store::Error>) -> Result<Option<T>, Error> {
    match r {
        Ok(t) => Ok(Some(t)),
        Err(crate::store::Error::Unstreamable { .. }) => Ok(None),
        Err(crate::store::Error::Sha256Mismatch { expected, actual, .. }) => Err(Error::Sha256Mismatch { url: artifact.url.clone(), expected, actual }),
        Err(e) => Err(e.into()),
    }
}

/// Imports `artifact` while it downloads where the server allows ([`remote`]), checked against
/// its published SHA-256 and size; where the stream cannot do it (the server serves no ranges,
/// the stream broke off, an unusual member: nothing is left behind), downloads it whole
/// ([`super::download`]) for the caller to import. `by_hand` as for [`Store::add_by_hand`].
///
/// Errors: the store's errors for the archive's content ([`Error::Store`]); bytes other than
/// the published ones are [`Error::Sha256Mismatch`], as for a whole download; the errors of
/// [`super::download`].
pub(super) fn import_or_download(
    layout: &Layout,
    writer: &WriterLock,
    client: &Client,
    artifact: &Artifact,
    cuda: Option<u64>,
    by_hand: bool,
    progress: &dyn Progress,
) -> Result<Fetched, Error> {
    if let Some(mut remote) = remote(client, artifact) {
        let opts = AddOptions { sha256: Some(artifact.sha256), cuda, source_url: Some(artifact.url.clone()), allow_incomplete: false, sha256_computed: false };
        let size = remote.size;
        if let Some(added) = unless_unstreamable(artifact, Store::new(layout).add_streamed(writer, &mut remote, &opts, by_hand, progress))? {
            let from = FetchedFrom { url: artifact.url.clone(), sha256: artifact.sha256, size, downloaded: true };
            return Ok(Fetched::Imported(Box::new((added, from))));
        }
    }
    super::download(layout, writer, client, artifact, progress).map(Fetched::Download)
}

/// Extracts the wheel `artifact` into a fresh folder under [`Layout::downloads_dir`] while it
/// downloads, where the server allows ([`remote`]): checked against its published SHA-256 and
/// size, each file's digest taken from RECORD (authenticated through that SHA-256) or computed
/// as it is written. Where the stream cannot do it (nothing is left behind), downloads it whole
/// ([`super::download`]). What the caller gets is the same either way: the wheel's files,
/// proven to be the published archive's.
///
/// Errors: the store's errors for the archive's content ([`Error::Store`]); bytes other than
/// the published ones are [`Error::Sha256Mismatch`], as for a whole download; the errors of
/// [`super::download`].
pub(super) fn unpack_or_download(layout: &Layout, writer: &WriterLock, client: &Client, artifact: &Artifact, progress: &dyn Progress) -> Result<Wheel, Error> {
    if let Some(mut remote) = remote(client, artifact) {
        let dir = super::download_dir(layout)?;
        let got = streamed::extract(&mut remote, dir.path(), FileDigests::FromRecord, artifact.sha256, progress);
        if let Some(got) = unless_unstreamable(artifact, got)? {
            let (url, file_name, sha256) = (artifact.url.clone(), artifact.file_name.clone(), artifact.sha256);
            return Ok(Wheel::Unpacked(Unpacked { dir, url, file_name, sha256, items: got.items }));
        }
    }
    super::download(layout, writer, client, artifact, progress).map(Wheel::Whole)
}
