//! What a user installs cuenv from (issue 34), checked against the files `scripts/dist.sh`
//! built: `CUENV_DIST_DIR` names its `--out` folder. The wheels hold the binary and the
//! licence files only, at the crate's version, with true platform tags (the Linux binary's
//! glibc symbol versions and libraries are read from the file by `objdump`, binutils' own
//! reader); the Linux wheel installed into fresh venvs by pip, by `uv pip` and by
//! `uv tool install` gives a `cuenv` that runs `--version` and `apply` on a small lab; the
//! Windows wheel's `cuenv.exe`, unpacked, runs under Wine (`--version`, `store add`); the
//! archives carry the wheels' binaries and the Scoop and winget manifests name the zip's URL,
//! SHA-256 and binary.
//!
//! Without `CUENV_DIST_DIR` every test prints `skipped:` and passes; so does the uv part
//! without `uv` (`CUENV_DIST_UV`, else `uv` on PATH) and the Wine part without Wine, unless
//! `CUENV_REQUIRE_DIST=1` (.ci/run runs dist.sh and sets both), which turns each into a failure.

use std::collections::BTreeSet;
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::lab::{host_archive, toolkit};
use crate::support::{BinDir, Release, TestContext, sha256_hex, skipped, windows_zip};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// `CUENV_DIST_DIR`, or `None` after a `skipped:` line (a failure with `CUENV_REQUIRE_DIST`).
fn dist_dir(what: &str) -> Option<PathBuf> {
    match std::env::var_os("CUENV_DIST_DIR").filter(|d| !d.is_empty()) {
        Some(d) => Some(PathBuf::from(d)),
        None => {
            require_or_skip(&format!("{what}: CUENV_DIST_DIR is not set (scripts/dist.sh --out DIR builds the wheels and archives)"));
            None
        }
    }
}

fn require_or_skip(why: &str) {
    assert!(std::env::var_os("CUENV_REQUIRE_DIST").is_none(), "CUENV_REQUIRE_DIST is set: {why}");
    skipped(why);
}

/// The one file in `dir` whose name starts with `prefix` and ends with `suffix`.
fn one(dir: &Path, prefix: &str, suffix: &str) -> PathBuf {
    let found: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().is_some_and(|n| n.starts_with(prefix) && n.ends_with(suffix)))
        .collect();
    assert_eq!(found.len(), 1, "want one {prefix}*{suffix} in {}, found {found:?}", dir.display());
    found.into_iter().next().unwrap()
}

/// The Linux wheel: maturin writes both names of its tag (PEP 600 and PEP 599),
/// `manylinux2014_x86_64.manylinux_2_17_x86_64`.
fn linux_wheel(dir: &Path) -> PathBuf {
    one(dir, &format!("cuenv-{VERSION}-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64"), ".whl")
}

fn windows_wheel(dir: &Path) -> PathBuf {
    one(dir, &format!("cuenv-{VERSION}-py3-none-win_amd64"), ".whl")
}

/// Every member of a zip file (a wheel is one) with its bytes and Unix mode.
fn zip_members(path: &Path) -> Vec<(String, Vec<u8>, Option<u32>)> {
    let mut z = zip::ZipArchive::new(fs::File::open(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (0..z.len())
        .map(|i| {
            let mut f = z.by_index(i).unwrap();
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes).unwrap();
            (f.name().unwrap().to_string(), bytes, f.unix_mode())
        })
        .collect()
}

fn member<'a>(members: &'a [(String, Vec<u8>, Option<u32>)], name: &str) -> &'a [u8] {
    &members.iter().find(|m| m.0 == name).unwrap_or_else(|| panic!("no member {name}")).1
}

/// The licence files at the top of the repository (`LICENSE*`, `COPYING*`, `NOTICE*`): the
/// only files besides the binary and the wheel's own metadata that a wheel may hold.
fn licence_files() -> BTreeSet<String> {
    fs::read_dir(REPO)
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter(|n| ["LICENSE", "LICENCE", "COPYING", "NOTICE"].iter().any(|p| n.to_ascii_uppercase().starts_with(p)))
        .collect()
}

/// The base64url (no padding) SHA-256 of `bytes`, as a wheel's RECORD writes it.
fn record_digest(bytes: &[u8]) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(bytes))
}

