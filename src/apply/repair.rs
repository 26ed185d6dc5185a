//! Repair, on `apply`'s "no changes" path: when the profile file already matches the current
//! generation, the links and shims that generation's manifest records are put back where
//! `cuenv status` finds them damaged. The generation's content does not
//! change: a view link is made again (or pointed back) at the target the manifest gives, a
//! shim is written again from the bytes stored under `generations/<N>/shims/`.
//!
//! Only cuenv's own records are touched: the links under `generations/<N>/views/`, and the
//! shim files the manifest names, and of those only files that are missing or carry cuenv's
//! marker ([`crate::shim::is_ours`]). A file without the marker at a shim's path, something
//! that is not a link where a view link belongs, a target that is gone (a deleted toolkit
//! root or store entry) and a copied cuDNN entry of an old `copy` generation are left as they
//! are and reported ([`Unrepaired`]). Stray cuenv shims the manifest does not name are left to
//! `status`'s hint.
//!
//! Each step is atomic on its own (a shim by [`crate::sys::fsutil::write_atomic`], a link by one
//! create or one retarget), so a kill between steps leaves a home no worse than before, and
//! the next `apply` finishes the rest.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::plan::view_target;
use crate::env::view::VIEW_LINKS;
use crate::generation::{self, Manifest, ViewMode};
use crate::home::layout::Layout;
use crate::link::{self, LinkKind};
use crate::shim;

/// What was put back: a view link or a conda shim (`link`, `shim` in JSON and in messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RepairKind {
    /// A view link under `generations/<N>/views/`.
    Link,
    /// A conda shim the manifest names.
    Shim,
}

impl RepairKind {
    /// `link` or `shim`.
    pub fn as_str(self) -> &'static str {
        match self {
            RepairKind::Link => "link",
            RepairKind::Shim => "shim",
        }
    }
}

/// What was wrong with a link or shim before it was put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Was {
    /// The file or link was not there.
    Deleted,
    /// A shim's bytes differed from the generation's (it carried cuenv's marker).
    Modified,
    /// A shim held another generation's bytes (a sync cut short).
    OtherGeneration,
    /// A view link pointed somewhere else than the manifest says.
    Retargeted,
}

/// One link or shim put back.
#[derive(Debug, Clone, Serialize)]
pub struct Repaired {
    /// A link or a shim.
    pub kind: RepairKind,
    /// Where it lives.
    pub path: PathBuf,
    /// What it was.
    pub was: Was,
}

impl Repaired {
    /// `shim <path> (was deleted)`: what is (or would be) put back, and what it was.
    pub fn describe(&self) -> String {
        let was = match self.was {
            Was::Deleted => "was deleted",
            Was::Modified => "was modified; it carries cuenv's marker, so it is cuenv's to replace",
            Was::OtherGeneration => "held another generation's shim; it carries cuenv's marker, so it is cuenv's to replace",
            Was::Retargeted => "pointed elsewhere",
        };
        format!("{} {} ({was})", self.kind.as_str(), self.path.display())
    }
}

impl std::fmt::Display for Repaired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "repaired: {}", self.describe())
    }
}

/// One link or shim that is damaged but not cuenv's to put back, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Unrepaired {
    /// Where it lives.
    pub path: PathBuf,
    /// Why it was left (a sentence fragment: `does not carry cuenv's marker ...`).
    pub why: String,
}

/// `apply` with nothing to change found links or shims damaged that are not cuenv's to put
/// back (`unrepaired`, each with why); `file` is the profile file applied. Exit code 3.
#[derive(Debug, Clone, thiserror::Error)]
#[error("not repaired: {}", unrepaired.iter().map(|u| format!("{} {}", u.path.display(), u.why)).collect::<Vec<_>>().join("; "))]
pub struct NotRepaired {
    /// What was left as it is.
    pub unrepaired: Vec<Unrepaired>,
    /// The profile file applied.
    pub file: PathBuf,
}

impl crate::error::Diagnose for NotRepaired {
    fn hint(&self) -> Option<String> {
        Some(format!("after that, `cuenv apply {}` repairs the rest; `cuenv status` shows what is still damaged", self.file.display()))
    }
    fn exit_code(&self) -> crate::error::ExitCode {
        crate::error::ExitCode::Damaged
    }
}

/// What [`repair`] did: the links and shims put back, and those left.
#[derive(Debug, Default, Serialize)]
pub struct Repair {
    /// Put back, in manifest order (view links first, then shims).
    pub repaired: Vec<Repaired>,
    /// Damaged and left as they are.
    pub unrepaired: Vec<Unrepaired>,
}

impl Repair {
    /// Nothing was found damaged.
    pub fn is_empty(&self) -> bool {
        self.repaired.is_empty() && self.unrepaired.is_empty()
    }
}

/// The link kind a generation of `mode` made its view links with (`None`: link-free, no views).
fn kind_of(mode: ViewMode) -> Option<LinkKind> {
    match mode {
        ViewMode::Symlink => Some(LinkKind::Symlink),
        ViewMode::Junction => Some(LinkKind::Junction),
        ViewMode::Copy => Some(LinkKind::native()),
        ViewMode::LinkFree => None,
    }
}

