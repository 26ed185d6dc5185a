//! The system below cuenv's domain: reading executable files (`binfmt`: ELF and PE headers,
//! the CUDA libraries a library names, version markers; `fatbin`: the GPU architectures a
//! library carries code for), the modules a running process has
//! mapped (`procmods`), path spelling and Unicode rules (`paths`), durable file writes and
//! fault points for tests (`fsutil`), one work queue over a few threads (`pool`), progress bars (`progress`) and SHA-256 digests
//! (`sha256`), and the Windows system folders and KnownDLLs list (`windirs`). Nothing here knows profiles, generations or the store.

pub mod binfmt;
pub mod elf;
pub mod fatbin;
pub mod fsutil;
pub mod paths;
pub mod pool;
pub mod procmods;
pub mod progress;
pub mod sha256;
pub mod windirs;
