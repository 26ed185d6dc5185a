//! What the frameworks of a profile's env require (src/requires, docs/requirements.md), judged
//! by `plan`, `apply`, `check` and `doctor`: envs built here from the files real releases
//! install (torch 2.4.1's METADATA pins and version.py, a conda record of jaxlib), each cited.

use std::path::{Path, PathBuf};

use crate::support::lab::Lab;

/// torch 2.4.1's METADATA (PyPI's torch-2.4.1-cp311-cp311-manylinux1_x86_64.whl), cut to the
/// lines judged, in its own old-style form (`name (==version) ; marker`).
const TORCH_241_METADATA: &str = "Metadata-Version: 2.1\nName: torch\nVersion: 2.4.1\n\
Requires-Dist: filelock\n\
Requires-Dist: nvidia-cuda-runtime-cu12 (==12.1.105) ; platform_system == \"Linux\" and platform_machine == \"x86_64\"\n\
Requires-Dist: nvidia-cudnn-cu12 (==9.1.0.70) ; platform_system == \"Linux\" and platform_machine == \"x86_64\"\n\n";

/// A venv at `prefix` on the host's layout holding torch 2.4.1's METADATA and version.py
/// (`cuda: Optional[str] = '12.1'`, as the PyPI wheel writes it); its site-packages.
fn torch_venv(prefix: &Path) -> PathBuf {
    std::fs::create_dir_all(prefix).unwrap();
    std::fs::write(prefix.join("pyvenv.cfg"), "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n").unwrap();
    let sp = if cfg!(windows) { prefix.join("Lib").join("site-packages") } else { prefix.join("lib/python3.11/site-packages") };
    let info = sp.join("torch-2.4.1.dist-info");
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(info.join("METADATA"), TORCH_241_METADATA).unwrap();
    std::fs::create_dir_all(sp.join("torch")).unwrap();
    std::fs::write(sp.join("torch").join("version.py"), "__version__ = '2.4.1'\ndebug = False\ncuda: Optional[str] = '12.1'\nhip: Optional[str] = None\n")
        .unwrap();
    sp
}

