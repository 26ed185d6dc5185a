//! The home's format: a home written before `<home>/format` existed (format 1, the files in
//! `tests/fixtures/home-v1`, written by cuenv at commit a8f977c) still loads after saved fields
//! became enums, and a home of a newer format is refused before anything touches it.

use std::fs;
use std::path::Path;

use cuenv::generation::profile_check::CheckFile;
use cuenv::generation::{HistoryRecord, Manifest, SwitchOp, ViewMode};
use cuenv::profile::Check;
use cuenv::store::entry::{EntryMeta, FileKind};

use crate::support::TestContext;

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/home-v1"))
}

/// Copies the fixture home's files into `home`.
fn plant(home: &Path) {
    for e in walkdir::WalkDir::new(fixtures()) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(fixtures()).unwrap();
        let to = home.join(rel);
        if e.file_type().is_dir() {
            fs::create_dir_all(&to).unwrap();
        } else {
            fs::copy(e.path(), &to).unwrap();
        }
    }
}

#[test]
fn format_1_files_load_into_the_typed_fields() {
    let read = |rel: &str| fs::read_to_string(fixtures().join(rel)).unwrap();
    let m1: Manifest = toml::from_str(&read("generations/1/manifest.toml")).unwrap();
    assert_eq!(m1.link_mode, ViewMode::Symlink);
    assert_eq!(m1.profiles.iter().map(|p| p.check).collect::<Vec<_>>(), [Check::Conv; 3]);
    let m3: Manifest = toml::from_str(&read("generations/3/manifest.toml")).unwrap();
    assert_eq!((m3.link_mode, m3.profiles[0].check, m3.profiles[0].copied), (ViewMode::Copy, Check::Load, true));
    let ops: Vec<SwitchOp> = read("history.jsonl").lines().map(|l| serde_json::from_str::<HistoryRecord>(l).unwrap().op).collect();
    assert_eq!(ops, [SwitchOp::Apply, SwitchOp::Revert, SwitchOp::Apply, SwitchOp::Apply, SwitchOp::Rollback]);
    let checks: CheckFile = serde_json::from_str(&read("generations/1/check.json")).unwrap();
    assert!(checks.profiles.iter().all(|p| p.check == Check::Conv), "{checks:?}");
    let entry = EntryMeta::read(&fixtures().join("store/cudnn-9.5.0.50-cuda12-linux-x86_64-97db893af852")).unwrap();
    assert!(entry.files.iter().any(|f| f.kind == FileKind::Dir) && entry.files.iter().any(|f| f.kind == FileKind::File));
    // The content id still hashes the same words: recomputing it from the records gives the id.
    assert_eq!(cuenv::store::entry::content_id(&entry.files), entry.id);
}

#[test]
fn a_format_1_home_is_read_by_the_commands() {
    let ctx = TestContext::new();
    plant(&ctx.home);
    assert!(!ctx.home.join("format").exists(), "format 1 homes have no format file");
    let out = ctx.cmd().args(["generations", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let numbers: Vec<u64> = v["generations"].as_array().unwrap().iter().map(|g| g["number"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [1, 3]);
    // Generation 1's saved check results are read (every profile failed its check).
    let g1 = v["generations"][0]["profiles"].as_array().unwrap();
    assert!(g1.iter().all(|p| p.as_str().unwrap().ends_with(", fail)")), "{g1:?}");
    let ops: Vec<&str> = v["history"].as_array().unwrap().iter().map(|h| h["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["apply", "revert", "apply", "apply", "rollback"]);
    let out = ctx.cmd().args(["store", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("9.5.0.50"), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_writer_records_the_format_and_a_newer_home_is_refused() {
    let ctx = TestContext::new();
    // The first writer (here `gc`, which takes the writer lock) says which format the home has.
    let out = ctx.cmd().args(["gc"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(fs::read_to_string(ctx.home.join("format")).unwrap().trim(), cuenv::home::layout::HOME_FORMAT.to_string());
    // A home written by a newer cuenv: every command refuses it, and nothing is written.
    let newer = (cuenv::home::layout::NEWEST_FORMAT + 1).to_string();
    fs::write(ctx.home.join("format"), &newer).unwrap();
    let before: Vec<_> = walkdir::WalkDir::new(&ctx.home).into_iter().map(|e| e.unwrap().path().to_path_buf()).collect();
    for args in [&["status"][..], &["gc"], &["store", "list"]] {
        let out = ctx.cmd().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(&format!("has format {newer}, newer than this cuenv's format")) && err.contains("hint: upgrade cuenv"), "{err}");
    }
    let after: Vec<_> = walkdir::WalkDir::new(&ctx.home).into_iter().map(|e| e.unwrap().path().to_path_buf()).collect();
    assert_eq!(before, after);
}

#[test]
fn a_home_that_is_a_file_is_named_as_such() {
    let ctx = TestContext::new();
    let file = ctx.path("not-a-folder");
    fs::write(&file, "x").unwrap();
    for args in [&["status"][..], &["store", "list"], &["gc"]] {
        let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_cuenv")).env_remove("CUENV_HOME").arg("--home").arg(&file).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("is a file, not a folder") && err.contains("hint: pass --home DIR"), "{err}");
    }
    assert_eq!(fs::read_to_string(&file).unwrap(), "x");
}
