//! Consumers' finders (docs/loader.md "Consumers' finders"): what `cuenv doctor` says each
//! consumer in a Python env would load, judged against the real consumer where one runs
//! without a GPU. The real cuda-pathfinder (from the clients' venv, `CUENV_CLIENTS_PYTHON`,
//! copied into the test's venv as pip would install it) is the oracle for its own finder:
//! `load_nvidia_dynamic_lib("cudnn")`'s `abs_path` and `found_via` in each of its ways.
//! TensorFlow's by-name load is judged by the real loader (`dlopen` from a library without
//! DT_RUNPATH, as TF 2.16's `libtensorflow_framework.so.2` is).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::env_hook::{release_9, torch_like};
use crate::support::stubs::{cc_lib, companion_stubs};

/// A venv (`python3 -m venv --without-pip`) at `dir/.venv` holding cuBLAS stand-ins (cuDNN's
/// dependency in pathfinder's catalog) and, when `pathfinder`, the clients' cuda-pathfinder
/// copied in. Returns (venv, site-packages), or `None` (said) when no venv or client is here.
fn venv(dir: &Path, pathfinder: bool) -> Option<(PathBuf, PathBuf)> {
    let venv = dir.join(".venv");
    if !Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&venv).status().is_ok_and(|s| s.success()) {
        crate::support::skipped("python3 -m venv is not available: the consumers' finder tests");
        return None;
    }
    let sp = crate::support::first_dir(&venv.join("lib"), "python3").join("site-packages");
    companion_stubs(&sp.join("nvidia/cublas/lib"), 12);
    if pathfinder {
        let Some(py) = std::env::var_os("CUENV_CLIENTS_PYTHON") else {
            assert!(std::env::var_os("CUENV_REQUIRE_SHELLS").is_none(), "CUENV_CLIENTS_PYTHON is required");
            crate::support::skipped("CUENV_CLIENTS_PYTHON is not set (a Python with cuda-pathfinder; .ci/run makes one): the pathfinder oracle");
            return None;
        };
        let out = Command::new(py)
            .args(["-c", "import cuda.pathfinder, os, glob; sp = os.path.dirname(os.path.dirname(os.path.dirname(cuda.pathfinder.__file__))); print(sp); print(glob.glob(os.path.join(sp, 'cuda_pathfinder-*.dist-info'))[0])"])
            .output()
            .unwrap();
        assert!(out.status.success(), "the clients' venv lacks cuda-pathfinder: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        let mut lines = text.lines();
        let (from, info) = (PathBuf::from(lines.next().unwrap()), PathBuf::from(lines.next().unwrap()));
        let st = Command::new("cp").arg("-r").arg(from.join("cuda")).arg(info).arg(&sp).status().unwrap();
        assert!(st.success());
    }
    Some((venv, sp))
}

/// The real pathfinder's answer in `venv` with the variables `vars` (nothing else of this
/// machine's): `Some((real path, found_via))`, `None` when it raises DynamicLibNotFoundError.
fn pathfinder_says(venv: &Path, vars: &[(&str, &Path)]) -> Option<(PathBuf, String)> {
    let script = "import json, os\nfrom cuda.pathfinder import load_nvidia_dynamic_lib, DynamicLibNotFoundError\ntry:\n    d = load_nvidia_dynamic_lib('cudnn')\n    print(json.dumps([os.path.realpath(d.abs_path), d.found_via]))\nexcept DynamicLibNotFoundError:\n    print('null')\n";
    let mut c = Command::new(venv.join("bin/python"));
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).arg("-c").arg(script);
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "pathfinder failed: {}", String::from_utf8_lossy(&out.stderr));
    let v: Option<(String, String)> = serde_json::from_slice(&out.stdout).unwrap();
    v.map(|(p, via)| (PathBuf::from(p), via))
}

