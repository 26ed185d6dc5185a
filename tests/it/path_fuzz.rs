//! Every command that takes a path, run with hostile paths: bytes that are not UTF-8, a
//! newline, `;`, `%`, `&`, spaces, a 300-byte component, a 5000-byte path, a file where a
//! folder is expected, a missing parent, `..`. Each may be refused (exit 1 or 2, naming the
//! path) or done; none may panic (exit 101, "panicked" on stderr).

use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};

use crate::support::lab::Lab;

/// A name whose bytes are not UTF-8 (Linux: a lone `\xff`; Windows: an unpaired surrogate).
fn not_utf8(prefix: &str) -> OsString {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        let mut b = prefix.as_bytes().to_vec();
        b.extend_from_slice(b"\xff\xfe-x");
        OsString::from_vec(b)
    }
    #[cfg(windows)]
    {
        use std::os::windows::ffi::OsStringExt;
        let mut w: Vec<u16> = prefix.encode_utf16().collect();
        w.extend([0xD800, u16::from(b'x')]);
        OsString::from_wide(&w)
    }
}

/// The hostile paths under `work`: (what it is, the path). `afile` is a regular file.
fn hostile(work: &Path) -> Vec<(&'static str, PathBuf)> {
    let afile = work.join("afile");
    fs::write(&afile, "not a folder").unwrap();
    let mut v: Vec<(&'static str, PathBuf)> = vec![
        ("not UTF-8", work.join(not_utf8("bad"))),
        ("not UTF-8 parent", work.join(not_utf8("bad")).join("inner")),
        ("semicolon", work.join("a;b")),
        ("percent", work.join("a%PATH%b")),
        ("ampersand", work.join("a & b")),
        ("spaces", work.join(" spaced  out ")),
        ("long component", work.join("x".repeat(300))),
        ("long path", (0..50).fold(work.to_path_buf(), |p, i| p.join(format!("{i:02}{}", "y".repeat(98))))),
        ("file as folder", afile.join("sub")),
        ("a file", afile),
        ("missing parent", work.join("missing").join("parent").join("x")),
        ("dot dot", work.join("..").join(work.file_name().unwrap()).join("dd")),
        ("empty", PathBuf::new()),
    ];
    if cfg!(unix) {
        v.push(("newline", work.join("a\nb")));
        v.push(("escape", work.join("a\u{1b}[31mred")));
        v.push(("colon", work.join("a:b")));
    }
    v
}

/// Runs cuenv with `args` and asserts it did not panic; returns the exit code.
fn no_panic(lab: &Lab, what: &str, args: &[&OsStr]) -> i32 {
    let (code, problem) = run(lab, what, args);
    assert!(problem.is_none(), "{}", problem.unwrap_or_default());
    code
}

/// Runs cuenv with `args`: its exit code, and what went wrong when it panicked or was killed.
fn run(lab: &Lab, what: &str, args: &[&OsStr]) -> (i32, Option<String>) {
    let out = lab
        .ctx
        .cmd()
        .current_dir(&lab.ctx.work)
        .args(args)
        .env("CUENV_OFFLINE", "1")
        .env("JUPYTER_DATA_DIR", lab.ctx.path("jupyter"))
        .env_remove("CUENV_FIND_LINKS")
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    let err = String::from_utf8_lossy(&out.stderr);
    let problem = if code == 101 || err.contains("panicked") {
        Some(format!("cuenv {args:?} ({what}) panicked (exit {code}):\n{err}"))
    } else if code < 0 {
        Some(format!("cuenv {args:?} ({what}) was killed: {:?}\n{err}", out.status))
    } else {
        None
    };
    (code, problem)
}

