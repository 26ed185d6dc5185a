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
//! - Zip members are independent, so they are shared out by size among one thread per core
//!   (at most 4), each with its own file handle, which inflates, hashes and writes its
//!   members chunk by chunk (a chunk is hashed while still in cache, and no chunk is handed
//!   between threads); the source file's SHA-256 is computed by one more thread meanwhile.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};

use sha2::{Digest, Sha256};

use super::Error;
use super::member::{self, CaseIndex, Kind, PathIndex};
use crate::sys::progress::Progress;

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
    let cap = std::env::var("CUENV_TEST_MAX_EXPANSION").ok().and_then(|v| v.parse().ok()).unwrap_or(MAX_TOTAL);
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

/// One item of an extracted tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A regular file: size in bytes and lowercase hex SHA-256.
    File { size: u64, sha256: String },
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
    pub source_sha256: Option<String>,
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

/// A zip is a wheel when its name ends in `.whl` or it holds a top-level `*.dist-info/`
/// folder; a wheel must then have a valid RECORD (checked after extraction), so removing
/// RECORD never turns a wheel into an unchecked plain zip.
fn is_wheel(path: &Path) -> Result<bool, Error> {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("whl")) {
        return Ok(true);
    }
    let Ok(zip) = zip::ZipArchive::new(open(path)?) else { return Ok(false) };
    Ok(zip.file_names_raw().any(|n| {
        let n = String::from_utf8_lossy(n);
        let mut parts = n.split(['/', '\\']);
        matches!((parts.next(), parts.next()), (Some(d), Some(_)) if d.ends_with(".dist-info"))
    }))
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
/// Errors: any refused member, size or CRC mismatch, truncated archive, or I/O error, as
/// an [`Error`] naming the archive and member. On error `raw` may hold partial files; the
/// caller discards the whole staging folder.
pub fn extract(source: &Path, kind: SourceKind, raw: &Path, computed_sha256: Option<String>, progress: &dyn Progress) -> Result<Extracted, Error> {
    match kind {
        SourceKind::Zip | SourceKind::Wheel => extract_zip(source, raw, computed_sha256, progress),
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

/// Copies `reader` into a new file at `dest`, hashing as it goes. Returns (bytes, hex sha256).
/// Stops with `Ok` after at most `limit` bytes (`u64::MAX` for none) plus one, so callers can
/// tell "more than declared" from "exactly declared".
pub(crate) fn stream_to_file(reader: &mut dyn Read, dest: &Path, limit: u64, progress: &dyn Progress, buf: &mut [u8]) -> Result<(u64, String), StreamError> {
    let mut out = File::create(dest).map_err(StreamError::Write)?;
    let mut hasher = Sha256::new();
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
    Ok((total, hex::encode(hasher.finalize())))
}

/// Why [`stream_to_file`] stopped: reading the source or writing the file failed.
pub(crate) enum StreamError {
    Read(io::Error),
    Write(io::Error),
}

/// Hashes an import input (a regular file, opened as [`extract`] opens it) with SHA-256.
/// Returns (size, hex digest). Errors: [`Error::Read`], or [`Error::UnknownInput`] for a
/// special file.
///
/// One thread reads while this one hashes, so the copy out of the page cache overlaps the
/// hashing (a re-import costs this hash and little else, issue 20); they trade
/// [`HASH_BUFFERS`] buffers of [`BUF`] bytes.
pub(crate) fn hash_input(path: &Path) -> Result<(u64, String), Error> {
    let mut f = open(path)?;
    let (full_tx, full_rx) = mpsc::sync_channel::<(Vec<u8>, usize)>(HASH_BUFFERS);
    let (free_tx, free_rx) = mpsc::sync_channel::<Vec<u8>>(HASH_BUFFERS);
    for _ in 0..HASH_BUFFERS {
        free_tx.send(vec![0u8; BUF]).expect("room for the buffers");
    }
    std::thread::scope(|s| {
        let reader = s.spawn(move || -> io::Result<()> {
            for mut buf in free_rx {
                let n = read_full(&mut f, &mut buf)?;
                if n == 0 || full_tx.send((buf, n)).is_err() {
                    break;
                }
            }
            Ok(())
        });
        let mut hasher = Sha256::new();
        let mut total = 0u64;
        for (buf, n) in full_rx {
            hasher.update(&buf[..n]);
            total += n as u64;
            let _ = free_tx.send(buf);
        }
        drop(free_tx);
        reader.join().expect("read thread panicked").map(|()| (total, hex::encode(hasher.finalize())))
    })
    .map_err(|source| Error::Read { path: path.into(), source })
}

/// Buffers in flight between the reading and the hashing thread of [`hash_input`].
const HASH_BUFFERS: usize = 4;

/// Hashes a whole file with SHA-256 (1 MiB reads). Returns (size, hex digest).
pub fn hash_file(path: &Path) -> io::Result<(u64, String)> {
    hash_reader(File::open(path)?)
}

fn hash_reader(mut f: File) -> io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; BUF];
    let mut total = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        total += n as u64;
    }
    Ok((total, hex::encode(hasher.finalize())))
}

