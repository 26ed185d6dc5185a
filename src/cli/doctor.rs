//! `cuenv doctor`: which cuDNN this environment loads, and the traps around it.

use std::time::Duration;

use super::Ctx;
use super::diagnostics::Report;
use crate::doctor::{self, Diagnosis, Inputs, Severity};
use crate::error::ExitCode;
use crate::toolkit::{self, ProcessEnv};

/// Runs the diagnosis on this process's environment and prints it. Exit 4 when a finding is
/// a problem (something loads the wrong cuDNN or cannot load), else 0.
pub fn run(ctx: &Ctx, majors: &[u64], timeout: u64, python: Option<&std::path::Path>, json: bool) -> Result<ExitCode, Report> {
    let env: Vec<_> = std::env::vars_os().collect();
    run_in(ctx, majors, timeout, python, json, &env)
}

/// `cuenv doctor --kernel NAME`: [`run`] on the environment Jupyter starts that kernel with
/// (the server's, this one, merged with the kernelspec's `env`; [`super::kernel::kernel_env`]),
/// looking at the kernel's interpreter's environment as `--python` does.
pub fn run_kernel(ctx: &Ctx, name: &str, majors: &[u64], timeout: u64, json: bool) -> Result<ExitCode, Report> {
    let super::kernel::KernelEnv { spec, env, interpreter } = super::kernel::kernel_env(ctx, name)?;
    if !json {
        let py = interpreter.as_deref().map(|p| p.display().to_string()).unwrap_or_else(|| "the server's Python".into());
        writeln!(ctx.out(), "Jupyter kernel {} ({}): the server's environment merged with its env block; interpreter {py}\n", spec.name, spec.path.display());
    }
    run_in(ctx, majors, timeout, interpreter.as_deref(), json, &env)
}

fn run_in(
    ctx: &Ctx,
    majors: &[u64],
    timeout: u64,
    python: Option<&std::path::Path>,
    json: bool,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) -> Result<ExitCode, Report> {
    let toolkits = toolkit::discover(&ProcessEnv);
    let exe = crate::generation::profile_check::current_exe();
    let asked = !majors.is_empty();
    let majors: Vec<u64> = if asked { majors.to_vec() } else { vec![9, 8] };
    let overrides = crate::check::gpufit::Overrides::from_process()?;
    // A bare name (`--python python3`) is looked up on PATH, as a shell would.
    let python = python.map(|p| {
        if p.components().count() == 1 {
            crate::sys::paths::on_path(&[p.to_string_lossy().as_ref()]).unwrap_or_else(|| p.to_path_buf())
        } else {
            p.to_path_buf()
        }
    });
    let inputs = Inputs {
        layout: &ctx.layout,
        exe: &exe,
        toolkits: &toolkits,
        majors: &majors,
        asked,
        timeout: Duration::from_secs(timeout),
        overrides,
        python: python.as_deref(),
    };
    let mut d = doctor::examine(&inputs, env);
    d.findings.extend(stale_kernels(ctx));
    d.findings.extend(incomplete_entry(ctx, d.active_profile.as_deref()));
    if json {
        ctx.print_json(&d);
    } else {
        write!(ctx.out(), "{}", render(&d));
    }
    Ok(if d.has_problems() { ExitCode::CheckFailed } else { ExitCode::Success })
}

