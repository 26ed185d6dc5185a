//! The GPU architectures a library carries code for, read from its CUDA fat binary: the
//! `.nv_fatbin` section of an ELF library, `.nv_fatb` of a PE DLL (section names: what the
//! real cuDNN 8.x/9.x wheels carry, docs/facts.md §11b).
//!
//! The section holds fat binary containers one after another (a library holds hundreds),
//! each a 16-byte header (`u32` magic `0xBA55ED50`, `u16` version 1, `u16` header size,
//! `u64` size of the entries that follow) and entries, each with its own header: `u16` kind
//! at 0 (1 = PTX, 2 = ELF cubin, i.e. SASS), `u32` entry header size at 4, `u64` payload size
//! at 8 (the next entry starts at header size + payload size), `u32` architecture at 28
//! (`10 * major + minor`: 61 = sm_61, 120 = sm_120). Layout: the public reverse-engineered
//! descriptions <https://github.com/GrigoryEvko/nvopen-tools/blob/main/fatbin/FORMAT_SPECIFICATION.md>
//! and <https://github.com/n-eiling/cuda-fatbin-decompression/blob/master/fatbin-decompress.h>;
//! validated against every cuDNN release on PyPI by `scripts/derive-fatbin-archs.py`
//! (docs/fatbin-archs.tsv). Only headers are read (through `object::ReadCache` and seeks),
//! never a payload: a 400 MB library costs a few thousand small reads.
//!
//! What the architectures mean for a GPU ([`GpuCode::runs_on`]) is CUDA's binary
//! compatibility rule (CUDA C++ Programming Guide, "Binary Compatibility" and "Application
//! Compatibility", <https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#binary-compatibility>):
//! a cubin for X.y runs on X.z with z >= y only; PTX for X.y is JIT-compiled by the driver
//! for any GPU of compute capability >= X.y.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use object::read::ReadCache;
use serde::{Deserialize, Serialize};

/// The container magic (little-endian `50 ED 55 BA`).
const MAGIC: u32 = 0xBA55_ED50;
/// How many bytes of zeros may separate two containers before the walk gives up on the section.
const MAX_GAP: u64 = 4096;

/// The architectures one library carries code for, as `10 * major + minor` (61 = 6.1),
/// each list sorted and without repeats.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuCode {
    /// Architectures with a cubin (SASS): runs on that major, same or higher minor.
    pub sass: Vec<u32>,
    /// Architectures with PTX: JIT-compiled for that compute capability or any higher.
    pub ptx: Vec<u32>,
}

impl GpuCode {
    /// Whether neither list holds anything.
    pub fn is_empty(&self) -> bool {
        self.sass.is_empty() && self.ptx.is_empty()
    }

    /// Whether a GPU of compute capability `major.minor` can run some of this code: a cubin
    /// of its major with a minor <= its minor, or PTX of an architecture <= its own (JIT).
    pub fn runs_on(&self, major: u64, minor: u64) -> bool {
        let cc = (major, minor);
        self.sass.iter().any(|&a| u64::from(a) / 10 == major && u64::from(a) % 10 <= minor) || self.ptx.iter().any(|&a| split(a) <= cc)
    }

    /// Whether the GPU runs it only through PTX JIT (no cubin fits it).
    pub fn only_jit(&self, major: u64, minor: u64) -> bool {
        self.runs_on(major, minor) && !self.sass.iter().any(|&a| u64::from(a) / 10 == major && u64::from(a) % 10 <= minor)
    }

    /// `SASS sm_50 to sm_90 (8 architectures), PTX compute_90`; `no GPU code` when empty.
    pub fn describe(&self) -> String {
        let list = |v: &[u32], p: &str| match v {
            [] => None,
            [one] => Some(format!("{p}_{one}")),
            [first, .., last] => Some(format!("{p}_{first} to {p}_{last} ({} architectures)", v.len())),
        };
        let parts: Vec<String> =
            [list(&self.sass, "sm").map(|s| format!("SASS {s}")), list(&self.ptx, "compute").map(|s| format!("PTX {s}"))].into_iter().flatten().collect();
        if parts.is_empty() { "no GPU code".into() } else { parts.join(", ") }
    }

    /// Adds `other`'s architectures.
    pub fn merge(&mut self, other: &GpuCode) {
        for (mine, theirs) in [(&mut self.sass, &other.sass), (&mut self.ptx, &other.ptx)] {
            mine.extend(theirs);
            mine.sort_unstable();
            mine.dedup();
        }
    }
}

/// `61` -> (6, 1); `120` -> (12, 0).
fn split(a: u32) -> (u64, u64) {
    (u64::from(a) / 10, u64::from(a) % 10)
}

/// The GPU code of the library at `path`: `Ok(None)` when it has no fat binary section (a
/// dispatcher, cuDNN 9's graph and heuristic libraries). Errors: the file cannot be read or
/// parsed as ELF/PE, or its section does not hold fat binary containers (the message names
/// the file and the offset).
pub fn read(path: &Path) -> io::Result<Option<GpuCode>> {
    let name = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let (start, size) = {
        let cache = ReadCache::new(File::open(path).map_err(name)?);
        let sections = crate::sys::elf::section_table(&cache).map_err(name)?;
        let Some((_, range, _)) = sections.iter().find(|(n, _, _)| n == ".nv_fatbin").or_else(|| sections.iter().find(|(n, _, _)| n == ".nv_fatb")) else {
            return Ok(None);
        };
        match range {
            Some(r) => *r,
            None => return Ok(None),
        }
    };
    let mut f = File::open(path).map_err(name)?;
    walk(&mut f, start, size).map(Some).map_err(name)
}

