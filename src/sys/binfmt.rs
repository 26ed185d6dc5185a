//! What a shared library's headers say: the platform it was built for (PE or ELF header)
//! and, for Windows DLLs, the file version from its VERSIONINFO resource.
//!
//! Files are read through `object::ReadCache`, so only the bytes of the headers and of
//! the resource section are read, whatever the file's size (cuDNN 9 DLLs reach 415 MB).

use std::fs::File;
use std::io;
use std::ops::ControlFlow;
use std::path::Path;

use object::read::ReadCache;
use object::read::pe::{PeFile64, ResourceDirectoryEntryData};
use object::{FileKind, LittleEndian as LE};

use crate::cudnn::platform::Platform;
use crate::cudnn::version::Version;
use crate::sys::elf;

/// What the headers of one shared library say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryInfo {
    /// The platform from the PE machine or ELF `e_machine` field; `None` for a machine
    /// cuDNN is not built for (e.g. a 32-bit DLL).
    pub platform: Option<Platform>,
    /// A short description of the format and machine, for error messages (`PE32 i386`).
    pub describe: String,
    /// Windows only: `FileVersion` from the fixed part of the VERSIONINFO resource
    /// (`VS_FIXEDFILEINFO.dwFileVersionMS/LS`), e.g. `8.9.4.25`. `None` when the DLL has
    /// no VERSIONINFO (cuDNN 9's `cudnn_graph64_9.dll` has none; docs/facts.md §7b).
    pub file_version: Option<Version>,
    /// Windows only: the `(key, value)` strings of the VERSIONINFO's `StringFileInfo` tables,
    /// in file order (`("ProductName", "NVIDIA CUDA 13.0.96 Runtime")`, ...). Empty when the
    /// DLL has no VERSIONINFO or its tables cannot be read.
    pub version_strings: Vec<(String, String)>,
}

/// Reads the headers of the PE or ELF file at `path`.
///
/// Errors: I/O errors reading the file; `InvalidData` when it is neither PE nor ELF.
pub fn inspect(path: &Path) -> io::Result<BinaryInfo> {
    let cache = ReadCache::new(File::open(path)?);
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let kind = FileKind::parse(&cache).map_err(|_| bad("not a PE or ELF file"))?;
    match kind {
        FileKind::Pe64 => {
            let pe = PeFile64::parse(&cache).map_err(|e| bad(&format!("bad PE file: {e}")))?;
            let machine = pe.nt_headers().file_header.machine.get(LE);
            let platform = (machine == object::pe::IMAGE_FILE_MACHINE_AMD64).then_some(Platform::WindowsX86_64);
            let blob = pe_version_blob(&pe, &cache);
            let file_version = blob.and_then(parse_fixed_file_version);
            let version_strings = blob.map(parse_version_strings).unwrap_or_default();
            Ok(BinaryInfo { platform, describe: format!("PE32+ machine {machine:#06x}"), file_version, version_strings })
        }
        FileKind::Pe32 => Ok(BinaryInfo { platform: None, describe: "PE32 (32-bit Windows)".into(), file_version: None, version_strings: Vec::new() }),
        FileKind::Elf64 => {
            use object::read::elf::FileHeader as _;
            let header = object::elf::FileHeader64::<object::Endianness>::parse(&cache).map_err(|e| bad(&format!("bad ELF file: {e}")))?;
            let endian = header.endian().map_err(|e| bad(&e.to_string()))?;
            let machine = header.e_machine(endian);
            let platform = match machine {
                object::elf::EM_X86_64 => Some(Platform::LinuxX86_64),
                object::elf::EM_AARCH64 => Some(Platform::LinuxSbsa),
                object::elf::EM_PPC64 => Some(Platform::LinuxPpc64le),
                _ => None,
            };
            Ok(BinaryInfo { platform, describe: format!("ELF64 machine {machine}"), file_version: None, version_strings: Vec::new() })
        }
        FileKind::Elf32 => Ok(BinaryInfo { platform: None, describe: "ELF32 (32-bit)".into(), file_version: None, version_strings: Vec::new() }),
        other => Err(bad(&format!("not a shared library ({other:?})"))),
    }
}

/// The CUDA libraries a library names with their CUDA major, read without loading it: the
/// names in its ELF `.dynstr` (its `DT_NEEDED` entries) and read-only data (`.rodata`,
/// `.lrodata`: the names it passes to `dlopen`), or its PE import names and `.rdata` strings.
/// cuDNN loads cuBLAS/cuBLASLt and NVRTC of its CUDA major by name
/// (`libcublasLt.so.13`, `cublasLt64_13.dll`, `nvrtc64_130_0.dll`; docs/facts.md §10).
///
/// Returns `(CUDA major, name as written)` for every match of `lib{cublas,cublasLt,cudart,nvrtc}.so.<N>`
/// and `{cublas,cublasLt,cudart,nvrtc}64_<N>[_0].dll` (any case), in file order without
/// repeats; a 3-digit Windows number is major and minor (`cudart64_110.dll`,
/// `nvrtc64_130_0.dll`). Names built at run time (`libnvrtc.so.%d`) give nothing. Sections
/// over 256 MiB are skipped (real ones are a few MiB; kernels live in `.nv_fatbin`).
///
/// Errors: I/O errors; `InvalidData` when the file is neither PE nor ELF.
pub fn referenced_cuda_libraries(path: &Path) -> io::Result<Vec<(u64, String)>> {
    Ok(referenced_libraries(path)?.cuda)
}

