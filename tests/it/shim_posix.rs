//! Executes the rendered POSIX and fish shims in the real shells (sh/dash, bash, zsh, fish):
//! source activate in a known environment, read the whole environment back (`env -0`), source
//! activate again (idempotence), deactivate, and compare the whole environment with the one
//! before, exactly (a variable that was unset, one that was empty, hostile values everywhere).
//! Shells that are not installed are skipped with a note on stderr (Debian packages: `dash`,
//! `bash`, `zsh`, `fish`).
#![cfg(unix)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use cuenv::shim::{Activation, Shell, file_name, render_activate, render_deactivate};

type Env = BTreeMap<String, String>;

/// Every character the issue lists, in a folder name that exists on disk.
const HOSTILE: &str = "cuenv shim it's \"q\" $HOME `id` 100% & ! ^ (x86) \\ Zoë données 模型";

fn have(shell: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {shell}")).output().is_ok_and(|o| o.status.success())
}

fn activation(root: &Path, profile: &str) -> Activation {
    Activation {
        profile: profile.into(),
        layer: Default::default(),
        path_prepend: vec![root.join(profile).join("cudnn/bin"), root.join("cuda 12.6/bin")],
        ld_library_path_prepend: vec![root.join(profile).join("cudnn/lib"), root.join("cuda 12.6/lib64")],
        set: vec![
            ("CUDA_PATH".into(), root.join("cuda 12.6")),
            ("CUDA_HOME".into(), root.join("cuda 12.6")),
            ("CUDNN_PATH".into(), root.join(profile).join("cudnn")),
            ("CUDNN_HOME".into(), root.join(profile).join("cudnn")),
        ],
    }
}

