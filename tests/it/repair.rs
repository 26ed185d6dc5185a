//! Repair, and what `status` says of damage. Damage that `status` finds (a
//! deleted or modified shim, a deleted or retargeted view link) has a way out: `apply` of the
//! same file puts back what the current generation's manifest records, says what it put
//! back (`plan` lists it first), and `status`'s hint says to run it; a file without cuenv's marker is never replaced.
//! After `use` of a profile and a `rollback` to a generation without it, the output says so
//! and points to `rollback --to N` / `use`, never to adding a profile the file already has.
//! Both link modes: links (`auto`) and the link-free mode (`link-mode = "none"`).

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::lab::{Lab, SHIM_EXT};

/// Whether a lab file is applied with links (`auto`) or without (`link-mode = "none"`).
#[derive(Clone, Copy, Debug)]
enum Mode {
    Auto,
    LinkFree,
}

/// `text` (a lab file from [`Lab::lab`]) in `mode`.
fn in_mode(text: &Path, mode: Mode) -> PathBuf {
    if let Mode::LinkFree = mode {
        let t = fs::read_to_string(text).unwrap();
        fs::write(text, t.replacen("[toolkits]", "[settings]\nlink-mode = \"none\"\n\n[toolkits]", 1)).unwrap();
    }
    text.to_path_buf()
}

/// `p` as cuenv prints it: on Windows every separator a backslash (a test's temp paths mix
/// `/` into their spelling).
fn shown(p: &Path) -> String {
    let s = p.display().to_string();
    if cfg!(windows) { s.replace('/', "\\") } else { s }
}

/// The activate shim of `profile` in `env`, for this host's default shell.
fn shim(env: &Path, profile: &str) -> PathBuf {
    env.join("etc").join("conda").join("activate.d").join(format!("cuenv-{profile}.{SHIM_EXT}"))
}

/// A lab with the three profiles applied in `mode`; returns it and its file.
fn applied(mode: Mode) -> (Lab, PathBuf) {
    let lab = Lab::new();
    let file = in_mode(&lab.three(), mode);
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    (lab, file)
}

/// A deleted shim: `status` exits 3 with a hint naming `cuenv apply <file>`;
/// `apply` of the same file writes it back (saying so), builds no generation, and `status`
/// is clean again. Both link modes.
#[test]
fn apply_puts_back_a_deleted_shim() {
    for mode in [Mode::Auto, Mode::LinkFree] {
        let (lab, file) = applied(mode);
        let f = file.to_str().unwrap();
        let at = shim(&lab.env_a, "torch2");
        let bytes = fs::read(&at).unwrap();
        fs::remove_file(&at).unwrap();
        let (code, out, err) = lab.run(&["status"]);
        assert_eq!(code, 3, "{mode:?}: {out}{err}");
        let line = out.lines().find(|l| l.contains(&shown(&at))).unwrap_or_else(|| panic!("{mode:?}: {out}"));
        assert!(line.trim_start().starts_with("missing"), "{mode:?}: {out}");
        assert!(err.contains(&format!("hint: `cuenv apply {f}` puts back generation 1's missing or altered links and shims")), "{mode:?}: {err}");

        // `plan` lists what `apply` would put back, and touches nothing.
        let out = lab.ok(&["plan", f]);
        assert!(out.contains(&format!("~ repair shim {} (was deleted)", shown(&at))), "{mode:?}: {out}");
        assert!(!at.exists(), "{mode:?}: plan writes nothing");

        let (code, out, err) = lab.run(&["apply", "--no-check", f]);
        assert_eq!(code, 0, "{mode:?}: {out}{err}");
        assert!(out.contains(&format!("repaired: shim {} (was deleted)", shown(&at))), "{mode:?}: {out}");
        assert!(
            out.contains("generation 1 already matches") && out.contains("; put back 1 shim as its records say (its content is unchanged)"),
            "{mode:?}: {out}"
        );
        assert_eq!(fs::read(&at).unwrap(), bytes, "{mode:?}: the generation's own bytes");
        assert_eq!(lab.current(), 1, "{mode:?}: no new generation");
        let (code, out, err) = lab.run(&["status"]);
        assert_eq!(code, 0, "{mode:?}: {out}{err}");
        assert!(!err.contains("hint:"), "{mode:?}: {err}");
        // Nothing left to repair: the plain answer again.
        let out = lab.ok(&["apply", "--no-check", f]);
        assert!(out.starts_with("no changes: generation 1 already matches"), "{mode:?}: {out}");
    }
}