/// `cuenv doctor --major 9 --python <venv> --json` with only `vars` set; its `consumers`.
fn doctor_loads(venv: &Path, vars: &[(&str, &Path)]) -> Vec<serde_json::Value> {
    let home = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("CUENV_HOME", home.path());
    c.env("CUENV_TOOLKIT_PATHS", "");
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c.args(["doctor", "--major", "9", "--json", "--python"]).arg(venv.join("bin/python")).output().unwrap();
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("doctor --json: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    d["consumers"].as_array().cloned().unwrap_or_default()
}

fn doctor_findings(venv: &Path, vars: &[(&str, &Path)]) -> String {
    let home = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("CUENV_HOME", home.path());
    c.env("CUENV_TOOLKIT_PATHS", "");
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c.args(["doctor", "--major", "9", "--python"]).arg(venv.join("bin/python")).output().unwrap();
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Doctor's pathfinder line against the real pathfinder, in every way it finds cuDNN:
/// the venv's wheel, `$CONDA_PREFIX/lib`, the system loader (`LD_LIBRARY_PATH`),
/// `CUDNN_PATH/lib`, `CUDA_HOME/lib64`, and none at all; each way ahead of the ones after it.
#[test]
fn doctor_says_what_the_real_cuda_pathfinder_loads_in_each_of_its_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((venv, sp)) = venv(tmp.path(), true) else { return };
    let conda = tmp.path().join("conda env");
    let ld = tmp.path().join("modules/cudnn-9.3/lib");
    let cudnn_path = tmp.path().join("cudnn root");
    let cuda_home = tmp.path().join("cuda-12.6");
    release_9(&conda.join("lib"), 2);
    release_9(&ld, 3);
    release_9(&cudnn_path.join("lib"), 4);
    release_9(&cuda_home.join("lib64"), 5);
    let all: Vec<(&str, &Path)> = vec![("CONDA_PREFIX", &conda), ("LD_LIBRARY_PATH", &ld), ("CUDNN_PATH", &cudnn_path), ("CUDA_HOME", &cuda_home)];
    let cases: Vec<(&str, Vec<(&str, &Path)>)> = vec![
        ("none", vec![]),
        ("CUDA_PATH", all[3..].to_vec()),
        ("CUDNN_PATH", all[2..].to_vec()),
        ("system-search", all[1..].to_vec()),
        ("conda", all.clone()),
    ];
    let mut seen = Vec::new();
    for (want, vars) in &cases {
        let real = pathfinder_says(&venv, vars);
        let loads = doctor_loads(&venv, vars);
        let pf = loads.iter().find(|l| l["finder"] == "pathfinder").unwrap_or_else(|| panic!("{want}: doctor names no pathfinder load: {loads:?}"));
        assert_eq!(pf["verified"], true, "{pf}");
        match &real {
            None => {
                assert_eq!(*want, "none", "pathfinder found nothing with {vars:?}");
                assert!(pf["path"].is_null(), "{want}: doctor says {pf}, pathfinder finds none");
            }
            Some((path, via)) => {
                assert_eq!(via, want, "the case is not what pathfinder does: {real:?}");
                assert_eq!(pf["found_via"].as_str(), Some(via.as_str()), "{want}: {pf}");
                assert_eq!(canon(Path::new(pf["path"].as_str().unwrap())), canon(path), "{want}: {pf}");
            }
        }
        seen.push(*want);
    }
    // The wheel in the venv comes first of all.
    release_9(&sp.join("nvidia/cudnn/lib"), 1);
    let real = pathfinder_says(&venv, &all).expect("pathfinder finds the wheel");
    assert_eq!(real.1, "site-packages");
    let loads = doctor_loads(&venv, &all);
    let pf = loads.iter().find(|l| l["finder"] == "pathfinder").unwrap();
    assert_eq!(pf["found_via"], "site-packages", "{pf}");
    assert_eq!(canon(Path::new(pf["path"].as_str().unwrap())), canon(&real.0));
    // And the text says it, with pathfinder's own label.
    let text = doctor_findings(&venv, &all);
    assert!(text.contains("cuda.pathfinder 1.") && text.contains("found_via `site-packages`"), "{text}");
    assert_eq!(seen.len(), 5);
}

/// A pathfinder whose catalog cuenv cannot read is "not verified", never a guess.
#[test]
fn a_pathfinder_catalog_in_another_form_is_not_verified() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((venv, sp)) = venv(tmp.path(), false) else { return };
    std::fs::create_dir_all(sp.join("cuda/pathfinder/_dynamic_libs")).unwrap();
    std::fs::write(sp.join("cuda/pathfinder/__init__.py"), "").unwrap();
    std::fs::write(sp.join("cuda/pathfinder/_dynamic_libs/descriptor_catalog.py"), "CATALOG = load_from_json()\n").unwrap();
    let loads = doctor_loads(&venv, &[]);
    let pf = loads.iter().find(|l| l["finder"] == "pathfinder").expect("a pathfinder row");
    assert_eq!(pf["verified"], false, "{pf}");
    let text = doctor_findings(&venv, &[]);
    assert!(text.contains("not verified") && text.contains("descriptor_catalog.py"), "{text}");
}

