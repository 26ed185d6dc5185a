//! The profile file (`lab.toml`): its typed model and errors (this file) and its parser
//! (`parser.rs`). Diagnostics point into it through [`Located`] (module [`crate::error::located`]).
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
//! - The file must be UTF-8 (a leading byte-order mark is dropped, so line-1 columns stay
//!   right); UTF-16/32 is named as such, other bytes at the first bad byte's line:column.
//! - Bounded and linear: at most [`MAX_FILE_BYTES`] (10 MiB) and [`MAX_PROFILES`] (10,000
//!   profiles), each name at most [`MAX_NAME_LEN`] (64) bytes; the cost of parsing and of
//!   locating every error is linear in the file's size (one [`LineIndex`] per file).
//!
//! Schema:
//! ```toml
//! [settings]                 # optional
//! link-mode = "auto"         # auto | junction | symlink | copy
//! find-links = "wheels"      # a folder of wheels asked before the PyPI index
//! [toolkits]                 # optional; label -> toolkit root
//! "11.8" = 'C:\Program Files\NVIDIA GPU Computing Toolkit\CUDA\v11.8'
//! [profiles.tf28]
//! cuda = "11.2"              # VersionReq on the toolkit version, or { version, from }
//! cudnn = "8.1"              # VersionReq on a store entry, or { version, from, sha256 }
//!                            # from: "pypi", "nvidia", a URL or a path; or a list of
//!                            # "pypi" / "nvidia" tried in order: from = ["pypi", "nvidia"]
//! conda-env = "tf28"         # optional: a conda env name or a path
//! # python-env = ".venv"     # or instead: a venv, uv or pixi env (no shims are written into it)
//! check = "conv"             # optional: conv | load | none (default conv)
//! ```

pub mod lockfile;
pub mod project;

mod parser;
#[cfg(test)]
mod schema;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::cudnn::version::VersionReq;
pub use crate::error::located::{LineIndex, Located, Span};
pub use crate::error::suggest::did_you_mean;
use crate::error::{Diagnose, ExitCode};
pub use parser::{MAX_FILE_BYTES, MAX_NAME_LEN, MAX_PROFILES, load, parse, parse_bytes};

/// A value together with the span of the text it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T> {
    /// The parsed value.
    pub value: T,
    /// Where its text is in the source (for a string, including the quotes).
    pub span: Span,
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
                Some(
                    "check the path, or create the file: one `[profiles.NAME]` table per profile, with `cuda = \"12.6\"` and `cudnn = \"9.5\"` (`cuenv plan FILE` checks it)"
                        .into(),
                )
            }
            Error::Read { path, .. } if path.is_dir() => {
                Some(format!("give the profile file itself (a TOML file such as {}), not a folder", path.join("lab.toml").display()))
            }
            Error::Read { path, source } => Some(crate::error::io_hint(path, source)),
            // Each diagnostic carries its own hint, rendered in the message.
            Error::Several(_) => None,
            Error::Syntax(l) | Error::Invalid(l) => l.hint.clone(),
        }
    }

    fn exit_code(&self) -> ExitCode {
        match self {
            Error::Read { path, .. } if path.is_dir() => ExitCode::Invalid,
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
    /// Junctions on Windows, symlinks elsewhere; link-free ([`LinkMode::None`]) when the home's
    /// file system refuses links.
    #[default]
    Auto,
    /// Directory junctions (Windows only; local NTFS/ReFS volumes).
    Junction,
    /// Symbolic links (Windows: needs admin or Developer Mode).
    Symlink,
    /// `copy`, the old name of the link-free mode: an alias of [`LinkMode::None`] (nothing is copied).
    Copy,
    /// No link anywhere (`none`): shims and activations name the store entries and toolkit
    /// roots themselves; the current generation and the active profile are pointer files.
    None,
}

impl LinkMode {
    /// Whether this mode makes no links (`none`, or its alias `copy`).
    pub fn is_link_free(self) -> bool {
        matches!(self, LinkMode::None | LinkMode::Copy)
    }
}

/// What `apply` checks after building a profile's view (`check = ...`); saved with the
/// same words (`conv`, `load`, `none`) in manifests and check results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
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

/// Where a requirement's files come from (`from = ...`; a list `from = ["pypi", "nvidia"]`
/// names several, tried in order: see [`Requirement::sources`]).
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
    /// `find-links`: a folder of wheels asked before the PyPI index (relative to the
    /// profile file), for labs without network access.
    pub find_links: Option<PathBuf>,
    /// `shells`: the shells whose conda shims `apply` writes (`cmd`, `powershell`, `posix`,
    /// `fish`, `csh`); `None` (absent) means the platform's own ([`crate::shim::Shell::defaults`]).
    /// On Windows only cmd and PowerShell are written whatever the list says.
    pub shells: Option<Vec<crate::shim::Shell>>,
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
    /// `from`, when given in the table form: its first source (for a list
    /// `from = ["pypi", "nvidia"]`, `"pypi"`).
    pub from: Option<Spanned<Source>>,
    /// The sources after the first of a list `from = [...]`, in order (empty for a single
    /// `from = "..."`): tried when the ones before have no file for the platform (see
    /// the `sources` module). Only `"pypi"` and `"nvidia"` can be listed, each once.
    pub fallbacks: Vec<Spanned<Source>>,
    /// `sha256` (64 hex digits, either case), when given in the table form.
    pub sha256: Option<Spanned<crate::sys::sha256::Sha256>>,
}

