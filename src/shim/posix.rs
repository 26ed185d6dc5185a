//! The POSIX (`.sh`), csh (`.csh`) and fish (`.fish`) shims.
//!
//! One POSIX program does the work for all three (docs/design.md, "Activation layers"): it
//! removes the layer's list blocks by value, saves scalars once, inserts its own block and sets
//! its scalars. The `.sh` shim *is* that program (sourced by sh, dash, bash, zsh, and by conda's
//! xonsh activator through `source-bash`). The `.csh` and `.fish` shims run the same program
//! in `/bin/sh` with an emitter appended, which prints the resulting variables as `setenv` /
//! `unsetenv` (csh) or `set -gx` / `set -e` (fish) lines, and source those: csh cannot edit a
//! list variable safely, and one implementation of the list rule is easier to prove than three.

use super::{Activation, fill, profile_note as note, quote, shim_path};

mod tpl {
    pub const ACTIVATE: &str = include_str!("templates/posix/activate.sh");
    pub const DEACTIVATE: &str = include_str!("templates/posix/deactivate.sh");
    pub const UNDO_LIST: &str = include_str!("templates/posix/undo_list.sh");
    pub const INSERT_LIST: &str = include_str!("templates/posix/insert_list.sh");
    pub const SAVE_SCALAR: &str = include_str!("templates/posix/save_scalar.sh");
    pub const SET_SCALAR: &str = include_str!("templates/posix/set_scalar.sh");
    pub const RESTORE_SCALAR: &str = include_str!("templates/posix/restore_scalar.sh");
    pub const EMIT_CSH: &str = include_str!("templates/posix/emit_csh.sh");
    pub const EMIT_FISH: &str = include_str!("templates/posix/emit_fish.sh");
    pub const CSH_WRAPPER: &str = include_str!("templates/csh/wrapper.csh");
    pub const FISH_WRAPPER: &str = include_str!("templates/fish/wrapper.fish");
}

/// The list variables a POSIX-family shim may edit. Undoing always covers both, since a stale
/// profile of the same layer may have edited either.
const LISTS: [&str; 2] = ["PATH", "LD_LIBRARY_PATH"];

/// The shim's plan: (list name, block) and (scalar name, value), `CUENV_PROFILE` last.
struct Plan {
    prefix: &'static str,
    lists: Vec<(&'static str, String)>,
    scalars: Vec<(String, String)>,
}

fn plan(a: &Activation) -> Plan {
    let mut lists = Vec::new();
    for (name, dirs) in [("PATH", &a.path_prepend), ("LD_LIBRARY_PATH", &a.ld_library_path_prepend)] {
        if !dirs.is_empty() {
            lists.push((name, dirs.iter().map(|p| shim_path(p)).collect::<Vec<_>>().join(":")));
        }
    }
    Plan { prefix: a.layer.prefix(), lists, scalars: super::scalars(a) }
}

fn each(template: &str, items: impl IntoIterator<Item = Vec<(&'static str, String)>>) -> String {
    let mut out = String::new();
    for vars in items {
        let refs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        out.push_str(&fill(template, &refs));
    }
    out.trim_end_matches('\n').to_string()
}

/// The `.sh` script: the activation (`activate`) or the deactivation of `a`.
pub(super) fn render_sh(a: &Activation, activate: bool) -> String {
    let p = plan(a);
    let pre = p.prefix.to_string();
    let undo = each(tpl::UNDO_LIST, LISTS.iter().map(|n| vec![("P", pre.clone()), ("NAME", n.to_string())]));
    let profile = quote::posix(&a.profile);
    let head = [("P", pre.as_str()), ("PROFILE", profile.as_str()), ("PROFILE_NOTE", &note(&a.profile)), ("LAYER", layer_name(a))];
    if activate {
        let save = each(tpl::SAVE_SCALAR, p.scalars.iter().map(|(n, _)| vec![("P", pre.clone()), ("NAME", n.clone())]));
        let insert = each(tpl::INSERT_LIST, p.lists.iter().map(|(n, b)| vec![("P", pre.clone()), ("NAME", n.to_string()), ("BLOCK", quote::posix(b))]));
        let set = each(tpl::SET_SCALAR, p.scalars.iter().map(|(n, v)| vec![("NAME", n.clone()), ("VALUE", quote::posix(v))]));
        let mut vars = head.to_vec();
        vars.extend([("UNDO_LISTS", undo.as_str()), ("SAVE_SCALARS", &save), ("INSERT_LISTS", &insert), ("SET_SCALARS", &set)]);
        fill(tpl::ACTIVATE, &vars)
    } else {
        let restore = each(tpl::RESTORE_SCALAR, p.scalars.iter().map(|(n, v)| vec![("P", pre.clone()), ("NAME", n.clone()), ("VALUE", quote::posix(v))]));
        let mut vars = head.to_vec();
        vars.extend([("UNDO_LISTS", undo.as_str()), ("RESTORE_SCALARS", &restore)]);
        fill(tpl::DEACTIVATE, &vars)
    }
}

fn layer_name(a: &Activation) -> &'static str {
    match a.layer {
        super::Layer::Shim => "SHIM",
        super::Layer::Setup => "SETUP",
    }
}

/// Every variable the POSIX program may change: what the csh and fish emitters print.
fn touched(p: &Plan) -> String {
    let mut names: Vec<String> = Vec::new();
    for n in LISTS {
        names.extend([n.to_string(), format!("{}ADDED_{n}", p.prefix), format!("{}UNSET_{n}", p.prefix)]);
    }
    for (n, _) in &p.scalars {
        names.extend([n.clone(), format!("{}SAVED_{n}", p.prefix), format!("{}UNSET_{n}", p.prefix)]);
    }
    names.push(format!("{}PROFILE", p.prefix));
    names.join(" ")
}

/// The POSIX program with `emitter` appended, as one string for `/bin/sh -c`.
fn program(a: &Activation, activate: bool, emitter: &str) -> String {
    let p = plan(a);
    let sh = render_sh(a, activate);
    // The `.sh` text's header comments stay: they are comments to sh as well.
    format!("{sh}{}", fill(emitter, &[("NAMES", &touched(&p))]))
}

/// The `.csh` script: runs the POSIX program in `/bin/sh` and sources what it prints.
pub(super) fn render_csh(a: &Activation, activate: bool) -> String {
    let prog = quote::csh(&program(a, activate, tpl::EMIT_CSH));
    fill(tpl::CSH_WRAPPER, &[("WHAT", what(activate)), ("PROFILE_NOTE", &note(&a.profile)), ("PROGRAM", &prog)])
}

/// The `.fish` script: runs the POSIX program in `/bin/sh` and sources what it prints.
pub(super) fn render_fish(a: &Activation, activate: bool) -> String {
    let prog = quote::fish(&program(a, activate, tpl::EMIT_FISH));
    fill(tpl::FISH_WRAPPER, &[("WHAT", what(activate)), ("PROFILE_NOTE", &note(&a.profile)), ("PROGRAM", &prog)])
}

fn what(activate: bool) -> &'static str {
    if activate { "Activates" } else { "Deactivates" }
}
