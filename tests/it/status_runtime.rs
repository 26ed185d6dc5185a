//! `status` notices, statically, that a toolkit root lost the CUDA runtime the generation
//! recorded (upgraded in place: `libcudart.so.12` gone), instead of staying `ok` until a
//! `check` loads something (issue 28 part 4).

use crate::support::lab::Lab;

#[test]
fn status_notices_a_toolkit_root_that_lost_its_runtime() {
    let lab = Lab::new();
    let file = lab.lab("[profiles.p]\ncuda = \"12\"\ncudnn = \"9.5\"\n");
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    let (code, out, err) = lab.run(&["status"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!out.contains("runtime   missing"), "{out}");
    // The root is "upgraded in place": its runtime goes (another major's would not do).
    let (dir, name) = if cfg!(windows) { ("bin", "cudart64_12.dll") } else { ("lib64", "libcudart.so.12") };
    let rt = lab.tk12.join(dir).join(name);
    std::fs::rename(&rt, lab.tk12.join(dir).join(if cfg!(windows) { "cudart64_13.dll" } else { "libcudart.so.13" })).unwrap();
    let (code, out, err) = lab.run(&["status"]);
    assert_ne!(code, 0, "{out}\n{err}");
    let want = if cfg!(windows) { "cudart64_12*.dll" } else { "libcudart.so.12" };
    assert!(
        out.contains(&format!(
            "    runtime   missing: {} no longer holds {want}, the CUDA 12 runtime this generation recorded for CUDA 12.6.77",
            lab.tk12.join(dir).display()
        )),
        "{out}"
    );
    assert!(out.contains("run `cuenv apply` again"), "{out}");
    let (_, out, _) = lab.run(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["healthy"], false, "{v}");
    assert!(v["profiles"][0]["runtime_missing"].as_str().unwrap().contains(want), "{v}");
}
