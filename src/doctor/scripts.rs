//! Static rules on a conda env's activation scripts, read without running
//! anything:
//!
//! - **Appending scripts.** A script in `etc/conda/activate.d` (not cuenv's own) that *appends*
//!   a folder holding cuDNN or CUDA libraries to the loader's variable (`LD_LIBRARY_PATH` on
//!   Linux, `PATH` on Windows) puts it after every folder already there, so any earlier copy
//!   wins (the loader takes the first match: docs/loader.md L1 / W1). A known fault of
//!   hand-written shims (docs/facts.md §6: appending instead of prepending); TensorFlow's pip
//!   guide of 2023 wrote such a line into `activate.d/env_vars.sh`, and a system cuDNN 8.1.1
//!   then won (tensorflow/tensorflow#60750).
//! - **Glob metacharacters in the env's path.** conda listed `activate.d` with
//!   `glob(join(prefix, "etc", "conda", "activate.d", "*" + ext))` until conda/conda#9889
//!   (merged 2020-04-27, first released in conda 4.9) replaced it with `os.scandir`; a prefix
//!   holding `[`, `*` or `?` makes such a pattern match other names or none, so those condas
//!   (and tools built the same way) run none of the env's scripts, cuenv's shims included.
//!
//! Forms read, per script kind: sh/bash/zsh `[export] VAR=value`, csh `setenv VAR value`,
//! fish `set [-flags] VAR values...`, cmd `set ["]VAR=value`, PowerShell `$env:VAR = value`
//! and `$env:VAR += value` (always an append). `$CONDA_PREFIX` (and its `${}`, `%%` and
//! `$env:` forms) is replaced by the env's path; a folder still naming another variable is
//! judged by its text (it names `cudnn` or `cuda`).

use std::path::{Path, PathBuf};

use super::{Finding, Severity};
use crate::cudnn::libname;

/// The loader's search variable on this platform.
fn search_var() -> &'static str {
    if cfg!(windows) { "PATH" } else { "LD_LIBRARY_PATH" }
}

/// Findings for the conda env at `prefix`: appending scripts and glob metacharacters in its
/// path (the latter only when the env holds cuenv shims). Sorted by script name.
pub fn judge(prefix: &Path) -> Vec<Finding> {
    let dir = prefix.join("etc").join("conda").join("activate.d");
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(&dir).map(|rd| rd.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    scripts.sort();
    let ours = |p: &Path| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("cuenv-"));
    let mut out = Vec::new();
    if scripts.iter().any(|p| ours(p)) && prefix.to_string_lossy().contains(['[', '*', '?']) {
        out.push(Finding {
            rule: None,
            severity: Severity::Warning,
            message: format!(
                "the conda env path {} contains a glob metacharacter ('[', '*' or '?'): conda before 4.9 (conda/conda#9889) and other tools that list activate.d with a glob pattern find no script there, so cuenv's shims would not run",
                prefix.display()
            ),
            hint: Some("use conda 4.9 or newer, or recreate the env at a path without '[', '*' and '?' and apply again".into()),
        });
    }
    let var = search_var();
    for script in scripts.iter().filter(|p| !ours(p)) {
        let Some(kind) = Kind::of(script) else { continue };
        let Ok(text) = std::fs::read_to_string(script) else { continue };
        for folder in appended(&text, kind, var) {
            let resolved = resolve(&folder, prefix);
            let libs = resolved.as_deref().is_some_and(holds_cuda_libraries);
            let named = resolved.is_none() && ["cudnn", "cuda"].iter().any(|w| folder.to_ascii_lowercase().contains(w));
            if !(libs || named) {
                continue;
            }
            let shown = resolved.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| folder.clone());
            out.push(Finding {
                rule: None,
                severity: Severity::Warning,
                message: format!(
                    "{} appends {shown} to {var}: every folder already on {var} comes first, so the cuDNN/CUDA libraries there lose to any earlier copy",
                    script.display()
                ),
                hint: Some(format!(
                    "prepend it instead ({}) and take it back out in deactivate.d, or let a cuenv profile provide the folder",
                    kind.prepend_example(var, &folder)
                )),
            });
        }
    }
    out
}

/// The shell a script is for, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Sh,
    Csh,
    Fish,
    Cmd,
    PowerShell,
}

