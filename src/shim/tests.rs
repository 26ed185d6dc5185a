//! Rendering tests: quoting, key lines per shell with hostile values, full-text snapshots
//! (insta snapshots in `src/shim/snapshots/`, reviewed with `cargo insta review`), the cmd line limit,
//! and the file helpers. The scripts are executed by `tests/it/shim_posix.rs` (sh, dash, bash,
//! zsh, fish) and `tests/it/shim_cmd.rs` (cmd, on Windows / under Wine).

use super::*;

/// Every character the issue lists as hostile, in a Windows path.
pub(crate) const WIN_HOSTILE: &str = r"C:\Program Files (x86)\cu env 100%PATH%&!x!^'$`(a)\Zoë\données";

/// The same without `%` and `!`, which a cmd shim cannot search `PATH` for
/// ([`Invalid::CmdSearch`]): what a `PATH` entry may hold.
pub(crate) const WIN_HOSTILE_LIST: &str = r"C:\Program Files (x86)\cu env &^'$`(a)\Zoë\données";

fn win_activation() -> Activation {
    Activation {
        profile: "torch2".into(),
        layer: Default::default(),
        path_prepend: vec![PathBuf::from(format!(r"{WIN_HOSTILE_LIST}\cudnn\bin")), PathBuf::from(r"D:\模型\CUDA\v12.6\bin")],
        ld_library_path_prepend: vec![],
        set: vec![
            ("CUDA_PATH".into(), PathBuf::from(r"D:\模型\CUDA\v12.6")),
            ("CUDA_HOME".into(), PathBuf::from(r"D:\模型\CUDA\v12.6")),
            ("CUDNN_PATH".into(), PathBuf::from(format!(r"{WIN_HOSTILE}\cudnn"))),
            ("CUDNN_HOME".into(), PathBuf::from(format!(r"{WIN_HOSTILE}\cudnn"))),
        ],
    }
}

fn ascii_win_activation() -> Activation {
    Activation {
        profile: "tf28".into(),
        layer: Default::default(),
        path_prepend: vec![PathBuf::from(r"C:\cuenv\profiles\tf28\cudnn\bin")],
        ld_library_path_prepend: vec![],
        set: vec![("CUDA_PATH".into(), PathBuf::from(r"C:\Program Files (x86)\CUDA"))],
    }
}

const UNIX_HOSTILE: &str = "/tmp/it's a \"dir\" $HOME `id` 100% & ! ^ (x86) \\ zoë/données";

fn unix_activation() -> Activation {
    Activation {
        profile: "torch2".into(),
        layer: Default::default(),
        path_prepend: vec![PathBuf::from(format!("{UNIX_HOSTILE}/cudnn/bin")), PathBuf::from("/opt/模型/cuda/bin")],
        ld_library_path_prepend: vec![PathBuf::from(format!("{UNIX_HOSTILE}/cudnn/lib")), PathBuf::from("/opt/模型/cuda/lib64")],
        set: vec![
            ("CUDA_PATH".into(), PathBuf::from("/opt/模型/cuda")),
            ("CUDA_HOME".into(), PathBuf::from("/opt/模型/cuda")),
            ("CUDNN_PATH".into(), PathBuf::from(format!("{UNIX_HOSTILE}/cudnn"))),
            ("CUDNN_HOME".into(), PathBuf::from(format!("{UNIX_HOSTILE}/cudnn"))),
        ],
    }
}

// ---- quoting ---------------------------------------------------------------------------------

#[test]
fn posix_quoting() {
    assert_eq!(quote::posix("a b"), "'a b'");
    assert_eq!(quote::posix("it's"), r"'it'\''s'");
    assert_eq!(quote::posix("$HOME `x` \\ \" !"), "'$HOME `x` \\ \" !'");
    assert_eq!(quote::posix(""), "''");
}

#[test]
fn fish_quoting() {
    assert_eq!(quote::fish("it's"), r"'it\'s'");
    assert_eq!(quote::fish(r"C:\a\\b"), r"'C:\\a\\\\b'");
    assert_eq!(quote::fish("$HOME (x) \" *"), "'$HOME (x) \" *'");
}

#[test]
fn powershell_quoting() {
    assert_eq!(quote::powershell("it's"), "'it''s'");
    assert_eq!(quote::powershell("$env:X `n \"q\""), "'$env:X `n \"q\"'");
    // Typographic single quotes also end a '...' string in PowerShell.
    assert_eq!(quote::powershell("a\u{2019}b\u{2018}c"), "'a\u{2019}\u{2019}b\u{2018}\u{2018}c'");
}

#[test]
fn cmd_quoting() {
    assert_eq!(quote::cmd(r"C:\a 100% & (x86) ^ !", false), r"C:\a 100%% & (x86) ^ !");
    assert_eq!(quote::cmd(r"C:\a 100% & (x86) ^ !", true), r"C:\a 100%% & (x86) ^^ ^!");
    assert_eq!(quote::cmd("%PATH%", false), "%%PATH%%");
}

#[test]
fn fill_is_one_pass() {
    let out = fill("a {{X}} b {{Y}} ${{{X}}}", &[("X", "{{Y}}"), ("Y", "y")]);
    assert_eq!(out, "a {{Y}} b y ${{{Y}}}");
}

