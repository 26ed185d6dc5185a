//! Shared test support: an isolated cuenv home ([`TestContext`]) and fixture builders that
//! make cuDNN-shaped archives at test time, in every layout `cuenv store add` accepts, plus
//! the hostile and broken variants it must refuse. Nothing binary is committed:
//!
//! - Linux libraries are one tiny `.so` built with `gcc -shared -fPIC` once per test
//!   process (a real ELF64 x86-64 header), with the library name appended so every file
//!   differs.
//! - Windows DLLs are hand-assembled PE32+ (AMD64) images: DOS header, NT headers and one
//!   `.rsrc` section holding an RT_VERSION resource whose VS_FIXEDFILEINFO carries the
//!   chosen FileVersion (or no VERSIONINFO at all, like cuDNN 9's `cudnn_graph64_9.dll`).
//!   A PE32 (i386) variant exists for the "wrong platform" cases.
//! - Zips are written by hand ([`ZipBuilder`]) so member names, declared sizes and data
//!   offsets are fully under the test's control; tars go through the `tar` crate with raw
//!   header fields, so `..` names and outside symlinks can be written too.
//!
//! Compiled once into the `it` test binary (tests/it/main.rs); not every helper is used
//! on every platform.
#![allow(dead_code)]

#[cfg(target_os = "linux")]
pub mod clients;
pub mod lab;
pub mod pe;
#[cfg(target_os = "linux")]
pub mod snapshot;
pub mod stubs;

#[cfg_attr(not(target_os = "linux"), allow(unused_imports))]
pub use pe::{PeArch, PeDll, pe_dll};

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

// ------------------------------------------------------------------ test context

/// A temporary cuenv home plus a work folder for inputs, deleted on drop.
pub struct TestContext {
    tmp: tempfile::TempDir,
    /// The cuenv home passed with `--home`.
    pub home: PathBuf,
    /// A folder for fixture inputs (outside the home).
    pub work: PathBuf,
}

impl TestContext {
    pub fn new() -> Self {
        let tmp = tempfile::Builder::new().prefix("cuenv-test-").tempdir().expect("temp dir");
        let home = tmp.path().join("home");
        let work = tmp.path().join("work");
        fs::create_dir_all(&work).unwrap();
        TestContext { tmp, home, work }
    }

    /// Like [`TestContext::new`], with a home whose path is `len` characters long: the
    /// temporary folder, then folders of `h`s (at most 100 characters each). Panics when the
    /// temporary folder alone is too long for it.
    pub fn with_home_len(len: usize) -> Self {
        let mut ctx = TestContext::new();
        let mut home = ctx.tmp.path().to_path_buf();
        while home.as_os_str().len() < len {
            // A separator and at least one `h`; never leave room for only a separator.
            let left = len - home.as_os_str().len() - 1;
            let n = if left > 100 { left.min(100).min(left - 2) } else { left };
            assert!(n > 0, "{} is too long for a home of {len} characters", ctx.tmp.path().display());
            home.push("h".repeat(n));
        }
        assert_eq!(home.as_os_str().len(), len, "{}", home.display());
        ctx.home = home;
        ctx
    }

