//! TransformerEngine's cuDNN finder (docs/loader.md C6, `doctor::finders::te`): what
//! `cuenv doctor` says `import transformer_engine` loads, judged by running TransformerEngine's
//! own finder functions (taken from its `transformer_engine/common/__init__.py` with Python's
//! `ast`, so nothing else of the package runs) with the real loader over stand-in libraries,
//! and reading `/proc/self/maps`. The hermetic tests use stand-ins of its two shapes
//! (`support/te_shapes`); the real-input test uses the real files of four releases.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::env_hook::release_9;
use crate::support::stubs::cc_lib;

/// Runs the TransformerEngine finder of `init_py` for cuDNN with `purelib` as the env's
/// purelib and, when `cache` is given, `ldconfig -p -C <cache>` for its `ldconfig -p`.
/// Prints `{"error": ..., "mapped": [...]}`: the exception its import would raise, and the
/// cuDNN files the process mapped (real paths, in map order).
const ORACLE: &str = r#"
import ast, ctypes, functools, glob, json, os, pathlib, platform, sys, typing
import subprocess as _sp, sysconfig as _sc
src, purelib, cache = sys.argv[1], sys.argv[2], sys.argv[3]
names = {"_get_sys_extension", "_load_cudnn", "_load_nvidia_cuda_library", "_load_cuda_library",
         "_load_cuda_library_from_system", "_load_cuda_library_from_python"}
tree = ast.parse(open(src).read())
body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
class SC:
    @staticmethod
    def get_path(name, *a, **k):
        return purelib if name == "purelib" else _sc.get_path(name, *a, **k)
    @staticmethod
    def get_paths(*a, **k):
        d = dict(_sc.get_paths(*a, **k)); d["purelib"] = purelib; return d
class SP:
    CalledProcessError = _sp.CalledProcessError
    @staticmethod
    def check_output(cmd, *a, **k):
        if cache:
            cmd = cmd.replace("ldconfig -p", "ldconfig -p -C '" + cache + "'") if isinstance(cmd, str) else list(cmd) + ["-C", cache]
        return _sp.check_output(cmd, *a, **k)
ns = {k: getattr(typing, k) for k in dir(typing) if not k.startswith("_")}
ns.update(ctypes=ctypes, functools=functools, glob=glob, os=os, platform=platform, subprocess=SP,
          sysconfig=SC, Path=pathlib.Path, sys=sys)
exec(compile(ast.Module(body=body, type_ignores=[]), src, "exec"), ns)
try:
    ns["_load_cudnn"]() if "_load_cudnn" in ns else ns["_load_cuda_library"]("cudnn")
    err = None
except Exception as e:
    err = type(e).__name__ + ": " + str(e)
mapped = []
for line in open("/proc/self/maps"):
    parts = line.split(maxsplit=5)
    p = parts[5].strip() if len(parts) == 6 else ""
    if os.path.basename(p).startswith("libcudnn") and p not in mapped:
        mapped.append(p)
print(json.dumps({"error": err, "mapped": mapped}))
"#;

/// What the oracle says: (error, mapped real paths).
pub fn te_oracle(python: &Path, init_py: &Path, purelib: &Path, cache: Option<&Path>, vars: &[(&str, &Path)]) -> (Option<String>, Vec<PathBuf>) {
    let mut c = Command::new(python);
    // TransformerEngine runs `ldconfig -p` by name: /sbin and /usr/sbin (where Debian keeps it,
    // off a non-root user's PATH) come last.
    let mut path = std::env::var_os("PATH").unwrap_or_default();
    path.push(":/sbin:/usr/sbin");
    c.env_clear().env("PATH", path).arg("-c").arg(ORACLE).arg(init_py).arg(purelib);
    c.arg(cache.map(|p| p.as_os_str().to_owned()).unwrap_or_default());
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "the oracle failed: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (v["error"].as_str().map(str::to_string), v["mapped"].as_array().unwrap().iter().map(|p| PathBuf::from(p.as_str().unwrap())).collect())
}

