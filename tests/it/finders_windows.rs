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
    finders::loads_windows(e, &Scene { get: &get, linux: &linux, preloaded: &[], path_folders: &[] })
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

/// A cuda.pathfinder whose catalog cuenv cannot read (none here, as a release that moved it
/// would be): its row says so ("not verified"), and doctor warns rather than guess.
#[test]
fn a_pathfinder_catalog_cuenv_cannot_read_is_said_not_verified() {
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

/// The parts of cuda-pathfinder 1.9.1's `_dynamic_libs/descriptor_catalog.py` the Windows
/// model reads, as the real file writes them: the default anchor folders and the cuDNN entry.
/// [`the_real_pathfinder_catalog_reads_as_the_fixture_does`] checks the real file gives the same.
const PATHFINDER_CATALOG: &str = r#"
DEFAULT_WINDOWS_CTK_ANCHOR_DIRS = WindowsSearchDirs(
    x64=("bin/x64", "bin"),
    arm64=("bin/arm64",),
)

DESCRIPTOR_CATALOG = (
    DescriptorSpec(
        name="cudnn",
        packaged_with="other",
        linux_sonames=("libcudnn.so.9",),
        windows_dlls=("cudnn64_9.dll",),
        supported_windows_arch=("x64", "arm64"),
        requires_windows_binary_arch_check=True,
        site_packages_linux=("nvidia/cudnn/lib",),
        site_packages_windows=WindowsSearchDirs(
            x64=("nvidia/cudnn/bin",),
            arm64=("nvidia/cudnn/bin",),
        ),
        dependencies=("cublasLt",),
        optional_dependencies=("nvrtc",),
        install_root_env_vars_linux=("CUDNN_PATH",),
        install_root_env_rel_dirs_linux=("lib", "lib64"),
        anchor_rel_dirs_windows=WindowsSearchDirs.x64_only("bin/x64", "bin"),
        install_root_env_vars_windows=("CUDNN_PATH",),
        install_root_env_rel_dirs_windows=WindowsSearchDirs(
            x64=("bin/x64", "bin"),
            arm64=("bin/arm64",),
        ),
        program_files_root_globs_windows=WindowsSearchDirs.x64_only("NVIDIA/CUDNN/v9.*"),
        requires_add_dll_directory=True,
    ),
    DescriptorSpec(
        name="cufile",
    ),
)
"#;

/// Installs the fixture pathfinder (1.9.1's catalog lines) in `sp`.
fn pathfinder(sp: &Path) {
    fs::write(sp.join("cuda/pathfinder/__init__.py").tap_dir(), "").unwrap();
    fs::write(sp.join("cuda/pathfinder/_dynamic_libs/descriptor_catalog.py").tap_dir(), PATHFINDER_CATALOG).unwrap();
    fs::create_dir_all(sp.join("cuda_pathfinder-1.9.1.dist-info")).unwrap();
}

/// An x86-64 DLL at `path` (pathfinder's arch check reads the PE machine).
fn x64_dll(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, crate::support::pe::pe_dll(crate::support::pe::PeArch::Amd64, None, "cudnn")).unwrap();
}

/// The pathfinder load doctor predicts in `e` with the variables `vars` and `PATH` entries `path`.
fn pathfinder_load(e: &PyEnv, vars: &[(&str, &Path)], path: &[PathBuf], preloaded: &[PathBuf]) -> Load {
    let get = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_os_str().to_owned());
    let linux = LinuxEnv::new(Vec::new());
    let l = finders::loads_windows(e, &Scene { get: &get, linux: &linux, preloaded, path_folders: path });
    l.into_iter().find(|x| x.finder == Finder::Pathfinder).expect("a pathfinder load")
}

