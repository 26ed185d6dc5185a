//! The requirement reader (src/requires/pip.rs) on the real METADATA of every release in issue
//! 32's ranges (torch 2.4+, TensorFlow 2.10+, onnxruntime-gpu 1.17+, CTranslate2 3.x/4.x, the
//! JAX CUDA plugins 0.4+, PaddlePaddle 2.5+ on PyPI), fetched by scripts/fetch-real-metadata.py
//! (PEP 658 metadata files or one ranged read per wheel: no wheel is downloaded), judged against
//! Python's own `packaging` (the library pip vendors) as the oracle: for Linux x86_64 and
//! Python 3.11, every extra chosen, the same requirements on NVIDIA's cuDNN and CUDA runtime
//! wheels with the same specifiers.

use std::path::{Path, PathBuf};
use std::process::Command;

use cuenv::cudnn::platform::Platform;
use cuenv::requires::Lib;
use cuenv::requires::pip::Metadata;

/// The oracle: for each METADATA path on stdin, one line per requirement `packaging` says
/// holds (`<path>\t<normalized name>\t<specifiers sorted, comma-joined>`), for the names cuenv
/// judges (the same rule as `judged_lib`, written again here in Python's terms).
const ORACLE: &str = r#"
import sys
from email.parser import HeaderParser
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
import re
env = {"os_name": "posix", "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
       "python_version": "3.11", "python_full_version": "3.11.0", "implementation_name": "cpython",
       "platform_python_implementation": "CPython", "platform_release": "", "platform_version": "", "implementation_version": "3.11.0"}
def judged(n):
    return re.fullmatch(r"nvidia-cudnn-cu\d+|nvidia-cuda-runtime(-cu\d+)?|cuda-toolkit", n) is not None
for path in sys.stdin.read().split("\n"):
    if not path:
        continue
    with open(path, encoding="utf-8") as f:
        msg = HeaderParser().parse(f)
    extras = msg.get_all("Provides-Extra") or []
    for text in msg.get_all("Requires-Dist") or []:
        r = Requirement(text)
        name = canonicalize_name(r.name)
        if not judged(name):
            continue
        holds = r.marker is None or any(r.marker.evaluate(dict(env, extra=e)) for e in extras + [""])
        if holds:
            print("%s\t%s\t%s" % (path, name, ",".join(sorted(str(s) for s in r.specifier))))
"#;

fn metadata_files(root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .min_depth(2)
        .max_depth(2)
        .into_iter()
        .flatten()
        .map(|e| e.path().to_path_buf())
        .filter(|p| p.extension().is_some_and(|e| e == "METADATA"))
        .collect();
    out.sort();
    out
}

#[test]
#[ignore = "needs the real frameworks' METADATA (scripts/real-input.sh)"]
fn real_framework_metadata_is_read_as_packaging_reads_it() {
    let root = crate::support::real_wheels_dir().join("metadata");
    let files = metadata_files(&root);
    assert!(files.len() > 100, "{} holds {} METADATA files: run scripts/fetch-real-wheels.sh", root.display(), files.len());
    let Some(py) = std::env::var_os("CUENV_CLIENTS_PYTHON") else {
        assert!(std::env::var_os("CUENV_REQUIRE_SHELLS").is_none(), "CUENV_CLIENTS_PYTHON is required");
        crate::support::skipped("CUENV_CLIENTS_PYTHON is not set (a Python with packaging; .ci/run makes one): the packaging oracle");
        return;
    };
    let mut child = Command::new(py).args(["-c", ORACLE]).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let list: String = files.iter().map(|f| format!("{}\n", f.display())).collect();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), list.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let mut want: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect();
    let mut got: Vec<String> = Vec::new();
    let mut cudnn_of: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for f in &files {
        let m = Metadata::parse(&std::fs::read_to_string(f).unwrap());
        for n in m.needs(f, Platform::LinuxX86_64, Some("3.11")) {
            let (name, spec) = n.text.split_at(n.text.find(|c: char| "=<>!~".contains(c)).unwrap_or(n.text.len()));
            let mut specs: Vec<&str> = spec.split(',').filter(|s| !s.is_empty()).collect();
            specs.sort();
            got.push(format!("{}\t{}\t{}", f.display(), name, specs.join(",")));
            if n.lib == Lib::Cudnn {
                let project = f.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
                cudnn_of.entry(project).or_default().push(format!("{} {}", m.version, n.text));
            }
        }
    }
    want.sort();
    got.sort();
    let missing: Vec<&String> = want.iter().filter(|w| !got.contains(w)).collect();
    let extra: Vec<&String> = got.iter().filter(|g| !want.contains(g)).collect();
    assert!(missing.is_empty() && extra.is_empty(), "cuenv's reading differs from packaging's:\nmissing {missing:#?}\nextra {extra:#?}");
    // What the releases declare, as read: every torch on PyPI from 2.4 pins a cuDNN 9 wheel;
    // onnxruntime-gpu declares cuDNN in an extra from 1.21; CTranslate2 declares none (its
    // requirements are in docs/requirements.md's table).
    let count = |p: &str| files.iter().filter(|f| f.parent().unwrap().ends_with(p)).count();
    let torch = cudnn_of.get("torch").cloned().unwrap_or_default();
    assert_eq!(torch.len(), count("torch"), "{torch:#?}");
    assert!(torch.iter().all(|t| t.contains("nvidia-cudnn-cu1") && t.contains("==9.")), "{torch:#?}");
    assert!(!cudnn_of.contains_key("ctranslate2"), "{:?}", cudnn_of.get("ctranslate2"));
    let ort = cudnn_of.get("onnxruntime-gpu").cloned().unwrap_or_default();
    assert!(ort.iter().any(|o| o.starts_with("1.21.0 ")) && !ort.iter().any(|o| o.starts_with("1.20.")), "{ort:#?}");
    eprintln!("requires_real: {} METADATA files, {} requirements on cuDNN/CUDA, the same as packaging's", files.len(), got.len());
    for (p, v) in &cudnn_of {
        eprintln!("  {p}: {} releases pin cuDNN, first {:?}, last {:?}", v.len(), v.first(), v.last());
    }
}

