//! Activation scripts of other shells: `check` runs only the platform shell's activation scripts (`.sh`;
//! `.bat` on Windows), so it reports the scripts of other shells in the conda env's
//! `activate.d` that change `PATH` / `LD_LIBRARY_PATH` and were not run; `doctor` says when a
//! shell in a conda env with cuenv shims ran none of them.

use std::fs;

use crate::support::lab::Lab;

#[test]
fn check_reports_other_shells_scripts_and_doctor_a_shell_that_ran_no_shim() {
    let lab = Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let d = lab.env_a.join("etc").join("conda").join("activate.d");
    // Another package's fish script puts its own folder first; a zsh/bash user never runs it,
    // the check neither, but a fish shell in this env does.
    fs::write(d.join("zz-other-cudnn.fish"), "set -gx LD_LIBRARY_PATH /opt/cudnn-8.2/lib $LD_LIBRARY_PATH\n").unwrap();
    fs::write(d.join("zz-harmless.fish"), "set -gx OTHER_TOOL_HOME /opt/tool\n").unwrap();
    let (_, _, err) = lab.run(&["check", "torch2"]);
    // (The script is named by its full path; how a Windows temp path is spelled is not what
    // this test is about, so the line is matched from the activate.d folder's name on.)
    assert!(err.contains("warning: profile torch2: other shell: "), "{err}");
    assert!(
        err.contains(&format!(
            "activate.d{}zz-other-cudnn.fish changes LD_LIBRARY_PATH and was not run by the check (it ran the {} scripts only)",
            std::path::MAIN_SEPARATOR,
            if cfg!(windows) { ".bat" } else { ".sh" }
        )),
        "{err}"
    );
    assert!(!err.contains("zz-harmless"), "a script that changes neither variable is no concern: {err}");

    // doctor in a shell of that env that ran no shim (no CUENV_PROFILE).
    let out = lab.ctx.cmd().env("CONDA_PREFIX", &lab.env_a).env_remove("CUENV_PROFILE").args(["doctor"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("warning: the conda env {} has cuenv shims (cuenv-torch2.", lab.env_a.display()))
            && text.contains("but this shell ran none of them (CUENV_PROFILE is unset)"),
        "{text}"
    );
    // A shell that ran the shim is not told so.
    let out = lab.ctx.cmd().env("CONDA_PREFIX", &lab.env_a).env("CUENV_PROFILE", "torch2").args(["doctor"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("ran none of them"));
}
