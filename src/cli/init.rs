//! `cuenv init [FILE] [--env PATH] [--name NAME] [--dry-run]`: looks at a Python env (a venv,
//! uv or pixi env, a conda prefix; the shell's `VIRTUAL_ENV` / `CONDA_PREFIX` by default),
//! reads what its frameworks require ([`crate::requires::needs`]), proposes the profile that
//! satisfies all of them ([`crate::requires::propose`]) and writes it into the profile file
//! with `toml_edit`, keeping everything else the file holds (comments, order, other profiles).
//! Where the frameworks need two cuDNN or CUDA majors, one profile per major, not bound to the
//! env (a process loads one cuDNN: run each program with `cuenv run -p <profile>`).

use std::path::{Path, PathBuf};

use super::Ctx;
use super::diagnostics::Report;
use crate::error::ExitCode;
use crate::pyenv::PyEnv;
use crate::requires::propose::{CudnnFrom, Outcome, Proposal};

/// Options of `cuenv init`.
pub struct InitOpts {
    /// The profile file to write (created when missing).
    pub file: PathBuf,
    /// The env to look at (`None`: the shell's).
    pub env: Option<PathBuf>,
    /// The profile's name (`None`: from the env's folder).
    pub name: Option<String>,
    /// Print what would be written; write nothing.
    pub dry_run: bool,
}

/// Why `cuenv init` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// No env was named and the shell has none active.
    #[error("no Python environment to look at: --env was not given and neither VIRTUAL_ENV nor CONDA_PREFIX is set")]
    NoEnv,
    /// `--env` names no env.
    #[error("--env: {0}")]
    NotEnv(String, String),
    /// The env's frameworks state nothing on cuDNN or CUDA.
    #[error(
        "no framework in {0} states a requirement on cuDNN or CUDA (read: wheels' METADATA pins, torch/version.py, TensorFlow's build_info.py, onnxruntime's and CTranslate2's libraries, conda-meta records)"
    )]
    Nothing(String),
    /// Another profile of the file binds the env already (two profiles cannot bind one env).
    #[error("{file}'s profile `{name}` binds {env} already")]
    Bound { file: PathBuf, name: String, env: String },
    /// The file has a profile of that name already.
    #[error("{file} already has a profile `{name}`")]
    Exists { file: PathBuf, name: String },
    /// The file is not TOML.
    #[error("{0}: {1}")]
    NotToml(PathBuf, String),
    /// Reading or writing the file failed.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

impl crate::error::Diagnose for InitError {
    fn hint(&self) -> Option<String> {
        Some(match self {
            InitError::NoEnv => "name the env: `cuenv init --env .venv` (a venv, uv or pixi project, or a conda prefix), or activate it first".into(),
            InitError::NotEnv(_, hint) => hint.clone(),
            InitError::Nothing(_) => {
                "install the framework into the env first (`pip install torch`), or write the profile by hand (README, \"The profile file\")".into()
            }
            InitError::Exists { .. } => "choose another name with --name, or edit that profile by hand".into(),
            InitError::Bound { name, .. } => {
                format!("two profiles cannot bind one env: edit profile `{name}` (its cuda and cudnn), or remove it and run `cuenv init` again")
            }
            InitError::NotToml(..) => "fix the file (cuenv init keeps everything it holds, so it must parse), or name another with FILE".into(),
            InitError::Io(..) => "check the folder exists and is writable".into(),
        })
    }
    fn exit_code(&self) -> ExitCode {
        match self {
            InitError::Io(..) => ExitCode::Failure,
            _ => ExitCode::Invalid,
        }
    }
}

/// The env to look at: `--env` (resolved as `python-env` is: a venv, a conda or pixi prefix, or
/// a project folder holding `.venv` / `.pixi/envs/default`), else the shell's.
fn the_env(opts: &InitOpts) -> Result<PyEnv, InitError> {
    if let Some(path) = &opts.env {
        let here = std::env::current_dir().map_err(|e| InitError::Io(PathBuf::from("."), e))?;
        let prefix = crate::pyenv::resolve_binding(&path.to_string_lossy(), &here).map_err(|(m, _)| {
            InitError::NotEnv(
                m.replacen("python-env", "--env", 1),
                "name a venv, a uv or pixi project or a conda prefix (a relative --env is from the current folder); `python3 -m venv DIR` or `uv venv` makes one".into(),
            )
        })?;
        return crate::pyenv::at(&prefix, "--env").ok_or_else(|| InitError::NotEnv(format!("{} is no Python environment", prefix.display()), String::new()));
    }
    crate::pyenv::from_vars(&|k| std::env::var_os(k)).into_iter().next().ok_or(InitError::NoEnv)
}

