//! Reading an import source (zip, wheel, `.tar.xz`, `.tgz`, or a folder) into a staging
//! folder, validating every member and hashing every file in the same streaming pass.
//!
//! Invariants:
//! - Nothing is written outside `raw` (the staging folder), and every member name is
//!   validated ([`super::member`]) before its file is created. Symlinks are created last,
//!   once every file is in place, and no member may lie under a symlink, so no write ever
//!   goes through a link.
//! - Files are streamed through fixed buffers (1 MiB in, 256 KiB out) per worker: memory stays bounded
//!   whatever the member size (the 9.5.0.50 Windows wheel holds a 415 MB DLL).
//! - A member never yields more bytes than its header declares (zip bombs and lying
//!   headers stop at the declared size), and zip members are CRC-checked by the `zip` crate.
//! - The whole expansion is bounded ([`expansion_bound`]): a zip's declared sizes are summed
//!   before anything is written, and no two zip entries may share data (one member listed
//!   300 times); a tar member is refused at its header when its declared size would cross
//!   the bound, so a bomb is never written out.
//! - The input must be a regular file or a folder: it is opened non-blocking and checked, so
//!   a FIFO or device is refused instead of blocking forever.
//! - Zip members are independent, so one thread per core (at most 4), each with its own file
//!   handle, takes them from one queue largest first and inflates, hashes and writes each
//!   (no chunk is handed between threads); the source file's SHA-256 is computed by one more
//!   thread meanwhile, and two more make finished files durable (`durable.rs`).

mod durable;
mod folder;
mod hash;
mod inflate;
pub mod streamed;
mod tar;
mod zip;

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use sha2::Digest;

use self::folder::copy_folder;
pub use self::hash::hash_file;
pub(crate) use self::hash::hash_input;
use self::tar::extract_tar;
use self::zip::{extract_zip, is_wheel};
use super::Error;
use super::member::{self, CaseIndex, Kind, PathIndex};
use crate::sys::progress::Progress;
use crate::sys::sha256::Sha256;

/// The buffer size of one streaming worker, in bytes.
const BUF: usize = 1 << 20;
/// A member may expand at most this many times its compressed size (deflate's own
/// maximum is about 1032:1; real cuDNN libraries compress 2-6:1) ...
const MAX_RATIO: u64 = 200;
/// ... once it is larger than this many bytes (tiny files compress arbitrarily well).
const RATIO_FLOOR: u64 = 4 << 20;
/// All members together may expand to at most this many times the input file's size
/// (real NVIDIA archives and wheels expand 1.5-3x: the 720 MB 8.9.4 wheel gives 1.16 GB) ...
pub const MAX_TOTAL_RATIO: u64 = 20;
/// ... or to this many bytes, whichever is more (small archives) ...
pub const TOTAL_RATIO_FLOOR: u64 = 64 << 20;
/// ... and never to more than this many bytes (a whole release is under 3 GB).
pub const MAX_TOTAL: u64 = 16 << 30;

/// The most bytes the members of an input of `input_size` bytes may expand to:
/// `min(MAX_TOTAL, max(TOTAL_RATIO_FLOOR, MAX_TOTAL_RATIO * input_size))`. Debug builds read a
/// lower cap from `CUENV_TEST_MAX_EXPANSION` (bytes), so tests need not write gigabytes.
pub fn expansion_bound(input_size: u64) -> u64 {
    #[cfg(debug_assertions)]
    let cap = std::env::var(crate::home::settings::TEST_MAX_EXPANSION_VAR).ok().and_then(|v| v.parse().ok()).unwrap_or(MAX_TOTAL);
    #[cfg(not(debug_assertions))]
    let cap = MAX_TOTAL;
    input_size.saturating_mul(MAX_TOTAL_RATIO).max(TOTAL_RATIO_FLOOR).min(cap)
}

/// What kind of input a path holds, detected from its content (magic bytes), not its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// A zip archive (official Windows archive or a legacy `cuda/` zip).
    Zip,
    /// A pip wheel: a zip with a `*.dist-info/RECORD`.
    Wheel,
    /// An xz-compressed tar (official Linux archive).
    TarXz,
    /// A gzip-compressed tar (legacy `.tgz`).
    TarGz,
    /// An already extracted folder.
    Folder,
}

