//! The profile file (`lab.toml`): its typed model, its parser, and diagnostics that point
//! into it.
//!
//! Invariants:
//! - Pure: [`parse`] reads only its arguments; [`load`] only reads the one file. Nothing here
//!   writes to disk.
//! - A [`ProfileFile`] keeps the source text and the byte span of every value it was built
//!   from, so that any later step (resolution, the lock) can report an error at the right
//!   file, line and column with [`ProfileFile::error_at`].
//! - Every error is a [`Located`] diagnostic (file:line:column, the source line, a caret under
//!   the offending text, a separate hint) with exit code [`ExitCode::Invalid`], except an I/O
//!   failure to read the file.
//! - Unknown keys are errors (a typo must not silently drop a setting); profiles keep file order.
//!
//! Schema:
//! ```toml
//! [settings]                 # optional
//! link-mode = "auto"         # auto | junction | symlink | copy
//! [toolkits]                 # optional; label -> toolkit root
//! "11.8" = 'C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v11.8'
//! [profiles.tf28]
//! cuda = "11.2"              # VersionReq on the toolkit version, or { version, from }
//! cudnn = "8.1"              # VersionReq on a store entry, or { version, from, sha256 }
//! conda-env = "tf28"         # optional: a conda env name or a path
//! check = "conv"             # optional: conv | load | none (default conv)
//! ```

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Serialize;
use toml_edit::{Item, TableLike};

use crate::error::{Diagnose, ExitCode};
use crate::version::VersionReq;

/// A byte range in a source text (`start..end`, `end` exclusive).
pub type Span = Range<usize>;

/// A value together with the span of the text it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T> {
    /// The parsed value.
    pub value: T,
    /// Where its text is in the source (for a string, including the quotes).
    pub span: Span,
}

// ---------------------------------------------------------------------------------------------
// Diagnostics
// ---------------------------------------------------------------------------------------------

/// A diagnostic that points into a source file. `Display` renders, without the hint:
///
/// ```text
/// lab.toml:7:9: `cudnn = "8.x"` is not a version requirement
///   7 | cudnn = "8.x"
///     |         ^^^^^
///     = note: ...            (one line per note, if any)
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The file as the person named it.
    pub path: PathBuf,
    /// The byte span the diagnostic points at.
    pub span: Span,
    /// 1-based line of the span's start.
    pub line: usize,
    /// 1-based column of the span's start, in characters.
    pub column: usize,
    /// The first line: what is wrong.
    pub message: String,
    /// The whole source line that holds the span's start (without its line break).
    pub source_line: String,
    /// How many characters the caret underlines (at least 1, at most to the line's end).
    pub caret_len: usize,
    /// Extra facts shown under the caret (e.g. which store entries exist).
    pub notes: Vec<String>,
    /// What to do next; shown by the CLI as `hint: ...`, not part of `Display`.
    pub hint: Option<String>,
}

impl Located {
    /// Builds a diagnostic for `span` in `source` (the text of `path`). A span past the end
    /// of the text is clamped to the end; an empty span gets a one-character caret.
    pub fn new(path: &Path, source: &str, span: Span, message: impl Into<String>, hint: Option<String>) -> Located {
        let start = floor_char_boundary(source, span.start.min(source.len()));
        let mut end = span.end.clamp(start, source.len());
        while !source.is_char_boundary(end) {
            end += 1;
        }
        let line_start = source[..start].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let line_end = source[start..].find('\n').map(|i| start + i).unwrap_or(source.len());
        let source_line = source[line_start..line_end].trim_end_matches('\r').to_string();
        let underlined = source[start..end.min(line_end)].trim_end_matches('\r').chars().count();
        Located {
            path: path.to_path_buf(),
            span: start..end,
            line: source[..start].matches('\n').count() + 1,
            column: source[line_start..start].chars().count() + 1,
            message: message.into(),
            source_line,
            caret_len: underlined.max(1),
            notes: Vec::new(),
            hint,
        }
    }
}

/// The largest char boundary at or before `i`.
fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self.line.to_string().len();
        let pad: String = self.source_line.chars().take(self.column - 1).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
        write!(f, "{}:{}:{}: {}", self.path.display(), self.line, self.column, self.message)?;
        write!(f, "\n  {:>width$} | {}", self.line, self.source_line)?;
        write!(f, "\n  {:width$} | {}{}", "", pad, "^".repeat(self.caret_len))?;
        for note in &self.notes {
            write!(f, "\n  {:width$} = note: {}", "", note)?;
        }
        Ok(())
    }
}

/// Errors reading or checking a profile file (and, through [`ProfileFile::error_at`],
/// resolving it).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read.
    #[error("cannot read the profile file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The text is not valid TOML.
    #[error("{0}")]
    Syntax(Box<Located>),
    /// The TOML is valid but does not describe profiles that cuenv can use (unknown key,
    /// bad version, bad profile name, a requirement nothing satisfies, ...).
    #[error("{0}")]
    Invalid(Box<Located>),
    /// Several sections or profiles are invalid: one diagnostic each (at least two), in file
    /// order. `Display` shows every one with its own `hint:` line; [`Diagnose::hint`] is
    /// `None`.
    #[error("{}", render_several(.0))]
    Several(Vec<Located>),
}

/// Several diagnostics as the CLI shows them after its `error: ` prefix.
fn render_several(all: &[Located]) -> String {
    let mut out = String::new();
    for (i, l) in all.iter().enumerate() {
        if i > 0 {
            out.push_str("\nerror: ");
        }
        out.push_str(&l.to_string());
        if let Some(h) = &l.hint {
            out.push_str(&format!("\nhint: {h}"));
        }
        out.push('\n');
    }
    let path = all.first().map(|l| l.path.display().to_string()).unwrap_or_default();
    out.push_str(&format!("{} errors in {path}; nothing was changed", all.len()));
    out
}

