//! CUDA 13 (issue 15): toolkit roots without `version.json`, a cuDNN's CUDA major read from the
//! CUDA libraries it names, and the CUDA 13 layouts of archives, wheels and redist manifests.
//! Fixtures are built at test time (hand-made PE/ELF files; on Linux also C stubs built with
//! gcc and x86_64-w64-mingw32-gcc); nothing of NVIDIA's is used.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::support::*;

const CUDART_13000: &str = "/* fake cuda_runtime_api.h */\n#define CUDART_VERSION 13000\n";

/// `cuenv toolkits --json` with only `roots` named; returns (root, version, version_source) of
/// each toolkit found under `under`, and the human output.
fn toolkits(ctx: &TestContext, roots: &[&Path], under: &Path) -> (Vec<(String, Value, Value)>, String) {
    let paths = std::env::join_paths(roots).unwrap();
    let run = |json: bool| {
        let mut c = ctx.cmd();
        c.arg("toolkits").env("CUENV_TOOLKIT_PATHS", &paths).env("CUDA_HOME", "").env("CUDA_PATH", "");
        if json {
            c.arg("--json");
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let doc: Value = serde_json::from_str(&run(true)).unwrap();
    let under = fs::canonicalize(under).unwrap();
    let under = dunce::simplified(&under).to_string_lossy().into_owned();
    let rows = doc["toolkits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["root"].as_str().unwrap().starts_with(&under))
        .map(|t| (t["root"].as_str().unwrap().rsplit(['/', '\\']).next().unwrap().to_string(), t["version"].clone(), t["version_source"].clone()))
        .collect();
    (rows, run(false))
}

/// Issue 15, 1: CUDA 13 roots laid out like the real installs, without `version.json`: Linux
/// (`targets/x86_64-linux/lib/libcudart.so.13.0.96`, the header under `targets/.../include`)
/// and Windows (`bin/x64/cudart64_13.dll` whose VERSIONINFO FileVersion is 6.14.11.13000, as
/// in the real DLL). Before, both were listed with version `?`.
#[test]
fn cuda13_roots_without_version_json_get_their_version() {
    let ctx = TestContext::new();
    let linux = ctx.path("cuda-13.0");
    let target = linux.join("targets/x86_64-linux");
    fs::create_dir_all(target.join("lib")).unwrap();
    fs::write(target.join("lib/libcudart.so.13.0.96"), elf_so("libcudart.so.13.0.96")).unwrap();
    fs::write(target.join("lib/libcudart.so.13"), elf_so("libcudart.so.13")).unwrap();
    fs::create_dir_all(target.join("include")).unwrap();
    fs::write(target.join("include/cuda_runtime_api.h"), CUDART_13000).unwrap();
    let windows = ctx.path("v13.0");
    fs::create_dir_all(windows.join("bin/x64")).unwrap();
    fs::write(windows.join("bin/x64/cudart64_13.dll"), pe_dll(PeArch::Amd64, Some([6, 14, 11, 13000]), "cudart64_13.dll")).unwrap();
    // A root whose only clue is the header.
    let header_only = ctx.path("toolkit-h");
    fs::create_dir_all(header_only.join("lib64")).unwrap();
    fs::write(header_only.join("lib64/libcudart.so.13"), elf_so("libcudart.so.13")).unwrap();
    fs::create_dir_all(header_only.join("include")).unwrap();
    fs::write(header_only.join("include/cuda_runtime_api.h"), CUDART_13000).unwrap();

    let (rows, text) = toolkits(&ctx, &[&linux, &windows, &header_only], &ctx.work);
    let want = |name: &str, v: &str, source: &str| (name.to_string(), Value::from(v), Value::from(source));
    assert_eq!(
        rows,
        [
            want("toolkit-h", "13.0", "include/cuda_runtime_api.h"),
            want("v13.0", "13.0", "runtime VERSIONINFO"),
            want("cuda-13.0", "13.0.96", "runtime file name"),
        ]
    );
    assert!(text.contains("it has no version.json; its CUDA version 13.0.96 comes from the runtime file name"), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("13.0") && l.contains(" ? ")), "{text}");
}

/// Issue 15, 1 (Windows): the full version from a real VERSIONINFO string table, built with
/// mingw's windres like the real `cudart64_13.dll` (`ProductName` `NVIDIA CUDA 13.0.96 Runtime`).
#[cfg(target_os = "linux")]
#[test]
fn cuda13_windows_runtime_versioninfo_string_table() {
    let ctx = TestContext::new();
    let root = ctx.path("v13.0");
    stubs::mingw_dll(
        &root.join("bin/x64"),
        "cudart64_13.dll",
        "int cudaRuntimeGetVersion(int *v) { *v = 13000; return 0; }\n",
        Some(&stubs::cudart_versioninfo_rc("13.0.96")),
    );
    let (rows, _) = toolkits(&ctx, &[&root], &ctx.work);
    assert_eq!(rows, [("v13.0".to_string(), Value::from("13.0.96"), Value::from("runtime VERSIONINFO"))]);
}
