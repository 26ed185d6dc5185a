//! The state of the home for `cuenv status`: the current generation, the active profile,
//! an interrupted switch, and the health of every view link and conda shim (a shim is `ok`
//! only while its bytes hash to what the manifest recorded). Reads only.
//!
//! A link-free generation has no view links: the four folders its shims and activations
//! name (toolkit root, store entry, the entry's library folder, the runtime folder) are
//! reported instead, `ok (direct)` while each is a folder. Its shims name those folders, so a
//! shim whose bytes are the current generation's points where the generation says.
//!
//! A shim is `stray` when it carries cuenv's marker but is not the current generation's: a
//! `cuenv-*` file in `etc/conda/{activate,deactivate}.d` of one of the current generation's
//! conda envs that the manifest does not name, or a file it names that holds another
//! generation's bytes (what a sync cut short leaves). A stray shim makes the home unhealthy.

use std::path::PathBuf;

use serde::Serialize;

use crate::env::view::VIEW_LINKS;
use crate::generation;
use crate::generation::profile_check;
use crate::home::layout::Layout;
use crate::link;
use crate::shim;

/// One link's or shim's state. Said (and in JSON: `state`) as its text, given with each
/// variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// `ok -> <target>`: a view link to the target the manifest gives.
    Linked(PathBuf),
    /// `ok (copy)`: a copied cuDNN entry of an old `copy` generation.
    Copy,
    /// `ok (direct)`: a real folder a link-free generation names.
    Direct,
    /// `ok`: a shim holding the bytes the manifest recorded.
    Ok,
    /// `missing`: nothing there.
    Missing,
    /// `dangling`: a view link whose target is gone.
    Dangling,
    /// `retargeted -> <target>`: a view link to another place than the manifest's.
    Retargeted(PathBuf),
    /// `foreign`: a file without cuenv's marker at a shim's path.
    Foreign,
    /// `modified`: a shim of cuenv's whose bytes differ from the recorded ones.
    Modified,
    /// `stray`: a shim of cuenv's that is not the current generation's.
    Stray,
}

impl State {
    /// Whether the state is one of the `ok` ones.
    pub fn ok(&self) -> bool {
        matches!(self, State::Linked(_) | State::Copy | State::Direct | State::Ok)
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = match self {
            State::Linked(t) => return f.pad(&format!("ok -> {}", t.display())),
            State::Retargeted(t) => return f.pad(&format!("retargeted -> {}", t.display())),
            State::Copy => "ok (copy)",
            State::Direct => "ok (direct)",
            State::Ok => "ok",
            State::Missing => "missing",
            State::Dangling => "dangling",
            State::Foreign => "foreign",
            State::Modified => "modified",
            State::Stray => "stray",
        };
        f.pad(text)
    }
}

