//! `cuenv kernel list` and the kernel side of `cuenv doctor --kernel NAME`: every kernelspec
//! Jupyter would find ([`crate::env::kernel::find_all`]), bound to a cuenv profile or not,
//! with the cuDNN and CUDA folders its process gets from the server's environment merged
//! with its `env` block ([`crate::env::kernel::merged_env`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::Ctx;
use super::diagnostics::Report;
use crate::env::jupyter::Server;
use crate::env::kernel::{self, Gets, Spec};
use crate::error::{ExitCode, Hinted};

/// One listed kernelspec with what its process would get.
struct Row {
    spec: Spec,
    gets: Gets,
    python: Option<PathBuf>,
    replaced: bool,
    /// For a cuenv kernelspec: `None` when its profile is a profile of this home's current
    /// generation, else why not.
    bound: Option<&'static str>,
}

fn rows(ctx: &Ctx, server: &Server, env: &[(OsString, OsString)]) -> Vec<Row> {
    let dirs = crate::env::jupyter::kernel_dirs(&|k: &str| var_in(env, k), server);
    let known = crate::generation::current_manifest(&ctx.layout).map(|m| m.profile_names()).unwrap_or_default();
    let home = crate::env::view::stable_home(&ctx.layout).to_string_lossy().into_owned();
    let mut specs = kernel::find_all(&dirs);
    if !specs.iter().any(|s| s.name == kernel::NATIVE)
        && let Some(native) = server.python.as_deref().and_then(|py| kernel::native(py, env))
    {
        specs.push(native);
    }
    specs
        .into_iter()
        .map(|spec| {
            let gets = kernel::what_it_gets(&kernel::merged_env(env, &spec));
            let (python, replaced) = kernel::interpreter(&spec, server.python.as_deref());
            let bound = match (&spec.profile, &spec.home) {
                (Some(_), Some(h)) if *h != home => Some("another cuenv home"),
                (Some(p), _) if !known.contains(p) => Some("no such profile now: reinstall or remove it"),
                _ => None,
            };
            Row { spec, gets, python, replaced, bound }
        })
        .collect()
}

fn var_in(env: &[(OsString, OsString)], k: &str) -> Option<OsString> {
    env.iter().find(|(n, _)| if cfg!(windows) { n.to_string_lossy().eq_ignore_ascii_case(k) } else { n == k }).map(|(_, v)| v.clone())
}

/// `cuenv kernel list [--json] [--python EXE]`.
pub fn list(ctx: &Ctx, python: Option<&Path>, json: bool) -> Result<ExitCode, Report> {
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let server = Server::find(python, &|k: &str| var_in(&env, k));
    let rows = rows(ctx, &server, &env);
    if json {
        let v: Vec<serde_json::Value> = rows.iter().map(row_json).collect();
        ctx.print_json_sorted(&serde_json::Value::Array(v));
        return Ok(ExitCode::Success);
    }
    let out = ctx.out();
    if rows.is_empty() {
        writeln!(out, "no kernelspec in Jupyter's folders (`cuenv kernel install PROFILE` writes one)");
        return Ok(ExitCode::Success);
    }
    for r in &rows {
        write!(out, "{}", render(r));
    }
    let unbound = rows.iter().filter(|r| r.spec.hidden_by.is_none() && r.spec.profile.is_none()).count();
    if unbound > 0 {
        writeln!(
            out,
            "{unbound} kernel{} not bound to a cuenv profile: Jupyter starts {} with the server's environment and its own env block only; `cuenv kernel install PROFILE --python EXE` writes one that is",
            if unbound == 1 { " is" } else { "s are" },
            if unbound == 1 { "it" } else { "them" }
        );
    }
    Ok(ExitCode::Success)
}