/// The diagnosis in words.
fn render(d: &Diagnosis) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    // docs/facts.md §5: the loaders' search orders.
    let order = if cfg!(windows) {
        "the loader searches the application folder, System32, the Windows folder and the current folder before PATH"
    } else {
        "the loader searches the program's DT_RPATH, LD_LIBRARY_PATH, its DT_RUNPATH, the ld.so cache, then the default folders"
    };
    let _ = writeln!(s, "cuDNN loaded by name in this environment ({order}):");
    for l in &d.loaded {
        match (&l.dispatcher, &l.version) {
            (Some(p), v) => {
                let v = v.as_deref().unwrap_or("unknown version");
                let mut cuda = l.built_for_cuda.as_deref().map(|c| format!(", built for CUDA {c}")).unwrap_or_default();
                if let Some(from) = &l.version_from {
                    cuda.push_str(&format!(" (reported by {}, not a file of the dispatcher's folder)", from.display()));
                }
                let _ = writeln!(s, "  cuDNN {}: {v}{cuda}\n    {}\n    from {}", l.major, p.display(), l.origin.as_deref().unwrap_or("?"));
            }
            (None, _) => {
                let why = l.error.as_deref().unwrap_or("not found");
                let _ = writeln!(s, "  cuDNN {}: not loadable ({})", l.major, why.lines().next().unwrap_or(why));
            }
        }
    }
    let m = &d.machine;
    if m.driver_cuda.is_some() || !m.gpus.is_empty() {
        let set = if m.overridden.is_empty() { String::new() } else { format!(" (set by {})", m.overridden.join(", ")) };
        let cuda = m.driver_cuda.map(|v| format!("supports CUDA <= {v}")).unwrap_or_else(|| "CUDA version unknown".into());
        let release = m.driver_release.as_deref().map(|r| format!(", release {r}")).unwrap_or_default();
        let gpus: Vec<String> = m.gpus.iter().map(|g| format!("GPU {} {}: compute capability {}", g.index, g.name, g.compute_capability)).collect();
        let gpus = if gpus.is_empty() { String::new() } else { format!("; {}", gpus.join("; ")) };
        let _ = writeln!(s, "NVIDIA driver: {cuda}{release}{gpus}{set}");
    }
    if d.search_path.is_empty() {
        let _ = writeln!(s, "no folder on {} holds a cuDNN dispatcher", d.search_var);
    } else {
        let _ = writeln!(s, "folders on {} holding cuDNN, in search order (by position in {}):", d.search_var, d.search_var);
        for dir in &d.search_path {
            let items: Vec<String> = dir
                .dispatchers
                .iter()
                .map(|x| {
                    format!("{}{}{}", x.file, x.version.as_deref().map(|v| format!(" ({v})")).unwrap_or_default(), if x.first { "" } else { " [shadowed]" })
                })
                .chain(dir.sub_libraries.iter().map(|x| format!("{}{}", x.file, x.version.as_deref().map(|v| format!(" ({v})")).unwrap_or_default())))
                .collect();
            let tail = if dir.dispatchers.is_empty() { " [no dispatcher]" } else { "" };
            let _ = writeln!(s, "  {:>2}. {}: {}{tail}", dir.position, dir.path.display(), items.join(", "));
        }
    }
    for e in &d.environments {
        let sp: Vec<String> = e.site_packages.iter().map(|p| p.display().to_string()).collect();
        let sp = if sp.is_empty() { "no site-packages".to_string() } else { format!("site-packages {}", sp.join(", ")) };
        let _ = writeln!(s, "Python environment ({}): {}; {sp}", e.found_by, e.describe());
    }
    if !d.consumers.is_empty() {
        let _ = writeln!(s, "what each consumer in those environments would load, found its own way (docs/loader.md \"Consumers' finders\"):");
        for l in &d.consumers {
            let got = l.path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| if l.verified { "none".into() } else { "not verified".into() });
            let _ = writeln!(s, "  {} ({}): {}: {}\n    {}", l.consumer, l.env, l.library, got, l.how);
        }
    }
    let via = if d.follows_active { "<home>/active, through `cuenv env --setup`" } else { crate::home::settings::PROFILE_VAR };
    match (&d.active_profile, &d.active_check) {
        (Some(p), Some(c)) => {
            let _ = writeln!(s, "active profile ({via}): {p}: {}", c.status);
        }
        (Some(p), None) => {
            let _ = writeln!(s, "active profile ({via}): {p}");
        }
        (None, _) if d.follows_active => {
            let _ = writeln!(s, "this shell follows <home>/active (`cuenv env --setup`), and no profile is active");
        }
        (None, _) => {
            let _ = writeln!(s, "no cuenv profile is active in this shell (CUENV_PROFILE is unset)");
        }
    }
    if d.findings.is_empty() {
        let _ = writeln!(s, "\nno problems found");
        return s;
    }
    let _ = writeln!(s);
    for f in &d.findings {
        let _ = writeln!(s, "{f}");
    }
    let problems = d.findings.iter().filter(|f| f.severity == Severity::Problem).count();
    let warnings = d.findings.len() - problems;
    let _ = writeln!(s, "\n{problems} problem{}, {warnings} warning{}", if problems == 1 { "" } else { "s" }, if warnings == 1 { "" } else { "s" });
    s
}