/// What one library names, read from the same sections as [`referenced_cuda_libraries`] in
/// one pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct References {
    /// CUDA libraries with their major, as [`referenced_cuda_libraries`] returns them.
    pub cuda: Vec<(u64, String)>,
    /// cuDNN library names as written, in file order without repeats: Linux
    /// `libcudnn[_<stem>].so[.<N>...]` (cuDNN 9's dispatcher writes the bare `libcudnn_ops.so`
    /// and appends the version at run time: `%s.%d.%d.%d`), Windows
    /// `cudnn[_<stem>]64_<N>.dll` in any case. The file's own name is among them when it
    /// carries it (its `DT_SONAME`); [`crate::cudnn::libname::parse`] reads what each is.
    pub cudnn: Vec<String>,
    /// The names of the CUDA libraries around cuDNN as written, each a whole NUL-terminated
    /// string, in file order without repeats: `libcublasLt.so.12`, `libnvrtc.so.%d` (a name
    /// completed at run time with the CUDA major the build was made for), the unversioned
    /// fallback `libnvrtc.so`, `libnvrtc-builtins.so.12.6` (the builtins NVRTC asks for),
    /// `libnvJitLink.so.12`, `nvrtc64_%d_0.dll`, `nvrtc-builtins64_126.dll`, `cublasLt64_12.dll`
    /// (any case on Windows). [`crate::companion`] reads what each is.
    pub companions: Vec<String>,
}

/// Reads what the library at `path` names ([`References`]): `.dynstr`, `.rodata`, `.lrodata`,
/// `.rdata` and `.idata`, each at most 256 MiB, scanned in chunks (a `.rodata` of 100 MiB is
/// never held whole). The real cuDNN 9.5 set's sections add up to 53 MB (most of it the
/// 36 MB `.lrodata` of `libcudnn_heuristic.so.9`).
///
/// Errors: I/O errors; `InvalidData` when the file is neither PE nor ELF.
pub fn referenced_libraries(path: &Path) -> io::Result<References> {
    let ranges = section_ranges(path, &[".dynstr", ".rodata", ".lrodata", ".rdata", ".idata"])?;
    scan_ranges(&mut File::open(path)?, &ranges)
}

/// The file ranges `(start, len)` of the sections of the PE or ELF file at `path` named in
/// `names`, in file order of the section table, leaving out sections over 256 MiB (real ones
/// are a few MiB; kernels live in `.nv_fatbin`). Only the headers are read.
///
/// Errors: I/O errors; `InvalidData` when the file is neither PE nor ELF.
fn section_ranges(path: &Path, names: &[&str]) -> io::Result<Vec<(u64, u64)>> {
    const MAX_SECTION: u64 = 256 << 20;
    let cache = ReadCache::new(File::open(path)?);
    Ok(elf::section_table(&cache)?.into_iter().filter(|(n, _, size)| names.contains(&n.as_str()) && *size <= MAX_SECTION).filter_map(|(_, r, _)| r).collect())
}

/// Walks the byte ranges `(start, len)` of `f` [`SCAN_CHUNK`] bytes at a time, consecutive
/// chunks of a range overlapping by [`SCAN_OVERLAP`] bytes, and hands each chunk to `visit`
/// with whether it is its range's last; `visit` stops the walk with `Break`. A range past the
/// end of `f` is read as far as it goes (a short chunk ends that range).
fn scan_chunks(f: &mut (impl io::Read + io::Seek), ranges: &[(u64, u64)], mut visit: impl FnMut(&[u8], bool) -> ControlFlow<()>) -> io::Result<()> {
    let mut buf = vec![0u8; SCAN_CHUNK];
    for &(start, len) in ranges {
        let end = start.saturating_add(len);
        let mut at = start;
        while at < end {
            let n = (end - at).min(SCAN_CHUNK as u64) as usize;
            f.seek(io::SeekFrom::Start(at))?;
            if f.read_exact(&mut buf[..n]).is_err() {
                break;
            }
            let last = at + n as u64 >= end;
            if visit(&buf[..n], last).is_break() {
                return Ok(());
            }
            if last {
                break;
            }
            at += (n - SCAN_OVERLAP) as u64;
        }
    }
    Ok(())
}

/// [`References`] of the byte ranges `(start, len)` of `f`, read [`SCAN_CHUNK`] bytes at a
/// time; chunks overlap by [`SCAN_OVERLAP`], and a name is taken from the chunk it starts in
/// before the overlap, so no name is cut or counted twice. A range past the end of `f` is
/// read as far as it goes.
fn scan_ranges(f: &mut (impl io::Read + io::Seek), ranges: &[(u64, u64)]) -> io::Result<References> {
    let mut out = References::default();
    scan_chunks(f, ranges, |chunk, last| {
        // A name starting in the overlap is read whole by the next chunk.
        let whole = |pos: usize| last || pos < chunk.len() - SCAN_OVERLAP;
        for (found, pos) in cuda_library_names_at(chunk) {
            if whole(pos) && !out.cuda.contains(&found) {
                out.cuda.push(found);
            }
        }
        for (found, pos) in cudnn_library_names_at(chunk) {
            if whole(pos) && !out.cudnn.contains(&found) {
                out.cudnn.push(found);
            }
        }
        for (found, pos) in companion_names_at(chunk) {
            if whole(pos) && !out.companions.contains(&found) {
                out.companions.push(found);
            }
        }
        ControlFlow::Continue(())
    })?;
    Ok(out)
}

/// Every cuDNN library name in `bytes` ([`References::cudnn`]) with the offset where it
/// starts, in order.
fn cudnn_library_names_at(bytes: &[u8]) -> Vec<(String, usize)> {
    use std::sync::LazyLock;
    static NAMES: LazyLock<regex::bytes::Regex> =
        LazyLock::new(|| regex::bytes::Regex::new(r"(?-u)libcudnn(?:_[a-z0-9_]+)?\.so(?:\.\d+)*|(?i:cudnn(?:_[a-z0-9_]+)?64_\d+\.dll)").unwrap());
    NAMES.find_iter(bytes).map(|m| (String::from_utf8_lossy(m.as_bytes()).into_owned(), m.start())).collect()
}