impl Error {
    /// The located diagnostic, unless this is a read error.
    pub fn located(&self) -> Option<&Located> {
        match self {
            Error::Read { .. } => None,
            Error::Syntax(l) | Error::Invalid(l) => Some(l),
            Error::Several(all) => all.first(),
        }
    }

    /// Every located diagnostic (one, or several for [`Error::Several`]).
    pub fn all_located(&self) -> Vec<&Located> {
        match self {
            Error::Several(all) => all.iter().collect(),
            other => other.located().into_iter().collect(),
        }
    }

    /// One error for `errors` (at least one): itself when alone, else [`Error::Several`] with
    /// every diagnostic in file order (a read error, which has no location, wins alone).
    pub(crate) fn combine(mut errors: Vec<Error>) -> Error {
        if errors.len() == 1 || errors.iter().any(|e| e.located().is_none()) {
            let i = errors.iter().position(|e| e.located().is_none()).unwrap_or(0);
            return errors.swap_remove(i);
        }
        let mut all: Vec<Located> = errors
            .into_iter()
            .flat_map(|e| match e {
                Error::Syntax(l) | Error::Invalid(l) => vec![*l],
                Error::Several(all) => all,
                Error::Read { .. } => Vec::new(),
            })
            .collect();
        all.sort_by_key(|l| l.span.start);
        Error::Several(all)
    }

    /// Adds a note line shown under the caret (no effect on a read error).
    pub fn with_note(mut self, note: impl Into<String>) -> Error {
        if let Error::Syntax(l) | Error::Invalid(l) = &mut self {
            l.notes.push(note.into());
        }
        self
    }
}

impl Diagnose for Error {
    fn hint(&self) -> Option<String> {
        match self {
            Error::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Some("check the path, or create the file (see profiles/lab.toml for an example)".into())
            }
            Error::Read { .. } | Error::Several(_) => None,
            Error::Syntax(l) | Error::Invalid(l) => l.hint.clone(),
        }
    }

    fn exit_code(&self) -> ExitCode {
        match self {
            Error::Read { source, .. } if source.kind() != std::io::ErrorKind::NotFound => ExitCode::Failure,
            _ => ExitCode::Invalid,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------------------------

/// How views link to toolkit roots and store entries (`[settings] link-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkMode {
    /// Junctions on Windows, symlinks elsewhere; an error (suggesting `copy`) when the volume refuses.
    #[default]
    Auto,
    /// Directory junctions (Windows only; local NTFS/ReFS volumes).
    Junction,
    /// Symbolic links (Windows: needs admin or Developer Mode).
    Symlink,
    /// Copies of the store entry (FAT32/exFAT, network shares, cloud-drive folders).
    Copy,
}

/// What `apply` checks after building a profile's view (`check = ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    /// Load cuDNN and run a small convolution (the default).
    #[default]
    Conv,
    /// Only load cuDNN and read its version.
    Load,
    /// No check.
    None,
}

/// Where a requirement's files come from (`from = ...`, for a later issue).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// NVIDIA's redist archives.
    Nvidia,
    /// PyPI wheels (`nvidia-cudnn-cu12`, `nvidia-cuda-runtime-cu12`, ...).
    Pypi,
    /// A local path or a URL, as written.
    Location(String),
}

/// `[settings]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Settings {
    /// `link-mode`, `auto` when absent.
    pub link_mode: LinkMode,
    /// The span of the `link-mode` value, when given.
    pub link_mode_span: Option<Span>,
    /// `nvidia-mirror`: the redist folder holding `redistrib_<version>.json` (a lab mirror).
    pub nvidia_mirror: Option<String>,
    /// `pypi-index`: the PyPI base URL for `from = "pypi"`.
    pub pypi_index: Option<String>,
}

/// One entry of `[toolkits]`: a label and the toolkit root it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolkitDecl {
    /// The key as written (`"11.8"`); informative only, versions come from the root itself.
    pub label: Spanned<String>,
    /// The toolkit root, as written.
    pub root: Spanned<PathBuf>,
}

/// A requirement on a version (`cuda = "11.2"` or `cudnn = { version = "9.5.0.50", ... }`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The version requirement.
    pub version: VersionReq,
    /// The span of the version string (where errors about it point).
    pub span: Span,
    /// `from`, when given in the table form.
    pub from: Option<Spanned<Source>>,
    /// `sha256` (64 lowercase hex digits), when given in the table form.
    pub sha256: Option<Spanned<String>>,
}

/// One `[profiles.<name>]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The profile name: `[A-Za-z0-9_.-]+`, not starting or ending with `.`, not a Windows
    /// reserved device name.
    pub name: String,
    /// The span of the name in its table header (or dotted key).
    pub name_span: Span,
    /// The requirement on the toolkit version.
    pub cuda: Requirement,
    /// The requirement on the cuDNN store entry.
    pub cudnn: Requirement,
    /// `conda-env`: an env name (no slashes) or a path, as written.
    pub conda_env: Option<Spanned<String>>,
    /// `check`, `conv` when absent.
    pub check: Check,
}

impl Profile {
    /// True when `conda-env` is a path (it holds `/` or `\`, or starts with `~` or `.`)
    /// rather than an env name; `None` without `conda-env`.
    pub fn conda_env_is_path(&self) -> Option<bool> {
        self.conda_env.as_ref().map(|e| looks_like_path(&e.value))
    }
}

fn looks_like_path(s: &str) -> bool {
    s.contains(['/', '\\']) || s.starts_with(['~', '.'])
}

/// A parsed profile file: the model plus the source it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileFile {
    /// The file as the person named it (used in diagnostics and to place `lab.lock`).
    pub path: PathBuf,
    /// The whole source text.
    pub source: String,
    /// `[settings]`, defaults when absent.
    pub settings: Settings,
    /// `[toolkits]` in file order; empty when absent (then discovered roots are used).
    pub toolkits: Vec<ToolkitDecl>,
    /// The profiles in file order.
    pub profiles: Vec<Profile>,
}

