//! `cuenv completions SHELL` and `cuenv man`: the scripts load in the real
//! shells (bash registers a completion for `cuenv` and completes a subcommand; fish parses
//! its script), and the man page is roff with every top-level command.
#![cfg(unix)]

use std::process::Command;

use crate::support::TestContext;
use crate::support::clients;

#[test]
fn completion_scripts_load_in_real_shells() {
    let ctx = TestContext::new();
    let out = ctx.cmd().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    let script = ctx.path("cuenv.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    // Complete `cuenv ke` the way bash would, then print the candidates.
    let probe = format!(
        ". '{}'\ncomplete -p cuenv\nCOMP_WORDS=(cuenv ke); COMP_CWORD=1; COMP_LINE='cuenv ke'; COMP_POINT=8\n_cuenv cuenv ke cuenv\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
        script.display()
    );
    let out = Command::new("bash").arg("--norc").arg("-c").arg(&probe).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("-F _cuenv cuenv") && text.lines().any(|l| l == "kernel"), "{text}");
    if clients::have_bin("fish") {
        let out = ctx.cmd().args(["completions", "fish"]).output().unwrap();
        let f = ctx.path("cuenv.fish");
        std::fs::write(&f, &out.stdout).unwrap();
        let ok = Command::new("fish").arg("--no-config").arg("-n").arg(&f).status().unwrap();
        assert!(ok.success(), "fish cannot parse the completion script");
    }
    let zsh = ctx.cmd().args(["completions", "zsh"]).output().unwrap();
    assert!(String::from_utf8_lossy(&zsh.stdout).starts_with("#compdef cuenv"));
}

#[test]
fn the_man_page_lists_every_command() {
    let ctx = TestContext::new();
    let out = ctx.cmd().arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH cuenv"), "{page}");
    for cmd in ["apply", "rollback", "doctor", "run", "kernel", "export", "completions"] {
        assert!(page.contains(cmd), "{cmd} missing from the man page");
    }
}
