//! The Linux loader model (docs/loader.md) against the real loader: each setup is built from
//! gcc stubs (and, in the `#[ignore]`d tests run by scripts/real-input.sh, the real wheels'
//! libraries), loaded through python3 ctypes the way a framework loads cuDNN, and what ld.so
//! really mapped (`/proc/self/maps`) is recorded first; then `cuenv doctor`'s verdict must
//! name the same files.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::stubs::Stubs;

/// Loads `lib` with ctypes, calls `func` (with `arg` as a C string when given), prints its
/// return value, then every mapped file whose name holds `cudnn`.
const ORACLE_PY: &str = r#"
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
f = getattr(lib, sys.argv[2])
f.restype = ctypes.c_size_t
args = [a.encode() for a in sys.argv[3:]]
v = f(*args)
print(v)
seen = []
for line in open('/proc/self/maps'):
    parts = line.split(None, 5)
    if len(parts) == 6 and 'cudnn' in parts[5]:
        p = parts[5].strip()
        if p not in seen:
            seen.append(p)
print("\n".join(seen))
"#;

/// What the real loader did: the function's return value and the cuDNN files mapped.
struct Mapped {
    value: u64,
    files: Vec<PathBuf>,
}

impl Mapped {
    /// The mapped file named `name`.
    fn file(&self, name: &str) -> &Path {
        self.files.iter().find(|f| f.file_name().is_some_and(|n| n == name)).unwrap_or_else(|| panic!("{name} was not mapped: {:?}", self.files))
    }
}

/// Runs the oracle with `LD_LIBRARY_PATH` = `ld`.
fn oracle(tmp: &Path, ld: &[&Path], lib: &Path, func: &str, arg: Option<&str>) -> Mapped {
    let script = tmp.join("oracle.py");
    std::fs::write(&script, ORACLE_PY).unwrap();
    let mut c = Command::new("python3");
    c.arg(&script).arg(lib).arg(func).args(arg).env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap());
    let out = c.output().expect("python3 runs the loader oracle");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "oracle failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    let mut lines = text.lines();
    let value = lines.next().unwrap().trim().parse().unwrap();
    Mapped { value, files: lines.map(|l| std::fs::canonicalize(l).unwrap_or_else(|_| PathBuf::from(l))).collect() }
}