    /// The cuenv binary with `--home <home> --quiet`, and no `CUENV_HOME` from outside.
    pub fn cmd(&self) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::new(env!("CARGO_BIN_EXE_cuenv"));
        c.env_remove("CUENV_HOME").arg("--home").arg(&self.home).arg("--quiet");
        c
    }

    /// A path in the work folder.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.work.join(rel)
    }

    pub fn store_dir(&self) -> PathBuf {
        self.home.join("store")
    }

    pub fn staging_dir(&self) -> PathBuf {
        self.store_dir().join(".tmp")
    }

    /// `store add <path> [args] --json`; asserts success and returns the one entry row.
    pub fn add_ok(&self, path: &Path, args: &[&str]) -> serde_json::Value {
        let out = self.cmd().args(["store", "add"]).arg(path).args(args).arg("--json").output().unwrap();
        assert!(out.status.success(), "store add {} failed ({:?}):\n{}", path.display(), out.status, String::from_utf8_lossy(&out.stderr));
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("add --json prints JSON");
        assert_eq!(rows.as_array().map(Vec::len), Some(1), "{rows}");
        rows[0].clone()
    }

    /// `store add <path> [args]`, expected to fail with exit code 2. Returns stderr after
    /// checking it has an `error:` and a `hint:` line and that the store is unchanged.
    pub fn add_refused(&self, path: &Path, args: &[&str]) -> String {
        let out = self.cmd().args(["store", "add"]).arg(path).args(args).output().unwrap();
        self.check_refused(path, &out)
    }

    /// The checks of [`TestContext::add_refused`] on the output `out` of a `store add` of
    /// `path` that has already run. Returns stderr.
    pub fn check_refused(&self, path: &Path, out: &std::process::Output) -> String {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        eprintln!("{stderr}"); // shown with --nocapture, to read the messages
        assert_eq!(out.status.code(), Some(2), "expected exit 2 for {}; stderr:\n{stderr}", path.display());
        // `error:`, or `error[<rule id>]:` for a refusal that cites a docs/loader.md rule.
        let first = stderr.lines().next().unwrap_or("");
        assert!(first.starts_with("error: ") || (first.starts_with("error[") && first.contains("]: ")), "no `error:` line:\n{stderr}");
        assert!(stderr.lines().any(|l| l.starts_with("hint: ")), "no `hint:` line:\n{stderr}");
        assert!(out.stdout.is_empty(), "stdout: {}", String::from_utf8_lossy(&out.stdout));
        self.assert_store_unchanged();
        stderr
    }

    /// The store holds no entry and no staging leftovers.
    pub fn assert_store_unchanged(&self) {
        self.assert_store_unchanged_but(&[]);
    }

    /// The store holds exactly the entry folders `entries` and no staging leftovers.
    pub fn assert_store_unchanged_but(&self, entries: &[PathBuf]) {
        assert_eq!(self.entry_dirs(), entries, "the store's entries changed");
        let staging: Vec<_> = fs::read_dir(self.staging_dir()).map(|rd| rd.flatten().map(|e| e.path()).collect()).unwrap_or_default();
        assert!(staging.is_empty(), "staging left behind: {staging:?}");
    }

    /// Entry folders in the store (hidden folders such as `.tmp` excluded), sorted.
    pub fn entry_dirs(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = fs::read_dir(self.store_dir())
            .map(|rd| rd.flatten().filter(|e| !e.file_name().to_string_lossy().starts_with('.')).map(|e| e.path()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    /// The parsed `entry.toml` of the entry folder `dir`.
    pub fn entry_toml(&self, dir: &Path) -> toml::Table {
        fs::read_to_string(dir.join("entry.toml")).unwrap().parse().unwrap()
    }

    /// The only entry folder; panics unless there is exactly one.
    pub fn only_entry(&self) -> PathBuf {
        let e = self.entry_dirs();
        assert_eq!(e.len(), 1, "{e:?}");
        e[0].clone()
    }
}

impl TestContext {
    /// insta settings for a command's output in this context: the temp folder (home and work
    /// folder alike) is shown as `[TEMP]`, a path below it with `/` separators on every
    /// platform, and the operating system's text for an I/O error (`... (os error N)`, which
    /// Windows words differently) as `[OS ERROR N]`. Use through [`assert_stderr_snapshot!`].
    pub fn snapshot_settings(&self) -> insta::Settings {
        let mut settings = insta::Settings::clone_current();
        settings.set_omit_expression(true);
        settings.add_filter(&regex::escape(&self.tmp.path().display().to_string()), "[TEMP]");
        if cfg!(windows) {
            // One `\` after `[TEMP]` per pass (a regex cannot rewrite inside its match);
            // the fixtures nest at most a few folders below the work folder.
            for _ in 0..8 {
                settings.add_filter(r"(\[TEMP\][^\s`'\\]*)\\", "$1/");
            }
        }
        settings.add_filter(r"(?m)^(  caused by: ).*\(os error (\d+)\)$", "$1[OS ERROR $2]");
        settings
    }
}

/// Asserts that `$text` (a command's whole stderr in the [`TestContext`] `$ctx`) matches the
/// insta snapshot `$name` beside the calling test module (`tests/it/snapshots/`), with the
/// filters of [`TestContext::snapshot_settings`]. A mismatch fails the test (with `CI` set,
/// insta writes nothing; otherwise it leaves a `.snap.new` to review with `cargo insta review`).
macro_rules! assert_stderr_snapshot {
    ($ctx:expr, $name:expr, $text:expr) => {
        $ctx.snapshot_settings().bind(|| insta::assert_snapshot!($name, $text))
    };
}
pub(crate) use assert_stderr_snapshot;

/// Reports a test (or a part of one) that did not run here, as `skipped: <why>` on the
/// process's real stderr: libtest captures `eprintln!` but not writes to the stream itself,
/// so the line shows in a passing `cargo test` too. Whether a missing client must fail
/// instead is the caller's rule (`clients::have`, `CUENV_REQUIRE_SHELLS`).
pub fn skipped(why: impl std::fmt::Display) {
    let _ = writeln!(std::io::stderr().lock(), "skipped: {why}");
}

impl Default for TestContext {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for TestContext {
    fn drop(&mut self) {
        // Entries are read-only; make them writable so the temp dir can be deleted.
        make_writable(self.tmp.path());
    }
}

/// Clears read-only on every file and folder under `root` (symlinks left alone).
pub fn make_writable(root: &Path) {
    for e in walkdir::WalkDir::new(root).into_iter().flatten() {
        if e.path_is_symlink() {
            continue;
        }
        if let Ok(m) = e.metadata() {
            let mut p = m.permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            p.set_readonly(false);
            let _ = fs::set_permissions(e.path(), p);
        }
    }
}

/// Flips one byte (the middle one) of the file at `path`, making it writable first.
pub fn flip_byte(path: &Path) {
    let mut p = fs::metadata(path).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    p.set_readonly(false);
    fs::set_permissions(path, p).unwrap();
    // In place, one byte: real DLLs reach 415 MB.
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut f = fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let at = f.metadata().unwrap().len() / 2;
    let mut b = [0u8; 1];
    f.seek(SeekFrom::Start(at)).unwrap();
    f.read_exact(&mut b).unwrap();
    b[0] ^= 0xFF;
    f.seek(SeekFrom::Start(at)).unwrap();
    f.write_all(&b).unwrap();
    f.sync_all().unwrap();
}

/// Runs `f` with the folder `dir` writable, then makes it read-only again.
pub fn with_writable_dir(dir: &Path, f: impl FnOnce()) {
    let set = |ro: bool| {
        let mut p = fs::metadata(dir).unwrap().permissions();
        p.set_readonly(ro);
        fs::set_permissions(dir, p).unwrap();
    };
    set(false);
    f();
    set(true);
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

// ------------------------------------------------------------------ fake libraries

/// The bytes of a tiny real ELF64 x86-64 shared library: read from `$CUENV_TEST_ELF_SO`
/// when set (under Wine there is no gcc to run, so `scripts/test-windows.sh` builds the same
/// library on the Linux side and passes its path), else built once per process with
/// `gcc -shared -fPIC` on Linux. Elsewhere (the Windows CI job) gcc would not produce ELF,
/// so a minimal hand-made ELF64 `ET_DYN` header stands in: cuenv reads only the ELF header
/// of Linux libraries.
pub fn elf_so_template() -> &'static [u8] {
    static ELF: OnceLock<Vec<u8>> = OnceLock::new();
    ELF.get_or_init(|| {
        if let Some(prebuilt) = std::env::var_os("CUENV_TEST_ELF_SO") {
            return fs::read(&prebuilt).unwrap_or_else(|e| panic!("CUENV_TEST_ELF_SO={}: {e}", Path::new(&prebuilt).display()));
        }
        if cfg!(target_os = "linux") { gcc_elf_so() } else { minimal_elf_so() }
    })
}

fn gcc_elf_so() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("fake.c");
    fs::write(&c, "int cudnnGetVersion(void) { return 90500; }\n").unwrap();
    let so = dir.path().join("libfake.so");
    let out = std::process::Command::new("gcc")
        .args(["-shared", "-fPIC", "-O0", "-o"])
        .arg(&so)
        .arg(&c)
        .output()
        .expect("gcc must be installed to build the fake .so fixtures (or set CUENV_TEST_ELF_SO to a prebuilt one)");
    assert!(out.status.success(), "gcc failed: {}", String::from_utf8_lossy(&out.stderr));
    let bytes = fs::read(&so).unwrap();
    assert_eq!(&bytes[..5], b"\x7fELF\x02", "gcc did not produce an ELF64 file");
    bytes
}

/// A 64-byte ELF64 little-endian header: `ET_DYN`, `EM_X86_64`, no segments or sections.
pub fn minimal_elf_so() -> Vec<u8> {
    let mut h = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
    h.resize(16, 0);
    for (v, n) in [(3u64, 2), (62, 2), (1, 4), (0, 8), (0, 8), (0, 8), (0, 4), (64, 2), (56, 2), (0, 2), (64, 2), (0, 2), (0, 2)] {
        h.extend_from_slice(&v.to_le_bytes()[..n]);
    }
    assert_eq!(h.len(), 64);
    h
}

/// A fake Linux shared library named `tag` (ELF64 x86-64; the tag is appended so files differ).
pub fn elf_so(tag: &str) -> Vec<u8> {
    let mut b = elf_so_template().to_vec();
    b.extend_from_slice(format!("\0fake {tag}\0").as_bytes());
    b
}

/// Like [`elf_so`] with the ELF `e_machine` patched (e.g. 183 = EM_AARCH64).
pub fn elf_so_machine(tag: &str, machine: u16) -> Vec<u8> {
    let mut b = elf_so(tag);
    b[18..20].copy_from_slice(&machine.to_le_bytes());
    b
}

// ------------------------------------------------------------------ releases

/// A cuDNN release to fake: version (4 parts) and CUDA major.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    pub version: [u16; 4],
    pub cuda: u64,
}

/// The Windows DLLs of cuDNN 9 (docs/facts.md §2); the first is the dispatcher.
pub const DLLS_9: [&str; 8] = [
    "cudnn64_9.dll",
    "cudnn_adv64_9.dll",
    "cudnn_cnn64_9.dll",
    "cudnn_engines_precompiled64_9.dll",
    "cudnn_engines_runtime_compiled64_9.dll",
    "cudnn_graph64_9.dll",
    "cudnn_heuristic64_9.dll",
    "cudnn_ops64_9.dll",
];
/// The Windows DLLs of cuDNN 8.
pub const DLLS_8: [&str; 7] = [
    "cudnn64_8.dll",
    "cudnn_adv_infer64_8.dll",
    "cudnn_adv_train64_8.dll",
    "cudnn_cnn_infer64_8.dll",
    "cudnn_cnn_train64_8.dll",
    "cudnn_ops_infer64_8.dll",
    "cudnn_ops_train64_8.dll",
];
/// The Linux sonames of cuDNN 9.
pub const SOS_9: [&str; 8] = [
    "libcudnn.so.9",
    "libcudnn_adv.so.9",
    "libcudnn_cnn.so.9",
    "libcudnn_engines_precompiled.so.9",
    "libcudnn_engines_runtime_compiled.so.9",
    "libcudnn_graph.so.9",
    "libcudnn_heuristic.so.9",
    "libcudnn_ops.so.9",
];
/// The Linux sonames of cuDNN 8.
pub const SOS_8: [&str; 7] = [
    "libcudnn.so.8",
    "libcudnn_adv_infer.so.8",
    "libcudnn_adv_train.so.8",
    "libcudnn_cnn_infer.so.8",
    "libcudnn_cnn_train.so.8",
    "libcudnn_ops_infer.so.8",
    "libcudnn_ops_train.so.8",
];

impl Release {
    /// cuDNN 9.5.0.50 for CUDA 12.
    pub const V9: Release = Release { version: [9, 5, 0, 50], cuda: 12 };
    /// cuDNN 8.9.4.25 for CUDA 12.
    pub const V8: Release = Release { version: [8, 9, 4, 25], cuda: 12 };
    /// cuDNN 8.8.0.121 for CUDA 11.
    pub const V8_CU11: Release = Release { version: [8, 8, 0, 121], cuda: 11 };

    pub fn major(&self) -> u16 {
        self.version[0]
    }

    /// `9.5.0.50`
    pub fn v4(&self) -> String {
        self.version.map(|p| p.to_string()).join(".")
    }

    /// `9.5.0`
    pub fn v3(&self) -> String {
        self.version[..3].iter().map(|p| p.to_string()).collect::<Vec<_>>().join(".")
    }

    /// The DLL names of this major.
    pub fn dlls(&self) -> Vec<String> {
        match self.major() {
            9 => DLLS_9.map(String::from).to_vec(),
            8 => DLLS_8.map(String::from).to_vec(),
            m => panic!("no DLL set for cuDNN {m}"),
        }
    }

    /// The Linux sonames (`lib*.so.N`) of this major.
    pub fn sonames(&self) -> Vec<String> {
        match self.major() {
            9 => SOS_9.map(String::from).to_vec(),
            8 => SOS_8.map(String::from).to_vec(),
            m => panic!("no library set for cuDNN {m}"),
        }
    }

    /// `include/cudnn_version.h` of this release.
    pub fn header(&self) -> String {
        version_header(self.version[0], self.version[1], self.version[2])
    }

    /// The `bin` files of a Windows build: every DLL as PE32+ AMD64. The dispatcher and the
    /// sub-libraries carry VERSIONINFO, except `cudnn_graph64_9.dll` and
    /// `cudnn_heuristic64_9.dll`, which have none in the real 9.5.0.50 (docs/facts.md §7b).
    pub fn windows_dlls(&self) -> Vec<(String, Vec<u8>)> {
        self.dlls()
            .into_iter()
            .map(|n| {
                let v = (!matches!(n.as_str(), "cudnn_graph64_9.dll" | "cudnn_heuristic64_9.dll")).then_some(self.version);
                let bytes = pe_dll(PeArch::Amd64, v, &n);
                (n, bytes)
            })
            .collect()
    }

    /// Official Windows archive name, without extension.
    pub fn windows_archive_stem(&self) -> String {
        format!("cudnn-windows-x86_64-{}_cuda{}-archive", self.v4(), self.cuda)
    }

    /// Official Linux archive name, without extension.
    pub fn linux_archive_stem(&self) -> String {
        format!("cudnn-linux-x86_64-{}_cuda{}-archive", self.v4(), self.cuda)
    }

    /// The wheel's distribution name, `nvidia_cudnn_cu12`.
    pub fn dist(&self) -> String {
        format!("nvidia_cudnn_cu{}", self.cuda)
    }

    /// The wheel's file name for a platform tag (`win_amd64`, `manylinux2014_x86_64`).
    pub fn wheel_name(&self, tag: &str) -> String {
        format!("{}-{}-py3-none-{tag}.whl", self.dist(), self.v4())
    }

    /// The wheel's METADATA text.
    pub fn metadata(&self) -> String {
        format!(
            "Metadata-Version: 2.1\nName: nvidia-cudnn-cu{}\nVersion: {}\nSummary: cuDNN runtime libraries\nHome-page: https://developer.nvidia.com/cuda-zone\nLicense: NVIDIA Proprietary Software\nRequires-Python: >=3\n\n",
            self.cuda,
            self.v4()
        )
    }
}

/// A `cudnn_version.h` with the given version macros.
pub fn version_header(major: u16, minor: u16, patch: u16) -> String {
    let enc = if major >= 9 { u32::from(major) * 10000 } else { u32::from(major) * 1000 } + u32::from(minor) * 100 + u32::from(patch);
    format!(
        "/* fake cudnn_version.h */\n#ifndef CUDNN_VERSION_H_\n#define CUDNN_VERSION_H_\n\n#define CUDNN_MAJOR {major}\n#define CUDNN_MINOR {minor}\n#define CUDNN_PATCHLEVEL {patch}\n\n#define CUDNN_VERSION (CUDNN_MAJOR * {} + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n/* {enc} */\n#endif\n",
        if major >= 9 { 10000 } else { 1000 }
    )
}

// ------------------------------------------------------------------ trees

/// One item of a fixture tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    File(Vec<u8>),
    Dir,
    Symlink(String),
}

