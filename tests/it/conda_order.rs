//! Replays conda's activation order for real in each shell (bash, dash, zsh, fish, tcsh, and
//! xonsh through `source-bash`), with cuenv's shims in the envs, and compares every
//! environment with the one the same conda commands give without cuenv (the oracle run).
//!
//! The conda model is our reading of `conda/activate.py` at commit
//! `0f64223fb8da4328457a69fe6483959dbb783152` (`_yield_commands`, `_build_activate_stack`,
//! `build_deactivate`, `build_reactivate`, `_replace_prefix_in_path`, `_get_path_dirs`),
//! in our own words (docs/design.md, "Activation layers"). Each conda command is one step:
//! conda computes `PATH` and its variables from the environment as it is when the command
//! starts (here: in Rust, from the previous step's environment), then the shell runs, in
//! order: `PATH` (deactivate only), the old env's deactivate.d scripts, unsets, exports
//! (`PATH` for activate, switch, stack, reactivate), then the new env's activate.d scripts.
//! The shell then dumps its environment (`env -0`), which is the next step's start.
//!
//! Cells: activate, deactivate, switch (to an env without shims and between profiles), stack
//! (`--stack`, and deactivating back to the outer env), reactivate, `env --setup` underneath,
//! and a user's edits while active. "None in effect" means the whole environment equals the
//! oracle's, byte for byte; "profile X in effect" means it equals the oracle's with X's block
//! in front of `LD_LIBRARY_PATH`, X's variables, and the layer's state variables.
//! Shells that are not installed are skipped with a note, unless `CUENV_REQUIRE_SHELLS=1`
//! (set by .ci/run, which installs them all).
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Command;

use cuenv::shim::{Activation, Layer, Shell, file_name, render_activate, render_deactivate};

use crate::support::clients::{self, Env, parse_env0 as parse_env};

/// A folder name holding every character the shims must survive.
const HOSTILE: &str = "conda it's \"q\" $HOME `id` 100% & ! ^ (x86) \\ Zoë 模型";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Sh {
    Bash,
    Dash,
    Zsh,
    Fish,
    Tcsh,
    Xonsh,
}

impl Sh {
    fn bin(self) -> &'static str {
        match self {
            Sh::Bash => "bash",
            Sh::Dash => "dash",
            Sh::Zsh => "zsh",
            Sh::Fish => "fish",
            Sh::Tcsh => "tcsh",
            Sh::Xonsh => "xonsh",
        }
    }
    /// The shim extension conda runs in this shell (xonsh on Linux runs the `.sh` ones).
    fn shim(self) -> Shell {
        match self {
            Sh::Fish => Shell::Fish,
            Sh::Tcsh => Shell::Csh,
            _ => Shell::Posix,
        }
    }
}

fn have(bin: &str) -> bool {
    clients::have_bin(bin)
}

/// The lab: a conda root with envs `tf` and `torch` (cuenv shims for profiles tf28, torch2)
/// and `plain` (none), under a hostile folder name.
struct Lab {
    _dir: tempfile::TempDir,
    root: PathBuf,
    /// Whether the shims are written (false: the oracle world).
    shims: bool,
}

fn conda_activation(root: &Path, profile: &str) -> Activation {
    // What apply writes on Linux: LD_LIBRARY_PATH only (docs/design.md, "where blocks go").
    Activation {
        profile: profile.into(),
        layer: Layer::Shim,
        path_prepend: vec![],
        ld_library_path_prepend: vec![root.join("home/profiles").join(profile).join("cudnn-lib"), root.join("home/profiles").join(profile).join("cuda-lib")],
        set: vec![
            ("CUDA_PATH".into(), root.join("home/profiles").join(profile).join("cuda")),
            ("CUDA_HOME".into(), root.join("home/profiles").join(profile).join("cuda")),
            ("CUDNN_PATH".into(), root.join("home/profiles").join(profile).join("cudnn")),
            ("CUDNN_HOME".into(), root.join("home/profiles").join(profile).join("cudnn")),
        ],
    }
}

fn setup_activation(root: &Path) -> Activation {
    let active = root.join("home/active");
    Activation {
        profile: "active".into(),
        layer: Layer::Setup,
        path_prepend: vec![active.join("cuda/bin")],
        ld_library_path_prepend: vec![active.join("cudnn-lib"), active.join("cuda-lib")],
        set: vec![
            ("CUDA_PATH".into(), active.join("cuda")),
            ("CUDA_HOME".into(), active.join("cuda")),
            ("CUDNN_PATH".into(), active.join("cudnn")),
            ("CUDNN_HOME".into(), active.join("cudnn")),
        ],
    }
}

