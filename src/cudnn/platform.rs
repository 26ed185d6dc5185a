//! The platforms cuDNN is built for, named as NVIDIA names them (docs/facts.md §2), and the
//! one this cuenv runs on. A leaf: the names only, no file is read here.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The platform a cuDNN build targets, named like NVIDIA's redist manifests and archive
/// names (`windows-x86_64`, `linux-x86_64`, `linux-sbsa`; docs/facts.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Platform {
    /// 64-bit Windows on x86-64 (PE32+, machine AMD64).
    #[serde(rename = "windows-x86_64")]
    WindowsX86_64,
    /// Linux on x86-64 (ELF64, EM_X86_64).
    #[serde(rename = "linux-x86_64")]
    LinuxX86_64,
    /// Linux on 64-bit Arm servers (ELF64, EM_AARCH64). NVIDIA calls this `linux-sbsa`;
    /// Jetson builds (`linux-aarch64`) have the same ELF machine and are told apart only
    /// by their archive name.
    #[serde(rename = "linux-sbsa")]
    LinuxSbsa,
    /// Linux on Arm for Jetson (`linux-aarch64` archives).
    #[serde(rename = "linux-aarch64")]
    LinuxAarch64,
    /// Linux on POWER (ELF64, EM_PPC64 little-endian).
    #[serde(rename = "linux-ppc64le")]
    LinuxPpc64le,
}

impl Platform {
    /// The name used in archive names, store entry names and `entry.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Platform::WindowsX86_64 => "windows-x86_64",
            Platform::LinuxX86_64 => "linux-x86_64",
            Platform::LinuxSbsa => "linux-sbsa",
            Platform::LinuxAarch64 => "linux-aarch64",
            Platform::LinuxPpc64le => "linux-ppc64le",
        }
    }

    /// True for the Windows platform (libraries in `bin`, named `*.dll`).
    pub fn is_windows(self) -> bool {
        self == Platform::WindowsX86_64
    }

    /// The platform this cuenv binary runs on, if it is one cuDNN is built for.
    pub fn host() -> Option<Platform> {
        match (std::env::consts::OS, std::env::consts::ARCH) {
            ("windows", "x86_64") => Some(Platform::WindowsX86_64),
            ("linux", "x86_64") => Some(Platform::LinuxX86_64),
            ("linux", "aarch64") => Some(Platform::LinuxSbsa),
            ("linux", "powerpc64") => Some(Platform::LinuxPpc64le),
            _ => None,
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Platform {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "windows-x86_64" => Platform::WindowsX86_64,
            "linux-x86_64" => Platform::LinuxX86_64,
            "linux-sbsa" => Platform::LinuxSbsa,
            "linux-aarch64" => Platform::LinuxAarch64,
            "linux-ppc64le" => Platform::LinuxPpc64le,
            _ => return Err(format!("unknown platform `{s}` (expected windows-x86_64, linux-x86_64, linux-sbsa, linux-aarch64 or linux-ppc64le)")),
        })
    }
}
