//! What the frameworks of a conda env require of cuDNN, read from conda's own package records
//! (`conda-meta/<name>-<version>-<build>.json`, their `depends` list: `"cudnn >=9.13.1.26,<10.0a0"`),
//! never by importing them, and judged against the `cudnn` package the env holds
//! (`conda-meta/cudnn-<version>-<build>.json`). A framework built against a newer cuDNN minor
//! refuses an older runtime (JAX: "Loaded runtime CuDNN library: 9.10.1 but source was compiled
//! with: 9.13.1"); conda's solver keeps the two consistent, but a forced install, a pip
//! install over the env or a hand-made env breaks that, and nothing checks it afterwards.
//!
//! The match-spec grammar read is conda's for versions (`conda/models/version.py`,
//! `VersionSpec`): `,` joins conditions that must all hold, `|` alternatives; operators `==`,
//! `!=`, `>=`, `>`, `<=`, `<`, `~=`; `9.*` and a bare `9.1` match by prefix (conda's fuzzy
//! match); a pre-release tag (`10.0a0`) sorts below the release (`10.0`). A spec in another
//! form is said to be "not verified", never judged.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use super::{Finding, Severity};
use crate::pyenv::PyEnv;

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

/// A package record of a conda env: name, version, the record's file (relative to the env),
/// and its `depends` entries.
struct Record {
    name: String,
    version: String,
    file: String,
    depends: Vec<String>,
}

fn records(prefix: &Path) -> Vec<Record> {
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
                file: format!("conda-meta/{}", f.file_name()?.to_string_lossy()),
                depends: doc
                    .get("depends")
                    .and_then(|d| d.as_array())
                    .map(|d| d.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                    .unwrap_or_default(),
            })
        })
        .collect()
}

/// The findings for the conda env `env`: each package whose `depends` names `cudnn` with a
/// version spec the env's own `cudnn` package does not satisfy (a problem), or in a form
/// not read here (a warning: not verified). The release judged is `files` (version, where it
/// was read) when doctor read it from the package's files, else its record's `version`.
/// Nothing for an env without `conda-meta/` or without a `cudnn` package.
pub fn judge_conda(env: &PyEnv, files: Option<(String, String)>) -> Vec<Finding> {
    let mut out = Vec::new();
    if !env.kind.is_conda() {
        return out;
    }
    let recs = records(&env.prefix);
    let Some(record) = recs.iter().find(|r| r.name == "cudnn") else { return out };
    let (version, from) = files.unwrap_or_else(|| (record.version.clone(), record.file.clone()));
    let cudnn = Record { name: record.name.clone(), version, file: from, depends: Vec::new() };
    for r in recs.iter().filter(|r| r.name != "cudnn") {
        for dep in &r.depends {
            let mut words = dep.split_whitespace();
            if words.next() != Some("cudnn") {
                continue;
            }
            let spec = words.next().unwrap_or("");
            let who = format!("{} {} ({})", r.name, r.version, r.file);
            match satisfies(&cudnn.version, spec) {
                Some(true) => {}
                Some(false) => out.push(Finding {
                    rule: None,
                    severity: Severity::Problem,
                    message: format!(
                        "{who} in {} requires cudnn {spec}, and the env's cudnn is {} ({}): a framework built against a newer cuDNN refuses an older runtime at its first use of cuDNN",
                        env.describe(),
                        cudnn.version,
                        cudnn.file
                    ),
                    hint: Some(format!(
                        "install a cudnn that satisfies it in this env (`conda install \"cudnn {spec}\"`), or bind the env to a cuenv profile whose cuDNN does"
                    )),
                }),
                None => out.push(Finding {
                    rule: None,
                    severity: Severity::Warning,
                    message: format!("{who} in {} requires cudnn `{spec}`, a version spec cuenv does not read: not verified against the env's cudnn {}", env.describe(), cudnn.version),
                    hint: None,
                }),
            }
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
    }
}
