//! Activation shims: the small scripts that switch a shell (or a conda env) to a profile.
//!
//! For each profile cuenv writes an activate and a deactivate script per shell: cmd (`.bat`),
//! PowerShell (`.ps1`), POSIX shells (`.sh`: sh, dash, bash, zsh) and fish (`.fish`). conda runs
//! the one whose extension matches the shell from `etc/conda/activate.d` / `deactivate.d`, and
//! `cuenv env` prints the same text. This module only renders text ([`render_activate`],
//! [`render_deactivate`]) and writes or removes files that are cuenv's own ([`write()`],
//! [`remove`]).
//!
//! Invariants, in every shell:
//! - **First line**: a comment holding [`MARKER`]. cuenv never overwrites or deletes a file
//!   without it ([`is_ours`]).
//! - **Saved state**: before changing a variable `NAME`, activation saves it as
//!   `CUENV_SAVED_NAME=<old value>`, or `CUENV_UNSET_NAME=1` when it was unset. Deactivation puts
//!   back exactly that (unset stays unset, empty stays empty, `PATH` is the old string byte for
//!   byte) and removes the saved copies. cmd and PowerShell on Windows keep no empty variables:
//!   there an empty variable counts as unset.
//! - **Idempotent**: `CUENV_ACTIVE_PROFILE` names the profile in effect. Activating the profile
//!   that is already active changes nothing; activating another one first restores what the
//!   active one saved (so at most one cuenv profile is in effect and deactivation always returns
//!   to the state before cuenv). A deactivate script does nothing unless its profile is active.
//! - **Quoting**: every value is a quoted literal in the shell's own syntax (POSIX `'...'` with
//!   `'\''`; fish `'...'` with `\'` and `\\`; PowerShell `'...'` with quotes doubled; cmd
//!   `set "NAME=value"` with `%` doubled), so spaces, `(x86)`, `%`, `&`, `!`, `^`, `'`, `"`,
//!   `$`, backticks and non-ASCII text survive. Scripts never `eval` a value.
//! - **cmd specifics**: no `SETLOCAL` (the caller must see the changes; conda runs the shim with
//!   `CALL`). The body is emitted twice, for delayed expansion off and on, chosen at run time. A
//!   shim holding non-ASCII text switches the console code page to UTF-8 (65001) and back, since
//!   cmd decodes each batch line in the current console code page (the file is UTF-8, no BOM).
//!   A new `PATH` that would not fit cmd's 8191-character line is refused with a message and no
//!   change ([`check_cmd_line_limit`] is the same test, for cuenv to warn at apply time).
//!
//! The script text lives in `templates/<shell>/*` (real scripts, included with `include_str!`);
//! rendering fills `{{KEY}}` slots with quoted values in one pass (a value is never re-scanned).

mod file;
mod posix;
mod quote;

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
    /// conda shims and above the setup layer (../shared/decisions.md 5).
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
    /// Variables set to a path: `CUDA_PATH`, `CUDA_HOME`, `CUDNN_PATH`.
    pub set: Vec<(String, PathBuf)>,
}

/// The first line of every shim, as a comment in that shell's syntax.
pub const MARKER: &str = "cuenv-shim v2";

/// The marker of the first shim format (snapshot restore), still recognised as cuenv's own so
/// that `apply` replaces old shims.
const MARKER_V1: &str = "cuenv-shim v1";

/// cmd.exe's longest command line, in UTF-16 units.
pub const CMD_LINE_MAX: usize = 8191;

/// Variables a shim may have saved, whatever its profile: restoring another profile's state
/// covers these (plus the activation's own `set` names).
const KNOWN: [&str; 6] = ["PATH", "LD_LIBRARY_PATH", "CUDA_PATH", "CUDA_HOME", "CUDNN_PATH", "CUENV_PROFILE"];

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

