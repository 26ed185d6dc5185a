//! Doctor's judgement of what the frameworks of a Python env require of cuDNN and CUDA
//! ([`crate::requires`]: METADATA pins, build facts, conda records, read without importing
//! anything) against the releases the env itself holds: conda's `cudnn` and `cuda-version`
//! packages for a conda record's requirement, NVIDIA's wheels (`nvidia-cudnn-cuNN`,
//! `nvidia-cuda-runtime-cuNN`) for a pip pin or a build fact, else conda's packages. A
//! requirement with nothing in the env to judge it against is left to `cuenv check` of the
//! profile that supplies the library.

use std::path::{Path, PathBuf};

use super::{Finding, Severity};
use crate::pyenv::PyEnv;
use crate::requires::{Lib, Need, Spec, Verdict};

/// A release the env holds: its version, the file that says so, and the package's name.
#[derive(Debug, Clone)]
struct Held {
    version: String,
    file: PathBuf,
    package: String,
}

/// The version of the first NVIDIA wheel installed in `env` whose name `judged` says is `lib`.
fn wheel(env: &PyEnv, lib: Lib) -> Option<Held> {
    env.site_packages
        .iter()
        .flat_map(|sp| crate::requires::pip::dist_infos(sp))
        .find(|(name, _, _)| crate::requires::pip::judged_lib(name) == Some(lib) && name != "cuda-toolkit")
        .map(|(package, version, dir)| Held { version, file: dir.join("METADATA"), package })
}

/// The conda package that holds `lib` in `env`: `cudnn` (with `files`, the version its files
/// tell, where doctor read it) or `cuda-version`.
fn conda_package(env: &PyEnv, lib: Lib, files: Option<&(String, String)>) -> Option<Held> {
    if !env.kind.is_conda() {
        return None;
    }
    let name = match lib {
        Lib::Cudnn => "cudnn",
        Lib::Cuda => "cuda-version",
    };
    let r = crate::requires::conda::records(&env.prefix).into_iter().find(|r| r.name == name)?;
    let (version, file) = match (lib, files) {
        (Lib::Cudnn, Some((v, from))) => (v.clone(), PathBuf::from(from)),
        _ => (r.version, r.file),
    };
    Some(Held { version, file, package: name.to_string() })
}

/// `path` relative to the env's prefix where it is inside it.
fn short(env: &PyEnv, path: &Path) -> String {
    path.strip_prefix(&env.prefix).unwrap_or(path).display().to_string()
}

/// The findings for `env`: each framework requirement the env's own release does not meet (a
/// problem: another major, an older minor), meets as a newer release than declared or in a
/// form not read (a warning). `conda_files` is the (version, file) doctor read from conda's
/// cudnn files, if any.
pub fn judge(env: &PyEnv, conda_files: Option<(String, String)>) -> Vec<Finding> {
    let Some(platform) = crate::cudnn::platform::Platform::host() else { return Vec::new() };
    let mut out = Vec::new();
    for need in crate::requires::needs(env, platform) {
        let held = match need.spec {
            Spec::Conda(_) => conda_package(env, need.lib, conda_files.as_ref()),
            _ => wheel(env, need.lib).or_else(|| conda_package(env, need.lib, conda_files.as_ref())),
        };
        let Some(held) = held else { continue };
        if let Some(f) = finding(env, &need, &held) {
            out.push(f);
        }
    }
    out
}

fn finding(env: &PyEnv, need: &Need, held: &Held) -> Option<Finding> {
    let who = format!("{} ({})", need.framework, short(env, &need.file));
    let intro = format!("{who} in {} requires {}, and the env's {} is {} ({})", env.describe(), need.text, held.package, held.version, short(env, &held.file));
    let install = match &need.spec {
        Spec::Conda(s) => format!("`conda install \"{} {s}\"`", held.package),
        Spec::Pip(_) => format!("`pip install \"{}\"`", need.text),
        Spec::BuiltWith(major, minor) => {
            format!("a {} {major}{} build", need.lib.noun(), minor.map(|m| format!(".{m} or newer {major}.x")).unwrap_or_default())
        }
    };
    match need.judge(&held.version) {
        Verdict::Fits => None,
        Verdict::Misfit(why) => Some(Finding {
            rule: None,
            severity: Severity::Problem,
            message: format!("{intro}: {why}"),
            hint: Some(format!("install one that satisfies it in this env ({install}), or bind the env to a cuenv profile whose {} does", need.lib.noun())),
        }),
        Verdict::Newer(why) | Verdict::NotVerified(why) => {
            Some(Finding { rule: None, severity: Severity::Warning, message: format!("{intro}: {why}"), hint: None })
        }
    }
}