/// Every name of [`References::companions`] in `bytes` with the offset where it starts, in
/// order. A name counts only as a whole string: preceded by a NUL (or the chunk's start) and followed
/// by a NUL (so `libnvrtc.so` inside `libnvrtc.so.12`, or a name inside an error message, is
/// not one).
fn companion_names_at(bytes: &[u8]) -> Vec<(String, usize)> {
    use std::sync::LazyLock;
    static NAMES: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
        regex::bytes::Regex::new(
            r"(?-u)(lib(?:cublasLt|cublas|nvrtc-builtins|nvrtc|nvJitLink)(?:\.alt)?\.so(?:\.(?:%d|\d+))*|(?i:(?:cublaslt|cublas|nvrtc-builtins|nvrtc|nvjitlink)(?:64)?(?:_(?:%d|\d+))+\.dll))\x00",
        )
        .unwrap()
    });
    NAMES
        .captures_iter(bytes)
        .filter_map(|c| c.get(1))
        .filter(|m| m.start() == 0 || bytes[m.start() - 1] == 0)
        .map(|m| (String::from_utf8_lossy(m.as_bytes()).into_owned(), m.start()))
        .collect()
}

/// The symbols the PE or ELF file at `path` imports: a DLL's import table entries, or the
/// undefined dynamic symbols of an ELF file (without their symbol version:
/// `__nvJitLinkCreate_12_6`, not `__nvJitLinkCreate_12_6@libnvJitLink.so.12`), each once, in
/// file order. cuSPARSE, cuFFT and cuSOLVER import nvJitLink's functions by versioned names
/// (`__nvJitLinkAddData_12_6`): what they need of it is read from here (docs/loader.md, F3).
///
/// Errors: I/O errors; `InvalidData` when the file is neither PE nor ELF or its tables are damaged.
pub fn imported_symbols(path: &Path) -> io::Result<Vec<String>> {
    use object::Object as _;
    let cache = ReadCache::new(File::open(path)?);
    let bad = |e: object::read::Error| io::Error::new(io::ErrorKind::InvalidData, format!("not a readable PE or ELF file: {e}"));
    let file = object::File::parse(&cache).map_err(bad)?;
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for i in file.imports().map_err(bad)? {
        let i = i.map_err(bad)?;
        // Imports by ordinal only carry no name.
        let object::read::NameOrOrdinal::Name(name) = i.name() else { continue };
        let name = String::from_utf8_lossy(name).into_owned();
        let name = name.split('@').next().unwrap_or_default().to_string();
        if !name.is_empty() && seen.insert(name.clone()) {
            out.push(name);
        }
    }
    Ok(out)
}

/// The cuDNN library names in `bytes` ([`References::cudnn`]), in order without repeats.
pub fn cudnn_library_names(bytes: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (found, _) in cudnn_library_names_at(bytes) {
        if !out.contains(&found) {
            out.push(found);
        }
    }
    out
}

/// The chunk [`referenced_cuda_libraries`] scans at a time, in bytes ...
const SCAN_CHUNK: usize = 1 << 20;
/// ... and how far consecutive chunks overlap (far longer than any name it looks for).
const SCAN_OVERLAP: usize = 256;

/// The CUDA library names with a major in `bytes` (see [`referenced_cuda_libraries`]).
pub fn cuda_library_names(bytes: &[u8]) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = Vec::new();
    for (found, _) in cuda_library_names_at(bytes) {
        if !out.contains(&found) {
            out.push(found);
        }
    }
    out
}

/// Every match of [`cuda_library_names`] in `bytes` with the offset where it starts, in order.
fn cuda_library_names_at(bytes: &[u8]) -> Vec<((u64, String), usize)> {
    use std::sync::LazyLock;
    static NAMES: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
        regex::bytes::Regex::new(r"(?-u)lib(?:cublasLt|cublas|cudart|nvrtc)\.so\.(\d{1,3})|(?i:(?:cublaslt|cublas|cudart|nvrtc)64_(\d{1,3})(?:_0)?\.dll)")
            .unwrap()
    });
    let mut out = Vec::new();
    for c in NAMES.captures_iter(bytes) {
        let (digits, windows) = match (c.get(1), c.get(2)) {
            (Some(d), _) => (d.as_bytes(), false),
            (None, Some(d)) => (d.as_bytes(), true),
            _ => continue,
        };
        let Some(n) = std::str::from_utf8(digits).ok().and_then(|d| d.parse::<u64>().ok()) else { continue };
        let major = if windows && digits.len() == 3 { n / 10 } else { n };
        let name = String::from_utf8_lossy(&c[0]).into_owned();
        if major > 0 {
            out.push(((major, name), c.get(0).map_or(0, |m| m.start())));
        }
    }
    out
}

/// The names the PE or ELF file at `path` exports: a DLL's export table, or the dynamic
/// symbols an ELF shared library defines (without their symbol version: `cudnnGetVersion`,
/// not `cudnnGetVersion@@libcudnn.so.9`), each once, in file order. The probe derives the
/// cuDNN calls to make from them (`cudnn*VersionCheck`: docs/loader.md, C1).
///
/// Errors: I/O errors; `InvalidData` when the file is neither PE nor ELF or its tables are damaged.
pub fn exported_names(path: &Path) -> io::Result<Vec<String>> {
    use object::Object as _;
    let cache = ReadCache::new(File::open(path)?);
    let bad = |e: object::read::Error| io::Error::new(io::ErrorKind::InvalidData, format!("not a readable PE or ELF file: {e}"));
    let file = object::File::parse(&cache).map_err(bad)?;
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for e in file.exports().map_err(bad)? {
        let e = e.map_err(bad)?;
        // Exports by ordinal only have no name to call.
        let Some(name) = e.name().name().map(|n| String::from_utf8_lossy(n).into_owned()) else { continue };
        if seen.insert(name.clone()) {
            out.push(name);
        }
    }
    Ok(out)
}

