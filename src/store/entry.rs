//! `entry.toml`: the metadata file of a store entry, and the entry id.
//!
//! The id is the SHA-256 of a canonical listing of the entry's content: one line per item,
//! sorted by relative path (`/` separators, byte order), `path \t kind \t digest \n`, where
//! kind is `dir`, `file` (digest: the file's SHA-256) or `symlink` (digest: the target).
//! `entry.toml` itself is not part of the listing, so the id depends only on the content.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::detect::EntryLayout;
use super::extract::{Item, SourceKind};
use crate::cudnn::platform::Platform;
use crate::cudnn::version::Version;
use crate::sys::fatbin::{self, GpuCode};
use crate::sys::sha256::Sha256;

/// The file name of the metadata file at the root of every store entry.
pub const ENTRY_FILE: &str = "entry.toml";

/// Where an entry's content came from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SourceInfo {
    /// File or folder name of the input.
    pub name: String,
    /// What kind of input it was.
    pub kind: SourceKind,
    /// Size of the input file in bytes (absent for folders).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// SHA-256 of the input file (absent for folders).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Sha256>,
    /// The URL it was downloaded from (`store fetch`, or `apply` fetching a `from` source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// The kind of one item of an entry's content: `file`, `dir` or `symlink` in `entry.toml`
/// (the same words are hashed into the entry's content id, see [`content_id`]).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FileKind {
    /// A regular file (`size` and `sha256` are set).
    File,
    /// A folder.
    Dir,
    /// A symbolic link (`target` is set).
    Symlink,
}

impl FileKind {
    /// The word `entry.toml` and the content id use.
    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::File => "file",
            FileKind::Dir => "dir",
            FileKind::Symlink => "symlink",
        }
    }
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One item of the entry's content, as recorded in `entry.toml`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileRecord {
    /// Relative path, `/` separators.
    pub path: String,
    /// What the item is.
    pub kind: FileKind,
    /// Size in bytes (files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// SHA-256 (files only; lowercase hex in `entry.toml`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Sha256>,
    /// Link target (symlinks only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// The content of `entry.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EntryMeta {
    /// Full hex SHA-256 content id.
    pub id: String,
    /// The entry's folder name: `cudnn-<version>-cuda<N>-<platform>-<12 hex of id>`.
    pub name: String,
    /// cuDNN version (3 or 4 parts).
    pub version: Version,
    /// Where the version was read from (e.g. `wheel METADATA`, `` `include/cudnn_version.h` ``).
    pub version_source: String,
    /// CUDA major this cuDNN build is for.
    pub cuda_major: u64,
    /// Where the CUDA major came from.
    pub cuda_source: String,
    /// The platform from the libraries' headers.
    pub platform: Platform,
    /// When it was added (RFC 3339, UTC, seconds).
    pub added: String,
    /// File names of the shared libraries found in the library folder.
    pub libraries: Vec<String>,
    /// Sub-libraries the release ships that this entry lacks: only set for an entry added with
    /// `--allow-incomplete` ([`crate::store::detect::required_set`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<String>,
    /// The GPU architectures each library carries code for, read from its fat binary when
    /// `store add` imported it ([`crate::sys::fatbin`]; libraries without one are left out).
    /// `None` in entries added before cuenv recorded it: read on demand ([`EntryMeta::gpu_code_or_read`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_code: Option<BTreeMap<String, GpuCode>>,
    /// Libraries whose fat binary could not be read, with why (their GPU fit is not verified).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_code_unread: Vec<String>,
    /// Where `bin`, `lib` and `include` are inside the entry.
    pub layout: EntryLayout,
    /// The input it was imported from.
    pub source: SourceInfo,
    /// Every item of the content.
    pub files: Vec<FileRecord>,
}

impl EntryMeta {
    /// How many libraries `libraries` holds: a Linux symlink chain (`libcudnn.so`,
    /// `libcudnn.so.9`, `libcudnn.so.9.14.0`) is one library ([`crate::cudnn::libname::count_libraries`]).
    pub fn library_count(&self) -> usize {
        crate::cudnn::libname::count_libraries(&self.libraries)
    }

    /// Total size of the content's files in bytes.
    pub fn content_size(&self) -> u64 {
        self.files.iter().filter_map(|f| f.size).sum()
    }

