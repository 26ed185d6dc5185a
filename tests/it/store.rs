//! Integration tests of `cuenv store`: every accepted layout, content addressing, list,
//! verify, remove, and a table of refused inputs, one test per error message (exit code 2,
//! the store left unchanged, and the whole stderr, with the member, the rule broken and the
//! hint, as an insta snapshot in `snapshots/`). Fixtures are built at test time by `support`.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

// ------------------------------------------------------------------ fixtures themselves

mod fixtures {
    use super::*;

    fn inspect_bytes(bytes: &[u8]) -> cuenv::sys::binfmt::BinaryInfo {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        fs::write(&p, bytes).unwrap();
        cuenv::sys::binfmt::inspect(&p).unwrap()
    }

    #[test]
    fn pe_dll_parses_with_its_file_version() {
        let info = inspect_bytes(&pe_dll(PeArch::Amd64, Some([9, 5, 0, 50]), "cudnn64_9.dll"));
        assert_eq!(info.platform, Some(cuenv::cudnn::platform::Platform::WindowsX86_64));
        assert_eq!(info.file_version.map(|v| v.to_string()).as_deref(), Some("9.5.0.50"));
    }

    #[test]
    fn pe_dll_without_versioninfo() {
        let info = inspect_bytes(&pe_dll(PeArch::Amd64, None, "cudnn_graph64_9.dll"));
        assert_eq!(info.platform, Some(cuenv::cudnn::platform::Platform::WindowsX86_64));
        assert_eq!(info.file_version, None);
    }

    #[test]
    fn pe32_is_no_cudnn_platform() {
        let info = inspect_bytes(&pe_dll(PeArch::I386, Some([9, 5, 0, 50]), "x"));
        assert_eq!(info.platform, None);
        assert!(info.describe.contains("PE32"), "{}", info.describe);
    }

    #[test]
    fn elf_so_is_linux_x86_64() {
        let info = inspect_bytes(&elf_so("libcudnn.so.9"));
        assert_eq!(info.platform, Some(cuenv::cudnn::platform::Platform::LinuxX86_64));
        let info = inspect_bytes(&elf_so_machine("libcudnn.so.9", 183));
        assert_eq!(info.platform, Some(cuenv::cudnn::platform::Platform::LinuxSbsa));
    }

    #[test]
    fn minimal_elf_is_linux_x86_64() {
        let info = inspect_bytes(&minimal_elf_so());
        assert_eq!(info.platform, Some(cuenv::cudnn::platform::Platform::LinuxX86_64));
    }

    #[test]
    fn zips_read_back_with_the_zip_crate() {
        let dir = tempfile::tempdir().unwrap();
        let p = wheel(dir.path(), &Release::V9, WheelOs::Windows);
        let mut z = zip::ZipArchive::new(fs::File::open(&p).unwrap()).unwrap();
        let mut names = Vec::new();
        for i in 0..z.len() {
            let mut f = z.by_index(i).unwrap();
            names.push(f.name().unwrap().to_string());
            std::io::copy(&mut f, &mut std::io::sink()).unwrap();
        }
        assert!(names.contains(&"nvidia/cudnn/bin/cudnn64_9.dll".to_string()), "{names:?}");
        assert!(names.contains(&"nvidia_cudnn_cu12-9.5.0.50.dist-info/RECORD".to_string()), "{names:?}");
    }
}

// ------------------------------------------------------------------ helpers

/// What an import must have recorded.
struct Expect<'a> {
    version: &'a str,
    cuda: u64,
    platform: &'a str,
    libraries: Vec<String>,
    bin: Option<&'a str>,
    lib: Option<&'a str>,
    include: Option<&'a str>,
}

fn sorted(v: impl IntoIterator<Item = impl Into<String>>) -> Vec<String> {
    let mut v: Vec<String> = v.into_iter().map(Into::into).collect();
    v.sort();
    v
}

/// Checks the `add --json` row, the entry folder and its `entry.toml` against `e`.
fn check_entry(ctx: &TestContext, row: &Value, e: &Expect) -> PathBuf {
    assert_eq!(row["version"], e.version, "{row}");
    assert_eq!(row["cuda_major"], e.cuda, "{row}");
    assert_eq!(row["platform"], e.platform, "{row}");
    assert_eq!(row["existed"], false, "{row}");
    let id = row["id"].as_str().unwrap();
    assert_eq!(id.len(), 64, "{row}");
    let name = format!("cudnn-{}-cuda{}-{}-{}", e.version, e.cuda, e.platform, &id[..12]);
    assert_eq!(row["name"], name.as_str());
    let dir = ctx.store_dir().join(&name);
    assert_eq!(Path::new(row["path"].as_str().unwrap()), dir);
    assert!(dir.is_dir(), "{}", dir.display());

    let meta = ctx.entry_toml(&dir);
    assert_eq!(meta["id"].as_str(), Some(id));
    assert_eq!(meta["name"].as_str(), Some(name.as_str()));
    assert_eq!(meta["version"].as_str(), Some(e.version));
    assert_eq!(meta["cuda_major"].as_integer(), Some(e.cuda as i64));
    assert_eq!(meta["platform"].as_str(), Some(e.platform));
    let libs: Vec<String> = meta["libraries"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    assert_eq!(libs, e.libraries, "library set");
    let layout = meta["layout"].as_table().unwrap();
    for (key, want) in [("bin", e.bin), ("lib", e.lib), ("include", e.include)] {
        assert_eq!(layout.get(key).and_then(|v| v.as_str()), want, "layout.{key}");
        if let Some(w) = want {
            assert!(dir.join(w).is_dir(), "layout.{key} = {w} is not a folder in the entry");
        }
    }
    // Every library is where the layout says.
    let lib_dir = e.bin.or(e.lib).unwrap();
    for l in &e.libraries {
        assert!(dir.join(lib_dir).join(l).exists(), "{l} not in {lib_dir}");
    }
    if let Some(inc) = e.include {
        assert!(dir.join(inc).join("cudnn_version.h").is_file());
    }
    dir
}

fn dll_names(r: &Release) -> Vec<String> {
    sorted(r.dlls())
}

/// The library set of an official Linux archive: each soname, its `.so` link and its
/// full-version file.
fn linux_archive_libs(r: &Release) -> Vec<String> {
    sorted(r.sonames().into_iter().flat_map(|so| {
        let dev = so.rsplit_once('.').unwrap().0.to_string();
        let full = format!("{so}.{}.{}", r.version[1], r.version[2]);
        [so, dev, full]
    }))
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

// ------------------------------------------------------------------ accepted layouts

#[test]
fn official_windows_zip_with_bin() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let zip = windows_zip(&ctx.work, &r, BinDir::Bin);
    let row = ctx.add_ok(&zip, &[]);
    let dir = check_entry(
        &ctx,
        &row,
        &Expect {
            version: "9.5.0.50",
            cuda: 12,
            platform: "windows-x86_64",
            libraries: dll_names(&r),
            bin: Some("bin"),
            lib: Some("lib/x64"),
            include: Some("include"),
        },
    );
    assert_eq!(row["source"], format!("{}.zip", r.windows_archive_stem()));
    assert!(dir.join("LICENSE").is_file());
    let meta = ctx.entry_toml(&dir);
    let src = meta["source"].as_table().unwrap();
    assert_eq!(src["kind"].as_str(), Some("zip"));
    assert_eq!(src["sha256"].as_str(), Some(sha256_hex(&fs::read(&zip).unwrap()).as_str()));
    assert_eq!(src["size"].as_integer(), Some(fs::metadata(&zip).unwrap().len() as i64));
}

#[test]
fn official_windows_zip_with_bin_x64() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let zip = windows_zip(&ctx.work, &r, BinDir::BinX64);
    let row = ctx.add_ok(&zip, &[]);
    check_entry(
        &ctx,
        &row,
        &Expect {
            version: "9.5.0.50",
            cuda: 12,
            platform: "windows-x86_64",
            libraries: dll_names(&r),
            bin: Some("bin/x64"),
            lib: Some("lib/x64"),
            include: Some("include"),
        },
    );
}

#[test]
fn official_windows_zip_cudnn8() {
    let ctx = TestContext::new();
    let r = Release::V8;
    let row = ctx.add_ok(&windows_zip(&ctx.work, &r, BinDir::Bin), &[]);
    check_entry(
        &ctx,
        &row,
        &Expect {
            version: "8.9.4.25",
            cuda: 12,
            platform: "windows-x86_64",
            libraries: dll_names(&r),
            bin: Some("bin"),
            lib: Some("lib/x64"),
            include: Some("include"),
        },
    );
    assert_eq!(dll_names(&r).len(), 7);
}

