//! `cuenv export` read back by the real clients: python-dotenv (PyPI),
//! direnv (`direnv exec`), Lmod (`module load` / `module unload`, the Lua and the Tcl
//! modulefile), and the JSON formats parsed. Clients that are not installed are skipped
//! with a note, unless `CUENV_REQUIRE_SHELLS=1` (.ci/run installs them all).
#![cfg(unix)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::lab::Lab;

use crate::support::clients::{Env, have, on_path, parse_env0 as parse};

fn applied() -> Lab {
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    lab
}

/// What every client must end up with for profile `p`.
fn check_profile(lab: &Lab, env: &Env, p: &str, who: &str) {
    let view = lab.profiles().join(p);
    assert_eq!(env.get("CUENV_PROFILE").map(String::as_str), Some(p), "{who}: {env:#?}");
    assert_eq!(env.get("CUDA_HOME").map(PathBuf::from), Some(view.join("cuda")), "{who}");
    assert_eq!(env.get("CUDNN_PATH").map(PathBuf::from), Some(view.join("cudnn")), "{who}");
    assert_eq!(env.get("CUDNN_HOME").map(PathBuf::from), Some(view.join("cudnn")), "{who}");
    let ld = env.get("LD_LIBRARY_PATH").unwrap_or_else(|| panic!("{who}: no LD_LIBRARY_PATH"));
    let dirs: Vec<&str> = ld.split(':').collect();
    assert_eq!(&dirs[..2], &[view.join("cudnn-lib").to_str().unwrap(), view.join("cuda-lib").to_str().unwrap()], "{who}: {ld}");
}

#[test]
fn dotenv_is_read_by_python_dotenv() {
    let Some(py) = std::env::var_os("CUENV_CLIENTS_PYTHON") else {
        have("CUENV_CLIENTS_PYTHON (a Python with python-dotenv; .ci/run makes one)", false);
        return;
    };
    let lab = applied();
    let text = lab.ok(&["export", "legacy", "--format", "dotenv"]);
    // No PATH (dotenv cannot prepend, and replacing PATH hides every tool), and bare values,
    // which `docker --env-file` takes literally.
    assert!(!text.lines().any(|l| l.starts_with("PATH=")), "{text}");
    assert!(text.lines().any(|l| l == format!("CUDA_HOME={}", lab.profiles().join("legacy/cuda").display())), "{text}");
    let f = lab.ctx.path("legacy.env");
    fs::write(&f, text).unwrap();
    let code = "import json, sys\nfrom dotenv import dotenv_values\nprint(json.dumps(dotenv_values(sys.argv[1])))";
    let out = Command::new(py).arg("-c").arg(code).arg(&f).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let env: Env = serde_json::from_slice(&out.stdout).unwrap();
    check_profile(&lab, &env, "legacy", "python-dotenv");
}

