//! Files outside the home that carry a profile's environment and follow it across switches
//! (docs/decisions.md 4, "exports and kernelspecs follow the same rule as shims"):
//! Jupyter kernelspecs bound to a profile of this home ([`crate::env::kernel`]) and the files
//! `cuenv export --out` wrote ([`crate::env::export`]).
//!
//! In the link modes they name the stable paths (`<home>/profiles/<name>/...`), which a
//! switch retargets, so nothing here rewrites them. In the link-free mode they name the real
//! store and toolkit folders of the current generation; so a switch whose old or new
//! generation is link-free (`apply`, `rollback`, an apply's revert, the recovery of a killed
//! switch) rewrites each of them to the target generation's folders, from
//! `generation::sync_shims`, inside the switch's journaled transaction and before its commit
//! point, exactly like the conda shims: each file is replaced by one atomic rename (a kill
//! leaves the old or the new bytes), a failed step undoes the files already rewritten, and a
//! killed switch is finished or undone with them ([`plan`] is a function of the target
//! generation alone).
//!
//! Which files: those listed in `<home>/exports.toml` ([`Layout::follow_record`]), which
//! `export --out` and `kernel install` append to ([`remember`]), and the kernelspecs in
//! Jupyter's folders ([`crate::env::kernel::search_dirs`]) whose `metadata.cuenv.home` is this home.
//! A file is left alone when it is gone, when it no longer looks like cuenv wrote it for that
//! profile, when the target generation lacks its profile (doctor and `kernel list` flag
//! those), and when its folder cannot be written (a system kernelspec folder): [`can_skip`].
//! Exports to stdout cannot be followed; `export` says so in the link-free mode.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cudnn::platform::Platform;
use crate::env::export::{self, Exported, Format};
use crate::home::layout::Layout;

/// The `format` of a recorded kernelspec (export formats use their `--format` name).
pub const KERNEL: &str = "kernel";

/// `<home>/exports.toml`: the files that follow a profile (`[[file]]` tables).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Record {
    /// The files, oldest first; one per path.
    #[serde(default, rename = "file")]
    pub files: Vec<Followed>,
}

/// One followed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Followed {
    /// Its absolute path (a kernelspec's `kernel.json`).
    pub path: PathBuf,
    /// The profile whose environment it holds.
    pub profile: String,
    /// An export format's `--format` name, or [`KERNEL`].
    pub format: String,
}

/// The record of `layout`'s home; empty when there is none or it cannot be read (a record is
/// only a list of files to keep current: losing it loses no state).
pub fn read_record(layout: &Layout) -> Record {
    std::fs::read_to_string(layout.follow_record()).ok().and_then(|t| toml::from_str(&t).ok()).unwrap_or_default()
}

/// Adds `f` to the record (replacing an entry for the same path, dropping entries whose file
/// is gone) and writes it atomically. Call under the writer lock.
pub fn remember(layout: &Layout, mut f: Followed) -> io::Result<()> {
    f.path = std::path::absolute(&f.path)?;
    let mut rec = read_record(layout);
    rec.files.retain(|o| o.path != f.path && o.path.is_file());
    rec.files.push(f);
    let text = toml::to_string(&rec).map_err(crate::error::unserializable)?;
    crate::sys::fsutil::write_atomic(&layout.follow_record(), text.as_bytes())
}

/// A file that cannot be followed: its path is not UTF-8, and `exports.toml` (TOML text)
/// holds only UTF-8 paths.
#[derive(Debug, thiserror::Error)]
#[error("the path {} is not UTF-8, so cuenv cannot record it to keep it current", crate::error::shown_path(.0))]
pub struct NotUtf8(pub PathBuf);

impl crate::error::Diagnose for NotUtf8 {
    fn hint(&self) -> Option<String> {
        Some("choose a folder whose path is UTF-8 (cuenv lists the files it keeps current in <home>/exports.toml, a UTF-8 file); nothing was written".into())
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        crate::error::ExitCode::Invalid
    }
}

/// Whether [`remember`] can record `path` (made absolute as it would be). Ask before writing
/// the file, so that a refusal leaves nothing on disk.
pub fn followable(path: &Path) -> Result<(), NotUtf8> {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    match abs.to_str() {
        Some(_) => Ok(()),
        None => Err(NotUtf8(abs)),
    }
}

/// What one generation gives the followed files: whether it is link-free, and each
/// profile's exported environment (built by `generation::follow_side`, so that this module
/// needs nothing of the generation's own types).
#[derive(Debug)]
pub struct Side {
    /// The generation is link-free (its paths name real folders).
    pub link_free: bool,
    /// (profile name, its exported environment), in manifest order.
    pub profiles: Vec<(String, Exported)>,
}

impl Side {
    fn profile(&self, name: &str) -> Option<&Exported> {
        self.profiles.iter().find(|(n, _)| n == name).map(|(_, e)| e)
    }
}

/// One file a switch rewrites: its bytes now and its bytes for the target generation.
#[derive(Debug)]
pub struct Rewrite {
    pub path: PathBuf,
    pub old: Vec<u8>,
    pub new: Vec<u8>,
}

/// Whether a failed rewrite of a followed file leaves it alone rather than failing the
/// switch: its folder or file cannot be written (permissions, a read-only file system).
pub fn can_skip(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem)
}