/// A profile name from the env's folder (`proj/.venv` is `proj`), in the profile-name
/// alphabet (`[A-Za-z0-9_.-]`).
fn name_of(env: &PyEnv) -> String {
    let mut p = env.prefix.as_path();
    while let Some(n) = p.file_name().map(|n| n.to_string_lossy().into_owned()) {
        if !matches!(n.as_str(), ".venv" | "default" | "envs" | ".pixi" | "venv" | "env") {
            let s: String = n.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '-' }).collect();
            let s = s.trim_matches(['-', '.']).to_string();
            if !s.is_empty() {
                return s;
            }
        }
        p = match p.parent() {
            Some(parent) => parent,
            None => break,
        };
    }
    "env".into()
}

/// The path to write for `prefix` in a file in `dir`: relative when under `dir`.
fn env_value(prefix: &Path, dir: &Path) -> String {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    prefix.strip_prefix(&dir).ok().filter(|r| !r.as_os_str().is_empty()).unwrap_or(prefix).to_string_lossy().replace('\\', "/")
}

/// One profile table for `p`, its comment lines above it, and the lines `init` prints.
fn table(p: &Proposal, env: &PyEnv, binding: Option<(&str, String)>, toolkit_majors: &[u64]) -> (toml_edit::Table, Vec<String>) {
    let mut t = toml_edit::Table::new();
    let mut said = Vec::new();
    // The CUDA major the frameworks need; where none says, the newest installed, else 12.
    let cuda_major = p.cuda.as_ref().map(|(m, _)| *m).or_else(|| toolkit_majors.last().copied()).unwrap_or(12);
    let by = |w: &[String]| if w.is_empty() { "no framework states it".to_string() } else { w.join("; ") };
    if toolkit_majors.contains(&cuda_major) {
        t["cuda"] = toml_edit::value(cuda_major.to_string());
        said.push(format!("CUDA {cuda_major}: the newest CUDA {cuda_major} toolkit root cuenv finds (for {})", by(&p.cuda.clone().unwrap_or_default().1)));
    } else {
        let mut it = toml_edit::InlineTable::new();
        it.insert("version", cuda_major.to_string().into());
        it.insert("from", "pypi".into());
        t["cuda"] = toml_edit::value(it);
        said.push(format!(
            "CUDA {cuda_major}: the runtime wheels from PyPI, as no CUDA {cuda_major} toolkit root is installed (for {})",
            by(&p.cuda.clone().unwrap_or_default().1)
        ));
    }
    match &p.cudnn {
        Some((CudnnFrom::Store { id, version }, w)) => {
            t["cudnn"] = toml_edit::value(version.clone());
            said.push(format!("cuDNN {version}: the store entry {id} (for {})", by(w)));
        }
        Some((CudnnFrom::Pypi { version }, w)) => {
            let mut it = toml_edit::InlineTable::new();
            it.insert("version", version.clone().into());
            it.insert("from", "pypi".into());
            t["cudnn"] = toml_edit::value(it);
            said.push(format!("cuDNN {version}: from PyPI (nvidia-cudnn-cu{cuda_major}), as no store entry serves every framework (for {})", by(w)));
        }
        None => {
            // cuDNN 9, the current major (8 has no CUDA 13 build).
            t["cudnn"] = toml_edit::value("9");
            said.push("cuDNN 9: no framework states a cuDNN, so the current major".to_string());
        }
    }
    if let Some((key, value)) = binding {
        t[key] = toml_edit::value(value);
    }
    let mut prefix = format!("\n# Written by `cuenv init` from {}: for {}.\n", env.describe(), p.frameworks.join(", "));
    for s in &said {
        prefix.push_str(&format!("# {s}\n"));
    }
    t.decor_mut().set_prefix(prefix);
    (t, said)
}

/// `path` as a shell argument: quoted when it holds a space or a shell character.
fn quoted(path: &Path) -> String {
    let s = path.display().to_string();
    if s.chars().any(|c| c.is_whitespace() || "'\"$&;|<>()*?!#`".contains(c)) { format!("'{}'", s.replace('\'', "'\\''")) } else { s }
}

/// The profile of `file` (its text `text`) already bound to the env at `prefix`, if any.
fn bound_already(text: &str, file: &Path, prefix: &Path) -> Option<String> {
    let pf = crate::profile::parse(text, file).ok()?;
    let base = std::path::absolute(file).ok()?.parent()?.to_path_buf();
    pf.profiles.iter().find_map(|p| {
        let value = p.python_env.as_ref().or(p.conda_env.as_ref())?;
        let at = crate::pyenv::resolve_binding(&value.value, &base).ok()?;
        crate::sys::paths::same_path(&at, prefix).then(|| p.name.clone())
    })
}

