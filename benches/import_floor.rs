//! The floor of importing a wheel the way `cuenv store add` must, measured on this machine
//! with the parts cuenv uses: every member inflated whole with libdeflate (`libdeflater`, the
//! fastest inflater cuenv has: src/store/extract/inflate.rs uses it for members up to 8 MiB)
//! and CRC-32-checked (crc32fast), the archive hashed with
//! SHA-256 (sha2, SHA-NI where the CPU has it), and, for an import whose archive digest is not
//! authenticated, every extracted file hashed too. A member is inflated into a buffer of this
//! process; writing it into a file of its own (into the page cache, as every import and uv,
//! pip and unzip do; no `fsync`, whose wait for the disk is not CPU work) is timed apart as
//! one more part (the least of 3 writes into fresh files), so the floor of the import's
//! whole work can be told from that of its computation alone.
//!
//! For each wheel it prints, in CPU seconds, what each part costs one core, and the lower
//! bound on the wall time of any import doing that work on N cores: the larger of the total
//! work divided by N and the inflate of the largest member (one deflate stream is inflated by
//! one core), for both kinds of import (docs/performance.md "What an import proves"):
//! pinned (inflate + CRC-32 + the archive's SHA-256; the files' digests come from RECORD) and
//! unpinned (the same, plus the SHA-256 of every file), each without and with the writes.
//! benches/vs_uv.sh compares them with uv, which inflates and writes but hashes nothing.
//!
//! A wheel named as `stream:WHEEL` is also inflated with zlib-rs through `flate2` in 256 KiB
//! pieces, as `apply` inflates a wheel it imports while it downloads
//! (src/store/extract/streamed.rs) and as `store add` inflates each member over 8 MiB, and its
//! line and the total say the floor with that inflate too (benches/lab_fresh.sh marks the
//! wheels apply streams; benches/vs_uv.sh marks both wheels it imports).
//!
//! Usage: cargo bench --bench import_floor -- [stream:]WHEEL...   (cores: CUENV_BENCH_CORES, default
//! all of this machine's; the files are written into a temporary folder of TMPDIR: point it
//! at the file system of the store being compared)
use std::fs::File;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

