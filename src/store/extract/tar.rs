//! Reading a `.tar.xz` or `.tgz` as it streams: each member is checked and bounded at its
//! header, and the compressed bytes are hashed as the decoder pulls them.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::Ordering;

use sha2::Digest;

use super::{BUF, Extracted, Item, StreamError, add_parents, admit, corrupt, expansion_bound, finish_symlinks, native, stream_to_file, write_err};
use crate::store::Error;
use crate::store::member::{self, CaseIndex, Kind, PathIndex};
use crate::sys::progress::Progress;
use crate::sys::sha256::Sha256;

/// Counts and hashes the compressed bytes as the decoder pulls them.
pub(super) struct HashingReader<R> {
    inner: R,
    hasher: sha2::Sha256,
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

pub(super) type Decoder<'a> = Box<dyn Read + 'a>;

pub(super) fn extract_tar(
    source: &Path,
    raw: &Path,
    progress: &dyn Progress,
    file: File,
    decoder: impl for<'a> FnOnce(&'a mut HashingReader<File>) -> Decoder<'a>,
) -> Result<Extracted, Error> {
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    progress.start("extracting", total);
    let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut hashing = HashingReader { inner: file, hasher: sha2::Sha256::new(), count: count.clone() };
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
            if let Some(size) = size_beyond_u64(entry.header()) {
                return Err(bad(format!("its header declares a size of {size}, more than any archive can hold")));
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
    Ok(Extracted { items, source_sha256: Some(Sha256::finish(hashing.hasher)), source_size: Some(size) })
}

/// The size field of a tar header, when it states more than a `u64` holds (or less than
/// zero), in words; `None` otherwise. The base-256 form (GNU: the first byte's top bit set)
/// has 95 bits, and the tar crate keeps only the low 64 of them: 2^80 would read as 0, and
/// the member's bytes would then be parsed as the next header.
fn size_beyond_u64(h: &tar::Header) -> Option<String> {
    let f = &h.as_old().size;
    if f[0] & 0x80 == 0 {
        return None;
    }
    if f[0] & 0x40 != 0 {
        return Some("less than zero".into()); // two's complement: a negative number
    }
    let v = f[1..].iter().fold(u128::from(f[0] & 0x7f), |a, b| (a << 8) | u128::from(*b));
    (v > u128::from(u64::MAX)).then(|| format!("{v} bytes"))
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