#[test]
fn official_linux_tar_xz_keeps_symlink_chains() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let row = ctx.add_ok(&linux_tar_xz(&ctx.work, &r), &[]);
    let dir = check_entry(
        &ctx,
        &row,
        &Expect {
            version: "9.5.0.50",
            cuda: 12,
            platform: "linux-x86_64",
            libraries: linux_archive_libs(&r),
            bin: None,
            lib: Some("lib"),
            include: Some("include"),
        },
    );
    #[cfg(unix)]
    {
        assert_eq!(fs::read_link(dir.join("lib/libcudnn.so")).unwrap(), Path::new("libcudnn.so.9"));
        assert_eq!(fs::read_link(dir.join("lib/libcudnn.so.9")).unwrap(), Path::new("libcudnn.so.9.5.0"));
        assert!(fs::symlink_metadata(dir.join("lib/libcudnn.so.9.5.0")).unwrap().file_type().is_file());
        assert_eq!(fs::read(dir.join("lib/libcudnn.so")).unwrap(), elf_so("libcudnn.so.9.5.0"));
    }
    assert!(dir.join("lib/libcudnn_adv_static.a").is_file());
    let meta = ctx.entry_toml(&dir);
    assert_eq!(meta["source"]["kind"].as_str(), Some("tar-xz"));
    let link = meta["files"].as_array().unwrap().iter().find(|f| f["path"].as_str() == Some("lib/libcudnn.so")).unwrap().clone();
    assert_eq!(link["kind"].as_str(), Some("symlink"));
    assert_eq!(link["target"].as_str(), Some("libcudnn.so.9"));
}

/// The `added` line counts libraries, not names: the Linux archive's 8 libraries
/// come as 24 names (`libX.so`, `libX.so.9`, `libX.so.9.5.0`), and the line said 24.
#[test]
fn the_added_line_counts_libraries_not_their_alias_names() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let out = ctx.cmd().args(["store", "add"]).arg(linux_tar_xz(&ctx.work, &r)).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let line = stdout(&out);
    assert_eq!(linux_archive_libs(&r).len(), 24);
    assert!(line.contains("(cuDNN 9.5.0.50 for CUDA 12, linux-x86_64, 8 libraries, "), "{line}");
    // A Windows archive has one name per library.
    let out = ctx.cmd().args(["store", "add"]).arg(windows_zip(&ctx.work, &r, BinDir::Bin)).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("windows-x86_64, 8 libraries, "), "{}", stdout(&out));
}

#[test]
fn official_linux_sbsa_archive() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let stem = format!("cudnn-linux-sbsa-{}_cuda12-archive", r.v4());
    let mut t = Tree::new();
    t.file(format!("{stem}/include/cudnn_version.h"), r.header());
    for so in r.sonames() {
        t.file(format!("{stem}/lib/{so}"), elf_so_machine(&so, 183));
    }
    let path = ctx.path(&format!("{stem}.tar.xz"));
    t.write_tar_xz(&path);
    let row = ctx.add_ok(&path, &[]);
    check_entry(
        &ctx,
        &row,
        &Expect {
            version: "9.5.0.50",
            cuda: 12,
            platform: "linux-sbsa",
            libraries: sorted(r.sonames()),
            bin: None,
            lib: Some("lib"),
            include: Some("include"),
        },
    );
}

#[test]
fn legacy_cuda_folder_zip() {
    let ctx = TestContext::new();
    let r = Release { version: [8, 1, 1, 33], cuda: 11 };
    let row = ctx.add_ok(&legacy_windows_zip(&ctx.work, &r, 2), &[]);
    let dir = check_entry(
        &ctx,
        &row,
        &Expect {
            version: "8.1.1.33",
            cuda: 11,
            platform: "windows-x86_64",
            libraries: dll_names(&r),
            bin: Some("bin"),
            lib: Some("lib/x64"),
            include: Some("include"),
        },
    );
    // The `cuda/` top folder is the release root; files beside it are not part of the entry.
    assert!(!dir.join("cuda").exists() && !dir.join("NVIDIA_SLA_cuDNN_Support.txt").exists());
}

#[test]
fn legacy_cuda_folder_tgz() {
    let ctx = TestContext::new();
    let r = Release { version: [8, 2, 1, 32], cuda: 10 };
    let row = ctx.add_ok(&legacy_linux_tgz(&ctx.work, &r, 2), &[]);
    let dir = check_entry(
        &ctx,
        &row,
        &Expect {
            version: "8.2.1.32",
            cuda: 10,
            platform: "linux-x86_64",
            libraries: linux_archive_libs(&r),
            bin: None,
            lib: Some("lib64"),
            include: Some("include"),
        },
    );
    assert_eq!(ctx.entry_toml(&dir)["source"]["kind"].as_str(), Some("tar-gz"));
    #[cfg(unix)]
    assert_eq!(fs::read_link(dir.join("lib64/libcudnn.so.8")).unwrap(), Path::new("libcudnn.so.8.2.1"));
}

#[test]
fn wheel_windows_cudnn9() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let row = ctx.add_ok(&wheel(&ctx.work, &r, WheelOs::Windows), &[]);
    let dir = check_entry(
        &ctx,
        &row,
        &Expect { version: "9.5.0.50", cuda: 12, platform: "windows-x86_64", libraries: dll_names(&r), bin: Some("bin"), lib: None, include: Some("include") },
    );
    assert_eq!(ctx.entry_toml(&dir)["source"]["kind"].as_str(), Some("wheel"));
    // The entry is nvidia/cudnn; the dist-info and nvidia/__init__.py are not in it.
    assert!(!dir.join(dist_info(&r)).exists() && !dir.join("nvidia").exists());
}

#[test]
fn wheel_linux_cudnn9() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let row = ctx.add_ok(&wheel(&ctx.work, &r, WheelOs::Linux), &[]);
    check_entry(
        &ctx,
        &row,
        &Expect {
            version: "9.5.0.50",
            cuda: 12,
            platform: "linux-x86_64",
            libraries: sorted(r.sonames()),
            bin: None,
            lib: Some("lib"),
            include: Some("include"),
        },
    );
}

#[test]
fn wheel_windows_and_linux_cudnn8() {
    let ctx = TestContext::new();
    for (r, os, platform) in [(Release::V8, WheelOs::Windows, "windows-x86_64"), (Release::V8_CU11, WheelOs::Linux, "linux-x86_64")] {
        let row = ctx.add_ok(&wheel(&ctx.work, &r, os), &[]);
        let win = os == WheelOs::Windows;
        check_entry(
            &ctx,
            &row,
            &Expect {
                version: &r.v4(),
                cuda: r.cuda,
                platform,
                libraries: if win { dll_names(&r) } else { sorted(r.sonames()) },
                bin: win.then_some("bin"),
                lib: Some(if win { "lib/x64" } else { "lib" }),
                include: Some("include"),
            },
        );
    }
    assert_eq!(ctx.entry_dirs().len(), 2);
}

#[test]
fn extracted_archive_folder() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let folder = ctx.path(&r.windows_archive_stem());
    windows_release_tree(&r, BinDir::Bin).write_dir(&folder);
    let row = ctx.add_ok(&folder, &[]);
    let dir = check_entry(
        &ctx,
        &row,
        &Expect {
            version: "9.5.0.50",
            cuda: 12,
            platform: "windows-x86_64",
            libraries: dll_names(&r),
            bin: Some("bin"),
            lib: Some("lib/x64"),
            include: Some("include"),
        },
    );
    let meta = ctx.entry_toml(&dir);
    assert_eq!(meta["source"]["kind"].as_str(), Some("folder"));
    assert!(meta["source"].get("sha256").is_none());
}

#[test]
fn site_packages_nvidia_cudnn_folder_reads_the_dist_info_beside_it() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let folder = site_packages(&ctx.work, &r, WheelOs::Linux);
    let row = ctx.add_ok(&folder, &[]);
    let dir = check_entry(
        &ctx,
        &row,
        &Expect {
            version: "9.5.0.50",
            cuda: 12,
            platform: "linux-x86_64",
            libraries: sorted(r.sonames()),
            bin: None,
            lib: Some("lib"),
            include: Some("include"),
        },
    );
    let meta = ctx.entry_toml(&dir);
    assert!(meta["version_source"].as_str().unwrap().contains("METADATA"), "{}", meta["version_source"]);
}

#[test]
fn installer_tree_picks_the_cuda_variant() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let root = installer_tree(&ctx.work, &r, &["11.8", "12.6"]);
    for (cuda, v) in [("12", "12.6"), ("11", "11.8")] {
        let row = ctx.add_ok(&root, &["--cuda", cuda]);
        let dir = check_entry(
            &ctx,
            &row,
            &Expect {
                version: "9.5.0.50",
                cuda: cuda.parse().unwrap(),
                platform: "windows-x86_64",
                libraries: dll_names(&r),
                bin: Some(&format!("bin/{v}/x64")),
                lib: Some(&format!("lib/{v}/x64")),
                include: Some(&format!("include/{v}")),
            },
        );
        // Only the chosen variant is kept.
        let other = if v == "12.6" { "11.8" } else { "12.6" };
        for sub in ["bin", "lib", "include"] {
            assert!(!dir.join(sub).join(other).exists(), "{sub}/{other} kept");
        }
        let meta = ctx.entry_toml(&dir);
        assert_eq!(meta["version_source"].as_str(), Some("the VERSIONINFO of `cudnn64_9.dll`"));
    }
    assert_eq!(ctx.entry_dirs().len(), 2);
}

// ------------------------------------------------------------------ content addressing