impl Requirement {
    /// Every `from` source in the order they are tried: [`Requirement::from`], then
    /// [`Requirement::fallbacks`]. Empty without `from`.
    pub fn sources(&self) -> impl Iterator<Item = &Spanned<Source>> {
        self.from.iter().chain(&self.fallbacks)
    }
}

/// One `[profiles.<name>]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The profile name: `[A-Za-z0-9_.-]+`, at most [`MAX_NAME_LEN`] bytes, not starting or
    /// ending with `.`, not a Windows reserved device name.
    pub name: String,
    /// The span of the name in its table header (or dotted key).
    pub name_span: Span,
    /// The requirement on the toolkit version.
    pub cuda: Requirement,
    /// The requirement on the cuDNN store entry.
    pub cudnn: Requirement,
    /// `conda-env`: an env name (no slashes) or a path, as written.
    pub conda_env: Option<Spanned<String>>,
    /// `python-env`: the folder of a Python env that is not a conda env with cuenv shims (a
    /// venv, a uv or pixi env, a project folder holding one; [`crate::pyenv::resolve_binding`]),
    /// relative to the lab file's folder, as written.
    pub python_env: Option<Spanned<String>>,
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
    /// Where each line of `source` starts, so that [`ProfileFile::error_at`] stays cheap for
    /// every profile of a large file.
    lines: LineIndex,
}