#[test]
#[should_panic(expected = "has no value")]
fn fill_panics_on_missing_slot() {
    fill("{{NOPE}}", &[]);
}

// ---- marker, names ---------------------------------------------------------------------------

#[test]
fn every_shim_starts_with_its_marker() {
    for a in [win_activation(), unix_activation()] {
        for shell in Shell::ALL {
            for text in [render_activate(shell, &a), render_deactivate(shell, &a)] {
                assert!(is_ours(&text), "{shell:?}: {}", &text[..60]);
                assert!(is_ours(&text), "{shell:?}");
            }
        }
    }
}

#[test]
fn is_ours_accepts_bom_and_crlf_and_rejects_others() {
    assert!(is_ours("@rem cuenv-shim v1\r\n@set X=1\r\n"));
    assert!(is_ours("\u{feff}# cuenv-shim v1\r\n"));
    assert!(is_ours("# cuenv-shim v1"));
    assert!(!is_ours(""));
    assert!(!is_ours("@echo off\r\n@rem cuenv-shim v1\r\n"));
    assert!(!is_ours("# cuenv-shim v10\n"));
    assert!(is_ours("# cuenv-shim v2\n") && is_ours("@rem cuenv-shim v2\r\n"));
    assert!(!is_ours("# cuenv-shim v3\n"));
    assert!(!is_ours("#!/bin/sh\n# cuenv-shim v1\n"));
    assert!(!is_ours("rem cuenv-shim v1\n"));
}

#[test]
fn file_names() {
    assert_eq!(file_name("torch2", Shell::Cmd), "cuenv-torch2.bat");
    assert_eq!(file_name("torch2", Shell::PowerShell), "cuenv-torch2.ps1");
    assert_eq!(file_name("torch2", Shell::Posix), "cuenv-torch2.sh");
    assert_eq!(file_name("torch2", Shell::Fish), "cuenv-torch2.fish");
    assert_eq!(Shell::from_name("zsh"), Some(Shell::Posix));
    assert_eq!(Shell::from_name("pwsh"), Some(Shell::PowerShell));
    assert_eq!(file_name("torch2", Shell::Csh), "cuenv-torch2.csh");
    assert_eq!(Shell::from_name("tcsh"), Some(Shell::Csh));
    assert_eq!(Shell::from_name("xonsh"), None);
}