struct Shims {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

/// Writes activate/deactivate shims for profiles `torch2` and `tf28` into a folder whose name
/// is hostile, the way conda lays them out.
fn shims(shell: Shell) -> Shims {
    let dir = tempfile::Builder::new().prefix("cuenv shim ").tempdir().unwrap();
    let root = dir.path().join(HOSTILE);
    for profile in ["torch2", "tf28"] {
        let a = activation(&root, profile);
        for (sub, text) in [("activate.d", render_activate(shell, &a)), ("deactivate.d", render_deactivate(shell, &a))] {
            let folder = root.join("etc/conda").join(sub);
            std::fs::create_dir_all(&folder).unwrap();
            cuenv::shim::write(&folder.join(file_name(profile, shell)), shell, &text).unwrap();
        }
    }
    Shims { _dir: dir, root }
}

fn shim_path(s: &Shims, shell: Shell, activate: bool, profile: &str) -> PathBuf {
    let sub = if activate { "activate.d" } else { "deactivate.d" };
    s.root.join("etc/conda").join(sub).join(file_name(profile, shell))
}

/// The environment the shell starts with: hostile values, one empty variable (CUDA_HOME), two
/// unset ones (CUDA_PATH, LD_LIBRARY_PATH), one of cuenv's own set (CUENV_PROFILE).
fn start_env(root: &Path) -> Vec<(String, String)> {
    vec![
        ("PATH".into(), format!("/usr/local/bin:/usr/bin:/bin:{}/old bin", root.display())),
        ("HOME".into(), "/nonexistent home".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("CUDA_HOME".into(), String::new()),
        ("CUDNN_PATH".into(), "/old/模型 'q' \"d\" $x `y` \\ %z% !w ^v &u (x86)".into()),
        ("CUDNN_HOME".into(), "/old cudnn home 'h' $y".into()),
        ("CUENV_PROFILE".into(), "set-before".into()),
        ("UNRELATED".into(), "stays".into()),
    ]
}

fn parse_env(bytes: &[u8]) -> Env {
    let text = String::from_utf8(bytes.to_vec()).expect("env is UTF-8");
    text.split('\0')
        .filter(|e| !e.is_empty())
        .map(|e| {
            let (k, v) = e.split_once('=').unwrap_or((e, ""));
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// Runs `steps` (a list of `source <file>` / `dump`) in `shell` and returns one environment per
/// `dump`. POSIX shells run with `set -eu`, so an unset-variable reference in a shim fails.
fn run(shell_bin: &str, shell: Shell, env: &[(String, String)], steps: &[(&str, Option<&Path>)]) -> Vec<Env> {
    let out = tempfile::tempdir().unwrap();
    let mut script = String::new();
    if shell == Shell::Posix {
        script.push_str("set -eu\n");
    }
    let mut dumps = 0;
    let mut cmd = Command::new(shell_bin);
    cmd.env_clear().envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    for (i, (step, file)) in steps.iter().enumerate() {
        match (*step, file) {
            ("source", Some(f)) => {
                let var = format!("SHIM_STEP_{i}");
                cmd.env(&var, f);
                match shell {
                    Shell::Posix => script.push_str(&format!(". \"${var}\"\n")),
                    Shell::Fish => script.push_str(&format!("source ${var}\nset -e {var}\n")),
                    _ => unreachable!(),
                }
                if shell == Shell::Posix {
                    script.push_str(&format!("unset {var}\n"));
                }
            }
            ("dump", None) => {
                let f = out.path().join(format!("env{dumps}"));
                dumps += 1;
                // No shell variable of the shim may leak either.
                match shell {
                    Shell::Posix => {
                        script.push_str(&format!("if [ -n \"${{__cuenv_v+x}}\" ]; then echo leaked __cuenv_v >&2; exit 9; fi\nenv -0 > '{}'\n", f.display()))
                    }
                    Shell::Fish => {
                        script.push_str(&format!("if set -q __cuenv_n; or set -q __cuenv_s; echo leaked >&2; exit 9; end\nenv -0 > '{}'\n", f.display()))
                    }
                    _ => unreachable!(),
                }
            }
            _ => unreachable!(),
        }
    }
    // A final builtin, so that no shell runs the last `env` with exec (zsh would lower SHLVL).
    script.push_str("exit 0\n");
    let output = cmd.arg("-c").arg(&script).output().expect("spawn shell");
    assert!(output.status.success(), "{shell_bin} failed: {}\nstderr: {}\nscript:\n{script}", output.status, String::from_utf8_lossy(&output.stderr));
    (0..dumps).map(|i| parse_env(&std::fs::read(out.path().join(format!("env{i}"))).unwrap())).collect()
}

fn without_step_vars(mut e: Env) -> Env {
    e.retain(|k, _| !k.starts_with("SHIM_STEP_"));
    e
}

fn check_shell(shell_bin: &str, shell: Shell) {
    if !have(shell_bin) {
        crate::support::skipped(format!("{shell_bin} is not installed: its shim test (apt-get install {shell_bin})"));
        return;
    }
    let s = shims(shell);
    let act = shim_path(&s, shell, true, "torch2");
    let deact = shim_path(&s, shell, false, "torch2");
    let env = start_env(&s.root);
    let envs = run(
        shell_bin,
        shell,
        &env,
        &[("dump", None), ("source", Some(&act)), ("dump", None), ("source", Some(&act)), ("dump", None), ("source", Some(&deact)), ("dump", None)],
    );
    let [before, active, again, after] = <[Env; 4]>::try_from(envs.into_iter().map(without_step_vars).collect::<Vec<_>>()).unwrap();

    let root = s.root.display().to_string();
    let old_path = before["PATH"].clone();
    assert!(old_path.contains("/old bin"));
    let want = |k: &str| active.get(k).unwrap_or_else(|| panic!("{shell_bin}: {k} missing after activation: {active:#?}"));
    assert_eq!(want("PATH"), &format!("{root}/torch2/cudnn/bin:{root}/cuda 12.6/bin:{old_path}"), "{shell_bin}");
    // LD_LIBRARY_PATH was unset: no trailing ':' (an empty entry would mean the current folder).
    assert_eq!(want("LD_LIBRARY_PATH"), &format!("{root}/torch2/cudnn/lib:{root}/cuda 12.6/lib64"), "{shell_bin}");
    assert_eq!(want("CUDA_PATH"), &format!("{root}/cuda 12.6"));
    assert_eq!(want("CUDA_HOME"), &format!("{root}/cuda 12.6"));
    assert_eq!(want("CUDNN_PATH"), &format!("{root}/torch2/cudnn"));
    assert_eq!(want("CUDNN_HOME"), &format!("{root}/torch2/cudnn"));
    assert_eq!(want("CUENV_PROFILE"), "torch2");
    assert_eq!(want("CUENV_SHIM_PROFILE"), "torch2");
    assert_eq!(want("CUENV_SHIM_ADDED_PATH"), &format!("{root}/torch2/cudnn/bin:{root}/cuda 12.6/bin"));
    assert_eq!(want("CUENV_SHIM_SAVED_CUDA_HOME"), "");
    assert_eq!(want("CUENV_SHIM_UNSET_CUDA_PATH"), "1");
    assert_eq!(want("CUENV_SHIM_UNSET_LD_LIBRARY_PATH"), "1");
    assert_eq!(want("CUENV_SHIM_SAVED_CUDNN_PATH"), &before["CUDNN_PATH"]);
    assert_eq!(want("CUENV_SHIM_SAVED_CUDNN_HOME"), &before["CUDNN_HOME"]);
    assert_eq!(want("CUENV_SHIM_SAVED_CUENV_PROFILE"), "set-before");
    assert_eq!(active["UNRELATED"], "stays");
    // Idempotent: a second activation changes nothing at all.
    assert_eq!(again, active, "{shell_bin}: second activation changed the environment");
    // Deactivation restores the whole environment exactly (CUDA_HOME empty, CUDA_PATH unset, ...).
    assert_eq!(after, before, "{shell_bin}: deactivation did not restore the environment");
    assert_eq!(after.get("CUDA_HOME").map(String::as_str), Some(""));
    assert!(!after.contains_key("CUDA_PATH") && !after.contains_key("LD_LIBRARY_PATH"));
}

/// Switching profiles: activating tf28 while torch2 is active first removes torch2's block
/// (the saved values stay those from before torch2); torch2's deactivate then does nothing; tf28's deactivate returns to the start.
fn check_switch(shell_bin: &str, shell: Shell) {
    if !have(shell_bin) {
        crate::support::skipped(format!("{shell_bin} is not installed: its profile-switch test"));
        return;
    }
    let s = shims(shell);
    let a1 = shim_path(&s, shell, true, "torch2");
    let d1 = shim_path(&s, shell, false, "torch2");
    let a2 = shim_path(&s, shell, true, "tf28");
    let d2 = shim_path(&s, shell, false, "tf28");
    let env = start_env(&s.root);
    let envs = run(
        shell_bin,
        shell,
        &env,
        &[
            ("dump", None),
            ("source", Some(&a1)),
            ("source", Some(&a2)),
            ("dump", None),
            ("source", Some(&d1)),
            ("dump", None),
            ("source", Some(&d2)),
            ("dump", None),
        ],
    );
    let [before, tf28, after_wrong_deactivate, after] = <[Env; 4]>::try_from(envs.into_iter().map(without_step_vars).collect::<Vec<_>>()).unwrap();
    let root = s.root.display().to_string();
    assert_eq!(tf28["PATH"], format!("{root}/tf28/cudnn/bin:{root}/cuda 12.6/bin:{}", before["PATH"]), "{shell_bin}");
    assert_eq!(tf28["CUENV_SHIM_ADDED_PATH"], format!("{root}/tf28/cudnn/bin:{root}/cuda 12.6/bin"));
    assert_eq!(tf28["CUENV_PROFILE"], "tf28");
    assert_eq!(tf28["CUENV_SHIM_SAVED_CUENV_PROFILE"], "set-before");
    assert_eq!(after_wrong_deactivate, tf28, "{shell_bin}: torch2's deactivate acted while tf28 was active");
    assert_eq!(after, before, "{shell_bin}");
}

#[test]
fn sh_executes_the_posix_shim() {
    check_shell("sh", Shell::Posix);
}

#[test]
fn dash_executes_the_posix_shim() {
    check_shell("dash", Shell::Posix);
}

#[test]
fn bash_executes_the_posix_shim() {
    check_shell("bash", Shell::Posix);
}

#[test]
fn zsh_executes_the_posix_shim() {
    check_shell("zsh", Shell::Posix);
}

#[test]
fn fish_executes_the_fish_shim() {
    check_shell("fish", Shell::Fish);
}

#[test]
fn dash_switches_profiles() {
    check_switch("dash", Shell::Posix);
}

#[test]
fn bash_switches_profiles() {
    check_switch("bash", Shell::Posix);
}

#[test]
fn zsh_switches_profiles() {
    check_switch("zsh", Shell::Posix);
}

#[test]
fn fish_switches_profiles() {
    check_switch("fish", Shell::Fish);
}

/// Deactivating when nothing is active, in a shell with `set -u`, changes nothing.
#[test]
fn deactivate_without_activation_is_a_no_op() {
    for (bin, shell) in [("dash", Shell::Posix), ("bash", Shell::Posix), ("fish", Shell::Fish)] {
        if !have(bin) {
            continue;
        }
        let s = shims(shell);
        let d = shim_path(&s, shell, false, "torch2");
        let envs = run(bin, shell, &start_env(&s.root), &[("dump", None), ("source", Some(&d)), ("dump", None)]);
        let envs: Vec<Env> = envs.into_iter().map(without_step_vars).collect();
        assert_eq!(envs[0], envs[1], "{bin}");
    }
}
