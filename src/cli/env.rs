//! `cuenv env [PROFILE] --shell SHELL` / `cuenv env --setup`: prints an activation.

use super::Ctx;
use super::diagnostics::Report;
use crate::cudnn::platform::Platform;
use crate::error::{ExitCode, Hinted};
use crate::generation::rollback::NoGeneration;
use crate::shim::{self, Shell};
use crate::{env::view, generation, generation::status};

/// Prints the activation of `profile` (default: the active one), or with `setup` the one
/// through `<home>/active` ([`crate::generation::active::setup_activation`]).
pub fn env(ctx: &Ctx, profile: Option<&str>, shell: Shell, setup: bool) -> Result<ExitCode, Report> {
    let platform = Platform::host().ok_or_else(|| Hinted::unsupported_platform("cuDNN is not built for this platform", "run cuenv on one of those"))?;
    let act = if setup {
        crate::generation::active::setup_activation(&ctx.layout, platform)
    } else {
        let name = profile_or_active(ctx, profile)?;
        let cur = generation::current(&ctx.layout).ok_or(NoGeneration)?;
        generation::read(&ctx.layout, cur)?.profile(&name).map_err(|e| e.in_home(&ctx.layout))?;
        let mut act = generation::activation(&ctx.layout, &name, platform);
        // PATH gets a folder only where it exists (runtime roots from PyPI have no `bin`).
        act.path_prepend.retain(|p| p.is_dir());
        act
    };
    crate::sys::paths::require_unicode(crate::sys::paths::PathRole::Home, &view::stable_home(&ctx.layout))?;
    shim::validate(shell, &act).map_err(|e| Hinted::new(format!("cannot render the activation for this shell: {e}"), e.hint(), ExitCode::Failure))?;
    write!(ctx.out(), "{}", shim::render_activate(shell, &act));
    Ok(ExitCode::Success)
}

/// `profile`, else the active profile's name (`<home>/active`).
///
/// Errors: no profile given and none is active (exit 2), with how to make one active.
fn profile_or_active(ctx: &Ctx, profile: Option<&str>) -> Result<String, Report> {
    match profile {
        Some(p) => Ok(p.to_string()),
        None => status::active_profile(&ctx.layout).map(|(name, _)| name).ok_or_else(|| {
            Hinted::new("no profile given and none is active", "pass a profile name, or make one active with `cuenv use <profile>`", ExitCode::Invalid).into()
        }),
    }
}

/// `cuenv env [PROFILE] --build --shell S`: the build variables of a profile
/// ([`crate::env::build`]): through its stable paths in the link modes, its real folders in the
/// link-free mode (then, like an export to stdout, they must be printed again after a switch).
pub fn build(ctx: &Ctx, profile: Option<&str>, shell: Shell) -> Result<ExitCode, Report> {
    let name = profile_or_active(ctx, profile)?;
    let cur = generation::current(&ctx.layout).ok_or(NoGeneration)?;
    let m = generation::read(&ctx.layout, cur)?;
    let v = m.profile(&name).map_err(|e| e.in_home(&ctx.layout))?;
    let (entry, lib, cuda) = if m.link_mode.is_link_free() {
        let f = v.real_folders();
        (f.cudnn, f.cudnn_lib, f.cuda)
    } else {
        let view = view::stable_home(&ctx.layout).join("profiles").join(&name);
        (view.join("cudnn"), view.join("cudnn-lib"), view.join("cuda"))
    };
    let cuda_include = Some(cuda.join("include")).filter(|i| i.is_dir());
    let build_lib = generation::build_lib(&ctx.layout, m.link_mode, v);
    let windows = Platform::host().is_some_and(|p| p.is_windows());
    let have_scripts = build_lib.is_dir();
    let vars = crate::env::build::build_vars(&entry, &lib, Some(&build_lib).filter(|_| have_scripts).map(|b| b.as_path()), cuda_include.as_deref(), windows);
    if !windows && !have_scripts && !lib.join("libcudnn.so").exists() {
        writeln!(
            ctx.err(),
            "warning: {} lacks libcudnn.so and this generation has no linker scripts for it (built by an older cuenv): `-lcudnn` will fail until an apply builds a new generation",
            lib.display()
        );
    }
    for n in &vars.notes {
        writeln!(ctx.err(), "warning: {n}");
    }
    if m.link_mode.is_link_free() {
        ctx.note("note: these name real folders; print them again after use/rollback");
    }
    write!(ctx.out(), "{}", crate::env::build::render(shell, &vars));
    Ok(ExitCode::Success)
}

/// `cuenv env --hook SHELL`: prints the directory hook ([`shim::render_hook`]).
pub fn hook(ctx: &Ctx, shell: &str) -> Result<ExitCode, Report> {
    let exe = std::env::current_exe().map_err(|e| crate::error::IoError::new("find the path of", "cuenv", e))?;
    let home = view::stable_home(&ctx.layout);
    let text = shim::render_hook(shell, &exe, &home).expect("clap allows only shells with a hook");
    write!(ctx.out(), "{text}");
    Ok(ExitCode::Success)
}