/// Where the SHA-256 of each extracted file comes from (docs/decisions.md 11,
/// docs/performance.md "What an import proves").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileDigests {
    /// Every file is hashed as it is written (unpinned inputs, archives without RECORD).
    Hashed,
    /// A wheel whose archive digest is authenticated (a lab.lock pin, the index's published
    /// digest, `store add --sha256`): a file whose size RECORD states rightly takes its
    /// SHA-256 from RECORD and is not hashed again; every member is still CRC-checked. The
    /// caller must compare the archive's SHA-256 ([`Extracted::source_sha256`]) with the
    /// authenticated one before keeping anything. Other inputs are hashed whatever this says.
    FromRecord,
}

/// One item of an extracted tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A regular file: size in bytes and SHA-256.
    File { size: u64, sha256: Sha256 },
    /// A folder.
    Dir,
    /// A symbolic link; `target` as stored (relative), already checked to stay inside.
    Symlink { target: String },
}

/// The result of extracting a source into a staging folder.
#[derive(Debug, Default)]
pub struct Extracted {
    /// Every item by normalized relative path (`/` separators).
    pub items: BTreeMap<String, Item>,
    /// SHA-256 of the input file's bytes (none for a folder).
    pub source_sha256: Option<Sha256>,
    /// Size of the input file in bytes (none for a folder).
    pub source_size: Option<u64>,
}

/// Detects the kind of `path` from its content.
///
/// Errors: [`Error::Read`] if it cannot be read, [`Error::UnknownInput`] if it is not a
/// zip, xz or gzip file, nor a folder.
pub fn detect_kind(path: &Path) -> Result<SourceKind, Error> {
    let meta = fs::metadata(path).map_err(|source| Error::Read { path: path.into(), source })?;
    if meta.is_dir() {
        return Ok(SourceKind::Folder);
    }
    if !meta.is_file() {
        return Err(special_file(path, &meta));
    }
    let mut magic = [0u8; 6];
    let mut f = open(path)?;
    let n = read_full(&mut f, &mut magic).map_err(|source| Error::Read { path: path.into(), source })?;
    let magic = &magic[..n];
    if magic.starts_with(b"PK\x03\x04") || magic.starts_with(b"PK\x05\x06") {
        return Ok(if is_wheel(path)? { SourceKind::Wheel } else { SourceKind::Zip });
    }
    if magic.starts_with(&[0xFD, b'7', b'z', b'X', b'Z', 0]) {
        return Ok(SourceKind::TarXz);
    }
    if magic.starts_with(&[0x1F, 0x8B]) {
        return Ok(SourceKind::TarGz);
    }
    Err(Error::UnknownInput { path: path.into(), why: "its content is not a zip, .tar.xz or .tgz archive".into() })
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// The refusal of an input that is neither a regular file nor a folder.
fn special_file(path: &Path, meta: &fs::Metadata) -> Error {
    #[allow(unused_mut)]
    let mut what = "a special file";
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        let t = meta.file_type();
        what = if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_block_device() || t.is_char_device() {
            "a device"
        } else {
            what
        };
    }
    #[cfg(not(unix))]
    let _ = meta;
    Error::UnknownInput { path: path.into(), why: format!("it is {what}, not a file or folder") }
}

/// Extracts `source` (of `kind`) into the empty folder `raw`, reporting bytes to `progress`.
/// `computed_sha256` is the SHA-256 this process computed while writing `source` (a
/// download); a zip is then not read a second time to hash it, and [`Extracted`] carries it.
///
/// `digests` says whether a wheel's files may take their SHA-256 from its RECORD
/// ([`FileDigests`]); a plain zip, a tar and a folder are always hashed.
///
/// Errors: any refused member, size or CRC mismatch, truncated archive, archive changed
/// during the import, or I/O error, as an [`Error`] naming the archive and member. On error
/// `raw` may hold partial files; the caller discards the whole staging folder.
pub fn extract(
    source: &Path,
    kind: SourceKind,
    raw: &Path,
    computed_sha256: Option<Sha256>,
    digests: FileDigests,
    progress: &dyn Progress,
) -> Result<Extracted, Error> {
    match kind {
        SourceKind::Wheel => extract_zip(source, raw, computed_sha256, digests, progress),
        SourceKind::Zip => extract_zip(source, raw, computed_sha256, FileDigests::Hashed, progress),
        SourceKind::TarXz => {
            let f = open(source)?;
            extract_tar(source, raw, progress, f, |r| Box::new(xz2::read::XzDecoder::new(r)))
        }
        SourceKind::TarGz => {
            let f = open(source)?;
            extract_tar(source, raw, progress, f, |r| Box::new(flate2::read::GzDecoder::new(r)))
        }
        SourceKind::Folder => copy_folder(source, raw, progress),
    }
}