/// The dynamic section of an ELF shared library or program: what the loader reads to find
/// its dependencies (ld.so(8), "Rpath token expansion" and the search order; docs/loader.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElfDynamic {
    /// `DT_SONAME`, when set.
    pub soname: Option<String>,
    /// `DT_NEEDED` entries, in order.
    pub needed: Vec<String>,
    /// `DT_RPATH` entries (the `:`-separated list, unexpanded: `$ORIGIN/../lib`).
    pub rpath: Vec<String>,
    /// `DT_RUNPATH` entries, unexpanded; `None` when the file has no `DT_RUNPATH` (then its
    /// `DT_RPATH` is used; with one, `DT_RPATH` is ignored).
    pub runpath: Option<Vec<String>>,
    /// The `PT_INTERP` program header's path (`/lib64/ld-linux-x86-64.so.2`), when the file
    /// has one: a program the kernel starts (its `$ORIGIN` is the folder of its resolved path,
    /// ld.so(8)), whose interpreter is loaded before any `DT_NEEDED`.
    pub interp: Option<String>,
}

/// Reads the dynamic section of the 64-bit ELF file at `path` (headers and the dynamic
/// section with its string table only). `Ok(None)` when the file is not a 64-bit ELF file.
///
/// Errors: I/O errors; `InvalidData` for a damaged ELF file.
pub fn elf_dynamic(path: &Path) -> io::Result<Option<ElfDynamic>> {
    use object::read::elf::ElfFile64;
    let cache = ReadCache::new(File::open(path)?);
    if !matches!(FileKind::parse(&cache), Ok(FileKind::Elf64)) {
        return Ok(None);
    }
    let bad = |e: object::read::Error| io::Error::new(io::ErrorKind::InvalidData, format!("bad ELF file: {e}"));
    let file = ElfFile64::<object::Endianness, _>::parse(&cache).map_err(bad)?;
    let endian = file.endian();
    let table = file.elf_section_table().dynamic_table(endian, &cache).map_err(bad)?;
    let mut out = ElfDynamic::default();
    {
        use object::read::elf::ProgramHeader as _;
        out.interp = file
            .elf_program_headers()
            .iter()
            .find(|h| h.p_type(endian) == object::elf::PT_INTERP)
            .and_then(|h| h.data(endian, &cache).ok())
            .map(|d| String::from_utf8_lossy(d.split(|&b| b == 0).next().unwrap_or_default()).into_owned());
    }
    let split = |s: &[u8]| -> Vec<String> { String::from_utf8_lossy(s).split(':').filter(|p| !p.is_empty()).map(str::to_string).collect() };
    for d in table.iter() {
        let Ok(s) = table.string(d) else { continue };
        match d.tag {
            object::elf::DT_NEEDED => out.needed.push(String::from_utf8_lossy(s).into_owned()),
            object::elf::DT_SONAME => out.soname = Some(String::from_utf8_lossy(s).into_owned()),
            object::elf::DT_RPATH => out.rpath.extend(split(s)),
            object::elf::DT_RUNPATH => out.runpath.get_or_insert_with(Vec::new).extend(split(s)),
            _ => {}
        }
    }
    Ok(Some(out))
}

/// The DLL names in the import table of the 64-bit PE file at `path` (`IMAGE_DIRECTORY_ENTRY_IMPORT`:
/// the DLLs the loader maps before the file runs), as written, in table order, each once
/// (compared without regard to case). Delay-load imports are not among them (they load at
/// their first call). `Ok(None)` when the file is not a 64-bit PE file.
///
/// Errors: I/O errors; `InvalidData` for a damaged import table.
pub fn pe_imports(path: &Path) -> io::Result<Option<Vec<String>>> {
    let cache = ReadCache::new(File::open(path)?);
    if !matches!(FileKind::parse(&cache), Ok(FileKind::Pe64)) {
        return Ok(None);
    }
    let bad = |e: object::read::Error| io::Error::new(io::ErrorKind::InvalidData, format!("bad PE import table: {e}"));
    let pe = PeFile64::parse(&cache).map_err(bad)?;
    let mut out: Vec<String> = Vec::new();
    let Some(table) = pe.import_table().map_err(bad)? else { return Ok(Some(out)) };
    let mut it = table.descriptors().map_err(bad)?;
    while let Some(d) = it.next().map_err(bad)? {
        let name = String::from_utf8_lossy(table.name(d.name.get(LE)).map_err(bad)?).into_owned();
        if !out.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
            out.push(name);
        }
    }
    Ok(Some(out))
}

/// The version a cuDNN library states about itself: the `cudnn_version_<M>_<m>_<p>_<build>_...`
/// marker NVIDIA embeds in one library of each release (`libcudnn_ops_infer.so.8` /
/// `cudnn_ops_infer64_8.dll` in 8.x, `libcudnn_graph.so.9` / `cudnn_graph64_9.dll` in 9.x:
/// `cudnn_version_9_5_0_50_34937467_e0` in the 9.5.0.50 wheels; docs/facts.md §7b), read from
/// its read-only data (`.rodata`, `.lrodata`, `.rdata`); else, for a DLL, the FileVersion of
/// its VERSIONINFO; else the value of the `cudnn_<x>_version` object it exports
/// ([`exported_version`]: 8.x sub-libraries, and graph, ops and adv in 9.x); else the release
/// its build asserts in the same data, `cudnn_version != (9 * 10000 + 5 * 100 + 0)` (three
/// parts: 9.x engines and graph, 8.x `cnn_infer`/`cnn_train`; docs/facts.md §7c). `Ok(None)`
/// when the file tells none of them (9.x `cnn` and `heuristic`: their version is unknown,
/// which is never a mismatch).
///
/// Errors: I/O errors; `InvalidData` when the file is neither PE nor ELF.
pub fn library_version(path: &Path) -> io::Result<Option<Version>> {
    let ranges = section_ranges(path, &[".rodata", ".lrodata", ".rdata"])?;
    let (marker, build) = scan_version(&mut File::open(path)?, &ranges)?;
    if let Some(v) = marker {
        return Ok(Some(v));
    }
    if let Some(v) = inspect(path)?.file_version {
        return Ok(Some(v));
    }
    Ok(exported_version(path)?.map(|(_, v)| v).or(build))
}

