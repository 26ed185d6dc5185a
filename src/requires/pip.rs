//! What a wheel's `METADATA` requires of NVIDIA's cuDNN and CUDA wheels (core metadata,
//! packaging.python.org "Core metadata specifications": one `Requires-Dist:` header per
//! requirement, a PEP 508 string). Read from `<site-packages>/<name>-<version>.dist-info/METADATA`
//! as pip installed it; the PEP 508 grammar and its markers are `pep508_rs`'s (uv's reader).
//!
//! The requirements judged ([`judged_lib`]) are on cuDNN's wheels (`nvidia-cudnn-cu11`,
//! `-cu12`, `-cu13`) and on CUDA's runtime (`nvidia-cuda-runtime-cuNN`, whose version is the
//! CUDA release: 12.1.105 for 12.1, and `nvidia-cuda-runtime` for CUDA 13; `cuda-toolkit`).
//! Seen on real
//! releases (tests/it/requires_real.rs reads them): torch 2.4.1 pins
//! `nvidia-cudnn-cu12 (==9.1.0.70) ; platform_system == "Linux" and platform_machine == "x86_64"`;
//! TensorFlow 2.15 `nvidia-cudnn-cu12==8.9.4.25; extra == "and-cuda"`; jax-cuda12-plugin's
//! `with-cuda` extra a range (`>=9.1,<10.0`).
//!
//! Markers are evaluated for the profile's platform and the env's Python; an extra counts as
//! chosen (pip records no extras, and an extra's pins are still what the release declares it
//! works with).

use std::path::{Path, PathBuf};

use pep508_rs::pep440_rs::{Operator, VersionSpecifiers};
use pep508_rs::{ExtraName, MarkerEnvironment, MarkerEnvironmentBuilder, Requirement, VersionOrUrl};

use super::{Lib, Need, Spec};
use crate::cudnn::platform::Platform;
use crate::pyenv::PyEnv;

/// The library a requirement on the PyPI project `name` is on, if cuenv judges it:
/// `nvidia-cudnn-cuNN` (not `nvidia-cudnn-frontend`) is cuDNN; `nvidia-cuda-runtime-cuNN`,
/// `nvidia-cuda-runtime` and NVIDIA's `cuda-toolkit` metapackage (torch 2.12+ pins
/// `cuda-toolkit[cudart,…]==13.0.2`: its version is the CUDA release) are CUDA. Names compared
/// normalized (PEP 503).
pub fn judged_lib(name: &str) -> Option<Lib> {
    let n = name.to_ascii_lowercase().replace(['_', '.'], "-");
    let cu = |rest: &str| rest.strip_prefix("-cu").is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
    if let Some(rest) = n.strip_prefix("nvidia-cudnn") {
        return cu(rest).then_some(Lib::Cudnn);
    }
    if let Some(rest) = n.strip_prefix("nvidia-cuda-runtime") {
        return (rest.is_empty() || cu(rest)).then_some(Lib::Cuda);
    }
    (n == "cuda-toolkit").then_some(Lib::Cuda)
}

/// The (major, minor) of the lowest release `spec` admits: the highest of its `==`, `===`,
/// `>=`, `>`, `~=` and `==X.*` bounds. `None` when it has no lower bound.
pub fn floor(spec: &VersionSpecifiers) -> Option<(u64, u64)> {
    spec.iter()
        .filter(|s| {
            matches!(
                s.operator(),
                Operator::Equal | Operator::EqualStar | Operator::ExactEqual | Operator::GreaterThan | Operator::GreaterThanEqual | Operator::TildeEqual
            )
        })
        .map(|s| {
            let r = s.version().release();
            (r.first().copied().unwrap_or(0), r.get(1).copied().unwrap_or(0))
        })
        .max()
}

/// The marker environment of a process on `platform` with Python `python` (`3.11`): the
/// values `packaging.markers.default_environment()` gives there (os_name, sys_platform,
/// platform_system, platform_machine); the release and version strings of the OS are left
/// empty (no NVIDIA pin is conditioned on them).
fn marker_env(platform: Platform, python: &str) -> Option<MarkerEnvironment> {
    let (os_name, sys_platform, system, machine) = match platform {
        Platform::WindowsX86_64 => ("nt", "win32", "Windows", "AMD64"),
        Platform::LinuxX86_64 => ("posix", "linux", "Linux", "x86_64"),
        _ => ("posix", "linux", "Linux", "aarch64"),
    };
    MarkerEnvironment::try_from(MarkerEnvironmentBuilder {
        implementation_name: "cpython",
        implementation_version: python,
        os_name,
        platform_machine: machine,
        platform_python_implementation: "CPython",
        platform_release: "",
        platform_system: system,
        platform_version: "",
        python_full_version: python,
        python_version: python,
        sys_platform,
    })
    .ok()
}

