//! `cuenv status`: renders [`crate::status::Status`].

use super::Ctx;
use super::diagnostics::Report;
use crate::error::ExitCode;
use crate::generation_check;
use crate::status;

/// `cuenv status`. Exit 3 when a link or shim is damaged or `active` dangles.
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
    Ok(if s.healthy { ExitCode::Success } else { ExitCode::Damaged })
}
