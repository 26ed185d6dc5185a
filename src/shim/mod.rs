//! Activation shims: the small scripts that switch a shell (or a conda env) to a profile.
//!
//! For each profile cuenv writes an activate and a deactivate script per shell: cmd (`.bat`),
//! PowerShell (`.ps1`), POSIX shells (`.sh`: sh, dash, bash, zsh; xonsh through conda's
//! `source-bash`), fish (`.fish`) and csh/tcsh (`.csh`). conda runs the one whose extension
//! matches the shell from `etc/conda/activate.d` / `deactivate.d`, and `cuenv env` prints the
//! same text. This module only renders text ([`render_activate`], [`render_deactivate`],
//! [`render_hook`]) and writes or removes files that are cuenv's own ([`write()`], [`remove`]).
//! The design, checked against conda's own activation order, is docs/design.md "Activation
//! layers".
//!
//! Invariants, in every shell:
//! - **First line**: a comment holding [`MARKER`] (v1 files are still recognised). cuenv never
//!   overwrites or deletes a file without it ([`is_ours`]).
//! - **Layers** ([`Layer`]: SHIM, HOOK, SETUP): each keeps its own state, `CUENV_<L>_*`, and
//!   at most one profile (`CUENV_<L>_PROFILE`); activation first removes the layer's current
//!   profile's entries. A layer's entries go behind those of higher layers; while a higher layer
//!   is in effect, a lower one's scalar values go into the higher layer's saved copy.
//! - **Remove by value**: a list variable (`PATH`, `LD_LIBRARY_PATH`) gets one block, recorded in
//!   `CUENV_<L>_ADDED_<NAME>`; deactivation removes that block and nothing else, so entries
//!   added meanwhile (by conda, the user, another layer) stay byte for byte, and an unset
//!   variable is unset again (`CUENV_<L>_UNSET_<NAME>`). Scalars are saved once and put back
//!   only where they still hold the profile's value. A deactivate script does nothing unless its
//!   profile is the one in effect in its layer. cmd and PowerShell keep no empty variables:
//!   there an empty variable counts as unset.
//! - **Quoting**: every value is a quoted literal in the shell's own syntax (POSIX `'...'` with
//!   `'\''`; fish `'...'` with `\'` and `\\`; csh `'...'` with `\!`; PowerShell `'...'` with
//!   quotes doubled; cmd `set "NAME=value"` with `%` doubled), so spaces, `(x86)`, `%`, `&`,
//!   `!`, `^`, `'`, `"`, `$`, backticks and non-ASCII text survive. Scripts never `eval` a value.
//! - **cmd specifics**: no `SETLOCAL` (the caller must see the changes; conda runs the shim with
//!   `CALL`). The body is emitted twice, for delayed expansion off and on, chosen at run time. A
//!   shim holding non-ASCII text switches the console code page to UTF-8 (65001) and back, since
//!   cmd decodes each batch line in the current console code page (the file is UTF-8, no BOM).
//!   A new `PATH` that would not fit cmd's 8191-character line is refused with a message and no
//!   change ([`validate_cmd_line_limit`] is the same test, for cuenv to warn at apply time).
//!
//! The script text lives in `templates/<shell>/*` (real scripts, included with `include_str!`);
//! rendering fills `{{KEY}}` slots with quoted values in one pass (a value is never re-scanned).

mod cmd;
mod file;
mod posix;
mod powershell;
pub mod quote;

pub use cmd::validate_cmd_line_limit;
pub use file::{Error, WriteOutcome, encode, remove, write};

use std::path::{Path, PathBuf};

/// A shell cuenv writes shims for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shell {
    /// Windows `cmd.exe` (`.bat`).
    Cmd,
    /// Windows PowerShell 5.1 and PowerShell 7 (`.ps1`).
    PowerShell,
    /// POSIX shells: sh, dash, bash, zsh (`.sh`).
    Posix,
    /// fish (`.fish`).
    Fish,
    /// csh and tcsh (`.csh`).
    Csh,
}

