//! The directory hook: in real bash (interactive, PROMPT_COMMAND), zsh
//! (chpwd) and fish (`--on-variable PWD`), `cd` into a project with a `.cuenv-profile` gives
//! the shell that profile (HOOK layer), `cd` out of it restores the environment exactly, and
//! a conda env's shim activated inside the project goes in front of the hook's entries and
//! returns to them on deactivation. `<home>/active` is never touched.
#![cfg(unix)]

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::lab::Lab;

use crate::support::clients::{self, Env};

fn have(bin: &str) -> bool {
    clients::have_bin(bin)
}

fn parse(bytes: &[u8]) -> Env {
    let mut e = clients::parse_env0(bytes);
    e.retain(|k, _| !["PWD", "OLDPWD", "_", "SHLVL", "PROMPT_COMMAND"].contains(&k.as_str()));
    e
}

fn q(s: &Path) -> String {
    format!("'{}'", s.to_str().unwrap().replace('\'', r"'\''"))
}

/// Runs `lines` in `shell` (with the hook installed first) and returns the environment after
/// each `dump`.
fn run(lab: &Lab, shell: &str, lines: &[String]) -> Vec<Env> {
    let tmp = tempfile::tempdir().unwrap();
    let hook = lab.ok(&["env", "--hook", shell]);
    let hook_file = tmp.path().join("hook");
    fs::write(&hook_file, hook).unwrap();
    let mut script = match shell {
        "fish" => format!("source {}\n", q(&hook_file)),
        _ => format!(". {}\n", q(&hook_file)),
    };
    let mut n = 0;
    for l in lines {
        if l == "dump" {
            script.push_str(&format!("env -0 > {}\n", q(&tmp.path().join(format!("env{n}")))));
            n += 1;
        } else {
            script.push_str(l);
            script.push('\n');
        }
    }
    script.push_str("exit 0\n");
    let mut cmd = Command::new(shell);
    match shell {
        // PROMPT_COMMAND runs only in an interactive bash: read the lines from stdin.
        "bash" => cmd.args(["--norc", "--noprofile", "-i"]),
        "zsh" => cmd.args(["-f", "-i"]),
        _ => cmd.args(["--no-config", "-i"]),
    };
    let mut child = cmd
        .current_dir(&lab.ctx.work)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", lab.ctx.work.as_os_str())
        .env("TERM", "dumb")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (0..n)
        .map(|i| {
            let f = tmp.path().join(format!("env{i}"));
            parse(&fs::read(&f).unwrap_or_else(|_| panic!("{shell}: no dump {i}\nstderr: {}\nscript:\n{script}", String::from_utf8_lossy(&out.stderr))))
        })
        .collect()
}

fn cells(shell: &str) {
    if !have(shell) {
        return;
    }
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    lab.ok(&["use", "torch2"]);
    let project = lab.ctx.path("my project (x86)");
    fs::create_dir_all(project.join("src")).unwrap();
    fs::write(project.join(".cuenv-profile"), "legacy\n").unwrap();
    let shim_dir = lab.env_a.join("etc/conda");
    let (act, deact) = (shim_dir.join("activate.d/cuenv-torch2"), shim_dir.join("deactivate.d/cuenv-torch2"));
    let ext = if shell == "fish" { "fish" } else { "sh" };
    let src = |p: &Path| format!("{} {}", if shell == "fish" { "source" } else { "." }, q(&p.with_extension(ext)));
    let cd = |p: &Path| format!("cd {}", q(p));
    let envs = run(
        &lab,
        shell,
        &["dump".into(), cd(&project.join("src")), "dump".into(), src(&act), "dump".into(), src(&deact), "dump".into(), cd(&lab.ctx.work), "dump".into()],
    );
    let [outside, inside, conda, back, left] = <[Env; 5]>::try_from(envs).unwrap();
    let legacy = lab.profiles().join("legacy/cudnn-lib");
    let torch = lab.profiles().join("torch2/cudnn-lib");
    let first = |e: &Env| e.get("LD_LIBRARY_PATH").map(|v| v.split(':').next().unwrap().to_string());
    assert_eq!(first(&inside).as_deref(), legacy.to_str(), "{shell}: {inside:#?}");
    assert_eq!(inside.get("CUENV_PROFILE").map(String::as_str), Some("legacy"), "{shell}");
    assert_eq!(inside.get("CUENV_HOOK_PROFILE").map(String::as_str), Some("legacy"), "{shell}");
    // The conda shim goes in front; the hook's block stays right behind it.
    let ld: Vec<&str> = conda["LD_LIBRARY_PATH"].split(':').collect();
    assert_eq!(ld[0], torch.to_str().unwrap(), "{shell}");
    assert_eq!(ld[2], legacy.to_str().unwrap(), "{shell}: {ld:?}");
    assert_eq!(conda["CUENV_PROFILE"], "torch2");
    assert_eq!(back, inside, "{shell}: deactivating the conda shim returns to the project's profile");
    assert_eq!(left, outside, "{shell}: leaving the project restores the environment exactly");
    // Entering the project while the conda env is active: the hook's block goes behind the
    // conda shim's (the shim stays in effect), and everything unwinds in any order.
    let envs =
        run(&lab, shell, &["dump".into(), src(&act), "dump".into(), cd(&project), "dump".into(), src(&deact), "dump".into(), cd(&lab.ctx.work), "dump".into()]);
    let [outside2, conda_only, both, hook_only, left2] = <[Env; 5]>::try_from(envs).unwrap();
    assert_eq!(first(&conda_only).as_deref(), torch.to_str(), "{shell}");
    let ld: Vec<&str> = both["LD_LIBRARY_PATH"].split(':').collect();
    assert_eq!((ld[0], ld[2]), (torch.to_str().unwrap(), legacy.to_str().unwrap()), "{shell}: {ld:?}");
    assert_eq!(both["CUENV_PROFILE"], "torch2", "{shell}: the conda shim's profile stays in effect");
    assert_eq!(first(&hook_only).as_deref(), legacy.to_str(), "{shell}");
    assert_eq!(left2, outside2, "{shell}");
    // Leaving the project while the conda env is still active, then deactivating it: back to
    // the start exactly (the fact that LD_LIBRARY_PATH was unset passes between the layers).
    let envs = run(&lab, shell, &["dump".into(), cd(&project), src(&act), cd(&lab.ctx.work), "dump".into(), src(&deact), "dump".into()]);
    let [outside3, conda_left, end] = <[Env; 3]>::try_from(envs).unwrap();
    assert_eq!(first(&conda_left).as_deref(), torch.to_str(), "{shell}");
    assert!(!conda_left.contains_key("CUENV_HOOK_PROFILE"), "{shell}");
    assert_eq!(end, outside3, "{shell}");
    // `<home>/active` is untouched.
    assert_eq!(fs::read_link(lab.ctx.home.join("active")).unwrap().file_name().unwrap(), "torch2");
}

#[test]
fn hook_bash() {
    cells("bash");
}

#[test]
fn hook_zsh() {
    cells("zsh");
}

#[test]
fn hook_fish() {
    cells("fish");
}