/// Puts back the view links and shims of generation `m` (the current one) that are missing
/// or altered, from what its manifest and stored shims record; see the module docs for what
/// is left. The caller holds the writer lock.
///
/// Errors: an I/O step that failed (a read-only `activate.d`, a full disk); what was put back
/// before it stays put back.
pub fn repair(layout: &Layout, m: &Manifest) -> Result<Repair, generation::Error> {
    fix(layout, m, true)
}

/// What [`repair`] would put back and leave, touching nothing (`plan`). Errors: a stored
/// shim that cannot be read, a shim path that cannot be read (other than missing).
pub fn damage(layout: &Layout, m: &Manifest) -> Result<Repair, generation::Error> {
    fix(layout, m, false)
}

/// [`repair`] when `write`, else [`damage`].
fn fix(layout: &Layout, m: &Manifest, write: bool) -> Result<Repair, generation::Error> {
    let mut out = Repair::default();
    if let Some(kind) = kind_of(m.link_mode) {
        let views = layout.generation_dir(m.number).join("views");
        for v in &m.profiles {
            let dir = views.join(&v.name);
            for name in VIEW_LINKS {
                let at = dir.join(name);
                if v.copied && name == "cudnn" {
                    if !at.is_dir() {
                        out.unrepaired.push(Unrepaired {
                            path: at,
                            why: "is the copied cuDNN entry of a `copy` generation, which cuenv no longer makes: apply with `link-mode = \"none\"` (or roll forward to a newer generation)".into(),
                        });
                    }
                    continue;
                }
                repair_link(kind, &at, &view_target(v, name), write, &mut out)?;
            }
        }
    }
    let stored = layout.generation_dir(m.number).join("shims");
    let others = generation::other_generations_shim_hashes(layout, m);
    for s in &m.shims {
        // An env's shim folder is not the home's: written only while it is the folder it is now.
        s.path.parent().map(crate::sys::fsutil::pin_folder);
        let want_path = stored.join(&s.stored);
        let want = fs::read(&want_path).map_err(|e| io_err("read the stored shim", &want_path, e))?;
        let was = match fs::read(&s.path) {
            Ok(have) if have == want => continue,
            Ok(have) if !shim::is_ours(&String::from_utf8_lossy(&have)) => {
                out.unrepaired.push(Unrepaired {
                    path: s.path.clone(),
                    why: format!("does not carry cuenv's marker (`{}`), so it is not cuenv's to replace: move it away, then apply again", shim::MARKER),
                });
                continue;
            }
            Ok(have) if others.contains(&generation::shim_sha256(&have)) => Was::OtherGeneration,
            Ok(_) => Was::Modified,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Was::Deleted,
            Err(e) => return Err(io_err("read the shim", &s.path, e)),
        };
        if write {
            if let Some(parent) = s.path.parent() {
                fs::create_dir_all(parent).map_err(|e| io_err("create the folder", parent, e))?;
                crate::sys::fsutil::pin_folder(parent);
            }
            crate::sys::fsutil::write_atomic(&s.path, &want).map_err(|e| io_err("write the shim", &s.path, e))?;
        }
        out.repaired.push(Repaired { kind: RepairKind::Shim, path: s.path.clone(), was });
    }
    Ok(out)
}

/// Puts the view link `at` back to `target` when it is missing or points elsewhere (only
/// says so unless `write`).
fn repair_link(kind: LinkKind, at: &Path, target: &Path, write: bool, out: &mut Repair) -> Result<(), generation::Error> {
    match link::read(at) {
        Ok(t) if crate::sys::paths::same_path(&t, target) => {
            if !at.exists() {
                out.unrepaired.push(Unrepaired {
                    path: at.to_path_buf(),
                    why: format!("points at {}, which is gone: restore it (or apply a file that no longer needs it)", target.display()),
                });
            }
        }
        Ok(_) => {
            if write {
                let scratch = at.with_file_name(format!(".{}.new", at.file_name().unwrap_or_default().to_string_lossy()));
                link::retarget(kind, at, target, &scratch)?;
            }
            out.repaired.push(Repaired { kind: RepairKind::Link, path: at.to_path_buf(), was: Was::Retargeted });
        }
        Err(_) if fs::symlink_metadata(at).is_ok() => out
            .unrepaired
            .push(Unrepaired { path: at.to_path_buf(), why: "is not a link, so it is not cuenv's to replace: move it away, then apply again".into() }),
        Err(_) => {
            if write {
                if let Some(parent) = at.parent() {
                    fs::create_dir_all(parent).map_err(|e| io_err("create the folder", parent, e))?;
                }
                link::create(kind, target, at)?;
            }
            out.repaired.push(Repaired { kind: RepairKind::Link, path: at.to_path_buf(), was: Was::Deleted });
        }
    }
    Ok(())
}

fn io_err(doing: &'static str, path: &Path, source: io::Error) -> generation::Error {
    generation::Error::Io { doing, path: path.to_path_buf(), source }
}