/// `cuenv init`.
pub fn init(ctx: &Ctx, opts: InitOpts) -> Result<ExitCode, Report> {
    let env = the_env(&opts)?;
    let platform = crate::cudnn::platform::Platform::host().ok_or_else(|| InitError::Nothing(env.describe()))?;
    let needs = crate::requires::needs(&env, platform);
    let store: Vec<(String, String, u64)> = crate::store::Store::new(&ctx.layout)
        .entries()
        .into_iter()
        .filter(|(_, m)| m.platform == platform && m.incomplete.is_empty())
        .map(|(_, m)| (m.name, m.version.to_string(), m.cuda_major))
        .collect();
    let file = &opts.file;
    let text = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(InitError::Io(file.clone(), e).into()),
    };
    // The toolkit roots the file may use: its [toolkits] table where it has one (a file that
    // lists [toolkits] chooses only among them), else those `cuenv toolkits` finds.
    let listed = crate::profile::parse(&text, file).ok().filter(|pf| !pf.toolkits.is_empty());
    let roots: Vec<crate::toolkit::Toolkit> = match &listed {
        Some(pf) => crate::resolve::candidates::installed_toolkits(pf)?.into_iter().map(|(_, t)| t).collect(),
        None => crate::toolkit::discover(&crate::toolkit::ProcessEnv),
    };
    let mut toolkit_majors: Vec<u64> = roots.iter().filter_map(|t| t.version.as_ref().map(|v| v.major())).collect();
    toolkit_majors.sort();
    toolkit_majors.dedup();
    let outcome = crate::requires::propose::propose(&needs, &store);
    let (proposals, split) = match outcome {
        Outcome::Nothing => return Err(InitError::Nothing(env.describe()).into()),
        Outcome::One(p) => (vec![p], false),
        Outcome::Split(ps) => (ps, true),
    };
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| InitError::NotToml(file.clone(), e.to_string()))?;
    let dir = std::path::absolute(file).ok().and_then(|p| p.parent().map(Path::to_path_buf)).unwrap_or_default();
    let base = opts.name.clone().unwrap_or_else(|| name_of(&env));
    if !doc.contains_key("profiles") {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        doc.insert("profiles", toml_edit::Item::Table(t));
    }
    if let Some(other) = bound_already(&text, file, &env.prefix)
        && !split
        && other != base
    {
        return Err(InitError::Bound { file: file.clone(), name: other, env: env.describe() }.into());
    }
    let mut written = Vec::new();
    if split {
        writeln!(
            ctx.out(),
            "no single profile serves every framework in {}: a process loads one cuDNN; one profile per major, not bound to the env:",
            env.describe()
        );
    }
    for p in &proposals {
        let major = p.cudnn.as_ref().map(|(c, _)| match c {
            CudnnFrom::Store { version, .. } | CudnnFrom::Pypi { version } => version.split('.').next().unwrap_or_default().to_string(),
        });
        let name = if split { format!("{base}-cudnn{}", major.unwrap_or_default()) } else { base.clone() };
        let binding =
            (!split).then(|| if env.kind.is_conda() { ("conda-env", env_value(&env.prefix, &dir)) } else { ("python-env", env_value(&env.prefix, &dir)) });
        let profiles = doc["profiles"].as_table_mut().ok_or_else(|| InitError::NotToml(file.clone(), "`profiles` is not a table".into()))?;
        if profiles.contains_key(&name) {
            return Err(InitError::Exists { file: file.clone(), name }.into());
        }
        let (t, said) = table(p, &env, binding, &toolkit_majors);
        profiles.insert(&name, toml_edit::Item::Table(t));
        writeln!(ctx.out(), "profile {name} (for {}):", p.frameworks.join(", "));
        for s in said {
            writeln!(ctx.out(), "  {s}");
        }
        written.push(name);
    }
    let out = doc.to_string();
    // A new file starts with the first profile's comment, not a blank line.
    let out = if text.is_empty() { out.trim_start_matches('\n').to_string() } else { out };
    // What is written must be a profile file cuenv reads (the same parser apply uses).
    crate::profile::parse(&out, file)?;
    if opts.dry_run {
        writeln!(ctx.out(), "--dry-run: {} would read:\n{out}", file.display());
        return Ok(ExitCode::Success);
    }
    crate::sys::fsutil::write_atomic(file, out.as_bytes()).map_err(|e| InitError::Io(file.clone(), e))?;
    let names = written.join(", ");
    if split {
        writeln!(
            ctx.out(),
            "wrote {names} to {}; next: `cuenv apply {}`, then run each program with its profile (`cuenv run -p <profile> -- python app.py`)",
            file.display(),
            quoted(file)
        );
    } else {
        writeln!(ctx.out(), "wrote profile {names} to {}; next: `cuenv apply {}`", file.display(), quoted(file));
    }
    Ok(ExitCode::Success)
}
