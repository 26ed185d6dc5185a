//! Issue 29, cases 1 and 2: what cuenv cleans up or writes never reaches outside the places
//! it owns. A link planted where cuenv removes leftovers is removed as a link (its target's
//! files keep their mode, content and existence), a leftover *file* where a folder was
//! expected is removed (the home never wedges), and a folder swapped for a link in the middle
//! of a command (paused at a fault point) is written through by nothing.

use std::fs;
#[cfg(unix)]
use std::path::{Path, PathBuf};

use crate::support::lab::Lab;

/// Every entry under `root` (links not followed) with its mode and content: what must not
/// change outside the home.
#[cfg(unix)]
fn snapshot(root: &Path) -> Vec<(String, u32, Vec<u8>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out: Vec<_> = walkdir::WalkDir::new(root)
        .into_iter()
        .flatten()
        .map(|e| {
            let m = fs::symlink_metadata(e.path()).unwrap();
            let content = if m.is_file() { fs::read(e.path()).unwrap() } else { Vec::new() };
            (e.path().strip_prefix(root).unwrap().display().to_string(), m.permissions().mode(), content)
        })
        .collect();
    out.sort();
    out
}

/// A folder outside the home that looks like a generation (read-only files, a `views` folder
/// with a link in it, a marker-headed shim), to plant links to.
#[cfg(unix)]
fn outside(lab: &Lab) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let o = lab.ctx.path("outside");
    fs::create_dir_all(o.join("views/p")).unwrap();
    fs::create_dir_all(o.join("sub")).unwrap();
    std::os::unix::fs::symlink(lab.ctx.path("envs"), o.join("views/p/toolkit")).unwrap();
    for f in ["a.txt", "sub/b.txt"] {
        fs::write(o.join(f), "keep me").unwrap();
        fs::set_permissions(o.join(f), fs::Permissions::from_mode(0o444)).unwrap();
    }
    fs::write(o.join(format!("cuenv-torch2.{}", crate::support::lab::SHIM_EXT)), format!("# {}\nnot cuenv's to delete here\n", cuenv::shim::MARKER)).unwrap();
    fs::set_permissions(o.join("sub"), fs::Permissions::from_mode(0o555)).unwrap();
    o
}

#[test]
fn a_leftover_file_where_the_cleaner_expects_a_folder_never_wedges_the_home() {
    let lab = Lab::new();
    let home = &lab.ctx.home;
    // The smallest input, and its kin in every leftover place.
    let planted = [
        home.join("store/.cuenv-tmpX"),
        home.join("store/.tmp/import-dead"),
        home.join("store/.downloads/download-1-x"),
        home.join("generations/.tmp-9"),
        home.join("generations/.trash-7"),
        home.join(".cuenv-tmp-1-2"),
    ];
    for p in &planted {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, "x").unwrap();
    }
    let (code, out, err) = lab.run(&["gc", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    for p in &planted {
        assert!(fs::symlink_metadata(p).is_err(), "{} left", p.display());
    }
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
}

#[cfg(unix)]
#[test]
fn links_planted_where_leftovers_are_removed_are_removed_as_links() {
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    let o = outside(&lab);
    let before = snapshot(&o);
    let home = &lab.ctx.home;
    let planted = [
        home.join("generations/.trash-7"),
        home.join("generations/.tmp-9"),
        home.join("store/.tmp/import-x"),
        home.join("store/.downloads/download-1-x"),
        home.join("store/.cuenv-tmpL"),
        home.join(".cuenv-tmp-1-2"),
        home.join("generations/1/.cuenv-tmp-1-3"),
    ];
    for p in &planted {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&o, p).unwrap();
    }
    for args in [&["gc", "--dry-run"][..], &["store", "list"], &["gc"]] {
        let (code, out, err) = lab.run(args);
        assert_eq!(code, 0, "{args:?}: {out}{err}");
        assert_eq!(snapshot(&o), before, "{args:?} changed a file outside the home");
    }
    for p in &planted {
        assert!(fs::symlink_metadata(p).is_err(), "{} left", p.display());
    }
    // The trash folder of a real generation is a link now: gc deletes the link, not the target.
    let f = lab.lab("[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n");
    lab.ok(&["apply", "--no-check", f.to_str().unwrap()]);
    std::os::unix::fs::symlink(&o, home.join("generations/.trash-1")).unwrap();
    lab.ok(&["gc", "--keep", "1"]);
    assert_eq!(snapshot(&o), before, "gc through a planted trash link");
    assert!(fs::symlink_metadata(home.join("generations/.trash-1")).is_err(), "the planted trash link stays");
}