impl ProfileFile {
    /// An [`Error::Invalid`] pointing at `span` of this file, for later steps such as
    /// resolution: `message` is the first line, `hint` what to do next.
    pub fn error_at(&self, span: Span, message: impl Into<String>, hint: Option<String>) -> Error {
        Error::Invalid(Box::new(Located::indexed(&self.path, &self.source, &self.lines, span, message, hint)))
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

#[cfg(test)]
mod tests {
    use std::path::Path;

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
        assert_eq!(
            e.hint().unwrap(),
            "did you mean `from = \"pypi\"`? install the toolkit and name it under [toolkits], or use `from = \"pypi\"`, or name a folder holding the runtime wheels (`from = \"./wheels\"`)"
        );
        // A folder of the runtime's wheels is a source of its own.
        let f = ok("[profiles.a]\ncuda = { version = \"12.6\", from = \"./wheels\" }\ncudnn = \"9\"\n");
        assert_eq!(f.profiles[0].cuda.from.as_ref().unwrap().value, Source::Location("./wheels".into()));
        assert!(
            err("[profiles.a]\ncuda = { version = \"12.6\", from = \"https://x/w.whl\" }\ncudnn = \"9\"\n")
                .to_string()
                .contains("only `from = \"pypi\"` can provide")
        );
        // File order across the top level and the profiles.
        let e = err("[toolkit]\nx = 1\n[profiles.a]\ncuda = \"?\"\ncudnn = \"9\"\n[setings]\ny = 2\n");
        let lines: Vec<usize> = e.all_located().iter().map(|l| l.line).collect();
        assert_eq!(lines, [1, 4, 6], "{e}");
        // One broken profile among good ones: a plain Invalid, as before.
        assert!(matches!(err("[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\n[profiles.b]\ncuda = \"12\"\n"), Error::Invalid(_)));
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
        assert_eq!(t2.cudnn.sha256.as_ref().unwrap().value.to_string(), "d8a23705e3884b137b7e05449fb2b61bfa524e7cfc3fda80743d633f423c6ce4");
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
        assert_eq!(
            all.iter().find(|l| l.message.contains("`foo`")).unwrap().hint.as_deref(),
            Some("expected one of: cuda, cudnn, conda-env, python-env, check")
        );
    }

    /// `from` is a source or a list of sources tried in order; the single-string
    /// form keeps working.
    #[test]
    fn from_takes_a_list_of_sources_tried_in_order() {
        let f = ok("[profiles.tf28]\ncuda = { version = \"11.8\", from = [\"pypi\"] }\ncudnn = { version = \"8.8.0.121\", from = [\"pypi\", \"nvidia\"] }\n");
        let p = &f.profiles[0];
        let names = |r: &Requirement| r.sources().map(|s| s.value.clone()).collect::<Vec<_>>();
        assert_eq!(names(&p.cudnn), [Source::Pypi, Source::Nvidia]);
        assert_eq!(p.cudnn.from.as_ref().unwrap().value, Source::Pypi);
        assert_eq!(f.text(&p.cudnn.fallbacks[0].span), "\"nvidia\"");
        assert_eq!(names(&p.cuda), [Source::Pypi]);
        let f = ok("[profiles.a]\ncuda = \"12\"\ncudnn = { version = \"9\", from = \"nvidia\" }\n");
        assert_eq!(names(&f.profiles[0].cudnn), [Source::Nvidia]);
        assert!(f.profiles[0].cudnn.fallbacks.is_empty());

        let e = err("[profiles.a]\ncuda = \"12\"\ncudnn = { version = \"9\", from = [\"pypi\", \"nvidai\"] }\n");
        let l = e.located().unwrap();
        assert_eq!(l.message, "a `from` list names only \"pypi\" and \"nvidia\", not `\"nvidai\"`");
        assert_eq!((l.line, l.column), (3, 42));
        assert!(e.hint().unwrap().starts_with("did you mean `\"nvidia\"`?"), "{e:?}");
        let e = err("[profiles.a]\ncuda = \"12\"\ncudnn = { version = \"9\", from = [\"pypi\", \"pypi\"] }\n");
        assert_eq!(e.located().unwrap().message, "`\"pypi\"` is listed twice in `from`");
        let e = err("[profiles.a]\ncuda = \"12\"\ncudnn = { version = \"9\", from = [] }\n");
        assert_eq!(e.located().unwrap().message, "`from = []` names no source");
        let e = err("[profiles.a]\ncuda = \"12\"\ncudnn = { version = \"9\", from = [1] }\n");
        assert_eq!(e.located().unwrap().message, "a `from` list holds source names (strings)");
        let e = err("[profiles.a]\ncuda = \"12\"\ncudnn = { version = \"9\", from = ['D:\\x.zip', \"pypi\"] }\n");
        assert!(e.hint().unwrap().contains("a URL or a path is one file"), "{e:?}");
        // The CUDA runtime comes only from PyPI, in a list too.
        let e = err("[profiles.a]\ncuda = { version = \"12.6\", from = [\"pypi\", \"nvidia\"] }\ncudnn = \"9\"\n");
        let l = e.located().unwrap();
        assert_eq!(l.message, "only `from = \"pypi\"` can provide a CUDA runtime");
        assert_eq!(l.column, 44, "at \"nvidia\"");
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
}