/// An in-memory file tree with `/`-separated paths (written as given, even hostile ones).
#[derive(Debug, Clone, Default)]
pub struct Tree {
    pub nodes: Vec<(String, Node)>,
}

impl Tree {
    pub fn new() -> Self {
        Tree::default()
    }

    pub fn file(&mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> &mut Self {
        self.nodes.push((path.into(), Node::File(bytes.into())));
        self
    }

    pub fn dir(&mut self, path: impl Into<String>) -> &mut Self {
        self.nodes.push((path.into(), Node::Dir));
        self
    }

    pub fn symlink(&mut self, path: impl Into<String>, target: impl Into<String>) -> &mut Self {
        self.nodes.push((path.into(), Node::Symlink(target.into())));
        self
    }

    /// Removes every node whose path is `path` or lies under it.
    pub fn remove(&mut self, path: &str) -> &mut Self {
        self.nodes.retain(|(p, _)| p != path && !p.starts_with(&format!("{path}/")));
        self
    }

    /// Replaces the bytes of the file at `path`.
    pub fn replace(&mut self, path: &str, bytes: impl Into<Vec<u8>>) -> &mut Self {
        let n = self.nodes.iter_mut().find(|(p, _)| p == path).unwrap_or_else(|| panic!("no {path} in the tree"));
        n.1 = Node::File(bytes.into());
        self
    }

    /// The same tree under `prefix/`.
    pub fn under(&self, prefix: &str) -> Tree {
        Tree { nodes: self.nodes.iter().map(|(p, n)| (format!("{prefix}/{p}"), n.clone())).collect() }
    }

    /// Writes the tree into the folder `dir` (created).
    pub fn write_dir(&self, dir: &Path) {
        fs::create_dir_all(dir).unwrap();
        for (p, n) in &self.nodes {
            let to = dir.join(p);
            if let Some(parent) = to.parent() {
                fs::create_dir_all(parent).unwrap();
            }
            match n {
                Node::File(b) => fs::write(&to, b).unwrap(),
                Node::Dir => fs::create_dir_all(&to).unwrap(),
                Node::Symlink(t) => {
                    #[cfg(unix)]
                    std::os::unix::fs::symlink(t, &to).unwrap();
                    #[cfg(not(unix))]
                    panic!("symlink {t} in a folder fixture needs Unix");
                }
            }
        }
    }

    /// Writes the tree as a zip (deflated, except where [`ZipBuilder`] options say).
    pub fn write_zip(&self, path: &Path) -> ZipLayout {
        let mut z = ZipBuilder::new();
        for (p, n) in &self.nodes {
            z.add(p, n.clone());
        }
        z.write(path)
    }

    /// Writes the tree as a `.tar.xz`.
    pub fn write_tar_xz(&self, path: &Path) {
        let f = fs::File::create(path).unwrap();
        let enc = xz2::write::XzEncoder::new(f, 1);
        let enc = self.write_tar(enc);
        enc.finish().unwrap().sync_all().unwrap();
    }

    /// Writes the tree as a `.tgz`.
    pub fn write_tgz(&self, path: &Path) {
        let f = fs::File::create(path).unwrap();
        let enc = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
        let enc = self.write_tar(enc);
        enc.finish().unwrap().sync_all().unwrap();
    }

    /// Writes the tar stream (raw ustar headers: names and link targets as given).
    pub fn write_tar<W: std::io::Write>(&self, w: W) -> W {
        self.write_tar_with(w, |_| {})
    }

    /// Like [`Tree::write_tar`], calling `extra` to append more members before the end marker.
    pub fn write_tar_with<W: std::io::Write>(&self, w: W, extra: impl FnOnce(&mut tar::Builder<W>)) -> W {
        let mut b = tar::Builder::new(w);
        for (p, n) in &self.nodes {
            let mut h = tar::Header::new_ustar();
            let (ty, mode, data): (tar::EntryType, u32, &[u8]) = match n {
                Node::File(d) => (tar::EntryType::Regular, 0o644, d),
                Node::Dir => (tar::EntryType::Directory, 0o755, &[]),
                Node::Symlink(_) => (tar::EntryType::Symlink, 0o777, &[]),
            };
            set_tar_name(&mut h, p);
            h.set_entry_type(ty);
            h.set_mode(mode);
            h.set_size(data.len() as u64);
            h.set_mtime(1_700_000_000);
            if let Node::Symlink(t) = n {
                h.set_link_name_literal(t.as_bytes()).unwrap();
            }
            h.set_cksum();
            b.append(&h, data).unwrap();
        }
        extra(&mut b);
        b.into_inner().unwrap()
    }
}

/// Writes `name` into a ustar header's name (and prefix) fields, bypassing the `tar`
/// crate's path checks, so hostile names can be written.
pub fn set_tar_name(h: &mut tar::Header, name: &str) {
    let u = h.as_ustar_mut().unwrap();
    let bytes = name.as_bytes();
    if bytes.len() <= 100 {
        u.name[..bytes.len()].copy_from_slice(bytes);
    } else {
        let split = name[..name.len() - 1].rfind('/').filter(|&i| i <= 155 && bytes.len() - i - 1 <= 100).expect("name fits ustar");
        u.prefix[..split].copy_from_slice(&bytes[..split]);
        u.name[..bytes.len() - split - 1].copy_from_slice(&bytes[split + 1..]);
    }
}

// ------------------------------------------------------------------ zip writer

/// How a zip member's data is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Stored,
    Deflated,
}

