//! The floor of importing a wheel the way `cuenv store add` must: every member
//! inflated, every extracted file hashed with SHA-256, and the archive itself hashed, measured
//! on this machine with the same inflater (zlib-rs through flate2) and the same SHA-256 (sha2,
//! SHA-NI where the CPU has it) that cuenv uses. No file is written.
//!
//! For each wheel it prints, in CPU seconds, what that work costs one core, and the lower
//! bound on the wall time of any import doing it on N cores: the larger of the total work
//! divided by N and the inflate of the largest member (one deflate stream is inflated by one
//! core). benches/vs_uv.sh compares that floor with uv, which inflates but hashes nothing.
//!
//! Usage: cargo bench --bench import_floor -- WHEEL...   (cores: CUENV_BENCH_CORES, default
//! all of this machine's)
use std::fs::File;
use std::io::Read;
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
    let mut all =
        Work { members: 0, bytes_out: 0, inflate: Duration::ZERO, sha_files: Duration::ZERO, sha_archive: Duration::ZERO, largest_inflate: Duration::ZERO };
    for wheel in &wheels {
        let w = measure(wheel);
        report(wheel.rsplit('/').next().unwrap_or(wheel), &w, cores);
        all.members += w.members;
        all.bytes_out += w.bytes_out;
        all.inflate += w.inflate;
        all.sha_files += w.sha_files;
        all.sha_archive += w.sha_archive;
        all.largest_inflate = all.largest_inflate.max(w.largest_inflate);
    }
    if wheels.len() > 1 {
        // Several wheels imported by one command (apply): their work adds up.
        report(&format!("all {} wheels", wheels.len()), &all, cores);
    }
}

/// Prints one line: the work of `w` on one core and its floor on `cores` cores.
fn report(what: &str, w: &Work, cores: f64) {
    let total = w.inflate + w.sha_files + w.sha_archive;
    let floor = (total.as_secs_f64() / cores).max(w.largest_inflate.as_secs_f64());
    let no_hash = (w.inflate.as_secs_f64() / cores).max(w.largest_inflate.as_secs_f64());
    println!(
        "{what}: {} members, {:.0} MB out; one core: inflate {:.2} s, sha256 of files {:.2} s, sha256 of archive {:.2} s; largest member inflate {:.2} s; floor on {cores} cores: {floor:.2} s with every hash, {no_hash:.2} s inflating only",
        w.members,
        w.bytes_out as f64 / 1e6,
        w.inflate.as_secs_f64(),
        w.sha_files.as_secs_f64(),
        w.sha_archive.as_secs_f64(),
        w.largest_inflate.as_secs_f64(),
    );
}

/// One wheel's work, each part timed on one core.
#[derive(Default)]
struct Work {
    members: usize,
    bytes_out: u64,
    inflate: Duration,
    sha_files: Duration,
    sha_archive: Duration,
    largest_inflate: Duration,
}

fn measure(path: &str) -> Work {
    let mut zip = zip::ZipArchive::new(File::open(path).expect("open the wheel")).expect("a zip");
    let mut buf = vec![0u8; 256 << 10];
    let mut w = Work { members: zip.len(), ..Work::default() };
    for i in 0..zip.len() {
        let mut member = zip.by_index(i).expect("a member");
        let mut sha = Sha256::new();
        let mut inflate = Duration::ZERO;
        loop {
            let t = Instant::now();
            let n = member.read(&mut buf).expect("inflate");
            inflate += t.elapsed();
            if n == 0 {
                break;
            }
            let t = Instant::now();
            sha.update(&buf[..n]);
            w.sha_files += t.elapsed();
            w.bytes_out += n as u64;
        }
        std::hint::black_box(sha.finalize());
        w.inflate += inflate;
        w.largest_inflate = w.largest_inflate.max(inflate);
    }
    let mut f = File::open(path).expect("open the wheel");
    let mut sha = Sha256::new();
    let mut big = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut big).expect("read the wheel");
        if n == 0 {
            break;
        }
        let t = Instant::now();
        sha.update(&big[..n]);
        w.sha_archive += t.elapsed();
    }
    std::hint::black_box(sha.finalize());
    w
}