impl Lab {
    fn new(shims: bool, sh: Sh) -> Lab {
        let dir = tempfile::Builder::new().prefix(if sh == Sh::Xonsh { "cuenv-conda-" } else { "cuenv conda " }).tempdir().unwrap();
        // xonsh 0.13's `source-bash` (conda's way to run activate.d scripts in xonsh) fails to
        // source a file whose path holds a space, quote, `&`, `(`, backslash or non-ASCII
        // letter, whatever the file holds; its cells use a plain path.
        let root = dir.path().join(if sh == Sh::Xonsh { "conda-plain" } else { HOSTILE });
        std::fs::create_dir_all(root.join("conda/condabin")).unwrap();
        for env in ["tf", "torch", "plain"] {
            let prefix = root.join("conda/envs").join(env);
            for sub in ["bin", "conda-meta", "etc/conda/activate.d", "etc/conda/deactivate.d"] {
                std::fs::create_dir_all(prefix.join(sub)).unwrap();
            }
            let profile = match env {
                "tf" => "tf28",
                "torch" => "torch2",
                _ => continue,
            };
            if !shims {
                continue;
            }
            let a = conda_activation(&root, profile);
            for shell in [Shell::Posix, Shell::Fish, Shell::Csh] {
                for (sub, text) in [("activate.d", render_activate(shell, &a)), ("deactivate.d", render_deactivate(shell, &a))] {
                    let f = prefix.join("etc/conda").join(sub).join(file_name(profile, shell));
                    cuenv::shim::write(&f, shell, &text).unwrap();
                }
            }
        }
        Lab { _dir: dir, root, shims }
    }

    fn prefix(&self, env: &str) -> String {
        self.root.join("conda/envs").join(env).to_str().unwrap().to_string()
    }

    /// The env's scripts for `shell` in `activate.d` (name order) or `deactivate.d`.
    fn scripts(&self, prefix: &str, dir: &str, shell: Shell) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(Path::new(prefix).join("etc/conda").join(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == shell.extension()))
            .map(|p| p.to_str().unwrap().to_string())
            .collect();
        v.sort();
        v
    }
}

/// One shell command conda emits.
enum Cmd {
    Export(String, String),
    Unset(String),
    Source(String),
}

