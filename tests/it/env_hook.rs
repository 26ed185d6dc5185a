//! The env hook (docs/design.md, "The env hook"): a profile bound to a venv with `python-env`
//! wins in that venv's processes however they start, against a different cuDNN wheel installed
//! in the same venv. Judged by the real loader (`/proc/self/maps` of the process), the real
//! cuda-pathfinder (`load_nvidia_dynamic_lib("cudnn")`) and a torch-style consumer whose
//! `DT_RUNPATH` leads into the venv's wheel; started by full path without activation, with
//! `python -m`, and as a Jupyter kernel started by the real jupyter_client with the real
//! ipykernel (both from the clients' venv, `CUENV_CLIENTS_PYTHON`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::lab::Lab;

#[cfg(target_os = "linux")]
use crate::support::stubs::{cc_lib, companion_stubs};

/// A cuDNN 9 release folder like a wheel's (`lib/*.so.9` with their sonames, `include/`): the
/// dispatcher takes its version from `libcudnn_graph.so.9`, loaded by name as cuDNN 9 does
/// (`DT_RUNPATH` `$ORIGIN`); ops, cnn and the others need graph in `DT_NEEDED` as the real
/// 9.5.0.50 files do. `cudnnGetVersion` answers `90000 + minor * 100`.
#[cfg(target_os = "linux")]
pub(crate) fn release_9(lib: &Path, minor: u32) {
    let version = 90000 + minor * 100;
    let rpath = ["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"];
    cc_lib(
        lib,
        "libcudnn_graph.so.9",
        &format!(
            "#include <stddef.h>\nsize_t cuenv_graph_version(void) {{ return {version}; }}\n__attribute__((used)) const char marker[] = \"cudnn_version_9_{minor}_0_1_1_e0\";\n"
        ),
        &rpath,
    );
    cc_lib(
        lib,
        "libcudnn.so.9",
        "#include <dlfcn.h>\n#include <stddef.h>\nsize_t cudnnGetVersion(void) { void *h = dlopen(\"libcudnn_graph.so.9\", RTLD_NOW); if (!h) return 0; size_t (*f)(void) = (size_t (*)(void))dlsym(h, \"cuenv_graph_version\"); return f(); }\nsize_t cudnnGetCudartVersion(void) { return 12060; }\n",
        &rpath,
    );
    let dir = format!("-L{}", lib.display());
    let needs_graph = [rpath[0], rpath[1], "-Wl,--no-as-needed", &dir, "-l:libcudnn_graph.so.9"];
    for so in [
        "libcudnn_ops.so.9",
        "libcudnn_cnn.so.9",
        "libcudnn_adv.so.9",
        "libcudnn_heuristic.so.9",
        "libcudnn_engines_precompiled.so.9",
        "libcudnn_engines_runtime_compiled.so.9",
    ] {
        cc_lib(lib, so, "int cuenv_stub(void) { return 0; }\n", &needs_graph);
    }
}

/// A torch-like consumer in `<sp>/torch/lib/libtorch_cuda.so`: `DT_NEEDED` `libcudnn.so.9`,
/// `DT_RUNPATH` `$ORIGIN/../../nvidia/cudnn/lib` (PyTorch's Linux wheels).
#[cfg(target_os = "linux")]
pub(crate) fn torch_like(sp: &Path) {
    cc_lib(
        &sp.join("torch/lib"),
        "libtorch_cuda.so",
        "#include <stddef.h>\nsize_t cudnnGetVersion(void);\nsize_t torch_cudnn_version(void) { return cudnnGetVersion(); }\n",
        &["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/../../nvidia/cudnn/lib", &format!("-L{}", sp.join("nvidia/cudnn/lib").display()), "-l:libcudnn.so.9"],
    );
}

/// What a process of the venv loads, printed as JSON: the version each consumer's cuDNN
/// answers, and every cuDNN file the process mapped (real paths, from `/proc/self/maps`).
#[cfg(target_os = "linux")]
const PROBE: &str = r#"
import ctypes, json, os, sys
SP = globals().get("SP") or os.environ["SP"]
out = {}
torch = ctypes.CDLL(os.path.join(SP, "torch/lib/libtorch_cuda.so"))
torch.torch_cudnn_version.restype = ctypes.c_size_t
out["torch"] = torch.torch_cudnn_version()
bare = ctypes.CDLL("libcudnn.so.9")
bare.cudnnGetVersion.restype = ctypes.c_size_t
out["by_name"] = bare.cudnnGetVersion()
try:
    from cuda.pathfinder import load_nvidia_dynamic_lib
    d = load_nvidia_dynamic_lib("cudnn")
    out["pathfinder"] = [os.path.realpath(d.abs_path), d.found_via]
