//! The command-line layer: argument parsing (clap), printing, and exit codes.
//! The only module that writes to stdout/stderr, through `cli::output` ([`Out`], [`ErrOut`]): a command's output
//! never panics nor stops it half-way; a stdout failure is reported after the command ran.

mod apply;
mod args;
mod check;
mod color;
pub mod diagnostics;
mod doctor;
mod env;
mod fetch;
mod generations;
mod init;
mod kernel;
mod output;
mod probe;
mod reporter;
mod run;
mod status;
mod store;
mod toolkits;

use clap::{CommandFactory, FromArgMatches};
use std::io;

use crate::error::{ExitCode, Hinted};
use crate::home::layout::Layout;
pub use args::{Cli, Command};
use diagnostics::Report;
pub use output::{BROKEN_PIPE, ErrOut, Out};

/// What every command gets: the layout and output settings.
pub struct Ctx {
    pub layout: Layout,
    pub quiet: bool,
    /// `--verbose`: everything (`plan`'s view links, each check's reasons and notes, whole
    /// `generations` lines); by default what changed and what is wrong, one line each.
    pub verbose: bool,
    out: Out,
}

impl Ctx {
    /// stdout, for a command's results: `writeln!(ctx.out(), ...)` (never panics).
    pub fn out(&self) -> &Out {
        &self.out
    }

    /// stderr, for warnings and errors: `writeln!(ctx.err(), ...)` (never panics).
    pub fn err(&self) -> ErrOut {
        ErrOut
    }

