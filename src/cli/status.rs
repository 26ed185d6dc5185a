//! `cuenv status`: renders [`crate::status::Status`].

use super::Ctx;
use super::diagnostics::Report;
use crate::error::ExitCode;
use crate::generation_check;
use crate::status;

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
            writeln!(
                ctx.out(),
                "DANGLING  {} (the current generation has no profile `{}`): run `cuenv use <profile>` or `cuenv use --none`",
                ctx.layout.active_link().display(),
                s.active.as_deref().unwrap_or("")
            );
        }
        if s.interrupted_switch {
            writeln!(ctx.out(), "an interrupted switch is pending; the next apply, use, rollback or gc finishes it");
        }
        for p in &s.profiles {
            writeln!(ctx.out(), "{}{}: cuDNN {} on CUDA {}", if p.active { "* " } else { "  " }, p.name, p.cudnn, p.toolkit);
            match &p.check {
                Some(c) => {
                    writeln!(ctx.out(), "    check     {}", generation_check::summary(c));
                    for r in &c.result.reasons {
                        writeln!(ctx.out(), "              {r}");
                    }
                }
                None => writeln!(ctx.out(), "    check     not run (`cuenv check`)"),
            }
            for h in p.links.iter().chain(&p.shims) {
                writeln!(ctx.out(), "    {:<9} {}", if h.ok() { "ok" } else { h.state.as_str() }, h.path.display());
            }
        }
    }
    stray_hint(ctx, &s);
    Ok(if s.healthy { ExitCode::Success } else { ExitCode::Damaged })
}

/// Stray shims (cuenv's, not the current generation's) run when their conda env activates:
/// a `hint:` on stderr says how to be rid of each.
fn stray_hint(ctx: &Ctx, s: &status::Status) {
    let Some(n) = s.generation else { return };
    let stray: Vec<&std::path::Path> = s.profiles.iter().flat_map(|p| &p.shims).filter(|h| h.state == status::STRAY).map(|h| h.path.as_path()).collect();
    if stray.is_empty() {
        return;
    }
    let listed: Vec<std::path::PathBuf> = crate::generation::read(&ctx.layout, n).map(|m| m.shims.into_iter().map(|s| s.path).collect()).unwrap_or_default();
    let (own, unlisted): (Vec<&std::path::Path>, Vec<&std::path::Path>) = stray.into_iter().partition(|p| listed.iter().any(|l| l == p));
    let join = |v: &[&std::path::Path]| v.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    let mut what = Vec::new();
    if !unlisted.is_empty() {
        what.push(format!("delete {}", join(&unlisted)));
    }
    if !own.is_empty() {
        what.push(format!("`cuenv rollback` then `cuenv rollback --to {n}` rewrites {}", join(&own)));
    }
    writeln!(
        ctx.err(),
        "hint: stray shims are cuenv's but not generation {n}'s (a sync was cut short) and run when the conda env activates: {}",
        what.join("; ")
    );
}
