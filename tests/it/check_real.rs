//! `cuenv check`'s probe against the real cuDNN wheels (Linux). Ignored by default: they need
//! the downloaded wheels. Run with
//! `cargo test --test it check_real:: -- --ignored --nocapture`.
//!
//! Inputs: `$CUENV_REAL_WHEELS`, else `~/.cache/cuenv-real-wheels`, holding
//! `nvidia_cudnn_cu12-9.5.0.50-*manylinux*.whl`, `nvidia_cudnn_cu12-8.9.4.25-*manylinux*.whl`,
//! `nvidia_cudnn_cu11-8.8.0.121-*manylinux*.whl`, `nvidia_cuda_runtime_cu12-*.whl` and
//! `nvidia_cuda_runtime_cu11-*.whl`. The cuDNN wheels are imported with the real
//! `cuenv store add` into a home under Cargo's per-target temp folder, which is kept and
//! reused by later runs (about 3 GB); the runtime wheels' `lib/` folders are unpacked there too.
#![cfg(target_os = "linux")]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use cuenv::check::{CheckResult, CheckStatus, Expected, ProbeEnd, ProbeOutcome, ReasonKind, classify, run_probe};
use cuenv::cudnn::version::Version;
use cuenv::probe::ModuleKind;
use cuenv::store::entry::EntryMeta;

const T: Duration = Duration::from_secs(120);

struct Entry {
    dir: PathBuf,
    lib: PathBuf,
    version: Version,
    cuda: u64,
}

struct Real {
    entries: Vec<Entry>,
    cudart12: PathBuf,
    cudart11: PathBuf,
    scratch: PathBuf,
}

impl Real {
    fn entry(&self, version: &str) -> &Entry {
        self.entries.iter().find(|e| e.version.to_string() == version).unwrap_or_else(|| panic!("no entry {version}"))
    }
    fn cudart(&self, cuda: u64) -> &Path {
        if cuda == 11 { &self.cudart11 } else { &self.cudart12 }
    }
}

fn wheels_dir() -> PathBuf {
    std::env::var_os("CUENV_REAL_WHEELS").map(PathBuf::from).unwrap_or_else(|| dirs::home_dir().expect("a home folder").join(".cache/cuenv-real-wheels"))
}

fn find_wheel(dir: &Path, prefix: &str) -> PathBuf {
    let mut hits: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {} (set CUENV_REAL_WHEELS): {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with(prefix) && n.contains("manylinux") && n.ends_with(".whl")
        })
        .collect();
    hits.sort();
    hits.pop().unwrap_or_else(|| panic!("no {prefix}*manylinux*.whl in {}", dir.display()))
}

fn cuenv() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_cuenv"))
}

/// Unpacks `nvidia/cuda_runtime/lib/*` of a runtime wheel into `dest` (once).
fn unpack_runtime(wheel: &Path, dest: &Path) -> PathBuf {
    let lib = dest.join("lib");
    if lib.is_dir() {
        return lib;
    }
    let tmp = dest.with_extension("part");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.join("lib")).unwrap();
    let mut zip = zip::ZipArchive::new(std::fs::File::open(wheel).unwrap()).unwrap();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).unwrap();
        let name = f.name().unwrap().to_string();
        if let Some(file) = name.strip_prefix("nvidia/cuda_runtime/lib/")
            && file.contains(".so")
            && !file.contains('/')
        {
            let mut out = std::fs::File::create(tmp.join("lib").join(file)).unwrap();
            std::io::copy(&mut f, &mut out).unwrap();
        }
    }
    std::fs::rename(&tmp, dest).unwrap();
    lib
}