#[test]
fn verbatim_prefixes_are_stripped() {
    assert_eq!(shim_path(Path::new(r"\\?\C:\Program Files\x")), r"C:\Program Files\x");
    assert_eq!(shim_path(Path::new(r"\\?\UNC\srv\share\x")), r"\\srv\share\x");
    assert_eq!(shim_path(Path::new(r"\\srv\share")), r"\\srv\share");
    let mut a = ascii_win_activation();
    a.path_prepend = vec![PathBuf::from(r"\\?\C:\cuenv\bin")];
    assert!(render_activate(Shell::Cmd, &a).contains(r#"set "CUENV_SHIM_ADDED_PATH=C:\cuenv\bin""#));
}

#[test]
fn validate_rejects_what_cannot_be_rendered() {
    for shell in [Shell::Cmd, Shell::PowerShell] {
        validate(shell, &ascii_win_activation()).unwrap();
        validate(shell, &win_activation()).unwrap();
    }
    for shell in [Shell::Posix, Shell::Fish] {
        validate(shell, &unix_activation()).unwrap();
    }
    let mut a = ascii_win_activation();
    a.profile = "a b".into();
    assert!(matches!(validate(Shell::Posix, &a), Err(Invalid::Profile(_))));
    let mut a = ascii_win_activation();
    a.set.push(("PATH".into(), "x".into()));
    assert!(matches!(validate(Shell::Posix, &a), Err(Invalid::Name(_))));
    let mut a = ascii_win_activation();
    a.set.push(("1X".into(), "x".into()));
    assert!(matches!(validate(Shell::Posix, &a), Err(Invalid::Name(_))));
    let mut a = unix_activation();
    a.path_prepend.push(PathBuf::from("/a:b"));
    assert!(matches!(validate(Shell::Posix, &a), Err(Invalid::Separator { sep: ':', .. })));
    let mut a = ascii_win_activation();
    a.path_prepend.push(PathBuf::from(r"C:\a;b"));
    assert!(matches!(validate(Shell::Cmd, &a), Err(Invalid::Separator { sep: ';', .. })));
    let mut a = ascii_win_activation();
    a.set.push(("X".into(), PathBuf::from("a\nb")));
    assert!(matches!(validate(Shell::Fish, &a), Err(Invalid::Path(_))));
    let mut a = ascii_win_activation();
    a.set.push(("X".into(), PathBuf::from("a\"b")));
    let e = validate(Shell::Cmd, &a).unwrap_err();
    assert!(matches!(e, Invalid::Quote(_)), "{e}");
    // The message names the real reason (it said "empty, not Unicode, or a line break").
    assert!(e.to_string().contains("which a cmd.exe shim cannot carry") && e.hint().contains("--home"), "{e}");
    let mut a = unix_activation();
    a.set.push(("X".into(), PathBuf::from("a\"b")));
    validate(Shell::Posix, &a).unwrap();
    // cmd searches PATH for its block: no '=', '%' or '!' in a PATH entry (fine elsewhere).
    for ch in ['=', '%', '!'] {
        let mut a = ascii_win_activation();
        a.path_prepend.push(PathBuf::from(format!(r"C:\a{ch}b\bin")));
        let e = validate(Shell::Cmd, &a).unwrap_err();
        assert!(matches!(e, Invalid::CmdSearch { ch: c, .. } if c == ch), "{e}");
        assert!(e.to_string().contains("cannot search PATH for") && e.hint().contains("--home"), "{e}");
        validate(Shell::PowerShell, &a).unwrap();
        let mut a = ascii_win_activation();
        a.set.push(("X".into(), PathBuf::from(format!(r"C:\a{ch}b"))));
        validate(Shell::Cmd, &a).unwrap();
    }
}

#[test]
#[should_panic(expected = "cannot be set by a shim")]
fn rendering_a_reserved_name_panics() {
    let mut a = ascii_win_activation();
    a.set.push(("CUENV_ACTIVE_PROFILE".into(), "x".into()));
    render_activate(Shell::Posix, &a);
}

// ---- key lines per shell ---------------------------------------------------------------------

fn has_line(text: &str, line: &str) {
    assert!(text.lines().any(|l| l.trim_end_matches('\r').trim() == line.trim()), "missing line\n  {line}\nin\n{text}");
}

#[test]
fn posix_activate_lines() {
    let t = render_activate(Shell::Posix, &unix_activation());
    // The block is one quoted literal, recorded for removal by value.
    let block = r#"'/tmp/it'\''s a "dir" $HOME `id` 100% & ! ^ (x86) \ zoë/données/cudnn/lib:/opt/模型/cuda/lib64'"#;
    has_line(&t, &format!("LD_LIBRARY_PATH=$__cuenv_h{block}:$__cuenv_v"));
    has_line(&t, &format!("LD_LIBRARY_PATH=$__cuenv_h{block}"));
    has_line(&t, &format!("CUENV_SHIM_ADDED_LD_LIBRARY_PATH={block}"));
    has_line(&t, "CUDA_PATH='/opt/模型/cuda'");
    has_line(&t, "CUENV_PROFILE='torch2'");
    has_line(&t, "CUENV_SHIM_PROFILE='torch2'");
    assert!(!t.contains('\r') && !t.contains("eval"), "{t}");
    // Undo (by value) comes before the insert; the scalars are saved before they are set.
    assert!(t.find("unset CUENV_SHIM_ADDED_LD_LIBRARY_PATH").unwrap() < t.find("CUENV_SHIM_ADDED_LD_LIBRARY_PATH='").unwrap());
    assert!(t.find("CUENV_SHIM_SAVED_CUDA_HOME=$CUDA_HOME").unwrap() < t.find("CUDA_HOME='").unwrap());
    assert!(t.find("CUENV_SHIM_SAVED_CUDNN_HOME=$CUDNN_HOME").unwrap() < t.find("CUDNN_HOME='").unwrap());
    let d = render_deactivate(Shell::Posix, &unix_activation());
    has_line(&d, r#"if [ "${CUENV_SHIM_PROFILE-}" = 'torch2' ]; then"#);
    has_line(&d, r#"if [ -n "${CUDA_HOME+x}" ] && [ "$CUDA_HOME" = '/opt/模型/cuda' ]; then"#);
    has_line(&d, r#"if [ -n "${CUDNN_HOME+x}" ] && [ "$CUDNN_HOME" = '/tmp/it'\''s a "dir" $HOME `id` 100% & ! ^ (x86) \ zoë/données/cudnn' ]; then"#);
    has_line(&d, "unset CUENV_SHIM_PROFILE __cuenv_v");
    // The setup layer keeps its own state.
    let mut s = unix_activation();
    s.layer = Layer::Setup;
    let t = render_activate(Shell::Posix, &s);
    has_line(&t, "CUENV_SETUP_PROFILE='torch2'");
    // It reads the higher layers' state (to stay behind their blocks), never writes their blocks.
    assert!(!t.lines().any(|l| l.trim_start().starts_with("CUENV_SHIM_ADDED_") || l.trim_start().starts_with("CUENV_SHIM_PROFILE")), "{t}");
    assert!(t.contains("if [ -n \"${CUENV_SHIM_ADDED_LD_LIBRARY_PATH+x}\" ]; then"), "{t}");
}

#[test]
fn fish_and_csh_run_the_posix_program() {
    let a = unix_activation();
    let sh = render_activate(Shell::Posix, &a);
    let fish = render_activate(Shell::Fish, &a);
    assert!(fish.lines().any(|l| l.starts_with("/bin/sh -c '# cuenv-shim v2")) && fish.trim_end().ends_with("| source"), "{fish}");
    let csh = render_activate(Shell::Csh, &a);
    assert!(csh.contains("  /bin/sh -c '# cuenv-shim v2\\\n"), "{csh}");
    // csh: no bare `!` (history substitution) and no bare line break inside the quoted program.
    let prog = &csh[csh.find("/bin/sh -c '").unwrap()..csh.find("> \"$__cuenv_t\"").unwrap()];
    assert!(!prog.replace("\\!", "").contains('!'), "{prog}");
    assert!(prog.lines().rev().skip(1).all(|l| l.ends_with('\\')), "{prog}");
    assert!(sh.lines().count() < fish.lines().count());
}

#[test]
fn powershell_activate_lines() {
    let mut a = win_activation();
    a.set.push(("TEST_Q".into(), PathBuf::from("C:\\it's \u{2019}q\u{2019}")));
    let t = render_activate(Shell::PowerShell, &a);
    assert!(t.contains("\r\n") && !t.replace("\r\n", "").contains('\n'), "CRLF only");
    // activate: the block is one literal list, joined like the list itself and recorded.
    has_line(&t, r"$__cuenv_b = @('C:\Program Files (x86)\cu env &^''$`(a)\Zoë\données\cudnn\bin', 'D:\模型\CUDA\v12.6\bin') -join $__cuenv_s");
    has_line(&t, "[Environment]::SetEnvironmentVariable('CUENV_SHIM_ADDED_PATH', $__cuenv_b, 'Process')");
    has_line(&t, "[Environment]::SetEnvironmentVariable('CUENV_SHIM_UNSET_PATH', '1', 'Process')");
    // ... right after the entry equal to CONDA_PREFIX (ignoring case), inside conda's slice.
    has_line(&t, "$__cuenv_c = [Environment]::GetEnvironmentVariable('CONDA_PREFIX', 'Process')");
    has_line(&t, "if ([string]::Equals($__cuenv_l[$__cuenv_k], $__cuenv_c, [StringComparison]::OrdinalIgnoreCase)) { $__cuenv_i = $__cuenv_k + 1; break }");
    has_line(&t, "$__cuenv_l.Insert($__cuenv_i, $__cuenv_b)");
    // switch, stack, reactivate: the layer's current block (any profile's) goes first, by value.
    has_line(&t, "$__cuenv_b = [Environment]::GetEnvironmentVariable(\"CUENV_SHIM_ADDED_$__cuenv_n\", 'Process')");
    has_line(&t, "$__cuenv_i = $__cuenv_v.IndexOf($__cuenv_s + $__cuenv_b + $__cuenv_s, [StringComparison]::Ordinal)");
    has_line(&t, "if ($__cuenv_i -ge 0) { $__cuenv_v = $__cuenv_v.Remove($__cuenv_i, $__cuenv_b.Length + 1) }");
    // Scalars: saved once per layer (kept while another profile of the layer is in effect).
    has_line(&t, "foreach ($__cuenv_n in @('CUDA_PATH', 'CUDA_HOME', 'CUDNN_PATH', 'CUDNN_HOME', 'TEST_Q', 'CUENV_PROFILE')) {");
    has_line(
        &t,
        "if ($null -eq [Environment]::GetEnvironmentVariable(\"CUENV_SHIM_SAVED_$__cuenv_n\", 'Process') -and $null -eq [Environment]::GetEnvironmentVariable(\"CUENV_SHIM_UNSET_$__cuenv_n\", 'Process')) {",
    );
    has_line(&t, r"[Environment]::SetEnvironmentVariable('CUDA_PATH', 'D:\模型\CUDA\v12.6', 'Process')");
    has_line(&t, r"[Environment]::SetEnvironmentVariable('CUDNN_PATH', 'C:\Program Files (x86)\cu env 100%PATH%&!x!^''$`(a)\Zoë\données\cudnn', 'Process')");
    has_line(&t, r"[Environment]::SetEnvironmentVariable('CUDNN_HOME', 'C:\Program Files (x86)\cu env 100%PATH%&!x!^''$`(a)\Zoë\données\cudnn', 'Process')");
    has_line(&t, "[Environment]::SetEnvironmentVariable('TEST_Q', 'C:\\it''s \u{2019}\u{2019}q\u{2019}\u{2019}', 'Process')");
    has_line(&t, "[Environment]::SetEnvironmentVariable('CUENV_SHIM_PROFILE', 'torch2', 'Process')");
    let pos = |s: &str| t.find(s).unwrap_or_else(|| panic!("{s} not in\n{t}"));
    assert!(
        pos("IndexOf(") < pos("CUENV_SHIM_SAVED_$")
            && pos("CUENV_SHIM_SAVED_$") < pos("$__cuenv_l.Insert")
            && pos("$__cuenv_l.Insert") < pos("'CUDA_PATH', 'D:")
    );
    // PowerShell never sees a double-quoted value (where $ and ` would expand).
    for line in t.lines().filter(|l| l.contains("模型") || l.contains("données")) {
        assert!(!line.contains("\"C:") && !line.contains("\"D:"), "{line}");
    }
    assert!(!t.contains("CUENV_ACTIVE_PROFILE") && !t.contains("CUENV_SAVED_"), "no v1 state");
    assert_eq!(&encode(Shell::PowerShell, &t)[..3], b"\xEF\xBB\xBF");

    // deactivate: only when this profile is in effect; a scalar goes back only where it still
    // holds the profile's value (a user's edit is kept).
    let d = render_deactivate(Shell::PowerShell, &a);
    has_line(&d, "if ([Environment]::GetEnvironmentVariable('CUENV_SHIM_PROFILE', 'Process') -ceq 'torch2') {");
    has_line(&d, r"if ([Environment]::GetEnvironmentVariable('CUDA_HOME', 'Process') -ceq 'D:\模型\CUDA\v12.6') {");
    has_line(&d, "$__cuenv_v = [Environment]::GetEnvironmentVariable('CUENV_SHIM_SAVED_CUDA_HOME', 'Process')");
    has_line(&d, "} elseif ($null -ne [Environment]::GetEnvironmentVariable('CUENV_SHIM_UNSET_CUDA_HOME', 'Process')) {");
    has_line(&d, "[Environment]::SetEnvironmentVariable('CUENV_SHIM_SAVED_CUDA_HOME', $null, 'Process')");
    has_line(&d, "$__cuenv_i = $__cuenv_v.IndexOf($__cuenv_s + $__cuenv_b + $__cuenv_s, [StringComparison]::Ordinal)");
    has_line(&d, "[Environment]::SetEnvironmentVariable('CUENV_SHIM_PROFILE', $null, 'Process')");

    // env --setup: the SETUP layer's own state, its block after the conda env's `bin` (the end
    // of the slice conda removes), else first.
    let mut s = win_activation();
    s.layer = Layer::Setup;
    let t = render_activate(Shell::PowerShell, &s);
    has_line(&t, "[Environment]::SetEnvironmentVariable('CUENV_SETUP_ADDED_PATH', $__cuenv_b, 'Process')");
    has_line(&t, r"$__cuenv_c += '\bin'");
    has_line(&t, "$__cuenv_l.Insert($__cuenv_i, $__cuenv_b)");
    assert!(!t.contains("CUENV_SHIM_"), "{t}");
    assert!(!render_activate(Shell::PowerShell, &win_activation()).contains(r"$__cuenv_c += '\bin'"));
    assert!(!render_deactivate(Shell::PowerShell, &s).contains("CUENV_SHIM_"));
}

#[test]
fn cmd_activate_lines_dx_off_and_on() {
    let t = render_activate(Shell::Cmd, &win_activation());
    assert!(t.contains("\r\n") && !t.replace("\r\n", "").contains('\n'), "CRLF only");
    let block = r"C:\Program Files (x86)\cu env &^'$`(a)\Zoë\données\cudnn\bin;D:\模型\CUDA\v12.6\bin";
    // The layer's current block, whatever its profile, is removed by value first, through CALL
    // (carets stood in for by ?~? around it), in both bodies.
    has_line(&t, r#"@if defined CUENV_SHIM_ADDED_PATH set "__CUENV_V=;%PATH%;""#);
    has_line(&t, r#"@if defined CUENV_SHIM_ADDED_PATH set "__CUENV_V=%__CUENV_V:^=?~?%""#);
    has_line(&t, r#"@if defined CUENV_SHIM_ADDED_PATH set "__CUENV_B=%CUENV_SHIM_ADDED_PATH:^=?~?%""#);
    has_line(&t, r#"@if defined CUENV_SHIM_ADDED_PATH set "PATH=%SystemRoot%\System32""#);
    has_line(&t, r#"@if defined CUENV_SHIM_ADDED_PATH call set "__CUENV_V=%%__CUENV_V:;%__CUENV_B%;=;%%""#);
    has_line(&t, r#"@if defined CUENV_SHIM_ADDED_PATH set "PATH=%__CUENV_P%""#);
    has_line(&t, r#"@if defined CUENV_SHIM_ADDED_PATH set "__CUENV_V=%__CUENV_V:?~?=^%""#);
    has_line(&t, r#"@if defined CUENV_SHIM_ADDED_PATH set "PATH=%__CUENV_V:~1,-1%""#);
    // With delayed expansion on, a list holding a '!' is refused first (no change).
    has_line(&t, r#"@if defined PATH set "__CUENV_T=;%PATH:!=?b?%""#);
    has_line(&t, r#"@if "%__CUENV_T%"=="?" goto cuenv_bang"#);
    assert!(t.find("goto cuenv_bang").unwrap() < t.find(":cuenv_dx_on").map(|i| t[i..].find("set \"PATH=").unwrap() + i).unwrap());
    // The block goes after the entry equal to CONDA_PREFIX (a marker first), else first.
    has_line(&t, r#"@if defined __CUENV_C call set "__CUENV_V=%%__CUENV_V:;%__CUENV_B%;=;%__CUENV_B%;?cuenv?;%%""#);
    has_line(&t, r#"@if not "%__CUENV_T%"=="?" set "__CUENV_V=;?cuenv?%__CUENV_V%""#);
    has_line(&t, &format!(r#"@set "__CUENV_V=%__CUENV_V:?cuenv?={block}%""#));
    assert_eq!(t.matches(&format!(r#"@set "__CUENV_V=%__CUENV_V:?cuenv?={block}%""#)).count(), 2);
    has_line(&t, &format!(r#"@set "CUENV_SHIM_ADDED_PATH={block}""#));
    // Scalars: saved once per layer; values quoted for each mode.
    has_line(
        &t,
        r#"@if not defined CUENV_SHIM_SAVED_CUDA_HOME if not defined CUENV_SHIM_UNSET_CUDA_HOME if defined CUDA_HOME set "CUENV_SHIM_SAVED_CUDA_HOME=%CUDA_HOME%""#,
    );
    // (An empty variable inherited by cmd counts as unset.)
    has_line(&t, r#"@if not defined CUENV_SHIM_SAVED_CUDA_HOME set "CUENV_SHIM_UNSET_CUDA_HOME=1""#);
    has_line(&t, r#"@set "CUDA_PATH=D:\模型\CUDA\v12.6""#);
    has_line(&t, r#"@set "CUDNN_PATH=C:\Program Files (x86)\cu env 100%%PATH%%&^!x^!^^'$`(a)\Zoë\données\cudnn""#);
    has_line(&t, r#"@set "CUDNN_PATH=C:\Program Files (x86)\cu env 100%%PATH%%&!x!^'$`(a)\Zoë\données\cudnn""#);
    has_line(&t, r#"@set "CUDNN_HOME=C:\Program Files (x86)\cu env 100%%PATH%%&^!x^!^^'$`(a)\Zoë\données\cudnn""#);
    has_line(&t, r#"@set "CUDNN_HOME=C:\Program Files (x86)\cu env 100%%PATH%%&!x!^'$`(a)\Zoë\données\cudnn""#);
    has_line(&t, r#"@set "CUENV_SHIM_PROFILE=torch2""#);
    assert!(!t.contains("CUENV_ACTIVE_PROFILE") && !t.contains("CUENV_SAVED_"), "no v1 state");
    // No SETLOCAL (changes must reach the caller), no ECHO OFF (the caller's echo state stays).
    for line in t.lines().filter(|l| !l.starts_with("@rem")) {
        let lower = line.to_ascii_lowercase();
        assert!(!lower.contains("setlocal") && !lower.contains("echo off"), "{line}");
    }
    // Every command line is silent; comments hold no % or ! (cmd expands them there too).
    for line in t.lines() {
        assert!(line.starts_with('@') || line.starts_with(':'), "{line}");
        if line.starts_with("@rem") {
            assert!(!line.contains('%') && !line.contains('!'), "{line}");
        }
    }
    // Deactivation: only when this profile is in effect; scalars compared through a variable.
    let d = render_deactivate(Shell::Cmd, &win_activation());
    has_line(&d, r#"@if not "%CUENV_SHIM_PROFILE%"=="torch2" goto cuenv_done"#);
    has_line(&d, r#"@if not "!CUENV_SHIM_PROFILE!"=="torch2" goto cuenv_done"#);
    has_line(&d, r#"@if defined CUENV_SHIM_ADDED_PATH call set "__CUENV_V=%%__CUENV_V:;%__CUENV_B%;=;%%""#);
    has_line(&d, r#"@set "__CUENV_T=C:\Program Files (x86)\cu env 100%%PATH%%&^!x^!^^'$`(a)\Zoë\données\cudnn""#);
    has_line(
        &d,
        r#"@if defined CUDNN_PATH if "%CUDNN_PATH%"=="%__CUENV_T%" if defined CUENV_SHIM_SAVED_CUDNN_PATH set "CUDNN_PATH=%CUENV_SHIM_SAVED_CUDNN_PATH%""#,
    );
    has_line(&d, r#"@if defined CUDNN_PATH if "!CUDNN_PATH!"=="!__CUENV_T!" if defined CUENV_SHIM_UNSET_CUDNN_PATH set "CUDNN_PATH=""#);
    has_line(&d, r#"@set "CUENV_SHIM_SAVED_CUDNN_PATH=""#);
    has_line(
        &d,
        r#"@if defined CUDNN_HOME if "%CUDNN_HOME%"=="%__CUENV_T%" if defined CUENV_SHIM_SAVED_CUDNN_HOME set "CUDNN_HOME=%CUENV_SHIM_SAVED_CUDNN_HOME%""#,
    );
    has_line(&d, r#"@set "CUENV_SHIM_SAVED_CUDNN_HOME=""#);
    has_line(&d, r#"@set "CUENV_SHIM_PROFILE=""#);
    has_line(&t, r#"@if defined __CUENV_C set "__CUENV_B=%CONDA_PREFIX:^=?~?%""#);
    // env --setup: the SETUP layer, after the conda env's `bin` (the end of conda's slice).
    let mut s = win_activation();
    s.layer = Layer::Setup;
    let t = render_activate(Shell::Cmd, &s);
    has_line(&t, &format!(r#"@set "CUENV_SETUP_ADDED_PATH={block}""#));
    has_line(&t, r#"@if defined __CUENV_C set "__CUENV_B=%CONDA_PREFIX:^=?~?%\bin""#);
    assert!(!t.contains("CUENV_SHIM_"), "{t}");
}

#[test]
fn cmd_codepage_switch_only_with_non_ascii_and_around_it() {
    let ascii = render_activate(Shell::Cmd, &ascii_win_activation());
    assert!(ascii.is_ascii());
    assert!(!ascii.contains("chcp"));
    assert!(!render_deactivate(Shell::Cmd, &ascii_win_activation()).contains("chcp"));
    for (t, n) in [(render_activate(Shell::Cmd, &win_activation()), 3), (render_deactivate(Shell::Cmd, &win_activation()), 1)] {
        let lines: Vec<&str> = t.lines().collect();
        let switch = lines.iter().position(|l| l.contains("chcp.com 65001")).expect("switch");
        let first_non_ascii = lines.iter().position(|l| !l.is_ascii()).unwrap();
        let last_non_ascii = lines.iter().rposition(|l| !l.is_ascii()).unwrap();
        assert!(switch < first_non_ascii);
        // After the last non-ASCII line, every exit path restores the code page before exiting.
        let restores: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| l.contains("chcp.com %__CUENV_CP%")).map(|(i, _)| i).collect();
        let exits: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| l.starts_with("@exit /b")).map(|(i, _)| i).collect();
        assert_eq!(restores.len(), n);
        assert_eq!(exits.len(), n);
        for (r, e) in restores.iter().zip(&exits) {
            assert!(last_non_ascii < *r && r < e);
        }
    }
}

/// The part of a line outside its expansions (from the first `%`/`!` to the last).
fn fixed_part(line: &str) -> usize {
    let first = line.find(['%', '!']).unwrap();
    let last = line.rfind(['%', '!']).unwrap();
    line[..first].encode_utf16().count() + line[last + 1..].encode_utf16().count()
}

/// Whether a line's expanded text holds a list value (`PATH`, `LD_LIBRARY_PATH`, the working
/// copy `__CUENV_V`, or the length check's copy).
fn expands_a_list(line: &str) -> bool {
    ["set \"__CUENV_V=", "set \"PATH=%", "set \"PATH=!", "set \"LD_LIBRARY_PATH=%", "set \"LD_LIBRARY_PATH=!", "set \"__CUENV_T=#~%", "set \"__CUENV_T=#~!"]
        .iter()
        .any(|t| line.contains(t))
        && line.contains(['%', '!'])
}

#[test]
fn cmd_line_limit_matches_the_bat() {
    let a = ascii_win_activation();
    let dir = r"C:\cuenv\profiles\tf28\cudnn\bin";
    let max = CMD_LINE_MAX - cmd::FIXED - 11 - dir.len();
    assert!(validate_cmd_line_limit(max, &a).is_ok());
    let err = validate_cmd_line_limit(max + 1, &a).unwrap_err();
    assert!(err.contains("8191") && err.contains("1 too many"), "{err}");
    // The .bat refuses at the same length: it copies at most max+1 characters and looks 2
    // characters from the end, in both bodies.
    let t = render_activate(Shell::Cmd, &a);
    has_line(&t, &format!(r#"@if defined PATH set "__CUENV_T=#~%PATH:~0,{}%""#, max + 1));
    has_line(&t, &format!(r#"@set "__CUENV_T=%__CUENV_T:~-{},2%""#, max + 2));
    assert_eq!(t.matches(&format!(r#"@if defined PATH set "__CUENV_T=#~%PATH:~0,{}%""#, max + 1)).count(), 2);
    // The check comes before any change.
    assert!(t.find("goto cuenv_refused").unwrap() < t.find("set \"PATH=").unwrap());
    // Every line that expands a list value keeps at most cmd::FIXED characters of its own, so
    // with a value of at most max + block + 11 characters it fits cmd's line (either layer).
    let mut longest = 0;
    for layer in [Layer::Shim, Layer::Setup] {
        for b in [ascii_win_activation(), win_activation()] {
            let b = Activation { layer, ..b };
            for text in [render_activate(Shell::Cmd, &b), render_deactivate(Shell::Cmd, &b)] {
                for line in text.lines().filter(|l| !l.starts_with("@rem") && expands_a_list(l)) {
                    let f = fixed_part(line);
                    assert!(f <= cmd::FIXED, "{f} > {}: {line}", cmd::FIXED);
                    longest = longest.max(f);
                }
            }
        }
    }
    assert!(cmd::FIXED - longest < 8, "FIXED is {} but the longest fixed part is {longest}", cmd::FIXED);
    // Non-ASCII counts in UTF-16 units, and no prepend means no limit.
    let b = win_activation();
    assert!(validate_cmd_line_limit(100_000, &Activation { path_prepend: vec![], ..b.clone() }).is_ok());
    let units = b.path_prepend.iter().map(|p| shim_path(p)).collect::<Vec<_>>().join(";").encode_utf16().count();
    let max_b = CMD_LINE_MAX - cmd::FIXED - 11 - units;
    assert!(validate_cmd_line_limit(max_b, &b).is_ok() && validate_cmd_line_limit(max_b + 1, &b).is_err());
}

// ---- snapshots -------------------------------------------------------------------------------

/// Compares `text`, the shim `name` rendered for `shell`, with its insta snapshot
/// (`src/shim/snapshots/cuenv__shim__tests__<name>.snap`, stored with LF line ends), then
/// checks the bytes insta's comparison leaves out (it ignores trailing whitespace and CRLF
/// versus LF): the shell's line end on every line (CRLF for cmd and PowerShell, LF
/// otherwise) and exactly one after the last line. Together that pins the file byte for byte.
fn snapshot(shell: Shell, name: &str, text: &str) {
    let lf = text.replace("\r\n", "\n");
    insta::with_settings!({ omit_expression => true }, { insta::assert_snapshot!(name, lf) });
    let eol = if matches!(shell, Shell::Cmd | Shell::PowerShell) { "\r\n" } else { "\n" };
    let exact = format!("{}{eol}", lf.trim_end().replace('\n', eol));
    assert!(text == exact, "{name}: line ends or trailing whitespace differ from one {eol:?} per line:\n{text:?}");
}

#[test]
fn snapshots() {
    for shell in Shell::ALL {
        let a = if matches!(shell, Shell::Cmd | Shell::PowerShell) { win_activation() } else { unix_activation() };
        let ext = shell.extension();
        snapshot(shell, &format!("activate.{ext}"), &render_activate(shell, &a));
        snapshot(shell, &format!("deactivate.{ext}"), &render_deactivate(shell, &a));
    }
    snapshot(Shell::Cmd, "activate-ascii.bat", &render_activate(Shell::Cmd, &ascii_win_activation()));
}

// ---- files -----------------------------------------------------------------------------------

#[test]
fn write_and_remove_only_touch_our_files() {
    let dir = tempfile::tempdir().unwrap();
    let a = ascii_win_activation();
    let path = dir.path().join(file_name("tf28", Shell::Cmd));
    let text = render_activate(Shell::Cmd, &a);
    assert_eq!(write(&path, Shell::Cmd, &text).unwrap(), WriteOutcome::Created);
    assert_eq!(write(&path, Shell::Cmd, &text).unwrap(), WriteOutcome::Unchanged);
    let text2 = render_activate(Shell::Cmd, &win_activation());
    assert_eq!(write(&path, Shell::Cmd, &text2).unwrap(), WriteOutcome::Updated);
    assert_eq!(std::fs::read(&path).unwrap(), text2.as_bytes());
    assert!(remove(&path).unwrap());
    assert!(!remove(&path).unwrap());

    let foreign = dir.path().join("cuenv-mine.bat");
    std::fs::write(&foreign, "@echo off\r\nset CUDA_PATH=C:\\mine\r\n").unwrap();
    let err = write(&foreign, Shell::Cmd, &text).unwrap_err();
    assert!(matches!(err, Error::Foreign { .. }), "{err}");
    assert!(crate::error::Diagnose::hint(&err).unwrap().contains("cuenv-shim v2"));
    assert!(matches!(remove(&foreign), Err(Error::Foreign { .. })));
    assert_eq!(std::fs::read_to_string(&foreign).unwrap(), "@echo off\r\nset CUDA_PATH=C:\\mine\r\n");

    // PowerShell files carry a BOM, and are still recognised as ours.
    let ps = dir.path().join(file_name("tf28", Shell::PowerShell));
    write(&ps, Shell::PowerShell, &render_activate(Shell::PowerShell, &a)).unwrap();
    assert!(std::fs::read(&ps).unwrap().starts_with(b"\xEF\xBB\xBF# cuenv-shim v"));
    assert!(remove(&ps).unwrap());
}

/// Only a drive or a share loses its `\\?\`: other verbatim forms have no shorter spelling
/// and stay whole (a bare cut once left the relative `Volume{...}\x` in the shim).
#[test]
fn other_verbatim_forms_are_kept_whole() {
    assert_eq!(shim_path(Path::new(r"\\?\Volume{abc}\x")), r"\\?\Volume{abc}\x");
    assert_eq!(shim_path(Path::new(r"\\?\UNC\srv\share\x")), r"\\srv\share\x");
}

#[test]
fn hooks_render_for_their_shells_with_the_paths_quoted() {
    let exe = Path::new("/opt/it's cuenv/cuenv");
    let home = Path::new("/home/zoë/.local/share/cuenv");
    let bash = render_hook("bash", exe, home).unwrap();
    has_line(&bash, r#"eval "$('/opt/it'\''s cuenv/cuenv' --home '/home/zoë/.local/share/cuenv' env --hook-apply --shell bash)""#);
    assert!(render_hook("zsh", exe, home).unwrap().contains("add-zsh-hook chpwd __cuenv_hook"));
    assert!(render_hook("fish", exe, home).unwrap().contains("function __cuenv_hook --on-variable PWD"));
    let ps = render_hook("powershell", Path::new(r"C:\Program Files (x86)\cuenv\cuenv.exe"), Path::new(r"C:\Users\Zoë\AppData\Local\cuenv")).unwrap();
    has_line(
        &ps,
        r#"& 'C:\Program Files (x86)\cuenv\cuenv.exe' --home 'C:\Users\Zoë\AppData\Local\cuenv' env --hook-apply --shell powershell | Out-String | Invoke-Expression"#,
    );
    assert!(ps.contains("function global:prompt { __cuenv_hook; & $global:__cuenv_prompt }"));
    assert!(render_hook("tcsh", exe, home).is_none());
}
