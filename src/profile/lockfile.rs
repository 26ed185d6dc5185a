//! The lock file (`lab.lock` beside `lab.toml`): what each profile resolved to on each
//! platform, so that a later `apply` keeps the same toolkit root and store entry while they
//! still satisfy the file, and every machine of a lab gets the same bytes.
//!
//! Invariants:
//! - Pure except [`LockText::read`] (reads the one file; [`read`], [`read_all`] and
//!   [`read_pins`] are one-read shorthands) and [`LockText::write`] (writes only the lock
//!   file, atomically).
//! - One section per platform (`windows-x86_64`, `linux-x86_64`, ...): toolkit roots, store
//!   entry ids and download digests differ between platforms, so `apply` on Linux and on
//!   Windows each read and write only their own section and keep the others as they are.
//!   `cuenv lock --platform P` fills the section of another platform.
//! - Updates go through `toml_edit`: comments, key order and formatting of a hand-edited lock
//!   survive; a value is rewritten only when it changes; rendering the same resolution twice
//!   gives the same text.
//! - This module is the file format only (read, write, migrate formats 1 and 2). Honouring a lock
//!   (keeping a locked choice while it still exists among the candidates and still satisfies
//!   the profile's requirements) is resolution: `resolve::honour`. The format names nothing of
//!   resolution: a resolution becomes a [`LockFile`] section through `From`, in `resolve`.
//!
//! Format (`version` is the format version; keys cuenv does not know are kept and ignored):
//! ```toml
//! version = 3
//!
//! [platforms.linux-x86_64.profiles.tf28]
//! toolkit-root = '/usr/local/cuda-11.8'
//! toolkit-version = "11.8.89"
//! cudnn-id = "<store entry id>"
//! cudnn-name = "<store entry name>"
//! cudnn-version = "8.8.0.121"
//! cudnn-source = "pypi"     # with `from = [...]`: the source that served this platform
//! cudnn-from = "wheels/x.whl" # a path source: the `from` its `cudnn-sha256` was pinned from
//!
//! [platforms.windows-x86_64.profiles.tf28]
//! unpinned = "<why>"        # `cuenv lock --allow-unreachable`: no source could be reached
//! ```
//! Format 3 added unpinned profiles (a profile whose sources could not be reached when the
//! lock was written: its table holds only `unpinned`, the reason; the first `apply` on that
//! platform pins it, `--locked` refuses it) and `cudnn-source`. Format 2 lacks both and is
//! read as it is. Format 1 (written by earlier cuenv) had one section, `[profiles.<name>]`,
//! without a platform: it is read as the section of the platform its store entry names say
//! it was written on ([`legacy_platform`]). Both are rewritten as format 3.

use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item, Table, TableLike, Value};

use crate::cudnn::platform::Platform;
use crate::cudnn::version::Version;
use crate::error::located::{Located, Span};
use crate::error::{Diagnose, ExitCode};

/// The lock format version this cuenv writes (it also reads formats 1 and 2).
pub const FORMAT_VERSION: i64 = 3;

const HEADER: &str = "# Written by `cuenv apply` and `cuenv lock`: the toolkit root and store entry each profile\n\
# resolved to, per platform. A locked choice is kept while it still satisfies the profile file;\n\
# delete a section (or this file) to re-resolve.\n";

/// Errors reading, checking or writing a lock file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The lock file exists but could not be read.
    #[error("cannot read the lock file {}", path.display())]
    Read {
        /// The lock file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The lock file could not be written.
    #[error("cannot write the lock file {}", path.display())]
    Write {
        /// The lock file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The lock file is not valid TOML or not a lock cuenv understands.
    #[error("{0}")]
    Invalid(Box<Located>),
}

impl Diagnose for Error {
    fn hint(&self) -> Option<String> {
        match self {
            Error::Invalid(l) => l.hint.clone(),
            Error::Read { path, source } | Error::Write { path, source } => {
                Some(crate::error::io_hint_with(path, source, "keep lab.toml and its lab.lock in a folder you can write"))
            }
        }
    }

    fn exit_code(&self) -> ExitCode {
        match self {
            Error::Invalid(_) => ExitCode::Invalid,
            Error::Read { .. } | Error::Write { .. } => ExitCode::Failure,
        }
    }
}

/// One profile's locked choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedProfile {
    /// The profile name.
    pub name: String,
    /// The toolkit root it resolved to.
    pub toolkit_root: PathBuf,
    /// That toolkit's CUDA version at the time.
    pub toolkit_version: Version,
    /// The store entry id it resolved to.
    pub cudnn_id: String,
    /// The store entry's name.
    pub cudnn_name: String,
    /// The store entry's cuDNN version.
    pub cudnn_version: Version,
}

/// A profile a section names without a choice (format 3): its sources could not be reached
/// when `cuenv lock --allow-unreachable` wrote the section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnpinnedProfile {
    /// The profile name.
    pub name: String,
    /// Why it is unpinned (`unpinned = "..."`), as the lock says it.
    pub reason: String,
}

/// One platform's section of a lock file: the locked profiles in file order, and the
/// profiles it names unpinned.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LockFile {
    /// The locked profiles in file order.
    pub profiles: Vec<LockedProfile>,
    /// The unpinned profiles in file order (written after the locked ones in a new section).
    pub unpinned: Vec<UnpinnedProfile>,
}

impl LockFile {
    /// The locked choice for profile `name`, if any.
    pub fn profile(&self, name: &str) -> Option<&LockedProfile> {
        self.profiles.iter().find(|p| p.name == name)
    }

    /// The unpinned entry for profile `name`, if the section names it unpinned.
    pub fn unpinned(&self, name: &str) -> Option<&UnpinnedProfile> {
        self.unpinned.iter().find(|p| p.name == name)
    }

    /// True when the section names profile `name`, locked or unpinned.
    fn names(&self, name: &str) -> bool {
        self.profile(name).is_some() || self.unpinned(name).is_some()
    }

