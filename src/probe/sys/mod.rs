//! Platform twins with identical signatures: load a library by bare name through the OS
//! loader, and list the files mapped into this process.
//!
//! - `load(name) -> Result<Library, LoadError>`: Linux `dlopen` (the text of `dlerror`);
//!   Windows `LoadLibraryExW(name, 0, 0)`, the standard search order (docs/facts.md §5), with
//!   `GetLastError` kept as the code (126, 127, 193).
//! - `loaded_module_paths() -> Vec<PathBuf>`: Linux `/proc/self/maps` (paths as the kernel
//!   resolved them: symlinks followed); Windows `EnumProcessModules` + `GetModuleFileNameW`.
//! - `prepare_process()`: Windows turns off the loader's and the crash handler's dialog boxes,
//!   so a missing DLL is an error code and a crash is an exit code, never a window.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::{load, loaded_module_paths, prepare_process};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::{load, loaded_module_paths, prepare_process};