/// `cuenv doctor --major <major>` with `LD_LIBRARY_PATH` = `ld` and `CONDA_PREFIX` = `prefix`.
fn doctor(major: &str, ld: &[&Path], prefix: Option<&Path>) -> (i32, String) {
    let home = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("CUENV_HOME", home.path());
    c.env("CUENV_TOOLKIT_PATHS", "").env("CUDA_HOME", "").env("CUDA_PATH", "");
    c.env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap());
    if let Some(p) = prefix {
        c.env("CONDA_PREFIX", p);
    }
    let out = c.args(["doctor", "--major", major]).output().unwrap();
    (out.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// A conda env with a torch-like `torch/lib/libtorch_cuda.so` that names `dispatcher`
/// (`libcudnn.so.9`) in DT_NEEDED, linked against the wheel folder `wheel` with the search
/// path `$ORIGIN/../../nvidia/cudnn/lib` as DT_RUNPATH (`new_dtags`) or DT_RPATH.
fn torch_like(s: &Stubs, prefix: &Path, dispatcher: &str, new_dtags: bool) -> PathBuf {
    torch_like_in(s, &prefix.join("lib/python3.11/site-packages"), dispatcher, new_dtags)
}

/// [`torch_like`] in the site-packages folder `sp`.
fn torch_like_in(s: &Stubs, sp: &Path, dispatcher: &str, new_dtags: bool) -> PathBuf {
    let torch = sp.join("torch/lib");
    std::fs::create_dir_all(&torch).unwrap();
    let src = s.tmp.path().join("torch_like.c");
    std::fs::write(&src, "#include <stddef.h>\nsize_t cudnnGetVersion(void);\nsize_t torch_cudnn_version(void) { return cudnnGetVersion(); }\n").unwrap();
    let lib = torch.join("libtorch_cuda.so");
    let out = Command::new(&s.cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .arg(format!("-L{}", sp.join("nvidia/cudnn/lib").display()))
        .arg(format!("-l:{dispatcher}"))
        .arg(if new_dtags { "-Wl,--enable-new-dtags" } else { "-Wl,--disable-new-dtags" })
        .arg("-Wl,-rpath,$ORIGIN/../../nvidia/cudnn/lib")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    lib
}

/// Builds a stub cuDNN library `file` into `dir` with DT_RUNPATH `$ORIGIN`, like NVIDIA's.
fn stub(s: &Stubs, dir: &Path, file: &str, defines: &[&str]) {
    let rel = dir.strip_prefix(s.tmp.path()).unwrap().to_str().unwrap().to_string();
    s.build_with(&rel, file, defines, &["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"]);
}

/// The issue's first setup: DT_RUNPATH to the wheel's 9.5, an older `libcudnn.so.9` (9.1.0)
/// on LD_LIBRARY_PATH. The loader takes the 9.1.0 one (LD_LIBRARY_PATH beats DT_RUNPATH);
/// doctor must say so, as a problem naming that file.
#[test]
fn runpath_loses_to_ld_library_path() {
    let s = Stubs::new();
    let prefix = s.tmp.path().join("env");
    let wheel = prefix.join("lib/python3.11/site-packages/nvidia/cudnn/lib");
    std::fs::create_dir_all(&wheel).unwrap();
    std::fs::create_dir_all(prefix.join("lib/python3.11/site-packages/nvidia_cudnn_cu12-9.5.0.50.dist-info")).unwrap();
    stub(&s, &wheel, "libcudnn.so.9", &["MODE_SUB"]);
    stub(&s, &wheel, "libcudnn_graph.so.9", &["GRAPH", "VERSION=90500", "MARKER=\"cudnn_version_9_5_0_50_34937467_e0\""]);
    let old = s.tmp.path().join("old");
    std::fs::create_dir_all(&old).unwrap();
    stub(&s, &old, "libcudnn.so.9", &["MODE_SUB"]);
    stub(&s, &old, "libcudnn_graph.so.9", &["GRAPH", "VERSION=90100", "MARKER=\"cudnn_version_9_1_0_70_1_e0\""]);
    let torch = torch_like(&s, &prefix, "libcudnn.so.9", true);

    let m = oracle(s.tmp.path(), &[&old], &torch, "torch_cudnn_version", None);
    assert_eq!(m.value, 90100, "the real loader took LD_LIBRARY_PATH's copy: {:?}", m.files);
    assert_eq!(m.file("libcudnn.so.9"), old.join("libcudnn.so.9"));

    let (code, out) = doctor("9", &[&old], Some(&prefix));
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains(&format!(
            "problem: PyTorch's libtorch_cuda.so names libcudnn.so.9 with DT_RUNPATH `$ORIGIN/../../nvidia/cudnn/lib`, and the loader searches LD_LIBRARY_PATH before DT_RUNPATH: it takes {} (9.1.0.70) through LD_LIBRARY_PATH (position 1), not its own {} (9.5.0.50)",
            m.file("libcudnn.so.9").display(),
            std::fs::canonicalize(wheel.join("libcudnn.so.9")).unwrap().display()
        )),
        "{out}"
    );
    assert!(out.contains(&format!("hint: remove {} from LD_LIBRARY_PATH", old.display())), "{out}");
    assert!(!out.contains("whatever LD_LIBRARY_PATH says"), "the blanket sentence is gone: {out}");

    // Without the older folder the wheel's copy wins, and doctor says why in the model's terms.
    let empty = s.tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let m = oracle(s.tmp.path(), &[&empty], &torch, "torch_cudnn_version", None);
    assert_eq!(m.value, 90500);
    let (code, out) = doctor("9", &[&empty], Some(&prefix));
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("hint: PyTorch's libtorch_cuda.so finds libcudnn.so.9 here through the DT_RUNPATH `$ORIGIN/../../nvidia/cudnn/lib` of libtorch_cuda.so since no LD_LIBRARY_PATH folder holds libcudnn.so.9; one that does, put on LD_LIBRARY_PATH, would win over it"),
        "{out}"
    );
}

