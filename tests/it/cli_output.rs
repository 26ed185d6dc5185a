//! Every command's whole output (exit code, stdout, stderr) as an insta snapshot
//! (support::snapshot, `cuenv_snapshot!`), on the shared lab: the snapshots pin what a user
//! sees, so a change that moves code and changes no output leaves them as they are. Linux
//! output (the Windows spelling of paths and shims is pinned by the tests of those features).

use crate::support::lab::Lab;
use crate::support::snapshot::cuenv_snapshot;

/// The lab's home with `lab.toml` (three profiles) written; returns the lab and the file.
fn lab() -> (Lab, String) {
    let lab = Lab::new();
    let file = lab.three().to_str().unwrap().to_string();
    (lab, file)
}

/// `CUENV_TOOLKIT_PATHS` naming the lab's two toolkit roots.
fn toolkit_paths(lab: &Lab) -> std::ffi::OsString {
    std::env::join_paths([&lab.tk12, &lab.tk11]).unwrap()
}

#[test]
fn top_level_help_and_version() {
    let (lab, _) = lab();
    cuenv_snapshot!(lab.ctx, "help", lab.ctx.snap_cmd().arg("--help"));
    cuenv_snapshot!(lab.ctx, "version", lab.ctx.snap_cmd().arg("--version"));
    cuenv_snapshot!(lab.ctx, "no_command", lab.ctx.snap_cmd());
    cuenv_snapshot!(lab.ctx, "unknown_command", lab.ctx.snap_cmd().arg("aply"));
}

#[test]
fn store_commands() {
    let (lab, _) = lab();
    let ctx = &lab.ctx;
    cuenv_snapshot!(ctx, "store_list", ctx.snap_cmd().args(["store", "list"]));
    cuenv_snapshot!(ctx, "store_list_json", ctx.snap_cmd().args(["store", "list", "--json"]));
    let r = crate::support::Release { version: [9, 1, 0, 70], cuda: 12 };
    let archive = crate::support::linux_tar_xz(&ctx.work, &r);
    cuenv_snapshot!(ctx, "store_add", ctx.snap_cmd().args(["store", "add"]).arg(&archive));
    cuenv_snapshot!(ctx, "store_add_again", ctx.snap_cmd().args(["store", "add"]).arg(&archive));
    cuenv_snapshot!(ctx, "store_add_missing", ctx.snap_cmd().args(["store", "add"]).arg(ctx.path("nothing-here.tar.xz")));
    cuenv_snapshot!(ctx, "store_verify", ctx.snap_cmd().args(["store", "verify"]));
    let entry = ctx.entry_dirs().into_iter().find(|d| d.file_name().unwrap().to_string_lossy().starts_with("cudnn-9.1.0.70")).unwrap();
    let name = entry.file_name().unwrap().to_str().unwrap().to_string();
    cuenv_snapshot!(ctx, "store_remove", ctx.snap_cmd().args(["store", "remove", &name]));
    cuenv_snapshot!(ctx, "store_remove_unknown", ctx.snap_cmd().args(["store", "remove", "cudnn-0.0.0"]));
    cuenv_snapshot!(ctx, "store_fetch_offline", ctx.snap_cmd().args(["store", "fetch", "cudnn@9.5.0.50", "--cuda", "12"]));
}

#[test]
fn toolkits_command() {
    let (lab, _) = lab();
    let ctx = &lab.ctx;
    cuenv_snapshot!(ctx, "toolkits", ctx.snap_cmd().arg("toolkits").env("CUENV_TOOLKIT_PATHS", toolkit_paths(&lab)));
    cuenv_snapshot!(ctx, "toolkits_json", ctx.snap_cmd().args(["toolkits", "--json"]).env("CUENV_TOOLKIT_PATHS", toolkit_paths(&lab)));
    cuenv_snapshot!(ctx, "toolkits_none", ctx.snap_cmd().arg("toolkits"));
}