/// A cuDNN release as a tarball lays it out in `lib`: `libcudnn.so.<v>` (soname
/// `libcudnn.so.<major>`) with the links `libcudnn.so.<major>` and `libcudnn.so`.
pub fn tarball_release(lib: &Path, version: &str) {
    let major = version.split('.').next().unwrap();
    let soname = format!("libcudnn.so.{major}");
    let n: u64 = version.split('.').fold(0, |a, p| a * 100 + p.parse::<u64>().unwrap());
    cc_lib(lib, &soname, &format!("int cudnnGetVersion(void) {{ return {n}; }}\n"), &[]);
    let file = format!("libcudnn.so.{version}");
    std::fs::rename(lib.join(&soname), lib.join(&file)).unwrap();
    std::os::unix::fs::symlink(&file, lib.join(&soname)).unwrap();
    std::os::unix::fs::symlink(&soname, lib.join("libcudnn.so")).unwrap();
}

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// A venv with the TransformerEngine finder `init_py` installed as `version`; returns (venv,
/// site-packages, the installed `__init__.py`).
fn te_venv(dir: &Path, init_py: &str, version: &str) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let venv = dir.join(".venv");
    if !Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&venv).status().is_ok_and(|s| s.success()) {
        crate::support::skipped("python3 -m venv is not available: the TransformerEngine finder tests");
        return None;
    }
    let sp = crate::support::first_dir(&venv.join("lib"), "python3").join("site-packages");
    let common = sp.join("transformer_engine/common");
    std::fs::create_dir_all(&common).unwrap();
    std::fs::write(sp.join("transformer_engine/__init__.py"), "").unwrap();
    std::fs::write(common.join("__init__.py"), init_py).unwrap();
    let info = sp.join(format!("transformer_engine-{version}.dist-info"));
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(info.join("METADATA"), format!("Metadata-Version: 2.1\nName: transformer_engine\nVersion: {version}\n\n")).unwrap();
    Some((venv, sp.clone(), common.join("__init__.py")))
}

/// `cuenv doctor --json --python <venv>` with only `vars`: (its TransformerEngine row, text).
fn doctor_te(venv: &Path, vars: &[(&str, &Path)]) -> (serde_json::Value, String) {
    let run = |json: bool| {
        let home = tempfile::tempdir().unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
        c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("CUENV_HOME", home.path()).env("CUENV_TOOLKIT_PATHS", "");
        for (k, v) in vars {
            c.env(k, v);
        }
        c.args(["doctor", "--major", "9"]);
        if json {
            c.arg("--json");
        }
        c.arg("--python").arg(venv.join("bin/python")).output().unwrap()
    };
    let out = run(true);
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("doctor --json: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    let row = d["consumers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["finder"] == "transformer_engine")
        .cloned()
        .unwrap_or_else(|| panic!("no TransformerEngine row: {d}"));
    let text = run(false);
    (row, format!("{}{}", String::from_utf8_lossy(&text.stdout), String::from_utf8_lossy(&text.stderr)))
}

/// Every case of one finder: doctor's file is one the real run maps, and doctor says "none"
/// exactly when the real import fails. Returns doctor's file per case (by label), for the
/// caller's own checks.
pub fn judge_each_case(init_py: &str, version: &str) -> Option<Vec<(&'static str, Option<PathBuf>, String)>> {
    let tmp = tempfile::tempdir().unwrap();
    let (venv, sp, installed) = te_venv(tmp.path(), init_py, version)?;
    let root = |name: &str| tmp.path().join(name);
    tarball_release(&root("cudnn-9.1.0 (module)").join("lib"), "9.1.0");
    tarball_release(&root("cudnn 9.3").join("lib64"), "9.3.0");
    tarball_release(&root("cuda-12.2").join("targets/x86_64-linux/lib"), "8.9.7");
    std::fs::create_dir_all(root("empty")).unwrap();
    let (r91, r93, cuda, empty, ld93) = (root("cudnn-9.1.0 (module)"), root("cudnn 9.3"), root("cuda-12.2"), root("empty"), root("cudnn 9.3").join("lib64"));
    type Case<'a> = (&'static str, bool, Vec<(&'static str, &'a Path)>);
    let cases: Vec<Case> = vec![
        ("CUDNN_HOME and CUDNN_PATH", false, vec![("CUDNN_HOME", &r91), ("CUDNN_PATH", &r93)]),
        ("an empty CUDNN_HOME", false, vec![("CUDNN_HOME", &empty), ("CUDNN_PATH", &r93), ("CUDA_HOME", &cuda)]),
        ("CUDA_HOME", false, vec![("CUDA_HOME", &cuda)]),
        ("LD_LIBRARY_PATH only", false, vec![("LD_LIBRARY_PATH", &ld93)]),
        ("nothing", false, vec![]),
        ("the wheel and CUDNN_HOME", true, vec![("CUDNN_HOME", &r91)]),
        ("the wheel and LD_LIBRARY_PATH", true, vec![("LD_LIBRARY_PATH", &ld93)]),
    ];
    let mut out = Vec::new();
    for (label, wheel, vars) in &cases {
        if *wheel && !sp.join("nvidia/cudnn/lib/libcudnn.so.9").exists() {
            release_9(&sp.join("nvidia/cudnn/lib"), 5);
        }
        let (err, mapped) = te_oracle(&venv.join("bin/python"), &installed, &sp, None, vars);
        let (row, text) = doctor_te(&venv, vars);
        assert_eq!(row["verified"], true, "{version} {label}: {row}");
        let said = row["path"].as_str().map(PathBuf::from);
        match (&err, &said) {
            (Some(e), None) => assert!(text.contains("TransformerEngine"), "{version} {label}: the import fails ({e}) and doctor does not say so: {text}"),
            (None, Some(p)) => {
                let mapped: Vec<PathBuf> = mapped.iter().map(|m| canon(m)).collect();
                assert!(mapped.contains(&canon(p)), "{version} {label}: doctor says {} ({row}), the real run mapped {mapped:?}", p.display());
            }
            _ => panic!("{version} {label}: the real run: error {err:?}, mapped {mapped:?}; doctor: {row}"),
        }
        out.push((*label, said.map(|p| canon(&p)), text));
    }
    Some(out)
}