/// One member of a [`ZipBuilder`].
#[derive(Debug, Clone)]
pub struct ZipMember {
    pub name: String,
    pub node: Node,
    pub method: Method,
    /// Overrides the uncompressed size written in both headers (for lying-header tests).
    pub declared_size: Option<u32>,
    /// Writes no local header or data: the central record points at the local header of
    /// the (earlier) member of this name, with its sizes and CRC (overlapping entries).
    pub alias_of: Option<String>,
}

/// A minimal zip writer (no zip64), writing names and sizes exactly as told.
#[derive(Debug, Clone, Default)]
pub struct ZipBuilder {
    pub members: Vec<ZipMember>,
}

/// Where the members ended up in a written zip.
#[derive(Debug, Clone)]
pub struct ZipLayout {
    /// (name, offset of the member's data, stored length of the data).
    pub data: Vec<(String, u64, u64)>,
    /// The total file length.
    pub len: u64,
}

impl ZipLayout {
    /// The data offset of member `name`.
    pub fn data_of(&self, name: &str) -> (u64, u64) {
        self.data.iter().find(|d| d.0 == name).map(|d| (d.1, d.2)).unwrap_or_else(|| panic!("no member {name}"))
    }
}

impl ZipBuilder {
    pub fn new() -> Self {
        ZipBuilder::default()
    }

    /// Adds a member (files deflated; folders get a trailing `/`).
    pub fn add(&mut self, name: &str, node: Node) -> &mut ZipMember {
        let name = if node == Node::Dir && !name.ends_with('/') { format!("{name}/") } else { name.to_string() };
        self.members.push(ZipMember { name, node, method: Method::Deflated, declared_size: None, alias_of: None });
        self.members.last_mut().unwrap()
    }

    /// The member named `name`, to tweak its options.
    pub fn member(&mut self, name: &str) -> &mut ZipMember {
        self.members.iter_mut().find(|m| m.name == name).unwrap_or_else(|| panic!("no member {name}"))
    }

    /// Writes the zip to `path`.
    pub fn write(&self, path: &Path) -> ZipLayout {
        let (bytes, layout) = self.to_bytes();
        fs::write(path, bytes).unwrap();
        layout
    }