impl Shell {
    /// Every shell, in the order cuenv writes them.
    pub const ALL: [Shell; 5] = [Shell::Cmd, Shell::PowerShell, Shell::Posix, Shell::Fish, Shell::Csh];

    /// The shells whose shims cuenv writes by default for a platform: cmd and PowerShell on
    /// Windows; POSIX shells, fish and csh elsewhere.
    pub fn defaults(windows: bool) -> &'static [Shell] {
        if windows { &[Shell::Cmd, Shell::PowerShell] } else { &[Shell::Posix, Shell::Fish, Shell::Csh] }
    }

    /// The file extension conda looks for (without the dot).
    pub fn extension(self) -> &'static str {
        match self {
            Shell::Cmd => "bat",
            Shell::PowerShell => "ps1",
            Shell::Posix => "sh",
            Shell::Fish => "fish",
            Shell::Csh => "csh",
        }
    }

    /// The separator of list variables such as `PATH` in this shell's scripts.
    pub fn list_separator(self) -> char {
        match self {
            Shell::Cmd | Shell::PowerShell => ';',
            Shell::Posix | Shell::Fish | Shell::Csh => ':',
        }
    }

    /// The shell for a `--shell` name: `cmd`, `powershell`/`pwsh`, `bash`/`zsh`/`sh`/`dash`,
    /// `fish`, `csh`/`tcsh`.
    pub fn from_name(name: &str) -> Option<Shell> {
        match name.to_ascii_lowercase().as_str() {
            "cmd" | "cmd.exe" | "bat" => Some(Shell::Cmd),
            "powershell" | "pwsh" | "ps1" => Some(Shell::PowerShell),
            "posix" | "sh" | "bash" | "zsh" | "dash" | "ksh" => Some(Shell::Posix),
            "fish" => Some(Shell::Fish),
            "csh" | "tcsh" => Some(Shell::Csh),
            _ => None,
        }
    }
}

/// Which activation layer a script belongs to (docs/design.md, "Activation layers"): each
/// layer keeps its own state variables, `CUENV_<LAYER>_*`, and never touches another layer's
/// list entries; a layer's entries go after those of the layers above it (SHIM, HOOK, SETUP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Layer {
    /// conda env shims and `cuenv env PROFILE`: the highest layer.
    #[default]
    Shim,
    /// The directory hook (`cuenv env --hook`): a `.cuenv-profile` project's profile, below the
    /// conda shims and above the setup layer (docs/decisions.md 5).
    Hook,
    /// `cuenv env --setup` (through `<home>/active`), the layer below every other.
    Setup,
}

impl Layer {
    /// The prefix of this layer's state variables: `CUENV_SHIM_` or `CUENV_SETUP_`.
    pub fn prefix(self) -> &'static str {
        match self {
            Layer::Shim => "CUENV_SHIM_",
            Layer::Hook => "CUENV_HOOK_",
            Layer::Setup => "CUENV_SETUP_",
        }
    }

    /// The layer's name in script comments: `SHIM`, `HOOK`, `SETUP`.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Shim => "SHIM",
            Layer::Hook => "HOOK",
            Layer::Setup => "SETUP",
        }
    }

    /// The layers above this one, highest first: their blocks stay in front of this layer's.
    pub fn higher(self) -> &'static [Layer] {
        match self {
            Layer::Shim => &[],
            Layer::Hook => &[Layer::Shim],
            Layer::Setup => &[Layer::Shim, Layer::Hook],
        }
    }
}

