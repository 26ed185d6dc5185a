//! Copying an already extracted folder, checking every name and hashing every file as it
//! is copied.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::Path;

use super::{BUF, Extracted, Item, StreamError, finish_symlinks, native, stream_to_file, write_err};
use crate::store::Error;
use crate::store::member::{self, CaseIndex, Kind, PathIndex};
use crate::sys::progress::Progress;

pub(super) fn copy_folder(source: &Path, raw: &Path, progress: &dyn Progress) -> Result<Extracted, Error> {
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
