//! What an extracted wheel's `*.dist-info` says: its METADATA, and the check of every file
//! against its RECORD.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use super::Error;
use super::extract::{self, Item};

/// Finds `*.dist-info/METADATA` in an extracted wheel and returns (its path, its text).
pub(super) fn wheel_metadata(raw: &Path, items: &BTreeMap<String, Item>) -> Option<(String, String)> {
    let path = items.keys().find(|p| {
        let mut it = p.split('/');
        matches!((it.next(), it.next(), it.next()), (Some(d), Some("METADATA"), None) if d.ends_with(".dist-info"))
    })?;
    Some((path.clone(), fs::read_to_string(extract::native(raw, path)).ok()?))
}
/// Checks every file of an extracted wheel against its `*.dist-info/RECORD`
/// (`path,sha256=<urlsafe base64, no padding>,size`, PEP 376 / PEP 427).
pub(super) fn verify_record(archive: &Path, raw: &Path, items: &BTreeMap<String, Item>) -> Result<(), Error> {
    use base64::Engine as _;
    let record_path = items
        .keys()
        .find(|p| {
            let mut it = p.split('/');
            matches!((it.next(), it.next(), it.next()), (Some(d), Some("RECORD"), None) if d.ends_with(".dist-info"))
        })
        .cloned()
        .ok_or_else(|| Error::Record {
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
    let mut listed = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut parts = line.rsplitn(3, ',');
        let (size, hash, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let path = path.strip_prefix('"').and_then(|p| p.strip_suffix('"')).map(|p| p.replace("\"\"", "\"")).unwrap_or_else(|| path.to_string());
        listed.insert(path, (hash.to_string(), size.to_string()));
    }
    for (path, item) in items {
        let Item::File { size, sha256 } = item else { continue };
        if *path == record_path || path.ends_with(".dist-info/RECORD.jws") || path.ends_with(".dist-info/RECORD.p7s") {
            continue;
        }
        let Some((hash, rsize)) = listed.remove(path) else {
            return Err(rec(path, "the file is not listed in RECORD".into()));
        };
        let Some(b64) = hash.strip_prefix("sha256=") else {
            return Err(rec(path, format!("RECORD gives `{hash}`, not a sha256")));
        };
        let digest = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(b64.trim_end_matches('='))
            .map_err(|_| rec(path, format!("RECORD hash `{b64}` is not base64")))?;
        if digest.as_slice() != sha256.as_bytes() {
            return Err(rec(path, "its SHA-256 differs from RECORD's".into()));
        }
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