#[test]
fn same_content_twice_is_a_no_op_naming_the_entry() {
    let ctx = TestContext::new();
    let zip = windows_zip(&ctx.work, &Release::V9, BinDir::Bin);
    let first = ctx.add_ok(&zip, &[]);
    let dir = ctx.only_entry();
    let toml_before = fs::read(dir.join("entry.toml")).unwrap();

    let out = ctx.cmd().args(["store", "add"]).arg(&zip).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let name = first["name"].as_str().unwrap();
    assert_eq!(stdout(&out).trim(), format!("already in store: {name} (from {})", zip.display()));

    let again = ctx.add_ok(&zip, &[]);
    assert_eq!(again["existed"], true);
    assert_eq!(again["id"], first["id"]);
    assert_eq!(again["name"], first["name"]);
    assert_eq!(ctx.only_entry(), dir);
    assert_eq!(fs::read(dir.join("entry.toml")).unwrap(), toml_before, "the existing entry was rewritten");
    ctx.assert_store_unchanged_but(&[dir]);
}

/// A re-import of bytes already in the store hashes the archive and finds the entry through
/// the index (`.sources.toml`) without extracting anything: with an expansion cap that a full
/// import would trip, it still says "already in store". The index is only a shortcut: without
/// it, or with a line naming a gone entry, the entries themselves are read; `store remove`
/// drops the line.
#[test]
fn re_import_finds_the_entry_by_the_archive_sha256_without_extracting() {
    let ctx = TestContext::new();
    let zip = windows_zip(&ctx.work, &Release::V9, BinDir::Bin);
    let first = ctx.add_ok(&zip, &[]);
    let name = first["name"].as_str().unwrap().to_string();
    let dir = ctx.only_entry();
    let sha = ctx.entry_toml(&dir)["source"]["sha256"].as_str().unwrap().to_string();
    let index_path = ctx.store_dir().join(cuenv::store::SOURCES_FILE);
    let index_text = fs::read_to_string(&index_path).unwrap();
    let index: toml::Table = index_text.parse().unwrap();
    assert_eq!(index["sources"][&sha]["entry"].as_str(), Some(name.as_str()), "{index}");
    assert_eq!(index["sources"][&sha]["size"].as_integer(), Some(fs::metadata(&zip).unwrap().len() as i64));

    let re_add = || ctx.cmd().env("CUENV_TEST_MAX_EXPANSION", "1").args(["store", "add"]).arg(&zip).output().unwrap();
    let out = re_add();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), format!("already in store: {name} (from {})", zip.display()));
    // A wrong --sha256 is still refused: the archive was hashed.
    let out = ctx.cmd().args(["store", "add"]).arg(&zip).args(["--sha256", &"0".repeat(64)]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("SHA-256 is {sha}")), "{}", stderr(&out));

    // A stale line (as a crash between the index write and the commit rename leaves) is not trusted.
    let size = fs::metadata(&zip).unwrap().len();
    fs::write(&index_path, format!("[sources.{sha}]\nentry = \"cudnn-gone\"\nsize = {size}\n")).unwrap();
    let out = re_add();
    assert!(out.status.success(), "{}", stderr(&out));
    // No index at all: the entries are read.
    fs::remove_file(&index_path).unwrap();
    let out = re_add();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("already in store: "), "{}", stdout(&out));
    fs::write(&index_path, &index_text).unwrap();

    // A damaged entry is not reused as it is: the full import runs (and trips the cap here).
    let lib = fs::read_dir(dir.join("bin")).unwrap().flatten().map(|e| e.path()).find(|p| p.is_file()).unwrap();
    make_writable(&dir);
    fs::write(&lib, b"damaged").unwrap();
    let out = re_add();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    fs::remove_file(&lib).unwrap();

    ctx.cmd().args(["store", "remove", &name]).assert().success();
    let index = fs::read_to_string(&index_path).unwrap();
    assert!(!index.contains(&name), "{index}");
    assert_eq!(re_add().status.code(), Some(2));
}

#[test]
fn same_content_from_another_container_is_the_same_entry() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let zip = windows_zip(&ctx.work, &r, BinDir::Bin);
    let folder = ctx.path(&format!("unpacked/{}", r.windows_archive_stem()));
    windows_release_tree(&r, BinDir::Bin).write_dir(&folder);
    let a = ctx.add_ok(&zip, &[]);
    let b = ctx.add_ok(&folder, &[]);
    assert_eq!(a["id"], b["id"]);
    assert_eq!(b["existed"], true);
    // Different content gets a different id.
    let c = ctx.add_ok(&windows_zip(&ctx.work, &r, BinDir::BinX64), &[]);
    assert_ne!(c["id"], a["id"]);
    assert_eq!(ctx.entry_dirs().len(), 2);
}

#[test]
fn add_several_paths_at_once() {
    let ctx = TestContext::new();
    let a = wheel(&ctx.work, &Release::V9, WheelOs::Linux);
    let b = wheel(&ctx.work, &Release::V8, WheelOs::Windows);
    let out = ctx.cmd().args(["store", "add"]).arg(&a).arg(&b).arg("--json").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let versions: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["version"].as_str().unwrap()).collect();
    assert_eq!(versions, ["9.5.0.50", "8.9.4.25"]);
}

#[test]
fn matching_sha256_is_accepted() {
    let ctx = TestContext::new();
    let zip = windows_zip(&ctx.work, &Release::V9, BinDir::Bin);
    let sha = sha256_hex(&fs::read(&zip).unwrap()).to_uppercase();
    let row = ctx.add_ok(&zip, &["--sha256", &sha]);
    assert_eq!(row["existed"], false);
}

#[test]
fn entry_files_are_read_only() {
    let ctx = TestContext::new();
    ctx.add_ok(&linux_tar_xz(&ctx.work, &Release::V9), &[]);
    let dir = ctx.only_entry();
    let mut files = 0;
    for e in walkdir::WalkDir::new(&dir).min_depth(1) {
        let e = e.unwrap();
        if e.path_is_symlink() {
            continue;
        }
        // Windows has no read-only folders (the attribute does not stop creating or deleting
        // entries in them), so fsutil::make_tree_readonly marks only the files there.
        if cfg!(windows) && e.file_type().is_dir() {
            continue;
        }
        assert!(e.metadata().unwrap().permissions().readonly(), "{} is writable", e.path().display());
        files += 1;
    }
    assert!(files > 10);
    assert!(fs::metadata(dir.join("entry.toml")).unwrap().permissions().readonly());
}

#[test]
fn leftover_staging_is_cleaned_by_the_next_add() {
    let ctx = TestContext::new();
    let junk = ctx.staging_dir().join("import-x");
    fs::create_dir_all(&junk).unwrap();
    fs::write(junk.join("junk"), "left by a crash").unwrap();
    // A read-only leftover, as an interrupted publish would leave.
    let ro = ctx.staging_dir().join("import-y/entry");
    fs::create_dir_all(&ro).unwrap();
    fs::write(ro.join("cudnn64_9.dll"), "x").unwrap();
    let mut p = fs::metadata(ro.join("cudnn64_9.dll")).unwrap().permissions();
    p.set_readonly(true);
    fs::set_permissions(ro.join("cudnn64_9.dll"), p).unwrap();

    ctx.add_ok(&wheel(&ctx.work, &Release::V9, WheelOs::Linux), &[]);
    let left: Vec<_> = fs::read_dir(ctx.staging_dir()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "{left:?}");
}

// ------------------------------------------------------------------ list, verify, remove

#[test]
fn list_json_and_text() {
    let ctx = TestContext::new();
    let out = ctx.cmd().args(["store", "list", "--json"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap(), serde_json::json!([]));
    let out = ctx.cmd().args(["store", "list"]).output().unwrap();
    assert!(stdout(&out).contains("is empty"), "{}", stdout(&out));

    let a = ctx.add_ok(&wheel(&ctx.work, &Release::V9, WheelOs::Windows), &[]);
    let b = ctx.add_ok(&linux_tar_xz(&ctx.work, &Release::V8), &[]);
    let out = ctx.cmd().args(["store", "list", "--json"]).output().unwrap();
    assert!(out.status.success());
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for added in [&a, &b] {
        let r = rows.iter().find(|r| r["id"] == added["id"]).expect("listed");
        for key in ["name", "version", "cuda_major", "platform", "size", "source", "path"] {
            assert_eq!(r[key], added[key], "{key}");
        }
        assert!(r.get("existed").is_none());
        assert!(r["size"].as_u64().unwrap() > 0);
    }
    let out = ctx.cmd().args(["store", "list"]).output().unwrap();
    let text = stdout(&out);
    assert!(text.contains(a["name"].as_str().unwrap()) && text.contains(b["name"].as_str().unwrap()), "{text}");
    assert!(text.contains("8.9.4.25"), "{text}");
}

fn verify_json(ctx: &TestContext, args: &[&str]) -> (Option<i32>, Value) {
    let out = ctx.cmd().args(["store", "verify", "--json"]).args(args).output().unwrap();
    (out.status.code(), serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out))))
}