/// TensorFlow 2.16 with `tensorflow[and-cuda]`: the nvidia wheel is there, but
/// libtensorflow_framework.so.2 has no DT_RUNPATH into it, so its by-name dlopen fails: the
/// real loader says so, and doctor names the wheel folder the loader does not search. With
/// the folder on LD_LIBRARY_PATH, both find it.
#[test]
fn tensorflow_without_runpath_does_not_find_its_wheel_and_doctor_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((venv, sp)) = venv(tmp.path(), false) else { return };
    let tf = sp.join("tensorflow");
    std::fs::create_dir_all(tf.join("python/platform")).unwrap();
    std::fs::write(
        tf.join("python/platform/build_info.py"),
        "build_info = {'cpu_compiler': '/usr/lib/llvm-17/bin/clang', 'cuda_compute_capabilities': ['sm_50', 'compute_90'], 'cuda_version': '12.3', 'cudnn_version': '8', 'is_cuda_build': True, 'is_rocm_build': False, 'is_tensorrt_build': False}\n",
    )
    .unwrap();
    // TF's loader: dlopen("libcudnn.so.8") from a library without DT_RUNPATH.
    cc_lib(
        &tf,
        "libtensorflow_framework.so.2",
        "#include <dlfcn.h>\nint tf_load_cudnn(void) { return dlopen(\"libcudnn.so.8\", RTLD_LAZY) != 0; }\n",
        &["-ldl"],
    );
    let wheel = sp.join("nvidia/cudnn/lib");
    cc_lib(&wheel, "libcudnn.so.8", "int cudnnGetVersion(void) { return 8907; }\n", &[]);
    let real = |ld: Option<&Path>| -> bool {
        let mut c = Command::new(venv.join("bin/python"));
        c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
        if let Some(ld) = ld {
            c.env("LD_LIBRARY_PATH", ld);
        }
        let out = c
            .arg("-c")
            .arg(format!("import ctypes; print(ctypes.CDLL({:?}).tf_load_cudnn())", tf.join("libtensorflow_framework.so.2").display().to_string()))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    };
    assert!(!real(None), "the real loader found libcudnn.so.8 without LD_LIBRARY_PATH");
    let text = doctor_findings(&venv, &[]);
    assert!(
        text.contains("TensorFlow")
            && text.contains("libcudnn.so.8 would not resolve")
            && text.contains("the wheel folders are not on the loader path")
            && text.contains(&wheel.display().to_string()),
        "{text}"
    );
    assert!(text.contains("build_info.py names cuDNN 8 for CUDA 12.3"), "{text}");
    assert!(real(Some(&wheel)));
    let loads = doctor_loads(&venv, &[("LD_LIBRARY_PATH", &wheel)]);
    let t = loads.iter().find(|l| l["finder"] == "tensorflow").expect("a TensorFlow row");
    assert_eq!(canon(Path::new(t["path"].as_str().unwrap())), canon(&wheel.join("libcudnn.so.8")), "{t}");
}

