//! Messages a new user met that said too little.

use crate::support::lab::Lab;

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
    let bare = || {
        let mut c = assert_cmd::Command::new(env!("CARGO_BIN_EXE_cuenv"));
        c.env("CUENV_HOME", &lab.ctx.home);
        c
    };
    let out = bare().arg("plan").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(if cfg!(windows) { "Usage: cuenv.exe plan <FILE>" } else { "Usage: cuenv plan <FILE>" }), "{err}");
    assert!(!err.contains("--home"), "{err}");
    // The home still comes from CUENV_HOME.
    let out = bare().args(["store", "list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("cudnn-9.5.0.50"), "{out:?}");
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
    // Where the stored entry's CUDA major came from: the --cuda of its first `store add`, or
    // (on Windows, where the lab's own archive holds the same files) its archive's name.
    assert!(err.contains("warning: --cuda 11 contradicts the stored entry, which is for CUDA 12 ("), "{err}");
    assert!(err.contains(if cfg!(windows) { "read from the source name" } else { "given with --cuda when it was first added" }), "{err}");
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

/// `plan` of the README tour file, on a machine with no toolkit, an empty
/// store, no conda env `tf` and a PyPI index that cannot be reached, reports every error in
/// one run (exit 2), each at its line, and downloads nothing. The hints converge: no toolkit
/// for `cuda = "11.8"` suggests the same version from PyPI.
#[test]
fn plan_reports_every_resolution_error_of_the_tour_at_once_without_downloading() {
    let ctx = crate::support::TestContext::new();
    let lab = ctx.path("lab.toml");
    std::fs::write(
        &lab,
        r#"[profiles.tf]
cuda = "11.8"
cudnn = "8.8"
conda-env = "tf"

[profiles.torch2]
cuda = "12"
cudnn = "9.5.0"

[profiles.ci]
cuda = { version = "12.6", from = "pypi" }
cudnn = { version = "9.5.0.50", from = "pypi" }
"#,
    )
    .unwrap();
    // A port nothing listens on: the index cannot be reached.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let index = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let run = |cmd: &str| {
        ctx.cmd()
            .args([cmd, lab.to_str().unwrap()])
            .env("CUENV_PYPI_INDEX", &index)
            .env("CUENV_HTTP_RETRIES", "0")
            .env("CUENV_TOOLKIT_PATHS", ctx.path("no-toolkits"))
            .env("CONDA_ENVS_PATH", ctx.path("no-envs"))
            .env("HOME", &ctx.work)
            .env_remove("CUDA_HOME")
            .env_remove("CUDA_PATH")
            .env_remove("CUENV_OFFLINE")
            .output()
            .unwrap()
    };
    let out = run("plan");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for want in [
        "lab.toml:2:8: no CUDA toolkit matches `cuda = \"11.8\"` (profile `tf`)",
        "hint: take the CUDA runtime from PyPI: `cuda = { version = \"11.8\", from = \"pypi\" }`",
        "lab.toml:3:9: nothing in the store matches `cudnn = \"8.8\"` for CUDA 11",
        "or fetch it: `cudnn = { version = \"8.8\", from = \"pypi\" }`",
        "lab.toml:4:13: conda env `tf` does not exist",
        "lab.toml:11:35: cannot check the CUDA 12.6 runtime for profile `ci`",
        "lab.toml:12:40: cannot check cuDNN 9.5.0.50 for CUDA 12 (linux-x86_64) for profile `ci`",
        "5 errors in ",
    ] {
        assert!(err.contains(want), "lacks {want:?}:\n{err}");
    }
    // torch2 resolves against what ci would fetch: no error of its own.
    assert!(!err.contains("torch2"), "{err}");
    // The runtime ci would fetch is listed as such, not as a folder that does not exist.
    assert!(err.contains("(to be fetched from PyPI)") && !err.contains("(to fetch: CUDA"), "{err}");
    // Nothing was downloaded or written.
    assert!(!ctx.home.join("store").join(".downloads").exists() && !ctx.home.join("toolkits").exists(), "{err}");
    assert!(!ctx.home.join("generations").exists());
    // `apply` stops on the same resolution errors before it downloads anything (it asks the
    // sources only when fetching): tf's three, in one run.
    let out = run("apply");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("3 errors in ") && err.contains("no CUDA toolkit matches `cuda = \"11.8\"`"), "{err}");
    assert!(!ctx.home.join("store").join(".downloads").exists() && !ctx.home.join("toolkits").exists(), "{err}");
}