#[test]
fn verify_reports_modified_missing_and_extra() {
    let ctx = TestContext::new();
    ctx.add_ok(&linux_tar_xz(&ctx.work, &Release::V9), &[]);
    let dir = ctx.only_entry();
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();

    let out = ctx.cmd().args(["store", "verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains(&format!("ok       {name}")), "{}", stdout(&out));
    let (code, report) = verify_json(&ctx, &[]);
    assert_eq!(code, Some(0));
    assert_eq!(report[0]["ok"], true);

    // modified
    flip_byte(&dir.join("lib/libcudnn_ops.so.9.5.0"));
    let (code, report) = verify_json(&ctx, &[]);
    assert_eq!(code, Some(3));
    assert_eq!(report[0]["ok"], false);
    assert_eq!(report[0]["modified"], serde_json::json!(["lib/libcudnn_ops.so.9.5.0"]));
    let out = ctx.cmd().args(["store", "verify", &name]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(stdout(&out).contains(&format!("DAMAGED  {name}")) && stdout(&out).contains("modified: lib/libcudnn_ops.so.9.5.0"), "{}", stdout(&out));
    assert!(stderr(&out).contains("hint:"), "{}", stderr(&out));

    // missing
    // Windows refuses to delete a read-only file whatever its folder allows: clear it first.
    with_writable_dir(&dir.join("include"), || {
        make_writable(&dir.join("include/cudnn.h"));
        fs::remove_file(dir.join("include/cudnn.h")).unwrap()
    });
    let (code, report) = verify_json(&ctx, &[]);
    assert_eq!(code, Some(3));
    assert_eq!(report[0]["missing"], serde_json::json!(["include/cudnn.h"]));

    // extra
    with_writable_dir(&dir.join("lib"), || fs::write(dir.join("lib/libextra.so"), "x").unwrap());
    let (code, report) = verify_json(&ctx, &[]);
    assert_eq!(code, Some(3));
    assert_eq!(report[0]["extra"], serde_json::json!(["lib/libextra.so"]));
    assert_eq!(report[0]["modified"], serde_json::json!(["lib/libcudnn_ops.so.9.5.0"]));
    assert_eq!(report[0]["missing"], serde_json::json!(["include/cudnn.h"]));
}

#[cfg(unix)]
#[test]
fn verify_reports_a_retargeted_symlink() {
    let ctx = TestContext::new();
    ctx.add_ok(&linux_tar_xz(&ctx.work, &Release::V9), &[]);
    let dir = ctx.only_entry();
    with_writable_dir(&dir.join("lib"), || {
        fs::remove_file(dir.join("lib/libcudnn.so")).unwrap();
        std::os::unix::fs::symlink("libcudnn_ops.so.9", dir.join("lib/libcudnn.so")).unwrap();
    });
    let (code, report) = verify_json(&ctx, &[]);
    assert_eq!(code, Some(3));
    assert_eq!(report[0]["modified"], serde_json::json!(["lib/libcudnn.so"]));
}

#[test]
fn verify_checks_only_the_named_entries() {
    let ctx = TestContext::new();
    let a = ctx.add_ok(&wheel(&ctx.work, &Release::V9, WheelOs::Linux), &[]);
    let b = ctx.add_ok(&wheel(&ctx.work, &Release::V8, WheelOs::Linux), &[]);
    flip_byte(&Path::new(b["path"].as_str().unwrap()).join("lib/libcudnn.so.8"));
    let (code, report) = verify_json(&ctx, &[&a["id"].as_str().unwrap()[..10]]);
    assert_eq!(code, Some(0));
    assert_eq!(report.as_array().unwrap().len(), 1);
    let (code, report) = verify_json(&ctx, &[]);
    assert_eq!(code, Some(3));
    assert_eq!(report.as_array().unwrap().len(), 2);
}

#[test]
fn verify_reports_an_unreadable_entry_toml() {
    let ctx = TestContext::new();
    ctx.add_ok(&wheel(&ctx.work, &Release::V9, WheelOs::Linux), &[]);
    let dir = ctx.only_entry();
    let toml = dir.join("entry.toml");
    make_writable(&toml);
    fs::write(&toml, "not = [valid").unwrap();
    let (code, report) = verify_json(&ctx, &[]);
    assert_eq!(code, Some(3));
    assert!(report[0]["error"].as_str().unwrap().contains("entry.toml"), "{report}");
}

#[test]
fn remove_by_id_prefix() {
    let ctx = TestContext::new();
    let a = ctx.add_ok(&wheel(&ctx.work, &Release::V9, WheelOs::Linux), &[]);
    let b = ctx.add_ok(&wheel(&ctx.work, &Release::V8, WheelOs::Linux), &[]);
    let prefix = &a["id"].as_str().unwrap()[..8];
    let out = ctx.cmd().args(["store", "remove", prefix]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), format!("removed {}", a["name"].as_str().unwrap()));
    assert_eq!(ctx.entry_dirs(), vec![PathBuf::from(b["path"].as_str().unwrap())]);
    // By full name too.
    let out = ctx.cmd().args(["store", "remove", b["name"].as_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(ctx.entry_dirs().is_empty());
    let staging: Vec<_> = fs::read_dir(ctx.staging_dir()).map(|rd| rd.flatten().collect()).unwrap_or_default();
    assert!(staging.is_empty());
}

#[test]
fn remove_ambiguous_and_unknown_ids() {
    let ctx = TestContext::new();
    let a = ctx.add_ok(&wheel(&ctx.work, &Release::V9, WheelOs::Linux), &[]);
    let b = ctx.add_ok(&wheel(&ctx.work, &Release::V9, WheelOs::Windows), &[]);

    let out = ctx.cmd().args(["store", "remove", "cudnn-9.5.0.50"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.starts_with("error: `cudnn-9.5.0.50` matches several store entries"), "{err}");
    assert!(err.contains(a["name"].as_str().unwrap()) && err.contains(b["name"].as_str().unwrap()), "{err}");
    assert!(err.contains("hint: give more characters"), "{err}");

    let out = ctx.cmd().args(["store", "remove", "ffff0000"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.starts_with("error: no store entry matches `ffff0000`"), "{err}");
    assert!(err.contains("hint: run `cuenv store list`; known entries:") && err.contains(a["name"].as_str().unwrap()), "{err}");

    // Too short an id prefix matches nothing.
    let out = ctx.cmd().args(["store", "remove", &a["id"].as_str().unwrap()[..3]]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(ctx.entry_dirs().len(), 2);

    // Verify takes the same queries.
    let out = ctx.cmd().args(["store", "verify", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no store entry matches `nope`"));
}

#[test]
fn remove_from_an_empty_store() {
    let ctx = TestContext::new();
    let out = ctx.cmd().args(["store", "remove", "abcd"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("hint: the store is empty; add a release with `cuenv store add <archive>`"), "{}", stderr(&out));
}

// ------------------------------------------------------------------ refused input: one case per error message
//
// A table of refused inputs. Each case builds its input in a fresh home, runs `store add`
// on it and asserts (`TestContext::add_refused`) exit code 2, an `error:` and a `hint:`
// line, nothing on stdout and the store unchanged (no entry folder, nothing left in
// `<home>/store/.tmp`); then the whole stderr (the member or path, the rule broken, the
// `caused by:` chain and the hint) is compared with the insta snapshot named after the case
// (`tests/it/snapshots/it__store__<case>.snap`, temp paths shown as `[TEMP]`). A `then`
// block checks more afterwards. Inputs come from `support::hostile`.

use crate::support::hostile;

/// `name(ctx, input, extra args...) { build the input } [then { more checks }];`: one
/// `#[test]` per case, named after it.
macro_rules! refusals {
    ($(
        $(#[$attr:meta])*
        $name:ident($ctx:ident, $input:ident $(, $arg:expr)*) $build:block $(then $then:block)?;
    )*) => {$(
        $(#[$attr])*
        #[test]
        fn $name() {
            let $ctx = TestContext::new();
            let $input: PathBuf = $build;
            let args: &[&str] = &[$($arg),*];
            let err = $ctx.add_refused(&$input, args);
            assert_stderr_snapshot!($ctx, stringify!($name), err);
            $($then)?
        }
    )*};
}

refusals! {
    // ---- unsafe member names
    refuses_zip_member_with_dotdot(ctx, zip) {
        hostile::zip_with_member(&ctx.work, "cudnn-windows-x86_64-9.5.0.50_cuda12-archive/bin/../../../evil.dll")
    } then {
        assert!(!ctx.work.parent().unwrap().join("evil.dll").exists());
    };
    refuses_zip_member_with_backslash_dotdot(ctx, zip) {
        hostile::zip_with_member(&ctx.work, "cudnn-windows-x86_64-9.5.0.50_cuda12-archive\\..\\..\\evil.dll")
    };
    refuses_zip_member_with_absolute_path(ctx, zip) { hostile::zip_with_member(&ctx.work, "/tmp/cuenv-evil.dll") };
    refuses_zip_member_with_drive_letter(ctx, zip) { hostile::zip_with_member(&ctx.work, "C:\\Windows\\System32\\evil.dll") };
    refuses_zip_member_with_unc_path(ctx, zip) { hostile::zip_with_member(&ctx.work, "\\\\server\\share\\evil.dll") };
    refuses_zip_member_with_alternate_data_stream(ctx, zip) {
        hostile::zip_with_member(&ctx.work, "cudnn-windows-x86_64-9.5.0.50_cuda12-archive/bin/cudnn64_9.dll:evil")
    };
    refuses_tar_member_with_dotdot(ctx, tar) { hostile::tar_with_member(&ctx.work, "../evil.so") };
    refuses_tar_member_with_absolute_path(ctx, tar) { hostile::tar_with_member(&ctx.work, "/tmp/cuenv-evil.so") };
    refuses_a_member_named_like_the_metadata_file(ctx, zip) {
        hostile::zip_with_member(&ctx.work, &format!("{}/entry.toml", Release::V9.windows_archive_stem()))
    };

    // ---- control characters, encodings and overlong names; names are shown escaped
    refuses_a_zip_member_with_an_escape_sequence(ctx, zip) {
        hostile::zip_with_member(&ctx.work, &format!("{}/bin/\x1b]0;pwned\x07\x1b[2Jevil.dll", Release::V9.windows_archive_stem()))
    };
    refuses_a_tar_member_with_a_newline(ctx, tar) {
        hostile::tar_with_member(&ctx.work, &format!("{}/lib/libevil.so\nerror: fake", Release::V9.linux_archive_stem()))
    };
    refuses_a_zip_member_with_a_c1_control(ctx, zip) {
        hostile::zip_with_member(&ctx.work, &format!("{}/bin/\u{9b}31mred.dll", Release::V9.windows_archive_stem()))
    };
    refuses_a_zip_member_with_del(ctx, zip) { hostile::zip_with_member(&ctx.work, &format!("{}/bin/evil\u{7f}.dll", Release::V9.windows_archive_stem())) };
    refuses_a_symlink_target_with_control_characters(ctx, path) {
        hostile::archive_with_symlink(&ctx.work, "lib/libcudnn_evil.so", "libcudnn.so.9\x1b[2J", false).0
    };
    refuses_a_zip_member_name_that_is_not_utf8(ctx, path) { hostile::zip_with_raw_member(&ctx.work, b"evil\xff\xfe.dll") };
    refuses_a_tar_member_name_that_is_not_utf8(ctx, path) { hostile::tar_with_raw_member(&ctx.work, b"libevil\xc3.so") };
    #[cfg(unix)]
    refuses_a_folder_member_name_that_is_not_utf8(ctx, folder) {
        use std::os::unix::ffi::OsStrExt as _;
        let folder = site_packages(&ctx.work, &Release::V9, WheelOs::Linux);
        fs::write(folder.join("lib").join(std::ffi::OsStr::from_bytes(b"libevil\xff.so")), "evil").unwrap();
        folder
    };
    refuses_a_member_name_component_over_255_bytes(ctx, zip) {
        hostile::zip_with_member(&ctx.work, &format!("{}/bin/{}.dll", Release::V9.windows_archive_stem(), "a".repeat(300)))
    };
    refuses_a_member_path_of_5000_characters(ctx, zip) {
        hostile::zip_with_member(&ctx.work, &format!("{}/{}x.dll", Release::V9.windows_archive_stem(), format!("{}/", "d".repeat(99)).repeat(50)))
    };
    refuses_a_member_3000_folders_deep(ctx, zip) {
        hostile::zip_with_member(&ctx.work, &format!("{}/{}x.dll", Release::V9.windows_archive_stem(), "a/".repeat(3000)))
    };

    // ---- links and special members
    /// lib/evil -> ../../etc/passwd stays inside the archive but leaves the release root,
    /// which is all the entry keeps.
    refuses_tar_symlink_climbing_out_of_the_entry(ctx, path) {
        let (stem, mut t) = hostile::linux_archive(&Release::V9);
        t.file("etc/passwd", "root:x:0:0\n");
        t.symlink(format!("{stem}/lib/evil"), "../../etc/passwd");
        let path = ctx.path(&format!("{stem}.tar.xz"));
        t.write_tar_xz(&path);
        path
    };
    refuses_tar_symlink_climbing_out_of_the_archive(ctx, path) { hostile::archive_with_symlink(&ctx.work, "lib/evil", "../../../etc/passwd", false).0 };
    refuses_tar_symlink_to_an_absolute_path(ctx, path) { hostile::archive_with_symlink(&ctx.work, "lib/libcudnn_evil.so", "/etc/passwd", false).0 };
    refuses_zip_symlink_pointing_outside(ctx, path) { hostile::archive_with_symlink(&ctx.work, "lib/evil", "../../../../etc/passwd", true).0 };
    refuses_zip_symlink_to_an_absolute_path(ctx, path) { hostile::archive_with_symlink(&ctx.work, "lib/evil", "/etc/passwd", true).0 };
    #[cfg(unix)]
    refuses_a_symlink_into_a_dropped_cuda_variant(ctx, root, "--cuda", "12") {
        let root = installer_tree(&ctx.work, &Release::V9, &["11.8", "12.6"]);
        std::os::unix::fs::symlink("../../11.8/x64/cudnn_ops64_9.dll", root.join("bin/12.6/x64/cudnn_extra64_9.dll")).unwrap();
        root
    } then {
        fs::remove_file(root.join("bin/12.6/x64/cudnn_extra64_9.dll")).unwrap();
        ctx.add_ok(&root, &["--cuda", "12"]);
    };
    #[cfg(unix)]
    refuses_a_folder_symlink_pointing_outside(ctx, folder) {
        let folder = site_packages(&ctx.work, &Release::V9, WheelOs::Linux);
        std::os::unix::fs::symlink("../../../../../etc/passwd", folder.join("lib/libcudnn_evil.so")).unwrap();
        folder
    };
    refuses_tar_hard_link_to_an_outside_file(ctx, path) {
        hostile::tar_with_special(&ctx.work, "lib/libhard.so", tar::EntryType::Link, Some("/etc/shadow")).0
    };
    refuses_tar_hard_link_to_a_later_file(ctx, path) {
        hostile::tar_with_special(&ctx.work, "lib/libhard.so", tar::EntryType::Link, Some("cudnn-linux-x86_64-9.5.0.50_cuda12-archive/lib/nothing")).0
    };
    refuses_tar_fifo_members(ctx, path) { hostile::tar_with_special(&ctx.work, "lib/fifo", tar::EntryType::Fifo, None).0 };
    refuses_a_symlink_loop(ctx, path) {
        let (stem, mut t) = hostile::linux_archive(&Release::V9);
        t.symlink(format!("{stem}/lib/libloop_a.so"), "libloop_b.so");
        t.symlink(format!("{stem}/lib/libloop_b.so"), "libloop_a.so");
        let path = ctx.path(&format!("{stem}.tar.xz"));
        t.write_tar_xz(&path);
        path
    };
    refuses_a_symlink_to_itself(ctx, path) { hostile::archive_with_symlink(&ctx.work, "lib/libself.so", "libself.so", true).0 };
    /// `lib/up -> .` makes `lib/up/up/up/...` endless for anything that follows links.
    refuses_a_symlink_to_its_own_folder(ctx, path) { hostile::archive_with_symlink(&ctx.work, "lib/up", ".", false).0 };
    /// `lib/x/l1 -> ../y` and `lib/y/l2 -> ../x`: `lib/x/l1/l2/l1/l2/...` never ends.
    refuses_a_cycle_of_folder_symlinks(ctx, path) {
        let (stem, mut t) = hostile::linux_archive(&Release::V9);
        t.file(format!("{stem}/lib/x/a.txt"), "a");
        t.symlink(format!("{stem}/lib/x/l1"), "../y");
        t.symlink(format!("{stem}/lib/y/l2"), "../x");
        let path = ctx.path(&format!("{stem}.tar.xz"));
        t.write_tar_xz(&path);
        path
    };
    refuses_a_dangling_symlink(ctx, path) { hostile::archive_with_symlink(&ctx.work, "lib/libcudnn_gone.so", "libcudnn_gone.so.9", false).0 };
    /// Without members under it, such a link would still leave the entry once published.
    refuses_a_symlink_through_a_symlink(ctx, path) {
        let (stem, mut t) = hostile::linux_archive(&Release::V9);
        t.symlink(format!("{stem}/lib/a/b/l1"), "../..");
        t.symlink(format!("{stem}/lib/a/b/l2"), "l1/../../../etc/passwd");
        let path = ctx.path(&format!("{stem}.tar.xz"));
        t.write_tar_xz(&path);
        path
    };

    // ---- ambiguous or damaged archives
    refuses_names_equal_except_for_case(ctx, path) { hostile::case_collision_zip(&ctx.work).0 };
    refuses_names_equal_except_for_case_in_a_tar(ctx, path) {
        hostile::tar_with_member(&ctx.work, &format!("{}/include/CUDNN.h", Release::V9.linux_archive_stem()))
    };
    /// Two members with one name but different bytes: which one a tool extracts differs
    /// between tools, so the content would be ambiguous.
    refuses_a_zip_with_a_member_twice(ctx, path) {
        hostile::zip_with_member(&ctx.work, &format!("{}/bin/cudnn_ops64_9.dll", Release::V9.windows_archive_stem()))
    };
    /// A file, then a symlink of the same name: extracting both would clobber the file.
    refuses_a_tar_with_a_member_twice(ctx, path) {
        let (stem, mut t) = hostile::linux_archive(&Release::V9);
        t.symlink(format!("{stem}/include/cudnn.h"), "cudnn_version.h");
        let path = ctx.path(&format!("{stem}.tar.xz"));
        t.write_tar_xz(&path);
        path
    };
    refuses_a_zip_member_shorter_than_its_declared_size(ctx, path) {
        hostile::lying_size_zip(&ctx.work, "include/cudnn_version.h", Release::V9.header().len() as u32 + 1000).0
    };
    refuses_a_zip_member_longer_than_its_declared_size(ctx, path) { hostile::lying_size_zip(&ctx.work, "bin/cudnn_ops64_9.dll", 100).0 };
    refuses_a_zip_bomb_before_extracting(ctx, path) {
        let (path, _) = hostile::zip_bomb(&ctx.work, 64 << 20);
        assert!(fs::metadata(&path).unwrap().len() < 1 << 20);
        path
    };
    /// 64 members of 4 MiB - 1 each: every one under the per-member bound, together 256 MiB
    /// from about 300 KB. Refused from the central directory, before anything is written.
    refuses_a_zip_whose_members_together_expand_too_far(ctx, path) {
        let (path, _) = hostile::zip_of_many_small_bombs(&ctx.work, 64, (4 << 20) - 1);
        assert!(fs::metadata(&path).unwrap().len() < 1 << 20);
        path
    };
    /// 300 central-directory entries pointing at one member's data (4 MiB - 1 bytes).
    refuses_a_zip_whose_entries_share_one_member(ctx, path) { hostile::zip_with_aliased_member(&ctx.work, 300, (4 << 20) - 1).0 };
    /// Two entries sharing one small member: no bound on sizes is near, the overlap alone refuses.
    refuses_a_zip_whose_entries_overlap(ctx, path) { hostile::zip_with_aliased_member(&ctx.work, 1, 100).0 };
    refuses_a_truncated_zip(ctx, zip) {
        let zip = windows_zip(&ctx.work, &Release::V9, BinDir::Bin);
        hostile::truncate(&zip, 1, 2);
        zip
    };
    refuses_a_truncated_tar_xz(ctx, path) {
        let path = linux_tar_xz(&ctx.work, &Release::V9);
        hostile::truncate(&path, 1, 2);
        path
    };
    refuses_a_truncated_tgz(ctx, path) {
        let path = legacy_linux_tgz(&ctx.work, &Release::V8, 2);
        hostile::truncate(&path, 2, 3);
        path
    };
    refuses_a_bad_crc(ctx, path) { hostile::bad_crc_zip(&ctx.work, "bin/cudnn_cnn64_9.dll").0 };
    refuses_input_that_is_no_archive(ctx, path) {
        let path = ctx.path("cudnn-windows-x86_64-9.5.0.50_cuda12-archive.zip");
        fs::write(&path, "this is not a zip\n").unwrap();
        path
    };
    /// A path that does not exist is invalid input (exit 2), with the OS error as the cause.
    refuses_a_missing_path_with_exit_2(ctx, path) { ctx.path("nope.zip") };

    // ---- wheels whose RECORD disagrees
    refuses_a_wheel_whose_record_hash_is_wrong(ctx, path) { hostile::wheel_with_wrong_record_hash(&ctx.work, "cudnn_adv64_9.dll") };
    refuses_a_wheel_whose_record_size_is_wrong(ctx, path) {
        let r = Release::V9;
        let mut t = wheel_tree(&r, WheelOs::Linux);
        let di = dist_info(&r);
        let n = r.header().len();
        let record = record_text(&t, &di);
        let line = record.lines().find(|l| l.starts_with("nvidia/cudnn/include/cudnn_version.h,")).unwrap();
        let record = record.replace(line, &line.replace(&format!(",{n}"), &format!(",{}", n + 1)));
        t.replace(&format!("{di}/RECORD"), record);
        let path = ctx.path(&r.wheel_name("manylinux2014_x86_64"));
        t.write_zip(&path);
        path
    };
    refuses_a_wheel_file_missing_from_record(ctx, path) {
        let r = Release::V9;
        let mut t = wheel_tree(&r, WheelOs::Linux);
        t.file("nvidia/cudnn/lib/libsneaky.so.9", elf_so("sneaky"));
        let path = ctx.path(&r.wheel_name("manylinux2014_x86_64"));
        t.write_zip(&path);
        path
    };
    refuses_a_wheel_missing_a_recorded_file(ctx, path) {
        let r = Release::V9;
        let mut t = wheel_tree(&r, WheelOs::Linux);
        t.remove("nvidia/cudnn/lib/libcudnn_heuristic.so.9");
        let path = ctx.path(&r.wheel_name("manylinux2014_x86_64"));
        t.write_zip(&path);
        path
    };

    /// A wheel must carry a RECORD: without one nothing checks its files' hashes.
    refuses_a_wheel_without_record(ctx, path) {
        let r = Release::V9;
        let mut t = wheel_tree(&r, WheelOs::Linux);
        t.remove(&format!("{}/RECORD", dist_info(&r)));
        let path = ctx.path(&r.wheel_name("manylinux2014_x86_64"));
        t.write_zip(&path);
        path
    };
    refuses_a_wheel_whose_record_is_not_utf8(ctx, path) {
        let r = Release::V9;
        let mut t = wheel_tree(&r, WheelOs::Linux);
        let di = dist_info(&r);
        let mut record = record_text(&t, &di).into_bytes();
        record.splice(0..0, b"nvidia/caf\xe9.py,,\n".iter().copied());
        t.replace(&format!("{di}/RECORD"), record);
        let path = ctx.path(&r.wheel_name("manylinux2014_x86_64"));
        t.write_zip(&path);
        path
    };

    // ---- --sha256
    /// The message names the archive's actual SHA-256 (the fixture zip is built byte for byte
    /// the same on every run) and the expected one.
    refuses_a_wrong_sha256(ctx, zip, "--sha256", &"0".repeat(64)) {
        windows_zip(&ctx.work, &Release::V9, BinDir::Bin)
    };
    refuses_a_malformed_sha256(ctx, zip, "--sha256", "abc123") {
        windows_zip(&ctx.work, &Release::V9, BinDir::Bin)
    } then {
        assert!(!ctx.staging_dir().exists());
    };
    refuses_sha256_for_a_folder(ctx, folder, "--sha256", &"a".repeat(64)) { site_packages(&ctx.work, &Release::V9, WheelOs::Linux) };

    // ---- no cuDNN, or not one release
    refuses_a_folder_without_cudnn(ctx, folder) { hostile::folder_without_cudnn(&ctx.work) };
    refuses_an_archive_without_cudnn(ctx, path) {
        let r = Release::V9;
        let path = ctx.path(&format!("{}.zip", r.windows_archive_stem()));
        let mut t = Tree::new();
        t.file(format!("{}/include/cudnn_version.h", r.windows_archive_stem()), r.header());
        t.write_zip(&path);
        path
    };
    refuses_several_releases_in_one_input(ctx, path, "--cuda", "12") {
        let mut t = windows_release_tree(&Release::V9, BinDir::Bin).under("a");
        t.nodes.extend(windows_release_tree(&Release::V8, BinDir::Bin).under("b").nodes);
        let path = ctx.path("two-releases.zip");
        t.write_zip(&path);
        path
    };

    // ---- CUDA major and version
    refuses_an_installer_tree_without_cuda(ctx, root) { installer_tree(&ctx.work, &Release::V9, &["11.8", "12.6"]) };
    refuses_an_installer_tree_without_the_asked_cuda(ctx, root, "--cuda", "13") { installer_tree(&ctx.work, &Release::V9, &["11.8", "12.6"]) };
    refuses_a_folder_with_no_cuda_evidence(ctx, folder) {
        let folder = ctx.path("mycudnn");
        windows_release_tree(&Release::V9, BinDir::Bin).write_dir(&folder);
        folder
    } then {
        // With --cuda it imports, keeping the 4-part version from VERSIONINFO.
        let row = ctx.add_ok(&folder, &["--cuda", "12"]);
        assert_eq!(row["version"], "9.5.0.50");
        assert_eq!(row["cuda_major"], 12);
    };
    refuses_a_cuda_flag_contradicting_the_name(ctx, whl, "--cuda", "11") { wheel(&ctx.work, &Release::V9, WheelOs::Linux) };
    refuses_a_version_conflict_between_name_and_header(ctx, path) { hostile::version_conflict_zip(&ctx.work, (9, 4, 0)) };
    refuses_a_version_conflict_with_versioninfo(ctx, path) {
        hostile::windows_zip_with_library(&ctx.work, "cudnn64_9.dll", pe_dll(PeArch::Amd64, Some([9, 5, 1, 17]), "cudnn64_9.dll")).0
    };
    /// A cuDNN 8 DLL set in an archive whose name and header say 9.
    refuses_a_dispatcher_of_another_major(ctx, path) {
        let r = Release::V9;
        let stem = r.windows_archive_stem();
        let mut t = Tree::new();
        for n in DLLS_8 {
            t.file(format!("{stem}/bin/{n}"), pe_dll(PeArch::Amd64, None, n));
        }
        t.file(format!("{stem}/include/cudnn_version.h"), r.header());
        let path = ctx.path(&format!("{stem}.zip"));
        t.write_zip(&path);
        path
    };
    refuses_a_release_without_any_version(ctx, folder, "--cuda", "12") {
        let folder = ctx.path("some-libs");
        let mut t = Tree::new();
        t.file("lib/libcudnn.so.9", elf_so("libcudnn.so.9"));
        t.write_dir(&folder);
        folder
    };

    // ---- libraries of the wrong platform
    refuses_a_win64_release_mixing_in_a_pe32_dll(ctx, path) {
        hostile::windows_zip_with_library(&ctx.work, "cudnn_ops64_9.dll", pe_dll(PeArch::I386, Some([9, 5, 0, 50]), "x")).0
    };
    refuses_a_pe32_dispatcher(ctx, path) {
        hostile::windows_zip_with_library(&ctx.work, "cudnn64_9.dll", pe_dll(PeArch::I386, Some([9, 5, 0, 50]), "x")).0
    };
    refuses_a_linux_library_in_a_windows_release(ctx, path) {
        hostile::windows_zip_with_library(&ctx.work, "cudnn_cnn64_9.dll", elf_so("cudnn_cnn64_9.dll")).0
    };
    refuses_a_linux_release_mixing_machines(ctx, path) {
        let (stem, mut t) = hostile::linux_archive(&Release::V9);
        t.replace(&format!("{stem}/lib/libcudnn_ops.so.9.5.0"), elf_so_machine("libcudnn_ops.so.9.5.0", 183));
        let path = ctx.path(&format!("{stem}.tar.xz"));
        t.write_tar_xz(&path);
        path
    };
}

#[test]
fn no_progress_output_when_stderr_is_not_a_terminal() {
    let ctx = TestContext::new();
    let zip = windows_zip(&ctx.work, &Release::V9, BinDir::Bin);
    let out = assert_cmd::Command::new(env!("CARGO_BIN_EXE_cuenv")).env("CUENV_HOME", &ctx.home).args(["store", "add"]).arg(&zip).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "stderr is not a terminal: no progress bar expected");
    assert!(stdout(&out).starts_with("added cudnn-9.5.0.50-cuda12-windows-x86_64-"), "{}", stdout(&out));
    assert!(stdout(&out).contains("(cuDNN 9.5.0.50 for CUDA 12, windows-x86_64, 8 libraries,"), "{}", stdout(&out));
}

#[test]
fn refuses_writing_through_a_chain_of_symlinks() {
    // Each link is inside the archive when read lexically, but `l1/..` is evaluated by the
    // file system *after* following `l1`, so `l2` physically leaves the staging folder.
    // A member under `l2/` would then be written outside it.
    let ctx = TestContext::new();
    let (stem, mut t) = hostile::linux_archive(&Release::V9);
    t.symlink(format!("{stem}/lib/a/b/l1"), "../..");
    t.symlink(format!("{stem}/lib/a/b/l2"), "l1/../../../../..");
    t.file(format!("{stem}/lib/a/b/l2/pwned"), "outside");
    let path = ctx.path(&format!("{stem}.tar.xz"));
    t.write_tar_xz(&path);
    let out = ctx.cmd().args(["store", "add"]).arg(&path).output().unwrap();
    let escaped: Vec<PathBuf> =
        walkdir::WalkDir::new(ctx.home.parent().unwrap()).into_iter().flatten().filter(|e| e.file_name() == "pwned").map(|e| e.path().to_path_buf()).collect();
    assert!(escaped.is_empty(), "written through the symlinks: {escaped:?}\n{}", stderr(&out));
    // Then the same checks as every refusal above, and its stderr snapshot.
    let err = ctx.check_refused(&path, &out);
    assert_stderr_snapshot!(ctx, "refuses_writing_through_a_chain_of_symlinks", err);
}

/// A tar stream is bounded as it is read: with the cap lowered to 8 MiB (a debug-build test
/// hook), three 4 MiB members are refused at the third one's header, before its data is
/// written.
#[test]
fn refuses_a_tar_xz_bomb_while_streaming() {
    let ctx = TestContext::new();
    let path = hostile::tar_xz_bomb(&ctx.work, 3, 4 << 20);
    let out = ctx.cmd().env("CUENV_TEST_MAX_EXPANSION", (8u64 << 20).to_string()).args(["store", "add"]).arg(&path).output().unwrap();
    let err = ctx.check_refused(&path, &out);
    assert_stderr_snapshot!(ctx, "refuses_a_tar_xz_bomb_while_streaming", err);
}

/// A FIFO (or socket, device) as the input is refused before it is opened: opening a FIFO
/// with no writer would block forever while holding the writer lock.
#[cfg(unix)]
#[test]
fn refuses_a_fifo_as_the_input() {
    let ctx = TestContext::new();
    let path = ctx.path("cudnn-linux-x86_64-9.5.0.50_cuda12-archive.tar.xz");
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let out = ctx.cmd().args(["store", "add"]).arg(&path).timeout(std::time::Duration::from_secs(20)).output().unwrap();
    let err = ctx.check_refused(&path, &out);
    assert_stderr_snapshot!(ctx, "refuses_a_fifo_as_the_input", err);
}

/// Names that come from outside are printed escaped: a file planted in an entry with an
/// escape sequence in its name shows in `store verify` as `\u{1b}`, never as the raw byte.
/// Unix only: Windows refuses control characters in file names (os error 123).
#[cfg(unix)]
#[test]
fn verify_prints_planted_names_escaped() {
    let ctx = TestContext::new();
    ctx.add_ok(&windows_zip(&ctx.work, &Release::V9, BinDir::Bin), &[]);
    let dir = ctx.only_entry();
    with_writable_dir(&dir.join("bin"), || fs::write(dir.join("bin").join("evil\x1b[2J\x07.dll"), "x").unwrap());
    let out = ctx.cmd().args(["store", "verify"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("  extra: bin/evil\\u{1b}[2J\\u{7}.dll\n"), "{text}");
    assert!(!out.stdout.iter().any(|b| *b == 0x1b || *b == 0x07), "raw control bytes printed: {text:?}");
}

/// And docs/decisions.md 2: a set without the sub-libraries its major
/// ships (the issue's "9.x folder missing one of its libraries imported silently, 7
/// libraries") is refused, naming what is missing, unless `--allow-incomplete`, which the
/// entry records; a library beyond the table (a newer 9.x sub-library) is accepted.
#[cfg(unix)]
#[test]
fn an_incomplete_set_is_refused_unless_allowed_and_recorded() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let mut tree = linux_release_tree(&r);
    let stem = tree.nodes.iter().find(|(p, _)| p.ends_with("/libcudnn_cnn.so.9")).map(|(p, _)| p.clone()).expect("the fixture has cnn");
    // The library and its alias names (`libcudnn_cnn.so` -> `libcudnn_cnn.so.9`).
    tree.nodes.retain(|(p, _)| !p.contains("/libcudnn_cnn.so"));
    let folder = ctx.path("cudnn-9.5-no-cnn");
    tree.write_dir(&folder);
    let err = ctx.add_refused(&folder, &["--cuda", "12"]);
    assert!(err.contains("incomplete cuDNN 9.5.0") && err.contains("lacks libcudnn_cnn.so.9") && err.contains("--allow-incomplete"), "{err}");
    assert!(
        !ctx.store_dir().exists() || std::fs::read_dir(ctx.store_dir()).unwrap().flatten().all(|e| e.file_name().to_string_lossy().starts_with('.')),
        "nothing was stored"
    );
    let row = ctx.add_ok(&folder, &["--cuda", "12", "--allow-incomplete"]);
    let toml = std::fs::read_to_string(ctx.store_dir().join(row["name"].as_str().unwrap()).join("entry.toml")).unwrap();
    assert!(toml.contains("incomplete = [\"libcudnn_cnn.so.9\"]"), "{toml}");
    // `check` of a profile on that entry warns (stderr), naming what is missing.
    let tk = crate::support::lab::toolkit(&ctx.work, "12.6.77", 12);
    let lab = ctx.path("lab.toml");
    fs::write(&lab, format!("[toolkits]\n\"12.6\" = '{}'\n[profiles.p]\ncuda = \"12\"\ncudnn = \"9.5\"\n", tk.display())).unwrap();
    let out = ctx.cmd().args(["apply", "--no-check"]).arg(&lab).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let out = ctx.cmd().arg("check").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("warning[R2]: profile p: incomplete set: the store entry") && err.contains("lacks libcudnn_cnn.so.9"), "{err}");
    // `doctor` in a shell where that profile is in effect warns too.
    let out = ctx.cmd().arg("doctor").env("CUENV_PROFILE", "p").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("profile p uses the store entry") && text.contains("added with --allow-incomplete: it lacks libcudnn_cnn.so.9"), "{text}");

    // A newer sub-library beyond the table is no reason to refuse.
    let mut tree = linux_release_tree(&Release { version: [9, 21, 0, 1], cuda: 12 });
    let lib_dir = stem.rsplit_once('/').unwrap().0.to_string();
    tree.file(format!("{lib_dir}/libcudnn_engines_tensor_ir.so.9"), elf_so("tensor_ir"));
    let folder = ctx.path("cudnn-9.21");
    tree.write_dir(&folder);
    ctx.add_ok(&folder, &["--cuda", "12"]);
}

/// An entry added with --allow-incomplete never wins over a complete entry of the same version
/// (the fresh-user trial saw `plan` pick the incomplete one: ties went to the first listed).
#[cfg(unix)]
#[test]
fn a_complete_entry_is_preferred_over_an_incomplete_one_of_the_same_version() {
    let ctx = TestContext::new();
    let mut tree = linux_release_tree(&Release::V9);
    let full = ctx.path("cudnn-9.5-full");
    tree.write_dir(&full);
    tree.nodes.retain(|(p, _)| !p.contains("/libcudnn_heuristic.so"));
    let partial = ctx.path("cudnn-9.5-partial");
    tree.write_dir(&partial);
    let incomplete = ctx.add_ok(&partial, &["--cuda", "12", "--allow-incomplete"]);
    let complete = ctx.add_ok(&full, &["--cuda", "12"]);
    let list = String::from_utf8(ctx.cmd().args(["store", "list"]).output().unwrap().stdout).unwrap();
    assert!(list.contains("(incomplete: lacks libcudnn_heuristic.so.9)"), "{list}");
    let tk = crate::support::lab::toolkit(&ctx.work, "12.6.77", 12);
    let lab = ctx.path("lab.toml");
    fs::write(&lab, format!("[toolkits]\n\"12.6\" = '{}'\n[profiles.p]\ncuda = \"12\"\ncudnn = \"9.5\"\n", tk.display())).unwrap();
    for _ in 0..2 {
        let plan = String::from_utf8(ctx.cmd().arg("plan").arg(&lab).output().unwrap().stdout).unwrap();
        assert!(plan.contains(complete["name"].as_str().unwrap()) && !plan.contains(incomplete["name"].as_str().unwrap()), "{plan}");
    }
}

/// And docs/decisions.md 2: libraries of two releases in one set are refused
/// (exit 2, naming the rule and each odd file with the version it carries): a tarball-style
/// name (`libcudnn_ops.so.9.1.0` among 9.5.0 files) or the `cudnn_version_*` marker NVIDIA
/// embeds in `libcudnn_graph.so.9` (wheel-style names carry only the major). A library whose
/// version is unknown is never a mismatch (the fixture's other files carry none).
#[cfg(target_os = "linux")]
#[test]
fn libraries_of_two_releases_in_one_set_are_refused() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let mut tree = linux_release_tree(&r);
    tree.nodes.retain(|(p, _)| p != "lib/libcudnn_ops.so.9.5.0" && p != "lib/libcudnn_ops.so.9");
    tree.file("lib/libcudnn_ops.so.9.1.0", elf_so("ops 9.1.0"));
    tree.symlink("lib/libcudnn_ops.so.9", "libcudnn_ops.so.9.1.0");
    let folder = ctx.path("cudnn-9.5-with-ops-9.1");
    tree.write_dir(&folder);
    let err = ctx.add_refused(&folder, &["--cuda", "12"]);
    assert!(err.contains("libraries of two cuDNN releases in one set: `include/cudnn_version.h` says 9.5.0, but `libcudnn_ops.so.9.1.0` is 9.1.0"), "{err}");
    assert!(err.contains("hint: a set must come from one release"), "{err}");

    // The marker inside a wheel-style `libcudnn_graph.so.9`.
    let s = crate::support::stubs::Stubs::new();
    let built = s.build("g", "libcudnn_graph.so.9", &["GRAPH", "VERSION=90100", "MARKER=\"cudnn_version_9_1_0_70_1_e0\""]);
    let mut tree = linux_release_tree(&r);
    tree.nodes.retain(|(p, _)| p != "lib/libcudnn_graph.so.9.5.0" && p != "lib/libcudnn_graph.so.9");
    tree.file("lib/libcudnn_graph.so.9", std::fs::read(built.join("libcudnn_graph.so.9")).unwrap());
    let folder = ctx.path("cudnn-9.5-with-graph-9.1");
    tree.write_dir(&folder);
    let err = ctx.add_refused(&folder, &["--cuda", "12"]);
    assert!(err.contains("`libcudnn_graph.so.9` is 9.1.0.70"), "{err}");
    // The same graph carrying 9.5.0.50 is one release with the rest.
    let built = s.build("g95", "libcudnn_graph.so.9", &["GRAPH", "VERSION=90500", "MARKER=\"cudnn_version_9_5_0_50_34937467_e0\""]);
    let mut tree = linux_release_tree(&r);
    tree.nodes.retain(|(p, _)| p != "lib/libcudnn_graph.so.9.5.0" && p != "lib/libcudnn_graph.so.9");
    tree.file("lib/libcudnn_graph.so.9", std::fs::read(built.join("libcudnn_graph.so.9")).unwrap());
    let folder = ctx.path("cudnn-9.5-with-graph-9.5");
    tree.write_dir(&folder);
    ctx.add_ok(&folder, &["--cuda", "12"]);
}

/// A stale `cudnn_version.h` (9.1.0) beside libraries that carry 9.5.0 in their
/// names is named as the stale file, not blamed on the libraries.
#[cfg(unix)]
#[test]
fn a_stale_header_is_named_as_stale() {
    let ctx = TestContext::new();
    let mut tree = linux_release_tree(&Release::V9);
    tree.nodes.retain(|(p, _)| p != "include/cudnn_version.h");
    tree.file("include/cudnn_version.h", Release { version: [9, 1, 0, 70], cuda: 12 }.header());
    let folder = ctx.path("cudnn-9.5-stale-header");
    tree.write_dir(&folder);
    let err = ctx.add_refused(&folder, &["--cuda", "12"]);
    assert!(
        err.contains("`include/cudnn_version.h` says cuDNN 9.1.0, but the libraries are 9.5.0 (`libcudnn.so.9.5.0` carries it): the header is stale"),
        "{err}"
    );
    assert!(err.contains("hint: replace the header with the one of the release the libraries come from"), "{err}");
}

/// A folder extracted from a cuDNN 8 wheel holds the 3-part `cudnn_version.h` and libraries
/// named by major only; `libcudnn_ops_infer.so.8` states the whole release in its
/// `cudnn_version_8_9_4_25_...` marker, so the entry is 8.9.4.25 (it was 8.9.4, and a lab
/// pinning `cudnn = "8.9.4.25"` then found nothing in the store).
#[cfg(target_os = "linux")]
#[test]
fn a_wheel_folder_takes_its_build_number_from_the_library_marker() {
    let s = crate::support::stubs::Stubs::new();
    for stem in ["", "_ops_train", "_cnn_infer", "_cnn_train", "_adv_infer", "_adv_train"] {
        s.build("w/lib", &format!("libcudnn{stem}.so.8"), &["VERSION=8904"]);
    }
    s.build("w/lib", "libcudnn_ops_infer.so.8", &["VERSION=8904", "MARKER=\"cudnn_version_8_9_4_25_c33150885_e0\""]);
    let folder = s.tmp.path().join("w");
    std::fs::create_dir_all(folder.join("include")).unwrap();
    std::fs::write(folder.join("include/cudnn_version.h"), Release::V8.header()).unwrap();
    let ctx = TestContext::new();
    let row = ctx.add_ok(&folder, &["--cuda", "12"]);
    assert_eq!(row["version"], "8.9.4.25", "{row}");
    let meta = ctx.entry_toml(&ctx.only_entry());
    assert_eq!(meta["version_source"].as_str(), Some("the version string in `libcudnn_ops_infer.so.8`"), "{meta:?}");
}

/// An installer tree whose folder name says CUDA 13 while it holds only the 11.8 and 12.6
/// variants, added without `--cuda`: the refusal names the folder name as the claim's source,
/// never `--cuda`.
#[test]
fn a_cuda_claim_is_named_by_its_real_source() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let tree = installer_tree(&ctx.work, &r, &["11.8", "12.6"]);
    let named = ctx.path("cudnn-windows-x86_64-9.5.0.50_cuda13-archive");
    fs::rename(&tree, &named).unwrap();
    let err = ctx.add_refused(&named, &[]);
    assert!(!err.contains("--cuda says"), "{err}");
    assert!(
        err.contains(
            "the CUDA major is ambiguous: the source name `cudnn-windows-x86_64-9.5.0.50_cuda13-archive` says 13; this tree only holds CUDA variants 11.8, 12.6"
        ),
        "{err}"
    );
    assert!(err.contains("hint: what the names say disagrees with the content"), "{err}");
    // With --cuda, the claim is --cuda's.
    let err = ctx.add_refused(&named, &["--cuda", "11"]);
    assert!(err.contains("--cuda says 11, the source name `cudnn-windows-x86_64-9.5.0.50_cuda13-archive` says 13"), "{err}");
}
