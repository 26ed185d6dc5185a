//! The content-addressed store of cuDNN releases.
//!
//! Layout: `<home>/store/<name>/` per entry, where `<name>` is
//! `cudnn-<version>-cuda<N>-<platform>-<12 hex of id>` and the id is the SHA-256 of the
//! content listing ([`entry::content_id`]). The entry holds the release's own tree
//! (`bin`, `lib`, `include`, ...) and `entry.toml`.
//!
//! Invariants:
//! - An entry folder is either complete or absent: imports are staged in `<home>/store/.tmp`
//!   (same volume), extracted and hashed in one pass, synced, and published with one
//!   rename — the commit point. Staging left by a crash is deleted by the next writer.
//! - Entries are immutable: files and sub-folders are read-only once published.
//! - Only real folders at the top of `<home>/store` are entries; links there are never
//!   listed or resolved, and `store verify` reports them ([`Store::top_level_links`]).
//! - An entry is what its folder name and `entry.toml` say: [`Store::verify`] recomputes the
//!   content id from the records it checked.
//! - Entries added by hand are gc roots until `store remove` ([`Store::hand_added_ids`],
//!   `roots`); leftovers of interrupted commands are deleted by the next writer (`leftovers`).
//! - Writers hold the [`WriterLock`]; readers (`list`, `verify`) need none.

pub mod detect;
pub mod entry;
mod error;
pub mod extract;
mod leftovers;
pub mod member;
mod roots;
mod source_index;
mod wheel_record;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::home::layout::Layout;
use crate::home::writer_lock::WriterLock;
use crate::sys::fsutil;
use crate::sys::progress::Progress;
use crate::sys::sha256::Sha256;

use entry::{ENTRY_FILE, EntryMeta, FileKind};
pub use error::Error;
use extract::{FileDigests, Item, SourceKind};
pub use roots::ROOTS_FILE;
pub use source_index::SOURCES_FILE;
use wheel_record::{verify_record, wheel_metadata};

/// Options of [`Store::add`].
/// What an incomplete set lacks ([`Error::Incomplete`]).
#[derive(Debug)]
pub struct IncompleteSet {
    /// The release.
    pub version: String,
    /// Its major.
    pub major: u64,
    /// How the set is known: named by its files, or from the table.
    pub basis: crate::cudnn::set::Basis,
    /// The entry's library folder, relative to the release root.
    pub folder: String,
    /// The missing sub-libraries' file names.
    pub missing: Vec<String>,
    /// For each of `missing`, the file name of the library that names it.
    pub named_by: Vec<String>,
}

impl IncompleteSet {
    /// Why the missing files belong to the set, in words: which library names each
    /// (`` `libcudnn.so.9` names `libcudnn_ext.so.9` ``), or that the table says so.
    pub fn why(&self) -> String {
        use crate::cudnn::set::{Basis, checked_through};
        match self.basis {
            Basis::Files => self.missing.iter().zip(&self.named_by).map(|(m, by)| format!("`{by}` names `{m}`")).collect::<Vec<_>>().join(", "),
            Basis::Table { beyond } => format!(
                "its dispatcher names none of its sub-libraries, so cuenv's table decides: cuDNN {} ships {}{}",
                self.version,
                if self.missing.len() == 1 { "it" } else { "them" },
                if beyond {
                    format!("; the table is checked through {}, so later additions are not verified", checked_through(self.major).unwrap_or("no release"))
                } else {
                    String::new()
                }
            ),
        }
    }
}