/// TransformerEngine 2.7's shape: `CUDNN_HOME or CUDNN_PATH` is one step (an empty
/// `CUDNN_HOME` hides `CUDNN_PATH`), a set `CUDNN_HOME` beats the wheel, and with no cuDNN in
/// the ld.so cache its `ldconfig -p | grep` fails the import before the load by name.
#[test]
fn transformer_engine_2_7_shape_loads_what_its_own_code_loads() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/te_shapes/load_cudnn_2_7.py")).unwrap();
    let Some(cases) = judge_each_case(&text, "2.7.0") else { return };
    let got = |label: &str| cases.iter().find(|c| c.0 == label).unwrap().1.clone();
    assert!(got("CUDNN_HOME and CUDNN_PATH").unwrap().ends_with("cudnn-9.1.0 (module)/lib/libcudnn.so.9.1.0"));
    assert!(got("an empty CUDNN_HOME").unwrap().ends_with("cuda-12.2/targets/x86_64-linux/lib/libcudnn.so.8.9.7"), "the CUDA_HOME step, not CUDNN_PATH");
    assert!(got("the wheel and CUDNN_HOME").unwrap().ends_with("cudnn-9.1.0 (module)/lib/libcudnn.so.9.1.0"), "a set CUDNN_HOME beats the wheel");
    assert_eq!(got("LD_LIBRARY_PATH only"), None, "grep finds no libcudnn.so in the ld.so cache and the import fails");
}

/// TransformerEngine 2.20's shape: each root in turn, the load by name of the unversioned
/// `libcudnn.so` before the wheel, and its MIN_CUDNN_VERSION: doctor calls a cuDNN below 9.12
/// a problem of the import.
#[test]
fn transformer_engine_2_20_shape_loads_what_its_own_code_loads() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/te_shapes/load_cuda_library_2_20.py")).unwrap();
    let Some(cases) = judge_each_case(&text, "2.20.2") else { return };
    let case = |label: &str| cases.iter().find(|c| c.0 == label).unwrap().clone();
    assert!(case("an empty CUDNN_HOME").1.unwrap().ends_with("cudnn 9.3/lib64/libcudnn.so.9.3.0"), "each root in turn: CUDNN_PATH");
    assert!(case("the wheel and LD_LIBRARY_PATH").1.unwrap().ends_with("cudnn 9.3/lib64/libcudnn.so.9.3.0"), "the load by name comes before the wheel");
    let (_, _, text) = case("CUDNN_HOME and CUDNN_PATH");
    assert!(text.contains("refuses a cuDNN older than 9.12.0") && text.contains("set CUDNN_HOME"), "{text}");
}

/// An ld.so cache of this machine's default folders plus `dirs` (`ldconfig -X -C FILE -f
/// CONF`: no link is changed); `None` (said) without `ldconfig`.
fn build_cache(dir: &Path, dirs: &[&Path]) -> Option<PathBuf> {
    let conf = dir.join("ld.so.conf");
    std::fs::write(&conf, dirs.iter().map(|d| format!("{}\n", d.display())).collect::<String>()).unwrap();
    let cache = dir.join("ld.so.cache");
    let ldconfig =
        ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"].into_iter().find(|l| Command::new(l).arg("--version").output().is_ok_and(|o| o.status.success()));
    let Some(ldconfig) = ldconfig else {
        crate::support::skipped("ldconfig is not here: the TransformerEngine ld.so cache case");
        return None;
    };
    let out = Command::new(ldconfig).arg("-X").arg("-C").arg(&cache).arg("-f").arg(&conf).output().unwrap();
    assert!(out.status.success() && cache.is_file(), "ldconfig: {}", String::from_utf8_lossy(&out.stderr));
    Some(cache)
}

