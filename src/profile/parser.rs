//! The parser of `lab.toml`: TOML text to a [`ProfileFile`], checking every key, type, choice,
//! version requirement and profile name, with a [`Located`] error for each problem.
//!
//! Pure: [`parse`] reads only its arguments; [`load`] only reads the one file.

use std::path::Path;

use toml_edit::{Item, TableLike};

use super::*;
use crate::error::suggest::did_you_mean;
use crate::sys::sha256::Sha256;

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

/// The largest profile file cuenv reads: 10 MiB. A hand-written lab file is a few kilobytes;
/// the bound keeps a mistaken or hostile file (parsing costs about 100 bytes of memory per
/// byte of TOML) from taking seconds and gigabytes.
pub const MAX_FILE_BYTES: usize = 10 * 1024 * 1024;

/// The most profiles one file may hold: 10,000 (each becomes a view folder, shims and a lock
/// section; a lab with more should split its profiles over several files).
pub const MAX_PROFILES: usize = 10_000;

/// The longest profile name, in bytes (names are ASCII): 64. The longest file name cuenv
/// derives from a name is a shim, `cuenv-<name>.fish` (name + 11 bytes), far inside the
/// 255-byte limit of file names on Linux, macOS and Windows.
pub const MAX_NAME_LEN: usize = 64;

/// The hint for a profile file that is not UTF-8.
const SAVE_AS_UTF8: &str = "save the file as UTF-8 (most editors offer the encoding under \"Save As\"; in Notepad, choose \"UTF-8\"): TOML files must be UTF-8";

