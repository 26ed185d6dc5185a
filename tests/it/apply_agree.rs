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
