//! A wheel imported while it downloads: its central directory is read first through byte-range
//! requests (it sits at the end of the archive), then the whole body streams in once, in
//! order, and each member is inflated into its file as its bytes arrive. The download is never
//! written whole.
//!
//! Two threads: one reads the body and hashes every byte of it (SHA-256, the archive's
//! identity), handing 1 MiB chunks on through a bounded queue (and reading into them again
//! once they come back); the calling thread walks the
//! members in the order of their local headers, checks each header against the central
//! directory, inflates (zlib-rs through `flate2`: a member arrives in pieces, so libdeflate's
//! whole-buffer inflate does not apply), checks size and CRC-32, and writes. Two more start
//! write-back and sync finished files (durable.rs). Anonymous memory is the queue (at most
//! `QUEUE` chunks of 1 MiB, and two more being read and inflated) and one output buffer.
//!
//! What it proves is what a whole-file import of a pinned wheel proves (docs/performance.md
//! "What an import proves"): the caller compares the archive's SHA-256 with the authenticated
//! one before keeping anything, every member's CRC-32 and size are checked, files take RECORD's
//! digests only where RECORD states their size. Whatever the stream cannot do (no ranges, a
//! body that breaks off or ends early, a member stored other than stored or deflated) is
//! [`Error::Unstreamable`]: the caller downloads the file whole and imports that.

use std::collections::HashMap;
use std::io::{self, BufRead, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::mpsc;

use sha2::Digest;

use super::zip::{CHUNK, LARGER, Plan, Sink, ZipMember, make_dirs, plan, record_digests};
use super::{Extracted, FileDigests, Item, finish_symlinks, native};
use crate::store::{Error, member};
use crate::sys::progress::Progress;
use crate::sys::sha256::Sha256;

/// An archive served over the network, as [`extract`] reads it.
pub trait Remote {
    /// Its address (a URL), named in messages and recorded as the source's name.
    fn name(&self) -> &Path;
    /// Its size in bytes, as the index publishes it.
    fn size(&self) -> u64;
    /// Bytes `start..end` of it, exactly; `Ok(None)` when the server does not serve byte ranges.
    fn range(&mut self, start: u64, end: u64) -> io::Result<Option<Vec<u8>>>;
    /// All of it, from its first byte.
    fn body(&mut self) -> io::Result<Box<dyn Read + Send>>;
}

/// The end of the archive fetched first: the end-of-central-directory record (at most 64 KiB of
/// comment before it) and, for a wheel of a few hundred members, the whole central directory and
/// RECORD.
const TAIL: u64 = 256 << 10;
/// Later range requests fetch at least this much.
const BLOCK: u64 = 256 << 10;
/// At most this many bytes are fetched by range requests (a central directory larger than this
/// is read from a whole download).
const MAX_RANGES: u64 = 64 << 20;
/// The body is read in chunks of this many bytes ...
const CHUNK_IN: usize = 1 << 20;
/// ... of which at most this many wait for the inflating thread. The chunks are handed back
/// once inflated and read into again, so an import holds at most `QUEUE + 2` of them, and
/// `apply`, which imports up to 6 wheels at once (`fetch::Prefetch::threads`), about 36 MiB.
const QUEUE: usize = 4;

/// The archive as a seekable file, made of byte ranges fetched on demand: what the zip crate
/// reads of the central directory (and of RECORD) before the body streams.
struct Ranges<'a> {
    remote: &'a mut dyn Remote,
    size: u64,
    pos: u64,
    pieces: Vec<(u64, Vec<u8>)>,
    fetched: u64,
    /// Why a range could not be fetched (the import is then [`Error::Unstreamable`]).
    failure: Option<String>,
}