#[derive(Debug, Default, Clone)]
pub struct AddOptions {
    /// Expected SHA-256 of the input file (`--sha256`, a `lab.lock` pin, or the index's
    /// published digest; parsed by the caller: a malformed one is [`Error::BadSha256Arg`]).
    /// It authenticates the archive, so a wheel's files take their SHA-256 from its RECORD
    /// instead of being hashed again ([`extract::FileDigests::FromRecord`],
    /// docs/decisions.md 11); the import fails unless the archive's SHA-256 equals it.
    pub sha256: Option<Sha256>,
    /// The CUDA major to record or to pick among an installer tree's variants.
    pub cuda: Option<u64>,
    /// The URL the input was downloaded from, recorded in `entry.toml`.
    pub source_url: Option<String>,
    /// Import a set that lacks sub-libraries its major and version ship (recorded in
    /// `entry.toml` as `incomplete`); without it such a set is refused (docs/decisions.md 2).
    pub allow_incomplete: bool,
    /// `sha256` was computed by this process over the very bytes it wrote to the input (a
    /// download into the home's downloads folder, written under the writer lock): the input is
    /// then not read a second time to hash it (nothing is read twice). Members are still
    /// CRC-checked. Ignored without `sha256`, and for a `.tar.*`
    /// input, which is hashed as it streams.
    pub sha256_computed: bool,
}

/// The result of [`Store::add`].
#[derive(Debug)]
pub struct Added {
    /// The entry's metadata.
    pub meta: EntryMeta,
    /// The entry's folder.
    pub dir: PathBuf,
    /// True when identical content was already in the store (nothing was written).
    pub existed: bool,
}

/// Damage found by [`Store::verify`] in one entry.
#[derive(Debug, Default, serde::Serialize)]
pub struct Damage {
    /// Files whose size, hash, kind or link target differ from `entry.toml`.
    pub modified: Vec<String>,
    /// Items listed in `entry.toml` but absent.
    pub missing: Vec<String>,
    /// Items present but not listed.
    pub extra: Vec<String>,
    /// The entry's identity does not hold: its records hash to another content id than
    /// `entry.toml` states, or the folder name disagrees with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
}

impl Damage {
    /// True when nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.modified.is_empty() && self.missing.is_empty() && self.extra.is_empty() && self.identity.is_none()
    }
}

/// The store under one cuenv home.
pub struct Store<'a> {
    layout: &'a Layout,
}

impl<'a> Store<'a> {
    /// The store of `layout`'s home. Creates nothing.
    pub fn new(layout: &'a Layout) -> Self {
        Store { layout }
    }

