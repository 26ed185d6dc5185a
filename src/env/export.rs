//! `cuenv export PROFILE --format F`: a profile's environment for tools that do not run cuenv.
//! Every format goes through the stable paths (`<home>/profiles/<name>/...`,
//! [`crate::env::view::activation`]), so `use` and `rollback` never leave an export stale, as with
//! shims (docs/decisions.md 4). In the link-free mode exports name the real folders; a
//! switch rewrites those written with `--out` (the `follow` module).
//!
//! Formats (each a text file; shapes below):
//! - `dotenv`: `NAME=value` lines (VS Code's `python.envFile`, `docker --env-file`). dotenv has
//!   no portable way to prepend, so `LD_LIBRARY_PATH` holds the profile's folders alone and
//!   `PATH` is left out (replacing it would hide every tool). Values are written bare, as
//!   `docker --env-file` keeps quotes as part of the value; a value that needs quoting for
//!   python-dotenv (`'`, `"`, `#`, `$`, or spaces at its ends) is single-quoted.
//! - `envrc`: direnv's `.envrc` (`path_add VAR DIR` prepends; `export NAME=value`); direnv
//!   undoes it on leaving the folder.
//! - `lmod`: a Lua modulefile for Lmod (`prepend_path`, `setenv`, `family("cuenv")` so that
//!   loading another cuenv profile swaps it).
//! - `tcl`: an Environment Modules / Lmod Tcl modulefile (`prepend-path`, `setenv`,
//!   `conflict cuenv`).
//! - `json`: `{"profile", "set": {NAME: value}, "prepend": {NAME: [folders]}}` for Ansible,
//!   Intune or CI scripts.
//! - `conda-env-vars`: the static variables as one `etc/conda/env_vars.d/*.json` object
//!   (conda sets and unsets those itself; it cannot prepend).

use std::path::Path;

use serde::Serialize;

use crate::shim::{Activation, shim_path};

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Dotenv,
    Envrc,
    Lmod,
    Tcl,
    Json,
    CondaEnvVars,
}

impl Format {
    /// Every format with its `--format` name.
    pub const ALL: [(&'static str, Format); 6] = [
        ("dotenv", Format::Dotenv),
        ("envrc", Format::Envrc),
        ("lmod", Format::Lmod),
        ("tcl", Format::Tcl),
        ("json", Format::Json),
        ("conda-env-vars", Format::CondaEnvVars),
    ];

    /// The format for a `--format` name.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
    }

    /// The file name `export --all --out DIR` writes for `profile` (modulefiles as
    /// `cuenv/<profile>`, Lmod's `<name>/<version>` layout).
    pub fn file_name(self, profile: &str) -> String {
        match self {
            Format::Dotenv => format!("{profile}.env"),
            Format::Envrc => format!("{profile}.envrc"),
            Format::Lmod => format!("cuenv/{profile}.lua"),
            Format::Tcl => format!("cuenv/{profile}"),
            Format::Json => format!("{profile}.json"),
            Format::CondaEnvVars => format!("{profile}.conda-env-vars.json"),
        }
    }
}

/// What a profile's environment is, shell-independent: `(list variable, folders to prepend)`
/// and `(variable, value)`, `CUENV_PROFILE` last.
#[derive(Debug, Serialize)]
pub struct Exported {
    pub profile: String,
    pub set: std::collections::BTreeMap<String, String>,
    pub prepend: std::collections::BTreeMap<String, Vec<String>>,
    /// Whether the paths name the real folders of a link-free generation (not written in
    /// `json`; the header of the text formats says which).
    #[serde(skip)]
    pub direct: bool,
}

