//! `status` notices, statically, that a toolkit root lost the CUDA runtime the generation
//! recorded (upgraded in place: `libcudart.so.12` gone), instead of staying `ok` until a
//! `check` loads something (issue 28 part 4); and it says a check's reason that every profile
//! gives alike once, not under each profile.

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

/// A reason every checked profile gives alike (here, on a machine without an NVIDIA driver,
/// "no NVIDIA driver") is a fact of the machine: `status` says it once, above the profiles,
/// instead of once under each. A reason only some profiles give stays under them.
#[test]
fn status_says_a_reason_every_profile_gives_once() {
    let lab = Lab::new();
    let file = lab.three();
    lab.ok(&["apply", "--no-check", file.to_str().unwrap()]);
    // Without a GPU the checks end no-gpu (exit 4); `status` shows what they recorded.
    let _ = lab.run(&["check"]);
    let (_, out, _) = lab.run(&["status"]);
    let shared: Vec<&str> = out.lines().filter(|l| l.starts_with("every profile's check: ")).collect();
    let (_, json, _) = lab.run(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let no_driver = |p: &serde_json::Value| {
        p["check"]["result"]["reasons"].as_array().is_some_and(|a| a.iter().any(|r| r["message"].as_str().unwrap_or("").starts_with("no NVIDIA driver")))
    };
    let profiles = v["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), 3, "{v}");
    if profiles.iter().all(no_driver) {
        // No driver here (CI, Wine): said once, above the first profile.
        assert_eq!(shared.iter().filter(|l| l.contains("no NVIDIA driver")).count(), 1, "{out}");
        assert!(out.find("every profile's check: ").unwrap() < out.find("torch2: cuDNN").unwrap(), "{out}");
        assert_eq!(out.matches("no NVIDIA driver").count(), 1, "{out}");
    } else {
        // A driver answered: nothing is shared unless every profile gave it.
        eprintln!("a driver answered the checks: the shared no-driver line is not exercised here");
    }
}