// ---------------------------------------------------------------- zip

struct ZipMember {
    index: usize,
    name: String,
    path: String,
    size: u64,
}

fn corrupt(archive: &Path, e: impl std::fmt::Display) -> Error {
    Error::Corrupt { archive: archive.into(), detail: e.to_string() }
}

fn extract_zip(source: &Path, raw: &Path, computed_sha256: Option<String>, progress: &dyn Progress) -> Result<Extracted, Error> {
    let mut zip = zip::ZipArchive::new(open(source)?).map_err(|e| corrupt(source, format!("not a readable zip ({e}); the file may be truncated")))?;
    if zip.has_duplicate_names() {
        // The zip crate keeps one of them; other tools may pick the other.
        return Err(corrupt(source, "two members have the same name, so its content is ambiguous"));
    }
    let mut items = BTreeMap::new();
    let mut case = CaseIndex::default();
    let mut paths = PathIndex::default();
    let mut files = Vec::new();
    let mut symlinks = Vec::new();
    // (local header offset, end of data, index, name) of every entry, to find shared data.
    let mut spans = Vec::with_capacity(zip.len());
    for index in 0..zip.len() {
        let f = zip.by_index_raw(index).map_err(|e| corrupt(source, e))?;
        let name = member::name_from_bytes(f.name_raw())
            .map_err(|r| Error::BadMember { archive: source.into(), member: member::escape_bytes(f.name_raw()), rule: r.0 })?
            .to_string();
        let bad = |rule: String| Error::BadMember { archive: source.into(), member: name.clone(), rule };
        let Some(path) = admit(source, &mut case, &name)? else { continue };
        let start = f.header_start();
        spans.push((start, f.data_start().unwrap_or(start).saturating_add(f.compressed_size()), index, name.clone()));
        let kind = if f.is_dir() {
            Kind::Dir
        } else if f.is_symlink() {
            Kind::Symlink
        } else {
            Kind::File
        };
        paths.claim(&path, kind).map_err(|r| bad(r.0))?;
        if f.is_dir() {
            items.insert(path, Item::Dir);
        } else if f.is_symlink() {
            if f.size() > 4096 {
                return Err(bad("a symlink member longer than 4096 bytes".into()));
            }
            let mut target = String::new();
            // by_index_raw gives the stored bytes; read the decompressed target instead.
            drop(f);
            zip.by_index(index).map_err(|e| corrupt(source, e))?.read_to_string(&mut target).map_err(|e| bad(format!("unreadable symlink target ({e})")))?;
            member::resolve_symlink(&path, &target).map_err(|r| bad(r.0))?;
            symlinks.push((path, target));
        } else {
            let (size, packed) = (f.size(), f.compressed_size());
            if size > RATIO_FLOOR && size / packed.max(1) > MAX_RATIO {
                return Err(Error::Bomb { archive: source.into(), member: name, size, packed, max_ratio: MAX_RATIO });
            }
            files.push(ZipMember { index, name, path, size });
        }
    }
    // No two entries may share bytes: 300 entries naming one member's data would extract it
    // 300 times from one copy.
    spans.sort();
    for w in spans.windows(2) {
        let ((_, end, _, first), (start, _, _, second)) = (&w[0], &w[1]);
        if start < end {
            return Err(Error::BadMember {
                archive: source.into(),
                member: second.clone(),
                rule: format!("its data overlaps that of `{first}` (two central-directory entries share one stored member); refusing a likely zip bomb"),
            });
        }
    }
    let input_size = fs::metadata(source).map_err(|e| Error::Read { path: source.into(), source: e })?.len();
    let declared = files.iter().fold(0u64, |t, m| t.saturating_add(m.size));
    let bound = expansion_bound(input_size);
    if declared > bound {
        return Err(Error::Expansion { archive: source.into(), member: None, total: declared, packed: input_size, bound });
    }
    // Every parent folder of every member exists before the workers start.
    for m in &files {
        add_parents(&mut items, &m.path);
    }
    for (p, _) in &symlinks {
        add_parents(&mut items, p);
    }
    for (path, item) in &items {
        if *item == Item::Dir {
            fs::create_dir_all(native(raw, path)).map_err(write_err(raw))?;
        }
    }
    progress.start("extracting", declared);
    let shared =
        Shared { source, raw, progress, results: Mutex::new(Vec::with_capacity(files.len())), failed: AtomicBool::new(false), first_error: Mutex::new(None) };
    let buckets = balance(files, worker_count(), |m| m.size);
    let source_hash = std::thread::scope(|s| {
        // A SHA-256 this process computed while writing the input is not computed again.
        let hasher = s.spawn(|| match computed_sha256 {
            Some(sha) => Ok((input_size, sha)),
            None => hash_file(source),
        });
        // One thread syncs finished files, so no inflater waits for the disk.
        let (sync_tx, sync_rx) = mpsc::channel::<(File, PathBuf)>();
        let shared = &shared;
        s.spawn(move || {
            for (file, path) in sync_rx {
                if let Err(e) = file.sync_all() {
                    shared.fail(Error::Write { path, source: e });
                }
            }
        });
        for bucket in buckets {
            // One thread per bucket inflates, hashes and writes each of its members in turn:
            // a chunk is hashed while it is still in the core's cache, and no thread waits on
            // another's hand-over (a split inflater/sink pair cost 50,000 context switches
            // per import).
            let sync_tx = sync_tx.clone();
            s.spawn(move || {
                if let Err(e) = member_worker(shared, bucket, &sync_tx) {
                    shared.fail(e);
                }
            });
        }
        drop(sync_tx);
        hasher.join().expect("hash thread panicked")
    });
    progress.finish();
    if let Some(e) = shared.first_error.into_inner().unwrap() {
        return Err(e);
    }
    for (path, item) in shared.results.into_inner().unwrap() {
        items.insert(path, item);
    }
    finish_symlinks(source, raw, &paths, &mut items, symlinks)?;
    let (size, sha) = source_hash.map_err(|source_err| Error::Read { path: source.into(), source: source_err })?;
    Ok(Extracted { items, source_sha256: Some(sha), source_size: Some(size) })
}