/// `cuenv env --hook-apply --shell S`, run by the hook when the folder changed: prints the
/// HOOK-layer activation of the profile the nearest `.cuenv-profile` names, the deactivation
/// of the hook's profile when there is none (or it names no profile of the current
/// generation), or nothing when that profile is already in effect. Never fails: the shell
/// evaluates the output at every change of folder, so problems are one line on stderr.
pub fn hook_apply(ctx: &Ctx, shell: Shell) -> ExitCode {
    let current = std::env::var(crate::home::settings::HOOK_PROFILE_VAR).ok().filter(|p| !p.is_empty());
    let platform = Platform::host().unwrap_or(crate::cudnn::platform::Platform::LinuxX86_64);
    let layered = |name: &str| {
        let mut a = generation::activation(&ctx.layout, name, platform);
        a.layer = shim::Layer::Hook;
        a.path_prepend.retain(|p| p.is_dir());
        a
    };
    let wanted = match std::env::current_dir().map(|d| crate::profile::project::find(&d)) {
        Ok(Ok(Some(pin))) => {
            let known = generation::current_manifest(&ctx.layout).is_some_and(|m| m.profile(&pin.profile).is_ok());
            if known {
                Some(pin.profile)
            } else {
                writeln!(ctx.err(), "cuenv: {} names profile {}, which the current generation does not have", pin.file.display(), pin.profile);
                None
            }
        }
        Ok(Err(e)) => {
            writeln!(ctx.err(), "cuenv: {e}");
            None
        }
        _ => None,
    };
    let text = match (&wanted, &current) {
        (Some(w), Some(c)) if w == c => return ExitCode::Success,
        (Some(w), _) => {
            let a = layered(w);
            if shim::validate(shell, &a).is_err() {
                return ExitCode::Success;
            }
            shim::render_activate(shell, &a)
        }
        (None, Some(c)) => {
            let a = layered(c);
            if shim::validate(shell, &a).is_err() {
                return ExitCode::Success;
            }
            shim::render_deactivate(shell, &a)
        }
        (None, None) => return ExitCode::Success,
    };
    write!(ctx.out(), "{text}");
    ExitCode::Success
}

/// `cuenv export [PROFILE | --all] --format F [--out DIR]` ([`crate::env::export`]).
pub fn export(ctx: &Ctx, profile: Option<&str>, format: &str, all: bool, out: Option<&std::path::Path>) -> Result<ExitCode, Report> {
    use crate::env::export::{self, Format};
    let platform = Platform::host().ok_or_else(|| Hinted::unsupported_platform("cuDNN is not built for this platform", "run cuenv on one of those"))?;
    let format = Format::from_name(format).expect("clap allows only known formats");
    let cur = generation::current(&ctx.layout).ok_or(NoGeneration)?;
    let m = generation::read(&ctx.layout, cur)?;
    let names: Vec<String> = if all {
        m.profile_names()
    } else {
        let name = match profile {
            Some(p) => p.to_string(),
            None => status::active_profile(&ctx.layout).map(|(n, _)| n).ok_or_else(|| {
                Hinted::new("no profile given and none is active", "pass a profile name, or make one active with `cuenv use <profile>`", ExitCode::Invalid)
            })?,
        };
        m.profile(&name).map_err(|e| e.in_home(&ctx.layout))?;
        vec![name]
    };
    let sep = if platform.is_windows() { ';' } else { ':' };
    if out.is_none() && m.link_mode.is_link_free() {
        ctx.note("note: this export names real folders; re-run it after use/rollback, or use --out DIR so cuenv keeps it current");
    }
    // Files written with --out follow the profile across switches (`crate::env::follow`): recorded
    // under the writer lock, so that no switch reads the record half-way.
    if let Some(dir) = out {
        for name in &names {
            crate::env::follow::followable(&dir.join(format.file_name(name)))?;
        }
    }
    let writer = match out {
        Some(_) => Some(super::writer_lock(ctx)?),
        None => None,
    };
    for name in &names {
        let text = export::render(&generation::exported(&ctx.layout, name, platform), format, sep).map_err(|e| {
            Hinted::new(
                format!("cannot write profile {name} in this format: {e}"),
                "report this to cuenv's maintainers, with the profile's lab.toml",
                ExitCode::Failure,
            )
        })?;
        match out {
            Some(dir) => {
                let path = export::write(dir, &format.file_name(name), &text)?;
                let fname = Format::ALL.iter().find(|(_, f)| *f == format).map(|(n, _)| *n).unwrap_or_default();
                follow(ctx, &path, name, fname);
                writeln!(ctx.out(), "wrote {}", path.display());
            }
            None => write!(ctx.out(), "{text}"),
        }
    }
    drop(writer);
    Ok(ExitCode::Success)
}

