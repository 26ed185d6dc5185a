//! PyTorch's Linux fallback (docs/loader.md C2, `doctor::finders::torch_fallbacks`): when
//! `libtorch_global_deps.so` does not load (its DT_RUNPATH does not reach the nvidia wheels,
//! which sit in another site-packages folder), `import torch` preloads its CUDA libraries by
//! full path from `sys.path`, and torch's own libraries get those copies. Judged by running
//! torch's own fallback functions (taken from its `torch/__init__.py` with `ast`) with the real
//! loader over stand-ins, and reading `/proc/self/maps`: a stand-in of 2.9's shape here, the real
//! 2.4.1 and 2.9.1 files in the real-input suite.

use std::path::Path;
use std::process::Command;

use crate::env_hook::release_9;
use crate::support::stubs::cc_lib;

/// Runs `_load_global_deps()` of the torch `__init__.py` at argv[1] (installed as
/// `<argv[2]>/torch/__init__.py`) with the folders argv[2:] first on `sys.path`, then
/// `libtorch_cuda.so`; prints the cuDNN files the process mapped and the error, as JSON.
const ORACLE: &str = r#"
import ast, builtins, ctypes, glob, importlib, importlib.util, json, os, platform, sys, types, typing
src, first = sys.argv[1], sys.argv[2]
sys.path[:0] = sys.argv[2:]
tree = ast.parse(open(src).read())
keep = {"_get_cuda_dep_paths", "_preload_cuda_deps", "_load_global_deps", "_running_with_deploy"}
body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in keep]
version = types.ModuleType("torch.version")
version.cuda = "12.8"
sys.modules.setdefault("torch", types.ModuleType("torch"))
sys.modules["torch.version"] = version
ns = {k: getattr(typing, k) for k in dir(typing) if not k.startswith("_")}
ns.update(builtins=builtins, ctypes=ctypes, glob=glob, importlib=importlib, os=os, platform=platform, sys=sys,
          __file__=os.path.join(first, "torch", "__init__.py"))
ns.setdefault("_running_with_deploy", lambda: False)
exec(compile(ast.Module(body=body, type_ignores=[]), src, "exec"), ns)
err = None
try:
    ns["_load_global_deps"]()
    ctypes.CDLL(os.path.join(first, "torch", "lib", "libtorch_cuda.so"))
except Exception as e:
    err = type(e).__name__ + ": " + str(e)
mapped = []
for line in open("/proc/self/maps"):
    parts = line.split(maxsplit=5)
    p = parts[5].strip() if len(parts) == 6 else ""
    if os.path.basename(p).startswith("libcudnn") and os.path.realpath(p) not in mapped:
        mapped.append(os.path.realpath(p))
print(json.dumps({"error": err, "mapped": mapped}))
"#;

/// The `cuda_libs` of a torch `__init__.py`: (folder, pattern) pairs.
fn cuda_libs(text: &str) -> Vec<(String, String)> {
    let at = text.find("cuda_libs").expect("cuda_libs");
    let block = &text[at..at + text[at..].find('}').unwrap()];
    block
        .lines()
        .filter_map(|l| {
            let l = l.trim().trim_end_matches(',');
            let (k, v) = l.split_once(": ")?;
            let q = |s: &str| s.trim().trim_matches(['"', '\'']).to_string();
            (k.starts_with(['"', '\''])).then(|| (q(k), q(v)))
        })
        .collect()
}