    pub fn to_bytes(&self) -> (Vec<u8>, ZipLayout) {
        let mut out: Vec<u8> = Vec::new();
        let mut central: Vec<u8> = Vec::new();
        let mut data_offsets = Vec::new();
        // (name -> local header offset, CRC, packed length, declared size, method id) for aliases.
        let mut locals: std::collections::HashMap<&str, (u32, u32, u32, u32, u16)> = std::collections::HashMap::new();
        // The last deflated content, reused when the next member holds the same bytes.
        let mut last: Option<(&[u8], Vec<u8>, u32)> = None;
        for m in &self.members {
            let (raw, mode): (&[u8], u32) = match &m.node {
                Node::File(d) => (d, 0o100644),
                Node::Dir => (&[], 0o040755),
                Node::Symlink(t) => (t.as_bytes(), 0o120777),
            };
            let name = m.name.as_bytes();
            let method = if m.node == Node::Dir { Method::Stored } else { m.method };
            let (offset, crc, packed_len, usize_, method_id) = if let Some(of) = &m.alias_of {
                *locals.get(of.as_str()).unwrap_or_else(|| panic!("alias of {of}, which is not an earlier member"))
            } else {
                let (packed, crc) = match &last {
                    Some((r, p, c)) if *r == raw && method == Method::Deflated => (p.clone(), *c),
                    _ => {
                        let mut crc = flate2::Crc::new();
                        crc.update(raw);
                        let packed = match method {
                            Method::Stored => raw.to_vec(),
                            Method::Deflated => {
                                let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
                                e.write_all(raw).unwrap();
                                e.finish().unwrap()
                            }
                        };
                        if method == Method::Deflated {
                            last = Some((raw, packed.clone(), crc.sum()));
                        }
                        (packed, crc.sum())
                    }
                };
                let method_id: u16 = if method == Method::Stored { 0 } else { 8 };
                let usize_ = m.declared_size.unwrap_or(raw.len() as u32);
                let offset = out.len() as u32;
                // Local file header
                out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
                zip_fields(&mut out, method_id, crc, packed.len() as u32, usize_, name.len() as u16);
                out.extend_from_slice(name);
                data_offsets.push((m.name.clone(), out.len() as u64, packed.len() as u64));
                out.extend_from_slice(&packed);
                let local = (offset, crc, packed.len() as u32, usize_, method_id);
                locals.insert(m.name.as_str(), local);
                local
            };
            let fields = |v: &mut Vec<u8>| zip_fields(v, method_id, crc, packed_len, usize_, name.len() as u16);
            // Central directory record
            central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
            central.extend_from_slice(&((3u16 << 8) | 20).to_le_bytes()); // made by Unix
            fields(&mut central);
            central.extend_from_slice(&0u16.to_le_bytes()); // comment length
            central.extend_from_slice(&0u16.to_le_bytes()); // disk
            central.extend_from_slice(&0u16.to_le_bytes()); // internal attributes
            let dos_dir = if m.node == Node::Dir { 0x10 } else { 0 };
            central.extend_from_slice(&((mode << 16) | dos_dir).to_le_bytes());
            central.extend_from_slice(&offset.to_le_bytes());
            central.extend_from_slice(name);
        }
        let cd_offset = out.len() as u32;
        out.extend_from_slice(&central);
        out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        out.extend_from_slice(&[0u8; 4]); // disk numbers
        let n = self.members.len() as u16;
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&(central.len() as u32).to_le_bytes());
        out.extend_from_slice(&cd_offset.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes()); // comment length
        let len = out.len() as u64;
        (out, ZipLayout { data: data_offsets, len })
    }
}

/// The header fields shared by a local header and a central record, from "version needed"
/// to "extra length".
fn zip_fields(v: &mut Vec<u8>, method_id: u16, crc: u32, packed: u32, size: u32, name_len: u16) {
    v.extend_from_slice(&20u16.to_le_bytes()); // version needed
    v.extend_from_slice(&0x0800u16.to_le_bytes()); // flags: UTF-8 names
    v.extend_from_slice(&method_id.to_le_bytes());
    v.extend_from_slice(&0u16.to_le_bytes()); // time
    v.extend_from_slice(&0x0021u16.to_le_bytes()); // date 1980-01-01
    v.extend_from_slice(&crc.to_le_bytes());
    v.extend_from_slice(&packed.to_le_bytes());
    v.extend_from_slice(&size.to_le_bytes());
    v.extend_from_slice(&name_len.to_le_bytes());
    v.extend_from_slice(&0u16.to_le_bytes()); // extra length
}

impl Tree {
    /// A [`ZipBuilder`] holding this tree's nodes, to tweak before writing.
    pub fn zip_builder(&self) -> ZipBuilder {
        let mut z = ZipBuilder::new();
        for (p, n) in &self.nodes {
            z.add(p, n.clone());
        }
        z
    }
}

// ------------------------------------------------------------------ layouts

/// Where the DLLs sit in an official Windows archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinDir {
    /// `bin\*.dll` (up to 9.17).
    Bin,
    /// `bin\x64\*.dll` (9.18 and later).
    BinX64,
}

/// The content of an official Windows archive's top folder (no top folder in the paths):
/// `bin[/x64]/*.dll`, `include/cudnn.h`, `include/cudnn_version.h`, `lib/x64/cudnn.lib`, `LICENSE`.
pub fn windows_release_tree(r: &Release, bin: BinDir) -> Tree {
    let mut t = Tree::new();
    let bin_dir = match bin {
        BinDir::Bin => "bin",
        BinDir::BinX64 => "bin/x64",
    };
    for (n, b) in r.windows_dlls() {
        t.file(format!("{bin_dir}/{n}"), b);
    }
    t.file("include/cudnn.h", "/* fake cudnn.h */\n#include \"cudnn_version.h\"\n");
    t.file("include/cudnn_version.h", r.header());
    t.file("lib/x64/cudnn.lib", b"!<arch>\nfake import library\n".to_vec());
    t.file(format!("lib/x64/cudnn{}.lib", r.major()), b"!<arch>\nfake import library 2\n".to_vec());
    t.file("LICENSE", "fake NVIDIA license\n");
    t
}

/// An official Windows archive `cudnn-windows-x86_64-<ver>_cuda<N>-archive.zip`, with
/// explicit folder members like NVIDIA's.
pub fn windows_zip(dir: &Path, r: &Release, bin: BinDir) -> PathBuf {
    let stem = r.windows_archive_stem();
    let mut t = Tree::new();
    t.dir(&stem);
    t.nodes.extend(windows_release_tree(r, bin).under(&stem).nodes);
    let path = dir.join(format!("{stem}.zip"));
    t.write_zip(&path);
    path
}

/// The content of an official Linux archive's top folder: `include/`, `lib/` with the
/// chains `libX.so -> libX.so.N -> libX.so.N.m.p`, static `.a` files, `LICENSE`.
pub fn linux_release_tree(r: &Release) -> Tree {
    let mut t = Tree::new();
    t.dir("include").dir("lib");
    t.file("include/cudnn.h", "/* fake cudnn.h */\n#include \"cudnn_version.h\"\n");
    t.file("include/cudnn_version.h", r.header());
    for so in r.sonames() {
        let full = format!("{so}.{}.{}", r.version[1], r.version[2]);
        let dev = so.rsplit_once('.').unwrap().0.to_string(); // libX.so
        t.file(format!("lib/{full}"), elf_so(&full));
        t.symlink(format!("lib/{so}"), full.clone());
        t.symlink(format!("lib/{dev}"), so.clone());
    }
    t.file("lib/libcudnn_adv_static.a", b"!<arch>\nfake static library\n".to_vec());
    t.file("LICENSE", "fake NVIDIA license\n");
    t
}

/// An official Linux archive `cudnn-linux-x86_64-<ver>_cuda<N>-archive.tar.xz`.
pub fn linux_tar_xz(dir: &Path, r: &Release) -> PathBuf {
    let stem = r.linux_archive_stem();
    let mut t = Tree::new();
    t.dir(&stem);
    t.nodes.extend(linux_release_tree(r).under(&stem).nodes);
    let path = dir.join(format!("{stem}.tar.xz"));
    t.write_tar_xz(&path);
    path
}

/// A legacy (8.2 and older) Windows zip `cudnn-<cuda>-windows-x64-v<ver>.zip`: one top
/// folder `cuda/` with `bin`, `include`, `lib/x64`.
pub fn legacy_windows_zip(dir: &Path, r: &Release, cuda_minor: u16) -> PathBuf {
    let mut t = Tree::new();
    for (n, b) in r.windows_dlls() {
        t.file(format!("cuda/bin/{n}"), b);
    }
    t.file("cuda/include/cudnn.h", "/* fake cudnn.h */\n");
    t.file("cuda/include/cudnn_version.h", r.header());
    t.file("cuda/lib/x64/cudnn.lib", b"!<arch>\nfake\n".to_vec());
    t.file("NVIDIA_SLA_cuDNN_Support.txt", "fake license\n");
    let path = dir.join(format!("cudnn-{}.{cuda_minor}-windows-x64-v{}.zip", r.cuda, r.v4()));
    t.write_zip(&path);
    path
}

