//! What the packages of a conda env require of cuDNN and CUDA, read from conda's own package
//! records (`conda-meta/<name>-<version>-<build>.json`, their `depends` list:
//! `"cudnn >=9.13.1.26,<10.0a0"`, `"cuda-version >=12,<13.0a0"`), and the release of the env's
//! own `cudnn` package. conda's solver keeps the two consistent, but a forced install, a pip
//! install over the env, a hand-made env or a cuDNN from outside the env (a cuenv profile,
//! `LD_LIBRARY_PATH`) breaks that, and nothing checks it afterwards.
//!
//! The match-spec grammar read is conda's for versions (`conda/models/version.py`,
//! `VersionSpec`): `,` joins conditions that must all hold, `|` alternatives; operators `==`,
//! `!=`, `>=`, `>`, `<=`, `<`, `~=`; `9.*` and a bare `9.1` match by prefix (conda's fuzzy
//! match); a pre-release tag (`10.0a0`) sorts below the release (`10.0`). A spec in another
//! form is said to be "not verified", never judged.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use super::{Lib, Need, Spec};

/// One version component: its number and any letters after it (`0a0` is `(0, "a0")`).
fn parts(v: &str) -> Vec<(u64, String)> {
    v.split(['.', '_', '-'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let digits: String = p.chars().take_while(|c| c.is_ascii_digit()).collect();
            (digits.parse().unwrap_or(0), p[digits.len()..].to_string())
        })
        .collect()
}