impl<'a> Ranges<'a> {
    fn new(remote: &'a mut dyn Remote) -> Ranges<'a> {
        let size = remote.size();
        let mut r = Ranges { remote, size, pos: 0, pieces: Vec::new(), fetched: 0, failure: None };
        let start = size.saturating_sub(TAIL);
        let _ = r.fetch(start, size);
        r
    }

    fn fetch(&mut self, start: u64, end: u64) -> io::Result<()> {
        let fail = |r: &mut Self, why: String| {
            r.failure.get_or_insert(why.clone());
            Err(io::Error::other(why))
        };
        if let Some(why) = &self.failure {
            return Err(io::Error::other(why.clone()));
        }
        if self.fetched + (end - start) > MAX_RANGES {
            return fail(self, format!("its central directory takes more than {} MiB to read", MAX_RANGES >> 20));
        }
        match self.remote.range(start, end) {
            Ok(Some(bytes)) if bytes.len() as u64 == end - start => {
                self.fetched += end - start;
                self.pieces.push((start, bytes));
                Ok(())
            }
            Ok(Some(bytes)) => fail(self, format!("the server answered {} bytes for a range of {}", bytes.len(), end - start)),
            Ok(None) => fail(self, "the server does not serve byte ranges".into()),
            Err(e) => fail(self, format!("a range request failed: {e}")),
        }
    }
}

impl Read for Ranges<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.size || buf.is_empty() {
            return Ok(0);
        }
        let pos = self.pos;
        let hit = self.pieces.iter().position(|(s, b)| *s <= pos && pos < s + b.len() as u64);
        let i = match hit {
            Some(i) => i,
            None => {
                let end = pos.saturating_add(BLOCK.max(buf.len() as u64)).min(self.size);
                self.fetch(pos, end)?;
                self.pieces.len() - 1
            }
        };
        let (start, bytes) = &self.pieces[i];
        let from = &bytes[(pos - start) as usize..];
        let n = from.len().min(buf.len());
        buf[..n].copy_from_slice(&from[..n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Ranges<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.size.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = target.ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek before the start"))?;
        Ok(self.pos)
    }
}

/// The body's chunks as they arrive, read in order; `pos` counts the bytes consumed. Each
/// chunk read to its end is handed back through `back` to be read into again.
struct Chunks {
    rx: mpsc::Receiver<Vec<u8>>,
    back: mpsc::Sender<Vec<u8>>,
    cur: Vec<u8>,
    at: usize,
    pos: u64,
}

impl Read for Chunks {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let have = self.fill_buf()?;
        let n = have.len().min(buf.len());
        buf[..n].copy_from_slice(&have[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Chunks {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.at == self.cur.len() {
            match self.rx.recv() {
                Ok(c) => {
                    let done = std::mem::replace(&mut self.cur, c);
                    self.at = 0;
                    // The reader may be gone (the body ended): the chunk is then dropped.
                    let _ = self.back.send(done);
                }
                Err(_) => return Ok(&[]),
            }
        }
        Ok(&self.cur[self.at..])
    }
    fn consume(&mut self, n: usize) {
        self.at += n;
        self.pos += n as u64;
    }
}

impl Chunks {
    /// Skips `n` bytes; false when the body ends first.
    fn skip(&mut self, n: u64) -> bool {
        io::copy(&mut self.by_ref().take(n), &mut io::sink()).ok() == Some(n)
    }
}

/// How the body reading thread ended: the bytes read and their SHA-256, or why it stopped.
type Received = Result<(u64, Sha256), String>;

/// Imports the wheel `remote` serves into the empty folder `raw` while it downloads (see the
/// module docs). `expected` is the archive's authenticated SHA-256 (a pin or the index's
/// published digest): a damaged member of bytes that are not the expected ones is reported as
/// [`Error::Sha256Mismatch`], the truer cause. `digests` as for [`super::extract`].
///
/// Errors: [`Error::Unstreamable`] when the stream cannot do it (the caller then imports a
/// whole download); otherwise the errors of a whole-file import of the same archive. On error
/// `raw` may hold partial files; the caller discards the staging folder.
pub fn extract(remote: &mut dyn Remote, raw: &Path, digests: FileDigests, expected: Sha256, progress: &dyn Progress) -> Result<Extracted, Error> {
    let source = remote.name().to_path_buf();
    let size = remote.size();
    let unstreamable = |why: String| Error::Unstreamable { archive: source.clone(), why };
    let mut ranges = Ranges::new(remote);
    let planned = read_directory(&source, &mut ranges, size, digests);
    if let Some(why) = ranges.failure.take() {
        return Err(unstreamable(why));
    }
    let (Plan { mut items, paths, mut files, symlinks, .. }, given) = planned?;
    if let Some(m) = files.iter().find(|m| !matches!(m.method, zip::CompressionMethod::Stored | zip::CompressionMethod::Deflated)) {
        return Err(unstreamable(format!("member `{}` is compressed with {}, read only from a whole file", m.name, m.method)));
    }
    make_dirs(raw, &items)?;
    files.sort_by_key(|m| m.header);
    let mut body = ranges.remote.body().map_err(|e| unstreamable(format!("its download did not start: {e}")))?;
    progress.start("download", size);
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(QUEUE);
    let (back, spare) = mpsc::channel::<Vec<u8>>();
    let (received, written) = std::thread::scope(|s| {
        let reader = s.spawn(move || receive(&mut body, size, &tx, &spare, progress));
        let (durable, synced) = super::durable::spawn(s);
        let mut input = Chunks { rx, back, cur: Vec::new(), at: 0, pos: 0 };
        let written = write_members(&source, &mut input, &files, raw, &given, &durable);
        drop(durable);
        // The rest of the body is read (and hashed) whatever happened, so that bytes other than
        // the pinned ones are named as such.
        while input.rx.recv().is_ok() {}
        let synced = synced.join().expect("sync thread panicked");
        (reader.join().expect("body thread panicked"), written.and_then(|w| synced.map(|_| w)))
    });
    progress.finish();
    let (got, sha) = received.map_err(&unstreamable)?;
    if got != size {
        return Err(unstreamable(format!("the download ended after {got} of its {size} bytes")));
    }
    if sha != expected {
        return Err(Error::Sha256Mismatch { path: source, expected, actual: sha });
    }
    for (path, item) in written? {
        items.insert(path, item);
    }
    finish_symlinks(&source, raw, &paths, &mut items, symlinks)?;
    Ok(Extracted { items, source_sha256: Some(sha), source_size: Some(size) })
}

/// The central directory's plan and, with [`FileDigests::FromRecord`], RECORD's digests, read
/// through `ranges`.
fn read_directory(source: &Path, ranges: &mut Ranges, size: u64, digests: FileDigests) -> Result<(Plan, HashMap<String, Sha256>), Error> {
    let config = zip::read::Config { archive_offset: zip::read::ArchiveOffset::Known(0) };
    let mut zip = zip::ZipArchive::with_config(config, ranges).map_err(|e| super::corrupt(source, format!("not a readable zip ({e})")))?;
    let plan = plan(source, &mut zip, size, false)?;
    let given = match digests {
        FileDigests::Hashed => HashMap::new(),
        FileDigests::FromRecord => record_digests(&mut zip, &plan.files),
    };
    Ok((plan, given))
}

/// Reads `body` to its end (at most `size` bytes plus one), hashing it and sending it on in
/// chunks (read into those `spare` hands back, else new ones); stops early when the receiver
/// is gone.
fn receive(body: &mut dyn Read, size: u64, tx: &mpsc::SyncSender<Vec<u8>>, spare: &mpsc::Receiver<Vec<u8>>, progress: &dyn Progress) -> Received {
    let mut hasher = sha2::Sha256::new();
    let mut total = 0u64;
    loop {
        let mut buf = spare.try_recv().unwrap_or_default();
        buf.resize(CHUNK_IN, 0);
        let mut filled = 0;
        while filled < buf.len() {
            match body.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("the download broke off after {} bytes ({e})", total + filled as u64)),
            }
        }
        if filled == 0 {
            return Ok((total, Sha256::finish(hasher)));
        }
        buf.truncate(filled);
        hasher.update(&buf);
        total += filled as u64;
        progress.advance(filled as u64);
        if total > size {
            return Err(format!("the server sent more than its {size} bytes"));
        }
        if tx.send(buf).is_err() {
            return Ok((total, Sha256::finish(hasher)));
        }
    }
}

/// Writes each of `files` (sorted by local header) from `input` into `raw`, checking its
/// local header against the central directory, its size and its CRC-32; returns each file's
/// item. Files whose digest `given` holds are not hashed.
fn write_members(
    source: &Path,
    input: &mut Chunks,
    files: &[ZipMember],
    raw: &Path,
    given: &HashMap<String, Sha256>,
    durable: &super::durable::Durable,
) -> Result<Vec<(String, Item)>, Error> {
    let corrupt = |detail: String| super::corrupt(source, detail);
    let ended = |m: &ZipMember| corrupt(format!("member `{}` ends early; the archive is truncated", m.name));
    let mut out = Vec::with_capacity(files.len());
    let mut buf = vec![0u8; CHUNK];
    for m in files {
        if m.header < input.pos {
            let rule = "its local header lies inside the data of an earlier member (two entries share bytes); refusing a likely zip bomb".into();
            return Err(Error::BadMember { archive: source.into(), member: m.name.clone(), rule });
        }
        if !input.skip(m.header - input.pos) {
            return Err(ended(m));
        }
        let mut head = [0u8; 30];
        input.read_exact(&mut head).map_err(|_| ended(m))?;
        let u16_at = |i: usize| u16::from_le_bytes([head[i], head[i + 1]]);
        if head[..4] != *b"PK\x03\x04" {
            return Err(corrupt(format!("member `{}`: no local header at byte {}", m.name, m.header)));
        }
        if u16_at(6) & 1 != 0 {
            return Err(corrupt(format!("member `{}` is encrypted", m.name)));
        }
        let code = if m.method == zip::CompressionMethod::Stored { 0 } else { 8 };
        if u16_at(8) != code {
            return Err(corrupt(format!("member `{}`: its local header and the central directory disagree on its compression", m.name)));
        }
        let mut name = vec![0u8; usize::from(u16_at(26))];
        input.read_exact(&mut name).map_err(|_| ended(m))?;
        if member::name_from_bytes(&name).ok() != Some(m.name.as_str()) {
            let shown = member::escape_bytes(&name);
            return Err(corrupt(format!("member `{}`: its local header names it `{shown}`; the two headers must agree", m.name)));
        }
        if !input.skip(u64::from(u16_at(28))) {
            return Err(ended(m));
        }
        let dest = native(raw, &m.path);
        let hash = !given.contains_key(&m.path);
        let mut sink = Sink::create(&dest, hash, durable)?;
        let mut crc = crc32fast::Hasher::new();
        let start = input.pos;
        {
            let mut data: Box<dyn Read + '_> = match m.method {
                zip::CompressionMethod::Stored => Box::new(input.by_ref().take(m.packed)),
                _ => Box::new(flate2::bufread::DeflateDecoder::new(input.by_ref().take(m.packed))),
            };
            loop {
                let cap = (CHUNK as u64).min(m.size + 1 - sink.written) as usize;
                let n = match data.read(&mut buf[..cap.max(1)]) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(ended(m)),
                    Err(_) => return Err(corrupt(format!("member `{}`: its deflate data is invalid (damaged or cut short)", m.name))),
                };
                if n == 0 {
                    break;
                }
                if sink.written + n as u64 > m.size {
                    return Err(corrupt(format!("member `{}`: {LARGER}", m.name)));
                }
                crc.update(&buf[..n]);
                sink.put(&buf[..n], &crate::sys::progress::NoProgress)?;
            }
        }
        // A deflate stream that ends before its compressed bytes do: the rest is skipped.
        if !input.skip(m.packed - (input.pos - start)) {
            return Err(ended(m));
        }
        if sink.written != m.size {
            return Err(Error::SizeMismatch { archive: source.into(), member: m.name.clone(), declared: m.size, actual: sink.written });
        }
        if crc.finalize() != m.crc {
            return Err(Error::BadCrc { archive: source.into(), member: m.name.clone() });
        }
        let Sink { file, dest, sha, written, .. } = sink;
        let sha256 = sha.map(Sha256::finish).or_else(|| given.get(&m.path).copied()).expect("hashed unless RECORD gave the digest");
        out.push((m.path.clone(), Item::File { size: written, sha256 }));
        durable.done(file, dest);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::path::PathBuf;

