//! Python environments: the one place that finds them (decisions.md 9), for doctor, check,
//! kernels, `run` and the `python-env` binding of a profile.
//!
//! An environment is a prefix with the `site-packages` folders its interpreter imports from,
//! which is where frameworks keep the CUDA and cuDNN copies they load (torch's `torch/lib`,
//! NVIDIA's `nvidia/*` wheels, a JAX plugin's RUNPATH into them). Kinds, told from the files:
//! - **conda env**: a prefix holding `conda-meta/` (`CONDA_PREFIX` when activated);
//! - **pixi env**: a conda prefix under a project's `.pixi/envs/<name>` (pixi's own layout,
//!   <https://pixi.sh/latest/workspace/environment/>), `PIXI_PROJECT_ROOT` when in `pixi shell`;
//! - **venv**: a prefix holding `pyvenv.cfg` (PEP 405; `VIRTUAL_ENV` when activated, and `uv
//!   run` sets it too); a **uv venv** is one whose `pyvenv.cfg` has uv's `uv = <version>` key;
//! - **Python**: the system, user or container interpreter named with `--python PATH`.
//!
//! Site-packages folders: read from the layout where the files tell (`lib/python3.X/site-packages`,
//! Windows `Lib/site-packages`), and from the interpreter itself when one is named: it is asked
//! with `-S -I` ([`ask`]), so that no `site` start-up hook, `.pth` file (cuenv's own included),
//! `PYTHON*` variable or framework runs; `site.getsitepackages()` then names the folders the
//! interpreter's own `site` module would add (Debian's `dist-packages` included), and
//! `site.getusersitepackages()` the user folder, which counts only where Python enables it (not
//! in a venv without `include-system-site-packages`; CPython's `Lib/site.py`, `venv()` and
//! `check_enableusersite()`).
//!
//! Pure except for reading folders and, in [`ask`], running the named interpreter.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

/// What kind of environment a prefix is (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A prefix holding `conda-meta/`.
    Conda,
    /// A conda prefix under `.pixi/envs/`.
    Pixi,
    /// A prefix holding `pyvenv.cfg`.
    Venv,
    /// A venv whose `pyvenv.cfg` uv wrote.
    Uv,
    /// An interpreter's own prefix (system, user or container Python).
    Python,
}

impl Kind {
    /// The kind in words: "conda env", "pixi env", "venv", "uv venv", "Python".
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Conda => "conda env",
            Kind::Pixi => "pixi env",
            Kind::Venv => "venv",
            Kind::Uv => "uv venv",
            Kind::Python => "Python",
        }
    }

    /// Whether the prefix is a conda prefix (conda or pixi): it has activation hooks
    /// (`etc/conda/activate.d`) and its own library folder (`lib`, Windows `Library\bin`).
    pub fn is_conda(self) -> bool {
        matches!(self, Kind::Conda | Kind::Pixi)
    }
}

/// One Python environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PyEnv {
    /// What it is.
    pub kind: Kind,
    /// Its prefix (`sys.prefix`).
    pub prefix: PathBuf,
    /// Its `site-packages` folders that exist, in the interpreter's import order.
    pub site_packages: Vec<PathBuf>,
    /// Its interpreter, when one was found or named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub python: Option<PathBuf>,
    /// How it was found: `CONDA_PREFIX`, `VIRTUAL_ENV`, `--python <path>`, `python-env`...
    pub found_by: String,
}

impl PyEnv {
    /// The environment in words, e.g. "the venv /work/.venv", "the Python /usr/bin/python3".
    pub fn describe(&self) -> String {
        match (self.kind, &self.python) {
            (Kind::Python, Some(p)) => format!("the Python {}", p.display()),
            _ => format!("the {} {}", self.kind.noun(), self.prefix.display()),
        }
    }

    /// A conda prefix's own library folder (conda's `cudnn` package puts cuDNN there):
    /// `Library\bin` on Windows, `lib` elsewhere; `None` for other kinds.
    pub fn conda_lib(&self) -> Option<PathBuf> {
        self.kind.is_conda().then(|| self.prefix.join(if cfg!(windows) { "Library/bin" } else { "lib" }))
    }
}