fn real() -> &'static Real {
    static REAL: OnceLock<Real> = OnceLock::new();
    REAL.get_or_init(|| {
        let wheels = wheels_dir();
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("check-real");
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut entries = Vec::new();
        for prefix in ["nvidia_cudnn_cu12-9.5.0.50-", "nvidia_cudnn_cu12-8.9.4.25-", "nvidia_cudnn_cu11-8.8.0.121-"] {
            let wheel = find_wheel(&wheels, prefix);
            let wheel_name = wheel.file_name().unwrap().to_string_lossy().into_owned();
            // Reuse an entry an earlier run imported (importing takes tens of seconds).
            let list = Command::new(cuenv()).arg("--home").arg(&home).args(["store", "list", "--json"]).output().unwrap();
            let listed: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap_or_default();
            let known = listed.as_array().and_then(|rows| rows.iter().find(|r| r["source"] == wheel_name.as_str())).cloned();
            let row = match known {
                Some(row) => row,
                None => {
                    let out = Command::new(cuenv()).arg("--home").arg(&home).args(["--quiet", "store", "add", "--json"]).arg(&wheel).output().unwrap();
                    assert!(out.status.success(), "store add {}: {}", wheel.display(), String::from_utf8_lossy(&out.stderr));
                    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                    rows[0].clone()
                }
            };
            let dir = PathBuf::from(row["path"].as_str().unwrap());
            let meta = EntryMeta::read(&dir).unwrap();
            let lib = dir.join(meta.layout.lib.as_deref().expect("a Linux entry has lib/"));
            entries.push(Entry { dir, lib, version: meta.version.clone(), cuda: meta.cuda_major });
        }
        let cudart12 = unpack_runtime(&find_wheel(&wheels, "nvidia_cuda_runtime_cu12-"), &root.join("cudart12"));
        let cudart11 = unpack_runtime(&find_wheel(&wheels, "nvidia_cuda_runtime_cu11-"), &root.join("cudart11"));
        // The CUDA libraries cuDNN loads by name (docs/loader.md F4): stand-ins beside the
        // real runtime, as a toolkit root has them.
        crate::support::stubs::companion_stubs(&cudart12, 12);
        crate::support::stubs::companion_stubs(&cudart11, 11);
        let scratch = root.join("scratch");
        std::fs::create_dir_all(&scratch).unwrap();
        Real { entries, cudart12, cudart11, scratch }
    })
}

fn env_with(ld: &[&Path]) -> Vec<(OsString, OsString)> {
    let mut env = vec![(OsString::from("LD_LIBRARY_PATH"), std::env::join_paths(ld).unwrap())];
    for k in ["PATH", "HOME"] {
        if let Some(v) = std::env::var_os(k) {
            env.push((k.into(), v));
        }
    }
    env
}

fn expected(e: &Entry) -> Expected {
    Expected { entry_dir: e.dir.clone(), version: e.version.clone(), cuda_major: Some(e.cuda) }
}

fn show(o: &ProbeOutcome, c: &CheckResult) -> String {
    format!("status {}\nreasons {:#?}\nnotes {:#?}\nstderr {}\nend {:?}", c.status, c.reasons, c.notes, o.stderr_tail, o.end)
}

