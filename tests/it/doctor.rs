//! `cuenv doctor` on stub cuDNN libraries built with the C compiler at test time: which one
//! the loader picks from LD_LIBRARY_PATH, the folders it shadows, a dispatcher whose
//! sub-library comes from another folder, and cuDNN copied by hand into a toolkit root.
//! Linux only (ELF stubs found through LD_LIBRARY_PATH).
#![cfg(target_os = "linux")]

use std::path::Path;

use crate::support::stubs::Stubs;
use serde_json::Value;

/// `cuenv doctor --major 9 [args]` with only `LD_LIBRARY_PATH` = `ld` (and `extra`) set.
fn doctor(home: &Path, ld: &[&Path], extra: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("CUENV_HOME", home);
    // No toolkit root of this machine may leak in; each test names its own.
    c.env("CUENV_TOOLKIT_PATHS", "").env("CUDA_HOME", "").env("CUDA_PATH", "");
    c.env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap());
    for (k, v) in extra {
        c.env(k, v);
    }
    let out = c.args(["doctor", "--major", "9"]).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_first_folder_wins_and_the_later_one_is_shadowed() {
    let s = Stubs::new();
    let home = tempfile::tempdir().unwrap();
    let a = s.build("a", "libcudnn.so.9", &["VERSION=90500"]);
    let b = s.build("b", "libcudnn.so.9", &["VERSION=90100"]);
    std::fs::write(b.join("libcudnn.so.9.1.0"), "").unwrap();
    let rt = s.cudart();
    let (code, out, err) = doctor(home.path(), &[&a, &rt, &b], &[], &["--json"]);
    assert_eq!(code, 0, "a shadowed copy is a warning, not a problem:\n{out}\n{err}");
    let d: Value = serde_json::from_str(&out).unwrap();
    let loaded = &d["loaded"][0];
    assert_eq!(loaded["version"], "9.5.0");
    assert_eq!(loaded["built_for_cuda"], "12.6");
    assert_eq!(loaded["dispatcher"], a.join("libcudnn.so.9").to_str().unwrap());
    assert_eq!(loaded["origin"], format!("the folder {}", a.display()));
    let dirs = d["search_path"].as_array().unwrap();
    assert_eq!(dirs.len(), 2, "{d}");
    assert_eq!((dirs[0]["position"].as_u64(), dirs[0]["dispatchers"][0]["first"].as_bool()), (Some(1), Some(true)));
    assert_eq!((dirs[1]["position"].as_u64(), dirs[1]["dispatchers"][0]["first"].as_bool()), (Some(3), Some(false)));
    assert_eq!(dirs[1]["dispatchers"][0]["version"], "9.1.0");
    let f = d["findings"].as_array().unwrap();
    assert_eq!(f.len(), 1, "{d}");
    assert_eq!(f[0]["severity"], "warning");
    assert!(
        f[0]["message"].as_str().unwrap().contains(&format!("2 folders on LD_LIBRARY_PATH hold cuDNN 9: {} comes first and wins", a.display())),
        "{}",
        f[0]
    );

    // The same in words.
    let (code, out, _) = doctor(home.path(), &[&a, &rt, &b], &[], &[]);
    assert_eq!(code, 0);
    assert!(out.contains("cuDNN 9: 9.5.0, built for CUDA 12.6"), "{out}");
    assert!(out.contains(&format!("3. {}: libcudnn.so.9 (9.1.0) [shadowed]", b.display())), "{out}");
    assert!(out.contains("0 problems, 1 warning"), "{out}");
}