/// The output chunk of one worker, in bytes: large enough that the inflater rarely copies
/// into its own 32 KiB window and that writes are few, small enough to stay in the core's
/// L2 cache between inflating a chunk and hashing it.
const CHUNK: usize = 256 << 10;

/// What the zip threads share: the input, the staging folder, and where results and the
/// first error go.
struct Shared<'a> {
    source: &'a Path,
    raw: &'a Path,
    progress: &'a dyn Progress,
    results: Mutex<Vec<(String, Item)>>,
    failed: AtomicBool,
    first_error: Mutex<Option<Error>>,
}

impl Shared<'_> {
    /// Records `e` (the first one wins) and tells every thread to stop.
    fn fail(&self, e: Error) {
        self.failed.store(true, Ordering::Relaxed);
        self.first_error.lock().unwrap().get_or_insert(e);
    }
    fn stopped(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }
}

/// Reads `buf.len()` bytes or fewer at `offset` of `file` (no shared cursor: each thread reads
/// its own members with positional reads).
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    loop {
        #[cfg(unix)]
        let r = std::os::unix::fs::FileExt::read_at(file, buf, offset);
        #[cfg(windows)]
        let r = std::os::windows::fs::FileExt::seek_read(file, buf, offset);
        match r {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// The zip crate's words for a member that yields more than its header declares.
const LARGER: &str = "File is larger than its declared uncompressed size";

/// A member being written: its file, SHA-256, CRC-32 (where the worker checks it) and
/// byte count.
struct Sink {
    file: File,
    dest: PathBuf,
    sha: Sha256,
    crc: Option<crc32fast::Hasher>,
    written: u64,
    /// Bytes whose write-back to disk was started ([`start_writeback`]).
    flushed: u64,
}

/// A member's bytes are sent on to the disk every this many bytes ...
const FLUSH_EVERY: u64 = 8 << 20;

/// ... so that the `fsync` at its end waits for the last few MiB only, not for hundreds of
/// MiB still in the page cache (the 430 MB `libcudnn_engines_precompiled.so.9` kept its import
/// waiting 0.13 s after the last byte). Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`: it
/// starts write-back of `len` bytes at `offset` and returns without waiting; durability still
/// comes from the `fsync`. Elsewhere, and on any error, nothing happens here.
fn start_writeback(file: &File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain syscall on an open file descriptor; no memory is passed.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), offset as libc::off64_t, len as libc::off64_t, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}

impl Sink {
    /// Hashes and writes the next bytes of the member.
    fn put(&mut self, bytes: &[u8], progress: &dyn Progress) -> Result<(), Error> {
        self.sha.update(bytes);
        if let Some(crc) = &mut self.crc {
            crc.update(bytes);
        }
        self.file.write_all(bytes).map_err(write_err(&self.dest))?;
        self.written += bytes.len() as u64;
        if self.written - self.flushed >= FLUSH_EVERY {
            start_writeback(&self.file, self.flushed, self.written - self.flushed);
            self.flushed = self.written;
        }
        progress.advance(bytes.len() as u64);
        Ok(())
    }
}

/// Inflates `members` (stored and deflated ones directly from the file with large positional
/// reads; any other method through the zip crate's reader), hashing and writing each chunk
/// as it comes, checks each member's size and CRC at its end, then passes the file on to be
/// synced. Output stops one byte past the declared size: more is an error, never written.
fn member_worker(shared: &Shared, members: Vec<ZipMember>, sync: &mpsc::Sender<(File, PathBuf)>) -> Result<(), Error> {
    let source = shared.source;
    let mut zip = zip::ZipArchive::new(open(source)?).map_err(|e| corrupt(source, e))?;
    let file = open(source)?;
    let mut input = vec![0u8; BUF];
    let mut buf = vec![0u8; CHUNK];
    let mut dec = flate2::Decompress::new(false);
    for m in members {
        if shared.stopped() {
            return Ok(());
        }
        let dest = native(shared.raw, &m.path);
        let name = m.name.clone();
        let size = m.size;
        let read_err = |e: io::Error| member_read_error(source, &name, e);
        // The zip crate reads and checks the local header (and refuses what it cannot read).
        let mut reader = zip.by_index(m.index).map_err(|e| corrupt(source, format!("member `{}`: {e}", m.name)))?;
        let method = reader.compression();
        let direct = matches!(method, zip::CompressionMethod::Stored | zip::CompressionMethod::Deflated);
        let span = reader.data_start().map(|start| (start, start.saturating_add(reader.compressed_size())));
        let crc = reader.crc32();
        let created = File::create(&dest).map_err(write_err(&dest))?;
        let (direct, span) = match span {
            Some(span) if direct => (true, span),
            _ => (false, (0, 0)),
        };
        // The zip crate's own reader checks the CRC of what it reads; the direct path here.
        let mut sink = Sink { file: created, dest, sha: Sha256::new(), crc: direct.then(crc32fast::Hasher::new), written: 0, flushed: 0 };
        let limit = size.saturating_add(1);
        if !direct {
            // Deflate64 and others: the zip crate's reader checks size and CRC itself.
            loop {
                let cap = (CHUNK as u64).min(limit - sink.written) as usize;
                let mut filled = 0;
                while filled < cap {
                    match reader.read(&mut buf[filled..cap]) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(read_err(e)),
                    }
                }
                if sink.written + filled as u64 > size {
                    return Err(read_err(io::Error::new(io::ErrorKind::InvalidData, LARGER)));
                }
                sink.put(&buf[..filled], shared.progress)?;
                if filled < cap || cap == 0 || shared.stopped() {
                    break;
                }
            }
        } else {
            drop(reader);
            let (mut offset, end) = span;
            let stored = method == zip::CompressionMethod::Stored;
            dec.reset(false);
            let (mut in_pos, mut in_len) = (0usize, 0usize);
            let mut ended = false;
            while !ended {
                let cap = (CHUNK as u64).min(limit - sink.written) as usize;
                let mut filled = 0;
                while filled < cap {
                    if stored {
                        let want = (cap - filled).min((end - offset).min(BUF as u64) as usize);
                        let n = if want == 0 {
                            0
                        } else {
                            read_at(&file, &mut buf[filled..filled + want], offset).map_err(|e| Error::Read { path: source.into(), source: e })?
                        };
                        if n == 0 {
                            ended = true;
                            break;
                        }
                        offset += n as u64;
                        filled += n;
                        continue;
                    }
                    if in_pos == in_len && offset < end {
                        let want = (end - offset).min(BUF as u64) as usize;
                        let n = read_at(&file, &mut input[..want], offset).map_err(|e| Error::Read { path: source.into(), source: e })?;
                        if n == 0 {
                            return Err(read_err(io::ErrorKind::UnexpectedEof.into()));
                        }
                        offset += n as u64;
                        (in_pos, in_len) = (0, n);
                    }
                    let (before_in, before_out) = (dec.total_in(), dec.total_out());
                    let status = dec
                        .decompress(&input[in_pos..in_len], &mut buf[filled..cap], flate2::FlushDecompress::None)
                        .map_err(|e| read_err(io::Error::new(io::ErrorKind::InvalidData, e)))?;
                    let (used, made) = ((dec.total_in() - before_in) as usize, (dec.total_out() - before_out) as usize);
                    in_pos += used;
                    filled += made;
                    if status == flate2::Status::StreamEnd {
                        ended = true;
                        break;
                    }
                    if used == 0 && made == 0 && in_pos == in_len && offset >= end {
                        // The member's bytes end before its deflate stream does.
                        return Err(read_err(io::ErrorKind::UnexpectedEof.into()));
                    }
                }
                if sink.written + filled as u64 > size {
                    return Err(read_err(io::Error::new(io::ErrorKind::InvalidData, LARGER)));
                }
                sink.put(&buf[..filled], shared.progress)?;
                if shared.stopped() {
                    return Ok(());
                }
            }
        }
        let Sink { file, dest, sha, crc: got, written, .. } = sink;
        if got.is_some_and(|got| got.finalize() != crc) {
            return Err(Error::BadCrc { archive: source.into(), member: m.name });
        }
        if written != size {
            return Err(Error::SizeMismatch { archive: source.into(), member: m.name, declared: size, actual: written });
        }
        shared.results.lock().unwrap().push((m.path, Item::File { size: written, sha256: hex::encode(sha.finalize()) }));
        let _ = sync.send((file, dest));
    }
    Ok(())
}

