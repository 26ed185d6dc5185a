//! `use`, `rollback`, `generations` and `gc`: parse, call [`crate::apply`] /
//! [`crate::generation`], render.

use std::path::PathBuf;

use serde::Serialize;

use super::diagnostics::Report;
use super::{Ctx, lock_and_recover, warn_dangling_active};
use crate::error::ExitCode;
use crate::generation;
use crate::generation::active;
use crate::generation::gc::{self, Deleted};
use crate::generation::profile_check;
use crate::generation::rollback;

/// `cuenv use PROFILE` / `cuenv use --none`.
pub fn use_profile(ctx: &Ctx, name: Option<&str>) -> Result<ExitCode, Report> {
    super::require_home(ctx)?;
    let _writer = lock_and_recover(ctx)?;
    let Some(name) = name else {
        active::clear(&ctx.layout)?;
        writeln!(ctx.out(), "no profile is active");
        return Ok(ExitCode::Success);
    };
    let (link, target) = active::set(&ctx.layout, name)?;
    writeln!(ctx.out(), "active profile: {name} ({} -> {})", link.display(), target.display());
    Ok(ExitCode::Success)
}

/// `cuenv rollback [--to N]`.
pub fn rollback(ctx: &Ctx, to: Option<u64>) -> Result<ExitCode, Report> {
    super::require_home(ctx)?;
    let _writer = lock_and_recover(ctx)?;
    let r = rollback::rollback(&ctx.layout, to, &mut |m| ctx.note(m))?;
    let (cur, target) = (r.from, r.to.target);
    if !r.switched {
        writeln!(ctx.out(), "generation {cur} is already current");
        return Ok(ExitCode::Success);
    }
    let verb = if target < cur { "rolled back" } else { "switched forward" };
    let skipped = match r.to.skipped.as_slice() {
        [] => String::new(),
        [n] => format!("; skipped {n}, whose check failed"),
        ns => format!("; skipped {}, whose checks failed", ns.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    };
    writeln!(ctx.out(), "{verb}: generation {target} is current (was {cur}{skipped})");
    warn_dangling_active(ctx);
    Ok(ExitCode::Success)
}

#[derive(Serialize)]
struct GenRow {
    number: u64,
    current: bool,
    created: String,
    source: PathBuf,
    profiles: Vec<String>,
}

#[derive(Serialize)]
struct GenerationsJson {
    generations: Vec<GenRow>,
    history: Vec<generation::HistoryRecord>,
}

/// `cuenv generations`.
pub fn generations(ctx: &Ctx, json: bool) -> Result<ExitCode, Report> {
    let cur = generation::current(&ctx.layout);
    let rows: Vec<GenRow> = generation::list(&ctx.layout)
        .into_iter()
        .filter_map(|n| generation::read(&ctx.layout, n).ok())
        .map(|m| {
            let checks = profile_check::load(&ctx.layout, m.number);
            let status_of = |name: &str| {
                checks
                    .as_ref()
                    .and_then(|c| c.profiles.iter().find(|p| p.profile == name))
                    .map(|p| p.result.status.to_string())
                    .unwrap_or_else(|| "unchecked".into())
            };
            GenRow {
                number: m.number,
                current: Some(m.number) == cur,
                created: m.created.clone(),
                source: m.source.clone(),
                profiles: m.profiles.iter().map(|p| format!("{} (cuDNN {}, {})", p.name, p.cudnn_version, status_of(&p.name))).collect(),
            }
        })
        .collect();
    if json {
        ctx.print_json_sorted(&GenerationsJson { generations: rows, history: generation::history(&ctx.layout) });
        return Ok(ExitCode::Success);
    }
    if rows.is_empty() {
        writeln!(ctx.out(), "no generation yet: run `cuenv apply <lab.toml>`");
    }
    for r in &rows {
        let mark = if r.current { "*" } else { " " };
        if ctx.verbose {
            writeln!(ctx.out(), "{mark} {:>3}  {}  {}  {}", r.number, r.created, r.source.display(), r.profiles.join(", "));
            continue;
        }
        // One short line: the file's name, and as many profiles as fit in about 100 characters.
        let file = r.source.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_else(|| r.source.display().to_string());
        let mut line = format!("{mark} {:>3}  {}  {file}  ", r.number, r.created);
        for (i, p) in r.profiles.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let rest = r.profiles.len() - i;
            if i > 0 && line.len() + sep.len() + p.len() > 100 {
                line.push_str(&format!(", +{rest} more (--verbose)"));
                break;
            }
            line.push_str(sep);
            line.push_str(p);
        }
        writeln!(ctx.out(), "{line}");
    }
    Ok(ExitCode::Success)
}

/// `cuenv gc`.
pub fn gc(ctx: &Ctx, keep: usize, dry_run: bool) -> Result<ExitCode, Report> {
    let (writer, leftovers) = super::lock_recover_and_count(ctx)?;
    let plan = gc::gc_plan(&ctx.layout, keep);
    let verb = if dry_run { "would delete" } else { "deleted" };
    let size = |b: u64| crate::sys::fsutil::human_size(b);
    let say = |d: Deleted| match d {
        Deleted::Generation(n) => writeln!(ctx.out(), "{verb} generation {n} ({})", size(plan.bytes_of_generation(n))),
        Deleted::Entry(name) => writeln!(ctx.out(), "{verb} store entry {name} ({})", size(plan.bytes_of_entry(name))),
    };
    if dry_run {
        plan.generations.iter().for_each(|n| say(Deleted::Generation(*n)));
        plan.entries.iter().for_each(|(_, name)| say(Deleted::Entry(name)));
    } else {
        gc::gc(&ctx.layout, &writer, &plan, &mut |d| say(d))?;
    }
    if plan.generations.is_empty() && plan.entries.is_empty() {
        // The leftovers went first, said on stderr: what remains is "nothing else".
        let what = if leftovers { "nothing else to delete" } else { "nothing to delete" };
        writeln!(ctx.out(), "{what} ({} generation{} kept)", plan.kept, if plan.kept == 1 { "" } else { "s" });
    } else {
        writeln!(ctx.out(), "{} {}", if dry_run { "would free" } else { "freed" }, size(plan.total_bytes()));
    }
    Ok(ExitCode::Success)
}