/// Records a file written for `profile` so that switches keep it current ([`crate::env::follow`]);
/// a record that cannot be written is a warning (the file itself is written).
fn follow(ctx: &Ctx, path: &std::path::Path, profile: &str, format: &str) {
    let f = crate::env::follow::Followed { path: path.to_path_buf(), profile: profile.into(), format: format.into() };
    if let Err(e) = crate::env::follow::remember(&ctx.layout, f) {
        writeln!(ctx.err(), "warning: cannot record {} in {}: {e}; a switch will not keep it current", path.display(), ctx.layout.follow_record().display());
    }
}

/// `cuenv kernel install|list` ([`crate::env::kernel`]).
pub fn kernel(ctx: &Ctx, cmd: super::args::KernelCommand) -> Result<ExitCode, Report> {
    use super::args::KernelCommand;
    let platform = Platform::host().ok_or_else(|| Hinted::unsupported_platform("cuDNN is not built for this platform", "run cuenv on one of those"))?;
    match cmd {
        KernelCommand::Install { profile, python, name, user: _, prefix } => {
            let cur = generation::current(&ctx.layout).ok_or(NoGeneration)?;
            let m = generation::read(&ctx.layout, cur)?;
            let view = m.profile(&profile).map_err(|e| e.in_home(&ctx.layout))?;
            let python = match python {
                // A bare name (`--python python3`) is looked up on PATH, as a shell would.
                Some(p) if p.components().count() == 1 => crate::sys::paths::on_path(&[p.as_os_str().to_string_lossy().as_ref()]).unwrap_or(p),
                Some(p) => std::path::absolute(&p).unwrap_or(p),
                None => default_python(view.conda_env.as_deref().or(view.python_env.as_deref())).ok_or_else(|| {
                    Hinted::new(
                        format!("no Python found for profile {profile}'s kernel"),
                        "pass --python EXE (the interpreter that has ipykernel)",
                        ExitCode::Invalid,
                    )
                })?,
            };
            // A path to nothing is a typo, not an interpreter to install later: refuse it.
            if !python.exists() {
                return Err(Hinted::new(
                    format!("the Python interpreter {} does not exist", python.display()),
                    "pass --python EXE with the interpreter that has ipykernel (e.g. the conda env's bin/python)",
                    ExitCode::Invalid,
                )
                .into());
            }
            let name = name.unwrap_or_else(|| format!("cuenv-{profile}"));
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)) {
                return Err(Hinted::new(
                    format!("kernel name {name:?} is not valid"),
                    "use letters, digits, '_', '.', '-' (jupyter_client's rule)",
                    ExitCode::Invalid,
                )
                .into());
            }
            let dir = match prefix {
                Some(p) => std::path::absolute(&p).unwrap_or(p).join("share").join("jupyter").join("kernels"),
                None => crate::env::kernel::user_dir()
                    .ok_or_else(|| Hinted::new("cannot find the Jupyter data folder", "set JUPYTER_DATA_DIR or pass --prefix DIR", ExitCode::Failure))?,
            };
            let e = generation::exported(&ctx.layout, &profile, platform);
            let sep = if platform.is_windows() { ';' } else { ':' };
            let spec = crate::env::kernel::spec(&e, &python, &format!("Python (cuenv: {profile})"), &view::stable_home(&ctx.layout), sep);
            let text = format!("{spec:#}\n");
            crate::env::follow::followable(&dir.join(&name).join("kernel.json"))?;
            let writer = super::writer_lock(ctx)?;
            let path = crate::env::export::write(&dir.join(&name), "kernel.json", &text)?;
            follow(ctx, &path, &profile, crate::env::follow::KERNEL);
            drop(writer);
            writeln!(ctx.out(), "installed kernel {name} for profile {profile}: {}", path.display());
            // The spec is written either way (ipykernel may be installed later); say now what
            // would make the kernel fail to start rather than leave it to the notebook server.
            match crate::env::kernel::has_ipykernel(&python) {
                Ok(true) => {}
                Ok(false) => {
                    writeln!(
                        ctx.err(),
                        "warning: {} has no ipykernel: the kernel will not start until you install it (`{} -m pip install ipykernel`) or reinstall with --python EXE",
                        python.display(),
                        python.display()
                    );
                }
                Err(why) => {
                    writeln!(ctx.err(), "warning: {why}: the kernel will not start with it; reinstall with --python EXE (an interpreter that has ipykernel)");
                }
            }
        }
        KernelCommand::List { python, json } => return super::kernel::list(ctx, python.as_deref(), json),
    }
    Ok(ExitCode::Success)
}

/// The Python a profile's kernel starts: its env's (`conda-env` or `python-env`), else
/// `python3` (then `python`) on PATH.
fn default_python(env: Option<&std::path::Path>) -> Option<std::path::PathBuf> {
    if let Some(env) = env {
        let p = crate::pyenv::at(env, "the profile's env").and_then(|e| e.python).or_else(|| crate::pyenv::python_in(env, crate::pyenv::Kind::Conda));
        if let Some(p) = p {
            return Some(p);
        }
    }
    crate::sys::paths::on_path(if cfg!(windows) { &["python.exe", "python3.exe"] } else { &["python3", "python"] })
}
