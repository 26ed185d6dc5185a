//! `cuenv kernel install|list`, checked with the real jupyter_client (PyPI):
//! its `KernelSpecManager` lists the kernelspec, and its `KernelManager` starts the kernel's
//! argv (a stand-in `ipykernel_launcher` module that writes its environment: ipykernel itself
//! is not needed) with the profile's variables in the kernel's environment.
#![cfg(unix)]

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use crate::support::lab::Lab;

#[test]
fn a_kernel_is_listed_and_started_by_jupyter_client_with_the_profile() {
    let Some(py) = std::env::var_os("CUENV_CLIENTS_PYTHON") else {
        assert!(std::env::var_os("CUENV_REQUIRE_SHELLS").is_none(), "CUENV_CLIENTS_PYTHON is required");
        crate::support::skipped("CUENV_CLIENTS_PYTHON is not set (a Python with jupyter_client; .ci/run makes one): the jupyter_client test");
        return;
    };
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    let data = lab.ctx.path("jupyter data");
    let out = lab.ctx.cmd().env("JUPYTER_DATA_DIR", &data).args(["kernel", "install", "legacy", "--python"]).arg(&py).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    // The clients' venv has jupyter_client but not ipykernel: the spec is written, and the
    // warning says the kernel would not start and how to fix it.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has no ipykernel: the kernel will not start") && err.contains("-m pip install ipykernel"), "{err}");
    let spec = data.join("kernels/cuenv-legacy/kernel.json");
    assert!(spec.exists());
    // `kernel list` finds it, bound to an existing profile.
    let list = lab.ctx.cmd().env("JUPYTER_DATA_DIR", &data).args(["kernel", "list", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(v[0]["name"], "cuenv-legacy");
    assert_eq!(v[0]["profile_exists"], true, "{v}");

    // The real client: list the spec, then start its argv.
    let fake = lab.ctx.path("fake-ipykernel");
    fs::create_dir_all(&fake).unwrap();
    fs::write(fake.join("ipykernel_launcher.py"), "import os, json\njson.dump(dict(os.environ), open(os.environ['CUENV_TEST_DUMP'], 'w'))\n").unwrap();
    let dump = lab.ctx.path("kernel-env.json");
    let code = r#"
import json, sys, time, os
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
specs = KernelSpecManager().get_all_specs()
assert 'cuenv-legacy' in specs, specs
km = KernelManager(kernel_name='cuenv-legacy')
km.start_kernel()
for _ in range(200):
    if os.path.exists(os.environ['CUENV_TEST_DUMP']) and os.path.getsize(os.environ['CUENV_TEST_DUMP']) > 0:
        break
    time.sleep(0.05)
km.cleanup_resources()
print(json.dumps(specs['cuenv-legacy']['spec']['env']))
"#;
    let out = Command::new(&py)
        .arg("-c")
        .arg(code)
        .env("JUPYTER_DATA_DIR", &data)
        .env("PYTHONPATH", &fake)
        .env("CUENV_TEST_DUMP", &dump)
        .env("LD_LIBRARY_PATH", "/server/lib")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let env: serde_json::Value = serde_json::from_str(&fs::read_to_string(&dump).unwrap()).unwrap();
    let view = lab.profiles().join("legacy");
    assert_eq!(env["CUENV_PROFILE"], "legacy");
    assert_eq!(env["CUDA_HOME"].as_str().map(PathBuf::from), Some(view.join("cuda")));
    assert_eq!(env["CUDNN_HOME"].as_str().map(PathBuf::from), Some(view.join("cudnn")));
    let ld = env["LD_LIBRARY_PATH"].as_str().unwrap();
    assert_eq!(ld.split(':').next().map(PathBuf::from), Some(view.join("cudnn-lib")), "{ld}");
    // PATH keeps the server's folders after the profile's (a kernel without them cannot start
    // `pip` or a compiler).
    let path = env["PATH"].as_str().unwrap();
    assert!(path.ends_with(&format!(":{}", std::env::var("PATH").unwrap())), "{path}");

    // Once the profile is gone from the lab, `list` says so.
    let f = lab.lab("[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\n");
    lab.ok(&["apply", "--no-check", "--replace", f.to_str().unwrap()]);
    let list = lab.ctx.cmd().env("JUPYTER_DATA_DIR", &data).args(["kernel", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(text.contains("cuenv-legacy  profile legacy (no such profile now"), "{text}");
    // And `doctor` warns about it.
    let out = lab.ctx.cmd().env("JUPYTER_DATA_DIR", &data).args(["doctor"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("the Jupyter kernel cuenv-legacy") && text.contains("bound to profile legacy, which the current generation does not have"), "{text}");
}

/// `kernel install` checks the interpreter it names: one that can import
/// `ipykernel_launcher` (here a stand-in module on `PYTHONPATH`) installs quietly; one that
/// cannot run at all gets a warning naming it, and the spec is still written.
#[test]
fn kernel_install_warns_only_when_the_python_cannot_start_a_kernel() {
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    let data = lab.ctx.path("jupyter data");
    let fake = lab.ctx.path("fake-ipykernel");
    fs::create_dir_all(&fake).unwrap();
    fs::write(fake.join("ipykernel_launcher.py"), "").unwrap();
    let out =
        lab.ctx.cmd().env("JUPYTER_DATA_DIR", &data).env("PYTHONPATH", &fake).args(["kernel", "install", "legacy", "--python", "python3"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    // The bare name was looked up on PATH: the kernel's argv names an absolute interpreter.
    let spec: serde_json::Value = serde_json::from_str(&fs::read_to_string(data.join("kernels/cuenv-legacy/kernel.json")).unwrap()).unwrap();
    let argv0 = PathBuf::from(spec["argv"][0].as_str().unwrap());
    assert!(argv0.is_absolute() && argv0.is_file(), "{argv0:?}");

    let not_python = lab.ctx.path("not-python");
    fs::write(&not_python, "").unwrap();
    let out = lab.ctx.cmd().env("JUPYTER_DATA_DIR", &data).args(["kernel", "install", "legacy", "--name", "k2", "--python"]).arg(&not_python).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot run") && err.contains("not-python") && err.contains("reinstall with --python EXE"), "{err}");
    assert!(data.join("kernels/k2/kernel.json").exists());

    // An interpreter path that names nothing is refused, and nothing is written.
    let out = lab
        .ctx
        .cmd()
        .env("JUPYTER_DATA_DIR", &data)
        .args(["kernel", "install", "legacy", "--name", "k3", "--python"])
        .arg(lab.ctx.path("no-such-env/bin/python"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not exist") && err.contains("hint: pass --python EXE"), "{err}");
    assert!(!data.join("kernels/k3").exists());
}