    /// The text of the lock with `platform`'s section set to `resolved` (a section, or anything
    /// that converts into one, such as a resolution), as an update of
    /// `old_text` (the current lock, if any): comments, order and formatting of `old_text`
    /// are kept, values are replaced only where they differ, profiles no longer in the file
    /// are removed from every section, new ones are appended (locked ones first, then
    /// unpinned ones; an unpinned profile's table keeps the reason it already has); other
    /// platforms' sections are otherwise kept as they are. A format-1 lock's section becomes the section of the
    /// platform it was written on ([`legacy_platform`]). An `old_text` that is not valid TOML
    /// is replaced by a fresh lock.
    pub fn render_updated(old_text: Option<&str>, platform: Platform, resolved: impl Into<LockFile>) -> String {
        let resolved: LockFile = resolved.into();
        let mut doc = old_text
            .and_then(|t| t.parse::<DocumentMut>().ok())
            .unwrap_or_else(|| format!("{HEADER}version = {FORMAT_VERSION}\n").parse().expect("the header is valid TOML"));
        let legacy = (doc.get("version").and_then(Item::as_integer) == Some(1)).then(|| legacy_platform(doc.as_table()));
        let keep = |name: &str| resolved.names(name);
        let old_section = legacy.and_then(|lp| Some((lp, doc.remove("profiles").filter(Item::is_table)?)));
        set_value(doc.as_table_mut(), "version", Value::from(FORMAT_VERSION));
        let platforms = implicit_table(doc.as_table_mut(), "platforms");
        for (_, section) in platforms.iter_mut() {
            if let Some(profiles) = section.get_mut("profiles").and_then(Item::as_table_mut) {
                profiles.retain(|name, _| keep(name));
            }
        }
        if let Some((lp, old)) = old_section {
            // The format-1 section goes to the platform it was written on (its comments kept).
            let legacy_profiles = implicit_table(platforms, lp.as_str());
            legacy_profiles.insert("profiles", old);
            if let Some(t) = legacy_profiles.get_mut("profiles").and_then(Item::as_table_mut) {
                t.retain(|name, _| keep(name));
            }
        }
        let section = implicit_table(platforms, platform.as_str());
        let profiles = implicit_table(section, "profiles");
        profiles.retain(|name, _| keep(name));
        for p in &resolved.profiles {
            let table = profiles.entry(&p.name).or_insert_with(|| Item::Table(Table::new()));
            if !table.is_table() {
                *table = Item::Table(Table::new());
            }
            write_profile(table.as_table_mut().expect("made a table above"), p);
        }
        for p in &resolved.unpinned {
            let table = profiles.entry(&p.name).or_insert_with(|| Item::Table(Table::new()));
            if !table.is_table() {
                *table = Item::Table(Table::new());
            }
            write_unpinned(table.as_table_mut().expect("made a table above"), p);
        }
        doc.to_string()
    }
}

/// `t[key]` as a table, made (implicit: no header line of its own) when absent or not a table.
fn implicit_table<'a>(t: &'a mut Table, key: &str) -> &'a mut Table {
    let item = t.entry(key).or_insert_with(|| Item::None);
    if !item.is_table() {
        let mut new = Table::new();
        new.set_implicit(true);
        *item = Item::Table(new);
    }
    item.as_table_mut().expect("made a table above")
}

/// The keys of a locked profile's table that cuenv writes (an unpinned profile has none).
const CHOICE_KEYS: [&str; 10] =
    ["toolkit-root", "toolkit-version", "cudnn-id", "cudnn-name", "cudnn-version", "cudnn-sha256", "cudnn-url", "cudnn-source", "cudnn-from", "cuda-wheels"];

/// An unpinned profile's table: `unpinned = "<reason>"` (an existing reason is kept) and none
/// of [`CHOICE_KEYS`].
fn write_unpinned(t: &mut Table, p: &UnpinnedProfile) {
    for k in CHOICE_KEYS {
        t.remove(k);
    }
    if t.get("unpinned").and_then(Item::as_str).is_none() {
        t.insert("unpinned", Item::Value(Value::from(p.reason.as_str())));
    }
}

fn write_profile(t: &mut Table, p: &LockedProfile) {
    t.remove("unpinned");
    set_value(t, "toolkit-root", Value::from(p.toolkit_root.to_string_lossy().as_ref()));
    set_value(t, "toolkit-version", Value::from(p.toolkit_version.to_string()));
    set_value(t, "cudnn-id", Value::from(p.cudnn_id.as_str()));
    set_value(t, "cudnn-name", Value::from(p.cudnn_name.as_str()));
    set_value(t, "cudnn-version", Value::from(p.cudnn_version.to_string()));
}

/// Sets `key` to `value` unless it already holds an equal value; a replaced value keeps the
/// comments and spacing around it.
fn set_value(t: &mut Table, key: &str, mut value: Value) {
    if let Some(Item::Value(old)) = t.get_mut(key) {
        if same_value(old, &value) {
            return;
        }
        *value.decor_mut() = old.decor().clone();
        *old = value;
        return;
    }
    t.insert(key, Item::Value(value));
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.value() == y.value(),
        (Value::Integer(x), Value::Integer(y)) => x.value() == y.value(),
        _ => false,
    }
}

/// The lock file that belongs to the profile file `profile_path` (`lab.toml` -> `lab.lock`).
pub fn lock_path(profile_path: &Path) -> PathBuf {
    profile_path.with_extension("lock")
}