/// One installed distribution: its dist-info folder's name, the METADATA to put there, and
/// (path in site-packages, real member) links.
#[cfg(target_os = "linux")]
type Dist<'a> = (&'a str, PathBuf, Vec<(&'a str, PathBuf)>);

/// A site-packages folder in `dir` holding, for each (dist-info name, METADATA file, [(path in
/// site-packages, real member)]), the real METADATA and links to the real members.
#[cfg(target_os = "linux")]
fn site_of(dir: &Path, dists: &[Dist]) -> cuenv::pyenv::PyEnv {
    let prefix = dir.join("venv");
    std::fs::create_dir_all(&prefix).unwrap();
    std::fs::write(prefix.join("pyvenv.cfg"), "home = /usr/bin\nversion = 3.11.7\n").unwrap();
    let sp = prefix.join("lib/python3.11/site-packages");
    for (info, metadata, members) in dists {
        std::fs::create_dir_all(sp.join(info)).unwrap();
        std::fs::copy(metadata, sp.join(info).join("METADATA")).unwrap();
        for (at, member) in members {
            let to = sp.join(at);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(member, &to).unwrap();
        }
    }
    cuenv::pyenv::at(&prefix, "test").unwrap()
}

/// The build facts and sonames of real releases beside their METADATA: TensorFlow 2.16.1's
/// build_info.py (`cuda_version '12.3'`, `cudnn_version '8'`) is said by its `and-cuda` pins
/// already (`nvidia-cudnn-cu12==8.9.7.29`), so only the pins are judged; onnxruntime-gpu
/// 1.31.1's CUDA provider names `libcudart.so.13` (its extras' pin `nvidia-cuda-runtime~=13.0`
/// says so too) and no cuDNN anywhere in its file (the name is built at run time): without its
/// METADATA's `nvidia-cudnn-cu13~=9.0`, its cuDNN is not known, and not guessed; TensorFlow
/// 2.10.1's Windows build_info.py (`64_112`, `64_8`) alone gives CUDA 11.2 and cuDNN major 8,
/// and TensorFlow's tested-build table the 8.1 (its row's CUDA 11.2 agrees).
#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs the real frameworks' members (scripts/real-input.sh)"]
fn real_build_facts_and_sonames_agree_with_the_pins() {
    let members = crate::support::real_wheels_dir().join("members");
    let meta = crate::support::real_wheels_dir().join("metadata");
    let tmp = tempfile::tempdir().unwrap();
    let tf = members.join("tensorflow-2.16.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl").join("build_info.py");
    let ort = members.join("onnxruntime_gpu-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl").join("libonnxruntime_providers_cuda.so");
    let env = site_of(
        tmp.path(),
        &[
            ("tensorflow-2.16.1.dist-info", meta.join("tensorflow/2.16.1.METADATA"), vec![("tensorflow/python/platform/build_info.py", tf)]),
            (
                "onnxruntime_gpu-1.31.1.dist-info",
                meta.join("onnxruntime-gpu/1.31.1.METADATA"),
                vec![("onnxruntime/capi/libonnxruntime_providers_cuda.so", ort.clone())],
            ),
        ],
    );
    let needs = cuenv::requires::needs(&env, Platform::LinuxX86_64);
    let said: Vec<(String, Lib, String)> = needs.iter().map(|n| (n.framework.clone(), n.lib, n.text.clone())).collect();
    assert!(said.contains(&("tensorflow 2.16.1".into(), Lib::Cudnn, "nvidia-cudnn-cu12==8.9.7.29".into())), "{said:#?}");
    assert!(needs.iter().all(|n| !matches!(n.spec, cuenv::requires::Spec::BuiltWith(..))), "each build fact is said by a pin: {said:#?}");
    assert!(said.iter().any(|(f, l, t)| f == "onnxruntime-gpu 1.31.1" && *l == Lib::Cudnn && t == "nvidia-cudnn-cu13~=9.0"), "{said:#?}");
    // The sonames alone (no METADATA pins): the provider's own names.
    let bare = tempfile::tempdir().unwrap();
    let plain = bare.path().join("plain.METADATA");
    std::fs::write(&plain, "Metadata-Version: 2.1\nName: onnxruntime-gpu\nVersion: 1.31.1\n\n").unwrap();
    let tf210 = members.join("tensorflow-2.10.1-cp310-cp310-win_amd64.whl").join("build_info.py");
    let plain_tf = bare.path().join("tf.METADATA");
    std::fs::write(&plain_tf, "Metadata-Version: 2.1\nName: tensorflow\nVersion: 2.10.1\n\n").unwrap();
    let env = site_of(
        bare.path(),
        &[
            ("onnxruntime_gpu-1.31.1.dist-info", plain, vec![("onnxruntime/capi/libonnxruntime_providers_cuda.so", ort)]),
            ("tensorflow-2.10.1.dist-info", plain_tf, vec![("tensorflow/python/platform/build_info.py", tf210)]),
        ],
    );
    let facts: Vec<(String, Lib, cuenv::requires::Spec)> =
        cuenv::requires::needs(&env, Platform::LinuxX86_64).into_iter().map(|n| (n.framework, n.lib, n.spec)).collect();
    use cuenv::requires::Spec::BuiltWith;
    assert_eq!(
        facts,
        [
            ("onnxruntime-gpu 1.31.1".to_string(), Lib::Cuda, BuiltWith(13, None)),
            ("tensorflow 2.10.1".to_string(), Lib::Cudnn, BuiltWith(8, Some(1))),
            ("tensorflow 2.10.1".to_string(), Lib::Cuda, BuiltWith(11, Some(2))),
        ]
    );
}

/// TensorFlow's real build_info.py across the range beside its real METADATA: 2.11-2.13
/// declare no CUDA wheels, so build_info.py's CUDA and cuDNN major stand, and the tested-build
/// table's cuDNN minor where its CUDA agrees (2.11: 8.1 on 11.2; 2.12, 2.13: 8.6 on 11.8);
/// 2.15 and 2.20 pin their CUDA wheels in `and-cuda`, which say the same majors, so only the
/// pins are judged.
#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs the real frameworks' members (scripts/real-input.sh)"]
fn tensorflow_build_facts_across_the_range() {
    let members = crate::support::real_wheels_dir().join("members");
    let meta = crate::support::real_wheels_dir().join("metadata/tensorflow");
    use cuenv::requires::Spec::BuiltWith;
    for (version, cudnn, cuda) in
        [("2.11.0", (8, 1), (11, 2)), ("2.12.0", (8, 6), (11, 8)), ("2.13.0", (8, 6), (11, 8)), ("2.15.0", (8, 9), (12, 2)), ("2.20.0", (9, 3), (12, 5))]
    {
        let wheel = std::fs::read_to_string(meta.join(format!("{version}.wheel"))).unwrap();
        let info = members.join(wheel.trim()).join("build_info.py");
        let tmp = tempfile::tempdir().unwrap();
        let env = site_of(
            tmp.path(),
            &[(&format!("tensorflow-{version}.dist-info"), meta.join(format!("{version}.METADATA")), vec![("tensorflow/python/platform/build_info.py", info)])],
        );
        let needs = cuenv::requires::needs(&env, Platform::LinuxX86_64);
        let floor = |lib: Lib| needs.iter().find(|n| n.lib == lib).and_then(|n| n.floor());
        assert_eq!(floor(Lib::Cudnn), Some((cudnn.0, Some(cudnn.1))), "{version}: {needs:#?}");
        assert_eq!(floor(Lib::Cuda), Some((cuda.0, Some(cuda.1))), "{version}: {needs:#?}");
        let pinned = version >= "2.14";
        assert_eq!(needs.iter().all(|n| !matches!(n.spec, BuiltWith(..))), pinned, "{version}: {needs:#?}");
    }
}
