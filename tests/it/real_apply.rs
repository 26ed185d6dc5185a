//! The main job on real NVIDIA files (ignored by default; `scripts/real-input.sh` runs it):
//! the real cuDNN wheels (9.5.0.50 and 8.9.4.25 cu12, 8.8.0.121 cu11, manylinux) are
//! imported, two toolkit roots are laid out from the real CUDA runtime wheels
//! (12.6.77, 11.8.89) with a `version.json`, a conda env prefix gets the shims, and a
//! three-profile lab.toml goes through plan, apply, the generated `.sh` shim sourced by
//! bash, use, status, an edit and a second apply, rollback, generations and gc.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;

fn wheel(glob_prefix: &str) -> PathBuf {
    let dir = real_wheels_dir();
    fs::read_dir(&dir)
        .unwrap_or_else(|_| panic!("{} missing: run scripts/fetch-real-wheels.sh", dir.display()))
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with(glob_prefix) && n.contains("manylinux")
        })
        .unwrap_or_else(|| panic!("no {glob_prefix}*manylinux*.whl in {}: run scripts/fetch-real-wheels.sh", dir.display()))
}

/// A toolkit root laid out like an install, from a CUDA runtime wheel.
fn toolkit_from_wheel(dir: &Path, wheel: &Path, version: &str) -> PathBuf {
    let root = dir.join(format!("cuda-{version}"));
    fs::create_dir_all(root.join("lib64")).unwrap();
    fs::create_dir_all(root.join("bin")).unwrap();
    let f = fs::File::open(wheel).unwrap();
    let mut zip = zip::ZipArchive::new(f).unwrap();
    for i in 0..zip.len() {
        let mut m = zip.by_index(i).unwrap();
        let name = m.name().unwrap().to_string();
        if let Some(lib) = name.strip_prefix("nvidia/cuda_runtime/lib/").filter(|n| n.contains(".so")) {
            let mut out = fs::File::create(root.join("lib64").join(lib)).unwrap();
            std::io::copy(&mut m, &mut out).unwrap();
        }
    }
    fs::write(root.join("version.json"), format!(r#"{{"cuda": {{"name": "CUDA SDK", "version": "{version}"}}}}"#)).unwrap();
    // The CUDA libraries cuDNN loads by name (docs/loader.md F4), as stand-ins.
    #[cfg(target_os = "linux")]
    crate::support::stubs::companion_stubs(&root.join("lib64"), version.split('.').next().unwrap().parse().unwrap());
    root
}

fn run(ctx: &TestContext, args: &[&str]) -> String {
    let out = ctx.cmd().args(args).output().unwrap();
    assert!(out.status.success(), "cuenv {args:?}: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `script` in bash and returns the environment at each `dump N` call.
fn bash_envs(script: &str, dumps: usize, dir: &Path) -> Vec<BTreeMap<String, String>> {
    let mut full = String::from("dump() { env -0 > \"$DUMPDIR/env.$1\"; }\n");
    full.push_str(script);
    let st = Command::new("bash").arg("-c").arg(&full).env("DUMPDIR", dir).status().unwrap();
    assert!(st.success(), "bash failed:\n{full}");
    (0..dumps)
        .map(|i| {
            let raw = fs::read(dir.join(format!("env.{i}"))).unwrap();
            raw.split(|b| *b == 0)
                .filter(|s| !s.is_empty())
                .filter_map(|kv| {
                    let kv = String::from_utf8_lossy(kv).into_owned();
                    let (k, v) = kv.split_once('=')?;
                    // bash's own bookkeeping differs between dumps.
                    (!matches!(k, "_" | "SHLVL" | "OLDPWD" | "PWD")).then(|| (k.to_string(), v.to_string()))
                })
                .collect()
        })
        .collect()
}

/// The folder the loader would take `libcudnn.so.<major>` from: the first LD_LIBRARY_PATH
/// folder that holds it, resolved through every link.
fn resolve_cudnn(env: &BTreeMap<String, String>, major: u64) -> PathBuf {
    let name = format!("libcudnn.so.{major}");
    let ld = env.get("LD_LIBRARY_PATH").expect("LD_LIBRARY_PATH set by the shim");
    let dir = ld.split(':').map(PathBuf::from).find(|d| d.join(&name).exists()).unwrap_or_else(|| panic!("{name} not on {ld}"));
    fs::canonicalize(dir.join(&name)).unwrap()
}

#[test]
#[ignore = "needs the real NVIDIA wheels: scripts/real-input.sh"]
fn main_job_on_real_wheels() {
    let ctx = TestContext::new();
    for w in ["nvidia_cudnn_cu12-9.5.0.50", "nvidia_cudnn_cu12-8.9.4.25", "nvidia_cudnn_cu11-8.8.0.121"] {
        ctx.add_ok(&wheel(w), &[]);
    }
    let tk12 = toolkit_from_wheel(&ctx.work, &wheel("nvidia_cuda_runtime_cu12-12.6.77"), "12.6.77");
    let tk11 = toolkit_from_wheel(&ctx.work, &wheel("nvidia_cuda_runtime_cu11-11.8.89"), "11.8.89");
    let env = ctx.path("conda/envs/torch two");
    fs::create_dir_all(env.join("conda-meta")).unwrap();
    let lab = ctx.path("lab.toml");
    let write_lab = |legacy_cudnn: &str| {
        fs::write(
            &lab,
            format!(
                "[toolkits]\n\"12.6\" = '{}'\n\"11.8\" = '{}'\n\n[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\nconda-env = '{}'\n\n[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\n\n[profiles.legacy]\ncuda = \"12\"\ncudnn = \"{legacy_cudnn}\"\n",
                tk12.display(),
                tk11.display(),
                env.display()
            ),
        )
        .unwrap()
    };
    write_lab("8.9");
    let lab_s = lab.to_str().unwrap();
    let plan = run(&ctx, &["plan", lab_s]);
    assert!(
        plan.contains("+ profile torch2: cuDNN 9.5.0.50")
            && plan.contains("+ profile tf: cuDNN 8.8.0.121")
            && plan.contains("+ profile legacy: cuDNN 8.9.4.25"),
        "{plan}"
    );
    // Apply checks every profile in a fresh process: the real libraries load from their
    // entries and report their versions; there is no GPU here, so each is `no-gpu`.
    let applied: serde_json::Value = serde_json::from_str(&run(&ctx, &["apply", "--json", lab_s])).unwrap();
    let checks = applied["checks"].as_array().expect("apply --json reports checks");
    let expect = [("torch2", 90500, 12), ("tf", 8800, 11), ("legacy", 8904, 12)];
    assert_eq!(checks.len(), 3, "{applied}");
    for (c, (name, version, cudart_major)) in checks.iter().zip(expect) {
        assert_eq!(c["profile"], name, "{c}");
        assert_eq!(c["result"]["status"], "no-gpu", "{c}");
        assert_eq!(c["result"]["report"]["cudnn"]["version"], version, "{c}");
        assert_eq!(c["result"]["report"]["cudnn"]["cudart_version"].as_u64().unwrap() / 1000, cudart_major, "{c}");
        let modules = c["result"]["report"]["modules"].as_array().unwrap();
        assert!(modules.iter().any(|m| m["kind"] == "cudnn"), "{c}");
        for m in modules.iter().filter(|m| m["kind"] == "cudnn") {
            let p = fs::canonicalize(m["path"].as_str().unwrap()).unwrap();
            assert!(p.starts_with(fs::canonicalize(ctx.store_dir()).unwrap()), "{} loaded from outside the store", p.display());
        }
    }
    assert!(run(&ctx, &["apply", lab_s]).contains("no changes"));

    // Source the generated POSIX shim in bash: activate, activate again, deactivate.
    let act = env.join("etc/conda/activate.d/cuenv-torch2.sh");
    let deact = env.join("etc/conda/deactivate.d/cuenv-torch2.sh");
    let dumps = ctx.path("dumps");
    fs::create_dir_all(&dumps).unwrap();
    let q = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
    let envs = bash_envs(
        &format!("export LD_LIBRARY_PATH=/opt/other/lib\nunset CUDNN_PATH\ndump 0\n. {a}\ndump 1\n. {a}\ndump 2\n. {d}\ndump 3\n", a = q(&act), d = q(&deact)),
        4,
        &dumps,
    );
    let entry95 = ctx.entry_dirs().into_iter().find(|d| d.to_string_lossy().contains("cudnn-9.5.0.50")).unwrap();
    assert!(resolve_cudnn(&envs[1], 9).starts_with(fs::canonicalize(&entry95).unwrap()), "libcudnn.so.9 resolves outside the 9.5.0.50 entry");
    assert_eq!(envs[1]["CUENV_PROFILE"], "torch2");
    assert!(Path::new(&envs[1]["CUDNN_PATH"]).join("include/cudnn_version.h").exists());
    assert!(Path::new(&envs[1]["CUDA_PATH"]).join("version.json").exists());
    assert_eq!(envs[1], envs[2], "a second activation changes nothing");
    assert_eq!(envs[0], envs[3], "deactivation restores the environment exactly");

    // use, status, edit + apply, rollback, generations, gc.
    run(&ctx, &["use", "tf"]);
    assert!(ctx.home.join("active/cudnn-lib/libcudnn.so.8").exists());
    let status: serde_json::Value = serde_json::from_str(&run(&ctx, &["status", "--json"])).unwrap();
    assert_eq!(status["healthy"], true, "{status}");
    write_lab("9.5");
    let out = run(&ctx, &["apply", lab_s]);
    assert!(out.contains("~ profile legacy: cuDNN 8.9.4.25 -> 9.5.0.50"), "{out}");
    assert!(ctx.home.join("profiles/legacy/cudnn-lib/libcudnn.so.9").exists());
    run(&ctx, &["rollback"]);
    assert!(ctx.home.join("profiles/legacy/cudnn-lib/libcudnn.so.8").exists());
    let gens = run(&ctx, &["generations"]);
    assert_eq!(gens.lines().count(), 2, "{gens}");
    let gc = run(&ctx, &["gc", "--keep", "1", "--dry-run"]);
    assert!(gc.contains("nothing to delete"), "{gc}");
}

/// Issue 32's "done when": `cuenv init` on a real venv (`python3 -m venv`) holding torch
/// 2.4.1's real METADATA (PyPI's, scripts/fetch-real-metadata.py) proposes the store entry
/// that serves torch's pin (the real 9.5.0.50 wheel, not 8.9.4.25), binds the venv, and the
/// profile then applies and checks: the real cuDNN loads from its entry in the probe (`no-gpu`
/// here), judged against torch's pins (a newer minor: a `framework:` note, no misfit).
#[test]
#[ignore = "needs the real NVIDIA wheels and METADATA: scripts/real-input.sh"]
fn init_on_a_real_venv_applies_and_checks() {
    let ctx = TestContext::new();
    for w in ["nvidia_cudnn_cu12-9.5.0.50", "nvidia_cudnn_cu12-8.9.4.25"] {
        ctx.add_ok(&wheel(w), &[]);
    }
    let tk12 = toolkit_from_wheel(&ctx.work, &wheel("nvidia_cuda_runtime_cu12-12.6.77"), "12.6.77");
    let venv = ctx.path("proj/.venv");
    let made = Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&venv).status().unwrap();
    assert!(made.success(), "python3 -m venv");
    let sp = first_dir(&venv.join("lib"), "python3").join("site-packages");
    fs::create_dir_all(sp.join("torch-2.4.1.dist-info")).unwrap();
    fs::copy(real_wheels_dir().join("metadata/torch/2.4.1.METADATA"), sp.join("torch-2.4.1.dist-info/METADATA")).unwrap();
    let lab = ctx.path("lab.toml");
    fs::write(&lab, format!("# my lab\n[toolkits]\n\"12.6\" = '{}'\n", tk12.display())).unwrap();
    let lab_s = lab.to_str().unwrap();
    let said = run(&ctx, &["init", lab_s, "--env", ctx.path("proj").to_str().unwrap()]);
    assert!(said.contains("cuDNN 9.5.0.50: the store entry cudnn-9.5.0.50-cuda12-") && said.contains("nvidia-cudnn-cu12==9.1.0.70"), "{said}");
    let text = fs::read_to_string(&lab).unwrap();
    assert!(text.starts_with("# my lab\n") && text.contains("[profiles.proj]\ncuda = \"12\"\ncudnn = \"9.5.0.50\"\npython-env = \"proj/.venv\"\n"), "{text}");
    let applied: serde_json::Value = serde_json::from_str(&run(&ctx, &["apply", "--json", lab_s])).unwrap();
    let c = &applied["checks"][0];
    assert_eq!(c["profile"], "proj", "{applied}");
    assert_eq!(c["result"]["status"], "no-gpu", "{c}");
    assert_eq!(c["result"]["report"]["cudnn"]["version"], 90500, "{c}");
    let notes = c["result"]["notes"].to_string();
    assert!(notes.contains("framework: torch 2.4.1 declares nvidia-cudnn-cu12==9.1.0.70") && !c.to_string().contains("framework-misfit"), "{c}");
}