/// A legacy Linux `.tgz` `cudnn-<cuda>-linux-x64-v<ver>.tgz`: `cuda/include`,
/// `cuda/lib64` with symlink chains.
pub fn legacy_linux_tgz(dir: &Path, r: &Release, cuda_minor: u16) -> PathBuf {
    let mut t = Tree::new();
    t.dir("cuda").dir("cuda/include").dir("cuda/lib64");
    t.file("cuda/include/cudnn.h", "/* fake cudnn.h */\n");
    t.file("cuda/include/cudnn_version.h", r.header());
    for so in r.sonames() {
        let full = format!("{so}.{}.{}", r.version[1], r.version[2]);
        let dev = so.rsplit_once('.').unwrap().0.to_string();
        t.file(format!("cuda/lib64/{full}"), elf_so(&full));
        t.symlink(format!("cuda/lib64/{so}"), full.clone());
        t.symlink(format!("cuda/lib64/{dev}"), so.clone());
    }
    t.file("cuda/NVIDIA_SLA_cuDNN_Support.txt", "fake license\n");
    let path = dir.join(format!("cudnn-{}.{cuda_minor}-linux-x64-v{}.tgz", r.cuda, r.v4()));
    t.write_tgz(&path);
    path
}

/// Which wheel to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WheelOs {
    Windows,
    Linux,
}

impl WheelOs {
    pub fn tag(self) -> &'static str {
        match self {
            WheelOs::Windows => "win_amd64",
            WheelOs::Linux => "manylinux2014_x86_64",
        }
    }
}

/// The files of an installed `nvidia-cudnn-cuNN` (what a wheel holds, minus dist-info):
/// `nvidia/__init__.py`, `nvidia/cudnn/__init__.py`, `nvidia/cudnn/{bin|lib}/...`,
/// `nvidia/cudnn/include/*.h`.
pub fn wheel_payload(r: &Release, os: WheelOs) -> Tree {
    let mut t = Tree::new();
    t.file("nvidia/__init__.py", "");
    t.file("nvidia/cudnn/__init__.py", "");
    match os {
        WheelOs::Windows => {
            for (n, b) in r.windows_dlls() {
                t.file(format!("nvidia/cudnn/bin/{n}"), b);
            }
            t.file("nvidia/cudnn/bin/__init__.py", "");
            if r.major() == 8 {
                // The 8.9 Windows wheels also ship import libraries (9.x ones do not).
                t.file("nvidia/cudnn/lib/x64/cudnn.lib", b"!<arch>\nfake\n".to_vec());
                t.file(format!("nvidia/cudnn/lib/x64/cudnn64_{}.lib", r.major()), b"!<arch>\nfake 2\n".to_vec());
            }
        }
        WheelOs::Linux => {
            // The real Linux wheels hold only `.so.N` names and no symlinks (docs/facts.md §7b).
            for so in r.sonames() {
                t.file(format!("nvidia/cudnn/lib/{so}"), elf_so(&so));
            }
            t.file("nvidia/cudnn/lib/__init__.py", "");
        }
    }
    t.file("nvidia/cudnn/include/cudnn.h", "/* fake cudnn.h */\n");
    t.file("nvidia/cudnn/include/cudnn_version.h", r.header());
    t.file("nvidia/cudnn/include/__init__.py", "");
    t
}

/// The `*.dist-info` folder name of a release's wheel.
pub fn dist_info(r: &Release) -> String {
    format!("{}-{}.dist-info", r.dist(), r.v4())
}

/// A wheel tree: the payload plus `*.dist-info/{METADATA,WHEEL,top_level.txt,RECORD}`,
/// RECORD listing every file with `sha256=<urlsafe b64, no padding>,size`.
pub fn wheel_tree(r: &Release, os: WheelOs) -> Tree {
    let mut t = wheel_payload(r, os);
    let di = dist_info(r);
    t.file(format!("{di}/METADATA"), r.metadata());
    t.file(format!("{di}/WHEEL"), format!("Wheel-Version: 1.0\nGenerator: fake\nRoot-Is-Purelib: true\nTag: py3-none-{}\n", os.tag()));
    t.file(format!("{di}/top_level.txt"), "nvidia\n");
    add_record(&mut t, &di);
    t
}

/// Appends `<dist_info>/RECORD` listing every file of `t`.
pub fn add_record(t: &mut Tree, dist_info: &str) {
    t.file(format!("{dist_info}/RECORD"), record_text(t, dist_info));
}

/// The RECORD text for the files of `t` (plus RECORD's own `,,` line).
pub fn record_text(t: &Tree, dist_info: &str) -> String {
    use base64::Engine as _;
    let mut s = String::new();
    for (p, n) in &t.nodes {
        if let Node::File(b) = n {
            if *p == format!("{dist_info}/RECORD") {
                continue;
            }
            let h = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(b));
            s.push_str(&format!("{p},sha256={h},{}\n", b.len()));
        }
    }
    s.push_str(&format!("{dist_info}/RECORD,,\n"));
    s
}

/// A wheel file `nvidia_cudnn_cuNN-<ver>-py3-none-<tag>.whl` in `dir`.
pub fn wheel(dir: &Path, r: &Release, os: WheelOs) -> PathBuf {
    let path = dir.join(r.wheel_name(os.tag()));
    wheel_tree(r, os).write_zip(&path);
    path
}

/// An installed wheel: `<dir>/site-packages/nvidia/cudnn` plus the sibling
/// `<dist>-<ver>.dist-info/METADATA`. Returns the `nvidia/cudnn` folder.
pub fn site_packages(dir: &Path, r: &Release, os: WheelOs) -> PathBuf {
    let site = dir.join("site-packages");
    let mut t = wheel_payload(r, os);
    let di = dist_info(r);
    t.file(format!("{di}/METADATA"), r.metadata());
    t.file(format!("{di}/INSTALLER"), "pip\n");
    add_record(&mut t, &di);
    t.write_dir(&site);
    site.join("nvidia").join("cudnn")
}

/// NVIDIA's Windows exe installer tree `CUDNN/v<major.minor>` with one variant per CUDA
/// `major.minor` in `variants`: `bin/<v>/x64/*.dll`, `include/<v>/*.h`, `lib/<v>/x64/*.lib`.
/// Returns the `v9.x` folder.
pub fn installer_tree(dir: &Path, r: &Release, variants: &[&str]) -> PathBuf {
    let mut t = Tree::new();
    for v in variants {
        let cuda_major: u16 = v.split('.').next().unwrap().parse().unwrap();
        for (n, _) in r.windows_dlls() {
            // Each variant's DLLs differ in bytes, like the real builds per CUDA major.
            let ver = (!matches!(n.as_str(), "cudnn_graph64_9.dll" | "cudnn_heuristic64_9.dll")).then_some(r.version);
            t.file(format!("bin/{v}/x64/{n}"), pe_dll(PeArch::Amd64, ver, &format!("{n} for CUDA {v} ({cuda_major})")));
        }
        t.file(format!("include/{v}/cudnn.h"), "/* fake cudnn.h */\n");
        t.file(format!("include/{v}/cudnn_version.h"), r.header());
        t.file(format!("lib/{v}/x64/cudnn.lib"), format!("!<arch>\nfake for {v}\n"));
    }
    t.file("LICENSE", "fake NVIDIA license\n");
    let root = dir.join("CUDNN").join(format!("v{}.{}", r.version[0], r.version[1]));
    t.write_dir(&root);
    root
}

