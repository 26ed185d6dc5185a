//! `cuenv doctor` in the Python environments people run in besides conda (issue 30): a venv,
//! a uv venv, a pixi env's layout, an interpreter named with `--python`, a site-packages that
//! holds only a JAX-style plugin, and a cuDNN-cu13 wheel paired (or not) with CUDA 13's
//! `nvidia/cu13/lib`. Each setup is built from gcc stubs, the real loader (python3 ctypes,
//! `/proc/self/maps`) says what loads first, and doctor must say the same.
#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::stubs::{Stubs, cc_lib};

/// Loads `lib` with ctypes, calls `func`, prints its return value, then every mapped file
/// whose name holds `cudnn` or `cublas`.
const ORACLE_PY: &str = r#"
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
f = getattr(lib, sys.argv[2])
f.restype = ctypes.c_size_t
print(f())
seen = []
for line in open('/proc/self/maps'):
    parts = line.split(None, 5)
    if len(parts) == 6 and ('cudnn' in parts[5] or 'cublas' in parts[5]):
        p = parts[5].strip()
        if p not in seen:
            seen.append(p)
print("\n".join(seen))
"#;

/// What the real loader did: the function's return value and the files mapped.
struct Mapped {
    value: u64,
    files: Vec<PathBuf>,
}

fn oracle(tmp: &Path, ld: &[&Path], lib: &Path, func: &str) -> Mapped {
    let script = tmp.join("oracle.py");
    std::fs::write(&script, ORACLE_PY).unwrap();
    let out = Command::new("python3").arg(&script).arg(lib).arg(func).env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "oracle failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
    let mut lines = text.lines();
    let value = lines.next().unwrap().trim().parse().unwrap();
    Mapped { value, files: lines.map(|l| std::fs::canonicalize(l).unwrap_or_else(|_| PathBuf::from(l))).collect() }
}

/// `cuenv doctor --major 9 [args]` with `LD_LIBRARY_PATH` = `ld` and the variables `vars`
/// (nothing else of this machine's: no CONDA_PREFIX, VIRTUAL_ENV or toolkit roots).
fn doctor(ld: &[&Path], vars: &[(&str, &Path)], args: &[&str]) -> (i32, String) {
    let home = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("CUENV_HOME", home.path());
    c.env("CUENV_TOOLKIT_PATHS", "").env("CUDA_HOME", "").env("CUDA_PATH", "");
    c.env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap());
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c.args(["doctor", "--major", "9"]).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// A venv layout at `prefix` (`pyvenv.cfg` with `cfg`); returns its site-packages.
fn venv(prefix: &Path, cfg: &str) -> PathBuf {
    let sp = prefix.join("lib/python3.12/site-packages");
    std::fs::create_dir_all(&sp).unwrap();
    std::fs::write(prefix.join("pyvenv.cfg"), cfg).unwrap();
    sp
}

/// The cuDNN 9 wheel `nvidia/cudnn/lib` in `sp` (dispatcher + graph with DT_RUNPATH `$ORIGIN`,
/// like NVIDIA's), of release `v` (`9.1.0.70`), with its dist-info.
fn cudnn_wheel(s: &Stubs, sp: &Path, v: &str) -> PathBuf {
    let lib = sp.join("nvidia/cudnn/lib");
    stub_set(s, &lib, v);
    std::fs::create_dir_all(sp.join(format!("nvidia_cudnn_cu12-{v}.dist-info"))).unwrap();
    lib
}

/// A cuDNN 9 set of release `v` in `dir` (dispatcher that loads graph by name, graph with the
/// release's marker), both with DT_RUNPATH `$ORIGIN`.
fn stub_set(s: &Stubs, dir: &Path, v: &str) {
    let p: Vec<&str> = v.split('.').collect();
    let version = format!("VERSION={}{:0>2}{:0>2}", p[0], p[1], p[2]);
    let marker = format!("MARKER=\"cudnn_version_{}_1_e0\"", v.replace('.', "_"));
    let rel = dir.strip_prefix(s.tmp.path()).unwrap().to_str().unwrap().to_string();
    let rpath = ["-Wl,--enable-new-dtags", "-Wl,-rpath,$ORIGIN"];
    s.build_with(&rel, "libcudnn.so.9", &["MODE_SUB"], &rpath);
    s.build_with(&rel, "libcudnn_graph.so.9", &["GRAPH", &version, &marker], &rpath);
}