/// A shim edited by hand (it still starts with cuenv's marker) is
/// `modified`; `apply` replaces it because it is cuenv's, and says so. A file without the
/// marker at a shim's path is never replaced: `apply` exits 3 naming it, with a hint, and
/// leaves it as it is; once it is moved away, `apply` writes the shim. Both link modes.
#[test]
fn apply_replaces_a_modified_shim_but_never_a_foreign_file() {
    for mode in [Mode::Auto, Mode::LinkFree] {
        let (lab, file) = applied(mode);
        let f = file.to_str().unwrap();
        let at = shim(&lab.env_b, "tf");
        let bytes = fs::read(&at).unwrap();
        let mut edited = bytes.clone();
        edited.extend_from_slice(b"\nexport EDITED_BY_HAND=1\n");
        fs::write(&at, &edited).unwrap();
        let (code, out, err) = lab.run(&["status"]);
        assert_eq!(code, 3, "{mode:?}: {out}{err}");
        assert!(out.lines().any(|l| l.trim_start().starts_with("modified") && l.contains(&shown(&at))), "{mode:?}: {out}");
        assert!(err.contains(&format!("`cuenv apply {f}`")), "{mode:?}: {err}");
        let (code, out, err) = lab.run(&["apply", "--no-check", f]);
        assert_eq!(code, 0, "{mode:?}: {out}{err}");
        let line = out.lines().find(|l| l.starts_with("repaired: shim")).unwrap_or_else(|| panic!("{mode:?}: {out}"));
        assert!(line.contains("was modified") && line.contains("cuenv's marker"), "{mode:?}: {line}");
        assert_eq!(fs::read(&at).unwrap(), bytes, "{mode:?}");
        assert_eq!(lab.run(&["status"]).0, 0, "{mode:?}");

        // A foreign file: not cuenv's, so left alone.
        fs::write(&at, "echo mine\n").unwrap();
        let (code, _, err) = lab.run(&["status"]);
        assert_eq!(code, 3, "{mode:?}: {err}");
        assert!(err.contains("not cuenv's") && err.contains("move it away"), "{mode:?}: {err}");
        let (code, out, err) = lab.run(&["apply", "--no-check", f]);
        assert_eq!(code, 3, "{mode:?}: {out}{err}");
        assert!(err.contains(&format!("error: not repaired: {} does not carry cuenv's marker", shown(&at))), "{mode:?}: {err}");
        assert!(err.contains("hint:"), "{mode:?}: {err}");
        assert_eq!(fs::read_to_string(&at).unwrap(), "echo mine\n", "{mode:?}: a foreign file is never replaced");
        fs::remove_file(&at).unwrap();
        let out = lab.ok(&["apply", "--no-check", f]);
        assert!(out.contains("repaired: shim") && out.contains("(was deleted)"), "{mode:?}: {out}");
        assert_eq!(fs::read(&at).unwrap(), bytes, "{mode:?}");
        assert_eq!(lab.run(&["status"]).0, 0, "{mode:?}");
    }
}