except ImportError:
    out["pathfinder"] = None
maps = set()
for line in open("/proc/self/maps"):
    p = line.split()[-1]
    if "libcudnn" in p:
        maps.add(os.path.realpath(p))
out["maps"] = sorted(maps)
out["profile"] = os.environ.get("CUENV_PROFILE")
print(json.dumps(out))
"#;

#[cfg(target_os = "linux")]
struct Case {
    lab: Lab,
    venv: PathBuf,
    sp: PathBuf,
    entry_lib: PathBuf,
    wheel_lib: PathBuf,
    clients: Option<std::ffi::OsString>,
}

#[cfg(target_os = "linux")]
impl Case {
    /// A lab whose profile `torch` (cuDNN 9.6, a gcc-built set) is bound to a venv that holds a
    /// cuDNN 9.1 "wheel" (`nvidia/cudnn/lib`), cuBLAS stand-ins and a torch-like consumer;
    /// applied. `None` when `python3 -m venv` is not available.
    fn new(link_free: bool) -> Option<Case> {
        let lab = Lab::new();
        let release = lab.ctx.path("cudnn 9.6 release");
        release_9(&release.join("lib"), 6);
        std::fs::create_dir_all(release.join("include")).unwrap();
        std::fs::write(release.join("include/cudnn_version.h"), crate::support::version_header(9, 6, 0)).unwrap();
        lab.ctx.add_ok(&release, &["--cuda", "12"]);
        let venv = lab.ctx.path("proj/.venv");
        if !Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&venv).status().is_ok_and(|st| st.success()) {
            crate::support::skipped("python3 -m venv is not available: the env hook tests");
            return None;
        }
        let sp = crate::support::first_dir(&venv.join("lib"), "python3").join("site-packages");
        let wheel_lib = sp.join("nvidia/cudnn/lib");
        release_9(&wheel_lib, 1);
        companion_stubs(&sp.join("nvidia/cublas/lib"), 12);
        torch_like(&sp);
        // The real cuda-pathfinder and ipykernel, from the clients' venv, sorted after the hook.
        let clients = std::env::var_os("CUENV_CLIENTS_PYTHON");
        if let Some(py) = &clients {
            let out = Command::new(py)
                .args(["-c", "import cuda.pathfinder, os; print(os.path.dirname(os.path.dirname(os.path.dirname(cuda.pathfinder.__file__))))"])
                .output()
                .unwrap();
            assert!(out.status.success(), "the clients' venv lacks cuda-pathfinder: {out:?}");
            std::fs::write(sp.join("zz-clients.pth"), String::from_utf8(out.stdout).unwrap()).unwrap();
        } else {
            assert!(std::env::var_os("CUENV_REQUIRE_SHELLS").is_none(), "CUENV_CLIENTS_PYTHON is required");
            crate::support::skipped(
                "CUENV_CLIENTS_PYTHON is not set (a Python with cuda-pathfinder and ipykernel; .ci/run makes one): the pathfinder and kernel parts",
            );
        }
        let settings = if link_free { "[settings]\nlink-mode = \"none\"\n\n" } else { "" };
        let file = lab.ctx.path("lab.toml");
        std::fs::write(
            &file,
            format!("{settings}[toolkits]\n\"12.6\" = '{}'\n\n[profiles.torch]\ncuda = \"12\"\ncudnn = \"9.6\"\npython-env = \"proj\"\n", lab.tk12.display()),
        )
        .unwrap();
        lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
        let entry = std::fs::read_dir(lab.ctx.home.join("store"))
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("cudnn-9.6.0"))
            .unwrap_or_else(|| {
                panic!("no 9.6 entry in {:?}", std::fs::read_dir(lab.ctx.home.join("store")).unwrap().flatten().map(|e| e.file_name()).collect::<Vec<_>>())
            });
        let entry_lib = std::fs::canonicalize(entry.path()).unwrap().join("lib");
        Some(Case { lab, venv, sp, entry_lib, wheel_lib, clients })
    }

    /// `python` of the venv started by full path with `args`, with no activation at all (no
    /// `VIRTUAL_ENV`, no `LD_LIBRARY_PATH`, no cuenv variable), and `extra` variables.
    fn python(&self, args: &[&str], extra: &[(&str, &str)]) -> serde_json::Value {
        let mut c = Command::new(self.venv.join("bin/python"));
        c.args(args).env("SP", &self.sp);
        for k in ["VIRTUAL_ENV", "CONDA_PREFIX", "LD_LIBRARY_PATH", "CUENV_PROFILE", "CUENV_PYTHON_HOOK", "PYTHONPATH", "CUDNN_PATH", "CUDNN_HOME"] {
            c.env_remove(k);
        }
        for (k, v) in extra {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{out:?}"))
    }

    fn hook_file(&self) -> PathBuf {
        self.sp.join("00-cuenv-torch.pth")
    }

    /// Asserts that `v` (a [`PROBE`] answer) saw only the profile's files, in every consumer.
    fn assert_profile_wins(&self, v: &serde_json::Value, how: &str) {
        assert_eq!(v["torch"], 90600, "{how}: the torch-like consumer got another cuDNN: {v}");
        assert_eq!(v["by_name"], 90600, "{how}: a by-name load got another cuDNN: {v}");
        let maps: Vec<PathBuf> = v["maps"].as_array().unwrap().iter().map(|p| PathBuf::from(p.as_str().unwrap())).collect();
        assert!(maps.iter().all(|p| p.starts_with(&self.entry_lib)), "{how}: a file outside the profile's entry {} was mapped: {v}", self.entry_lib.display());
        assert!(maps.iter().any(|p| p.ends_with("libcudnn_graph.so.9")), "{how}: {v}");
        if self.clients.is_some() {
            let pf = &v["pathfinder"];
            assert_eq!(PathBuf::from(pf[0].as_str().unwrap()), self.entry_lib.join("libcudnn.so.9"), "{how}: cuda.pathfinder: {v}");
            assert_eq!(pf[1], "was-already-loaded-from-elsewhere", "{how}: {v}");
        }
        assert_eq!(v["profile"], "torch", "{how}: {v}");
    }
}

