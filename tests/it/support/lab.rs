//! The shared lab of the integration tests ([`Lab`]): a home with three store entries, two
//! toolkit roots and two conda env prefixes, and the helpers around it (fake toolkit roots,
//! host archives, tree digests).

use std::fs;
use std::path::{Path, PathBuf};

use super::*;

/// A home with three store entries (9.5.0.50 cu12, 8.9.4.25 cu12, 8.8.0.121 cu11), two
/// toolkit roots (12.6, 11.8) and two conda env prefixes.
pub(crate) struct Lab {
    pub(crate) ctx: TestContext,
    pub(crate) tk12: PathBuf,
    pub(crate) tk11: PathBuf,
    pub(crate) env_a: PathBuf,
    pub(crate) env_b: PathBuf,
}

/// The extension of the host's default conda shim (`.bat` on Windows, `.sh` elsewhere).
pub(crate) const SHIM_EXT: &str = if cfg!(windows) { "bat" } else { "sh" };

/// A fake toolkit root for this host: `lib64/libcudart.so.N` (Linux) or
/// `bin\cudart64_N.dll` (Windows; `cudart64_110.dll` for 11.x).
pub(crate) fn toolkit(dir: &Path, version: &str, major: u32) -> PathBuf {
    let root = dir.join(format!("cuda-{version}"));
    fs::create_dir_all(root.join("lib64")).unwrap();
    fs::create_dir_all(root.join("bin")).unwrap();
    fs::write(root.join("version.json"), format!(r#"{{"cuda": {{"name": "CUDA SDK", "version": "{version}"}}}}"#)).unwrap();
    if cfg!(windows) {
        let dll = if major == 11 { "cudart64_110.dll".to_string() } else { format!("cudart64_{major}.dll") };
        fs::write(root.join("bin").join(&dll), pe_dll(PeArch::Amd64, None, &dll)).unwrap();
    } else {
        let so = format!("libcudart.so.{major}");
        fs::write(root.join("lib64").join(&so), elf_so(&so)).unwrap();
    }
    root
}

/// A release archive for this host: the official Linux `.tar.xz`, or the Windows `.zip`
/// (the store refuses to apply another platform's cuDNN).
pub(crate) fn host_archive(dir: &Path, r: &Release) -> PathBuf {
    if cfg!(windows) { windows_zip(dir, r, BinDir::Bin) } else { linux_tar_xz(dir, r) }
}

/// True when this machine's volume takes the host's native links (Linux, real Windows on
/// NTFS); false under Wine, which refuses junctions (os error 50).
pub(crate) fn native_links_work(dir: &Path) -> bool {
    let (target, link) = (dir.join(".probe-target"), dir.join(".probe-link"));
    fs::create_dir_all(&target).unwrap();
    let ok = cuenv::link::create(cuenv::link::LinkKind::native(), &target, &link).is_ok();
    let _ = cuenv::link::remove(&link);
    let _ = fs::remove_dir(&target);
    ok
}

impl Lab {
    pub(crate) fn new() -> Lab {
        Lab::in_context(TestContext::new())
    }

    /// The lab of [`Lab::new`] in `ctx` (e.g. one with a long home).
    pub(crate) fn in_context(ctx: TestContext) -> Lab {
        for r in [Release::V9, Release::V8, Release::V8_CU11] {
            let a = host_archive(&ctx.work, &r);
            ctx.add_ok(&a, &[]);
        }
        let tk12 = toolkit(&ctx.work, "12.6.77", 12);
        let tk11 = toolkit(&ctx.work, "11.8.89", 11);
        let env_a = ctx.path("envs/env a (x86)");
        let env_b = ctx.path("envs/env-b");
        for e in [&env_a, &env_b] {
            fs::create_dir_all(e.join("conda-meta")).unwrap();
        }
        Lab { ctx, tk12, tk11, env_a, env_b }
    }

    /// Writes `lab.toml` (toolkits table + the given profile text) and returns its path.
    pub(crate) fn lab(&self, profiles: &str) -> PathBuf {
        let text = format!("# lab file\n[toolkits]\n\"12.6\" = '{}'\n\"11.8\" = '{}'\n\n{profiles}", self.tk12.display(), self.tk11.display());
        let p = self.ctx.path("lab.toml");
        fs::write(&p, text).unwrap();
        p
    }

    pub(crate) fn three(&self) -> PathBuf {
        self.lab(&format!(
            "[profiles.torch2]\ncuda = \"12\"\ncudnn = \"9.5\"\nconda-env = '{}'\n\n[profiles.tf]\ncuda = \"11.8\"\ncudnn = \"8.8\"\nconda-env = '{}'\n\n[profiles.legacy]\ncuda = \"12\"\ncudnn = \"8.9.4\"\n",
            self.env_a.display(),
            self.env_b.display()
        ))
    }

    pub(crate) fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.ctx.cmd().args(args).output().unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    }

    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.run(args);
        assert_eq!(code, 0, "cuenv {args:?} failed:\n{out}\n{err}");
        out
    }

    pub(crate) fn profiles(&self) -> PathBuf {
        self.ctx.home.join("profiles")
    }

    /// The current generation: what the pointer file `<home>/current` names (a link-free
    /// generation: `auto` under Wine, which refuses junctions), else the `profiles` link's target.
    pub(crate) fn current(&self) -> u64 {
        if let Ok(text) = fs::read_to_string(self.ctx.home.join("current")) {
            return text.trim().parse().unwrap();
        }
        let t = fs::read_link(self.profiles()).unwrap();
        t.parent().unwrap().file_name().unwrap().to_str().unwrap().parse().unwrap()
    }
}

/// Every file under `root` with its content hash, links as their targets.
pub(crate) fn tree_digest(root: &Path) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for e in walkdir::WalkDir::new(root).sort_by_file_name() {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(root).unwrap().display().to_string();
        let d = if e.file_type().is_symlink() {
            fs::read_link(e.path()).unwrap().display().to_string()
        } else if e.file_type().is_file() {
            sha256_hex(&fs::read(e.path()).unwrap())
        } else {
            "dir".into()
        };
        v.push((rel, d));
    }
    v
}

/// [`tree_digest`] of a cuenv home, less the writer lock file (which holds the pid of the
/// last process that took the lock): what "the home is byte-identical" compares.
pub(crate) fn home_digest(home: &Path) -> Vec<(String, String)> {
    tree_digest(home).into_iter().filter(|(p, _)| p != "cuenv.lock").collect()
}
