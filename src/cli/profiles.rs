//! `plan`, `apply`, `use`, `rollback`, `generations`, `status`, `gc`, `env`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;

use super::{Ctx, print_json};
use crate::apply::{self, VIEW_LINKS};
use crate::binfmt::Platform;
use crate::error::ExitCode;
use crate::generation;
use crate::generation_check;
use crate::link::{self, LinkKind};
use crate::lockfile;
use crate::profile;
use crate::shim::{self, Shell};
use crate::sources;
use crate::writer_lock::WriterLock;

/// Takes the writer lock and finishes or undoes an interrupted switch.
pub fn lock_and_recover(ctx: &Ctx) -> anyhow::Result<WriterLock> {
    let lock = WriterLock::acquire(&ctx.layout, &mut |m| ctx.note(m))?;
    if let Some(said) = generation::recover(&ctx.layout)? {
        ctx.note(&format!("note: {said}"));
    }
    Ok(lock)
}

/// The active profile's name, and whether the current generation still has it.
fn active_profile(ctx: &Ctx) -> Option<(String, bool)> {
    let active = ctx.layout.active_link();
    let target = link::read(&active).ok()?;
    let name = target.file_name()?.to_string_lossy().into_owned();
    Some((name, active.exists()))
}

/// Warns when a switch left `<home>/active` pointing at a profile the current generation lacks.
fn warn_dangling_active(ctx: &Ctx) {
    if let Some((name, false)) = active_profile(ctx) {
        // A warning, shown even with --quiet.
        eprintln!(
            "warning: the active profile `{name}` is not in the current generation, so {} points nowhere; run `cuenv use <profile>` or `cuenv use --none`",
            ctx.layout.active_link().display()
        );
    }
}

/// `cuenv plan FILE` / `cuenv apply --dry-run FILE`.
pub fn plan(ctx: &Ctx, file: &Path, locked: bool, json: bool) -> anyhow::Result<ExitCode> {
    let parsed = profile::load(file)?;
    let host = Platform::host().context("cuDNN is not built for this platform")?;
    let fetches = sources::pending(&ctx.layout, &parsed, host)?;
    let desired = match apply::desire(&ctx.layout, parsed, locked) {
        Ok(d) => d,
        Err(e) if !fetches.is_empty() => {
            // What is still to be fetched cannot be resolved yet: show the fetches.
            if json {
                print_json(&serde_json::json!({ "fetch": fetches, "changes": [], "unresolved": e.to_string() }));
            } else {
                for l in &fetches {
                    println!("{l}");
                }
                println!("(the views are planned once these are fetched; `cuenv apply` fetches them)");
            }
            return Ok(ExitCode::Success);
        }
        Err(e) => return Err(e),
    };
    let mut lines = fetches;
    lines.extend(apply::plan(&ctx.layout, &desired));
    if json {
        print_json(&serde_json::json!({ "changes": lines, "lock_changes": desired.lock_changes, "resolved": desired.resolved }));
    } else if lines.is_empty() {
        println!("no changes: generation {} already matches {}", generation::current(&ctx.layout).unwrap_or(0), file.display());
    } else {
        for l in &lines {
            println!("{l}");
        }
    }
    Ok(ExitCode::Success)
}

/// Options of `cuenv apply`.
pub struct ApplyOpts {
    pub locked: bool,
    pub json: bool,
    /// Check each profile after the switch (`--no-check` turns it off).
    pub check: bool,
    /// A profile without a GPU fails the check.
    pub require_gpu: bool,
    /// Seconds per profile check.
    pub timeout: u64,
    /// Never touch the network (fetching what the store lacks fails).
    pub offline: bool,
}

