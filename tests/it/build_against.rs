//! Building against a profile (`cuenv env --build`): `gcc x.c -lcudnn` against a store entry
//! laid out like the pip wheels (only `libcudnn*.so.9` files, no links, no `libcudnn.so`)
//! links through cuenv's linker scripts, and the program runs against the profile with the
//! real loader; in a link mode and in the link-free mode, across apply and rollback.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::stubs::cc_lib;
use crate::support::*;

/// A wheel-like release folder (`lib/*.so.9` with their sonames, `include/`) whose
/// `cudnnGetVersion` answers `M*10000 + m*100`.
fn wheel_like(dir: &Path, minor: u16) -> PathBuf {
    let root = dir.join(format!("cudnn 9.{minor} wheel"));
    let lib = root.join("lib");
    for so in Release::V9.sonames() {
        let src = if so == "libcudnn.so.9" {
            format!("#include <stddef.h>\nsize_t cudnnGetVersion(void) {{ return {}; }}\n", 90000 + u32::from(minor) * 100)
        } else {
            "int cuenv_stub(void) { return 0; }\n".to_string()
        };
        cc_lib(&lib, &so, &src, &[]);
    }
    std::fs::create_dir_all(root.join("include")).unwrap();
    std::fs::write(root.join("include/cudnn_version.h"), version_header(9, minor, 0)).unwrap();
    std::fs::write(root.join("include/cudnn.h"), "#include \"cudnn_version.h\"\n#include <cuda_runtime.h>\nsize_t cudnnGetVersion(void);\n").unwrap();
    root
}

const PROGRAM: &str = "#include <stdio.h>\n#include <cudnn.h>\nint main(void) { printf(\"%d %zu\\n\", CUDNN_VERSION, cudnnGetVersion()); return 0; }\n";

struct Case {
    ctx: TestContext,
    tk: PathBuf,
    link_free: bool,
}

impl Case {
    fn new(link_free: bool) -> Case {
        let ctx = TestContext::new();
        for minor in [7, 8] {
            ctx.add_ok(&wheel_like(&ctx.work, minor), &["--cuda", "12"]);
        }
        let tk = crate::support::lab::toolkit(&ctx.work, "12.6.77", 12);
        // Like the real cudnn.h, the fixture's includes the toolkit's cuda_runtime.h.
        std::fs::create_dir_all(tk.join("include")).unwrap();
        std::fs::write(tk.join("include/cuda_runtime.h"), "#include <stddef.h>\n").unwrap();
        std::fs::write(ctx.work.join("x.c"), PROGRAM).unwrap();
        Case { ctx, tk, link_free }
    }

    fn apply(&self, cudnn: &str) {
        let settings = if self.link_free { "[settings]\nlink-mode = \"none\"\n\n" } else { "" };
        let text = format!("{settings}[toolkits]\n\"12.6\" = '{}'\n\n[profiles.p]\ncuda = \"12\"\ncudnn = \"{cudnn}\"\n", self.tk.display());
        let f = self.ctx.path("lab.toml");
        std::fs::write(&f, text).unwrap();
        self.ok(&["apply", "--no-check", f.to_str().unwrap()]);
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.ctx.cmd().args(args).output().unwrap();
        assert!(out.status.success(), "cuenv {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// Compiles x.c with `-lcudnn` in the build environment, runs it in the profile's
    /// environment and with no cuDNN on the loader path; returns (build text, run output).
    fn build_and_run(&self, exe: &str) -> (String, String) {
        let build = self.ok(&["env", "p", "--build", "--shell", "bash"]);
        let env = self.ok(&["env", "p", "--shell", "bash"]);
        let w = self.ctx.work.display();
        let script = format!("set -e\ncd '{w}'\nunset LIBRARY_PATH CPATH LD_LIBRARY_PATH\n{build}\ngcc x.c -lcudnn -o {exe}\n");
        let out = Command::new("bash").arg("-c").arg(&script).output().unwrap();
        assert!(out.status.success(), "gcc -lcudnn failed:\n{build}\n{}", String::from_utf8_lossy(&out.stderr));
        // The program needs libcudnn.so.9 by name (its DT_NEEDED is the soname, not a path)...
        let bare = Command::new(self.ctx.work.join(exe)).env_remove("LD_LIBRARY_PATH").output().unwrap();
        assert!(!bare.status.success() && String::from_utf8_lossy(&bare.stderr).contains("libcudnn.so.9"), "{bare:?}");
        // ... which the profile's activation serves.
        let run = format!("unset LD_LIBRARY_PATH\n{env}\n'{w}/{exe}'\n");
        let out = Command::new("bash").arg("-c").arg(&run).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (build, String::from_utf8(out.stdout).unwrap())
    }
}

fn build_apply_rollback(link_free: bool) {
    if !crate::support::clients::have_bin("gcc") {
        crate::support::skipped("gcc is not installed: the build_against cases");
        return;
    }
    let c = Case::new(link_free);
    c.apply("9.7");
    let (b1, out) = c.build_and_run("x1");
    assert_eq!(out, "90700 90700\n", "{b1}");
    for v in ["CUDNN_INCLUDE_DIR=", "CUDNN_LIBRARY=", "export LIBRARY_PATH=", "export CPATH=", "CMAKE_LIBRARY_PATH=", "CMAKE_INCLUDE_PATH="] {
        assert!(b1.contains(v), "{v} missing:\n{b1}");
    }
    // CUDNN_LIBRARY is the linker script: a regular file (no link), naming the versioned file.
    let lib = b1.lines().find_map(|l| l.strip_prefix("export CUDNN_LIBRARY='")).and_then(|l| l.strip_suffix('\'')).unwrap();
    let script = PathBuf::from(lib);
    assert!(script.ends_with("libcudnn.so"), "{lib}");
    let real = std::fs::canonicalize(&script).unwrap();
    assert!(std::fs::symlink_metadata(&real).unwrap().is_file());
    let text = std::fs::read_to_string(&real).unwrap();
    assert!(text.contains("INPUT(\"") && text.contains("libcudnn.so.9\")"), "{text}");
    c.apply("9.8");
    let (b2, out) = c.build_and_run("x2");
    assert_eq!(out, "90800 90800\n", "{b2}");
    c.ok(&["rollback"]);
    let (b3, out) = c.build_and_run("x3");
    assert_eq!(out, "90700 90700\n", "{b3}");
    let home = c.ctx.home.display().to_string();
    if link_free {
        // Real folders: the entry's own linker scripts, named again after each switch.
        assert!(b1.contains(&format!("{home}/store/.build/")) && b1 != b2 && b1 == b3, "{b1}\n{b2}\n{b3}");
    } else {
        // The stable view: the same text through every switch.
        assert!(b1.contains(&format!("{home}/profiles/p/build-lib")) && b1 == b2 && b2 == b3, "{b1}\n{b2}");
    }
    // A program built against 9.8 runs against what the profile gives now (9.7 after the
    // rollback): the loader, not the build, picks the library.
    let env = c.ok(&["env", "p", "--shell", "bash"]);
    let out = Command::new("bash").arg("-c").arg(format!("unset LD_LIBRARY_PATH\n{env}\n'{}/x2'\n", c.ctx.work.display())).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "90800 90700\n");
}

#[test]
fn gcc_links_lcudnn_against_a_wheel_entry_in_a_link_mode() {
    build_apply_rollback(false);
}

#[test]
fn gcc_links_lcudnn_against_a_wheel_entry_in_the_link_free_mode() {
    build_apply_rollback(true);
}