/// A torch-style consumer (DT_RUNPATH into the venv's 9.1 wheel) and cuda.pathfinder with a
/// cuDNN 9.3 on LD_LIBRARY_PATH: torch alone gets the module's 9.3 (LD_LIBRARY_PATH before
/// DT_RUNPATH), pathfinder alone the wheel's 9.1. In one process the first import decides for
/// both (glibc keeps one copy per soname, pathfinder asks "already loaded?" first): the real
/// process maps the wheel alone with pathfinder first and the module's alone with torch first.
#[test]
fn two_consumers_that_would_load_different_copies_are_named_together() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((venv, sp)) = venv(tmp.path(), true) else { return };
    let wheel = sp.join("nvidia/cudnn/lib");
    release_9(&wheel, 1);
    let ld = tmp.path().join("modules/cudnn-9.3/lib");
    release_9(&ld, 3);
    torch_like(&sp);
    let maps = |first: &str| -> Vec<PathBuf> {
        let pf = "from cuda.pathfinder import load_nvidia_dynamic_lib\nload_nvidia_dynamic_lib('cudnn')\n";
        let torch = "import ctypes, os\nctypes.CDLL(os.environ['SP'] + '/torch/lib/libtorch_cuda.so')\n";
        let body = if first == "pathfinder" { format!("{pf}{torch}") } else { format!("{torch}{pf}") };
        let script =
            format!("{body}import os\nprint('\\n'.join(sorted({{os.path.realpath(l.split()[-1]) for l in open('/proc/self/maps') if 'libcudnn.so' in l}})))\n");
        let out = Command::new(venv.join("bin/python"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LD_LIBRARY_PATH", &ld)
            .env("SP", &sp)
            .arg("-c")
            .arg(script)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).lines().map(PathBuf::from).collect()
    };
    assert_eq!(maps("pathfinder"), vec![canon(&wheel.join("libcudnn.so.9"))]);
    assert_eq!(maps("torch"), vec![canon(&ld.join("libcudnn.so.9"))]);
    let text = doctor_findings(&venv, &[("LD_LIBRARY_PATH", &ld)]);
    assert!(text.contains("PyTorch's libtorch_cuda.so would load") || text.contains("cuda.pathfinder 1."), "{text}");
    assert!(
        text.contains("whichever is imported first decides which copy both get")
            && text.contains(&canon(&ld.join("libcudnn.so.9")).display().to_string())
            && text.contains(&canon(&wheel.join("libcudnn.so.9")).display().to_string()),
        "{text}"
    );
}