/// The issue's case: the shell's module puts cuDNN 9.1.0 on LD_LIBRARY_PATH, the ld.so cache
/// holds 8.9.7. A TransformerEngine whose finder reads `ldconfig -p` before its load by name
/// gets 8.9.7 (its own code, run over that cache, maps it), and doctor says so against the
/// 9.1.0 a load by name of `libcudnn.so.9` gets, naming CUDNN_HOME as the fix.
pub fn ld_cache_case(init_py: &str, version: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let Some((venv, sp, installed)) = te_venv(tmp.path(), init_py, version) else { return };
    let module = tmp.path().join("modules/cudnn-9.1.0/lib");
    let system = tmp.path().join("usr lib/x86_64-linux-gnu");
    tarball_release(&module, "9.1.0");
    tarball_release(&system, "8.9.7");
    let Some(cache) = build_cache(tmp.path(), &[&system]) else { return };
    let (err, mapped) = te_oracle(&venv.join("bin/python"), &installed, &sp, Some(&cache), &[("LD_LIBRARY_PATH", &module)]);
    assert_eq!(err, None, "{version}");
    let mapped: Vec<PathBuf> = mapped.iter().map(|m| canon(m)).collect();
    assert_eq!(mapped, vec![canon(&system.join("libcudnn.so.8.9.7"))], "{version}: its own code maps the cache's 8.9.7");
    let mut linux = cuenv::doctor::loader::LinuxEnv::new(vec![module.clone()]);
    linux.cache = cuenv::doctor::loader::read_ld_so_cache(&cache);
    let vars = [("LD_LIBRARY_PATH".to_string(), module.clone().into_os_string())];
    let get = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let scene = cuenv::doctor::finders::Scene { get: &get, linux: &linux, preloaded: &[], path_folders: &[] };
    let env = cuenv::pyenv::PyEnv {
        kind: cuenv::pyenv::Kind::Venv,
        prefix: venv.clone(),
        site_packages: vec![sp.clone()],
        python: Some(venv.join("bin/python")),
        found_by: "test".into(),
    };
    let loads = cuenv::doctor::finders::loads(&env, &[], &scene);
    let te = loads.iter().find(|l| l.finder == cuenv::doctor::finders::Finder::TransformerEngine).expect("a TransformerEngine load");
    assert_eq!(te.path.as_deref().map(canon), Some(mapped[0].clone()), "{version}: {te:?}");
    assert!(te.how.contains("ldconfig -p"), "{te:?}");
    let findings = cuenv::doctor::finders::judge(&env, &loads, &[(9, Some(module.join("libcudnn.so.9")))], cuenv::cudnn::libname::Os::Linux);
    let f = findings.iter().find(|f| f.message.contains("TransformerEngine")).unwrap_or_else(|| panic!("{version}: nothing said: {findings:?}"));
    assert!(f.message.contains("8.9.7") && f.message.contains("9.1.0"), "{}", f.message);
    assert!(f.hint.as_deref().is_some_and(|h| h.contains("CUDNN_HOME")), "{f:?}");
}

#[test]
fn transformer_engine_2_7_shape_takes_the_ld_so_cache_over_ld_library_path() {
    ld_cache_case(&std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/te_shapes/load_cudnn_2_7.py")).unwrap(), "2.7.0");
}

/// The real `transformer_engine/common/__init__.py` of four releases (members of the real
/// wheels, scripts/fetch-real-members.py): each is read (none "not verified"), and in every
/// case doctor's file is the one TransformerEngine's own code maps; 2.7 and 2.10 take the
/// ld.so cache's 8.9.7 over a module's 9.1.0.
#[test]
#[ignore = "real files: scripts/real-input.sh (CUENV_REAL_WHEELS)"]
fn real_transformer_engine_finders_load_what_their_own_code_loads() {
    let members = crate::support::real_wheels_dir().join("members");
    for version in ["2.3.0", "2.7.0", "2.10.0", "2.20.2"] {
        let file = members.join(format!("transformer_engine-{version}-py3-none-any.whl/__init__.py"));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}: run scripts/fetch-real-wheels.sh", file.display()));
        let Some(cases) = judge_each_case(&text, version) else { return };
        eprintln!(
            "te_finder: TransformerEngine {version}: {}",
            cases
                .iter()
                .map(|(l, p, _)| format!("{l}: {}", p.as_ref().map(|p| p.display().to_string()).unwrap_or("import fails".into())))
                .collect::<Vec<_>>()
                .join("; ")
        );
        if ["2.7.0", "2.10.0"].contains(&version) {
            ld_cache_case(&text, version);
        }
    }
}
