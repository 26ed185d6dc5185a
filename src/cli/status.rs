//! `cuenv status`: renders [`crate::generation::status::Status`]. By default one line per problem (the
//! links and shims that are fine are counted, not listed); `--verbose` lists every link and
//! shim; `--json` is the whole report.

use std::path::{Path, PathBuf};

use super::Ctx;
use super::diagnostics::Report;
use crate::error::ExitCode;
use crate::generation::profile_check;
use crate::generation::status::{self, Health, State};

/// `cuenv status`. Exit 3 when a link or shim is damaged or stray, or `active` dangles.
pub fn status(ctx: &Ctx, json: bool) -> Result<ExitCode, Report> {
    let s = status::status(&ctx.layout)?;
    if let Some(note) = crate::store::Store::new(&ctx.layout).leftover_note() {
        ctx.note(&note);
    }
    if json {
        ctx.print_json_sorted(&s);
    } else {
        match s.generation {
            None => writeln!(ctx.out(), "no generation yet: run `cuenv apply <lab.toml>`"),
            Some(n) => writeln!(ctx.out(), "generation {n} is current; active profile: {}", s.active.as_deref().unwrap_or("(none)")),
        }
        if s.active_dangling {
            let name = s.active.as_deref().unwrap_or("");
            writeln!(
                ctx.out(),
                "DANGLING  {} (generation {} has no profile `{name}`): {}",
                ctx.layout.active_link().display(),
                s.generation.unwrap_or(0),
                dangling_way_out(&ctx.layout, name)
            );
        }
        if s.interrupted_switch {
            writeln!(ctx.out(), "an interrupted switch is pending; the next apply, use, rollback or gc finishes it");
        }
        // A reason every checked profile gives alike (no NVIDIA driver, say) is a fact of the
        // machine, not of a profile: said once, above the profiles.
        let shared = shared_reasons(&s.profiles);
        for r in &shared {
            writeln!(ctx.out(), "every profile's check: {r}");
        }
        let (mut fine_links, mut fine_folders, mut fine_shims) = (0, 0, 0);
        for p in &s.profiles {
            writeln!(ctx.out(), "{}{}: cuDNN {} on CUDA {}", if p.active { "* " } else { "  " }, p.name, p.cudnn, p.toolkit);
            match &p.check {
                Some(c) => {
                    writeln!(ctx.out(), "    check     {}", profile_check::summary(c));
                    for r in c.result.reasons.iter().map(|r| r.cited()).filter(|r| !shared.contains(r)) {
                        writeln!(ctx.out(), "              {r}");
                    }
                }
                None => writeln!(ctx.out(), "    check     not run (`cuenv check`)"),
            }
            if let Some(why) = &p.runtime_missing {
                writeln!(ctx.out(), "    runtime   missing: {why}");
            }
            for h in p.links.iter().chain(&p.shims) {
                if ctx.verbose || !h.ok() {
                    writeln!(ctx.out(), "    {:<9} {}", if h.ok() { &State::Ok } else { &h.state }, h.path.display());
                }
            }
            // A link-free generation's "links" are the real folders it names (`ok (direct)`).
            fine_folders += p.links.iter().filter(|h| h.state == State::Direct).count();
            fine_links += p.links.iter().filter(|h| h.ok() && h.state != State::Direct).count();
            fine_shims += p.shims.iter().filter(|h| h.ok()).count();
        }
        if !ctx.verbose && fine_links + fine_folders + fine_shims > 0 {
            let count = |k: usize, one: &str, many: &str| (k > 0).then(|| format!("{k} {}", if k == 1 { one } else { many }));
            let parts: Vec<String> = [count(fine_links, "link", "links"), count(fine_folders, "folder", "folders"), count(fine_shims, "shim", "shims")]
                .into_iter()
                .flatten()
                .collect();
            writeln!(ctx.out(), "  ({} ok; --verbose lists them)", parts.join(", "));
        }
    }
    damage_hint(ctx, &s);
    stray_hint(ctx, &s);
    Ok(if s.healthy { ExitCode::Success } else { ExitCode::Damaged })
}

/// The reasons (as [`crate::check::Reason::cited`] words them) that every profile of
/// `profiles` gives alike, in the first profile's order, when at least two profiles were
/// checked and none of them was not; else none.
fn shared_reasons(profiles: &[status::ProfileStatus]) -> Vec<String> {
    let checks: Option<Vec<Vec<String>>> = profiles.iter().map(|p| p.check.as_ref().map(|c| c.result.reasons.iter().map(|r| r.cited()).collect())).collect();
    match checks.as_deref() {
        Some([first, rest @ ..]) if !rest.is_empty() => first.iter().filter(|r| rest.iter().all(|o| o.contains(r))).cloned().collect(),
        _ => Vec::new(),
    }
}