/// The issue's second setup: DT_RPATH to the 8.9.4 wheel's dispatcher, an 8.8.0 set on
/// LD_LIBRARY_PATH. The dispatcher comes from the wheel (DT_RPATH first), but it loads
/// `libcudnn_ops_infer.so.8` by name with its own DT_RUNPATH, so the 8.8.0 folder wins: a
/// mixed set, version 8800.
#[test]
fn rpath_dispatcher_still_takes_sub_libraries_from_ld_library_path() {
    let s = Stubs::new();
    let prefix = s.tmp.path().join("env");
    let wheel = prefix.join("lib/python3.11/site-packages/nvidia/cudnn/lib");
    std::fs::create_dir_all(&wheel).unwrap();
    let sub = "SUBLIB=\"libcudnn_ops_infer.so.8\"";
    stub(&s, &wheel, "libcudnn.so.8", &["MODE_SUB", sub]);
    stub(&s, &wheel, "libcudnn_ops_infer.so.8", &["GRAPH", "VERSION=8904", "MARKER=\"cudnn_version_8_9_4_25_c33150885_e0\""]);
    let old = s.tmp.path().join("cudnn-8.8.0");
    std::fs::create_dir_all(&old).unwrap();
    stub(&s, &old, "libcudnn.so.8", &["MODE_SUB", sub]);
    stub(&s, &old, "libcudnn_ops_infer.so.8", &["GRAPH", "VERSION=8800", "MARKER=\"cudnn_version_8_8_0_121_c32388184_e0\""]);
    let torch = torch_like(&s, &prefix, "libcudnn.so.8", false);

    let m = oracle(s.tmp.path(), &[&old], &torch, "torch_cudnn_version", None);
    assert_eq!(m.value, 8800, "{:?}", m.files);
    assert_eq!(m.file("libcudnn.so.8"), std::fs::canonicalize(wheel.join("libcudnn.so.8")).unwrap());
    assert_eq!(m.file("libcudnn_ops_infer.so.8"), old.join("libcudnn_ops_infer.so.8"));

    let (code, out) = doctor("8", &[&old], Some(&prefix));
    assert_eq!(code, 4, "{out}");
    let dispatcher = std::fs::canonicalize(wheel.join("libcudnn.so.8")).unwrap();
    assert!(
        out.contains(&format!(
            "problem: PyTorch's libtorch_cuda.so gets the cuDNN 8 dispatcher {} (8.9.4.25), which loads its sub-libraries by name, and the loader searches LD_LIBRARY_PATH before the dispatcher's DT_RUNPATH `$ORIGIN`: it would load libcudnn_ops_infer.so.8 from {} (8.8.0.121) through LD_LIBRARY_PATH (position 1)",
            dispatcher.display(),
            m.file("libcudnn_ops_infer.so.8").parent().unwrap().display()
        )),
        "{out}"
    );
}

/// `-D` flag of a stub dispatcher naming the six sub-libraries the real 8.x dispatcher names.
const NAMES_8: &str =
    "NAMES=\"libcudnn_ops_infer.so.8 libcudnn_ops_train.so.8 libcudnn_cnn_infer.so.8 libcudnn_cnn_train.so.8 libcudnn_adv_infer.so.8 libcudnn_adv_train.so.8\"";