#[test]
fn wheels_hold_the_binary_and_licence_files_only_at_the_crate_version() {
    let Some(dir) = dist_dir("dist wheels") else { return };
    for (wheel, tag, exe) in [(linux_wheel(&dir), "manylinux_2_17_x86_64", "cuenv"), (windows_wheel(&dir), "win_amd64", "cuenv.exe")] {
        let members = zip_members(&wheel);
        let info = format!("cuenv-{VERSION}.dist-info");
        let names: BTreeSet<String> = members.iter().map(|m| m.0.clone()).collect();
        let mut want: BTreeSet<String> =
            [format!("cuenv-{VERSION}.data/scripts/{exe}"), format!("{info}/METADATA"), format!("{info}/WHEEL"), format!("{info}/RECORD")].into();
        want.extend(licence_files().into_iter().map(|l| format!("{info}/licenses/{l}")));
        assert_eq!(names, want, "{}: the binary, the licence files and the wheel's metadata, nothing else", wheel.display());

        let metadata = String::from_utf8(member(&members, &format!("{info}/METADATA")).to_vec()).unwrap();
        assert!(metadata.lines().any(|l| l == "Name: cuenv"), "{metadata}");
        assert!(metadata.lines().any(|l| l == format!("Version: {VERSION}")), "the crate's version:\n{metadata}");
        let wheel_meta = String::from_utf8(member(&members, &format!("{info}/WHEEL")).to_vec()).unwrap();
        assert!(wheel_meta.lines().any(|l| l == format!("Tag: py3-none-{tag}")), "{wheel_meta}");
        assert!(wheel_meta.lines().any(|l| l == "Root-Is-Purelib: false"), "{wheel_meta}");

        // RECORD: every other member with its digest and size (what pip checks on install).
        let record = String::from_utf8(member(&members, &format!("{info}/RECORD")).to_vec()).unwrap();
        for (name, bytes, _) in members.iter().filter(|m| !m.0.ends_with("/RECORD")) {
            let line = format!("{name},sha256={},{}", record_digest(bytes), bytes.len());
            assert!(record.lines().any(|l| l == line), "RECORD lacks {line}:\n{record}");
        }

        let binary = member(&members, &format!("cuenv-{VERSION}.data/scripts/{exe}"));
        if exe == "cuenv" {
            assert_eq!(&binary[..4], b"\x7fELF", "an ELF binary");
            let mode = members.iter().find(|m| m.0.ends_with("/scripts/cuenv")).unwrap().2.unwrap();
            assert_eq!(mode & 0o111, 0o111, "executable: {mode:o}");
            linux_binary_fits_manylinux_2_17(binary);
        } else {
            assert_eq!(&binary[..2], b"MZ", "a PE binary");
            // PE32+ for AMD64: the machine field after the "PE\0\0" signature.
            let pe = u32::from_le_bytes(binary[0x3c..0x40].try_into().unwrap()) as usize;
            assert_eq!(&binary[pe..pe + 4], b"PE\0\0");
            assert_eq!(u16::from_le_bytes([binary[pe + 4], binary[pe + 5]]), 0x8664, "IMAGE_FILE_MACHINE_AMD64");
        }
    }
}

/// A manylinux_2_17 binary asks for no glibc symbol version above 2.17 and loads no library
/// outside the manylinux2014 list (PEP 599) besides glibc's own.
fn linux_binary_fits_manylinux_2_17(binary: &[u8]) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("cuenv");
    fs::write(&path, binary).unwrap();
    let dynsym = objdump(&["-T"], &path);
    let mut versions: Vec<(u32, u32)> =
        regex::Regex::new(r"GLIBC_(\d+)\.(\d+)").unwrap().captures_iter(&dynsym).map(|c| (c[1].parse().unwrap(), c[2].parse().unwrap())).collect();
    versions.sort();
    let newest = *versions.last().expect("the binary links glibc");
    assert!(newest <= (2, 17), "asks for GLIBC_{}.{} (manylinux_2_17 allows 2.17):\n{dynsym}", newest.0, newest.1);
    let headers = objdump(&["-p"], &path);
    let allowed = ["libc.so.6", "libm.so.6", "libgcc_s.so.1", "libdl.so.2", "libpthread.so.0", "librt.so.1", "ld-linux-x86-64.so.2"];
    let needed: Vec<&str> = headers.lines().filter_map(|l| l.trim().strip_prefix("NEEDED")).map(str::trim).collect();
    assert!(!needed.is_empty(), "{headers}");
    for lib in &needed {
        assert!(allowed.contains(lib), "needs {lib}, which manylinux2014 does not allow (all: {needed:?})");
    }
}