// ------------------------------------------------------------------ hostile and broken inputs

/// Builders of inputs `cuenv store add` must refuse. Each starts from a good release and
/// breaks one rule, so the error can only come from that rule. Archive names are the
/// official ones (the name alone never makes an input acceptable).
pub mod hostile {
    use super::*;

    /// The official Windows archive tree of `r`, with its top folder, and its stem.
    pub fn windows_archive(r: &Release) -> (String, Tree) {
        let stem = r.windows_archive_stem();
        (stem.clone(), windows_release_tree(r, BinDir::Bin).under(&stem))
    }

    /// The official Linux archive tree of `r`, with its top folder, and its stem.
    pub fn linux_archive(r: &Release) -> (String, Tree) {
        let stem = r.linux_archive_stem();
        (stem.clone(), linux_release_tree(r).under(&stem))
    }

    /// A good cuDNN 9 Windows zip plus one file member named exactly `member` (e.g. with
    /// `..`, an absolute path, a drive letter `C:`, a UNC `\\server\share` prefix).
    pub fn zip_with_member(dir: &Path, member: &str) -> PathBuf {
        let (stem, mut t) = windows_archive(&Release::V9);
        t.file(member, b"evil".to_vec());
        let path = dir.join(format!("{stem}.zip"));
        t.write_zip(&path);
        path
    }

    /// A good cuDNN 9 Linux `.tar.xz` plus one file member named exactly `member`.
    pub fn tar_with_member(dir: &Path, member: &str) -> PathBuf {
        let (stem, mut t) = linux_archive(&Release::V9);
        t.file(member, b"evil".to_vec());
        let path = dir.join(format!("{stem}.tar.xz"));
        t.write_tar_xz(&path);
        path
    }

    /// A good cuDNN 9 Linux archive plus a symlink `<top>/<link>` -> `target` (e.g.
    /// `../../etc/passwd`, `/etc/passwd`), as `.tar.xz` or (with `zip`) a zip.
    /// Returns (the archive, the link's member name).
    pub fn archive_with_symlink(dir: &Path, link: &str, target: &str, zip: bool) -> (PathBuf, String) {
        let (stem, mut t) = linux_archive(&Release::V9);
        let member = format!("{stem}/{link}");
        t.symlink(&member, target);
        let path = dir.join(format!("{stem}.{}", if zip { "zip" } else { "tar.xz" }));
        if zip {
            t.write_zip(&path);
        } else {
            t.write_tar_xz(&path);
        }
        (path, member)
    }

    /// A good Linux archive plus one raw tar member of type `ty` at `<top>/<name>` (a
    /// hard link to `link`, a FIFO, ...).
    pub fn tar_with_special(dir: &Path, name: &str, ty: tar::EntryType, link: Option<&str>) -> (PathBuf, String) {
        let (stem, t) = linux_archive(&Release::V9);
        let member = format!("{stem}/{name}");
        let path = dir.join(format!("{stem}.tar.xz"));
        let enc = xz2::write::XzEncoder::new(fs::File::create(&path).unwrap(), 1);
        let enc = t.write_tar_with(enc, |b| {
            let mut h = tar::Header::new_ustar();
            set_tar_name(&mut h, &member);
            h.set_entry_type(ty);
            if let Some(l) = link {
                h.set_link_name_literal(l.as_bytes()).unwrap();
            }
            h.set_size(0);
            h.set_cksum();
            b.append(&h, &[][..]).unwrap();
        });
        enc.finish().unwrap();
        (path, member)
    }

    /// A Windows zip holding `bin/cudnn64_9.dll` and `bin/CUDNN64_9.dll`.
    /// Returns (the zip, the first name, the second name).
    pub fn case_collision_zip(dir: &Path) -> (PathBuf, String, String) {
        let (stem, mut t) = windows_archive(&Release::V9);
        let second = format!("{stem}/bin/CUDNN64_9.dll");
        t.file(&second, pe_dll(PeArch::Amd64, Some([9, 5, 0, 50]), "other"));
        let path = dir.join(format!("{stem}.zip"));
        t.write_zip(&path);
        (path, format!("{stem}/bin/cudnn64_9.dll"), second)
    }

    /// A Windows zip whose member `<top>/<rel>` declares `declared` uncompressed bytes in
    /// both its local and central headers, whatever its data holds. Returns (zip, member).
    pub fn lying_size_zip(dir: &Path, rel: &str, declared: u32) -> (PathBuf, String) {
        let (stem, t) = windows_archive(&Release::V9);
        let mut z = t.zip_builder();
        let member = format!("{stem}/{rel}");
        z.member(&member).declared_size = Some(declared);
        let path = dir.join(format!("{stem}.zip"));
        z.write(&path);
        (path, member)
    }

    /// A Windows zip plus `bin/cudnn_bomb64_9.dll`: `size` zero bytes deflated (64 MiB
    /// deflate to about 64 KiB, past the 200:1 bound). Returns (zip, member).
    pub fn zip_bomb(dir: &Path, size: usize) -> (PathBuf, String) {
        let (stem, t) = windows_archive(&Release::V9);
        let mut z = t.zip_builder();
        let member = format!("{stem}/bin/cudnn_bomb64_9.dll");
        z.add(&member, Node::File(vec![0u8; size]));
        let path = dir.join(format!("{stem}.zip"));
        z.write(&path);
        (path, member)
    }

    /// A Windows zip whose member `<top>/<rel>` is stored (not deflated) and has one bit
    /// flipped in its data, so only its CRC-32 can tell. Returns (zip, member).
    pub fn bad_crc_zip(dir: &Path, rel: &str) -> (PathBuf, String) {
        let (stem, t) = windows_archive(&Release::V9);
        let mut z = t.zip_builder();
        let member = format!("{stem}/{rel}");
        z.member(&member).method = Method::Stored;
        let path = dir.join(format!("{stem}.zip"));
        let layout = z.write(&path);
        let (offset, len) = layout.data_of(&member);
        let mut bytes = fs::read(&path).unwrap();
        bytes[(offset + len / 2) as usize] ^= 0x01;
        fs::write(&path, bytes).unwrap();
        (path, member)
    }

    /// A Windows zip plus `count` members `bin/cudnn_pad<i>64_9.dll`, each `size` zero bytes
    /// deflated: each under the per-member ratio bound (it starts at 4 MiB), together a bomb
    /// (64 x (4 MiB - 1) is 256 MiB from about 300 KB). Returns (zip, first member).
    pub fn zip_of_many_small_bombs(dir: &Path, count: usize, size: usize) -> (PathBuf, String) {
        let (stem, t) = windows_archive(&Release::V9);
        let mut z = t.zip_builder();
        let zeros = vec![0u8; size];
        for i in 0..count {
            z.add(&format!("{stem}/bin/cudnn_pad{i}64_9.dll"), Node::File(zeros.clone()));
        }
        let path = dir.join(format!("{stem}.zip"));
        z.write(&path);
        (path, format!("{stem}/bin/cudnn_pad064_9.dll"))
    }

