//! CUDA toolkit roots: where they are, which CUDA version each one is, whether its CUDA
//! runtime library is there, and which cuDNN (if any) was copied into it by hand.
//!
//! Facts this module relies on (CUDA installer layout; docs/facts.md §1, §2, §5):
//! - A toolkit root holds `version.json` (CUDA 11.1 and later:
//!   `{"cuda": {"name": "CUDA SDK", "version": "12.6.2"}, ...}`) or `version.txt` (older:
//!   `CUDA Version 10.2.89`). A CUDA 13 root may have neither; its version is then read from
//!   the runtime's file name or VERSIONINFO, `CUDART_VERSION` in `include/cuda_runtime_api.h`,
//!   or the folder name, in that order (never by running `nvcc`).
//! - Its runtime is `bin\cudart64_<N>.dll` on Windows (`cudart64_110.dll` for 11.x,
//!   `cudart64_12.dll` for 12.x; `bin\x64\` is also accepted, since CUDA 13 era Windows
//!   packages moved DLLs there — an uncertain fact, so both are looked at), and
//!   `lib64/libcudart.so*` (a link to `targets/<arch>-linux/lib`), `lib/` or
//!   `targets/*/lib/` on Linux.
//! - The Windows installer puts toolkits in `%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\v<maj>.<min>`
//!   and sets `CUDA_PATH` (the last one installed) and `CUDA_PATH_V<maj>_<min>` (each one).
//!   Linux packages install `/usr/local/cuda-<maj>.<min>` with a `/usr/local/cuda` link;
//!   some distributions use `/opt/cuda`; `CUDA_HOME` / `CUDA_PATH` are conventions of build tools.
//! - Users often copy cuDNN's files into the toolkit by hand (`bin\cudnn*64_<N>.dll`,
//!   `lib64/libcudnn*.so*`, `include\cudnn*.h`). The dispatcher (`cudnn64_<N>.dll`,
//!   `libcudnn.so.<N>`) loads its sub-libraries at run time, so a dispatcher alone fails.
//!
//! Layout checks are the same on every platform (a Windows toolkit seen from Linux, e.g.
//! under WSL's `/mnt/c`, is recognised); only the default search locations
//! ([`default_roots`]) differ by platform.
//!
//! Files: `env.rs` (what discovery reads from its surroundings), `discovery.rs` (where to look,
//! deduplication), `inspect.rs` (one root: version, runtime, hand-copied cuDNN). This file holds
//! the data and error types they share. The table `cuenv toolkits` prints is drawn by the CLI.

pub mod wheel;

mod discovery;
mod env;
#[cfg(test)]
pub(crate) mod fixtures;
mod inspect;

use std::io;
use std::path::PathBuf;

use serde::Serialize;

use crate::cudnn::platform::Platform;
use crate::cudnn::version::Version;
use crate::error::{Diagnose, ExitCode};
use crate::home::settings::TOOLKIT_PATHS_VAR;

pub use discovery::{Candidate, default_roots, discover, discover_all, discover_from};
pub use env::{Env, ProcessEnv};
pub use inspect::inspect_root;

/// The `found_by` label of the Windows installer's default location.
pub const WINDOWS_GLOB_LABEL: &str = r"%ProgramFiles%\NVIDIA GPU Computing Toolkit\CUDA\v*";

/// The largest version file read (real ones are a few KiB).
const MAX_VERSION_FILE: u64 = 1 << 20;

/// One CUDA toolkit root, as `cuenv toolkits` shows it (and `--json` prints it).
///
/// JSON shape: `{"root": "/usr/local/cuda-12.6", "version": "12.6.2" | null,
/// "version_source": "version.json" | "version.txt" | "runtime file name" | "runtime VERSIONINFO"
/// | "include/cuda_runtime_api.h" | "folder name" | null, "found_by": ["/usr/local/cuda-*", ...],
/// "runtime": "<path>" | null, "platform": "linux-x86_64" | null,
/// "hand_copied_cudnn": {...} | null, "problems": ["..."]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Toolkit {
    /// The root, canonicalized (symlinks resolved; on Windows without the `\\?\` prefix).
    #[serde(serialize_with = "crate::sys::paths::ser_lossy")]
    pub root: PathBuf,
    /// The CUDA version: the numeric dotted prefix (1 to 4 parts) of the version file's
    /// version; without a readable version file (CUDA 13 roots may have none), the version the
    /// root's other files give, in the order `version_source` lists. `None` when nothing
    /// gives one (see `problems`).
    pub version: Option<Version>,
    /// Where `version` came from, in the order tried: `"version.json"`, `"version.txt"`, then
    /// `"runtime file name"` (`libcudart.so.13.0.96`; or only the major, from
    /// `libcudart.so.13` / `cudart64_13.dll`, when nothing else says more) or
    /// `"runtime VERSIONINFO"` (`cudart64_*.dll`), `"include/cuda_runtime_api.h"`
    /// (`CUDART_VERSION`, major.minor) and `"folder name"` (`cuda-13.0`, `v13.0`).
    pub version_source: Option<String>,
    /// How the root was found, in search order: a variable name (`CUDA_PATH`,
    /// `CUDA_PATH_V12_6`, `CUDA_HOME`, `CUENV_TOOLKIT_PATHS`) or a location
    /// (`/usr/local/cuda-*`, `/usr/local/cuda`, `/opt/cuda`, [`WINDOWS_GLOB_LABEL`]).
    /// Empty for a root inspected directly with [`inspect_root`].
    pub found_by: Vec<String>,
    /// The CUDA runtime library found (`bin/cudart64_12.dll`, `lib64/libcudart.so.12`, ...).
    #[serde(serialize_with = "crate::sys::paths::ser_lossy_opt")]
    pub runtime: Option<PathBuf>,
    /// The platform the runtime library was built for (from its PE/ELF header).
    pub platform: Option<Platform>,
    /// A cuDNN copied into the toolkit's library folder by hand, if any.
    pub hand_copied_cudnn: Option<HandCopiedCudnn>,
    /// Warnings: an unreadable or malformed version file, disagreeing cuDNN versions,
    /// a dispatcher without its sub-libraries, a stray cuDNN header, ...
    pub problems: Vec<String>,
}

