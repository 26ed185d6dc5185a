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
