//! The CUDA runtime toolkit roots of profiles whose `cuda` has `from = "pypi"` (or a folder of
//! wheels), built from the wheels ([`crate::toolkit::wheel`]): the CUDA major a profile's cuDNN
//! is for, the pinned runtime wheels, and the roots built ahead of need on a background thread.

use std::path::Path;

use super::{Cx, Error, plain_version};
use crate::cudnn::platform::Platform;
use crate::cudnn::version::Version;
use crate::fetch::Endpoints;
use crate::profile::{Profile, ProfileFile, Source};

/// The pinned CUDA runtime roots [`ensure_reachable`](super::ensure_reachable) builds on one background thread, in
/// profile order, while the profiles' cuDNN archives import (a root's copy is bounded by
/// one large library, e.g. cuBLAS's 575 MB `libcublasLt`, which one core inflates alone).
/// Each result goes to the first profile that asks for its wheels; any other runtime is
/// made only once the thread is done, so two roots are never staged at once.
pub(super) struct RuntimesAhead {
    state: std::sync::Mutex<AheadState>,
    changed: std::sync::Condvar,
}

type RuntimeResult = Result<(std::path::PathBuf, bool), crate::toolkit::wheel::Error>;

struct AheadState {
    /// The pinned wheels of each root, its endpoints, and its result once built (`None`
    /// inside the `Some` once taken).
    slots: Vec<(Vec<crate::toolkit::wheel::WheelRecord>, Endpoints, Option<Option<RuntimeResult>>)>,
    done: bool,
    cancelled: bool,
}

impl RuntimesAhead {
    pub(super) fn new(planned: Vec<(Vec<crate::toolkit::wheel::WheelRecord>, Endpoints)>) -> RuntimesAhead {
        let slots = planned.into_iter().map(|(w, ep)| (w, ep, None)).collect();
        RuntimesAhead { state: std::sync::Mutex::new(AheadState { slots, done: false, cancelled: false }), changed: std::sync::Condvar::new() }
    }

    /// Builds each planned root in turn (stops early once cancelled).
    pub(super) fn run(&self, cx: &Cx, platform: Platform) {
        // Marks the thread done however it ends, so that a panic here never leaves
        // `take` waiting forever (the scope then re-raises the panic).
        struct Done<'a>(&'a RuntimesAhead);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).done = true;
                self.0.changed.notify_all();
            }
        }
        let _done = Done(self);
        let n = self.state.lock().unwrap().slots.len();
        for i in 0..n {
            let (pinned, ep) = {
                let st = self.state.lock().unwrap();
                if st.cancelled {
                    break;
                }
                (st.slots[i].0.clone(), st.slots[i].1.clone())
            };
            let r = crate::toolkit::wheel::ensure_pinned(cx.layout, cx.writer, &ep, &pinned, platform, cx.prefetch, cx.progress);
            self.state.lock().unwrap().slots[i].2 = Some(Some(r));
            self.changed.notify_all();
        }
    }

    /// The result of the root of exactly these `pinned` wheels, waiting while it is built;
    /// `None` when it was not planned or was taken already (the caller then waits for
    /// [`RuntimesAhead::wait_done`] and makes or finds it itself).
    fn take(&self, pinned: &[crate::toolkit::wheel::WheelRecord]) -> Option<RuntimeResult> {
        let same = |a: &[crate::toolkit::wheel::WheelRecord]| crate::toolkit::wheel::WheelRecord::same_wheels(a, pinned);
        let mut st = self.state.lock().unwrap();
        let i = st.slots.iter().position(|(w, _, _)| same(w))?;
        loop {
            if let Some(r) = &mut st.slots[i].2 {
                return r.take();
            }
            if st.done {
                return None;
            }
            st = self.changed.wait(st).unwrap();
        }
    }

    /// Waits until the thread has built (or given up on) every planned root.
    fn wait_done(&self) {
        let mut st = self.state.lock().unwrap();
        while !st.done {
            st = self.changed.wait(st).unwrap();
        }
    }

    /// Starts no further root.
    pub(super) fn cancel(&self) {
        self.state.lock().unwrap().cancelled = true;
    }
}

