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
    // A bare venv as the kernel's interpreter (the clients' venv has ipykernel).
    let bare = lab.ctx.path("bare venv");
    assert!(Command::new(&py).args(["-m", "venv", "--without-pip"]).arg(&bare).status().unwrap().success());
    let kernel_py = bare.join("bin/python");
    let out = lab.ctx.cmd().env("JUPYTER_DATA_DIR", &data).args(["kernel", "install", "legacy", "--python"]).arg(&kernel_py).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    // The bare venv has no ipykernel: the spec is written, and the warning says the kernel
    // would not start and how to fix it.
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
    assert!(text.contains("cuenv-legacy  cuenv profile legacy (no such profile now"), "{text}");
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

/// The stand-in `ipykernel_launcher` of [`every_kernelspec_is_listed_with_what_jupyter_client_gives_it`]:
/// loads cuDNN by name through the real loader, and writes its environment, its
/// `sys.executable` and the cuDNN files mapped into it (`/proc/self/maps`).
const DUMPING_LAUNCHER: &str = r#"import ctypes, json, os, sys
for so in ("libcudnn.so.9", "libcudnn.so.8"):
    try:
        ctypes.CDLL(so)
        break
    except OSError:
        pass
maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if "/libcudnn" in l})
json.dump({"env": dict(os.environ), "exe": sys.executable, "cudnn": maps}, open(os.environ["CUENV_TEST_DUMP"], "w"))
"#;

