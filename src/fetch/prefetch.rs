//! Downloads (and imports) started before they are needed ([`Prefetch`]).

use super::{Artifact, Client, Download, Error, FetchedFrom, Unpacked, Wheel, stream};
use crate::home::layout::Layout;
use crate::home::writer_lock::WriterLock;
use crate::store::Added;
use crate::sys::progress::Progress;

/// Downloads started before they are needed, so that an archive is imported while the next
/// ones download: [`Prefetch::run`] (on [`Prefetch::threads`] threads) imports the cuDNN archives
/// and fetches the other artifacts, cuDNN archives first, each kind in the order given;
/// [`Prefetch::take`] hands one over to the code that needs it, waiting while it downloads,
/// and [`Prefetch::cancel`] stops the rest. Where the server allows, no download is written
/// whole: a cuDNN wheel given with its CUDA major is imported into the store while it
/// downloads ([`crate::store::Store::add_streamed`]; the taker gets the entry), and any other
/// wheel (a CUDA runtime wheel) is extracted into a download folder while it downloads
/// ([`Unpacked`]).
///
/// Only an optimisation: an artifact it does not hold, or one not started yet when asked
/// for, is downloaded by the caller as before, and each download is verified as
/// [`super::download`] verifies it. Downloads never taken are deleted when the `Prefetch` drops;
/// one that fails is reported only to the caller that takes it (a download nobody needs
/// fails nothing). At most one file per artifact (the same SHA-256 is fetched once).
#[derive(Debug)]
pub struct Prefetch {
    /// Each artifact, with the CUDA major to import it into the store as (a cuDNN archive).
    artifacts: Vec<(Artifact, Option<u64>)>,
    slots: std::sync::Mutex<Vec<Slot>>,
    changed: std::sync::Condvar,
    cancelled: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

#[derive(Debug)]
enum Slot {
    Queued,
    Running,
    Done(Result<Fetched, Error>),
    Taken,
}

/// What [`Prefetch::take`] hands over.
#[derive(Debug)]
pub enum Fetched {
    /// The file, downloaded whole and verified.
    Download(Download),
    /// A wheel other than cuDNN, extracted while it downloaded and verified.
    Unpacked(Unpacked),
    /// A wheel imported into the store while it downloaded (by a prefetch, as `apply` imports:
    /// not by hand).
    Imported(Box<(Added, FetchedFrom)>),
}

impl Prefetch {
    /// A prefetch of `artifacts` (later ones of an already listed SHA-256 are dropped), each
    /// with the CUDA major of the cuDNN it is (`None` for other files: CUDA runtime wheels);
    /// nothing starts before [`Prefetch::run`].
    ///
    /// The cuDNN archives are started first: each is imported while it downloads, bound by one
    /// core inflating it, so they all start at once and share the cores to the end, instead of
    /// the last one starting late and running alone (on 2 cores, the lab's third cuDNN wheel
    /// started 2.5 s in and ran 1.45 s alone after the others, 2026-12-04).
    pub fn new(artifacts: Vec<(Artifact, Option<u64>)>) -> Prefetch {
        let mut unique: Vec<(Artifact, Option<u64>)> = Vec::new();
        for a in artifacts {
            if !unique.iter().any(|u| u.0.sha256 == a.0.sha256) {
                unique.push(a);
            }
        }
        unique.sort_by_key(|(_, cuda)| cuda.is_none());
        let slots = unique.iter().map(|_| Slot::Queued).collect();
        Prefetch { artifacts: unique, slots: std::sync::Mutex::new(slots), changed: std::sync::Condvar::new(), cancelled: Default::default() }
    }

    /// How many artifacts it holds.
    pub fn len(&self) -> usize {
        self.artifacts.len()
    }

    /// How many threads should call [`Prefetch::run`]: one per cuDNN archive (each is imported
    /// on its own thread) and [`super::MAX_PARALLEL_DOWNLOADS`] for the other files, at most one
    /// per artifact.
    pub fn threads(&self) -> usize {
        let cudnn = self.artifacts.iter().filter(|(_, cuda)| cuda.is_some()).count();
        self.artifacts.len().min(cudnn + super::MAX_PARALLEL_DOWNLOADS)
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.artifacts.is_empty()
    }

    /// Downloads queued artifacts, in order, on the calling thread until none is left or
    /// [`Prefetch::cancel`] is called. Call it from [`Prefetch::threads`] threads.
    pub fn run(&self, layout: &Layout, writer: &WriterLock, client: &Client, progress: &dyn Progress) {
        let client = client.cancellable(self.cancelled.clone());
        let task = progress.task();
        loop {
            let i = {
                let mut slots = self.slots.lock().unwrap();
                let Some(i) = slots.iter().position(|s| matches!(s, Slot::Queued)) else { return };
                slots[i] = Slot::Running;
                i
            };
            // A panic while downloading hands the slot back as not started (the caller then
            // downloads it itself) instead of leaving `take` waiting forever.
            struct Unwind<'a>(&'a Prefetch, usize);
            impl Drop for Unwind<'_> {
                fn drop(&mut self) {
                    if std::thread::panicking() {
                        self.0.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[self.1] = Slot::Taken;
                        self.0.changed.notify_all();
                    }
                }
            }
            let unwind = Unwind(self, i);
            let (artifact, cuda) = &self.artifacts[i];
            let r = match cuda {
                Some(cuda) => stream::import_or_download(layout, writer, &client, artifact, Some(*cuda), false, task.as_ref()),
                None => stream::unpack_or_download(layout, writer, &client, artifact, task.as_ref()).map(|w| match w {
                    Wheel::Whole(d) => Fetched::Download(d),
                    Wheel::Unpacked(u) => Fetched::Unpacked(u),
                }),
            };
            drop(unwind);
            let mut slots = self.slots.lock().unwrap();
            // A download finished after cancel() is dropped here (its folder deleted).
            slots[i] = if self.cancelled.load(std::sync::atomic::Ordering::Relaxed) { Slot::Taken } else { Slot::Done(r) };
            self.changed.notify_all();
        }
    }

    /// The download (or import) of `artifact` (same URL and SHA-256), waiting while it runs;
    /// `None` when this prefetch does not hold it, it was taken already, or it has not started
    /// (then it never will: the caller downloads it).
    pub fn take(&self, artifact: &Artifact) -> Option<Result<Fetched, Error>> {
        let i = self.artifacts.iter().position(|(a, _)| a.url == artifact.url && a.sha256 == artifact.sha256)?;
        let mut slots = self.slots.lock().unwrap();
        loop {
            match std::mem::replace(&mut slots[i], Slot::Taken) {
                Slot::Done(r) => return Some(r),
                Slot::Queued | Slot::Taken => return None,
                Slot::Running => {
                    slots[i] = Slot::Running;
                    slots = self.changed.wait(slots).unwrap();
                }
            }
        }
    }

    /// Starts nothing more, and stops the downloads under way at their next read.
    pub fn cancel(&self) {
        self.cancelled.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut slots = self.slots.lock().unwrap();
        for s in slots.iter_mut().filter(|s| matches!(s, Slot::Queued)) {
            *s = Slot::Taken;
        }
    }
}