#[test]
fn the_real_pathfinder_catalog_reads_as_the_fixture_does() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, sp) = env(tmp.path());
    pathfinder(&sp);
    let fixture = finders::pathfinder_catalog_windows(&sp).unwrap().unwrap();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(fixture.dlls, s(&["cudnn64_9.dll"]));
    assert_eq!(fixture.site_packages, s(&["nvidia/cudnn/bin"]));
    assert_eq!(fixture.anchor_dirs, s(&["bin/x64", "bin"]));
    assert_eq!((fixture.root_vars.clone(), fixture.root_dirs.clone()), (s(&["CUDNN_PATH"]), s(&["bin/x64", "bin"])));
    assert_eq!(fixture.program_files, s(&["NVIDIA/CUDNN/v9.*"]));
    assert!(fixture.arch_check);
    if cfg!(windows) {
        // .ci/run's clients' venv is a Linux interpreter; the Linux run of this test reads it.
        crate::support::skipped("the clients' cuda-pathfinder is a Linux install: the real catalog is read by the Linux run of this test");
        return;
    }
    let Some(python) = std::env::var_os("CUENV_CLIENTS_PYTHON") else {
        crate::support::skipped("CUENV_CLIENTS_PYTHON is not set (a Python with cuda-pathfinder; .ci/run makes one): the real catalog");
        return;
    };
    let out = std::process::Command::new(python)
        .args(["-c", "import cuda.pathfinder, os; print(os.path.dirname(os.path.dirname(os.path.dirname(cuda.pathfinder.__file__))))"])
        .output()
        .unwrap();
    assert!(out.status.success(), "the clients' venv lacks cuda-pathfinder: {out:?}");
    let real_sp = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let real = finders::pathfinder_catalog_windows(&real_sp).expect("installed").expect("in the form cuenv reads");
    assert_eq!(real, fixture, "the installed cuda-pathfinder's Windows cuDNN entry changed: update the model and docs/loader.md");
}

/// Each of pathfinder's Windows steps, in its order (load_nvidia_dynamic_lib.py,
/// search_steps.py of 1.9.1): the wheel before PATH, a loaded module before the wheel, PATH
/// (`LoadLibraryExW(name, NULL, 0)`) before CUDNN_PATH, CUDNN_PATH before CUDA_PATH, and
/// Program Files' newest `v9.*` last; a DLL of another machine is passed over.
#[test]
fn pathfinder_on_windows_takes_each_step_in_its_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (e, sp) = env(&tmp.path().join("env"));
    pathfinder(&sp);
    let on_path = tmp.path().join("on path");
    x64_dll(&on_path.join("cudnn64_9.dll"));
    let cudnn_path = tmp.path().join("cudnn root");
    x64_dll(&cudnn_path.join("bin/x64/cudnn64_9.dll"));
    let cuda = tmp.path().join("CUDA/v12.4");
    x64_dll(&cuda.join("bin/cudnn64_9.dll"));
    let pf = tmp.path().join("Program Files");
    x64_dll(&pf.join("NVIDIA/CUDNN/v9.2/bin/cudnn64_9.dll"));
    x64_dll(&pf.join("NVIDIA/CUDNN/v9.10/bin/x64/cudnn64_9.dll"));
    let canon = |p: PathBuf| fs::canonicalize(&p).unwrap();
    let got = |vars: &[(&str, &Path)], path: &[PathBuf], pre: &[PathBuf]| {
        let l = pathfinder_load(&e, vars, path, pre);
        assert!(l.verified, "{l:?}");
        (l.path.map(canon), l.found_via.unwrap_or_default())
    };
    let all: Vec<(&str, &Path)> = vec![("CUDNN_PATH", &cudnn_path), ("CUDA_PATH", &cuda), ("PROGRAMFILES", &pf)];
    // Nothing but Program Files: the newest version by number (v9.10, not v9.2).
    assert_eq!(got(&all[2..], &[], &[]), (Some(canon(pf.join("NVIDIA/CUDNN/v9.10/bin/x64/cudnn64_9.dll"))), "ProgramFiles".into()));
    assert_eq!(got(&all[1..], &[], &[]), (Some(canon(cuda.join("bin/cudnn64_9.dll"))), "CUDA_PATH".into()));
    assert_eq!(got(&all, &[], &[]), (Some(canon(cudnn_path.join("bin/x64/cudnn64_9.dll"))), "CUDNN_PATH".into()));
    assert_eq!(got(&all, std::slice::from_ref(&on_path), &[]), (Some(canon(on_path.join("cudnn64_9.dll"))), "system-search".into()));
    // The nvidia wheel, once there, wins over PATH; an i386 DLL there is passed over.
    let wheel = sp.join("nvidia/cudnn/bin/cudnn64_9.dll");
    fs::create_dir_all(wheel.parent().unwrap()).unwrap();
    fs::write(&wheel, crate::support::pe::pe_dll(crate::support::pe::PeArch::I386, None, "cudnn")).unwrap();
    assert_eq!(got(&all, std::slice::from_ref(&on_path), &[]).1, "system-search", "a 32-bit DLL is not taken");
    x64_dll(&wheel);
    assert_eq!(got(&all, std::slice::from_ref(&on_path), &[]), (Some(canon(wheel.clone())), "site-packages".into()));
    // A cuDNN already loaded (an env hook's preload) wins over the wheel.
    let hooked = tmp.path().join("view/bin/cudnn64_9.dll");
    x64_dll(&hooked);
    assert_eq!(got(&all, &[], std::slice::from_ref(&hooked)), (Some(canon(hooked.clone())), "was-already-loaded-from-elsewhere".into()));
}