/// A JAX plugin built like jax_cuda12_pjrt 0.4.35's `xla_cuda_plugin.so`: no cuDNN in
/// DT_NEEDED nor in its data (XLA builds the name at run time), a DT_RPATH into the venv's
/// 9.1 wheel. With an image's 9.2 on LD_LIBRARY_PATH the real loader gives the plugin the
/// wheel's dispatcher (DT_RPATH comes before LD_LIBRARY_PATH) while a load by name gets 9.2,
/// and the wheel's dispatcher then loads the image's graph library by name (LD_LIBRARY_PATH
/// before its DT_RUNPATH `$ORIGIN`), which answers 9.2: doctor says both, naming the copies;
/// without the image nothing differs and doctor says nothing of it.
#[test]
fn a_plugin_that_dlopens_cudnn_itself_is_a_consumer_and_its_copy_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((venv, sp)) = venv(tmp.path(), false) else { return };
    let wheel = sp.join("nvidia/cudnn/lib");
    release_9(&wheel, 1);
    let image = tmp.path().join("usr local cudnn/lib");
    release_9(&image, 2);
    let plugin_dir = sp.join("jax_plugins/xla_cuda12");
    cc_lib(
        &plugin_dir,
        "xla_cuda_plugin.so",
        "#include <dlfcn.h>\n#include <stdio.h>\n#include <stddef.h>\nsize_t plugin_cudnn_version(int major) { char n[64]; snprintf(n, sizeof n, \"lib%s.so.%d\", \"cud\" \"nn\", major); void *h = dlopen(n, RTLD_LAZY); if (!h) return 0; size_t (*f)(void) = (size_t (*)(void))dlsym(h, \"cudnnGetVersion\"); return f(); }\n",
        &["-Wl,--disable-new-dtags", "-Wl,-rpath,$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN/../nvidia/cudnn/lib", "-ldl"],
    );
    let plugin = plugin_dir.join("xla_cuda_plugin.so");
    let real = |ld: Option<&Path>| -> u64 {
        let mut c = Command::new(venv.join("bin/python"));
        c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
        if let Some(ld) = ld {
            c.env("LD_LIBRARY_PATH", ld);
        }
        let script = format!(
            "import ctypes\np = ctypes.CDLL({:?})\np.plugin_cudnn_version.restype = ctypes.c_size_t\nprint(p.plugin_cudnn_version(9))",
            plugin.display().to_string()
        );
        let out = c.arg("-c").arg(script).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    assert_eq!(real(Some(&image)), 90200, "the wheel's dispatcher answers with the image's graph library");
    let text = doctor_findings(&venv, &[("LD_LIBRARY_PATH", &image)]);
    let (w, i) = (canon(&wheel.join("libcudnn.so.9")).display().to_string(), canon(&image.join("libcudnn.so.9")).display().to_string());
    assert!(
        text.contains(&format!("jax_plugins's xla_cuda_plugin.so in the venv {} would load {w}", canon(&venv).display()))
            && text.contains("through the DT_RPATH")
            && text.contains(&format!("not the {i}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("problem: jax_plugins's xla_cuda_plugin.so gets the cuDNN 9 dispatcher {w}"))
            && text.contains("a set of libraries from more than one folder"),
        "{text}"
    );
    assert_eq!(real(None), 90100);
    let text = doctor_findings(&venv, &[]);
    assert!(!text.contains("xla_cuda_plugin.so in the venv"), "{text}");
    let loads = doctor_loads(&venv, &[]);
    let p = loads.iter().find(|l| l["consumer"].as_str().is_some_and(|c| c.contains("xla_cuda_plugin.so"))).expect("the plugin's row");
    assert_eq!(canon(Path::new(p["path"].as_str().unwrap())), canon(&wheel.join("libcudnn.so.9")), "{p}");
}

/// The real files these finders read: TensorFlow 2.16.1's `build_info.py` (doctor's cuDNN and
/// CUDA are what Python itself reads from it) and its `libtensorflow_framework.so.2` (no
/// DT_RUNPATH entry into `nvidia/cudnn/lib`, so the wheel's cuDNN 8 does not resolve);
/// jax_cuda12_pjrt 0.4.35's `xla_cuda_plugin.so`, a consumer through its DT_RPATH, which gets
/// the venv's wheel copy (members of the real wheels, scripts/fetch-real-members.py).
#[test]
#[ignore = "real files: scripts/real-input.sh (CUENV_REAL_WHEELS)"]
fn real_tensorflow_and_jax_plugin_files_are_read_as_their_finders_read_them() {
    let members = crate::support::real_wheels_dir().join("members");
    let tf_real = members.join("tensorflow-2.16.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl");
    let jax_real = members.join("jax_cuda12_pjrt-0.4.35-py3-none-manylinux2014_x86_64.whl/xla_cuda_plugin.so");
    assert!(tf_real.join("build_info.py").is_file() && jax_real.is_file(), "run scripts/fetch-real-wheels.sh");
    let tmp = tempfile::tempdir().unwrap();
    let Some((venv, sp)) = venv(tmp.path(), false) else { return };
    let tf = sp.join("tensorflow");
    std::fs::create_dir_all(tf.join("python/platform")).unwrap();
    std::fs::copy(tf_real.join("build_info.py"), tf.join("python/platform/build_info.py")).unwrap();
    std::os::unix::fs::symlink(tf_real.join("libtensorflow_framework.so.2"), tf.join("libtensorflow_framework.so.2")).unwrap();
    let wheel = sp.join("nvidia/cudnn/lib");
    cc_lib(&wheel, "libcudnn.so.8", "int cudnnGetVersion(void) { return 8907; }\n", &[]);
    // The JAX plugin in a venv of its own, beside a cuDNN 9 wheel.
    let jax_tmp = tempfile::tempdir().unwrap();
    let Some((jax_venv, jax_sp)) = self::venv(jax_tmp.path(), false) else { return };
    let jax_wheel = jax_sp.join("nvidia/cudnn/lib");
    release_9(&jax_wheel, 1);
    let sp_tf = sp.clone();
    let sp = jax_sp;
    std::fs::create_dir_all(sp.join("jax_plugins/xla_cuda12")).unwrap();
    // A file of its own, as pip installs it (doctor does not follow links when it walks).
    let plugin = sp.join("jax_plugins/xla_cuda12/xla_cuda_plugin.so");
    if std::fs::hard_link(&jax_real, &plugin).is_err() {
        std::fs::copy(&jax_real, &plugin).unwrap();
    }
    // Python's own reading of the real build_info.py.
    let out = Command::new("python3")
        .arg("-c")
        .arg("import runpy, sys; b = runpy.run_path(sys.argv[1])['build_info']; print(b['cudnn_version'], b['cuda_version'])")
        .arg(sp_tf.join("tensorflow/python/platform/build_info.py"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut it = said.split_whitespace();
    let (cudnn, cuda) = (it.next().unwrap().to_string(), it.next().unwrap().to_string());
    let text = doctor_findings(&venv, &[]);
    assert!(text.contains(&format!("build_info.py names cuDNN {cudnn} for CUDA {cuda}")), "{text}");
    assert!(text.contains(&format!("libcudnn.so.{cudnn} would not resolve")) && text.contains("the wheel folders are not on the loader path"), "{text}");
    let loads = doctor_loads(&jax_venv, &[]);
    let p =
        loads.iter().find(|l| l["consumer"].as_str().is_some_and(|c| c.contains("xla_cuda_plugin.so"))).unwrap_or_else(|| panic!("no plugin row: {loads:?}"));
    assert_eq!(canon(Path::new(p["path"].as_str().unwrap())), canon(&jax_wheel.join("libcudnn.so.9")), "{p}");
    assert!(p["how"].as_str().unwrap().contains("DT_RPATH"), "{p}");
}

/// onnxruntime-gpu 1.31.1's own `__init__.py`: `preload_dlls()` opens the venv's
/// `nvidia/cudnn/lib/libcudnn.so.9` by full path. Beside a torch-style consumer that gets a
/// module's 9.3 through LD_LIBRARY_PATH, doctor says the full-path load maps a second copy, and
/// the real loader does map both files (a full-path `dlopen` of another file of the same
/// soname is not the loaded one).
#[test]
#[ignore = "real files: scripts/real-input.sh (CUENV_REAL_WHEELS)"]
fn real_onnxruntime_preload_beside_torch_maps_a_second_copy_and_doctor_says_so() {
    let real = crate::support::real_wheels_dir().join("members/onnxruntime_gpu-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl/__init__.py");
    assert!(real.is_file(), "run scripts/fetch-real-wheels.sh");
    // The same file's Windows branch, and the build facts preload_dlls reads its CUDA major from.
    let text = std::fs::read_to_string(&real).unwrap();
    let win = cuenv::doctor::finders::onnxruntime_preloads(&text, cuenv::cudnn::libname::Os::Windows).unwrap();
    assert_eq!(win, vec![(PathBuf::from("nvidia/cudnn/bin/cudnn64_9.dll"), "cudnn64_9.dll".to_string())]);
    let facts = std::fs::read_to_string(real.with_file_name("build_and_package_info.py")).expect("run scripts/fetch-real-wheels.sh");
    assert_eq!(cuenv::doctor::finders::assigned_str(&facts, "cuda_version").as_deref(), Some("13.0"));
    let tmp = tempfile::tempdir().unwrap();
    let Some((venv, sp)) = venv(tmp.path(), false) else { return };
    std::fs::create_dir_all(sp.join("onnxruntime")).unwrap();
    std::fs::copy(&real, sp.join("onnxruntime/__init__.py")).unwrap();
    let wheel = sp.join("nvidia/cudnn/lib");
    release_9(&wheel, 1);
    let ld = tmp.path().join("modules/cudnn-9.3/lib");
    release_9(&ld, 3);
    torch_like(&sp);
    let script = "import ctypes, os, sys\nctypes.CDLL(os.environ['SP'] + '/torch/lib/libtorch_cuda.so')\nctypes.CDLL(os.environ['SP'] + '/nvidia/cudnn/lib/libcudnn.so.9')\nprint('\\n'.join(sorted({os.path.realpath(l.split()[-1]) for l in open('/proc/self/maps') if 'libcudnn.so.9' in l})))\n";
    let out = Command::new(venv.join("bin/python")).env_clear().env("LD_LIBRARY_PATH", &ld).env("SP", &sp).arg("-c").arg(script).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let maps: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout).lines().map(PathBuf::from).collect();
    let (w, l) = (canon(&wheel.join("libcudnn.so.9")), canon(&ld.join("libcudnn.so.9")));
    let mut want = vec![w.clone(), l.clone()];
    want.sort();
    assert_eq!(maps, want, "the real loader maps both copies");
    let loads = doctor_loads(&venv, &[("LD_LIBRARY_PATH", &ld)]);
    let o = loads.iter().find(|x| x["finder"] == "onnxruntime").unwrap_or_else(|| panic!("no onnxruntime row: {loads:?}"));
    assert_eq!(canon(Path::new(o["path"].as_str().unwrap())), w, "{o}");
    assert_eq!(o["full_path"], true);
    let text = doctor_findings(&venv, &[("LD_LIBRARY_PATH", &ld)]);
    assert!(text.contains("onnxruntime.preload_dlls() opens its copy by full path") && text.contains("a second copy is mapped"), "{text}");
}

/// TensorFlow 2.10.1's real Windows build facts (its win_amd64 wheel's build_info.py, a member
/// fetched by scripts/fetch-real-members.py): the Windows model reads the DLL name Python itself
/// reads from the file, and its major; the Linux model's CPU-build rule does not drop it.
#[test]
#[ignore = "real files: scripts/real-input.sh (CUENV_REAL_WHEELS)"]
fn real_tensorflow_2_10_windows_build_facts_name_the_dll_it_loads() {
    let real = crate::support::real_wheels_dir().join("members/tensorflow-2.10.1-cp310-cp310-win_amd64.whl/build_info.py");
    let text = std::fs::read_to_string(&real).unwrap_or_else(|e| panic!("{}: {e}: run scripts/fetch-real-wheels.sh", real.display()));
    let out = Command::new("python3")
        .arg("-c")
        .arg("import runpy, sys; b = runpy.run_path(sys.argv[1])['build_info']; print(b['cudnn_dll_name'], b['cuda_version'])")
        .arg(&real)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let (dll, cuda) = said.split_once(' ').map(|(a, b)| (a.to_string(), b.trim().to_string())).expect("python read the file");
    let tmp = tempfile::tempdir().unwrap();
    let sp = tmp.path().join("Lib/site-packages");
    std::fs::create_dir_all(sp.join("tensorflow/python/platform")).unwrap();
    std::fs::write(sp.join("tensorflow/python/platform/build_info.py"), &text).unwrap();
    assert!(!cuenv::doctor::finders::is_cpu_build(&text));
    let e = cuenv::pyenv::PyEnv { kind: cuenv::pyenv::Kind::Venv, prefix: tmp.path().into(), site_packages: vec![sp], python: None, found_by: "test".into() };
    let get = |_: &str| None;
    let linux = cuenv::doctor::loader::LinuxEnv::new(Vec::new());
    let scene = cuenv::doctor::finders::Scene { get: &get, linux: &linux, preloaded: &[], path_folders: &[] };
    let loads = cuenv::doctor::finders::loads_windows(&e, &scene);
    let tf = loads.iter().find(|l| l.finder == cuenv::doctor::finders::Finder::Tensorflow).expect("a TensorFlow load");
    assert_eq!((tf.library.as_str(), tf.major, tf.verified), (dll.as_str(), 8, true), "{tf:?}");
    assert!(tf.how.contains(&cuda), "{tf:?}");
}