fn objdump(args: &[&str], path: &Path) -> String {
    let out = Command::new("objdump").args(args).arg(path).output().expect("objdump (binutils, which gcc brings)");
    assert!(out.status.success(), "objdump {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed ({:?}):\n{}\n{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

/// `cuenv --version`, then `store add` of a fake 9.5.0.50 release, `apply` of a one-profile lab
/// and `check` (its probe child), all by the installed `cuenv` at `exe`.
fn installed_cuenv_applies_a_lab(exe: &Path) {
    assert!(exe.is_file(), "{} was not installed", exe.display());
    let version = run(Command::new(exe).arg("--version"));
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), format!("cuenv {VERSION}"));

    let ctx = TestContext::new();
    let archive = host_archive(&ctx.work, &Release::V9);
    let tk = toolkit(&ctx.work, "12.6.77", 12);
    let lab = ctx.path("lab.toml");
    fs::write(&lab, format!("[toolkits]\n\"12.6\" = '{}'\n\n[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\n", tk.display())).unwrap();
    let command = |args: &[&str]| {
        let mut c = Command::new(exe);
        c.env_remove("CUENV_HOME").env_remove("LD_LIBRARY_PATH").arg("--home").arg(&ctx.home).arg("--quiet").args(args).current_dir(&ctx.work);
        c
    };
    let cuenv = |args: &[&str]| String::from_utf8(run(&mut command(args)).stdout).unwrap();
    cuenv(&["store", "add", archive.to_str().unwrap()]);
    let listed = cuenv(&["store", "list"]);
    assert!(listed.contains("9.5.0.50"), "{listed}");
    let applied = cuenv(&["apply", "--no-check", lab.to_str().unwrap()]);
    assert!(applied.contains("generation 1 is current"), "{applied}");
    assert!(ctx.home.join("profiles/torch2/cudnn-lib/libcudnn.so.9").exists(), "the profile's view");
    // The check runs in a child process that is this same installed binary: it loads the
    // fake dispatcher through the view and finds no `cudnnCreate` in it (exit 4), which it can
    // only say after it started and loaded that library.
    let check = command(&["check"]).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&check.stdout), String::from_utf8_lossy(&check.stderr));
    assert_eq!(check.status.code(), Some(4), "{text}");
    assert!(text.contains("check torch2: fail") && text.contains("cudnnCreate not exported"), "{text}");
}

/// The uv to install with: `CUENV_DIST_UV`, else `uv` on PATH; `None` after a `skipped:` line.
fn uv() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CUENV_DIST_UV").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    if crate::support::clients::on_path("uv") {
        return Some(PathBuf::from("uv"));
    }
    require_or_skip("dist: uv not found (CUENV_DIST_UV or uv on PATH): the uv installs were not tried");
    None
}

#[test]
fn the_linux_wheel_installs_with_pip_and_runs_apply() {
    let Some(dir) = dist_dir("pip install of the Linux wheel") else { return };
    let wheel = linux_wheel(&dir);
    let tmp = tempfile::tempdir().unwrap();
    let venv = tmp.path().join("venv pip");
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    // --no-index: the wheel has no dependencies, and nothing is fetched from anywhere.
    run(Command::new(venv.join("bin/pip")).args(["install", "--no-index", "--no-cache-dir", "--disable-pip-version-check"]).arg(&wheel));
    installed_cuenv_applies_a_lab(&venv.join("bin/cuenv"));
    run(Command::new(venv.join("bin/pip")).args(["uninstall", "-y", "cuenv"]));
    assert!(!venv.join("bin/cuenv").exists(), "pip uninstall removes the binary");
}

#[test]
fn the_linux_wheel_installs_with_uv_and_runs_apply() {
    let Some(dir) = dist_dir("uv install of the Linux wheel") else { return };
    let Some(uv) = uv() else { return };
    let wheel = linux_wheel(&dir);
    let tmp = tempfile::tempdir().unwrap();
    let uv_cmd = || {
        let mut c = Command::new(&uv);
        c.env("UV_CACHE_DIR", tmp.path().join("uv-cache")).env("UV_PYTHON_DOWNLOADS", "never").env("UV_NO_CONFIG", "1").arg("--offline");
        c
    };
    // `uv venv` + `uv pip install`: a fresh venv's bin.
    let venv = tmp.path().join("venv uv");
    run(uv_cmd().args(["venv", "--python", "python3"]).arg(&venv));
    run(uv_cmd().args(["pip", "install", "--python"]).arg(venv.join("bin/python")).arg(&wheel));
    installed_cuenv_applies_a_lab(&venv.join("bin/cuenv"));

    // `uv tool install` (README's line): its own venv, and `cuenv` in the tool bin folder.
    let (tools, bin) = (tmp.path().join("tools"), tmp.path().join("tool bin"));
    let tool = |args: &[&str]| {
        let mut c = uv_cmd();
        c.env("UV_TOOL_DIR", &tools).env("UV_TOOL_BIN_DIR", &bin).args(["tool"]).args(args);
        c
    };
    run(&mut tool(&["install", "--python", "python3", wheel.to_str().unwrap()]));
    installed_cuenv_applies_a_lab(&bin.join("cuenv"));
    run(&mut tool(&["uninstall", "cuenv"]));
    assert!(!bin.join("cuenv").exists() && !tools.join("cuenv").exists(), "uv tool uninstall removes it");
}

