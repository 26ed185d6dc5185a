//! GPU fit from the files (docs/loader.md G1-G4): `store add` records the architectures a
//! release's libraries carry (their `.nv_fatbin` sections, src/sys/fatbin.rs), and `apply`,
//! `check` and `doctor` judge a GPU by them; where neither the files nor the table tell, the
//! GPU is "not verified" (a warning, exit 0, `"unknown"` in `--json`), never silence.
//!
//! The libraries are the test's gcc-built ELF objects with a `.nv_fatbin` section added by
//! `objcopy`, holding containers in the layout the module documents (the real wheels'
//! sections are read by `fatbin_real::`, `#[ignore]`d).
// The fat binary tests need objcopy and ELF objects: Linux only.
#![cfg_attr(not(target_os = "linux"), allow(dead_code, unused_imports))]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::lab::Lab;
use crate::support::*;

/// One fat binary container: entries of (kind 1 = PTX / 2 = cubin, arch, payload length).
fn container(entries: &[(u16, u32, usize)]) -> Vec<u8> {
    let mut body = Vec::new();
    for &(kind, arch, len) in entries {
        let mut e = vec![0u8; 64];
        e[0..2].copy_from_slice(&kind.to_le_bytes());
        e[4..8].copy_from_slice(&64u32.to_le_bytes());
        e[8..16].copy_from_slice(&(len as u64).to_le_bytes());
        e[28..32].copy_from_slice(&arch.to_le_bytes());
        body.extend(e);
        body.extend(std::iter::repeat_n(0x5Au8, len));
    }
    let mut out = 0xBA55_ED50u32.to_le_bytes().to_vec();
    out.extend(1u16.to_le_bytes());
    out.extend(16u16.to_le_bytes());
    out.extend((body.len() as u64).to_le_bytes());
    out.extend(body);
    out
}

/// `elf` with a `.nv_fatbin` section holding `fatbin` (objcopy --add-section).
fn with_fatbin(dir: &Path, elf: &[u8], fatbin: &[u8]) -> Vec<u8> {
    let (input, sec, output) = (dir.join("in.so"), dir.join("fatbin.bin"), dir.join("out.so"));
    std::fs::write(&input, elf).unwrap();
    std::fs::write(&sec, fatbin).unwrap();
    let st = Command::new("objcopy").arg("--add-section").arg(format!(".nv_fatbin={}", sec.display())).arg(&input).arg(&output).status().expect("objcopy runs");
    assert!(st.success());
    std::fs::read(&output).unwrap()
}

/// A Linux archive of release `r` whose `libcudnn_cnn` carries `fatbin` (none: the stand-in).
fn archive(dir: &Path, r: &Release, fatbin: Option<&[u8]>) -> PathBuf {
    let stem = r.linux_archive_stem();
    let mut t = Tree::new();
    t.dir(&stem);
    t.nodes.extend(linux_release_tree(r).under(&stem).nodes);
    if let Some(fb) = fatbin {
        let cnn = format!("libcudnn_cnn.so.{}.{}.{}", r.version[0], r.version[1], r.version[2]);
        t.replace(&format!("{stem}/lib/{cnn}"), with_fatbin(dir, &elf_so(&cnn), fb));
    }
    let path = dir.join(format!("{stem}.tar.xz"));
    t.write_tar_xz(&path);
    path
}