/// The environment at `prefix`, told from its files (see the module documentation); `found_by`
/// says how it was found. `None` when the folder is no Python environment (no `conda-meta/`,
/// no `pyvenv.cfg`).
pub fn at(prefix: &Path, found_by: &str) -> Option<PyEnv> {
    let kind = kind_of(prefix)?;
    let mut site_packages = layout_site_packages(prefix);
    // A venv that sees its base interpreter's site-packages (`include-system-site-packages =
    // true`): those come after its own, as `site.venv()` orders them. Only the base
    // interpreter can say where they are: ask it.
    if matches!(kind, Kind::Venv | Kind::Uv)
        && venv_config(prefix, "include-system-site-packages").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        && let Some(base) = base_python(prefix)
        && let Ok(b) = ask(&base, Duration::from_secs(10))
    {
        for sp in b.site_packages {
            if !site_packages.iter().any(|s| crate::sys::paths::same_path(s, &sp)) {
                site_packages.push(sp);
            }
        }
    }
    let python = python_in(prefix, kind);
    Some(PyEnv { kind, prefix: prefix.to_path_buf(), site_packages, python, found_by: found_by.to_string() })
}

/// The kind of environment `prefix` is, from its files (`pyvenv.cfg`: a venv, uv's when it has
/// a `uv` key; `conda-meta/`: a conda env, pixi's under `.pixi/envs/`); `None` when it is none.
pub fn kind_of(prefix: &Path) -> Option<Kind> {
    if prefix.join("pyvenv.cfg").is_file() {
        return Some(if venv_config(prefix, "uv").is_some() { Kind::Uv } else { Kind::Venv });
    }
    if prefix.join("conda-meta").is_dir() {
        let names: Vec<String> = prefix.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
        let pixi = names.windows(2).any(|w| w[0] == ".pixi" && w[1] == "envs");
        return Some(if pixi { Kind::Pixi } else { Kind::Conda });
    }
    None
}

/// The value of `key` in the venv's `pyvenv.cfg` (`key = value` lines, PEP 405), trimmed.
pub fn venv_config(prefix: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(prefix.join("pyvenv.cfg")).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        k.trim().eq_ignore_ascii_case(key).then(|| v.trim().to_string())
    })
}

/// The base interpreter of the venv at `prefix`: `pyvenv.cfg`'s `home` folder holding
/// `python3` / `python` (`python.exe` on Windows).
fn base_python(prefix: &Path) -> Option<PathBuf> {
    let home = PathBuf::from(venv_config(prefix, "home")?);
    let names: &[&str] = if cfg!(windows) { &["python.exe"] } else { &["python3", "python"] };
    names.iter().map(|n| home.join(n)).find(|p| p.is_file())
}

/// The interpreter inside the environment at `prefix`, if its file exists: a venv's
/// `bin/python` (`Scripts\python.exe`), a conda prefix's `bin/python` (`python.exe`).
pub fn python_in(prefix: &Path, kind: Kind) -> Option<PathBuf> {
    let p = match (cfg!(windows), kind) {
        (true, Kind::Venv | Kind::Uv) => prefix.join("Scripts").join("python.exe"),
        (true, _) => prefix.join("python.exe"),
        (false, _) => prefix.join("bin").join("python"),
    };
    p.is_file().then_some(p)
}

/// The `site-packages` folders of the prefix that exist, by layout: `Lib/site-packages`
/// (Windows) and `lib/python*/site-packages`, `lib64/python*/site-packages`, sorted.
pub fn layout_site_packages(prefix: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = vec![prefix.join("Lib").join("site-packages")];
    for lib in ["lib", "lib64"] {
        if let Ok(rd) = std::fs::read_dir(prefix.join(lib)) {
            let mut pythons: Vec<PathBuf> =
                rd.flatten().filter(|e| e.file_name().to_string_lossy().starts_with("python")).map(|e| e.path().join("site-packages")).collect();
            pythons.sort();
            out.extend(pythons);
        }
    }
    out.retain(|p| p.is_dir());
    // `lib64` is often a link to `lib`: one folder once.
    let mut seen: Vec<PathBuf> = Vec::new();
    out.retain(|p| {
        let c = crate::sys::paths::canonical_shown(p).unwrap_or_else(|_| p.clone());
        if seen.contains(&c) {
            false
        } else {
            seen.push(c);
            true
        }
    });
    out
}

