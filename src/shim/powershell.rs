//! The PowerShell (`.ps1`) shims, for Windows PowerShell 5.1 and pwsh.
//!
//! The layer rules of docs/design.md ("Activation layers"), with .NET string methods: a list's
//! block is removed by value (`V = sep + value + sep`, the first ordinal match of
//! `sep + block + sep` becomes `sep`, the value is `V` without its ends; an empty result is
//! unset, as Windows keeps no empty variables); the SHIM layer inserts its block right after
//! the first entry equal to `CONDA_PREFIX` (ignoring case), lower layers after the first
//! entry equal to `CONDA_PREFIX\bin` (after conda's slice), and first without one; scalars are
//! saved once per layer and put back only where they still hold the profile's value (`-ceq`).
//! Every value is a single-quoted literal ([`quote::powershell`]); nothing is expanded.
//!
//! No PowerShell runs these here (Wine's `powershell.exe` is a stub): the text is pinned by
//! unit tests and snapshots in `src/shim/tests.rs`.

use super::{Activation, Layer, fill, profile_note as note, quote, shim_path};

mod tpl {
    pub const ACTIVATE: &str = include_str!("templates/powershell/activate.ps1");
    pub const DEACTIVATE: &str = include_str!("templates/powershell/deactivate.ps1");
    pub const UNDO_LISTS: &str = include_str!("templates/powershell/undo_lists.ps1");
    pub const INSERT_LIST: &str = include_str!("templates/powershell/insert_list.ps1");
    pub const FIND_PREFIX: &str = include_str!("templates/powershell/find_prefix.ps1");
    pub const SET_SCALAR: &str = include_str!("templates/powershell/set_scalar.ps1");
    pub const RESTORE_SCALAR: &str = include_str!("templates/powershell/restore_scalar.ps1");
}

fn indent(s: &str) -> String {
    s.lines().map(|l| if l.is_empty() { String::new() } else { format!("    {l}") }).collect::<Vec<_>>().join("\n")
}

/// The `.ps1` script (CRLF line ends): the activation (`activate`) or the deactivation of `a`.
pub(super) fn render(a: &Activation, activate: bool) -> String {
    let pre = a.layer.prefix();
    let q = |s: &str| quote::powershell(s);
    let scalars = super::scalars(a);
    let undo = fill(tpl::UNDO_LISTS, &[("P", pre)]);
    let undo = undo.trim_end_matches('\n');
    let layer = a.layer.name();
    let profile = q(&a.profile);
    let text = if activate {
        let mut insert = String::new();
        for (name, dirs) in [("PATH", &a.path_prepend), ("LD_LIBRARY_PATH", &a.ld_library_path_prepend)] {
            if dirs.is_empty() {
                continue;
            }
            // The block is joined with the host's separator at run time, like the list itself.
            let parts: Vec<String> = dirs.iter().map(|p| q(&shim_path(p))).collect();
            let block = format!("@({}) -join $__cuenv_s", parts.join(", "));
            // SHIM: after the conda env's own entry (inside the slice conda removes); lower
            // layers: after the env's `bin`, the slice's last entry (kept by conda, behind the
            // next env's profile).
            let anchor = if a.layer == Layer::Shim { "" } else { "\\bin" };
            let find = fill(tpl::FIND_PREFIX, &[("ANCHOR_SUFFIX", anchor)]);
            insert.push_str(&fill(
                tpl::INSERT_LIST,
                &[
                    ("BLOCK", &block),
                    ("NAME", &q(name)),
                    ("UNSET_NAME", &q(&format!("{pre}UNSET_{name}"))),
                    ("ADDED_NAME", &q(&format!("{pre}ADDED_{name}"))),
                    ("FIND_PREFIX", &find),
                ],
            ));
        }
        let set: String = scalars.iter().map(|(n, v)| fill(tpl::SET_SCALAR, &[("NAME", &q(n)), ("VALUE", &q(v))])).collect();
        let names = scalars.iter().map(|(n, _)| q(n)).collect::<Vec<_>>().join(", ");
        let where_ = match a.layer {
            Layer::Shim => "it goes right after the entry equal to CONDA_PREFIX (inside the slice conda removes), else first.",
            Layer::Hook | Layer::Setup => "it goes right after the entry equal to CONDA_PREFIX\\bin (after the slice conda removes), else first.",
        };
        fill(
            tpl::ACTIVATE,
            &[
                ("PROFILE_NOTE", &note(&a.profile)),
                ("LAYER", layer),
                ("P", pre),
                ("WHERE", where_),
                ("UNDO_LISTS", undo),
                ("SCALAR_NAMES", &names),
                ("INSERT_LISTS", insert.trim_end_matches('\n')),
                ("SET_SCALARS", set.trim_end_matches('\n')),
                ("PROFILE", &profile),
            ],
        )
    } else {
        let restore: String = scalars
            .iter()
            .map(|(n, v)| {
                fill(
                    tpl::RESTORE_SCALAR,
                    &[("NAME", &q(n)), ("VALUE", &q(v)), ("SAVED_NAME", &q(&format!("{pre}SAVED_{n}"))), ("UNSET_NAME", &q(&format!("{pre}UNSET_{n}")))],
                )
            })
            .collect();
        fill(
            tpl::DEACTIVATE,
            &[
                ("PROFILE_NOTE", &note(&a.profile)),
                ("LAYER", layer),
                ("P", pre),
                ("PROFILE", &profile),
                ("UNDO_LISTS", &indent(undo)),
                ("RESTORE_SCALARS", restore.trim_end_matches('\n')),
            ],
        )
    };
    text.replace('\n', "\r\n")
}