/// A library `file` in `dir` that names `libcudnn.so.9` in DT_NEEDED with DT_RUNPATH `runpath`
/// and calls `cudnnGetVersion` from `consumer_version`, like torch's libtorch_cuda.so or a JAX
/// plugin; linked against the set in `against`.
fn consumer(s: &Stubs, dir: &Path, file: &str, runpath: &str, against: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let src = s.tmp.path().join("consumer.c");
    std::fs::write(&src, "#include <stddef.h>\nsize_t cudnnGetVersion(void);\nsize_t consumer_version(void) { return cudnnGetVersion(); }\n").unwrap();
    let lib = dir.join(file);
    let out = Command::new(&s.cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .arg(format!("-L{}", against.display()))
        .arg("-l:libcudnn.so.9")
        .arg("-Wl,--enable-new-dtags")
        .arg(format!("-Wl,-rpath,{runpath}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    lib
}

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap()
}

/// The issue's first case: a venv holding pip's cuDNN 9.1.0 that torch loads through its
/// DT_RUNPATH, and a system 9.5.1 on LD_LIBRARY_PATH. The real loader takes the 9.5.1
/// (LD_LIBRARY_PATH comes before DT_RUNPATH); doctor, which used to look only at
/// CONDA_PREFIX and said "no problems found", names it from VIRTUAL_ENV alone.
#[test]
fn a_venvs_torch_gets_the_system_cudnn_from_ld_library_path() {
    let s = Stubs::new();
    let prefix = s.tmp.path().join("proj/.venv");
    let sp = venv(&prefix, "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n");
    let wheel = cudnn_wheel(&s, &sp, "9.1.0.70");
    let system = s.tmp.path().join("usr-lib");
    stub_set(&s, &system, "9.5.1.17");
    let torch = consumer(&s, &sp.join("torch/lib"), "libtorch_cuda.so", "$ORIGIN/../../nvidia/cudnn/lib", &wheel);

    let m = oracle(s.tmp.path(), &[&system], &torch, "consumer_version");
    assert_eq!(m.value, 90501, "{:?}", m.files);
    assert!(m.files.contains(&canon(&system.join("libcudnn.so.9"))), "{:?}", m.files);

    let (code, out) = doctor(&[&system], &[("VIRTUAL_ENV", &prefix)], &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains(&format!("Python environment (VIRTUAL_ENV): the venv {}; site-packages {}", prefix.display(), sp.display())), "{out}");
    assert!(
        out.contains(&format!(
            "problem: PyTorch's libtorch_cuda.so names libcudnn.so.9 with DT_RUNPATH `$ORIGIN/../../nvidia/cudnn/lib`, and the loader searches LD_LIBRARY_PATH before DT_RUNPATH: it takes {} (9.5.1.17) through LD_LIBRARY_PATH (position 1), not its own {} (9.1.0.70)",
            canon(&system.join("libcudnn.so.9")).display(),
            canon(&wheel.join("libcudnn.so.9")).display()
        )),
        "{out}"
    );
    assert!(out.contains(&format!("warning: the pip wheel nvidia-cudnn in the venv {} carries its own cuDNN 9.1.0.70", prefix.display())), "{out}");

    // Without the system folder the wheel's copy wins, and doctor finds nothing wrong.
    let empty = s.tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert_eq!(oracle(s.tmp.path(), &[&empty], &torch, "consumer_version").value, 90100);
    let (code, out) = doctor(&[&empty], &[("VIRTUAL_ENV", &prefix)], &[]);
    assert_eq!(code, 0, "{out}");
}

/// A uv venv whose site-packages holds only a JAX-style plugin (not torch) with DT_RUNPATH
/// `$ORIGIN/../nvidia/cudnn/lib` into the wheel: the plugin is a consumer like torch is.
#[test]
fn a_jax_style_plugin_in_a_uv_venv_is_judged_like_torch() {
    let s = Stubs::new();
    let prefix = s.tmp.path().join(".venv");
    let sp = venv(&prefix, "home = /usr/bin\nimplementation = CPython\nuv = 0.9.5\nversion_info = 3.12.3\ninclude-system-site-packages = false\n");
    let wheel = cudnn_wheel(&s, &sp, "9.1.0.70");
    let plugin = consumer(&s, &sp.join("jax_cuda12_plugin"), "xla_cuda_plugin.so", "$ORIGIN/../nvidia/cudnn/lib", &wheel);
    let image = s.tmp.path().join("image-lib");
    stub_set(&s, &image, "9.2.1.18");

    let m = oracle(s.tmp.path(), &[&image], &plugin, "consumer_version");
    assert_eq!(m.value, 90201, "{:?}", m.files);
    let (code, out) = doctor(&[&image], &[("VIRTUAL_ENV", &prefix)], &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains(&format!("Python environment (VIRTUAL_ENV): the uv venv {}", prefix.display())), "{out}");
    assert!(
        out.contains(&format!(
            "problem: jax_cuda12_plugin's xla_cuda_plugin.so names libcudnn.so.9 with DT_RUNPATH `$ORIGIN/../nvidia/cudnn/lib`, and the loader searches LD_LIBRARY_PATH before DT_RUNPATH: it takes {} (9.2.1.18)",
            canon(&image.join("libcudnn.so.9")).display()
        )),
        "{out}"
    );

    // Alone, it gets the wheel's copy through its DT_RUNPATH, as doctor says.
    let empty = s.tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert_eq!(oracle(s.tmp.path(), &[&empty], &plugin, "consumer_version").value, 90100);
    let (code, out) = doctor(&[&empty], &[("VIRTUAL_ENV", &prefix)], &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("hint: jax_cuda12_plugin's xla_cuda_plugin.so finds libcudnn.so.9 here through the DT_RUNPATH `$ORIGIN/../nvidia/cudnn/lib`"),
        "{out}"
    );
}

/// A pixi env (a conda prefix under `.pixi/envs/default`, as `pixi shell` sets CONDA_PREFIX
/// to) is named as one, and its torch is judged.
#[test]
fn a_pixi_env_is_named_and_judged() {
    let s = Stubs::new();
    let prefix = s.tmp.path().join("proj/.pixi/envs/default");
    std::fs::create_dir_all(prefix.join("conda-meta")).unwrap();
    let sp = prefix.join("lib/python3.12/site-packages");
    let wheel = cudnn_wheel(&s, &sp, "9.1.0.70");
    consumer(&s, &sp.join("torch/lib"), "libtorch_cuda.so", "$ORIGIN/../../nvidia/cudnn/lib", &wheel);
    let system = s.tmp.path().join("sys");
    stub_set(&s, &system, "9.5.1.17");
    let (code, out) = doctor(&[&system], &[("CONDA_PREFIX", &prefix)], &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains(&format!("Python environment (CONDA_PREFIX): the pixi env {}", prefix.display())), "{out}");
    assert!(out.contains("problem: PyTorch's libtorch_cuda.so names libcudnn.so.9"), "{out}");
}

/// `--python PATH` looks at a real interpreter's environment, asked with `-S -I`: here a real
/// venv that no variable names (started by full path, never activated).
#[test]
fn a_named_interpreters_site_packages_are_looked_at() {
    let s = Stubs::new();
    let prefix = s.tmp.path().join("never activated");
    if !Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&prefix).status().is_ok_and(|st| st.success()) {
        crate::support::skipped("python3 -m venv is not available");
        return;
    }
    let sp = crate::support::first_dir(&prefix.join("lib"), "python").join("site-packages");
    let wheel = cudnn_wheel(&s, &sp, "9.1.0.70");
    consumer(&s, &sp.join("torch/lib"), "libtorch_cuda.so", "$ORIGIN/../../nvidia/cudnn/lib", &wheel);
    let system = s.tmp.path().join("sys");
    stub_set(&s, &system, "9.5.1.17");
    let cudart = s.cudart();
    // No variable names the venv: doctor sees nothing wrong.
    let (code, out) = doctor(&[&system, &cudart], &[], &[]);
    assert_eq!(code, 0, "{out}");
    let python = prefix.join("bin/python");
    let (code, out) = doctor(&[&system, &cudart], &[], &["--python", python.to_str().unwrap()]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains(&format!("Python environment (--python {}): the venv {}", python.display(), prefix.display())), "{out}");
    assert!(out.contains("problem: PyTorch's libtorch_cuda.so names libcudnn.so.9"), "{out}");
    // An interpreter that does not run is named, and the rest of the diagnosis still runs.
    let (code, out) = doctor(&[&system], &[], &["--python", "/no/such/python3"]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("problem: --python: cannot run /no/such/python3"), "{out}");
}

/// The CUDA 13 wheel layout: cuDNN-cu13's libraries (in `nvidia/cudnn/lib`, as the real
/// nvidia-cudnn-cu13 9.28.1.4 wheel has them) search `$ORIGIN/../../cu13/lib` for cuBLAS
/// (the real wheel's `libcudnn_graph.so.9` DT_RUNPATH, docs/facts.md), where CUDA 13's own
/// wheels put `libcublasLt.so.13`. Without that folder the real loader finds no cuBLAS and
/// doctor says F4; with it, nothing.
#[test]
fn a_cudnn_cu13_wheel_is_paired_with_the_cu13_folder() {
    let s = Stubs::new();
    let prefix = s.tmp.path().join("venv13");
    let sp = venv(&prefix, "home = /usr/bin\n");
    let lib = sp.join("nvidia/cudnn/lib");
    let rel = lib.strip_prefix(s.tmp.path()).unwrap().to_str().unwrap().to_string();
    let runpath = "-Wl,-rpath,$ORIGIN:$ORIGIN/../../cublas/lib:$ORIGIN/../../cuda_nvrtc/lib:$ORIGIN/../../cu13/lib";
    s.build_with(&rel, "libcudnn.so.9", &["MODE_SUB", "CUDNN_CUDART=13000"], &["-Wl,--enable-new-dtags", runpath]);
    s.build_with(
        &rel,
        "libcudnn_graph.so.9",
        &["GRAPH", "VERSION=92801", "MARKER=\"cudnn_version_9_28_1_4_1_e0\"", "LOADS=\"libcublasLt.so.13\""],
        &["-Wl,--enable-new-dtags", runpath],
    );
    std::fs::create_dir_all(sp.join("nvidia_cudnn_cu13-9.28.1.4.dist-info")).unwrap();
    let graph = lib.join("libcudnn_graph.so.9");
    let empty = s.tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();

    let m = oracle(s.tmp.path(), &[&empty], &graph, "stub_load_cuda_library");
    assert_eq!(m.value, 0, "no cuBLAS 13 anywhere, yet the loader found one: {:?}", m.files);
    // Its import table resolves, but that is not all it loads: `doctor --for` says so.
    let out = Command::new(env!("CARGO_BIN_EXE_cuenv")).env("CUENV_HOME", s.tmp.path().join("home")).args(["doctor", "--for"]).arg(&graph).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("every import resolves\nnot verified: a cuDNN library also loads its sub-libraries, cuBLAS and NVRTC by name"), "{text}");
    let (code, out) = doctor(&[&empty], &[("VIRTUAL_ENV", &prefix)], &[]);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains(&format!(
            "problem[F4]: the pip wheel nvidia-cudnn in the venv {} ({}): cuDNN loads cublasLt at run time (libcudnn_graph.so.9 names libcublasLt.so.13)",
            prefix.display(),
            lib.display()
        )),
        "{out}"
    );

    // CUDA 13's cuBLAS wheel layout: nvidia/cu13/lib.
    let cu13 = sp.join("nvidia/cu13/lib");
    cc_lib(&cu13, "libcublasLt.so.13", "int cuenv_stub(void) { return 0; }\n", &[]);
    let m = oracle(s.tmp.path(), &[&empty], &graph, "stub_load_cuda_library");
    assert_ne!(m.value, 0, "{:?}", m.files);
    assert!(m.files.contains(&canon(&cu13.join("libcublasLt.so.13"))), "{:?}", m.files);
    let (_, out) = doctor(&[&empty], &[("VIRTUAL_ENV", &prefix)], &[]);
    assert!(!out.contains("cuDNN loads cublasLt at run time"), "{out}");
}