/// The version a cuDNN sub-library exports as data: the 4-byte object `cudnn_<x>_version`
/// (`cudnn_ops_train_version` in `libcudnn_ops_train.so.8` / `cudnn_ops_train64_8.dll`,
/// `cudnn_graph_version` in `libcudnn_graph.so.9`), whose value is `M << 16 | m << 8 | p`
/// (0x080904 in 8.9.4.25, 0x080902 in 8.9.2.26, 0x090500 in 9.5.0.50). The libraries that
/// depend on it import it and compare it in their `cudnn*VersionCheck`. Read from the ELF
/// dynamic symbol table or the PE export table, then the 4 bytes at the symbol's address; only
/// the headers, the symbol table and those bytes are read. Returns `(symbol, version)` of the
/// first such export; `Ok(None)` when there is none.
///
/// Errors: I/O errors; `InvalidData` when the file is neither PE nor ELF.
pub fn exported_version(path: &Path) -> io::Result<Option<(String, Version)>> {
    use object::{Object as _, ObjectSection as _};
    let cache = ReadCache::new(File::open(path)?);
    if let Some(found) = elf::exported_version(&cache)? {
        return Ok(found);
    }
    let file = object::File::parse(&cache).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("not a PE or ELF file: {e}")))?;
    let Ok(exports) = file.exports() else { return Ok(None) };
    for e in exports.flatten() {
        let (object::read::NameOrOrdinal::Name(raw), object::read::ExportTarget::Address { address: at }) = (e.name(), e.target()) else { continue };
        if !is_version_export(raw) {
            continue;
        }
        let Some(section) = file.sections().find(|s| s.address() <= at && at + 4 <= s.address() + s.size()) else { continue };
        let Ok(Some(bytes)) = section.data_range(at, 4) else { continue };
        if let Some(v) = export_value_version(bytes) {
            return Ok(Some((String::from_utf8_lossy(raw).into_owned(), v)));
        }
    }
    Ok(None)
}

/// Whether `name` is a `cudnn_<x>_version` export of [`exported_version`] (`<x>`: lowercase
/// letters and `_`).
pub(crate) fn is_version_export(name: &[u8]) -> bool {
    let stem = name.strip_prefix(b"cudnn_").and_then(|n| n.strip_suffix(b"_version"));
    stem.is_some_and(|s| !s.is_empty() && s.iter().all(|b| b.is_ascii_lowercase() || *b == b'_'))
}

/// The release the 4 bytes of a `cudnn_<x>_version` export give (`M << 16 | m << 8 | p`,
/// little-endian); `None` for major 0.
pub(crate) fn export_value_version(bytes: &[u8]) -> Option<Version> {
    let v = u32::from_le_bytes(bytes.try_into().ok()?);
    let (major, minor, patch) = (u64::from(v >> 16), u64::from((v >> 8) & 0xff), u64::from(v & 0xff));
    (major > 0).then(|| Version::new(&[major, minor, patch]))
}

/// The version marker of [`library_version`]: `cudnn_version_<M>_<m>_<p>_<build>_`.
static VERSION_MARKER: std::sync::LazyLock<regex::bytes::Regex> =
    std::sync::LazyLock::new(|| regex::bytes::Regex::new(r"(?-u)cudnn_version_(\d{1,3})_(\d{1,3})_(\d{1,3})_(\d{1,6})_").unwrap());

/// The build's own release in an assertion text of [`library_version`]:
/// `cudnn_version != (<M> * 10000 + <m> * 100 + <p>)` (9.x encoding) or `(<M> * 1000 + ...)` (8.x).
static BUILD_ASSERT: std::sync::LazyLock<regex::bytes::Regex> =
    std::sync::LazyLock::new(|| regex::bytes::Regex::new(r"(?-u)cudnn_version != \((\d{1,3}) \* 10{3,4} \+ (\d{1,3}) \* 100 \+ (\d{1,3})\)").unwrap());

/// The version of the first [`VERSION_MARKER`] in the byte ranges `(start, len)` of `f`, and
/// the first [`BUILD_ASSERT`]'s (only looked for until a marker is found), walked by
/// [`scan_chunks`] (the overlap is longer than either text: `cudnn_version_999_999_999_999999_`
/// is 33 bytes, the assertion at most 47), so memory stays bounded whatever the section size
/// (the `.rodata` of `libcudnn_ops_infer.so.8` 8.9.4.25 is tens of MB, once read whole).
fn scan_version(f: &mut (impl io::Read + io::Seek), ranges: &[(u64, u64)]) -> io::Result<(Option<Version>, Option<Version>)> {
    let mut found = None;
    let mut build = None;
    let number = |b: &[u8]| std::str::from_utf8(b).ok().and_then(|d| d.parse::<u64>().ok()).unwrap_or(0);
    scan_chunks(f, ranges, |chunk, _| {
        if build.is_none()
            && let Some(c) = BUILD_ASSERT.captures(chunk)
        {
            build = Some(Version::new(&[number(&c[1]), number(&c[2]), number(&c[3])]));
        }
        match VERSION_MARKER.captures(chunk) {
            Some(c) => {
                found = Some(Version::new(&[number(&c[1]), number(&c[2]), number(&c[3]), number(&c[4])]));
                ControlFlow::Break(())
            }
            None => ControlFlow::Continue(()),
        }
    })?;
    Ok((found, build))
}

