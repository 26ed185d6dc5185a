//! The cmd.exe (`.bat`) shims.
//!
//! They follow the layer rules of docs/design.md ("Activation layers"): each list variable
//! gets one block, recorded in `CUENV_<L>_ADDED_<NAME>` and removed by value; scalars are saved
//! once per layer and put back only where they still hold the profile's value; one profile per
//! layer. cmd has no string search other than `%V:a=b%` (`!V:a=b!` with delayed expansion), so:
//!
//! - **Remove**: `V=;%PATH%;`, then every `;block;` in `V` becomes `;` (cmd replaces every
//!   match and ignores case; conda's own rule and the POSIX shims take the first exact match),
//!   then `PATH` is `V` without its first and last character. The block comes from
//!   `CUENV_<L>_ADDED_PATH` at run time (a stacked or stale profile's block is not known when
//!   the shim is written), through `CALL`, which expands it into the search string; carets are
//!   written `?~?` in both meanwhile (Windows' `CALL` doubles them, Wine's does not), and
//!   `PATH` is plain meanwhile (Wine's `CALL` fails when `PATH` holds an empty entry).
//! - **Delayed expansion on**: the same percent-sign edits (Wine's delayed expansion has no
//!   `!V:a=b!` or `!V:~n,m!`, so this is the form both can run), which read a value safely only
//!   while it holds no `!`: a list holding one is refused first, with a message and no change.
//! - **Insert**: a marker `?cuenv?` (`?` cannot occur in a Windows path) goes after every
//!   entry equal to `%CONDA_PREFIX%` (SHIM layer: inside the slice conda removes on switch and
//!   deactivate) or `%CONDA_PREFIX%\bin` (lower layers: right after that slice, so a conda
//!   env's profile activated later still comes first), ignoring case as conda compares paths
//!   on Windows; without such an entry it goes first. The marker then becomes the block. A
//!   `CONDA_PREFIX` holding `=` cannot be searched for; the block then goes first.
//! - A block path holding `=` (ends a search string), `%` (ends `%V:a=b%`) or `!` (ends
//!   `!V:a=b!`) is refused by [`super::validate`] ([`super::Invalid::CmdSearch`]).
//!
//! Every other guarantee of the old shims stays: no `SETLOCAL`, bodies for delayed expansion
//! off and on, the UTF-8 code page around non-ASCII text, `%` doubled and `set "N=v"` quoting,
//! and the refusal, with nothing changed, of a `PATH` too long for cmd's 8191-character line
//! ([`validate_cmd_line_limit`]).

use super::{Activation, CMD_LINE_MAX, LISTS, Layer, fill, profile_note as note, quote, shim_path};

mod tpl {
    pub const ACTIVATE: &str = include_str!("templates/cmd/activate.bat");
    pub const ACTIVATE_BODY: &str = include_str!("templates/cmd/activate_body.bat");
    pub const DEACTIVATE: &str = include_str!("templates/cmd/deactivate.bat");
    pub const DEACTIVATE_BODY: &str = include_str!("templates/cmd/deactivate_body.bat");
    pub const CLEANUP: &str = include_str!("templates/cmd/cleanup.bat");
    pub const CHECK: &str = include_str!("templates/cmd/check.bat");
    pub const BANG_CHECK: &str = include_str!("templates/cmd/bang_check.bat");
    pub const UNDO_LIST: &str = include_str!("templates/cmd/undo_list.bat");
    pub const INSERT_LIST: &str = include_str!("templates/cmd/insert_list.bat");
    pub const AFTER_PREFIX: &str = include_str!("templates/cmd/after_prefix.bat");
    pub const SAVE_SCALAR: &str = include_str!("templates/cmd/save_scalar.bat");
    pub const SET_SCALAR: &str = include_str!("templates/cmd/set_scalar.bat");
    pub const RESTORE_SCALAR: &str = include_str!("templates/cmd/restore_scalar.bat");
    pub const CODEPAGE_SWITCH: &str = include_str!("templates/cmd/codepage_switch.bat");
    pub const CODEPAGE_RESTORE: &str = include_str!("templates/cmd/codepage_restore.bat");
}

/// The characters a block path cannot hold in a cmd shim: `=` ends the search string of
/// `%V:a=b%`, `%` ends `%V:a=b%` (delayed expansion off), `!` ends `!V:a=b!` (on).
pub(super) const SEARCH_UNSAFE: [char; 3] = ['=', '%', '!'];

/// The most characters of a line, outside the expanded list value, of any line that expands
/// it (checked against every rendered line by a unit test).
pub(super) const FIXED: usize = 72;

/// How much a list value grows inside the script beyond its block: the two `;` around `V`,
/// the marker `?cuenv?` and its `;`.
const SLACK: usize = 11;