/// What a profile's activation does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Activation {
    /// The `CUENV_PROFILE` value (a profile name: `[A-Za-z0-9_.-]+`).
    pub profile: String,
    /// The layer whose state the scripts keep.
    pub layer: Layer,
    /// Prepended to `PATH` in this order (cuDNN `bin` first, then the toolkit's `bin`).
    pub path_prepend: Vec<PathBuf>,
    /// Linux: `lib` folders prepended to `LD_LIBRARY_PATH` (empty on Windows).
    pub ld_library_path_prepend: Vec<PathBuf>,
    /// Variables set to a path: `CUDA_PATH`, `CUDA_HOME`, `CUDNN_PATH`, `CUDNN_HOME`.
    pub set: Vec<(String, PathBuf)>,
}

/// The list variables a shim may edit. Undoing always covers both, since a stale profile of the
/// same layer (possibly rendered for another platform's list) may have edited either.
const LISTS: [&str; 2] = ["PATH", "LD_LIBRARY_PATH"];

/// The first line of every shim, as a comment in that shell's syntax.
pub const MARKER: &str = "cuenv-shim v2";

/// The marker of the first shim format (snapshot restore), still recognised as cuenv's own so
/// that `apply` replaces old shims.
const MARKER_V1: &str = "cuenv-shim v1";

/// cmd.exe's longest command line, in UTF-16 units.
pub const CMD_LINE_MAX: usize = 8191;

/// `cuenv-<profile>.<ext>`: the shim's file name in `activate.d` and `deactivate.d`.
pub fn file_name(profile: &str, shell: Shell) -> String {
    format!("cuenv-{profile}.{}", shell.extension())
}

/// True when `text` (a file's content) starts with cuenv's marker line in any shell's syntax
/// (a UTF-8 BOM and a CRLF line end are allowed).
pub fn is_ours(text: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first = text.split('\n').next().unwrap_or("");
    let first = first.strip_suffix('\r').unwrap_or(first);
    let first = first.strip_prefix("@rem ").or_else(|| first.strip_prefix("# "));
    first.is_some_and(|m| m == MARKER || m == MARKER_V1)
}

/// The list variables an activation prepends to, `(name, block)`: its folders for `PATH` and
/// `LD_LIBRARY_PATH` (when it has any) as written into a shim, joined with `sep`.
fn list_blocks(a: &Activation, sep: &str) -> Vec<(&'static str, String)> {
    [("PATH", &a.path_prepend), ("LD_LIBRARY_PATH", &a.ld_library_path_prepend)]
        .into_iter()
        .filter(|(_, dirs)| !dirs.is_empty())
        .map(|(name, dirs)| (name, dirs.iter().map(|p| shim_path(p)).collect::<Vec<_>>().join(sep)))
        .collect()
}

/// The scalar variables an activation sets, `(name, value)`: its `set` list (the last value of
/// a repeated name winning), then `CUENV_PROFILE`.
fn scalars(a: &Activation) -> Vec<(String, String)> {
    let mut set: Vec<(String, String)> = Vec::new();
    for (name, value) in &a.set {
        assert!(valid_set_name(name), "{}", Invalid::Name(name.clone()));
        set.retain(|(n, _)| n != name);
        set.push((name.clone(), shim_path(value)));
    }
    set.push((crate::home::settings::PROFILE_VAR.to_string(), a.profile.clone()));
    set
}

/// A comment-safe rendering of a profile name (it is `[A-Za-z0-9_.-]+` already).
fn profile_note(profile: &str) -> String {
    format!("'{profile}'")
}

