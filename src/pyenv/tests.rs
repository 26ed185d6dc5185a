//! Environment discovery on hand-built layouts (as venv, uv and pixi write them) and on the
//! real interpreter that runs the tests (`python3`, which every machine the tests run on has).

use super::*;

fn venv(dir: &Path, cfg: &str) -> PathBuf {
    let sp = if cfg!(windows) { dir.join("Lib/site-packages") } else { dir.join("lib/python3.12/site-packages") };
    std::fs::create_dir_all(&sp).unwrap();
    std::fs::write(dir.join("pyvenv.cfg"), cfg).unwrap();
    sp
}

/// `python -m venv` writes `home`, `include-system-site-packages`, `version`; uv adds `uv`.
#[test]
fn venvs_and_uv_venvs_are_told_apart_by_pyvenv_cfg() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain venv");
    let sp = venv(&plain, "home = /nowhere/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n");
    let e = at(&plain, "VIRTUAL_ENV").unwrap();
    assert_eq!(e.kind, Kind::Venv);
    assert_eq!(e.site_packages, vec![sp]);
    assert_eq!(e.describe(), format!("the venv {}", plain.display()));
    assert_eq!(e.conda_lib(), None);

    let uv = tmp.path().join(".venv");
    venv(&uv, "home = /nowhere/bin\nimplementation = CPython\nuv = 0.9.5\nversion_info = 3.12.3\ninclude-system-site-packages = false\n");
    assert_eq!(at(&uv, "VIRTUAL_ENV").unwrap().kind, Kind::Uv);
}

/// pixi keeps its envs as conda prefixes under `<project>/.pixi/envs/<name>`.
#[test]
fn a_conda_prefix_under_dot_pixi_envs_is_a_pixi_env() {
    let tmp = tempfile::tempdir().unwrap();
    let pixi = tmp.path().join("proj/.pixi/envs/default");
    std::fs::create_dir_all(pixi.join("conda-meta")).unwrap();
    std::fs::create_dir_all(pixi.join("lib/python3.12/site-packages")).unwrap();
    let e = at(&pixi, "python-env").unwrap();
    assert_eq!(e.kind, Kind::Pixi);
    assert!(e.kind.is_conda());
    assert_eq!(e.conda_lib(), Some(pixi.join(if cfg!(windows) { "Library/bin" } else { "lib" })));
    // The project folder names its default env; a bare folder names nothing.
    assert_eq!(resolve_binding("proj", tmp.path()).unwrap(), std::path::absolute(&pixi).unwrap());
    let (msg, hint) = resolve_binding("nothing", tmp.path()).unwrap_err();
    assert!(msg.contains("python-env `nothing` is no Python environment") && msg.contains("does not exist"), "{msg}");
    assert!(hint.contains("uv venv"), "{hint}");
    let conda = tmp.path().join("envs/tf");
    std::fs::create_dir_all(conda.join("conda-meta")).unwrap();
    assert_eq!(at(&conda, "CONDA_PREFIX").unwrap().kind, Kind::Conda);
    assert_eq!(at(tmp.path(), "x"), None);
}

/// `VIRTUAL_ENV` comes before `CONDA_PREFIX` (a venv made inside an activated conda env), each once.
#[test]
fn the_shells_variables_name_its_envs_venv_first() {
    let tmp = tempfile::tempdir().unwrap();
    let v = tmp.path().join("v");
    venv(&v, "home = /x\n");
    let c = tmp.path().join("c");
    std::fs::create_dir_all(c.join("conda-meta")).unwrap();
    let vars = [("VIRTUAL_ENV", v.clone()), ("CONDA_PREFIX", c.clone())];
    let get = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, p)| p.clone().into_os_string());
    let envs = from_vars(&get);
    assert_eq!(envs.iter().map(|e| (e.kind, e.found_by.as_str())).collect::<Vec<_>>(), vec![(Kind::Venv, "VIRTUAL_ENV"), (Kind::Conda, "CONDA_PREFIX")]);
    let same = [("VIRTUAL_ENV", v.clone()), ("CONDA_PREFIX", v.clone())];
    let get = |k: &str| same.iter().find(|(n, _)| *n == k).map(|(_, p)| p.clone().into_os_string());
    assert_eq!(from_vars(&get).len(), 1);
}

/// The real interpreter answers with its own site folders, and no `.pth` start-up hook runs
/// while it is asked (`-S -I`): a `.pth` in the venv that would write a file writes nothing.
#[cfg(unix)]
#[test]
fn a_real_venv_is_asked_without_running_its_start_up_hooks() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a venv (x86) & 100%");
    let made = std::process::Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&dir).status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED: python3 -m venv is not available here");
        return;
    }
    let e = at(&dir, "VIRTUAL_ENV").unwrap();
    assert_eq!(e.kind, Kind::Venv);
    let sp = e.site_packages[0].clone();
    let marker = tmp.path().join("hook-ran");
    std::fs::write(sp.join("zz-hook.pth"), format!("import pathlib; pathlib.Path({:?}).write_text('x')\n", marker.to_str().unwrap())).unwrap();
    let asked = ask(&dir.join("bin/python"), Duration::from_secs(20)).unwrap();
    assert!(!marker.exists(), "a .pth hook ran while the interpreter was asked");
    assert_eq!(asked.kind, Kind::Venv);
    assert!(paths_same(&asked.prefix, &dir), "{:?}", asked.prefix);
    assert!(asked.site_packages.iter().any(|p| paths_same(p, &sp)), "{:?} lacks {sp:?}", asked.site_packages);
    // Without include-system-site-packages the base's folders are not the venv's.
    assert_eq!(asked.site_packages.len(), 1, "{:?}", asked.site_packages);
    // The .pth file does run in a normal start: the test would catch a hook that ran.
    std::process::Command::new(dir.join("bin/python")).args(["-c", "pass"]).status().unwrap();
    assert!(marker.exists(), "the .pth hook never runs: the test proves nothing");
}

#[cfg(unix)]
fn paths_same(a: &Path, b: &Path) -> bool {
    crate::sys::paths::same_path(a, b)
}

#[test]
fn an_interpreter_that_does_not_exist_is_an_error_naming_it() {
    let err = ask(Path::new("/no/such/python3"), Duration::from_secs(5)).unwrap_err();
    assert!(err.to_string().starts_with("cannot run /no/such/python3"), "{err}");
}
