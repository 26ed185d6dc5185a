//! Hand-assembled Windows DLLs (PE32+ / PE32), so that no test needs mingw's gcc or windres to
//! read a DLL the way cuenv does (statically: VERSIONINFO, strings in `.rdata`, the section
//! table). [`pe_dll`] is the one-call form; [`PeDll`] adds a VERSIONINFO string table (as
//! windres writes it from a resource script) and an `.rdata` section holding given bytes (the
//! names a DLL passes to `LoadLibrary`, a cuDNN version marker).
//!
//! Layouts: Microsoft Learn, "PE Format" (headers, section table, `.rsrc` directory) and
//! "VS_VERSIONINFO" / "StringFileInfo" / "StringTable" / "String" (the version resource).

/// The machine of a PE image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeArch {
    /// PE32+, IMAGE_FILE_MACHINE_AMD64.
    Amd64,
    /// PE32, IMAGE_FILE_MACHINE_I386.
    I386,
}

const RSRC_RVA: u32 = 0x1000;
const FILE_ALIGN: u32 = 0x200;
const SECT_ALIGN: u32 = 0x1000;
const HEADERS: u32 = 0x200;

fn align(n: u32, a: u32) -> u32 {
    n.div_ceil(a) * a
}

/// A minimal PE DLL: DOS header, NT headers, one `.rsrc` section. With `version`, the
/// section holds an RT_VERSION resource (type 16 / name 1 / language 0x409) whose
/// VS_FIXEDFILEINFO carries that FileVersion; without, the resource directory is empty
/// (no VERSIONINFO). `tag` is stored in the section so each DLL's bytes differ.
pub fn pe_dll(arch: PeArch, version: Option<[u16; 4]>, tag: &str) -> Vec<u8> {
    PeDll::new(arch, tag).version(version).build()
}

/// A DLL to build: see the module doc. Without [`PeDll::string`] and [`PeDll::rdata`] the
/// bytes are those of [`pe_dll`].
#[derive(Debug, Clone)]
pub struct PeDll {
    arch: PeArch,
    tag: String,
    version: Option<[u16; 4]>,
    strings: Vec<(String, String)>,
    rdata: Vec<u8>,
}

impl PeDll {
    /// A DLL for `arch` with no VERSIONINFO; `tag` is stored in it so each DLL's bytes differ.
    pub fn new(arch: PeArch, tag: &str) -> Self {
        PeDll { arch, tag: tag.to_string(), version: None, strings: Vec::new(), rdata: Vec::new() }
    }

    /// The VS_FIXEDFILEINFO FileVersion (and ProductVersion); `None`: no VERSIONINFO.
    pub fn version(mut self, v: Option<[u16; 4]>) -> Self {
        self.version = v;
        self
    }

    /// One `String` of the VERSIONINFO's `StringFileInfo` table `040904E4` (needs a version).
    pub fn string(mut self, key: &str, value: &str) -> Self {
        self.strings.push((key.to_string(), value.to_string()));
        self
    }

    /// Appends `bytes` to an `.rdata` section (created on first use).
    pub fn rdata(mut self, bytes: &[u8]) -> Self {
        self.rdata.extend_from_slice(bytes);
        self
    }

