//! One zip member into its file, whole: libdeflate inflates the member's compressed bytes (a
//! slice of the memory-mapped archive) straight into the output file, itself memory-mapped once
//! its full size is allocated on disk.
//!
//! Why whole members: libdeflate inflates the 430 MB `libcudnn_engines_precompiled.so.9` in
//! 0.80 s where zlib-rs streaming takes 1.07 s (docs/performance.md), but it needs the whole
//! input and the whole output at once. Both are file-backed mappings (the archive, and the
//! output file), so they are page cache, not heap: the anonymous memory of a worker stays at
//! its [`SMALL`]-byte buffer for small members.
//!
//! Invariants:
//! - The output's blocks are allocated before it is mapped (`posix_fallocate` on Linux,
//!   `SetEndOfFile` on Windows, which allocates on NTFS): a full disk is an `ENOSPC` error
//!   from that call, never a `SIGBUS` through the mapping.
//! - Output never grows past the size the central directory declares: libdeflate stops with
//!   "insufficient space" at the end of the buffer, which is an error ([`MemberError::Larger`]).
//! - The CRC-32 of every byte is computed (crc32fast); the SHA-256 only when asked (a file
//!   whose digest an authenticated RECORD gives is not hashed again: docs/decisions.md 11).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use sha2::Digest;

use crate::sys::sha256::Sha256;

/// Members of at most this many bytes are inflated into the worker's own buffer and written
/// with one `write`; larger ones are inflated into their mapped file. With one worker per core
/// (at most 4) the buffers stay under 32 MiB of anonymous memory together.
pub(super) const SMALL: u64 = 8 << 20;

/// How a member's bytes are stored in the archive (the two methods handled here; the zip
/// crate's reader handles the rest).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    Stored,
    Deflated,
}

/// Why a member could not be written.
pub(super) enum MemberError {
    /// Creating, allocating, mapping or writing the output failed (a full disk: `ENOSPC`).
    Write(io::Error),
    /// The member yields more bytes than declared (output stops at the declared size).
    Larger,
    /// The member yields this many bytes, fewer than declared.
    Short(u64),
    /// The deflate data is invalid (damaged, or cut short).
    BadData,
}

/// A member written: its file (open for the caller to sync), CRC-32 and, when asked, SHA-256.
pub(super) struct Written {
    pub file: File,
    pub crc: u32,
    pub sha256: Option<Sha256>,
}

/// One worker's inflater: libdeflate's decompressor and the buffer for small members.
pub(super) struct Inflater {
    dec: libdeflater::Decompressor,
    small: Vec<u8>,
}

impl Inflater {
    pub(super) fn new() -> Inflater {
        Inflater { dec: libdeflater::Decompressor::new(), small: Vec::new() }
    }

    /// Inflates (or copies, for [`Method::Stored`]) `input`, a member's compressed bytes, into a
    /// new file at `dest` that must hold exactly `size` bytes; hashes it with SHA-256 when
    /// `hash`. Errors: see [`MemberError`]; on error `dest` may hold a partial file (the
    /// caller discards the staging folder).
    pub(super) fn member(&mut self, method: Method, input: &[u8], size: u64, dest: &Path, hash: bool) -> Result<Written, MemberError> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(dest).map_err(MemberError::Write)?;
        let (crc, sha256) = if size <= SMALL {
            self.small.clear();
            self.small.resize(size as usize, 0);
            let n = fill(&mut self.dec, method, input, &mut self.small)?;
            if n as u64 != size {
                return Err(MemberError::Short(n as u64));
            }
            (&file).write_all(&self.small).map_err(MemberError::Write)?;
            digest(&self.small, hash)
        } else {
            preallocate(&file, size).map_err(MemberError::Write)?;
            let len = usize::try_from(size).map_err(|_| MemberError::Write(io::Error::other("the member is larger than this machine's address space")))?;
            // SAFETY: the file was created by this process in its own staging folder, which no
            // other cuenv writer touches (the writer lock); its blocks are allocated above, so
            // no page of the mapping can fail to be backed. MAP_POPULATE (Linux) maps the
            // pages at once instead of 100,000 faults of 4 KiB, which cost up to 4 s more on
            // this project's virtual machines.
            let mut map = unsafe { memmap2::MmapOptions::new().len(len).populate().map_mut(&file) }.map_err(MemberError::Write)?;
            let n = fill(&mut self.dec, method, input, &mut map)?;
            if n as u64 != size {
                return Err(MemberError::Short(n as u64));
            }
            let d = digest(&map, hash);
            drop(map);
            d
        };
        Ok(Written { file, crc, sha256 })
    }
}

/// Inflates or copies `input` into `out`; returns the bytes produced.
fn fill(dec: &mut libdeflater::Decompressor, method: Method, input: &[u8], out: &mut [u8]) -> Result<usize, MemberError> {
    match method {
        Method::Stored => {
            if input.len() > out.len() {
                return Err(MemberError::Larger);
            }
            out[..input.len()].copy_from_slice(input);
            Ok(input.len())
        }
        Method::Deflated => dec.deflate_decompress(input, out).map_err(|e| match e {
            libdeflater::DecompressionError::InsufficientSpace => MemberError::Larger,
            libdeflater::DecompressionError::BadData => MemberError::BadData,
        }),
    }
}

/// The CRC-32 of `bytes` and, when `hash`, their SHA-256, in one pass of 256 KiB chunks (each
/// chunk is read once into the core's cache for both).
fn digest(bytes: &[u8], hash: bool) -> (u32, Option<Sha256>) {
    let mut crc = crc32fast::Hasher::new();
    let mut sha = hash.then(sha2::Sha256::new);
    for chunk in bytes.chunks(256 << 10) {
        crc.update(chunk);
        if let Some(sha) = &mut sha {
            sha.update(chunk);
        }
    }
    (crc.finalize(), sha.map(Sha256::finish))
}

/// Allocates `size` bytes of disk for `file` (empty, just created), so writing through a
/// mapping cannot run out of space. Linux: `posix_fallocate(3)` (glibc writes one byte per
/// block where the file system has no `fallocate`). Windows: `SetEndOfFile`, which allocates
/// the clusters of a file that is not sparse on NTFS. Elsewhere: the file is extended only.
fn preallocate(file: &File, size: u64) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let len = libc::off_t::try_from(size).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        // SAFETY: a plain call on an open file descriptor; no memory is passed.
        match unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) } {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }
    #[cfg(not(target_os = "linux"))]
    file.set_len(size)
}