/// Why an [`Activation`] cannot be rendered faithfully for a shell.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    /// The profile name is not `[A-Za-z0-9_.-]+`.
    #[error("profile name {0:?} is not usable in a shim (letters, digits, '_', '.', '-')")]
    Profile(String),
    /// A variable name is not `[A-Za-z_][A-Za-z0-9_]*`, or is one the shim manages itself.
    #[error("variable name {0:?} cannot be set by a shim")]
    Name(String),
    /// A path is empty, not valid Unicode, or holds a line break or NUL.
    #[error("path {0:?} cannot be written into a shim (empty, not Unicode, or a line break)")]
    Path(PathBuf),
    /// A path holds `"`, which cmd.exe's `set "NAME=value"` cannot carry.
    #[error("path {0:?} contains '\"', which a cmd.exe shim cannot carry")]
    Quote(PathBuf),
    /// A path to prepend holds the list separator of the shell.
    #[error("path {path:?} contains {sep:?}, the separator of PATH-like lists in this shell")]
    Separator { path: PathBuf, sep: char },
    /// A path to prepend holds a character that a cmd.exe shim cannot search `PATH` for when it
    /// removes its entries by value: `=` (ends the search string of `%V:a=b%`), `%` (ends
    /// `%V:a=b%`) or `!` (ends `!V:a=b!` under delayed expansion).
    #[error("path {path:?} contains {ch:?}, which a cmd.exe shim cannot search PATH for (to remove its entries again)")]
    CmdSearch { path: PathBuf, ch: char },
}

impl Invalid {
    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            Invalid::Profile(_) => "rename the profile in the profile file (letters, digits, '_', '.', '-'), then apply again".into(),
            Invalid::Name(_) => "this is a bug in cuenv: please report it with the command you ran".into(),
            Invalid::Path(_) => "use a cuenv home and toolkit roots whose paths are valid Unicode without line breaks (--home DIR)".into(),
            Invalid::Quote(_) => "use a cuenv home whose path has no '\"' (--home DIR or CUENV_HOME)".into(),
            Invalid::Separator { sep, .. } => format!("use a cuenv home and toolkit roots whose paths have no {sep:?} (--home DIR or CUENV_HOME)"),
            Invalid::CmdSearch { .. } => "use a cuenv home whose path has no '=', '%' or '!' (--home DIR or CUENV_HOME)".into(),
        }
    }
}

/// Checks that `a` renders faithfully for `shell`; [`render_activate`] assumes it (it renders
/// lossy text for non-Unicode paths and panics on bad names).
pub fn validate(shell: Shell, a: &Activation) -> Result<(), Invalid> {
    if !valid_profile(&a.profile) {
        return Err(Invalid::Profile(a.profile.clone()));
    }
    for (name, _) in &a.set {
        if !valid_set_name(name) {
            return Err(Invalid::Name(name.clone()));
        }
    }
    let all = a.path_prepend.iter().chain(&a.ld_library_path_prepend).chain(a.set.iter().map(|(_, p)| p));
    for p in all {
        match p.to_str() {
            Some(s) if !s.is_empty() && !s.contains(['\n', '\r', '\0']) => {}
            _ => return Err(Invalid::Path(p.clone())),
        }
    }
    if shell == Shell::Cmd {
        // `set "NAME=value"` cannot carry a `"` (no Windows path holds one).
        let all = a.path_prepend.iter().chain(&a.ld_library_path_prepend).chain(a.set.iter().map(|(_, p)| p));
        if let Some(p) = all.into_iter().find(|p| shim_path(p).contains('"')) {
            return Err(Invalid::Quote(p.clone()));
        }
    }
    let sep = shell.list_separator();
    for p in a.path_prepend.iter().chain(&a.ld_library_path_prepend) {
        if shim_path(p).contains(sep) {
            return Err(Invalid::Separator { path: p.clone(), sep });
        }
    }
    if shell == Shell::Cmd {
        for p in a.path_prepend.iter().chain(&a.ld_library_path_prepend) {
            if let Some(ch) = shim_path(p).chars().find(|c| cmd::SEARCH_UNSAFE.contains(c)) {
                return Err(Invalid::CmdSearch { path: p.clone(), ch });
            }
        }
    }
    Ok(())
}