impl Kind {
    fn of(p: &Path) -> Option<Kind> {
        let ext = p.extension()?.to_string_lossy().to_ascii_lowercase();
        Some(match ext.as_str() {
            "sh" => Kind::Sh,
            "csh" => Kind::Csh,
            "fish" => Kind::Fish,
            "bat" | "cmd" => Kind::Cmd,
            "ps1" => Kind::PowerShell,
            _ => return None,
        })
    }

    /// How this shell would prepend `folder` to `var`.
    fn prepend_example(self, var: &str, folder: &str) -> String {
        match self {
            Kind::Sh => format!("`export {var}=\"{folder}:${var}\"`"),
            Kind::Csh => format!("`setenv {var} \"{folder}:${{{var}}}\"`"),
            Kind::Fish => format!("`set -gx {var} \"{folder}\" ${var}`"),
            Kind::Cmd => format!("`set \"{var}={folder};%{var}%\"`"),
            Kind::PowerShell => format!("`$env:{var} = \"{folder};$env:{var}\"`"),
        }
    }
}

/// Whether `s` refers to the variable `var` in the syntax of `kind`.
fn refers(s: &str, kind: Kind, var: &str) -> bool {
    let s = s.to_ascii_lowercase();
    let v = var.to_ascii_lowercase();
    match kind {
        Kind::Cmd => s.contains(&format!("%{v}%")),
        Kind::PowerShell => s.contains(&format!("$env:{v}")),
        _ => {
            // `$VAR` not followed by a name character, or `${VAR`.
            s.contains(&format!("${{{v}"))
                || s.match_indices(&format!("${v}")).any(|(i, m)| !s[i + m.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
        }
    }
}

/// The folders `text` (a script of `kind`) appends to `var`: in each assignment of `var`
/// whose value refers to `var` itself, the path elements after that reference.
fn appended(text: &str, kind: Kind, var: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let Some((value, always)) = assignment(line, kind, var) else { continue };
        let sep: &[char] = match kind {
            Kind::Fish => &[' ', '\t'],
            Kind::Cmd | Kind::PowerShell => &[';'],
            _ => &[':'],
        };
        let mut seen_self = always;
        for el in value.split(sep) {
            let el = el.trim();
            if refers(el, kind, var) {
                seen_self = true;
                continue;
            }
            let clean = el.trim_matches(|c| c == '}' || c == '"' || c == '\'').trim_start_matches('+').trim();
            if clean.is_empty() {
                continue;
            }
            if seen_self {
                out.push(clean.to_string());
            } else {
                // A folder before the variable's own value: a prepend; stop judging this line.
                break;
            }
        }
    }
    out
}

/// The value assigned to `var` on `line`, and whether the form always appends (`+=`).
fn assignment(line: &str, kind: Kind, var: &str) -> Option<(String, bool)> {
    let strip_quotes = |s: &str| s.trim().trim_matches('"').trim_matches('\'').to_string();
    let eq_ci = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    match kind {
        Kind::Sh => {
            let l = line.strip_prefix("export ").map(str::trim_start).unwrap_or(line);
            let (name, value) = l.split_once('=')?;
            (name == var).then(|| (strip_quotes(value), false))
        }
        Kind::Csh => {
            let mut it = line.splitn(3, char::is_whitespace);
            (it.next()? == "setenv" && it.next()? == var).then(|| (strip_quotes(it.next().unwrap_or("")), false))
        }
        Kind::Fish => {
            let mut words = line.split_whitespace();
            if words.next()? != "set" {
                return None;
            }
            let mut rest: Vec<&str> = words.skip_while(|w| w.starts_with('-')).collect();
            if rest.first().copied() != Some(var) {
                return None;
            }
            rest.remove(0);
            Some((rest.iter().map(|w| w.trim_matches('"').trim_matches('\'')).collect::<Vec<_>>().join(" "), false))
        }
        Kind::Cmd => {
            let l = line.get(..4).filter(|p| eq_ci(p, "set ")).map(|_| line[4..].trim_start())?;
            let l = l.strip_prefix('"').map(|x| x.strip_suffix('"').unwrap_or(x)).unwrap_or(l);
            let (name, value) = l.split_once('=')?;
            eq_ci(name.trim(), var).then(|| (value.to_string(), false))
        }
        Kind::PowerShell => {
            let l = line.get(..5).filter(|p| eq_ci(p, "$env:")).map(|_| &line[5..])?;
            let (name, rest) = l.split_once(|c: char| c.is_whitespace() || c == '=' || c == '+')?;
            if !eq_ci(name, var) {
                return None;
            }
            let rest = format!("{}{}", &l[name.len()..name.len() + 1], rest).trim().to_string();
            if let Some(v) = rest.strip_prefix("+=") { Some((strip_quotes(v), true)) } else { rest.strip_prefix('=').map(|v| (strip_quotes(v), false)) }
        }
    }
}

/// `folder` with the env's own variable replaced by `prefix`; `None` when it still names
/// another variable.
fn resolve(folder: &str, prefix: &Path) -> Option<PathBuf> {
    let p = prefix.to_string_lossy();
    let mut s = folder.to_string();
    for form in ["${CONDA_PREFIX}", "$CONDA_PREFIX", "%CONDA_PREFIX%", "$env:CONDA_PREFIX"] {
        s = s.replace(form, &p);
    }
    (!s.contains(['$', '%'])).then(|| PathBuf::from(s))
}

/// Whether `dir` holds a cuDNN library (any platform's name) or a CUDA runtime / cuBLAS one.
fn holds_cuda_libraries(dir: &Path) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else { return false };
    rd.flatten().any(|e| {
        let n = e.file_name().to_string_lossy().to_ascii_lowercase();
        libname::parse(&n).is_some() || ["libcudart.so", "libcublas", "cudart64_", "cublas64_", "cublaslt64_"].iter().any(|x| n.starts_with(x))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_are_told_from_prepends_in_every_shell() {
        let v = "LD_LIBRARY_PATH";
        assert_eq!(appended("export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$CONDA_PREFIX/lib", Kind::Sh, v), ["$CONDA_PREFIX/lib"]);
        assert_eq!(appended("export LD_LIBRARY_PATH=\"${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH}:}/opt/cudnn/lib\"", Kind::Sh, v), ["/opt/cudnn/lib"]);
        assert!(appended("export LD_LIBRARY_PATH=\"/opt/cudnn/lib:$LD_LIBRARY_PATH\"", Kind::Sh, v).is_empty());
        assert!(appended("export LD_LIBRARY_PATH_X=$LD_LIBRARY_PATH:/a", Kind::Sh, v).is_empty());
        assert!(appended("LD_LIBRARY_PATH=$LD_LIBRARY_PATHS:/a", Kind::Sh, v).is_empty());
        assert_eq!(appended("setenv LD_LIBRARY_PATH ${LD_LIBRARY_PATH}:/opt/cuda/lib64", Kind::Csh, v), ["/opt/cuda/lib64"]);
        assert_eq!(appended("set -gx LD_LIBRARY_PATH $LD_LIBRARY_PATH /opt/cuda/lib64", Kind::Fish, v), ["/opt/cuda/lib64"]);
        assert!(appended("set -gx LD_LIBRARY_PATH /opt/cuda/lib64 $LD_LIBRARY_PATH", Kind::Fish, v).is_empty());
        assert_eq!(appended(r#"set "PATH=%PATH%;C:\cudnn\bin""#, Kind::Cmd, "PATH"), [r"C:\cudnn\bin"]);
        assert!(appended(r#"set "PATH=C:\cudnn\bin;%PATH%""#, Kind::Cmd, "PATH").is_empty());
        assert_eq!(appended(r#"$env:PATH = "$env:PATH;C:\cudnn\bin""#, Kind::PowerShell, "PATH"), [r"C:\cudnn\bin"]);
        assert_eq!(appended(r#"$env:PATH += ";C:\cudnn\bin""#, Kind::PowerShell, "PATH"), [r"C:\cudnn\bin"]);
        assert!(appended(r#"$env:PATH = "C:\cudnn\bin;$env:PATH""#, Kind::PowerShell, "PATH").is_empty());
    }

    #[test]
    fn the_envs_own_variable_is_resolved_and_others_are_not() {
        let p = Path::new("/envs/a");
        assert_eq!(resolve("$CONDA_PREFIX/lib", p), Some(PathBuf::from("/envs/a/lib")));
        assert_eq!(resolve("${CONDA_PREFIX}/lib", p), Some(PathBuf::from("/envs/a/lib")));
        assert_eq!(resolve("$HOME/cudnn", p), None);
    }
}
