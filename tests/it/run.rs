//! `cuenv run` and `.cuenv-profile`: the command runs in the
//! profile's environment with its own exit code, signals and stdin; without `-p` the nearest
//! `.cuenv-profile` names the profile, else the active one.
#![cfg(unix)]

use std::fs;
use std::path::Path;

use crate::support::lab::Lab;

fn applied() -> Lab {
    let lab = Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    lab
}

fn run_in(lab: &Lab, dir: &Path, args: &[&str], stdin: &str) -> std::process::Output {
    lab.ctx.cmd().current_dir(dir).arg("run").args(args).write_stdin(stdin.as_bytes().to_vec()).output().unwrap()
}

#[test]
fn the_command_gets_the_profiles_environment_and_its_own_exit_code() {
    let lab = applied();
    let dir = lab.ctx.work.clone();
    let out = run_in(&lab, &dir, &["-p", "legacy", "--", "sh", "-c", r#"printf '%s|%s' "$CUENV_PROFILE" "$LD_LIBRARY_PATH""#], "");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let (profile, ld) = text.split_once('|').unwrap();
    assert_eq!(profile, "legacy");
    let first = ld.split(':').next().unwrap();
    assert_eq!(Path::new(first), lab.profiles().join("legacy/cudnn-lib"), "{ld}");
    // Exit codes pass through, and so does a signal (the command replaced cuenv).
    assert_eq!(run_in(&lab, &dir, &["-p", "legacy", "--", "sh", "-c", "exit 7"], "").status.code(), Some(7));
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(run_in(&lab, &dir, &["-p", "legacy", "--", "sh", "-c", "kill -TERM $$"], "").status.signal(), Some(15));
    // stdin goes straight through.
    let out = run_in(&lab, &dir, &["-p", "legacy", "--", "cat"], "piped\n");
    assert_eq!(out.stdout, b"piped\n");
    // A command that does not exist: 127, like a shell, naming it.
    let out = run_in(&lab, &dir, &["-p", "legacy", "--", "no-such-command-cuenv"], "");
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot run no-such-command-cuenv"), "{out:?}");
    // An unknown profile is invalid input.
    let out = run_in(&lab, &dir, &["-p", "nope", "--", "true"], "");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// The real loader, not only the variables: a process started by `cuenv run` maps the
/// profile's cuDNN from its store entry.
#[test]
fn the_loader_of_the_command_maps_the_profiles_cudnn() {
    let lab = applied();
    let py = "import ctypes\nctypes.CDLL('libcudnn.so.9')\nprint(''.join(l for l in open('/proc/self/maps') if 'libcudnn' in l))";
    let out = run_in(&lab, &lab.ctx.work, &["-p", "torch2", "--", "python3", "-c", py], "");
    assert!(out.status.success(), "{out:?}");
    let maps = String::from_utf8(out.stdout).unwrap();
    let store = fs::canonicalize(lab.ctx.store_dir()).unwrap();
    assert!(maps.lines().any(|l| l.contains(store.to_str().unwrap()) && l.contains("cudnn-9.5.0.50")), "{maps}");
}

#[test]
fn a_cuenv_profile_file_names_the_profile_for_run_and_use() {
    let lab = applied();
    let project = lab.ctx.path("project");
    let deep = project.join("src/models");
    fs::create_dir_all(&deep).unwrap();
    fs::write(project.join(".cuenv-profile"), "# this project's profile\ntf\n").unwrap();
    let out = run_in(&lab, &deep, &["--", "sh", "-c", "printf %s \"$CUENV_PROFILE\""], "");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "tf", "{out:?}");
    // `use` without a name switches to it (globally, as `use` does).
    // (Not through ctx.cmd(), which passes --quiet: the note is what is tested.)
    let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_cuenv"))
        .env_remove("CUENV_HOME")
        .arg("--home")
        .arg(&lab.ctx.home)
        .current_dir(&deep)
        .arg("use")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // ... and says which pin file it read.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("cuenv: profile tf from {}", project.join(".cuenv-profile").display())), "{err}");
    assert_eq!(fs::read_link(lab.ctx.home.join("active")).unwrap().file_name().unwrap(), "tf");
    // Outside the project: the active profile.
    lab.ok(&["use", "legacy"]);
    let out = run_in(&lab, &lab.ctx.work, &["--", "sh", "-c", "printf %s \"$CUENV_PROFILE\""], "");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "legacy");
    // A pin naming a profile the generation does not have names the pin file.
    fs::write(project.join(".cuenv-profile"), "missing\n").unwrap();
    let out = run_in(&lab, &deep, &["--", "true"], "");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(".cuenv-profile names profile missing, but") && err.contains("pass -p PROFILE"), "{err}");
    // A broken pin file is named with its line.
    fs::write(project.join(".cuenv-profile"), "tf 28\n").unwrap();
    let out = run_in(&lab, &deep, &["--", "true"], "");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(".cuenv-profile:1: \"tf 28\" is not a profile name") && err.contains("hint:"), "{err}");
    // No pin, no active profile: `use` without a name says what to do.
    lab.ok(&["use", "--none"]);
    let out = lab.ctx.cmd().current_dir(&lab.ctx.work).arg("use").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no .cuenv-profile in"), "{out:?}");
}

#[test]
fn a_profile_that_failed_its_check_warns_or_is_refused_with_strict() {
    let lab = applied();
    // The lab's stub libraries fail the real check (no cudnnCreate, no cudart), and `check`
    // saves that verdict for the generation.
    assert_eq!(lab.run(&["check"]).0, 4);
    let run = |args: &[&str]| lab.ctx.cmd().current_dir(&lab.ctx.work).arg("run").args(args).output().unwrap();
    let out = run(&["-p", "legacy", "--", "true"]);
    assert!(out.status.success(), "{out:?}");
    let out = run(&["--strict", "-p", "legacy", "--", "true"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("profile legacy failed its last check") && err.contains("hint:"), "{err}");
}