/// A folder ahead on LD_LIBRARY_PATH holds only an older
/// `libcudnn_cnn_infer.so.8`; a complete set follows. Without a GPU the probe never loads
/// cnn_infer, but the dispatcher's own `dlopen` would take it from the older folder: doctor
/// says so (the oracle makes the dispatcher itself dlopen it).
#[test]
fn a_stray_sub_library_ahead_on_the_path_is_found_without_loading_it() {
    let s = Stubs::new();
    let set = s.tmp.path().join("cudnn-8.9.4");
    let stray = s.tmp.path().join("stray");
    std::fs::create_dir_all(&set).unwrap();
    std::fs::create_dir_all(&stray).unwrap();
    let sub = "SUBLIB=\"libcudnn_ops_infer.so.8\"";
    // Like the real 8.x dispatcher, it names the sub-libraries it loads.
    stub(&s, &set, "libcudnn.so.8", &["MODE_SUB", sub, NAMES_8]);
    stub(&s, &set, "libcudnn_ops_infer.so.8", &["GRAPH", "VERSION=8904", "MARKER=\"cudnn_version_8_9_4_25_c33150885_e0\""]);
    stub(&s, &set, "libcudnn_cnn_infer.so.8", &["GRAPH", "VERSION=8904"]);
    stub(&s, &stray, "libcudnn_cnn_infer.so.8.8.0", &["GRAPH", "VERSION=8800"]);
    std::os::unix::fs::symlink("libcudnn_cnn_infer.so.8.8.0", stray.join("libcudnn_cnn_infer.so.8")).unwrap();
    let rt = s.cudart();

    let m = oracle(s.tmp.path(), &[&stray, &set, &rt], &set.join("libcudnn.so.8"), "stub_dlopen", Some("libcudnn_cnn_infer.so.8"));
    assert_ne!(m.value, 0);
    assert_eq!(m.file("libcudnn_cnn_infer.so.8.8.0"), stray.join("libcudnn_cnn_infer.so.8.8.0"));

    let (code, out) = doctor("8", &[&stray, &set, &rt], None);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains(&format!(
            "problem: cuDNN 8 from {} (8.9.4.25): cuDNN loads its sub-libraries by name, and the loader searches LD_LIBRARY_PATH before the dispatcher's DT_RUNPATH `$ORIGIN`, so it would load libcudnn_cnn_infer.so.8 from {} (8.8.0) through LD_LIBRARY_PATH (position 1)",
            set.join("libcudnn.so.8").display(),
            stray.display()
        )),
        "{out}"
    );
}

/// `$CUENV_REAL_WHEELS`, else `~/.cache/cuenv-real-wheels` (scripts/fetch-real-wheels.sh).
fn real_wheel(file: &str) -> PathBuf {
    let dir = std::env::var_os("CUENV_REAL_WHEELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/cuenv-real-wheels"));
    let p = dir.join(file);
    assert!(p.is_file(), "{} is missing: run scripts/fetch-real-wheels.sh (or set CUENV_REAL_WHEELS)", p.display());
    p
}

/// Extracts the members `nvidia/cudnn/lib/<name>` of `wheel` into `dest`.
fn extract(wheel: &Path, names: &[&str], dest: &Path) {
    std::fs::create_dir_all(dest).unwrap();
    let mut zip = zip::ZipArchive::new(std::fs::File::open(wheel).unwrap()).unwrap();
    for n in names {
        let mut m = zip.by_name(&format!("nvidia/cudnn/lib/{n}")).unwrap();
        let mut out = std::fs::File::create(dest.join(n)).unwrap();
        std::io::copy(&mut m, &mut out).unwrap();
    }
}