/// cuenv with `--home` but without `--quiet` (the warnings are the point).
fn run(lab: &Lab, args: &[&str], vars: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = assert_cmd::Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_remove("CUENV_HOME").arg("--home").arg(&lab.ctx.home);
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c.args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// G1: a 9.12 release (past every row of the table) whose cnn library carries SASS sm_75 to
/// sm_120 and PTX compute_120, as the real 9.12.0.46 wheels' do (docs/fatbin-archs.tsv):
/// `store add` records it in entry.toml; `apply` refuses it on compute capability 6.1 naming
/// the library and what it carries, and applies it on 8.6 without any warning.
#[cfg(target_os = "linux")]
#[test]
fn the_architectures_a_release_carries_decide_its_gpu_fit() {
    // The fixtures' `.nv_fatbin` sections are added by objcopy (Debian: binutils).
    if !crate::support::clients::have("objcopy (Debian: apt-get install binutils)", crate::support::clients::on_path("objcopy")) {
        return;
    }
    let lab = Lab::new();
    let r = Release { version: [9, 12, 0, 46], cuda: 12 };
    let fb = [container(&[(2, 75, 24), (2, 80, 8), (2, 86, 8), (2, 90, 16)]), container(&[(2, 100, 8), (2, 120, 8), (1, 120, 40)])].concat();
    let a = archive(&lab.ctx.work, &r, Some(&fb));
    let row = lab.ctx.add_ok(&a, &[]);
    let entry = lab.ctx.store_dir().join(row["name"].as_str().unwrap());
    let meta = std::fs::read_to_string(entry.join("entry.toml")).unwrap();
    assert!(meta.contains("[gpu_code.\"libcudnn_cnn.so.9.12.0\"]\nsass = [75, 80, 86, 90, 100, 120]\nptx = [120]"), "{meta}");
    let file = lab.lab("[profiles.p]\ncuda = \"12\"\ncudnn = \"9.12\"\n");
    let f = file.to_str().unwrap();
    let (code, out, err) = run(&lab, &["apply", "--no-check", f], &[("CUENV_OVERRIDE_COMPUTE_CAPABILITY", "6.1")]);
    assert_eq!(code, 4, "{out}\n{err}");
    assert!(
        err.contains("error: profile p cannot run on this machine: GPU 0 (CUENV_OVERRIDE_COMPUTE_CAPABILITY) has compute capability 6.1 (set by CUENV_OVERRIDE_COMPUTE_CAPABILITY); cuDNN 9.12.0.46's libcudnn_cnn.so.9.12.0 carries SASS sm_75 to sm_120 (6 architectures), PTX compute_120, none of which runs on it (this GPU is too old)"),
        "{err}"
    );
    let (code, out, err) = run(&lab, &["apply", "--no-check", f], &[("CUENV_OVERRIDE_COMPUTE_CAPABILITY", "8.6")]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!err.contains("not verified for this GPU"), "{err}");
}

/// G3: the same 9.12 release with stand-in libraries (no GPU code to read) and no row of the
/// table: `apply` and `check` warn "not verified for this GPU" (exit 0 for apply), and
/// `check --json` says `"gpu": "unknown"`. Within the table (9.5.0.50 on 8.6) it says `fits`.
#[cfg(target_os = "linux")]
#[test]
fn a_release_whose_fit_nobody_can_tell_is_not_verified() {
    let lab = Lab::new();
    let r = Release { version: [9, 12, 0, 46], cuda: 12 };
    lab.ctx.add_ok(&archive(&lab.ctx.work, &r, None), &[]);
    let file = lab.lab("[profiles.p]\ncuda = \"12\"\ncudnn = \"9.12\"\n\n[profiles.q]\ncuda = \"12\"\ncudnn = \"9.5\"\n");
    let cc = [("CUENV_OVERRIDE_COMPUTE_CAPABILITY", "8.6")];
    let (code, out, err) = run(&lab, &["apply", "--no-check", file.to_str().unwrap()], &cc);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        err.contains("warning: profile p: not verified for this GPU: GPU 0 (CUENV_OVERRIDE_COMPUTE_CAPABILITY) (compute capability 8.6 (set by CUENV_OVERRIDE_COMPUTE_CAPABILITY)) with cuDNN 9.12.0.46 for CUDA 12.6: the libraries' GPU code was not read and cuenv's table of NVIDIA's support matrix has no row for this release"),
        "{out}\n{err}"
    );
    assert!(!err.contains("profile q: not verified"), "{err}");
    let (_, out, err) = run(&lab, &["check", "--json"], &cc);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let gpu = |name: &str| v["profiles"].as_array().unwrap().iter().find(|p| p["profile"] == name).map(|p| p["gpu"].clone()).unwrap();
    assert_eq!(gpu("p"), "unknown", "{v}");
    assert_eq!(gpu("q"), "fits", "{v}");
    let (_, _, err) = run(&lab, &["check"], &cc);
    assert!(err.contains("warning: profile p: not verified for this GPU:"), "{err}");
}

/// `check --require-gpu P` on a profile whose check is `none` says it was skipped and why
/// (it used to print nothing at all); `--json` lists it under `skipped`.
#[test]
fn a_profile_with_check_none_is_said_to_be_skipped() {
    let lab = Lab::new();
    let file = lab.lab("[profiles.p]\ncuda = \"12\"\ncudnn = \"9.5\"\ncheck = \"none\"\n");
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let (code, out, err) = lab.run(&["check", "--require-gpu", "p"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("check p: skipped: its profile says check = \"none\", so nothing was loaded or run for it"), "{out}\n{err}");
    let (_, out, _) = lab.run(&["check", "--json", "p"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["skipped"]["p"].as_str().unwrap().contains("set check = \"load\" or \"conv\""), "{v}");
}
