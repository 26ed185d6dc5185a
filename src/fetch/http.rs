//! A small blocking HTTP client over `ureq` (rustls; no OpenSSL).
//!
//! - Proxies: `ALL_PROXY`, `HTTPS_PROXY`, `HTTP_PROXY` (and lowercase forms) and `NO_PROXY`
//!   are honoured (ureq's `Proxy::try_from_env`, the agent's default; the first one set is
//!   used for both http and https URLs, through a CONNECT tunnel).
//! - TLS: rustls with the operating system's trust store (`rustls-platform-verifier`:
//!   the Windows certificate store; on Linux the system bundle, or `SSL_CERT_FILE` /
//!   `SSL_CERT_DIR`), so a lab's TLS-intercepting proxy CA works as it does for curl and pip.
//! - Timeouts: DNS, connect, waiting for the response head, and each read of the body:
//!   `CUENV_HTTP_TIMEOUT` seconds each (default 30, at least 1). There is no limit on a whole download.
//! - Retries: `CUENV_HTTP_RETRIES` (default 3, at most 10) more attempts, after 0.5 s, 1 s, 2 s..., on
//!   connection errors, a body that breaks off, and HTTP 5xx / 408 / 429. Never on other 4xx,
//!   on TLS errors (an untrusted certificate stays untrusted), nor on a size or sha256
//!   mismatch (the server's answer is deterministic).
//! - Downloads stream through a 1 MiB buffer into a temporary file beside the destination,
//!   hashing SHA-256 as bytes arrive; the file is renamed to the destination only after the
//!   size and hash match. On any error the temporary file is deleted (tempfile's drop). It is
//!   not fsynced: a download is scratch, deleted once imported (the store's copy is durable).
//! - Offline, every request fails with [`Error::Offline`] before any network I/O.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sha2::Digest;

use super::Error;
use crate::sys::progress::Progress;
use crate::sys::sha256::Sha256;

/// What a download must be.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// Exact size in bytes.
    pub size: Option<u64>,
    /// SHA-256.
    pub sha256: Option<Sha256>,
}

/// What a download was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Got {
    /// Size in bytes.
    pub size: u64,
    /// SHA-256.
    pub sha256: Sha256,
}

/// The blocking HTTP client. Cheap to create; holds a connection pool.
#[derive(Debug, Clone)]
pub struct Client {
    agent: ureq::Agent,
    offline: bool,
    retries: u32,
    backoff: Duration,
    /// Set: a download stops at its next read with [`Error::Interrupted`] (no retry).
    cancel: Option<Arc<AtomicBool>>,
}

/// One attempt's failure: worth another try, or final.
enum Try {
    Again(Error),
    Fatal(Error),
}

/// The largest JSON document read (PyPI's project JSON for nvidia-cudnn-cu12 is ~100 kB).
const JSON_LIMIT: u64 = 64 << 20;
/// The download buffer.
const BUF: usize = 1 << 20;

impl Client {
    /// A client; `offline` refuses all network access. Reads `CUENV_HTTP_TIMEOUT` and
    /// `CUENV_HTTP_RETRIES` (see the module docs) and the proxy variables. A malformed
    /// value means the default here: the CLI refuses it before any command runs
    /// ([`crate::home::settings::validate_all`]).
    pub fn new(offline: bool) -> Client {
        use crate::home::settings::{HTTP_RETRIES, HTTP_TIMEOUT};
        let timeout = Some(Duration::from_secs(HTTP_TIMEOUT.get().unwrap_or(HTTP_TIMEOUT.default)));
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_resolve(timeout)
            .timeout_connect(timeout)
            .timeout_recv_response(timeout)
            .timeout_per_read(timeout)
            .user_agent(format!("cuenv/{}", env!("CARGO_PKG_VERSION")))
            .tls_config(ureq::tls::TlsConfig::builder().root_certs(ureq::tls::RootCerts::PlatformVerifier).build())
            .build();
        Client {
            agent: config.into(),
            offline,
            retries: HTTP_RETRIES.get().unwrap_or(HTTP_RETRIES.default) as u32,
            backoff: Duration::from_millis(500),
            cancel: None,
        }
    }

    /// This client, whose downloads stop (with [`Error::Interrupted`], not retried) at their
    /// next read of at most 1 MiB once `flag` is set: for downloads started ahead of need
    /// ([`super::Prefetch`]) that nobody will take.
    pub fn cancellable(&self, flag: Arc<AtomicBool>) -> Client {
        Client { cancel: Some(flag), ..self.clone() }
    }

    /// True when the network must not be used.
    pub fn is_offline(&self) -> bool {
        self.offline
    }

    /// [`Error::Offline`] (naming `what` and `url`) when offline.
    pub fn check_online(&self, url: &str, what: &str) -> Result<(), Error> {
        if self.offline {
            return Err(Error::Offline { what: what.into(), url: url.into() });
        }
        Ok(())
    }