/// The issue's second setup with the real libraries: DT_RPATH to the real 8.9.4 wheel's
/// dispatcher, the real 8.8.0 wheel's files on LD_LIBRARY_PATH.
#[test]
#[ignore = "needs the real cuDNN wheels (scripts/real-input.sh)"]
fn real_rpath_dispatcher_takes_ops_infer_from_ld_library_path() {
    let s = Stubs::new();
    let prefix = s.tmp.path().join("env");
    let sp = prefix.join("lib/python3.11/site-packages");
    let wheel = sp.join("nvidia/cudnn/lib");
    let files = ["libcudnn.so.8", "libcudnn_ops_infer.so.8"];
    extract(&real_wheel("nvidia_cudnn_cu12-8.9.4.25-py3-none-manylinux1_x86_64.whl"), &files, &wheel);
    std::fs::create_dir_all(sp.join("nvidia_cudnn_cu12-8.9.4.25.dist-info")).unwrap();
    let old = s.tmp.path().join("cudnn-8.8.0");
    extract(&real_wheel("nvidia_cudnn_cu11-8.8.0.121-py3-none-manylinux1_x86_64.whl"), &files, &old);
    let torch = torch_like(&s, &prefix, "libcudnn.so.8", false);

    let m = oracle(s.tmp.path(), &[&old], &torch, "torch_cudnn_version", None);
    assert_eq!(m.value, 8800, "{:?}", m.files);
    assert_eq!(m.file("libcudnn.so.8"), std::fs::canonicalize(wheel.join("libcudnn.so.8")).unwrap());
    assert_eq!(m.file("libcudnn_ops_infer.so.8"), old.join("libcudnn_ops_infer.so.8"));

    let (code, out) = doctor("8", &[&old], Some(&prefix));
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains(&format!(
            "problem: PyTorch's libtorch_cuda.so gets the cuDNN 8 dispatcher {} (8.9.4.25), which loads its sub-libraries by name, and the loader searches LD_LIBRARY_PATH before the dispatcher's DT_RUNPATH `$ORIGIN`: it would load libcudnn_ops_infer.so.8 from {} (8.8.0.121) through LD_LIBRARY_PATH (position 1)",
            m.file("libcudnn.so.8").display(),
            old.display()
        )),
        "{out}"
    );
}

/// The issue's first setup with the real 9.5 wheel behind DT_RUNPATH and a stub 9.1.0 set (no
/// 9.1 wheel is in the real-input cache) on LD_LIBRARY_PATH.
#[test]
#[ignore = "needs the real cuDNN wheels (scripts/real-input.sh)"]
fn real_runpath_wheel_loses_to_ld_library_path() {
    let s = Stubs::new();
    let prefix = s.tmp.path().join("env");
    let sp = prefix.join("lib/python3.11/site-packages");
    let wheel = sp.join("nvidia/cudnn/lib");
    extract(&real_wheel("nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl"), &["libcudnn.so.9", "libcudnn_graph.so.9"], &wheel);
    std::fs::create_dir_all(sp.join("nvidia_cudnn_cu12-9.5.0.50.dist-info")).unwrap();
    let old = s.tmp.path().join("old");
    std::fs::create_dir_all(&old).unwrap();
    stub(&s, &old, "libcudnn.so.9", &["MODE_SUB"]);
    stub(&s, &old, "libcudnn_graph.so.9", &["GRAPH", "VERSION=90100", "MARKER=\"cudnn_version_9_1_0_70_1_e0\""]);
    let torch = torch_like(&s, &prefix, "libcudnn.so.9", true);

    let empty = s.tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert_eq!(oracle(s.tmp.path(), &[&empty], &torch, "torch_cudnn_version", None).value, 90500);
    let m = oracle(s.tmp.path(), &[&old], &torch, "torch_cudnn_version", None);
    assert_eq!(m.value, 90100, "{:?}", m.files);
    let (code, out) = doctor("9", &[&old], Some(&prefix));
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains(&format!(
            "it takes {} (9.1.0.70) through LD_LIBRARY_PATH (position 1), not its own {} (9.5.0.50)",
            m.file("libcudnn.so.9").display(),
            std::fs::canonicalize(wheel.join("libcudnn.so.9")).unwrap().display()
        )),
        "{out}"
    );
}