/// The `major.minor` of the env's Python, from its files: a `lib/pythonX.Y/site-packages`
/// path, a venv's `pyvenv.cfg` (`version` / `version_info`), or conda's `python` record.
pub fn python_version(env: &PyEnv) -> Option<String> {
    let mm = |v: &str| {
        let p: Vec<&str> = v.trim().split('.').take(2).collect();
        (p.len() == 2 && p.iter().all(|x| !x.is_empty() && x.chars().all(|c| c.is_ascii_digit()))).then(|| p.join("."))
    };
    for sp in &env.site_packages {
        if let Some(v) = sp.parent().and_then(Path::file_name).and_then(|n| n.to_str()).and_then(|n| n.strip_prefix("python")).and_then(mm) {
            return Some(v);
        }
    }
    if let Ok(cfg) = std::fs::read_to_string(env.prefix.join("pyvenv.cfg")) {
        for line in cfg.lines() {
            if let Some((k, v)) = line.split_once('=')
                && matches!(k.trim(), "version" | "version_info")
                && let Some(v) = mm(v)
            {
                return Some(v);
            }
        }
    }
    super::conda::records(&env.prefix).into_iter().find(|r| r.name == "python").and_then(|r| mm(&r.version))
}

/// One installed distribution's core metadata: its `Name`, `Version`, extras and
/// `Requires-Dist` strings, from the METADATA text `text`.
#[derive(Debug, Default)]
pub struct Metadata {
    /// `Name:`.
    pub name: String,
    /// `Version:`.
    pub version: String,
    /// `Provides-Extra:` values.
    pub extras: Vec<String>,
    /// `Requires-Dist:` values, as written.
    pub requires: Vec<String>,
}

impl Metadata {
    /// Reads the header part of a METADATA text (up to the first empty line: the body is the
    /// long description).
    pub fn parse(text: &str) -> Metadata {
        let mut m = Metadata::default();
        for line in text.lines() {
            if line.trim().is_empty() {
                break;
            }
            let Some((k, v)) = line.split_once(':') else { continue };
            let v = v.trim().to_string();
            match k {
                "Name" => m.name = v,
                "Version" => m.version = v,
                "Provides-Extra" => m.extras.push(v),
                "Requires-Dist" => m.requires.push(v),
                _ => {}
            }
        }
        m
    }

    /// The requirements on cuDNN and CUDA this distribution states for `platform` and
    /// Python `python` (`None`: not known: a requirement whose markers differ between Python
    /// 3.8 and 3.14 is then skipped), every extra counted as chosen. `file` is the METADATA
    /// the text came from. A `Requires-Dist` that does not parse is skipped.
    pub fn needs(&self, file: &Path, platform: Platform, python: Option<&str>) -> Vec<Need> {
        let extras: Vec<ExtraName> = self.extras.iter().filter_map(|e| ExtraName::new(e.clone()).ok()).collect();
        let envs: Vec<MarkerEnvironment> = match python {
            Some(p) => marker_env(platform, p).into_iter().collect(),
            None => ["3.8", "3.14"].iter().filter_map(|p| marker_env(platform, p)).collect(),
        };
        let mut out = Vec::new();
        for text in &self.requires {
            let Ok(req) = text.parse::<Requirement>() else { continue };
            let Some(lib) = judged_lib(req.name.as_ref()) else { continue };
            let applies: Vec<bool> = envs.iter().map(|e| req.evaluate_markers(e, &extras)).collect();
            if applies.is_empty() || !applies.iter().all(|a| *a) {
                continue;
            }
            let spec = match &req.version_or_url {
                Some(VersionOrUrl::VersionSpecifier(s)) => s.clone(),
                _ => VersionSpecifiers::empty(),
            };
            let written = format!("{}{}", req.name, spec.iter().map(ToString::to_string).collect::<Vec<_>>().join(","));
            out.push(Need { framework: format!("{} {}", self.name, self.version), file: file.to_path_buf(), lib, spec: Spec::Pip(spec), text: written });
        }
        out
    }
}

/// The distributions installed in the site-packages folder `site`, from their
/// `<name>-<version>.dist-info` folders: (the name PEP 503-normalized, the version, the
/// folder), sorted by folder name. Empty when `site` cannot be read.
pub fn dist_infos(site: &Path) -> Vec<(String, String, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(site) else { return Vec::new() };
    let mut out: Vec<(String, String, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let (name, version) = n.strip_suffix(".dist-info")?.split_once('-')?;
            Some((name.to_ascii_lowercase().replace(['_', '.'], "-"), version.to_string(), e.path()))
        })
        .collect();
    out.sort_by(|a, b| a.2.file_name().cmp(&b.2.file_name()));
    out
}

/// The `*.dist-info/METADATA` files of `env`'s site-packages, sorted, except NVIDIA's own
/// wheels (`nvidia_*`, `nvidia-*`: they provide the libraries rather than use them).
pub fn metadata_files(env: &PyEnv) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sp in &env.site_packages {
        let Ok(rd) = std::fs::read_dir(sp) else { continue };
        let mut here: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let n = p.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
                n.ends_with(".dist-info") && !n.starts_with("nvidia")
            })
            .map(|p| p.join("METADATA"))
            .filter(|p| p.is_file())
            .collect();
        here.sort();
        out.extend(here);
    }
    out
}

/// Every requirement on cuDNN and CUDA the installed distributions of `env` state for
/// `platform` ([`Metadata::needs`]).
pub fn needs(env: &PyEnv, platform: Platform) -> Vec<Need> {
    let python = python_version(env);
    let mut out = Vec::new();
    for f in metadata_files(env) {
        let Ok(text) = std::fs::read_to_string(&f) else { continue };
        out.extend(Metadata::parse(&text).needs(&f, platform, python.as_deref()));
    }
    out
}
