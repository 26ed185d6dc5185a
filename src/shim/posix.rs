//! The POSIX (`.sh`), csh (`.csh`) and fish (`.fish`) shims.
//!
//! One POSIX program does the work for all three (docs/design.md, "Activation layers"): it
//! removes the layer's list blocks by value, saves scalars once, inserts its own block and sets
//! its scalars. The `.sh` shim *is* that program (sourced by sh, dash, bash, zsh, and by conda's
//! xonsh activator through `source-bash`). The `.csh` and `.fish` shims run the same program
//! in `/bin/sh` with an emitter appended, which prints the resulting variables as `setenv` /
//! `unsetenv` (csh) or `set -gx` / `set -e` (fish) lines, and source those: csh cannot edit a
//! list variable safely, and one implementation of the list rule is easier to prove than three.

use super::{Activation, LISTS, fill, profile_note as note, quote};

mod tpl {
    pub const ACTIVATE: &str = include_str!("templates/posix/activate.sh");
    pub const DEACTIVATE: &str = include_str!("templates/posix/deactivate.sh");
    pub const UNDO_LIST: &str = include_str!("templates/posix/undo_list.sh");
    pub const INSERT_LIST: &str = include_str!("templates/posix/insert_list.sh");
    pub const KEEP_FRONT: &str = include_str!("templates/posix/keep_front.sh");
    pub const TRANSFER_UNSET: &str = include_str!("templates/posix/transfer_unset.sh");
    pub const STRIP_FRONT: &str = include_str!("templates/posix/strip_front.sh");
    pub const SAVE_SCALAR: &str = include_str!("templates/posix/save_scalar.sh");
    pub const SET_SCALAR: &str = include_str!("templates/posix/set_scalar.sh");
    pub const RESTORE_SCALAR: &str = include_str!("templates/posix/restore_scalar.sh");
    pub const SAVE_SCALAR_UNDER: &str = include_str!("templates/posix/save_scalar_under.sh");
    pub const SET_SCALAR_UNDER: &str = include_str!("templates/posix/set_scalar_under.sh");
    pub const RESTORE_SCALAR_UNDER: &str = include_str!("templates/posix/restore_scalar_under.sh");
    pub const EMIT_CSH: &str = include_str!("templates/posix/emit_csh.sh");
    pub const EMIT_FISH: &str = include_str!("templates/posix/emit_fish.sh");
    pub const CSH_WRAPPER: &str = include_str!("templates/csh/wrapper.csh");
    pub const FISH_WRAPPER: &str = include_str!("templates/fish/wrapper.fish");
}