/// Issue 30's first case with real files: a real venv (`python3 -m venv`) holding the real
/// 9.5.0.50 wheel behind a torch-like DT_RUNPATH, a stub 9.1.0 set on LD_LIBRARY_PATH (no
/// second 9.x wheel is in the real-input cache).
/// No variable names the venv: doctor finds it through `--python <venv>/bin/python`.
#[test]
#[ignore = "needs the real cuDNN wheels (scripts/real-input.sh)"]
fn real_wheel_in_a_venv_loses_to_ld_library_path() {
    let s = Stubs::new();
    let prefix = s.tmp.path().join("venv");
    let made = Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&prefix).status().unwrap();
    assert!(made.success());
    let sp = crate::support::first_dir(&prefix.join("lib"), "python").join("site-packages");
    let wheel = sp.join("nvidia/cudnn/lib");
    extract(&real_wheel("nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl"), &["libcudnn.so.9", "libcudnn_graph.so.9"], &wheel);
    std::fs::create_dir_all(sp.join("nvidia_cudnn_cu12-9.5.0.50.dist-info")).unwrap();
    let system = s.tmp.path().join("system");
    std::fs::create_dir_all(&system).unwrap();
    stub(&s, &system, "libcudnn.so.9", &["MODE_SUB"]);
    stub(&s, &system, "libcudnn_graph.so.9", &["GRAPH", "VERSION=90100", "MARKER=\"cudnn_version_9_1_0_70_1_e0\""]);
    let lib = torch_like_in(&s, &sp, "libcudnn.so.9", true);

    let m = oracle(s.tmp.path(), &[&system], &lib, "torch_cudnn_version", None);
    assert_eq!(m.value, 90100, "{:?}", m.files);
    let home = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("CUENV_HOME", home.path());
    c.env("CUENV_TOOLKIT_PATHS", "").env("CUDA_HOME", "").env("CUDA_PATH", "").env("LD_LIBRARY_PATH", &system);
    let out = c.args(["doctor", "--major", "9", "--python"]).arg(prefix.join("bin/python")).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(
        text.contains(&format!(
            "it takes {} (9.1.0.70) through LD_LIBRARY_PATH (position 1), not its own {} (9.5.0.50)",
            m.file("libcudnn.so.9").display(),
            std::fs::canonicalize(wheel.join("libcudnn.so.9")).unwrap().display()
        )),
        "{text}"
    );
}

/// Item 1 with the real files: a stray 8.8.0 `libcudnn_ops_infer.so.8` ahead of the
/// real 8.9.4 set. The version cuDNN reports (8800) is the stray file's: the headline
/// attributes it to that file, not to the 8.9.4 dispatcher.
#[test]
#[ignore = "needs the real cuDNN wheels (scripts/real-input.sh)"]
fn real_stray_ops_infer_is_named_as_the_carrier_of_the_version() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("cudnn-8.9.4");
    extract(&real_wheel("nvidia_cudnn_cu12-8.9.4.25-py3-none-manylinux1_x86_64.whl"), &["libcudnn.so.8", "libcudnn_ops_infer.so.8"], &set);
    let stray = tmp.path().join("stray");
    extract(&real_wheel("nvidia_cudnn_cu11-8.8.0.121-py3-none-manylinux1_x86_64.whl"), &["libcudnn_ops_infer.so.8"], &stray);
    let m = oracle(tmp.path(), &[&stray, &set], &set.join("libcudnn.so.8"), "cudnnGetVersion", None);
    assert_eq!(m.value, 8800);
    assert_eq!(m.file("libcudnn_ops_infer.so.8"), stray.join("libcudnn_ops_infer.so.8"));
    let (code, out) = doctor("8", &[&stray, &set], None);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains(&format!(
            "cuDNN 8: 8.8.0, built for CUDA 11.8 (reported by {}, not a file of the dispatcher's folder)",
            stray.join("libcudnn_ops_infer.so.8").display()
        )),
        "{out}"
    );
    // The CUDA 11 runtime the stray file asks for is no problem of the 8.9.4 set.
    assert!(!out.contains("libcudart.so.11.0 was not found"), "{out}");
    // The folder scan lists the folder holding only a sub-library, with its version.
    assert!(out.contains(&format!("1. {}: libcudnn_ops_infer.so.8 (8.8.0.121) [no dispatcher]", stray.display())), "{out}");
}