/// `cuenv apply FILE`.
pub fn apply(ctx: &Ctx, file: &Path, opts: ApplyOpts) -> anyhow::Result<ExitCode> {
    let lock = lock_and_recover(ctx)?;
    let parsed = profile::load(file)?;
    let host = Platform::host().context("cuDNN is not built for this platform")?;
    let lock_path = lockfile::lock_path(file);
    let endpoints = sources::endpoints(&parsed, opts.offline);
    let progress = super::reporter::for_stderr(ctx.quiet || opts.json);
    let fetched = sources::ensure(&ctx.layout, &lock, &parsed, host, &lockfile::read_pins(&lock_path, host), &endpoints, progress.as_ref())?;
    if !opts.json {
        for l in &fetched {
            println!("{l}");
        }
    }
    let desired = apply::desire(&ctx.layout, parsed, opts.locked)?;
    if apply::unchanged(&ctx.layout, &desired) {
        // --locked: the lock already says all this; it is never rewritten (not even to
        // migrate its format).
        if !opts.locked {
            apply::write_lock(&ctx.layout, &desired)?;
        }
        let n = generation::current(&ctx.layout).unwrap_or(0);
        if opts.json {
            print_json(&serde_json::json!({ "generation": n, "changed": false }));
        } else {
            println!("no changes: generation {n} already matches {}", file.display());
        }
        return Ok(ExitCode::Success);
    }
    let lines = apply::plan(&ctx.layout, &desired);
    if cfg!(windows) {
        // The .bat shim refuses to activate past cmd.exe's line limit; say so now.
        let path_len = std::env::var_os("PATH").map(|p| p.len()).unwrap_or(0);
        for v in desired.views.iter().filter(|v| v.conda_env.is_some()) {
            let act = apply::activation(&ctx.layout, &v.name, Platform::WindowsX86_64);
            if let Err(why) = shim::check_cmd_line_limit(path_len, &act) {
                ctx.note(&format!("warning: profile {}: {why}", v.name));
            }
        }
    }
    generation::preflight_shims(&desired.shims.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>())?;
    let previous = generation::current(&ctx.layout);
    let n = apply::build(&ctx.layout, &desired)?;
    if !opts.json {
        for l in lines.iter().filter(|l| !l.starts_with("  ")) {
            println!("{l}");
        }
    }
    // The check runs through the stable paths, so the new generation is switched in first;
    // if a profile fails, the previous generation is switched back.
    generation::switch(&ctx.layout, n, "apply")?;
    let checks = if opts.check {
        let m = generation::read(&ctx.layout, n)?;
        let results = run_checks(ctx, &m, &[], opts.timeout, opts.json);
        generation_check::save(&ctx.layout, n, &results)?;
        results
    } else {
        Vec::new()
    };
    if !generation_check::acceptable(&checks, opts.require_gpu) {
        match previous {
            Some(p) => generation::switch(&ctx.layout, p, "revert")?,
            None => generation::clear(&ctx.layout, "revert")?,
        }
        let kept = previous.map(|p| format!("generation {p} stays current")).unwrap_or_else(|| "no generation is current".into());
        if opts.json {
            print_json(&serde_json::json!({ "generation": n, "changed": false, "reverted": true, "current": previous, "checks": checks }));
        } else {
            eprintln!("error: the check failed for {}; generation {n} was built but {kept}", failed_names(&checks, opts.require_gpu));
            eprintln!("hint: fix what the reasons above say (or set `check = \"none\"` for that profile), then apply again; `cuenv check` re-runs the checks");
        }
        return Ok(ExitCode::CheckFailed);
    }
    let lock_changed = !opts.locked && apply::write_lock(&ctx.layout, &desired)?;
    warn_dangling_active(ctx);
    if opts.json {
        print_json(&serde_json::json!({ "generation": n, "changed": true, "changes": lines, "checks": checks }));
    } else {
        let lock_said = if lock_changed { "written to" } else { "unchanged:" };
        let k = desired.views.len();
        println!("generation {n} is current ({k} profile{}); lock {lock_said} {}", if k == 1 { "" } else { "s" }, lock_path.display());
    }
    Ok(ExitCode::Success)
}

/// Options of `cuenv lock`.
pub struct LockOpts {
    /// The platforms whose sections to write (empty: this host's).
    pub platforms: Vec<Platform>,
    /// Fail instead of changing lab.lock.
    pub locked: bool,
    /// Never use the network.
    pub offline: bool,
    pub json: bool,
}