    /// The folder of the entry's shared libraries, relative to the entry (`bin` on Windows,
    /// `lib` elsewhere, as `layout` records).
    pub fn library_folder(&self) -> String {
        if self.platform.is_windows() { self.layout.bin.clone() } else { self.layout.lib.clone() }.unwrap_or_else(|| "lib".into())
    }

    /// The GPU code of the entry at `dir`: what `entry.toml` recorded, else (an entry added
    /// before cuenv recorded it) read now from its libraries. Second: the libraries whose fat
    /// binary could not be read, each with why.
    pub fn gpu_code_or_read(&self, dir: &Path) -> (BTreeMap<String, GpuCode>, Vec<String>) {
        match &self.gpu_code {
            Some(c) => (c.clone(), self.gpu_code_unread.clone()),
            None => read_gpu_code(&dir.join(self.library_folder()), &self.libraries),
        }
    }

    /// Reads `<dir>/entry.toml`.
    pub fn read(dir: &Path) -> Result<EntryMeta, String> {
        let path = dir.join(ENTRY_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// The GPU code of each of `libraries` in `folder` that carries any ([`fatbin::read`]); links
/// (a Linux chain's other names) are skipped. Second: the libraries that could not be read,
/// `name: why`.
pub fn read_gpu_code(folder: &Path, libraries: &[String]) -> (BTreeMap<String, GpuCode>, Vec<String>) {
    let mut code = BTreeMap::new();
    let mut unread = Vec::new();
    for name in libraries {
        let path = folder.join(name);
        if std::fs::symlink_metadata(&path).map(|m| !m.is_file()).unwrap_or(true) {
            continue;
        }
        match fatbin::read(&path) {
            Ok(Some(c)) if !c.is_empty() => {
                code.insert(name.clone(), c);
            }
            Ok(_) => {}
            Err(e) => unread.push(format!("{name}: {e}")),
        }
    }
    (code, unread)
}

/// Converts the kept items into records, sorted by path.
pub fn records(items: &BTreeMap<String, Item>) -> Vec<FileRecord> {
    items
        .iter()
        .map(|(path, item)| match item {
            Item::Dir => FileRecord { path: path.clone(), kind: FileKind::Dir, size: None, sha256: None, target: None },
            Item::File { size, sha256 } => FileRecord { path: path.clone(), kind: FileKind::File, size: Some(*size), sha256: Some(*sha256), target: None },
            Item::Symlink { target } => FileRecord { path: path.clone(), kind: FileKind::Symlink, size: None, sha256: None, target: Some(target.clone()) },
        })
        .collect()
}

/// The content id of a set of records (see the module docs for the listing format).
pub fn content_id(records: &[FileRecord]) -> String {
    let mut sorted: Vec<&FileRecord> = records.iter().collect();
    sorted.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let mut h = sha2::Sha256::new();
    for r in sorted {
        let sha256 = r.sha256.map(|s| s.to_string());
        let digest = sha256.as_deref().or(r.target.as_deref()).unwrap_or("");
        h.update(format!("{}\t{}\t{}\n", r.path, r.kind.as_str(), digest).as_bytes());
    }
    hex::encode(h.finalize())
}

/// The readable folder name of an entry.
pub fn entry_name(version: &Version, cuda_major: u64, platform: Platform, id: &str) -> String {
    format!("cudnn-{version}-cuda{cuda_major}-{platform}-{}", &id[..12])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_ignores_order_and_names_content() {
        let a = FileRecord { path: "b".into(), kind: FileKind::File, size: Some(1), sha256: Some("aa".repeat(32).parse().unwrap()), target: None };
        let b = FileRecord { path: "a".into(), kind: FileKind::Dir, size: None, sha256: None, target: None };
        assert_eq!(content_id(&[a.clone(), b.clone()]), content_id(&[b.clone(), a.clone()]));
        let mut c = a.clone();
        c.sha256 = Some("ab".repeat(32).parse().unwrap());
        assert_ne!(content_id(&[a, b.clone()]), content_id(&[c, b]));
        let v: Version = "9.5.0.50".parse().unwrap();
        assert_eq!(entry_name(&v, 12, Platform::WindowsX86_64, "0123456789abcdef"), "cudnn-9.5.0.50-cuda12-windows-x86_64-0123456789ab");
    }
}