/// A step of a scenario.
#[derive(Clone, Copy, Debug)]
enum Step {
    Activate(&'static str),
    Stack(&'static str),
    Deactivate,
    /// `eval "$(cuenv env --setup)"` at shell start (the SETUP layer).
    Setup,
    /// The user prepends a folder to LD_LIBRARY_PATH and sets CUDA_HOME.
    UserEdits,
}

// ---- conda's model -----------------------------------------------------------------------------

fn get(env: &Env, k: &str) -> Option<String> {
    env.get(k).cloned()
}

/// conda's `_get_path_dirs` on Linux: only `<prefix>/bin`.
fn path_dirs(prefix: &str) -> Vec<String> {
    vec![format!("{prefix}/bin")]
}

/// conda's `_replace_prefix_in_path`: drop the old env's dirs as one slice (first to last),
/// insert the new env's dirs where the slice began (at the front when the old is not found).
fn replace_prefix(path: &str, old: Option<&str>, new: Option<&str>) -> String {
    let mut list: Vec<String> = path.split(':').map(str::to_string).collect();
    let mut first = 0;
    if let Some(old) = old {
        let dirs = path_dirs(old);
        if let Some(f) = list.iter().position(|p| *p == dirs[0]) {
            first = f;
            let last = dirs.iter().rev().find_map(|d| list.iter().position(|p| p == d)).unwrap();
            list.drain(first..=last);
        }
    }
    if let Some(new) = new {
        for (i, d) in path_dirs(new).into_iter().enumerate() {
            list.insert(first + i, d);
        }
    }
    list.join(":")
}

fn add_prefix(path: &str, prefix: &str) -> String {
    let mut dirs = path_dirs(prefix);
    dirs.push(path.to_string());
    dirs.join(":")
}

fn env_vars(prefix: &str, shlvl: u32) -> Vec<Cmd> {
    let name = Path::new(prefix).file_name().unwrap().to_str().unwrap().to_string();
    vec![
        Cmd::Export("CONDA_PREFIX".into(), prefix.into()),
        Cmd::Export("CONDA_SHLVL".into(), shlvl.to_string()),
        Cmd::Export("CONDA_DEFAULT_ENV".into(), name.clone()),
        Cmd::Export("CONDA_PROMPT_MODIFIER".into(), format!("({name}) ")),
    ]
}

/// The commands conda would emit for `step` from environment `env`, in its order.
fn conda(lab: &Lab, env: &Env, step: Step, shell: Shell) -> Vec<Cmd> {
    let shlvl: u32 = get(env, "CONDA_SHLVL").and_then(|s| s.parse().ok()).unwrap_or(0);
    let old = get(env, "CONDA_PREFIX");
    let path = get(env, "PATH").unwrap_or_default();
    let mut out = Vec::new();
    match step {
        Step::Activate(name) | Step::Stack(name) => {
            let prefix = lab.prefix(name);
            let stack = matches!(step, Step::Stack(_));
            if old.as_deref() == Some(prefix.as_str()) && shlvl > 0 {
                // build_reactivate
                out.extend(lab.scripts(&prefix, "deactivate.d", shell).into_iter().map(Cmd::Source));
                out.push(Cmd::Export("PATH".into(), replace_prefix(&path, Some(&prefix), Some(&prefix))));
                out.push(Cmd::Export("CONDA_SHLVL".into(), shlvl.to_string()));
                out.extend(lab.scripts(&prefix, "activate.d", shell).into_iter().map(Cmd::Source));
                return out;
            }
            let new_path = if shlvl == 0 || stack { add_prefix(&path, &prefix) } else { replace_prefix(&path, old.as_deref(), Some(&prefix)) };
            if shlvl > 0 && !stack {
                out.extend(lab.scripts(old.as_deref().unwrap(), "deactivate.d", shell).into_iter().map(Cmd::Source));
            }
            out.push(Cmd::Export("PATH".into(), new_path));
            out.extend(env_vars(&prefix, shlvl + 1));
            if shlvl > 0 {
                out.push(Cmd::Export(format!("CONDA_PREFIX_{shlvl}"), old.clone().unwrap()));
                if stack {
                    out.push(Cmd::Export(format!("CONDA_STACKED_{}", shlvl + 1), "true".into()));
                }
            }
            out.extend(lab.scripts(&prefix, "activate.d", shell).into_iter().map(Cmd::Source));
        }
        Step::Deactivate => {
            let old = old.expect("an env is active");
            if shlvl == 1 {
                out.push(Cmd::Export("PATH".into(), replace_prefix(&path, Some(&old), None)));
                out.extend(lab.scripts(&old, "deactivate.d", shell).into_iter().map(Cmd::Source));
                for v in ["CONDA_PREFIX", "CONDA_DEFAULT_ENV", "CONDA_PROMPT_MODIFIER"] {
                    out.push(Cmd::Unset(v.into()));
                }
                out.push(Cmd::Export("CONDA_SHLVL".into(), "0".into()));
            } else {
                let new = get(env, &format!("CONDA_PREFIX_{}", shlvl - 1)).unwrap();
                let stacked = env.contains_key(&format!("CONDA_STACKED_{shlvl}"));
                let new_path = if stacked { replace_prefix(&path, Some(&old), None) } else { replace_prefix(&path, Some(&old), Some(&new)) };
                out.push(Cmd::Export("PATH".into(), new_path));
                out.extend(lab.scripts(&old, "deactivate.d", shell).into_iter().map(Cmd::Source));
                out.push(Cmd::Unset(format!("CONDA_PREFIX_{}", shlvl - 1)));
                if stacked {
                    out.push(Cmd::Unset(format!("CONDA_STACKED_{shlvl}")));
                }
                out.extend(env_vars(&new, shlvl - 1));
                out.extend(lab.scripts(&new, "activate.d", shell).into_iter().map(Cmd::Source));
            }
        }
        Step::Setup | Step::UserEdits => unreachable!("not a conda command"),
    }
    out
}

// ---- running one step in a real shell ----------------------------------------------------------

fn q_posix(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}
fn q_fish(s: &str) -> String {
    format!("'{}'", s.replace('\\', r"\\").replace('\'', r"\'"))
}
fn q_csh(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''").replace('!', r"\!"))
}
fn q_py(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// The setup layer's script for `shell` (what `cuenv env --setup --shell S` prints).
fn setup_script(lab: &Lab, shell: Shell) -> PathBuf {
    let f = lab.root.join(format!("setup.{}", shell.extension()));
    std::fs::write(&f, render_activate(shell, &setup_activation(&lab.root))).unwrap();
    f
}

fn script_for(sh: Sh, cmds: &[Cmd], dump: &Path) -> String {
    let mut s = String::new();
    for c in cmds {
        let line = match (sh, c) {
            (Sh::Bash | Sh::Dash | Sh::Zsh, Cmd::Export(k, v)) => format!("export {k}={}", q_posix(v)),
            (Sh::Bash | Sh::Dash | Sh::Zsh, Cmd::Unset(k)) => format!("unset {k}"),
            (Sh::Bash | Sh::Dash | Sh::Zsh, Cmd::Source(f)) => format!(". {}", q_posix(f)),
            // conda's fish activator sets PATH as a list.
            (Sh::Fish, Cmd::Export(k, v)) if k == "PATH" => format!("set -gx PATH {}", v.split(':').map(q_fish).collect::<Vec<_>>().join(" ")),
            (Sh::Fish, Cmd::Export(k, v)) => format!("set -gx {k} {}", q_fish(v)),
            (Sh::Fish, Cmd::Unset(k)) => format!("set -e {k}"),
            (Sh::Fish, Cmd::Source(f)) => format!("source {}", q_fish(f)),
            (Sh::Tcsh, Cmd::Export(k, v)) => format!("setenv {k} {}", q_csh(v)),
            (Sh::Tcsh, Cmd::Unset(k)) => format!("unsetenv {k}"),
            (Sh::Tcsh, Cmd::Source(f)) => format!("source {}", q_csh(f)),
            (Sh::Xonsh, Cmd::Export(k, v)) => format!("${k} = {}", q_py(v)),
            (Sh::Xonsh, Cmd::Unset(k)) => format!("${{...}}.pop({}, None)", q_py(k)),
            // conda's xonsh activator: `source-bash --suppress-skip-message -n "<script>"`.
            (Sh::Xonsh, Cmd::Source(f)) => format!("aliases['source-bash'](['--suppress-skip-message', '-n', {}])", q_py(f)),
        };
        s.push_str(&line);
        s.push('\n');
    }
    let d = dump.to_str().unwrap();
    s.push_str(&match sh {
        Sh::Bash | Sh::Dash | Sh::Zsh => format!("env -0 > {}\nexit 0\n", q_posix(d)),
        Sh::Fish => format!("env -0 > {}\nexit 0\n", q_fish(d)),
        Sh::Tcsh => format!("env -0 > {}\nexit 0\n", q_csh(d)),
        Sh::Xonsh => format!(
            "$EXPAND_ENV_VARS = False\nimport subprocess\nsubprocess.run(['env', '-0'], stdout=open({}, 'wb'), env=${{...}}.detype(), check=True)\n",
            q_py(d)
        ),
    });
    s
}

fn user_edits(sh: Sh) -> Vec<String> {
    match sh {
        Sh::Bash | Sh::Dash | Sh::Zsh => vec!["export LD_LIBRARY_PATH=/mine${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}".into(), "export CUDA_HOME=/mine".into()],
        Sh::Fish => vec!["set -gx LD_LIBRARY_PATH /mine $LD_LIBRARY_PATH".into(), "set -gx CUDA_HOME /mine".into()],
        Sh::Tcsh => vec![
            "if ( $?LD_LIBRARY_PATH ) then\nif ( \"$LD_LIBRARY_PATH\" != \"\" ) then\nsetenv LD_LIBRARY_PATH /mine:$LD_LIBRARY_PATH:q\nelse\nsetenv LD_LIBRARY_PATH /mine\nendif\nelse\nsetenv LD_LIBRARY_PATH /mine\nendif".into(),
            "setenv CUDA_HOME /mine".into(),
        ],
        Sh::Xonsh => vec![
            "if ${...}.get('LD_LIBRARY_PATH'):\n    $LD_LIBRARY_PATH.insert(0, '/mine')\nelse:\n    $LD_LIBRARY_PATH = '/mine'".into(),
            "$CUDA_HOME = '/mine'".into(),
        ],
    }
}

/// Runs one step in `sh` starting from `env`; returns the environment after it.
fn run_step(lab: &Lab, sh: Sh, env: &Env, step: Step) -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("env");
    let shell = sh.shim();
    let text = match step {
        Step::Setup => {
            let f = setup_script(lab, shell).to_str().unwrap().to_string();
            script_for(sh, &[Cmd::Source(f)], &dump)
        }
        Step::UserEdits => {
            let body = script_for(sh, &[], &dump);
            format!("{}\n{body}", user_edits(sh).join("\n"))
        }
        _ => script_for(sh, &conda(lab, env, step, shell), &dump),
    };
    let file = tmp.path().join("step");
    std::fs::write(&file, &text).unwrap();
    let mut cmd = Command::new(sh.bin());
    match sh {
        Sh::Bash | Sh::Dash | Sh::Zsh => cmd.arg(&file),
        Sh::Fish => cmd.arg("--no-config").arg(&file),
        // Interactive, reading the step on stdin: history substitution (`!`) is on, as in a
        // user's csh, where conda runs the scripts.
        Sh::Tcsh => cmd.arg("-f").arg("-i").stdin(std::fs::File::open(&file).unwrap()),
        Sh::Xonsh => cmd.arg("--no-rc").arg(&file),
    };
    let out = cmd.env_clear().envs(env.iter()).output().expect("spawn shell");
    assert!(
        out.status.success() && dump.exists(),
        "{sh:?} step {step:?} failed: {}\nstdout: {}\nstderr: {}\nscript:\n{text}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut e = parse_env(&std::fs::read(&dump).unwrap());
    // Variables the shells themselves set or change at start-up, in both worlds alike.
    for k in ["SHLVL", "PWD", "OLDPWD", "_", "HOST", "HOSTTYPE", "VENDOR", "OSTYPE", "MACHTYPE", "GROUP", "LOGNAME", "USER"] {
        if !env.contains_key(k) {
            e.remove(k);
        }
    }
    if sh == Sh::Xonsh {
        e.retain(|k, _| !k.starts_with("XONSH") && !k.starts_with("__xonsh") && !["PROMPT", "TITLE", "ARG0", "ARGS", "EXPAND_ENV_VARS"].contains(&k.as_str()));
    }
    e
}

// ---- expectations ------------------------------------------------------------------------------

/// `oracle` with `profile`'s conda activation applied on top, and its SHIM-layer state.
fn with_profile(lab: &Lab, oracle: &Env, profile: &str, saved_from: &Env) -> Env {
    let a = conda_activation(&lab.root, profile);
    let block: Vec<String> = a.ld_library_path_prepend.iter().map(|p| p.to_str().unwrap().to_string()).collect();
    let block = block.join(":");
    let mut e = oracle.clone();
    match oracle.get("LD_LIBRARY_PATH") {
        Some(v) if !v.is_empty() => e.insert("LD_LIBRARY_PATH".into(), format!("{block}:{v}")),
        _ => e.insert("LD_LIBRARY_PATH".into(), block.clone()),
    };
    if !oracle.contains_key("LD_LIBRARY_PATH") {
        e.insert("CUENV_SHIM_UNSET_LD_LIBRARY_PATH".into(), "1".into());
    }
    e.insert("CUENV_SHIM_ADDED_LD_LIBRARY_PATH".into(), block);
    let mut set: Vec<(String, String)> = a.set.iter().map(|(k, v)| (k.clone(), v.to_str().unwrap().to_string())).collect();
    set.push(("CUENV_PROFILE".into(), profile.into()));
    for (k, v) in set {
        match saved_from.get(&k) {
            Some(old) => e.insert(format!("CUENV_SHIM_SAVED_{k}"), old.clone()),
            None => e.insert(format!("CUENV_SHIM_UNSET_{k}"), "1".into()),
        };
        e.insert(k, v);
    }
    e.insert("CUENV_SHIM_PROFILE".into(), profile.into());
    e
}

fn diff(a: &Env, b: &Env) -> String {
    let mut out = String::new();
    for k in a.keys().chain(b.keys()).collect::<std::collections::BTreeSet<_>>() {
        if a.get(k) != b.get(k) {
            out.push_str(&format!("  {k}: got {:?}, want {:?}\n", a.get(k), b.get(k)));
        }
    }
    out
}

/// What a checkpoint expects: no profile in effect, or this one.
#[derive(Clone, Copy, Debug)]
enum Want {
    /// Not checked (the user's own edits are in it).
    Skip,
    None,
    Profile(&'static str),
}

/// Runs `steps` in both worlds and checks each step's `Want`. The values a profile's layer saved
/// are those of the last state in which no profile was in effect.
fn scenario(sh: Sh, name: &str, steps: &[(Step, Want)]) {
    let with = Lab::new(true, sh);
    let without = Lab::new(false, sh);
    assert!(with.shims && !without.shims);
    // Both labs live at different temporary paths: compare after mapping one onto the other.
    let map = |e: &Env| -> Env {
        let from = without.root.to_str().unwrap();
        let to = with.root.to_str().unwrap();
        e.iter().map(|(k, v)| (k.clone(), v.replace(from, to))).collect()
    };
    let start: Env = [
        ("PATH", format!("{}/condabin:/usr/local/bin:/usr/bin:/bin", with.root.join("conda").display())),
        ("HOME", "/nonexistent home".into()),
        ("LANG", "C.UTF-8".into()),
        ("CONDA_SHLVL", "0".into()),
        ("CUDA_HOME", String::new()),
        ("CUDNN_PATH", "/old/模型 'q' \"d\" $x `y` \\ %z% !w ^v &u (x86)".into()),
        ("UNRELATED", "stays".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let start_without: Env = start.iter().map(|(k, v)| (k.clone(), v.replace(with.root.to_str().unwrap(), without.root.to_str().unwrap()))).collect();
    let (mut a, mut b) = (start.clone(), start_without);
    // The environment as it was before the SHIM layer's first profile: what it saved.
    let mut before_shim = a.clone();
    for (i, (step, want)) in steps.iter().enumerate() {
        a = run_step(&with, sh, &a, *step);
        b = run_step(&without, sh, &b, *step);
        let oracle = map(&b);
        let expected = match want {
            Want::Skip => continue,
            Want::None => oracle.clone(),
            Want::Profile(p) => {
                let mut saved = before_shim.clone();
                // User edits while active are not what the layer saved.
                saved.retain(|k, _| k != "CUENV_SHIM_PROFILE");
                with_profile(&with, &oracle, p, &saved)
            }
        };
        let d = diff(&a, &expected);
        assert!(d.is_empty(), "{sh:?} scenario {name}, step {i} {step:?} want {want:?}:\n{d}");
        if matches!(want, Want::None) {
            before_shim = a.clone();
        }
    }
}

fn cells(sh: Sh) {
    if !have(sh.bin()) {
        return;
    }
    use Step::*;
    use Want::Profile as P;
    // activate, reactivate (one copy), deactivate (byte-identical to before).
    scenario(sh, "activate", &[(Activate("tf"), P("tf28")), (Activate("tf"), P("tf28")), (Deactivate, Want::None)]);
    // switch to an env without shims (nothing of tf28 left), between profiles, and back out:
    // conda's deactivate of a switched env re-activates the previous one.
    scenario(
        sh,
        "switch",
        &[
            (Activate("tf"), P("tf28")),
            (Activate("plain"), Want::None),
            (Activate("torch"), P("torch2")),
            (Activate("tf"), P("tf28")),
            (Deactivate, P("torch2")),
            (Deactivate, Want::None),
            (Deactivate, P("tf28")),
            (Deactivate, Want::None),
        ],
    );
    // stack: the inner env's profile only; deactivating it re-runs the outer env's scripts.
    scenario(
        sh,
        "stack",
        &[
            (Activate("tf"), P("tf28")),
            (Stack("torch"), P("torch2")),
            (Deactivate, P("tf28")),
            (Stack("plain"), P("tf28")),
            (Deactivate, P("tf28")),
            (Deactivate, Want::None),
        ],
    );
    // env --setup underneath: deactivating returns to the setup layer's state exactly.
    scenario(
        sh,
        "setup",
        &[(Setup, Want::None), (Activate("tf"), P("tf28")), (Activate("torch"), P("torch2")), (Deactivate, P("tf28")), (Deactivate, Want::None)],
    );
    // The user's edits while active survive deactivation.
    scenario(sh, "user-edits", &[(Activate("tf"), P("tf28")), (UserEdits, Want::Skip), (Deactivate, Want::None)]);
}

/// The activations this harness applies set exactly the variables cuenv's own activation sets
/// (`CUDNN_HOME` included), so every scalar's save, set and undo is judged by the oracle.
#[test]
fn the_harness_sets_every_scalar_cuenv_sets() {
    let root = Path::new("/r");
    let product = cuenv::env::view::activation(&cuenv::home::layout::Layout::new(root.join("home")), "tf28", cuenv::cudnn::platform::Platform::LinuxX86_64);
    let names = |a: &Activation| a.set.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    assert_eq!(names(&conda_activation(root, "tf28")), names(&product));
    assert_eq!(names(&setup_activation(root)), names(&product));
    assert!(names(&product).iter().any(|k| k == "CUDNN_HOME"));
}

#[test]
fn conda_order_bash() {
    cells(Sh::Bash);
}
#[test]
fn conda_order_dash() {
    cells(Sh::Dash);
}
#[test]
fn conda_order_zsh() {
    cells(Sh::Zsh);
}
#[test]
fn conda_order_fish() {
    cells(Sh::Fish);
}
#[test]
fn conda_order_tcsh() {
    cells(Sh::Tcsh);
}
#[test]
fn conda_order_xonsh() {
    cells(Sh::Xonsh);
}

/// pixi's activation engine (py-rattler's `rattler.shell.activate`, from PyPI) runs a conda
/// env's `activate.d` scripts of its shell: after its bash and fish scripts, the profile's
/// cuDNN folder is first on `LD_LIBRARY_PATH`. The Python with `rattler` installed is named
/// by `CUENV_CLIENTS_PYTHON` (.ci/run makes one); without it the test is skipped with a note.
/// rattler writes script paths unquoted (`. /path/x.sh`), so the lab path is plain.
#[test]
fn pixi_rattler_runs_the_shims() {
    let Some(py) = std::env::var_os("CUENV_CLIENTS_PYTHON") else {
        assert!(std::env::var_os("CUENV_REQUIRE_SHELLS").is_none(), "CUENV_CLIENTS_PYTHON is required (CUENV_REQUIRE_SHELLS)");
        crate::support::skipped("CUENV_CLIENTS_PYTHON is not set (a Python with py-rattler; .ci/run makes one): the py-rattler cells");
        return;
    };
    let lab = Lab::new(true, Sh::Xonsh);
    let prefix = lab.prefix("tf");
    let a = conda_activation(&lab.root, "tf28");
    let first = a.ld_library_path_prepend[0].to_str().unwrap().to_string();
    for (sh, name) in [(Sh::Bash, "bash"), (Sh::Fish, "fish")] {
        if !have(sh.bin()) {
            continue;
        }
        let code = format!(
            "import sys\nfrom pathlib import Path\nfrom rattler.shell import activate, ActivationVariables, Shell\n\
             r = activate(Path(sys.argv[1]), ActivationVariables(None, ['/usr/bin', '/bin']), Shell.{name})\nsys.stdout.write(r.script)\n"
        );
        let out = Command::new(&py).arg("-c").arg(&code).arg(&prefix).output().unwrap();
        assert!(out.status.success(), "rattler: {}", String::from_utf8_lossy(&out.stderr));
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(script.contains(&format!("cuenv-tf28.{}", sh.shim().extension())), "{script}");
        let tmp = tempfile::tempdir().unwrap();
        let dump = tmp.path().join("env");
        let file = tmp.path().join("step");
        std::fs::write(&file, format!("{script}\nenv -0 > '{}'\n", dump.display())).unwrap();
        let mut cmd = Command::new(sh.bin());
        if sh == Sh::Fish {
            cmd.arg("--no-config");
        }
        let run = cmd.arg(&file).env_clear().env("PATH", "/usr/bin:/bin").env("HOME", "/nonexistent").output().unwrap();
        assert!(run.status.success(), "{name}: {}", String::from_utf8_lossy(&run.stderr));
        let env = parse_env(&std::fs::read(&dump).unwrap());
        let ld = env.get("LD_LIBRARY_PATH").unwrap_or_else(|| panic!("{name}: no LD_LIBRARY_PATH in {env:#?}"));
        assert_eq!(ld.split(':').next(), Some(first.as_str()), "{name}");
        assert_eq!(env.get("CUENV_PROFILE").map(String::as_str), Some("tf28"), "{name}");
        assert_eq!(env.get("CONDA_PREFIX"), Some(&prefix), "{name}");
    }
}
