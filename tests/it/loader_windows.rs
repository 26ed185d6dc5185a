//! The Windows loader model (docs/loader.md) against a real Windows loader: mingw-built stub
//! DLLs (`tests/it/support/loader_win/*.c`: a dispatcher that, like cuDNN's, loads its
//! sub-library by bare name with `LoadLibraryA`, and sub-libraries reporting a version) and an
//! oracle program that loads the dispatcher the way a framework does (`LoadLibraryExW` by full
//! path, `AddDllDirectory`) and lists what the loader mapped (`EnumProcessModules`). Each test
//! records the oracle's answer first, then asserts `cuenv doctor` says the same.
//!
//! The `cfg(windows)` tests run under Wine through scripts/test-windows.sh, which builds the
//! fixtures with mingw on the Linux side (`tests/it/support/loader_win/build.sh`) and passes
//! their folder in `CUENV_TEST_MINGW_FIXTURES`; on real Windows they are built with the `gcc`
//! and `windres` on PATH. The Linux test assembles DLLs of the same names, versions and
//! strings in Rust (no mingw needed) and checks what is read from the files without loading
//! them (VERSIONINFO, the version marker, `store add`).

use std::path::{Path, PathBuf};
#[cfg(windows)]
use std::process::Command;

/// The folder holding the built fixtures (`oracle.exe`, `disp9.dll`, `sub9_95.dll`, ...).
#[cfg(windows)]
fn fixtures(tmp: &Path) -> PathBuf {
    if let Some(d) = std::env::var_os("CUENV_TEST_MINGW_FIXTURES") {
        return PathBuf::from(d);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/loader_win/build.sh");
    let out = tmp.join("fixtures");
    let mut c = Command::new("bash");
    c.arg(&script).arg(&out);
    if cfg!(windows) {
        c.env("MINGW_CC", "gcc").env("MINGW_WINDRES", "windres");
    }
    let o = c.output().expect("bash runs tests/it/support/loader_win/build.sh (set CUENV_TEST_MINGW_FIXTURES to prebuilt fixtures)");
    assert!(o.status.success(), "building the fixtures failed: {}", String::from_utf8_lossy(&o.stderr));
    out
}

/// Copies the fixture `from` to `dir/to`.
fn place(fix: &Path, from: &str, dir: &Path, to: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(fix.join(from), dir.join(to)).unwrap();
}

/// The Linux test's stand-ins for the mingw fixtures, assembled in Rust (support::pe) so that
/// no mingw is needed: the same names, VERSIONINFO and `.rdata` strings as build.sh's table
/// (the code that the Windows loader runs is not read statically, so it is left out).
#[cfg(target_os = "linux")]
fn static_fixtures(dir: &Path) -> PathBuf {
    use crate::support::{PeArch, PeDll};
    let dll = |tag: &str| PeDll::new(PeArch::Amd64, tag);
    dll("disp9").rdata(b"cudnn_graph64_9.dll\0").write(dir, "disp9.dll");
    dll("disp8").version(Some([8, 9, 4, 25])).rdata(b"cudnn_ops_infer64_8.dll\0").write(dir, "disp8.dll");
    dll("sub9_95").rdata(b"cudnn_version_9_5_0_50_34937467_e0\0").write(dir, "sub9_95.dll");
    dll("sub9_91").rdata(b"cudnn_version_9_1_0_70_1_e0\0").write(dir, "sub9_91.dll");
    dll("sub8_894").version(Some([8, 9, 4, 25])).write(dir, "sub8_894.dll");
    dll("sub8_880").version(Some([8, 8, 0, 121])).write(dir, "sub8_880.dll");
    dir.to_path_buf()
}

/// A Linux test: the versions read from the fixtures' files (VERSIONINFO, the embedded
/// marker) and `store add` refusing a Windows set whose DLLs carry two releases.
#[cfg(target_os = "linux")]
#[test]
fn windows_dll_versions_are_read_and_two_releases_are_refused() {
    use crate::support::TestContext;
    let ctx = TestContext::new();
    let fix = static_fixtures(&ctx.path("fixtures"));
    let v = |f: &str| cuenv::sys::binfmt::library_version(&fix.join(f)).unwrap().map(|v| v.to_string());
    assert_eq!(v("sub8_880.dll").as_deref(), Some("8.8.0.121"), "VERSIONINFO");
    assert_eq!(v("sub9_91.dll").as_deref(), Some("9.1.0.70"), "the marker in .rdata");
    assert_eq!(v("disp9.dll"), None, "unknown: neither");
    // A DLL cut short is told by its section table.
    assert_eq!(cuenv::sys::binfmt::truncated(&fix.join("sub8_880.dll")).unwrap(), None);
    let bytes = std::fs::read(fix.join("sub8_880.dll")).unwrap();
    let cut = ctx.path("cut.dll");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let t = cuenv::sys::binfmt::truncated(&cut).unwrap();
    assert!(t.is_some_and(|(need, have)| have == bytes.len() as u64 / 2 && need > have && need <= bytes.len() as u64), "{t:?}");

    let root = ctx.path("cudnn-8.9.4-win");
    let bin = root.join("bin");
    place(&fix, "disp8.dll", &bin, "cudnn64_8.dll");
    for stem in ["ops_infer", "cnn_infer", "cnn_train", "adv_infer", "adv_train"] {
        place(&fix, "sub8_894.dll", &bin, &format!("cudnn_{stem}64_8.dll"));
    }
    place(&fix, "sub8_880.dll", &bin, "cudnn_ops_train64_8.dll");
    std::fs::create_dir_all(root.join("include")).unwrap();
    std::fs::write(root.join("include/cudnn_version.h"), "#define CUDNN_MAJOR 8\n#define CUDNN_MINOR 9\n#define CUDNN_PATCHLEVEL 4\n").unwrap();
    let err = ctx.add_refused(&root, &["--cuda", "12"]);
    assert!(err.contains("libraries of two cuDNN releases in one set") && err.contains("`cudnn_ops_train64_8.dll` is 8.8.0.121"), "{err}");
    // Without the stray DLL the set imports.
    place(&fix, "sub8_894.dll", &bin, "cudnn_ops_train64_8.dll");
    ctx.add_ok(&root, &["--cuda", "12"]);
}

#[cfg(windows)]
mod under_windows {
    use super::*;

    /// What the loader did: `cudnnGetVersion`'s value (None when the process died or the
    /// dispatcher did not load), the cuDNN modules mapped, the exit code and stderr.
    struct Loaded {
        version: Option<u64>,
        modules: Vec<PathBuf>,
        code: i32,
        stderr: String,
        stdout: String,
    }

    impl Loaded {
        fn module(&self, name: &str) -> &Path {
            self.modules
                .iter()
                .find(|m| m.file_name().is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case(name)))
                .unwrap_or_else(|| panic!("{name} was not mapped: {:?}\n{}", self.modules, self.stdout))
        }
    }

    /// `PATH` = `path` then the process's own (Windows' system folders).
    fn path_var(path: &[&Path]) -> std::ffi::OsString {
        let own = std::env::var_os("PATH").unwrap_or_default();
        let mut all: Vec<PathBuf> = path.iter().map(|p| p.to_path_buf()).collect();
        all.extend(std::env::split_paths(&own));
        std::env::join_paths(all).unwrap()
    }

    fn oracle(fix: &Path, args: &[&std::ffi::OsStr], path: &[&Path]) -> Loaded {
        let out = Command::new(fix.join("oracle.exe")).args(args).env("PATH", path_var(path)).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
        let version = stdout.lines().find_map(|l| l.strip_prefix("version ")).and_then(|v| v.trim().parse().ok());
        let modules = stdout.lines().filter_map(|l| l.strip_prefix("module ")).map(|m| PathBuf::from(m.trim())).collect();
        Loaded { version, modules, code: out.status.code().unwrap_or(-1), stderr: String::from_utf8_lossy(&out.stderr).into_owned(), stdout }
    }

    fn doctor(major: &str, path: &[&Path], prefix: Option<&Path>) -> (i32, String) {
        let home = tempfile::tempdir().unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
        c.env("PATH", path_var(path)).env("CUENV_HOME", home.path()).env("CUENV_TOOLKIT_PATHS", "").env("CUDA_PATH", "").env_remove("CUENV_PROFILE");
        match prefix {
            Some(p) => c.env("CONDA_PREFIX", p),
            None => c.env_remove("CONDA_PREFIX"),
        };
        let out = c.args(["doctor", "--major", major]).output().unwrap();
        (out.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }

    fn os(s: &str) -> &std::ffi::OsStr {
        std::ffi::OsStr::new(s)
    }

    /// The third setup: torch\lib holds 9.5; a 9.1 `cudnn64_9.dll` folder is first on
    /// PATH. torch's dispatcher, loaded by full path, binds `cudnn_graph64_9.dll` from PATH's
    /// folder (cuDNN loads its sub-libraries by bare name).
    #[test]
    fn torch_lib_dispatcher_binds_its_sub_library_from_path() {
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let env = tmp.path().join("env");
        let torch = env.join("Lib/site-packages/torch/lib");
        place(&fix, "disp9.dll", &torch, "cudnn64_9.dll");
        place(&fix, "sub9_95.dll", &torch, "cudnn_graph64_9.dll");
        let old = tmp.path().join("cudnn-9.1");
        place(&fix, "disp9.dll", &old, "cudnn64_9.dll");
        place(&fix, "sub9_91.dll", &old, "cudnn_graph64_9.dll");

        let l = oracle(&fix, &[os("--path"), torch.join("cudnn64_9.dll").as_os_str()], &[&old]);
        assert_eq!(l.version, Some(90100), "{}\n{}", l.stdout, l.stderr);
        assert!(
            l.module("cudnn_graph64_9.dll").starts_with(&old) || l.module("cudnn_graph64_9.dll").to_string_lossy().contains("cudnn-9.1"),
            "{:?}",
            l.modules
        );

        let (code, out) = doctor("9", &[&old], Some(&env));
        assert_eq!(code, 4, "{out}");
        assert!(out.contains("problem: PyTorch's cuDNN 9 dispatcher "), "{out}");
        assert!(
            out.contains("loads its sub-libraries by name through the standard search order, not from its own folder: it would load cudnn_graph64_9.dll from "),
            "{out}"
        );
        assert!(out.contains("cudnn-9.1 (9.1.0.70) through PATH (position 1)"), "{out}");
        assert!(!out.contains("whatever PATH says"), "{out}");
    }

    /// The fourth setup: the 8.9.4 wheel's `nvidia\cudnn\bin` reachable only through
    /// `AddDllDirectory`, not on PATH: the dispatcher loads, then aborts with "Could not locate
    /// cudnn_ops_infer64_8.dll". With the folder on PATH it works.
    #[test]
    fn a_wheel_reachable_only_through_add_dll_directory_aborts() {
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let env = tmp.path().join("env");
        let bin = env.join("Lib/site-packages/nvidia/cudnn/bin");
        place(&fix, "disp8.dll", &bin, "cudnn64_8.dll");
        place(&fix, "sub8_894.dll", &bin, "cudnn_ops_infer64_8.dll");
        // A sub-library that sorts before ops_infer: the prediction must still name the one
        // the dispatcher loads first.
        place(&fix, "sub8_894.dll", &bin, "cudnn_adv_infer64_8.dll");
        std::fs::create_dir_all(env.join("Lib/site-packages/nvidia_cudnn_cu12-8.9.4.25.dist-info")).unwrap();

        let l = oracle(&fix, &[os("--add-dll-dir"), bin.as_os_str(), os("--path"), bin.join("cudnn64_8.dll").as_os_str()], &[]);
        assert_eq!(l.version, None, "{}", l.stdout);
        assert_eq!(l.code, 9, "{}\n{}", l.stdout, l.stderr);
        assert!(l.stderr.contains("Could not locate cudnn_ops_infer64_8.dll"), "{}", l.stderr);

        let (code, out) = doctor("8", &[], Some(&env));
        assert_eq!(code, 4, "{out}");
        assert!(
            out.contains("finds its sub-libraries by name through PATH only (folders added with os.add_dll_directory are not searched)")
                && out.contains("is not on PATH: cuDNN aborts with \"Could not locate cudnn_ops_infer64_8.dll\""),
            "{out}"
        );
        assert!(out.contains("hint: put ") && out.contains("on PATH"), "{out}");

        // With the wheel's bin on PATH, the loader finds it, and doctor agrees.
        let l = oracle(&fix, &[os("--path"), bin.join("cudnn64_8.dll").as_os_str()], &[&bin]);
        assert_eq!(l.version, Some(8904), "{}\n{}", l.stdout, l.stderr);
        let (_, out) = doctor("8", &[&bin], Some(&env));
        assert!(!out.contains("Could not locate"), "{out}");
    }

    /// The fifth setup: the 9.5 wheel in the env, and a CUDA `v12.4\bin` holding a
    /// hand-copied 9.1 dispatcher and graph on PATH: the wheel's dispatcher takes graph from
    /// `v12.4\bin`.
    #[test]
    fn a_hand_copy_on_path_lends_its_sub_library_to_the_wheel() {
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let env = tmp.path().join("env");
        let bin = env.join("Lib/site-packages/nvidia/cudnn/bin");
        place(&fix, "disp9.dll", &bin, "cudnn64_9.dll");
        place(&fix, "sub9_95.dll", &bin, "cudnn_graph64_9.dll");
        let cuda = tmp.path().join("CUDA/v12.4/bin");
        place(&fix, "disp9.dll", &cuda, "cudnn64_9.dll");
        place(&fix, "sub9_91.dll", &cuda, "cudnn_graph64_9.dll");

        let l = oracle(&fix, &[os("--add-dll-dir"), bin.as_os_str(), os("--path"), bin.join("cudnn64_9.dll").as_os_str()], &[&cuda]);
        assert_eq!(l.version, Some(90100), "{}\n{}", l.stdout, l.stderr);
        assert!(l.module("cudnn_graph64_9.dll").to_string_lossy().contains("v12.4"), "{:?}", l.modules);

        let (code, out) = doctor("9", &[&cuda], Some(&env));
        assert_eq!(code, 4, "{out}");
        assert!(out.contains("problem: the pip wheel nvidia-cudnn's cuDNN 9 dispatcher "), "{out}");
        assert!(
            out.contains("it would load cudnn_graph64_9.dll from ") && out.contains("v12.4") && out.contains("(9.1.0.70) through PATH (position 1)"),
            "{out}"
        );
    }

    /// NVIDIA's exe installer: PATH lists `CUDNN\v9.5\bin`, the DLLs are in `bin\12.6\`. The
    /// loader does not find `cudnn64_9.dll` (error 126); doctor names the folder to use.
    #[test]
    fn exe_installer_layout() {
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let bin = tmp.path().join("CUDNN/v9.5/bin");
        place(&fix, "disp9.dll", &bin.join("12.6"), "cudnn64_9.dll");
        place(&fix, "sub9_95.dll", &bin.join("12.6"), "cudnn_graph64_9.dll");
        let l = oracle(&fix, &[os("--name"), os("cudnn64_9.dll")], &[&bin]);
        assert_eq!((l.code, l.stdout.trim()), (3, "error 126"), "{}", l.stderr);
        let (code, out) = doctor("9", &[&bin], None);
        assert_eq!(code, 4, "{out}");
        assert!(
            out.contains("holds no cuDNN library, but its subfolder ") && out.contains("holds cudnn64_9.dll (the layout of NVIDIA's exe installer"),
            "{out}"
        );
        assert!(out.contains(&format!("hint: put {} on PATH instead of {}", bin.join("12.6").display(), bin.display())), "{out}");
    }

    /// CuDNN 8.3 to 9.1 load `zlibwapi.dll` by name; none on PATH, or a
    /// 32-bit one first, is a problem.
    #[test]
    fn zlibwapi_for_cudnn_8_is_checked() {
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let dir = tmp.path().join("cudnn8");
        place(&fix, "disp8.dll", &dir, "cudnn64_8.dll");
        place(&fix, "sub8_894.dll", &dir, "cudnn_ops_infer64_8.dll");
        let (code, out) = doctor("8", &[&dir], None);
        assert_eq!(code, 4, "{out}");
        assert!(out.contains("cuDNN 8.9.4 loads zlibwapi.dll at run time (cuDNN 8.3 to 9.1 do), and no folder on PATH holds it"), "{out}");
        let z = tmp.path().join("zlib32");
        std::fs::create_dir_all(&z).unwrap();
        std::fs::write(z.join("zlibwapi.dll"), crate::support::pe_dll(crate::support::PeArch::I386, None, "zlibwapi")).unwrap();
        let (_, out) = doctor("8", &[&z, &dir], None);
        assert!(out.contains("the first zlibwapi.dll on PATH, ") && out.contains("cannot load it (error 193)"), "{out}");
    }

    /// A DLL whose VERSIONINFO differs from its siblings' in one folder on PATH: a problem
    /// naming both releases.
    #[test]
    fn a_folder_with_two_releases_by_versioninfo() {
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let dir = tmp.path().join("cudnn8");
        place(&fix, "disp8.dll", &dir, "cudnn64_8.dll");
        place(&fix, "sub8_894.dll", &dir, "cudnn_ops_infer64_8.dll");
        place(&fix, "sub8_880.dll", &dir, "cudnn_ops_train64_8.dll");
        let (code, out) = doctor("8", &[&dir], None);
        assert_eq!(code, 4, "{out}");
        assert!(
            out.contains("holds cuDNN 8 libraries of 2 releases (8.9.4.25: cudnn64_8.dll, cudnn_ops_infer64_8.dll; 8.8.0.121: cudnn_ops_train64_8.dll)"),
            "{out}"
        );
    }

    /// docs/loader.md R1 under Windows: a stray `cudnn_engines_tensor_ir64_9.dll` in a folder
    /// *ahead* on PATH is nothing to a set whose dispatcher and graph do not name it (the stub
    /// dispatcher names only `cudnn_graph64_9.dll`, like 9.5's names no tensor_ir): the real
    /// loader maps no tensor_ir, and doctor reports no set from two folders. (It used to judge
    /// every sub-library any PATH folder held, and called this a mixed set.)
    #[test]
    fn a_stray_sub_library_the_release_does_not_name_is_no_part_of_its_set() {
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let set = tmp.path().join("cudnn-9.5");
        place(&fix, "disp9.dll", &set, "cudnn64_9.dll");
        place(&fix, "sub9_95.dll", &set, "cudnn_graph64_9.dll");
        let stray = tmp.path().join("stray");
        place(&fix, "sub9_91.dll", &stray, "cudnn_engines_tensor_ir64_9.dll");

        let l = oracle(&fix, &[os("--name"), os("cudnn64_9.dll")], &[&stray, &set]);
        assert_eq!(l.version, Some(90500), "{}\n{}", l.stdout, l.stderr);
        assert!(!l.modules.iter().any(|m| m.to_string_lossy().to_ascii_lowercase().contains("tensor_ir")), "{:?}", l.modules);

        // (The stub set has no CUDA runtime: doctor's other problems are about that.)
        let (_, out) = doctor("9", &[&stray, &set], None);
        assert!(out.contains("stray: cudnn_engines_tensor_ir64_9.dll (9.1.0.70) [no dispatcher]"), "doctor saw the stray: {out}");
        assert!(!out.contains("more than one folder") && !out.contains("engines_tensor_ir64_9.dll from"), "{out}");
    }
}
