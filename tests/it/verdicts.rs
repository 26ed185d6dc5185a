//! One rule set, one verdict (docs/decisions.md 7): on the same cuDNN set, `store add` (what
//! it can see without running anything), `check`, `doctor` and `doctor --pid` give the same
//! verdict class and the same docs/loader.md rule ids; only the wording differs.
//!
//! The sets are gcc stubs that behave like the real files where it matters (docs/loader.md
//! R1, V2, C1): the dispatcher names its sub-libraries in its read-only data and exports
//! `cudnn*VersionCheck` functions, the sub-libraries export their own version as data
//! (`cudnn_stub_version`, like `cudnn_ops_train_version`). Each command's rule ids are read
//! from its output (`error[R2]:`, `problem[V2]:`, `warning[R2]:`).
//!
//! Two contexts, since an incomplete set is refused unless the user overrides it:
//! - as found (a folder on `LD_LIBRARY_PATH`, a process loading it): `store add` refuses,
//!   `doctor` and `doctor --pid` report a problem, each with the same rule. `check` needs a
//!   store entry, which the refusal keeps from existing, so it has no verdict here.
//! - as accepted (`store add --allow-incomplete`, recorded in the entry): every command warns
//!   with the same rule (decisions.md 2), and none fails.
#![cfg(target_os = "linux")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::doctor_pid::{build_child, start, stop};
use crate::support::stubs::Stubs;
use crate::support::*;

/// A verdict: its class and the rule ids it cites.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Verdict {
    class: &'static str,
    rules: BTreeSet<String>,
}

/// The rule ids in `text`: every `<word>[<id>]:`.
fn rules_in(text: &str) -> BTreeSet<String> {
    let re = regex::Regex::new(r"\[([RVLWCF]\d+)\]: ").unwrap();
    re.captures_iter(text).map(|c| c[1].to_string()).collect()
}

/// The class of a command's result: a refusal or problem (exit 2 or 4), a warning (exit 0
/// with a `warning` line), or ok.
fn verdict(code: i32, text: &str) -> Verdict {
    let class = match code {
        2 | 4 => "problem",
        0 if text.lines().any(|l| l.starts_with("warning")) => "warning",
        0 => "ok",
        _ => panic!("unexpected exit {code}:\n{text}"),
    };
    Verdict { class, rules: rules_in(text) }
}

fn v(class: &'static str, rules: &[&str]) -> Verdict {
    Verdict { class, rules: rules.iter().map(|r| r.to_string()).collect() }
}

/// What the set in `dir` is.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Whole,
    /// Without `libcudnn_new.so.9`, which the dispatcher names.
    Incomplete,
    /// `libcudnn_ops.so.9` from 9.4.0 (its exported version, and the dispatcher's
    /// `cudnnOpsVersionCheck` answering 1002) beside a 9.5.0 graph.
    TwoReleases,
}

/// A stub cuDNN 9.5 release in `<root>/lib` with its header in `<root>/include`.
fn stub_set(s: &Stubs, root: &str, kind: Kind) -> PathBuf {
    let lib = format!("{root}/lib");
    let runpath = ["-Wl,-rpath,$ORIGIN", "-Wl,--enable-new-dtags"];
    let ops_check = if kind == Kind::TwoReleases { "VCHECK_OPS=1002" } else { "VCHECK_OPS=0" };
    s.build_with(
        &lib,
        "libcudnn.so.9",
        &["MODE_SUB", "NAMES=\"libcudnn_graph.so libcudnn_ops.so libcudnn_new.so\"", "VCHECK_GRAPH=0", ops_check, "VCHECK_NEW=0"],
        &runpath,
    );
    s.build_with(&lib, "libcudnn_graph.so.9", &["GRAPH", "VERSION=90500", "MARKER=\"cudnn_version_9_5_0_50_34937467_e0\"", "OWN_VERSION=0x090500"], &runpath);
    let ops_version = if kind == Kind::TwoReleases { "OWN_VERSION=0x090400" } else { "OWN_VERSION=0x090500" };
    s.build_with(&lib, "libcudnn_ops.so.9", &["GRAPH", "VERSION=90500", ops_version], &runpath);
    if kind != Kind::Incomplete {
        s.build_with(&lib, "libcudnn_new.so.9", &["GRAPH", "VERSION=90500"], &runpath);
    }
    let root = s.tmp.path().join(root);
    std::fs::create_dir_all(root.join("include")).unwrap();
    std::fs::write(root.join("include/cudnn_version.h"), version_header(9, 5, 0)).unwrap();
    root
}

