//! README's tour, run as a new user would ("Done when"): `scripts/tour.sh` clones
//! this repository's HEAD into a temp folder, builds stand-ins for what the tour assumes (a
//! cuDNN archive, a wheel, an extracted folder, an installed CUDA 11.8 toolkit, a local wheel
//! index), puts the `cuenv` that cargo built on `PATH` and runs the README's
//! ```` ```sh tour ```` blocks in order, failing on the first command that fails. Here it reads
//! the working tree's README.md, so an edit is tested before it is committed. Linux only (the
//! Linux part of the tour).
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;

use crate::support::clients::{have, on_path};

#[test]
fn the_readme_tour_runs_on_a_clean_clone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    for tool in ["bash", "git", "python3", cc.as_str()] {
        if !have(&format!("`{tool}` (the README tour needs it)"), on_path(tool)) {
            return;
        }
    }
    if !root.join(".git").exists() {
        crate::support::skipped(format!("{} is not a git checkout (the tour clones it)", root.display()));
        return;
    }
    let out =
        Command::new("bash").arg(root.join("scripts/tour.sh")).arg(env!("CARGO_BIN_EXE_cuenv")).env("TOUR_README", root.join("README.md")).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the tour failed ({:?})\n--- stdout\n{stdout}\n--- stderr\n{stderr}", out.status);
    // Every step ran, and ran for real: the lab was applied, rolled back and judged.
    for line in [
        "generation 1 is current (3 profiles); lock written to lab.lock",
        "generation 2 is current (4 profiles)",
        "rolled back: generation 1 is current (was 2)",
        "active profile (<home>/active, through `cuenv env --setup`): torch2: no-gpu",
        "cuDNN 9.5.0.50: the store entry cudnn-9.5.0.50-cuda12-linux-x86_64-",
        "wrote profile app to lab.toml; next: `cuenv apply lab.toml`",
        "+ profile app: cuDNN 9.5.0.50",
    ] {
        assert!(stdout.contains(line), "missing {line:?}\n--- stdout\n{stdout}\n--- stderr\n{stderr}");
    }
    assert!(stderr.ends_with("tour: ok\n"), "{stderr}");
}