#[cfg(target_os = "linux")]
fn the_profile_wins_in(link_free: bool) {
    let Some(case) = Case::new(link_free) else { return };
    let hook = std::fs::read_to_string(case.hook_file()).unwrap_or_else(|e| panic!("no hook at {}: {e}", case.hook_file().display()));
    assert!(hook.starts_with("# cuenv-shim v2\n") && hook.is_ascii(), "{hook}");
    // What it preloads is the dispatcher and graph, derived from the entry's files.
    let h = cuenv::pyenv::hook::parse(&hook).unwrap();
    let names: Vec<String> = h.preload.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["libcudnn.so.9", "libcudnn_graph.so.9"], "{hook}");
    if !link_free {
        assert!(h.preload[0].starts_with(case.lab.profiles().join("torch/cudnn-lib")), "a link mode's hook names the stable path: {hook}");
    }

    // The interpreter started by full path, no activation.
    let v = case.python(&["-c", PROBE], &[]);
    case.assert_profile_wins(&v, "python -c");
    // `python -m`.
    std::fs::write(case.lab.ctx.path("probe_mod.py"), PROBE).unwrap();
    let v = case.python(&["-m", "probe_mod"], &[("PYTHONPATH", case.lab.ctx.path("").to_str().unwrap())]);
    case.assert_profile_wins(&v, "python -m");

    // The off switch gives the venv's own wheel back, as without cuenv: the judges can tell.
    let v = case.python(&["-c", PROBE], &[("CUENV_PYTHON_HOOK", "0")]);
    assert_eq!(v["torch"], 90100, "{v}");
    assert!(v["maps"].as_array().unwrap().iter().all(|p| Path::new(p.as_str().unwrap()).starts_with(std::fs::canonicalize(&case.wheel_lib).unwrap())), "{v}");
    // A hook of another profile than the one `cuenv run` names does not run.
    let v = case.python(&["-c", PROBE], &[("CUENV_PYTHON_HOOK", "other")]);
    assert_eq!(v["torch"], 90100, "{v}");
    // `python -S` runs no site hook at all (documented).
    let out = Command::new(case.venv.join("bin/python"))
        .args(["-S", "-c", "import os; print(os.environ.get('CUENV_PROFILE'))"])
        .env_remove("CUENV_PROFILE")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "None");

    // A Jupyter kernel started by the real jupyter_client, running the real ipykernel in the venv.
    if let Some(py) = &case.clients {
        let data = case.lab.ctx.path("jupyter data");
        let spec = data.join("kernels/venv");
        std::fs::create_dir_all(&spec).unwrap();
        let argv = serde_json::json!([case.venv.join("bin/python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"]);
        std::fs::write(spec.join("kernel.json"), serde_json::json!({"argv": argv, "display_name": "venv", "language": "python"}).to_string()).unwrap();
        let driver = format!(
            "import json\nfrom jupyter_client.manager import start_new_kernel\nkm, kc = start_new_kernel(kernel_name='venv')\nout = []\ntry:\n    kc.execute_interactive({:?}, timeout=60, output_hook=lambda m: out.append(m['content'].get('text', '')) if m['msg_type'] == 'stream' else None)\nfinally:\n    kc.stop_channels(); km.shutdown_kernel(now=True)\nprint(''.join(out).strip().splitlines()[-1])\n",
            format!("SP = {:?}\n{PROBE}", case.sp.to_str().unwrap())
        );
        let mut c = Command::new(py);
        c.args(["-c", &driver]).env("JUPYTER_DATA_DIR", &data).env("JUPYTER_PLATFORM_DIRS", "1").env("HOME", case.lab.ctx.path("kernel home"));
        for k in ["VIRTUAL_ENV", "CONDA_PREFIX", "LD_LIBRARY_PATH", "CUENV_PROFILE", "CUENV_PYTHON_HOOK", "JUPYTER_PATH"] {
            c.env_remove(k);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{out:?}"));
        case.assert_profile_wins(&v, "a Jupyter kernel");
    }

    // `cuenv run` of the bound profile keeps the hook (the same profile), and `status` checks it.
    let out = case
        .lab
        .ctx
        .cmd()
        .args(["run", "-p", "torch", "--"])
        .arg(case.venv.join("bin/python"))
        .args(["-c", &format!("SP = {:?}\n{PROBE}", case.sp.to_str().unwrap())])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    case.assert_profile_wins(&serde_json::from_slice(&out.stdout).unwrap(), "cuenv run");
    let (code, status, _) = case.lab.run(&["status", "--verbose"]);
    assert_eq!(code, 0, "{status}");
    assert!(status.contains("00-cuenv-torch.pth"), "{status}");

    // Unbinding (the README's uninstall: apply --replace a lab that binds no env) deletes it.
    let file = case.lab.ctx.path("empty.toml");
    std::fs::write(&file, format!("[toolkits]\n\"12.6\" = '{}'\n\n[profiles.plain]\ncuda = \"12\"\ncudnn = \"9.5\"\n", case.lab.tk12.display())).unwrap();
    case.lab.ok(&["apply", "--replace", "--no-check", file.to_str().unwrap()]);
    assert!(!case.hook_file().exists(), "the hook outlived its binding");
    assert!(case.sp.join("zz-clients.pth").exists() || case.clients.is_none(), "cuenv deleted a .pth file that is not its own");
    let v = case.python(&["-c", PROBE], &[]);
    assert_eq!(v["torch"], 90100, "{v}");
    // Rollback brings it back.
    case.lab.ok(&["rollback"]);
    assert!(case.hook_file().exists(), "rollback did not put the hook back");
}

#[cfg(target_os = "linux")]
#[test]
fn a_profile_bound_to_a_venv_wins_there_however_the_interpreter_starts() {
    the_profile_wins_in(false);
}

#[cfg(target_os = "linux")]
#[test]
fn the_link_free_hook_names_the_store_entry_and_wins_too() {
    the_profile_wins_in(true);
}

/// A hand-made file where the hook goes is never overwritten; two profiles binding one env are
/// refused at the second binding's line.
#[test]
fn a_foreign_file_and_a_second_binding_are_refused() {
    let lab = Lab::new();
    let venv = lab.ctx.path("proj/.venv");
    if !Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&venv).status().is_ok_and(|st| st.success()) {
        crate::support::skipped("python3 -m venv is not available");
        return;
    }
    let sp = crate::support::first_dir(&venv.join("lib"), "python3").join("site-packages");
    let file = lab.lab(
        "[profiles.a]\ncuda = \"12\"\ncudnn = \"9.5\"\npython-env = \"proj\"\n\n[profiles.b]\ncuda = \"12\"\ncudnn = \"9.5\"\npython-env = \"proj/.venv\"\n",
    );
    let (code, _, err) = lab.run(&["apply", "--no-check", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("profile `b` binds") && err.contains("which profile `a` binds already"), "{err}");
    assert!(err.contains("lab.toml:14:14"), "the error names the second binding's line: {err}");
    assert!(!sp.join("00-cuenv-a.pth").exists());

    std::fs::write(sp.join("00-cuenv-a.pth"), "import os\n").unwrap();
    let file = lab.lab("[profiles.a]\ncuda = \"12\"\ncudnn = \"9.5\"\npython-env = \"proj\"\n");
    let (code, _, err) = lab.run(&["apply", "--no-check", file.to_str().unwrap()]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("00-cuenv-a.pth"), "{err}");
    assert_eq!(std::fs::read_to_string(sp.join("00-cuenv-a.pth")).unwrap(), "import os\n");
}

/// A venv on the host's layout (`pyvenv.cfg`, `Lib\site-packages` on Windows,
/// `lib/python3.11/site-packages` elsewhere), without an interpreter: what apply reads.
fn venv_layout(prefix: &Path) -> PathBuf {
    std::fs::create_dir_all(prefix).unwrap();
    std::fs::write(prefix.join("pyvenv.cfg"), "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n").unwrap();
    let sp = if cfg!(windows) { prefix.join("Lib").join("site-packages") } else { prefix.join("lib/python3.11/site-packages") };
    std::fs::create_dir_all(&sp).unwrap();
    sp
}

/// The hook names the host's folders (Windows: cuDNN's `bin` and the toolkit's runtime folder
/// for `PATH` and `os.add_dll_directory`) and preloads the dispatcher; on Windows, a `torch\lib`
/// holding a cuDNN of the profile's major keeps torch's copy whole: nothing is preloaded.
/// Runs under Wine too (no Windows Python here: docs/windows.md).
#[test]
fn the_hook_names_the_hosts_folders_and_spares_a_torch_lib_on_windows() {
    let lab = Lab::new();
    let sp = venv_layout(&lab.ctx.path("proj/.venv"));
    let file = lab.lab("[profiles.torch]\ncuda = \"12\"\ncudnn = \"9.5\"\npython-env = \"proj\"\n");
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let text = std::fs::read_to_string(sp.join("00-cuenv-torch.pth")).unwrap();
    assert!(text.is_ascii() && text.starts_with("# cuenv-shim v2\n"), "{text}");
    let h = cuenv::pyenv::hook::parse(&text).unwrap();
    let view = lab.profiles().join("torch");
    let dispatcher = if cfg!(windows) { "cudnn64_9.dll" } else { "libcudnn.so.9" };
    // With links, the view's stable folders; link-free (Wine refuses junctions), the real
    // folders: the store entry's `bin` and the toolkit's runtime folder.
    let (cudnn_dir, cuda_dir) = if crate::support::lab::native_links_work(&lab.ctx.work) {
        (view.join("cudnn-lib"), view.join("cuda-lib"))
    } else {
        let first = h.path.first().cloned().unwrap_or_default();
        assert!(first.starts_with(lab.ctx.home.join("store")) && first.ends_with("bin"), "{text}");
        (first, h.path.get(1).cloned().unwrap_or_default())
    };
    assert_eq!(h.preload.first(), Some(&cudnn_dir.join(dispatcher)), "{text}");
    if cfg!(windows) {
        assert!(cuda_dir.ends_with("bin") && !cuda_dir.starts_with(&lab.ctx.home), "{text}");
        assert_eq!(h.path, [cudnn_dir.clone(), cuda_dir.clone()], "{text}");
        assert!(h.ld_library_path.is_empty());
        std::fs::create_dir_all(sp.join("torch").join("lib")).unwrap();
        std::fs::write(sp.join("torch").join("lib").join("CUDNN64_9.DLL"), b"MZ").unwrap();
        let file = lab.lab("[profiles.torch]\ncuda = \"12\"\ncudnn = \"9.5\"\npython-env = \"proj\"\ncheck = \"none\"\n");
        lab.ok(&["apply", file.to_str().unwrap()]);
        let h = cuenv::pyenv::hook::parse(&std::fs::read_to_string(sp.join("00-cuenv-torch.pth")).unwrap()).unwrap();
        assert!(h.preload.is_empty(), "{h:?}");
        assert_eq!(h.path, [cudnn_dir, cuda_dir]);
    } else {
        assert_eq!(h.ld_library_path, [cudnn_dir, cuda_dir], "{text}");
    }
}

/// A shell whose module puts cuDNN 9.3 on LD_LIBRARY_PATH, and a venv bound to a profile: the
/// real process, started with that LD_LIBRARY_PATH, maps the profile's copy in the torch-like
/// consumer (the hook preloaded it), so doctor does not call "LD_LIBRARY_PATH before
/// DT_RUNPATH" a problem for it; with the hook switched off both the process and doctor take
/// the module's copy, and doctor says so.
#[cfg(target_os = "linux")]
#[test]
fn doctor_counts_the_env_hooks_preload_before_a_consumers_search_path() {
    let Some(case) = Case::new(false) else { return };
    let module = case.lab.ctx.path("modules/cudnn-9.3/lib");
    release_9(&module, 3);
    let m = module.to_str().unwrap();
    let v = case.python(&["-c", PROBE], &[("LD_LIBRARY_PATH", m)]);
    assert_eq!(v["torch"], 90600, "the hook's preload wins over LD_LIBRARY_PATH: {v}");
    let off = case.python(&["-c", PROBE], &[("LD_LIBRARY_PATH", m), ("CUENV_PYTHON_HOOK", "0")]);
    assert_eq!(off["torch"], 90300, "without the hook LD_LIBRARY_PATH comes before DT_RUNPATH: {off}");
    let doctor = |extra: &[(&str, &str)]| {
        let mut c = case.lab.ctx.cmd();
        c.args(["doctor", "--python"]).arg(case.venv.join("bin/python")).env("LD_LIBRARY_PATH", m);
        for k in ["CUENV_PROFILE", "CUENV_PYTHON_HOOK", "VIRTUAL_ENV", "CONDA_PREFIX"] {
            c.env_remove(k);
        }
        for (k, val) in extra {
            c.env(k, val);
        }
        let out = c.output().unwrap();
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    let rule = "searches LD_LIBRARY_PATH before DT_RUNPATH";
    let with = doctor(&[]);
    assert!(!with.contains(rule), "the hook's preload decides, yet doctor says: {with}");
    assert!(with.contains("does not load this copy here") && with.contains("is loaded before it asks"), "{with}");
    let without = doctor(&[("CUENV_PYTHON_HOOK", "0")]);
    assert!(without.contains(rule) && without.contains("9.3"), "{without}");
}

/// `cuenv check` of a profile bound to a venv names each consumer there that would still load
/// another copy in a process that runs the hook: `onnxruntime.preload_dlls()` opens the venv's
/// wheel by full path (onnxruntime-gpu 1.31's tuple), so it maps the wheel's 9.1 beside the
/// profile's 9.6; the torch-like consumer and the load by name get the profile's copy and are
/// not named.
#[cfg(target_os = "linux")]
#[test]
fn check_names_a_consumer_of_the_bound_env_that_loads_another_copy() {
    let Some(case) = Case::new(false) else { return };
    let (code, _, err) = case.lab.run(&["check", "torch"]);
    assert!(code == 0 || code == 4, "{err}");
    assert!(!err.contains("consumer:"), "no consumer gets another copy yet: {err}");
    std::fs::create_dir_all(case.sp.join("onnxruntime")).unwrap();
    std::fs::write(
        case.sp.join("onnxruntime/__init__.py"),
        "def _get_nvidia_dll_paths(is_windows, cuda=True, cudnn=True):\n    cudnn_dll_paths = [\n        (\"nvidia\", \"cudnn\", \"lib\", \"libcudnn.so.9\"),\n    ]\n\ndef preload_dlls(cuda=True, cudnn=True, msvc=True, directory=None):\n    pass\n",
    )
    .unwrap();
    let (_, _, err) = case.lab.run(&["check", "torch"]);
    let line = err.lines().find(|l| l.contains("consumer:")).unwrap_or_else(|| panic!("no consumer note: {err}"));
    assert!(line.contains("onnxruntime.preload_dlls()") && line.contains(&case.wheel_lib.join("libcudnn.so.9").display().to_string()), "{line}");
    assert!(line.contains("not profile torch's cuDNN 9.6") && line.contains("preload_dlls(cudnn=False)"), "{line}");
    assert!(!err.contains("consumer: PyTorch"), "the torch-like consumer gets the hook's copy: {err}");
    eprintln!("env_hook: check says: {line}");
}