    /// An archive in memory, serving ranges (or not) and its body, counting range requests.
    struct Mem {
        name: PathBuf,
        bytes: Vec<u8>,
        ranges: bool,
        asked: usize,
    }

    impl Remote for Mem {
        fn name(&self) -> &Path {
            &self.name
        }
        fn size(&self) -> u64 {
            self.bytes.len() as u64
        }
        fn range(&mut self, start: u64, end: u64) -> io::Result<Option<Vec<u8>>> {
            self.asked += 1;
            Ok(self.ranges.then(|| self.bytes[start as usize..end as usize].to_vec()))
        }
        fn body(&mut self) -> io::Result<Box<dyn Read + Send>> {
            Ok(Box::new(io::Cursor::new(self.bytes.clone())))
        }
    }

    fn zip_of(files: &[(String, Vec<u8>)]) -> Vec<u8> {
        let mut zip = ::zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        let opts = ::zip::write::SimpleFileOptions::default().compression_method(::zip::CompressionMethod::Deflated);
        for (p, d) in files {
            zip.start_file(p.as_str(), opts).unwrap();
            zip.write_all(d).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    fn run(mem: &mut Mem) -> (tempfile::TempDir, Result<Extracted, Error>) {
        let dir = tempfile::tempdir().unwrap();
        let sha = Sha256::finish(sha2::Sha256::new_with_prefix(&mem.bytes));
        let r = extract(mem, dir.path(), FileDigests::Hashed, sha, &crate::sys::progress::NoProgress);
        (dir, r)
    }

    #[test]
    fn a_directory_larger_than_the_tail_is_read_by_more_ranges() {
        // 6,000 members: a central directory of ~400 KiB, past the first 256 KiB range.
        let files: Vec<(String, Vec<u8>)> =
            (0..6000).map(|i| (format!("pkg/some/longer/folder/name/file-{i:05}.txt"), format!("{i}\n").repeat(i % 50 + 1).into_bytes())).collect();
        let mut mem = Mem { name: "http://x/a.whl".into(), bytes: zip_of(&files), ranges: true, asked: 0 };
        let (dir, r) = run(&mut mem);
        let got = r.unwrap();
        assert!(mem.asked >= 2, "asked {} ranges", mem.asked);
        for (p, d) in &files {
            assert_eq!(std::fs::read(native(dir.path(), p)).unwrap(), *d);
            let want = Sha256::finish(sha2::Sha256::new_with_prefix(d));
            assert_eq!(got.items[p], Item::File { size: d.len() as u64, sha256: want });
        }
        assert_eq!(got.source_size, Some(mem.bytes.len() as u64));
    }

    #[test]
    fn a_server_without_ranges_is_unstreamable_after_one_request() {
        let mut mem = Mem { name: "http://x/a.whl".into(), bytes: zip_of(&[("a.txt".into(), b"a".to_vec())]), ranges: false, asked: 0 };
        let (_dir, r) = run(&mut mem);
        let e = r.unwrap_err();
        assert!(matches!(&e, Error::Unstreamable { why, .. } if why.contains("does not serve byte ranges")), "{e}");
        assert_eq!(mem.asked, 1);
    }

    #[test]
    fn a_local_header_naming_another_file_is_refused() {
        let mut bytes = zip_of(&[("lib/a.so".into(), b"payload".to_vec())]);
        // The local header's name (at byte 30) says `lib/b.so`; the central directory `lib/a.so`.
        assert_eq!(&bytes[30..38], b"lib/a.so");
        bytes[34] = b'b';
        let mut mem = Mem { name: "http://x/a.whl".into(), bytes, ranges: true, asked: 0 };
        let (_dir, r) = run(&mut mem);
        let e = r.unwrap_err().to_string();
        assert!(e.contains("its local header names it `lib/b.so`; the two headers must agree"), "{e}");
    }

    #[test]
    fn a_body_shorter_than_published_is_unstreamable() {
        struct Short(Mem);
        impl Remote for Short {
            fn name(&self) -> &Path {
                self.0.name()
            }
            fn size(&self) -> u64 {
                self.0.size()
            }
            fn range(&mut self, start: u64, end: u64) -> io::Result<Option<Vec<u8>>> {
                self.0.range(start, end)
            }
            fn body(&mut self) -> io::Result<Box<dyn Read + Send>> {
                let half = self.0.bytes.len() / 2;
                Ok(Box::new(io::Cursor::new(self.0.bytes[..half].to_vec())))
            }
        }
        let data: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let bytes = zip_of(&[("lib/a.so".into(), data)]);
        let sha = Sha256::finish(sha2::Sha256::new_with_prefix(&bytes));
        let mut short = Short(Mem { name: "http://x/a.whl".into(), bytes, ranges: true, asked: 0 });
        let dir = tempfile::tempdir().unwrap();
        let e = extract(&mut short, dir.path(), FileDigests::Hashed, sha, &crate::sys::progress::NoProgress).unwrap_err();
        assert!(matches!(&e, Error::Unstreamable { why, .. } if why.contains("ended after")), "{e}");
    }
}