/// `--color always|never|auto` for clap's help and cuenv's error
/// prefixes; `auto` (the default) colors only a terminal, and never with NO_COLOR set.
#[test]
fn color_follows_the_flag_and_no_color() {
    let ctx = crate::support::TestContext::new();
    let missing = ctx.path("nope.toml");
    let run = |args: &[&str], no_color: bool| {
        let mut c = ctx.cmd();
        if no_color {
            c.env("NO_COLOR", "1");
        } else {
            c.env_remove("NO_COLOR");
        }
        let out = c.args(args).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let m = missing.to_str().unwrap();
    let (code, _, err) = run(&["--color", "always", "plan", m], true);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.starts_with("\x1b[1;31merror:\x1b[0m ") && err.contains("\x1b[1;36mhint:\x1b[0m "), "{err:?}");
    for args in [["--color", "never", "plan", m], ["--color", "auto", "plan", m]] {
        let (code, _, err) = run(&args, false);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.starts_with("error: ") && !err.contains('\x1b'), "{err:?}");
    }
    let (_, help, _) = run(&["--color=always", "plan", "--help"], false);
    assert!(help.contains('\x1b'), "{help:?}");
    let (_, help, _) = run(&["--color=never", "plan", "--help"], false);
    assert!(!help.contains('\x1b') && help.contains("--color <WHEN>"), "{help:?}");
    let (code, _, err) = run(&["--color", "pink", "plan", m], false);
    assert_eq!(code, Some(2), "{err}");
}

/// Default output says what changes and what is wrong, one line each;
/// `--verbose` shows everything (plan's view links, each no-GPU warning, whole generations lines).
#[test]
fn default_output_is_short_and_verbose_shows_everything() {
    let lab = Lab::new();
    let file = lab.three();
    let f = file.to_str().unwrap();
    let plan = lab.ok(&["plan", f]);
    assert!(plan.contains("+ profile torch2: ") && !plan.contains("  link profiles/"), "{plan}");
    assert!(plan.contains("  (the new generation's views hold 12 links; --verbose lists them)"), "{plan}");
    let verbose = lab.ok(&["--verbose", "plan", f]);
    assert!(verbose.contains("  link profiles/torch2/cudnn-lib -> ") && !verbose.contains("--verbose lists them"), "{verbose}");
    lab.ok(&["apply", "--no-check", f]);
    // A check without a GPU: one line per profile, and the no-GPU warning once.
    let out = lab.ctx.cmd().env_remove("CUENV_OVERRIDE_COMPUTE_CAPABILITY").args(["check"]).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    if out.status.success() && stdout.contains("no-gpu") {
        assert_eq!(stdout.lines().count(), 3, "{stdout}");
        assert_eq!(stderr.matches("no GPU here").count(), 0, "--quiet: {stderr}");
        let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_cuenv")).env("CUENV_HOME", &lab.ctx.home).args(["check"]).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stderr).matches("no GPU here").count(), 1, "{out:?}");
    }
    // generations: the file's name, not its path; the path with --verbose.
    let gens = lab.ok(&["generations"]);
    assert!(gens.contains("  lab.toml  torch2 (cuDNN 9.5.0.50") && !gens.contains(&lab.ctx.work.display().to_string()), "{gens}");
    let gens = lab.ok(&["--verbose", "generations"]);
    assert!(gens.contains(&file.display().to_string()), "{gens}");
}

/// `use`, `rollback` and `check` on a home that does not exist (a mistyped CUENV_HOME) say
/// there is no generation and leave no home behind.
#[test]
fn commands_on_a_missing_home_do_not_create_it() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("typo-home");
    for args in [&["rollback"][..], &["use", "tf"], &["check"]] {
        let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_cuenv")).env_remove("CUENV_HOME").arg("--home").arg(&home).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("no generation yet"), "{args:?}: {out:?}");
        assert!(!home.exists(), "{args:?} created the home");
    }
}