/// A Linux path as a Windows process under Wine sees it (drive Z: is `/`).
fn wine_path(p: &Path) -> String {
    format!("Z:{}", p.display()).replace('/', "\\")
}

#[test]
fn the_windows_wheel_exe_runs_under_wine() {
    let Some(dir) = dist_dir("the Windows wheel under Wine") else { return };
    let runner = Path::new(REPO).join("scripts/wine-runner.sh");
    let have_wine = Path::new("/usr/lib/wine/wine64").exists() || ["wine64", "wine"].iter().any(|w| crate::support::clients::on_path(w));
    if !have_wine {
        return require_or_skip("dist: no Wine (apt-get install wine64): the Windows wheel's cuenv.exe was not run");
    }
    let members = zip_members(&windows_wheel(&dir));
    let ctx = TestContext::new();
    let exe = ctx.path("unpacked/cuenv.exe");
    fs::create_dir_all(exe.parent().unwrap()).unwrap();
    fs::write(&exe, member(&members, &format!("cuenv-{VERSION}.data/scripts/cuenv.exe"))).unwrap();
    let wine = |args: &[&str]| {
        let mut c = Command::new(&runner);
        c.arg(&exe).args(args).current_dir(&ctx.work).env_remove("CUENV_HOME");
        String::from_utf8(run(&mut c).stdout).unwrap()
    };
    assert_eq!(wine(&["--version"]).trim(), format!("cuenv {VERSION}"));
    let archive = windows_zip(&ctx.work, &Release::V9, BinDir::Bin);
    let home = wine_path(&ctx.home);
    let added = wine(&["--home", &home, "store", "add", &wine_path(&archive), "--json"]);
    let rows: serde_json::Value = serde_json::from_str(&added).unwrap_or_else(|e| panic!("{e}: {added}"));
    let row = rows.as_array().and_then(|r| r.first()).unwrap_or_else(|| panic!("{added}"));
    assert_eq!(row["version"], "9.5.0.50", "{added}");
    let listed = wine(&["--home", &home, "store", "list"]);
    assert!(listed.contains("9.5.0.50") && listed.contains("windows"), "{listed}");
}

/// `<hex>  <name>` of a `.sha256` file, checked against the file beside it.
fn sha256_file_matches(archive: &Path) -> String {
    let digest = sha256_hex(&fs::read(archive).unwrap());
    let line = fs::read_to_string(format!("{}.sha256", archive.display())).unwrap();
    assert_eq!(line, format!("{digest}  {}\n", archive.file_name().unwrap().to_str().unwrap()), "{}.sha256", archive.display());
    digest
}

/// The value of `key: value` lines of a winget manifest (flat keys, maybe under a `- `).
fn yaml_values(text: &str, key: &str) -> Vec<String> {
    text.lines().filter_map(|l| l.trim_start().trim_start_matches("- ").strip_prefix(&format!("{key}:"))).map(|v| v.trim().to_string()).collect()
}