/// A cuDNN copied by hand into a toolkit (users copy the DLLs into `CUDA\vXX.Y\bin`).
///
/// JSON shape: `{"version": "9.5.0.50" | null, "dispatcher": "<path>",
/// "source": "VERSIONINFO" | "include/cudnn_version.h" | "include/cudnn.h" | "file name" | "unknown",
/// "libraries": ["cudnn64_9.dll", "cudnn_ops64_9.dll", ...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandCopiedCudnn {
    /// The cuDNN version: the dispatcher DLL's VERSIONINFO file version (4 parts) when it
    /// has one, else the header's 3 parts, else the `libcudnn.so.X.Y.Z` file name.
    pub version: Option<Version>,
    /// The dispatcher library: `bin/cudnn64_<N>.dll` or `lib64/libcudnn.so.<N>`.
    #[serde(serialize_with = "crate::sys::paths::ser_lossy")]
    pub dispatcher: PathBuf,
    /// Where `version` came from (see the JSON shape above).
    pub source: String,
    /// The file names of every cuDNN library in the dispatcher's folder, sorted.
    pub libraries: Vec<String>,
}

/// A root that was named explicitly (by a variable) but is not a usable toolkit.
/// Fixed locations that do not exist are not reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The path as named.
    #[serde(serialize_with = "crate::sys::paths::ser_lossy")]
    pub path: PathBuf,
    /// The variables that named it.
    pub found_by: Vec<String>,
    /// Why it was skipped (the message of the [`Error`] from [`inspect_root`]).
    pub reason: String,
}

/// The result of [`discover_all`]: the toolkits found and the named roots that were skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Discovery {
    /// Toolkits, deduplicated by canonical path, sorted by version (unknown last) then root.
    pub toolkits: Vec<Toolkit>,
    /// Explicitly named roots that are missing or are not toolkits.
    pub skipped: Vec<Skipped>,
}

/// Why a named folder is not a usable toolkit root.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Nothing exists at the path.
    #[error("toolkit root {} does not exist", path.display())]
    NotFound {
        /// The path as named.
        path: PathBuf,
    },
    /// The path is a file, not a folder.
    #[error("toolkit root {} is not a folder", path.display())]
    NotAFolder {
        /// The path as named.
        path: PathBuf,
    },
    /// The folder has no version file and no CUDA runtime library.
    #[error(
        "{} is not a CUDA toolkit: it has no version.json or version.txt, and no CUDA runtime \
         (bin/cudart64_*.dll, lib64/libcudart.so*, lib/libcudart.so*, targets/*/lib/libcudart.so*)",
        path.display()
    )]
    NotAToolkit {
        /// The path as named.
        path: PathBuf,
        /// A nearby folder that is a toolkit: the parent (when `bin/` or `lib64/` was
        /// named) or a `v*` / `cuda-*` child (when the folder above the toolkits was named).
        suggestion: Option<PathBuf>,
    },
    /// The folder could not be read.
    #[error("cannot read toolkit root {}", path.display())]
    Io {
        /// The path as named.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

const ROOT_HINT: &str = "point CUENV_TOOLKIT_PATHS or [toolkits] at a folder that holds version.json and bin/ or lib64/";

impl Diagnose for Error {
    fn hint(&self) -> Option<String> {
        match self {
            Error::NotAToolkit { suggestion: Some(s), .. } => Some(format!("did you mean {}? {ROOT_HINT}", s.display())),
            Error::Io { .. } => Some("check the folder's permissions".into()),
            _ => Some(ROOT_HINT.into()),
        }
    }
    fn exit_code(&self) -> ExitCode {
        match self {
            Error::Io { .. } => ExitCode::Failure,
            _ => ExitCode::Invalid,
        }
    }
}

#[cfg(test)]
mod tests {
    use tempfile::TempDir;

    use super::*;
    use crate::toolkit::fixtures::*;

    #[test]
    fn toolkit_json() {
        let tmp = TempDir::new().unwrap();
        let t = toolkit_with_hand_copied_cudnn8(tmp.path());
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["version"], "12.6.2");
        assert_eq!(json["version_source"], "version.json");
        assert_eq!(json["found_by"][0], TOOLKIT_PATHS_VAR);
        assert_eq!(json["root"], t.root.to_string_lossy().as_ref());
        assert!(json["runtime"].as_str().unwrap().ends_with("libcudart.so.12"));
        assert!(json["platform"].is_null());
        assert_eq!(json["hand_copied_cudnn"]["version"], "8.9.4");
        assert_eq!(json["hand_copied_cudnn"]["source"], "file name");
        assert!(json["problems"].is_array());
    }
}