/// Profile `profile`'s activation `a` shaped for export; `direct`: its paths name a
/// link-free generation's real folders. PATH only keeps folders that exist (as `cuenv env`).
/// Which activation a profile has is the generation's to say (`generation::exported`).
pub fn from_activation(mut a: Activation, profile: &str, direct: bool) -> Exported {
    a.path_prepend.retain(|p| p.is_dir());
    let mut set: std::collections::BTreeMap<String, String> = a.set.iter().map(|(k, v)| (k.clone(), shim_path(v))).collect();
    set.insert(crate::home::settings::PROFILE_VAR.into(), profile.into());
    let mut prepend = std::collections::BTreeMap::new();
    for (name, dirs) in [("PATH", &a.path_prepend), ("LD_LIBRARY_PATH", &a.ld_library_path_prepend)] {
        if !dirs.is_empty() {
            prepend.insert(name.to_string(), dirs.iter().map(|p| shim_path(p)).collect());
        }
    }
    Exported { profile: profile.into(), set, prepend, direct }
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn lua_quote(s: &str) -> String {
    // A Lua long-bracket string holds anything but its own closing bracket.
    let mut level = 0;
    while s.contains(&format!("]{}]", "=".repeat(level))) {
        level += 1;
    }
    let eq = "=".repeat(level);
    format!("[{eq}[{s}]{eq}]")
}

fn tcl_quote(s: &str) -> String {
    // Braces make everything literal in Tcl, when they balance and nothing ends in `\`.
    let balanced = s.chars().try_fold(0i32, |d, c| match c {
        '{' => Some(d + 1),
        '}' if d == 0 => None,
        '}' => Some(d - 1),
        _ => Some(d),
    }) == Some(0);
    if balanced && !s.ends_with('\\') {
        return format!("{{{s}}}");
    }
    let mut out = String::from("\"");
    for c in s.chars() {
        if matches!(c, '\\' | '"' | '$' | '[' | ']' | '{' | '}') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The text of `e` in format `f`; `sep` is the platform's list separator.
///
/// Errors: serde cannot write `e` as JSON (an `InvalidData` error; the JSON formats only).
pub fn render(e: &Exported, f: Format, sep: char) -> std::io::Result<String> {
    let via = if e.direct { "paths name the current generation's real folders" } else { "paths go through the profile's stable view" };
    let head = |c: &str| format!("{c} cuenv profile {} (generated by `cuenv export`; {via})\n", e.profile);
    Ok(match f {
        Format::Dotenv => {
            let mut out = head("#");
            let value = |v: &str| {
                if v.contains(['\'', '"', '#', '$', '\n']) || v.trim() != v { sh_quote(v) } else { v.to_string() }
            };
            for (k, dirs) in e.prepend.iter().filter(|(k, _)| !k.eq_ignore_ascii_case("PATH")) {
                out.push_str(&format!("{k}={}\n", value(&dirs.join(&sep.to_string()))));
            }
            for (k, v) in &e.set {
                out.push_str(&format!("{k}={}\n", value(v)));
            }
            out
        }
        Format::Envrc => {
            let mut out = head("#");
            for (k, dirs) in &e.prepend {
                // path_add prepends one folder at a time: add the last first.
                for d in dirs.iter().rev() {
                    out.push_str(&format!("path_add {k} {}\n", sh_quote(d)));
                }
            }
            for (k, v) in &e.set {
                out.push_str(&format!("export {k}={}\n", sh_quote(v)));
            }
            out
        }
        Format::Lmod => {
            let mut out = head("--");
            out.push_str(&format!("whatis({})\nfamily(\"cuenv\")\n", lua_quote(&format!("cuenv profile {}", e.profile))));
            for (k, dirs) in &e.prepend {
                for d in dirs.iter().rev() {
                    out.push_str(&format!("prepend_path({}, {})\n", lua_quote(k), lua_quote(d)));
                }
            }
            for (k, v) in &e.set {
                out.push_str(&format!("setenv({}, {})\n", lua_quote(k), lua_quote(v)));
            }
            out
        }
        Format::Tcl => {
            let mut out = String::from("#%Module1.0\n");
            out.push_str(&head("#"));
            out.push_str(&format!("module-whatis {}\nconflict cuenv\n", tcl_quote(&format!("cuenv profile {}", e.profile))));
            for (k, dirs) in &e.prepend {
                for d in dirs.iter().rev() {
                    out.push_str(&format!("prepend-path {k} {}\n", tcl_quote(d)));
                }
            }
            for (k, v) in &e.set {
                out.push_str(&format!("setenv {k} {}\n", tcl_quote(v)));
            }
            out
        }
        Format::Json => format!("{}\n", serde_json::to_string_pretty(e).map_err(crate::error::unserializable)?),
        Format::CondaEnvVars => format!("{}\n", serde_json::to_string_pretty(&e.set).map_err(crate::error::unserializable)?),
    })
}

/// Writes `text` to `dir/<name>` atomically, creating folders.
pub fn write(dir: &Path, name: &str, text: &str) -> Result<std::path::PathBuf, crate::error::IoError> {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| crate::error::IoError::new("create the folder", parent, e))?;
        // Not the home's: written only while it is the folder it is now.
        crate::sys::fsutil::pin_folder(parent);
    }
    crate::sys::fsutil::write_atomic(&path, text.as_bytes()).map_err(|e| crate::error::IoError::new("write", &path, e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_hostile_text_literal() {
        assert_eq!(lua_quote("a]]b"), "[=[a]]b]=]");
        assert_eq!(tcl_quote("/opt/cuda 12 (x86)"), "{/opt/cuda 12 (x86)}");
        assert_eq!(tcl_quote("a}b"), "\"a\\}b\"");
        assert_eq!(tcl_quote("a\\"), "\"a\\\\\"");
        assert_eq!(sh_quote("it's"), "'it'\\''s'");
    }
}
