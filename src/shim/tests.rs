//! Rendering tests: quoting, key lines per shell with hostile values, full-text snapshots
//! (insta snapshots in `src/shim/snapshots/`, reviewed with `cargo insta review`), the cmd line limit,
//! and the file helpers. The scripts are executed by `tests/it/shim_posix.rs` (sh, dash, bash,
//! zsh, fish) and `tests/it/shim_cmd.rs` (cmd, on Windows / under Wine).

use super::*;

/// Every character the issue lists as hostile, in a Windows path.
pub(crate) const WIN_HOSTILE: &str = r"C:\Program Files (x86)\cu env 100%PATH%&!x!^'$`(a)\Zoë\données";

fn win_activation() -> Activation {
    Activation {
        profile: "torch2".into(),
        layer: Default::default(),
        path_prepend: vec![PathBuf::from(format!(r"{WIN_HOSTILE}\cudnn\bin")), PathBuf::from(r"D:\模型\CUDA\v12.6\bin")],
        ld_library_path_prepend: vec![],
        set: vec![
            ("CUDA_PATH".into(), PathBuf::from(r"D:\模型\CUDA\v12.6")),
            ("CUDA_HOME".into(), PathBuf::from(r"D:\模型\CUDA\v12.6")),
            ("CUDNN_PATH".into(), PathBuf::from(format!(r"{WIN_HOSTILE}\cudnn"))),
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
    assert!(render_activate(Shell::Cmd, &a).contains(r#"set "PATH=C:\cuenv\bin;%PATH%""#));
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
    let d = render_deactivate(Shell::Posix, &unix_activation());
    has_line(&d, r#"if [ "${CUENV_SHIM_PROFILE-}" = 'torch2' ]; then"#);
    has_line(&d, r#"if [ -n "${CUDA_HOME+x}" ] && [ "$CUDA_HOME" = '/opt/模型/cuda' ]; then"#);
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
    has_line(&t, "if ($env:CUENV_ACTIVE_PROFILE -cne 'torch2') {");
    has_line(
        &t,
        r"$__cuenv_p = @('C:\Program Files (x86)\cu env 100%PATH%&!x!^''$`(a)\Zoë\données\cudnn\bin', 'D:\模型\CUDA\v12.6\bin') -join [IO.Path]::PathSeparator",
    );
    has_line(&t, r"[Environment]::SetEnvironmentVariable('CUDA_PATH', 'D:\模型\CUDA\v12.6', 'Process')");
    has_line(&t, "[Environment]::SetEnvironmentVariable('TEST_Q', 'C:\\it''s \u{2019}\u{2019}q\u{2019}\u{2019}', 'Process')");
    // PowerShell never sees a double-quoted value (where $ and ` would expand).
    for line in t.lines().filter(|l| l.contains("模型") || l.contains("données")) {
        assert!(!line.contains("\"C:") && !line.contains("\"D:"), "{line}");
    }
    assert_eq!(&encode(Shell::PowerShell, &t)[..3], b"\xEF\xBB\xBF");
}

#[test]
fn cmd_activate_lines_dx_off_and_on() {
    let t = render_activate(Shell::Cmd, &win_activation());
    assert!(t.contains("\r\n") && !t.replace("\r\n", "").contains('\n'), "CRLF only");
    // Delayed expansion off: % doubled, ^ and ! literal.
    has_line(&t, r#"@if defined PATH set "PATH=C:\Program Files (x86)\cu env 100%%PATH%%&!x!^'$`(a)\Zoë\données\cudnn\bin;D:\模型\CUDA\v12.6\bin;%PATH%""#);
    has_line(&t, r#"@if defined PATH set "CUENV_SAVED_PATH=%PATH%""#);
    has_line(&t, r#"@if defined CUENV_SAVED_PATH set "PATH=%CUENV_SAVED_PATH%""#);
    // Delayed expansion on: values read with !NAME!, and ^ ! escaped on lines holding a !.
    has_line(&t, r#"@set "CUENV_SHIM_T=C:\Program Files (x86)\cu env 100%%PATH%%&^!x^!^^'$`(a)\Zoë\données\cudnn\bin;D:\模型\CUDA\v12.6\bin""#);
    has_line(&t, r#"@if defined PATH set "PATH=!CUENV_SHIM_T!;!PATH!""#);
    has_line(&t, r#"@if defined PATH set "CUENV_SAVED_PATH=!PATH!""#);
    has_line(&t, r#"@set "CUDA_PATH=D:\模型\CUDA\v12.6""#);
    has_line(&t, r#"@set "CUDNN_PATH=C:\Program Files (x86)\cu env 100%%PATH%%&^!x^!^^'$`(a)\Zoë\données\cudnn""#);
    has_line(&t, r#"@set "CUDNN_PATH=C:\Program Files (x86)\cu env 100%%PATH%%&!x!^'$`(a)\Zoë\données\cudnn""#);
    has_line(&t, r#"@if "%CUENV_ACTIVE_PROFILE%"=="torch2" goto cuenv_done"#);
    has_line(&t, r#"@set "CUENV_ACTIVE_PROFILE=torch2""#);
    // No SETLOCAL (changes must reach the caller), no ECHO OFF (the caller's echo state stays).
    for line in t.lines().filter(|l| !l.starts_with("@rem")) {
        let lower = line.to_ascii_lowercase();
        assert!(!lower.contains("setlocal") && !lower.contains("echo off"), "{line}");
    }
    // Every command line is silent.
    for line in t.lines() {
        assert!(line.starts_with('@') || line.starts_with(':'), "{line}");
    }
}

#[test]
fn cmd_codepage_switch_only_with_non_ascii_and_around_it() {
    let ascii = render_activate(Shell::Cmd, &ascii_win_activation());
    assert!(ascii.is_ascii());
    assert!(!ascii.contains("chcp"));
    let t = render_activate(Shell::Cmd, &win_activation());
    let lines: Vec<&str> = t.lines().collect();
    let switch = lines.iter().position(|l| l.contains("chcp.com 65001")).expect("switch");
    let first_non_ascii = lines.iter().position(|l| !l.is_ascii()).unwrap();
    let last_non_ascii = lines.iter().rposition(|l| !l.is_ascii()).unwrap();
    assert!(switch < first_non_ascii);
    // After the last non-ASCII line, every exit path restores the code page before exiting.
    let restores: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| l.contains("chcp.com %CUENV_SHIM_CP%")).map(|(i, _)| i).collect();
    let exits: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| l.starts_with("@exit /b")).map(|(i, _)| i).collect();
    assert_eq!(restores.len(), 2);
    assert_eq!(exits.len(), 2);
    for (r, e) in restores.iter().zip(&exits) {
        assert!(last_non_ascii < *r && r < e);
    }
    // Deactivation holds no paths: always ASCII, never switches.
    let d = render_deactivate(Shell::Cmd, &win_activation());
    assert!(d.is_ascii() && !d.contains("chcp"));
}

#[test]
fn cmd_line_limit_matches_the_bat() {
    let a = ascii_win_activation();
    let dir = r"C:\cuenv\profiles\tf28\cudnn\bin";
    let max = cmd_max_old_len("PATH", &[dir.to_string()]);
    // The longest line, `@if defined PATH set "PATH=<dir>;<old>"`, is exactly CMD_LINE_MAX.
    let line = format!(r#"@if defined PATH set "PATH={dir};{}""#, "x".repeat(max));
    assert_eq!(line.len(), CMD_LINE_MAX);
    assert!(check_cmd_line_limit(max, &a).is_ok());
    let err = check_cmd_line_limit(max + 1, &a).unwrap_err();
    assert!(err.contains("8191") && err.contains("1 too many"), "{err}");
    // The .bat copies at most max+1 characters and looks 2 characters from the end.
    let t = render_activate(Shell::Cmd, &a);
    has_line(&t, &format!(r#"@if defined PATH set "CUENV_SHIM_T=#~%PATH:~0,{}%""#, max + 1));
    has_line(&t, &format!(r#"@set "CUENV_SHIM_T=%CUENV_SHIM_T:~-{},2%""#, max + 2));
    // That line, with max+1 characters of PATH, fits too.
    let copy = format!(r#"@if defined CUENV_SAVED_PATH set "CUENV_SHIM_T=\#~{}""#, "x".repeat(max + 1));
    assert!(copy.len() <= CMD_LINE_MAX, "{}", copy.len());
    // Non-ASCII counts in UTF-16 units, and no prepend means no limit.
    let b = win_activation();
    assert!(check_cmd_line_limit(100_000, &Activation { path_prepend: vec![], ..b.clone() }).is_ok());
    let dirs: Vec<String> = b.path_prepend.iter().map(|p| shim_path(p)).collect();
    let units = dirs.join(";").encode_utf16().count();
    assert_eq!(cmd_max_old_len("PATH", &dirs), CMD_LINE_MAX - r#"@if defined PATH set "PATH=;""#.len() - units);
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
