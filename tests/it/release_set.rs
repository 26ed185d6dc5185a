//! The set a cuDNN release loads comes from the release's own files (src/cudnn/set.rs,
//! docs/loader.md R1-R3): the dispatcher names its sub-libraries in its read-only data, the
//! graph library names the engines and the heuristic, and `store add` requires exactly what
//! they name.
//!
//! Hermetic tests build Windows DLLs whose `.rdata` carries the names (any host: cuenv reads
//! DLLs statically). The `#[ignore]`d ones (scripts/real-input.sh) take the real 9.27.0.42
//! dispatcher and graph library out of their wheels (scripts/fetch-real-members.py: HTTP range
//! reads of the zip, checked against the wheel's RECORD) and stand in for the other members.

use std::path::{Path, PathBuf};

use crate::support::pe::{PeArch, PeDll};
use crate::support::*;

/// The names the real 9.27.0.42 `cudnn64_9.dll` carries (strings of its `.rdata`).
const DISPATCHER_927: &[&str] = &["cudnn64_9.dll", "cudnn_adv64_9.dll", "cudnn_cnn64_9.dll", "cudnn_ext64_9.dll", "cudnn_graph64_9.dll", "cudnn_ops64_9.dll"];
/// The names the real 9.27.0.42 `cudnn_graph64_9.dll` carries.
const GRAPH_927: &[&str] = &[
    "cudnn_cnn64_9.dll",
    "cudnn_engines_precompiled64_9.dll",
    "cudnn_engines_runtime_compiled64_9.dll",
    "cudnn_engines_tensor_ir64_9.dll",
    "cudnn_graph64_9.dll",
    "cudnn_heuristic64_9.dll",
];
/// The other members of the 9.27 set (no names of their own here).
const REST_927: &[&str] = &[
    "cudnn_adv64_9.dll",
    "cudnn_cnn64_9.dll",
    "cudnn_ops64_9.dll",
    "cudnn_heuristic64_9.dll",
    "cudnn_engines_precompiled64_9.dll",
    "cudnn_engines_runtime_compiled64_9.dll",
];

fn rdata(names: &[&str]) -> Vec<u8> {
    names.iter().flat_map(|n| format!("{n}\0").into_bytes()).collect()
}

const V927: [u16; 4] = [9, 27, 0, 42];

/// A folder `<dir>/bin` holding a 9.27-like DLL set whose dispatcher and graph name what the
/// real ones name, without the members in `leave_out`; `include/cudnn_version.h` beside it.
fn fake_927(dir: &Path, leave_out: &[&str]) -> PathBuf {
    let bin = dir.join("bin");
    PeDll::new(PeArch::Amd64, "dispatcher").version(Some(V927)).rdata(&rdata(DISPATCHER_927)).write(&bin, "cudnn64_9.dll");
    PeDll::new(PeArch::Amd64, "graph").rdata(&rdata(GRAPH_927)).write(&bin, "cudnn_graph64_9.dll");
    for n in REST_927.iter().chain(&["cudnn_ext64_9.dll", "cudnn_engines_tensor_ir64_9.dll"]).filter(|n| !leave_out.contains(n)) {
        PeDll::new(PeArch::Amd64, n).version(Some(V927)).write(&bin, n);
    }
    std::fs::create_dir_all(dir.join("include")).unwrap();
    std::fs::write(dir.join("include/cudnn_version.h"), version_header(9, 27, 0)).unwrap();
    dir.to_path_buf()
}