/// Whether the PE or ELF file at `path` is shorter than its own headers say: an image cut
/// short (an interrupted copy or download), which the loader maps and then faults on (SIGBUS)
/// or refuses. Returns `Some((bytes the headers need, bytes the file has))` when it is short;
/// `None` when it is complete or not a 64-bit PE/ELF image whose headers could be read.
///
/// What the headers need: ELF64, the end of the section header table and of every program
/// header's file range (`p_offset + p_filesz`); PE, the end of every section's raw data
/// (`PointerToRawData + SizeOfRawData`), of the COFF symbol table and of the certificate
/// table (Microsoft Learn, "PE Format").
///
/// Errors: I/O errors.
pub fn truncated(path: &Path) -> io::Result<Option<(u64, u64)>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let mut read_at = |at: u64, n: usize| -> Option<Vec<u8>> {
        let mut b = vec![0u8; n];
        f.seek(SeekFrom::Start(at)).ok()?;
        f.read_exact(&mut b).ok()?;
        Some(b)
    };
    let u16_ = |b: &[u8], o: usize| u64::from(u16::from_le_bytes([b[o], b[o + 1]]));
    let u32_ = |b: &[u8], o: usize| u64::from(u32::from_le_bytes(b[o..o + 4].try_into().unwrap()));
    let u64_ = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let Some(head) = read_at(0, 64) else { return Ok(None) };
    let mut need = 0u64;
    if head.starts_with(b"\x7fELF") {
        if head[4] != 2 || head[5] != 1 {
            return Ok(None); // not ELF64 little-endian: not read here
        }
        let (phoff, phentsize, phnum) = (u64_(&head, 0x20), u16_(&head, 0x36), u16_(&head, 0x38));
        let (shoff, shentsize, shnum) = (u64_(&head, 0x28), u16_(&head, 0x3A), u16_(&head, 0x3C));
        need = need.max(shoff.saturating_add(shentsize * shnum)).max(phoff.saturating_add(phentsize * phnum));
        if phentsize >= 40 && phnum > 0 && phoff.saturating_add(phentsize * phnum) <= len {
            let Some(ph) = read_at(phoff, (phentsize * phnum) as usize) else { return Ok(None) };
            for i in 0..phnum as usize {
                let e = &ph[i * phentsize as usize..];
                need = need.max(u64_(e, 8).saturating_add(u64_(e, 32)));
            }
        }
    } else if head.starts_with(b"MZ") {
        let pe = u32_(&head, 0x3C);
        let Some(coff) = read_at(pe, 24) else { return Ok(Some((pe + 24, len))) };
        if &coff[..4] != b"PE\0\0" {
            return Ok(None);
        }
        let (sections, opt) = (u16_(&coff, 6), u16_(&coff, 20));
        let table = pe + 24 + opt;
        need = need.max(table + 40 * sections);
        // The COFF symbol table (mingw builds keep one) and the certificate table (signed
        // releases: data directory 4 of a PE32+ optional header holds its file offset).
        let (symbols, nsym) = (u32_(&coff, 12), u32_(&coff, 16));
        if symbols > 0 {
            need = need.max(symbols + 18 * nsym);
        }
        if opt >= 152
            && let Some(o) = read_at(pe + 24, opt as usize)
            && u16_(&o, 0) == 0x20b
        {
            let (at, size) = (u32_(&o, 144), u32_(&o, 148));
            if at > 0 && size > 0 {
                need = need.max(at + size);
            }
        }
        if let Some(t) = read_at(table, (40 * sections) as usize) {
            for i in 0..sections as usize {
                let e = &t[i * 40..];
                let (size, ptr) = (u32_(e, 16), u32_(e, 20));
                if size > 0 {
                    need = need.max(ptr + size);
                }
            }
        }
    } else {
        return Ok(None);
    }
    Ok((len < need).then_some((need, len)))
}

/// Whether two versions read from files name one release: equal on the parts both have,
/// at least three (`9.5.0` from a file name and `9.5.0.50` from a marker are one release;
/// a bare major says nothing).
pub fn same_release(a: &Version, b: &Version) -> bool {
    let n = a.parts().len().min(b.parts().len()).min(4);
    n >= 3 && a.parts()[..n] == b.parts()[..n]
}

/// `RT_VERSION`, the resource type of VERSIONINFO.
const RT_VERSION: u16 = 16;
/// `VS_FIXEDFILEINFO.dwSignature`.
const FIXED_FILE_INFO_SIGNATURE: [u8; 4] = 0xFEEF04BDu32.to_le_bytes();

/// The bytes of the first RT_VERSION resource (the VS_VERSIONINFO block), if any.
fn pe_version_blob<'a>(pe: &PeFile64<'a, &'a ReadCache<File>>, data: &'a ReadCache<File>) -> Option<&'a [u8]> {
    let sections = pe.section_table();
    let dir = pe.data_directories().resource_directory(data, &sections).ok()??;
    let root = dir.root().ok()?;
    let ty = root.entries.iter().find(|e| e.name_or_id().id() == Some(RT_VERSION))?;
    // type -> name -> language -> data entry; take the first at each level.
    let mut node = ty.data(dir).ok()?;
    let entry = loop {
        match node {
            ResourceDirectoryEntryData::Table(t) => node = t.entries.first()?.data(dir).ok()?,
            ResourceDirectoryEntryData::Data(d) => break d,
        }
    };
    let rva = entry.offset_to_data.get(LE);
    let size = entry.size.get(LE) as usize;
    let bytes = sections.pe_data_at(data, rva)?;
    Some(&bytes[..size.min(bytes.len())])
}

/// Reads the `StringFileInfo` strings of a VS_VERSIONINFO blob: the blocks
/// `VS_VERSION_INFO` -> `StringFileInfo` -> one table per language (`040904E4`) -> `String`s,
/// each `{wLength, wValueLength, wType, szKey (UTF-16, NUL-ended), padding to 4 bytes, Value}`
/// (Microsoft Learn, "VS_VERSIONINFO", "StringFileInfo", "String"). Returns `(key, value)`
/// pairs in file order; a damaged block ends the walk of its level.
pub fn parse_version_strings(blob: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    walk_version_blocks(blob, 0, blob.len(), 0, &mut out);
    out
}

fn u16_at(blob: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(blob.get(at..at + 2)?.try_into().ok()?))
}

/// Reads a NUL-ended UTF-16LE string at `at`, not past `end`; returns it and the offset after its NUL.
fn utf16_at(blob: &[u8], mut at: usize, end: usize) -> (String, usize) {
    let mut units = Vec::new();
    while at + 2 <= end {
        let u = u16_at(blob, at).unwrap_or(0);
        at += 2;
        if u == 0 {
            break;
        }
        units.push(u);
    }
    (String::from_utf16_lossy(&units), at)
}