fn valid_profile(p: &str) -> bool {
    !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

fn valid_name(n: &str) -> bool {
    let mut bytes = n.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_') && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn valid_set_name(n: &str) -> bool {
    valid_name(n) && !n.eq_ignore_ascii_case("PATH") && !n.eq_ignore_ascii_case("LD_LIBRARY_PATH") && !n.to_ascii_uppercase().starts_with("CUENV_")
}

/// A path as written into a shim: the spelling users see, `\\?\` verbatim prefixes removed
/// by [`crate::sys::paths::strip_verbatim`]'s string rules on any host (`\\?\C:\x` -> `C:\x`,
/// `\\?\UNC\srv\share` -> `\\srv\share`; other verbatim forms are kept whole).
pub fn shim_path(p: &Path) -> String {
    crate::sys::paths::strip_verbatim(&p.to_string_lossy()).into_owned()
}

/// The activation script for `shell`: source it (POSIX, fish), dot-source it (PowerShell) or
/// `CALL` it (cmd). Lines end in CRLF for cmd and PowerShell, LF otherwise. Write it with
/// [`write()`] (or [`encode`]): PowerShell files get a UTF-8 BOM.
///
/// # Panics
/// On a profile or variable name that [`validate`] rejects.
pub fn render_activate(shell: Shell, a: &Activation) -> String {
    match shell {
        Shell::Posix => posix::render_sh(a, true),
        Shell::Fish => posix::render_fish(a, true),
        Shell::Csh => posix::render_csh(a, true),
        Shell::PowerShell => powershell::render(a, true),
        Shell::Cmd => cmd::render(a, true),
    }
}

/// The deactivation script for `shell` (see [`render_activate`]).
///
/// # Panics
/// On a profile or variable name that [`validate`] rejects.
pub fn render_deactivate(shell: Shell, a: &Activation) -> String {
    match shell {
        Shell::Posix => posix::render_sh(a, false),
        Shell::Fish => posix::render_fish(a, false),
        Shell::Csh => posix::render_csh(a, false),
        Shell::PowerShell => powershell::render(a, false),
        Shell::Cmd => cmd::render(a, false),
    }
}

/// Fills `{{KEY}}` slots (KEY = `[A-Z0-9_]+`) in one left-to-right pass: inserted values are never
/// scanned again, so a value holding `{{X}}` stays literal. Panics on a slot without a value
/// (a template bug, caught by every test).
fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(i) = rest.find("{{") {
        let after = &rest[i + 2..];
        let key_len = after.bytes().take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_').count();
        if key_len > 0 && after[key_len..].starts_with("}}") {
            let key = &after[..key_len];
            let value = vars.iter().find(|(k, _)| *k == key).map(|(_, v)| *v).unwrap_or_else(|| panic!("shim template slot {{{{{key}}}}} has no value"));
            out.push_str(&rest[..i]);
            out.push_str(value);
            rest = &after[key_len + 2..];
        } else {
            // Not a slot (e.g. the `${` of `${{{NAME}}...`): keep one brace and go on.
            out.push_str(&rest[..i + 1]);
            rest = &rest[i + 1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests;

/// The directory hook for `shell` (`cuenv env --hook bash|zsh|fish|powershell`; PowerShell's is
/// rendered and unit-tested only: no PowerShell runs on the test machines): shell code that, when the
/// current folder changes, evaluates `<exe> --home <home> env --hook-apply --shell S`. `None`
/// for shells without a hook. `exe` and `home` are absolute paths, quoted here.
pub fn render_hook(shell_name: &str, exe: &Path, home: &Path) -> Option<String> {
    let (template, q): (&str, fn(&str) -> String) = match shell_name {
        "bash" => (include_str!("templates/hook/hook.bash"), quote::posix),
        "zsh" => (include_str!("templates/hook/hook.zsh"), quote::posix),
        "fish" => (include_str!("templates/hook/hook.fish"), quote::fish),
        "powershell" => (include_str!("templates/hook/hook.ps1"), quote::powershell),
        _ => return None,
    };
    Some(fill(template, &[("EXE", &q(&exe.to_string_lossy())), ("HOME", &q(&home.to_string_lossy()))]))
}