/// The environments a shell's variables name (`get` reads the environment): `VIRTUAL_ENV`
/// first (its interpreter is the one on `PATH`, ahead of a conda env's), then `CONDA_PREFIX`;
/// each once, and only where the folder is an environment.
pub fn from_vars(get: &dyn Fn(&str) -> Option<OsString>) -> Vec<PyEnv> {
    let mut out: Vec<PyEnv> = Vec::new();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        let Some(v) = get(var).filter(|v| !v.is_empty()) else { continue };
        let prefix = PathBuf::from(v);
        if out.iter().any(|e| crate::sys::paths::same_path(&e.prefix, &prefix)) {
            continue;
        }
        if let Some(e) = at(&prefix, var) {
            out.push(e);
        } else if var == "CONDA_PREFIX" {
            // A conda prefix whose `conda-meta/` is gone still has its site-packages.
            out.push(PyEnv {
                kind: Kind::Conda,
                prefix: prefix.clone(),
                site_packages: layout_site_packages(&prefix),
                python: python_in(&prefix, Kind::Conda),
                found_by: var.into(),
            });
        }
    }
    out
}

/// Why [`ask`] got no answer from an interpreter.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// The interpreter did not start.
    #[error("cannot run {path}: {error}")]
    Spawn {
        /// The interpreter.
        path: PathBuf,
        /// The system's error.
        error: std::io::Error,
    },
    /// It ran, but did not answer in time, failed, or printed no answer.
    #[error("{path} -S -I gave no answer: {detail}")]
    NoAnswer {
        /// The interpreter.
        path: PathBuf,
        /// What went wrong (exit status and the end of its stderr, or the timeout).
        detail: String,
    },
}

/// What the interpreter prints for [`ask`]: its prefix, its `site` folders, and the user folder
/// where it counts. With `-S`, `site.venv()` never runs, so the script does what it does
/// (CPython's `Lib/site.py`): a `pyvenv.cfg` beside the executable or one folder up makes that
/// folder the prefix, set as `sys.prefix` as `site.venv()` sets it (Debian's patched
/// `getsitepackages()` names a venv's `site-packages` only then);
/// `include-system-site-packages` (default true when the key is absent)
/// adds the base prefix's folders after the venv's and keeps the user folder; `-I` turns the
/// user folder off here, so whether it counts is decided as `site.venv()` does.
const ASK_SCRIPT: &str = r#"import sys, site, json, os
exe_dir = os.path.dirname(os.path.abspath(sys.executable))
venv_prefix = os.path.dirname(exe_dir)
confs = [c for c in (os.path.join(exe_dir, "pyvenv.cfg"), os.path.join(venv_prefix, "pyvenv.cfg")) if os.path.isfile(c)]
prefix, venv, system = sys.prefix, False, True
if confs:
    venv, prefix = True, venv_prefix
    # What site.venv() does; Debian's getsitepackages() names a venv's site-packages only
    # when sys.prefix differs from sys.base_prefix.
    sys.prefix = sys.exec_prefix = prefix
    with open(confs[0], encoding="utf-8", errors="replace") as f:
        for line in f:
            k, _, v = line.partition("=")
            if k.strip().lower() == "include-system-site-packages":
                system = v.strip().lower() == "true"
sp = list(site.getsitepackages([prefix]))
if venv and system:
    sp += [p for p in site.getsitepackages([sys.base_prefix, sys.base_exec_prefix]) if p not in sp]
user = site.getusersitepackages() if (not venv or system) else None
print(json.dumps({"prefix": prefix, "base_prefix": sys.base_prefix, "executable": sys.executable, "site": sp, "user": user}))
"#;

#[derive(serde::Deserialize)]
struct Answer {
    prefix: PathBuf,
    base_prefix: PathBuf,
    executable: PathBuf,
    site: Vec<PathBuf>,
    user: Option<PathBuf>,
}