fn align4(n: usize) -> usize {
    n.div_ceil(4) * 4
}

/// Walks the blocks in `blob[start..end]` at `depth` (0: VS_VERSION_INFO, 1: StringFileInfo /
/// VarFileInfo, 2: a string table, 3: a string).
fn walk_version_blocks(blob: &[u8], start: usize, end: usize, depth: u8, out: &mut Vec<(String, String)>) {
    let mut pos = start;
    while pos + 6 <= end {
        let Some(len) = u16_at(blob, pos).map(usize::from).filter(|l| *l >= 6) else { return };
        let block_end = (pos + len).min(end);
        let value_len = usize::from(u16_at(blob, pos + 2).unwrap_or(0));
        let text = u16_at(blob, pos + 4) == Some(1);
        let (key, after_key) = utf16_at(blob, pos + 6, block_end);
        let value_at = align4(after_key);
        match depth {
            3 => {
                let (value, _) = utf16_at(blob, value_at, block_end);
                out.push((key, value.trim_end().to_string()));
            }
            0 | 2 => {
                let value_bytes = if text { value_len * 2 } else { value_len };
                walk_version_blocks(blob, align4(value_at + value_bytes), block_end, depth + 1, out);
            }
            _ if key == "StringFileInfo" => walk_version_blocks(blob, value_at, block_end, depth + 1, out),
            _ => {}
        }
        if depth == 0 {
            return;
        }
        pos = align4(pos + len);
    }
}