/// A scratch folder unique to one test.
fn scratch(name: &str) -> PathBuf {
    let d = real().scratch.join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
#[ignore = "needs the real cuDNN wheels (CUENV_REAL_WHEELS)"]
fn real_releases_report_their_versions_and_load_from_their_entries() {
    let r = real();
    for (version, encoded, cudart) in [("9.5.0.50", 90500, 12060), ("8.9.4.25", 8904, 12020), ("8.8.0.121", 8800, 11080)] {
        let e = r.entry(version);
        let o = run_probe(cuenv(), &env_with(&[&e.lib, r.cudart(e.cuda)]), e.version.major(), true, T);
        let c = classify(&o, &expected(e));
        let rep = o.report.as_ref().unwrap_or_else(|| panic!("{version}: no report\n{}", show(&o, &c)));
        assert_eq!(o.end, ProbeEnd::Exited { code: 0 });
        let v = rep.cudnn.as_ref().unwrap();
        assert_eq!((v.version, v.cudart_version), (encoded, cudart), "{version}");
        let entry = std::fs::canonicalize(&e.dir).unwrap();
        let cudnn: Vec<_> = rep.modules.iter().filter(|m| m.kind == ModuleKind::Cudnn).collect();
        assert!(cudnn.iter().any(|m| m.name == format!("libcudnn.so.{}", e.version.major())), "{version}: {:?}", rep.modules);
        assert!(cudnn.len() >= 2, "the version call maps a sub-library too: {:?}", rep.modules);
        for m in &cudnn {
            assert!(Path::new(&m.path).starts_with(&entry), "{version}: {} is outside {}", m.path, entry.display());
        }
        let rt = rep.modules.iter().find(|m| m.kind == ModuleKind::Cudart).expect("the runtime is mapped");
        assert!(Path::new(&rt.path).starts_with(std::fs::canonicalize(r.cudart(e.cuda)).unwrap()), "{}", rt.path);
        assert!(!c.reasons.iter().any(|x| x.kind.is_failure()), "{version}:\n{}", show(&o, &c));
        if rep.driver.is_none() {
            assert_eq!(c.status, CheckStatus::NoGpu, "{version}:\n{}", show(&o, &c));
            let h = rep.handle.as_ref().unwrap();
            assert!(h.name == "CUDNN_STATUS_NOT_INITIALIZED", "{version}: {h:?}");
            assert_eq!(h.code, if e.version.major() >= 9 { 1001 } else { 1 });
        }
        eprintln!(
            "{version}: cudnnGetVersion {} cudart {} runtime {:?} handle {:?} -> {}; child {:.1} ms, spawn to exit {} ms",
            v.version,
            v.cudart_version,
            rep.cudart.as_ref().and_then(|c| c.runtime_version),
            rep.handle.as_ref().map(|h| &h.name),
            c.status,
            rep.elapsed_ms,
            o.elapsed_ms
        );
    }
}

#[test]
#[ignore = "needs the real cuDNN wheels (CUENV_REAL_WHEELS)"]
fn an_earlier_ld_library_path_folder_with_8_9_4_shadows_a_profile_on_8_8_0() {
    let r = real();
    let (new, old) = (r.entry("8.9.4.25"), r.entry("8.8.0.121"));
    let o = run_probe(cuenv(), &env_with(&[&new.lib, &old.lib, &r.cudart11]), 8, true, T);
    let c = classify(&o, &expected(old));
    assert_eq!(c.status, CheckStatus::Fail, "{}", show(&o, &c));
    let won = std::fs::canonicalize(&new.lib).unwrap();
    let sh = c.reasons.iter().find(|x| x.kind == ReasonKind::Shadowed).unwrap_or_else(|| panic!("{}", show(&o, &c)));
    assert!(sh.message.contains(&format!("the cuDNN dispatcher libcudnn.so.8 came from {}", won.display())), "{sh}");
    assert!(sh.message.contains("LD_LIBRARY_PATH lists") && sh.message.contains("before the profile's folder"), "{sh}");
    let vm = c.reasons.iter().find(|x| x.kind == ReasonKind::VersionMismatch).unwrap();
    assert!(vm.message.contains("cuDNN reports version 8.9.4,"), "{vm}");
    assert!(c.has(ReasonKind::WrongCudaMajor), "8.9.4 here is a CUDA 12 build: {}", show(&o, &c));
    eprintln!("{}", c.messages().join("\n"));
}

#[test]
#[ignore = "needs the real cuDNN wheels (CUENV_REAL_WHEELS)"]
fn a_sub_library_linked_in_from_another_release_is_mixed() {
    let r = real();
    let (new, old) = (r.entry("8.9.4.25"), r.entry("8.8.0.121"));
    // A framework-like folder that holds only 8.9.4's libcudnn_ops_infer.so.8 (as a link).
    let fw = scratch("mixed-fw");
    std::os::unix::fs::symlink(new.lib.join("libcudnn_ops_infer.so.8"), fw.join("libcudnn_ops_infer.so.8")).unwrap();
    let o = run_probe(cuenv(), &env_with(&[&fw, &old.lib, &r.cudart11]), 8, false, T);
    let c = classify(&o, &expected(old));
    assert_eq!(c.status, CheckStatus::Fail, "{}", show(&o, &c));
    assert!(c.has(ReasonKind::MixedVersions), "{}", show(&o, &c));
    let sh = c.reasons.iter().find(|x| x.kind == ReasonKind::Shadowed).unwrap();
    assert!(sh.message.starts_with("libcudnn_ops_infer.so.8 came from"), "{sh}");
    assert!(sh.message.contains(&format!("{} (which links libcudnn_ops_infer.so.8 to it)", fw.display())), "{sh}");
    // The version comes from the sub-library that got loaded (docs/facts.md §7).
    assert!(c.reasons.iter().any(|x| x.kind == ReasonKind::VersionMismatch && x.message.contains("version 8.9.4")), "{}", show(&o, &c));
    eprintln!("{}", c.messages().join("\n"));
}

#[test]
#[ignore = "needs the real cuDNN wheels (CUENV_REAL_WHEELS)"]
fn a_dispatcher_without_its_sub_libraries_aborts_the_child_and_names_the_missing_one() {
    let r = real();
    for (version, missing) in [("9.5.0.50", "libcudnn_graph.so.9"), ("8.9.4.25", "libcudnn_ops_infer.so.8")] {
        let e = r.entry(version);
        let alone = scratch(&format!("alone-{version}"));
        let name = format!("libcudnn.so.{}", e.version.major());
        std::fs::copy(e.lib.join(&name), alone.join(&name)).unwrap();
        let o = run_probe(cuenv(), &env_with(&[&alone, r.cudart(e.cuda)]), e.version.major(), false, T);
        let c = classify(&o, &Expected { entry_dir: alone.clone(), ..expected(e) });
        assert_eq!(o.end, ProbeEnd::Signaled { signal: 6, name: "SIGABRT".into() }, "{version}: {}", show(&o, &c));
        assert_eq!(c.status, CheckStatus::Fail);
        let m = c.reasons.iter().find(|x| x.kind == ReasonKind::MissingLibrary).unwrap_or_else(|| panic!("{}", show(&o, &c)));
        assert!(m.message.contains(missing), "{version}: {m}");
        assert!(c.has(ReasonKind::Crash));
        eprintln!("{version}: {}", c.messages().join("\n"));
    }
}

/// `cuenv doctor --pid` on a process that really loaded the 9.5 wheel's libraries: the child
/// loads `libcudnn.so.9` by name from the store entry and calls `cudnnGetVersion`, which makes
/// the dispatcher load `libcudnn_graph.so.9` itself; both are attributed to the store entry
/// with its release.
#[test]
#[ignore = "needs the real cuDNN wheels (scripts/real-input.sh)"]
fn doctor_pid_names_the_real_wheels_libraries_in_a_running_process() {
    let r = real();
    let e = r.entry("9.5.0.50");
    let exe = crate::doctor_pid::build_child(&r.scratch);
    let child = crate::doctor_pid::start(&exe, &["libcudnn.so.9", "call"], &[e.lib.clone(), r.cudart(12).to_path_buf()], "");
    let home = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("check-real").join("home");
    let out = Command::new(cuenv()).arg("--home").arg(&home).args(["doctor", "--pid", &child.id().to_string(), "--json"]).output().unwrap();
    crate::doctor_pid::stop(child);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let d: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(d["cudnn"], "9.5.0.50", "{d}");
    let entry = e.dir.file_name().unwrap().to_string_lossy().into_owned();
    for want in ["libcudnn.so.9", "libcudnn_graph.so.9"] {
        let m = d["modules"].as_array().unwrap().iter().find(|m| m["name"] == want).unwrap_or_else(|| panic!("{want} not mapped: {d}"));
        assert_eq!(m["origin"], format!("cuenv store entry {entry}"), "{m}");
        assert_eq!(m["version"], "9.5.0.50", "{m}");
    }
    println!("check_real: doctor --pid on the 9.5 wheel: {} modules", d["modules"].as_array().unwrap().len());
}

/// A folder holding the real set of `e` with one file replaced by another release's copy
/// (`member`, from scripts/fetch-real-members.py's cache): links to the entry's files (never
/// written through), the odd file copied in.
fn mixed_set(e: &Entry, name: &str, member: &Path) -> PathBuf {
    let dir = scratch(name);
    let odd = member.file_name().unwrap().to_owned();
    for f in std::fs::read_dir(&e.lib).unwrap().flatten() {
        if f.file_name() != odd && f.file_name().to_string_lossy().contains(".so") {
            std::fs::hard_link(f.path(), dir.join(f.file_name())).unwrap_or_else(|_| {
                std::fs::copy(f.path(), dir.join(f.file_name())).unwrap();
            });
        }
    }
    std::fs::copy(member, dir.join(&odd)).unwrap();
    dir
}

/// `cuenv doctor --major N` with `LD_LIBRARY_PATH` = `ld` only: (exit code, stdout).
fn doctor(ld: &[&Path], major: u64) -> (i32, String) {
    let home = scratch(&format!("doctor-home-{major}"));
    let out = Command::new(cuenv())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CUENV_HOME", &home)
        .env("CUENV_TOOLKIT_PATHS", "")
        .env("LD_LIBRARY_PATH", std::env::join_paths(ld).unwrap())
        .args(["doctor", "--major", &major.to_string()])
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

fn check_codes(o: &ProbeOutcome) -> Vec<(String, i64)> {
    let vc = o.report.as_ref().and_then(|r| r.version_checks.as_ref()).expect("version checks");
    assert_eq!(vc.error, None);
    vc.checks.iter().map(|c| (c.name.clone(), c.status.code)).collect()
}

/// docs/loader.md C1, C2 with the real loader and cuDNN as the judges: the real sets answer
/// every version check with 0; a 9.5.0.50 set with 9.4.0.58's `libcudnn_cnn.so.9`, and an
/// 8.9.4.25 set with 8.9.2.26's `libcudnn_ops_train.so.8` (issue 27; both pass `store add`:
/// those files tell no release), answer 1002 / 14 (docs/facts.md §7c): `check` fails and
/// `doctor` exits 4, naming the check and its status.
#[test]
#[ignore = "needs the real cuDNN wheels and members (CUENV_REAL_WHEELS, scripts/fetch-real-members.py)"]
fn real_sets_of_two_releases_fail_cudnns_own_version_checks() {
    let r = real();
    let members = wheels_dir().join("members");
    let v9 = ["cudnnAdvVersionCheck", "cudnnCnnVersionCheck", "cudnnGraphVersionCheck", "cudnnOpsVersionCheck"];
    let v8 = [
        "cudnnAdvInferVersionCheck",
        "cudnnAdvTrainVersionCheck",
        "cudnnCnnInferVersionCheck",
        "cudnnCnnTrainVersionCheck",
        "cudnnOpsInferVersionCheck",
        "cudnnOpsTrainVersionCheck",
    ];
    /// (release, its checks, the odd file's wheel, the odd file, the checks failing with it, their words)
    type Case<'a> = (&'a str, &'a [&'a str], &'a str, &'a str, &'a [(&'a str, i64)], &'a str);
    let cases: [Case; 2] = [
        (
            "9.5.0.50",
            &v9,
            "nvidia_cudnn_cu12-9.4.0.58-py3-none-manylinux2014_x86_64.whl",
            "libcudnn_cnn.so.9",
            &[("cudnnCnnVersionCheck", 1002)],
            "cudnnCnnVersionCheck returned CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH (1002)",
        ),
        (
            "8.9.4.25",
            &v8,
            "nvidia_cudnn_cu12-8.9.2.26-py3-none-manylinux1_x86_64.whl",
            "libcudnn_ops_train.so.8",
            // cnn_train and adv_train depend on ops_train: their checks fail with it.
            &[("cudnnAdvTrainVersionCheck", 14), ("cudnnCnnTrainVersionCheck", 14), ("cudnnOpsTrainVersionCheck", 14)],
            "cudnnOpsTrainVersionCheck returned CUDNN_STATUS_VERSION_MISMATCH (14)",
        ),
    ];
    for (version, names, wheel, file, failing, words) in cases {
        let e = r.entry(version);
        let major = e.version.major();
        // The real set: every check exported, every answer 0.
        let o = run_probe(cuenv(), &env_with(&[&e.lib, r.cudart(e.cuda)]), major, false, T);
        let c = classify(&o, &expected(e));
        let codes = check_codes(&o);
        assert_eq!(codes, names.iter().map(|n| (n.to_string(), 0)).collect::<Vec<_>>(), "{version}: {}", show(&o, &c));
        assert!(!c.has(ReasonKind::SubLibraryMismatch), "{version}: {}", show(&o, &c));
        eprintln!("{version}: {codes:?}");

        // The mixed set, in one folder.
        let member = members.join(wheel).join(file);
        assert!(member.is_file(), "{} is missing: run scripts/fetch-real-members.py {}", member.display(), wheels_dir().display());
        let set = mixed_set(e, &format!("mixed-{version}"), &member);
        let o = run_probe(cuenv(), &env_with(&[&set, r.cudart(e.cuda)]), major, false, T);
        let c = classify(&o, &Expected { entry_dir: set.clone(), ..expected(e) });
        let codes = check_codes(&o);
        let want: Vec<(String, i64)> = names.iter().map(|n| (n.to_string(), failing.iter().find(|(f, _)| f == n).map_or(0, |(_, code)| *code))).collect();
        assert_eq!(codes, want, "{version} + {file} of {wheel}: {}", show(&o, &c));
        assert_eq!(c.status, CheckStatus::Fail, "{}", show(&o, &c));
        let m = c.reasons.iter().find(|x| x.kind == ReasonKind::SubLibraryMismatch && x.message.contains(words)).unwrap_or_else(|| panic!("{}", show(&o, &c)));
        let odd = std::fs::canonicalize(set.join(file)).unwrap();
        assert!(m.message.contains(&format!("{file} (`")) && m.message.contains(&odd.display().to_string()), "{m}");
        eprintln!("{version} + {file}: {codes:?}\n{}", c.messages().join("\n"));

        let (code, out) = doctor(&[&set, r.cudart(e.cuda)], major);
        assert_eq!(code, 4, "{out}");
        let line = out.lines().find(|l| l.contains(words)).unwrap_or_else(|| panic!("{out}"));
        // The check's answer is V2; where the files tell their release too (8.x sub-libraries
        // export it), doctor says both agree, else that the check wins over the model.
        assert!(
            line.starts_with(&format!("problem[V2]: cuDNN {major} from"))
                && (line.contains("cuDNN's own check wins") || line.contains("the files' own versions say so too")),
            "{line}"
        );
        // Where the files tell the odd one (8.9.2's ops_train exports its version), every
        // version-check hint names it, not the library whose check failed (adv_train is 8.9.4's).
        if line.contains("say so too") {
            assert!(out.contains(&format!("hint: replace {file} (")) && !out.contains("replace the sub-library the check names"), "{out}");
        }
        eprintln!("doctor: {line}");
    }
}