/// The scalar variables an activation sets, `(name, value)`: its `set` list (the last value of
/// a repeated name winning), then `CUENV_PROFILE`.
fn scalars(a: &Activation) -> Vec<(String, String)> {
    let mut set: Vec<(String, String)> = Vec::new();
    for (name, value) in &a.set {
        assert!(valid_set_name(name), "{}", Invalid::Name(name.clone()));
        set.retain(|(n, _)| n != name);
        set.push((name.clone(), shim_path(value)));
    }
    set.push(("CUENV_PROFILE".to_string(), a.profile.clone()));
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
/// by [`crate::paths::strip_verbatim`]'s string rules on any host (`\\?\C:\x` -> `C:\x`,
/// `\\?\UNC\srv\share` -> `\\srv\share`; other verbatim forms are kept whole).
pub fn shim_path(p: &Path) -> String {
    crate::paths::strip_verbatim(&p.to_string_lossy()).into_owned()
}

/// The activation's plan, independent of the shell.
struct Plan {
    profile: String,
    /// (NAME, folders) for PATH and LD_LIBRARY_PATH, when non-empty.
    prepend: Vec<(&'static str, Vec<String>)>,
    /// (NAME, value), the last value of a repeated name winning, then CUENV_PROFILE.
    set: Vec<(String, String)>,
    /// Every name the activation changes (saved first).
    managed: Vec<String>,
    /// Every name whose saved value any cuenv shim may have left: restored first.
    restore: Vec<String>,
}

fn plan(a: &Activation) -> Plan {
    assert!(valid_profile(&a.profile), "{}", Invalid::Profile(a.profile.clone()));
    let mut prepend = Vec::new();
    for (name, dirs) in [("PATH", &a.path_prepend), ("LD_LIBRARY_PATH", &a.ld_library_path_prepend)] {
        if !dirs.is_empty() {
            prepend.push((name, dirs.iter().map(|p| shim_path(p)).collect()));
        }
    }
    let mut set: Vec<(String, String)> = Vec::new();
    for (name, value) in &a.set {
        assert!(valid_set_name(name), "{}", Invalid::Name(name.clone()));
        set.retain(|(n, _)| n != name);
        set.push((name.clone(), shim_path(value)));
    }
    set.push(("CUENV_PROFILE".to_string(), a.profile.clone()));
    let managed: Vec<String> = prepend.iter().map(|(n, _)| n.to_string()).chain(set.iter().map(|(n, _)| n.clone())).collect();
    let mut restore: Vec<String> = KNOWN.iter().map(|s| s.to_string()).collect();
    for n in &managed {
        if !restore.contains(n) {
            restore.push(n.clone());
        }
    }
    Plan { profile: a.profile.clone(), prepend, set, managed, restore }
}

/// The activation script for `shell`: source it (POSIX, fish), dot-source it (PowerShell) or
/// `CALL` it (cmd). Lines end in CRLF for cmd and PowerShell, LF otherwise. Write it with
/// [`write()`] (or [`encode`]): PowerShell files get a UTF-8 BOM.
///
/// # Panics
/// On a profile or variable name that [`validate`] rejects.
pub fn render_activate(shell: Shell, a: &Activation) -> String {
    let p = plan(a);
    match shell {
        Shell::Posix => posix::render_sh(a, true),
        Shell::Fish => posix::render_fish(a, true),
        Shell::Csh => posix::render_csh(a, true),
        Shell::PowerShell => crlf(&render_dialect(&POWERSHELL, &p, true)),
        Shell::Cmd => crlf(&render_cmd_activate(&p)),
    }
}

/// The deactivation script for `shell` (see [`render_activate`]).
///
/// # Panics
/// On a profile or variable name that [`validate`] rejects.
pub fn render_deactivate(shell: Shell, a: &Activation) -> String {
    let p = plan(a);
    match shell {
        Shell::Posix => posix::render_sh(a, false),
        Shell::Fish => posix::render_fish(a, false),
        Shell::Csh => posix::render_csh(a, false),
        Shell::PowerShell => crlf(&render_dialect(&POWERSHELL, &p, false)),
        Shell::Cmd => crlf(&render_cmd_deactivate(&p)),
    }
}

fn crlf(s: &str) -> String {
    s.replace('\n', "\r\n")
}

/// A comment-safe rendering of the profile name (it is `[A-Za-z0-9_.-]+` already).
fn note(p: &Plan) -> String {
    format!("'{}'", p.profile)
}

// ---- POSIX -----------------------------------------------------------------------------------

mod tpl {
    pub const PS_ACTIVATE: &str = include_str!("templates/powershell/activate.ps1");
    pub const PS_DEACTIVATE: &str = include_str!("templates/powershell/deactivate.ps1");
    pub const PS_RESTORE: &str = include_str!("templates/powershell/restore.ps1");
    pub const PS_PREPEND: &str = include_str!("templates/powershell/prepend.ps1");
    pub const PS_SET: &str = include_str!("templates/powershell/set.ps1");
    pub const CMD_ACTIVATE: &str = include_str!("templates/cmd/activate.bat");
    pub const CMD_ACTIVATE_BODY: &str = include_str!("templates/cmd/activate_body.bat");
    pub const CMD_DEACTIVATE: &str = include_str!("templates/cmd/deactivate.bat");
    pub const CMD_DEACTIVATE_BODY: &str = include_str!("templates/cmd/deactivate_body.bat");
    pub const CMD_CHECK: &str = include_str!("templates/cmd/check.bat");
    pub const CMD_RESTORE: &str = include_str!("templates/cmd/restore.bat");
    pub const CMD_SAVE: &str = include_str!("templates/cmd/save.bat");
    pub const CMD_PREPEND: &str = include_str!("templates/cmd/prepend.bat");
    pub const CMD_PREPEND_DX: &str = include_str!("templates/cmd/prepend_dx.bat");
    pub const CMD_SET: &str = include_str!("templates/cmd/set.bat");
    pub const CMD_CODEPAGE_SWITCH: &str = include_str!("templates/cmd/codepage_switch.bat");
    pub const CMD_CODEPAGE_RESTORE: &str = include_str!("templates/cmd/codepage_restore.bat");
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

/// What differs between the POSIX, fish and PowerShell shims, which share one shape (restore,
/// then save, prepend and set): their templates, how a value is quoted, how a variable name
/// is written (PowerShell quotes it), and how lists of names and folders are joined.
struct Dialect {
    activate: &'static str,
    deactivate: &'static str,
    restore: &'static str,
    prepend: &'static str,
    set: &'static str,
    quote: fn(&str) -> String,
    name: fn(&str) -> String,
    names_sep: &'static str,
    /// The prepend template's placeholder for the folders, and their separator.
    dirs_key: &'static str,
    dirs_sep: &'static str,
}

const POWERSHELL: Dialect = Dialect {
    activate: tpl::PS_ACTIVATE,
    deactivate: tpl::PS_DEACTIVATE,
    restore: tpl::PS_RESTORE,
    prepend: tpl::PS_PREPEND,
    set: tpl::PS_SET,
    quote: quote::powershell,
    name: quote::powershell,
    names_sep: ", ",
    dirs_key: "VALUES",
    dirs_sep: ", ",
};

/// The activate (or deactivate) script of `p` in dialect `d`.
fn render_dialect(d: &Dialect, p: &Plan, activate: bool) -> String {
    let names = |list: &[String]| list.iter().map(|n| (d.name)(n)).collect::<Vec<_>>().join(d.names_sep);
    let profile = (d.quote)(&p.profile);
    let restore = fill(d.restore, &[("RESTORE_NAMES", &names(&p.restore))]);
    let restore = restore.trim_end_matches('\n');
    if !activate {
        return fill(d.deactivate, &[("PROFILE", &profile), ("PROFILE_NOTE", &note(p)), ("RESTORE", restore)]);
    }
    let mut changes = String::new();
    for (name, dirs) in &p.prepend {
        let values: Vec<String> = dirs.iter().map(|x| (d.quote)(x)).collect();
        changes.push_str(&fill(d.prepend, &[("NAME", &(d.name)(name)), (d.dirs_key, &values.join(d.dirs_sep))]));
    }
    for (name, value) in &p.set {
        changes.push_str(&fill(d.set, &[("NAME", &(d.name)(name)), ("VALUE", &(d.quote)(value))]));
    }
    fill(
        d.activate,
        &[
            ("PROFILE", &profile),
            ("PROFILE_NOTE", &note(p)),
            ("RESTORE", restore),
            ("MANAGED", &names(&p.managed)),
            ("CHANGES", changes.trim_end_matches('\n')),
        ],
    )
}

// ---- cmd ---------------------------------------------------------------------------------------

/// How a cmd body reads variables: with delayed expansion off (`%NAME%`) or on (`!NAME!`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dx {
    Off,
    On,
}

impl Dx {
    fn get(self, name: &str) -> String {
        match self {
            Dx::Off => format!("%{name}%"),
            Dx::On => format!("!{name}!"),
        }
    }
}

fn cmd_restores(p: &Plan, dx: Dx) -> String {
    p.restore.iter().map(|n| fill(tpl::CMD_RESTORE, &[("NAME", n), ("GET_SAVED", &dx.get(&format!("CUENV_SAVED_{n}")))])).collect()
}

/// The longest old value of a prepend variable that the .bat accepts: every line that expands
/// the old value (saving it, restoring it, prepending to it, or its first characters in the
/// length check) must fit [`CMD_LINE_MAX`] once expanded.
fn cmd_max_old_len(name: &str, dirs: &[String]) -> usize {
    let units = |s: &str| s.encode_utf16().count();
    let value = dirs.join(";");
    let get = Dx::Off.get(name);
    let get_saved = Dx::Off.get(&format!("CUENV_SAVED_{name}"));
    let lines = [
        fill(tpl::CMD_SAVE, &[("NAME", name), ("GET", &get)]),
        fill(tpl::CMD_RESTORE, &[("NAME", name), ("GET_SAVED", &get_saved)]),
        fill(tpl::CMD_PREPEND, &[("NAME", name), ("VALUE", &value), ("GET", &get)]),
    ];
    let mut max = CMD_LINE_MAX;
    for text in &lines {
        for line in text.lines() {
            for token in [&get, &get_saved] {
                if line.contains(token.as_str()) {
                    // `%%` in a literal is one character once expanded.
                    let fixed = units(&line.replacen(token.as_str(), "", 1).replace("%%", "%"));
                    max = max.min(CMD_LINE_MAX.saturating_sub(fixed));
                }
            }
        }
    }
    // The length check copies up to max+1 characters of the old value into one line.
    loop {
        let check = cmd_check(name, max);
        let longest = check
            .lines()
            .filter(|l| l.contains(":~0,"))
            .map(|l| {
                let start = l.find('%').unwrap();
                let end = l.rfind('%').unwrap();
                units(&l[..start]) + units(&l[end + 1..]) + max + 1
            })
            .max()
            .unwrap_or(0);
        if longest <= CMD_LINE_MAX {
            return max;
        }
        max -= longest - CMD_LINE_MAX;
    }
}

fn cmd_check(name: &str, max: usize) -> String {
    fill(tpl::CMD_CHECK, &[("NAME", name), ("MAX", &max.to_string()), ("MAX_PLUS_1", &(max + 1).to_string()), ("MAX_PLUS_2", &(max + 2).to_string())])
}

/// Whether cmd can activate `a` when `PATH` (before activation) is `current_path_len` UTF-16
/// units long: the .bat refuses (and changes nothing) exactly when this is an error. The error
/// says by how much the limit is missed, for cuenv to warn at apply time.
pub fn check_cmd_line_limit(current_path_len: usize, a: &Activation) -> Result<(), String> {
    if a.path_prepend.is_empty() {
        return Ok(());
    }
    let dirs: Vec<String> = a.path_prepend.iter().map(|p| shim_path(p)).collect();
    let max = cmd_max_old_len("PATH", &dirs);
    if current_path_len <= max {
        Ok(())
    } else {
        let added = dirs.join(";").encode_utf16().count() + 1;
        Err(format!(
            "PATH is {current_path_len} characters; profile '{}' adds {added}, and cmd.exe handles \
             lines of at most {CMD_LINE_MAX} characters, so its .bat shim would refuse to activate \
             (PATH may be at most {max} characters before activation; {} too many)",
            a.profile,
            current_path_len - max
        ))
    }
}

fn cmd_activate_body(p: &Plan, dx: Dx) -> String {
    let mut checks = String::new();
    for (name, dirs) in &p.prepend {
        checks.push_str(&cmd_check(name, cmd_max_old_len(name, dirs)));
    }
    let saves: String = p.managed.iter().map(|n| fill(tpl::CMD_SAVE, &[("NAME", n), ("GET", &dx.get(n))])).collect();
    let mut changes = String::new();
    for (name, dirs) in &p.prepend {
        let value = dirs.join(";");
        changes.push_str(&match dx {
            // The literal inline, next to %NAME% (no delayed expansion: ^ and ! are plain).
            Dx::Off => fill(tpl::CMD_PREPEND, &[("NAME", name), ("VALUE", &quote::cmd(&value, false)), ("GET", &dx.get(name))]),
            // The literal on a line of its own, so ^ and ! need escaping only if it holds a !.
            Dx::On => fill(tpl::CMD_PREPEND_DX, &[("NAME", name), ("VALUE", &quote::cmd(&value, value.contains('!')))]),
        });
    }
    for (name, value) in &p.set {
        let v = quote::cmd(value, dx == Dx::On && value.contains('!'));
        changes.push_str(&fill(tpl::CMD_SET, &[("NAME", name), ("VALUE", &v)]));
    }
    fill(tpl::CMD_ACTIVATE_BODY, &[("PROFILE", &p.profile), ("CHECKS", &checks), ("RESTORES", &cmd_restores(p, dx)), ("SAVES", &saves), ("CHANGES", &changes)])
}

fn render_cmd_activate(p: &Plan) -> String {
    let off = cmd_activate_body(p, Dx::Off);
    let on = cmd_activate_body(p, Dx::On);
    let ascii = off.is_ascii() && on.is_ascii();
    let (switch, restore) = if ascii { ("", "") } else { (tpl::CMD_CODEPAGE_SWITCH, tpl::CMD_CODEPAGE_RESTORE) };
    fill(
        tpl::CMD_ACTIVATE,
        &[("PROFILE_NOTE", &note(p)), ("CODEPAGE_SWITCH", switch), ("CODEPAGE_RESTORE", restore), ("BODY_DX_OFF", &off), ("BODY_DX_ON", &on)],
    )
}

fn render_cmd_deactivate(p: &Plan) -> String {
    let body = |dx: Dx| fill(tpl::CMD_DEACTIVATE_BODY, &[("PROFILE", &p.profile), ("RESTORES", &cmd_restores(p, dx))]);
    fill(tpl::CMD_DEACTIVATE, &[("PROFILE_NOTE", &note(p)), ("BODY_DX_OFF", &body(Dx::Off)), ("BODY_DX_ON", &body(Dx::On))])
}

#[cfg(test)]
mod tests;

/// The directory hook for `shell` (`cuenv env --hook bash|zsh|fish`): shell code that, when the
/// current folder changes, evaluates `<exe> --home <home> env --hook-apply --shell S`. `None`
/// for shells without a hook. `exe` and `home` are absolute paths, quoted here.
pub fn render_hook(shell_name: &str, exe: &Path, home: &Path) -> Option<String> {
    let (template, q): (&str, fn(&str) -> String) = match shell_name {
        "bash" => (include_str!("templates/hook/hook.bash"), quote::posix),
        "zsh" => (include_str!("templates/hook/hook.zsh"), quote::posix),
        "fish" => (include_str!("templates/hook/hook.fish"), quote::fish),
        _ => return None,
    };
    Some(fill(template, &[("EXE", &q(&exe.to_string_lossy())), ("HOME", &q(&home.to_string_lossy()))]))
}