/// Finds `VS_FIXEDFILEINFO` in a VERSIONINFO blob and returns its file version
/// (`HIWORD(MS).LOWORD(MS).HIWORD(LS).LOWORD(LS)`).
pub fn parse_fixed_file_version(blob: &[u8]) -> Option<Version> {
    let at = blob.windows(4).position(|w| w == FIXED_FILE_INFO_SIGNATURE)?;
    let word = |o: usize| -> Option<u32> { Some(u32::from_le_bytes(blob.get(at + o..at + o + 4)?.try_into().ok()?)) };
    let ms = word(8)?;
    let ls = word(12)?;
    Some(Version::new(&[(ms >> 16) as u64, (ms & 0xffff) as u64, (ls >> 16) as u64, (ls & 0xffff) as u64]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_file_info() {
        let mut blob = vec![0u8; 40];
        blob.extend_from_slice(&FIXED_FILE_INFO_SIGNATURE);
        blob.extend_from_slice(&0x0001_0000u32.to_le_bytes());
        blob.extend_from_slice(&((8u32 << 16) | 9).to_le_bytes());
        blob.extend_from_slice(&((4u32 << 16) | 25).to_le_bytes());
        assert_eq!(parse_fixed_file_version(&blob).unwrap().to_string(), "8.9.4.25");
        assert_eq!(parse_fixed_file_version(&[0; 16]), None);
    }

    #[test]
    fn cuda_library_names_in_bytes() {
        // As in the real cuDNN 9.14 for CUDA 13 (docs/facts.md §10): literal names, and a
        // pattern filled in at run time, which says nothing.
        let linux = b"\0libcublasLt.so.13\0libnvrtc.so.%d\0libnvrtc.so\0libcuda.so.1\0xmma/first_layerlibnvrtc.so.13\0";
        assert_eq!(cuda_library_names(linux), [(13, "libcublasLt.so.13".to_string()), (13, "libnvrtc.so.13".to_string())]);
        let windows = b"cublasLt64_13.dll\0nvrtc64_130_0.dll\0nvrtc64_%d_0.dll\0nvcudart_hybrid64.dll\0CUDART64_110.DLL\0cublas64_12.dll";
        let majors: Vec<u64> = cuda_library_names(windows).into_iter().map(|(m, _)| m).collect();
        assert_eq!(majors, [13, 13, 11, 12]);
        assert_eq!(cuda_library_names(b"libcudart.so.11.0 libcudart.so.11.0"), [(11, "libcudart.so.11".to_string())]);
        assert!(cuda_library_names(b"libcudnn.so.9 libcuda.so.1 cudnn64_9.dll libcublas.so libcublas.so.x").is_empty());
    }

    /// One VS_VERSIONINFO-style block: key, value (text when `text`), children.
    fn block(key: &str, value: &[u8], text: bool, children: &[Vec<u8>]) -> Vec<u8> {
        let mut b = vec![0u8; 6];
        for u in key.encode_utf16().chain([0]) {
            b.extend_from_slice(&u.to_le_bytes());
        }
        b.resize(align4(b.len()), 0);
        b.extend_from_slice(value);
        b.resize(align4(b.len()), 0);
        for c in children {
            b.extend_from_slice(c);
            b.resize(align4(b.len()), 0);
        }
        let value_len = if text { value.len() / 2 } else { value.len() };
        let total = b.len() as u16;
        b[0..2].copy_from_slice(&total.to_le_bytes());
        b[2..4].copy_from_slice(&(value_len as u16).to_le_bytes());
        b[4..6].copy_from_slice(&u16::from(text).to_le_bytes());
        b
    }

    fn utf16z(s: &str) -> Vec<u8> {
        s.encode_utf16().chain([0]).flat_map(u16::to_le_bytes).collect()
    }

    #[test]
    fn version_strings() {
        // Laid out like the real cudart64_13.dll of nvidia-cuda-runtime 13.0.96 (docs/facts.md §1).
        let mut fixed = FIXED_FILE_INFO_SIGNATURE.to_vec();
        fixed.extend_from_slice(&0x0001_0000u32.to_le_bytes());
        fixed.extend_from_slice(&((6u32 << 16) | 14).to_le_bytes());
        fixed.extend_from_slice(&((11u32 << 16) | 13000).to_le_bytes());
        fixed.resize(52, 0);
        let strings = [
            ("CompanyName", "NVIDIA Corporation"),
            ("FileDescription", "NVIDIA CUDA Runtime, Version 13.0.96 "),
            ("ProductName", "NVIDIA CUDA 13.0.96 Runtime"),
        ];
        let table = block("040904E4", &[], true, &strings.map(|(k, v)| block(k, &utf16z(v), true, &[])));
        let var = block("VarFileInfo", &[], true, &[block("Translation", &[9, 4, 0xe4, 4], false, &[])]);
        let blob = block("VS_VERSION_INFO", &fixed, false, &[block("StringFileInfo", &[], true, &[table]), var]);
        assert_eq!(parse_fixed_file_version(&blob).unwrap().to_string(), "6.14.11.13000");
        let got = parse_version_strings(&blob);
        let want: Vec<(String, String)> = strings.iter().map(|(k, v)| (k.to_string(), v.trim_end().to_string())).collect();
        assert_eq!(got, want);
        // Damaged or empty blobs give nothing and do not panic.
        assert!(parse_version_strings(&blob[..40]).is_empty());
        assert!(parse_version_strings(&[]).is_empty());
        let _ = parse_version_strings(&[0xff; 64]);
    }

    #[test]
    fn a_version_marker_across_scan_chunks_is_found() {
        for start in [0, SCAN_CHUNK - 40, SCAN_CHUNK - SCAN_OVERLAP, 2 * SCAN_CHUNK - 20] {
            let mut bytes = vec![b'x'; 3 * SCAN_CHUNK];
            let marker = b"cudnn_version_8_9_4_25_120000_e0";
            bytes[start..start + marker.len()].copy_from_slice(marker);
            let (found, _) = scan_version(&mut std::io::Cursor::new(&bytes), &[(0, bytes.len() as u64)]).unwrap();
            assert_eq!(found, Some(Version::new(&[8, 9, 4, 25])), "marker at {start}");
            // Outside the range scanned, it is not found.
            let (found, _) = scan_version(&mut std::io::Cursor::new(&bytes), &[((start + 1) as u64, SCAN_CHUNK as u64)]).unwrap();
            assert_eq!(found, None, "marker at {start}");
        }
    }

    #[test]
    fn a_build_assertion_tells_three_parts_and_a_marker_wins_over_it() {
        // As in the real 9.5.0.50 `libcudnn_engines_runtime_compiled.so.9` and 8.9.4.25
        // `libcudnn_cnn_infer.so.8` (docs/facts.md §7c), cut by a chunk's end.
        for (text, want) in [(&b"cudnn_version != (9 * 10000 + 5 * 100 + 0)"[..], [9, 5, 0]), (b"cudnn_version != (8 * 1000 + 9 * 100 + 4)", [8, 9, 4])] {
            let mut bytes = vec![b'x'; 2 * SCAN_CHUNK];
            let at = SCAN_CHUNK - 20;
            bytes[at..at + text.len()].copy_from_slice(text);
            let (marker, build) = scan_version(&mut std::io::Cursor::new(&bytes), &[(0, bytes.len() as u64)]).unwrap();
            assert_eq!((marker, build), (None, Some(Version::new(&want))));
            // With a marker too, both are read and the caller takes the marker.
            let m = b"cudnn_version_9_5_0_50_34937467_e0";
            bytes[100..100 + m.len()].copy_from_slice(m);
            let (marker, _) = scan_version(&mut std::io::Cursor::new(&bytes), &[(0, bytes.len() as u64)]).unwrap();
            assert_eq!(marker, Some(Version::new(&[9, 5, 0, 50])));
        }
        let (_, build) = scan_version(&mut std::io::Cursor::new(b"cudnn_version != (9 * 10 + 5 * 100 + 0)".to_vec()), &[(0, 40)]).unwrap();
        assert_eq!(build, None);
    }

    #[test]
    fn names_across_scan_chunks_are_read_whole_and_once() {
        let mut bytes = vec![b'x'; 3 * SCAN_CHUNK];
        let mut put = |at: usize, name: &[u8]| bytes[at..at + name.len()].copy_from_slice(name);
        // Cut by the first chunk's end: "libcudart.so.1" must not be taken for CUDA 1.
        put(SCAN_CHUNK - 14, b"libcudart.so.12");
        // Inside the overlap of the second and third chunks.
        put(2 * SCAN_CHUNK - SCAN_OVERLAP - 100, b"cublasLt64_11.dll");
        put(3 * SCAN_CHUNK - 20, b"libnvrtc.so.13");
        put(SCAN_CHUNK + 4000, b"libcudnn_ops.so");
        put(2 * SCAN_CHUNK - 2 * SCAN_OVERLAP - 10, b"cudnn_engines_tensor_ir64_9.dll");
        let found = scan_ranges(&mut std::io::Cursor::new(&bytes), &[(0, bytes.len() as u64)]).unwrap();
        assert_eq!(found.cuda, vec![(12, "libcudart.so.12".to_string()), (11, "cublasLt64_11.dll".to_string()), (13, "libnvrtc.so.13".to_string())]);
        assert_eq!(found.cudnn, ["libcudnn_ops.so", "cudnn_engines_tensor_ir64_9.dll"]);
    }

    #[test]
    fn cudnn_names_as_the_real_dispatchers_write_them() {
        // The strings of the real 9.5.0.50 `libcudnn.so.9` (the version is appended at run
        // time) and `cudnn64_9.dll`, and a format string that is no name.
        let blob =
            b"%s.%d.%d.%d\0libcudnn_graph.so\0cudnnGetVersion\0libcudnn.so.9\0CUDNN_ADV64_9.DLL\0cudnn_engines_runtime_compiled64_9.dll\0libcudnn_%s.so\0";
        assert_eq!(cudnn_library_names(blob), ["libcudnn_graph.so", "libcudnn.so.9", "CUDNN_ADV64_9.DLL", "cudnn_engines_runtime_compiled64_9.dll"]);
    }
}
