//! Real input (`#[ignore]`d; scripts/real-input.sh, members from scripts/fetch-real-members.py):
//! `sys::fatbin::read` on real cuDNN libraries gives the architectures
//! scripts/derive-fatbin-archs.py derived for the same release (docs/fatbin-archs.tsv), for
//! ELF (`.nv_fatbin`) and PE (`.nv_fatb`) alike; a library without GPU code has none.

use std::path::PathBuf;

use crate::support::real_wheels_dir;

/// The SASS and PTX lists docs/fatbin-archs.tsv gives `project` `version`.
fn derived(project: &str, version: &str) -> (Vec<u32>, Vec<u32>) {
    let tsv = include_str!("../../docs/fatbin-archs.tsv");
    let line = tsv
        .lines()
        .find(|l| l.starts_with(&format!("{project}\t{version}\t")))
        .unwrap_or_else(|| panic!("{project} {version} is not in docs/fatbin-archs.tsv"));
    let f: Vec<&str> = line.split('\t').collect();
    let list = |s: &str| s.split(',').filter(|x| !x.is_empty()).map(|x| x.parse().unwrap()).collect();
    (list(f[4]), list(f[5]))
}

fn member(wheel: &str, name: &str) -> PathBuf {
    let p = real_wheels_dir().join("members").join(wheel).join(name);
    assert!(p.is_file(), "{} is missing: run scripts/fetch-real-members.py {}", p.display(), real_wheels_dir().display());
    p
}

#[test]
#[ignore = "real NVIDIA members (scripts/fetch-real-members.py)"]
fn real_libraries_carry_the_architectures_derived_for_their_release() {
    let cases = [
        ("nvidia_cudnn_cu12-9.4.0.58-py3-none-manylinux2014_x86_64.whl", "libcudnn_cnn.so.9", "9.4.0.58"),
        ("nvidia_cudnn_cu12-9.4.0.58-py3-none-win_amd64.whl", "cudnn_cnn64_9.dll", "9.4.0.58"),
        ("nvidia_cudnn_cu12-8.9.2.26-py3-none-manylinux1_x86_64.whl", "libcudnn_ops_train.so.8", "8.9.2.26"),
    ];
    for (wheel, name, version) in cases {
        let t = std::time::Instant::now();
        let code = cuenv::sys::fatbin::read(&member(wheel, name)).unwrap().unwrap_or_else(|| panic!("{name} has no fat binary section"));
        let (sass, ptx) = derived("nvidia-cudnn-cu12", version);
        assert_eq!((code.sass.clone(), code.ptx.clone()), (sass, ptx), "{wheel} {name}");
        eprintln!("{name} ({version}): {} in {:?}", code.describe(), t.elapsed());
    }
    // cuDNN 9's dispatcher carries no GPU code.
    let d = member("nvidia_cudnn_cu12-9.27.0.42-py3-none-manylinux_2_27_x86_64.whl", "libcudnn.so.9");
    assert_eq!(cuenv::sys::fatbin::read(&d).unwrap(), None);
}