#[test]
fn archives_carry_the_wheels_binaries_and_the_manifests_name_them() {
    let Some(dir) = dist_dir("archives and manifests") else { return };
    let linux_bin = member(&zip_members(&linux_wheel(&dir)), &format!("cuenv-{VERSION}.data/scripts/cuenv")).to_vec();
    let windows_bin = member(&zip_members(&windows_wheel(&dir)), &format!("cuenv-{VERSION}.data/scripts/cuenv.exe")).to_vec();
    let licences = licence_files();

    // The tarball: `cuenv-<v>-x86_64-unknown-linux-gnu/cuenv` (executable) and the licences.
    let stem = format!("cuenv-{VERSION}-x86_64-unknown-linux-gnu");
    let tgz = dir.join(format!("{stem}.tar.gz"));
    sha256_file_matches(&tgz);
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(fs::File::open(&tgz).unwrap()));
    let mut names = BTreeSet::new();
    for e in tar.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().display().to_string();
        if name == format!("{stem}/cuenv") {
            assert_eq!(e.header().mode().unwrap() & 0o111, 0o111);
            let mut bytes = Vec::new();
            e.read_to_end(&mut bytes).unwrap();
            assert!(bytes == linux_bin, "the tarball's cuenv is the Linux wheel's");
        }
        names.insert(name);
    }
    let mut want: BTreeSet<String> = licences.iter().map(|l| format!("{stem}/{l}")).collect();
    want.insert(format!("{stem}/cuenv"));
    assert_eq!(names, want);

    // The zip: `cuenv.exe` at the top, the Windows wheel's.
    let zip_path = dir.join(format!("cuenv-{VERSION}-x86_64-pc-windows-gnu.zip"));
    let zip_name = zip_path.file_name().unwrap().to_str().unwrap().to_string();
    let digest = sha256_file_matches(&zip_path);
    let zipped = zip_members(&zip_path);
    let mut want: BTreeSet<String> = licences.clone();
    want.insert("cuenv.exe".into());
    assert_eq!(zipped.iter().map(|m| m.0.clone()).collect::<BTreeSet<_>>(), want);
    assert!(member(&zipped, "cuenv.exe") == windows_bin.as_slice(), "the zip's cuenv.exe is the Windows wheel's");

    // The URL pattern: the release folder of this version (dist.sh --url-base), then the file.
    let base = std::env::var("CUENV_DIST_URL_BASE").unwrap_or_else(|_| format!("https://example.invalid/cuenv/releases/download/v{VERSION}"));
    let url = format!("{}/{zip_name}", base.trim_end_matches('/'));
    assert!(url.starts_with("https://"), "{url}");

    // Scoop: version, the zip's URL and hash, and a `bin` that is in the zip.
    let scoop: serde_json::Value = serde_json::from_str(&fs::read_to_string(dir.join("scoop/cuenv.json")).unwrap()).unwrap();
    assert_eq!(scoop["version"], VERSION);
    let x64 = &scoop["architecture"]["64bit"];
    assert_eq!(x64["url"], url.as_str(), "{scoop:#}");
    assert_eq!(x64["hash"], digest.as_str(), "{scoop:#}");
    let bin = scoop["bin"].as_str().unwrap();
    assert!(zipped.iter().any(|m| m.0 == bin), "scoop's bin {bin} is not in {zip_name}");

    // winget: three manifests of one identifier and version; the installer names the zip.
    let id = "cuenv.cuenv";
    let wdir = dir.join(format!("winget/{id}/{VERSION}"));
    for (file, kind) in [(format!("{id}.yaml"), "version"), (format!("{id}.installer.yaml"), "installer"), (format!("{id}.locale.en-US.yaml"), "defaultLocale")]
    {
        let text = fs::read_to_string(wdir.join(&file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(yaml_values(&text, "PackageIdentifier"), [id], "{file}");
        assert_eq!(yaml_values(&text, "PackageVersion"), [VERSION], "{file}");
        assert_eq!(yaml_values(&text, "ManifestType"), [kind], "{file}");
        if kind == "installer" {
            assert_eq!(yaml_values(&text, "InstallerUrl"), [url.as_str()], "{text}");
            assert_eq!(yaml_values(&text, "InstallerSha256"), [digest.to_uppercase()], "{text}");
            assert_eq!(yaml_values(&text, "InstallerType"), ["zip"], "{text}");
            let rel = yaml_values(&text, "RelativeFilePath");
            assert_eq!(rel.len(), 1, "{text}");
            assert!(zipped.iter().any(|m| m.0 == rel[0].replace('\\', "/")), "winget's {} is not in {zip_name}", rel[0]);
            assert_eq!(yaml_values(&text, "PortableCommandAlias"), ["cuenv"], "{text}");
        }
    }

    // SHA256SUMS lists every file once, with its digest.
    let sums = fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
    let mut listed = BTreeSet::new();
    for line in sums.lines() {
        let (hex, name) = line.split_once("  ").unwrap_or_else(|| panic!("{line}"));
        assert_eq!(hex, sha256_hex(&fs::read(dir.join(name)).unwrap()), "{name}");
        listed.insert(name.to_string());
    }
    for name in [tgz.file_name().unwrap().to_str().unwrap(), &zip_name, "scoop/cuenv.json"] {
        assert!(listed.contains(name), "SHA256SUMS lacks {name}:\n{sums}");
    }
}
