//! Integration tests of `cuenv store`: every accepted layout, content addressing, list,
//! verify, remove, and one test per error message (exit code 2, the member and rule
//! named, a hint, and the store left unchanged). Fixtures are built at test time by
//! `support`.

mod support;

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use support::*;

// ------------------------------------------------------------------ fixtures themselves

mod fixtures {
    use super::*;

    fn inspect_bytes(bytes: &[u8]) -> cuenv::binfmt::BinaryInfo {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        fs::write(&p, bytes).unwrap();
        cuenv::binfmt::inspect(&p).unwrap()
    }

    #[test]
    fn pe_dll_parses_with_its_file_version() {
        let info = inspect_bytes(&pe_dll(PeArch::Amd64, Some([9, 5, 0, 50]), "cudnn64_9.dll"));
        assert_eq!(info.platform, Some(cuenv::binfmt::Platform::WindowsX86_64));
        assert_eq!(info.file_version.map(|v| v.to_string()).as_deref(), Some("9.5.0.50"));
    }

    #[test]
    fn pe_dll_without_versioninfo() {
        let info = inspect_bytes(&pe_dll(PeArch::Amd64, None, "cudnn_graph64_9.dll"));
        assert_eq!(info.platform, Some(cuenv::binfmt::Platform::WindowsX86_64));
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
        assert_eq!(info.platform, Some(cuenv::binfmt::Platform::LinuxX86_64));
        let info = inspect_bytes(&elf_so_machine("libcudnn.so.9", 183));
        assert_eq!(info.platform, Some(cuenv::binfmt::Platform::LinuxSbsa));
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
    let dir = check_entry(&ctx, &row, &Expect {
        version: "9.5.0.50",
        cuda: 12,
        platform: "windows-x86_64",
        libraries: dll_names(&r),
        bin: Some("bin"),
        lib: Some("lib/x64"),
        include: Some("include"),
    });
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
    check_entry(&ctx, &row, &Expect {
        version: "9.5.0.50",
        cuda: 12,
        platform: "windows-x86_64",
        libraries: dll_names(&r),
        bin: Some("bin/x64"),
        lib: Some("lib/x64"),
        include: Some("include"),
    });
}

#[test]
fn official_windows_zip_cudnn8() {
    let ctx = TestContext::new();
    let r = Release::V8;
    let row = ctx.add_ok(&windows_zip(&ctx.work, &r, BinDir::Bin), &[]);
    check_entry(&ctx, &row, &Expect {
        version: "8.9.4.25",
        cuda: 12,
        platform: "windows-x86_64",
        libraries: dll_names(&r),
        bin: Some("bin"),
        lib: Some("lib/x64"),
        include: Some("include"),
    });
    assert_eq!(dll_names(&r).len(), 7);
}

#[test]
fn official_linux_tar_xz_keeps_symlink_chains() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let row = ctx.add_ok(&linux_tar_xz(&ctx.work, &r), &[]);
    let dir = check_entry(&ctx, &row, &Expect {
        version: "9.5.0.50",
        cuda: 12,
        platform: "linux-x86_64",
        libraries: linux_archive_libs(&r),
        bin: None,
        lib: Some("lib"),
        include: Some("include"),
    });
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
    check_entry(&ctx, &row, &Expect {
        version: "9.5.0.50",
        cuda: 12,
        platform: "linux-sbsa",
        libraries: sorted(r.sonames()),
        bin: None,
        lib: Some("lib"),
        include: Some("include"),
    });
}

#[test]
fn legacy_cuda_folder_zip() {
    let ctx = TestContext::new();
    let r = Release { version: [8, 1, 1, 33], cuda: 11 };
    let row = ctx.add_ok(&legacy_windows_zip(&ctx.work, &r, 2), &[]);
    let dir = check_entry(&ctx, &row, &Expect {
        version: "8.1.1.33",
        cuda: 11,
        platform: "windows-x86_64",
        libraries: dll_names(&r),
        bin: Some("bin"),
        lib: Some("lib/x64"),
        include: Some("include"),
    });
    // The `cuda/` top folder is the release root; files beside it are not part of the entry.
    assert!(!dir.join("cuda").exists() && !dir.join("NVIDIA_SLA_cuDNN_Support.txt").exists());
}