/// conda's version order for the versions cuDNN packages use: numbers compared as numbers,
/// missing trailing parts as 0, and a component with a letter tag (`0a0`, `0dev`) below the
/// same number without one.
fn compare(a: &str, b: &str) -> Ordering {
    let (pa, pb) = (parts(a), parts(b));
    for i in 0..pa.len().max(pb.len()) {
        let x = pa.get(i).cloned().unwrap_or((0, String::new()));
        let y = pb.get(i).cloned().unwrap_or((0, String::new()));
        let o = x.0.cmp(&y.0).then_with(|| match (x.1.is_empty(), y.1.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => x.1.cmp(&y.1),
        });
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Whether `version` starts with the components of `prefix` (`9.1` matches `9.1.0.70`, not
/// `9.10`).
fn prefix_match(version: &str, prefix: &str) -> bool {
    let (v, p) = (parts(version), parts(prefix));
    p.len() <= v.len() && p.iter().zip(&v).all(|(a, b)| a == b)
}

/// Whether `version` satisfies the conda version spec `spec` (`>=9.13.1.26,<10.0a0`);
/// `None` when the spec is in a form not read here.
pub fn satisfies(version: &str, spec: &str) -> Option<bool> {
    let spec = spec.trim();
    if spec.is_empty() || spec == "*" {
        return Some(true);
    }
    if spec.contains('|') {
        let mut any = false;
        for alt in spec.split('|') {
            any |= satisfies(version, alt)?;
        }
        return Some(any);
    }
    let mut all = true;
    for cond in spec.split(',').map(str::trim) {
        let (op, v) = ["==", "!=", ">=", "<=", "~=", ">", "<"].iter().find_map(|op| cond.strip_prefix(op).map(|v| (*op, v.trim()))).unwrap_or(("", cond));
        if v.is_empty() || !v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '*' || c == '_') {
            return None;
        }
        let ok = match (op, v.strip_suffix(".*").or_else(|| v.strip_suffix('*'))) {
            ("" | "==", Some(p)) => prefix_match(version, p),
            ("!=", Some(p)) => !prefix_match(version, p),
            (_, Some(_)) => return None,
            ("", None) => prefix_match(version, v),
            ("==", None) => compare(version, v) == Ordering::Equal,
            ("!=", None) => compare(version, v) != Ordering::Equal,
            (">=", None) => compare(version, v) != Ordering::Less,
            (">", None) => compare(version, v) == Ordering::Greater,
            ("<=", None) => compare(version, v) != Ordering::Greater,
            ("<", None) => compare(version, v) == Ordering::Less,
            ("~=", None) => {
                // `~=9.1.2` is `>=9.1.2,==9.1.*`.
                let p = v.rsplit_once('.').map(|(p, _)| p).unwrap_or(v);
                compare(version, v) != Ordering::Less && prefix_match(version, p)
            }
            _ => return None,
        };
        all &= ok;
    }
    Some(all)
}

/// The lowest release `spec` admits, as (major, minor): from its `==`, `>=`, `>`, `~=` or
/// fuzzy (`9.1`, `9.*`) conditions, the highest of them; `None` when it has none or is in a
/// form not read here (alternatives with `|`).
pub fn floor(spec: &str) -> Option<(u64, u64)> {
    if spec.contains('|') {
        return None;
    }
    let mut best: Option<(u64, u64)> = None;
    for cond in spec.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let v = ["==", ">=", "~=", ">"]
            .iter()
            .find_map(|op| cond.strip_prefix(op))
            .map(str::trim)
            .or_else(|| cond.chars().next().filter(char::is_ascii_digit).map(|_| cond));
        let Some(v) = v else { continue };
        let p = parts(v.trim_end_matches(".*").trim_end_matches('*'));
        let Some(major) = p.first().map(|x| x.0) else { continue };
        let mm = (major, p.get(1).map_or(0, |x| x.0));
        best = Some(best.map_or(mm, |b| b.max(mm)));
    }
    best
}

/// A package record of a conda env: name, version, the record's file, and its `depends`.
pub struct Record {
    /// The package name (`jaxlib`).
    pub name: String,
    /// Its version (`0.7.2`).
    pub version: String,
    /// The record's file (`<prefix>/conda-meta/jaxlib-0.7.2-cuda12py311h….json`).
    pub file: PathBuf,
    /// Its `depends` entries as written (`"cudnn >=9.13.1.26,<10.0a0"`).
    pub depends: Vec<String>,
}

/// The package records of the conda env at `prefix` (`conda-meta/*.json`), sorted by file
/// name; files that are not records are skipped. Empty without `conda-meta/`.
pub fn records(prefix: &Path) -> Vec<Record> {
    let meta = prefix.join("conda-meta");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&meta).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "json")).collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|f| {
            let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&f).ok()?).ok()?;
            Some(Record {
                name: doc.get("name")?.as_str()?.to_string(),
                version: doc.get("version")?.as_str()?.to_string(),
                file: f.clone(),
                depends: doc
                    .get("depends")
                    .and_then(|d| d.as_array())
                    .map(|d| d.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// The conda package names whose `depends` entry carries a requirement cuenv judges:
/// `cudnn` (cuDNN's release) and `cuda-version` (conda-forge's CUDA metapackage: its version
/// is the CUDA release, `cuda-version >=12.6,<13`), as conda-forge's recipes write them.
const JUDGED: [(&str, Lib); 2] = [("cudnn", Lib::Cudnn), ("cuda-version", Lib::Cuda)];

/// The requirements the records at `prefix` state on cuDNN and CUDA (`cudnn`, `cuda-version`), one
/// [`Need`] per `depends` entry; the `cudnn` and `cuda-version` records themselves are not
/// frameworks and are skipped.
pub fn needs(prefix: &Path) -> Vec<Need> {
    let mut out = Vec::new();
    for r in records(prefix).iter().filter(|r| !JUDGED.iter().any(|(n, _)| *n == r.name)) {
        for dep in &r.depends {
            let mut words = dep.split_whitespace();
            let Some(name) = words.next() else { continue };
            let Some((_, lib)) = JUDGED.iter().find(|(n, _)| *n == name) else { continue };
            let spec = words.next().unwrap_or("").to_string();
            out.push(Need {
                framework: format!("{} {}", r.name, r.version),
                file: r.file.clone(),
                lib: *lib,
                text: format!("{name} {spec}").trim_end().to_string(),
                spec: Spec::Conda(spec),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conda_version_specs_are_read_as_conda_reads_them() {
        // jaxlib's pin in the report (issue 32): 9.10.1.4 is refused, 9.13.1.26 and 9.14 pass.
        let spec = ">=9.13.1.26,<10.0a0";
        assert_eq!(satisfies("9.10.1.4", spec), Some(false));
        assert_eq!(satisfies("9.13.1.26", spec), Some(true));
        assert_eq!(satisfies("9.14.0.64", spec), Some(true));
        assert_eq!(satisfies("10.0.0", spec), Some(false), "10.0a0 sorts below 10.0");
        // Fuzzy and wildcard forms, alternatives, the compatible-release operator.
        assert_eq!(satisfies("9.1.0.70", "9.1"), Some(true));
        assert_eq!(satisfies("9.10.0", "9.1"), Some(false), "9.1 is not a prefix of 9.10");
        assert_eq!(satisfies("8.9.7.29", "8.*"), Some(true));
        assert_eq!(satisfies("8.9.7.29", "9.*|8.9.*"), Some(true));
        assert_eq!(satisfies("9.1.2", "~=9.1.0"), Some(true));
        assert_eq!(satisfies("9.2.0", "~=9.1.0"), Some(false));
        assert_eq!(satisfies("9.1.0", "!=9.1.0"), Some(false));
        assert_eq!(satisfies("9.1.0", ""), Some(true));
        assert_eq!(satisfies("9.1.0", ">=9.1 [cuda]"), None, "a form not read is said, not judged");
        assert_eq!(floor(spec), Some((9, 13)));
        assert_eq!(floor(">=12,<13.0a0"), Some((12, 0)));
        assert_eq!(floor("8.*"), Some((8, 0)));
        assert_eq!(floor("<10"), None);
        assert_eq!(floor("9.*|8.9.*"), None);
    }
}
