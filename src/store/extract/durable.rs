//! Making the files an extraction writes durable without holding up the threads that write
//! them: every file is `fsync`ed before the entry's commit rename (docs/design.md, "Store"),
//! and its write-back to disk is started early, as soon as a large member or each 8 MiB of a
//! streamed one is written, so that those `fsync`s wait for the last few MiB only.
//!
//! Both happen on two threads of their own ([`spawn`]): one starts write-back
//! (`sync_file_range(SYNC_FILE_RANGE_WRITE)` on Linux, which submits the pages to the disk
//! and returns without waiting for them), one `fsync`s finished files in the order they come.
//! Submitting pages can itself block once the disk's queue is full (the block layer's
//! write-back throttling): a `perf` profile of an 8.9.4.25 import showed the inflating thread
//! that had just finished the 635 MB `libcudnn_cnn_infer.so.8` stopped there while the other
//! core had work for it (docs/performance.md). Here that wait falls on a thread that has
//! nothing else to do.

use std::fs::File;
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread::{Scope, ScopedJoinHandle};

use crate::store::Error;

/// What the write-back thread is asked to do.
enum Job {
    /// Start write-back of `len` bytes at `offset` of the file (a duplicate handle).
    Range { file: File, offset: u64, len: u64 },
    /// The file at `path` is complete: start write-back of all of it, then `fsync` it.
    Done { file: File, path: PathBuf },
}

/// Where the writers of one extraction send their files ([`spawn`]). Cloned for each writer
/// thread; the threads end once every clone is dropped.
#[derive(Clone)]
pub(super) struct Durable(mpsc::Sender<Job>);

impl Durable {
    /// Starts write-back of `len` bytes at `offset` of `file` on the write-back thread (through
    /// a duplicate of the handle: the writer keeps writing). Nothing happens when the handle
    /// cannot be duplicated: the file's `fsync` still writes those bytes.
    pub(super) fn flush_range(&self, file: &File, offset: u64, len: u64) {
        if let Ok(file) = file.try_clone() {
            let _ = self.0.send(Job::Range { file, offset, len });
        }
    }

    /// `file`, written at `path`, is complete: its write-back is started and it is `fsync`ed.
    pub(super) fn done(&self, file: File, path: PathBuf) {
        let _ = self.0.send(Job::Done { file, path });
    }
}

/// Starts the write-back and `fsync` threads in `s`. The handle ends once every [`Durable`]
/// clone is dropped and every file sent was synced, with the first `fsync` error
/// ([`Error::Write`] naming the file), if any.
pub(super) fn spawn<'s>(s: &'s Scope<'s, '_>) -> (Durable, ScopedJoinHandle<'s, Result<(), Error>>) {
    let (tx, rx) = mpsc::channel::<Job>();
    let (sync_tx, sync_rx) = mpsc::channel::<(File, PathBuf)>();
    s.spawn(move || {
        for job in rx {
            match job {
                Job::Range { file, offset, len } => start_writeback(&file, offset, len),
                Job::Done { file, path } => {
                    // 0 bytes: to the end of the file.
                    start_writeback(&file, 0, 0);
                    let _ = sync_tx.send((file, path));
                }
            }
        }
    });
    let synced = s.spawn(move || {
        let mut first = None;
        for (file, path) in sync_rx {
            if let Err(source) = file.sync_all() {
                first.get_or_insert(Error::Write { path, source });
            }
        }
        first.map_or(Ok(()), Err)
    });
    (Durable(tx), synced)
}

/// Linux `sync_file_range(SYNC_FILE_RANGE_WRITE)`: starts write-back of `len` bytes at
/// `offset` (`len` 0: to the end of the file) and returns without waiting for the disk;
/// durability still comes from the `fsync`. Elsewhere, and on any error, nothing happens.
fn start_writeback(file: &File, offset: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain syscall on an open file descriptor; no memory is passed.
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), offset as libc::off64_t, len as libc::off64_t, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, offset, len);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Every file sent is synced and each writer's clone keeps the threads alive until it is
    /// dropped; ranges of a file still being written are accepted on the way.
    #[test]
    fn files_sent_from_several_writers_are_synced() {
        let dir = tempfile::tempdir().unwrap();
        let result = std::thread::scope(|s| {
            let (durable, synced) = spawn(s);
            for w in 0..3 {
                let durable = durable.clone();
                let dir = dir.path().to_path_buf();
                s.spawn(move || {
                    let path = dir.join(format!("f{w}"));
                    let mut file = File::create(&path).unwrap();
                    file.write_all(&[w as u8; 4096]).unwrap();
                    durable.flush_range(&file, 0, 4096);
                    file.write_all(&[w as u8; 4096]).unwrap();
                    durable.done(file, path);
                });
            }
            drop(durable);
            synced.join().unwrap()
        });
        assert!(result.is_ok());
        for w in 0..3u8 {
            assert_eq!(std::fs::read(dir.path().join(format!("f{w}"))).unwrap(), vec![w; 8192]);
        }
    }

    /// An `fsync` that fails is the handle's error, naming the file.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_failed_fsync_is_reported_with_its_file() {
        // A pipe's write end cannot be fsynced (EINVAL).
        let mut fds = [0i32; 2];
        // SAFETY: `fds` has room for the two descriptors pipe() returns.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just returned by pipe() and are owned here alone.
        let (r, w) = unsafe { (<File as std::os::fd::FromRawFd>::from_raw_fd(fds[0]), <File as std::os::fd::FromRawFd>::from_raw_fd(fds[1])) };
        let result = std::thread::scope(|s| {
            let (durable, synced) = spawn(s);
            durable.done(w, PathBuf::from("the-pipe"));
            drop(durable);
            synced.join().unwrap()
        });
        drop(r);
        match result {
            Err(Error::Write { path, .. }) => assert_eq!(path, PathBuf::from("the-pipe")),
            other => panic!("{other:?}"),
        }
    }
}
