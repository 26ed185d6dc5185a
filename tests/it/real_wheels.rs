//! Real-input suite: imports the real NVIDIA cuDNN wheels from PyPI and checks what the
//! store detects. Ignored by default (the wheels are 560-730 MB each); run it with
//! `scripts/real-input.sh`, which downloads them first (`scripts/fetch-real-wheels.sh`)
//! and runs the ignored tests one at a time (this file alone:
//! `cargo test --release --test it real_wheels:: -- --ignored --test-threads=1`).
//!
//! The wheels are read from `$CUENV_REAL_WHEELS`, else `~/.cache/cuenv-real-wheels`.
//! Each test imports one wheel into its own temporary home (deleted afterwards), runs
//! `store verify`, flips one byte of the stored dispatcher library and expects `verify`
//! to report exactly that file as modified. Library sets are the exact file names found
//! in each wheel (`unzip -l`), not a list cuenv knows.

use std::time::Instant;

use crate::support::*;
use serde_json::Value;

struct RealWheel {
    file: &'static str,
    version: &'static str,
    cuda: u64,
    platform: &'static str,
    /// `bin` (Windows) or `lib` (Linux), inside `nvidia/cudnn`.
    lib_dir: &'static str,
    dispatcher: &'static str,
    /// Where the import libraries (`cudnn.lib`) are, if the wheel has them.
    import_libs: Option<&'static str>,
    libraries: &'static [&'static str],
    headers: usize,
}

fn import_verify_and_damage(w: &RealWheel) {
    let ctx = TestContext::new();
    let path = real_wheel(w.file);
    let size = std::fs::metadata(&path).unwrap().len();

    let started = Instant::now();
    let row = ctx.add_ok(&path, &[]);
    let import = started.elapsed();
    assert_eq!(row["version"], w.version, "{row}");
    assert_eq!(row["cuda_major"], w.cuda, "{row}");
    assert_eq!(row["platform"], w.platform, "{row}");
    assert_eq!(row["existed"], false);
    assert_eq!(row["source"], w.file);

    let dir = ctx.only_entry();
    let meta = ctx.entry_toml(&dir);
    let libs: Vec<&str> = meta["libraries"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(libs, w.libraries, "library set of {}", w.file);
    let layout = meta["layout"].as_table().unwrap();
    let (bin, lib) = if w.platform.starts_with("windows") { (Some("bin"), w.import_libs) } else { (None, Some("lib")) };
    assert_eq!(layout.get("bin").and_then(|v| v.as_str()), bin);
    assert_eq!(layout.get("lib").and_then(|v| v.as_str()), lib);
    assert_eq!(layout.get("include").and_then(|v| v.as_str()), Some("include"));
    for l in w.libraries {
        assert!(dir.join(w.lib_dir).join(l).is_file(), "{l}");
    }
    let headers = std::fs::read_dir(dir.join("include")).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".h")).count();
    assert_eq!(headers, w.headers, "headers in include/");
    let src = meta["source"].as_table().unwrap();
    assert_eq!(src["kind"].as_str(), Some("wheel"));
    assert_eq!(src["size"].as_integer(), Some(size as i64));

    let started = Instant::now();
    let out = ctx.cmd().args(["store", "verify", "--json"]).output().unwrap();
    let verify = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));

    let damaged = format!("{}/{}", w.lib_dir, w.dispatcher);
    flip_byte(&dir.join(&damaged));
    let out = ctx.cmd().args(["store", "verify", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report[0]["modified"], serde_json::json!([damaged]), "{report}");
    assert_eq!(report[0]["missing"], serde_json::json!([]));
    assert_eq!(report[0]["extra"], serde_json::json!([]));

    eprintln!(
        "{}: {:.0} MB, import {:.1} s ({:.0} MB/s), verify {:.1} s, {} libraries",
        w.file,
        size as f64 / 1e6,
        import.as_secs_f64(),
        size as f64 / 1e6 / import.as_secs_f64(),
        verify.as_secs_f64(),
        libs.len()
    );
}

const LINUX_9: &[&str] = &SOS_9;
const WINDOWS_9: &[&str] = &DLLS_9;
const LINUX_8: &[&str] = &SOS_8;
const WINDOWS_8: &[&str] = &DLLS_8;

#[test]
#[ignore = "real NVIDIA wheels (557 MB); run scripts/real-input.sh"]
fn cu12_9_5_0_50_win_amd64() {
    import_verify_and_damage(&RealWheel {
        file: "nvidia_cudnn_cu12-9.5.0.50-py3-none-win_amd64.whl",
        version: "9.5.0.50",
        cuda: 12,
        platform: "windows-x86_64",
        lib_dir: "bin",
        dispatcher: "cudnn64_9.dll",
        import_libs: None,
        libraries: WINDOWS_9,
        headers: 7,
    });
}

#[test]
#[ignore = "real NVIDIA wheels (563 MB); run scripts/real-input.sh"]
fn cu12_9_5_0_50_manylinux2014() {
    import_verify_and_damage(&RealWheel {
        file: "nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl",
        version: "9.5.0.50",
        cuda: 12,
        platform: "linux-x86_64",
        lib_dir: "lib",
        dispatcher: "libcudnn.so.9",
        import_libs: None,
        libraries: LINUX_9,
        headers: 14,
    });
}

#[test]
#[ignore = "real NVIDIA wheels (735 MB); run scripts/real-input.sh"]
fn cu12_8_9_4_25_win_amd64() {
    import_verify_and_damage(&RealWheel {
        file: "nvidia_cudnn_cu12-8.9.4.25-py3-none-win_amd64.whl",
        version: "8.9.4.25",
        cuda: 12,
        platform: "windows-x86_64",
        lib_dir: "bin",
        dispatcher: "cudnn64_8.dll",
        import_libs: Some("lib/x64"),
        libraries: WINDOWS_8,
        headers: 9,
    });
}

#[test]
#[ignore = "real NVIDIA wheels (720 MB); run scripts/real-input.sh"]
fn cu12_8_9_4_25_manylinux1() {
    import_verify_and_damage(&RealWheel {
        file: "nvidia_cudnn_cu12-8.9.4.25-py3-none-manylinux1_x86_64.whl",
        version: "8.9.4.25",
        cuda: 12,
        platform: "linux-x86_64",
        lib_dir: "lib",
        dispatcher: "libcudnn.so.8",
        import_libs: None,
        libraries: LINUX_8,
        headers: 18,
    });
}

#[test]
#[ignore = "real NVIDIA wheels (720 MB); run scripts/real-input.sh"]
fn cu11_8_8_0_121_manylinux1() {
    import_verify_and_damage(&RealWheel {
        file: "nvidia_cudnn_cu11-8.8.0.121-py3-none-manylinux1_x86_64.whl",
        version: "8.8.0.121",
        cuda: 11,
        platform: "linux-x86_64",
        lib_dir: "lib",
        dispatcher: "libcudnn.so.8",
        import_libs: None,
        libraries: LINUX_8,
        headers: 18,
    });
}
