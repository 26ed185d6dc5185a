//! `cuenv doctor --for FILE` (src/doctor/imports.rs) and the stub `libcuda` rule
//! (src/doctor/stubs.rs, docs/loader.md I1-I5, D1) against the real loader: on Linux, chains
//! of gcc-built ELF files judged by `ldd` (ld.so's own trace, `LD_TRACE_LOADED_OBJECTS`) and
//! by python3 `ctypes` (what `dlopen` maps); on Windows (under Wine, scripts/test-windows.sh),
//! the mingw-built consumer of tests/it/support/loader_win judged by starting it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `cuenv doctor <args>` with `LD_LIBRARY_PATH` / `PATH` entries `path` first, in a fresh home.
fn doctor(args: &[&std::ffi::OsStr], search: &[&Path]) -> (i32, String) {
    let home = tempfile::tempdir().unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_cuenv"));
    c.env("CUENV_HOME", home.path()).env("CUENV_TOOLKIT_PATHS", "").env("CUDA_HOME", "").env("CUDA_PATH", "").env_remove("CUENV_PROFILE");
    c.env_remove("CONDA_PREFIX");
    if cfg!(windows) {
        let own = std::env::var_os("PATH").unwrap_or_default();
        let mut all: Vec<PathBuf> = search.iter().map(|p| p.to_path_buf()).collect();
        all.extend(std::env::split_paths(&own));
        c.env("PATH", std::env::join_paths(all).unwrap());
    } else {
        c.env("LD_LIBRARY_PATH", std::env::join_paths(search).unwrap());
    }
    let out = c.args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[cfg(target_os = "linux")]
mod elf {
    use super::*;

    /// Runs gcc with `args` in `dir`.
    fn gcc(dir: &Path, args: &[&str]) {
        let out = Command::new("gcc").current_dir(dir).args(args).output().expect("gcc builds the ELF fixtures");
        assert!(out.status.success(), "gcc {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// What `ldd` (ld.so's trace) says `file` loads, with `LD_LIBRARY_PATH` = `ld`:
    /// (name, Some(file) or None for "not found").
    fn ldd(file: &Path, ld: &[&Path]) -> Vec<(String, Option<PathBuf>)> {
        let out = Command::new("ldd").arg(file).env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap()).output().expect("ldd runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines()
            .filter_map(|l| {
                let (name, rest) = l.trim().split_once(" => ")?;
                let target = rest.rsplit_once(" (0x").map_or(rest, |(t, _)| t).trim();
                Some((name.to_string(), (target != "not found").then(|| PathBuf::from(target))))
            })
            .collect()
    }

    fn canon(p: &Path) -> PathBuf {
        std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
    }

    /// `doctor --for FILE --json`'s resolution of each non-system import, breadth-first:
    /// (name, Some(file) or None).
    fn walked(file: &Path, ld: &[&Path]) -> (i32, Vec<(String, Option<PathBuf>)>, serde_json::Value) {
        let (code, out) = doctor(&[std::ffi::OsStr::new("doctor"), std::ffi::OsStr::new("--for"), file.as_os_str(), std::ffi::OsStr::new("--json")], ld);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        let mut got = Vec::new();
        let mut queue: std::collections::VecDeque<serde_json::Value> = v["imports"].as_array().unwrap().iter().cloned().collect();
        while let Some(d) = queue.pop_front() {
            if d["already_loaded"] == true {
                continue;
            }
            got.push((d["name"].as_str().unwrap().to_string(), d["path"].as_str().map(PathBuf::from)));
            queue.extend(d["deps"].as_array().unwrap().iter().cloned());
        }
        (code, got, v)
    }

    /// Every library ld.so names in its trace resolves to the same file in doctor's walk
    /// (system ones included: `--json` has them), and the missing ones are missing in both.
    fn agrees(file: &Path, ld: &[&Path]) -> (i32, serde_json::Value) {
        let truth = ldd(file, ld);
        let (code, got, v) = walked(file, ld);
        for (name, path) in &truth {
            let Some((_, mine)) = got.iter().find(|(n, _)| n == name) else { continue };
            assert_eq!(mine.as_deref().map(canon), path.as_deref().map(canon), "{name}: ld.so says {path:?}, doctor {mine:?}\n{v:#}");
        }
        for (name, mine) in &got {
            if let Some((_, path)) = truth.iter().find(|(n, _)| n == name) {
                assert_eq!(mine.is_none(), path.is_none(), "{name}");
            }
        }
        (code, v)
    }

    /// The brief's chain: `bin/app` (DT_RUNPATH `$ORIGIN/../lib`) needs `libA.so`, which needs
    /// `libmissing.so`. DT_RUNPATH serves only the object that carries it (I2), so a
    /// `libmissing.so` in `lib/` stays out of reach of libA; built with DT_RPATH instead it is
    /// inherited by libA's lookups (I1); `LD_LIBRARY_PATH` comes after DT_RPATH and before
    /// DT_RUNPATH. ld.so's trace is the judge of every step.
    #[test]
    fn the_missing_leaf_is_named_and_runpath_is_not_inherited() {
        // ld.so's own trace (`ldd`, Debian's libc-bin) is the oracle.
        if !crate::support::clients::have("ldd (Debian: apt-get install libc-bin)", crate::support::clients::on_path("ldd")) {
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("app root (x86)");
        for d in ["bin", "lib", "other", "ld"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("m.c"), "int m(void) { return 1; }\n").unwrap();
        std::fs::write(root.join("a.c"), "int m(void);\nint a(void) { return m(); }\n").unwrap();
        std::fs::write(root.join("main.c"), "int a(void);\nint main(void) { return a() - 1; }\n").unwrap();
        gcc(&root, &["-shared", "-fPIC", "-o", "other/libmissing.so", "m.c"]);
        gcc(&root, &["-shared", "-fPIC", "-o", "lib/libA.so", "a.c", "-Lother", "-lmissing"]);
        let link = |dtags: &str| {
            gcc(&root, &["-o", "bin/app", "main.c", "-Llib", "-lA", "-Wl,-rpath-link,other", &format!("-Wl,{dtags},-rpath,$ORIGIN/../lib")]);
        };
        link("--enable-new-dtags");
        std::fs::remove_file(root.join("other/libmissing.so")).unwrap();
        let app = root.join("bin/app");

        // 1. Nothing holds libmissing.so: the leaf is named with its importers.
        let (code, v) = agrees(&app, &[]);
        assert_eq!(code, 4, "{v:#}");
        let problem = v["findings"][0]["message"].as_str().unwrap();
        assert!(problem.starts_with("`libmissing.so`, imported by `libA.so`, imported by `app`, does not resolve"), "{problem}");
        let a = &v["imports"][0];
        assert_eq!((a["name"].as_str(), a["via"]["kind"].as_str(), a["via"]["entry"].as_str()), (Some("libA.so"), Some("runpath"), Some("$ORIGIN/../lib")));
        let (_, text) = doctor(&["doctor".as_ref(), "--for".as_ref(), app.as_os_str()], &[]);
        assert!(
            text.contains("    libmissing.so => NOT FOUND") && text.contains("system libraries (resolved, not walked; --all lists each): libc.so.6"),
            "{text}"
        );

        // 2. In the program's DT_RUNPATH folder: still out of libA's reach.
        gcc(&root, &["-shared", "-fPIC", "-o", "lib/libmissing.so", "m.c"]);
        assert!(ldd(&app, &[]).iter().any(|(n, p)| n == "libmissing.so" && p.is_none()), "ld.so does not inherit DT_RUNPATH");
        let (code, v) = agrees(&app, &[]);
        assert_eq!(code, 4, "{v:#}");

        // 3. LD_LIBRARY_PATH serves every object.
        gcc(&root, &["-shared", "-fPIC", "-o", "ld/libmissing.so", "m.c"]);
        let ld = root.join("ld");
        let (code, v) = agrees(&app, &[&ld]);
        assert_eq!(code, 0, "{v:#}");
        assert_eq!(v["imports"][0]["deps"][0]["via"]["kind"], "search_var");

        // 4. Built with DT_RPATH: libA's lookup inherits it, ahead of LD_LIBRARY_PATH.
        link("--disable-new-dtags");
        let (code, v) = agrees(&app, &[&ld]);
        assert_eq!(code, 0, "{v:#}");
        let m = &v["imports"][0]["deps"][0];
        assert_eq!((m["via"]["kind"].as_str(), m["via"]["entry"].as_str()), (Some("rpath"), Some("$ORIGIN/../lib")), "{v:#}");
        let (code, text) = doctor(&["doctor".as_ref(), "--for".as_ref(), app.as_os_str()], &[&ld]);
        assert_eq!(code, 0, "{text}");
        assert!(
            text.contains("libmissing.so => ") && text.contains("through the DT_RPATH `$ORIGIN/../lib` of app") && text.contains("every import resolves"),
            "{text}"
        );
        // --all walks libc as well, each resolved like ld.so resolves it.
        let (_, all) = doctor(&["doctor".as_ref(), "--for".as_ref(), app.as_os_str(), "--all".as_ref()], &[&ld]);
        assert!(all.contains("libc.so.6 => ") && !all.contains("system libraries"), "{all}");
        // libc's DT_NEEDED on the interpreter is the interpreter the kernel loaded (PT_INTERP),
        // as ld.so's trace lists it.
        let interp = cuenv::sys::binfmt::elf_dynamic(&app).unwrap().unwrap().interp.expect("a program has PT_INTERP");
        let trace = String::from_utf8_lossy(&Command::new("ldd").arg(&app).output().unwrap().stdout).into_owned();
        assert!(trace.lines().any(|l| l.trim().starts_with(&interp)), "{trace}");
        let name = Path::new(&interp).file_name().unwrap().to_string_lossy().into_owned();
        assert!(all.contains(&format!("{name} => {interp} (already loaded)")), "{all}");
    }

    /// The ld.so cache as doctor reads it (`loader::read_ld_so_cache`) against `ldconfig -p`,
    /// glibc's own reader of the same file: every 64-bit entry it prints, in the same order.
    #[test]
    fn the_ld_so_cache_is_read_as_ldconfig_prints_it() {
        let cache = Path::new("/etc/ld.so.cache");
        if !cache.is_file() {
            eprintln!("skipped: no /etc/ld.so.cache on this machine");
            return;
        }
        let ldconfig = ["/sbin/ldconfig", "/usr/sbin/ldconfig"].into_iter().find(|p| Path::new(p).exists()).expect("ldconfig is installed with glibc");
        let out = Command::new(ldconfig).arg("-p").output().unwrap();
        let arch = if cfg!(target_arch = "aarch64") { "AArch64" } else { "x86-64" };
        let truth: Vec<(String, PathBuf)> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(arch))
            .filter_map(|l| {
                let (left, path) = l.trim().split_once(" => ")?;
                Some((left.split(" (").next()?.to_string(), PathBuf::from(path)))
            })
            .collect();
        let mine = cuenv::doctor::loader::read_ld_so_cache(cache).expect("the cache is in glibc's format");
        assert!(!truth.is_empty() && truth.iter().any(|(n, _)| n == "libc.so.6"), "{truth:?}");
        assert_eq!(mine, truth);
    }

    /// A file doctor cannot walk is refused with exit 2, naming it.
    #[test]
    fn a_file_that_is_no_elf_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("notes.txt");
        std::fs::write(&f, "hello").unwrap();
        let (code, out) = doctor(&["doctor".as_ref(), "--for".as_ref(), f.as_os_str()], &[]);
        assert_eq!(code, 2, "{out}");
        assert!(out.contains("notes.txt is not a PE or ELF file") && out.contains("hint: doctor --for models the loader"), "{out}");
        let (code, out) = doctor(&["doctor".as_ref(), "--for".as_ref(), tmp.path().join("absent").as_os_str()], &[]);
        assert_eq!(code, 2, "{out}");
    }

    /// A toolkit's `lib64/stubs` first on `LD_LIBRARY_PATH` (D1): the stub serves a load of
    /// `libcuda.so` by name (python3 ctypes maps it: the judge), so plain doctor names it; a
    /// library linked against the stub needs `libcuda.so.1` (the stub's DT_SONAME), which the
    /// `libcuda.so.1` link people add to the folder serves: `doctor --for` flags that leaf. A
    /// driver folder ahead on the path wins both loads, and nothing is said.
    #[test]
    fn a_stub_libcuda_first_on_the_path_is_named() {
        // ld.so's own trace (`ldd`, Debian's libc-bin) is the oracle.
        if !crate::support::clients::have("ldd (Debian: apt-get install libc-bin)", crate::support::clients::on_path("ldd")) {
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let stubs = tmp.path().join("cuda-12.6/targets/x86_64-linux/lib/stubs");
        let driver = tmp.path().join("driver");
        std::fs::create_dir_all(&stubs).unwrap();
        std::fs::create_dir_all(&driver).unwrap();
        let src = tmp.path().join("cuda.c");
        std::fs::write(&src, "int cuInit(unsigned int flags) { (void)flags; return 34; }\nint cuDriverGetVersion(int *v) { *v = 0; return 34; }\n").unwrap();
        let stub = stubs.join("libcuda.so");
        gcc(tmp.path(), &["-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", stub.to_str().unwrap(), "cuda.c"]);
        gcc(tmp.path(), &["-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", driver.join("libcuda.so.1").to_str().unwrap(), "cuda.c"]);
        std::os::unix::fs::symlink("libcuda.so.1", driver.join("libcuda.so")).unwrap();
        std::fs::write(tmp.path().join("user.c"), "int cuInit(unsigned int);\nint use(void) { return cuInit(0); }\n").unwrap();
        let user = tmp.path().join("libuser.so");
        gcc(tmp.path(), &["-shared", "-fPIC", "-o", user.to_str().unwrap(), "user.c", &format!("-L{}", stubs.display()), "-lcuda"]);

        // The judge: what dlopen("libcuda.so") maps with the stubs first.
        let mapped = |ld: &[&Path]| -> PathBuf {
            let py = "import ctypes\nctypes.CDLL('libcuda.so')\nprint([l.split(None, 5)[5].strip() for l in open('/proc/self/maps') if 'libcuda' in l][0])";
            let out = Command::new("python3").args(["-c", py]).env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap()).output().expect("python3 runs");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        };
        assert_eq!(mapped(&[&stubs]), canon(&stub));
        let (code, out) = doctor(&["doctor".as_ref(), "--major".as_ref(), "9".as_ref()], &[&stubs]);
        assert_eq!(code, 4, "{out}");
        let named = format!("libcuda.so (a load by name, through LD_LIBRARY_PATH (position 1)) would be {}, the CUDA toolkit's link-time stub", stub.display());
        assert!(out.contains(&named) && out.contains("stub folders are for linking only"), "{out}");
        assert!(!out.contains("libcuda.so.1 (a load by name"), "no libcuda.so.1 in the stubs folder yet: {out}");

        // Linked against the stub: libuser.so needs libcuda.so.1, served by a link to the stub.
        assert_eq!(cuenv::sys::binfmt::elf_dynamic(&user).unwrap().unwrap().needed, ["libcuda.so.1"]);
        std::os::unix::fs::symlink("libcuda.so", stubs.join("libcuda.so.1")).unwrap();
        let (code, v) = agrees(&user, &[&stubs]);
        assert_eq!(code, 4, "{v:#}");
        let leaf = &v["imports"][0];
        assert_eq!((leaf["name"].as_str(), leaf["stub"].as_bool()), (Some("libcuda.so.1"), Some(true)), "{v:#}");
        assert!(v["findings"][0]["message"].as_str().unwrap().contains("the CUDA toolkit's link-time stub"), "{v:#}");

        // A driver folder first: the stub serves nothing.
        assert_eq!(mapped(&[&driver, &stubs]), canon(&driver.join("libcuda.so.1")));
        let (code, v) = agrees(&user, &[&driver, &stubs]);
        assert_eq!(code, 0, "{v:#}");
        let (_, out) = doctor(&["doctor".as_ref(), "--major".as_ref(), "9".as_ref()], &[&driver, &stubs]);
        assert!(!out.contains("link-time stub"), "{out}");
    }
}

/// The case under a real Windows loader (Wine): `consumer.dll` (like
/// `onnxruntime_providers_cuda.dll`) imports `cublasLt64_12.dll`, and `consumer_app.exe`
/// imports `consumer.dll` from its own folder (the application's folder, W6). With no
/// `cublasLt64_12.dll` anywhere the program does not start, and `doctor --for` names that
/// leaf with its importers; with one on `PATH` both the program and doctor agree it resolves.
#[cfg(windows)]
#[test]
fn a_consumer_dll_missing_cublaslt_is_named_as_the_leaf() {
    let tmp = tempfile::tempdir().unwrap();
    let fix = match std::env::var_os("CUENV_TEST_MINGW_FIXTURES") {
        Some(d) => PathBuf::from(d),
        None => {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/support/loader_win/build.sh");
            let out = tmp.path().join("fixtures");
            let o = Command::new("bash").arg(&script).arg(&out).env("MINGW_CC", "gcc").env("MINGW_WINDRES", "windres").output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            out
        }
    };
    let app_dir = tmp.path().join("app & co (x86)");
    std::fs::create_dir_all(&app_dir).unwrap();
    for f in ["consumer_app.exe", "consumer.dll"] {
        std::fs::copy(fix.join(f), app_dir.join(f)).unwrap();
    }
    let exe = app_dir.join("consumer_app.exe");
    let run = |path: &[&Path]| {
        let own = std::env::var_os("PATH").unwrap_or_default();
        let mut all: Vec<PathBuf> = path.iter().map(|p| p.to_path_buf()).collect();
        all.extend(std::env::split_paths(&own));
        Command::new(&exe).env("PATH", std::env::join_paths(all).unwrap()).output().unwrap()
    };
    // The judge: the loader refuses to start it.
    let o = run(&[]);
    assert!(!o.status.success(), "started without cublasLt64_12.dll: {o:?}");
    let (code, out) = doctor(&["doctor".as_ref(), "--for".as_ref(), exe.as_os_str()], &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("`cublasLt64_12.dll`, imported by `consumer.dll`, imported by `consumer_app.exe`, does not resolve"), "{out}");
    assert!(out.contains("consumer.dll => ") && out.contains("from the application's folder"), "{out}");
    assert!(out.contains("system libraries (resolved, not walked; --all lists each)") && out.to_ascii_lowercase().contains("kernel32.dll"), "{out}");
    // Aimed at the DLL itself, the same leaf.
    let (code, out) = doctor(&["doctor".as_ref(), "--for".as_ref(), app_dir.join("consumer.dll").as_os_str()], &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("`cublasLt64_12.dll`, imported by `consumer.dll`, does not resolve"), "{out}");

    // cublasLt64_12.dll on PATH: the program starts, doctor agrees.
    let cuda = tmp.path().join("cuda bin");
    std::fs::create_dir_all(&cuda).unwrap();
    std::fs::copy(fix.join("cublaslt12.dll"), cuda.join("cublasLt64_12.dll")).unwrap();
    let o = run(&[&cuda]);
    assert!(o.status.success(), "{o:?}");
    let (code, out) = doctor(&["doctor".as_ref(), "--for".as_ref(), exe.as_os_str()], &[&cuda]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("cublasLt64_12.dll => ") && out.contains("through PATH") && out.contains("every import resolves"), "{out}");
}
