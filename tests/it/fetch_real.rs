//! The real thing: `cuenv store fetch cudnn@9.5.0.50 --cuda 12 --from pypi` against the
//! real PyPI (downloads the ~560 MB manylinux wheel). Ignored by default; run with
//! `cargo test --release --test it fetch_real:: -- --ignored --nocapture`. Honours the proxy
//! variables of the environment; `CUENV_PYPI_INDEX` may point at a PyPI mirror.

use std::time::Instant;

use assert_cmd::Command;
use serde_json::Value;

#[test]
#[ignore = "downloads ~560 MB from the real PyPI"]
fn fetch_cudnn_9_5_0_50_cu12_from_real_pypi() {
    let home = tempfile::Builder::new().prefix("cuenv-fetch-real-").tempdir().unwrap();
    let run = || {
        let start = Instant::now();
        let out = Command::cargo_bin("cuenv")
            .unwrap()
            .env("CUENV_HOME", home.path())
            .env_remove("CUENV_OFFLINE")
            .args(["store", "fetch", "cudnn@9.5.0.50", "--cuda", "12", "--from", "pypi", "--platform", "linux-x86_64", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (serde_json::from_slice::<Value>(&out.stdout).unwrap(), start.elapsed())
    };
    let (first, t1) = run();
    eprintln!("first fetch (download + verify + import): {t1:.1?}: {first}");
    assert_eq!(first["version"], "9.5.0.50");
    assert_eq!(first["cuda_major"], 12);
    assert_eq!(first["platform"], "linux-x86_64");
    assert_eq!(first["downloaded"], true);
    assert!(first["url"].as_str().unwrap().ends_with("-manylinux2014_x86_64.whl"), "{first}");
    assert!(first["size"].as_u64().unwrap() > 100_000_000);

    let (second, t2) = run();
    eprintln!("second fetch (already in store): {t2:.1?}");
    assert_eq!(second["downloaded"], false);
    assert_eq!(second["id"], first["id"]);
    for d in ["store/.tmp", "store/.downloads"] {
        let left: Vec<_> = std::fs::read_dir(home.path().join(d)).map(|rd| rd.flatten().map(|e| e.path()).collect()).unwrap_or_default();
        assert!(left.is_empty(), "left in {d}: {left:?}");
    }
}