/// The shim's plan: (list name, block) and (scalar name, value), `CUENV_PROFILE` last.
struct Plan {
    prefix: &'static str,
    higher: &'static [super::Layer],
    lists: Vec<(&'static str, String)>,
    scalars: Vec<(String, String)>,
}

fn plan(a: &Activation) -> Plan {
    let lists = super::list_blocks(a, ":");
    Plan { prefix: a.layer.prefix(), higher: a.layer.higher(), lists, scalars: super::scalars(a) }
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
    let undo = each(
        tpl::UNDO_LIST,
        LISTS.iter().map(|n| {
            let higher = a.layer.higher();
            let transfer = if higher.is_empty() {
                String::new()
            } else {
                let strip = each(tpl::STRIP_FRONT, higher.iter().map(|h| vec![("H", h.prefix().to_string()), ("NAME", n.to_string())]));
                let cases: Vec<String> = higher.iter().map(|h| format!("      :{0}) {0}UNSET_{n}=1; export {0}UNSET_{n} ;;", h.prefix())).collect();
                fill(tpl::TRANSFER_UNSET, &[("P", &pre), ("NAME", n), ("STRIP", strip.as_str()), ("CASES", &cases.join("\n"))])
            };
            vec![("P", pre.clone()), ("NAME", n.to_string()), ("TRANSFER", transfer.trim_end_matches('\n').to_string())]
        }),
    );
    let profile = quote::posix(&a.profile);
    let head = [("P", pre.as_str()), ("PROFILE", profile.as_str()), ("PROFILE_NOTE", &note(&a.profile)), ("LAYER", a.layer.name())];
    if activate {
        let save: Vec<String> = p
            .scalars
            .iter()
            .map(|(n, _)| {
                let vars = |h: &str| vec![("P", pre.clone()), ("NAME", n.clone()), ("H", h.to_string())];
                let body = chain(a, &|h| each(tpl::SAVE_SCALAR_UNDER, [vars(h)]), &each(tpl::SAVE_SCALAR, [vars("")]));
                format!("if [ -z \"${{{pre}SAVED_{n}+x}}${{{pre}UNSET_{n}+x}}\" ]; then\n{}\nfi", indent(&body))
            })
            .collect();
        let save = save.join("\n");
        let insert = each(
            tpl::INSERT_LIST,
            p.lists.iter().map(|(n, b)| {
                // The blocks of higher layers at the front stay there (docs/design.md, 4).
                let keep = each(tpl::KEEP_FRONT, a.layer.higher().iter().map(|h| vec![("H", h.prefix().to_string()), ("NAME", n.to_string())]));
                vec![("P", pre.clone()), ("NAME", n.to_string()), ("BLOCK", quote::posix(b)), ("KEEP_FRONT", keep)]
            }),
        );
        let set: Vec<String> = p
            .scalars
            .iter()
            .map(|(n, v)| {
                let vars = |h: &str| vec![("NAME", n.clone()), ("VALUE", quote::posix(v)), ("H", h.to_string())];
                chain(a, &|h| each(tpl::SET_SCALAR_UNDER, [vars(h)]), &each(tpl::SET_SCALAR, [vars("")]))
            })
            .collect();
        let set = set.join("\n");
        let mut vars = head.to_vec();
        vars.extend([("UNDO_LISTS", undo.as_str()), ("SAVE_SCALARS", &save), ("INSERT_LISTS", &insert), ("SET_SCALARS", &set)]);
        fill(tpl::ACTIVATE, &vars)
    } else {
        let restore: Vec<String> = p
            .scalars
            .iter()
            .map(|(n, v)| {
                let vars = |h: &str| vec![("P", pre.clone()), ("NAME", n.clone()), ("VALUE", quote::posix(v)), ("H", h.to_string())];
                let body = chain(a, &|h| each(tpl::RESTORE_SCALAR_UNDER, [vars(h)]), &each(tpl::RESTORE_SCALAR, [vars("")]));
                indent(&format!("{body}\nunset {pre}SAVED_{n} {pre}UNSET_{n}"))
            })
            .collect();
        let restore = restore.join("\n");
        let mut vars = head.to_vec();
        vars.extend([("UNDO_LISTS", undo.as_str()), ("RESTORE_SCALARS", &restore)]);
        fill(tpl::DEACTIVATE, &vars)
    }
}

/// A scalar's value as this layer sees it lives in the variable itself, or, while a higher
/// layer is in effect, in the saved copy of the *nearest* higher layer in effect (the value it
/// will put back): `if <nearest higher in effect> ... elif ... else <base> fi`.
fn chain(a: &Activation, under: &dyn Fn(&str) -> String, base: &str) -> String {
    let higher = a.layer.higher();
    if higher.is_empty() {
        return base.to_string();
    }
    let mut out = String::new();
    for (i, h) in higher.iter().rev().enumerate() {
        let kw = if i == 0 { "if" } else { "elif" };
        out.push_str(&format!("{kw} [ -n \"${{{}PROFILE+x}}\" ]; then\n{}\n", h.prefix(), indent(&under(h.prefix()))));
    }
    out.push_str(&format!("else\n{}\nfi", indent(base)));
    out
}

fn indent(text: &str) -> String {
    text.lines().map(|l| if l.is_empty() { String::new() } else { format!("  {l}") }).collect::<Vec<_>>().join("\n")
}

/// Every variable the POSIX program may change: what the csh and fish emitters print.
fn touched(p: &Plan) -> String {
    let mut names: Vec<String> = Vec::new();
    for n in LISTS {
        names.extend([n.to_string(), format!("{}ADDED_{n}", p.prefix), format!("{}UNSET_{n}", p.prefix)]);
        // Undoing may pass the "was unset" fact to a higher layer.
        names.extend(p.higher.iter().map(|h| format!("{}UNSET_{n}", h.prefix())));
    }
    for (n, _) in &p.scalars {
        names.extend([n.clone(), format!("{}SAVED_{n}", p.prefix), format!("{}UNSET_{n}", p.prefix)]);
        for h in p.higher {
            names.extend([format!("{}SAVED_{n}", h.prefix()), format!("{}UNSET_{n}", h.prefix())]);
        }
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
