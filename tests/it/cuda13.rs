//! CUDA 13: toolkit roots without `version.json`, a cuDNN's CUDA major read from the
//! CUDA libraries it names, and the CUDA 13 layouts of archives, wheels and redist manifests.
//! Fixtures are built at test time (hand-made PE/ELF files; on Linux also C stubs built with
//! gcc); nothing of NVIDIA's is used.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::support::*;

const CUDART_13000: &str = "/* fake cuda_runtime_api.h */\n#define CUDART_VERSION 13000\n";

/// `cuenv toolkits --json` with only `roots` named; returns (root, version, version_source) of
/// each toolkit found under `under`, and the human output.
fn toolkits(ctx: &TestContext, roots: &[&Path], under: &Path) -> (Vec<(String, Value, Value)>, String) {
    let paths = std::env::join_paths(roots).unwrap();
    let run = |json: bool| {
        let mut c = ctx.cmd();
        c.arg("toolkits").env("CUENV_TOOLKIT_PATHS", &paths).env("CUDA_HOME", "").env("CUDA_PATH", "");
        if json {
            c.arg("--json");
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let doc: Value = serde_json::from_str(&run(true)).unwrap();
    let under = fs::canonicalize(under).unwrap();
    let under = dunce::simplified(&under).to_string_lossy().into_owned();
    let rows = doc["toolkits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["root"].as_str().unwrap().starts_with(&under))
        .map(|t| (t["root"].as_str().unwrap().rsplit(['/', '\\']).next().unwrap().to_string(), t["version"].clone(), t["version_source"].clone()))
        .collect();
    (rows, run(false))
}

/// CUDA 13 roots laid out like the real installs, without `version.json`: Linux
/// (`targets/x86_64-linux/lib/libcudart.so.13.0.96`, the header under `targets/.../include`)
/// and Windows (`bin/x64/cudart64_13.dll` whose VERSIONINFO FileVersion is 6.14.11.13000, as
/// in the real DLL). Before, both were listed with version `?`.
#[test]
fn cuda13_roots_without_version_json_get_their_version() {
    let ctx = TestContext::new();
    let linux = ctx.path("cuda-13.0");
    let target = linux.join("targets/x86_64-linux");
    fs::create_dir_all(target.join("lib")).unwrap();
    fs::write(target.join("lib/libcudart.so.13.0.96"), elf_so("libcudart.so.13.0.96")).unwrap();
    fs::write(target.join("lib/libcudart.so.13"), elf_so("libcudart.so.13")).unwrap();
    fs::create_dir_all(target.join("include")).unwrap();
    fs::write(target.join("include/cuda_runtime_api.h"), CUDART_13000).unwrap();
    let windows = ctx.path("v13.0");
    fs::create_dir_all(windows.join("bin/x64")).unwrap();
    fs::write(windows.join("bin/x64/cudart64_13.dll"), pe_dll(PeArch::Amd64, Some([6, 14, 11, 13000]), "cudart64_13.dll")).unwrap();
    // A root whose only clue is the header.
    let header_only = ctx.path("toolkit-h");
    fs::create_dir_all(header_only.join("lib64")).unwrap();
    fs::write(header_only.join("lib64/libcudart.so.13"), elf_so("libcudart.so.13")).unwrap();
    fs::create_dir_all(header_only.join("include")).unwrap();
    fs::write(header_only.join("include/cuda_runtime_api.h"), CUDART_13000).unwrap();

    let (rows, text) = toolkits(&ctx, &[&linux, &windows, &header_only], &ctx.work);
    let want = |name: &str, v: &str, source: &str| (name.to_string(), Value::from(v), Value::from(source));
    assert_eq!(
        rows,
        [
            want("toolkit-h", "13.0", "include/cuda_runtime_api.h"),
            want("v13.0", "13.0", "runtime VERSIONINFO"),
            want("cuda-13.0", "13.0.96", "runtime file name"),
        ]
    );
    assert!(text.contains("it has no version.json; its CUDA version 13.0.96 comes from the runtime file name"), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("13.0") && l.contains(" ? ")), "{text}");
}

/// Windows: the full version from a VERSIONINFO string table laid out as
/// windres writes it for the real `cudart64_13.dll` (`ProductName` `NVIDIA CUDA 13.0.96
/// Runtime`), assembled in Rust (support::pe), so no mingw is needed.
#[test]
fn cuda13_windows_runtime_versioninfo_string_table() {
    let ctx = TestContext::new();
    let root = ctx.path("v13.0");
    pe::cudart_dll("13.0.96").write(&root.join("bin/x64"), "cudart64_13.dll");
    let (rows, _) = toolkits(&ctx, &[&root], &ctx.work);
    assert_eq!(rows, [("v13.0".to_string(), Value::from("13.0.96"), Value::from("runtime VERSIONINFO"))]);
}

/// Every cuDNN layout of CUDA 13 imports as a cuda13 entry: the
/// `nvidia-cudnn-cu13` wheels (Windows, Linux), the `_cuda13` archives (Linux; Windows with
/// `bin/x64/`), and NVIDIA's installer tree with a `13.0` variant folder beside `12.9`.
#[test]
fn cuda13_cudnn_layouts_import_as_cuda13_entries() {
    let ctx = TestContext::new();
    let r = Release { version: [9, 14, 0, 64], cuda: 13 };
    let cases: Vec<(std::path::PathBuf, Vec<&str>, &str, &str)> = vec![
        (wheel(&ctx.work, &r, WheelOs::Windows), vec![], "windows-x86_64", "bin"),
        (wheel(&ctx.work, &r, WheelOs::Linux), vec![], "linux-x86_64", "lib"),
        (linux_tar_xz(&ctx.work, &r), vec![], "linux-x86_64", "lib"),
        (windows_zip(&ctx.work, &r, BinDir::BinX64), vec![], "windows-x86_64", "bin/x64"),
    ];
    for (path, args, platform, lib) in cases {
        let row = ctx.add_ok(&path, &args);
        assert_eq!(row["cuda_major"], 13, "{}: {row}", path.display());
        assert_eq!(row["platform"], platform, "{row}");
        assert!(row["name"].as_str().unwrap().starts_with(&format!("cudnn-9.14.0.64-cuda13-{platform}-")), "{row}");
        let meta = ctx.entry_toml(Path::new(row["path"].as_str().unwrap()));
        let layout = &meta["layout"];
        assert_eq!(layout.get("bin").or(layout.get("lib")).and_then(|v| v.as_str()), Some(lib), "{}", path.display());
    }
    let root = installer_tree(&ctx.work, &r, &["12.9", "13.0"]);
    let row = ctx.add_ok(&root, &["--cuda", "13"]);
    assert_eq!(row["cuda_major"], 13, "{row}");
    let meta = ctx.entry_toml(Path::new(row["path"].as_str().unwrap()));
    assert_eq!(meta["layout"]["bin"].as_str(), Some("bin/13.0/x64"));
}

/// The CUDA major a cuDNN is built for, read from the CUDA libraries it names
/// (without loading them); a `--cuda` they contradict is refused. C stubs built at test time.
#[cfg(target_os = "linux")]
mod static_major {
    use super::*;

    /// A cuDNN 9.14.0 folder of C stubs (`lib/`, `include/`) whose dispatcher reports cudart
    /// `cudart` and whose `adv` sub-library loads `loads` by name (`None`: names nothing).
    /// With `needed`, the `ops` sub-library links a stub `libcudart.so.<needed>` (a DT_NEEDED entry).
    fn linux_cudnn(stubs: &stubs::Stubs, name: &str, cudart: u32, loads: Option<&str>, needed: Option<u64>) -> std::path::PathBuf {
        let lib = format!("{name}/lib");
        let cudart_def = format!("CUDNN_CUDART={cudart}");
        let dir = stubs.build(&lib, "libcudnn.so.9", &["VERSION=91400", &cudart_def]);
        let loads_def = loads.map(|l| format!("LOADS=\"{l}\""));
        let mut adv = vec!["GRAPH", "VERSION=91400"];
        if let Some(d) = &loads_def {
            adv.push(d);
        }
        stubs.build(&lib, "libcudnn_adv.so.9", &adv);
        stubs.build(&lib, "libcudnn_graph.so.9", &["GRAPH", "VERSION=91400"]);
        match needed {
            Some(m) => {
                let rt = stubs.build(&format!("{name}-rt"), &format!("libcudart.so.{m}"), &["CUDART=13000"]);
                let l = format!("-L{}", rt.display());
                let so = format!("-l:libcudart.so.{m}");
                stubs.build_with(&lib, "libcudnn_ops.so.9", &["GRAPH", "VERSION=91400"], &[&l, "-Wl,--no-as-needed", &so]);
            }
            None => {
                stubs.build(&lib, "libcudnn_ops.so.9", &["GRAPH", "VERSION=91400"]);
            }
        }
        let root = dir.parent().unwrap().to_path_buf();
        fs::create_dir_all(root.join("include")).unwrap();
        fs::write(root.join("include/cudnn_version.h"), version_header(9, 14, 0)).unwrap();
        root
    }

    #[test]
    fn a_cuda13_cudnn_added_with_cuda_12_is_refused() {
        let ctx = TestContext::new();
        let stubs = stubs::Stubs::new();
        let cudnn = linux_cudnn(&stubs, "cudnn13", 13000, Some("libcublasLt.so.13"), None);
        let err = ctx.add_refused(&cudnn, &["--cuda", "12"]);
        assert!(err.contains("--cuda says CUDA 12, but its libraries are built for CUDA 13: `libcudnn_adv.so.9` loads `libcublasLt.so.13`"), "{err}");
        assert!(err.contains("hint: pass --cuda 13"), "{err}");
        // Without --cuda the libraries say it; with --cuda 13 they agree.
        let row = ctx.add_ok(&cudnn, &["--allow-incomplete"]);
        assert_eq!(row["cuda_major"], 13, "{row}");
        let meta = ctx.entry_toml(&ctx.only_entry());
        assert_eq!(meta["cuda_source"].as_str(), Some("the libraries (`libcudnn_adv.so.9` loads `libcublasLt.so.13`)"));
        assert_eq!(ctx.add_ok(&cudnn, &["--cuda", "13", "--allow-incomplete"])["existed"], true);
    }

    #[test]
    fn a_dt_needed_entry_names_the_major_too() {
        let ctx = TestContext::new();
        let stubs = stubs::Stubs::new();
        let cudnn = linux_cudnn(&stubs, "needed", 13000, None, Some(13));
        let err = ctx.add_refused(&cudnn, &["--cuda", "12"]);
        assert!(err.contains("built for CUDA 13: `libcudnn_ops.so.9` loads `libcudart.so.13`"), "{err}");
    }

    #[test]
    fn libraries_that_name_no_cuda_library_leave_the_major_to_the_user_and_say_so() {
        let ctx = TestContext::new();
        let stubs = stubs::Stubs::new();
        let cudnn = linux_cudnn(&stubs, "silent", 13000, None, None);
        assert_eq!(ctx.add_ok(&cudnn, &["--cuda", "12", "--allow-incomplete"])["cuda_major"], 12);
        let meta = ctx.entry_toml(&ctx.only_entry());
        assert_eq!(meta["cuda_source"].as_str(), Some("--cuda (taken from the user: the libraries name no CUDA library by major)"));
    }

    /// The same on Windows DLLs (assembled in Rust, support::pe): `cudnn_adv64_9.dll` holds
    /// the name `cublasLt64_13.dll` in `.rdata`, as a DLL passing it to `LoadLibraryA` does.
    #[test]
    fn a_cuda13_windows_cudnn_added_with_cuda_12_is_refused() {
        let ctx = TestContext::new();
        let root = ctx.path("cudnn-win");
        let bin = root.join("bin");
        PeDll::new(PeArch::Amd64, "cudnn64_9.dll").rdata(b"cudnnGetCudartVersion\0").write(&bin, "cudnn64_9.dll");
        PeDll::new(PeArch::Amd64, "cudnn_adv64_9.dll").rdata(b"stub_load\0cublasLt64_13.dll\0").write(&bin, "cudnn_adv64_9.dll");
        PeDll::new(PeArch::Amd64, "cudnn_graph64_9.dll").rdata(b"stub_graph\0").write(&bin, "cudnn_graph64_9.dll");
        fs::create_dir_all(root.join("include")).unwrap();
        fs::write(root.join("include/cudnn_version.h"), version_header(9, 14, 0)).unwrap();
        let err = ctx.add_refused(&root, &["--cuda", "12"]);
        assert!(err.contains("built for CUDA 13: `cudnn_adv64_9.dll` loads `cublasLt64_13.dll`"), "{err}");
        assert_eq!(ctx.add_ok(&root, &["--allow-incomplete"])["cuda_major"], 13);
    }
}