/// Links: a deleted view link is `missing` and a retargeted one
/// `retargeted`; `status` points to `apply`, which puts both back at the manifest's targets.
/// (Asserts on links: skipped under Wine, where `auto` is link-free.)
#[test]
fn apply_puts_back_deleted_and_retargeted_view_links() {
    let (lab, file) = applied(Mode::Auto);
    let f = file.to_str().unwrap();
    let views = lab.ctx.home.join("generations/1/views/torch2");
    let (lib, cuda) = (views.join("cudnn-lib"), views.join("cuda"));
    let (lib_target, cuda_target) = (cuenv::link::read(&lib).unwrap(), cuenv::link::read(&cuda).unwrap());
    cuenv::link::remove(&lib).unwrap();
    cuenv::link::remove(&cuda).unwrap();
    cuenv::link::create(cuenv::link::LinkKind::native(), &lab.tk11, &cuda).unwrap();
    let (code, out, err) = lab.run(&["status"]);
    assert_eq!(code, 3, "{out}{err}");
    let line = |name: &str| out.lines().find(|l| l.ends_with(&format!("torch2{}{name}", std::path::MAIN_SEPARATOR))).map(str::trim_start).unwrap_or("");
    assert!(line("cudnn-lib").starts_with("missing"), "{out}");
    assert!(line("cuda").starts_with("retargeted ->"), "{out}");
    assert!(err.contains(&format!("hint: `cuenv apply {f}` puts back generation 1's")), "{err}");
    let s: serde_json::Value = serde_json::from_str(&lab.run(&["status", "--json"]).1).unwrap();
    assert_eq!(s["healthy"], false, "{s}");

    let (code, out, err) = lab.run(&["apply", "--no-check", f]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("repaired: link {} (was deleted)", lib.display())), "{out}");
    assert!(out.contains(&format!("repaired: link {} (pointed elsewhere)", cuda.display())), "{out}");
    assert_eq!(cuenv::link::read(&lib).unwrap(), lib_target);
    assert_eq!(cuenv::link::read(&cuda).unwrap(), cuda_target);
    let (code, out, err) = lab.run(&["status"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// `status` lists only what is wrong, one line each, and counts the rest;
/// `--verbose` lists every link and shim; `--json` lists every one as before.
#[test]
fn status_lists_problems_and_counts_the_rest() {
    let (lab, _) = applied(Mode::Auto);
    let (code, out, _) = lab.run(&["status"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.lines().any(|l| l.trim_start().starts_with("ok ")), "no line per healthy link or shim: {out}");
    assert!(out.contains("shims ok; --verbose lists them)"), "{out}");
    let verbose = lab.ok(&["--verbose", "status"]);
    let oks = verbose.lines().filter(|l| l.trim_start().starts_with("ok ")).count();
    let s: serde_json::Value = serde_json::from_str(&lab.ok(&["status", "--json"])).unwrap();
    let all: usize = s["profiles"].as_array().unwrap().iter().map(|p| p["links"].as_array().unwrap().len() + p["shims"].as_array().unwrap().len()).sum();
    assert_eq!(oks, all, "--verbose lists every link and shim: {verbose}");
    assert!(out.lines().count() + all - 1 == verbose.lines().count(), "the same report, less the ok lines plus one count:\n{out}\n{verbose}");
    // One damaged shim: one line for it.
    fs::remove_file(shim(&lab.env_a, "torch2")).unwrap();
    let (code, out, _) = lab.run(&["status"]);
    assert_eq!(code, 3);
    assert_eq!(out.lines().filter(|l| l.trim_start().starts_with("missing")).count(), 1, "{out}");
    assert!(!out.lines().any(|l| l.trim_start().starts_with("ok ")), "{out}");
}

/// `use legacy`, then `rollback` to a generation without `legacy`: the
/// rollback says the active profile is not in that generation and points to
/// `rollback --to 2` and `use`; `status`, `env`, `use legacy` and `check legacy` point there
/// too, and none tells the user to add `legacy` (the file already has it). Both link modes.
#[test]
fn a_rollback_past_the_active_profile_says_what_happened() {
    for mode in [Mode::Auto, Mode::LinkFree] {
        let lab = Lab::new();
        let one = format!("[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\nconda-env = '{}'\n", lab.env_a.display());
        let file = in_mode(&lab.lab(&one), mode);
        lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
        let file = in_mode(&lab.lab(&format!("{one}\n[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n")), mode);
        lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
        lab.ok(&["use", "legacy"]);

        let (code, out, err) = lab.run(&["rollback"]);
        assert_eq!(code, 0, "{mode:?}: {out}{err}");
        assert!(out.contains("rolled back: generation 1 is current (was 2)"), "{mode:?}: {out}");
        assert!(err.contains("warning: the active profile `legacy` is not in generation 1"), "{mode:?}: {err}");
        assert!(err.contains("`cuenv rollback --to 2`") && err.contains("`cuenv use <profile>`") && err.contains("torch2"), "{mode:?}: {err}");

        let (code, out, err) = lab.run(&["status"]);
        assert_eq!(code, 3, "{mode:?}: {out}{err}");
        let dangling = out.lines().find(|l| l.starts_with("DANGLING")).unwrap_or_else(|| panic!("{mode:?}: {out}"));
        assert!(dangling.contains("generation 1 has no profile `legacy`") && dangling.contains("`cuenv rollback --to 2`"), "{mode:?}: {dangling}");

        let shell = if cfg!(windows) { "cmd" } else { "bash" };
        for args in [&["env", "--shell", shell][..], &["use", "legacy"], &["check", "legacy"]] {
            let (code, out, err) = lab.run(args);
            assert_eq!(code, 2, "{mode:?} {args:?}: {out}{err}");
            assert!(err.contains("generation 1 has no profile `legacy`"), "{mode:?} {args:?}: {err}");
            assert!(err.contains("hint: generation 2 has `legacy`: `cuenv rollback --to 2`"), "{mode:?} {args:?}: {err}");
            assert!(!err.contains("add it to your profile file"), "{mode:?} {args:?}: {err}");
        }
        // The way out it names works.
        lab.ok(&["rollback", "--to", "2"]);
        assert_eq!(lab.run(&["status"]).0, 0, "{mode:?}");
    }
}

/// A profile the file declares but no generation has (added to the file
/// after the last apply): the hint says to apply the file, not to add the profile.
#[test]
fn a_profile_the_file_declares_but_no_generation_has_points_to_apply() {
    let lab = Lab::new();
    let one = "[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n";
    let file = lab.lab(one);
    let f = file.to_str().unwrap();
    lab.ok(&["apply", "--no-check", f]);
    lab.lab(&format!("{one}\n[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\n"));
    let (code, _, err) = lab.run(&["use", "torch2"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("hint: {f} declares `torch2` but generation 1 was built before it did: `cuenv apply {f}`")), "{err}");
    assert!(!err.contains("add it to your profile file"), "{err}");
    // A name that is nowhere keeps the old hint.
    let (code, _, err) = lab.run(&["use", "nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("add it to your profile file"), "{err}");
}

/// A check of a profile whose conda shim is gone says so (it used to report only the library
/// the activation then lacked, as if cuDNN were missing), and how to put the shim back.
#[test]
fn check_names_a_missing_conda_shim() {
    let (lab, file) = applied(Mode::Auto);
    let at = shim(&lab.env_a, "torch2");
    let (_, _, err) = lab.run(&["check", "torch2"]);
    assert!(!err.contains("damaged shim"), "{err}");
    fs::remove_file(&at).unwrap();
    let (_, out, err) = lab.run(&["check", "torch2"]);
    assert!(
        err.contains(&format!("warning: profile torch2: damaged shim: {} is missing, so the check ran the conda env's activation without it", shown(&at)))
            && err.contains(&format!("`cuenv apply {}` puts it back", shown(&file))),
        "{out}{err}"
    );
}