/// What the real wheels' libraries carry (docs/facts.md §7b): the release marker in
/// `libcudnn_ops_infer.so.8` / `libcudnn_graph.so.9` / `cudnn_graph64_9.dll`, VERSIONINFO in
/// the other DLLs (none in `cudnn_graph64_9.dll`), nothing in the Linux dispatchers; and no
/// real library is taken for a truncated one.
#[test]
#[ignore = "needs the real cuDNN wheels (scripts/real-input.sh)"]
fn real_libraries_versions_and_completeness() {
    let tmp = tempfile::tempdir().unwrap();
    /// (wheel, folder in nvidia/cudnn, [(library, the version it carries)]).
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, Option<&'a str>)]);
    let cases: &[Case] = &[
        (
            "nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl",
            "lib",
            &[("libcudnn.so.9", None), ("libcudnn_graph.so.9", Some("9.5.0.50")), ("libcudnn_cnn.so.9", None)],
        ),
        ("nvidia_cudnn_cu12-8.9.4.25-py3-none-manylinux1_x86_64.whl", "lib", &[("libcudnn.so.8", None), ("libcudnn_ops_infer.so.8", Some("8.9.4.25"))]),
        ("nvidia_cudnn_cu11-8.8.0.121-py3-none-manylinux1_x86_64.whl", "lib", &[("libcudnn.so.8", None), ("libcudnn_ops_infer.so.8", Some("8.8.0.121"))]),
        (
            "nvidia_cudnn_cu12-9.5.0.50-py3-none-win_amd64.whl",
            "bin",
            &[("cudnn64_9.dll", Some("9.5.0.50")), ("cudnn_graph64_9.dll", Some("9.5.0.50")), ("cudnn_cnn64_9.dll", Some("9.5.0.50"))],
        ),
        ("nvidia_cudnn_cu12-8.9.4.25-py3-none-win_amd64.whl", "bin", &[("cudnn64_8.dll", Some("8.9.4.25"))]),
    ];
    for (wheel, dir, files) in cases {
        let dest = tmp.path().join(wheel);
        std::fs::create_dir_all(&dest).unwrap();
        let mut zip = zip::ZipArchive::new(std::fs::File::open(real_wheel(wheel)).unwrap()).unwrap();
        for (name, want) in *files {
            let mut m = zip.by_name(&format!("nvidia/cudnn/{dir}/{name}")).unwrap();
            let path = dest.join(name);
            std::io::copy(&mut m, &mut std::fs::File::create(&path).unwrap()).unwrap();
            let got = cuenv::sys::binfmt::library_version(&path).unwrap().map(|v| v.to_string());
            assert_eq!(got.as_deref(), *want, "{wheel}: {name}");
            assert_eq!(cuenv::sys::binfmt::truncated(&path).unwrap(), None, "{wheel}: {name} is complete");
            let bytes = std::fs::read(&path).unwrap();
            std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            assert!(cuenv::sys::binfmt::truncated(&path).unwrap().is_some(), "{wheel}: {name} cut in half");
        }
    }
}

