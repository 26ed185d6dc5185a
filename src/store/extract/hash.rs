//! Hashing an import input or a file with SHA-256: [`hash_input`] overlaps reading and
//! hashing on two threads, [`hash_file`] reads in 1 MiB chunks.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::mpsc;

use sha2::Digest;

use super::{BUF, open, read_full};
use crate::store::Error;
use crate::sys::sha256::Sha256;

/// Hashes an import input (a regular file, opened as [`extract`](super::extract) opens it) with SHA-256.
/// Returns (size, digest). Errors: [`Error::Read`], or [`Error::UnknownInput`] for a
/// special file.
///
/// One thread reads while this one hashes, so the copy out of the page cache overlaps the
/// hashing (a re-import costs this hash and little else); they trade
/// [`HASH_BUFFERS`] buffers of [`BUF`] bytes.
pub(crate) fn hash_input(path: &Path) -> Result<(u64, Sha256), Error> {
    let mut f = open(path)?;
    let (full_tx, full_rx) = mpsc::sync_channel::<(Vec<u8>, usize)>(HASH_BUFFERS);
    let (free_tx, free_rx) = mpsc::sync_channel::<Vec<u8>>(HASH_BUFFERS);
    for _ in 0..HASH_BUFFERS {
        free_tx.send(vec![0u8; BUF]).expect("room for the buffers");
    }
    std::thread::scope(|s| {
        let reader = s.spawn(move || -> io::Result<()> {
            for mut buf in free_rx {
                let n = read_full(&mut f, &mut buf)?;
                if n == 0 || full_tx.send((buf, n)).is_err() {
                    break;
                }
            }
            Ok(())
        });
        let mut hasher = sha2::Sha256::new();
        let mut total = 0u64;
        for (buf, n) in full_rx {
            hasher.update(&buf[..n]);
            total += n as u64;
            let _ = free_tx.send(buf);
        }
        drop(free_tx);
        reader.join().expect("read thread panicked").map(|()| (total, Sha256::finish(hasher)))
    })
    .map_err(|source| Error::Read { path: path.into(), source })
}

/// Buffers in flight between the reading and the hashing thread of [`hash_input`].
const HASH_BUFFERS: usize = 4;

/// Hashes a whole file with SHA-256 (1 MiB reads). Returns (size, digest).
pub fn hash_file(path: &Path) -> io::Result<(u64, Sha256)> {
    hash_reader(File::open(path)?)
}

fn hash_reader(mut f: File) -> io::Result<(u64, Sha256)> {
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; BUF];
    let mut total = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        total += n as u64;
    }
    Ok((total, Sha256::finish(hasher)))
}