impl ProfileFile {
    /// An [`Error::Invalid`] pointing at `span` of this file, for later steps such as
    /// resolution: `message` is the first line, `hint` what to do next.
    pub fn error_at(&self, span: Span, message: impl Into<String>, hint: Option<String>) -> Error {
        Error::Invalid(Box::new(Located::new(&self.path, &self.source, span, message, hint)))
    }

    /// The profile named `name`, if any.
    pub fn profile(&self, name: &str) -> Option<&Profile> {
        self.profiles.iter().find(|p| p.name == name)
    }

    /// The source text of `span` (empty when out of range).
    pub fn text(&self, span: &Span) -> &str {
        self.source.get(span.clone()).unwrap_or("")
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

/// Reads and parses the profile file at `path`.
///
/// Errors: [`Error::Read`] when it cannot be read (exit code Invalid when it does not exist,
/// Failure otherwise), else those of [`parse`].
pub fn load(path: &Path) -> Result<ProfileFile, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read { path: path.to_path_buf(), source })?;
    parse(&text, path)
}

/// Parses `text`, the content of the profile file `path` (used only in diagnostics).
///
/// Errors: [`Error::Syntax`] for invalid TOML; [`Error::Invalid`] for an unknown key, a value
/// of the wrong type or out of its choices, a bad version requirement, a bad or duplicate
/// profile name, or a profile without `cuda` or `cudnn`. Each of the top level, `[settings]`,
/// `[toolkits]` and every profile is checked on its own: when more than one is wrong, all
/// their first errors come back together, in file order, as [`Error::Several`].
pub fn parse(text: &str, path: &Path) -> Result<ProfileFile, Error> {
    let cx = Cx { path, src: text };
    let doc = toml_edit::Document::parse(text).map_err(|e| cx.syntax(&e))?;
    let root: &dyn TableLike = doc.as_table();
    let mut errors = Vec::new();
    if let Err(e) = cx.check_keys(root, &["settings", "toolkits", "profiles"], "the top level") {
        errors.push(e);
    }
    let settings = match cx.table_at(root, "settings").and_then(|t| t.map(|t| cx.settings(t)).transpose()) {
        Ok(s) => s.unwrap_or_default(),
        Err(e) => {
            errors.push(e);
            Settings::default()
        }
    };
    let toolkits = match cx.table_at(root, "toolkits").and_then(|t| t.map(|t| cx.toolkits(t)).transpose()) {
        Ok(t) => t.unwrap_or_default(),
        Err(e) => {
            errors.push(e);
            Vec::new()
        }
    };
    let profiles = match cx.table_at(root, "profiles") {
        Ok(Some(t)) => cx.profiles(t, &mut errors),
        Ok(None) => Vec::new(),
        Err(e) => {
            errors.push(e);
            Vec::new()
        }
    };
    if !errors.is_empty() {
        errors.sort_by_key(|e| e.located().map(|l| l.span.start).unwrap_or(0));
        return Err(Error::combine(errors));
    }
    Ok(ProfileFile { path: path.to_path_buf(), source: text.to_string(), settings, toolkits, profiles })
}

/// The parsing context: the file's name and text, for building diagnostics.
struct Cx<'a> {
    path: &'a Path,
    src: &'a str,
}

const PROFILE_KEYS: [&str; 4] = ["cuda", "cudnn", "conda-env", "check"];
const REQUIREMENT_KEYS: [&str; 3] = ["version", "from", "sha256"];
const LINK_MODES: [(&str, LinkMode); 4] =
    [("auto", LinkMode::Auto), ("junction", LinkMode::Junction), ("symlink", LinkMode::Symlink), ("copy", LinkMode::Copy)];
const CHECKS: [(&str, Check); 3] = [("conv", Check::Conv), ("load", Check::Load), ("none", Check::None)];

