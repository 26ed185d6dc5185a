//! `apply` refuses what it must refuse before it changes the store, and `plan` and `apply`
//! agree on what a changed `from` means.

use std::fs;

use crate::support::lab::{Lab, host_archive};
use crate::support::*;

/// A home that holds another lab: `apply` of this lab's file is refused (exit 2) before its
/// `from` sources are imported, so the store is as it was.
#[test]
fn another_labs_home_is_refused_before_anything_is_imported() {
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    let before = lab.ctx.entry_dirs();
    let other = lab.ctx.path("other");
    fs::create_dir_all(&other).unwrap();
    let r = Release { version: [9, 1, 0, 70], cuda: 12 };
    let archive = host_archive(&other, &r);
    let file = other.join("lab.toml");
    fs::write(
        &file,
        format!(
            "[toolkits]\n\"12.6\" = '{}'\n\n[profiles.x]\ncuda = \"12.6\"\ncudnn = {{ version = \"9.1.0.70\", from = '{}' }}\n",
            lab.tk12.display(),
            archive.file_name().unwrap().to_str().unwrap()
        ),
    )
    .unwrap();
    let (code, out, err) = lab.run(&["apply", "--no-check", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("applying it would remove profiles") && err.contains("--replace"), "{err}");
    assert_eq!(lab.ctx.entry_dirs(), before, "the store took the other lab's source");
    // With --replace it goes through, importing the source.
    lab.ok(&["apply", "--no-check", "--replace", file.to_str().unwrap()]);
    assert_eq!(lab.ctx.entry_dirs().len(), before.len() + 1);
}

/// Issue 29, case 6: `from` moved to another file of the same release (here the archive
/// compressed anew: other bytes, the same content). The pin in lab.lock names the old
/// file's bytes: it is stale, as a pin is after a version change. On a home without the old
/// entry (another machine), `plan` says it imports the new file and `apply` does so and
/// re-pins (`cudnn-from` names the new file), instead of failing (exit 2) on the old digest.
#[cfg(unix)]
#[test]
fn a_changed_from_re_pins_and_plan_and_apply_agree() {
    let lab = Lab::new();
    let dir = lab.ctx.path("proj");
    fs::create_dir_all(&dir).unwrap();
    let r = Release { version: [9, 1, 0, 70], cuda: 12 };
    let archive = host_archive(&dir, &r);
    let lab_file = |from: &str| {
        let file = dir.join("lab.toml");
        fs::write(
            &file,
            format!(
                "[toolkits]\n\"12.6\" = '{}'\n\n[profiles.x]\ncuda = \"12.6\"\ncudnn = {{ version = \"9.1.0.70\", from = '{from}' }}\n",
                lab.tk12.display()
            ),
        )
        .unwrap();
        file
    };
    let first = archive.file_name().unwrap().to_str().unwrap().to_string();
    let file = lab_file(&first);
    lab.ok(&["apply", "--no-check", "--replace", file.to_str().unwrap()]);
    let lock = fs::read_to_string(dir.join("lab.lock")).unwrap();
    let old_sha = crate::support::sha256_hex(&fs::read(&archive).unwrap());
    assert!(lock.contains(&old_sha) && lock.contains(&format!("cudnn-from = \"{first}\"")), "{lock}");
    // The same members, compressed anew (Python's tarfile and lzma): other bytes.
    let again = dir.join("again.tar.xz");
    let py = "import tarfile,sys\nsrc=tarfile.open(sys.argv[1])\nwith tarfile.open(sys.argv[2],'w:xz',preset=1) as out:\n  for m in src.getmembers(): out.addfile(m, src.extractfile(m) if m.isfile() else None)";
    let st = std::process::Command::new("python3").args(["-c", py]).arg(&archive).arg(&again).status().unwrap();
    assert!(st.success());
    assert_ne!(crate::support::sha256_hex(&fs::read(&again).unwrap()), old_sha);
    let file = lab_file("again.tar.xz");
    // Another machine: a home without the old entry, the lab folder with its lab.lock.
    let other = lab.ctx.path("other home");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_cuenv")).env_remove("CUENV_HOME").arg("--home").arg(&other).args(args).output().unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
    };
    let (code, plan) = run(&["plan", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{plan}");
    let (code, out) = run(&["apply", "--no-check", file.to_str().unwrap()]);
    assert_eq!(code, 0, "plan said:\n{plan}\napply:\n{out}");
    let lock = fs::read_to_string(dir.join("lab.lock")).unwrap();
    assert!(!lock.contains(&old_sha) && lock.contains("cudnn-from = \"again.tar.xz\""), "the stale pin stayed:\n{lock}");
    // And back on the first home, the new file is imported and pinned there too.
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
}
