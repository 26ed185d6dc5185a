//! The store's side: integrity of the store's top level and of each entry's
//! identity, entries added by hand as gc roots, and leftovers of an
//! interrupted import / remove / download.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `cuenv --home <home>` without `--quiet` (notes on stderr are part of what is tested).
fn loud(ctx: &TestContext) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_remove("CUENV_HOME").arg("--home").arg(&ctx.home);
    c
}

fn list_json(ctx: &TestContext) -> Vec<Value> {
    let out = ctx.cmd().args(["store", "list", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout).unwrap().as_array().unwrap().clone()
}

fn hand_added(ctx: &TestContext) -> std::collections::BTreeSet<String> {
    let layout = cuenv::home::layout::Layout::new(&ctx.home);
    cuenv::store::Store::new(&layout).hand_added_ids()
}

// ------------------------------------------------------------------ integrity

/// A symlink planted at the top of the store, pointing at an outside copy of an entry, is
/// no entry: not listed, reported by `store verify` (exit 3, named, with a hint), and never
/// resolved by `apply`.
#[cfg(unix)]
#[test]
fn a_link_at_the_top_of_the_store_is_no_entry() {
    let ctx = TestContext::new();
    let row = ctx.add_ok(&crate::support::lab::host_archive(&ctx.work, &Release::V9), &[]);
    let real = ctx.only_entry();
    let outside = ctx.path("outside-copy");
    let st = std::process::Command::new("cp").arg("-a").arg(&real).arg(&outside).status().unwrap();
    assert!(st.success());
    let fake = format!("{}-link", row["name"].as_str().unwrap());
    let link = ctx.store_dir().join(&fake);
    std::os::unix::fs::symlink(&outside, &link).unwrap();

    // Listed once: the real folder only.
    let rows = list_json(&ctx);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(Path::new(rows[0]["path"].as_str().unwrap()), real);

    // verify names the link, exits 3 and says what to do.
    let out = ctx.cmd().args(["store", "verify"]).output().unwrap();
    let (so, se) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{so}\n{se}");
    assert!(so.contains(&format!("ok       {}", row["name"].as_str().unwrap())), "{so}");
    assert!(so.contains(&format!("DAMAGED  {fake}")) && so.contains("a link at the top of the store"), "{so}");
    assert!(se.contains("hint:") && se.contains(&link.display().to_string()), "{se}");
    let out = ctx.cmd().args(["store", "verify", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let bad: Vec<&Value> = report.as_array().unwrap().iter().filter(|r| r["ok"] == false).collect();
    assert_eq!(bad.len(), 1, "{report}");
    assert_eq!(bad[0]["entry"], fake.as_str());

    // With the real entry gone, apply does not fall back on the link.
    let out = ctx.cmd().args(["store", "remove", row["id"].as_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(list_json(&ctx).is_empty());
    let tk = crate::support::lab::toolkit(&ctx.work, "12.6.77", 12);
    let lab = ctx.path("lab.toml");
    fs::write(&lab, format!("[toolkits]\n\"12.6\" = '{}'\n\n[profiles.torch]\ncuda = \"12\"\ncudnn = \"9.5\"\n", tk.display())).unwrap();
    let out = ctx.cmd().args(["apply", "--no-check"]).arg(&lab).output().unwrap();
    assert_ne!(out.status.code(), Some(0), "apply used the planted link:\n{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("nothing in the store matches"), "{}", text(&out.stderr));
    assert!(!ctx.home.join("generations/1").exists());
    assert!(fs::symlink_metadata(&link).is_ok(), "cuenv deletes nothing it does not own");
}

/// Rewrites `entry.toml` of `dir` with `f` applied to its table.
fn edit_entry_toml(dir: &Path, f: impl FnOnce(&mut toml::Table)) {
    let p = dir.join("entry.toml");
    let mut t: toml::Table = fs::read_to_string(&p).unwrap().parse().unwrap();
    f(&mut t);
    make_writable(&p);
    with_writable_dir(dir, || fs::write(&p, toml::to_string(&t).unwrap()).unwrap());
}

/// A file edited together with its hash in `entry.toml` fails verify: the content id is
/// recomputed from the records and compared with the id `entry.toml` and the folder name state.
#[test]
fn verify_recomputes_the_content_id() {
    let ctx = TestContext::new();
    ctx.add_ok(&linux_tar_xz(&ctx.work, &Release::V9), &[]);
    let dir = ctx.only_entry();
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let rel = "include/cudnn_version.h";
    let edited = b"#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 5\n#define CUDNN_PATCHLEVEL 0\n// edited\n";
    let f = dir.join(rel);
    make_writable(&f);
    fs::write(&f, edited).unwrap();
    edit_entry_toml(&dir, |t| {
        for rec in t["files"].as_array_mut().unwrap() {
            if rec["path"].as_str() == Some(rel) {
                rec["sha256"] = toml::Value::String(sha256_hex(edited));
                rec["size"] = toml::Value::Integer(edited.len() as i64);
            }
        }
    });
    let out = ctx.cmd().args(["store", "verify", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report[0]["ok"], false, "{report}");
    assert!(report[0]["identity"].as_str().unwrap().contains("content id"), "{report}");
    let out = ctx.cmd().args(["store", "verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stdout).contains(&format!("DAMAGED  {name}")) && text(&out.stdout).contains("content id"), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("hint:"), "{}", text(&out.stderr));

    // Also rewriting the id to match the edited records: the folder name still disagrees.
    let p = dir.join("entry.toml");
    let meta: cuenv::store::entry::EntryMeta = toml::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
    let id = cuenv::store::entry::content_id(&meta.files);
    edit_entry_toml(&dir, |t| t["id"] = toml::Value::String(id.clone()));
    let out = ctx.cmd().args(["store", "verify", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report[0]["identity"].as_str().unwrap().contains(&name), "{report}");
}

// ------------------------------------------------------------------ roots

/// Entries added with `store add` are gc roots until `store remove`, with or without
/// generations; an old store without the roots record keeps every entry.
#[test]
fn hand_added_entries_are_gc_roots_until_removed() {
    let ctx = TestContext::new();
    let a = ctx.add_ok(&linux_tar_xz(&ctx.work, &Release::V9), &[]);
    let b = ctx.add_ok(&wheel(&ctx.work, &Release::V8, WheelOs::Linux), &[]);
    let (ida, idb) = (a["id"].as_str().unwrap().to_string(), b["id"].as_str().unwrap().to_string());
    assert_eq!(hand_added(&ctx), [ida.clone(), idb.clone()].into_iter().collect());
    // Adding the same content again keeps it a root (once).
    ctx.add_ok(&linux_tar_xz(&ctx.work, &Release::V9), &[]);
    assert_eq!(hand_added(&ctx).len(), 2);

    let out = ctx.cmd().args(["store", "remove", &idb]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(hand_added(&ctx), [ida.clone()].into_iter().collect());

    // No generation at all: gc keeps the hand-added entry.
    let out = ctx.cmd().args(["gc"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("deleted store entry"), "{}", text(&out.stdout));
    assert_eq!(ctx.entry_dirs().len(), 1);
    let out = ctx.cmd().args(["gc", "--dry-run"]).output().unwrap();
    assert!(!text(&out.stdout).contains("would delete store entry"), "{}", text(&out.stdout));

    // A store written before the record existed: every entry is a root.
    fs::remove_file(ctx.store_dir().join(cuenv::store::ROOTS_FILE)).unwrap();
    assert_eq!(hand_added(&ctx), [ida.clone()].into_iter().collect());
    ctx.add_ok(&wheel(&ctx.work, &Release::V8, WheelOs::Linux), &[]);
    assert_eq!(hand_added(&ctx), [ida, idb].into_iter().collect());
}

// ------------------------------------------------------------------ leftovers

/// Plants what a killed `store add`, `store remove` and download leave; returns their total size.
fn plant_leftovers(ctx: &TestContext) -> u64 {
    let tmp = ctx.staging_dir();
    let import = tmp.join("import-dead1/raw/lib");
    fs::create_dir_all(&import).unwrap();
    fs::write(import.join("libcudnn.so.9"), vec![7u8; 2 << 20]).unwrap();
    let removed = tmp.join("remove-cudnn-9.5.0.50-cuda12-linux-x86_64-0123456789ab/lib");
    fs::create_dir_all(&removed).unwrap();
    fs::write(removed.join("libcudnn_ops.so.9"), vec![1u8; 512 << 10]).unwrap();
    // A published entry is read-only: so is what a killed remove leaves.
    let mut p = fs::metadata(removed.join("libcudnn_ops.so.9")).unwrap().permissions();
    p.set_readonly(true);
    fs::set_permissions(removed.join("libcudnn_ops.so.9"), p.clone()).unwrap();
    fs::set_permissions(&removed, p).unwrap();
    let dl = ctx.store_dir().join(".downloads/download-4000000-abc");
    fs::create_dir_all(&dl).unwrap();
    fs::write(dl.join("nvidia_cudnn_cu12-9.5.0.50-py3-none-manylinux2014_x86_64.whl"), vec![2u8; 512 << 10]).unwrap();
    (2 << 20) + (512 << 10) + (512 << 10)
}

fn leftovers(ctx: &TestContext) -> Vec<PathBuf> {
    [ctx.staging_dir(), ctx.store_dir().join(".downloads")]
        .iter()
        .flat_map(|d| fs::read_dir(d).map(|rd| rd.flatten().map(|e| e.path()).collect::<Vec<_>>()).unwrap_or_default())
        .collect()
}

const LEFTOVER_NOTE: &str = "3.00 MiB of leftovers from an interrupted command; the next `cuenv gc` or store command (`store list` too) removes them";
const REMOVED_NOTE: &str = "note: removed 3.00 MiB of leftovers from an interrupted command";

/// What `status` says is true: the next store command removes the leftovers, `store list`
/// and `store verify` included (they are a dead command's: no other cuenv holds the lock),
/// and says what it removed.
#[test]
fn store_leftovers_are_removed_by_the_next_store_command_even_a_reading_one() {
    for reader in [&["store", "list"][..], &["store", "verify"][..]] {
        let ctx = TestContext::new();
        ctx.add_ok(&linux_tar_xz(&ctx.work, &Release::V9), &[]);
        assert_eq!(plant_leftovers(&ctx), 3 << 20);
        let out = loud(&ctx).args(["status"]).output().unwrap();
        assert!(text(&out.stderr).contains(LEFTOVER_NOTE), "{}", text(&out.stderr));
        assert_eq!(leftovers(&ctx).len(), 3, "status deletes nothing");
        let out = loud(&ctx).args(reader).output().unwrap();
        assert!(out.status.success(), "{reader:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(REMOVED_NOTE), "{reader:?}: {}", text(&out.stderr));
        assert_eq!(leftovers(&ctx), Vec::<PathBuf>::new(), "{reader:?}");
        let out = loud(&ctx).args(["status"]).output().unwrap();
        assert!(!text(&out.stderr).contains("leftovers"), "{}", text(&out.stderr));
        assert_eq!(list_json(&ctx).len(), 1, "the entry itself stays");
    }
}

/// While another cuenv holds the writer lock, what is in the staging folders may be its live
/// import: a reading command leaves it, and `status` does not call it a leftover.
#[cfg(unix)]
#[test]
fn staging_of_a_live_writer_is_neither_removed_nor_called_a_leftover() {
    let ctx = TestContext::new();
    ctx.add_ok(&linux_tar_xz(&ctx.work, &Release::V9), &[]);
    plant_leftovers(&ctx);
    // Hold the lock the way a live cuenv does (an OS lock on cuenv.lock).
    let lock = fs::OpenOptions::new().read(true).write(true).open(ctx.home.join("cuenv.lock")).unwrap();
    lock.try_lock().unwrap();
    let out = loud(&ctx).args(["store", "list"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(leftovers(&ctx).len(), 3);
    let out = loud(&ctx).args(["status"]).output().unwrap();
    assert!(!text(&out.stderr).contains("leftovers"), "{}", text(&out.stderr));
    drop(lock);
    let out = loud(&ctx).args(["store", "list"]).output().unwrap();
    assert!(text(&out.stderr).contains(REMOVED_NOTE), "{}", text(&out.stderr));
}

/// `status` mentions store leftovers; `gc` removes them.
#[test]
fn status_reports_store_leftovers_and_gc_removes_them() {
    let ctx = TestContext::new();
    ctx.add_ok(&linux_tar_xz(&ctx.work, &Release::V9), &[]);
    plant_leftovers(&ctx);
    let out = loud(&ctx).args(["status"]).output().unwrap();
    assert!(text(&out.stderr).contains(LEFTOVER_NOTE), "{}", text(&out.stderr));
    let out = loud(&ctx).args(["gc"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(leftovers(&ctx), Vec::<PathBuf>::new());
    // gc says what it removed, and never "nothing to delete" after removing 3 MiB.
    assert!(text(&out.stderr).contains(REMOVED_NOTE), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("nothing else to delete"), "{}", text(&out.stdout));
}