#[test]
fn plan_apply_lock_and_the_generation_commands() {
    let (lab, file) = lab();
    let ctx = &lab.ctx;
    cuenv_snapshot!(ctx, "use_before_apply", ctx.snap_cmd().args(["use", "tf"]));
    cuenv_snapshot!(ctx, "plan", ctx.snap_cmd().args(["plan", &file]));
    cuenv_snapshot!(ctx, "plan_json", ctx.snap_cmd().args(["plan", "--json", &file]));
    cuenv_snapshot!(ctx, "apply_dry_run", ctx.snap_cmd().args(["apply", "--dry-run", &file]));
    cuenv_snapshot!(ctx, "apply", ctx.snap_cmd().args(["apply", "--no-check", &file]));
    cuenv_snapshot!(ctx, "apply_again", ctx.snap_cmd().args(["apply", "--no-check", &file]));
    cuenv_snapshot!(ctx, "lock", ctx.snap_cmd().args(["lock", &file]));
    cuenv_snapshot!(ctx, "lock_locked", ctx.snap_cmd().args(["lock", "--locked", &file]));
    cuenv_snapshot!(ctx, "status", ctx.snap_cmd().arg("status"));
    cuenv_snapshot!(ctx, "use", ctx.snap_cmd().args(["use", "tf"]));
    cuenv_snapshot!(ctx, "use_unknown", ctx.snap_cmd().args(["use", "tf2"]));
    cuenv_snapshot!(ctx, "use_show", ctx.snap_cmd().arg("use"));
    // A second generation: the lab without its `legacy` profile.
    let text = std::fs::read_to_string(&file).unwrap();
    let cut = text.find("[profiles.legacy]").unwrap();
    std::fs::write(&file, &text[..cut]).unwrap();
    cuenv_snapshot!(ctx, "plan_remove_profile", ctx.snap_cmd().args(["plan", &file]));
    cuenv_snapshot!(ctx, "apply_second_generation", ctx.snap_cmd().args(["apply", "--no-check", &file]));
    cuenv_snapshot!(ctx, "generations", ctx.snap_cmd().arg("generations"));
    cuenv_snapshot!(ctx, "generations_json", ctx.snap_cmd().args(["generations", "--json"]));
    cuenv_snapshot!(ctx, "rollback", ctx.snap_cmd().arg("rollback"));
    cuenv_snapshot!(ctx, "rollback_to_missing", ctx.snap_cmd().args(["rollback", "--to", "7"]));
    cuenv_snapshot!(ctx, "status_after_rollback", ctx.snap_cmd().arg("status"));
    cuenv_snapshot!(ctx, "status_json", ctx.snap_cmd().args(["status", "--json"]));
    cuenv_snapshot!(ctx, "gc_dry_run", ctx.snap_cmd().args(["gc", "--keep", "1", "--dry-run"]));
    cuenv_snapshot!(ctx, "gc", ctx.snap_cmd().args(["gc", "--keep", "1"]));
    cuenv_snapshot!(ctx, "use_none", ctx.snap_cmd().args(["use", "--none"]));
}

#[test]
fn check_run_export_env_and_kernel() {
    let (lab, file) = lab();
    let ctx = &lab.ctx;
    assert!(ctx.snap_cmd().args(["apply", "--no-check", &file]).status().unwrap().success());
    // The fixtures' libraries are not loadable (fake ELF bytes): check says which and why.
    cuenv_snapshot!(ctx, "check", ctx.snap_cmd().args(["check", "legacy"]));
    cuenv_snapshot!(ctx, "check_unknown", ctx.snap_cmd().args(["check", "nope"]));
    cuenv_snapshot!(ctx, "run", ctx.snap_cmd().args(["run", "-p", "tf", "--", "sh", "-c", "echo CUENV_PROFILE=$CUENV_PROFILE"]));
    cuenv_snapshot!(ctx, "run_missing_program", ctx.snap_cmd().args(["run", "-p", "tf", "--", "no-such-program-here"]));
    cuenv_snapshot!(ctx, "export_dotenv", ctx.snap_cmd().args(["export", "tf", "--format", "dotenv"]));
    cuenv_snapshot!(ctx, "export_json", ctx.snap_cmd().args(["export", "tf", "--format", "json"]));
    cuenv_snapshot!(ctx, "export_all", ctx.snap_cmd().args(["export", "--all", "--format", "envrc", "--out"]).arg(ctx.path("exports")));
    cuenv_snapshot!(ctx, "env_bash", ctx.snap_cmd().args(["env", "tf", "--shell", "bash"]));
    cuenv_snapshot!(ctx, "env_fish", ctx.snap_cmd().args(["env", "tf", "--shell", "fish"]));
    cuenv_snapshot!(ctx, "env_setup", ctx.snap_cmd().args(["env", "--setup"]));
    cuenv_snapshot!(ctx, "env_hook_bash", ctx.snap_cmd().args(["env", "--hook", "bash"]));
    // Jupyter's folders held to the test's own: the server's Python (its prefix) and the system
    // folders (JUPYTER_PLATFORM_DIRS reads XDG_DATA_DIRS) are temporary folders.
    cuenv_snapshot!(
        ctx,
        "kernel_list_empty",
        ctx.snap_cmd()
            .env("JUPYTER_PLATFORM_DIRS", "1")
            .env("XDG_DATA_DIRS", ctx.path("xdg-system"))
            .args(["kernel", "list", "--python"])
            .arg(ctx.path("server/bin/python"))
    );
    cuenv_snapshot!(ctx, "kernel_install_missing_python", ctx.snap_cmd().args(["kernel", "install", "tf", "--python"]).arg(ctx.path("no-python")));
}

