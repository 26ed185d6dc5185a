//! The shipped profile file on the real PyPI (ignored by default; `scripts/real-input.sh`
//! runs it): `profiles/lab.toml` declares two profiles built only from PyPI sources. In a
//! fresh home, `apply --locked` fetches `nvidia-cudnn-cu12` 9.5.0.50 and 8.9.4.25 and the
//! CUDA 12.6 runtime wheels through cuenv itself, verifies them against the pins of
//! `profiles/lab.lock`, builds a generation and checks each profile (`no-gpu` here).
//! And from this Linux host, `lock --locked --platform windows-x86_64` fetches the
//! win_amd64 wheels and proves the shipped Windows section pins exactly what PyPI serves.

use std::fs;
use std::time::Instant;

use crate::support::*;

/// A fresh home, and a copy of the shipped `profiles/lab.toml` and `lab.lock` in its work
/// folder; also returns the repository's `profiles/`.
fn shipped_lab() -> (TestContext, std::path::PathBuf) {
    let ctx = TestContext::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
    for f in ["lab.toml", "lab.lock"] {
        fs::copy(root.join(f), ctx.path(f)).unwrap();
    }
    (ctx, root)
}

#[test]
#[ignore = "downloads about 1.7 GB from PyPI: scripts/real-input.sh"]
fn shipped_lab_from_pypi() {
    let (ctx, root) = shipped_lab();
    let lab = ctx.path("lab.toml");
    let started = Instant::now();
    let out = ctx.cmd().args(["apply", "--locked", "--json"]).arg(&lab).output().unwrap();
    let first = started.elapsed();
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = report["checks"].as_array().unwrap();
    let expect = [("torch", 90500), ("legacy", 8904)];
    assert_eq!(checks.len(), expect.len(), "{report}");
    for (c, (name, version)) in checks.iter().zip(expect) {
        assert_eq!(c["profile"], name);
        assert_eq!(c["result"]["status"], "no-gpu", "{c}");
        assert_eq!(c["result"]["report"]["cudnn"]["version"], version, "{c}");
        assert_eq!(c["result"]["report"]["cudnn"]["cudart_version"].as_u64().unwrap() / 1000, 12, "{c}");
    }
    assert_eq!(fs::read_to_string(ctx.path("lab.lock")).unwrap(), fs::read_to_string(root.join("lab.lock")).unwrap(), "--locked keeps the shipped lock");
    let started = Instant::now();
    let out = ctx.cmd().args(["apply"]).arg(&lab).output().unwrap();
    let second = started.elapsed();
    assert!(String::from_utf8_lossy(&out.stdout).contains("no changes"));
    eprintln!("shipped lab: first apply {:.1} s (fetch, import, link, check), second {:.3} s", first.as_secs_f64(), second.as_secs_f64());
}

#[test]
#[ignore = "downloads about 1.5 GB from PyPI: scripts/real-input.sh"]
fn shipped_lab_windows_section_from_pypi() {
    let (ctx, root) = shipped_lab();
    let started = Instant::now();
    let out = ctx.cmd().args(["lock", "--locked", "--platform", "windows-x86_64"]).arg(ctx.path("lab.toml")).output().unwrap();
    let took = started.elapsed();
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(fs::read_to_string(ctx.path("lab.lock")).unwrap(), fs::read_to_string(root.join("lab.lock")).unwrap(), "--locked keeps the shipped lock");
    let out = ctx.cmd().args(["store", "list", "--json"]).output().unwrap();
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut got: Vec<(String, String)> =
        list.as_array().unwrap().iter().map(|e| (e["version"].as_str().unwrap().to_string(), e["platform"].as_str().unwrap().to_string())).collect();
    got.sort();
    assert_eq!(got, [("8.9.4.25".to_string(), "windows-x86_64".to_string()), ("9.5.0.50".to_string(), "windows-x86_64".to_string())]);
    eprintln!("shipped lab, Windows section: fetched, verified and imported from Linux in {:.1} s", took.as_secs_f64());
}