/// `cuenv lock FILE [--platform P]...`: resolves the profile file for each platform,
/// fetching and verifying what its `from` sources name (bytes pinned in lab.lock must
/// match), and writes those platforms' sections of lab.lock. Builds no generation.
pub fn lock(ctx: &Ctx, file: &Path, opts: LockOpts) -> anyhow::Result<ExitCode> {
    let lock = lock_and_recover(ctx)?;
    let parsed = profile::load(file)?;
    let lock_path = lockfile::lock_path(file);
    let platforms = if opts.platforms.is_empty() {
        vec![Platform::host().context("cuDNN is not built for this platform: name one with --platform")?]
    } else {
        let mut ps = opts.platforms.clone();
        ps.sort_by_key(|p| p.as_str());
        ps.dedup();
        ps
    };
    if opts.locked {
        // Nothing to verify against: say so before fetching anything, for every platform.
        for &platform in &platforms {
            if let Some(drift) = apply::missing_section(lockfile::read(&lock_path, platform)?.as_ref(), &parsed, platform) {
                return Err(drift.into());
            }
        }
    }
    let endpoints = sources::endpoints(&parsed, opts.offline);
    let progress = super::reporter::for_stderr(ctx.quiet || opts.json);
    // Every platform is fetched and resolved before any section is written: a failure
    // leaves lab.lock as it was.
    let mut done = Vec::new();
    for &platform in &platforms {
        let fetched = sources::ensure(&ctx.layout, &lock, &parsed, platform, &lockfile::read_pins(&lock_path, platform), &endpoints, progress.as_ref())?;
        let locking = apply::resolve_locked(&ctx.layout, &parsed, platform, opts.locked)?;
        done.push((platform, fetched, locking));
    }
    let mut report = Vec::new();
    for (platform, fetched, locking) in done {
        let changed = if opts.locked { false } else { apply::write_lock_section(&ctx.layout, &parsed, platform, &locking.resolved)? };
        if !opts.json {
            for l in fetched.iter().chain(&locking.changes) {
                println!("{l}");
            }
            let said = if changed { "written to" } else { "unchanged in" };
            let k = locking.resolved.profiles.len();
            println!("{platform}: {k} profile{} locked, {said} {}", if k == 1 { "" } else { "s" }, lock_path.display());
        }
        report.push(
            serde_json::json!({ "platform": platform, "fetched": fetched, "changes": locking.changes, "changed": changed, "resolved": locking.resolved }),
        );
    }
    if opts.json {
        print_json(&serde_json::json!({ "lock": lock_path, "platforms": report }));
    }
    Ok(ExitCode::Success)
}