impl Serialize for State {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One link's or shim's health.
#[derive(Debug, Serialize)]
pub struct Health {
    /// The link or shim (lossy in JSON: a stray shim's name may not be UTF-8).
    #[serde(serialize_with = "crate::sys::paths::ser_lossy")]
    pub path: PathBuf,
    /// Its state.
    pub state: State,
}

impl Health {
    /// Whether the state is one of the `ok` ones.
    pub fn ok(&self) -> bool {
        self.state.ok()
    }
}

/// One profile of the current generation.
#[derive(Debug, Serialize)]
pub struct ProfileStatus {
    /// The profile.
    pub name: String,
    /// Whether `<home>/active` points at it.
    pub active: bool,
    /// `version (entry folder)`.
    pub cudnn: String,
    /// `version (root)`.
    pub toolkit: String,
    /// The last check's verdict (`pass`, `fail`, `no-gpu`) and reasons, if it was checked.
    pub check: Option<profile_check::ProfileCheck>,
    /// The view's links.
    pub links: Vec<Health>,
    /// The profile's conda shims, then the stray cuenv shims in its conda env (`stray`).
    pub shims: Vec<Health>,
    /// Set when the toolkit root's runtime folder no longer holds a CUDA runtime of the
    /// generation's CUDA major ([`runtime_lost`]): what is missing and what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_missing: Option<String>,
}

/// Whether `folder` holds a CUDA runtime of CUDA `major`, by file name only (no library is
/// read or loaded): `libcudart.so.<major>[.*]` on Linux, `cudart64_<major>*.dll` on Windows
/// (CUDA 11's is `cudart64_110.dll`; docs/facts.md §1). `None` when it does; else the sentence
/// `status` prints: the folder, the runtime it lacks and the fix (re-apply, which picks the
/// toolkit root again, or point `[toolkits]` at a root that has it).
pub fn runtime_lost(folder: &std::path::Path, major: u64, windows: bool, toolkit_version: &str) -> Option<String> {
    let (prefix, want) = if windows {
        (format!("cudart64_{major}"), format!("cudart64_{major}*.dll"))
    } else {
        (format!("libcudart.so.{major}"), format!("libcudart.so.{major}"))
    };
    let has = std::fs::read_dir(folder).into_iter().flatten().flatten().any(|e| {
        let n = e.file_name().to_string_lossy().to_lowercase();
        n.starts_with(&prefix) && (!windows || n.ends_with(".dll")) && (windows || n.len() == prefix.len() || n.as_bytes()[prefix.len()] == b'.')
    });
    (!has).then(|| {
        format!(
            "{} no longer holds {want}, the CUDA {major} runtime this generation recorded for CUDA {toolkit_version} (the toolkit root was changed or upgraded in place): run `cuenv apply` again so it picks a toolkit root that has one, or fix the root",
            folder.display()
        )
    })
}

/// The whole report (JSON keys in the order `status --json` always printed them).
#[derive(Debug, Serialize)]
pub struct Status {
    /// The active profile's name, if any.
    pub active: Option<String>,
    /// `<home>/active` names a profile the current generation lacks.
    pub active_dangling: bool,
    /// The current generation.
    pub generation: Option<u64>,
    /// Every link and shim is ok and `active` is not dangling.
    pub healthy: bool,
    /// A switch was interrupted (the next writing command finishes it).
    pub interrupted_switch: bool,
    /// The current generation's profiles.
    pub profiles: Vec<ProfileStatus>,
    /// The profile file the current generation was built from (not in the JSON).
    #[serde(skip)]
    pub source: Option<PathBuf>,
    /// The shim paths the current generation's manifest names (not in the JSON).
    #[serde(skip)]
    pub listed_shims: Vec<PathBuf>,
}

/// The generations other than the current one that have profile `name`, newest first.
pub fn generations_with(layout: &Layout, name: &str) -> Vec<u64> {
    let cur = generation::current(layout);
    let mut v: Vec<u64> = generation::list(layout)
        .into_iter()
        .filter(|n| Some(*n) != cur)
        .filter(|n| generation::read(layout, *n).is_ok_and(|m| m.profile(name).is_ok()))
        .collect();
    v.reverse();
    v
}

/// The active profile's name, and whether the current generation still has it (the link
/// or pointer file `<home>/active`: [`crate::generation::active::name`], [`crate::generation::active::resolves`]).
pub fn active_profile(layout: &Layout) -> Option<(String, bool)> {
    let name = crate::generation::active::name(layout)?;
    Some((name, crate::generation::active::resolves(layout)))
}

/// A shim's state from its bytes (`None`: unreadable) and the SHA-256 the manifest recorded.
pub fn shim_state(bytes: Option<&[u8]>, sha256: &crate::sys::sha256::Sha256) -> State {
    match bytes {
        None => State::Missing,
        Some(b) if !shim::is_ours(&String::from_utf8_lossy(b)) => State::Foreign,
        Some(b) if generation::shim_sha256(b) != *sha256 => State::Modified,
        Some(_) => State::Ok,
    }
}

/// The SHA-256 of every shim of the other generations that differs from all of `m`'s.
fn other_shim_hashes(layout: &Layout, m: &generation::Manifest) -> std::collections::HashSet<crate::sys::sha256::Sha256> {
    let mut h = generation::other_generations_shim_hashes(layout, m);
    h.retain(|sha| !m.shims.iter().any(|s| &s.sha256 == sha));
    h
}

/// The `cuenv-*` files with cuenv's marker in `env`'s `etc/conda/{activate,deactivate}.d`
/// that `ours` (the current generation's shims) does not name, sorted.
pub fn stray_shims(env: &std::path::Path, ours: &[generation::ShimRecord]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for d in ["activate.d", "deactivate.d"] {
        for e in std::fs::read_dir(env.join("etc").join("conda").join(d)).into_iter().flatten().flatten() {
            let path = e.path();
            if !e.file_name().to_string_lossy().starts_with("cuenv-") || ours.iter().any(|s| crate::sys::paths::same_place(&s.path, &path)) {
                continue;
            }
            if std::fs::read(&path).is_ok_and(|b| shim::is_ours(&String::from_utf8_lossy(&b))) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// A view link's state: `missing` (no link there), `retargeted -> <target>` (a link to
/// another place than `want`, what the manifest gives), `dangling` (its target is gone),
/// `ok -> <target>`; a copied cuDNN entry is `ok (copy)` or `missing`.
fn link_state(at: &std::path::Path, want: &std::path::Path, copied: bool) -> State {
    if copied {
        return if at.is_dir() { State::Copy } else { State::Missing };
    }
    match link::read(at) {
        Err(_) => State::Missing,
        Ok(t) if !crate::sys::paths::same_path(&t, want) => State::Retargeted(t),
        Ok(_) if !at.exists() => State::Dangling,
        Ok(t) => State::Linked(t),
    }
}

/// Reads the state of `layout`'s home.
pub fn status(layout: &Layout) -> Result<Status, generation::Error> {
    let cur = generation::current(layout);
    let active_state = active_profile(layout);
    let active = active_state.as_ref().map(|(n, _)| n.clone());
    let active_dangling = active_state.as_ref().is_some_and(|(_, ok)| !ok);
    let interrupted_switch = layout.journal().exists();
    let mut profiles = Vec::new();
    let (mut source, mut listed_shims) = (None, Vec::new());
    if let Some(n) = cur {
        let m = generation::read(layout, n)?;
        source = Some(m.source.clone());
        listed_shims = m.shims.iter().map(|s| s.path.clone()).collect();
        let checks = profile_check::load(layout, n);
        let other_generations = other_shim_hashes(layout, &m);
        let mut scanned: Vec<PathBuf> = Vec::new();
        for p in &m.profiles {
            let view = layout.profiles_dir().join(&p.name);
            let links = if m.link_mode.is_link_free() {
                let f = p.real_folders();
                [f.cuda, f.cudnn, f.cudnn_lib, f.cuda_lib]
                    .into_iter()
                    .map(|at| {
                        let state = if at.is_dir() { State::Direct } else { State::Missing };
                        Health { path: at, state }
                    })
                    .collect()
            } else {
                let f = p.real_folders();
                VIEW_LINKS
                    .iter()
                    .map(|name| {
                        let at = view.join(name);
                        let want = match *name {
                            "cuda" => &f.cuda,
                            "cudnn" => &f.cudnn,
                            "cudnn-lib" => &f.cudnn_lib,
                            _ => &f.cuda_lib,
                        };
                        let state = link_state(&at, want, p.copied && *name == "cudnn");
                        Health { path: at, state }
                    })
                    .collect()
            };
            let mut shims: Vec<Health> = m
                .shims
                .iter()
                .filter(|s| s.profile == p.name)
                .map(|s| {
                    let bytes = std::fs::read(&s.path).ok();
                    let state = match shim_state(bytes.as_deref(), &s.sha256) {
                        State::Modified if bytes.as_deref().is_some_and(|b| other_generations.contains(&generation::shim_sha256(b))) => State::Stray,
                        state => state,
                    };
                    Health { path: s.path.clone(), state }
                })
                .collect();
            // The env's stray shims go with the first profile that names the env.
            if let Some(env) = &p.conda_env
                && !scanned.iter().any(|e| crate::sys::paths::same_place(e, env))
            {
                scanned.push(env.clone());
                shims.extend(stray_shims(env, &m.shims).into_iter().map(|path| Health { path, state: State::Stray }));
            }
            profiles.push(ProfileStatus {
                name: p.name.clone(),
                active: active.as_deref() == Some(&p.name),
                cudnn: format!("{} ({})", p.cudnn_version, p.entry_dir.display()),
                toolkit: format!("{} ({})", p.toolkit_version, p.toolkit_root.display()),
                check: checks.as_ref().and_then(|c| c.profiles.iter().find(|c| c.profile == p.name)).cloned(),
                runtime_missing: runtime_lost(&p.cuda_lib, p.cuda_major, cfg!(windows), &p.toolkit_version),
                links,
                shims,
            });
        }
    }
    let healthy = !active_dangling
        && profiles.iter().all(|p| p.runtime_missing.is_none() && p.links.iter().all(Health::ok) && p.shims.iter().all(|h| h.state == State::Ok));
    Ok(Status { active, active_dangling, generation: cur, healthy, interrupted_switch, profiles, source, listed_shims })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shim_is_ok_only_with_its_marker_and_its_recorded_hash() {
        let ours = shim::encode(
            shim::Shell::Posix,
            &shim::render_activate(shim::Shell::Posix, &crate::env::view::activation(&Layout::new("/h"), "p", crate::cudnn::platform::Platform::LinuxX86_64)),
        );
        let sha = crate::sys::sha256::Sha256::of(&ours);
        assert_eq!(shim_state(Some(&ours), &sha), State::Ok);
        assert_eq!(shim_state(Some(&ours), &"0".repeat(64).parse().unwrap()), State::Modified);
        assert_eq!(shim_state(Some(b"echo hi\n"), &sha), State::Foreign);
        assert_eq!(shim_state(None, &sha), State::Missing);
    }

    /// Each state is said, and written in JSON, as its text; `status` pads it.
    #[test]
    fn states_are_said_as_their_text() {
        let t = PathBuf::from("/t");
        let all = [
            State::Linked(t.clone()),
            State::Copy,
            State::Direct,
            State::Ok,
            State::Missing,
            State::Dangling,
            State::Retargeted(t.clone()),
            State::Foreign,
            State::Modified,
            State::Stray,
        ];
        let said: Vec<String> = all.iter().map(State::to_string).collect();
        let want = ["ok -> /t", "ok (copy)", "ok (direct)", "ok", "missing", "dangling", "retargeted -> /t", "foreign", "modified", "stray"];
        assert_eq!(said, want);
        assert_eq!(all.iter().filter(|s| s.ok()).count(), 4);
        assert_eq!(serde_json::to_string(&State::Retargeted(t)).unwrap(), "\"retargeted -> /t\"");
        assert_eq!(format!("{:<9}|", State::Missing), "missing  |");
    }

    #[test]
    fn an_empty_home_is_healthy_with_no_generation() {
        let dir = tempfile::tempdir().unwrap();
        let s = status(&Layout::new(dir.path())).unwrap();
        assert!(s.healthy && s.generation.is_none() && s.active.is_none() && !s.interrupted_switch && s.profiles.is_empty());
    }
}