/// The case: torch in site-packages `a` (its global deps naming `libcudart.so.1` and
/// `libcudnn.so.9`, DT_RUNPATH into `a`'s nvidia folders, which are empty), every CUDA library
/// of `cuda_libs` in `b` (cuDNN 9.5 there). The real run and doctor's model must agree.
pub fn fallback_case(init_py: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("platlib/site-packages"), tmp.path().join("purelib/site-packages"));
    let torch = a.join("torch");
    std::fs::create_dir_all(&torch).unwrap();
    std::fs::write(torch.join("__init__.py"), init_py).unwrap();
    std::fs::write(torch.join("version.py"), "cuda = '12.8'\n").unwrap();
    for (folder, pattern) in cuda_libs(init_py) {
        if folder == "cudnn" {
            release_9(&b.join("nvidia/cudnn/lib"), 5);
        } else {
            let name = pattern.replace("*[0-9]", "1");
            cc_lib(&b.join("nvidia").join(&folder).join("lib"), &name, "int cuenv_stub;\n", &[]);
        }
    }
    let rpath = ["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/cudnn/lib", "-Wl,--no-as-needed"];
    let (cudart_dir, cudnn_dir) = (format!("-L{}", b.join("nvidia/cuda_runtime/lib").display()), format!("-L{}", b.join("nvidia/cudnn/lib").display()));
    let link = [&rpath[..], &[cudart_dir.as_str(), cudnn_dir.as_str(), "-l:libcudart.so.1", "-l:libcudnn.so.9"]].concat();
    cc_lib(&torch.join("lib"), "libtorch_global_deps.so", "int torch_global_deps;\n", &link);
    let link = [&rpath[..], &[cudnn_dir.as_str(), "-l:libcudnn.so.9"]].concat();
    cc_lib(&torch.join("lib"), "libtorch_cuda.so", "int torch_cuda;\n", &link);
    let init = torch.join("__init__.py");
    let out = Command::new("python3").arg("-c").arg(ORACLE).arg(&init).arg(&a).arg(&b).env_remove("LD_LIBRARY_PATH").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["error"].is_null(), "torch's own code failed: {v}");
    let want = std::fs::canonicalize(b.join("nvidia/cudnn/lib/libcudnn.so.9")).unwrap();
    assert_eq!(v["mapped"].as_array().unwrap().iter().filter(|p| p.as_str().unwrap().ends_with("libcudnn.so.9")).count(), 1, "{v}");
    assert!(v["mapped"].as_array().unwrap().iter().any(|p| Path::new(p.as_str().unwrap()) == want), "{v}");

    // Doctor's model of the same env.
    let env = cuenv::pyenv::PyEnv {
        kind: cuenv::pyenv::Kind::Venv,
        prefix: tmp.path().into(),
        site_packages: vec![a.clone(), b.clone()],
        python: None,
        found_by: "test".into(),
    };
    let linux = cuenv::doctor::loader::LinuxEnv::new(Vec::new());
    let get = |_: &str| None;
    let scene = cuenv::doctor::finders::Scene { get: &get, linux: &linux, preloaded: &[], path_folders: &[] };
    let fallbacks = cuenv::doctor::finders::torch_fallbacks(&env, &scene);
    assert_eq!(fallbacks.len(), 1, "{fallbacks:?}");
    assert_eq!(fallbacks[0].missing, "libcudart.so.1");
    assert_eq!(fallbacks[0].cudnn.as_deref().map(|p| std::fs::canonicalize(p).unwrap()), Some(want.clone()));
    let consumer = cuenv::doctor::envs::Consumer {
        path: torch.join("lib/libtorch_cuda.so"),
        who: "PyTorch's libtorch_cuda.so".into(),
        major: 9,
        torch: true,
        lazy: false,
    };
    let loads = cuenv::doctor::finders::loads(&env, std::slice::from_ref(&consumer), &scene);
    let l = loads.iter().find(|l| l.finder == cuenv::doctor::finders::Finder::Needed).expect("torch's load");
    assert_eq!(l.path.as_deref().map(|p| std::fs::canonicalize(p).unwrap()), Some(want), "{l:?}");
    assert!(l.how.contains("_preload_cuda_deps") && l.how.contains("libcudart.so.1"), "{l:?}");
    // Its framework judgement: without the fallback's preload doctor would call the import
    // broken ("no folder it searches holds it"); with it, torch's library gets the copy.
    let win = cuenv::doctor::winsearch::WinSearch::default();
    let said = |pre: &[std::path::PathBuf]| {
        cuenv::doctor::frameworks::judge(&env, &[], std::slice::from_ref(&consumer), &[], &win, "LD_LIBRARY_PATH", pre)
            .iter()
            .map(|f| f.message.clone())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(said(&[]).contains("no folder it searches holds it"), "{}", said(&[]));
    let pre: Vec<std::path::PathBuf> = fallbacks.iter().filter_map(|f| f.cudnn.clone()).collect();
    assert!(!said(&pre).contains("no folder it searches holds it"), "{}", said(&pre));
    // With the wheels beside torch (its DT_RUNPATH reaches them), no fallback runs.
    let beside = cuenv::pyenv::PyEnv { site_packages: vec![b.clone()], ..env.clone() };
    assert!(cuenv::doctor::finders::torch_fallbacks(&beside, &scene).is_empty());
}

#[test]
fn torch_2_9_shape_preloads_cudnn_from_sys_path_when_its_global_deps_do_not_load() {
    fallback_case(&std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/torch_shapes/init_2_9.py")).unwrap());
}

/// The real `torch/__init__.py` of 2.4.1 and 2.9.1 (members of the real wheels,
/// scripts/fetch-real-members.py): their own fallback maps the copy doctor names.
#[test]
#[ignore = "real files: scripts/real-input.sh (CUENV_REAL_WHEELS)"]
fn real_torch_fallbacks_preload_the_copy_doctor_names() {
    let members = crate::support::real_wheels_dir().join("members");
    for wheel in ["torch-2.4.1-cp311-cp311-manylinux1_x86_64.whl", "torch-2.9.1-cp311-cp311-manylinux_2_28_x86_64.whl"] {
        let file = members.join(wheel).join("__init__.py");
        fallback_case(&std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}: run scripts/fetch-real-wheels.sh", file.display())));
    }
}