#[test]
fn doctor_command() {
    let (lab, file) = lab();
    let ctx = &lab.ctx;
    assert!(ctx.snap_cmd().args(["apply", "--no-check", &file]).status().unwrap().success());
    let empty = ctx.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    cuenv_snapshot!(ctx, "doctor_nothing_reachable", ctx.snap_cmd().args(["doctor", "--major", "9"]).env("LD_LIBRARY_PATH", &empty));
    let lib = lab.profiles().join("legacy/cudnn-lib");
    cuenv_snapshot!(ctx, "doctor_profile_view", ctx.snap_cmd().arg("doctor").env("LD_LIBRARY_PATH", &lib).env("CUENV_PROFILE", "legacy"));
    cuenv_snapshot!(ctx, "doctor_json", ctx.snap_cmd().args(["doctor", "--json"]).env("LD_LIBRARY_PATH", &lib));
    cuenv_snapshot!(ctx, "doctor_pid_missing", ctx.snap_cmd().args(["doctor", "--pid", "4294967294"]));
    cuenv_snapshot!(ctx, "doctor_for_missing_file", ctx.snap_cmd().args(["doctor", "--for"]).arg(ctx.path("nothing-here.so")));
    // doctor --for on a gcc-built program whose library needs a library nothing holds.
    let bin = ctx.path("app/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(ctx.path("app/lib")).unwrap();
    std::fs::write(ctx.path("app/m.c"), "int m(void) { return 0; }\n").unwrap();
    std::fs::write(ctx.path("app/a.c"), "int m(void);\nint a(void) { return m(); }\n").unwrap();
    std::fs::write(ctx.path("app/main.c"), "int a(void);\nint main(void) { return a(); }\n").unwrap();
    let gcc = |args: &[&str]| assert!(std::process::Command::new("gcc").current_dir(ctx.path("app")).args(args).status().unwrap().success());
    gcc(&["-shared", "-fPIC", "-o", "libmissing.so", "m.c"]);
    gcc(&["-shared", "-fPIC", "-o", "lib/libA.so", "a.c", "-L.", "-lmissing"]);
    gcc(&["-o", "bin/app", "main.c", "-Llib", "-lA", "-Wl,-rpath-link,.", "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib"]);
    std::fs::remove_file(ctx.path("app/libmissing.so")).unwrap();
    cuenv_snapshot!(ctx, "doctor_for", ctx.snap_cmd().args(["doctor", "--for"]).arg(bin.join("app")).env("LD_LIBRARY_PATH", &empty));
}

#[test]
fn completions_and_man() {
    let (lab, _) = lab();
    let ctx = &lab.ctx;
    cuenv_snapshot!(ctx, "completions_unknown_shell", ctx.snap_cmd().args(["completions", "tcsh"]));
    cuenv_snapshot!(ctx, "completions_fish", ctx.snap_cmd().args(["completions", "fish"]));
    cuenv_snapshot!(ctx, "man", ctx.snap_cmd().arg("man"));
}

/// The verdicts and warnings that carry a hint, each through the one renderer: a failed check
/// reverting an apply, a shim that is not cuenv's left unrepaired, the active profile left
/// dangling by a switch, and `plan`'s warning that `apply` would refuse another lab's file.
#[test]
fn verdicts_and_warnings_with_hints() {
    let (lab, file) = lab();
    let ctx = &lab.ctx;
    // The fixtures' libraries are not loadable: the check fails and the apply is reverted.
    cuenv_snapshot!(ctx, "apply_check_fails", ctx.snap_cmd().args(["apply", &file]));
    assert!(ctx.snap_cmd().args(["apply", "--no-check", &file]).status().unwrap().success());
    // A file without cuenv's marker at a shim's path is left as it is.
    let shim = lab.env_b.join("etc/conda/activate.d/cuenv-tf.sh");
    std::fs::write(&shim, "echo mine\n").unwrap();
    cuenv_snapshot!(ctx, "apply_not_repaired", ctx.snap_cmd().args(["apply", "--no-check", &file]));
    std::fs::remove_file(&shim).unwrap();
    // `tf` is active; a generation without it leaves `<home>/active` dangling.
    assert!(ctx.snap_cmd().args(["use", "tf"]).status().unwrap().success());
    let text = std::fs::read_to_string(&file).unwrap();
    let start = text.find("[profiles.tf]").unwrap();
    let end = text.find("[profiles.legacy]").unwrap();
    std::fs::write(&file, format!("{}{}", &text[..start], &text[end..])).unwrap();
    cuenv_snapshot!(ctx, "apply_leaves_active_dangling", ctx.snap_cmd().args(["apply", "--no-check", &file]));
    // Another lab's file that would remove this lab's profiles.
    let other = ctx.path("other.toml");
    let toolkits = &text[..text.find("[profiles.").unwrap()];
    std::fs::write(&other, format!("{toolkits}[profiles.solo]\ncuda = \"12\"\ncudnn = \"9.5\"\n")).unwrap();
    cuenv_snapshot!(ctx, "plan_another_labs_file", ctx.snap_cmd().args(["plan", other.to_str().unwrap()]));
}