fn member_read_error(archive: &Path, member: &str, e: io::Error) -> Error {
    let text = e.to_string();
    if text.to_ascii_lowercase().contains("checksum") || text.contains("CRC") {
        Error::BadCrc { archive: archive.into(), member: member.into() }
    } else if e.kind() == io::ErrorKind::UnexpectedEof {
        corrupt(archive, format!("member `{member}` ends early; the archive is truncated"))
    } else {
        corrupt(archive, format!("member `{member}`: {text}"))
    }
}

/// How many threads copy archive members at once: one per core, at most 4.
pub(crate) fn worker_count() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(1, 4)
}

/// Splits `items` into at most `n` non-empty buckets of about equal total `size` (bytes;
/// largest first, each to the lightest bucket), so one huge DLL does not serialize the rest
/// behind it. Items of equal size keep their order.
pub(crate) fn balance<T>(mut items: Vec<T>, n: usize, size: impl Fn(&T) -> u64) -> Vec<Vec<T>> {
    items.sort_by_key(|f| std::cmp::Reverse(size(f)));
    let mut buckets: Vec<(u64, Vec<T>)> = (0..n).map(|_| (0, Vec::new())).collect();
    for f in items {
        let lightest = buckets.iter_mut().min_by_key(|b| b.0).expect("n >= 1");
        lightest.0 += size(&f);
        lightest.1.push(f);
    }
    buckets.into_iter().map(|b| b.1).filter(|b| !b.is_empty()).collect()
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

// ---------------------------------------------------------------- tar

/// Counts and hashes the compressed bytes as the decoder pulls them.
struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
    count: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

type Decoder<'a> = Box<dyn Read + 'a>;

fn extract_tar(
    source: &Path,
    raw: &Path,
    progress: &dyn Progress,
    file: File,
    decoder: impl for<'a> FnOnce(&'a mut HashingReader<File>) -> Decoder<'a>,
) -> Result<Extracted, Error> {
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    progress.start("extracting", total);
    let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut hashing = HashingReader { inner: file, hasher: Sha256::new(), count: count.clone() };
    let mut items = BTreeMap::new();
    let mut index = PathIndex::default();
    let mut symlinks = Vec::new();
    {
        let mut archive = tar::Archive::new(decoder(&mut hashing));
        let entries = archive.entries().map_err(|e| corrupt(source, e))?;
        let mut case = CaseIndex::default();
        let mut buf = vec![0u8; BUF];
        let mut unpacked = 0u64;
        let mut last_packed = 0u64;
        let bound = expansion_bound(total);
        for entry in entries {
            let mut entry = entry.map_err(|e| tar_error(source, e))?;
            let raw_name = entry.path_bytes().into_owned();
            let name = member::name_from_bytes(&raw_name)
                .map_err(|r| Error::BadMember { archive: source.into(), member: member::escape_bytes(&raw_name), rule: r.0 })?
                .to_string();
            let bad = |rule: String| Error::BadMember { archive: source.into(), member: name.clone(), rule };
            let Some(path) = admit(source, &mut case, &name)? else { continue };
            let ty = entry.header().entry_type();
            let kind = match ty {
                tar::EntryType::Directory => Some(Kind::Dir),
                tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::Link => Some(Kind::File),
                tar::EntryType::Symlink => Some(Kind::Symlink),
                _ => None,
            };
            if let Some(kind) = kind {
                index.claim(&path, kind).map_err(|r| bad(r.0))?;
            }
            let declared = entry.header().size().map_err(|e| bad(format!("unreadable size ({e})")))?;
            // Files and hard links (copies) are bounded at their header, before any byte is
            // written: the bound is known from the input's size.
            if matches!(ty, tar::EntryType::Regular | tar::EntryType::Continuous | tar::EntryType::Link) {
                let size = if ty == tar::EntryType::Link { link_size(&entry, &items) } else { declared };
                if unpacked.saturating_add(size) > bound {
                    return Err(Error::Expansion { archive: source.into(), member: Some(name), total: unpacked.saturating_add(size), packed: total, bound });
                }
            }
            // Parents first (tar archives need not list folders).
            add_parents(&mut items, &path);
            fs::create_dir_all(native(raw, &path).parent().expect("under raw")).map_err(write_err(raw))?;
            match ty {
                tar::EntryType::Directory => {
                    fs::create_dir_all(native(raw, &path)).map_err(write_err(raw))?;
                    items.insert(path, Item::Dir);
                }
                tar::EntryType::Regular | tar::EntryType::Continuous => {
                    let dest = native(raw, &path);
                    let (n, sha) = match stream_to_file(&mut entry, &dest, declared, &NoAdvance, &mut buf) {
                        Ok(v) => v,
                        Err(StreamError::Write(e)) => return Err(Error::Write { path: dest, source: e }),
                        Err(StreamError::Read(e)) => return Err(tar_error(source, e)),
                    };
                    if n != declared {
                        return Err(Error::Corrupt {
                            archive: source.into(),
                            detail: format!("member `{name}` has {n} of the {declared} bytes its header declares; the archive is truncated"),
                        });
                    }
                    unpacked += n;
                    let packed = count.load(Ordering::Relaxed);
                    progress.advance(packed - last_packed);
                    last_packed = packed;
                    items.insert(path, Item::File { size: n, sha256: sha });
                }
                tar::EntryType::Symlink => {
                    let raw_target = entry.link_name_bytes().ok_or_else(|| bad("a symlink without a target".into()))?;
                    let target = member::name_from_bytes(&raw_target)
                        .map_err(|r| bad(format!("the symlink target `{}`: {}", member::escape_bytes(&raw_target), r.0)))?
                        .to_string();
                    member::resolve_symlink(&path, &target).map_err(|r| bad(r.0))?;
                    symlinks.push((path, target));
                }
                tar::EntryType::Link => {
                    let raw_target = entry.link_name_bytes().ok_or_else(|| bad("a hard link without a target".into()))?;
                    let target = member::name_from_bytes(&raw_target)
                        .map_err(|r| bad(format!("the hard link target `{}`: {}", member::escape_bytes(&raw_target), r.0)))?
                        .to_string();
                    let target = member::normalize(&target).map_err(|r| bad(format!("hard link target: {}", r.0)))?;
                    let Some(Item::File { size, sha256 }) = items.get(&target).cloned() else {
                        return Err(bad(format!("a hard link to `{target}`, which is not an earlier file in the archive")));
                    };
                    fs::copy(native(raw, &target), native(raw, &path)).map_err(write_err(raw))?;
                    unpacked += size;
                    items.insert(path, Item::File { size, sha256 });
                }
                tar::EntryType::XGlobalHeader | tar::EntryType::XHeader | tar::EntryType::GNULongName | tar::EntryType::GNULongLink => {}
                other => return Err(bad(format!("unsupported member type {other:?} (only files, folders and links are allowed)"))),
            }
        }
    }
    finish_symlinks(source, raw, &index, &mut items, symlinks)?;
    // Hash whatever trails the tar end marker too, so the digest covers the whole file.
    io::copy(&mut hashing, &mut io::sink()).map_err(|e| Error::Read { path: source.into(), source: e })?;
    progress.finish();
    let size = count.load(Ordering::Relaxed);
    Ok(Extracted { items, source_sha256: Some(hex::encode(hashing.hasher.finalize())), source_size: Some(size) })
}