fn main() {
    let wheels: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    if wheels.is_empty() {
        eprintln!("usage: cargo bench --bench import_floor -- WHEEL...");
        std::process::exit(2);
    }
    let cores: f64 = std::env::var("CUENV_BENCH_CORES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()) as f64);
    // A total with the streamed inflate only where some wheel is imported while it downloads.
    let mut all = Work { streamed: wheels.iter().any(|w| w.starts_with("stream:")).then(Streamed::default), ..Work::default() };
    for wheel in &wheels {
        let (path, streamed) = match wheel.strip_prefix("stream:") {
            Some(path) => (path, true),
            None => (wheel.as_str(), false),
        };
        let w = measure(path, streamed);
        report(path.rsplit('/').next().unwrap_or(path), &w, cores);
        all.members += w.members;
        all.bytes_out += w.bytes_out;
        all.inflate += w.inflate;
        all.sha_files += w.sha_files;
        all.sha_archive += w.sha_archive;
        all.crc += w.crc;
        all.write += w.write;
        all.largest_inflate = all.largest_inflate.max(w.largest_inflate);
        // The streamed total: a wheel not streamed counts with its libdeflate inflate.
        if let Some(total) = &mut all.streamed {
            let (inflate, largest) = w.streamed.map_or((w.inflate, w.largest_inflate), |s| (s.inflate, s.largest));
            total.inflate += inflate;
            total.largest = total.largest.max(largest);
        }
    }
    if wheels.len() > 1 {
        // Several wheels imported by one command (apply): their work adds up.
        report(&format!("all {} wheels", wheels.len()), &all, cores);
    }
}

/// Prints one line: the work of `w` on one core and its floor on `cores` cores.
fn report(what: &str, w: &Work, cores: f64) {
    let floor = |work: Duration| (work.as_secs_f64() / cores).max(w.largest_inflate.as_secs_f64());
    let pinned = floor(w.inflate + w.crc + w.sha_archive);
    let unpinned = floor(w.inflate + w.crc + w.sha_archive + w.sha_files);
    let pinned_w = floor(w.inflate + w.crc + w.sha_archive + w.write);
    let unpinned_w = floor(w.inflate + w.crc + w.sha_archive + w.sha_files + w.write);
    println!(
        "{what}: {} members, {:.0} MB out; one core: inflate {:.2} s, crc32 {:.2} s, sha256 of files {:.2} s, sha256 of archive {:.2} s, write {:.2} s; largest member inflate {:.2} s; floor on {cores} cores: pinned {pinned:.2} s, unpinned {unpinned:.2} s; with the writes: pinned {pinned_w:.2} s, unpinned {unpinned_w:.2} s",
        w.members,
        w.bytes_out as f64 / 1e6,
        w.inflate.as_secs_f64(),
        w.crc.as_secs_f64(),
        w.sha_files.as_secs_f64(),
        w.sha_archive.as_secs_f64(),
        w.write.as_secs_f64(),
        w.largest_inflate.as_secs_f64(),
    );
    if let Some(st) = &w.streamed {
        // The same work with the inflate of the wheels imported while they download.
        let floor = |work: Duration| (work.as_secs_f64() / cores).max(st.largest.as_secs_f64());
        let pinned = floor(st.inflate + w.crc + w.sha_archive);
        let pinned_w = floor(st.inflate + w.crc + w.sha_archive + w.write);
        println!(
            "{what}, as imported while downloading (zlib-rs inflate of the streamed wheels): inflate {:.2} s, largest member {:.2} s; floor on {cores} cores: pinned {pinned:.2} s; with the writes: pinned {pinned_w:.2} s",
            st.inflate.as_secs_f64(),
            st.largest.as_secs_f64(),
        );
    }
}

/// One wheel's work, each part timed on one core.
#[derive(Default)]
struct Work {
    members: usize,
    bytes_out: u64,
    inflate: Duration,
    sha_files: Duration,
    sha_archive: Duration,
    crc: Duration,
    /// Writing the inflated bytes into files (page cache, no fsync).
    write: Duration,
    largest_inflate: Duration,
    /// For a wheel imported while it downloads (and a total with one): the inflate as that
    /// import does it.
    streamed: Option<Streamed>,
}

/// Inflate with zlib-rs in pieces (src/store/extract/streamed.rs), on one core.
#[derive(Default)]
struct Streamed {
    inflate: Duration,
    largest: Duration,
}

/// Times each part of importing the wheel at `path` (the zlib-rs inflate too when `streamed`).
fn measure(path: &str, streamed: bool) -> Work {
    let file = File::open(path).expect("open the wheel");
    // SAFETY: read-only mapping of a file nothing writes while the bench runs.
    let map = unsafe { memmap2::Mmap::map(&file) }.expect("map the wheel");
    let mut zip = zip::ZipArchive::new(File::open(path).expect("open the wheel")).expect("a zip");
    let mut dec = libdeflater::Decompressor::new();
    let mut out = Vec::new();
    let mut w = Work { members: zip.len(), streamed: streamed.then(Streamed::default), ..Work::default() };
    let mut piece = vec![0u8; 256 << 10];
    let scratch = tempfile::tempdir().expect("a temporary folder");
    for i in 0..zip.len() {
        let member = zip.by_index_raw(i).expect("a member");
        let start = member.data_start().expect("a local header") as usize;
        let input = &map[start..start + member.compressed_size() as usize];
        out.clear();
        out.resize(member.size() as usize, 0);
        let t = Instant::now();
        match member.compression() {
            zip::CompressionMethod::Stored => out.copy_from_slice(input),
            zip::CompressionMethod::Deflated => {
                let n = dec.deflate_decompress(input, &mut out).expect("inflate");
                assert_eq!(n, out.len(), "member {i} is shorter than declared");
            }
            other => panic!("member {i}: {other:?} is not measured here"),
        }
        let inflate = t.elapsed();
        if let Some(st) = &mut w.streamed {
            let t = Instant::now();
            let mut n = 0;
            match member.compression() {
                zip::CompressionMethod::Stored => n = std::hint::black_box(input).len(),
                _ => {
                    let mut dec = flate2::bufread::DeflateDecoder::new(input);
                    loop {
                        let got = std::io::Read::read(&mut dec, &mut piece).expect("inflate with zlib-rs");
                        if got == 0 {
                            break;
                        }
                        std::hint::black_box(&piece[..got]);
                        n += got;
                    }
                }
            }
            let took = t.elapsed();
            assert_eq!(n, out.len(), "member {i}: zlib-rs gave another size");
            st.inflate += took;
            st.largest = st.largest.max(took);
        }
        let t = Instant::now();
        assert_eq!(crc32fast::hash(&out), member.crc32(), "member {i}: CRC-32");
        w.crc += t.elapsed();
        let t = Instant::now();
        std::hint::black_box(Sha256::digest(&out));
        w.sha_files += t.elapsed();
        // The least of 3 writes into fresh files: how long a write takes here depends on when
        // the host last took memory back (docs/performance.md), and a floor is the least.
        w.write += (0..3)
            .map(|k| {
                let file = scratch.path().join(format!("member-{i}-{k}"));
                let t = Instant::now();
                std::fs::write(&file, &out).expect("write a member into the temporary folder");
                let took = t.elapsed();
                std::fs::remove_file(&file).expect("remove the written member");
                took
            })
            .min()
            .unwrap_or_default();
        w.bytes_out += out.len() as u64;
        w.inflate += inflate;
        w.largest_inflate = w.largest_inflate.max(inflate);
    }
    let t = Instant::now();
    std::hint::black_box(Sha256::digest(&map[..]));
    w.sha_archive = t.elapsed();
    w
}