    /// Writes the DLL to `dir/file` (creating `dir`) and returns its path.
    pub fn write(&self, dir: &std::path::Path, file: &str) -> std::path::PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(file);
        std::fs::write(&path, self.build()).unwrap();
        path
    }

    /// The DLL's bytes.
    pub fn build(&self) -> Vec<u8> {
        assert!(self.strings.is_empty() || self.version.is_some(), "a VERSIONINFO string table needs a version");
        let pe64 = self.arch == PeArch::Amd64;
        let mut rsrc = self.version.map(|v| version_resource(v, &self.strings, RSRC_RVA)).unwrap_or_default();
        let rsrc_len = rsrc.len() as u32;
        rsrc.extend_from_slice(format!("fake {}\0", self.tag).as_bytes());
        // (name, content, rva, raw offset, raw size, characteristics)
        let mut sections = vec![(*b".rsrc\0\0\0", rsrc, RSRC_RVA, HEADERS, 0u32, 0x4000_0040u32)];
        if !self.rdata.is_empty() {
            let (_, prev, rva, raw, _, _) = &sections[0];
            let (rva, raw) = (rva + align(prev.len() as u32, SECT_ALIGN), raw + align(prev.len() as u32, FILE_ALIGN));
            sections.push((*b".rdata\0\0", self.rdata.clone(), rva, raw, 0, 0x4000_0040));
        }
        for s in &mut sections {
            s.4 = align(s.1.len() as u32, FILE_ALIGN);
        }
        let initialized: u32 = sections.iter().map(|s| s.4).sum();
        let last = sections.last().unwrap();
        let image_size = last.2 + align(last.1.len() as u32, SECT_ALIGN);

        let mut h: Vec<u8> = Vec::new();
        let u16le = |h: &mut Vec<u8>, v: u16| h.extend_from_slice(&v.to_le_bytes());
        let u32le = |h: &mut Vec<u8>, v: u32| h.extend_from_slice(&v.to_le_bytes());
        let u64le = |h: &mut Vec<u8>, v: u64| h.extend_from_slice(&v.to_le_bytes());
        h.extend_from_slice(b"PE\0\0");
        // COFF file header
        u16le(&mut h, if pe64 { 0x8664 } else { 0x014c });
        u16le(&mut h, sections.len() as u16);
        u32le(&mut h, 0); // time stamp
        u32le(&mut h, 0); // symbol table
        u32le(&mut h, 0); // symbols
        u16le(&mut h, if pe64 { 240 } else { 224 }); // optional header size
        u16le(&mut h, if pe64 { 0x2022 } else { 0x2102 }); // EXECUTABLE | (LARGE_ADDRESS_AWARE | 32BIT_MACHINE) | DLL
        // Optional header
        u16le(&mut h, if pe64 { 0x20b } else { 0x10b });
        h.extend_from_slice(&[14, 0]); // linker version
        u32le(&mut h, 0); // SizeOfCode
        u32le(&mut h, initialized); // SizeOfInitializedData
        u32le(&mut h, 0); // SizeOfUninitializedData
        u32le(&mut h, 0); // AddressOfEntryPoint
        u32le(&mut h, 0); // BaseOfCode
        if pe64 {
            u64le(&mut h, 0x1_8000_0000); // ImageBase
        } else {
            u32le(&mut h, 0); // BaseOfData
            u32le(&mut h, 0x1000_0000); // ImageBase
        }
        u32le(&mut h, SECT_ALIGN);
        u32le(&mut h, FILE_ALIGN);
        for v in [6u16, 0, 0, 0, 6, 0] {
            u16le(&mut h, v); // OS, image, subsystem versions
        }
        u32le(&mut h, 0); // Win32VersionValue
        u32le(&mut h, image_size); // SizeOfImage
        u32le(&mut h, HEADERS); // SizeOfHeaders
        u32le(&mut h, 0); // CheckSum
        u16le(&mut h, 2); // Subsystem: Windows GUI
        u16le(&mut h, if pe64 { 0x0160 } else { 0x0140 }); // DllCharacteristics
        for v in [0x10_0000u64, 0x1000, 0x10_0000, 0x1000] {
            if pe64 { u64le(&mut h, v) } else { u32le(&mut h, v as u32) }
        }
        u32le(&mut h, 0); // LoaderFlags
        u32le(&mut h, 16); // NumberOfRvaAndSizes
        for i in 0..16 {
            let (rva, size) = if i == 2 && rsrc_len > 0 { (RSRC_RVA, rsrc_len) } else { (0, 0) };
            u32le(&mut h, rva);
            u32le(&mut h, size);
        }
        // Section table
        for (name, content, rva, raw, raw_size, flags) in &sections {
            h.extend_from_slice(name);
            u32le(&mut h, content.len() as u32); // VirtualSize
            u32le(&mut h, *rva); // VirtualAddress
            u32le(&mut h, *raw_size); // SizeOfRawData
            u32le(&mut h, *raw); // PointerToRawData
            u32le(&mut h, 0);
            u32le(&mut h, 0);
            u16le(&mut h, 0);
            u16le(&mut h, 0);
            u32le(&mut h, *flags); // INITIALIZED_DATA | MEM_READ
        }

        let mut out = vec![0u8; HEADERS as usize];
        out[0..2].copy_from_slice(b"MZ");
        out[0x3c..0x40].copy_from_slice(&0x40u32.to_le_bytes());
        out[0x40..0x40 + h.len()].copy_from_slice(&h);
        for (_, content, _, raw, raw_size, _) in &sections {
            assert_eq!(out.len(), *raw as usize);
            out.extend_from_slice(content);
            out.resize((raw + raw_size) as usize, 0);
        }
        out
    }
}