/// `cuenv <args>` in `ctx` with a clean environment: `PATH`, `LD_LIBRARY_PATH` = `ld`, and
/// `extra`. Returns (exit code, stdout + stderr).
fn cuenv(ctx: &TestContext, args: &[&str], ld: &[&Path], extra: &[(&str, &str)]) -> (i32, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).env("CUENV_HOME", &ctx.home);
    c.env("CUENV_TOOLKIT_PATHS", "").env("CUDA_HOME", "").env("CUDA_PATH", "");
    c.env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap());
    for (k, val) in extra {
        c.env(k, val);
    }
    let out = c.args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// `doctor --pid` of a process that loaded the set through `ld` (and called
/// `cudnnGetVersion`, so the graph library is mapped too).
fn pid_verdict(ctx: &TestContext, exe: &Path, ld: &[PathBuf], profile: &str, extra: &[(&str, &str)]) -> Verdict {
    let child = start(exe, &["libcudnn.so.9", "call"], ld, profile);
    let pid = child.id().to_string();
    let (code, out) = cuenv(ctx, &["doctor", "--pid", &pid], &[], extra);
    stop(child);
    verdict(code, &out)
}

/// The sets as found: `store add`, `doctor` with the folder on `LD_LIBRARY_PATH` and
/// `doctor --pid` agree on each.
#[test]
fn the_same_set_gets_the_same_verdict_and_rule_from_every_command() {
    let s = Stubs::new();
    let rt = s.cudart();
    let ctx = TestContext::new();
    let exe = build_child(&ctx.work);
    for (name, kind, want) in [
        ("whole", Kind::Whole, v("ok", &[])),
        ("incomplete", Kind::Incomplete, v("problem", &["R2"])),
        ("two-releases", Kind::TwoReleases, v("problem", &["V2"])),
    ] {
        let root = stub_set(&s, name, kind);
        let lib = root.join("lib");
        let (code, out) = cuenv(&ctx, &["store", "add", "--cuda", "12", root.to_str().unwrap()], &[], &[]);
        // A whole set of stubs names no CUDA library: the note says so, it is no warning.
        assert_eq!(verdict(code, &out), want, "store add of the {name} set:\n{out}");
        let (code, out) = cuenv(&ctx, &["doctor", "--major", "9"], &[&lib, &rt], &[]);
        assert_eq!(verdict(code, &out), want, "doctor on the {name} set:\n{out}");
        assert_eq!(pid_verdict(&ctx, &exe, &[lib.clone(), rt.clone()], "", &[]), want, "doctor --pid on the {name} set");
    }
}

/// The incomplete set accepted with `--allow-incomplete`: `store add`, `check` of a profile on
/// it, `doctor` in a shell where that profile is in effect and `doctor --pid` of a process
/// running under it all warn, citing R2; none fails.
#[test]
fn an_accepted_incomplete_set_is_a_warning_with_the_same_rule_everywhere() {
    let s = Stubs::new();
    let rt = s.cudart();
    let ctx = TestContext::new();
    let root = stub_set(&s, "incomplete", Kind::Incomplete);
    let (code, out) = cuenv(&ctx, &["store", "add", "--cuda", "12", "--allow-incomplete", root.to_str().unwrap()], &[], &[]);
    assert_eq!(verdict(code, &out), v("warning", &["R2"]), "store add --allow-incomplete:\n{out}");

    // A toolkit root whose runtime is the stub (so the probe's load of cudart works).
    let tk = crate::support::lab::toolkit(&ctx.work, "12.6.77", 12);
    std::fs::copy(rt.join("libcudart.so.12"), tk.join("lib64/libcudart.so.12")).unwrap();
    let lab = ctx.path("lab.toml");
    std::fs::write(&lab, format!("[toolkits]\n\"12.6\" = '{}'\n[profiles.p]\ncuda = \"12\"\ncudnn = \"9.5\"\n", tk.display())).unwrap();
    let (code, out) = cuenv(&ctx, &["apply", "--no-check", lab.to_str().unwrap()], &[], &[]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = cuenv(&ctx, &["check"], &[], &[]);
    assert_eq!(verdict(code, &out), v("warning", &["R2"]), "check:\n{out}");

    let view = ctx.home.join("profiles/p");
    let ld = [view.join("cudnn-lib"), view.join("cuda-lib")];
    let ld_refs: Vec<&Path> = ld.iter().map(PathBuf::as_path).collect();
    let (code, out) = cuenv(&ctx, &["doctor", "--major", "9"], &ld_refs, &[("CUENV_PROFILE", "p")]);
    assert_eq!(verdict(code, &out), v("warning", &["R2"]), "doctor with the profile in effect:\n{out}");
    let exe = build_child(&ctx.work);
    assert_eq!(pid_verdict(&ctx, &exe, &ld, "p", &[]), v("warning", &["R2"]), "doctor --pid under the profile");
}