/// The input: a 9.27 folder without `cudnn_engines_tensor_ir64_9.dll` and
/// `cudnn_ext64_9.dll` imported as complete ("8 libraries"). Now it is refused, naming each
/// missing file with the library that names it; with both present the set is complete (10
/// libraries), and with `--allow-incomplete` the entry records both.
#[test]
fn a_set_lacking_what_its_dispatcher_and_graph_name_is_refused() {
    let ctx = TestContext::new();
    let folder = fake_927(&ctx.path("cudnn-9.27-partial"), &["cudnn_ext64_9.dll", "cudnn_engines_tensor_ir64_9.dll"]);
    let err = ctx.add_refused(&folder, &["--cuda", "12"]);
    assert!(
        err.starts_with("error[R2]: ")
            && err.contains("incomplete cuDNN 9.27.0.42 set")
            && err.contains("lacks cudnn_ext64_9.dll, cudnn_engines_tensor_ir64_9.dll"),
        "{err}"
    );
    assert!(
        err.contains("`cudnn64_9.dll` names `cudnn_ext64_9.dll`") && err.contains("`cudnn_graph64_9.dll` names `cudnn_engines_tensor_ir64_9.dll`"),
        "{err}"
    );
    ctx.assert_store_unchanged();

    let row = ctx.add_ok(&folder, &["--cuda", "12", "--allow-incomplete"]);
    let toml = ctx.entry_toml(&ctx.store_dir().join(row["name"].as_str().unwrap()));
    let incomplete: Vec<&str> = toml["incomplete"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(incomplete, ["cudnn_ext64_9.dll", "cudnn_engines_tensor_ir64_9.dll"]);

    let ctx = TestContext::new();
    let whole = fake_927(&ctx.path("cudnn-9.27"), &[]);
    let row = ctx.add_ok(&whole, &["--cuda", "12"]);
    let toml = ctx.entry_toml(&ctx.store_dir().join(row["name"].as_str().unwrap()));
    assert_eq!(toml["libraries"].as_array().unwrap().len(), 10, "{toml}");
    assert!(toml.get("incomplete").is_none(), "{toml}");
}

/// What the files name is the set, also when it is smaller than the table's row: a
/// dispatcher naming only graph and ops, with both present, is complete. A dispatcher naming
/// nothing falls back to the table, and the error says the set came from the table.
#[test]
fn the_files_not_the_table_decide_and_the_table_says_when_it_decided() {
    let ctx = TestContext::new();
    let dir = ctx.path("small");
    let bin = dir.join("bin");
    PeDll::new(PeArch::Amd64, "d").version(Some([9, 5, 0, 50])).rdata(&rdata(&["cudnn_graph64_9.dll", "cudnn_ops64_9.dll"])).write(&bin, "cudnn64_9.dll");
    PeDll::new(PeArch::Amd64, "g").write(&bin, "cudnn_graph64_9.dll");
    PeDll::new(PeArch::Amd64, "o").version(Some([9, 5, 0, 50])).write(&bin, "cudnn_ops64_9.dll");
    let row = ctx.add_ok(&dir, &["--cuda", "12"]);
    assert_eq!(row["version"], "9.5.0.50");

    let ctx = TestContext::new();
    let dir = ctx.path("mute");
    let bin = dir.join("bin");
    PeDll::new(PeArch::Amd64, "d").version(Some([9, 5, 0, 50])).write(&bin, "cudnn64_9.dll");
    PeDll::new(PeArch::Amd64, "o").version(Some([9, 5, 0, 50])).write(&bin, "cudnn_ops64_9.dll");
    let err = ctx.add_refused(&dir, &["--cuda", "12"]);
    assert!(
        err.contains("lacks cudnn_graph64_9.dll")
            && err.contains("its dispatcher names none of its sub-libraries, so cuenv's table decides: cuDNN 9.5.0.50 ships them"),
        "{err}"
    );

    // Past the table's last checked release the table cannot refuse (decisions.md 8): the set
    // is kept, "not verified", with what the table lists recorded as missing, and a warning.
    let ctx = TestContext::new();
    let dir = ctx.path("future");
    let bin = dir.join("bin");
    PeDll::new(PeArch::Amd64, "d").version(Some([9, 99, 0, 1])).write(&bin, "cudnn64_9.dll");
    PeDll::new(PeArch::Amd64, "o").version(Some([9, 99, 0, 1])).write(&bin, "cudnn_ops64_9.dll");
    let out = ctx.cmd().args(["store", "add", "--cuda", "12"]).arg(&dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning[R2]: ")
            && err.contains("lacks cudnn_graph64_9.dll")
            && err.contains("not verified: its dispatcher names none of its sub-libraries, and cuenv's table, checked through cuDNN 9.28.0.42, lists them"),
        "{err}"
    );
    let toml = ctx.entry_toml(&ctx.only_entry());
    assert!(toml["incomplete"].as_array().is_some_and(|a| a.iter().any(|v| v.as_str() == Some("cudnn_graph64_9.dll"))), "{toml}");
}

/// A member of a real wheel, fetched by scripts/fetch-real-members.py.
fn real_member(wheel: &str, name: &str) -> PathBuf {
    let p = real_wheels_dir().join("members").join(wheel).join(name);
    assert!(p.is_file(), "{} is missing: run scripts/fetch-real-wheels.sh (or set CUENV_REAL_WHEELS)", p.display());
    p
}

const WHEEL_927_LINUX: &str = "nvidia_cudnn_cu12-9.27.0.42-py3-none-manylinux_2_27_x86_64.whl";
const WHEEL_927_WINDOWS: &str = "nvidia_cudnn_cu12-9.27.0.42-py3-none-win_amd64.whl";

/// The real 9.27.0.42 dispatcher and graph library (Linux and Windows) with stand-ins for the
/// other members: without ext and engines_tensor_ir the set is refused, naming both and who
/// names them; with stand-ins for both it imports as 10 libraries. The table agrees with what
/// the real files name (the cross-check).
#[test]
#[ignore = "real-input: needs members of the real 9.27.0.42 wheels (scripts/real-input.sh)"]
fn real_927_dispatcher_and_graph_name_ext_and_engines_tensor_ir() {
    for (wheel, dir, dispatcher, graph, ext, tensor_ir, rest) in [
        (
            WHEEL_927_LINUX,
            "lib",
            "libcudnn.so.9",
            "libcudnn_graph.so.9",
            "libcudnn_ext.so.9",
            "libcudnn_engines_tensor_ir.so.9",
            [
                "libcudnn_adv.so.9",
                "libcudnn_cnn.so.9",
                "libcudnn_ops.so.9",
                "libcudnn_heuristic.so.9",
                "libcudnn_engines_precompiled.so.9",
                "libcudnn_engines_runtime_compiled.so.9",
            ],
        ),
        (
            WHEEL_927_WINDOWS,
            "bin",
            "cudnn64_9.dll",
            "cudnn_graph64_9.dll",
            "cudnn_ext64_9.dll",
            "cudnn_engines_tensor_ir64_9.dll",
            REST_927.try_into().unwrap(),
        ),
    ] {
        let ctx = TestContext::new();
        let root = ctx.path("cudnn-9.27");
        let lib = root.join(dir);
        std::fs::create_dir_all(&lib).unwrap();
        for f in [dispatcher, graph] {
            std::fs::copy(real_member(wheel, f), lib.join(f)).unwrap();
        }
        let stand_in = |name: &str| {
            if dir == "bin" {
                PeDll::new(PeArch::Amd64, name).write(&lib, name);
            } else {
                std::fs::write(lib.join(name), elf_so(name)).unwrap();
            }
        };
        rest.iter().for_each(|n| stand_in(n));
        std::fs::create_dir_all(root.join("include")).unwrap();
        std::fs::write(root.join("include/cudnn_version.h"), version_header(9, 27, 0)).unwrap();

        let err = ctx.add_refused(&root, &["--cuda", "12"]);
        assert!(err.contains(&format!("lacks {ext}, {tensor_ir}")), "{wheel}: {err}");
        assert!(err.contains(&format!("`{dispatcher}` names `{ext}`")) && err.contains(&format!("`{graph}` names `{tensor_ir}`")), "{wheel}: {err}");
        ctx.assert_store_unchanged();

        stand_in(ext);
        stand_in(tensor_ir);
        let row = ctx.add_ok(&root, &["--cuda", "12"]);
        assert_eq!(row["version"], "9.27.0.42", "{wheel}: {row}");
        let toml = ctx.entry_toml(&ctx.store_dir().join(row["name"].as_str().unwrap()));
        assert_eq!(toml["libraries"].as_array().unwrap().len(), 10, "{wheel}: {toml}");
    }
}

/// The input: the real 8.9.4.25 set with its `libcudnn_ops_train.so.8` taken from
/// 8.9.2.26. Each 8.x sub-library exports its own version as data (`cudnn_ops_train_version`
/// = 0x080902 here, 0x080904 in the rest: `binfmt::exported_version`), so `store add` sees
/// two releases without running anything and refuses the set (V2); the untouched set imports.
#[test]
#[ignore = "real-input: needs the real 8.9.4.25 wheel and 8.9.2.26's ops_train (scripts/real-input.sh)"]
fn real_894_with_892_ops_train_is_two_releases() {
    let ctx = TestContext::new();
    let wheel = real_wheel("nvidia_cudnn_cu12-8.9.4.25-py3-none-manylinux1_x86_64.whl");
    let root = ctx.path("site-packages");
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&wheel).unwrap()).unwrap();
    zip.extract(&root).unwrap();
    let lib = root.join("nvidia/cudnn/lib");
    let ops_train = lib.join("libcudnn_ops_train.so.8");
    std::fs::remove_file(&ops_train).unwrap();
    std::fs::copy(real_member("nvidia_cudnn_cu12-8.9.2.26-py3-none-manylinux1_x86_64.whl", "libcudnn_ops_train.so.8"), &ops_train).unwrap();
    let err = ctx.add_refused(&root.join("nvidia/cudnn"), &[]);
    assert!(
        err.starts_with("error[V2]: ") && err.contains("libraries of two cuDNN releases in one set") && err.contains("`libcudnn_ops_train.so.8` is 8.9.2"),
        "{err}"
    );
    ctx.assert_store_unchanged();
}