/// The followed files whose content differs from what generation `to` gives them, with both
/// contents, for a switch from `from` (`None`: no generation, or unreadable) to `to`. Empty
/// unless `from` or `to` is link-free (see the module docs). Reads only.
pub fn plan(layout: &Layout, from: Option<&Side>, to: &Side, platform: Platform) -> Vec<Rewrite> {
    if !to.link_free && !from.is_some_and(|f| f.link_free) {
        return Vec::new();
    }
    let sep = if platform.is_windows() { ';' } else { ':' };
    let home = crate::env::view::stable_home(layout).to_string_lossy().into_owned();
    let mut files: Vec<(PathBuf, Option<Format>)> = Vec::new();
    for f in read_record(layout).files {
        let kind = if f.format == KERNEL { None } else { Format::from_name(&f.format) };
        if kind.is_some() || f.format == KERNEL {
            files.push((f.path, kind));
        }
    }
    for k in crate::env::kernel::list(&crate::env::kernel::search_dirs()) {
        if k.home == home {
            files.push((std::path::absolute(&k.path).unwrap_or(k.path), None));
        }
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut out = Vec::new();
    for (path, kind) in files {
        if seen.iter().any(|s| crate::sys::paths::same_place(s, &path)) {
            continue;
        }
        seen.push(path.clone());
        let Ok(old) = std::fs::read(&path) else { continue };
        let text = String::from_utf8_lossy(&old);
        let Some(profile) = owner(&text, kind, &home) else { continue };
        let Some(e) = to.profile(&profile) else { continue };
        let new = match kind {
            Some(f) => {
                let Ok(t) = export::render(e, f, sep) else { continue };
                t
            }
            None => {
                let before = from.and_then(|f| f.profile(&profile)).map(|b| crate::env::kernel::env_block(b, sep));
                let Some(t) = crate::env::kernel::refreshed(&text, before.as_ref(), &crate::env::kernel::env_block(e, sep)) else { continue };
                t
            }
        };
        if new.as_bytes() != old {
            out.push(Rewrite { path, old, new: new.into_bytes() });
        }
    }
    out
}

/// The profile a followed file holds, when it still looks like cuenv wrote it: a kernelspec
/// of this `home` (`metadata.cuenv`), an export's header line, a `json` export's `profile`
/// or a `conda-env-vars` object's `CUENV_PROFILE`.
fn owner(text: &str, kind: Option<Format>, home: &str) -> Option<String> {
    let json = || serde_json::from_str::<serde_json::Value>(text).ok();
    match kind {
        None => {
            let v = json()?;
            let c = &v["metadata"]["cuenv"];
            (c["home"].as_str() == Some(home)).then(|| c["profile"].as_str().map(str::to_string))?
        }
        Some(Format::Json) => json()?["profile"].as_str().map(str::to_string),
        Some(Format::CondaEnvVars) => json()?[crate::home::settings::PROFILE_VAR].as_str().map(str::to_string),
        Some(_) => {
            let line = text.lines().find(|l| l.contains("(generated by `cuenv export`"))?;
            let rest = line.split_once(" cuenv profile ")?.1;
            rest.split_once(" (generated by `cuenv export`").map(|(p, _)| p.to_string())
        }
    }
}

/// The folders of the followed files (for the removal of half-written files a kill left).
pub fn folders(layout: &Layout) -> Vec<PathBuf> {
    read_record(layout).files.iter().filter_map(|f| f.path.parent().map(Path::to_path_buf)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_reads_each_shape() {
        assert_eq!(owner("# cuenv profile tf (generated by `cuenv export`; x)\nA=b\n", Some(Format::Dotenv), "/h").as_deref(), Some("tf"));
        assert_eq!(owner("#%Module1.0\n# cuenv profile a b (generated by `cuenv export`; x)\n", Some(Format::Tcl), "/h").as_deref(), Some("a b"));
        assert_eq!(owner("A=b\n", Some(Format::Dotenv), "/h"), None);
        assert_eq!(owner(r#"{"profile": "tf", "set": {}}"#, Some(Format::Json), "/h").as_deref(), Some("tf"));
        assert_eq!(owner(r#"{"CUENV_PROFILE": "tf"}"#, Some(Format::CondaEnvVars), "/h").as_deref(), Some("tf"));
        let k = r#"{"env": {}, "metadata": {"cuenv": {"profile": "tf", "home": "/h"}}}"#;
        assert_eq!(owner(k, None, "/h").as_deref(), Some("tf"));
        assert_eq!(owner(k, None, "/other"), None);
    }

    #[test]
    fn a_refreshed_kernelspec_keeps_what_cuenv_does_not_own() {
        let text = r#"{"argv": ["py"], "env": {"PATH": "/old/bin:${PATH}", "GONE": "/old", "MINE": "1"}, "metadata": {}}"#;
        let old: serde_json::Map<_, _> = [("PATH".to_string(), "/old/bin:${PATH}".into()), ("GONE".to_string(), "/old".into())].into_iter().collect();
        let new: serde_json::Map<_, _> = [("PATH".to_string(), "/new/bin:${PATH}".into())].into_iter().collect();
        let v: serde_json::Value = serde_json::from_str(&crate::env::kernel::refreshed(text, Some(&old), &new).unwrap()).unwrap();
        assert_eq!(v["env"], serde_json::json!({"PATH": "/new/bin:${PATH}", "MINE": "1"}));
        assert_eq!(v["argv"][0], "py");
    }
}