/// An `.rsrc` section body at `rva` with one RT_VERSION resource carrying `v` and `strings`.
fn version_resource(v: [u16; 4], strings: &[(String, String)], rva: u32) -> Vec<u8> {
    let mut r = Vec::new();
    let dir = |r: &mut Vec<u8>, id: u32, to: u32| {
        r.extend_from_slice(&[0u8; 12]); // Characteristics, TimeDateStamp, Major/MinorVersion
        r.extend_from_slice(&0u16.to_le_bytes()); // named entries
        r.extend_from_slice(&1u16.to_le_bytes()); // id entries
        r.extend_from_slice(&id.to_le_bytes());
        r.extend_from_slice(&to.to_le_bytes());
    };
    // Three directory levels of 24 bytes each: type 16 -> name 1 -> language 0x409.
    dir(&mut r, 16, 0x8000_0000 | 24);
    dir(&mut r, 1, 0x8000_0000 | 48);
    dir(&mut r, 0x409, 72);
    let blob = vs_versioninfo(v, strings);
    // IMAGE_RESOURCE_DATA_ENTRY at 72; the data follows at 88. OffsetToData is an RVA.
    r.extend_from_slice(&(rva + 88).to_le_bytes());
    r.extend_from_slice(&(blob.len() as u32).to_le_bytes());
    r.extend_from_slice(&1200u32.to_le_bytes()); // code page (UTF-16)
    r.extend_from_slice(&0u32.to_le_bytes());
    assert_eq!(r.len(), 88);
    r.extend_from_slice(&blob);
    r
}

fn pad4(b: &mut Vec<u8>) {
    while !b.len().is_multiple_of(4) {
        b.push(0);
    }
}

/// One version-resource block: `{wLength, wValueLength, wType, szKey, padding, Value,
/// padding, Children}`; `value_len` is in bytes for binary values and in UTF-16 units for text.
fn block(key: &str, value: &[u8], value_len: u16, text: bool, children: &[Vec<u8>]) -> Vec<u8> {
    let mut b = vec![0u8; 2];
    b.extend_from_slice(&value_len.to_le_bytes());
    b.extend_from_slice(&u16::from(text).to_le_bytes());
    for u in key.encode_utf16().chain([0]) {
        b.extend_from_slice(&u.to_le_bytes());
    }
    pad4(&mut b);
    b.extend_from_slice(value);
    for c in children {
        pad4(&mut b);
        b.extend_from_slice(c);
    }
    let len = b.len() as u16;
    b[0..2].copy_from_slice(&len.to_le_bytes());
    b
}

/// A VS_VERSIONINFO block: its VS_FIXEDFILEINFO and, with `strings`, a `StringFileInfo`
/// table `040904E4` and a `VarFileInfo` translation (0x409, 1252), as windres writes them.
fn vs_versioninfo(v: [u16; 4], strings: &[(String, String)]) -> Vec<u8> {
    let ms = (u32::from(v[0]) << 16) | u32::from(v[1]);
    let ls = (u32::from(v[2]) << 16) | u32::from(v[3]);
    let mut fixed = Vec::new();
    for w in [0xFEEF_04BDu32, 0x0001_0000, ms, ls, ms, ls, 0x3F, 0, 0x0004_0004, 2, 0, 0, 0] {
        fixed.extend_from_slice(&w.to_le_bytes());
    }
    let mut children = Vec::new();
    if !strings.is_empty() {
        let table: Vec<Vec<u8>> = strings
            .iter()
            .map(|(k, v)| {
                let units: Vec<u16> = v.encode_utf16().chain([0]).collect();
                let bytes: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
                block(k, &bytes, units.len() as u16, true, &[])
            })
            .collect();
        children.push(block("StringFileInfo", &[], 0, true, &[block("040904E4", &[], 0, true, &table)]));
        let translation = [0x09, 0x04, 0xe4, 0x04];
        children.push(block("VarFileInfo", &[], 0, true, &[block("Translation", &translation, 4, false, &[])]));
    }
    block("VS_VERSION_INFO", &fixed, 52, false, &children)
}

/// A `cudart64_*.dll` whose VERSIONINFO is laid out like the real `cudart64_13.dll` of
/// nvidia-cuda-runtime 13.0.96 (FileVersion 6.14.11.13000, ProductName
/// `NVIDIA CUDA 13.0.96 Runtime`; docs/facts.md §1), for `cuda` = `13.0.96`.
pub fn cudart_dll(cuda: &str) -> PeDll {
    let parts: Vec<u16> = cuda.split('.').map(|p| p.parse::<u16>().unwrap()).collect();
    let encoded = parts[0] * 1000 + parts[1] * 10;
    PeDll::new(PeArch::Amd64, &format!("cudart {cuda}"))
        .version(Some([6, 14, 11, encoded]))
        .string("CompanyName", "NVIDIA Corporation")
        .string("FileDescription", &format!("NVIDIA CUDA Runtime, Version {cuda} "))
        .string("FileVersion", &format!("6,14,11,{encoded}"))
        .string("OriginalFilename", &format!("CUDART64_{}{}_{}.DLL", parts[0], parts[1], parts[2]))
        .string("ProductName", &format!("NVIDIA CUDA {cuda} Runtime"))
}
