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
    dll("disp8").version(Some([8, 9, 4, 25])).rdata(b"cudnn_ops_infer64_8.dll\0zlibwapi.dll\0").write(dir, "disp8.dll");
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
        oracle_as(&fix.join("oracle.exe"), args, path, None)
    }

    /// [`oracle`] run as the exe `exe` (its folder is the application's folder), in `cwd`.
    fn oracle_as(exe: &Path, args: &[&std::ffi::OsStr], path: &[&Path], cwd: Option<&Path>) -> Loaded {
        let mut c = Command::new(exe);
        if let Some(d) = cwd {
            c.current_dir(d);
        }
        let out = c.args(args).env("PATH", path_var(path)).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
        let version = stdout.lines().find_map(|l| l.strip_prefix("version ")).and_then(|v| v.trim().parse().ok());
        let modules = stdout.lines().filter_map(|l| l.strip_prefix("module ")).map(|m| PathBuf::from(m.trim())).collect();
        Loaded { version, modules, code: out.status.code().unwrap_or(-1), stderr: String::from_utf8_lossy(&out.stderr).into_owned(), stdout }
    }

    impl Loaded {
        /// The file `--load` mapped.
        fn loaded(&self) -> PathBuf {
            let l = self
                .stdout
                .lines()
                .find_map(|l| l.strip_prefix("loaded "))
                .unwrap_or_else(|| panic!("--load mapped nothing: {}\n{}", self.stdout, self.stderr));
            PathBuf::from(l.trim())
        }
    }

    /// The Wine prefix's (or Windows') system folders, shared by every process: the tests that
    /// put files there hold this lock and remove them when done ([`Placed`]).
    static SYSTEM_FOLDERS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Files put in a system folder, removed on drop.
    struct Placed(Vec<PathBuf>);

    impl Drop for Placed {
        fn drop(&mut self) {
            for f in &self.0 {
                let _ = std::fs::remove_file(f);
            }
        }
    }

    fn system_dirs() -> cuenv::sys::windirs::SystemDirs {
        cuenv::sys::windirs::system_dirs().expect("GetSystemDirectoryW answers")
    }

    fn same(a: &Path, b: &Path) -> bool {
        a.to_string_lossy().to_ascii_lowercase().replace('/', "\\").trim_start_matches("\\\\?\\")
            == b.to_string_lossy().to_ascii_lowercase().replace('/', "\\").trim_start_matches("\\\\?\\")
    }

    fn doctor(major: &str, path: &[&Path], prefix: Option<&Path>) -> (i32, String) {
        doctor_in(major, path, prefix, None)
    }

    /// [`doctor`] run in the current folder `cwd`.
    fn doctor_in(major: &str, path: &[&Path], prefix: Option<&Path>, cwd: Option<&Path>) -> (i32, String) {
        let home = tempfile::tempdir().unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
        if let Some(d) = cwd {
            c.current_dir(d);
        }
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

    /// Issue 30: cuDNN 9 only in a venv's `torch\lib`, used by a CTranslate2-style library that
    /// is not torch (its import table names `cudnn64_9.dll`). With `torch\lib` reachable only
    /// through `AddDllDirectory`, the real loader maps the dispatcher and then cuDNN aborts with
    /// "Could not locate cudnn_graph64_9.dll"; doctor calls that a problem (it used to warn only,
    /// as it does for torch alone, whose `import torch` loads the whole folder itself).
    #[test]
    fn a_library_that_is_not_torch_cannot_use_torch_libs_cudnn() {
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let env = tmp.path().join("venv (x86) & 100%");
        std::fs::create_dir_all(&env).unwrap();
        std::fs::write(env.join("pyvenv.cfg"), "home = C:\\Python312\ninclude-system-site-packages = false\n").unwrap();
        let sp = env.join("Lib/site-packages");
        let torch = sp.join("torch/lib");
        place(&fix, "disp9.dll", &torch, "cudnn64_9.dll");
        place(&fix, "sub9_95.dll", &torch, "cudnn_graph64_9.dll");

        // torch alone: a warning (import torch loads torch\lib itself).
        let (code, out) = doctor_venv("9", &[], &env);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("warning: PyTorch in the venv "), "{out}");

        let ct2 = sp.join("ctranslate2");
        place(&fix, "consumer9.dll", &ct2, "ctranslate2.dll");
        let l = oracle(&fix, &[os("--add-dll-dir"), torch.as_os_str(), os("--path"), ct2.join("ctranslate2.dll").as_os_str()], &[]);
        assert_eq!(l.version, None, "{}", l.stdout);
        assert_eq!(l.code, 9, "{}\n{}", l.stdout, l.stderr);
        assert!(l.stderr.contains("Could not locate cudnn_graph64_9.dll"), "{}", l.stderr);

        let (code, out) = doctor_venv("9", &[], &env);
        assert_eq!(code, 4, "{out}");
        assert!(
            out.contains("problem: ctranslate2's ctranslate2.dll names cudnn64_9.dll, and the only cuDNN 9 here is PyTorch's copy in ")
                && out.contains("cuDNN aborts with \"Could not locate cudnn_graph64_9.dll\""),
            "{out}"
        );

        // With torch\lib on PATH the loader finds the graph library, and doctor agrees.
        let l = oracle(&fix, &[os("--add-dll-dir"), torch.as_os_str(), os("--path"), ct2.join("ctranslate2.dll").as_os_str()], &[&torch]);
        assert_eq!(l.version, Some(90500), "{}\n{}", l.stdout, l.stderr);
        let (_, out) = doctor_venv("9", &[&torch], &env);
        assert!(!out.contains("Could not locate"), "{out}");
    }

    /// [`doctor`] in the venv `venv` (`VIRTUAL_ENV`, no `CONDA_PREFIX`).
    fn doctor_venv(major: &str, path: &[&Path], venv: &Path) -> (i32, String) {
        let home = tempfile::tempdir().unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
        c.env("PATH", path_var(path)).env("CUENV_HOME", home.path()).env("CUENV_TOOLKIT_PATHS", "").env("CUDA_PATH", "").env_remove("CUENV_PROFILE");
        c.env_remove("CONDA_PREFIX").env("VIRTUAL_ENV", venv);
        let out = c.args(["doctor", "--major", major]).output().unwrap();
        (out.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
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

    /// CuDNN 8.3 to 9.1 load `zlibwapi.dll` by name (the stub dispatcher names it, as the real
    /// ones do): none anywhere the loader searches, or a 32-bit one found first, is a problem.
    #[test]
    fn zlibwapi_for_cudnn_8_is_checked() {
        let _lock = SYSTEM_FOLDERS.lock().unwrap_or_else(|e| e.into_inner());
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let dir = tmp.path().join("cudnn8");
        place(&fix, "disp8.dll", &dir, "cudnn64_8.dll");
        place(&fix, "sub8_894.dll", &dir, "cudnn_ops_infer64_8.dll");
        assert_eq!(cuenv::doctor::deps::names_zlibwapi(&dir.join("cudnn64_8.dll")), Some(true));
        let l = oracle(&fix, &[os("--load"), os("zlibwapi.dll")], &[&dir]);
        assert_eq!((l.code, l.stdout.trim()), (4, "failed 126"), "{}", l.stderr);
        let (code, out) = doctor("8", &[&dir], None);
        assert_eq!(code, 4, "{out}");
        assert!(
            out.contains("cuDNN 8.9.4 loads zlibwapi.dll at run time (its dispatcher ")
                && out.contains("no place the loader searches holds it (searched: the modules already loaded, KnownDLLs"),
            "{out}"
        );
        let z = tmp.path().join("zlib32");
        std::fs::create_dir_all(&z).unwrap();
        std::fs::write(z.join("zlibwapi.dll"), crate::support::pe_dll(crate::support::PeArch::I386, None, "zlibwapi")).unwrap();
        // Wine 8 maps this 32-bit image into the 64-bit oracle ("loaded ..."), where Windows
        // answers error 193 (docs/facts.md §7): Wine cannot judge this one; doctor follows
        // Windows.
        let l = oracle(&fix, &[os("--load"), os("zlibwapi.dll")], &[&z, &dir]);
        eprintln!("the loader on a 32-bit zlibwapi.dll first on PATH: {}", l.stdout.trim());
        let (_, out) = doctor("8", &[&z, &dir], None);
        assert!(
            out.contains("the first zlibwapi.dll the loader finds, ")
                && out.contains("through PATH (position 1)")
                && out.contains("cannot load it (error 193)"),
            "{out}"
        );
    }

    /// The case (docs/loader.md W7): an x64 `zlibwapi.dll` in System32 and a 32-bit
    /// one on PATH. The loader maps the System32 copy; doctor used to say error 193 from the
    /// PATH copy, and now says nothing against it; `doctor --pid` on the process that loaded it
    /// agrees.
    #[test]
    fn a_system32_zlibwapi_beats_a_32_bit_one_on_path() {
        use std::io::{BufRead, BufReader, Write};
        let _lock = SYSTEM_FOLDERS.lock().unwrap_or_else(|e| e.into_inner());
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let dir = tmp.path().join("cudnn8");
        place(&fix, "disp8.dll", &dir, "cudnn64_8.dll");
        place(&fix, "sub8_894.dll", &dir, "cudnn_ops_infer64_8.dll");
        let z = tmp.path().join("zlib32");
        std::fs::create_dir_all(&z).unwrap();
        std::fs::write(z.join("zlibwapi.dll"), crate::support::pe_dll(crate::support::PeArch::I386, None, "zlibwapi")).unwrap();
        let sys = system_dirs();
        let _placed = Placed(vec![sys.system32.join("zlibwapi.dll")]);
        std::fs::copy(fix.join("zlib64.dll"), sys.system32.join("zlibwapi.dll")).unwrap();

        let l = oracle(&fix, &[os("--load"), os("zlibwapi.dll")], &[&z, &dir]);
        assert!(same(&l.loaded(), &sys.system32.join("zlibwapi.dll")), "{}", l.stdout);
        let (_, out) = doctor("8", &[&z, &dir], None);
        assert!(!out.contains("zlibwapi"), "doctor must not blame the PATH copy: {out}");

        let mut child = Command::new(fix.join("oracle.exe"))
            .args(["--name", "cudnn64_8.dll", "--load", "zlibwapi.dll", "--wait"])
            .env("PATH", path_var(&[&z, &dir]))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut seen = String::new();
        let mut r = BufReader::new(child.stdout.take().unwrap());
        while !seen.contains("ready") {
            let mut line = String::new();
            if r.read_line(&mut line).unwrap() == 0 {
                break;
            }
            seen.push_str(&line);
        }
        let home = tempfile::tempdir().unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_cuenv")).env("CUENV_HOME", home.path()).args(["doctor", "--pid", &child.id().to_string()]).output().unwrap();
        let _ = child.stdin.take().map(|mut s| s.write_all(b"\n"));
        let _ = child.wait();
        let pid_out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(seen.contains("ready") && pid_out.to_ascii_lowercase().contains("system32\\zlibwapi.dll"), "{seen}\n{pid_out}");
        assert!(!pid_out.contains("error 193"), "{pid_out}");
    }

    /// docs/loader.md W6: a cuDNN set on PATH, another release's sub-library in the current
    /// folder: the loader takes the current folder's, and doctor (run in that folder) says so.
    #[test]
    fn the_current_folder_beats_path() {
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let env = tmp.path().join("env");
        let bin = env.join("Lib/site-packages/nvidia/cudnn/bin");
        place(&fix, "disp9.dll", &bin, "cudnn64_9.dll");
        place(&fix, "sub9_95.dll", &bin, "cudnn_graph64_9.dll");
        let cwd = tmp.path().join("work");
        place(&fix, "sub9_91.dll", &cwd, "cudnn_graph64_9.dll");

        let l = oracle_as(&fix.join("oracle.exe"), &[os("--path"), bin.join("cudnn64_9.dll").as_os_str()], &[&bin], Some(&cwd));
        assert_eq!(l.version, Some(90100), "{}\n{}", l.stdout, l.stderr);
        assert!(l.module("cudnn_graph64_9.dll").to_string_lossy().contains("work"), "{:?}", l.modules);

        let (code, out) = doctor_in("9", &[&bin], Some(&env), Some(&cwd));
        assert_eq!(code, 4, "{out}");
        assert!(
            out.contains("it would load cudnn_graph64_9.dll from ") && out.contains("(9.1.0.70) from the current folder, which comes before PATH"),
            "{out}"
        );
        // Elsewhere, the same PATH gives the wheel its own graph.
        let l = oracle_as(&fix.join("oracle.exe"), &[os("--path"), bin.join("cudnn64_9.dll").as_os_str()], &[&bin], Some(tmp.path()));
        assert_eq!(l.version, Some(90500), "{}", l.stdout);
        let (_, out) = doctor_in("9", &[&bin], Some(&env), Some(tmp.path()));
        assert!(!out.contains("would load cudnn_graph64_9.dll"), "{out}");
    }

    /// docs/loader.md W6: the application's folder (the env's python.exe) comes before
    /// System32 and PATH: a stray sub-library beside python.exe wins.
    #[test]
    fn the_application_folder_beats_path() {
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let env = tmp.path().join("env");
        let bin = env.join("Lib/site-packages/nvidia/cudnn/bin");
        place(&fix, "disp9.dll", &bin, "cudnn64_9.dll");
        place(&fix, "sub9_95.dll", &bin, "cudnn_graph64_9.dll");
        place(&fix, "oracle.exe", &env, "python.exe");
        place(&fix, "sub9_91.dll", &env, "cudnn_graph64_9.dll");

        let l = oracle_as(&env.join("python.exe"), &[os("--path"), bin.join("cudnn64_9.dll").as_os_str()], &[&bin], None);
        assert_eq!(l.version, Some(90100), "{}\n{}", l.stdout, l.stderr);
        let (code, out) = doctor("9", &[&bin], Some(&env));
        assert_eq!(code, 4, "{out}");
        assert!(out.contains("(9.1.0.70) from the application's folder (the host's exe)"), "{out}");
    }

    /// docs/loader.md W6: System32, the 16-bit System folder and the Windows folder each come
    /// before PATH (and before the current folder): a stray `cudnn_ext64_9.dll` placed in each
    /// in turn is what the set on PATH gets, as doctor says.
    #[test]
    fn the_system_folders_beat_path() {
        let _lock = SYSTEM_FOLDERS.lock().unwrap_or_else(|e| e.into_inner());
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let env = tmp.path().join("env");
        let bin = env.join("Lib/site-packages/nvidia/cudnn/bin");
        place(&fix, "disp9x.dll", &bin, "cudnn64_9.dll");
        place(&fix, "sub9_95.dll", &bin, "cudnn_ext64_9.dll");
        let sys = system_dirs();
        let made16 = !sys.system16.exists();
        for (dir, words) in [(&sys.system32, "from System32"), (&sys.system16, "from the 16-bit System folder"), (&sys.windows, "from the Windows folder")] {
            std::fs::create_dir_all(dir).unwrap();
            let _placed = Placed(vec![dir.join("cudnn_ext64_9.dll")]);
            std::fs::copy(fix.join("sub9_91.dll"), dir.join("cudnn_ext64_9.dll")).unwrap();
            let l = oracle(&fix, &[os("--path"), bin.join("cudnn64_9.dll").as_os_str()], &[&bin]);
            assert_eq!(l.version, Some(90100), "{words}: {}\n{}", l.stdout, l.stderr);
            assert!(same(l.module("cudnn_ext64_9.dll"), &dir.join("cudnn_ext64_9.dll")), "{words}: {:?}", l.modules);
            let (code, out) = doctor("9", &[&bin], Some(&env));
            assert_eq!(code, 4, "{out}");
            assert!(out.contains("cudnn_ext64_9.dll from ") && out.contains(&format!("(9.1.0.70) {words}, which comes before PATH")), "{words}: {out}");
        }
        if made16 {
            let _ = std::fs::remove_dir(&sys.system16);
        }
    }

    /// docs/loader.md "Consumers' finders" (W-C3, microsoft/onnxruntime#24266): a dispatcher
    /// loaded by full path (as `import torch` loads `torch\lib`) is mapped, but the sub-library
    /// it then loads by name (as cuDNN 9 does at run time) is the module of that name already
    /// loaded (another consumer's preload), not the copy beside it on the search path: two
    /// releases mix.
    #[test]
    fn a_full_path_load_binds_its_imports_to_the_modules_already_loaded() {
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let torch_lib = tmp.path().join("torch").join("lib");
        place(&fix, "disp9.dll", &torch_lib, "cudnn64_9.dll");
        place(&fix, "sub9_95.dll", &torch_lib, "cudnn_graph64_9.dll");
        let wheel = tmp.path().join("nvidia").join("cudnn").join("bin");
        place(&fix, "sub9_91.dll", &wheel, "cudnn_graph64_9.dll");
        let pre = wheel.join("cudnn_graph64_9.dll");
        // Alone, torch's dispatcher takes the graph library of its folder (on PATH, as torch
        // puts it when its flagged load fails).
        let l = oracle(&fix, &[os("--path"), torch_lib.join("cudnn64_9.dll").as_os_str()], &[&torch_lib]);
        assert_eq!(l.version, Some(90500), "{}\n{}", l.stdout, l.stderr);
        // After the other consumer's full-path preload, the same load binds to the preload's.
        let l = oracle(&fix, &[os("--preload"), pre.as_os_str(), os("--path"), torch_lib.join("cudnn64_9.dll").as_os_str()], &[&torch_lib]);
        assert_eq!(l.version, Some(90100), "{}\n{}", l.stdout, l.stderr);
        let mapped = |f: &Path| l.modules.iter().any(|m| same(m, f));
        assert!(mapped(&torch_lib.join("cudnn64_9.dll")) && mapped(&pre), "torch's dispatcher and the preloaded graph: {}", l.stdout);
        assert!(!mapped(&torch_lib.join("cudnn_graph64_9.dll")), "torch's own graph is never mapped: {}", l.stdout);
    }

    /// docs/loader.md W8-W9: a module the host already loaded under the name wins over every
    /// folder, and a host that called `SetDefaultDllDirectories(LOAD_LIBRARY_SEARCH_DEFAULT_DIRS)`
    /// searches its `AddDllDirectory` folders and never the current folder or PATH. The
    /// model ([`cuenv::doctor::winsearch::WinSearch`]) is asked the same question.
    #[test]
    fn loaded_modules_and_the_default_dirs_order() {
        use cuenv::doctor::winsearch::{Mode, Place, WinSearch};
        let tmp = tempfile::tempdir().unwrap();
        let fix = fixtures(tmp.path());
        let bin = tmp.path().join("bin");
        place(&fix, "disp9.dll", &bin, "cudnn64_9.dll");
        place(&fix, "sub9_95.dll", &bin, "cudnn_graph64_9.dll");
        let old = tmp.path().join("old");
        place(&fix, "sub9_91.dll", &old, "cudnn_graph64_9.dll");
        let pre = old.join("cudnn_graph64_9.dll");

        // Already loaded: the 9.1 graph loaded by full path first wins over bin on PATH.
        let l = oracle(&fix, &[os("--preload"), pre.as_os_str(), os("--name"), os("cudnn64_9.dll")], &[&bin]);
        assert_eq!(l.version, Some(90100), "{}\n{}", l.stdout, l.stderr);
        let mut s = WinSearch::standard(std::slice::from_ref(&bin), None);
        s.loaded = vec![pre.clone()];
        let f = s.find("cudnn_graph64_9.dll").unwrap();
        assert_eq!((f.place, f.path), (Place::Loaded, pre.clone()));

        // Default dirs: the 9.1 graph in the current folder and on PATH are not searched; the
        // AddDllDirectory folder is.
        let l = oracle_as(
            &fix.join("oracle.exe"),
            &[os("--default-dirs"), os("--add-dll-dir"), bin.as_os_str(), os("--path"), bin.join("cudnn64_9.dll").as_os_str()],
            &[&old],
            Some(&old),
        );
        assert_eq!(l.version, Some(90500), "{}\n{}", l.stdout, l.stderr);
        let s = WinSearch {
            mode: Mode::DefaultDirs,
            user_dirs: vec![bin.clone()],
            cwd: Some(old.clone()),
            ..WinSearch::standard(std::slice::from_ref(&old), None)
        };
        assert_eq!(s.find("cudnn_graph64_9.dll").map(|f| f.place), Some(Place::UserDir));
        // Without it, the same process takes the current folder's.
        let l = oracle_as(
            &fix.join("oracle.exe"),
            &[os("--add-dll-dir"), bin.as_os_str(), os("--path"), bin.join("cudnn64_9.dll").as_os_str()],
            &[&old],
            Some(&old),
        );
        assert_eq!(l.version, Some(90100), "{}", l.stdout);
        let s = WinSearch { cwd: Some(old.clone()), ..WinSearch::standard(std::slice::from_ref(&old), None) };
        assert_eq!(s.find("cudnn_graph64_9.dll").map(|f| f.place), Some(Place::CurrentDir));
        // KnownDLLs: read from the registry where it exists (Wine has no such key); cuDNN and
        // zlibwapi are on no list read.
        let k = WinSearch::standard(&[], None);
        eprintln!("KnownDLLs: {:?}", k.known_dlls);
        for n in ["cudnn64_9.dll", "cudnn_graph64_9.dll", "zlibwapi.dll"] {
            assert_ne!(k.is_known_dll(n), Some(true), "{n}");
        }
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