/// The CUDA major a profile's cuDNN must be built for, found without fetching anything: the
/// major of `cuda`'s version when it has `from = "pypi"`, else of the newest installed or
/// wheel toolkit root that matches it. `None` when no toolkit matches (resolution reports that).
pub(super) fn cuda_major(cx: &Cx, file: &ProfileFile, p: &Profile, installed: &[Version], platform: Platform) -> Result<Option<u64>, Error> {
    if p.cuda.from.is_some() {
        return Ok(Some(plain_version(file, &p.cuda, "cuda")?.major()));
    }
    // Runtime roots are listed afresh: an earlier profile may have just made one. A file
    // that lists [toolkits] chooses only among them (resolve::Pool).
    let wheels = if file.toolkits.is_empty() { crate::toolkit::wheel::list(cx.layout) } else { Vec::new() };
    let best = installed
        .iter()
        .cloned()
        .chain(wheels.into_iter().filter(|(_, m)| m.platform == platform).map(|(_, m)| m.version))
        .filter(|v| p.cuda.version.matches(v))
        .max();
    Ok(best.map(|v| v.major()))
}

/// Gets the wheel toolkit root of a profile whose `cuda` has `from = "pypi"` (the wheels
/// `pin` names while they still satisfy `cuda`, else the newest of its version); nothing
/// for a profile on an installed toolkit.
pub(super) fn ensure_runtime(
    cx: &Cx,
    file: &ProfileFile,
    p: &Profile,
    lines: &mut Vec<String>,
    pin: Option<&crate::profile::lockfile::Pin>,
    platform: Platform,
) -> Result<(), Error> {
    if p.cuda.from.is_none() {
        return Ok(());
    }
    let v = plain_version(file, &p.cuda, "cuda")?;
    let pinned = pinned_wheels(pin);
    let pin_fits = pin_fits(&pinned, &v);
    let ep = runtime_endpoints(file, p, cx.ep);
    let ahead = if pin_fits { cx.runtimes.and_then(|r| r.take(&pinned)) } else { None };
    let (root, made) = match ahead {
        Some(r) => r?,
        None => {
            if let Some(r) = cx.runtimes {
                r.wait_done();
            }
            if pin_fits {
                crate::toolkit::wheel::ensure_pinned(cx.layout, cx.writer, &ep, &pinned, platform, cx.prefetch, cx.progress)?
            } else {
                crate::toolkit::wheel::ensure(cx.layout, cx.writer, &ep, &v, platform, cx.prefetch, cx.progress)?
            }
        }
    };
    if made {
        let from = wheel_folder(file, p).map(|d| d.display().to_string()).unwrap_or_else(|| "PyPI".into());
        lines.push(format!("+ CUDA runtime {} from {from} at {}", v, root.display()));
    }
    Ok(())
}

/// The CUDA runtime wheels `pin` names (`cuda-wheels` of `lab.lock`), without URLs.
pub(super) fn pinned_wheels(pin: Option<&crate::profile::lockfile::Pin>) -> Vec<crate::toolkit::wheel::WheelRecord> {
    pin.map(|pin| {
        pin.cuda_wheels
            .iter()
            .map(|(project, version, sha256)| crate::toolkit::wheel::WheelRecord {
                project: project.clone(),
                version: version.clone(),
                url: String::new(),
                sha256: sha256.clone(),
            })
            .collect()
    })
    .unwrap_or_default()
}

/// A pin is kept while the runtime it names still satisfies `cuda` (version `v`).
pub(super) fn pin_fits(pinned: &[crate::toolkit::wheel::WheelRecord], v: &Version) -> bool {
    pinned.first().and_then(|w| w.version.parse::<Version>().ok()).is_some_and(|pv| pv.starts_with(v))
}

/// The folder of wheels a profile's `cuda = { ..., from = "<folder>" }` names, relative to
/// the profile file; `None` for `from = "pypi"` or no `from`.
pub(super) fn wheel_folder(file: &ProfileFile, p: &Profile) -> Option<std::path::PathBuf> {
    match &p.cuda.from.as_ref()?.value {
        Source::Location(dir) => Some(file.path.parent().unwrap_or(Path::new(".")).join(dir)),
        _ => None,
    }
}

/// The endpoints for a profile's CUDA runtime: `ep`, or, for a folder of wheels, that folder
/// alone (find-links, never the network).
pub(super) fn runtime_endpoints(file: &ProfileFile, p: &Profile, ep: &Endpoints) -> Endpoints {
    match wheel_folder(file, p) {
        Some(dir) => Endpoints { find_links: Some(dir), offline: true, ..ep.clone() },
        None => ep.clone(),
    }
}
