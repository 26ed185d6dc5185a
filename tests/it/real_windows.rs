//! Real NVIDIA win_amd64 wheels imported by the Windows `cuenv.exe` (under Wine from Linux,
//! or natively): `scripts/test-windows.sh --real`, which runs
//! `cargo test --release --target x86_64-pc-windows-gnu --test it real_windows:: -- --ignored`
//! with `CUENV_REAL_WHEELS` pointing at the downloaded wheels (a Linux path; under Wine it is
//! reached through drive `Z:`). Ignored by default: the wheels are 557 and 735 MB.
//!
//! Checks, per wheel: the 4-part version (the wheel name / METADATA, and independently the
//! dispatcher DLL's VERSIONINFO read back from the stored file), CUDA major, platform
//! `windows-x86_64`, the exact library set in `bin\`, the DLLs that carry no VERSIONINFO
//! (docs/facts.md §7b), and a clean `store verify`.
#![cfg(windows)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::support::*;

struct WinWheel {
    file: &'static str,
    version: &'static str,
    dispatcher: &'static str,
    libraries: &'static [&'static str],
    /// Libraries whose VERSIONINFO is absent (`None`) or not the release's version.
    no_versioninfo: &'static [&'static str],
}

fn import(w: &WinWheel) {
    let path = real_wheels_dir().join(w.file);
    assert!(path.is_file(), "{} is missing: run scripts/fetch-real-wheels.sh (or set CUENV_REAL_WHEELS)", path.display());
    let ctx = TestContext::new();
    let started = Instant::now();
    let row = ctx.add_ok(&path, &[]);
    let took = started.elapsed();
    assert_eq!(row["version"], w.version, "{row}");
    assert_eq!(row["cuda_major"], 12, "{row}");
    assert_eq!(row["platform"], "windows-x86_64", "{row}");
    assert_eq!(row["source"], w.file, "{row}");

    let dir = ctx.only_entry();
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with(&format!("cudnn-{}-cuda12-windows-x86_64-", w.version)), "{name}");
    assert!(!dir.to_string_lossy().contains(r"\\?\"), "{}", dir.display());
    let meta = ctx.entry_toml(&dir);
    assert_eq!(meta["version"].as_str(), Some(w.version));
    assert_eq!(meta["platform"].as_str(), Some("windows-x86_64"));
    let libs: Vec<&str> = meta["libraries"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(libs, w.libraries, "library set of {}", w.file);
    assert_eq!(meta["layout"]["bin"].as_str(), Some("bin"));

    // VERSIONINFO, read back by cuenv's own PE reader from the stored DLLs.
    for lib in w.libraries {
        let info = cuenv::sys::binfmt::inspect(&dir.join("bin").join(lib)).unwrap();
        assert_eq!(info.platform, Some(cuenv::cudnn::platform::Platform::WindowsX86_64), "{lib}: {}", info.describe);
        let fv = info.file_version.map(|v| v.to_string());
        if *lib == w.dispatcher {
            assert_eq!(fv.as_deref(), Some(w.version), "VERSIONINFO of {lib}");
        }
        if w.no_versioninfo.contains(lib) {
            assert_eq!(fv, None, "{lib} has no VERSIONINFO (docs/facts.md §7b)");
        }
    }

    let out = ctx.cmd().args(["store", "verify", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));

    // The check's child process loads the real dispatcher by name with the entry's bin on
    // PATH, and reports cuDNN's own version (docs/facts.md §7: 90500 / 8904 under Wine).
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().filter(|(k, _)| !k.eq_ignore_ascii_case("PATH")).collect();
    let path = std::env::join_paths(std::iter::once(dir.join("bin")).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).unwrap();
    env.push(("PATH".into(), path));
    let major: u64 = w.version.split('.').next().unwrap().parse().unwrap();
    // Wine under load sometimes fails to start a process ("Internal error", os error 1359):
    // that is Wine's, not cuenv's; try the spawn again (at most twice).
    let mut outcome = cuenv::check::run_probe(Path::new(env!("CARGO_BIN_EXE_cuenv")), &env, major, false, std::time::Duration::from_secs(120));
    for _ in 0..2 {
        if !matches!(&outcome.end, cuenv::check::ProbeEnd::SpawnFailed { error } if error.contains("1359")) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(2));
        outcome = cuenv::check::run_probe(Path::new(env!("CARGO_BIN_EXE_cuenv")), &env, major, false, std::time::Duration::from_secs(120));
    }
    let report = outcome.report.clone().unwrap_or_else(|| panic!("no report: {outcome:?}"));
    let versions = report.cudnn.clone().expect("cudnnGetVersion answered");
    let expected: cuenv::cudnn::version::Version = w.version.parse().unwrap();
    assert_eq!(versions.version, expected.cudnn_encoded(), "{report:?}");
    assert_eq!(versions.cudart_version / 1000, 12, "{report:?}");
    let canon = |p: &Path| cuenv::sys::paths::same_path(p, &dir.join("bin").join(p.file_name().unwrap()));
    for m in report.modules.iter().filter(|m| m.name.to_ascii_lowercase().starts_with("cudnn")) {
        assert!(canon(Path::new(&m.path)), "{} was loaded from outside the entry", m.path);
    }
    let verdict = cuenv::check::classify(&outcome, &cuenv::check::Expected { entry_dir: dir.clone(), version: expected, cuda_major: Some(12) });
    assert_ne!(verdict.status, cuenv::check::CheckStatus::Pass, "no GPU under Wine");
    assert!(!verdict.has(cuenv::check::ReasonKind::Shadowed) && !verdict.has(cuenv::check::ReasonKind::VersionMismatch), "{:?}", verdict.reasons);
    eprintln!(
        "real_windows: probe of {}: cuDNN {}, cudart {}, {:?}: {:?}",
        w.file,
        versions.version,
        versions.cudart_version,
        verdict.status,
        verdict.messages()
    );

    // `cuenv doctor` in that environment: the loader's pick, attributed to the store entry,
    // and the folder's dispatcher version read from its VERSIONINFO.
    let out = ctx
        .cmd()
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("CUENV_HOME", &ctx.home)
        .args(["doctor", "--json", "--major"])
        .arg(major.to_string())
        .output()
        .unwrap();
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let short = w.version.rsplit_once('.').unwrap().0;
    assert_eq!(d["loaded"][0]["version"], short, "{d}");
    assert_eq!(d["loaded"][0]["origin"], format!("cuenv store entry {name}"), "{d}");
    assert_eq!(d["search_path"][0]["dispatchers"][0]["file"], w.dispatcher, "{d}");
    assert_eq!(d["search_path"][0]["dispatchers"][0]["version"], w.version, "{d}");
    assert!(!d["findings"].to_string().contains("mixed sub-library"), "{d}");
    doctor_pid(&ctx, &env, &dir, &name, w);
    eprintln!(
        "real_windows: {} -> {name} (version from {}), {} libraries, import {:.1} s",
        w.file,
        meta["version_source"].as_str().unwrap_or("?"),
        libs.len(),
        took.as_secs_f64()
    );
}

/// `cuenv doctor --pid` on a running Windows process that loaded the real dispatcher by name
/// (the mingw oracle of tests/it/support/loader_win, started with `--wait`): the modules it
/// lists come from `EnumProcessModulesEx` of that process, attributed to the store entry, with
/// the dispatcher's release. Needs `CUENV_TEST_MINGW_FIXTURES` (scripts/test-windows.sh sets it).
fn doctor_pid(ctx: &TestContext, env: &[(std::ffi::OsString, std::ffi::OsString)], dir: &Path, name: &str, w: &WinWheel) {
    use std::io::{BufRead, BufReader, Write};
    let Some(fix) = std::env::var_os("CUENV_TEST_MINGW_FIXTURES") else {
        eprintln!("real_windows: CUENV_TEST_MINGW_FIXTURES is not set; doctor --pid not tried");
        return;
    };
    let mut child = std::process::Command::new(PathBuf::from(fix).join("oracle.exe"))
        .args(["--name", w.dispatcher, "--wait"])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    loop {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
        if line.trim() == "ready" {
            break;
        }
    }
    assert!(seen.contains("ready"), "the oracle did not load {}: {seen}", w.dispatcher);
    let pid = child.id().to_string();
    let o = ctx.cmd().args(["doctor", "--pid", &pid, "--json"]).output().unwrap();
    let _ = child.stdin.take().map(|mut s| s.write_all(b"\n"));
    let _ = child.wait();
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    let m = d["modules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(w.dispatcher)))
        .unwrap_or_else(|| panic!("{} is not among the process's modules: {d}", w.dispatcher));
    assert!(cuenv::sys::paths::same_path(Path::new(m["path"].as_str().unwrap()), &dir.join("bin").join(w.dispatcher)), "{m}");
    assert_eq!(m["kind"], "cudnn", "{m}");
    assert_eq!(m["origin"], format!("cuenv store entry {name}"), "{m}");
    assert_eq!(d["cudnn"], w.version, "{d}");
    eprintln!("real_windows: doctor --pid {pid} on the oracle holding {}: {} modules", w.dispatcher, d["modules"].as_array().unwrap().len());
}

#[test]
#[ignore = "real NVIDIA wheel (557 MB); run scripts/test-windows.sh --real"]
fn win_amd64_cu12_9_5_0_50() {
    import(&WinWheel {
        file: "nvidia_cudnn_cu12-9.5.0.50-py3-none-win_amd64.whl",
        version: "9.5.0.50",
        dispatcher: "cudnn64_9.dll",
        libraries: &DLLS_9,
        no_versioninfo: &["cudnn_graph64_9.dll", "cudnn_heuristic64_9.dll"],
    });
}

#[test]
#[ignore = "real NVIDIA wheel (735 MB); run scripts/test-windows.sh --real"]
fn win_amd64_cu12_8_9_4_25() {
    import(&WinWheel {
        file: "nvidia_cudnn_cu12-8.9.4.25-py3-none-win_amd64.whl",
        version: "8.9.4.25",
        dispatcher: "cudnn64_8.dll",
        libraries: &DLLS_8,
        no_versioninfo: &[],
    });
}

/// docs/loader.md C1 with the real Windows DLLs under Wine's loader: the 9.5.0.50 win_amd64
/// set answers every exported `cudnn*VersionCheck` with 0, each matched to the DLL that
/// exports it; with 9.4.0.58's `cudnn_cnn64_9.dll` in its place (a member fetched by
/// scripts/fetch-real-members.py) `cudnnCnnVersionCheck` answers 1002, no GPU needed, and
/// `doctor` reports it as `problem[V2]`.
#[test]
#[ignore = "real NVIDIA wheel (557 MB) and a 9.4.0.58 member; run scripts/test-windows.sh --real"]
fn win_amd64_version_checks_see_a_cnn_of_another_release() {
    let wheel = real_wheels_dir().join("nvidia_cudnn_cu12-9.5.0.50-py3-none-win_amd64.whl");
    let runtime = real_wheels_dir().join("nvidia_cuda_runtime_cu12-12.6.77-py3-none-win_amd64.whl");
    let cnn94 = real_wheels_dir().join("members/nvidia_cudnn_cu12-9.4.0.58-py3-none-win_amd64.whl/cudnn_cnn64_9.dll");
    for p in [&wheel, &runtime, &cnn94] {
        assert!(p.is_file(), "{} is missing: run scripts/fetch-real-wheels.sh (or set CUENV_REAL_WHEELS)", p.display());
    }
    let ctx = TestContext::new();
    let bin = ctx.path("cudnn-9.5-bin");
    std::fs::create_dir_all(&bin).unwrap();
    for w in [&wheel, &runtime] {
        let mut zip = zip::ZipArchive::new(std::fs::File::open(w).unwrap()).unwrap();
        for i in 0..zip.len() {
            let mut f = zip.by_index(i).unwrap();
            let name = f.name().unwrap().rsplit('/').next().unwrap_or("").to_string();
            if name.to_ascii_lowercase().ends_with(".dll") {
                std::io::copy(&mut f, &mut std::fs::File::create(bin.join(&name)).unwrap()).unwrap();
            }
        }
    }
    let doctor = || {
        let path = std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).unwrap();
        let o = ctx.cmd().args(["doctor", "--major", "9"]).env("PATH", path).env_remove("CUENV_PROFILE").env_remove("CONDA_PREFIX").output().unwrap();
        (o.status.code(), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
    };
    let (_, out) = doctor();
    assert!(!out.contains("sub-library version check"), "the real set as shipped: {out}");
    std::fs::copy(&cnn94, bin.join("cudnn_cnn64_9.dll")).unwrap();
    let (code, out) = doctor();
    assert_eq!(code, Some(4), "{out}");
    let line = out.lines().find(|l| l.contains("cudnnCnnVersionCheck")).unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.starts_with("problem[V2]: cuDNN 9 from")
            && line.contains("returned CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH (1002)")
            && line.contains("cudnn_cnn64_9.dll (`cnn`)"),
        "{line}"
    );
    eprintln!("real_windows: {line}");
}
