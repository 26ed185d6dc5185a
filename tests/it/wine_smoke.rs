//! Smoke test for the Windows test setup: on Windows (real, or cross-built and run
//! under Wine by scripts/wine-runner.sh) it checks Windows-specific behaviour; on
//! other platforms it checks the Unix equivalent, so the file runs everywhere.
//!
//! The child-process tests matter because generated `.bat` shims are executed with
//! `cmd /c call` (and by `Command::new("x.bat")`, which std turns into `cmd.exe /c`):
//! they show that works, including a path containing spaces and the exit code.
//! Under Wine, `cmd_c_call_bat_exit_code` is skipped by scripts/test-windows.sh
//! (Wine 8's `call` loses the batch's exit code; see docs/windows.md).

use std::path::Path;
use std::process::Command;

fn stdout_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n")
}

#[cfg(windows)]
#[test]
fn windows_environment_and_paths() {
    let local = std::env::var("LOCALAPPDATA").expect("LOCALAPPDATA is set on Windows");
    assert!(Path::new(&local).is_absolute(), "LOCALAPPDATA={local}");
    assert!(Path::new(r"C:\x").is_absolute());
    // Rooted but drive-relative: not absolute on Windows.
    assert!(!Path::new(r"\x").is_absolute());
    assert!(!Path::new("/x").is_absolute());
    assert_eq!(std::path::MAIN_SEPARATOR, '\\');
}

#[cfg(not(windows))]
#[test]
fn unix_environment_and_paths() {
    let home = std::env::var("HOME").expect("HOME is set on Unix");
    assert!(Path::new(&home).is_absolute(), "HOME={home}");
    assert!(Path::new("/x").is_absolute());
    assert!(!Path::new(r"C:\x").is_absolute());
    assert_eq!(std::path::MAIN_SEPARATOR, '/');
}

#[cfg(windows)]
#[test]
fn cmd_c_echo() {
    let out = Command::new("cmd").args(["/c", "echo hi"]).output().expect("spawn cmd");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout_of(&out).trim(), "hi");
}

#[cfg(not(windows))]
#[test]
fn sh_c_echo() {
    let out = Command::new("sh").args(["-c", "echo hi"]).output().expect("spawn sh");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stdout_of(&out).trim(), "hi");
}

/// A script in a folder whose name contains spaces, which prints its first
/// argument and exits with status 7.
fn spaced_script(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let sub = dir.path().join("dir with spaces");
    std::fs::create_dir(&sub).unwrap();
    if cfg!(windows) {
        let bat = sub.join("some shim.bat");
        std::fs::write(&bat, "@echo off\r\necho ran %~1\r\nexit /b 7\r\n").unwrap();
        bat
    } else {
        let sh = sub.join("some shim.sh");
        std::fs::write(&sh, "echo ran \"$1\"\nexit 7\n").unwrap();
        sh
    }
}

fn spaced_tempdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("cuenv wine smoke ").tempdir().unwrap()
}

#[cfg(windows)]
fn cmd_c_call(bat: &Path) -> std::process::Output {
    Command::new("cmd").arg("/c").arg("call").arg(bat).arg("an arg").output().expect("spawn cmd")
}

#[cfg(windows)]
#[test]
fn cmd_c_call_bat_in_path_with_spaces() {
    let dir = spaced_tempdir();
    let bat = spaced_script(&dir);
    let out = cmd_c_call(&bat);
    assert_eq!(stdout_of(&out).trim(), "ran an arg", "{out:?}");
}

/// `exit /b 7` in a batch run with `call` must come back as cmd's exit status.
/// Wine 8's cmd loses it (the status is 1), so scripts/test-windows.sh skips this
/// test under Wine; only real Windows (the CI windows job) checks it.
#[cfg(windows)]
#[test]
fn cmd_c_call_bat_exit_code() {
    let dir = spaced_tempdir();
    let bat = spaced_script(&dir);
    let out = cmd_c_call(&bat);
    assert_eq!(out.status.code(), Some(7), "{out:?}");
}

#[cfg(windows)]
#[test]
fn bat_spawned_directly_in_path_with_spaces() {
    // std runs a .bat through `cmd.exe /e:ON /v:OFF /d /c "..."` with its own quoting.
    let dir = spaced_tempdir();
    let bat = spaced_script(&dir);
    let out = Command::new(&bat).arg("an arg").output().expect("spawn .bat");
    assert_eq!(stdout_of(&out).trim(), "ran an arg", "{out:?}");
    assert_eq!(out.status.code(), Some(7), "{out:?}");
}

#[cfg(not(windows))]
#[test]
fn sh_script_in_path_with_spaces() {
    let dir = spaced_tempdir();
    let script = spaced_script(&dir);
    let out = Command::new("sh").arg(&script).arg("an arg").output().expect("spawn sh");
    assert_eq!(stdout_of(&out).trim(), "ran an arg", "{out:?}");
    assert_eq!(out.status.code(), Some(7), "{out:?}");
}
