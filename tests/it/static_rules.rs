//! Static rules that need no GPU, each with a row in docs/loader.md's
//! table ("Static rules"). Linux stubs built with the C compiler.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;

use crate::support::stubs::Stubs;

/// `cuenv doctor [args]` with only `LD_LIBRARY_PATH` = `ld` set.
fn doctor(ld: &[&Path], args: &[&str]) -> (i32, String) {
    let home = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("CUENV_HOME", home.path());
    c.env("CUENV_TOOLKIT_PATHS", "").env("CUDA_HOME", "").env("CUDA_PATH", "");
    c.env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap());
    let out = c.arg("doctor").args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// A library cut short by an interrupted copy is named as such (it used to be explained as
/// "libraries from two releases in one process" after the probe died of SIGBUS); a library
/// built for another machine is named with its machine.
#[test]
fn a_truncated_or_foreign_library_is_named() {
    let s = Stubs::new();
    let dir = s.build("cut", "libcudnn.so.9", &["VERSION=90500"]);
    let f = dir.join("libcudnn.so.9");
    let full = std::fs::read(&f).unwrap();
    std::fs::write(&f, &full[..full.len() / 2]).unwrap();
    let rt = s.cudart();
    let (code, out) = doctor(&[&dir, &rt], &["--major", "9"]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains(&format!("problem: {} is cut short: its headers need {} bytes, the file has {}", f.display(), full.len(), full.len() / 2)), "{out}");
    assert!(out.contains("hint: copy libcudnn.so.9 again from its release"), "{out}");
    assert!(!out.contains("two releases in one process"), "{out}");

    let other = s.tmp.path().join("arm");
    std::fs::create_dir_all(&other).unwrap();
    let mut arm = full.clone();
    arm[18..20].copy_from_slice(&183u16.to_le_bytes()); // EM_AARCH64
    std::fs::write(other.join("libcudnn_ops.so.9"), arm).unwrap();
    let (code, out) = doctor(&[&other], &["--major", "9"]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains(&format!("problem: {} is built for ELF64 machine 183, not for this machine", other.join("libcudnn_ops.so.9").display())), "{out}");
}

/// The CUDA libraries cuDNN loads by name at run time (here `libcublasLt.so.12`, named by
/// `libcudnn_adv.so.9`) must be reachable: without a GPU cuDNN loads none of them, so the
/// probe loads each by the names the files give (docs/loader.md F4).
#[test]
fn a_missing_cublaslt_is_named_with_the_library_that_needs_it() {
    let s = Stubs::new();
    let set = s.build("set", "libcudnn.so.9", &["VERSION=90500"]);
    s.build("set", "libcudnn_adv.so.9", &["GRAPH", "VERSION=90500", "LOADS=\"libcublasLt.so.12\""]);
    let rt = s.cudart();
    let (code, out) = doctor(&[&set, &rt], &["--major", "9"]);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains(&format!(
            "problem[F4]: cuDNN 9 from {}: CUDA library: cuDNN loads cublasLt at run time (libcudnn_adv.so.9 names libcublasLt.so.12), and the loader finds none",
            set.join("libcudnn.so.9").display()
        )),
        "{out}"
    );
    assert!(out.contains("hint: put the lib folder of a CUDA 12 toolkit (or of the nvidia-cublas-cu12 wheel) on LD_LIBRARY_PATH"), "{out}");
    // With a folder holding it on the search path, nothing is said.
    let cublas = s.build("cublas", "libcublasLt.so.12", &["GRAPH", "VERSION=1"]);
    let (code, out) = doctor(&[&set, &rt, &cublas], &["--major", "9"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("libcublasLt.so.12"), "{out}");
}

/// `cuenv doctor` with `LD_LIBRARY_PATH` = `ld` and `CONDA_PREFIX` = `prefix`.
fn doctor_in_env(ld: &[&Path], prefix: &Path) -> (i32, String) {
    let home = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("CUENV_HOME", home.path());
    c.env("CUENV_TOOLKIT_PATHS", "").env("CUDA_HOME", "").env("CUDA_PATH", "").env("CUENV_PROFILE", "p");
    c.env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap()).env("CONDA_PREFIX", prefix);
    let out = c.arg("doctor").output().unwrap();
    (out.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// A hand-written activate.d script that appends its cuDNN folder to `LD_LIBRARY_PATH` (a
/// known fault of such shims: any earlier folder wins) is named with a prepend to use instead;
/// a script that prepends, or appends a folder without CUDA libraries, is not.
#[test]
fn an_activate_script_appending_a_cudnn_folder_is_named() {
    let s = Stubs::new();
    let env = s.tmp.path().join("envs/tf");
    let lib = env.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    let built = s.build("envlib", "libcudnn.so.9", &["VERSION=90500"]);
    std::fs::copy(built.join("libcudnn.so.9"), lib.join("libcudnn.so.9")).unwrap();
    let d = env.join("etc/conda/activate.d");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("env_vars.sh"), "export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$CONDA_PREFIX/lib\n").unwrap();
    std::fs::write(d.join("good.sh"), "export LD_LIBRARY_PATH=\"$CONDA_PREFIX/lib:$LD_LIBRARY_PATH\"\n").unwrap();
    std::fs::write(d.join("tools.sh"), "export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/opt/tools/lib\n").unwrap();
    let (_, out) = doctor_in_env(&[], &env);
    assert!(
        out.contains(&format!(
            "warning: {} appends {} to LD_LIBRARY_PATH: every folder already on LD_LIBRARY_PATH comes first",
            d.join("env_vars.sh").display(),
            lib.display()
        )),
        "{out}"
    );
    assert!(out.contains("hint: prepend it instead (`export LD_LIBRARY_PATH=\"$CONDA_PREFIX/lib:$LD_LIBRARY_PATH\"`)"), "{out}");
    assert!(!out.contains("good.sh appends") && !out.contains("tools.sh appends"), "{out}");
}

/// A conda env holding cuenv shims at a path with a glob metacharacter: conda before 4.9
/// listed activate.d with a glob pattern and would run none of them.
#[test]
fn a_conda_env_path_with_glob_metacharacters_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let env = tmp.path().join("envs/tf[gpu]");
    let d = env.join("etc/conda/activate.d");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("cuenv-tf.sh"), "# a shim\n").unwrap();
    let (_, out) = doctor_in_env(&[], &env);
    assert!(out.contains(&format!("warning: the conda env path {} contains a glob metacharacter", env.display())), "{out}");
    assert!(out.contains("conda before 4.9 (conda/conda#9889)") && out.contains("hint: use conda 4.9 or newer"), "{out}");
    // The same env at a plain path: no such warning.
    let plain = tmp.path().join("envs/tf");
    std::fs::rename(&env, &plain).unwrap();
    let (_, out) = doctor_in_env(&[], &plain);
    assert!(!out.contains("glob metacharacter"), "{out}");
}