/// The GPU code in the fat binary containers of `bytes` (a section's content).
pub fn parse(bytes: &[u8]) -> io::Result<GpuCode> {
    walk(&mut io::Cursor::new(bytes), 0, bytes.len() as u64)
}

fn read_at<R: Read + Seek>(r: &mut R, at: u64, buf: &mut [u8]) -> io::Result<()> {
    r.seek(SeekFrom::Start(at))?;
    r.read_exact(buf)
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}
fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

/// Walks the containers in `size` bytes from `start`.
fn walk<R: Read + Seek>(r: &mut R, start: u64, size: u64) -> io::Result<GpuCode> {
    let end = start + size;
    let mut code = GpuCode::default();
    let mut p = start;
    let mut gap = 0u64;
    let bad = |at: u64, what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("fat binary section at offset {at:#x}: {what}"));
    while p + 16 <= end {
        let mut h = [0u8; 16];
        read_at(r, p, &mut h)?;
        if u32_at(&h, 0) != MAGIC {
            // Zero padding between containers (8-byte alignment within the section; a PE
            // section is padded to its file alignment): skip to the first non-zero byte.
            match h.iter().position(|&b| b != 0) {
                Some(0) => return Err(bad(p, "not a fat binary container (no 0xBA55ED50 magic)")),
                Some(i) => {
                    gap += i as u64;
                    p += i as u64;
                }
                None => {
                    gap += 16;
                    p += 16;
                }
            }
            if gap > MAX_GAP {
                break;
            }
            continue;
        }
        gap = 0;
        let (version, hsize, fsize) = (u16_at(&h, 4), u64::from(u16_at(&h, 6)), u64_at(&h, 8));
        if version != 1 || hsize < 16 {
            return Err(bad(p, &format!("container version {version}, header size {hsize} (expected 1 and >= 16)")));
        }
        let cend = (p + hsize).saturating_add(fsize).min(end);
        let mut q = p + hsize;
        while q + 32 <= cend {
            let mut e = [0u8; 32];
            read_at(r, q, &mut e)?;
            let (kind, ehsize, psize, arch) = (u16_at(&e, 0), u64::from(u32_at(&e, 4)), u64_at(&e, 8), u32_at(&e, 28));
            if ehsize < 32 {
                break;
            }
            match kind {
                1 => code.ptx.push(arch),
                2 | 0x10 => code.sass.push(arch),
                _ => {}
            }
            q = q.saturating_add(ehsize).saturating_add(psize);
        }
        p = cend.max(p + 16);
    }
    for v in [&mut code.sass, &mut code.ptx] {
        v.sort_unstable();
        v.dedup();
    }
    Ok(code)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One container, built from the layout in the module documentation: entries of
    /// (kind, arch, payload length).
    pub(crate) fn container(entries: &[(u16, u32, usize)]) -> Vec<u8> {
        let mut body = Vec::new();
        for &(kind, arch, len) in entries {
            let mut e = vec![0u8; 64];
            e[0..2].copy_from_slice(&kind.to_le_bytes());
            e[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
            e[4..8].copy_from_slice(&64u32.to_le_bytes());
            e[8..16].copy_from_slice(&(len as u64).to_le_bytes());
            e[28..32].copy_from_slice(&arch.to_le_bytes());
            body.extend(e);
            body.extend(std::iter::repeat_n(0xAB, len));
        }
        let mut out = Vec::new();
        out.extend(MAGIC.to_le_bytes());
        out.extend(1u16.to_le_bytes());
        out.extend(16u16.to_le_bytes());
        out.extend((body.len() as u64).to_le_bytes());
        out.extend(body);
        while out.len() % 8 != 0 {
            out.push(0);
        }
        out
    }

    #[test]
    fn containers_tell_sass_and_ptx_architectures() {
        let mut sec = container(&[(2, 61, 40), (2, 90, 8), (1, 90, 13)]);
        sec.extend([0u8; 19]);
        sec.extend(container(&[(2, 61, 3), (2, 75, 5)]));
        let code = parse(&sec).unwrap();
        assert_eq!(code, GpuCode { sass: vec![61, 75, 90], ptx: vec![90] });
        assert_eq!(code.describe(), "SASS sm_61 to sm_90 (3 architectures), PTX compute_90");
        // Junk where a container should be names the offset.
        let mut junk = container(&[(2, 80, 8)]);
        let at = junk.len();
        junk.extend(b"not a fatbin....");
        let e = parse(&junk).unwrap_err().to_string();
        assert!(e.contains(&format!("{at:#x}")) && e.contains("0xBA55ED50"), "{e}");
    }

    #[test]
    fn a_gpu_runs_cubins_of_its_major_and_older_ptx() {
        let code = GpuCode { sass: vec![75, 80, 86, 90, 100, 120], ptx: vec![120] };
        assert!(code.runs_on(7, 5) && code.runs_on(8, 9) && code.runs_on(12, 1));
        assert!(!code.runs_on(6, 1) && !code.runs_on(7, 0));
        assert!(!code.only_jit(8, 9) && code.only_jit(13, 0));
        let ptx_only = GpuCode { sass: vec![], ptx: vec![52] };
        assert!(ptx_only.runs_on(5, 2) && ptx_only.runs_on(9, 0) && !ptx_only.runs_on(5, 0));
        assert_eq!(GpuCode::default().describe(), "no GPU code");
    }
}
