//! The CUDA toolkit's link-time stub of the driver, `stubs/libcuda.so`, where a process would
//! load it (docs/loader.md D1).
//!
//! NVIDIA's toolkits ship `lib64/stubs/libcuda.so` (`targets/<arch>/lib/stubs/libcuda.so`;
//! Debian's `cuda-driver-dev-12-4` package lists exactly that file) so that programs link
//! against the driver API on machines without a driver. The stub defines every function of the
//! driver API and each returns `CUDA_ERROR_STUB_LIBRARY` (34, "CUDA driver is a stub library":
//! cuda.h, the CUDA Driver API's error codes), and its `DT_SONAME` is `libcuda.so.1`, unlike
//! its file name, so that programs linked with it ask for the driver's `libcuda.so.1` at run
//! time (CMake Discourse, "Linking against CUDA::cuda_driver ... wants libcuda.so.1",
//! discourse.cmake.org/t/7455). A folder of stubs on `LD_LIBRARY_PATH` therefore wins every
//! load of the unversioned `libcuda.so` (cuDNN 8, numba, Warp load that name) ahead of the
//! ld.so cache, and every load of `libcuda.so.1` where someone linked that name to the stub.
//!
//! The test: a `libcuda.so*` file that is a 64-bit ELF file and lies in a folder named
//! `stubs` (as found, or after resolving links). The file's symbols do not tell the stub from
//! the driver (both define the whole API), and WSL's real driver is a plain file named
//! `libcuda.so` with the same `DT_SONAME`, so the folder is the test.

use std::path::{Path, PathBuf};

use super::loader::{self, LinuxEnv, Object};
use super::{Finding, Severity};

/// Whether `path` is NVIDIA's stub `libcuda.so` (see the module documentation).
pub fn is_stub_libcuda(path: &Path) -> bool {
    let named = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("libcuda.so"));
    let in_stubs = |p: &Path| p.parent().and_then(Path::file_name).is_some_and(|n| n == "stubs");
    named && (in_stubs(path) || std::fs::canonicalize(path).is_ok_and(|c| in_stubs(&c))) && crate::sys::binfmt::elf_dynamic(path).ok().flatten().is_some()
}

/// The problem of a stub `libcuda` serving the load of `name`: `path` is the stub, `who`
/// says who loads it (the chain of importers, or "a load by name").
pub fn finding(name: &str, path: &Path, who: &str) -> Finding {
    let folder = path.parent().unwrap_or(path);
    Finding {
        rule: None,
        severity: Severity::Problem,
        message: format!(
            "{name} ({who}) would be {}, the CUDA toolkit's link-time stub, not the driver: every driver call fails with CUDA_ERROR_STUB_LIBRARY (\"CUDA driver is a stub library\")",
            path.display()
        ),
        hint: Some(format!(
            "remove {} from LD_LIBRARY_PATH (and from any DT_RUNPATH / DT_RPATH): stub folders are for linking only (`-L`), never for run time",
            folder.display()
        )),
    }
}

/// For the loader path `ld_library_path`: each of `libcuda.so` and `libcuda.so.1` that a load
/// by name (from a program without `DT_RPATH`, like python) would take from a stub folder
/// ([`loader::find`]), one problem each.
pub fn on_loader_path(ld_library_path: &[PathBuf]) -> Vec<Finding> {
    let env = LinuxEnv::new(ld_library_path.to_vec());
    let asker = Object::bare(Path::new("/"));
    let mut out = Vec::new();
    for name in ["libcuda.so", "libcuda.so.1"] {
        if let Some(p) = loader::find(name, &asker, &[], &env).filter(|p| is_stub_libcuda(&p.path)) {
            out.push(finding(name, &p.path, &format!("a load by name, {}", p.via.describe("LD_LIBRARY_PATH"))));
        }
    }
    out
}