fn render(r: &Row) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let s_ = &r.spec;
    let bound = match (&s_.profile, r.bound) {
        (Some(p), None) => format!("cuenv profile {p}"),
        (Some(p), Some(why)) => format!("cuenv profile {p} ({why})"),
        (None, _) => "not bound to a cuenv profile".into(),
    };
    let _ = writeln!(s, "{}  {bound}  {}", s_.name, s_.path.display());
    if let Some(by) = &s_.hidden_by {
        let _ = writeln!(s, "  hidden by {} (the same name in a folder Jupyter reads first)", by.display());
        return s;
    }
    if let Some(e) = &s_.error {
        let _ = writeln!(s, "  cannot be read as a kernelspec: {e}");
        return s;
    }
    let py = match (&r.python, r.replaced) {
        (Some(p), true) => format!("{} (argv[0] {:?} is the server's Python)", p.display(), s_.argv[0]),
        (None, true) => format!("the server's Python (argv[0] {:?}; pass --python EXE to name it)", s_.argv[0]),
        (Some(p), false) => p.display().to_string(),
        (None, false) => "?".into(),
    };
    let _ = writeln!(s, "  interpreter: {py}");
    let g = &r.gets;
    match &g.cudnn {
        Some((d, f)) => {
            let _ = writeln!(s, "  cuDNN: {} ({f}, first on {})", d.display(), g.search_var);
        }
        None => {
            let _ = writeln!(
                s,
                "  cuDNN: no folder on {} holds a cuDNN dispatcher (the loader falls back to what the interpreter and its libraries carry)",
                g.search_var
            );
        }
    }
    match &g.cuda_runtime {
        Some((d, f)) => {
            let _ = writeln!(s, "  CUDA runtime: {} ({f})", d.display());
        }
        None => {
            let _ = writeln!(s, "  CUDA runtime: none on {}", g.search_var);
        }
    }
    if g.vars.is_empty() {
        let _ = writeln!(s, "  CUDA_PATH, CUDA_HOME, CUDNN_PATH, CUDNN_HOME: unset");
    } else {
        for (k, v) in &g.vars {
            let _ = writeln!(s, "  {k}={v}");
        }
    }
    s
}

fn row_json(r: &Row) -> serde_json::Value {
    let dir = |x: &Option<(PathBuf, String)>| x.as_ref().map(|(d, f)| serde_json::json!({"folder": d.to_string_lossy(), "file": f}));
    serde_json::json!({
        "name": r.spec.name,
        "path": r.spec.path.to_string_lossy(),
        "argv": r.spec.argv,
        "profile": r.spec.profile,
        "home": r.spec.home,
        "profile_exists": r.spec.profile.is_some() && r.bound.is_none(),
        "hidden_by": r.spec.hidden_by.as_ref().map(|p| p.to_string_lossy()),
        "error": r.spec.error,
        "interpreter": r.python.as_ref().map(|p| p.to_string_lossy()),
        "interpreter_is_servers": r.replaced,
        "search_var": r.gets.search_var,
        "cudnn": dir(&r.gets.cudnn),
        "cuda_runtime": dir(&r.gets.cuda_runtime),
        "vars": r.gets.vars.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(v.clone()))).collect::<serde_json::Map<_, _>>(),
    })
}

/// A kernel as Jupyter would start it ([`kernel_env`]).
pub struct KernelEnv {
    /// Its kernelspec.
    pub spec: Spec,
    /// Its whole environment ([`kernel::merged_env`]).
    pub env: Vec<(OsString, OsString)>,
    /// Its interpreter ([`kernel::interpreter`]); `None` when it is the server's Python and
    /// that is not known.
    pub interpreter: Option<PathBuf>,
}

/// The kernel `name` (compared lowercased, as jupyter_client does) as Jupyter would start it
/// from this environment: its merged environment and its interpreter. Exit 2 when no
/// kernelspec of that name is found (the hint lists the names there are).
pub fn kernel_env(ctx: &Ctx, name: &str) -> Result<KernelEnv, Report> {
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let server = Server::find(None, &|k: &str| var_in(&env, k));
    let rows = rows(ctx, &server, &env);
    let want = name.to_lowercase();
    let Some(r) = rows.into_iter().filter(|r| r.spec.hidden_by.is_none()).find(|r| r.spec.name == want) else {
        let dirs = crate::env::jupyter::kernel_dirs(&|k: &str| var_in(&env, k), &server);
        let names: Vec<String> = kernel::find_all(&dirs).into_iter().filter(|s| s.hidden_by.is_none()).map(|s| s.name).collect();
        let mut names = names;
        names.sort();
        let hint =
            if names.is_empty() { "no kernelspec is installed; see `cuenv kernel list`".to_string() } else { format!("kernels found: {}", names.join(", ")) };
        return Err(Hinted::new(format!("no Jupyter kernel named {name:?} in Jupyter's folders"), hint, ExitCode::Invalid).into());
    };
    if let Some(e) = &r.spec.error {
        return Err(Hinted::new(format!("the kernelspec {} cannot be read: {e}", r.spec.path.display()), "fix or reinstall it", ExitCode::Invalid).into());
    }
    let env = kernel::merged_env(&env, &r.spec);
    Ok(KernelEnv { spec: r.spec, env, interpreter: r.python })
}