#[test]
fn a_sub_library_from_another_folder_is_a_problem() {
    let s = Stubs::new();
    let home = tempfile::tempdir().unwrap();
    // cuDNN 9's dispatcher loads libcudnn_graph.so.9 by name: here it only exists in `other`.
    let entry = s.build("entry", "libcudnn.so.9", &["MODE_SUB"]);
    let other = s.build("other", "libcudnn_graph.so.9", &["GRAPH", "VERSION=90100"]);
    let rt = s.cudart();
    let (code, out, err) = doctor(home.path(), &[&entry, &rt, &other], &[], &[]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(out.contains("problem: cuDNN 9 from") && out.contains("mixed sub-library versions"), "{out}");
    assert!(out.contains(&format!("{} (libcudnn_graph.so.9)", other.display())), "{out}");
    assert!(out.contains("hint: keep every cuDNN 9 library of one release in one folder"), "{out}");
}

/// docs/loader.md C2: a version check answering non-zero is a problem (exit 4) naming the
/// check, its status and the sub-library; the loader model (the files tell no release here)
/// saw none, and the sentence says the check wins. A sub-library no check covers and whose
/// file tells nothing is "not verified" (a warning).
#[test]
fn a_failed_version_check_is_a_problem_and_wins_over_the_model() {
    let s = Stubs::new();
    let home = tempfile::tempdir().unwrap();
    let set = s.build("set", "libcudnn.so.9", &["VERSION=90500", "VCHECK_GRAPH=0", "VCHECK_CNN=1002"]);
    for n in ["libcudnn_heuristic.so.9", "libcudnn_graph.so.9", "libcudnn_cnn.so.9"] {
        s.build("set", n, &["GRAPH", "VERSION=90500"]);
    }
    let rt = s.cudart();
    let (code, out, err) = doctor(home.path(), &[&set, &rt], &[], &[]);
    assert_eq!(code, 4, "{out}\n{err}");
    let line = out.lines().find(|l| l.contains("sub-library version check")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.starts_with("problem[V2]: cuDNN 9 from"), "{line}");
    for want in [
        "cudnnCnnVersionCheck returned CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH (1002)",
        "libcudnn_cnn.so.9 (`cnn`)",
        "tell no release, so they show no mismatch: cuDNN's own check wins",
    ] {
        assert!(line.contains(want), "{want}: {line}");
    }
    assert!(out.contains("hint: keep every cuDNN 9 library of one release in one folder: replace the sub-library the check names"), "{out}");
    assert!(out.contains("warning: cuDNN 9 from") && out.contains("not verified: libcudnn_heuristic.so.9 has no version check of cuDNN"), "{out}");
    // All checks answering 0: no problem of that kind.
    let ok = s.build("ok", "libcudnn.so.9", &["VERSION=90500", "VCHECK_GRAPH=0", "VCHECK_CNN=0"]);
    for n in ["libcudnn_graph.so.9", "libcudnn_cnn.so.9"] {
        s.build("ok", n, &["GRAPH", "VERSION=90500"]);
    }
    let (_, out, _) = doctor(home.path(), &[&ok, &rt], &[], &[]);
    assert!(!out.contains("sub-library version check"), "{out}");
}

#[test]
fn nothing_loadable_is_a_problem_only_when_asked_and_hand_copied_cudnn_is_a_warning() {
    let home = tempfile::tempdir().unwrap();
    let tk = tempfile::tempdir().unwrap();
    std::fs::write(tk.path().join("version.json"), r#"{"cuda": {"name": "CUDA SDK", "version": "12.6.77"}}"#).unwrap();
    std::fs::create_dir_all(tk.path().join("lib64")).unwrap();
    for f in ["libcudart.so.12", "libcudnn.so.9", "libcudnn_ops.so.9", "libcudnn.so.9.5.0"] {
        std::fs::write(tk.path().join("lib64").join(f), "not a library").unwrap();
    }
    let empty = tempfile::tempdir().unwrap();
    // `--major 9` asked for and no cuDNN 9 reachable is a problem naming what is.
    let (code, out, err) = doctor(home.path(), &[empty.path()], &[("CUENV_TOOLKIT_PATHS", tk.path().to_str().unwrap())], &[]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(
        out.contains("problem: cuDNN 9 was asked for (--major 9), but none is reachable in this environment; no cuDNN of any major is: no folder on LD_LIBRARY_PATH holds a dispatcher"),
        "{out}"
    );
    assert!(out.contains("hint: put a folder holding libcudnn.so.9 on LD_LIBRARY_PATH"), "{out}");
    // Without --major, nothing loadable is no problem (a machine without cuDNN).
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("CUENV_HOME", home.path());
    c.env("CUENV_TOOLKIT_PATHS", tk.path()).env("CUDA_HOME", "").env("CUDA_PATH", "").env("LD_LIBRARY_PATH", empty.path());
    let plain = c.arg("doctor").output().unwrap();
    assert_eq!(plain.status.code(), Some(0), "{}", String::from_utf8_lossy(&plain.stdout));
    assert!(out.contains("cuDNN 9: not loadable (libcudnn.so.9: cannot open shared object file"), "{out}");
    assert!(out.contains("no folder on LD_LIBRARY_PATH holds a cuDNN dispatcher"), "{out}");
    assert!(out.contains("warning: cuDNN 9.5.0 was copied by hand into the CUDA 12.6.77 root"), "{out}");
    assert!(out.contains("hint: import the release with `cuenv store add"), "{out}");
}

#[test]
fn an_active_profile_missing_from_the_current_generation_is_a_problem() {
    let home = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let (code, out, _) = doctor(home.path(), &[empty.path()], &[("CUENV_PROFILE", "torch2")], &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("active profile (CUENV_PROFILE): torch2"), "{out}");
    assert!(out.contains("problem: CUENV_PROFILE says profile `torch2` is active, but the current generation has no such profile"), "{out}");
}

#[test]
fn framework_copies_in_the_conda_env_are_warnings() {
    let home = tempfile::tempdir().unwrap();
    let env = tempfile::tempdir().unwrap();
    let sp = env.path().join("lib/python3.11/site-packages");
    for d in ["torch/lib", "nvidia/cudnn/lib", "nvidia_cudnn_cu12-9.1.0.70.dist-info"] {
        std::fs::create_dir_all(sp.join(d)).unwrap();
    }
    std::fs::write(sp.join("torch/lib/libcudnn.so.9"), "x").unwrap();
    std::fs::write(sp.join("nvidia/cudnn/lib/libcudnn.so.9"), "x").unwrap();
    std::fs::write(env.path().join("lib/libcudnn.so.8"), "x").unwrap();
    std::fs::write(env.path().join("lib/libcudnn.so.8.9.7"), "x").unwrap();
    let empty = tempfile::tempdir().unwrap();
    let (code, out, _) = doctor(home.path(), &[empty.path()], &[("CONDA_PREFIX", env.path().to_str().unwrap())], &[]);
    assert_eq!(code, 0, "{out}");
    let prefix = env.path().display();
    assert!(
        out.contains(&format!("warning: conda's cudnn package in the conda env {prefix} carries its own cuDNN 8.9.7: {prefix}/lib/libcudnn.so.8")),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "warning: PyTorch in the conda env {prefix} carries its own cuDNN 9 (its files do not tell the exact version): {}",
            sp.join("torch/lib/libcudnn.so.9").display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "warning: the pip wheel nvidia-cudnn in the conda env {prefix} carries its own cuDNN 9.1.0.70: {}",
            sp.join("nvidia/cudnn/lib/libcudnn.so.9").display()
        )),
        "{out}"
    );
    // Nothing in the env links libcudnn by DT_NEEDED with a search path: the loader model
    // (docs/loader.md) predicts nothing, so doctor asserts nothing about which copy wins (it
    // used to say "a framework loads its own copy first ... whatever LD_LIBRARY_PATH says",
    // which the real loader contradicts: tests/it/loader_linux.rs).
    assert!(!out.contains("loads its own copy first") && !out.contains("whatever LD_LIBRARY_PATH says"), "{out}");
    assert!(out.contains("hint: no library in the env's site-packages names libcudnn.so.9 with a search path leading here"), "{out}");
}

#[test]
fn a_crashing_dispatcher_is_a_problem_with_a_hint() {
    let s = Stubs::new();
    let home = tempfile::tempdir().unwrap();
    let bad = s.build("bad", "libcudnn.so.9", &["MODE_SEGV"]);
    let (code, out, _) = doctor(home.path(), &[&bad], &[], &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("cuDNN 9: not loadable (the probe crashed (SIGSEGV) while loading it)"), "{out}");
    assert!(out.contains("problem: cuDNN 9: crash"), "{out}");
    assert!(out.contains("hint: `cuenv doctor --json` shows the probe's output"), "{out}");
}

#[test]
fn an_unusable_file_first_on_the_search_path_is_a_problem() {
    let home = tempfile::tempdir().unwrap();
    let bogus = tempfile::tempdir().unwrap();
    std::fs::write(bogus.path().join("libcudnn.so.9"), "hi\n").unwrap();
    let (code, out, _) = doctor(home.path(), &[bogus.path()], &[], &["--major", "9"]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("problem: cuDNN 9 cannot be loaded: ") && out.contains("file too short"), "{out}");
    assert!(
        out.contains(&format!(
            "hint: {} is not a usable Linux library: remove it, or its folder from LD_LIBRARY_PATH",
            bogus.path().join("libcudnn.so.9").display()
        )),
        "{out}"
    );
    assert_eq!(out.matches("cuDNN 9: ").count(), 1, "--major 9 given twice probes once:\n{out}");
}

#[test]
fn a_dispatcher_with_a_missing_dependency_is_not_called_unusable() {
    let s = Stubs::new();
    let home = tempfile::tempdir().unwrap();
    // A dispatcher linked against libstubdep.so, which is then deleted.
    let dep = s.build("dep", "libstubdep.so", &["GRAPH", "VERSION=1"]);
    let disp = s.tmp.path().join("disp");
    std::fs::create_dir_all(&disp).unwrap();
    let out = std::process::Command::new(&s.cc)
        .args(["-shared", "-fPIC", "-DVERSION=90500", "-o"])
        .arg(disp.join("libcudnn.so.9"))
        .arg(s.tmp.path().join("stub.c"))
        .arg(format!("-L{}", dep.display()))
        .args(["-Wl,--no-as-needed", "-lstubdep", "-ldl"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_file(dep.join("libstubdep.so")).unwrap();
    let (code, out, _) = doctor(home.path(), &[&disp], &[], &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("missing library") && out.contains("libstubdep.so"), "{out}");
    assert!(!out.contains("is not a usable"), "{out}");
    assert!(out.contains("hint: put the folder that holds it on LD_LIBRARY_PATH"), "{out}");
}

/// Driver fit without a profile: the cuDNN the loader picks was built for
/// CUDA 12.6; under `CUENV_OVERRIDE_DRIVER_CUDA=11.4` that is a problem naming both versions.
#[test]
fn a_loaded_cudnn_built_for_a_newer_cuda_than_the_driver_is_a_problem() {
    let s = Stubs::new();
    let home = tempfile::tempdir().unwrap();
    let a = s.build("a", "libcudnn.so.9", &["VERSION=90500"]);
    let rt = s.cudart();
    let (code, out, err) = doctor(home.path(), &[&a, &rt], &[("CUENV_OVERRIDE_DRIVER_CUDA", "11.4"), ("CUENV_OVERRIDE_COMPUTE_CAPABILITY", "8.6")], &[]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(out.contains("NVIDIA driver: supports CUDA <= 11.4; GPU 0 (CUENV_OVERRIDE_COMPUTE_CAPABILITY): compute capability 8.6 (set by CUENV_OVERRIDE_DRIVER_CUDA, CUENV_OVERRIDE_COMPUTE_CAPABILITY)"), "{out}");
    assert!(
        out.contains(&format!(
            "problem: cuDNN 9 from {}: the driver (CUDA version set by CUENV_OVERRIDE_DRIVER_CUDA) supports CUDA <= 11.4; it was built for CUDA 12.6",
            a.join("libcudnn.so.9").display()
        )),
        "{out}"
    );
    assert!(out.contains("hint: update the driver to R525 or newer (>= 525.60.13), or use a CUDA 11 profile"), "{out}");
    let (code, out, _) = doctor(home.path(), &[&a, &rt], &[("CUENV_OVERRIDE_DRIVER_CUDA", "12.0")], &["--json"]);
    assert_eq!(code, 0, "minor-version compatibility: a 12.0 driver runs a 12.6 build: {out}");
    let d: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(d["machine"]["driver_cuda"], "12.0");
}

/// One folder on LD_LIBRARY_PATH holding libraries of two releases (an 8.8.0
/// `libcudnn_ops_train.so.8.8.0` among an 8.9.4 set whose `libcudnn_ops_infer.so.8` carries
/// the 8.9.4.25 marker) is a problem naming both releases and their files; files of unknown
/// version count for none.
#[test]
fn a_folder_holding_two_releases_is_a_problem() {
    let s = Stubs::new();
    let home = tempfile::tempdir().unwrap();
    let set = s.build("set", "libcudnn.so.8", &["VERSION=8904"]);
    s.build("set", "libcudnn_ops_infer.so.8", &["GRAPH", "VERSION=8904", "MARKER=\"cudnn_version_8_9_4_25_c33150885_e0\""]);
    s.build("set", "libcudnn_cnn_infer.so.8", &["GRAPH", "VERSION=8904"]);
    s.build("set", "libcudnn_ops_train.so.8.8.0", &["GRAPH", "VERSION=8800"]);
    std::os::unix::fs::symlink("libcudnn_ops_train.so.8.8.0", set.join("libcudnn_ops_train.so.8")).unwrap();
    let rt = s.cudart();
    let (code, out, err) = doctor(home.path(), &[&set, &rt], &[], &["--major", "8"]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(
        out.contains(&format!(
            "problem[V2]: the folder {} on LD_LIBRARY_PATH (position 1) holds cuDNN 8 libraries of 2 releases (8.9.4.25: libcudnn_ops_infer.so.8; 8.8.0: libcudnn_ops_train.so.8)",
            set.display()
        )),
        "{out}"
    );
    assert!(out.contains("hint: keep one release per folder"), "{out}");
    // Without the stray file: one release, no problem.
    std::fs::remove_file(set.join("libcudnn_ops_train.so.8")).unwrap();
    std::fs::remove_file(set.join("libcudnn_ops_train.so.8.8.0")).unwrap();
    let (_, out, _) = doctor(home.path(), &[&set, &rt], &[], &["--major", "8"]);
    assert!(!out.contains("releases") && !out.contains("cuDNN 8 was asked for"), "{out}");
}

/// `doctor --major 8` where only cuDNN 9 is reachable (PyTorch's torch/lib holds
/// 9.x) is a problem (exit 4) naming what is reachable instead.
#[test]
fn an_asked_major_that_is_not_reachable_names_what_is() {
    let home = tempfile::tempdir().unwrap();
    let env = tempfile::tempdir().unwrap();
    let torch = env.path().join("lib/python3.11/site-packages/torch/lib");
    std::fs::create_dir_all(&torch).unwrap();
    std::fs::write(torch.join("libcudnn.so.9"), "x").unwrap();
    let empty = tempfile::tempdir().unwrap();
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("CUENV_HOME", home.path());
    c.env("CUENV_TOOLKIT_PATHS", "").env("CUDA_HOME", "").env("CUDA_PATH", "").env("LD_LIBRARY_PATH", empty.path()).env("CONDA_PREFIX", env.path());
    let out = c.args(["doctor", "--major", "8"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(
        text.contains(&format!(
            "problem: cuDNN 8 was asked for (--major 8), but none is reachable in this environment; reachable instead: cuDNN 9.x (PyTorch, {})",
            torch.join("libcudnn.so.9").display()
        )),
        "{text}"
    );
}

/// A search-path folder with no cuDNN of its own whose `<CUDA version>/` (or
/// `<CUDA version>/x64/`) subfolder holds it (NVIDIA's exe installer: PATH lists
/// `CUDNN\v9.5\bin`, the DLLs are in `bin\12.6\`) is a problem naming the folder to put on the
/// search path. The Windows layout itself runs under Wine (tests/it/loader_windows.rs); here
/// the same rule with Linux names.
#[test]
fn the_exe_installer_layout_names_the_folder_to_use() {
    let s = Stubs::new();
    let home = tempfile::tempdir().unwrap();
    s.build("v9.5/bin/12.6", "libcudnn.so.9", &["VERSION=90500"]);
    s.build("v9.5/bin/11.8/x64", "libcudnn.so.9", &["VERSION=90500", "CUDNN_CUDART=11080"]);
    let bin = s.tmp.path().join("v9.5/bin");
    let (code, out, _) = doctor(home.path(), &[&bin], &[], &[]);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains(&format!(
            "problem: the folder {} on LD_LIBRARY_PATH (position 1) holds no cuDNN library, but its subfolder {} holds libcudnn.so.9 (the layout of NVIDIA's exe installer: one subfolder per CUDA version); the loader does not look into subfolders",
            bin.display(),
            bin.join("11.8/x64").display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "hint: put the subfolder for your CUDA version on LD_LIBRARY_PATH instead of {}: {} (or {})",
            bin.display(),
            bin.join("11.8/x64").display(),
            bin.join("12.6").display()
        )),
        "{out}"
    );
}

/// A stale `cudnn_version.h` beside hand-copied libraries whose own version is known
/// (here from the `cudnn_version_*` marker in the wheel-style `libcudnn_graph.so.9`, whose name
/// carries only the major) is named as the stale one; the copy is reported with the library's
/// version, not the header's.
#[test]
fn a_stale_header_is_named_as_stale() {
    let s = Stubs::new();
    let home = tempfile::tempdir().unwrap();
    let tk = s.tmp.path().join("cuda-12.6");
    std::fs::create_dir_all(tk.join("include")).unwrap();
    std::fs::write(tk.join("version.json"), r#"{"cuda": {"name": "CUDA SDK", "version": "12.6.77"}}"#).unwrap();
    std::fs::write(tk.join("include/cudnn_version.h"), "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n").unwrap();
    s.build("cuda-12.6/lib64", "libcudnn.so.9", &["VERSION=90500"]);
    s.build("cuda-12.6/lib64", "libcudnn_graph.so.9", &["GRAPH", "VERSION=90500", "MARKER=\"cudnn_version_9_5_0_50_34937467_e0\""]);
    let empty = tempfile::tempdir().unwrap();
    let (_, out, _) = doctor(home.path(), &[empty.path()], &[("CUENV_TOOLKIT_PATHS", tk.to_str().unwrap())], &[]);
    assert!(out.contains("warning: cuDNN 9.5.0.50 was copied by hand into the CUDA 12.6.77 root"), "{out}");
    assert!(
        out.contains(
            "include/cudnn_version.h says cuDNN 9.1.0, but the library's own version is 9.5.0.50 (the marker in libcudnn_graph.so.9): the header is stale"
        ),
        "{out}"
    );
}

/// A probe that crashes because a sub-library is missing is explained by what the files say,
/// not by "two releases": a folder holding only a link `libcudnn.so.9` into a folder with the
/// whole set (the dispatcher, with `DT_RUNPATH` `$ORIGIN` like NVIDIA's, looks beside the link:
/// the real loader crashes it), and a folder holding the dispatcher alone.
#[test]
fn a_crash_from_a_missing_sub_library_is_explained_by_the_files() {
    let s = Stubs::new();
    let home = tempfile::tempdir().unwrap();
    // The dispatcher and graph name what the real 9.5 ones name (docs/loader.md R1).
    let dispatcher_names = "NAMES=\"libcudnn_graph.so libcudnn_ops.so libcudnn_cnn.so libcudnn_adv.so\"";
    let graph_names = "NAMES=\"libcudnn_heuristic.so libcudnn_engines_precompiled.so libcudnn_engines_runtime_compiled.so\"";
    let full = s.build_with("full", "libcudnn.so.9", &["MODE_SUB", dispatcher_names], &["-Wl,-rpath,$ORIGIN", "-Wl,--enable-new-dtags"]);
    s.build("full", "libcudnn_graph.so.9", &["GRAPH", "VERSION=90500", graph_names]);
    for stem in ["engines_precompiled", "engines_runtime_compiled", "heuristic", "ops", "cnn", "adv"] {
        s.build("full", &format!("libcudnn_{stem}.so.9"), &["GRAPH", "VERSION=90500"]);
    }
    let rt = s.cudart();
    // The whole set loads through its own folder.
    let (code, out, err) = doctor(home.path(), &[&full, &rt], &[], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("cuDNN 9: 9.5.0"), "{out}");

    let lone = s.tmp.path().join("lone");
    std::fs::create_dir_all(&lone).unwrap();
    std::os::unix::fs::symlink(full.join("libcudnn.so.9"), lone.join("libcudnn.so.9")).unwrap();
    let (code, out, err) = doctor(home.path(), &[&lone, &rt], &[], &[]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(out.contains("problem[R2]: cuDNN 9: crash") && out.contains("cuDNN could not load its sub-library libcudnn_graph.so.9"), "{out}");
    let full_c = std::fs::canonicalize(&full).unwrap();
    assert!(
        out.contains(&format!(
            "hint: {} is a link to {}: cuDNN looks for its sub-libraries beside the name it was loaded by, not beside the link's target, and {} lacks libcudnn_graph.so.9, ",
            lone.join("libcudnn.so.9").display(),
            full_c.join("libcudnn.so.9").display(),
            lone.display()
        )) && out.contains(&format!("put {} on LD_LIBRARY_PATH instead, or link the folder {} rather than the file", full_c.display(), full_c.display())),
        "{out}"
    );
    assert!(!out.contains("two releases"), "{out}");

    // A copy of the dispatcher alone.
    let alone = s.build("alone", "libcudnn.so.9", &["MODE_SUB", dispatcher_names]);
    let (code, out, err) = doctor(home.path(), &[&alone, &rt], &[], &[]);
    assert_eq!(code, 4, "{out}\n{err}");
    // What the dispatcher names; graph's own names cannot be read without graph.
    assert!(out.contains(&format!("hint: {} lacks libcudnn_graph.so.9, libcudnn_ops.so.9, libcudnn_cnn.so.9, libcudnn_adv.so.9", alone.display())), "{out}");
    assert!(out.contains("cuDNN aborts when it cannot load one"), "{out}");
    assert!(!out.contains("two releases"), "{out}");
}

/// conda's `cudnn` package whose dispatcher's name tells no version: the version is what its
/// graph library's marker and conda's record (`conda-meta/cudnn-*.json`) say, naming both;
/// not "its files do not tell the exact version".
#[test]
fn a_conda_cudnn_is_told_by_its_marker_and_its_record() {
    let s = Stubs::new();
    let home = tempfile::tempdir().unwrap();
    let env = s.tmp.path().join("env");
    let lib = env.join("lib");
    std::fs::create_dir_all(env.join("conda-meta")).unwrap();
    let built = s.build("c", "libcudnn.so.9", &["VERSION=90500"]);
    s.build("c", "libcudnn_graph.so.9", &["GRAPH", "VERSION=90500", "MARKER=\"cudnn_version_9_5_0_50_34937467_e0\""]);
    std::fs::rename(&built, &lib).unwrap();
    let record = "cudnn-9.5.0.50-h8f4b3c2_0.json";
    std::fs::write(env.join("conda-meta").join(record), r#"{"name": "cudnn", "version": "9.5.0.50", "build": "h8f4b3c2_0"}"#).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let (code, out, err) = doctor(home.path(), &[empty.path()], &[("CONDA_PREFIX", env.to_str().unwrap())], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains(&format!(
            "warning: conda's cudnn package in the conda env {} carries its own cuDNN 9.5.0.50 (from conda-meta/{record}; the version marker of libcudnn_graph.so.9): {}",
            env.display(),
            lib.join("libcudnn.so.9").display()
        )),
        "{out}"
    );
    assert!(!out.contains("do not tell the exact version"), "{out}");
    // A record of another release: the files win, and the record is named with what it says.
    std::fs::write(env.join("conda-meta").join(record), r#"{"name": "cudnn", "version": "9.1.0.70", "build": "h8f4b3c2_0"}"#).unwrap();
    let (_, out, _) = doctor(home.path(), &[empty.path()], &[("CONDA_PREFIX", env.to_str().unwrap())], &[]);
    assert!(
        out.contains(&format!("carries its own cuDNN 9.5.0.50 (from the version marker of libcudnn_graph.so.9; conda-meta/{record} says 9.1.0.70)")),
        "{out}"
    );
}

/// One run does not contradict itself: a sub-library whose own file tells no version, in a
/// folder whose other files carry one release, is given that release (the search path's
/// listing names it) instead of "version unknown"; a dispatcher whose files tell nothing is
/// given what cudnnGetVersion reported.
#[test]
fn a_version_read_once_is_used_by_later_sentences() {
    let s = Stubs::new();
    let home = tempfile::tempdir().unwrap();
    let entry = s.build("entry", "libcudnn.so.9", &["VERSION=90500"]);
    s.build("entry", "libcudnn_graph.so.9", &["GRAPH", "VERSION=90500", "MARKER=\"cudnn_version_9_5_0_50_34937467_e0\""]);
    s.build("entry", "libcudnn_ops.so.9", &["GRAPH", "VERSION=90500"]);
    let stray = s.build("stray", "libcudnn_graph.so.9", &["GRAPH", "VERSION=90100", "MARKER=\"cudnn_version_9_1_0_70_34937467_e0\""]);
    s.build("stray", "libcudnn_ops.so.9", &["GRAPH", "VERSION=90100"]);
    let rt = s.cudart();
    let (code, out, err) = doctor(home.path(), &[&stray, &entry, &rt], &[], &[]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(out.contains(&format!("{}: libcudnn_graph.so.9 (9.1.0.70), libcudnn_ops.so.9 [no dispatcher]", stray.display())), "{out}");
    assert!(out.contains(&format!("libcudnn_ops.so.9 from {} (9.1.0.70, as the other files of its folder say)", stray.display())), "{out}");
    assert!(!out.contains("version unknown"), "{out}");

    // The dispatcher's folder tells nothing: the sentence uses what the probe reported.
    let bare = s.build("bare", "libcudnn.so.9", &["VERSION=90500"]);
    s.build("bare", "libcudnn_ops.so.9", &["GRAPH", "VERSION=90500"]);
    let (code, out, err) = doctor(home.path(), &[&stray, &bare, &rt], &[], &[]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(out.contains("cuDNN 9: 9.5.0"), "{out}");
    assert!(out.contains(&format!("cuDNN 9 from {} (9.5.0, as cudnnGetVersion reports)", bare.join("libcudnn.so.9").display())), "{out}");
    assert!(!out.contains("version unknown"), "{out}");
}

/// Issue 32's report: a conda env whose record of jaxlib says it needs `cudnn >=9.13.1.26,<10.0a0`
/// next to a cudnn 9.10.1.4 ("Loaded runtime CuDNN library: 9.10.1 but source was compiled
/// with: 9.13.1"). doctor reads conda's own records (`conda-meta/*.json` `depends`) and calls
/// it a problem with the fix; with a cudnn that satisfies the pin nothing is said of it.
#[test]
fn a_conda_framework_pinning_a_newer_cudnn_than_the_env_holds_is_a_problem() {
    let home = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let env = tmp.path().join("jax env");
    let meta = env.join("conda-meta");
    std::fs::create_dir_all(&meta).unwrap();
    let jaxlib = r#"{"name": "jaxlib", "version": "0.4.38", "build": "cuda126py312h1234567_200", "depends": ["__cuda", "cuda-version >=12.6,<13", "cudnn >=9.13.1.26,<10.0a0", "python >=3.12,<3.13.0a0"]}"#;
    std::fs::write(meta.join("jaxlib-0.4.38-cuda126py312h1234567_200.json"), jaxlib).unwrap();
    let record =
        |v: &str| std::fs::write(meta.join("cudnn-9.x-h0.json"), format!(r#"{{"name": "cudnn", "version": "{v}", "build": "h0", "depends": []}}"#)).unwrap();
    record("9.10.1.4");
    let empty = tempfile::tempdir().unwrap();
    let (code, out, err) = doctor(home.path(), &[empty.path()], &[("CONDA_PREFIX", env.to_str().unwrap())], &[]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(
        out.contains("jaxlib 0.4.38 (conda-meta/jaxlib-0.4.38-cuda126py312h1234567_200.json)")
            && out.contains("requires cudnn >=9.13.1.26,<10.0a0, and the env's cudnn is 9.10.1.4 (conda-meta/cudnn-9.x-h0.json)")
            && out.contains("conda install \"cudnn >=9.13.1.26,<10.0a0\""),
        "{out}"
    );
    record("9.13.1.26");
    let (_, out, _) = doctor(home.path(), &[empty.path()], &[("CONDA_PREFIX", env.to_str().unwrap())], &[]);
    assert!(!out.contains("requires cudnn"), "{out}");
}

/// After `cuenv use`, a shell that follows nothing of cuenv's (no shim, no `.cuenv-profile`
/// hook, no `env --setup`: CUENV_PROFILE unset) gets nothing of the active profile: doctor
/// says so and names the line that makes the shell follow it. A shell set up with
/// `env --setup` (CUENV_PROFILE=active) is not told.
#[test]
fn after_use_a_shell_that_follows_nothing_is_pointed_at_env_setup() {
    let lab = crate::support::lab::Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let doctor = |profile: Option<&str>| {
        let mut c = lab.ctx.cmd();
        c.env_remove("CUENV_PROFILE").env("CUENV_TOOLKIT_PATHS", "").env("LD_LIBRARY_PATH", "").arg("doctor");
        if let Some(p) = profile {
            c.env("CUENV_PROFILE", p);
        }
        let out = c.output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // Nothing active yet: nothing to follow, nothing said.
    assert!(!doctor(None).contains("`cuenv use` made profile"), "{}", doctor(None));
    lab.ok(&["use", "torch2"]);
    let out = doctor(None);
    assert!(out.contains("warning: `cuenv use` made profile `torch2` active"), "{out}");
    assert!(out.contains("but this shell does not follow it (CUENV_PROFILE is unset)"), "{out}");
    assert!(out.contains("hint: run `eval \"$(cuenv env --setup)\"` in this shell"), "{out}");
    assert!(out.contains("`cuenv run -p torch2 -- COMMAND`"), "{out}");
    // A shell that follows `<home>/active` is not told.
    let out = doctor(Some("active"));
    assert!(!out.contains("`cuenv use` made profile"), "{out}");
    assert!(out.contains("active profile (<home>/active, through `cuenv env --setup`): torch2"), "{out}");
}
