//! Consumers' finders on Windows (docs/loader.md "Consumers' finders", W-C1 to W-C3): what
//! `cuenv doctor` says PyTorch's `torch\lib` loads and `onnxruntime.preload_dlls()` open in a
//! Windows env, read from the files those two read (`torch/__init__.py` `_load_dll_libraries`;
//! onnxruntime-gpu 1.31.1's `__init__.py` and `capi/build_and_package_info.py`). The models
//! read files only, so these run on every host; the loader rule they rest on (a full-path load
//! maps a second copy whose imports bind to the modules already loaded) is observed under
//! Wine's real loader in tests/it/loader_windows.rs, and the doctor run at the end runs there.

use std::fs;
use std::path::{Path, PathBuf};

use cuenv::cudnn::libname::Os;
use cuenv::doctor::finders::{self, Finder, Load, Scene};
use cuenv::doctor::loader::LinuxEnv;
use cuenv::pyenv::{Kind, PyEnv};

/// The lines of onnxruntime-gpu 1.31.1's `onnxruntime/__init__.py` the model reads: the
/// `preload_dlls` definition and the Windows cuDNN tuples of `_get_nvidia_dll_paths`, as the
/// real file writes them (tests/it/finders.rs reads the real file itself).
const ORT_INIT: &str = r#"
def _get_nvidia_dll_paths(is_windows: bool, cuda: bool = True, cudnn: bool = True):
    if is_windows:
        cudnn_dll_paths = [
            ("nvidia", "cudnn", "bin", "cudnn_engines_runtime_compiled64_9.dll"),
            ("nvidia", "cudnn", "bin", "cudnn_graph64_9.dll"),
            ("nvidia", "cudnn", "bin", "cudnn64_9.dll"),
        ]
    else:  # Linux
        cudnn_dll_paths = [
            ("nvidia", "cudnn", "lib", "libcudnn.so.9"),
        ]

def preload_dlls(cuda: bool = True, cudnn: bool = True, msvc: bool = True, directory=None):
    pass
"#;

/// A Windows-layout env at `dir` (`Lib\site-packages`, `python.exe` in the prefix).
fn env(dir: &Path) -> (PyEnv, PathBuf) {
    let sp = dir.join("Lib").join("site-packages");
    fs::create_dir_all(&sp).unwrap();
    fs::write(dir.join("python.exe"), b"MZ").unwrap();
    let e =
        PyEnv { kind: Kind::Conda, prefix: dir.to_path_buf(), site_packages: vec![sp.clone()], python: Some(dir.join("python.exe")), found_by: "test".into() };
    (e, sp)
}

fn dll(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, b"MZ").unwrap();
}

/// A PyTorch install: `torch-<version>.dist-info/METADATA` and `torch\lib` holding the cuDNN
/// `major` set's dispatcher and graph library (a Windows torch wheel carries its cuDNN there).
fn torch(sp: &Path, version: &str, major: u64) {
    let info = sp.join(format!("torch-{version}.dist-info"));
    fs::create_dir_all(&info).unwrap();
    fs::write(info.join("METADATA"), format!("Metadata-Version: 2.1\nName: torch\nVersion: {version}\n\nbody\n")).unwrap();
    fs::write(sp.join("torch").join("__init__.py").tap_dir(), "").unwrap();
    dll(&sp.join(format!("torch/lib/cudnn64_{major}.dll")));
    if major >= 9 {
        dll(&sp.join(format!("torch/lib/cudnn_graph64_{major}.dll")));
    }
}

/// onnxruntime-gpu built for CUDA `cuda` (its `capi/build_and_package_info.py`).
fn onnxruntime(sp: &Path, cuda: &str) {
    fs::write(sp.join("onnxruntime/__init__.py").tap_dir(), ORT_INIT).unwrap();
    fs::write(
        sp.join("onnxruntime/capi/build_and_package_info.py").tap_dir(),
        format!("package_name = 'onnxruntime-gpu'\n__version__ = '1.31.1'\ncuda_version = '{cuda}'\n"),
    )
    .unwrap();
}

trait TapDir {
    /// Creates the parent folder of a file path and returns the path.
    fn tap_dir(self) -> PathBuf;
}

impl TapDir for PathBuf {
    fn tap_dir(self) -> PathBuf {
        fs::create_dir_all(self.parent().unwrap()).unwrap();
        self
    }
}

fn loads(e: &PyEnv) -> Vec<Load> {
    let get = |_: &str| None;
    let linux = LinuxEnv::new(Vec::new());
    finders::loads_windows(e, &Scene { get: &get, linux: &linux, preloaded: &[] })
}

fn texts(e: &PyEnv, l: &[Load]) -> String {
    finders::judge(e, l, &[], Os::Windows).iter().map(|f| format!("{:?}: {} [{}]\n", f.severity, f.message, f.hint.clone().unwrap_or_default())).collect()
}

