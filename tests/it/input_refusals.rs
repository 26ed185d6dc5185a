//! Inputs that look acceptable but must be refused, each with an error that names the place
//! (file:line:col, a variable, a member) and a hint: URLs cuenv will not fetch from, a URL
//! source without its digest, homes whose path the loader's lists cannot hold, archives whose
//! members clash or lie about their size, deep nesting, and errors too large to print whole.

use std::fs;

use crate::support::*;

/// `cuenv plan lab.toml` on `text` (offline): exit code and stderr.
fn plan(ctx: &TestContext, text: &str, env: &[(&str, &str)]) -> (i32, String) {
    let p = ctx.path("lab.toml");
    fs::write(&p, text).unwrap();
    let mut c = ctx.cmd();
    c.current_dir(&ctx.work).args(["plan", "lab.toml"]).env("CUENV_OFFLINE", "1").env_remove("CUENV_ALLOW_HTTP");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

const SHA: &str = "d8a23705e3884b137b7e05449fb2b61bfa524e7cfc3fda80743d633f423c6ce4";

#[test]
fn a_url_cuenv_will_not_fetch_from_is_refused_at_its_line() {
    let ctx = TestContext::new();
    let profile = "[profiles.a]\ncuda = \"12\"\ncudnn = \"9\"\n";
    for (settings, at, why) in [
        ("pypi-index = \"javascript:alert(1)\"", "lab.toml:2:14", "is not an http(s) URL"),
        ("nvidia-mirror = \"ftp://mirror.example/redist/\"", "lab.toml:2:17", "ftp:// is not a supported scheme"),
        ("nvidia-mirror = \"http://mirror.example/redist/\"", "lab.toml:2:17", "plain http:// to mirror.example is not allowed"),
    ] {
        let (code, err) = plan(&ctx, &format!("[settings]\n{settings}\n{profile}"), &[]);
        assert_eq!(code, 2, "{settings}: {err}");
        assert!(err.contains(at) && err.contains(why), "{settings}: {err}");
        assert!(err.contains("hint: use an https:// URL"), "{settings}: {err}");
    }
    // A cuDNN `from` URL: the same rule, and its digest.
    let from = |url: &str, sha: bool| {
        let sha = if sha { format!(", sha256 = \"{SHA}\"") } else { String::new() };
        format!("[profiles.a]\ncuda = \"12\"\ncudnn = {{ version = \"9.5.0.50\", from = \"{url}\"{sha} }}\n")
    };
    let (code, err) = plan(&ctx, &from("ftp://h/cudnn.tar.xz", true), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("lab.toml:3:40") && err.contains("ftp:// is not a supported scheme"), "{err}");
    let (code, err) = plan(&ctx, &from("https://h.example/cudnn.tar.xz", false), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("lab.toml:3:40") && err.contains("has no `sha256`"), "{err}");
    assert!(err.contains("hint: add `sha256 = ") && err.contains("sha256sum FILE"), "{err}");
    // Plain http is fine to this machine, and to a host CUENV_ALLOW_HTTP names: past the
    // parser, plan meets the offline switch instead.
    for (url, env) in [("http://127.0.0.1:1/cudnn.tar.xz", vec![]), ("http://mirror.lab/cudnn.tar.xz", vec![("CUENV_ALLOW_HTTP", "other, mirror.lab")])] {
        let (_, err) = plan(&ctx, &from(url, true), &env);
        assert!(!err.contains("lab.toml:3:40"), "{url}: {err}");
    }
    // The variables and flags: refused before any command runs, naming the variable.
    let out = ctx.cmd().arg("status").env("CUENV_PYPI_INDEX", "ftp://x/").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("CUENV_PYPI_INDEX = ftp://x/: ftp:// is not a supported scheme"), "{err}");
    let out = ctx
        .cmd()
        .args(["store", "fetch", "cudnn@9.5.0.50", "--cuda", "12", "--nvidia-mirror", "http://m.example/"])
        .env_remove("CUENV_NVIDIA_MIRROR")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--nvidia-mirror = http://m.example/: plain http:// to m.example is not allowed"), "{err}");
}

/// A home whose path the loader's search lists cannot hold is refused when it is opened,
/// naming the character, before anything is written.
#[test]
fn a_home_whose_path_a_library_list_cannot_hold_is_refused() {
    let ctx = TestContext::new();
    let mut cases = vec![("a;b", "holds `;`"), ("a\nb", "holds a newline")];
    if cfg!(unix) {
        cases.push(("a:b", "holds `:`"));
    }
    for (name, what) in cases {
        let home = ctx.path(name).join("home");
        for args in [&["status"][..], &["store", "list"], &["gc"]] {
            let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_cuenv")).env_remove("CUENV_HOME").arg("--home").arg(&home).args(args).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{name:?} {args:?}: {err}");
            assert!(err.contains(what) && err.contains("hint: move the home") && err.contains("CUENV_HOME"), "{name:?}: {err}");
            assert!(!err.contains('\n') || err.lines().count() >= 2, "{err}");
            assert!(!home.exists(), "{name:?}: {} was created", home.display());
        }
        let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_cuenv")).env("CUENV_HOME", &home).arg("status").output().unwrap();
        assert_eq!(out.status.code(), Some(2), "CUENV_HOME={name:?}");
    }
}