/// How a body reads variables: with delayed expansion off (`%NAME%`) or on (`!NAME!`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dx {
    Off,
    On,
}

impl Dx {
    fn get(self, expr: &str) -> String {
        match self {
            Dx::Off => format!("%{expr}%"),
            Dx::On => format!("!{expr}!"),
        }
    }
}

/// The shim's plan: the layer's prefix, (list name, block) and (scalar name, value).
struct Plan {
    layer: Layer,
    prefix: &'static str,
    profile: String,
    lists: Vec<(&'static str, String)>,
    scalars: Vec<(String, String)>,
}

fn plan(a: &Activation) -> Plan {
    let lists = super::list_blocks(a, ";");
    Plan { layer: a.layer, prefix: a.layer.prefix(), profile: a.profile.clone(), lists, scalars: super::scalars(a) }
}

fn units(s: &str) -> usize {
    s.encode_utf16().count()
}

/// The longest `PATH` (in UTF-16 units, before activation) that a shim inserting `block` accepts.
fn max_old_len(block: &str) -> usize {
    CMD_LINE_MAX - FIXED - SLACK - units(block)
}

/// Whether cmd can activate `a` when `PATH` (before activation) is `current_path_len` UTF-16
/// units long: the .bat refuses (and changes nothing) exactly when this is an error. The bound
/// keeps every line that expands `PATH` within [`CMD_LINE_MAX`] whatever the script does to it
/// (it also holds when `PATH` already holds an older block that activation removes first). The
/// error says by how much the limit is missed, for cuenv to warn at apply time.
pub fn validate_cmd_line_limit(current_path_len: usize, a: &Activation) -> Result<(), String> {
    if a.path_prepend.is_empty() {
        return Ok(());
    }
    let block = a.path_prepend.iter().map(|p| shim_path(p)).collect::<Vec<_>>().join(";");
    let max = max_old_len(&block);
    if current_path_len <= max {
        Ok(())
    } else {
        let added = units(&block) + 1;
        Err(format!(
            "PATH is {current_path_len} characters; profile '{}' adds {added}, and cmd.exe handles \
             lines of at most {CMD_LINE_MAX} characters, so its .bat shim would refuse to activate \
             (PATH may be at most {max} characters before activation; {} too many)",
            a.profile,
            current_path_len - max
        ))
    }
}

fn check(name: &str, max: usize) -> String {
    fill(
        tpl::CHECK,
        &[
            ("NAME", name),
            ("MAX", &max.to_string()),
            ("MAX_PLUS_1", &(max + 1).to_string()),
            ("MAX_PLUS_2", &(max + 2).to_string()),
            // Percent expansion in both bodies, as proven under Wine (whose delayed expansion
            // does not clamp `!T:~-N,2!` like `%T:~-N,2%`).
            ("HEAD", &Dx::Off.get(&format!("{name}:~0,{}", max + 1))),
            ("TAIL", &Dx::Off.get(&format!("__CUENV_T:~-{},2", max + 2))),
            ("STRIP", &Dx::Off.get("__CUENV_T:#~=")),
        ],
    )
}

fn each(template: &str, items: impl IntoIterator<Item = Vec<(&'static str, String)>>) -> String {
    let mut out = String::new();
    for vars in items {
        let refs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        out.push_str(&fill(template, &refs));
    }
    out
}

/// A literal for `set "N=v"` in body `dx`: `%` doubled; `^` and `!` escaped only where the
/// line undergoes delayed expansion (it is on and the value holds a `!`).
fn lit(value: &str, dx: Dx) -> String {
    quote::cmd(value, dx == Dx::On && value.contains('!'))
}

/// The list edits read values with percent signs in both bodies (Wine's delayed expansion has no
/// `!V:a=b!` or `!V:~n,m!`); with delayed expansion on, a list holding a `!` is refused first.
fn undo_lists(p: &Plan) -> String {
    each(tpl::UNDO_LIST, LISTS.iter().map(|n| vec![("P", p.prefix.to_string()), ("NAME", n.to_string())]))
}

fn bang_checks(dx: Dx) -> String {
    if dx == Dx::Off {
        return String::new();
    }
    each(tpl::BANG_CHECK, LISTS.iter().map(|n| vec![("NAME", n.to_string())]))
}

fn where_short(p: &Plan) -> &'static str {
    match p.layer {
        Layer::Shim => "after the entry equal to CONDA_PREFIX, else first.",
        Layer::Hook | Layer::Setup => "after the entry equal to CONDA_PREFIX\\bin, else first.",
    }
}

/// Where a layer's block goes (docs/design.md, "Where blocks go"): a SHIM block right after
/// the conda env's own entry, inside the slice conda removes with the env; a lower layer's
/// right after the env's `bin`, the slice's last entry, so that conda's switch and deactivate
/// keep it and the next env's profile still comes first. Without such an entry: first.
fn anchor(layer: Layer) -> (&'static str, &'static str) {
    match layer {
        Layer::Shim => ("CONDA_PREFIX", ""),
        Layer::Hook | Layer::Setup => ("CONDA_PREFIX\\bin", "\\bin"),
    }
}

fn body_activate(p: &Plan, dx: Dx) -> String {
    let mut checks = String::new();
    for (name, block) in &p.lists {
        if *name == "PATH" {
            checks.push_str(&check(name, max_old_len(block)));
        }
    }
    let pre = p.prefix.to_string();
    let save = each(tpl::SAVE_SCALAR, p.scalars.iter().map(|(n, _)| vec![("P", pre.clone()), ("NAME", n.clone()), ("GET", dx.get(n))]));
    let (note, suffix) = anchor(p.layer);
    let after = fill(tpl::AFTER_PREFIX, &[("ANCHOR_NOTE", note), ("ANCHOR_SUFFIX", suffix)]);
    let insert = each(
        tpl::INSERT_LIST,
        p.lists.iter().map(|(n, b)| {
            // Block paths hold no `!` (validate): the literal reads the same in both bodies.
            vec![
                ("P", pre.clone()),
                ("NAME", n.to_string()),
                ("BLOCK", lit(b, dx)),
                ("AFTER_PREFIX", after.clone()),
                ("WHERE_SHORT", where_short(p).to_string()),
            ]
        }),
    );
    let set = each(tpl::SET_SCALAR, p.scalars.iter().map(|(n, v)| vec![("NAME", n.clone()), ("VALUE", lit(v, dx))]));
    fill(
        tpl::ACTIVATE_BODY,
        &[
            ("CHECKS", &checks),
            ("BANG_CHECKS", &bang_checks(dx)),
            ("UNDO_LISTS", &undo_lists(p)),
            ("SAVE_SCALARS", &save),
            ("INSERT_LISTS", &insert),
            ("SET_SCALARS", &set),
            ("P", p.prefix),
            ("PROFILE", &p.profile),
        ],
    )
}

fn body_deactivate(p: &Plan, dx: Dx) -> String {
    let pre = p.prefix.to_string();
    let restore = each(
        tpl::RESTORE_SCALAR,
        p.scalars.iter().map(|(n, v)| {
            vec![
                ("P", pre.clone()),
                ("NAME", n.clone()),
                ("VALUE", lit(v, dx)),
                ("GET", dx.get(n)),
                ("GET_T", dx.get("__CUENV_T")),
                ("GET_SAVED", dx.get(&format!("{pre}SAVED_{n}"))),
            ]
        }),
    );
    fill(
        tpl::DEACTIVATE_BODY,
        &[
            ("GET_PROFILE", &dx.get(&format!("{pre}PROFILE"))),
            ("PROFILE", &p.profile),
            ("BANG_CHECKS", &bang_checks(dx)),
            ("UNDO_LISTS", &undo_lists(p)),
            ("RESTORE_SCALARS", &restore),
            ("P", p.prefix),
        ],
    )
}

/// The `.bat` script (CRLF line ends): the activation (`activate`) or the deactivation of `a`.
pub(super) fn render(a: &Activation, activate: bool) -> String {
    let p = plan(a);
    let (off, on) =
        if activate { (body_activate(&p, Dx::Off), body_activate(&p, Dx::On)) } else { (body_deactivate(&p, Dx::Off), body_deactivate(&p, Dx::On)) };
    let ascii = off.is_ascii() && on.is_ascii();
    let (switch, restore) = if ascii { ("", "") } else { (tpl::CODEPAGE_SWITCH, tpl::CODEPAGE_RESTORE) };
    let where_long = match p.layer {
        Layer::Shim => "it goes right after the entry equal to CONDA_PREFIX (inside the slice conda removes), else first.",
        Layer::Hook | Layer::Setup => "it goes right after the entry equal to CONDA_PREFIX\\bin (after the slice conda removes), else first.",
    };
    let vars = [
        ("PROFILE_NOTE", note(&p.profile)),
        ("LAYER", p.layer.name().to_string()),
        ("P", p.prefix.to_string()),
        ("WHERE", where_long.to_string()),
        ("CODEPAGE_SWITCH", switch.to_string()),
        ("CODEPAGE_RESTORE", restore.to_string()),
        ("CLEANUP", tpl::CLEANUP.to_string()),
        ("BODY_DX_OFF", off),
        ("BODY_DX_ON", on),
    ];
    let refs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let text = fill(if activate { tpl::ACTIVATE } else { tpl::DEACTIVATE }, &refs);
    text.replace('\n', "\r\n")
}