/// `-D` flags of stub cuDNN 9 libraries naming what the real ones name: the 9.5 dispatcher
/// (graph, ops, cnn, adv; the version appended at run time) and graph (heuristic and the two
/// engines), and the 9.21+ graph that adds `engines_tensor_ir`.
const NAMES_9_DISPATCHER: &str = "NAMES=\"libcudnn_graph.so libcudnn_ops.so libcudnn_cnn.so libcudnn_adv.so\"";
const NAMES_9_GRAPH: &str = "NAMES=\"libcudnn_heuristic.so libcudnn_engines_precompiled.so libcudnn_engines_runtime_compiled.so\"";
const NAMES_921_GRAPH: &str =
    "NAMES=\"libcudnn_heuristic.so libcudnn_engines_precompiled.so libcudnn_engines_runtime_compiled.so libcudnn_engines_tensor_ir.so\"";

/// A whole stub cuDNN 9.5.0.50 set in `dir` whose graph library names `graph_names`.
fn stub_set_9(s: &Stubs, dir: &Path, graph_names: &str) {
    std::fs::create_dir_all(dir).unwrap();
    stub(s, dir, "libcudnn.so.9", &["MODE_SUB", NAMES_9_DISPATCHER]);
    stub(s, dir, "libcudnn_graph.so.9", &["GRAPH", "VERSION=90500", "MARKER=\"cudnn_version_9_5_0_50_34937467_e0\"", graph_names]);
    for f in [
        "libcudnn_ops.so.9",
        "libcudnn_cnn.so.9",
        "libcudnn_adv.so.9",
        "libcudnn_heuristic.so.9",
        "libcudnn_engines_precompiled.so.9",
        "libcudnn_engines_runtime_compiled.so.9",
    ] {
        stub(s, dir, f, &["GRAPH", "VERSION=90500"]);
    }
}

/// The issue's input: a 9.5 set, then a later `LD_LIBRARY_PATH` folder holding only a stub
/// `libcudnn_engines_tensor_ir.so.9`. No 9.5 library names that file, so nothing loads it
/// (the real loader maps none) and doctor reports no set from two folders. The same stub
/// *ahead* of a set whose graph names it (9.21 and later) is a problem naming it: the set is
/// what the files name, not what the folders hold.
#[test]
fn a_sub_library_the_release_does_not_name_is_not_part_of_its_set() {
    let s = Stubs::new();
    let set = s.tmp.path().join("cudnn-9.5");
    stub_set_9(&s, &set, NAMES_9_GRAPH);
    let later = s.tmp.path().join("later");
    std::fs::create_dir_all(&later).unwrap();
    stub(&s, &later, "libcudnn_engines_tensor_ir.so.9", &["GRAPH", "VERSION=92100"]);
    let rt = s.cudart();

    let m = oracle(s.tmp.path(), &[&set, &later, &rt], &set.join("libcudnn.so.9"), "cudnnGetVersion", None);
    assert_eq!(m.value, 90500);
    assert!(!m.files.iter().any(|f| f.to_string_lossy().contains("tensor_ir")), "{:?}", m.files);
    let (code, out) = doctor("9", &[&set, &later, &rt], None);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("more than one folder") && !out.contains("problem:"), "{out}");

    // A 9.21-style graph names engines_tensor_ir: now the stray ahead on the path is lent to it.
    let newer = s.tmp.path().join("cudnn-9.21");
    stub_set_9(&s, &newer, NAMES_921_GRAPH);
    let (code, out) = doctor("9", &[&later, &newer, &rt], None);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains(&format!("libcudnn_engines_tensor_ir.so.9 from {}", later.display())) && out.contains("more than one folder"), "{out}");
    // And the graph library of that set, asked by name from the graph, really gets the stray.
    let m = oracle(s.tmp.path(), &[&later, &newer, &rt], &newer.join("libcudnn.so.9"), "stub_dlopen", Some("libcudnn_engines_tensor_ir.so.9"));
    assert_eq!(m.file("libcudnn_engines_tensor_ir.so.9"), later.join("libcudnn_engines_tensor_ir.so.9"));
}
