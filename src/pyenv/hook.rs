//! The env hook: the `.pth` file that makes a profile win inside the Python env it is bound to
//! (`python-env`), whatever launched the interpreter (docs/design.md, "The env hook";
//! docs/decisions.md 4, 5, 10).
//!
//! CPython's `site` module runs every line of a site-packages `.pth` file that starts with
//! `import` at start-up, in sorted file-name order, before any user code (`Lib/site.py`,
//! `addpackage`). The hook is `<site-packages>/00-cuenv-<profile>.pth` ([`file_name`]):
//! - line 1: the shim marker (`# cuenv-shim v2`), so it is cuenv's own ([`crate::shim::is_ours`]);
//! - line 2: `# cuenv-hook: {json}`, the [`Hook`] it carries out, for doctor ([`parse`]);
//! - line 3: a comment for the reader (the off switch);
//! - line 4: `import sys; exec("<code>", {...})`: `hook.py` and the call with the hook's data.
//!
//! The whole file is ASCII: before Python 3.13 `site` decodes `.pth` files in the locale's
//! encoding, so every non-ASCII character of a path is a `\u`/`\U` escape of a Python literal
//! (and of JSON, whose escapes use UTF-16 surrogate pairs). This module only renders and reads
//! text; the generation's shim sync writes and deletes the file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The variable that turns the hook off for a process: `0`, `off`, `no`, `false`. Any other
/// value than those and `1`/`on`/`yes`/`true`/empty names a profile: only that profile's hook
/// runs (`cuenv run <profile>` sets it, so an explicit run wins over the env's binding).
pub const VAR: &str = "CUENV_PYTHON_HOOK";

/// The prefix of the hook's data line.
const TAG: &str = "# cuenv-hook: ";

/// The code the hook runs: one function, called with the hook's data.
const CODE: &str = include_str!("hook.py");

/// What one env hook does at interpreter start-up, in this order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hook {
    /// The profile (`[A-Za-z0-9_.-]+`); also the `CUENV_PROFILE` it sets.
    pub profile: String,
    /// Libraries loaded by full path, in order (the dispatcher first, then the members the
    /// rest of its release shares: `cudnn::set::shared_members`).
    pub preload: Vec<PathBuf>,
    /// Folders put first on the process's `PATH`, in order; on Windows also registered with
    /// `os.add_dll_directory` (cuDNN's `bin`, the toolkit's runtime folder).
    pub path: Vec<PathBuf>,
    /// Folders put first on `LD_LIBRARY_PATH` for child processes (Linux).
    pub ld_library_path: Vec<PathBuf>,
    /// Variables set to a folder for child processes: `CUDA_PATH`, `CUDA_HOME`,
    /// `CUDNN_PATH`, `CUDNN_HOME` (`crate::env::view::SCALARS`).
    pub set: Vec<(String, PathBuf)>,
}

/// Whether a value of [`VAR`] turns the hook off (`0`, `off`, `no`, `false`, any case), as
/// `hook.py` reads it.
pub fn is_off(value: &str) -> bool {
    matches!(value.to_ascii_lowercase().as_str(), "0" | "off" | "no" | "false")
}

/// `00-cuenv-<profile>.pth`: the hook's file name in site-packages (`00-` sorts it ahead of
/// other packages' `.pth` files).
pub fn file_name(profile: &str) -> String {
    format!("00-cuenv-{profile}.pth")
}

/// Whether `name` is the file name of an env hook (of any profile).
pub fn is_hook_name(name: &str) -> bool {
    name.starts_with("00-cuenv-") && name.ends_with(".pth")
}

/// The hook's file content (ASCII, LF line ends; see the module documentation).
///
/// Panics when a path is not valid Unicode (apply refuses such paths first:
/// `sys::paths::require_unicode`).
pub fn render(h: &Hook) -> String {
    let text = |p: &Path| p.to_str().expect("hook paths are Unicode").to_string();
    let list = |ps: &[PathBuf]| format!("[{}]", ps.iter().map(|p| py_str(&text(p))).collect::<Vec<_>>().join(", "));
    let set = h.set.iter().map(|(k, v)| format!("({}, {})", py_str(k), py_str(&text(v)))).collect::<Vec<_>>().join(", ");
    let call = format!("_cuenv_hook({}, {}, {}, {}, [{}])", py_str(&h.profile), list(&h.preload), list(&h.path), list(&h.ld_library_path), set);
    let code = format!("{CODE}{call}\n");
    let json = serde_json::to_string(h).expect("a hook serializes");
    format!(
        "# {marker}\n{TAG}{}\n# cuenv: profile '{}' wins in this env (written by `cuenv apply`); {VAR}=0 turns it off for a process\nimport sys; exec({}, {{'__name__': 'cuenv_hook'}})\n",
        ascii_json(&json),
        h.profile,
        py_str(&code),
        marker = crate::shim::MARKER,
    )
}

/// The [`Hook`] an env hook file's text carries (its data line); `None` when the text is no
/// hook cuenv wrote.
pub fn parse(text: &str) -> Option<Hook> {
    if !crate::shim::is_ours(text) {
        return None;
    }
    let line = text.lines().find_map(|l| l.strip_prefix(TAG))?;
    serde_json::from_str(line).ok()
}

/// The env hooks in the site-packages folder `site_packages`, `(file, hook)`, sorted by file
/// name; hook-named files without cuenv's data are left out.
pub fn installed(site_packages: &Path) -> Vec<(PathBuf, Hook)> {
    let Ok(dir) = std::fs::read_dir(site_packages) else { return Vec::new() };
    let mut out: Vec<(PathBuf, Hook)> = dir
        .flatten()
        .filter(|e| is_hook_name(&e.file_name().to_string_lossy()))
        .filter_map(|e| Some((e.path(), parse(&std::fs::read_to_string(e.path()).ok()?)?)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// `s` as a double-quoted Python string literal of ASCII characters only.
fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            ' '..='~' => out.push(c),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// `json` (serde_json's output) with every non-ASCII character as a `\u` escape (UTF-16).
fn ascii_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            for unit in c.encode_utf16(&mut [0; 2]) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(dir: &str) -> Hook {
        let lib = PathBuf::from(dir).join("cudnn-lib");
        Hook {
            profile: "torch2".into(),
            preload: vec![lib.join("libcudnn.so.9"), lib.join("libcudnn_graph.so.9")],
            path: vec![PathBuf::from(dir).join("cuda/bin")],
            ld_library_path: vec![lib.clone(), PathBuf::from(dir).join("cuda-lib")],
            set: vec![("CUDNN_PATH".into(), PathBuf::from(dir).join("cudnn"))],
        }
    }

    #[test]
    fn the_file_is_ascii_ours_and_carries_its_hook_back() {
        let h = hook("/home/us er/Ünï 中文 😀/% & (x86)/\"q\"/back\\slash");
        let text = render(&h);
        assert!(text.is_ascii(), "{text}");
        assert!(crate::shim::is_ours(&text));
        assert_eq!(parse(&text), Some(h));
        assert_eq!(text.lines().filter(|l| l.starts_with("import ")).count(), 1, "one line for site to run");
    }

    #[test]
    fn a_file_without_the_marker_is_no_hook() {
        let text = render(&hook("/h")).replacen("# cuenv-shim v2", "# hand-made", 1);
        assert_eq!(parse(&text), None);
    }

    #[test]
    fn python_literals_escape_what_is_not_printable_ascii() {
        assert_eq!(py_str("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(py_str("é😀"), "\"\\u00e9\\U0001f600\"");
        assert_eq!(ascii_json("\"😀\""), "\"\\ud83d\\ude00\"");
    }
}