/// microsoft/onnxruntime#24266: `preload_dlls()` loads another cuDNN 9 than the one in
/// `torch\lib`, then `import torch` fails with WinError 127. Here the CUDA majors differ
/// (torch cu121, onnxruntime built for 13.0), so preload_dlls takes the nvidia wheel's copy.
#[test]
fn torch_and_an_onnxruntime_preload_of_another_copy_are_said_to_mix_in_one_process() {
    let tmp = tempfile::tempdir().unwrap();
    let (e, sp) = env(tmp.path());
    torch(&sp, "2.4.1+cu121", 9);
    onnxruntime(&sp, "13.0");
    dll(&sp.join("nvidia/cudnn/bin/cudnn64_9.dll"));
    dll(&sp.join("nvidia/cudnn/bin/cudnn_graph64_9.dll"));
    let l = loads(&e);
    let t = l.iter().find(|x| x.finder == Finder::Torch).unwrap_or_else(|| panic!("{l:?}"));
    assert_eq!((t.path.as_deref(), t.full_path, t.consumer.as_str()), (Some(sp.join("torch/lib/cudnn64_9.dll").as_path()), true, "PyTorch 2.4.1+cu121"));
    let o = l.iter().find(|x| x.finder == Finder::Onnxruntime && x.library == "cudnn64_9.dll").unwrap_or_else(|| panic!("{l:?}"));
    assert_eq!((o.path.as_deref(), o.full_path), (Some(sp.join("nvidia/cudnn/bin/cudnn64_9.dll").as_path()), true), "{o:?}");
    let text = texts(&e, &l);
    assert!(text.contains("open their copies by full path") && text.contains("WinError 127"), "{text}");
    let shown = |rel: &str| rel.split('/').collect::<PathBuf>().display().to_string();
    assert!(text.contains(&shown("torch/lib/cudnn64_9.dll")) && text.contains(&shown("nvidia/cudnn/bin/cudnn64_9.dll")), "{text}");
    assert!(!text.contains(r"\\?\"), "paths are shown without the verbatim prefix: {text}");
    assert!(!text.contains("needs cuDNN 8"), "one major: {text}");
}

/// The same env with an onnxruntime built for torch's CUDA major: preload_dlls loads the DLLs of
/// `torch\lib` (its `directory` rule), so both get one copy and nothing is said.
#[test]
fn an_onnxruntime_of_torchs_cuda_major_preloads_torchs_copy_and_nothing_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let (e, sp) = env(tmp.path());
    torch(&sp, "2.4.1+cu121", 9);
    onnxruntime(&sp, "12.2");
    dll(&sp.join("nvidia/cudnn/bin/cudnn64_9.dll"));
    let l = loads(&e);
    let o = l.iter().find(|x| x.finder == Finder::Onnxruntime && x.library == "cudnn64_9.dll").unwrap_or_else(|| panic!("{l:?}"));
    assert_eq!(o.path.as_deref(), Some(sp.join("torch/lib/cudnn64_9.dll").as_path()), "{o:?}");
    assert!(o.how.contains("built for CUDA 12"), "{}", o.how);
    assert_eq!(texts(&e, &l), "");
}

/// PyTorch 2.3 (cuDNN 8 in torch\lib) beside an onnxruntime whose preload is cuDNN 9: two
/// majors in one process, said with both names; a CUDA 11 onnxruntime preloads nothing
/// (preload_dlls returns early below CUDA 12).
#[test]
fn two_majors_in_one_env_are_said_and_a_cuda_11_onnxruntime_preloads_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (e, sp) = env(tmp.path());
    torch(&sp, "2.3.1+cu121", 8);
    onnxruntime(&sp, "12.2");
    let l = loads(&e);
    let o = l.iter().find(|x| x.finder == Finder::Onnxruntime && x.library == "cudnn64_9.dll").unwrap_or_else(|| panic!("{l:?}"));
    assert_eq!(o.path, None, "torch\\lib has no cudnn64_9.dll and no folder searched by name holds one: {o:?}");
    assert!(o.how.contains("not PATH"), "{}", o.how);
    let text = texts(&e, &l);
    assert!(text.contains("PyTorch 2.3.1+cu121 needs cuDNN 8 (cudnn64_8.dll") && text.contains("onnxruntime.preload_dlls() needs cuDNN 9"), "{text}");
    assert!(text.contains("two cuDNN releases"), "{text}");

    onnxruntime(&sp, "11.8");
    let l = loads(&e);
    assert!(l.iter().all(|x| x.finder != Finder::Onnxruntime), "{l:?}");
    assert!(!texts(&e, &l).contains("two cuDNN releases"));
}

/// cuda.pathfinder on Windows is not modelled: its row says so ("not verified"), and doctor
/// warns rather than guess.
#[test]
fn pathfinder_on_windows_is_said_not_verified() {
    let tmp = tempfile::tempdir().unwrap();
    let (e, sp) = env(tmp.path());
    fs::write(sp.join("cuda/pathfinder/__init__.py").tap_dir(), "").unwrap();
    let l = loads(&e);
    assert_eq!(l.len(), 1, "{l:?}");
    assert!(!l[0].verified && l[0].how.starts_with("not verified"), "{:?}", l[0]);
    assert!(texts(&e, &l).contains("cuda.pathfinder"), "{}", texts(&e, &l));
}

/// The build facts and versions are read as their owners write them.
#[test]
fn build_facts_and_dist_versions_are_read_as_written() {
    assert_eq!(finders::assigned_str("package_name = 'onnxruntime-gpu'\ncuda_version = '13.0'\n", "cuda_version").as_deref(), Some("13.0"));
    assert_eq!(finders::assigned_str("cuda_version_x = '1'\n", "cuda_version"), None);
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir_all(tmp.path().join("torch-2.5.0+cu124.dist-info")).unwrap();
    assert_eq!(finders::dist_version(tmp.path(), "torch").as_deref(), Some("2.5.0+cu124"), "from the folder name");
    fs::write(tmp.path().join("torch-2.5.0+cu124.dist-info/METADATA"), "Name: torch\nVersion: 2.5.0+cu124.post1\n").unwrap();
    assert_eq!(finders::dist_version(tmp.path(), "torch").as_deref(), Some("2.5.0+cu124.post1"), "METADATA wins");
    let w = finders::onnxruntime_preloads(ORT_INIT, Os::Windows).unwrap();
    assert_eq!(w.last().unwrap(), &(PathBuf::from("nvidia/cudnn/bin/cudnn64_9.dll"), "cudnn64_9.dll".to_string()));
    assert_eq!(w.len(), 1, "only dispatchers: {w:?}");
}