#[cfg(target_os = "linux")]
/// `cuenv --home <lab's home> args` without `--quiet` (the warnings are notes `--quiet` hides).
fn loud(lab: &Lab, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cuenv")).env_remove("CUENV_HOME").arg("--home").arg(&lab.ctx.home).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[cfg(target_os = "linux")]
fn profile(cudnn: &str) -> String {
    format!("[profiles.torch]\ncuda = \"12\"\ncudnn = \"{cudnn}\"\npython-env = \"proj\"\n")
}

/// torch 2.4.1 pins cuDNN 9.1 (Linux): a profile with cuDNN 8.9 is refused by `plan` and
/// `apply` before anything is built (exit 4), `--force` applies it with the misfit said, and
/// `check` then fails the profile on the same rule.
#[cfg(target_os = "linux")]
#[test]
fn a_profile_whose_cudnn_a_framework_of_its_env_cannot_use_is_refused() {
    let lab = Lab::new();
    torch_venv(&lab.ctx.path("proj/.venv"));
    let file = lab.lab(&profile("8.9.4"));
    let f = file.to_str().unwrap();
    let (code, out, err) = lab.run(&["plan", f]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(err.contains("profile torch does not fit the frameworks in its env"), "{err}");
    let (code, out, err) = lab.run(&["apply", "--no-check", f]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(
        err.contains("torch 2.4.1 was built against cuDNN 9 (nvidia-cudnn-cu12==9.1.0.70); cuDNN 8.9.4.25 is another major")
            && err.contains("torch-2.4.1.dist-info/METADATA")
            && err.contains("--force"),
        "{err}"
    );
    assert!(!lab.profiles().exists(), "nothing was built or switched");
    let (code, out, err) = loud(&lab, &["apply", "--force", "--no-check", f]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(err.contains("warning: profile torch (applied with --force): torch 2.4.1 was built against cuDNN 9"), "{err}");
    let (code, out, err) = lab.run(&["check", "--json"]);
    assert_ne!(code, 0, "{out}\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let reasons = v.to_string();
    assert!(reasons.contains("framework-misfit") && reasons.contains("another major"), "{out}");
}

/// A profile with a newer minor of the major torch pins (9.5 against 9.1.0.70) and a newer CUDA
/// toolkit (12.6 against 12.1) applies: each is a warning that says what was declared and
/// where; with the pin's major, nothing is refused.
#[cfg(target_os = "linux")]
#[test]
fn a_newer_minor_than_a_framework_declares_is_a_warning() {
    let lab = Lab::new();
    torch_venv(&lab.ctx.path("proj/.venv"));
    let file = lab.lab(&profile("9.5"));
    let (code, out, err) = loud(&lab, &["apply", "--no-check", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        err.contains("warning: profile torch: torch 2.4.1 declares nvidia-cudnn-cu12==9.1.0.70 and cuDNN 9.5.0.50 is a newer release of the same major"),
        "{out}\n{err}"
    );
    assert!(err.contains("torch 2.4.1 declares nvidia-cuda-runtime-cu12==12.1.105 and CUDA 12.6"), "{err}");
    assert_eq!(err.matches("nvidia-cuda-runtime-cu12").count(), 1, "version.py's cuda '12.1' says the same and is not said twice: {err}");
}

/// The report of issue 32 in profile form: a conda env whose jaxlib record requires
/// `cudnn >=9.13.1.26,<10.0a0` bound to a profile with cuDNN 9.5: an older minor, refused.
#[test]
fn a_conda_record_requiring_a_newer_cudnn_than_the_profiles_is_refused() {
    let lab = Lab::new();
    std::fs::write(
        lab.env_a.join("conda-meta").join("jaxlib-0.7.2-cuda12py311h0.json"),
        r#"{"name": "jaxlib", "version": "0.7.2", "depends": ["cudnn >=9.13.1.26,<10.0a0", "python >=3.11,<3.12.0a0"]}"#,
    )
    .unwrap();
    let file = lab.lab(&format!("[profiles.jax]\ncuda = \"12\"\ncudnn = \"9.5\"\nconda-env = '{}'\n", lab.env_a.display()));
    let (code, out, err) = lab.run(&["apply", "--no-check", file.to_str().unwrap()]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(
        err.contains("jaxlib 0.7.2 was built against cuDNN 9.13 (cudnn >=9.13.1.26,<10.0a0); 9.5.0.50 is an older minor")
            && err.contains("jaxlib-0.7.2-cuda12py311h0.json"),
        "{err}"
    );
}

/// doctor in the shell's venv: a cuDNN wheel older than the one torch pins (a forced install)
/// is a problem with the pip command that fixes it.
#[test]
fn doctor_judges_a_venvs_cudnn_wheel_against_its_frameworks_pins() {
    if !cfg!(target_os = "linux") {
        crate::support::skipped("torch's pins hold on Linux x86_64 only");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let venv = home.path().join("venv");
    let sp = torch_venv(&venv);
    let wheel = sp.join("nvidia_cudnn_cu12-9.0.0.312.dist-info");
    std::fs::create_dir_all(&wheel).unwrap();
    std::fs::write(wheel.join("METADATA"), "Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\nVersion: 9.0.0.312\n\n").unwrap();
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("CUENV_HOME", home.path().join("home"));
    c.env("CUENV_TOOLKIT_PATHS", "").env("CUDA_HOME", "").env("CUDA_PATH", "").env("VIRTUAL_ENV", &venv);
    let out = c.args(["doctor", "--major", "9"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(
        text.contains("torch 2.4.1 (lib/python3.11/site-packages/torch-2.4.1.dist-info/METADATA)")
            && text.contains("requires nvidia-cudnn-cu12==9.1.0.70, and the env's nvidia-cudnn-cu12 is 9.0.0.312")
            && text.contains("older minor")
            && text.contains("pip install \"nvidia-cudnn-cu12==9.1.0.70\""),
        "{text}"
    );
}

/// `cuenv init` on a real venv (`python3 -m venv`) holding torch 2.4.1's METADATA: the profile
/// it writes keeps the file's comments, takes the store entry that serves torch (9.5.0.50 of the
/// lab's three), binds the venv, and then applies, and its check judges torch as apply did; a second init of the same name
/// is refused at no cost to the file.
#[cfg(target_os = "linux")]
#[test]
fn init_writes_a_profile_for_a_real_venv_that_applies_and_checks() {
    let lab = Lab::new();
    let venv = lab.ctx.path("proj/.venv");
    if !std::process::Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&venv).status().is_ok_and(|st| st.success()) {
        crate::support::skipped("python3 -m venv is not available");
        return;
    }
    let sp = crate::support::first_dir(&venv.join("lib"), "python3").join("site-packages");
    std::fs::create_dir_all(sp.join("torch-2.4.1.dist-info")).unwrap();
    std::fs::write(sp.join("torch-2.4.1.dist-info").join("METADATA"), TORCH_241_METADATA).unwrap();
    let file = lab.lab("");
    let f = file.to_str().unwrap();
    let (code, out, err) = lab.run(&["init", f, "--env", lab.ctx.path("proj").to_str().unwrap()]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("cuDNN 9.5.0.50: the store entry") && out.contains("torch 2.4.1: nvidia-cudnn-cu12==9.1.0.70"), "{out}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("# lab file\n[toolkits]"), "the user's text is kept: {text}");
    assert!(text.contains("[profiles.proj]\ncuda = \"12\"\ncudnn = \"9.5.0.50\"\npython-env = \"proj/.venv\"\n"), "{text}");
    assert!(text.contains("# Written by `cuenv init` from the venv "), "{text}");
    lab.ok(&["apply", "--no-check", f]);
    // The lab's store entries are stand-ins that no probe can load: the check fails on that,
    // and judges the frameworks as apply did (notes, no framework misfit).
    let (_, out, err) = lab.run(&["check", "proj", "--verbose"]);
    assert!(out.contains("framework: torch 2.4.1 declares nvidia-cudnn-cu12==9.1.0.70") && !out.contains("framework misfit"), "{out}\n{err}");
    let (code, _, err) = lab.run(&["init", f, "--env", venv.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("already has a profile `proj`") && err.contains("--name"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

/// `cuenv init` on an env whose frameworks state nothing is refused, naming what was read.
#[test]
fn init_on_an_env_without_requirements_says_what_it_read() {
    let lab = Lab::new();
    let prefix = lab.ctx.path("bare");
    std::fs::create_dir_all(&prefix).unwrap();
    std::fs::write(prefix.join("pyvenv.cfg"), "home = /usr/bin\nversion = 3.11.2\n").unwrap();
    let file = lab.lab("");
    let (code, _, err) = lab.run(&["init", file.to_str().unwrap(), "--env", prefix.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no framework in the venv") && err.contains("METADATA pins"), "{err}");
    assert!(!std::fs::read_to_string(&file).unwrap().contains("[profiles"));
}

/// `plan` of a profile whose cuDNN is still to be fetched judges it by the version it names,
/// before anything is downloaded (offline, and the index a closed port).
#[cfg(target_os = "linux")]
#[test]
fn plan_says_a_misfit_before_anything_is_fetched() {
    let lab = Lab::new();
    torch_venv(&lab.ctx.path("proj/.venv"));
    let file = lab.lab("[profiles.torch]\ncuda = \"12\"\ncudnn = { version = \"8.9.7.29\", from = \"pypi\" }\npython-env = \"proj\"\n");
    let out = lab.ctx.cmd().env("CUENV_OFFLINE", "1").env("CUENV_PYPI_INDEX", "http://127.0.0.1:9/").args(["plan", file.to_str().unwrap()]).output().unwrap();
    let (stdout, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(4), "{stdout}\n{err}");
    assert!(err.contains("torch 2.4.1 was built against cuDNN 9 (nvidia-cudnn-cu12==9.1.0.70); cuDNN 8.9.7.29 is another major"), "{stdout}\n{err}");
}

/// `cuenv init` where torch needs cuDNN 9 and another package pins a cuDNN wheel for CUDA 11
/// (`nvidia-cudnn-cu11==8.9.0.131`): one profile per major, the second on CUDA 11 (the wheel's
/// `-cu11`), neither bound; a second init for an env another profile binds is refused.
#[cfg(target_os = "linux")]
#[test]
fn init_splits_two_majors_and_refuses_a_second_binding() {
    let lab = Lab::new();
    let sp = torch_venv(&lab.ctx.path("mix/.venv"));
    std::fs::create_dir_all(sp.join("foo-1.0.dist-info")).unwrap();
    std::fs::write(
        sp.join("foo-1.0.dist-info").join("METADATA"),
        "Metadata-Version: 2.1\nName: foo\nVersion: 1.0\nRequires-Dist: nvidia-cudnn-cu11==8.9.0.131\n\n",
    )
    .unwrap();
    let file = lab.lab("");
    let f = file.to_str().unwrap();
    let env = lab.ctx.path("mix");
    let (code, out, err) = lab.run(&["init", f, "--env", env.to_str().unwrap(), "--dry-run"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("no single profile serves every framework"), "{out}");
    assert!(out.contains("[profiles.mix-cudnn9]\ncuda = \"12\"\ncudnn = \"9.5.0.50\"\n"), "{out}");
    // The lab's CUDA 11 entry is 8.8.0.121, older than the 8.9 pin: PyPI's wheel instead.
    assert!(out.contains("[profiles.mix-cudnn8]\ncuda = \"11\"\ncudnn = { version = \"8.9.0.131\", from = \"pypi\" }\n"), "{out}");
    assert!(out.contains("cuenv run -p <profile>") || !out.contains("cuenv run <profile>"), "{out}");
    // One bound profile, then init for the same env under another name.
    let solo = lab.ctx.path("solo");
    torch_venv(&solo.join(".venv"));
    lab.ok(&["init", f, "--env", solo.to_str().unwrap(), "--name", "a"]);
    let (code, _, err) = lab.run(&["init", f, "--env", solo.to_str().unwrap(), "--name", "b"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("profile `a` binds the venv") && err.contains("two profiles cannot bind one env"), "{err}");
}

/// `apply --force` with its check: the check fails the profile on the same rule, so the apply
/// is undone and nothing stays current (as the refusal's hint says).
#[cfg(target_os = "linux")]
#[test]
fn a_forced_misfit_is_undone_by_its_check() {
    let lab = Lab::new();
    torch_venv(&lab.ctx.path("proj/.venv"));
    let file = lab.lab(&profile("8.9.4"));
    let (code, _, err) = lab.run(&["apply", file.to_str().unwrap()]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("`--force --no-check` keeps it without a check"), "{err}");
    let (code, out, err) = lab.run(&["apply", "--force", file.to_str().unwrap()]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(err.contains("framework misfit") || out.contains("framework misfit"), "{out}\n{err}");
    assert!(err.contains("no generation is current") || out.contains("no generation is current"), "the forced generation did not stay current: {out}\n{err}");
}