/// A switch left `<home>/active` naming `name`, a profile the current generation
/// (`generation`) lacks: the warning after `apply`, `rollback` and `use`, with
/// [`dangling_way_out`] as its hint.
#[derive(Debug, thiserror::Error)]
#[error("the active profile `{name}` is not in generation {generation}, now current, so {} points nowhere", link.display())]
pub(super) struct DanglingActive {
    pub name: String,
    pub generation: u64,
    pub link: std::path::PathBuf,
    pub way_out: String,
}

impl crate::error::Diagnose for DanglingActive {
    fn hint(&self) -> Option<String> {
        Some(self.way_out.clone())
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        crate::error::ExitCode::Success
    }
}

/// The ways out of an `active` that names a profile the current generation lacks: the newest
/// other generation that has it (`rollback --to N`), `use` of one the current generation has.
pub(super) fn dangling_way_out(layout: &crate::home::layout::Layout, name: &str) -> String {
    let mut ways = Vec::new();
    if let Some(g) = status::generations_with(layout, name).first() {
        ways.push(format!("`cuenv rollback --to {g}` makes generation {g}, which has `{name}`, current again"));
    }
    let known = crate::generation::current_manifest(layout).map(|m| m.profile_names()).unwrap_or_default();
    if known.is_empty() {
        ways.push("`cuenv use --none` clears it".into());
    } else {
        ways.push(format!("`cuenv use <profile>` makes one of {} active, `cuenv use --none` clears it", known.join(", ")));
    }
    ways.join("; ")
}

/// The current generation's links and shims `status` found damaged: `apply` of its profile
/// file puts back what is cuenv's (missing or retargeted view links, missing or modified
/// shims, and its own shim paths holding another generation's bytes); a `hint:` says so, and
/// says what cuenv leaves to the user (a foreign file at a shim path, a gone target).
fn damage_hint(ctx: &Ctx, s: &status::Status) {
    let (Some(n), Some(source)) = (s.generation, &s.source) else { return };
    let listed = |h: &Health| s.listed_shims.iter().any(|l| l == &h.path);
    let mut repairable: Vec<&Path> = Vec::new();
    let mut foreign: Vec<&Path> = Vec::new();
    let mut gone: Vec<&Path> = Vec::new();
    for p in &s.profiles {
        for h in &p.links {
            match &h.state {
                st if st.ok() => {}
                State::Missing if h.path.starts_with(ctx.layout.profiles_dir()) => repairable.push(&h.path),
                State::Retargeted(_) => repairable.push(&h.path),
                _ => gone.push(&h.path),
            }
        }
        for h in &p.shims {
            match h.state {
                State::Missing | State::Modified => repairable.push(&h.path),
                State::Stray if listed(h) => repairable.push(&h.path),
                State::Foreign => foreign.push(&h.path),
                _ => {}
            }
        }
    }
    let join = |v: &[&Path]| v.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    if !repairable.is_empty() {
        writeln!(
            ctx.err(),
            "hint: `cuenv apply {}` puts back generation {n}'s missing or altered links and shims as its records say (its content does not change)",
            source.display()
        );
    }
    if !foreign.is_empty() {
        writeln!(
            ctx.err(),
            "hint: {} {} not cuenv's (no marker line), so cuenv will not replace {}: move {} away, then run `cuenv apply {}`",
            join(&foreign),
            if foreign.len() == 1 { "is" } else { "are" },
            if foreign.len() == 1 { "it" } else { "them" },
            if foreign.len() == 1 { "it" } else { "them" },
            source.display()
        );
    }
    if !gone.is_empty() {
        let gone: Vec<PathBuf> = gone.iter().map(|p| p.to_path_buf()).collect();
        writeln!(
            ctx.err(),
            "hint: what {} {} is gone (a toolkit root or store entry): restore it, or apply a profile file that does not need it",
            gone.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
            if gone.iter().all(|p| p.starts_with(ctx.layout.profiles_dir())) { "points at" } else { "names" }
        );
    }
}

/// Stray shims that the current generation's manifest does not name (cuenv's, of another
/// generation) run when their conda env activates: a `hint:` on stderr says how to be rid of
/// each. (Those at a path the manifest names are in [`damage_hint`]: `apply` rewrites them.)
fn stray_hint(ctx: &Ctx, s: &status::Status) {
    let Some(n) = s.generation else { return };
    let unlisted: Vec<&Path> = s
        .profiles
        .iter()
        .flat_map(|p| &p.shims)
        .filter(|h| h.state == State::Stray && !s.listed_shims.iter().any(|l| l == &h.path))
        .map(|h| h.path.as_path())
        .collect();
    if unlisted.is_empty() {
        return;
    }
    let join = unlisted.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    writeln!(ctx.err(), "hint: stray shims are cuenv's but not generation {n}'s (a sync was cut short) and run when the conda env activates: delete {join}");
}
