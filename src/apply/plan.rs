//! Stage 4, plan: what would change from the current generation to the [`Desired`] one,
//! as `+` / `-` / `~` lines ([`crate::change`]). Reads the current generation's manifest;
//! writes nothing.

use std::path::PathBuf;

use crate::change::{Change, Kind, Subject};
use crate::env::view::VIEW_LINKS;
use crate::generation::{Manifest, ViewRecord};

use super::desire::Desired;
use super::error::Replacing;

/// The change from the `current` generation (number and manifest, as the command read it)
/// to `desired` (see [`crate::change`]); empty when nothing would change. When a profile
/// changes, every link of the new views follows.
pub fn plan(current: Option<&(u64, Manifest)>, desired: &Desired) -> Vec<Change> {
    let cur = current.map(|(_, m)| m);
    let (empty_views, empty_shims) = (Vec::new(), Vec::new());
    let (cur_views, cur_shims) = cur.as_ref().map(|m| (&m.profiles, &m.shims)).unwrap_or((&empty_views, &empty_shims));
    let mut out = Vec::new();
    // Why each profile's toolkit root won.
    let why = |name: &str| desired.resolved.profiles.iter().find(|r| r.name == name).map(|r| r.toolkit_why.0.clone()).unwrap_or_default();
    for v in &desired.views {
        match cur_views.iter().find(|c| c.name == v.name) {
            None => out.push(
                Change::new(
                    Kind::Add,
                    Subject::Profile,
                    &v.name,
                    Some(format!("cuDNN {} ({}) on CUDA {} ({})", v.cudnn_version, v.cudnn_name, v.toolkit_version, v.toolkit_root.display())),
                )
                .with_why(why(&v.name)),
            ),
            Some(c) if c != v => {
                let mut what = Vec::new();
                if c.cudnn_id != v.cudnn_id {
                    what.push(format!("cuDNN {} -> {} ({})", c.cudnn_version, v.cudnn_version, v.cudnn_name));
                }
                if c.toolkit_root != v.toolkit_root {
                    what.push(format!("toolkit {} -> {}", c.toolkit_root.display(), v.toolkit_root.display()));
                }
                if c.conda_env != v.conda_env {
                    what.push(format!("conda env {} -> {}", opt_path(&c.conda_env), opt_path(&v.conda_env)));
                }
                if c.python_env != v.python_env {
                    what.push(format!("python env {} -> {}", opt_path(&c.python_env), opt_path(&v.python_env)));
                }
                if what.is_empty() {
                    what.push("settings changed".into());
                }
                let change = Change::new(Kind::Change, Subject::Profile, &v.name, Some(what.join(", ")));
                out.push(if c.toolkit_root != v.toolkit_root { change.with_why(why(&v.name)) } else { change });
            }
            Some(_) => {}
        }
    }
    for c in cur_views.iter().filter(|c| !desired.views.iter().any(|v| v.name == c.name)) {
        out.push(Change::new(Kind::Remove, Subject::Profile, &c.name, None));
    }
    if let Some(m) = cur.as_ref().filter(|m| m.link_mode != desired.link_mode) {
        out.push(Change::new(Kind::Change, Subject::LinkMode, "", Some(format!("{} -> {}", m.link_mode, desired.link_mode))));
    }
    let profiles_changed = !out.is_empty();
    for (s, _) in &desired.shims {
        let path = s.path.display().to_string();
        match cur_shims.iter().find(|c| c.path == s.path) {
            None => out.push(Change::new(Kind::Add, Subject::Shim, path, None)),
            Some(c) if c.sha256 != s.sha256 => out.push(Change::new(Kind::Change, Subject::Shim, path, None)),
            _ => {}
        }
    }
    for c in cur_shims.iter().filter(|c| !desired.shims.iter().any(|(s, _)| s.path == c.path)) {
        out.push(Change::new(Kind::Remove, Subject::Shim, c.path.display().to_string(), None));
    }
    // A link-free generation has no views, so no view links to list.
    if profiles_changed && !desired.link_mode.is_link_free() {
        for v in &desired.views {
            for name in VIEW_LINKS {
                out.push(Change::new(Kind::Link, Subject::Link, format!("profiles/{}/{}", v.name, name), Some(view_target(v, name).display().to_string())));
            }
        }
    }
    out
}

fn opt_path(p: &Option<PathBuf>) -> String {
    p.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "(none)".into())
}

pub(super) fn view_target(v: &ViewRecord, name: &str) -> PathBuf {
    match name {
        "cuda" => v.toolkit_root.clone(),
        "cudnn" => v.entry_dir.clone(),
        "cudnn-lib" => crate::store::extract::native(&v.entry_dir, &v.cudnn_lib),
        _ => v.cuda_lib.clone(),
    }
}

/// True when `desired` equals what the `current` generation already has.
pub fn unchanged(current: Option<&(u64, Manifest)>, desired: &Desired) -> bool {
    let Some((_, cur)) = current else { return false };
    cur.profiles == desired.views
        && cur.link_mode == desired.link_mode
        && cur.shims.len() == desired.shims.len()
        && cur.shims.iter().zip(&desired.shims).all(|(a, (b, _))| a.path == b.path && a.sha256 == b.sha256)
}

/// `Some` when `desired` comes from another profile file than the current generation's
/// (another canonical path, or the old file is gone) and would remove some of its
/// profiles; `None` when it is the same file, there is no current generation, or nothing
/// would be removed (a file that only adds profiles replaces nothing).
pub fn replacing(current: Option<&(u64, Manifest)>, desired: &Desired) -> Option<Replacing> {
    let names: Vec<&str> = desired.views.iter().map(|v| v.name.as_str()).collect();
    replacing_names(current, &desired.file.path, &names)
}

/// [`replacing`] for the profile file as parsed, before anything is fetched or resolved:
/// the profiles it names are those the generation would hold.
pub fn replacing_file(current: Option<&(u64, Manifest)>, file: &crate::profile::ProfileFile) -> Option<Replacing> {
    let names: Vec<&str> = file.profiles.iter().map(|p| p.name.as_str()).collect();
    replacing_names(current, &file.path, &names)
}

fn replacing_names(current: Option<&(u64, Manifest)>, path: &std::path::Path, names: &[&str]) -> Option<Replacing> {
    let (n, m) = current?;
    let n = *n;
    let same_file = match (crate::sys::paths::canonicalize(&m.source), crate::sys::paths::canonicalize(path)) {
        (Ok(a), Ok(b)) => crate::sys::paths::same_path(&a, &b),
        _ => false,
    };
    if same_file {
        return None;
    }
    let lost: Vec<String> = m.profiles.iter().filter(|p| !names.contains(&p.name.as_str())).map(|p| p.name.clone()).collect();
    if lost.is_empty() {
        return None;
    }
    let file = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    Some(Replacing { generation: n, current: m.source.clone(), file, lost })
}