/// The lock file's text as it is on disk (a byte-order mark included); `None` when it does
/// not exist. Not UTF-8: [`Error::Invalid`] naming the encoding or the first bad byte's line
/// and column. Every read of a lock file goes through here (counted by [`io_counts`]).
fn read_text(path: &Path) -> Result<Option<String>, Error> {
    IO_COUNTS.with(|c| c.set((c.get().0 + 1, c.get().1)));
    match std::fs::read(path) {
        Ok(bytes) => {
            let hint = "cuenv writes lab.lock as UTF-8: restore it from version control, or delete it and run `cuenv lock`";
            let text = crate::error::located::decode_utf8(&bytes, path, hint).map_err(Error::Invalid)?;
            Ok(Some(text.to_string()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Read { path: path.to_path_buf(), source }),
    }
}

thread_local! {
    /// Reads and writes of lock files made on this thread: (reads, writes).
    static IO_COUNTS: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// Test support: how many times this thread has read a lock file from disk and written one
/// (`(reads, writes)`, since the thread started). A command reads its `lab.lock` once, as a
/// [`LockText`], and hands that down; a test takes the counts before and after one command.
#[doc(hidden)]
pub fn io_counts() -> (usize, usize) {
    IO_COUNTS.with(std::cell::Cell::get)
}

/// A lock file read once (at the start of a command, under the writer lock) and handed down
/// to every stage that needs it: its sections, its pins, the text an undone apply puts back,
/// and the base of the update it writes. [`LockText::write`] keeps the text it wrote, so the
/// snapshot stays what is on disk.
#[derive(Debug, Clone)]
pub struct LockText {
    path: PathBuf,
    /// The file as read, byte-order mark included; `None`: there is no lock file.
    raw: Option<String>,
}

impl LockText {
    /// Reads the lock file at `path` (one read).
    ///
    /// Errors: [`Error::Invalid`] when it is not UTF-8, [`Error::Read`] for other I/O failures
    /// than its absence.
    pub fn read(path: &Path) -> Result<LockText, Error> {
        Ok(LockText { path: path.to_path_buf(), raw: read_text(path)? })
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's text exactly as read (what an undone apply writes back); `None`: no file.
    pub fn raw(&self) -> Option<&str> {
        self.raw.as_deref()
    }

    /// The text to parse: [`LockText::raw`] without a byte-order mark.
    fn text(&self) -> Option<&str> {
        self.raw.as_deref().map(|t| t.strip_prefix('\u{FEFF}').unwrap_or(t))
    }

    /// `platform`'s section; `Ok(None)` when there is no lock file, an empty [`LockFile`]
    /// when it has no section for `platform`.
    ///
    /// Errors: those of [`parse`].
    pub fn section(&self, platform: Platform) -> Result<Option<LockFile>, Error> {
        self.text().map(|text| parse(text, &self.path, platform)).transpose()
    }

    /// Every section, by platform (empty when there is no lock file).
    ///
    /// Errors: those of [`parse_all`].
    pub fn all(&self) -> Result<Vec<(Platform, LockFile)>, Error> {
        self.text().map(|text| parse_all(text, &self.path)).transpose().map(Option::unwrap_or_default)
    }

    /// The pins of `platform`'s section, by profile; none when there is no lock file or its
    /// text is not TOML (parsing it reports that).
    pub fn pins(&self, platform: Platform) -> Pins {
        self.text().map(|t| pins_of(t, platform)).unwrap_or_default()
    }

    /// The text this lock file would have with `platform`'s section for `resolved` and its
    /// `pins` ([`LockFile::render_updated`], [`with_pins`]); `None` when that is the text it has.
    pub fn updated(&self, platform: Platform, resolved: impl Into<LockFile>, pins: &Pins) -> Option<String> {
        let new = with_pins(&LockFile::render_updated(self.text(), platform, resolved), platform, pins);
        (self.text() != Some(new.as_str())).then_some(new)
    }

    /// Writes [`LockText::updated`] in one atomic write when it differs, and keeps it as this
    /// snapshot's text. Returns whether the file changed (false: not touched).
    ///
    /// Errors: [`Error::Write`].
    pub fn write(&mut self, platform: Platform, resolved: impl Into<LockFile>, pins: &Pins) -> Result<bool, Error> {
        let Some(new) = self.updated(platform, resolved, pins) else { return Ok(false) };
        IO_COUNTS.with(|c| c.set((c.get().0, c.get().1 + 1)));
        crate::sys::fsutil::write_atomic(&self.path, new.as_bytes()).map_err(|source| Error::Write { path: self.path.clone(), source })?;
        self.raw = Some(new);
        Ok(true)
    }
}

/// Reads `platform`'s section of the lock file at `path`; `Ok(None)` when the file does not
/// exist, an empty [`LockFile`] when it has no section for `platform`. One read; a command
/// that needs the lock more than once reads a [`LockText`].
///
/// Errors: [`Error::Read`] for other I/O failures, else those of [`parse`].
pub fn read(path: &Path, platform: Platform) -> Result<Option<LockFile>, Error> {
    LockText::read(path)?.section(platform)
}

/// Reads every section of the lock file at `path` (empty when the file does not exist), by
/// platform.
///
/// Errors: as [`read`].
pub fn read_all(path: &Path) -> Result<Vec<(Platform, LockFile)>, Error> {
    LockText::read(path)?.all()
}

/// Writes `platform`'s section of the lock at `path` for `resolved` (a section, or anything
/// that converts into one, such as a resolution) with its `pins`, in one atomic write,
/// updating the lock already there ([`LockText::write`]). Returns whether the file changed
/// (false: it already held exactly this text, and was not touched).
///
/// Errors: [`Error::Read`] / [`Error::Write`] for I/O failures.
pub fn write(path: &Path, platform: Platform, resolved: impl Into<LockFile>, pins: &Pins) -> Result<bool, Error> {
    LockText::read(path)?.write(platform, resolved, pins)
}

/// Parses the text of the lock file `path` (used only in diagnostics) and returns
/// `platform`'s section (empty when it has none).
///
/// Errors: those of [`parse_all`].
pub fn parse(text: &str, path: &Path, platform: Platform) -> Result<LockFile, Error> {
    Ok(parse_all(text, path)?.into_iter().find(|(p, _)| *p == platform).map(|(_, l)| l).unwrap_or_default())
}

/// The platform a format-1 lock (one section, no platform) was written on: the one its
/// store entry names say (`cudnn-...-linux-x86_64-<id>`), else this host's.
pub fn legacy_platform(root: &dyn TableLike) -> Platform {
    const ALL: [Platform; 5] = [Platform::WindowsX86_64, Platform::LinuxX86_64, Platform::LinuxSbsa, Platform::LinuxAarch64, Platform::LinuxPpc64le];
    let names = root
        .get("profiles")
        .and_then(Item::as_table_like)
        .into_iter()
        .flat_map(|t| t.iter().filter_map(|(_, p)| p.get("cudnn-name")?.as_str().map(str::to_string)).collect::<Vec<_>>());
    names
        .into_iter()
        .find_map(|n| ALL.into_iter().find(|p| n.contains(&format!("-{}-", p.as_str())) || n.ends_with(&format!("-{}", p.as_str()))))
        .or_else(Platform::host)
        .unwrap_or(Platform::LinuxX86_64)
}

/// Parses every section of the lock file text (`path` is used only in diagnostics).
/// Sections named after a platform this cuenv does not know are skipped.
///
/// Errors: [`Error::Invalid`] for invalid TOML, a `version` other than 1 or
/// [`FORMAT_VERSION`], or a profile missing a key or holding a bad value (a key of the
/// wrong type, a bad version).
pub fn parse_all(text: &str, path: &Path) -> Result<Vec<(Platform, LockFile)>, Error> {
    let cx = Cx { path, src: text };
    let doc = toml_edit::Document::parse(text)
        .map_err(|e| cx.invalid(crate::error::located::toml_error_span(text, e.span()), format!("invalid TOML in the lock file: {}", e.message())))?;
    if cx.format_version(doc.as_table())? == 1 {
        return Ok(vec![(legacy_platform(doc.as_table()), cx.section(doc.as_table())?)]);
    }
    let Some(item) = doc.get("platforms") else { return Ok(Vec::new()) };
    let platforms = item.as_table_like().ok_or_else(|| cx.invalid(item.span().unwrap_or(0..0), "`platforms` must be a table"))?;
    let mut out = Vec::new();
    for (name, item) in platforms.iter() {
        let Ok(platform) = name.parse::<Platform>() else { continue };
        let section = item.as_table_like().ok_or_else(|| cx.invalid(item.span().unwrap_or(0..0), format!("`platforms.{name}` must be a table")))?;
        out.push((platform, cx.section(section)?));
    }
    Ok(out)
}

struct Cx<'a> {
    path: &'a Path,
    src: &'a str,
}

impl Cx<'_> {
    fn invalid(&self, span: Span, message: impl Into<String>) -> Error {
        let hint = "delete the lock file to re-resolve every profile, or fix the marked value".to_string();
        Error::Invalid(Box::new(Located::new(self.path, self.src, span, message, Some(hint))))
    }

    /// The format version: 1, 2 or [`FORMAT_VERSION`].
    fn format_version(&self, root: &dyn TableLike) -> Result<i64, Error> {
        let Some(item) = root.get("version") else {
            return Err(self.invalid(0..0, "the lock file has no `version`"));
        };
        match item.as_integer() {
            Some(v @ (1 | 2 | FORMAT_VERSION)) => Ok(v),
            Some(v) if v > FORMAT_VERSION => {
                Err(self.invalid(item.span().unwrap_or(0..0), format!("the lock file has format version {v}: it was written by a newer cuenv")))
            }
            _ => Err(self.invalid(item.span().unwrap_or(0..0), format!("the lock file's `version` must be {FORMAT_VERSION}"))),
        }
    }

    /// The `profiles` of one section.
    fn section(&self, t: &dyn TableLike) -> Result<LockFile, Error> {
        let Some(item) = t.get("profiles") else { return Ok(LockFile::default()) };
        let table = item.as_table_like().ok_or_else(|| self.invalid(item.span().unwrap_or(0..0), "`profiles` must be a table"))?;
        let mut out = LockFile::default();
        for (name, item) in table.iter() {
            if let Some(reason) = item.get("unpinned") {
                let span = reason.span().unwrap_or(0..0);
                let reason = reason.as_str().ok_or_else(|| self.invalid(span, "`unpinned` must be a string"))?;
                out.unpinned.push(UnpinnedProfile { name: name.to_string(), reason: reason.to_string() });
            } else {
                out.profiles.push(self.profile(table, name, item)?);
            }
        }
        Ok(out)
    }
    fn profile(&self, parent: &dyn TableLike, name: &str, item: &Item) -> Result<LockedProfile, Error> {
        let name_span = parent.key(name).and_then(|k| k.span()).unwrap_or(0..0);
        let t = item.as_table_like().ok_or_else(|| self.invalid(name_span.clone(), format!("locked profile `{name}` must be a table")))?;
        let string = |key: &str| -> Result<(String, Span), Error> {
            let v = t.get(key).ok_or_else(|| self.invalid(name_span.clone(), format!("locked profile `{name}` has no `{key}`")))?;
            let span = v.span().unwrap_or(name_span.clone());
            let s = v.as_str().ok_or_else(|| self.invalid(span.clone(), format!("`{key}` must be a string")))?;
            Ok((s.to_string(), span))
        };
        let version = |key: &str| -> Result<Version, Error> {
            let (s, span) = string(key)?;
            s.parse().map_err(|e| self.invalid(span, format!("`{key}`: {e}")))
        };
        Ok(LockedProfile {
            name: name.to_string(),
            toolkit_root: PathBuf::from(string("toolkit-root")?.0),
            toolkit_version: version("toolkit-version")?,
            cudnn_id: string("cudnn-id")?.0,
            cudnn_name: string("cudnn-name")?.0,
            cudnn_version: version("cudnn-version")?,
        })
    }
}

/// The pins of one section of `lab.lock`, by profile name.
pub type Pins = std::collections::BTreeMap<String, Pin>;

/// A download pinned in `lab.lock` for one profile: the SHA-256 of the file its store
/// entry was imported from (`cudnn-sha256`), and for a URL source the URL (`cudnn-url`).
/// PyPI and NVIDIA sources are looked up again (through whatever index or mirror is set)
/// and must serve exactly these bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    pub sha256: Option<String>,
    pub url: Option<String>,
    /// `cudnn-source`: for a `from = [...]` list, the source that served this platform
    /// (`pypi` or `nvidia`); a pinned profile is fetched from it alone.
    pub source: Option<crate::fetch::Source>,
    /// `cudnn-from`: for a path source, the `from` location as the profile file wrote it
    /// (a pin of another location is stale: [`Pin::fits`]).
    pub from: Option<String>,
    /// `cuda-wheels`: the runtime wheels of a `cuda = { from = "pypi" }` root, each
    /// `project==version` with its SHA-256 (`project==version sha256:<hex>`).
    pub cuda_wheels: Vec<(String, String, String)>,
}

impl Pin {
    /// Whether the cuDNN part of this pin (`cudnn-sha256`, `-url`, `-from`, `-source`) was
    /// taken from the source `from` names now: a URL pin from that URL, a path pin from that
    /// location (a pin written before `cudnn-from` existed, naming neither, is taken as
    /// fitting), a `pypi` / `nvidia` pin from no URL or path. A pin that does not fit is
    /// stale, as one whose version the profile no longer wants: it is dropped and the new
    /// source is pinned (issue 29: a stale pin made `apply` fail where `plan` said it fetches).
    pub fn fits(&self, from: Option<&crate::profile::Source>) -> bool {
        use crate::profile::Source;
        match from {
            None => true,
            Some(Source::Location(l)) if l.starts_with("http://") || l.starts_with("https://") => self.url.as_deref() == Some(l.as_str()),
            Some(Source::Location(l)) => self.url.is_none() && self.from.as_deref().is_none_or(|f| f == l),
            Some(Source::Pypi | Source::Nvidia) => self.url.is_none() && self.from.is_none(),
        }
    }
}

/// `pins` less the cuDNN part of every pin that does not fit its profile's `from` in `file`
/// ([`Pin::fits`]; the CUDA runtime's wheel pins are kept), and the names of the profiles
/// whose pin was stale.
pub fn fresh_pins(pins: &Pins, file: &crate::profile::ProfileFile) -> (Pins, Vec<String>) {
    let mut out = Pins::new();
    let mut stale = Vec::new();
    for (name, pin) in pins {
        let from = file.profile(name).and_then(|p| p.cudnn.from.as_ref()).map(|f| &f.value);
        if pin.sha256.is_some() && !pin.fits(from) {
            stale.push(name.clone());
            if !pin.cuda_wheels.is_empty() {
                out.insert(name.clone(), Pin { sha256: None, url: None, source: None, from: None, cuda_wheels: pin.cuda_wheels.clone() });
            }
        } else {
            out.insert(name.clone(), pin.clone());
        }
    }
    (out, stale)
}

/// `project==version sha256:<hex>` -> (project, version, sha256).
fn parse_wheel_pin(s: &str) -> Option<(String, String, String)> {
    let (spec, sha) = s.split_once(" sha256:")?;
    let (project, version) = spec.split_once("==")?;
    Some((project.trim().to_string(), version.trim().to_string(), sha.trim().to_string()))
}

/// The `profiles` table of `platform`'s section of a parsed lock (format 1: its one section,
/// when it was written on `platform`).
fn section_profiles(doc: &DocumentMut, platform: Platform) -> Option<&dyn TableLike> {
    let section = if doc.get("version").and_then(Item::as_integer) == Some(1) {
        (legacy_platform(doc.as_table()) == platform).then_some(doc.as_table() as &dyn TableLike)?
    } else {
        doc.get("platforms")?.get(platform.as_str())?.as_table_like()?
    };
    section.get("profiles")?.as_table_like()
}

/// The pins of `platform`'s section of a lock file, by profile. Absent or unreadable files
/// give none.
pub fn read_pins(path: &Path, platform: Platform) -> Pins {
    LockText::read(path).map(|l| l.pins(platform)).unwrap_or_default()
}

/// The pins of `platform`'s section of the lock file text `text`, by profile (none when it
/// is not TOML).
fn pins_of(text: &str, platform: Platform) -> Pins {
    let mut out = std::collections::BTreeMap::new();
    let Ok(doc) = text.parse::<DocumentMut>() else { return out };
    if let Some(profiles) = section_profiles(&doc, platform) {
        for (name, item) in profiles.iter() {
            let get = |k: &str| item.get(k).and_then(Item::as_str).map(str::to_string);
            let cuda_wheels: Vec<(String, String, String)> =
                item.get("cuda-wheels").and_then(Item::as_array).map(|a| a.iter().filter_map(|v| parse_wheel_pin(v.as_str()?)).collect()).unwrap_or_default();
            let source = get("cudnn-source").and_then(|s| s.parse().ok());
            let pin = Pin { sha256: get("cudnn-sha256"), url: get("cudnn-url"), source, from: get("cudnn-from"), cuda_wheels };
            if pin.sha256.is_some() || !pin.cuda_wheels.is_empty() {
                out.insert(name.to_string(), pin);
            }
        }
    }
    out
}

/// `text` (a format-2 lock file, as [`LockFile::render_updated`] makes it) with
/// `cudnn-sha256` / `cudnn-url` / `cuda-wheels` set for the profiles of `platform`'s section
/// in `pins` and removed from its others; everything else is kept as it is.
pub fn with_pins(text: &str, platform: Platform, pins: &Pins) -> String {
    let Ok(mut doc) = text.parse::<DocumentMut>() else { return text.to_string() };
    let profiles = doc.get_mut("platforms").and_then(|p| p.get_mut(platform.as_str())).and_then(|s| s.get_mut("profiles")).and_then(Item::as_table_mut);
    if let Some(profiles) = profiles {
        for (name, item) in profiles.iter_mut() {
            let Some(t) = item.as_table_mut() else { continue };
            let pin = pins.get(name.get());
            match pin.and_then(|p| p.sha256.as_deref()) {
                Some(sha) => set_value(t, "cudnn-sha256", Value::from(sha)),
                None => {
                    t.remove("cudnn-sha256");
                }
            }
            match pin.filter(|p| !p.cuda_wheels.is_empty()) {
                Some(p) => {
                    let want: toml_edit::Array = p.cuda_wheels.iter().map(|(proj, ver, sha)| format!("{proj}=={ver} sha256:{sha}")).collect();
                    let same = t
                        .get("cuda-wheels")
                        .and_then(Item::as_array)
                        .is_some_and(|a| a.iter().map(|v| v.as_str().unwrap_or("")).eq(want.iter().map(|v| v.as_str().unwrap_or(""))));
                    if !same {
                        t.insert("cuda-wheels", Item::Value(Value::Array(want)));
                    }
                }
                None => {
                    t.remove("cuda-wheels");
                }
            }
            match pin.and_then(|p| p.url.as_deref()) {
                Some(url) => set_value(t, "cudnn-url", Value::from(url)),
                None => {
                    t.remove("cudnn-url");
                }
            }
            match pin.and_then(|p| p.source) {
                Some(src) => set_value(t, "cudnn-source", Value::from(src.as_str())),
                None => {
                    t.remove("cudnn-source");
                }
            }
            match pin.and_then(|p| p.from.as_deref()) {
                Some(from) => set_value(t, "cudnn-from", Value::from(from)),
                None => {
                    t.remove("cudnn-from");
                }
            }
        }
    }
    doc.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::tests::{LINUX, file, store, toolkits};
    use crate::resolve::{self, Candidates, CudnnCandidate, Resolved, ToolkitCandidate};

    const LAB: &str = "[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9\"\n[profiles.old]\ncuda = \"11\"\ncudnn = \"8\"\n";

    /// A lab.lock that cannot be written says why by the kind of failure: a full disk or
    /// quota is not a permissions problem, and a read-only volume needs no other cuenv home.
    #[test]
    fn a_lock_write_failure_is_hinted_by_its_kind() {
        let path = PathBuf::from("/lab/lab.lock");
        let hint = |e: std::io::ErrorKind| Error::Write { path: path.clone(), source: e.into() }.hint().unwrap();
        for full in [std::io::ErrorKind::StorageFull, std::io::ErrorKind::QuotaExceeded] {
            assert_eq!(hint(full), format!("free some space on the volume that holds {}, then run the command again", path.display()));
        }
        let ro = hint(std::io::ErrorKind::ReadOnlyFilesystem);
        assert!(
            ro.contains("read-only file system") && ro.contains("keep lab.toml and its lab.lock in a folder you can write") && !ro.contains("home"),
            "{ro}"
        );
        assert!(hint(std::io::ErrorKind::PermissionDenied).starts_with("check the permissions of /lab/lab.lock"));
    }

    fn cands<'a>(t: &'a [ToolkitCandidate], s: &'a [CudnnCandidate]) -> Candidates<'a> {
        Candidates { toolkits: t, store: s, platform: LINUX }
    }

    fn resolved() -> Resolved {
        resolve::resolve(&file(LAB), &cands(&toolkits(), &store())).unwrap()
    }

    fn lock_of(text: &str) -> LockFile {
        parse(text, Path::new("lab.lock"), LINUX).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn fresh_lock_round_trips() {
        let r = resolved();
        let text = LockFile::render_updated(None, LINUX, &r);
        assert!(text.starts_with("# Written by `cuenv apply`"), "{text}");
        assert!(text.contains("\nversion = 3\n\n[platforms.linux-x86_64.profiles.torch2]\ntoolkit-root = \"/usr/local/cuda-12.6\"\n"), "{text}");
        let lock = lock_of(&text);
        let expected: Vec<LockedProfile> = r.profiles.iter().map(LockedProfile::from).collect();
        assert_eq!(lock.profiles, expected);
        assert_eq!(LockFile::render_updated(Some(&text), LINUX, &r), text, "rendering twice changes nothing");
    }

    #[test]
    fn windows_paths_survive() {
        let mut r = resolved();
        r.profiles[0].toolkit_root = PathBuf::from(r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v12.6");
        r.profiles[1].toolkit_root = PathBuf::from(r#"D:\it's "quoted"\ü"#);
        let lock = lock_of(&LockFile::render_updated(None, LINUX, &r));
        assert_eq!(lock.profiles[0].toolkit_root, r.profiles[0].toolkit_root);
        assert_eq!(lock.profiles[1].toolkit_root, r.profiles[1].toolkit_root);
    }

    #[test]
    fn a_format_1_lock_becomes_this_platforms_section_keeping_comments_order_and_unknown_keys() {
        let r = resolved();
        let old = "# my notes\nversion = 1\n\n# the old one first\n[profiles.old]\ntoolkit-root = \"/usr/local/cuda-11.8\"\ntoolkit-version = \"11.8.89\"\ncudnn-id = \"e880\"  # pinned by hand\ncudnn-name = \"cudnn-8.8.0.121-cuda11-linux-x86_64\"\ncudnn-version = \"8.8.0.121\"\nnote = \"kept\"\n\n[profiles.gone]\ntoolkit-root = \"/x\"\ntoolkit-version = \"1\"\ncudnn-id = \"x\"\ncudnn-name = \"x\"\ncudnn-version = \"1\"\n";
        let new = LockFile::render_updated(Some(old), LINUX, &r);
        assert_eq!(lock_of(old).profiles.len(), 2, "format 1 is read as the section of the platform its entry names say");
        assert_eq!(parse(old, Path::new("lab.lock"), WINDOWS).unwrap(), LockFile::default());
        // Locking another platform moves the format-1 section where it belongs, not there.
        let win = LockFile::render_updated(Some(old), WINDOWS, &resolved_for_windows());
        assert!(win.contains("[platforms.linux-x86_64.profiles.old]") && win.contains("cudnn-id = \"e880\"  # pinned by hand"), "{win}");
        assert_eq!(parse(&win, Path::new("lab.lock"), WINDOWS).unwrap().profiles.len(), 2);
        assert!(new.starts_with("# my notes\nversion = 3\n\n# the old one first\n[platforms.linux-x86_64.profiles.old]\n"), "{new}");
        assert!(new.contains("cudnn-id = \"e880\"  # pinned by hand\n"), "{new}");
        assert!(new.contains("note = \"kept\"\n"));
        assert!(!new.contains("profiles.gone"), "{new}");
        assert!(new.find(".profiles.old]").unwrap() < new.find(".profiles.torch2]").unwrap(), "{new}");
        assert_eq!(lock_of(&new).profiles.len(), 2);
    }

    #[test]
    fn changed_value_keeps_its_comment() {
        let mut r = resolved();
        let old = LockFile::render_updated(None, LINUX, &r).replace("cudnn-id = \"e950\"", "cudnn-id = \"e950\" # why");
        r.profiles[0].cudnn_id = "e951".into();
        let new = LockFile::render_updated(Some(&old), LINUX, &r);
        assert!(new.contains("cudnn-id = \"e951\" # why\n"), "{new}");
    }

    #[test]
    fn broken_old_text_is_replaced() {
        let r = resolved();
        assert_eq!(LockFile::render_updated(Some("[[[ nonsense"), LINUX, &r), LockFile::render_updated(None, LINUX, &r));
    }

    #[test]
    fn parse_errors_are_located() {
        let e = parse("version = 1\n[profiles.a]\ntoolkit-root = \"/x\"\n", Path::new("lab.lock"), LINUX).unwrap_err();
        let l = match &e {
            Error::Invalid(l) => l,
            other => panic!("{other}"),
        };
        assert_eq!(l.message, "locked profile `a` has no `toolkit-version`");
        assert_eq!((l.line, l.column), (2, 11));
        assert!(e.hint().unwrap().starts_with("delete the lock file"));
        assert_eq!(e.exit_code(), ExitCode::Invalid);

        let bad_version = "version = 1\n[profiles.a]\ntoolkit-root = \"/x\"\ntoolkit-version = \"12.x\"\n";
        let e = parse(bad_version, Path::new("lab.lock"), LINUX).unwrap_err();
        assert!(e.to_string().starts_with("lab.lock:4:19: `toolkit-version`: `12.x` is not a version"), "{e}");

        let e = parse("version = 4\n", Path::new("lab.lock"), LINUX).unwrap_err();
        assert!(e.to_string().contains("written by a newer cuenv"));
        let e = parse("version = \"1\"\n", Path::new("lab.lock"), LINUX).unwrap_err();
        assert!(e.to_string().contains("`version` must be 3"));
        let e = parse("version = 3\n[platforms.linux-x86_64.profiles.a]\nunpinned = 1\n", Path::new("lab.lock"), LINUX).unwrap_err();
        assert!(e.to_string().contains("`unpinned` must be a string"), "{e}");
        let e = parse("version = 2\nplatforms = 1\n", Path::new("lab.lock"), LINUX).unwrap_err();
        assert!(e.to_string().contains("`platforms` must be a table"));
        let e = parse("version = 2\n[platforms]\nlinux-x86_64 = 1\n", Path::new("lab.lock"), LINUX).unwrap_err();
        assert!(e.to_string().contains("`platforms.linux-x86_64` must be a table"));
        let e = parse("version = 2\n[platforms.windows-x86_64.profiles.a]\ntoolkit-root = 3\n", Path::new("lab.lock"), LINUX).unwrap_err();
        assert!(e.to_string().starts_with("lab.lock:3:16: `toolkit-root` must be a string"), "another platform's broken section is an error too: {e}");
        let e = parse("[profiles.a]\n", Path::new("lab.lock"), LINUX).unwrap_err();
        assert!(e.to_string().contains("has no `version`"));
        let e = parse("version = 1\nprofiles = 3\n", Path::new("lab.lock"), LINUX).unwrap_err();
        assert!(e.to_string().contains("`profiles` must be a table"));
        let e = parse("version = 1\n[profiles.a]\ntoolkit-root = 3\n", Path::new("lab.lock"), LINUX).unwrap_err();
        assert!(e.to_string().contains("`toolkit-root` must be a string"));
        let e = parse("version = 1 = 2\n", Path::new("lab.lock"), LINUX).unwrap_err();
        assert!(e.to_string().contains("invalid TOML in the lock file"));
    }

    #[test]
    fn read_and_write_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = lock_path(&dir.path().join("lab.toml"));
        assert_eq!(path.file_name().unwrap(), "lab.lock");
        assert_eq!(read(&path, LINUX).unwrap(), None);
        let r = resolved();
        assert!(write(&path, LINUX, &r, &Pins::new()).unwrap());
        assert!(!write(&path, LINUX, &r, &Pins::new()).unwrap(), "an unchanged lock is not rewritten");
        assert_eq!(read(&path, LINUX).unwrap().unwrap().profiles.len(), 2);
    }

    const WINDOWS: Platform = Platform::WindowsX86_64;

    fn resolved_for_windows() -> Resolved {
        let mut r = resolved();
        for p in &mut r.profiles {
            p.toolkit_root = PathBuf::from(format!(r"C:\cuenv\toolkits\{}", p.name));
            p.cudnn_id = format!("w{}", p.cudnn_id);
            p.cudnn_name = p.cudnn_name.replace("linux-x86_64", "windows-x86_64");
        }
        r
    }

    #[test]
    fn each_platform_has_its_own_section_and_keeps_the_others() {
        let linux = LockFile::render_updated(None, LINUX, &resolved());
        let both = LockFile::render_updated(Some(&linux), WINDOWS, &resolved_for_windows());
        assert!(both.starts_with(&linux), "the linux section is kept as it was:\n{both}");
        assert!(both.contains("[platforms.windows-x86_64.profiles.torch2]\ntoolkit-root = 'C:\\cuenv\\toolkits\\torch2'\n"), "{both}");
        assert_eq!(lock_of(&both).profiles, lock_of(&linux).profiles);
        let win = parse(&both, Path::new("lab.lock"), WINDOWS).unwrap();
        assert_eq!(win.profiles[0].cudnn_id, "we950");
        assert_eq!(parse(&both, Path::new("lab.lock"), Platform::LinuxSbsa).unwrap(), LockFile::default(), "no section: nothing locked");
        assert_eq!(LockFile::render_updated(Some(&both), LINUX, &resolved()), both, "re-rendering one section changes nothing");
        let all = parse_all(&both, Path::new("lab.lock")).unwrap();
        assert_eq!(all.iter().map(|(p, _)| *p).collect::<Vec<_>>(), [LINUX, WINDOWS]);
    }

    #[test]
    fn a_profile_removed_from_the_file_leaves_every_section() {
        let both = LockFile::render_updated(Some(&LockFile::render_updated(None, LINUX, &resolved())), WINDOWS, &resolved_for_windows());
        let mut fewer = resolved();
        fewer.profiles.retain(|p| p.name == "torch2");
        let new = LockFile::render_updated(Some(&both), LINUX, &fewer);
        assert!(!new.contains(".profiles.old]"), "{new}");
        assert!(new.contains("[platforms.windows-x86_64.profiles.torch2]"), "{new}");
    }

    /// Format 3 bumps the version; a format-2 lock is read as it is and rewritten
    /// as format 3 with its sections, comments and values kept.
    #[test]
    fn a_format_2_lock_is_read_and_rewritten_as_format_3() {
        let v3 = LockFile::render_updated(None, LINUX, &resolved());
        let v2 =
            v3.replace("\nversion = 3\n", "\nversion = 2\n").replace("[platforms.linux-x86_64.profiles.old]", "# mine\n[platforms.linux-x86_64.profiles.old]");
        assert_eq!(lock_of(&v2), lock_of(&v3));
        let again = LockFile::render_updated(Some(&v2), LINUX, &resolved());
        assert_eq!(again, v3.replace("[platforms.linux-x86_64.profiles.old]", "# mine\n[platforms.linux-x86_64.profiles.old]"));
    }

    /// A profile unpinned for a platform (format 3): its table holds only
    /// `unpinned`; the reason first written is kept; pinning it later drops `unpinned`.
    #[test]
    fn unpinned_profiles_round_trip_and_are_pinned_later() {
        let r = resolved();
        let mut section = LockFile::from(&r);
        let old = section.profiles.pop().unwrap();
        section.unpinned.push(UnpinnedProfile { name: old.name.clone(), reason: "cuDNN 8 (windows-x86_64): NVIDIA could not be reached".into() });
        let text = LockFile::render_updated(None, WINDOWS, section.clone());
        assert!(text.ends_with("[platforms.windows-x86_64.profiles.old]\nunpinned = \"cuDNN 8 (windows-x86_64): NVIDIA could not be reached\"\n"), "{text}");
        let read = parse(&text, Path::new("lab.lock"), WINDOWS).unwrap();
        assert_eq!(read, section);
        assert!(read.profile("old").is_none() && read.unpinned("old").is_some());
        // Written again with another reason: unchanged.
        let mut other = section.clone();
        other.unpinned[0].reason = "something else".into();
        assert_eq!(LockFile::render_updated(Some(&text), WINDOWS, other), text);
        // Pinned: the table holds the choice, not `unpinned`.
        let pinned = LockFile::render_updated(Some(&text), WINDOWS, &resolved_for_windows());
        assert!(!pinned.contains("unpinned"), "{pinned}");
        assert_eq!(parse(&pinned, Path::new("lab.lock"), WINDOWS).unwrap().profiles.len(), 2);
        // And unpinned again: the choice keys go.
        let pins = Pins::from([(
            "old".to_string(),
            Pin { sha256: Some("aa".into()), url: None, source: Some(crate::fetch::Source::Nvidia), from: None, cuda_wheels: vec![] },
        )]);
        let with = with_pins(&pinned, WINDOWS, &pins);
        assert!(with.contains("cudnn-source = \"nvidia\""), "{with}");
        let again = LockFile::render_updated(Some(&with), WINDOWS, section);
        assert!(again.ends_with("[platforms.windows-x86_64.profiles.old]\nunpinned = \"cuDNN 8 (windows-x86_64): NVIDIA could not be reached\"\n"), "{again}");
    }

    #[test]
    fn unknown_platforms_are_kept_and_ignored() {
        let text = "version = 3\n[platforms.beos-m68k]\nnote = 1\n[platforms.beos-m68k.profiles.torch2]\nwhatever = 1\n";
        assert_eq!(parse_all(text, Path::new("lab.lock")).unwrap(), []);
        let new = LockFile::render_updated(Some(text), LINUX, &resolved());
        assert!(new.starts_with(text), "{new}");
    }

    #[test]
    fn a_pin_fits_only_the_source_it_was_taken_from() {
        use crate::profile::Source;
        let pin = |url: Option<&str>, from: Option<&str>| Pin {
            sha256: Some("aa".into()),
            url: url.map(Into::into),
            source: None,
            from: from.map(Into::into),
            cuda_wheels: vec![],
        };
        let loc = |l: &str| Source::Location(l.into());
        assert!(pin(None, Some("a.tar.xz")).fits(Some(&loc("a.tar.xz"))));
        assert!(!pin(None, Some("a.tar.xz")).fits(Some(&loc("b.tar.xz"))), "a moved path is stale");
        assert!(pin(None, None).fits(Some(&loc("b.tar.xz"))), "a path pin from before cudnn-from");
        assert!(pin(Some("https://x/a.zip"), None).fits(Some(&loc("https://x/a.zip"))));
        assert!(!pin(Some("https://x/a.zip"), None).fits(Some(&loc("https://x/b.zip"))), "another URL is stale");
        assert!(!pin(Some("https://x/a.zip"), None).fits(Some(&Source::Pypi)), "a URL pin does not fit pypi");
        assert!(!pin(None, Some("a.tar.xz")).fits(Some(&Source::Nvidia)), "a path pin does not fit nvidia");
        assert!(pin(None, None).fits(Some(&Source::Pypi)));
    }

    #[test]
    fn pins_are_per_platform() {
        let both = LockFile::render_updated(Some(&LockFile::render_updated(None, LINUX, &resolved())), WINDOWS, &resolved_for_windows());
        let pin = |sha: &str| Pin {
            sha256: Some(sha.into()),
            url: None,
            source: Some(crate::fetch::Source::Pypi),
            from: None,
            cuda_wheels: vec![("nvidia-cuda-runtime-cu12".into(), "12.6.77".into(), format!("{sha}77"))],
        };
        let pins = |sha: &str| std::collections::BTreeMap::from([("torch2".to_string(), pin(sha))]);
        let text = with_pins(&with_pins(&both, LINUX, &pins("aa")), WINDOWS, &pins("bb"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lab.lock");
        std::fs::write(&path, &text).unwrap();
        assert_eq!(read_pins(&path, LINUX), pins("aa"));
        assert_eq!(read_pins(&path, WINDOWS), pins("bb"));
        assert!(read_pins(&path, Platform::LinuxSbsa).is_empty());
        // Clearing one platform's pins leaves the other's.
        let cleared = with_pins(&text, LINUX, &Default::default());
        std::fs::write(&path, &cleared).unwrap();
        assert!(read_pins(&path, LINUX).is_empty());
        assert_eq!(read_pins(&path, WINDOWS), pins("bb"));
        // A format-1 lock's pins belong to the platform its entry names say.
        std::fs::write(&path, "version = 1\n[profiles.torch2]\ncudnn-name = \"cudnn-9.5.0.50-cuda12-windows-x86_64-9c8deab5de74\"\ncudnn-sha256 = \"cc\"\n")
            .unwrap();
        assert_eq!(read_pins(&path, WINDOWS)["torch2"].sha256.as_deref(), Some("cc"));
        assert!(read_pins(&path, LINUX).is_empty());
    }
}
