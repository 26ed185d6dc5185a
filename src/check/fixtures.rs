//! Test fixtures shared by the check tests: a temp store entry and an intruder folder, a good
//! probe report from that entry, and the outcome and expectation around it.

use std::path::{Path, PathBuf};

use super::classify::canonical;
use super::{Expected, ProbeEnd, ProbeOutcome};
use crate::probe::{self, Conv, ConvProblem, ConvResult, Cudart, CudnnVersions, Device, Driver, LoadAttempt, Module, Report, Status};

/// A temp folder with an entry (`entry/lib`) and an intruder (`other/lib`) holding files.
pub(super) struct Fx {
    _tmp: tempfile::TempDir,
    pub(super) entry: PathBuf,
    pub(super) other: PathBuf,
}

pub(super) fn fx() -> Fx {
    let tmp = tempfile::tempdir().unwrap();
    let entry = tmp.path().join("store/cudnn-9.5.0.50-cuda12-linux-x86_64-abc");
    let other = tmp.path().join("other");
    for d in [entry.join("lib"), other.join("lib")] {
        std::fs::create_dir_all(&d).unwrap();
        for n in ["libcudnn.so.9", "libcudnn_graph.so.9"] {
            std::fs::write(d.join(n), b"x").unwrap();
        }
    }
    Fx { entry: canonical(&entry), other: canonical(&other), _tmp: tmp }
}

pub(super) fn module(dir: &Path, name: &str) -> Module {
    Module { path: dir.join(name).to_string_lossy().into_owned(), name: name.into(), kind: probe::module_kind(name).unwrap() }
}

pub(super) fn status(code: i64, name: &str) -> Status {
    Status { code, name: name.into() }
}

pub(super) fn gpu() -> Driver {
    Driver {
        library: "libcuda.so.1".into(),
        version: Some(13000),
        release: None,
        init: status(0, "CUDA_SUCCESS"),
        devices: vec![Device { index: 0, name: "NVIDIA H200".into(), compute_capability: [9, 0], total_memory: 150 << 30 }],
    }
}

pub(super) fn done(err: f64) -> Conv {
    Conv::Done(ConvResult {
        problem: ConvProblem::STANDARD,
        math_type: "CUDNN_FMA_MATH".into(),
        algos: vec![],
        algo: "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM".into(),
        workspace_bytes: 0,
        max_abs_error: err,
        matches: err < probe::MAX_ABS_ERROR,
        forward_ms: 0.02,
        iterations: 20,
    })
}

/// A good report: cuDNN 9.5.0 for CUDA 12 from the entry, with a GPU and a matching conv.
pub(super) fn report(f: &Fx) -> Report {
    Report {
        schema: probe::SCHEMA,
        os: "linux".into(),
        major: 9,
        dispatcher: LoadAttempt { name: "libcudnn.so.9".into(), loaded: true, error: None },
        cudnn: Some(CudnnVersions { version: 90500, cudart_version: 12060, max_device_version: Some(900) }),
        version_checks: Some(checks(f, &[("Adv", 0), ("Cnn", 0), ("Graph", 0), ("Ops", 0)])),
        companions: None,
        cudart: Some(Cudart {
            load: LoadAttempt { name: "libcudart.so.12".into(), loaded: true, error: None },
            runtime_version: Some(12060),
            runtime_error: None,
        }),
        driver: Some(gpu()),
        driver_absent: None,
        handle: Some(status(0, "CUDNN_STATUS_SUCCESS")),
        conv: done(1e-6),
        modules: vec![module(&f.entry.join("lib"), "libcudnn.so.9"), module(&f.entry.join("lib"), "libcudnn_graph.so.9")],
        elapsed_ms: 100.0,
    }
}

/// The version checks of a 9.x dispatcher in the entry: `cudnn<Sub>VersionCheck` with its code.
pub(super) fn checks(f: &Fx, codes: &[(&str, i64)]) -> probe::VersionChecks {
    let name = |c: i64| match c {
        0 => "CUDNN_STATUS_SUCCESS",
        14 => "CUDNN_STATUS_VERSION_MISMATCH",
        1002 => "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH",
        _ => "CUDNN_STATUS_UNKNOWN",
    };
    probe::VersionChecks {
        file: Some(f.entry.join("lib").join("libcudnn.so.9").display().to_string()),
        checks: codes.iter().map(|(s, c)| probe::VersionCheck { name: format!("cudnn{s}VersionCheck"), library: None, status: status(*c, name(*c)) }).collect(),
        error: None,
        unchecked: vec!["libcudnn_engines_precompiled.so.9".into(), "libcudnn_heuristic.so.9".into()],
        not_called: vec![],
    }
}

pub(super) fn outcome(report: Option<Report>, end: ProbeEnd, search: Vec<PathBuf>) -> ProbeOutcome {
    ProbeOutcome {
        major: 9,
        end,
        report,
        report_error: None,
        last_step: None,
        stderr_tail: String::new(),
        elapsed_ms: 50,
        search_var: "LD_LIBRARY_PATH".into(),
        search_path: search,
        preload: vec![],
    }
}

pub(super) fn expected(f: &Fx) -> Expected {
    Expected { entry_dir: f.entry.clone(), version: "9.5.0.50".parse().unwrap(), cuda_major: Some(12) }
}

pub(super) fn ok_end() -> ProbeEnd {
    ProbeEnd::Exited { code: 0 }
}
