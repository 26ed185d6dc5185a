//! Reading the section table and the exported symbols of a PE or ELF file from its headers
//! alone, for files of hundreds of MB (cuDNN's sub-libraries): `object::File::parse` reads every
//! symbol table of an ELF file, and its `ReadCache` keeps every read (126 MiB of anonymous
//! memory for the 635 MB `libcudnn_cnn_infer.so.8` of cuDNN 8.9.4.25, docs/performance.md).

use std::fs::File;
use std::io;

use object::read::ReadCache;

use crate::cudnn::version::Version;
use crate::sys::binfmt;

/// One row of [`section_table`]: (name, file range `(start, len)`, size in bytes).
pub type SectionRow = (String, Option<(u64, u64)>, u64);

/// Every section of the PE or ELF file read through `cache`: (name, file range `(start, len)`
/// where the section has bytes in the file, size in bytes), in the order of the section
/// table. Reads the headers, the section table and its string table only: a 64-bit ELF file
/// is read with `object`'s low-level section table, since `object::File::parse` also reads
/// every symbol table, 126 MiB of them for the 635 MB `libcudnn_cnn_infer.so.8` of
/// cuDNN 8.9.4.25 (its import's peak anonymous memory).
///
/// Errors: I/O errors; `InvalidData` when the file is neither PE nor ELF.
pub fn section_table(cache: &ReadCache<File>) -> io::Result<Vec<SectionRow>> {
    use object::read::elf::{FileHeader as _, SectionHeader as _};
    use object::{Object as _, ObjectSection as _};
    let bad = |e: object::Error| io::Error::new(io::ErrorKind::InvalidData, format!("not a PE or ELF file: {e}"));
    if object::FileKind::parse(cache).map_err(bad)? == object::FileKind::Elf64 {
        let header = object::elf::FileHeader64::<object::Endianness>::parse(cache).map_err(bad)?;
        let endian = header.endian().map_err(bad)?;
        let sections = header.sections(endian, cache).map_err(bad)?;
        return Ok(sections
            .iter()
            .map(|sh| {
                let name = sections.section_name(endian, sh).map(|n| String::from_utf8_lossy(n).into_owned()).unwrap_or_default();
                (name, sh.file_range(endian), sh.sh_size(endian))
            })
            .collect());
    }
    let file = object::File::parse(cache).map_err(bad)?;
    Ok(file.sections().map(|s| (s.name().unwrap_or_default().to_string(), s.file_range(), s.size())).collect())
}

/// [`crate::sys::binfmt::exported_version`] of a little-endian 64-bit ELF file: `.dynsym` and `.dynstr` are read
/// once (0.9 MB and 7 MB for the 635 MB `libcudnn_cnn_infer.so.8` of 8.9.4.25)
/// and walked by hand, where `object`'s export list reads every symbol name through
/// `ReadCache`, which keeps each read: 126 MiB of anonymous memory for that library.
/// `Ok(None)` for any other file (the caller then uses `object`'s export list).
pub fn exported_version(cache: &ReadCache<File>) -> io::Result<Option<Option<(String, Version)>>> {
    use object::read::ReadRef as _;
    use object::read::elf::{FileHeader as _, SectionHeader as _};
    let bad = |e: object::Error| io::Error::new(io::ErrorKind::InvalidData, format!("bad ELF file: {e}"));
    if object::FileKind::parse(cache).map_err(bad)? != object::FileKind::Elf64 {
        return Ok(None);
    }
    let header = object::elf::FileHeader64::<object::Endianness>::parse(cache).map_err(bad)?;
    let endian = header.endian().map_err(bad)?;
    if endian != object::Endianness::Little {
        return Ok(None);
    }
    let sections = header.sections(endian, cache).map_err(bad)?;
    let Some((_, dynsym)) = sections.iter().enumerate().find(|(_, sh)| sh.sh_type(endian) == object::elf::SHT_DYNSYM) else { return Ok(Some(None)) };
    let read = |sh: &object::elf::SectionHeader64<object::Endianness>| -> io::Result<&[u8]> {
        let (at, len) = sh.file_range(endian).unwrap_or((0, 0));
        cache.read_bytes_at(at, len).map_err(|()| io::Error::new(io::ErrorKind::UnexpectedEof, "a section ends past the end of the file"))
    };
    let Ok(strtab) = sections.section(object::SectionIndex(dynsym.sh_link(endian) as usize)) else { return Ok(Some(None)) };
    let (syms, names) = (read(dynsym)?, read(strtab)?);
    for sym in syms.chunks_exact(24) {
        let (name_at, shndx, value) = (
            u32::from_le_bytes(sym[0..4].try_into().expect("4 bytes")) as usize,
            u16::from_le_bytes([sym[6], sym[7]]),
            u64::from_le_bytes(sym[8..16].try_into().expect("8 bytes")),
        );
        if shndx == 0 || name_at >= names.len() {
            continue;
        }
        let raw = &names[name_at..];
        let name = &raw[..raw.iter().position(|b| *b == 0).unwrap_or(raw.len())];
        if !binfmt::is_version_export(name) {
            continue;
        }
        // The 4 bytes at the symbol's address, in the section that holds them.
        let Some(sh) = sections.iter().find(|sh| sh.sh_addr(endian) <= value && value + 4 <= sh.sh_addr(endian) + sh.sh_size(endian)) else { continue };
        let Some((start, _)) = sh.file_range(endian) else { continue };
        let Ok(bytes) = cache.read_bytes_at(start + (value - sh.sh_addr(endian)), 4) else { continue };
        if let Some(v) = binfmt::export_value_version(bytes) {
            return Ok(Some(Some((String::from_utf8_lossy(name).into_owned(), v))));
        }
    }
    Ok(Some(None))
}
