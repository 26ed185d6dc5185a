//! Reading a zip or wheel: the members are checked and bounded up front, then shared out by
//! size among worker threads that inflate, hash and write them chunk by chunk.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use sha2::Digest;

use super::durable::{self, Durable};
use super::inflate::{Inflater, MemberError, Method};
use super::{
    Extracted, FileDigests, Item, MAX_RATIO, RATIO_FLOOR, add_parents, admit, corrupt, expansion_bound, finish_symlinks, hash_file, native, open, worker_count,
    write_err,
};
use crate::store::member::{self, CaseIndex, Kind, PathIndex};
use crate::store::{Error, wheel_record};
use crate::sys::progress::Progress;
use crate::sys::sha256::Sha256;

/// A zip is a wheel when its name ends in `.whl` or it holds a top-level `*.dist-info/`
/// folder; a wheel must then have a valid RECORD (checked after extraction), so removing
/// RECORD never turns a wheel into an unchecked plain zip.
pub(super) fn is_wheel(path: &Path) -> Result<bool, Error> {
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
/// The first name the central directory of the zip at `path` (starting at byte `start`)
/// lists twice; `None` when none is or the directory cannot be read. The zip crate keeps
/// one entry per name, so the names are read from the directory's headers here.
fn duplicate_name(path: &Path, start: u64) -> Option<Vec<u8>> {
    use std::io::{BufReader, Seek, SeekFrom};
    let mut r = BufReader::new(File::open(path).ok()?);
    r.seek(SeekFrom::Start(start)).ok()?;
    let mut seen = std::collections::HashSet::new();
    let mut head = [0u8; 46];
    while r.read_exact(&mut head).is_ok() && head[..4] == [0x50, 0x4b, 0x01, 0x02] {
        let len = |at: usize| usize::from(u16::from_le_bytes([head[at], head[at + 1]]));
        let mut name = vec![0u8; len(28)];
        r.read_exact(&mut name).ok()?;
        r.seek_relative(i64::try_from(len(30) + len(32)).ok()?).ok()?;
        if !seen.insert(name.clone()) {
            return Some(name);
        }
    }
    None
}

/// A member to write: where its entry and data are, what it must yield.
pub(super) struct ZipMember {
    pub index: usize,
    pub name: String,
    pub path: String,
    /// Declared size in bytes.
    pub size: u64,
    /// Offset of its local header in the archive.
    pub header: u64,
    /// Compressed size in bytes.
    pub packed: u64,
    pub crc: u32,
    pub method: zip::CompressionMethod,
}

/// What the central directory says an extraction writes, every rule already checked: names
/// ([`admit`]), kinds and paths ([`PathIndex`]), symlink targets, each member's ratio, no two
/// entries sharing data, and the total against [`expansion_bound`].
pub(super) struct Plan {
    pub items: BTreeMap<String, Item>,
    pub paths: PathIndex,
    pub files: Vec<ZipMember>,
    pub symlinks: Vec<(String, String)>,
    /// The files' declared sizes together, in bytes.
    pub declared: u64,
}

/// Checks the central directory of `zip` (an archive of `input_size` bytes named `source`)
/// and says what to write ([`Plan`]). With `local_headers`, each member's local header is read
/// too (for where its data ends); without (an archive still streaming in), a member's data is
/// taken to end no sooner than its header, name and compressed bytes allow, and the stream
/// checks the rest ([`super::streamed`]).
///
/// Errors: [`Error::BadMember`], [`Error::CaseCollision`], [`Error::Bomb`], [`Error::Expansion`],
/// [`Error::Corrupt`] for an unreadable directory.
pub(super) fn plan<R: Read + io::Seek>(source: &Path, zip: &mut zip::ZipArchive<R>, input_size: u64, local_headers: bool) -> Result<Plan, Error> {
    if zip.has_duplicate_names() {
        // The zip crate keeps one of them; other tools may pick the other.
        let rule = "two members have this name, so the content is ambiguous (tools differ on which one they extract)".to_string();
        return Err(match local_headers.then(|| duplicate_name(source, zip.central_directory_start())).flatten() {
            Some(name) => Error::BadMember { archive: source.into(), member: member::escape_bytes(&name), rule },
            None => corrupt(source, "two members have the same name, so its content is ambiguous"),
        });
    }
    let mut items = BTreeMap::new();
    let mut case = CaseIndex::default();
    let mut paths = PathIndex::default();
    let mut files = Vec::new();
    let mut symlinks = Vec::new();
    // (local header offset, end of data, index, name) of every entry, to find shared data.
    let mut spans = Vec::with_capacity(zip.len());
    for index in 0..zip.len() {
        let f = zip.by_index_data(index).map_err(|e| corrupt(source, e))?;
        let name = member::name_from_bytes(f.name_raw())
            .map_err(|r| Error::BadMember { archive: source.into(), member: member::escape_bytes(f.name_raw()), rule: r.0 })?
            .to_string();
        let bad = |rule: String| Error::BadMember { archive: source.into(), member: name.clone(), rule };
        let Some(path) = admit(source, &mut case, &name)? else { continue };
        let (start, packed, size, crc, method) = (f.header_start(), f.compressed_size(), f.size(), f.crc32(), f.compression());
        let (is_dir, is_symlink) = (f.is_dir(), f.is_symlink());
        let name_len = f.name_raw().len() as u64;
        drop(f);
        let data_start = if local_headers {
            zip.by_index_raw(index).map_err(|e| corrupt(source, e))?.data_start().unwrap_or(start)
        } else {
            start.saturating_add(30 + name_len)
        };
        spans.push((start, data_start.saturating_add(packed), index, name.clone()));
        let kind = if is_dir {
            Kind::Dir
        } else if is_symlink {
            Kind::Symlink
        } else {
            Kind::File
        };
        paths.claim(&path, kind).map_err(|r| bad(r.0))?;
        if is_dir {
            items.insert(path, Item::Dir);
        } else if is_symlink {
            if size > 4096 {
                return Err(bad("a symlink member longer than 4096 bytes".into()));
            }
            let mut target = String::new();
            zip.by_index(index).map_err(|e| corrupt(source, e))?.read_to_string(&mut target).map_err(|e| bad(format!("unreadable symlink target ({e})")))?;
            member::resolve_symlink(&path, &target).map_err(|r| bad(r.0))?;
            symlinks.push((path, target));
        } else {
            if size > RATIO_FLOOR && size / packed.max(1) > MAX_RATIO {
                return Err(Error::Bomb { archive: source.into(), member: name, size, packed, max_ratio: MAX_RATIO });
            }
            files.push(ZipMember { index, name, path, size, header: start, packed, crc, method });
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
    let declared = files.iter().fold(0u64, |t, m| t.saturating_add(m.size));
    let bound = expansion_bound(input_size);
    if declared > bound {
        return Err(Error::Expansion { archive: source.into(), member: None, total: declared, packed: input_size, bound });
    }
    // Every parent folder of every member is listed.
    for m in &files {
        add_parents(&mut items, &m.path);
    }
    for (p, _) in &symlinks {
        add_parents(&mut items, p);
    }
    Ok(Plan { items, paths, files, symlinks, declared })
}

/// Creates every folder `items` lists under `raw`.
pub(super) fn make_dirs(raw: &Path, items: &BTreeMap<String, Item>) -> Result<(), Error> {
    for (path, item) in items {
        if *item == Item::Dir {
            fs::create_dir_all(native(raw, path)).map_err(write_err(raw))?;
        }
    }
    Ok(())
}

pub(super) fn extract_zip(
    source: &Path,
    raw: &Path,
    computed_sha256: Option<Sha256>,
    digests: FileDigests,
    progress: &dyn Progress,
) -> Result<Extracted, Error> {
    let input_file = open(source)?;
    let stamp = stamp(&input_file);
    let mut zip = zip::ZipArchive::new(open(source)?).map_err(|e| corrupt(source, format!("not a readable zip ({e}); the file may be truncated")))?;
    let input_size = fs::metadata(source).map_err(|e| Error::Read { path: source.into(), source: e })?.len();
    let Plan { mut items, paths, files, symlinks, declared } = plan(source, &mut zip, input_size, true)?;
    make_dirs(raw, &items)?;
    let given = match digests {
        FileDigests::Hashed => HashMap::new(),
        FileDigests::FromRecord => record_digests(&mut zip, &files),
    };
    // SAFETY: the mapping is only read. The archive is a file the caller named or a download
    // this process wrote under the writer lock; were it changed while mapped, the stamp check
    // below refuses the import (a file cut short under the mapping would end the process with
    // SIGBUS, as under any reader that maps its input; nothing is published then, and the
    // staging folder is removed by the next import).
    let map = unsafe { memmap2::Mmap::map(&input_file) }.map_err(|e| Error::Read { path: source.into(), source: e })?;
    progress.start("extracting", declared);
    let shared = Shared {
        source,
        raw,
        progress,
        map: &map,
        digests: &given,
        results: Mutex::new(Vec::with_capacity(files.len())),
        failed: AtomicBool::new(false),
        first_error: Mutex::new(None),
    };
    // Largest first, each worker taking the next member when it is done with one: a worker
    // left with the 635 MB `libcudnn_cnn_infer.so.8` of 8.9.4.25 no longer leaves the other
    // core idle while it finishes a bucket fixed up front (docs/performance.md).
    let workers = worker_count().min(files.len()).max(1);
    let queue = crate::sys::pool::Queue::largest_first(files, |m| m.size);
    let source_hash = std::thread::scope(|s| {
        // A SHA-256 this process computed while writing the input is not computed again.
        let hasher = s.spawn(|| match computed_sha256 {
            Some(sha) => Ok((input_size, sha)),
            None => hash_file(source),
        });
        // Two threads start write-back and sync finished files, so no inflater waits for the
        // disk (durable.rs).
        let (durable, synced) = durable::spawn(s);
        let shared = &shared;
        let queue = &queue;
        for _ in 0..workers {
            // Each worker inflates, hashes and writes the members it takes in turn: a chunk is
            // hashed while it is still in the core's cache, and no thread waits on another's
            // hand-over (a split inflater/sink pair cost 50,000 context switches per import).
            let durable = durable.clone();
            s.spawn(move || {
                if let Err(e) = member_worker(shared, queue, &durable) {
                    shared.fail(e);
                }
            });
        }
        drop(durable);
        if let Err(e) = synced.join().expect("sync thread panicked") {
            shared.fail(e);
        }
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
    if stamp != self::stamp(&input_file) {
        return Err(corrupt(source, "the file changed while it was being imported; import it again once nothing writes to it"));
    }
    let (size, sha) = source_hash.map_err(|source_err| Error::Read { path: source.into(), source: source_err })?;
    Ok(Extracted { items, source_sha256: Some(sha), source_size: Some(size) })
}

/// The size and modification time of an open input: an import compares them at its start and
/// end, so an archive changed meanwhile (whose digest may then describe other bytes than the
/// ones extracted) is refused.
fn stamp(file: &File) -> Option<(u64, std::time::SystemTime)> {
    let meta = file.metadata().ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

/// The SHA-256 of each file that the wheel's `*.dist-info/RECORD` gives with the member's own
/// size, by path, for an import whose archive digest is authenticated ([`FileDigests::FromRecord`]).
/// A RECORD that cannot be read gives none: those files are hashed, and the RECORD check after
/// extraction names what is wrong with it.
pub(super) fn record_digests<R: Read + io::Seek>(zip: &mut zip::ZipArchive<R>, files: &[ZipMember]) -> HashMap<String, Sha256> {
    /// RECORD files of real wheels are a few KiB; a larger one is not read here.
    const MAX_RECORD: u64 = 16 << 20;
    let Some(record) = files.iter().find(|m| wheel_record::is_record(&m.path)) else { return HashMap::new() };
    let mut text = String::new();
    let read = zip.by_index(record.index).map(|r| r.take(MAX_RECORD).read_to_string(&mut text));
    if !matches!(read, Ok(Ok(_))) {
        return HashMap::new();
    }
    let listed = wheel_record::parse(&text);
    let mut out = HashMap::with_capacity(files.len());
    for m in files {
        if let Some(line) = listed.get(&m.path)
            && line.size.parse::<u64>().ok() == Some(m.size)
            && let Ok(sha) = line.digest()
        {
            out.insert(m.path.clone(), sha);
        }
    }
    out
}

/// The output chunk of one worker, in bytes: large enough that the inflater rarely copies
/// into its own 32 KiB window and that writes are few, small enough to stay in the core's
/// L2 cache between inflating a chunk and hashing it.
pub(super) const CHUNK: usize = 256 << 10;

/// What the zip threads share: the input, the staging folder, and where results and the
/// first error go.
struct Shared<'a> {
    source: &'a Path,
    raw: &'a Path,
    progress: &'a dyn Progress,
    /// The whole archive, mapped read-only.
    map: &'a [u8],
    /// Files whose SHA-256 an authenticated RECORD gives (not hashed again), by path.
    digests: &'a HashMap<String, Sha256>,
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

/// The zip crate's words for a member that yields more than its header declares.
pub(super) const LARGER: &str = "File is larger than its declared uncompressed size";

/// A member being streamed out (a method other than stored or deflated): its file, SHA-256 and
/// byte count.
pub(super) struct Sink {
    pub file: File,
    pub dest: PathBuf,
    /// None: the file's SHA-256 is given (an authenticated RECORD), not computed.
    pub sha: Option<sha2::Sha256>,
    pub written: u64,
    /// Bytes whose write-back to disk was started ([`Durable::flush_range`]).
    flushed: u64,
    durable: Durable,
}

/// A member's bytes are sent on to the disk every this many bytes, so that the `fsync` at its
/// end waits for the last few MiB only, not for hundreds of MiB still in the page cache (the
/// 430 MB `libcudnn_engines_precompiled.so.9` kept its import waiting 0.13 s after the last
/// byte). The write-back is started on a thread of its own ([`Durable::flush_range`]).
const FLUSH_EVERY: u64 = 8 << 20;

impl Sink {
    /// A new file at `dest`, hashed as it is written when `hash`; its write-back is started
    /// through `durable` as it grows.
    pub(super) fn create(dest: &Path, hash: bool, durable: &Durable) -> Result<Sink, Error> {
        let file = File::create(dest).map_err(write_err(dest))?;
        Ok(Sink { file, dest: dest.into(), sha: hash.then(sha2::Sha256::new), written: 0, flushed: 0, durable: durable.clone() })
    }

    /// Hashes and writes the next bytes of the member.
    pub(super) fn put(&mut self, bytes: &[u8], progress: &dyn Progress) -> Result<(), Error> {
        if let Some(sha) = &mut self.sha {
            sha.update(bytes);
        }
        self.file.write_all(bytes).map_err(write_err(&self.dest))?;
        self.written += bytes.len() as u64;
        if self.written - self.flushed >= FLUSH_EVERY {
            self.durable.flush_range(&self.file, self.flushed, self.written - self.flushed);
            self.flushed = self.written;
        }
        progress.advance(bytes.len() as u64);
        Ok(())
    }
}

/// Writes `members` in turn: stored and deflated ones from the mapped archive
/// ([`Inflater::member`]: libdeflate whole for a small member, zlib-rs in pieces for a large
/// one, each written with `write`; CRC-32 checked here); any
/// other method (Deflate64) streamed through the zip crate's reader, which checks size and
/// CRC, hashing and writing each chunk as it comes. Each file's SHA-256 is computed unless
/// `shared.digests` gives it (an authenticated RECORD). Output stops at the declared size:
/// more is an error, never written. Each finished file is passed on to be made durable.
fn member_worker(shared: &Shared, queue: &crate::sys::pool::Queue<ZipMember>, durable: &Durable) -> Result<(), Error> {
    let source = shared.source;
    let mut zip = zip::ZipArchive::new(open(source)?).map_err(|e| corrupt(source, e))?;
    let mut buf = Vec::new();
    let mut inflater = Inflater::new();
    while let Some(m) = queue.take() {
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
        let (direct, span) = match span {
            Some(span) if direct => (true, span),
            _ => (false, (0, 0)),
        };
        if !direct {
            buf.resize(CHUNK, 0);
            let mut sink = Sink::create(&dest, true, durable)?;
            let limit = size.saturating_add(1);
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
            let Sink { file, dest, sha, written, .. } = sink;
            if written != size {
                return Err(Error::SizeMismatch { archive: source.into(), member: m.name, declared: size, actual: written });
            }
            shared.results.lock().unwrap().push((m.path, Item::File { size: written, sha256: Sha256::finish(sha.expect("hashed")) }));
            durable.done(file, dest);
            continue;
        }
        drop(reader);
        // Stored and deflated members: from the mapped archive (inflate.rs).
        let input = usize::try_from(span.0).ok().zip(usize::try_from(span.1).ok()).and_then(|(a, b)| shared.map.get(a..b));
        let Some(input) = input else {
            return Err(corrupt(source, format!("member `{}` ends early; the archive is truncated", m.name)));
        };
        let method = if method == zip::CompressionMethod::Stored { Method::Stored } else { Method::Deflated };
        let given = shared.digests.get(&m.path).copied();
        let mut sink = Sink::create(&dest, given.is_none(), durable)?;
        let wrote = inflater.member(method, input, size, &mut sink, shared.progress).map_err(|e| match e {
            MemberError::Write(e) => e,
            MemberError::Larger => read_err(io::Error::new(io::ErrorKind::InvalidData, LARGER)),
            MemberError::Short(actual) => Error::SizeMismatch { archive: source.into(), member: m.name.clone(), declared: size, actual },
            MemberError::BadData => corrupt(source, format!("member `{}`: its deflate data is invalid (damaged or cut short)", m.name)),
        })?;
        if wrote != crc {
            return Err(Error::BadCrc { archive: source.into(), member: m.name });
        }
        let Sink { file, dest, sha, .. } = sink;
        let sha256 = sha.map(Sha256::finish).or(given).expect("hashed unless RECORD gave the digest");
        shared.results.lock().unwrap().push((m.path, Item::File { size, sha256 }));
        durable.done(file, dest);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::extract::{FileDigests, SourceKind, extract};

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
        let got = extract(&input, SourceKind::Zip, &raw, None, FileDigests::Hashed, &crate::sys::progress::NoProgress).unwrap();
        assert_eq!((got.source_size, got.source_sha256), (Some(size), Some(sha)));
        let want_a = Sha256::of(&vec![b'a'; 600_000]);
        assert_eq!(got.items["lib/a.so"], Item::File { size: 600_000, sha256: want_a });
        assert_eq!(fs::read(raw.join("include/c.h")).unwrap(), vec![b'c'; 600_000]);
        // Given the hash a download computed, the input is not read again to hash it: the
        // entry records the given value (a wrong one shows it was not recomputed), and every
        // member is still hashed.
        let raw2 = dir.path().join("raw2");
        fs::create_dir(&raw2).unwrap();
        let given: Sha256 = "ab".repeat(32).parse().unwrap();
        let got2 = extract(&input, SourceKind::Zip, &raw2, Some(given), FileDigests::Hashed, &crate::sys::progress::NoProgress).unwrap();
        assert_eq!((got2.source_size, got2.source_sha256), (Some(size), Some(given)));
        assert_eq!(got2.items, got.items);
    }

    /// 9 MiB of bytes that deflate to about a tenth (more than [`super::super::inflate::SMALL`]:
    /// inflated in pieces).
    fn large_data() -> Vec<u8> {
        let mut x = 0x2545_f491u32;
        (0..9 << 20)
            .map(|i: u32| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                if i.is_multiple_of(16) { (x >> 24) as u8 } else { (i / 4096) as u8 }
            })
            .collect()
    }

    /// A zip at `path` of one member `lib/big.so` holding `data`, compressed with `method`.
    fn large_zip(path: &Path, data: &[u8], method: zip::CompressionMethod) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        zip.start_file("lib/big.so", zip::write::SimpleFileOptions::default().compression_method(method)).unwrap();
        zip.write_all(data).unwrap();
        let bytes = zip.finish().unwrap().into_inner();
        fs::write(path, &bytes).unwrap();
        bytes
    }

    fn extract_into(dir: &Path, input: &Path, n: usize) -> Result<Extracted, Error> {
        let raw = dir.join(format!("raw{n}"));
        fs::create_dir(&raw).unwrap();
        extract(input, SourceKind::Zip, &raw, None, FileDigests::Hashed, &crate::sys::progress::NoProgress)
    }

    /// Sets the uncompressed size the local header and the central directory declare for the
    /// only member of `zip` to `size`.
    fn declare_size(zip: &mut [u8], size: u32) {
        let at = |zip: &[u8], sig: &[u8]| zip.windows(4).position(|w| w == sig).unwrap();
        let (local, central) = (at(zip, b"PK\x03\x04"), at(zip, b"PK\x01\x02"));
        zip[local + 22..local + 26].copy_from_slice(&size.to_le_bytes());
        zip[central + 24..central + 28].copy_from_slice(&size.to_le_bytes());
    }

    #[test]
    fn a_large_member_is_written_in_pieces_and_checked_like_a_small_one() {
        let dir = tempfile::tempdir().unwrap();
        let data = large_data();
        for (n, method) in [zip::CompressionMethod::Deflated, zip::CompressionMethod::Stored].into_iter().enumerate() {
            let input = dir.path().join(format!("big{n}.zip"));
            let bytes = large_zip(&input, &data, method);
            let got = extract_into(dir.path(), &input, n).unwrap();
            assert_eq!(got.items["lib/big.so"], Item::File { size: data.len() as u64, sha256: Sha256::of(&data) }, "{method}");
            assert_eq!(fs::read(dir.path().join(format!("raw{n}/lib/big.so"))).unwrap(), data, "{method}");
            assert!(bytes.len() < data.len() / 4 || method == zip::CompressionMethod::Stored, "deflated to {} bytes", bytes.len());
        }
    }

    #[test]
    fn a_large_member_longer_or_shorter_than_declared_or_damaged_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let data = large_data();
        let len = data.len() as u32;
        let clean = large_zip(&dir.path().join("clean.zip"), &data, zip::CompressionMethod::Deflated);
        let run = |n: usize, bytes: &[u8]| {
            let input = dir.path().join(format!("bad{n}.zip"));
            fs::write(&input, bytes).unwrap();
            extract_into(dir.path(), &input, n).unwrap_err().to_string()
        };
        // Declared one byte short: output stops there, an error.
        let mut shorter = clean.clone();
        declare_size(&mut shorter, len - 1);
        let e = run(0, &shorter);
        assert!(e.contains("lib/big.so") && e.contains(LARGER), "{e}");
        // Declared 4 KiB more than it holds.
        let mut longer = clean.clone();
        declare_size(&mut longer, len + 4096);
        let e = run(1, &longer);
        assert!(e.contains("lib/big.so") && e.contains(&(len + 4096).to_string()) && e.contains(&len.to_string()), "{e}");
        // One byte of the deflate data changed, in the middle of the member.
        let mut damaged = clean.clone();
        damaged[clean.len() / 2] ^= 0x10;
        let e = run(2, &damaged);
        // (Invalid data, a stream that ends at another length, or a wrong CRC-32, by where it lands.)
        let named = ["deflate data is invalid", "CRC", "but its header declares"].iter().any(|w| e.contains(w));
        assert!(e.contains("lib/big.so") && named, "{e}");
        // A stored member declared one byte short.
        let mut stored = large_zip(&dir.path().join("stored.zip"), &data, zip::CompressionMethod::Stored);
        declare_size(&mut stored, len - 1);
        let e = run(3, &stored);
        assert!(e.contains("lib/big.so"), "{e}");
    }
}
