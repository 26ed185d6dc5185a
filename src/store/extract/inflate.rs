//! One stored or deflated zip member into its file, from its compressed bytes (a slice of the
//! memory-mapped archive):
//! - a member of at most [`SMALL`] bytes is inflated whole by libdeflate into the worker's own
//!   buffer and written with one `write`;
//! - a larger one is inflated by zlib-rs (`flate2`) in pieces of [`super::zip::CHUNK`] bytes,
//!   each written with `write` as it comes ([`Sink`]), as an archive that is imported while
//!   it downloads is inflated (streamed.rs).
//!
//! Why not libdeflate for the large members too: it inflates the 430 MB
//! `libcudnn_engines_precompiled.so.9` faster (0.80 s against zlib-rs's 1.07 s), but only into
//! one buffer of the whole output, which for a 430 MB member is either heap (past the memory
//! budget) or the output file mapped into memory. The pages of a mapped output are made by
//! page faults, each zero-filled first; `write` fills new page-cache pages by copying whole
//! pages, with no faults and no zero-fill. On this project's virtual machines the faults and
//! zero-fill of the mapped outputs cost 0.5-2.3 s of system time per cuDNN wheel and varied
//! run to run, against 0.3-0.6 s for writing, so the written path was faster in all but the
//! best runs and never slow (docs/performance.md, "Mapped outputs against written ones").
//!
//! Invariants:
//! - Output never grows past the size the central directory declares: libdeflate stops with
//!   "insufficient space" at the end of its buffer, and the pieces stop at the declared size,
//!   either of which is an error ([`MemberError::Larger`]).
//! - A full disk is an `ENOSPC` error from `write`, naming the file.
//! - The CRC-32 of every byte is computed (crc32fast); the SHA-256 only when asked (a file
//!   whose digest an authenticated RECORD gives is not hashed again: docs/decisions.md 11).

use super::zip::{CHUNK, Sink};
use crate::store::Error;
use crate::sys::progress::Progress;

/// Members of at most this many bytes are inflated whole by libdeflate into the worker's own
/// buffer and written with one `write`; larger ones are inflated in pieces. With one worker per
/// core (at most 4) the buffers stay under 32 MiB of anonymous memory together.
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
    /// Creating or writing the output failed (a full disk: `ENOSPC`): the store's error,
    /// naming the file.
    Write(Error),
    /// The member yields more bytes than declared (output stops at the declared size).
    Larger,
    /// The member yields this many bytes, fewer than declared.
    Short(u64),
    /// The deflate data is invalid (damaged, or cut short).
    BadData,
}

/// One worker's inflater: libdeflate's decompressor, the buffer for small members and the
/// piece buffer for large ones.
pub(super) struct Inflater {
    dec: libdeflater::Decompressor,
    small: Vec<u8>,
    piece: Vec<u8>,
}

impl Inflater {
    pub(super) fn new() -> Inflater {
        Inflater { dec: libdeflater::Decompressor::new(), small: Vec::new(), piece: Vec::new() }
    }

    /// Inflates (or copies, for [`Method::Stored`]) `input`, a member's compressed bytes, which
    /// must yield exactly `size` bytes, into `sink` (a new file, hashed with SHA-256 unless
    /// RECORD gives its digest); returns the CRC-32 of what it wrote. Errors: see
    /// [`MemberError`]; on error the file may be partial (the caller discards the staging
    /// folder).
    pub(super) fn member(&mut self, method: Method, input: &[u8], size: u64, sink: &mut Sink, progress: &dyn Progress) -> Result<u32, MemberError> {
        if size <= SMALL {
            self.small.clear();
            self.small.resize(size as usize, 0);
            let n = fill(&mut self.dec, method, input, &mut self.small)?;
            if n as u64 != size {
                return Err(MemberError::Short(n as u64));
            }
            sink.put(&self.small, progress).map_err(MemberError::Write)?;
            return Ok(crc32fast::hash(&self.small));
        }
        self.piece.resize(CHUNK, 0);
        match method {
            Method::Stored => stored(input, size, sink, progress),
            Method::Deflated => inflate(input, size, &mut self.piece, sink, progress),
        }
    }
}

/// Writes a stored member's `input` (which must be `size` bytes) through `sink` in pieces;
/// returns its CRC-32.
fn stored(input: &[u8], size: u64, sink: &mut Sink, progress: &dyn Progress) -> Result<u32, MemberError> {
    match (input.len() as u64).cmp(&size) {
        std::cmp::Ordering::Greater => return Err(MemberError::Larger),
        std::cmp::Ordering::Less => return Err(MemberError::Short(input.len() as u64)),
        std::cmp::Ordering::Equal => {}
    }
    let mut crc = crc32fast::Hasher::new();
    for piece in input.chunks(CHUNK) {
        crc.update(piece);
        sink.put(piece, progress).map_err(MemberError::Write)?;
    }
    Ok(crc.finalize())
}

/// Inflates the raw deflate stream `input` through `sink` in pieces of `piece.len()` bytes,
/// stopping with [`MemberError::Larger`] at the first byte past `size`; returns its CRC-32.
fn inflate(input: &[u8], size: u64, piece: &mut [u8], sink: &mut Sink, progress: &dyn Progress) -> Result<u32, MemberError> {
    let mut dec = flate2::Decompress::new(false);
    let mut crc = crc32fast::Hasher::new();
    loop {
        let (read, wrote) = (dec.total_in(), dec.total_out());
        // At most one byte past the declared size is asked for: enough to tell "larger".
        let cap = (piece.len() as u64).min(size + 1 - wrote) as usize;
        let rest = usize::try_from(read).ok().and_then(|r| input.get(r..)).unwrap_or_default();
        let status = dec.decompress(rest, &mut piece[..cap], flate2::FlushDecompress::None).map_err(|_| MemberError::BadData)?;
        let n = (dec.total_out() - wrote) as usize;
        if dec.total_out() > size {
            return Err(MemberError::Larger);
        }
        crc.update(&piece[..n]);
        sink.put(&piece[..n], progress).map_err(MemberError::Write)?;
        match status {
            flate2::Status::StreamEnd => break,
            // No progress with input left: the stream is cut short (it never ended).
            _ if n == 0 && dec.total_in() == read => return Err(MemberError::BadData),
            _ => {}
        }
    }
    if dec.total_out() != size {
        return Err(MemberError::Short(dec.total_out()));
    }
    Ok(crc.finalize())
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
