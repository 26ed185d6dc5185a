//! Integration tests of `cuenv store`: every accepted layout, content addressing, list,
//! verify, remove, and one test per error message (exit code 2, the member and rule
//! named, a hint, and the store left unchanged). Fixtures are built at test time by
//! `support`.

mod support;

use std::fs;
use std::path::Path;

use support::*;

// ------------------------------------------------------------------ fixtures themselves

mod fixtures {
    use super::*;

    fn inspect_bytes(bytes: &[u8]) -> cuenv::binfmt::BinaryInfo {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        fs::write(&p, bytes).unwrap();
        cuenv::binfmt::inspect(&p).unwrap()
    }

    #[test]
    fn pe_dll_parses_with_its_file_version() {
        let info = inspect_bytes(&pe_dll(PeArch::Amd64, Some([9, 5, 0, 50]), "cudnn64_9.dll"));
        assert_eq!(info.platform, Some(cuenv::binfmt::Platform::WindowsX86_64));
        assert_eq!(info.file_version.map(|v| v.to_string()).as_deref(), Some("9.5.0.50"));
    }

    #[test]
    fn pe_dll_without_versioninfo() {
        let info = inspect_bytes(&pe_dll(PeArch::Amd64, None, "cudnn_graph64_9.dll"));
        assert_eq!(info.platform, Some(cuenv::binfmt::Platform::WindowsX86_64));
        assert_eq!(info.file_version, None);
    }

    #[test]
    fn pe32_is_no_cudnn_platform() {
        let info = inspect_bytes(&pe_dll(PeArch::I386, Some([9, 5, 0, 50]), "x"));
        assert_eq!(info.platform, None);
        assert!(info.describe.contains("PE32"), "{}", info.describe);
    }

    #[test]
    fn elf_so_is_linux_x86_64() {
        let info = inspect_bytes(&elf_so("libcudnn.so.9"));
        assert_eq!(info.platform, Some(cuenv::binfmt::Platform::LinuxX86_64));
        let info = inspect_bytes(&elf_so_machine("libcudnn.so.9", 183));
        assert_eq!(info.platform, Some(cuenv::binfmt::Platform::LinuxSbsa));
    }

    #[test]
    fn zips_read_back_with_the_zip_crate() {
        let dir = tempfile::tempdir().unwrap();
        let p = wheel(dir.path(), &Release::V9, WheelOs::Windows);
        let mut z = zip::ZipArchive::new(fs::File::open(&p).unwrap()).unwrap();
        let mut names = Vec::new();
        for i in 0..z.len() {
            let mut f = z.by_index(i).unwrap();
            names.push(f.name().unwrap().to_string());
            std::io::copy(&mut f, &mut std::io::sink()).unwrap();
        }
        assert!(names.contains(&"nvidia/cudnn/bin/cudnn64_9.dll".to_string()), "{names:?}");
        assert!(names.contains(&"nvidia_cudnn_cu12-9.5.0.50.dist-info/RECORD".to_string()), "{names:?}");
    }
}