/// `store add ARCHIVE` (its JSON not asked for): exit code and stderr.
fn add(ctx: &TestContext, path: &std::path::Path) -> (i32, String) {
    let out = ctx.cmd().args(["store", "add"]).arg(path).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Two zip members with one name: the error names it (the zip crate keeps only one of
/// them, so the name is read from the central directory).
#[test]
fn a_zip_member_listed_twice_is_named() {
    let ctx = TestContext::new();
    let member = format!("{}/bin/cudnn_ops64_9.dll", Release::V9.windows_archive_stem());
    let path = hostile::zip_with_member(&ctx.work, &member);
    let (code, err) = add(&ctx, &path);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("member `{member}` refused: two members have this name")), "{err}");
    ctx.assert_store_unchanged();
}

/// A tar size field in base-256 stating 2^80 bytes: refused at its header with the size it
/// states, not read as 0 (which made the member's bytes parse as the next header).
#[test]
fn a_tar_member_of_2_pow_80_bytes_is_refused_with_its_size() {
    let ctx = TestContext::new();
    let (stem, t) = hostile::linux_archive(&Release::V9);
    let path = ctx.path(&format!("{stem}.tar.xz"));
    let member = format!("{stem}/lib/huge.bin");
    let f = fs::File::create(&path).unwrap();
    let enc = t.write_tar_with(xz2::write::XzEncoder::new(f, 1), |b| {
        let mut h = tar::Header::new_ustar();
        set_tar_name(&mut h, &member);
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.set_size(0);
        // Base-256: 0x80, then 2^80 big-endian in the 11 bytes that follow.
        let mut size = [0u8; 12];
        size[0] = 0x80;
        size[1] = 1;
        h.as_old_mut().size = size;
        h.set_cksum();
        b.append(&h, &b"not a header, only the member's first bytes: \x1b[31m"[..]).unwrap();
    });
    enc.finish().unwrap();
    let (code, err) = add(&ctx, &path);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("member `{member}` refused: its header declares a size of 1208925819614629174706176 bytes")), "{err}");
    assert!(!err.contains('\u{1b}'), "{err}");
    ctx.assert_store_unchanged();
}

/// A dotted key of thousands of parts (toml_edit's "recursion limit", which has no span)
/// points at that key's line, not at 1:1, in lab.toml and in lab.lock.
#[test]
fn a_too_deep_key_points_at_its_line() {
    let ctx = TestContext::new();
    let key = vec!["a"; 3000].join(".");
    let (code, err) = plan(&ctx, &format!("[profiles.p]\ncuda = \"12\"\ncudnn = \"9\"\n\n[x.{key}]\n"), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("error: lab.toml:5:2: invalid TOML: recursion limit"), "{}", &err[..err.len().min(300)]);
    let (code, err) = plan(&ctx, &format!("[profiles.p]\ncuda = \"12\"\ncudnn = \"9\"\n\nx.{key} = 1\n"), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("error: lab.toml:5:1: invalid TOML: recursion limit"), "{}", &err[..err.len().min(300)]);
    let lab = ctx.path("lab.toml");
    fs::write(&lab, "[profiles.p]\ncuda = \"12\"\ncudnn = \"9\"\n").unwrap();
    fs::write(ctx.path("lab.lock"), format!("version = 1\n\nx.{key} = 1\n")).unwrap();
    let out = ctx.cmd().current_dir(&ctx.work).args(["lock", "lab.toml"]).env("CUENV_OFFLINE", "1").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: lab.lock:3:1: invalid TOML in the lock file: recursion limit"), "{}", &err[..err.len().min(300)]);
}

/// An error is bounded: a 9 MB value is shown by its start (each line cut at 16 KiB, saying
/// how much it left out), and thousands of errors stop at 64 KiB, saying how many lines
/// were left out; the hint is still there.
#[test]
fn error_output_is_capped_and_says_what_it_left_out() {
    let ctx = TestContext::new();
    let (code, err) = plan(&ctx, &format!("[profiles.a]\ncuda = \"12\"\ncudnn = \"{}\"\n", "x".repeat(9_000_000)), &[]);
    assert_eq!(code, 2);
    assert!(err.len() < 72 * 1024, "{} bytes of errors", err.len());
    assert!(err.starts_with("error: lab.toml:3:9: `cudnn = \"xxx"), "{}", &err[..200]);
    assert!(err.contains(" more bytes of this line left out)"), "{}", &err[..200]);
    assert!(err.lines().any(|l| l.starts_with("hint: ")), "no hint");
    let many: String = (0..5000).map(|i| format!("[profiles.p{i}]\ncuda = \"12\"\ncudnn = \"9.x\"\n")).collect();
    let (code, err) = plan(&ctx, &many, &[]);
    assert_eq!(code, 2);
    assert!(err.len() < 72 * 1024, "{} bytes of errors", err.len());
    let last = err.lines().rfind(|l| l.starts_with("... (")).unwrap_or_else(|| panic!("no cut: {} bytes", err.len()));
    assert!(last.ends_with("bytes, left out)"), "{last}");
}

/// What README says of a stdout closed before cuenv starts: the Rust runtime reopens fd 1
/// on /dev/null before `main`, so the command runs and exits with its own code.
#[cfg(unix)]
#[test]
fn a_stdout_closed_before_start_is_not_seen() {
    let ctx = TestContext::new();
    let script = "\"$0\" --home \"$1\" status >&-; echo \"rc=$?\"";
    let out = std::process::Command::new("sh").args(["-c", script, env!("CARGO_BIN_EXE_cuenv")]).arg(&ctx.home).env_remove("CUENV_HOME").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "rc=0", "{}", String::from_utf8_lossy(&out.stderr));
}