/// Asks the interpreter `python` for its environment, running `python -S -I -c <script>`
/// (no `site` hook, `.pth` file, `PYTHON*` variable or framework runs; decisions.md 9), within
/// `timeout`. The kind is told from its prefix's files (a venv, a conda or pixi env), else
/// [`Kind::Python`]; its `site-packages` are those its `site` module names that exist (the
/// user folder last, where Python enables it).
///
/// Errors: it does not start ([`AskError::Spawn`]), or gives no answer in time ([`AskError::NoAnswer`]).
pub fn ask(python: &Path, timeout: Duration) -> Result<PyEnv, AskError> {
    use std::io::Read;
    if python.is_dir() {
        let inside = python_in(python, kind_of(python).unwrap_or(Kind::Venv)).map(|p| format!(" (its interpreter: {})", p.display())).unwrap_or_default();
        return Err(AskError::NoAnswer { path: python.to_path_buf(), detail: format!("it is a folder, not an interpreter{inside}") });
    }
    let mut child = std::process::Command::new(python)
        .args(["-S", "-I", "-c", ASK_SCRIPT])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|error| AskError::Spawn { path: python.to_path_buf(), error })?;
    let mut pipes = (child.stdout.take(), child.stderr.take());
    let reader = std::thread::spawn(move || {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        if let Some(o) = pipes.0.as_mut() {
            let _ = o.take(1 << 20).read_to_end(&mut out);
        }
        if let Some(e) = pipes.1.as_mut() {
            let _ = e.take(1 << 16).read_to_end(&mut err);
        }
        (out, err)
    });
    let no = |detail: String| AskError::NoAnswer { path: python.to_path_buf(), detail };
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(no(format!("it did not answer within {} s", timeout.as_secs())));
            }
        }
    };
    let (out, err) = reader.join().unwrap_or_default();
    if !status.success() {
        let err = String::from_utf8_lossy(&err);
        return Err(no(format!("{status}: {}", err.trim().lines().last().unwrap_or(""))));
    }
    let a: Answer = serde_json::from_slice(&out).map_err(|e| no(format!("its answer is not what cuenv asked for ({e})")))?;
    let mut site_packages: Vec<PathBuf> = a.site.into_iter().chain(a.user).filter(|p| p.is_dir()).collect();
    site_packages.dedup();
    let kind = kind_of(&a.prefix).unwrap_or(Kind::Python);
    let kind = if kind == Kind::Python && a.prefix != a.base_prefix { Kind::Venv } else { kind };
    let exe = if a.executable.as_os_str().is_empty() { python.to_path_buf() } else { a.executable };
    Ok(PyEnv { kind, prefix: a.prefix, site_packages, python: Some(exe), found_by: format!("--python {}", python.display()) })
}

/// The prefix a profile's `python-env = "<value>"` names, relative to `base_dir` (the lab
/// file's folder): a venv (holding `pyvenv.cfg`), a conda or pixi prefix (holding
/// `conda-meta/`), or a project folder holding one: uv's `.venv`, pixi's `.pixi/envs/default`.
///
/// Errors: the folder is none of those, with what was looked for (the message) and a fix.
pub fn resolve_binding(value: &str, base_dir: &Path) -> Result<PathBuf, (String, String)> {
    let p = Path::new(value);
    let dir = if p.is_absolute() { p.to_path_buf() } else { base_dir.join(p) };
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    for cand in [dir.clone(), dir.join(".venv"), dir.join(".pixi").join("envs").join("default")] {
        if kind_of(&cand).is_some() {
            return Ok(cand);
        }
    }
    let why = if dir.is_dir() {
        format!("{} holds neither pyvenv.cfg (a venv) nor conda-meta/ (a conda or pixi env), nor a .venv or .pixi/envs/default", dir.display())
    } else if dir.exists() {
        format!("{} is a file, not an env's folder", dir.display())
    } else {
        format!("{} does not exist", dir.display())
    };
    Err((
        format!("python-env `{value}` is no Python environment: {why}"),
        "create it (`python3 -m venv DIR`, `uv venv`, `pixi install`), or name the env's own folder (relative paths are from the lab file's folder)".into(),
    ))
}

pub mod hook;
#[cfg(test)]
mod tests;