/// `python-env = "proj"` binds a profile to the uv-style project venv `proj/.venv` (a real one,
/// `python3 -m venv`): `apply` writes no shim into it; `cuenv run` starts in it (its own
/// interpreter first, `VIRTUAL_ENV` set, the profile's folders ahead of it); a kernel's
/// default interpreter is the venv's; and doctor in a shell of that profile looks at the venv.
#[test]
fn a_profile_bound_to_a_venv_gives_run_kernels_and_doctor_that_venv() {
    use crate::support::lab::Lab;
    let lab = Lab::new();
    let venv = lab.ctx.path("proj/.venv");
    if !Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&venv).status().is_ok_and(|st| st.success()) {
        crate::support::skipped("python3 -m venv is not available");
        return;
    }
    let file = lab.lab("[profiles.torch]\ncuda = \"12\"\ncudnn = \"9.5\"\npython-env = \"proj\"\n");
    let out = lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    assert!(!venv.join("etc").exists(), "a shim was written into the venv: {out}");

    let out = lab
        .ctx
        .cmd()
        .args([
            "run",
            "-p",
            "torch",
            "--",
            "python",
            "-c",
            "import os, sys; print(sys.prefix); print(os.environ['VIRTUAL_ENV']); print(os.environ['LD_LIBRARY_PATH'])",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(Path::new(lines[0]), canon(&venv), "the venv's own interpreter runs: {text}");
    assert_eq!(Path::new(lines[1]), venv, "{text}");
    assert_eq!(Path::new(lines[2].split(':').next().unwrap()), lab.profiles().join("torch/cudnn-lib"), "{text}");

    // The kernel's interpreter defaults to the venv's.
    let data = lab.ctx.path("jupyter");
    let out = lab.ctx.cmd().env("JUPYTER_DATA_DIR", &data).args(["kernel", "install", "torch"]).output().unwrap();
    let spec: serde_json::Value = serde_json::from_slice(&std::fs::read(data.join("kernels/cuenv-torch/kernel.json")).unwrap_or_default())
        .unwrap_or_else(|_| panic!("no kernel.json: {out:?}"));
    assert_eq!(Path::new(spec["argv"][0].as_str().unwrap()), venv.join("bin/python"), "{spec}");

    // Doctor in a shell of the profile looks at its venv, named by the binding.
    let out =
        lab.ctx.cmd().env("CUENV_PROFILE", "torch").env_remove("VIRTUAL_ENV").env_remove("CONDA_PREFIX").args(["doctor", "--major", "9"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("Python environment (profile torch's python-env): the venv {}", venv.display())), "{text}");
}

/// A `python-env` that names no environment is refused before anything is built, at its line;
/// `conda-env` and `python-env` together are refused when the file is read.
#[test]
fn a_python_env_that_is_no_env_is_refused_at_its_line() {
    use crate::support::lab::Lab;
    let lab = Lab::new();
    std::fs::create_dir_all(lab.ctx.path("empty")).unwrap();
    let file = lab.lab("[profiles.torch]\ncuda = \"12\"\ncudnn = \"9.5\"\npython-env = \"empty\"\n");
    let (code, _, err) = lab.run(&["apply", "--no-check", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("python-env `empty` is no Python environment") && err.contains("holds neither pyvenv.cfg"), "{err}");
    assert!(err.contains("lab.toml:9:14: python-env"), "the error names the line: {err}");
    assert!(err.contains("uv venv"), "{err}");
    assert!(!lab.ctx.home.join("generations").exists() || lab.run(&["status"]).1.contains("no generation"), "nothing was built");

    let file = lab.lab("[profiles.torch]\ncuda = \"12\"\ncudnn = \"9.5\"\nconda-env = \"x\"\npython-env = \".venv\"\n");
    let (code, _, err) = lab.run(&["apply", "--no-check", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("profile `torch` has both `conda-env` and `python-env`"), "{err}");
}

/// `doctor --pid` on a venv's interpreter started by full path (no `VIRTUAL_ENV`, never
/// activated) names the venv, read from the process's argv[0].
#[test]
fn doctor_pid_names_the_venv_of_a_python_started_by_full_path() {
    use std::io::BufRead;
    let s = Stubs::new();
    let prefix = s.tmp.path().join("job venv");
    if !Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&prefix).status().is_ok_and(|st| st.success()) {
        crate::support::skipped("python3 -m venv is not available");
        return;
    }
    let set = s.tmp.path().join("set");
    stub_set(&s, &set, "9.5.0.50");
    let py = format!("import ctypes, sys\nctypes.CDLL({:?})\nprint('ready', flush=True)\nsys.stdin.readline()\n", set.join("libcudnn.so.9").to_str().unwrap());
    let mut child = Command::new(prefix.join("bin/python"))
        .args(["-c", &py])
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cuenv")).env("CUENV_HOME", home.path()).args(["doctor", "--pid", &child.id().to_string()]).output().unwrap();
    drop(child.stdin.take());
    let _ = child.wait();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("its Python environment (its executable): the venv {}", prefix.display())), "{text}");
    assert!(text.contains("libcudnn.so.9"), "{text}");
}

