//! Issue 18, item 8: messages a new user met that said too little.

use crate::apply::Lab;

/// `apply .` (a folder) is invalid input with a hint, not an I/O failure (it was exit 1,
/// "Is a directory", "fix what the cause above says").
#[test]
fn a_folder_given_as_the_profile_file_is_exit_2_with_a_hint() {
    let lab = Lab::new();
    let (code, _, err) = lab.run(&["apply", lab.ctx.work.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("hint: give the profile file itself (a TOML file such as"), "{err}");
}

/// A check that fails (here: --require-gpu on a machine without one, or the stubs' failures)
/// ends with an `error:` line naming the profiles, not only warnings.
#[test]
fn a_failed_check_ends_with_an_error_line() {
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    let (code, _, err) = lab.run(&["check", "--require-gpu"]);
    assert_eq!(code, 4, "{err}");
    assert!(err.lines().any(|l| l.starts_with("error: the check failed for torch2, tf, legacy")), "{err}");
    // `generations` and `status` spell "no generation yet" alike.
    let fresh = Lab::new();
    let g = fresh.ok(&["generations"]);
    assert!(g.contains("no generation yet"), "{g}");
}

/// A folder given as `conda-env` must be a conda env (hold `conda-meta/`): shims written into
/// any other folder would never run. The hint for a path says `conda create -p`, not `-n`.
#[test]
fn a_conda_env_path_without_conda_meta_is_refused_with_a_path_hint() {
    let lab = Lab::new();
    let not_env = lab.ctx.path("not an env");
    std::fs::create_dir_all(&not_env).unwrap();
    let f = lab.lab(&format!("[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\nconda-env = '{}'\n", not_env.display()));
    let (code, _, err) = lab.run(&["plan", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("conda create -p") && err.contains("conda-meta"), "{err}");
}

/// A missing profile file's hint shows what to write, not a path inside cuenv's repository
/// (which a user who ran `cargo install` does not have).
#[test]
fn a_missing_profile_file_hint_names_no_repository_path() {
    let lab = Lab::new();
    let missing = lab.ctx.path("nope.toml");
    let (code, _, err) = lab.run(&["plan", missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("hint: check the path, or create the file: one `[profiles.NAME]` table per profile"), "{err}");
    assert!(!err.contains("profiles/lab.toml"), "{err}");
}

/// With CUENV_HOME set, clap's usage line does not show `--home <DIR>` as if it were required.
#[test]
fn usage_lines_do_not_show_home_when_cuenv_home_is_set() {
    let lab = Lab::new();
    let (code, _, err) = lab.run(&["plan"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("Usage: cuenv plan"), "{err}");
    assert!(!err.contains("--home"), "{err}");
    // The home still comes from CUENV_HOME.
    let listed = lab.ok(&["store", "list"]);
    assert!(listed.contains("cudnn-9.5.0.50"), "{listed}");
}

/// `store add --cuda 11` of files already stored as a CUDA 12 entry says that the two
/// contradict, and how to store them as CUDA 11 instead.
#[test]
fn store_add_of_known_files_with_another_cuda_notes_the_contradiction() {
    let lab = Lab::new();
    let folder = lab.ctx.path("mycudnn");
    crate::support::windows_release_tree(&crate::support::Release::V9, crate::support::BinDir::Bin).write_dir(&folder);
    lab.ok(&["store", "add", folder.to_str().unwrap(), "--cuda", "12"]);
    let (code, out, err) = lab.run(&["store", "add", folder.to_str().unwrap(), "--cuda", "11"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("already in store: "), "{out}");
    assert!(err.contains("warning: --cuda 11 contradicts the stored entry, which is for CUDA 12 (given with --cuda when it was first added)"), "{err}");
    assert!(err.contains("hint: if these files are for CUDA 11, run `cuenv store remove "), "{err}");
    // The same --cuda again: nothing to note.
    let (_, _, err) = lab.run(&["store", "add", folder.to_str().unwrap(), "--cuda", "12"]);
    assert!(!err.contains("contradicts"), "{err}");
}

/// `store remove` of an entry in use names every generation using it, the current one first.
#[test]
fn store_remove_names_every_generation_using_the_entry_current_first() {
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    lab.ok(&["apply", "--no-check", lab.lab("[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\n").to_str().unwrap()]);
    assert_eq!(lab.current(), 2);
    let (code, _, err) = lab.run(&["store", "remove", "cudnn-9.5.0.50"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is used by generations 2 (current) and 1"), "{err}");
}