    /// Deletes staging folders left by an interrupted import. Needs the writer lock,
    /// since a live import owns its staging folder.
    pub fn clean_staging(&self, _writer: &WriterLock) -> Result<(), Error> {
        // Never through a link: one planted where the folder should be is removed itself.
        // This process's own folders may be in use: imports of one apply run side by side.
        let mine = staging_prefix();
        for p in fsutil::entries_or_self(&self.layout.staging_dir()) {
            if !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&mine)) {
                fsutil::remove_tree(&p).map_err(|source| Error::Write { path: p.clone(), source })?;
            }
        }
        Ok(())
    }

    /// Imports the release at `input` (archive, wheel or folder) into the store.
    ///
    /// Returns the entry, new or already present. The entry is not recorded as added by hand:
    /// this is `apply` importing a profile's source (gc collects it once no kept generation
    /// names it); `store add` uses [`Store::add_by_hand`]. Errors: see [`Error`]; on any error
    /// the store is unchanged (the staging folder is deleted).
    pub fn add(&self, writer: &WriterLock, input: &Path, opts: &AddOptions, progress: &dyn Progress) -> Result<Added, Error> {
        self.add_as(writer, input, opts, false, progress)
    }

    /// [`Store::add`] for `store add` / `store fetch`: the entry (new or already present) is
    /// recorded as added by hand, a gc root until `store remove` (see [`Store::hand_added_ids`]).
    /// A new entry is recorded before its commit rename.
    pub fn add_by_hand(&self, writer: &WriterLock, input: &Path, opts: &AddOptions, progress: &dyn Progress) -> Result<Added, Error> {
        self.add_as(writer, input, opts, true, progress)
    }

    fn add_as(&self, writer: &WriterLock, input: &Path, opts: &AddOptions, by_hand: bool, progress: &dyn Progress) -> Result<Added, Error> {
        let expected = opts.sha256;
        let kind = extract::detect_kind(input)?;
        if kind == SourceKind::Folder && expected.is_some() {
            return Err(Error::Sha256OnFolder { path: input.into() });
        }
        self.clean_staging(writer)?;
        let computed = expected.filter(|_| opts.sha256_computed);
        if kind != SourceKind::Folder
            && let Some(added) = self.re_import(writer, input, expected, computed, opts, by_hand)?
        {
            return Ok(added);
        }
        self.staged(|staging| {
            self.add_staged(writer, staging, input, kind, expected, opts, by_hand, |raw, digests| {
                extract::extract(input, kind, raw, computed, digests, progress)
            })
        })
    }

    /// Imports the wheel `remote` serves while it downloads ([`extract::streamed`]): the
    /// download is never written whole. `opts.sha256` must be the archive's authenticated
    /// digest (a pin, or the index's); nothing is kept unless the bytes received hash to it. The
    /// entry is recorded as added by hand when `by_hand`, as [`Store::add_by_hand`] does.
    ///
    /// Errors: [`Error::Unstreamable`] when the server or the archive does not allow it (the
    /// store is unchanged: download the file and [`Store::add`] it), else those of
    /// [`Store::add`]. On any error the store is unchanged.
    pub fn add_streamed(
        &self,
        writer: &WriterLock,
        remote: &mut dyn extract::streamed::Remote,
        opts: &AddOptions,
        by_hand: bool,
        progress: &dyn Progress,
    ) -> Result<Added, Error> {
        let name = remote.name().to_path_buf();
        let Some(expected) = opts.sha256 else {
            return Err(Error::Unstreamable { archive: name, why: "no authenticated SHA-256 to check it against".into() });
        };
        self.clean_staging(writer)?;
        self.staged(|staging| {
            self.add_staged(writer, staging, &name, SourceKind::Wheel, Some(expected), opts, by_hand, |raw, digests| {
                extract::streamed::extract(remote, raw, digests, expected, progress)
            })
        })
    }

    /// Runs `import` with a new staging folder, deleted afterwards whatever happened.
    fn staged<T>(&self, import: impl FnOnce(&Path) -> Result<T, Error>) -> Result<T, Error> {
        let staging_root = self.layout.staging_dir();
        fs::create_dir_all(&staging_root).map_err(|source| Error::Write { path: staging_root.clone(), source })?;
        let staging = tempfile::Builder::new()
            .prefix(&staging_prefix())
            .tempdir_in(&staging_root)
            .map_err(|source| Error::Write { path: staging_root.clone(), source })?;
        let result = import(staging.path());
        // Read-only files inside would make TempDir's own cleanup fail on some systems.
        let _ = fsutil::remove_tree(staging.path());
        result
    }

    /// The fast path of importing an archive whose bytes are already in the store: when an
    /// entry was imported from an archive of the same size, the input is hashed (SHA-256, once)
    /// and looked up in the index ([`Store::find_by_source`]). The entry found is reused only
    /// when it passes [`quick_check`] and agrees with `opts` (`--cuda`, `--allow-incomplete`);
    /// otherwise `None`, and the caller imports in full (which names any contradiction).
    ///
    /// `computed` is the input's SHA-256 when this process computed it while writing the input
    /// ([`AddOptions::sha256_computed`]); then the input is not hashed again.
    ///
    /// Errors: [`Error::Read`] of the input, [`Error::Sha256Mismatch`] against `expected`.
    fn re_import(
        &self,
        writer: &WriterLock,
        input: &Path,
        expected: Option<Sha256>,
        computed: Option<Sha256>,
        opts: &AddOptions,
        by_hand: bool,
    ) -> Result<Option<Added>, Error> {
        let size = fs::metadata(input).map_err(|source| Error::Read { path: input.into(), source })?.len();
        if !self.holds_source_of_size(size) {
            return Ok(None);
        }
        let sha = match computed {
            Some(sha) => sha,
            None => extract::hash_input(input)?.1,
        };
        if let Some(want) = expected.filter(|w| *w != sha) {
            return Err(Error::Sha256Mismatch { path: input.into(), expected: want, actual: sha });
        }
        let Some((dir, meta)) = self.find_by_source(&sha) else { return Ok(None) };
        if opts.cuda.is_some_and(|c| c != meta.cuda_major) || (!meta.incomplete.is_empty() && !opts.allow_incomplete) || !quick_check(&dir, &meta) {
            return Ok(None);
        }
        if by_hand {
            self.record_hand_added(writer, &meta.id, &meta.name)?;
        }
        Ok(Some(Added { meta, dir, existed: true }))
    }

    #[allow(clippy::too_many_arguments)]
    fn add_staged(
        &self,
        writer: &WriterLock,
        staging: &Path,
        input: &Path,
        kind: SourceKind,
        expected: Option<Sha256>,
        opts: &AddOptions,
        by_hand: bool,
        extract: impl FnOnce(&Path, FileDigests) -> Result<extract::Extracted, Error>,
    ) -> Result<Added, Error> {
        let raw = staging.join("raw");
        fs::create_dir(&raw).map_err(|source| Error::Write { path: raw.clone(), source })?;
        // With the archive's digest authenticated, RECORD's digests stand for the files'
        // (docs/decisions.md 11): the comparison just below keeps nothing otherwise.
        let digests = if expected.is_some() { FileDigests::FromRecord } else { FileDigests::Hashed };
        let extracted = extract(&raw, digests)?;
        if let (Some(want), Some(got)) = (&expected, &extracted.source_sha256)
            && want != got
        {
            return Err(Error::Sha256Mismatch { path: input.into(), expected: *want, actual: *got });
        }
        let source_name = input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| input.display().to_string());
        let mut hints = detect::Hints { source_name: source_name.clone(), cuda: opts.cuda, metadata: None, allow_incomplete: opts.allow_incomplete };
        if kind == SourceKind::Wheel {
            verify_record(input, &raw, &extracted.items)?;
            hints.metadata = wheel_metadata(&raw, &extracted.items);
        } else if kind == SourceKind::Folder {
            hints.metadata = metadata_beside(input);
        }
        let found = detect::detect(input, &raw, &extracted.items, &hints)?;

        // Move the kept items into the entry folder.
        let entry_dir = staging.join("entry");
        fs::create_dir(&entry_dir).map_err(|source| Error::Write { path: entry_dir.clone(), source })?;
        for (rel, item) in &found.keep {
            if rel == ENTRY_FILE {
                return Err(Error::BadMember {
                    archive: input.into(),
                    member: rel.clone(),
                    rule: format!("`{ENTRY_FILE}` at the release root is reserved for cuenv's metadata"),
                });
            }
            let to = extract::native(&entry_dir, rel);
            match item {
                Item::Dir => fs::create_dir_all(&to).map_err(|source| Error::Write { path: to.clone(), source })?,
                _ => {
                    let from = extract::native(&raw, &if found.root.is_empty() { rel.clone() } else { format!("{}/{rel}", found.root) });
                    if let Some(p) = to.parent() {
                        fs::create_dir_all(p).map_err(|source| Error::Write { path: p.into(), source })?;
                    }
                    fs::rename(&from, &to).map_err(|source| Error::Write { path: to.clone(), source })?;
                }
            }
        }
        let files = entry::records(&found.keep);
        let id = entry::content_id(&files);
        // One commit at a time in this process (other processes wait for the writer lock): two
        // imports of one apply may finish together, and the store's records are read, changed
        // and written back.
        let _commit = COMMIT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((dir, meta)) = self.find_id(&id) {
            if by_hand {
                self.record_hand_added(writer, &meta.id, &meta.name)?;
            }
            return Ok(Added { meta, dir, existed: true });
        }
        let name = entry::entry_name(&found.version, found.cuda_major, found.platform, &id);
        // The GPU architectures the libraries carry, read once (headers only, never run).
        let lib_folder = if found.platform.is_windows() { found.layout.bin.clone() } else { found.layout.lib.clone() }.unwrap_or_else(|| "lib".into());
        let (gpu_code, gpu_code_unread) = entry::read_gpu_code(&extract::native(&entry_dir, &lib_folder), &found.libraries);
        let meta = EntryMeta {
            id,
            name: name.clone(),
            version: found.version,
            version_source: found.version_source,
            cuda_major: found.cuda_major,
            cuda_source: found.cuda_source,
            platform: found.platform,
            added: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            libraries: found.libraries,
            incomplete: found.missing,
            gpu_code: Some(gpu_code),
            gpu_code_unread,
            layout: found.layout,
            source: entry::SourceInfo { name: source_name, kind, size: extracted.source_size, sha256: extracted.source_sha256, url: opts.source_url.clone() },
            files,
        };
        let meta_path = entry_dir.join(ENTRY_FILE);
        let text = toml::to_string(&meta).map_err(|e| Error::Write { path: meta_path.clone(), source: crate::error::unserializable(e) })?;
        fsutil::write_atomic(&meta_path, text.as_bytes()).map_err(|source| Error::Write { path: meta_path.clone(), source })?;
        fsutil::make_tree_readonly(&entry_dir).map_err(|source| Error::Write { path: entry_dir.clone(), source })?;
        fsutil::sync_dir(&entry_dir);
        let dest = self.layout.store_dir().join(&name);
        fsutil::fault_point("store-staged");
        // Before the commit point: a published hand-added entry is always a root.
        if by_hand {
            self.record_hand_added(writer, &meta.id, &meta.name)?;
        } else {
            self.ensure_roots(writer)?;
        }
        if let (Some(sha), Some(size)) = (&meta.source.sha256, meta.source.size) {
            self.record_source(writer, *sha, size, &meta.name)?;
        }
        fsutil::fault_point("store-rooted");
        // The commit point: one rename makes the complete entry visible.
        fsutil::rename_with_retry(&entry_dir, &dest).map_err(|source| Error::Write { path: dest.clone(), source })?;
        fsutil::sync_dir(&self.layout.store_dir());
        fsutil::fault_point("store-published");
        Ok(Added { meta, dir: dest, existed: false })
    }

    /// Every entry folder with its metadata (or why it cannot be read), sorted by name.
    ///
    /// Only real folders count: a link (symlink, junction) at the top of the store is never
    /// an entry, whatever it points at ([`Store::top_level_links`] names them for `verify`).
    pub fn list(&self) -> Vec<(PathBuf, Result<EntryMeta, String>)> {
        let mut out = Vec::new();
        let Ok(rd) = fs::read_dir(self.layout.store_dir()) else { return out };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // `DirEntry::file_type` does not follow links: a link to a folder is no folder.
            if name.starts_with('.') || !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            out.push((e.path(), EntryMeta::read(&e.path())));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Links (symlinks, junctions) at the top of the store, with their targets when readable,
    /// sorted. The store holds only real folders: each of these was planted from outside.
    pub fn top_level_links(&self) -> Vec<(PathBuf, Option<PathBuf>)> {
        let Ok(rd) = fs::read_dir(self.layout.store_dir()) else { return Vec::new() };
        let mut out: Vec<(PathBuf, Option<PathBuf>)> =
            rd.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_symlink())).map(|e| (e.path(), fs::read_link(e.path()).ok())).collect();
        out.sort();
        out
    }

    /// Readable entries only.
    pub fn entries(&self) -> Vec<(PathBuf, EntryMeta)> {
        self.list().into_iter().filter_map(|(p, m)| m.ok().map(|m| (p, m))).collect()
    }

    fn find_id(&self, id: &str) -> Option<(PathBuf, EntryMeta)> {
        self.entries().into_iter().find(|(_, m)| m.id == id)
    }

    /// Finds one entry by full name, name prefix, or id prefix (at least 4 hex digits).
    ///
    /// Errors: [`Error::NotFound`] (with the known names), [`Error::Ambiguous`].
    pub fn find(&self, query: &str) -> Result<(PathBuf, EntryMeta), Error> {
        let all = self.entries();
        if let Some(hit) = all.iter().find(|(_, m)| m.name == query || m.id == query) {
            return Ok(hit.clone());
        }
        let q = query.to_ascii_lowercase();
        let hits: Vec<&(PathBuf, EntryMeta)> = all.iter().filter(|(_, m)| m.name.starts_with(query) || (q.len() >= 4 && m.id.starts_with(&q))).collect();
        match hits.len() {
            1 => Ok(hits[0].clone()),
            0 => Err(Error::NotFound { query: query.into(), known: all.iter().map(|(_, m)| m.name.clone()).collect() }),
            _ => Err(Error::Ambiguous { query: query.into(), matches: hits.iter().map(|(_, m)| m.name.clone()).collect() }),
        }
    }

    /// Re-hashes every file of the entry at `dir` against its `entry.toml`, then recomputes
    /// the content id from those records ([`entry::content_id`]) and compares it with the id
    /// `entry.toml` states and the folder name shows ([`Damage::identity`]).
    ///
    /// Errors: [`Error::BadEntry`] when `entry.toml` cannot be read.
    pub fn verify(&self, dir: &Path) -> Result<Damage, Error> {
        let meta = EntryMeta::read(dir).map_err(|detail| Error::BadEntry { path: dir.into(), detail })?;
        let mut expected: BTreeMap<&str, &entry::FileRecord> = meta.files.iter().map(|f| (f.path.as_str(), f)).collect();
        let mut damage = Damage::default();
        // In walk order: what to report when bad, and whether it is (None: its hash decides).
        let mut checks: Vec<(String, Option<bool>)> = Vec::new();
        // Files to hash: (index into checks, path, recorded size, recorded sha256).
        let mut jobs = Vec::new();
        for e in walkdir::WalkDir::new(dir).min_depth(1).sort_by_file_name() {
            let e = match e {
                Ok(e) => e,
                Err(err) => {
                    checks.push((format!("{} ({err})", err.path().map(|p| p.display().to_string()).unwrap_or_default()), Some(false)));
                    continue;
                }
            };
            let rel = e.path().strip_prefix(dir).expect("under dir").to_string_lossy().replace('\\', "/");
            if rel == ENTRY_FILE {
                continue;
            }
            let Some(rec) = expected.remove(rel.as_str()) else {
                damage.extra.push(rel);
                continue;
            };
            let ft = e.file_type();
            let ok = match rec.kind {
                FileKind::Dir => Some(ft.is_dir()),
                FileKind::Symlink => Some(
                    ft.is_symlink() && fs::read_link(e.path()).map(|t| Some(t.to_string_lossy().replace('\\', "/")) == rec.target).unwrap_or(false)
                    // On Windows symlinks are stored as copies of their target.
                    || (cfg!(windows) && ft.is_file()),
                ),
                FileKind::File if ft.is_file() => {
                    jobs.push((checks.len(), e.path().to_path_buf(), rec.size, rec.sha256));
                    None
                }
                FileKind::File => Some(false),
            };
            checks.push((rel, ok));
        }
        for (i, ok) in hash_all(jobs) {
            checks[i].1 = Some(ok);
        }
        damage.modified = checks.into_iter().filter(|(_, ok)| *ok != Some(true)).map(|(rel, _)| rel).collect();
        damage.missing = expected.keys().map(|k| k.to_string()).collect();
        damage.identity = identity_damage(dir, &meta);
        Ok(damage)
    }

    /// Deletes the entry at `dir`: it is first renamed into staging (so it vanishes at
    /// once, as a whole), then deleted.
    /// Ends the entry's life as a gc root (its id leaves the record of hand-added entries).
    pub fn remove(&self, writer: &WriterLock, dir: &Path) -> Result<(), Error> {
        self.clean_staging(writer)?;
        let staging_root = self.layout.staging_dir();
        fs::create_dir_all(&staging_root).map_err(|source| Error::Write { path: staging_root.clone(), source })?;
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let trash = staging_root.join(format!("remove-{name}"));
        fsutil::rename_with_retry(dir, &trash).map_err(|source| Error::Write { path: dir.into(), source })?;
        fsutil::fault_point("store-trashed");
        // After the commit point: the id has no folder now, so pruning drops it.
        self.prune_roots(writer)?;
        self.prune_sources(writer)?;
        fsutil::fault_point("store-pruned");
        // The entry's linker scripts (link-free mode) go with it; they are derived data.
        if let Some(build) = self.layout.entry_build_lib(&name).parent().filter(|b| b.is_dir()) {
            let _ = fsutil::make_tree_writable(build);
            let _ = fsutil::remove_tree(build);
        }
        fsutil::remove_tree(&trash).map_err(|source| Error::Write { path: trash.clone(), source })
    }
}