/// `cuenv kernel list` finds the kernelspecs the real jupyter_client finds, in its order
/// (`$JUPYTER_PATH`, the server venv's `share/jupyter` before the user's data dir, the system
/// folders; same names hidden), bound to a profile or not, and for each says what its process
/// really gets: the cuDNN the loader maps (a kernel without an `env` block gets none), the
/// interpreter (argv[0] `python3` is the server's), and the CUDA/cuDNN variables. Each kernel
/// is started by jupyter_client's `KernelManager`. `doctor --kernel` examines that environment.
#[test]
fn every_kernelspec_is_listed_with_what_jupyter_client_gives_it() {
    let Some(py) = std::env::var_os("CUENV_CLIENTS_PYTHON") else {
        assert!(std::env::var_os("CUENV_REQUIRE_SHELLS").is_none(), "CUENV_CLIENTS_PYTHON is required");
        crate::support::skipped("CUENV_CLIENTS_PYTHON is not set (a Python with jupyter_client; .ci/run makes one): the kernel list test");
        return;
    };
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    // The Jupyter server runs in a venv of its own (its sys.prefix holds kernelspecs too);
    // jupyter_client comes from the clients' venv through PYTHONPATH.
    let venv = lab.ctx.path("server venv");
    let st = Command::new(&py).args(["-m", "venv", "--without-pip"]).arg(&venv).status().unwrap();
    assert!(st.success());
    let server_py = venv.join("bin/python");
    let site = Command::new(&py).args(["-c", "import jupyter_client, os; print(os.path.dirname(os.path.dirname(jupyter_client.__file__)))"]).output().unwrap();
    let site = String::from_utf8(site.stdout).unwrap().trim().to_string();
    let fake = lab.ctx.path("fake-ipykernel");
    fs::create_dir_all(&fake).unwrap();
    fs::write(fake.join("ipykernel_launcher.py"), DUMPING_LAUNCHER).unwrap();
    let (data, jp, sys, user) = (lab.ctx.path("jupyter data"), lab.ctx.path("jupyter path"), lab.ctx.path("xdg system"), lab.ctx.path("user home"));
    let server_lib = lab.ctx.path("server lib");
    fs::create_dir_all(&server_lib).unwrap();
    let envs: Vec<(&str, std::ffi::OsString)> = vec![
        ("JUPYTER_DATA_DIR", data.clone().into()),
        ("JUPYTER_PATH", jp.clone().into()),
        ("JUPYTER_PLATFORM_DIRS", "1".into()),
        ("XDG_DATA_DIRS", sys.clone().into()),
        ("HOME", user.clone().into()),
        ("LD_LIBRARY_PATH", server_lib.clone().into()),
        ("PYTHONPATH", format!("{}:{site}", fake.display()).into()),
    ];
    let with_env = |c: &mut Command| {
        c.env_remove("VIRTUAL_ENV").env_remove("CONDA_PREFIX").env_remove("JUPYTER_PREFER_ENV_PATH").env_remove("CUENV_PROFILE").env_remove("IPYTHONDIR");
        for k in ["CUDA_PATH", "CUDA_HOME", "CUDNN_PATH", "CUDNN_HOME"] {
            c.env_remove(k);
        }
        for (k, v) in &envs {
            c.env(k, v);
        }
    };
    let spec = |dir: &std::path::Path, name: &str, v: serde_json::Value| {
        fs::create_dir_all(dir.join("kernels").join(name)).unwrap();
        fs::write(dir.join("kernels").join(name).join("kernel.json"), v.to_string()).unwrap();
    };
    let argv = |a0: &str| serde_json::json!([a0, "-m", "ipykernel_launcher", "-f", "{connection_file}"]);
    // A kernel without an env block (argv[0] `python3`: the server's Python runs it).
    spec(&jp, "plain", serde_json::json!({"argv": argv("python3"), "display_name": "plain", "language": "python"}));
    // The same name in a system folder: hidden.
    spec(
        &sys.join("jupyter"),
        "plain",
        serde_json::json!({"argv": argv("python3"), "display_name": "sys", "language": "python", "env": {"LD_LIBRARY_PATH": "/x"}}),
    );
    // A hand-written env block in the server venv, substituted by jupyter_client.
    let torch_lib = lab.profiles().join("torch2/cudnn-lib");
    let withenv = serde_json::json!({"argv": argv(server_py.to_str().unwrap()), "display_name": "w", "language": "python",
        "env": {"LD_LIBRARY_PATH": format!("{}:${{LD_LIBRARY_PATH}}", torch_lib.display()), "CUDNN_HOME": "${HOME}/cudnn home", "CUDA_PATH": "$$x"}});
    spec(&venv.join("share/jupyter"), "WithEnv", withenv);
    // The same name in the user's data dir: the venv's comes first (a venv the user owns).
    spec(&data, "withenv", serde_json::json!({"argv": argv("python3"), "display_name": "hidden", "language": "python"}));
    // A cuenv kernel in the user's data dir.
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env("CUENV_HOME", &lab.ctx.home).args(["kernel", "install", "legacy", "--python"]).arg(&server_py);
    with_env(&mut c);
    assert!(c.output().unwrap().status.success());

    // What cuenv says.
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env("CUENV_HOME", &lab.ctx.home).args(["kernel", "list", "--json", "--python"]).arg(&server_py);
    with_env(&mut c);
    let out = c.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed = listed.as_array().unwrap();
    let visible: std::collections::BTreeMap<String, &serde_json::Value> =
        listed.iter().filter(|k| k["hidden_by"].is_null()).map(|k| (k["name"].as_str().unwrap().to_string(), k)).collect();
    let hidden: Vec<(String, String)> = listed
        .iter()
        .filter(|k| !k["hidden_by"].is_null())
        .map(|k| (k["path"].as_str().unwrap().to_string(), k["hidden_by"].as_str().unwrap().to_string()))
        .collect();
    let kj = |d: &std::path::Path, n: &str| d.join("kernels").join(n).join("kernel.json").to_string_lossy().into_owned();
    assert_eq!(
        hidden,
        [(kj(&data, "withenv"), kj(&venv.join("share/jupyter"), "WithEnv")), (kj(&sys.join("jupyter"), "plain"), kj(&jp, "plain"))],
        "{listed:#?}"
    );

    // What the real jupyter_client finds and starts.
    let dumps = lab.ctx.path("dumps");
    fs::create_dir_all(&dumps).unwrap();
    let code = r#"
import json, os, sys, time
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
specs = KernelSpecManager().find_kernel_specs()
for name in specs:
    dump = os.path.join(sys.argv[1], name + ".json")
    os.environ["CUENV_TEST_DUMP"] = dump
    km = KernelManager(kernel_name=name)
    km.start_kernel()
    for _ in range(400):
        if os.path.exists(dump) and os.path.getsize(dump) > 0:
            break
        time.sleep(0.05)
    km.cleanup_resources()
print(json.dumps(specs))
"#;
    let mut c = Command::new(&server_py);
    c.arg("-c").arg(code).arg(&dumps);
    with_env(&mut c);
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let found: std::collections::BTreeMap<String, String> = serde_json::from_slice(&out.stdout).unwrap();
    let ours: std::collections::BTreeMap<String, String> =
        visible.iter().map(|(n, k)| (n.clone(), PathBuf::from(k["path"].as_str().unwrap()).parent().unwrap().to_string_lossy().into_owned())).collect();
    assert_eq!(ours, found, "cuenv's kernelspecs differ from jupyter_client's");
    // `python3`: the kernel jupyter_client adds itself, since the server can import ipykernel.
    assert_eq!(found.keys().collect::<Vec<_>>(), ["cuenv-legacy", "plain", "python3", "withenv"]);

    let canon = |p: &str| fs::canonicalize(p).unwrap_or_else(|e| panic!("{p}: {e}"));
    for (name, k) in &visible {
        let dump: serde_json::Value = serde_json::from_str(&fs::read_to_string(dumps.join(format!("{name}.json"))).unwrap()).unwrap();
        // The folder cuenv names is the one the loader mapped cuDNN from (or none, both).
        let mapped: Vec<PathBuf> = dump["cudnn"].as_array().unwrap().iter().map(|p| canon(p.as_str().unwrap()).parent().unwrap().to_path_buf()).collect();
        let said = k["cudnn"]["folder"].as_str().map(canon);
        assert_eq!(said, mapped.first().cloned(), "{name}: cuenv says {}, the kernel mapped {mapped:?}", k["cudnn"]);
        assert_eq!(k["interpreter"].as_str(), dump["exe"].as_str(), "{name}");
        for v in ["CUDA_PATH", "CUDA_HOME", "CUDNN_PATH", "CUDNN_HOME", "CUENV_PROFILE"] {
            assert_eq!(k["vars"][v].as_str(), dump["env"][v].as_str(), "{name}: {v}");
        }
    }
    // The issue's case: no env block, no cuDNN folder; and the bound ones get their profile's.
    assert!(visible["plain"]["cudnn"].is_null() && visible["plain"]["profile"].is_null());
    assert_eq!(visible["plain"]["interpreter_is_servers"], true);
    assert_eq!(visible["cuenv-legacy"]["profile"], "legacy");
    assert_eq!(visible["cuenv-legacy"]["cudnn"]["folder"].as_str().map(PathBuf::from), Some(lab.profiles().join("legacy/cudnn-lib")));
    assert_eq!(visible["withenv"]["cudnn"]["folder"].as_str().map(PathBuf::from), Some(torch_lib));
    assert_eq!(visible["withenv"]["vars"]["CUDNN_HOME"].as_str().map(PathBuf::from), Some(user.join("cudnn home")));
    assert_eq!(visible["withenv"]["vars"]["CUDA_PATH"], "$x");

    // In words: the unbound kernel is listed with what it lacks.
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env("CUENV_HOME", &lab.ctx.home).args(["kernel", "list", "--python"]).arg(&server_py);
    with_env(&mut c);
    let text = String::from_utf8(c.output().unwrap().stdout).unwrap();
    assert!(text.contains(&format!("plain  not bound to a cuenv profile  {}", kj(&jp, "plain"))), "{text}");
    assert!(text.contains("cuDNN: no folder on LD_LIBRARY_PATH holds a cuDNN dispatcher"), "{text}");
    assert!(text.contains(&format!("hidden by {}", kj(&jp, "plain"))), "{text}");

    // doctor --kernel examines the kernel's environment, not the shell's.
    for (name, profile) in [("cuenv-legacy", serde_json::json!("legacy")), ("plain", serde_json::Value::Null)] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
        c.env("CUENV_HOME", &lab.ctx.home).args(["doctor", "--json", "--kernel", name]);
        with_env(&mut c);
        let out = c.output().unwrap();
        let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
        assert_eq!(d["active_profile"], profile, "{name}: {d:#}");
    }
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env("CUENV_HOME", &lab.ctx.home).args(["doctor", "--kernel", "nosuch"]);
    with_env(&mut c);
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no Jupyter kernel named \"nosuch\"") && err.contains("cuenv-legacy, plain, withenv"), "{err}");
}