#[test]
fn no_command_panics_on_a_hostile_path() {
    let lab = Lab::new();
    let three = lab.three();
    lab.ok(&["apply", "--no-check", three.to_str().unwrap()]);
    let python = lab.ctx.path("python");
    fs::write(&python, "#!/bin/sh\nexit 3\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&python, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let fz = lab.ctx.path("fz");
    fs::create_dir_all(&fz).unwrap();
    let lab_text = fs::read(&three).unwrap();
    let s = |x: &'static str| OsStr::new(x);
    let mut runs = 0;
    let mut problems = Vec::new();
    for (what, p) in hostile(&fz) {
        // The path as a missing input, and (where it can be made) as a real lab file.
        let mut files = vec![p.clone()];
        // (Windows refuses some of these names only when a file is made inside.)
        // Only absolute paths are made here: the empty one would name this process's folder
        // (the repository); cuenv runs in the lab's work folder, where relative ones land.
        if p.is_absolute() && fs::create_dir_all(&p).is_ok() && fs::write(p.join("lab.toml"), &lab_text).is_ok() {
            files.push(p.join("lab.toml"));
        }
        for f in &files {
            let f = f.as_os_str();
            for cmd in [vec![s("plan"), f], vec![s("apply"), s("--no-check"), f], vec![s("lock"), f], vec![s("store"), s("add"), f]] {
                problems.extend(run(&lab, what, &cmd).1);
                runs += 1;
            }
        }
        let d = p.as_os_str();
        let out = p.join("out");
        let home = p.join("home");
        let cmds: Vec<Vec<&OsStr>> = vec![
            vec![s("export"), s("legacy"), s("--format"), s("dotenv"), s("--out"), d],
            vec![s("export"), s("--all"), s("--format"), s("json"), s("--out"), out.as_os_str()],
            vec![s("kernel"), s("install"), s("legacy"), s("--python"), python.as_os_str(), s("--prefix"), d],
            vec![s("kernel"), s("install"), s("legacy"), s("--python"), d],
            vec![s("store"), s("fetch"), s("cudnn@9.5.0.50"), s("--cuda"), s("12"), s("--find-links"), d],
            vec![s("--home"), home.as_os_str(), s("status")],
            vec![s("--home"), home.as_os_str(), s("apply"), s("--no-check"), three.as_os_str()],
        ];
        for cmd in &cmds {
            problems.extend(run(&lab, what, cmd).1);
            runs += 1;
        }
    }
    assert!(problems.is_empty(), "{} of {runs} runs failed:\n{}", problems.len(), problems.join("\n"));
    // The home is still whole after all of it.
    lab.ok(&["status"]);
    assert!(runs > 150, "{runs} runs");
}

/// A folder whose name is not UTF-8 cannot be recorded in `exports.toml` (TOML text is
/// UTF-8), so `export --out` and `kernel install --prefix` refuse it before writing anything,
/// naming the folder.
#[test]
fn a_folder_that_is_not_utf8_is_refused_before_anything_is_written() {
    let lab = Lab::new();
    lab.ok(&["apply", "--no-check", lab.three().to_str().unwrap()]);
    let python = lab.ctx.path("python");
    fs::write(&python, "").unwrap();
    let record = lab.ctx.home.join("exports.toml");
    for sub in ["export", "kernel"] {
        let dir = lab.ctx.path("fz").join(not_utf8(sub));
        let args: Vec<&OsStr> = if sub == "export" {
            ["export", "legacy", "--format", "dotenv", "--out"].iter().map(OsStr::new).chain([dir.as_os_str()]).collect()
        } else {
            ["kernel", "install", "legacy", "--python"].iter().map(OsStr::new).chain([python.as_os_str(), OsStr::new("--prefix"), dir.as_os_str()]).collect()
        };
        let code = no_panic(&lab, sub, &args);
        let out = lab.ctx.cmd().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code, 2, "{sub}: {err}");
        // The bytes escaped: `\xff` on Unix; an unpaired surrogate (`\xed\xa0\x80`) on Windows.
        assert!(err.contains("is not UTF-8") && err.contains(if cfg!(windows) { "\\xed\\xa0\\x80" } else { "\\xff" }), "{sub}: {err}");
        assert!(err.contains("hint:"), "{sub}: {err}");
        assert!(!dir.exists(), "{sub}: {} was written", dir.display());
        assert!(!record.exists() || !fs::read_to_string(&record).unwrap().contains("fz"), "{sub}");
    }
}