impl Cx<'_> {
    fn invalid(&self, span: Span, message: impl Into<String>, hint: impl Into<String>) -> Error {
        Error::Invalid(Box::new(Located::new(self.path, self.src, span, message, Some(hint.into()))))
    }

    fn syntax(&self, e: &toml_edit::TomlError) -> Error {
        let span = e.span().unwrap_or(0..0);
        let message = format!("invalid TOML: {}", e.message());
        let hint = "fix the TOML syntax at the marked place (strings need quotes; Windows paths are easiest in 'single quotes')";
        Error::Syntax(Box::new(Located::new(self.path, self.src, span, message, Some(hint.into()))))
    }

    fn text(&self, span: &Span) -> &str {
        self.src.get(span.clone()).unwrap_or("")
    }

    /// The span of `key`'s name in `table`, falling back to its value's span.
    fn key_span(&self, table: &dyn TableLike, key: &str) -> Span {
        table.key(key).and_then(|k| k.span()).or_else(|| table.get(key).and_then(Item::span)).unwrap_or(0..0)
    }

    fn value_span(&self, table: &dyn TableLike, key: &str) -> Span {
        table.get(key).and_then(Item::span).unwrap_or_else(|| self.key_span(table, key))
    }

    /// Rejects any key of `table` not in `allowed`, suggesting the closest allowed one.
    fn check_keys(&self, table: &dyn TableLike, allowed: &[&str], place: &str) -> Result<(), Error> {
        let errors: Vec<Error> = table
            .iter()
            .filter(|(k, _)| !allowed.contains(k))
            .map(|(key, _)| {
                let hint = match did_you_mean(key, allowed) {
                    Some(s) => format!("did you mean `{s}`? (expected one of: {})", allowed.join(", ")),
                    None => format!("expected one of: {}", allowed.join(", ")),
                };
                self.invalid(self.key_span(table, key), format!("unknown key `{key}` in {place}"), hint)
            })
            .collect();
        if errors.is_empty() { Ok(()) } else { Err(Error::combine(errors)) }
    }

    /// The table (standard or inline) under `key`, `None` when absent, an error for another type.
    fn table_at<'t>(&self, parent: &'t dyn TableLike, key: &str) -> Result<Option<&'t dyn TableLike>, Error> {
        let Some(item) = parent.get(key) else { return Ok(None) };
        match item.as_table_like() {
            Some(t) => Ok(Some(t)),
            None => Err(self.invalid(
                self.value_span(parent, key),
                format!("`{key}` must be a table, not {}", item.type_name()),
                format!("write it as a section: `[{key}]` followed by `name = value` lines"),
            )),
        }
    }

    /// The string under `key`, `None` when absent, an error for another type or when empty.
    fn string(&self, table: &dyn TableLike, key: &str) -> Result<Option<Spanned<String>>, Error> {
        let Some(item) = table.get(key) else { return Ok(None) };
        let span = self.value_span(table, key);
        match item.as_str() {
            Some("") => Err(self.invalid(span, format!("`{key}` is empty"), format!("give `{key}` a value or remove the line"))),
            Some(s) => Ok(Some(Spanned { value: s.to_string(), span })),
            None if item.is_value() && !item.is_inline_table() && !item.is_array() => {
                let raw = self.text(&span).trim();
                Err(self.invalid(
                    span.clone(),
                    format!("`{key} = {raw}` must be a string, not {}", item.type_name()),
                    format!("put it in quotes: `{key} = \"{raw}\"`"),
                ))
            }
            None => Err(self.invalid(span, format!("`{key}` must be a string, not {}", item.type_name()), format!("write it as `{key} = \"...\"`"))),
        }
    }

    /// Maps a string value onto one of `choices`, with a "did you mean" for near misses.
    fn one_of<T: Copy>(&self, key: &str, s: &Spanned<String>, choices: &[(&str, T)]) -> Result<T, Error> {
        if let Some((_, v)) = choices.iter().find(|(name, _)| *name == s.value) {
            return Ok(*v);
        }
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        let hint = match did_you_mean(&s.value, &names) {
            Some(n) => format!("did you mean `{key} = \"{n}\"`? (expected one of: {})", names.join(", ")),
            None => format!("expected one of: {}", names.join(", ")),
        };
        Err(self.invalid(s.span.clone(), format!("`{key} = {}` is not a valid {key}", self.text(&s.span)), hint))
    }

    fn settings(&self, t: &dyn TableLike) -> Result<Settings, Error> {
        self.check_keys(t, &["link-mode", "nvidia-mirror", "pypi-index"], "[settings]")?;
        let mut s = Settings {
            nvidia_mirror: self.string(t, "nvidia-mirror")?.map(|v| v.value),
            pypi_index: self.string(t, "pypi-index")?.map(|v| v.value),
            ..Settings::default()
        };
        if let Some(mode) = self.string(t, "link-mode")? {
            s.link_mode = self.one_of("link-mode", &mode, &LINK_MODES)?;
            s.link_mode_span = Some(mode.span);
        }
        Ok(s)
    }

    fn toolkits(&self, t: &dyn TableLike) -> Result<Vec<ToolkitDecl>, Error> {
        let mut out = Vec::new();
        for (label, _) in t.iter() {
            let root = self.string(t, label)?.expect("the key is present");
            out.push(ToolkitDecl {
                label: Spanned { value: label.to_string(), span: self.key_span(t, label) },
                root: Spanned { value: PathBuf::from(root.value), span: root.span },
            });
        }
        Ok(out)
    }

    /// The profiles of `[profiles]`; each invalid one adds its first error to `errors`.
    fn profiles(&self, t: &dyn TableLike, errors: &mut Vec<Error>) -> Vec<Profile> {
        let mut out: Vec<Profile> = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for (name, item) in t.iter() {
            let name_span = self.key_span(t, name);
            let one = || -> Result<Profile, Error> {
                self.check_profile_name(name, &name_span)?;
                if let Some(other) = names.iter().find(|n| n.eq_ignore_ascii_case(name)) {
                    return Err(self.invalid(
                        name_span.clone(),
                        format!("profiles `{other}` and `{name}` differ only in case"),
                        "rename one: on Windows both would share one folder under profiles/",
                    ));
                }
                let Some(table) = item.as_table_like() else {
                    return Err(self.invalid(
                        self.value_span(t, name),
                        format!("profile `{name}` must be a table, not {}", item.type_name()),
                        format!("write it as a section: `[profiles.{name}]` followed by `cuda = ...` and `cudnn = ...`"),
                    ));
                };
                self.profile(name, name_span.clone(), table)
            };
            match one() {
                Ok(p) => out.push(p),
                Err(e) => errors.push(e),
            }
            names.push(name);
        }
        out
    }

    fn check_profile_name(&self, name: &str, span: &Span) -> Result<(), Error> {
        let why = if name.is_empty() {
            Some("is empty")
        } else if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)) {
            Some("may only hold letters A-Z and a-z, digits, `_`, `.` and `-`")
        } else if name.starts_with('.') || name.ends_with('.') {
            Some("may not start or end with `.`")
        } else if is_windows_reserved(name) {
            Some("is a reserved device name on Windows")
        } else {
            None
        };
        match why {
            None => Ok(()),
            Some(why) => Err(self.invalid(
                span.clone(),
                format!("profile name `{name}` {why}"),
                "profile names become folder names: use letters, digits, `_`, `.` and `-`, like `torch2` or `tf-2.8`",
            )),
        }
    }

    /// One profile; each of its keys is checked on its own, and every error is returned.
    fn profile(&self, name: &str, name_span: Span, t: &dyn TableLike) -> Result<Profile, Error> {
        let place = format!("[profiles.{name}]");
        let mut errors = Vec::new();
        let mut keep = |r: Result<(), Error>| {
            if let Err(e) = r {
                errors.push(e);
            }
        };
        keep(self.check_keys(t, &PROFILE_KEYS, &place));
        let cuda = self.requirement(t, "cuda", &["version", "from"], name, &name_span);
        let cudnn = self.requirement(t, "cudnn", &REQUIREMENT_KEYS, name, &name_span);
        if let Ok(Requirement { from: Some(src), .. }) = &cuda
            && src.value != Source::Pypi
        {
            let guess = match &src.value {
                Source::Location(l) if did_you_mean(l, &["pypi"]).is_some() => "did you mean `from = \"pypi\"`? ",
                _ => "",
            };
            keep(Err(self.invalid(
                src.span.clone(),
                "only `from = \"pypi\"` can provide a CUDA runtime",
                format!("{guess}install the toolkit and name it under [toolkits], or use `from = \"pypi\"`"),
            )));
        }
        // A cuDNN `from` that is a near miss of a source name, not a path or URL, is a typo
        // (whether a real path exists is checked before fetching: `sources::check`).
        if let Ok(Requirement { from: Some(src), .. }) = &cudnn
            && let Source::Location(l) = &src.value
            && !l.contains(['/', '\\', '.', ':'])
            && let Some(g) = did_you_mean(l, &["pypi", "nvidia"])
        {
            keep(Err(self.invalid(
                src.span.clone(),
                format!("`from = \"{l}\"` is neither \"pypi\", \"nvidia\", an http(s) URL, nor a path"),
                format!("did you mean `from = \"{g}\"`?"),
            )));
        }
        let conda_env = self.string(t, "conda-env").and_then(|env| {
            if let Some(e) = &env {
                self.check_conda_env(e)?;
            }
            Ok(env)
        });
        let check = self.string(t, "check").and_then(|c| c.map(|c| self.one_of("check", &c, &CHECKS)).transpose());
        let (cuda, cudnn, conda_env, check) = match (cuda, cudnn, conda_env, check) {
            (Ok(a), Ok(b), Ok(c), Ok(d)) if errors.is_empty() => (a, b, c, d),
            (a, b, c, d) => {
                errors.extend(a.err().into_iter().chain(b.err()).chain(c.err()).chain(d.err()));
                errors.sort_by_key(|e| e.located().map(|l| l.span.start).unwrap_or(0));
                return Err(Error::combine(errors));
            }
        };
        Ok(Profile { name: name.to_string(), name_span, cuda, cudnn, conda_env, check: check.unwrap_or_default() })
    }

    fn check_conda_env(&self, env: &Spanned<String>) -> Result<(), Error> {
        if looks_like_path(&env.value) || !env.value.contains([' ', ':', '#']) {
            return Ok(());
        }
        Err(self.invalid(
            env.span.clone(),
            format!("`conda-env = {}` is neither a conda env name nor a path", self.text(&env.span)),
            "an env name has no spaces, `:` or `#`; for a path, write it with `/` or `\\`, like 'D:\\envs\\torch2'",
        ))
    }

    /// `key = "<req>"` or `key = { version = "<req>", from = ..., sha256 = ... }` (only the
    /// `allowed` keys). A missing requirement is an error at the profile's name.
    fn requirement(&self, t: &dyn TableLike, key: &str, allowed: &[&str], profile: &str, name_span: &Span) -> Result<Requirement, Error> {
        let Some(item) = t.get(key) else {
            let example = if key == "cuda" { "12" } else { "9" };
            return Err(self.invalid(
                name_span.clone(),
                format!("profile `{profile}` has no `{key}` requirement"),
                format!("add a line like `{key} = \"{example}\"` to [profiles.{profile}]"),
            ));
        };
        if item.as_str().is_some() || item.as_table_like().is_none() {
            let s = self.string(t, key)?.expect("the key is present");
            let version = self.version_req(key, &s)?;
            return Ok(Requirement { version, span: s.span, from: None, sha256: None });
        }
        let table = item.as_table_like().expect("checked above");
        self.check_keys(table, allowed, &format!("`{key}` of [profiles.{profile}]"))?;
        let Some(v) = self.string(table, "version")? else {
            return Err(self.invalid(
                self.value_span(t, key),
                format!("`{key}` of profile `{profile}` has no `version`"),
                format!("add `version = \"...\"` inside the braces, like `{key} = {{ version = \"9.5\" }}`"),
            ));
        };
        let version = self.version_req("version", &v)?;
        let from = self.string(table, "from")?.map(|s| Spanned { value: source_of(&s.value), span: s.span });
        let sha256 = self.string(table, "sha256")?.map(|s| self.sha256(s)).transpose()?;
        Ok(Requirement { version, span: v.span, from, sha256 })
    }

    fn version_req(&self, key: &str, s: &Spanned<String>) -> Result<VersionReq, Error> {
        s.value.parse::<VersionReq>().map_err(|e| {
            self.invalid(
                s.span.clone(),
                format!("`{key} = {}` is not a version requirement", self.text(&s.span)),
                format!("{}; examples: `8.9` (any 8.9.x), `9.5.0.50` (exactly), `>=8.9, <9`", e.reason),
            )
        })
    }

    fn sha256(&self, s: Spanned<String>) -> Result<Spanned<String>, Error> {
        if s.value.len() == 64 && s.value.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(Spanned { value: s.value.to_ascii_lowercase(), span: s.span });
        }
        Err(self.invalid(
            s.span.clone(),
            format!("`sha256 = {}` is not a SHA-256 digest", self.text(&s.span)),
            format!("a SHA-256 digest is 64 hexadecimal digits; this has {} characters", s.value.chars().count()),
        ))
    }
}