/// Nothing anywhere: pathfinder raises, and doctor says none of its steps finds cuDNN.
#[test]
fn pathfinder_on_windows_finding_nothing_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let (e, sp) = env(tmp.path());
    pathfinder(&sp);
    let l = pathfinder_load(&e, &[], &[], &[]);
    assert!(l.verified && l.path.is_none() && l.how.contains("DynamicLibNotFoundError"), "{l:?}");
    assert_eq!(l.consumer, "cuda.pathfinder 1.9.1");
}

/// The build facts TensorFlow 2.10's Windows build writes (the shape of the real
/// `tensorflow-2.10.1-cp310-cp310-win_amd64.whl`'s build_info.py, which
/// finders::real_tensorflow_2_10_windows_build_facts_... reads): the DLL names themselves, and
/// versions in Windows form (`64_8`, `64_112`).
const TF_210_WINDOWS: &str = "import collections\n\nbuild_info = collections.OrderedDict([('cuda_compute_capabilities', ['sm_35', 'compute_80']), ('cuda_version', '64_112'), ('cudart_dll_name', 'cudart64_112.dll'), ('cudnn_dll_name', 'cudnn64_8.dll'), ('cudnn_version', '64_8'), ('is_cuda_build', True), ('msvcp_dll_names', 'msvcp140.dll,msvcp140_1.dll')])\n";

fn tf_load(e: &PyEnv, path: &[PathBuf], preloaded: &[PathBuf]) -> Option<Load> {
    let get = |_: &str| None;
    let linux = LinuxEnv::new(Vec::new());
    finders::loads_windows(e, &Scene { get: &get, linux: &linux, preloaded, path_folders: path }).into_iter().find(|l| l.finder == Finder::Tensorflow)
}

/// TensorFlow 2.10 on Windows loads the DLL its build names by name, PATH last
/// (`tensorflow/core/platform/windows/load_library.cc`): none on PATH is a problem whose hint
/// is PATH; a folder on PATH is found; a module already loaded wins; a CPU build loads none.
#[test]
fn tensorflow_2_10_on_windows_loads_the_dll_its_build_names_from_path() {
    let tmp = tempfile::tempdir().unwrap();
    let (e, sp) = env(&tmp.path().join("env"));
    fs::write(sp.join("tensorflow/python/platform/build_info.py").tap_dir(), TF_210_WINDOWS).unwrap();
    let l = tf_load(&e, &[], &[]).expect("a TensorFlow load");
    assert_eq!((l.library.as_str(), l.major, l.verified, l.path.clone()), ("cudnn64_8.dll", 8, true, None), "{l:?}");
    let said = texts(&e, &[l]);
    assert!(said.contains("Problem") && said.contains("cudnn64_8.dll") && said.contains("on PATH") && !said.contains("LD_LIBRARY_PATH"), "{said}");
    let on_path = tmp.path().join("cuDNN 8.1 (x86)/bin");
    dll(&on_path.join("cudnn64_8.dll"));
    let l = tf_load(&e, &[tmp.path().join("elsewhere"), on_path.clone()], &[]).unwrap();
    assert_eq!(l.path.as_deref(), Some(on_path.join("cudnn64_8.dll").as_path()), "{l:?}");
    assert!(l.how.contains("64_112") && l.how.contains("PATH"), "{l:?}");
    let hooked = tmp.path().join("view/bin/CUDNN64_8.DLL");
    dll(&hooked);
    let l = tf_load(&e, std::slice::from_ref(&on_path), std::slice::from_ref(&hooked)).unwrap();
    assert_eq!(l.path.as_deref(), Some(hooked.as_path()), "a loaded module of that name, whatever its case: {l:?}");
    // A CPU build (the Windows releases after 2.10) loads no cuDNN, and nothing is said.
    fs::write(
        sp.join("tensorflow/python/platform/build_info.py"),
        "build_info = collections.OrderedDict([('is_cuda_build', False), ('is_rocm_build', False)])\n",
    )
    .unwrap();
    assert!(tf_load(&e, &[], &[]).is_none());
}