/// Opens the regular file `path` for reading. On Unix it is opened non-blocking (a FIFO
/// swapped in after [`detect_kind`] cannot block the open) and refused unless it is a
/// regular file.
fn open(path: &Path) -> Result<File, Error> {
    let read_err = |source| Error::Read { path: path.into(), source };
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut opts, libc::O_NONBLOCK);
    let f = opts.open(path).map_err(read_err)?;
    let meta = f.metadata().map_err(read_err)?;
    if !meta.is_file() {
        return Err(special_file(path, &meta));
    }
    Ok(f)
}

/// Joins a normalized `/`-separated relative path onto `base` with native separators.
pub fn native(base: &Path, rel: &str) -> PathBuf {
    let mut p = base.to_path_buf();
    p.extend(rel.split('/').filter(|c| !c.is_empty()));
    p
}

fn write_err(path: &Path) -> impl FnOnce(io::Error) -> Error + '_ {
    move |source| Error::Write { path: path.into(), source }
}

/// Copies `reader` into a new file at `dest`, hashing as it goes. Returns (bytes, SHA-256).
/// Stops with `Ok` after at most `limit` bytes (`u64::MAX` for none) plus one, so callers can
/// tell "more than declared" from "exactly declared".
pub(crate) fn stream_to_file(reader: &mut dyn Read, dest: &Path, limit: u64, progress: &dyn Progress, buf: &mut [u8]) -> Result<(u64, Sha256), StreamError> {
    let mut out = File::create(dest).map_err(StreamError::Write)?;
    let mut hasher = sha2::Sha256::new();
    let mut total = 0u64;
    loop {
        let want = (buf.len() as u64).min(limit.saturating_add(1) - total.min(limit.saturating_add(1))) as usize;
        if want == 0 {
            break;
        }
        let n = match reader.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(StreamError::Read(e)),
        };
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(StreamError::Write)?;
        total += n as u64;
        progress.advance(n as u64);
    }
    out.sync_all().map_err(StreamError::Write)?;
    Ok((total, Sha256::finish(hasher)))
}

/// Why [`stream_to_file`] stopped: reading the source or writing the file failed.
pub(crate) enum StreamError {
    Read(io::Error),
    Write(io::Error),
}

fn corrupt(archive: &Path, e: impl std::fmt::Display) -> Error {
    Error::Corrupt { archive: archive.into(), detail: e.to_string() }
}

/// How many threads copy archive members at once: one per core, at most 4.
pub(crate) fn worker_count() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(1, 4)
}

fn add_parents(items: &mut BTreeMap<String, Item>, path: &str) {
    let mut end = 0;
    while let Some(i) = path[end..].find('/') {
        end += i;
        items.entry(path[..end].to_string()).or_insert(Item::Dir);
        end += 1;
    }
}