/// 9.27.0.42's dispatcher exports `cudnnSubquadraticOpsVersionCheck`, whose name follows no
/// library's: the library it is forwarded to is the one exporting the same function, read
/// from the export tables (`probe::check_libraries`): `libcudnn_ext.so.9`.
#[test]
#[ignore = "real-input: needs members of the real 9.27.0.42 wheels (scripts/real-input.sh)"]
fn real_927_version_check_of_ext_is_found_by_its_exports() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ext.so.9"] {
        std::fs::copy(real_member(WHEEL_927_LINUX, f), dir.path().join(f)).unwrap();
    }
    let exports = cuenv::sys::binfmt::exported_names(&dir.path().join("libcudnn.so.9")).unwrap();
    let checks = cuenv::probe::version_check_names(&exports);
    assert!(checks.iter().any(|c| c == "cudnnSubquadraticOpsVersionCheck"), "{checks:?}");
    let found = cuenv::probe::check_libraries(&[dir.path().to_path_buf()], 9, &checks);
    assert!(found.contains(&("cudnnSubquadraticOpsVersionCheck".to_string(), "libcudnn_ext.so.9".to_string())), "{found:?}");
    assert!(found.contains(&("cudnnGraphVersionCheck".to_string(), "libcudnn_graph.so.9".to_string())), "{found:?}");
}