fn failed_names(checks: &[generation_check::ProfileCheck], require_gpu: bool) -> String {
    checks
        .iter()
        .filter(|c| !generation_check::acceptable(std::slice::from_ref(c), require_gpu))
        .map(|c| format!("profile {}", c.profile))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs the checks of manifest `m`, printing each profile's verdict and reasons as it ends.
fn run_checks(ctx: &Ctx, m: &generation::Manifest, only: &[String], timeout: u64, json: bool) -> Vec<generation_check::ProfileCheck> {
    let opts = generation_check::Options {
        exe: generation_check::current_exe(),
        base_env: std::env::vars_os().collect(),
        timeout: std::time::Duration::from_secs(timeout),
    };
    generation_check::run(&ctx.layout, m, only, &opts, &mut |pc| {
        if json {
            return;
        }
        println!("check {}", generation_check::summary(pc));
        for r in &pc.result.reasons {
            println!("    {r}");
        }
        if pc.result.status == crate::check::CheckStatus::NoGpu && !ctx.quiet {
            eprintln!("warning: profile {}: no GPU here, so only loading and versions were checked (--require-gpu makes this an error)", pc.profile);
        }
    })
}

/// `cuenv check [PROFILE...]`: checks the current generation's profiles.
pub fn check(ctx: &Ctx, profiles: &[String], timeout: u64, require_gpu: bool, json: bool) -> anyhow::Result<ExitCode> {
    let _lock = lock_and_recover(ctx)?;
    let n = generation::current(&ctx.layout).ok_or_else(no_generation)?;
    let m = generation::read(&ctx.layout, n)?;
    for p in profiles {
        if !m.profiles.iter().any(|v| &v.name == p) {
            return Err(UnknownProfile::new(p, &m).into());
        }
    }
    let results = run_checks(ctx, &m, profiles, timeout, json);
    if profiles.is_empty() {
        generation_check::save(&ctx.layout, n, &results)?;
    }
    if json {
        print_json(&serde_json::json!({ "generation": n, "profiles": results }));
    }
    Ok(if generation_check::acceptable(&results, require_gpu) { ExitCode::Success } else { ExitCode::CheckFailed })
}

/// `cuenv use PROFILE` / `cuenv use --none`.
pub fn use_profile(ctx: &Ctx, name: Option<&str>) -> anyhow::Result<ExitCode> {
    let _lock = lock_and_recover(ctx)?;
    let active = ctx.layout.active_link();
    let Some(name) = name else {
        link::remove(&active)?;
        println!("no profile is active");
        return Ok(ExitCode::Success);
    };
    let cur = generation::current(&ctx.layout).ok_or_else(no_generation)?;
    let m = generation::read(&ctx.layout, cur)?;
    if !m.profiles.iter().any(|p| p.name == name) {
        return Err(UnknownProfile::new(name, &m).into());
    }
    let target = apply::stable_home(&ctx.layout).join("profiles").join(name);
    link::set(LinkKind::native(), &active, &target, &ctx.layout.home().join(".active.new"))?;
    println!("active profile: {name} ({} -> {})", active.display(), target.display());
    Ok(ExitCode::Success)
}

/// A profile name not in the current generation.
#[derive(Debug, thiserror::Error)]
#[error("generation {generation} has no profile `{name}`")]
pub struct UnknownProfile {
    pub name: String,
    pub generation: u64,
    pub known: String,
}

impl UnknownProfile {
    /// `name` is not among the profiles of generation `m`.
    fn new(name: &str, m: &generation::Manifest) -> UnknownProfile {
        let known: Vec<&str> = m.profiles.iter().map(|p| p.name.as_str()).collect();
        UnknownProfile { name: name.into(), generation: m.number, known: known.join(", ") }
    }
}

impl crate::error::Diagnose for UnknownProfile {
    fn hint(&self) -> Option<String> {
        if self.known.is_empty() {
            return Some("the current generation has no profiles; add one to your profile file and run `cuenv apply`".into());
        }
        let known: Vec<&str> = self.known.split(", ").collect();
        let guess = crate::profile::did_you_mean(&self.name, &known).map(|g| format!("did you mean `{g}`? ")).unwrap_or_default();
        Some(format!("{guess}profiles: {}; or add it to your profile file and run `cuenv apply`", self.known))
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::Invalid
    }
}

/// The error of a command that needs a generation when there is none.
fn no_generation() -> anyhow::Error {
    crate::error::hinted("no generation yet", "run `cuenv apply <lab.toml>` first", ExitCode::Invalid)
}

/// `cuenv rollback [--to N]`.
pub fn rollback(ctx: &Ctx, to: Option<u64>) -> anyhow::Result<ExitCode> {
    let _lock = lock_and_recover(ctx)?;
    let cur = generation::current(&ctx.layout).ok_or_else(no_generation)?;
    // Like `nix-env --rollback`: the newest generation older than the current one, so
    // repeated rollbacks keep walking back; one whose check failed (apply built it, then
    // kept the previous generation) is skipped.
    let failed = |n: u64| generation_check::load(&ctx.layout, n).is_some_and(|c| !generation_check::acceptable(&c.profiles, false));
    let mut skipped: Vec<u64> = Vec::new();
    let target = match to {
        Some(n) => {
            if failed(n) {
                ctx.note(&format!("warning: generation {n} failed its check when it was applied (`cuenv generations` shows why)"));
            }
            n
        }
        None => {
            // One pass, newest first: each generation's check file is read once.
            let mut found = None;
            for n in generation::list(&ctx.layout).into_iter().filter(|n| *n < cur).rev() {
                if !failed(n) {
                    found = Some(n);
                    break;
                }
                skipped.push(n);
            }
            found.ok_or_else(|| {
                crate::error::hinted(
                    format!("no generation older than {cur} passed its check; there is nothing to roll back to"),
                    "`cuenv generations` lists them; `cuenv rollback --to N` goes to any of them",
                    ExitCode::Invalid,
                )
            })?
        }
    };
    generation::read(&ctx.layout, target)?;
    if target == cur {
        println!("generation {cur} is already current");
        return Ok(ExitCode::Success);
    }
    generation::switch(&ctx.layout, target, "rollback")?;
    let verb = if target < cur { "rolled back" } else { "switched forward" };
    let skipped = match skipped.as_slice() {
        [] => String::new(),
        [n] => format!("; skipped {n}, whose check failed"),
        ns => format!("; skipped {}, whose checks failed", ns.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")),
    };
    println!("{verb}: generation {target} is current (was {cur}{skipped})");
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

/// `cuenv generations`.
pub fn generations(ctx: &Ctx, json: bool) -> anyhow::Result<ExitCode> {
    let cur = generation::current(&ctx.layout);
    let rows: Vec<GenRow> = generation::list(&ctx.layout)
        .into_iter()
        .filter_map(|n| generation::read(&ctx.layout, n).ok())
        .map(|m| {
            let checks = generation_check::load(&ctx.layout, m.number);
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
        print_json(&serde_json::json!({ "generations": rows, "history": generation::history(&ctx.layout) }));
        return Ok(ExitCode::Success);
    }
    if rows.is_empty() {
        println!("no generations yet: run `cuenv apply <lab.toml>`");
    }
    for r in &rows {
        println!("{} {:>3}  {}  {}  {}", if r.current { "*" } else { " " }, r.number, r.created, r.source.display(), r.profiles.join(", "));
    }
    Ok(ExitCode::Success)
}

#[derive(Serialize)]
struct Health {
    path: PathBuf,
    state: String,
}

#[derive(Serialize)]
struct ProfileStatus {
    name: String,
    active: bool,
    cudnn: String,
    toolkit: String,
    /// The last check's verdict (`pass`, `fail`, `no-gpu`) and reasons, if it was checked.
    check: Option<generation_check::ProfileCheck>,
    links: Vec<Health>,
    shims: Vec<Health>,
}

/// `cuenv status`.
pub fn status(ctx: &Ctx, json: bool) -> anyhow::Result<ExitCode> {
    let layout = &ctx.layout;
    let cur = generation::current(layout);
    let active_state = active_profile(ctx);
    let active = active_state.as_ref().map(|(n, _)| n.clone());
    let active_dangling = active_state.as_ref().is_some_and(|(_, ok)| !ok);
    let pending = layout.home().join("journal.toml").exists();
    let mut profiles = Vec::new();
    if let Some(n) = cur {
        let m = generation::read(layout, n)?;
        let checks = generation_check::load(layout, n);
        for p in &m.profiles {
            let view = layout.profiles_dir().join(&p.name);
            let links = VIEW_LINKS
                .iter()
                .map(|name| {
                    let at = view.join(name);
                    let state = if p.copied && *name == "cudnn" {
                        if at.is_dir() { "ok (copy)" } else { "missing" }.to_string()
                    } else {
                        match link::read(&at) {
                            Err(_) => "missing".into(),
                            Ok(_) if !at.exists() => "dangling".into(),
                            Ok(t) => format!("ok -> {}", t.display()),
                        }
                    };
                    Health { path: at, state }
                })
                .collect();
            let shims = m
                .shims
                .iter()
                .filter(|s| s.profile == p.name)
                .map(|s| {
                    let state = match std::fs::read(&s.path) {
                        Err(_) => "missing".to_string(),
                        Ok(b) if !shim::is_ours(&String::from_utf8_lossy(&b)) => "foreign".into(),
                        Ok(b) if hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&b)) != s.sha256 => "modified".into(),
                        Ok(_) => "ok".into(),
                    };
                    Health { path: s.path.clone(), state }
                })
                .collect();
            profiles.push(ProfileStatus {
                name: p.name.clone(),
                active: active.as_deref() == Some(&p.name),
                cudnn: format!("{} ({})", p.cudnn_version, p.entry_dir.display()),
                toolkit: format!("{} ({})", p.toolkit_version, p.toolkit_root.display()),
                check: checks.as_ref().and_then(|c| c.profiles.iter().find(|c| c.profile == p.name)).cloned(),
                links,
                shims,
            });
        }
    }
    let healthy = !active_dangling && profiles.iter().all(|p| p.links.iter().all(|h| h.state.starts_with("ok")) && p.shims.iter().all(|h| h.state == "ok"));
    if json {
        print_json(
            &serde_json::json!({ "generation": cur, "active": active, "active_dangling": active_dangling, "interrupted_switch": pending, "healthy": healthy, "profiles": profiles }),
        );
    } else {
        match cur {
            None => println!("no generation yet: run `cuenv apply <lab.toml>`"),
            Some(n) => println!("generation {n} is current; active profile: {}", active.as_deref().unwrap_or("(none)")),
        }
        if active_dangling {
            println!(
                "DANGLING  {} (the current generation has no profile `{}`): run `cuenv use <profile>` or `cuenv use --none`",
                layout.active_link().display(),
                active.as_deref().unwrap_or("")
            );
        }
        if pending {
            println!("an interrupted switch is pending; the next apply, use, rollback or gc finishes it");
        }
        for p in &profiles {
            println!("{}{}: cuDNN {} on CUDA {}", if p.active { "* " } else { "  " }, p.name, p.cudnn, p.toolkit);
            match &p.check {
                Some(c) => {
                    println!("    check     {}", generation_check::summary(c));
                    for r in &c.result.reasons {
                        println!("              {r}");
                    }
                }
                None => println!("    check     not run (`cuenv check`)"),
            }
            for h in p.links.iter().chain(&p.shims) {
                println!("    {:<9} {}", if h.state.starts_with("ok") { "ok" } else { h.state.as_str() }, h.path.display());
            }
        }
    }
    Ok(if healthy { ExitCode::Success } else { ExitCode::Damaged })
}

/// `cuenv gc`.
pub fn gc(ctx: &Ctx, keep: usize, dry_run: bool) -> anyhow::Result<ExitCode> {
    let _lock = lock_and_recover(ctx)?;
    let layout = &ctx.layout;
    let all = generation::list(layout);
    let mut kept: std::collections::BTreeSet<u64> = all.iter().rev().take(keep).copied().collect();
    kept.extend(generation::current(layout));
    kept.extend(generation::previous(layout));
    let doomed: Vec<u64> = all.iter().copied().filter(|n| !kept.contains(n)).collect();
    let mut needed: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for n in &kept {
        if let Ok(m) = generation::read(layout, *n) {
            needed.extend(m.profiles.iter().map(|p| p.cudnn_id.clone()));
            // Entries a lock names for any platform are kept too (`cuenv lock --platform`).
            for (_, section) in lockfile::read_all(&lockfile::lock_path(&m.source)).unwrap_or_default() {
                needed.extend(section.profiles.iter().map(|p| p.cudnn_id.clone()));
            }
        }
    }
    let store = crate::store::Store::new(layout);
    let unused: Vec<(PathBuf, String)> = store.entries().into_iter().filter(|(_, m)| !needed.contains(&m.id)).map(|(d, m)| (d, m.name)).collect();
    let verb = if dry_run { "would delete" } else { "deleted" };
    for n in &doomed {
        if !dry_run {
            apply::remove_generation_tree(&generation::dir(layout, *n))?;
        }
        println!("{verb} generation {n}");
    }
    for (dir, name) in &unused {
        if !dry_run {
            store.remove(&_lock, dir)?;
        }
        println!("{verb} store entry {name}");
    }
    if doomed.is_empty() && unused.is_empty() {
        println!("nothing to delete ({} generation{} kept)", kept.len(), if kept.len() == 1 { "" } else { "s" });
    }
    Ok(ExitCode::Success)
}

/// `cuenv env [PROFILE] --shell SHELL` / `cuenv env --setup`.
pub fn env(ctx: &Ctx, profile: Option<&str>, shell: Shell, setup: bool) -> anyhow::Result<ExitCode> {
    let platform = Platform::host().context("cuDNN is not built for this platform")?;
    let name = if setup {
        None
    } else {
        match profile {
            Some(p) => Some(p.to_string()),
            None => Some(active_profile(ctx).map(|(name, _)| name).ok_or_else(|| {
                crate::error::hinted(
                    "no profile given and none is active",
                    "pass a profile name, or make one active with `cuenv use <profile>`",
                    ExitCode::Invalid,
                )
            })?),
        }
    };
    let act = match &name {
        Some(n) => {
            let cur = generation::current(&ctx.layout).ok_or_else(no_generation)?;
            let m = generation::read(&ctx.layout, cur)?;
            if !m.profiles.iter().any(|p| &p.name == n) {
                return Err(UnknownProfile::new(n, &m).into());
            }
            apply::activation(&ctx.layout, n, platform)
        }
        None => {
            // The one-time setup: the same activation through `<home>/active`.
            let mut a = apply::activation(&ctx.layout, "active", platform);
            let active = apply::stable_home(&ctx.layout).join("active");
            let view = apply::stable_home(&ctx.layout).join("profiles").join("active");
            let fix = |p: PathBuf| p.strip_prefix(&view).map(|r| active.join(r)).unwrap_or(p);
            a.path_prepend = a.path_prepend.into_iter().map(fix).collect();
            a.ld_library_path_prepend = a.ld_library_path_prepend.into_iter().map(fix).collect();
            a.set = a.set.into_iter().map(|(k, v)| (k, fix(v))).collect();
            // CUENV_PROFILE=active: whichever profile `cuenv use` made active.
            a
        }
    };
    shim::validate(shell, &act).map_err(|e| anyhow::anyhow!("cannot render the activation for this shell: {e}"))?;
    print!("{}", shim::render_activate(shell, &act));
    Ok(ExitCode::Success)
}