/// Reads and parses the profile file at `path`.
///
/// Errors: [`Error::Read`] when it cannot be read (exit code Invalid when it does not exist,
/// Failure otherwise), else those of [`parse_bytes`] (a file over [`MAX_FILE_BYTES`] is
/// refused after reading just past the bound).
pub fn load(path: &Path) -> Result<ProfileFile, Error> {
    use std::io::Read;
    let read = |source| Error::Read { path: path.to_path_buf(), source };
    let mut bytes = Vec::new();
    std::fs::File::open(path).map_err(read)?.take(MAX_FILE_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(read)?;
    parse_bytes(&bytes, path)
}

/// Parses `bytes`, the content of the profile file `path` (used only in diagnostics).
///
/// Errors: [`Error::Syntax`] when the file is over [`MAX_FILE_BYTES`] or not UTF-8 (naming its
/// encoding when it is UTF-16 or UTF-32, else the line and column of the first bad byte),
/// else those of [`parse`].
pub fn parse_bytes(bytes: &[u8], path: &Path) -> Result<ProfileFile, Error> {
    validate_size(bytes, path)?;
    let text = crate::error::located::decode_utf8(bytes, path, SAVE_AS_UTF8).map_err(Error::Syntax)?;
    parse(text, path)
}

/// Refuses a file over [`MAX_FILE_BYTES`], at 1:1 (showing its first line).
fn validate_size(bytes: &[u8], path: &Path) -> Result<(), Error> {
    if bytes.len() <= MAX_FILE_BYTES {
        return Ok(());
    }
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let first = String::from_utf8_lossy(&first[..first.len().min(200)]);
    Err(Error::Syntax(Box::new(Located::new(
        path,
        &first,
        0..0,
        format!("the file is over {} MiB: cuenv reads profile files of at most {MAX_FILE_BYTES} bytes", MAX_FILE_BYTES >> 20),
        Some("a profile file holds a few lines per profile: check that this is the right file, or split its profiles over several files".into()),
    ))))
}

/// Parses `text`, the content of the profile file `path` (used only in diagnostics). A
/// leading byte-order mark is dropped (columns on line 1 count from the first real character).
///
/// Cost: linear in the size of `text` (checking every profile, and locating every error
/// through one [`LineIndex`]).
///
/// Errors: [`Error::Syntax`] for invalid TOML or a text over [`MAX_FILE_BYTES`];
/// [`Error::Invalid`] for an unknown key, a value
/// of the wrong type or out of its choices, a bad version requirement, a bad or duplicate
/// profile name, more than [`MAX_PROFILES`] profiles, or a profile without `cuda` or `cudnn`.
/// Each of the top level, `[settings]`,
/// `[toolkits]` and every profile is checked on its own: when more than one is wrong, all
/// their first errors come back together, in file order, as [`Error::Several`].
/// True when a `from` location reads as a local path (not a URL, not a bare word): `./w`,
/// `../w`, `/w`, `w/x`, `C:\\w`.
fn looks_like_folder(l: &str) -> bool {
    !l.contains("://") && (l.contains(['/', '\\']) || l.starts_with('.'))
}

pub fn parse(text: &str, path: &Path) -> Result<ProfileFile, Error> {
    validate_size(text.as_bytes(), path)?;
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let cx = Cx { path, src: text, lines: std::cell::OnceCell::new() };
    let doc = toml_edit::Document::parse(text).map_err(|e| cx.syntax(&e))?;
    let root: &dyn TableLike = doc.as_table();
    let mut errors = Vec::new();
    if let Err(e) = cx.validate_keys(root, &TOP_KEYS, "the top level") {
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
    let lines = cx.lines.into_inner().unwrap_or_else(|| LineIndex::new(text));
    Ok(ProfileFile { path: path.to_path_buf(), source: text.to_string(), settings, toolkits, profiles, lines })
}

/// A `from`: its first source and the ones after it.
type FirstAndRest = (Option<Spanned<Source>>, Vec<Spanned<Source>>);

/// The parsing context: the file's name and text, for building diagnostics.
struct Cx<'a> {
    path: &'a Path,
    src: &'a str,
    /// Built at the first error, then shared by all (so locating N errors stays linear).
    lines: std::cell::OnceCell<LineIndex>,
}

/// The keys of the top level, `[settings]`, a profile, a `cudnn` table and a `cuda` table
/// (the JSON Schema in `schema.rs` is checked against these).
pub(super) const TOP_KEYS: [&str; 3] = ["settings", "toolkits", "profiles"];
pub(super) const SETTINGS_KEYS: [&str; 5] = ["find-links", "link-mode", "nvidia-mirror", "pypi-index", "shells"];
pub(super) const PROFILE_KEYS: [&str; 5] = ["cuda", "cudnn", "conda-env", "python-env", "check"];
pub(super) const REQUIREMENT_KEYS: [&str; 3] = ["version", "from", "sha256"];
#[cfg(test)]
pub(super) const CUDNN_TABLE_KEYS: [&str; 3] = REQUIREMENT_KEYS;
pub(super) const CUDA_TABLE_KEYS: [&str; 2] = ["version", "from"];
const LINK_MODES: [(&str, LinkMode); 5] =
    [("auto", LinkMode::Auto), ("junction", LinkMode::Junction), ("symlink", LinkMode::Symlink), ("none", LinkMode::None), ("copy", LinkMode::Copy)];
const CHECKS: [(&str, Check); 3] = [("conv", Check::Conv), ("load", Check::Load), ("none", Check::None)];

impl Cx<'_> {
    fn invalid(&self, span: Span, message: impl Into<String>, hint: impl Into<String>) -> Error {
        Error::Invalid(Box::new(self.located(span, message, Some(hint.into()))))
    }

    fn located(&self, span: Span, message: impl Into<String>, hint: Option<String>) -> Located {
        let lines = self.lines.get_or_init(|| LineIndex::new(self.src));
        Located::indexed(self.path, self.src, lines, span, message, hint)
    }

    fn syntax(&self, e: &toml_edit::TomlError) -> Error {
        let span = crate::error::located::toml_error_span(self.src, e.span());
        let message = format!("invalid TOML: {}", e.message());
        let hint = "fix the TOML syntax at the marked place (strings need quotes; Windows paths are easiest in 'single quotes')";
        Error::Syntax(Box::new(self.located(span, message, Some(hint.into()))))
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
    fn validate_keys(&self, table: &dyn TableLike, allowed: &[&str], place: &str) -> Result<(), Error> {
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
        self.validate_keys(t, &SETTINGS_KEYS, "[settings]")?;
        let url = |key: &str| -> Result<Option<String>, Error> {
            let Some(v) = self.string(t, key)? else { return Ok(None) };
            self.url(key, &v)?;
            Ok(Some(v.value))
        };
        let mut s = Settings {
            find_links: self.string(t, "find-links")?.map(|v| PathBuf::from(v.value)),
            nvidia_mirror: url("nvidia-mirror")?,
            pypi_index: url("pypi-index")?,
            ..Settings::default()
        };
        if let Some(mode) = self.string(t, "link-mode")? {
            s.link_mode = self.one_of("link-mode", &mode, &LINK_MODES)?;
            s.link_mode_span = Some(mode.span);
        }
        s.shells = self.shells(t)?;
        Ok(s)
    }

    /// `key = "<url>"` must be a URL cuenv fetches from ([`crate::fetch::url_rule`]).
    fn url(&self, key: &str, v: &Spanned<String>) -> Result<(), Error> {
        match crate::fetch::url_rule::refusal(&v.value, &crate::fetch::url_rule::allowed_hosts()) {
            None => Ok(()),
            Some(why) => Err(self.invalid(v.span.clone(), format!("`{key} = {}`: {why}", shorten(self.text(&v.span))), crate::fetch::url_rule::HINT)),
        }
    }

    /// `[settings] shells = ["posix", "fish", ...]`: each a name [`Shell::from_name`] knows.
    fn shells(&self, t: &dyn TableLike) -> Result<Option<Vec<crate::shim::Shell>>, Error> {
        let Some(item) = t.get("shells") else { return Ok(None) };
        let span = item.span().unwrap_or(0..0);
        let hint = "write `shells = [\"posix\", \"fish\", \"csh\"]` (any of: cmd, powershell, posix, bash, zsh, sh, dash, fish, csh, tcsh)";
        let Some(arr) = item.as_array() else {
            return Err(self.invalid(span, "`shells` must be a list of shell names".to_string(), hint.to_string()));
        };
        let mut out = Vec::new();
        for v in arr.iter() {
            let vspan = v.span().unwrap_or(span.clone());
            let shell = v.as_str().and_then(crate::shim::Shell::from_name);
            match shell {
                Some(s) if !out.contains(&s) => out.push(s),
                Some(_) => {}
                None => return Err(self.invalid(vspan.clone(), format!("`{}` is not a shell cuenv writes shims for", self.text(&vspan)), hint.to_string())),
            }
        }
        Ok(Some(out))
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
    /// More than [`MAX_PROFILES`] is one error, at the first profile past the bound.
    fn profiles(&self, t: &dyn TableLike, errors: &mut Vec<Error>) -> Vec<Profile> {
        let mut out: Vec<Profile> = Vec::new();
        if let Some((name, _)) = t.iter().nth(MAX_PROFILES) {
            errors.push(self.invalid(
                self.key_span(t, name),
                format!("too many profiles: this file has {}; cuenv reads at most {MAX_PROFILES} profiles per file", t.len()),
                "split the profiles over several files (one lab file per group or project)",
            ));
            return out;
        }
        // Names seen so far, by their lowercase form (a map: a linear pass, not a pairwise one).
        let mut names: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
        for (name, item) in t.iter() {
            let name_span = self.key_span(t, name);
            let one = || -> Result<Profile, Error> {
                self.validate_profile_name(name, &name_span)?;
                if let Some(other) = names.get(&name.to_ascii_lowercase()) {
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
            names.entry(name.to_ascii_lowercase()).or_insert(name);
        }
        out
    }

    fn validate_profile_name(&self, name: &str, span: &Span) -> Result<(), Error> {
        let long;
        let why = if name.is_empty() {
            Some("is empty")
        } else if name.len() > MAX_NAME_LEN {
            long = format!("is {} characters long; at most {MAX_NAME_LEN} are allowed", name.chars().count());
            Some(long.as_str())
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
                format!("profile name `{}` {why}", shorten(name)),
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
        keep(self.validate_keys(t, &PROFILE_KEYS, &place));
        let cuda = self.requirement(t, "cuda", &CUDA_TABLE_KEYS, name, &name_span);
        let cudnn = self.requirement(t, "cudnn", &REQUIREMENT_KEYS, name, &name_span);
        // A CUDA runtime comes from PyPI, or from a folder of its wheels (`from = "./wheels"`,
        // a path alone: whether it exists is checked before fetching, `sources::validate`).
        let wheel_folder =
            |req: &Requirement| matches!(&req.from, Some(Spanned { value: Source::Location(l), .. }) if req.fallbacks.is_empty() && looks_like_folder(l));
        if let Ok(req) = &cuda
            && !wheel_folder(req)
            && let Some(src) = req.sources().find(|s| s.value != Source::Pypi)
        {
            let guess = match &src.value {
                Source::Location(l) if did_you_mean(l, &["pypi"]).is_some() => "did you mean `from = \"pypi\"`? ",
                _ => "",
            };
            keep(Err(self.invalid(
                src.span.clone(),
                "only `from = \"pypi\"` can provide a CUDA runtime",
                format!("{guess}install the toolkit and name it under [toolkits], or use `from = \"pypi\"`, or name a folder holding the runtime wheels (`from = \"./wheels\"`)"),
            )));
        }
        // A cuDNN `from` that is a near miss of a source name, not a path or URL, is a typo
        // (whether a real path exists is checked before fetching: `sources::validate`).
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
        // A cuDNN `from` URL: one cuenv may fetch from, with the digest that authenticates it.
        if let Ok(Requirement { from: Some(src), sha256, .. }) = &cudnn
            && let Source::Location(l) = &src.value
            && looks_like_url(l)
        {
            keep(self.url("from", &Spanned { value: l.clone(), span: src.span.clone() }).and_then(|()| match sha256 {
                Some(_) => Ok(()),
                None => Err(self.invalid(
                    src.span.clone(),
                    format!("the URL source of profile `{name}` has no `sha256`"),
                    "add `sha256 = \"<64 hex digits>\"` inside the braces: the digest the publisher lists for the file (NVIDIA's redistrib_<version>.json, the index's page), or `sha256sum FILE` (Linux) / `certutil -hashfile FILE SHA256` (Windows) of a copy you trust; cuenv never imports a download it cannot check",
                )),
            }));
        }
        let conda_env = self.string(t, "conda-env").and_then(|env| {
            if let Some(e) = &env {
                self.validate_conda_env(e)?;
            }
            Ok(env)
        });
        let python_env = self.string(t, "python-env").and_then(|env| match (&env, t.get("conda-env")) {
            (Some(e), Some(_)) => Err(self.invalid(
                e.span.clone(),
                format!("profile `{name}` has both `conda-env` and `python-env`"),
                "keep one: `conda-env` for a conda env (cuenv writes its activation shims), `python-env` for a venv, uv or pixi env or a conda prefix without shims",
            )),
            (Some(e), None) if e.value.trim().is_empty() => Err(self.invalid(e.span.clone(), "`python-env` is empty", "name the env's folder, e.g. python-env = \".venv\"")),
            _ => Ok(env),
        });
        let check = self.string(t, "check").and_then(|c| c.map(|c| self.one_of("check", &c, &CHECKS)).transpose());
        let (cuda, cudnn, conda_env, python_env, check) = match (cuda, cudnn, conda_env, python_env, check) {
            (Ok(a), Ok(b), Ok(c), Ok(e), Ok(d)) if errors.is_empty() => (a, b, c, e, d),
            (a, b, c, e, d) => {
                errors.extend(a.err().into_iter().chain(b.err()).chain(c.err()).chain(e.err()).chain(d.err()));
                errors.sort_by_key(|e| e.located().map(|l| l.span.start).unwrap_or(0));
                return Err(Error::combine(errors));
            }
        };
        Ok(Profile { name: name.to_string(), name_span, cuda, cudnn, conda_env, python_env, check: check.unwrap_or_default() })
    }

    fn validate_conda_env(&self, env: &Spanned<String>) -> Result<(), Error> {
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
            return Ok(Requirement { version, span: s.span, from: None, fallbacks: Vec::new(), sha256: None });
        }
        let table = item.as_table_like().expect("checked above");
        self.validate_keys(table, allowed, &format!("`{key}` of [profiles.{profile}]"))?;
        let Some(v) = self.string(table, "version")? else {
            return Err(self.invalid(
                self.value_span(t, key),
                format!("`{key}` of profile `{profile}` has no `version`"),
                format!("add `version = \"...\"` inside the braces, like `{key} = {{ version = \"9.5\" }}`"),
            ));
        };
        let version = self.version_req("version", &v)?;
        let (from, fallbacks) = self.sources(table)?;
        let sha256 = self.string(table, "sha256")?.map(|s| self.sha256(s)).transpose()?;
        Ok(Requirement { version, span: v.span, from, fallbacks, sha256 })
    }

    /// `from = "<source>"`, or a list `from = ["pypi", "nvidia"]` of source names tried in
    /// order (each once, only `"pypi"` and `"nvidia"`: a URL or a path is one file, not a
    /// source to fall back from). Returns the first source and the rest.
    fn sources(&self, table: &dyn TableLike) -> Result<FirstAndRest, Error> {
        let Some(item) = table.get("from") else { return Ok((None, Vec::new())) };
        let Some(list) = item.as_array() else {
            let s = self.string(table, "from")?.expect("the key is present");
            return Ok((Some(Spanned { value: source_of(&s.value), span: s.span }), Vec::new()));
        };
        let span = self.value_span(table, "from");
        let hint = "list the sources to try, in order, like `from = [\"pypi\", \"nvidia\"]`";
        let mut out: Vec<Spanned<Source>> = Vec::new();
        for v in list.iter() {
            let vspan = v.span().unwrap_or_else(|| span.clone());
            match v.as_str() {
                Some(name @ ("pypi" | "nvidia")) if out.iter().any(|o| o.value == source_of(name)) => {
                    return Err(self.invalid(vspan, format!("`\"{name}\"` is listed twice in `from`"), "name each source once"));
                }
                Some(name @ ("pypi" | "nvidia")) => out.push(Spanned { value: source_of(name), span: vspan }),
                Some(other) => {
                    let guess = did_you_mean(other, &["pypi", "nvidia"]).map(|g| format!("did you mean `\"{g}\"`? ")).unwrap_or_default();
                    return Err(self.invalid(
                        vspan,
                        format!("a `from` list names only \"pypi\" and \"nvidia\", not `\"{other}\"`"),
                        format!("{guess}a URL or a path is one file: write it alone, `from = \"...\"`"),
                    ));
                }
                None => return Err(self.invalid(vspan, "a `from` list holds source names (strings)", hint)),
            }
        }
        if out.is_empty() {
            return Err(self.invalid(span, "`from = []` names no source", hint));
        }
        let first = out.remove(0);
        Ok((Some(first), out))
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

    fn sha256(&self, s: Spanned<String>) -> Result<Spanned<Sha256>, Error> {
        if let Ok(value) = s.value.parse::<Sha256>() {
            return Ok(Spanned { value, span: s.span });
        }
        Err(self.invalid(
            s.span.clone(),
            format!("`sha256 = {}` is not a SHA-256 digest", self.text(&s.span)),
            format!("a SHA-256 digest is 64 hexadecimal digits; this has {} characters", s.value.chars().count()),
        ))
    }
}

/// `name` for a message: whole up to 40 characters, else its first 32 and `...`.
fn shorten(name: &str) -> String {
    if name.chars().count() <= 40 { name.to_string() } else { format!("{}...", name.chars().take(32).collect::<String>()) }
}

/// Whether a `from` location is written as a URL (`scheme://...`, or `javascript:`-like
/// `name:` other than a Windows drive letter), not a path.
fn looks_like_url(l: &str) -> bool {
    match l.split_once(':') {
        Some((scheme, rest)) => {
            scheme.len() > 1
                && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
                && (rest.starts_with("//") || !rest.starts_with(['\\', '/']))
        }
        None => false,
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