/// docs/loader.md V4: the build assertion of the real files reads as their release
/// (docs/facts.md §7c), the heuristic library tells none, and a 9.5.0.50 folder holding
/// 9.4.0.58's `libcudnn_engines_runtime_compiled.so.9` is two releases for doctor (V1) while
/// every version check answers 0 (no check covers it).
#[test]
#[ignore = "needs the real cuDNN wheels and members (CUENV_REAL_WHEELS, scripts/fetch-real-members.py)"]
fn real_build_assertions_tell_the_release_of_engines() {
    use cuenv::sys::binfmt::library_version;
    let r = real();
    let e9 = r.entry("9.5.0.50");
    let e8 = r.entry("8.9.4.25");
    let m94 = wheels_dir().join("members/nvidia_cudnn_cu12-9.4.0.58-py3-none-manylinux2014_x86_64.whl");
    let v = |p: PathBuf| library_version(&p).unwrap().map(|v| v.to_string());
    assert_eq!(v(e9.lib.join("libcudnn_engines_precompiled.so.9")).as_deref(), Some("9.5.0"));
    assert_eq!(v(e9.lib.join("libcudnn_engines_runtime_compiled.so.9")).as_deref(), Some("9.5.0"));
    assert_eq!(v(e9.lib.join("libcudnn_graph.so.9")).as_deref(), Some("9.5.0.50"), "the marker wins");
    assert_eq!(v(e9.lib.join("libcudnn_heuristic.so.9")), None);
    assert_eq!(v(e9.lib.join("libcudnn_cnn.so.9")), None);
    assert_eq!(v(e8.lib.join("libcudnn_cnn_infer.so.8")).as_deref(), Some("8.9.4"));
    assert_eq!(v(e8.lib.join("libcudnn_ops_infer.so.8")).as_deref(), Some("8.9.4.25"));
    let odd = m94.join("libcudnn_engines_runtime_compiled.so.9");
    assert!(odd.is_file(), "{} is missing: run scripts/fetch-real-members.py {}", odd.display(), wheels_dir().display());
    assert_eq!(v(odd.clone()).as_deref(), Some("9.4.0"));

    let set = mixed_set(e9, "mixed-engines", &odd);
    let o = run_probe(cuenv(), &env_with(&[&set, &r.cudart12]), 9, false, T);
    assert!(check_codes(&o).iter().all(|(_, c)| *c == 0), "{:?}", check_codes(&o));
    let (code, out) = doctor(&[&set, &r.cudart12], 9);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("holds cuDNN 9 libraries of 2 releases") && out.contains("9.4.0: libcudnn_engines_runtime_compiled.so.9"), "{out}");
    assert!(out.contains("not verified: libcudnn_heuristic.so.9"), "{out}");
    eprintln!("{out}");
}