#[test]
fn envrc_is_run_by_direnv() {
    if !have("direnv", on_path("direnv")) {
        return;
    }
    let lab = applied();
    let project = lab.ctx.path("project (x86) & co");
    fs::create_dir_all(&project).unwrap();
    fs::write(project.join(".envrc"), lab.ok(&["export", "tf", "--format", "envrc"])).unwrap();
    let home = lab.ctx.path("direnv-home");
    fs::create_dir_all(&home).unwrap();
    let direnv = |args: &[&str]| {
        Command::new("direnv")
            .args(args)
            .current_dir(&project)
            .env_clear()
            .env("HOME", &home)
            .env("PATH", "/usr/bin:/bin")
            .env("LD_LIBRARY_PATH", "/sys/lib")
            .output()
            .unwrap()
    };
    assert!(direnv(&["allow", "."]).status.success());
    let out = direnv(&["exec", ".", "env", "-0"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let env = parse(&out.stdout);
    check_profile(&lab, &env, "tf", "direnv");
    // The inherited folders stay after the profile's.
    assert!(env["LD_LIBRARY_PATH"].ends_with(":/sys/lib"), "{}", env["LD_LIBRARY_PATH"]);
}

fn lmod_init() -> Option<PathBuf> {
    ["/usr/share/lmod/lmod/init/bash"].iter().map(PathBuf::from).find(|p| p.exists())
}

/// `module load cuenv/<p>` under Lmod sets the profile; `module unload` restores the start;
/// loading another cuenv profile is refused or swapped, never stacked.
fn lmod_cells(format: &str) {
    let Some(init) = lmod_init() else {
        have("lmod", false);
        return;
    };
    let lab = applied();
    let dir = lab.ctx.path("modules");
    let out = lab.ok(&["export", "--all", "--format", format, "--out", dir.to_str().unwrap()]);
    assert_eq!(out.lines().count(), 3, "{out}");
    let dump = |n: &str| lab.ctx.path(n);
    let q = |p: &Path| format!("'{}'", p.to_str().unwrap().replace('\'', r"'\''"));
    let script = format!(
        "source {init}\nenv -0 > {d0}\nmodule use {dir}\nmodule load cuenv/tf || exit 3\nenv -0 > {d1}\nmodule load cuenv/legacy\nenv -0 > {d2}\nmodule purge\nenv -0 > {d3}\n",
        init = q(&init),
        dir = q(&dir),
        d0 = q(&dump("m0")),
        d1 = q(&dump("m1")),
        d2 = q(&dump("m2")),
        d3 = q(&dump("m3")),
    );
    let out = Command::new("bash")
        .arg("--norc")
        .arg("-c")
        .arg(&script)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", lab.ctx.work.as_os_str())
        .env("LD_LIBRARY_PATH", "/sys/lib")
        .output()
        .unwrap();
    assert!(out.status.success(), "{format}: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let e: Vec<Env> = ["m0", "m1", "m2", "m3"].iter().map(|n| parse(&fs::read(dump(n)).unwrap())).collect();
    check_profile(&lab, &e[1], "tf", format);
    assert!(e[1]["LD_LIBRARY_PATH"].ends_with(":/sys/lib"), "{format}");
    // Never two cuenv profiles at once: the second load swapped (Lua family) or was refused (Tcl conflict).
    let ld2 = &e[2]["LD_LIBRARY_PATH"];
    let tf_lib = lab.profiles().join("tf/cudnn-lib");
    let legacy_lib = lab.profiles().join("legacy/cudnn-lib");
    assert!(!(ld2.contains(tf_lib.to_str().unwrap()) && ld2.contains(legacy_lib.to_str().unwrap())), "{format}: both profiles loaded: {ld2}");
    // Unloading restores the variables.
    for k in ["LD_LIBRARY_PATH", "CUDA_HOME", "CUDNN_PATH", "CUDNN_HOME", "CUENV_PROFILE", "CUDA_PATH"] {
        assert_eq!(e[3].get(k), e[0].get(k), "{format}: {k} after module purge");
    }
}

#[test]
fn lmod_loads_the_lua_modulefile() {
    lmod_cells("lmod");
}

#[test]
fn lmod_loads_the_tcl_modulefile() {
    lmod_cells("tcl");
}

#[test]
fn json_and_conda_env_vars_hold_the_profile() {
    let lab = applied();
    let v: serde_json::Value = serde_json::from_str(&lab.ok(&["export", "torch2", "--format", "json"])).unwrap();
    assert_eq!(v["profile"], "torch2");
    assert_eq!(v["set"]["CUENV_PROFILE"], "torch2");
    assert_eq!(v["prepend"]["LD_LIBRARY_PATH"][0].as_str().map(PathBuf::from), Some(lab.profiles().join("torch2/cudnn-lib")));
    let c: serde_json::Value = serde_json::from_str(&lab.ok(&["export", "torch2", "--format", "conda-env-vars"])).unwrap();
    assert_eq!(c["CUDA_HOME"].as_str().map(PathBuf::from), Some(lab.profiles().join("torch2/cuda")));
    assert!(c.get("LD_LIBRARY_PATH").is_none(), "conda env_vars cannot prepend: {c}");
    // An unknown profile is exit 2.
    assert_eq!(lab.run(&["export", "nope", "--format", "json"]).0, 2);
}