/// Creates the symlinks, deferred until every file and folder is in place (so no write
/// goes through a link). Refuses a link whose target goes through another link, or names
/// nothing in the archive.
fn finish_symlinks(source: &Path, raw: &Path, index: &PathIndex, items: &mut BTreeMap<String, Item>, symlinks: Vec<(String, String)>) -> Result<(), Error> {
    let targets: std::collections::HashMap<&str, &str> = symlinks.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    // Check them all before creating any.
    let mut resolved = Vec::with_capacity(symlinks.len());
    for (path, target) in &symlinks {
        let bad = |rule: String| Error::BadMember { archive: source.into(), member: path.clone(), rule };
        let r = member::resolve_symlink_within(path, target, |p| index.is_symlink(p)).map_err(|r| bad(r.0))?;
        if !r.is_empty() && !index.contains(&r) {
            return Err(bad(format!("the symlink target `{target}` resolves to `{r}`, which is not in the archive")));
        }
        resolved.push(r);
    }
    // Where each chain of links ends (what Windows copies); a chain that comes back to a link
    // it passed, or goes on past MAX_LINK_HOPS, is a loop.
    let mut ends = Vec::with_capacity(symlinks.len());
    let mut folder_links = Vec::new();
    for ((path, _), first) in symlinks.iter().zip(&resolved) {
        let bad = |rule: String| Error::BadMember { archive: source.into(), member: path.clone(), rule };
        let mut chain = vec![path.as_str()];
        let mut end = first.clone();
        while let Some((&key, &t)) = targets.get_key_value(end.as_str()) {
            let looped = chain.contains(&key);
            chain.push(key);
            if looped || chain.len() > member::MAX_LINK_HOPS {
                let shown = if chain.len() > 6 { format!("{} -> ... -> {}", chain[..3].join(" -> "), chain[chain.len() - 1]) } else { chain.join(" -> ") };
                let what = if looped { "a symlink loop".to_string() } else { format!("a chain of more than {} symlinks", member::MAX_LINK_HOPS) };
                return Err(bad(format!("it starts {what} ({shown}); nothing can open it")));
            }
            end = member::resolve_symlink(key, t).map_err(|r| bad(r.0))?;
        }
        if end.is_empty() || index.get(&end) == Some(Kind::Dir) {
            folder_links.push((path.clone(), end.clone()));
        }
        ends.push(end);
    }
    if let Some(cycle) = member::folder_link_cycle(&folder_links) {
        let to: std::collections::HashMap<&str, &str> = folder_links.iter().map(|(l, t)| (l.as_str(), t.as_str())).collect();
        let steps: Vec<String> = cycle.iter().map(|l| format!("`{l}` -> `{}`", if to[l.as_str()].is_empty() { "." } else { to[l.as_str()] })).collect();
        return Err(Error::BadMember {
            archive: source.into(),
            member: cycle[0].clone(),
            rule: format!("it leads into a folder that holds it again ({}): a path through it never ends", steps.join(", ")),
        });
    }
    for ((path, target), end) in symlinks.iter().zip(ends) {
        make_symlink(raw, path, target, &end)?;
    }
    for (path, target) in symlinks {
        items.insert(path, Item::Symlink { target });
    }
    Ok(())
}

/// Creates a symlink at `raw/path` pointing to `target`. On Windows, where symlinks need
/// privilege, the file the link chain ends at (`end`, already extracted) is copied instead.
fn make_symlink(raw: &Path, path: &str, target: &str, end: &str) -> Result<(), Error> {
    let dest = native(raw, path);
    #[cfg(unix)]
    {
        let _ = end;
        std::os::unix::fs::symlink(target, &dest).map_err(write_err(&dest))
    }
    #[cfg(not(unix))]
    {
        let _ = target;
        let from = native(raw, end);
        if from.is_dir() {
            return Err(Error::Write { path: dest, source: io::Error::other("symlinks to folders are not supported on Windows") });
        }
        fs::copy(&from, &dest).map(|_| ()).map_err(write_err(&dest))
    }
}

/// The normalized path of archive member `name` of `source`, checked against the names seen
/// so far (two names equal but for case are refused: they collide on Windows); `None` for
/// the archive's root itself. Errors name the member and the rule it broke.
fn admit(source: &Path, case: &mut CaseIndex, name: &str) -> Result<Option<String>, Error> {
    let path = member::normalize(name).map_err(|r| Error::BadMember { archive: source.into(), member: name.to_string(), rule: r.0 })?;
    if path.is_empty() {
        return Ok(None);
    }
    if let Some(prev) = case.insert(&path) {
        return Err(Error::CaseCollision { archive: source.into(), first: prev, second: path });
    }
    Ok(Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_are_listed() {
        let mut items = BTreeMap::new();
        add_parents(&mut items, "a/b/c.dll");
        assert_eq!(items.keys().cloned().collect::<Vec<_>>(), vec!["a", "a/b"]);
    }
}