    /// Writes `d` to stderr through the one renderer ([`diagnostics::render_as`]): `error:` /
    /// `warning:` (`label`), its causes and its hint, colored like a returned error.
    pub fn report(&self, label: &str, d: &(dyn crate::error::Diagnose + '_)) {
        write!(ErrOut, "{}", color::paint(&diagnostics::render_as(label, d)));
    }

    /// Prints `value` as pretty JSON on stdout.
    pub(crate) fn print_json(&self, value: &impl serde::Serialize) {
        match serde_json::to_string_pretty(value) {
            Ok(text) => writeln!(self.out(), "{text}"),
            Err(e) => self.out().fail(crate::error::unserializable(e)),
        }
    }

    /// Prints `value` as pretty JSON on stdout with every object's keys sorted, as the
    /// `serde_json::json!` objects these commands printed before (keep their output stable).
    pub(crate) fn print_json_sorted(&self, value: &impl serde::Serialize) {
        match serde_json::to_value(value) {
            Ok(v) => self.print_json(&v),
            Err(e) => self.out().fail(crate::error::unserializable(e)),
        }
    }

    /// A note on stderr, unless `--quiet`.
    pub fn note(&self, msg: &str) {
        if !self.quiet {
            writeln!(self.err(), "{msg}");
        }
    }
}

/// Parses the arguments, runs the command, renders any error, then reports a failure to
/// write stdout (after the command's work is done; a closed pipe quietly, with exit
/// [`BROKEN_PIPE`]); returns the exit code. An error of the command keeps its exit code.
pub fn main() -> i32 {
    // --color is read before clap parses, so that clap's own help and errors follow it.
    let when = color::scan(std::env::args_os());
    color::init(when);
    let matches = Cli::command().color(when.clap()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let out = Out::default();
    let result = run(cli, out.clone());
    let failed = out.finish();
    let code = match result {
        Ok(code) => code as i32,
        Err(err) => {
            write!(ErrOut, "{}", color::paint(&err.render()));
            err.exit_code() as i32
        }
    };
    let Some(e) = failed else { return code };
    // A closed pipe is not worth a message: the reader chose to stop reading.
    let broken_pipe = e.kind() == io::ErrorKind::BrokenPipe;
    let err = Report::from(output::StdoutError(e));
    if !broken_pipe {
        write!(ErrOut, "{}", err.render());
    }
    match code {
        0 if broken_pipe => BROKEN_PIPE,
        0 => err.exit_code() as i32,
        _ => code,
    }
}

/// What in the home's path the lists a profile's activation writes cannot hold, in words:
/// `;` (the separator of Windows' `PATH`, and one of glibc's `LD_LIBRARY_PATH`), `:` (the
/// separator of `LD_LIBRARY_PATH` and `PATH` elsewhere), a newline or another control
/// character (a shim's line breaks). `None` when the path is fine.
fn home_char_refused(home: &std::path::Path) -> Option<String> {
    let body = home.to_string_lossy();
    if body.contains(';') {
        return Some("`;`, a separator in PATH and LD_LIBRARY_PATH lists: the profiles' library folders under it would be split apart".into());
    }
    if !cfg!(windows) && body.contains(':') {
        return Some("`:`, the separator of LD_LIBRARY_PATH and PATH: the profiles' library folders under it would be split apart".into());
    }
    if let Some(c) = body.chars().find(|c| c.is_control()) {
        let name = if c == '\n' { "a newline".to_string() } else { format!("the control character U+{:04X}", c as u32) };
        return Some(format!("{name}, which the shims and exported files cannot hold on one line"));
    }
    None
}

fn run(cli: Cli, out: Out) -> Result<ExitCode, Report> {
    // A malformed CUENV_* setting stops every command before it reads or writes anything.
    crate::home::settings::validate_all()?;
    crate::fetch::url_rule::check_env()?;
    if let Command::Probe(args) = &cli.command {
        return probe::run(args); // needs no home
    }
    // Neither needs a home.
    match &cli.command {
        Command::Completions { shell } => {
            let mut buf = Vec::new();
            clap_complete::generate(*shell, &mut <Cli as clap::CommandFactory>::command(), "cuenv", &mut buf);
            write!(out, "{}", String::from_utf8_lossy(&buf));
            return Ok(ExitCode::Success);
        }
        Command::Man => {
            let mut buf = Vec::new();
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
                .render(&mut buf)
                .map_err(|e| crate::error::IoError::new("render the man page to", "stdout", e))?;
            write!(out, "{}", String::from_utf8_lossy(&buf));
            return Ok(ExitCode::Success);
        }
        _ => {}
    }
    // CUENV_HOME is read here rather than by clap: clap shows an argument set from the
    // environment in every usage line, as if it were required.
    let home = match cli.home.or_else(|| std::env::var_os(crate::home::settings::HOME_VAR).filter(|v| !v.is_empty()).map(std::path::PathBuf::from)) {
        Some(h) => h,
        None => {
            Layout::default_home().ok_or_else(|| Hinted::new("cannot find a home folder for cuenv", "pass --home DIR or set CUENV_HOME", ExitCode::Failure))?
        }
    };
    // The home is made absolute once, here: every link cuenv makes stores an absolute target,
    // and a relative one would dangle as soon as it is seen from another folder.
    let home = std::path::absolute(&home).map_err(|e| crate::error::IoError::new("find the absolute path of the home", &home, e))?;
    if let Some(why) = home_char_refused(&home) {
        return Err(Hinted::new(
            format!("the cuenv home {} holds {why}", crate::error::shown_path(&home)),
            "move the home to a path without it: pass --home DIR or set CUENV_HOME (nothing was read or written)",
            ExitCode::Invalid,
        )
        .into());
    }
    if home.exists() && !home.is_dir() {
        return Err(Hinted::new(
            format!("the cuenv home {} is a file, not a folder", home.display()),
            "pass --home DIR (or set CUENV_HOME) naming a folder; cuenv creates it if it does not exist",
            ExitCode::Invalid,
        )
        .into());
    }
    let ctx = Ctx { layout: Layout::new(home), quiet: cli.quiet, verbose: cli.verbose, out };
    // A home written by a newer cuenv is refused before anything reads or writes it.
    ctx.layout.validate_format()?;
    match cli.command {
        Command::Store(cmd) => store::run(&ctx, cmd),
        Command::Toolkits { json } => toolkits::run(&ctx, json),
        Command::Plan { file, locked, json } => apply::plan(&ctx, &file, locked, json),
        Command::Init { file, env, name, dry_run } => init::init(&ctx, init::InitOpts { file, env, name, dry_run }),
        Command::Apply { file, dry_run: true, locked, json, .. } => apply::plan(&ctx, &file, locked, json),
        Command::Apply { file, dry_run: false, locked, no_check, require_gpu, timeout, offline, replace, force, json } => {
            apply::apply(&ctx, &file, apply::ApplyOpts { locked, json, check: !no_check, require_gpu, timeout, offline, replace, force })
        }
        Command::Lock { file, platform, locked, allow_unreachable, offline, json } => {
            apply::lock(&ctx, &file, apply::LockOpts { platforms: platform, locked, allow_unreachable, offline, json })
        }
        Command::Check { profiles: names, timeout, require_gpu, json } => check::check(&ctx, &names, timeout, require_gpu, json),
        Command::Doctor { for_file: Some(file), all, json, .. } => doctor::run_for(&ctx, &file, all, json),
        Command::Doctor { pid: Some(pid), profile, json, .. } => doctor::run_pid(&ctx, pid, profile.as_deref(), json),
        Command::Doctor { kernel: Some(k), major, timeout, json, .. } => doctor::run_kernel(&ctx, &k, &major, timeout, json),
        Command::Doctor { major, timeout, python, json, .. } => doctor::run(&ctx, &major, timeout, python.as_deref(), json),
        Command::Use { profile, none } => {
            let profile = match (profile, none) {
                (_, true) => None,
                (Some(p), false) => Some(p),
                (None, false) => {
                    // Say where the name came from: `use` is a global switch, and a pin file
                    // found in a folder above is easy to forget.
                    let (p, file) = run::pinned_profile()?;
                    ctx.note(&format!("cuenv: profile {p} from {}", file.display()));
                    Some(p)
                }
            };
            generations::use_profile(&ctx, profile.as_deref())
        }
        Command::Run { profile, strict, command } => run::run(&ctx, profile.as_deref(), strict, &command),
        Command::Rollback { to } => generations::rollback(&ctx, to),
        Command::Generations { json } => generations::generations(&ctx, json),
        Command::Status { json } => status::status(&ctx, json),
        Command::Gc { keep, dry_run } => generations::gc(&ctx, keep, dry_run),
        Command::Kernel(k) => env::kernel(&ctx, k),
        Command::Export { profile, format, all, out } => env::export(&ctx, profile.as_deref(), &format, all, out.as_deref()),
        Command::Env { hook: Some(hook), .. } => env::hook(&ctx, &hook),
        Command::Env { profile, shell, setup, hook_apply, build, .. } => {
            let shell = crate::shim::Shell::from_name(&shell).expect("clap allows only known shells");
            if hook_apply {
                return Ok(env::hook_apply(&ctx, shell));
            }
            if build {
                return env::build(&ctx, profile.as_deref(), shell);
            }
            env::env(&ctx, profile.as_deref(), shell, setup)
        }
        Command::Probe(_) | Command::Completions { .. } | Command::Man => unreachable!("handled above"),
    }
}

/// For commands that act on a generation (`use`, `rollback`, `check`): a home that does not
/// exist has none, and is not created just to say so (a mistyped `CUENV_HOME` would be left
/// behind otherwise).
///
/// Errors: `NoGeneration` (exit 2) when the home does not exist.
pub fn require_home(ctx: &Ctx) -> Result<(), Report> {
    if ctx.layout.home().exists() { Ok(()) } else { Err(crate::generation::rollback::NoGeneration.into()) }
}

/// Takes the writer lock ([`writer_lock`]), finishes or undoes a switch that a kill cut
/// short (`generation::recover`, with a note saying which), and removes what an
/// interrupted build, deletion or import left behind. Every command that changes the home
/// starts here.
///
/// Errors: the lock's (a timeout, the home unwritable), recovery's, and the cleanups'.
pub fn lock_and_recover(ctx: &Ctx) -> Result<crate::home::writer_lock::WriterLock, Report> {
    lock_recover_and_count(ctx).map(|(w, _)| w)
}

/// [`lock_and_recover`], also saying whether it removed any leftover (what `gc` counts in
/// its own line).
pub fn lock_recover_and_count(ctx: &Ctx) -> Result<(crate::home::writer_lock::WriterLock, bool), Report> {
    let writer = writer_lock(ctx)?;
    if let Some(said) = crate::generation::recover(&ctx.layout)? {
        ctx.note(&format!("note: {said}"));
    }
    // What an interrupted build or deletion left (no live cuenv owns it under the lock).
    let removed = crate::generation::clean_leftovers(&ctx.layout)?;
    if removed > 0 {
        let s = if removed == 1 { "" } else { "s" };
        ctx.note(&format!(
            "note: removed {removed} leftover{s} of an interrupted command (a generation being built or deleted, a half-written file, a staged link)"
        ));
    }
    let freed = crate::store::Store::new(&ctx.layout).clean_leftovers(&writer)?;
    note_freed(ctx, freed);
    Ok((writer, removed > 0 || freed > 0))
}

/// Says on stderr how much an interrupted command's leftovers held, once removed (nothing
/// when `freed` is 0).
pub fn note_freed(ctx: &Ctx, freed: u64) {
    if freed > 0 {
        ctx.note(&format!("note: removed {} of leftovers from an interrupted command", crate::sys::fsutil::human_size(freed)));
    }
}

/// Takes the writer lock (saying once that it waits for another cuenv) and records the
/// home's format if the home has none yet.
pub fn writer_lock(ctx: &Ctx) -> Result<crate::home::writer_lock::WriterLock, Report> {
    let writer = crate::home::writer_lock::WriterLock::acquire(&ctx.layout, &mut |m| ctx.note(m))?;
    ctx.layout.record_format()?;
    Ok(writer)
}

/// Warns when a switch left `<home>/active` pointing at a profile the current generation lacks.
pub fn warn_dangling_active(ctx: &Ctx) {
    if let Some((name, false)) = crate::generation::status::active_profile(&ctx.layout) {
        // A warning, shown even with --quiet.
        let way_out = status::dangling_way_out(&ctx.layout, &name);
        let generation = crate::generation::current(&ctx.layout).unwrap_or(0);
        ctx.report("warning", &status::DanglingActive { name, generation, link: ctx.layout.active_link(), way_out });
    }
}