/// The size of the earlier file a tar hard link copies (0 when it names none: refused later).
fn link_size<R: Read>(entry: &tar::Entry<R>, items: &BTreeMap<String, Item>) -> u64 {
    let target = entry.link_name_bytes().and_then(|b| std::str::from_utf8(&b).ok().and_then(|t| member::normalize(t).ok()));
    match target.and_then(|t| items.get(&t)) {
        Some(Item::File { size, .. }) => *size,
        _ => 0,
    }
}

fn tar_error(archive: &Path, e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::UnexpectedEof { corrupt(archive, "the compressed stream ends early; the archive is truncated") } else { corrupt(archive, e) }
}

struct NoAdvance;
impl Progress for NoAdvance {
    fn start(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

// ---------------------------------------------------------------- folder

fn copy_folder(source: &Path, raw: &Path, progress: &dyn Progress) -> Result<Extracted, Error> {
    let read_err = |e: walkdir::Error| {
        let path = e.path().map(Path::to_path_buf).unwrap_or_else(|| source.into());
        Error::Read { path, source: e.into() }
    };
    let mut total = 0u64;
    for e in walkdir::WalkDir::new(source) {
        let e = e.map_err(read_err)?;
        if e.file_type().is_file() {
            total += e.metadata().map(|m| m.len()).unwrap_or(0);
        }
    }
    progress.start("copying", total);
    let mut items = BTreeMap::new();
    let mut case = CaseIndex::default();
    let mut index = PathIndex::default();
    let mut buf = vec![0u8; BUF];
    let mut links = Vec::new();
    for e in walkdir::WalkDir::new(source).min_depth(1).sort_by_file_name() {
        let e = e.map_err(read_err)?;
        let rel = e.path().strip_prefix(source).expect("walkdir stays under its root");
        let name = member::name_from_bytes(rel.as_os_str().as_encoded_bytes())
            .map_err(|r| Error::BadMember { archive: source.into(), member: member::escape_bytes(rel.as_os_str().as_encoded_bytes()), rule: r.0 })?
            .to_string();
        let bad = |rule: String| Error::BadMember { archive: source.into(), member: name.clone(), rule };
        let path = member::normalize(&name).map_err(|r| bad(r.0))?;
        if let Some(prev) = case.insert(&path) {
            return Err(Error::CaseCollision { archive: source.into(), first: prev, second: path });
        }
        let dest = native(raw, &path);
        let ft = e.file_type();
        let kind = if ft.is_dir() {
            Kind::Dir
        } else if ft.is_symlink() {
            Kind::Symlink
        } else {
            Kind::File
        };
        index.claim(&path, kind).map_err(|r| bad(r.0))?;
        if ft.is_dir() {
            fs::create_dir_all(&dest).map_err(write_err(&dest))?;
            items.insert(path, Item::Dir);
        } else if ft.is_symlink() {
            let target = fs::read_link(e.path()).map_err(|source| Error::Read { path: e.path().into(), source })?;
            let target = member::name_from_bytes(target.as_os_str().as_encoded_bytes())
                .map_err(|r| bad(format!("the symlink target `{}`: {}", member::escape_bytes(target.as_os_str().as_encoded_bytes()), r.0)))?
                .to_string();
            member::resolve_symlink(&path, &target).map_err(|r| bad(r.0))?;
            links.push((path, target));
        } else if ft.is_file() {
            let mut f = File::open(e.path()).map_err(|source| Error::Read { path: e.path().into(), source })?;
            let (n, sha) = match stream_to_file(&mut f, &dest, u64::MAX - 1, progress, &mut buf) {
                Ok(v) => v,
                Err(StreamError::Write(err)) => return Err(Error::Write { path: dest, source: err }),
                Err(StreamError::Read(err)) => return Err(Error::Read { path: e.path().into(), source: err }),
            };
            items.insert(path, Item::File { size: n, sha256: sha });
        } else {
            return Err(bad("not a file, folder or symlink".into()));
        }
    }
    finish_symlinks(source, raw, &index, &mut items, links)?;
    progress.finish();
    Ok(Extracted { items, source_sha256: None, source_size: None })
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
    fn balance_spreads_the_largest() {
        let m = |i, size| ZipMember { index: i, name: String::new(), path: String::new(), size };
        let b = balance(vec![m(0, 415), m(1, 200), m(2, 150), m(3, 60)], 2, |m| m.size);
        let sums: Vec<u64> = b.iter().map(|v| v.iter().map(|m| m.size).sum()).collect();
        assert_eq!(sums, vec![415, 410]);
    }

    #[test]
    fn parents_are_listed() {
        let mut items = BTreeMap::new();
        add_parents(&mut items, "a/b/c.dll");
        assert_eq!(items.keys().cloned().collect::<Vec<_>>(), vec!["a", "a/b"]);
    }

    /// A zip of two deflated members and one stored member, each `len` bytes.
    fn small_zip(path: &Path, len: usize) {
        let mut zip = zip::ZipWriter::new(File::create(path).unwrap());
        let deflated = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        for (name, opts, byte) in [("lib/a.so", deflated, b'a'), ("lib/b.so", deflated, b'b'), ("include/c.h", stored, b'c')] {
            zip.start_file(name, opts).unwrap();
            zip.write_all(&vec![byte; len]).unwrap();
        }
        zip.finish().unwrap();
    }

    #[test]
    fn a_zip_is_hashed_unless_its_hash_was_computed_while_writing_it() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("x.zip");
        small_zip(&input, 600_000);
        let (size, sha) = hash_file(&input).unwrap();
        let raw = dir.path().join("raw");
        fs::create_dir(&raw).unwrap();
        let got = extract(&input, SourceKind::Zip, &raw, None, &crate::sys::progress::NoProgress).unwrap();
        assert_eq!((got.source_size, got.source_sha256.as_deref()), (Some(size), Some(sha.as_str())));
        let want_a = hex::encode(Sha256::digest(vec![b'a'; 600_000]));
        assert_eq!(got.items["lib/a.so"], Item::File { size: 600_000, sha256: want_a });
        assert_eq!(fs::read(raw.join("include/c.h")).unwrap(), vec![b'c'; 600_000]);
        // Given the hash a download computed, the input is not read again to hash it: the
        // entry records the given value (a wrong one shows it was not recomputed), and every
        // member is still hashed.
        let raw2 = dir.path().join("raw2");
        fs::create_dir(&raw2).unwrap();
        let given = "ab".repeat(32);
        let got2 = extract(&input, SourceKind::Zip, &raw2, Some(given.clone()), &crate::sys::progress::NoProgress).unwrap();
        assert_eq!((got2.source_size, got2.source_sha256), (Some(size), Some(given)));
        assert_eq!(got2.items, got.items);
    }
}