/// Bad input from the new-user trial: a `python-env` removed after `apply` is refused by
/// `run` (never the shell's own Python in its place); a stale `VIRTUAL_ENV` is said; a folder
/// given as `--python` is named as a folder; a `python-env` that is a file is called a file.
#[test]
fn a_removed_or_wrong_env_is_said_never_replaced_in_silence() {
    use crate::support::lab::Lab;
    let lab = Lab::new();
    let dir = lab.ctx.path("proj/.venv");
    venv(&dir, "home = /usr/bin\n");
    let file = lab.lab("[profiles.torch]\ncuda = \"12\"\ncudnn = \"9.5\"\npython-env = \"proj\"\n");
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    std::fs::rename(&dir, lab.ctx.path("proj/.venv.off")).unwrap();
    let (code, out, err) = lab.run(&["run", "-p", "torch", "--", "true"]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains("python-env is no longer a Python environment") && err.contains("recreate"), "{err}");

    let out = lab.ctx.cmd().env("VIRTUAL_ENV", &dir).args(["doctor", "--major", "9"]).output().unwrap();
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.contains("warning: VIRTUAL_ENV is ") && out.contains("which is no Python environment"), "{out}");
    let (code, out, _) = lab.run(&["doctor", "--major", "9", "--python", lab.ctx.path("proj").to_str().unwrap()]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("it is a folder, not an interpreter"), "{out}");

    std::fs::write(lab.ctx.path("afile"), "x").unwrap();
    let file = lab.lab("[profiles.torch]\ncuda = \"12\"\ncudnn = \"9.5\"\npython-env = \"afile\"\n");
    let (_, _, err) = lab.run(&["plan", file.to_str().unwrap()]);
    assert!(err.contains("afile is a file, not an env's folder"), "{err}");
}
