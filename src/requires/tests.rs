//! The readers and the rule, on small texts written from real releases' files (each cited).

use super::pip::{Metadata, judged_lib};
use super::*;

/// torch 2.4.1's METADATA (PyPI, torch-2.4.1-cp311-cp311-manylinux1_x86_64.whl), cut to the
/// lines judged and one that is not.
const TORCH_241: &str = "Metadata-Version: 2.1\nName: torch\nVersion: 2.4.1\nProvides-Extra: optree\n\
Requires-Dist: filelock\n\
Requires-Dist: nvidia-cuda-runtime-cu12 (==12.1.105) ; platform_system == \"Linux\" and platform_machine == \"x86_64\"\n\
Requires-Dist: nvidia-cudnn-cu12 (==9.1.0.70) ; platform_system == \"Linux\" and platform_machine == \"x86_64\"\n\
Requires-Dist: optree (>=0.11.0) ; extra == 'optree'\n\nlong description: Requires-Dist: nvidia-cudnn-cu11==8.0\n";

/// tensorflow 2.20.0's `and-cuda` pins and jax-cuda13-plugin 0.8.0's `with-cuda` pins (PyPI).
const TF_220: &str = "Name: tensorflow\nVersion: 2.20.0\nProvides-Extra: and-cuda\n\
Requires-Dist: nvidia-cuda-runtime-cu12<13.0,>=12.5.82; extra == \"and-cuda\"\n\
Requires-Dist: nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra == \"and-cuda\"\n";
const JAX13_080: &str = "Name: jax-cuda13-plugin\nVersion: 0.8.0\nProvides-Extra: with-cuda\n\
Requires-Dist: nvidia-cuda-runtime>=13.0.48; sys_platform == \"linux\" and extra == \"with-cuda\"\n\
Requires-Dist: nvidia-cudnn-cu13<10.0,>=9.12.0.46; sys_platform == \"linux\" and extra == \"with-cuda\"\n";

fn needs_of(text: &str, platform: Platform) -> Vec<Need> {
    Metadata::parse(text).needs(std::path::Path::new("METADATA"), platform, Some("3.11"))
}

#[test]
fn the_judged_projects_are_told_by_name() {
    assert_eq!(judged_lib("nvidia-cudnn-cu12"), Some(Lib::Cudnn));
    assert_eq!(judged_lib("nvidia_cudnn_cu11"), Some(Lib::Cudnn));
    assert_eq!(judged_lib("nvidia-cudnn-frontend"), None);
    assert_eq!(judged_lib("nvidia-cuda-runtime"), Some(Lib::Cuda));
    assert_eq!(judged_lib("nvidia-cuda-runtime-cu12"), Some(Lib::Cuda));
    assert_eq!(judged_lib("cuda-toolkit"), Some(Lib::Cuda));
    assert_eq!(judged_lib("nvidia-cublas-cu12"), None, "cuBLAS's versions do not follow CUDA's on 11.x");
}

#[test]
fn requires_dist_markers_are_evaluated_for_the_profiles_platform() {
    let linux = needs_of(TORCH_241, Platform::LinuxX86_64);
    let texts: Vec<&str> = linux.iter().map(|n| n.text.as_str()).collect();
    assert_eq!(texts, ["nvidia-cuda-runtime-cu12==12.1.105", "nvidia-cudnn-cu12==9.1.0.70"], "the body after the headers is not read");
    assert_eq!(linux[1].floor(), Some((9, Some(1))));
    assert!(needs_of(TORCH_241, Platform::WindowsX86_64).is_empty(), "torch's pins hold on Linux x86_64 only");
    // An extra counts as chosen; sys_platform markers hold on Linux only.
    assert_eq!(needs_of(TF_220, Platform::LinuxX86_64).len(), 2);
    let jax = needs_of(JAX13_080, Platform::LinuxX86_64);
    assert_eq!(jax.iter().map(|n| (n.lib, n.floor())).collect::<Vec<_>>(), [(Lib::Cuda, Some((13, Some(0)))), (Lib::Cudnn, Some((9, Some(12))))]);
    assert!(needs_of(JAX13_080, Platform::WindowsX86_64).is_empty());
}

#[test]
fn the_rule_is_same_major_and_no_older_minor() {
    let torch = &needs_of(TORCH_241, Platform::LinuxX86_64)[1];
    assert_eq!(torch.judge("9.1.0.70"), Verdict::Fits);
    assert!(matches!(torch.judge("9.5.0.50"), Verdict::Newer(m) if m.contains("newer release of the same major")));
    assert!(matches!(torch.judge("9.0.0.312"), Verdict::Misfit(m) if m.contains("older minor")));
    assert!(matches!(torch.judge("8.9.7.29"), Verdict::Misfit(m) if m.contains("another major")));
    // A range: inside it fits; above its upper bound in another major is a misfit.
    let tf = &needs_of(TF_220, Platform::LinuxX86_64)[1];
    assert_eq!(tf.judge("9.5.0.50"), Verdict::Fits);
    assert!(matches!(tf.judge("9.1.0.70"), Verdict::Misfit(_)));
    assert!(matches!(tf.judge("10.0.0"), Verdict::Misfit(_)));
    // A toolkit's version is judged as CUDA: 12.4 is older than the 12.5 TensorFlow 2.20 names.
    let cuda = &needs_of(TF_220, Platform::LinuxX86_64)[0];
    assert!(matches!(cuda.judge("12.4"), Verdict::Misfit(_)));
    assert_eq!(cuda.judge("12.8"), Verdict::Fits);
    // A build fact with a major only, and a spec with no floor, are said, not judged fine.
    let major_only = Need {
        framework: "tensorflow 2.12.0".into(),
        file: "build_info.py".into(),
        lib: Lib::Cudnn,
        spec: Spec::BuiltWith(8, None),
        text: "cudnn_version '8'".into(),
    };
    assert!(matches!(major_only.judge("8.9.7.29"), Verdict::NotVerified(m) if m.contains("not verified")));
    assert!(matches!(major_only.judge("9.1.0"), Verdict::Misfit(_)));
    let no_floor = Need { spec: Spec::Conda("<10".into()), text: "cudnn <10".into(), ..major_only.clone() };
    assert!(matches!(no_floor.judge("9.1.0"), Verdict::Fits));
    assert!(matches!(no_floor.judge("10.1.0"), Verdict::NotVerified(_)));
}