/// Held while an import commits its entry ([`Store::add`]).
static COMMIT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The name prefix of this process's staging folders: `import-<pid>-`.
fn staging_prefix() -> String {
    format!("import-{}-", std::process::id())
}

/// Hashes the files of `jobs` (index, path, recorded size, recorded sha256) on as many
/// threads as there are cores (at most 8), largest first; returns (index, whether size and
/// hash match) for each. Memory: one [`extract::hash_file`] buffer per thread.
fn hash_all(mut jobs: Vec<(usize, PathBuf, Option<u64>, Option<Sha256>)>) -> Vec<(usize, bool)> {
    jobs.sort_by_key(|j| std::cmp::Reverse(fs::metadata(&j.1).map(|m| m.len()).unwrap_or(0)));
    crate::sys::pool::map(&jobs, crate::sys::pool::cores(8), &|(i, path, size, sha)| {
        (*i, extract::hash_file(path).map(|(n, h)| Some(n) == *size && Some(h) == *sha).unwrap_or(false))
    })
}

/// The cheap check of an entry that a re-import reuses: its identity holds
/// ([`identity_damage`]: the records hash to its id, the folder is named after it) and every
/// item it lists is there, of its kind, files of their recorded size. File contents are
/// re-hashed by `store verify`, not here (the archive's bytes were hashed and matched).
fn quick_check(dir: &Path, meta: &EntryMeta) -> bool {
    identity_damage(dir, meta).is_none()
        && meta.files.iter().all(|f| {
            let Ok(m) = fs::symlink_metadata(extract::native(dir, &f.path)) else { return false };
            match f.kind {
                FileKind::Dir => m.is_dir(),
                FileKind::Symlink => m.file_type().is_symlink() || (cfg!(windows) && m.is_file()),
                FileKind::File => m.is_file() && Some(m.len()) == f.size,
            }
        })
}

