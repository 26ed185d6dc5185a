//! What an extracted wheel's `*.dist-info` says: its METADATA, and the check of every file
//! against its RECORD.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use super::Error;
use super::extract::{self, Item};
use crate::sys::sha256::Sha256;

/// Finds `*.dist-info/METADATA` in an extracted wheel and returns (its path, its text).
pub(super) fn wheel_metadata(raw: &Path, items: &BTreeMap<String, Item>) -> Option<(String, String)> {
    let path = items.keys().find(|p| {
        let mut it = p.split('/');
        matches!((it.next(), it.next(), it.next()), (Some(d), Some("METADATA"), None) if d.ends_with(".dist-info"))
    })?;
    Some((path.clone(), fs::read_to_string(extract::native(raw, path)).ok()?))
}
/// Whether `path` (normalized, `/`-separated) is a wheel's `*.dist-info/RECORD`.
pub(super) fn is_record(path: &str) -> bool {
    let mut it = path.split('/');
    matches!((it.next(), it.next(), it.next()), (Some(d), Some("RECORD"), None) if d.ends_with(".dist-info"))
}

/// One line of a RECORD (`path,hash,size`), its fields as written.
pub(super) struct Line {
    /// `sha256=<urlsafe base64, no padding>`, or another algorithm, or empty.
    pub hash: String,
    /// Bytes, as decimal text; empty where RECORD gives none (RECORD's own line).
    pub size: String,
}

impl Line {
    /// The SHA-256 the line gives, or why it gives none (words for an error).
    pub(super) fn digest(&self) -> Result<Sha256, String> {
        use base64::Engine as _;
        let Some(b64) = self.hash.strip_prefix("sha256=") else {
            return Err(format!("RECORD gives `{}`, not a sha256", self.hash));
        };
        let bytes =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(b64.trim_end_matches('=')).map_err(|_| format!("RECORD hash `{b64}` is not base64"))?;
        <[u8; 32]>::try_from(bytes.as_slice()).map(Sha256::from).map_err(|_| format!("RECORD hash `{b64}` is not 32 bytes long"))
    }
}

/// Reads RECORD's text (PEP 376 CSV: a path with a comma or quote is quoted, `""` inside is a
/// quote) into its lines by path; a later line for the same path wins.
pub(super) fn parse(text: &str) -> BTreeMap<String, Line> {
    let mut listed = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut parts = line.rsplitn(3, ',');
        let (size, hash, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let path = path.strip_prefix('"').and_then(|p| p.strip_suffix('"')).map(|p| p.replace("\"\"", "\"")).unwrap_or_else(|| path.to_string());
        listed.insert(path, Line { hash: hash.to_string(), size: size.to_string() });
    }
    listed
}

/// Checks every file of an extracted wheel against its `*.dist-info/RECORD`
/// (`path,sha256=<urlsafe base64, no padding>,size`, PEP 376 / PEP 427).
pub(super) fn verify_record(archive: &Path, raw: &Path, items: &BTreeMap<String, Item>) -> Result<(), Error> {
    let record_path = items.keys().find(|p| is_record(p)).cloned().ok_or_else(|| Error::Record {
        archive: archive.into(),
        member: "*.dist-info/RECORD".into(),
        why: "the wheel has no RECORD, so nothing vouches for its files' hashes".into(),
    })?;
    let rec = |member: &str, why: String| Error::Record { archive: archive.into(), member: member.into(), why };
    let bytes = fs::read(extract::native(raw, &record_path)).map_err(|source| Error::Read { path: archive.into(), source })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let line = bytes[..at].iter().filter(|b| **b == b'\n').count() + 1;
        let col = at - bytes[..at].iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1) + 1;
        rec(&record_path, format!("RECORD is not UTF-8 text (byte 0x{:02x} at line {line}, column {col}), so its paths cannot be checked", bytes[at]))
    })?;
    let mut listed = parse(&text);
    for (path, item) in items {
        let Item::File { size, sha256 } = item else { continue };
        if *path == record_path || path.ends_with(".dist-info/RECORD.jws") || path.ends_with(".dist-info/RECORD.p7s") {
            continue;
        }
        let Some(line) = listed.remove(path) else {
            return Err(rec(path, "the file is not listed in RECORD".into()));
        };
        if line.digest().map_err(|why| rec(path, why))? != *sha256 {
            return Err(rec(path, "its SHA-256 differs from RECORD's".into()));
        }
        let rsize = line.size;
        if !rsize.is_empty() && rsize.parse::<u64>().ok() != Some(*size) {
            return Err(rec(path, format!("it holds {size} bytes but RECORD says {rsize}")));
        }
    }
    listed.remove(&record_path);
    if let Some(missing) = listed.keys().find(|k| !items.contains_key(*k)) {
        return Err(rec(missing, "listed in RECORD but absent from the wheel".into()));
    }
    Ok(())
}