/// Runs `args` paused at `step`; `swap` runs while it waits; returns (exit code, stderr).
#[cfg(unix)]
fn paused(lab: &Lab, step: &str, args: &[&str], swap: impl FnOnce()) -> (i32, String) {
    let flag = lab.ctx.path("paused.flag");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_cuenv"));
    cmd.env_remove("CUENV_HOME").arg("--home").arg(&lab.ctx.home).args(args);
    cmd.env("CUENV_TEST_PAUSE_AT", step).env("CUENV_TEST_PAUSE_FILE", &flag);
    cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let child = cmd.spawn().unwrap();
    let start = std::time::Instant::now();
    while !flag.exists() {
        assert!(start.elapsed().as_secs() < 60, "{args:?} never reached {step}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    swap();
    fs::remove_file(&flag).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Runs `apply --no-check file` paused at `step`, swaps `folder` for a link to the outside
/// folder `o` there, and asserts that the apply refused, naming the swap, and that `o` is as
/// `before` (its [`snapshot`]). Returns where the real folder went.
#[cfg(unix)]
fn swap_is_refused(lab: &Lab, o: &Path, before: &[(String, u32, Vec<u8>)], step: &str, file: &Path, folder: &Path) -> PathBuf {
    let moved = folder.with_extension("moved");
    let (code, err) = paused(lab, step, &["apply", "--no-check", file.to_str().unwrap()], || {
        fs::rename(folder, &moved).unwrap();
        std::os::unix::fs::symlink(o, folder).unwrap();
    });
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("is no longer the folder it was when cuenv started"), "{err}");
    assert_eq!(snapshot(o), before.to_vec(), "{step}: apply wrote or deleted through the swapped {}", folder.display());
    moved
}

/// A conda env's `activate.d` swapped for a link to another folder while apply writes its
/// shims: nothing is written to, or deleted from, the link's target, and apply says which
/// folder changed.
#[cfg(unix)]
#[test]
fn a_shim_folder_swapped_for_a_link_mid_apply_is_not_written_through() {
    let lab = Lab::new();
    let o = outside(&lab);
    let before = snapshot(&o);
    let act = lab.env_a.join("etc/conda/activate.d");
    let file = lab.three();
    // Generation 1, then a second apply that adds a profile to env a (new shims there),
    // paused after its first shim's temporary file is written; then the folder is swapped.
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let f2 = lab.lab(&format!(
        "[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\nconda-env = '{a}'\n\n[profiles.extra]\ncuda = \"12\"\ncudnn = \"8.9.4\"\nconda-env = '{a}'\n",
        a = lab.env_a.display()
    ));
    swap_is_refused(&lab, &o, &before, &format!("tmp:cuenv-extra.{}", crate::support::lab::SHIM_EXT), &f2, &act);
}

/// The lab folder swapped for a link while apply runs: lab.lock is not written through it.
#[cfg(unix)]
#[test]
fn a_lab_folder_swapped_for_a_link_mid_apply_gets_no_lock_file() {
    let lab = Lab::new();
    // A lab folder of its own (the test's work folder holds the toolkits and envs too).
    let dir = lab.ctx.path("proj");
    fs::create_dir_all(&dir).unwrap();
    let file = dir.join("lab.toml");
    fs::copy(lab.three(), &file).unwrap();
    let o = outside(&lab);
    let before = snapshot(&o);
    let moved = swap_is_refused(&lab, &o, &before, "journal", &file, &dir);
    // The undo left the home whole.
    fs::remove_file(&dir).unwrap();
    fs::rename(moved, &dir).unwrap();
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
    assert_eq!(s["healthy"], true, "{s}");
}

/// The same swap before a deletion: apply drops torch2 from env a (its shims are deleted)
/// and adds a profile to env b; paused at env b's first write, env a's `activate.d` becomes
/// a link to a folder holding a marker-headed `cuenv-torch2` file. That file stays.
#[cfg(unix)]
#[test]
fn a_shim_folder_swapped_for_a_link_mid_apply_loses_no_file_there() {
    let lab = Lab::new();
    let o = outside(&lab);
    let before = snapshot(&o);
    let act = lab.env_a.join("etc/conda/activate.d");
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    let f2 = lab.lab(&format!(
        "[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\n\n[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\nconda-env = '{b}'\n\n[profiles.extra]\ncuda = \"12\"\ncudnn = \"8.9.4\"\nconda-env = '{b}'\n",
        b = lab.env_b.display()
    ));
    swap_is_refused(&lab, &o, &before, &format!("tmp:cuenv-extra.{}", crate::support::lab::SHIM_EXT), &f2, &act);
}

/// From an adversarial trial of the fixes above: a link where a whole leftover *folder*
/// should be (`store/.tmp`, `store/.downloads`, a generation's number) is removed itself,
/// and nothing is read or deleted through it, by a reader or a writer.
#[cfg(unix)]
#[test]
fn a_link_in_place_of_a_leftover_folder_is_removed_itself() {
    for place in ["store/.tmp", "store/.downloads", "generations/7"] {
        let lab = Lab::new();
        lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
        let o = outside(&lab);
        fs::write(o.join(".cuenv-tmp-99999-1"), "a dead writer's, but not in the home").unwrap();
        let before = snapshot(&o);
        let at = lab.ctx.home.join(place);
        let _ = fs::remove_dir_all(&at);
        std::os::unix::fs::symlink(&o, &at).unwrap();
        for args in [&["status"][..], &["store", "list"], &["store", "verify"], &["gc", "--dry-run"]] {
            let _ = lab.run(args);
            assert_eq!(snapshot(&o), before, "{place}: {args:?} changed a file outside the home");
        }
        assert!(fs::symlink_metadata(&at).is_err(), "{place}: the planted link stays");
        let gc = lab.ok(&["gc", "--dry-run"]);
        assert!(gc.contains("(1 generation kept)"), "{place}: {gc}");
    }
}

/// Junk where cuenv stages or records (a file where a folder goes, a folder where a file or
/// link goes) never wedges the home: the next writer removes it and the command after works.
#[cfg(unix)]
#[test]
fn junk_where_cuenv_stages_is_removed_by_the_next_writer() {
    let junk: [(&str, bool); 4] = [("store/.tmp", true), ("store/.downloads", true), (".profiles.new", false), ("journal.toml", false)];
    for (place, file) in junk {
        let lab = Lab::new();
        lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
        let at = lab.ctx.home.join(place);
        let _ = fs::remove_dir_all(&at);
        if file {
            fs::write(&at, "x").unwrap();
        } else {
            fs::create_dir_all(at.join("sub")).unwrap();
        }
        lab.ok(&["gc", "--dry-run"]);
        assert!(fs::symlink_metadata(&at).is_err(), "{place} stays");
        let f = lab.lab("[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n");
        lab.ok(&["apply", "--no-check", f.to_str().unwrap()]);
        let dir = lab.ctx.path("more");
        fs::create_dir_all(&dir).unwrap();
        let a = crate::support::lab::host_archive(&dir, &crate::support::Release { version: [9, 1, 0, 70], cuda: 12 });
        lab.ok(&["store", "add", a.to_str().unwrap()]);
    }
}

/// A link-free home: a link or a folder planted at the staged pointer (`.current.new`)
/// is never written through, and does not stop the switch.
#[cfg(unix)]
#[test]
fn a_planted_staged_pointer_is_not_written_through() {
    for link in [true, false] {
        let lab = Lab::new();
        let o = outside(&lab);
        let before = snapshot(&o);
        let text = |cudnn: &str| {
            format!(
                "[settings]\nlink-mode = \"none\"\n\n[toolkits]\n\"12.6\" = '{}'\n\n[profiles.legacy]\ncuda = \"12\"\ncudnn = \"{cudnn}\"\n",
                lab.tk12.display()
            )
        };
        let f = lab.ctx.path("lab.toml");
        fs::write(&f, text("8.9.4")).unwrap();
        lab.ok(&["apply", "--no-check", f.to_str().unwrap()]);
        fs::write(&f, text("9.5")).unwrap();
        lab.ok(&["apply", "--no-check", f.to_str().unwrap()]);
        let staged = lab.ctx.home.join(".current.new");
        if link {
            std::os::unix::fs::symlink(o.join("a.txt"), &staged).unwrap();
        } else {
            fs::create_dir_all(staged.join("x")).unwrap();
        }
        lab.ok(&["rollback"]);
        assert_eq!(lab.current(), 1, "link {link}");
        assert_eq!(snapshot(&o), before, "the pointer was written through the planted link");
        assert!(fs::symlink_metadata(lab.ctx.home.join("current")).unwrap().is_file());
    }
}

/// A shim folder swapped before cuenv's first write there (paused at the journal, before
/// the shim sync): the folder was pinned when the command started (the leftover cleanup
/// reads it), so the deletion of torch2's shims is refused.
#[cfg(unix)]
#[test]
fn a_shim_folder_swapped_before_the_first_write_is_not_written_through() {
    let lab = Lab::new();
    let o = outside(&lab);
    let before = snapshot(&o);
    let act = lab.env_a.join("etc/conda/activate.d");
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    let f2 = lab.lab("[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n");
    swap_is_refused(&lab, &o, &before, "journal", &f2, &act);
}

/// A FIFO (or a folder) planted as `history.jsonl` blocks no reader and stops no switch.
#[cfg(unix)]
#[test]
fn a_fifo_planted_as_the_history_blocks_nothing() {
    for fifo in [true, false] {
        let lab = Lab::new();
        lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
        let h = lab.ctx.home.join("history.jsonl");
        fs::remove_file(&h).unwrap();
        if fifo {
            let c = std::ffi::CString::new(h.to_str().unwrap()).unwrap();
            // SAFETY: mkfifo on a path we own.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        } else {
            fs::create_dir_all(h.join("x")).unwrap();
        }
        let mut child = lab.ctx.cmd();
        let out = child.args(["gc", "--dry-run"]).timeout(std::time::Duration::from_secs(20)).output().unwrap();
        assert!(out.status.success(), "fifo {fifo}: {out:?}");
        lab.ok(&["generations"]);
        let f = lab.lab("[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n");
        lab.ok(&["apply", "--no-check", f.to_str().unwrap()]);
        assert!(fs::symlink_metadata(&h).unwrap().is_file(), "fifo {fifo}");
    }
}