#[test]
fn legacy_cuda_folder_tgz() {
    let ctx = TestContext::new();
    let r = Release { version: [8, 2, 1, 32], cuda: 10 };
    let row = ctx.add_ok(&legacy_linux_tgz(&ctx.work, &r, 2), &[]);
    let dir = check_entry(&ctx, &row, &Expect {
        version: "8.2.1.32",
        cuda: 10,
        platform: "linux-x86_64",
        libraries: linux_archive_libs(&r),
        bin: None,
        lib: Some("lib64"),
        include: Some("include"),
    });
    assert_eq!(ctx.entry_toml(&dir)["source"]["kind"].as_str(), Some("tar-gz"));
    #[cfg(unix)]
    assert_eq!(fs::read_link(dir.join("lib64/libcudnn.so.8")).unwrap(), Path::new("libcudnn.so.8.2.1"));
}

#[test]
fn wheel_windows_cudnn9() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let row = ctx.add_ok(&wheel(&ctx.work, &r, WheelOs::Windows), &[]);
    let dir = check_entry(&ctx, &row, &Expect {
        version: "9.5.0.50",
        cuda: 12,
        platform: "windows-x86_64",
        libraries: dll_names(&r),
        bin: Some("bin"),
        lib: None,
        include: Some("include"),
    });
    assert_eq!(ctx.entry_toml(&dir)["source"]["kind"].as_str(), Some("wheel"));
    // The entry is nvidia/cudnn; the dist-info and nvidia/__init__.py are not in it.
    assert!(!dir.join(dist_info(&r)).exists() && !dir.join("nvidia").exists());
}

#[test]
fn wheel_linux_cudnn9() {
    let ctx = TestContext::new();
    let r = Release::V9;
    let row = ctx.add_ok(&wheel(&ctx.work, &r, WheelOs::Linux), &[]);
    check_entry(&ctx, &row, &Expect {
        version: "9.5.0.50",
        cuda: 12,
        platform: "linux-x86_64",
        libraries: sorted(r.sonames()),
        bin: None,
        lib: Some("lib"),
        include: Some("include"),
    });
}

#[test]
fn wheel_windows_and_linux_cudnn8() {
    let ctx = TestContext::new();
    for (r, os, platform) in [(Release::V8, WheelOs::Windows, "windows-x86_64"), (Release::V8_CU11, WheelOs::Linux, "linux-x86_64")] {
        let row = ctx.add_ok(&wheel(&ctx.work, &r, os), &[]);
        let win = os == WheelOs::Windows;
        check_entry(&ctx, &row, &Expect {
            version: &r.v4(),
            cuda: r.cuda,
            platform,
            libraries: if win { dll_names(&r) } else { sorted(r.sonames()) },
            bin: win.then_some("bin"),
            lib: (!win).then_some("lib"),
            include: Some("include"),
        });
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
    let dir = check_entry(&ctx, &row, &Expect {
        version: "9.5.0.50",
        cuda: 12,
        platform: "windows-x86_64",
        libraries: dll_names(&r),
        bin: Some("bin"),
        lib: Some("lib/x64"),
        include: Some("include"),
    });
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
    let dir = check_entry(&ctx, &row, &Expect {
        version: "9.5.0.50",
        cuda: 12,
        platform: "linux-x86_64",
        libraries: sorted(r.sonames()),
        bin: None,
        lib: Some("lib"),
        include: Some("include"),
    });
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
        let dir = check_entry(&ctx, &row, &Expect {
            version: "9.5.0.50",
            cuda: cuda.parse().unwrap(),
            platform: "windows-x86_64",
            libraries: dll_names(&r),
            bin: Some(&format!("bin/{v}/x64")),
            lib: Some(&format!("lib/{v}/x64")),
            include: Some(&format!("include/{v}")),
        });
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
    with_writable_dir(&dir.join("include"), || fs::remove_file(dir.join("include/cudnn.h")).unwrap());
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