/// Whether the entry at `dir` is what it claims: its records hash to the id `entry.toml`
/// states, and the folder is named as `entry.toml` says, ending in that id's first 12 hex.
fn identity_damage(dir: &Path, meta: &EntryMeta) -> Option<String> {
    let id = entry::content_id(&meta.files);
    let short = |s: &str| s.get(..12).unwrap_or(s).to_string();
    let folder = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if id != meta.id {
        Some(format!(
            "content id: the files listed in {ENTRY_FILE} hash to {}..., but {ENTRY_FILE} states {}... (the listing was edited)",
            short(&id),
            short(&meta.id)
        ))
    } else if folder != meta.name || !folder.ends_with(&format!("-{}", short(&id))) {
        Some(format!("content id {}... does not match the folder name {folder} ({ENTRY_FILE} names {})", short(&id), meta.name))
    } else {
        None
    }
}
/// For a `site-packages/nvidia/cudnn` folder: the METADATA of the `nvidia_cudnn_cu*`
/// distribution installed beside it, if any.
fn metadata_beside(folder: &Path) -> Option<(String, String)> {
    let folder = crate::sys::paths::canonicalize(folder).ok()?;
    if folder.file_name()? != "cudnn" || folder.parent()?.file_name()? != "nvidia" {
        return None;
    }
    let site = folder.parent()?.parent()?;
    for e in fs::read_dir(site).ok()?.flatten() {
        let n = e.file_name().to_string_lossy().to_ascii_lowercase();
        if n.starts_with("nvidia_cudnn_cu") && n.ends_with(".dist-info") {
            let p = e.path().join("METADATA");
            if let Ok(text) = fs::read_to_string(&p) {
                return Some((format!("{}/METADATA", e.file_name().to_string_lossy()), text));
            }
        }
    }
    None
}