fn source_of(s: &str) -> Source {
    match s {
        "nvidia" => Source::Nvidia,
        "pypi" => Source::Pypi,
        other => Source::Location(other.to_string()),
    }
}

/// True for names Windows reserves for devices, with or without an extension
/// (`CON`, `nul.txt`, `COM1`, `lpt9`), compared without regard to case.
fn is_windows_reserved(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or(name).to_ascii_uppercase();
    match stem.as_str() {
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$" => true,
        s if (s.starts_with("COM") || s.starts_with("LPT")) && s.len() == 4 => s.as_bytes()[3].is_ascii_digit(),
        _ => false,
    }
}

/// The entry of `choices` closest to `word` by edit distance, if close enough to be a typo:
/// at most 1 edit for words up to 4 characters, else at most a third of the length.
/// Case and `_` / `-` differences count as nothing.
pub fn did_you_mean<'c>(word: &str, choices: &[&'c str]) -> Option<&'c str> {
    let norm = |s: &str| s.to_ascii_lowercase().replace('_', "-");
    let w = norm(word);
    let limit = (w.chars().count() / 3).max(1);
    let common_prefix = |c: &str| w.chars().zip(c.chars()).take_while(|(a, b)| a == b).count();
    choices
        .iter()
        // Optimal string alignment: a swap of two neighbours (`form` for `from`) costs 1.
        .map(|c| (strsim::osa_distance(&w, &norm(c)), *c))
        .filter(|(d, _)| *d <= limit)
        // Ties go to the longer shared start: `cudn` is `cudnn` missing a letter, not `cuda`.
        .min_by_key(|(d, c)| (*d, std::cmp::Reverse(common_prefix(&norm(c)))))
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> ProfileFile {
        parse(text, Path::new("lab.toml")).unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(text: &str) -> Error {
        parse(text, Path::new("lab.toml")).expect_err("should fail")
    }

    const FULL: &str = r#"# lab.toml
[settings]
link-mode = "copy"

[toolkits]
"11.8" = 'C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v11.8'
"12.6" = '/usr/local/cuda-12.6'

[profiles.tf28]
cuda = "11.2"
cudnn = "8.1"
conda-env = "tf28"

[profiles.torch2]
cuda = "12"
cudnn = { version = "9.5.0.50", from = "pypi", sha256 = "D8A23705E3884B137B7E05449FB2B61BFA524E7CFC3FDA80743D633F423C6CE4" }
conda-env = 'D:\envs\torch2'
check = "load"
"#;

    #[test]
    fn each_section_and_profile_reports_its_first_error_all_at_once() {
        let text = "[profiles.a]\ncuda = \"1.x\"\ncudnn = \"bad\"\n[profiles.b]\ncuda = \"12\"\ncudnn = \"9\"\n[profiles.B]\ncuda = \"12\"\ncudnn = \"9\"\n[settings]\nlink-mode = \"x\"\n";
        let e = err(text);
        let all = e.all_located();
        let at: Vec<(usize, usize)> = all.iter().map(|l| (l.line, l.column)).collect();
        assert_eq!(at, [(2, 8), (3, 9), (7, 11), (11, 13)], "{e}");
        assert!(all[2].message.contains("differ only in case"), "{}", all[2].message);
        assert_eq!(e.hint(), None, "each diagnostic carries its own hint");
        let shown = e.to_string();
        assert_eq!(shown.matches("\nhint: ").count(), 4, "{shown}");
        assert_eq!(shown.matches("\nerror: ").count(), 3, "{shown}");
        assert!(shown.ends_with("4 errors in lab.toml; nothing was changed"), "{shown}");
        assert_eq!(e.exit_code(), ExitCode::Invalid);
        // Within one profile, every key is checked: bad versions, unknown keys, a CUDA
        // source other than PyPI.
        let e = err("[profiles.a]\ncuda = { version = \"12.x\", from = \"pyip\" }\ncudnn = \"nine\"\nchek = \"load\"\ncondaenv = \"x\"\n");
        let msgs: Vec<&str> = e.all_located().iter().map(|l| l.message.as_str()).collect();
        assert_eq!(msgs.len(), 4, "{e}");
        assert!(msgs[0].contains("12.x") && msgs[1].contains("not a version") && msgs[2].contains("`chek`") && msgs[3].contains("`condaenv`"), "{msgs:?}");
        let e = err("[profiles.a]\ncuda = { version = \"12.6\", from = \"pyip\" }\ncudnn = \"9\"\n");
        assert!(e.to_string().contains("only `from = \"pypi\"` can provide a CUDA runtime"), "{e}");
        assert_eq!(e.hint().unwrap(), "did you mean `from = \"pypi\"`? install the toolkit and name it under [toolkits], or use `from = \"pypi\"`");
        // File order across the top level and the profiles.
        let e = err("[toolkit]\nx = 1\n[profiles.a]\ncuda = \"?\"\ncudnn = \"9\"\n[setings]\ny = 2\n");
        let lines: Vec<usize> = e.all_located().iter().map(|l| l.line).collect();
        assert_eq!(lines, [1, 4, 6], "{e}");
        // One broken profile among good ones: a plain Invalid, as before.
        assert!(matches!(err("[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\n[profiles.b]\ncuda = \"12\"\n"), Error::Invalid(_)));
    }

    #[test]
    fn suggestions_prefer_swaps_and_shared_starts() {
        assert_eq!(did_you_mean("cudn", &PROFILE_KEYS), Some("cudnn"));
        assert_eq!(did_you_mean("cdua", &PROFILE_KEYS), Some("cuda"));
        assert_eq!(did_you_mean("form", &REQUIREMENT_KEYS), Some("from"));
        assert_eq!(did_you_mean("conda_env", &PROFILE_KEYS), Some("conda-env"));
        assert_eq!(did_you_mean("zzz", &PROFILE_KEYS), None);
    }

    #[test]
    fn parses_the_full_schema() {
        let f = ok(FULL);
        assert_eq!(f.settings.link_mode, LinkMode::Copy);
        assert_eq!(f.toolkits.len(), 2);
        assert_eq!(f.toolkits[0].label.value, "11.8");
        assert_eq!(f.toolkits[0].root.value, PathBuf::from(r"C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v11.8"));
        let names: Vec<&str> = f.profiles.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["tf28", "torch2"]);
        let tf = &f.profiles[0];
        assert_eq!(tf.cuda.version.to_string(), "11.2");
        assert_eq!(f.text(&tf.cudnn.span), "\"8.1\"");
        assert_eq!(f.text(&tf.name_span), "tf28");
        assert_eq!(tf.check, Check::Conv);
        assert_eq!(tf.conda_env_is_path(), Some(false));
        let t2 = &f.profiles[1];
        assert_eq!(t2.cudnn.from.as_ref().unwrap().value, Source::Pypi);
        assert_eq!(t2.cudnn.sha256.as_ref().unwrap().value, "d8a23705e3884b137b7e05449fb2b61bfa524e7cfc3fda80743d633f423c6ce4");
        assert_eq!(f.text(&t2.cudnn.span), "\"9.5.0.50\"");
        assert_eq!(t2.check, Check::Load);
        assert_eq!(t2.conda_env_is_path(), Some(true));
    }

    #[test]
    fn everything_optional_but_cuda_and_cudnn() {
        let f = ok("[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\n");
        assert_eq!(f.settings, Settings::default());
        assert!(f.toolkits.is_empty());
        assert_eq!(f.profiles[0].conda_env, None);
        assert!(ok("").profiles.is_empty());
    }

    #[test]
    fn accepts_dotted_and_inline_profiles_and_cuda_tables() {
        let f =
            ok("profiles.a = { cuda = { version = \"12.6\", from = \"pypi\" }, cudnn = \">=9, <10\" }\n[profiles.b]\ncuda.version = \"11\"\ncudnn = \"8\"\n");
        assert_eq!(f.profiles[0].cuda.from.as_ref().unwrap().value, Source::Pypi);
        assert_eq!(f.profiles[0].cudnn.version.to_string(), ">=9, <10");
        assert_eq!(f.profiles[1].cuda.version.to_string(), "11");
        let f = ok("[profiles.c]\ncuda = \"12\"\ncudnn = { version = \"9\", from = 'D:\\wheels\\x.whl' }\n");
        assert_eq!(f.profiles[0].cudnn.from.as_ref().unwrap().value, Source::Location("D:\\wheels\\x.whl".into()));
    }

    #[test]
    fn bad_version_renders_like_the_spec() {
        let text = "[profiles.tf28]\ncuda = \"11.2\"\n\n\n\n\ncudnn = \"8.x\"\n";
        let e = err(text);
        assert_eq!(e.to_string(), "lab.toml:7:9: `cudnn = \"8.x\"` is not a version requirement\n  7 | cudnn = \"8.x\"\n    |         ^^^^^");
        let hint = e.hint().unwrap();
        assert!(hint.contains("write `8`"), "{hint}");
        assert_eq!(e.exit_code(), ExitCode::Invalid);
    }

    #[test]
    fn bad_version_inside_a_table_points_at_it() {
        let e = err("[profiles.a]\ncuda = \"12\"\ncudnn = { version = \"9.5.\" }\n");
        let l = e.located().unwrap();
        assert_eq!((l.line, l.column, l.caret_len), (3, 21, 6));
        assert!(l.message.starts_with("`version = \"9.5.\"` is not a version requirement"));
    }

    #[test]
    fn syntax_error_is_located() {
        let e = err("[profiles.a]\ncuda = 12.6\"\n");
        assert!(matches!(e, Error::Syntax(_)));
        let l = e.located().unwrap();
        assert_eq!(l.line, 2);
        assert!(l.message.starts_with("invalid TOML"), "{}", l.message);
        assert_eq!(e.exit_code(), ExitCode::Invalid);
    }

    #[test]
    fn unknown_keys_suggest_the_closest() {
        let e = err("[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\nconda_env = \"x\"\n");
        let l = e.located().unwrap();
        assert_eq!(l.message, "unknown key `conda_env` in [profiles.a]");
        assert_eq!((l.line, l.column, l.caret_len), (4, 1, 9));
        assert!(e.hint().unwrap().starts_with("did you mean `conda-env`?"));

        let e = err("[setings]\nlink-mode = \"auto\"\n");
        assert_eq!(e.located().unwrap().message, "unknown key `setings` in the top level");
        assert!(e.hint().unwrap().starts_with("did you mean `settings`?"));

        let e = err("[settings]\nlinkmode = \"auto\"\n");
        assert!(e.hint().unwrap().starts_with("did you mean `link-mode`?"));

        let e = err("[profiles.a]\ncuda = \"12\"\ncudnn = { version = \"9\", sha = \"x\" }\n");
        assert_eq!(e.located().unwrap().message, "unknown key `sha` in `cudnn` of [profiles.a]");

        let e = err("[profiles.a]\nfoo = 1\n");
        let all = e.all_located();
        assert_eq!(all.len(), 3, "the unknown key and both missing requirements: {e}");
        assert_eq!(all.iter().find(|l| l.message.contains("`foo`")).unwrap().hint.as_deref(), Some("expected one of: cuda, cudnn, conda-env, check"));
    }

    #[test]
    fn cuda_tables_take_no_sha256() {
        let e = err("[profiles.a]\ncuda = { version = \"12\", sha256 = \"x\" }\ncudnn = \"9\"\n");
        assert_eq!(e.located().unwrap().message, "unknown key `sha256` in `cuda` of [profiles.a]");
    }

    #[test]
    fn wrong_types_suggest_quotes() {
        let e = err("[profiles.a]\ncuda = 11.8\ncudnn = \"9\"\n");
        let l = e.located().unwrap();
        assert_eq!(l.message, "`cuda = 11.8` must be a string, not float");
        assert_eq!((l.line, l.column, l.caret_len), (2, 8, 4));
        assert_eq!(e.hint().unwrap(), "put it in quotes: `cuda = \"11.8\"`");

        let e = err("[toolkits]\n\"12.6\" = { root = \"/x\" }\n");
        assert_eq!(e.located().unwrap().message, "`12.6` must be a string, not inline table");
        assert_eq!(e.hint().unwrap(), "write it as `12.6 = \"...\"`");

        let e = err("profiles = 3\n");
        assert_eq!(e.located().unwrap().message, "`profiles` must be a table, not integer");
        let e = err("[profiles]\na = \"x\"\n");
        assert_eq!(e.located().unwrap().message, "profile `a` must be a table, not string");
        let e = err("[[profiles]]\ncuda = \"12\"\n");
        assert!(e.located().unwrap().message.contains("must be a table, not array of tables"), "{e}");
    }

    #[test]
    fn missing_requirements_point_at_the_profile() {
        let e = err("[profiles.torch2]\ncuda = \"12\"\n");
        let l = e.located().unwrap();
        assert_eq!(l.message, "profile `torch2` has no `cudnn` requirement");
        assert_eq!((l.line, l.column, l.caret_len), (1, 11, 6));
        assert_eq!(e.hint().unwrap(), "add a line like `cudnn = \"9\"` to [profiles.torch2]");

        let e = err("[profiles.a]\ncudnn = \"9\"\n");
        assert_eq!(e.located().unwrap().message, "profile `a` has no `cuda` requirement");

        let e = err("[profiles.a]\ncuda = \"12\"\ncudnn = { from = \"pypi\" }\n");
        assert_eq!(e.located().unwrap().message, "`cudnn` of profile `a` has no `version`");
    }

    #[test]
    fn bad_choices_suggest_the_closest() {
        let e = err("[settings]\nlink-mode = \"junktion\"\n");
        let l = e.located().unwrap();
        assert_eq!(l.message, "`link-mode = \"junktion\"` is not a valid link-mode");
        assert!(e.hint().unwrap().starts_with("did you mean `link-mode = \"junction\"`?"));

        let e = err("[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\ncheck = \"full\"\n");
        assert_eq!(e.hint().unwrap(), "expected one of: conv, load, none");
    }

    #[test]
    fn profile_names_are_checked() {
        for bad in ["\"CON\"", "\"nul.x\"", "\"com1\"", "\".hidden\"", "\"a.\"", "\"a b\"", "\"tört\"", "\"a/b\"", "\"\""] {
            let e = err(&format!("[profiles.{bad}]\ncuda = \"12\"\ncudnn = \"9\"\n"));
            assert!(e.located().unwrap().message.starts_with("profile name `"), "{bad}: {e}");
            assert!(e.hint().unwrap().contains("folder names"));
        }
        for good in ["\"tf-2.8\"", "torch_2", "COM10", "console", "A9"] {
            ok(&format!("[profiles.{good}]\ncuda = \"12\"\ncudnn = \"9\"\n"));
        }
    }

    #[test]
    fn profile_names_differing_in_case_collide() {
        let e = err("[profiles.Torch]\ncuda = \"12\"\ncudnn = \"9\"\n[profiles.torch]\ncuda = \"12\"\ncudnn = \"9\"\n");
        let l = e.located().unwrap();
        assert_eq!(l.message, "profiles `Torch` and `torch` differ only in case");
        assert_eq!(l.line, 4);
    }

    #[test]
    fn empty_values_and_bad_digests_are_errors() {
        let e = err("[toolkits]\n\"11.8\" = \"\"\n");
        assert_eq!(e.located().unwrap().message, "`11.8` is empty");
        let e = err("[profiles.a]\ncuda = \"12\"\ncudnn = { version = \"9\", sha256 = \"abc\" }\n");
        assert_eq!(e.located().unwrap().message, "`sha256 = \"abc\"` is not a SHA-256 digest");
        assert!(e.hint().unwrap().contains("this has 3 characters"));
    }

    #[test]
    fn conda_env_names_and_paths() {
        let e = err("[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\nconda-env = \"my env\"\n");
        assert_eq!(e.located().unwrap().message, "`conda-env = \"my env\"` is neither a conda env name nor a path");
        let f = ok("[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\nconda-env = \"/opt/conda/envs/my env\"\n");
        assert_eq!(f.profiles[0].conda_env_is_path(), Some(true));
    }

    #[test]
    fn error_at_serves_later_steps_with_notes() {
        let f = ok(FULL);
        let span = f.profiles[1].cudnn.span.clone();
        let e = f.error_at(span, "no store entry matches", Some("run `cuenv store add <archive>`".into())).with_note("store entries: none");
        let s = e.to_string();
        assert!(s.starts_with("lab.toml:16:21: no store entry matches\n  16 | cudnn = { version"), "{s}");
        assert!(s.ends_with("\n     |                     ^^^^^^^^^^\n     = note: store entries: none"), "{s}");
        assert_eq!(e.hint().unwrap(), "run `cuenv store add <archive>`");
    }

    #[test]
    fn located_handles_tabs_unicode_crlf_and_eof() {
        let src = "a = 1\r\n\tkey = \"ü\"\r\n";
        let l = Located::new(Path::new("x.toml"), src, 14..16, "m", None);
        // The span ends inside `ü`: it is widened to the whole character.
        assert_eq!((l.line, l.column, l.caret_len), (2, 8, 2));
        assert_eq!(l.source_line, "\tkey = \"ü\"");
        assert!(l.to_string().ends_with("\n    | \t      ^^"), "{l}");
        let l = Located::new(Path::new("x.toml"), src, 999..1000, "m", None);
        assert_eq!((l.line, l.caret_len), (3, 1));
    }

    #[test]
    fn read_errors() {
        let e = load(Path::new("/nonexistent/lab.toml")).unwrap_err();
        assert!(matches!(e, Error::Read { .. }));
        assert_eq!(e.exit_code(), ExitCode::Invalid);
        assert!(e.hint().unwrap().contains("check the path"));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lab.toml");
        std::fs::write(&p, FULL).unwrap();
        assert_eq!(load(&p).unwrap().profiles.len(), 2);
    }

    #[test]
    fn did_you_mean_is_tight() {
        assert_eq!(did_you_mean("cuddn", &PROFILE_KEYS), Some("cudnn"));
        assert_eq!(did_you_mean("CUDA", &PROFILE_KEYS), Some("cuda"));
        assert_eq!(did_you_mean("version", &PROFILE_KEYS), None);
    }
}