    /// A Windows zip plus one member `bin/cudnn_one64_9.dll` of `size` zero bytes and
    /// `aliases` more central-directory entries (other names) all pointing at its local
    /// header: the data is stored once but would be extracted `aliases + 1` times.
    /// Returns (zip, the first alias).
    pub fn zip_with_aliased_member(dir: &Path, aliases: usize, size: usize) -> (PathBuf, String) {
        let (stem, t) = windows_archive(&Release::V9);
        let mut z = t.zip_builder();
        let one = format!("{stem}/bin/cudnn_one64_9.dll");
        z.add(&one, Node::File(vec![0u8; size]));
        for i in 0..aliases {
            z.add(&format!("{stem}/bin/cudnn_alias{i}64_9.dll"), Node::File(Vec::new())).alias_of = Some(one.clone());
        }
        let path = dir.join(format!("{stem}.zip"));
        z.write(&path);
        (path, format!("{stem}/bin/cudnn_alias064_9.dll"))
    }

    /// A `.tar.xz` Linux archive plus `count` members `lib/libpad<i>.a` of `size` zero bytes.
    pub fn tar_xz_bomb(dir: &Path, count: usize, size: usize) -> PathBuf {
        let (stem, mut t) = linux_archive(&Release::V9);
        for i in 0..count {
            t.file(format!("{stem}/lib/libpad{i}.a"), vec![0u8; size]);
        }
        let path = dir.join(format!("{stem}.tar.xz"));
        t.write_tar_xz(&path);
        path
    }

    /// A good cuDNN 9 Windows zip plus one member whose name is the raw bytes `name` (which
    /// need not be UTF-8), under the archive's top folder.
    pub fn zip_with_raw_member(dir: &Path, name: &[u8]) -> PathBuf {
        // Written with a placeholder name of the same length, then patched in place (zip
        // headers carry no checksum of names).
        let (stem, mut t) = windows_archive(&Release::V9);
        let marker = "#".repeat(name.len());
        let member = format!("{stem}/bin/{marker}");
        t.file(&member, b"evil".to_vec());
        let path = dir.join(format!("{stem}.zip"));
        t.write_zip(&path);
        let mut bytes = fs::read(&path).unwrap();
        let needle = member.as_bytes();
        let mut replaced = 0;
        let mut i = 0;
        while i + needle.len() <= bytes.len() {
            if &bytes[i..i + needle.len()] == needle {
                bytes[i + needle.len() - name.len()..i + needle.len()].copy_from_slice(name);
                replaced += 1;
                i += needle.len();
            } else {
                i += 1;
            }
        }
        assert_eq!(replaced, 2, "the name is in the local header and the central record");
        fs::write(&path, bytes).unwrap();
        path
    }

    /// A good cuDNN 9 Linux `.tar.xz` plus one file member whose name is `<top>/lib/` and the
    /// raw bytes `name` (which need not be UTF-8).
    pub fn tar_with_raw_member(dir: &Path, name: &[u8]) -> PathBuf {
        let (stem, t) = linux_archive(&Release::V9);
        let path = dir.join(format!("{stem}.tar.xz"));
        let enc = xz2::write::XzEncoder::new(fs::File::create(&path).unwrap(), 1);
        let enc = t.write_tar_with(enc, |b| {
            let mut full = format!("{stem}/lib/").into_bytes();
            full.extend_from_slice(name);
            let mut h = tar::Header::new_ustar();
            let u = h.as_ustar_mut().unwrap();
            u.name[..full.len()].copy_from_slice(&full);
            h.set_entry_type(tar::EntryType::Regular);
            h.set_mode(0o644);
            h.set_size(4);
            h.set_cksum();
            b.append(&h, &b"evil"[..]).unwrap();
        });
        enc.finish().unwrap();
        path
    }

    /// Cuts the file at `path` to `num/den` of its length.
    pub fn truncate(path: &Path, num: usize, den: usize) {
        let bytes = fs::read(path).unwrap();
        fs::write(path, &bytes[..bytes.len() * num / den]).unwrap();
    }

    /// A Windows cuDNN 9 wheel whose `nvidia/cudnn/bin/<dll>` was changed after RECORD was
    /// written (its RECORD hash is wrong; CRCs are fine).
    pub fn wheel_with_wrong_record_hash(dir: &Path, dll: &str) -> PathBuf {
        let r = Release::V9;
        let mut t = wheel_tree(&r, WheelOs::Windows);
        t.replace(&format!("nvidia/cudnn/bin/{dll}"), pe_dll(PeArch::Amd64, Some(r.version), "tampered"));
        let path = dir.join(r.wheel_name(WheelOs::Windows.tag()));
        t.write_zip(&path);
        path
    }

    /// A folder with CUDA-looking content but no cuDNN dispatcher.
    pub fn folder_without_cudnn(dir: &Path) -> PathBuf {
        let folder = dir.join("not-cudnn");
        let mut t = Tree::new();
        t.file("bin/cublas64_12.dll", pe_dll(PeArch::Amd64, Some([12, 6, 4, 1]), "cublas"));
        t.file("include/cublas.h", "x");
        t.write_dir(&folder);
        folder
    }

    /// An official Windows 9.5.0.50 archive whose `cudnn_version.h` says `header`
    /// (e.g. 9.4.0); its DLLs carry no VERSIONINFO, so only the name and header disagree.
    pub fn version_conflict_zip(dir: &Path, header: (u16, u16, u16)) -> PathBuf {
        let r = Release::V9;
        let (stem, mut t) = windows_archive(&r);
        t.replace(&format!("{stem}/include/cudnn_version.h"), version_header(header.0, header.1, header.2));
        for n in r.dlls() {
            t.replace(&format!("{stem}/bin/{n}"), pe_dll(PeArch::Amd64, None, &n));
        }
        let path = dir.join(format!("{stem}.zip"));
        t.write_zip(&path);
        path
    }

    /// An official Windows archive whose `bin/<dll>` is replaced by `bytes` (a PE32 i386
    /// DLL, an ELF file, ...). Returns (zip, member).
    pub fn windows_zip_with_library(dir: &Path, dll: &str, bytes: Vec<u8>) -> (PathBuf, String) {
        let (stem, mut t) = windows_archive(&Release::V9);
        let member = format!("{stem}/bin/{dll}");
        t.replace(&member, bytes);
        let path = dir.join(format!("{stem}.zip"));
        t.write_zip(&path);
        (path, member)
    }
}

/// The folder of the real NVIDIA wheels (scripts/fetch-real-wheels.sh): `$CUENV_REAL_WHEELS`,
/// else `~/.cache/cuenv-real-wheels` (`$HOME` first, so a Linux `HOME` passed through Wine
/// wins over `%USERPROFILE%`).
pub fn real_wheels_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("CUENV_REAL_WHEELS") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE")).expect("HOME or USERPROFILE is set");
    PathBuf::from(home).join(".cache").join("cuenv-real-wheels")
}

/// The cached real wheel `file`; panics with what to run when it is absent.
pub fn real_wheel(file: &str) -> PathBuf {
    let p = real_wheels_dir().join(file);
    assert!(p.is_file(), "{} is missing: run scripts/fetch-real-wheels.sh (or set CUENV_REAL_WHEELS)", p.display());
    p
}

/// The first folder in `dir` (by name) whose name starts with `prefix`, e.g. a venv's
/// `lib/python3.X`.
pub fn first_dir(dir: &Path, prefix: &str) -> PathBuf {
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix)))
        .collect();
    names.sort();
    names.into_iter().next().unwrap_or_else(|| panic!("no {prefix}* folder in {}", dir.display()))
}