    /// GETs `url` and parses its JSON into `T`; `Ok(None)` on HTTP 404. `what` names the thing being
    /// looked up, for the offline error.
    pub fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str, what: &str) -> Result<Option<T>, Error> {
        self.check_online(url, what)?;
        self.retrying(|n| {
            let Some(mut resp) = self.send(url, n, true)? else { return Ok(None) };
            let text = resp.body_mut().with_config().limit(JSON_LIMIT).read_to_string().map_err(|e| match e {
                ureq::Error::Io(source) => Try::Again(Error::Interrupted { url: url.into(), received: 0, expected: None, attempts: n, source }),
                other => Try::Fatal(Error::BadJson { url: url.into(), detail: other.to_string() }),
            })?;
            serde_json::from_str(&text).map(Some).map_err(|e| Try::Fatal(Error::BadJson { url: url.into(), detail: e.to_string() }))
        })
    }

    /// Downloads `url` to `dest` (whose folder must exist), checking `expect`. The bytes go
    /// to a temporary file in `dest`'s folder, renamed to `dest` once verified.
    pub fn download(&self, url: &str, dest: &Path, expect: &Expect, progress: &dyn Progress) -> Result<Got, Error> {
        self.check_online(url, &dest.file_name().unwrap_or_default().to_string_lossy())?;
        let dir = dest.parent().unwrap_or(Path::new("."));
        self.retrying(|n| {
            let mut resp = self.send(url, n, false)?.expect("404 is an error for downloads");
            let declared = resp.body().content_length();
            if let (Some(want), Some(cl)) = (expect.size, declared)
                && want != cl
            {
                return Err(Try::Fatal(Error::SizeMismatch { url: url.into(), expected: want, actual: cl }));
            }
            let total = expect.size.or(declared);
            let write_err = |source| Try::Fatal(Error::Write { path: dir.into(), source });
            let mut tmp = tempfile::Builder::new().prefix(".part-").tempfile_in(dir).map_err(write_err)?;
            let mut reader = resp.body_mut().as_reader();
            let mut hasher = sha2::Sha256::new();
            let mut buf = vec![0u8; BUF];
            let mut received = 0u64;
            progress.start("download", total.unwrap_or(0));
            let streamed = loop {
                if self.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
                    let source = std::io::Error::other("cancelled: no longer needed");
                    break Err(Try::Fatal(Error::Interrupted { url: url.into(), received, expected: total, attempts: n, source }));
                }
                let k = match reader.read(&mut buf) {
                    Ok(0) => break Ok(()),
                    Ok(k) => k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(source) => break Err(Try::Again(Error::Interrupted { url: url.into(), received, expected: total, attempts: n, source })),
                };
                hasher.update(&buf[..k]);
                if let Err(e) = tmp.write_all(&buf[..k]) {
                    break Err(write_err(e));
                }
                received += k as u64;
                progress.advance(k as u64);
                if let Some(want) = expect.size.filter(|w| received > *w) {
                    break Err(Try::Fatal(Error::SizeMismatch { url: url.into(), expected: want, actual: received }));
                }
            };
            progress.finish();
            streamed?;
            if let Some(want) = expect.size.filter(|w| received != *w) {
                return Err(Try::Fatal(Error::SizeMismatch { url: url.into(), expected: want, actual: received }));
            }
            let sha256 = Sha256::finish(hasher);
            if let Some(want) = expect.sha256.filter(|w| *w != sha256) {
                return Err(Try::Fatal(Error::Sha256Mismatch { url: url.into(), expected: want, actual: sha256 }));
            }
            // No fsync: a download is a scratch copy, deleted once imported, and the import
            // makes its own durable copy; after a crash the next fetch deletes it. Unsynced, a
            // file deleted within the kernel's write-back delay (30 s) never reaches the disk.
            tmp.persist(dest).map_err(|e| Try::Fatal(Error::Write { path: dest.into(), source: e.error }))?;
            Ok(Got { size: received, sha256 })
        })
    }

    /// Bytes `start..end` of `url` (one HTTP range request, retried as a GET is); `Ok(None)`
    /// when the server answers with the whole file instead (it serves no ranges), whose body is
    /// then not read.
    ///
    /// Errors: those of a GET; [`Error::SizeMismatch`] when the range answered is not the one
    /// asked for.
    pub fn range(&self, url: &str, start: u64, end: u64) -> Result<Option<Vec<u8>>, Error> {
        self.check_online(url, "a byte range")?;
        let want = format!("bytes={start}-{}", end.saturating_sub(1));
        self.retrying(|n| {
            let mut resp = self.send_with(url, n, false, Some(&want))?.expect("404 is an error for ranges");
            if resp.status().as_u16() != 206 {
                return Ok(None);
            }
            let said = resp.headers().get("content-range").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
            if !said.starts_with(&format!("bytes {start}-{}/", end.saturating_sub(1))) {
                return Err(Try::Fatal(Error::SizeMismatch { url: url.into(), expected: end - start, actual: 0 }));
            }
            let mut bytes = Vec::with_capacity((end - start) as usize);
            let read = resp.body_mut().as_reader().take(end - start + 1).read_to_end(&mut bytes);
            read.map_err(|source| Try::Again(Error::Interrupted { url: url.into(), received: 0, expected: Some(end - start), attempts: n, source }))?;
            Ok(Some(bytes))
        })
    }

    /// The body of `url`, to read as it arrives (the connection is retried as a GET is; the
    /// body is not: a read error ends the stream). A read stops with an error once this client
    /// is cancelled ([`Client::cancellable`]).
    pub fn open(&self, url: &str) -> Result<Box<dyn Read + Send>, Error> {
        self.check_online(url, "a download")?;
        let resp = self.retrying(|n| Ok(self.send(url, n, false)?.expect("404 is an error for downloads")))?;
        Ok(Box::new(Cancellable { inner: resp.into_body().into_reader(), cancel: self.cancel.clone() }))
    }

    /// Sends one GET. `Ok(None)` for 404 when `none_on_404`.
    fn send(&self, url: &str, attempt: u32, none_on_404: bool) -> Result<Option<ureq::http::Response<ureq::Body>>, Try> {
        self.send_with(url, attempt, none_on_404, None)
    }

    /// Sends one GET, with a `Range` header when `range` is given.
    fn send_with(&self, url: &str, attempt: u32, none_on_404: bool, range: Option<&str>) -> Result<Option<ureq::http::Response<ureq::Body>>, Try> {
        let mut req = self.agent.get(url);
        if let Some(r) = range {
            req = req.header("Range", r);
        }
        let resp = req.call().map_err(|source| {
            // rustls reports certificate and handshake failures as io::ErrorKind::InvalidData.
            let transient = match &source {
                ureq::Error::Io(e) => e.kind() != std::io::ErrorKind::InvalidData,
                ureq::Error::Timeout(_) | ureq::Error::ConnectionFailed | ureq::Error::HostNotFound | ureq::Error::Protocol(_) => true,
                _ => false,
            };
            let e = Error::Connect { url: url.into(), attempts: attempt, source };
            if transient { Try::Again(e) } else { Try::Fatal(e) }
        })?;
        let status = resp.status().as_u16();
        match status {
            200..=299 => Ok(Some(resp)),
            404 if none_on_404 => Ok(None),
            404 => Err(Try::Fatal(Error::NotFound { url: url.into() })),
            408 | 429 | 500..=599 => Err(Try::Again(Error::Status { url: url.into(), status, attempts: attempt })),
            _ => Err(Try::Fatal(Error::Status { url: url.into(), status, attempts: attempt })),
        }
    }

    /// Runs `attempt(n)` for n = 1, 2, ... until it succeeds, fails for good, or the
    /// retries are spent; sleeps 0.5 s, 1 s, 2 s, ... between attempts.
    fn retrying<T>(&self, mut attempt: impl FnMut(u32) -> Result<T, Try>) -> Result<T, Error> {
        let mut n = 1;
        loop {
            match attempt(n) {
                Ok(v) => return Ok(v),
                Err(Try::Fatal(e)) => return Err(e),
                Err(Try::Again(e)) if n > self.retries => return Err(e),
                Err(Try::Again(_)) => std::thread::sleep(self.backoff * 2u32.pow((n - 1).min(6))),
            }
            n += 1;
        }
    }
}

/// A body that stops with an error once its client is cancelled.
struct Cancellable<R> {
    inner: R,
    cancel: Option<Arc<AtomicBool>>,
}

impl<R: Read> Read for Cancellable<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Err(std::io::Error::other("cancelled: no longer needed"));
        }
        self.inner.read(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offline_touches_nothing() {
        let c = Client::new(true);
        let e = c.get_json::<serde_json::Value>("http://127.0.0.1:9/x.json", "cuDNN 9.5.0.50").unwrap_err();
        assert_eq!(e.to_string(), "offline: cannot get cuDNN 9.5.0.50; that needs http://127.0.0.1:9/x.json");
    }

    #[test]
    fn connection_refused_is_retried_then_reported() {
        // Port 9 (discard) is closed on test machines; nothing listens on it.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let mut c = Client::new(false);
        c.retries = 1;
        c.backoff = Duration::from_millis(1);
        let url = format!("http://127.0.0.1:{port}/x.json");
        let e = c.get_json::<serde_json::Value>(&url, "x").unwrap_err();
        assert!(matches!(e, Error::Connect { attempts: 2, .. }), "{e:?}");
        assert_eq!(e.to_string(), format!("cannot reach {url} (tried 2 times)"));
    }
}