/// `cuenv doctor --pid PID [--profile NAME]`: what the running process has loaded
/// ([`crate::doctor::pid`]). Exit 4 when it loaded another cuDNN than its profile gives now
/// (or a mixed set), else 0; 2 when no such process runs.
pub fn run_pid(ctx: &Ctx, pid: u32, profile: Option<&str>, json: bool) -> Result<ExitCode, Report> {
    let toolkits = toolkit::discover(&ProcessEnv);
    let d = crate::doctor::pid::examine_pid(&ctx.layout, &toolkits, pid, profile)?;
    if json {
        ctx.print_json(&d);
    } else {
        write!(ctx.out(), "{}", crate::doctor::pid::render(&d));
    }
    Ok(if d.has_problems() { ExitCode::CheckFailed } else { ExitCode::Success })
}

/// `cuenv doctor --for FILE [--all]`: the imports of one file as this environment's loader
/// would resolve them ([`crate::doctor::imports`]). Exit 4 when one does not resolve (or a
/// stub `libcuda` would serve one), else 0; 2 when the file cannot be read or is not for this
/// machine's loader.
pub fn run_for(ctx: &Ctx, file: &std::path::Path, all: bool, json: bool) -> Result<ExitCode, Report> {
    let env: Vec<_> = std::env::vars_os().collect();
    let f = crate::doctor::imports::walk(file, &env, all)?;
    if json {
        ctx.print_json(&f);
    } else {
        write!(ctx.out(), "{}", crate::doctor::imports::render(&f));
    }
    Ok(if f.has_problems() { ExitCode::CheckFailed } else { ExitCode::Success })
}

/// Jupyter kernelspecs bound to a profile of this home that its current generation no longer
/// has ([`crate::env::kernel`]): a notebook started with one gets a view that does not exist.
fn stale_kernels(ctx: &Ctx) -> Vec<doctor::Finding> {
    let home = crate::env::view::stable_home(&ctx.layout).to_string_lossy().into_owned();
    let known = crate::generation::current_manifest(&ctx.layout).map(|m| m.profile_names()).unwrap_or_default();
    crate::env::kernel::list(&crate::env::kernel::search_dirs())
        .into_iter()
        .filter(|k| k.home == home && !known.contains(&k.profile))
        .map(|k| doctor::Finding {
            rule: None,
            severity: doctor::Severity::Warning,
            message: format!(
                "the Jupyter kernel {} ({}) is bound to profile {}, which the current generation does not have",
                k.name,
                k.path.display(),
                k.profile
            ),
            hint: Some(format!(
                "reinstall it for an existing profile (`cuenv kernel install <profile> --name {}`), or delete {}",
                k.name,
                k.path.parent().unwrap_or(&k.path).display()
            )),
        })
        .collect()
}

/// The profile in effect in this shell uses a store entry added with `--allow-incomplete`
/// (docs/decisions.md 2: check and doctor warn).
fn incomplete_entry(ctx: &Ctx, profile: Option<&str>) -> Option<doctor::Finding> {
    let m = crate::generation::current_manifest(&ctx.layout)?;
    let view = m.profile(profile?).ok()?;
    let meta = crate::store::entry::EntryMeta::read(&view.entry_dir).ok()?;
    (!meta.incomplete.is_empty()).then(|| doctor::Finding {
        rule: Some(crate::error::Rule::IncompleteSet),
        severity: doctor::Severity::Warning,
        message: format!(
            "profile {} uses the store entry {}, added with --allow-incomplete: it lacks {}, which the loader takes from another folder (or cuDNN fails when it needs them)",
            view.name,
            meta.name,
            meta.incomplete.join(", ")
        ),
        hint: Some("add the complete release (`cuenv store add <archive or wheel>`) and apply again: a complete entry of the same version is preferred".into()),
    })
}
