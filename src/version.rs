//! cuDNN and CUDA version numbers.
//!
//! A cuDNN release is named by up to four dot-separated parts, `major.minor.patch.build`
//! (e.g. `9.5.0.50`). The fourth part (the build) is only known from a wheel's name or
//! METADATA, an official archive's name, or a Windows DLL's VERSIONINFO; the header
//! `include/cudnn_version.h` carries only the first three (field notes §2, §7b).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A version of one to four numeric parts, compared part by part (missing parts are
/// absent, not zero: `9.5.0` is shorter than, and sorts before, `9.5.0.50`).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Version {
    parts: Vec<u64>,
}

/// The error for a string that is not 1 to 4 dot-separated decimal numbers.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`{0}` is not a version: expected 1 to 4 numbers separated by dots, like `9.5.0.50`")]
pub struct VersionParseError(pub String);

impl Version {
    /// Builds a version from its parts. Panics if `parts` is empty or longer than 4.
    pub fn new(parts: &[u64]) -> Self {
        assert!(!parts.is_empty() && parts.len() <= 4, "a version has 1 to 4 parts");
        Version { parts: parts.to_vec() }
    }

    /// The numeric parts, 1 to 4 of them.
    pub fn parts(&self) -> &[u64] {
        &self.parts
    }

    /// The first part (cuDNN 8, 9, ...; CUDA 11, 12, ...).
    pub fn major(&self) -> u64 {
        self.parts[0]
    }

    /// The second part, 0 when absent.
    pub fn minor(&self) -> u64 {
        self.parts.get(1).copied().unwrap_or(0)
    }

    /// The third part, 0 when absent.
    pub fn patch(&self) -> u64 {
        self.parts.get(2).copied().unwrap_or(0)
    }

    /// True when every part of `prefix` equals the same part of `self`
    /// (`9.5` is a prefix of `9.5.0.50`).
    pub fn starts_with(&self, prefix: &Version) -> bool {
        self.parts.starts_with(&prefix.parts)
    }

    /// The first `n` parts (all of them when there are fewer).
    pub fn truncated(&self, n: usize) -> Version {
        Version { parts: self.parts[..n.min(self.parts.len())].to_vec() }
    }

    /// cuDNN's integer encoding, as returned by `cudnnGetVersion()` and defined as
    /// `CUDNN_VERSION` in `cudnn_version.h`: `M*1000 + m*100 + p` before 9.0 (8.9.4 -> 8904),
    /// `M*10000 + m*100 + p` from 9.0 (9.5.0 -> 90500).
    pub fn cudnn_encoded(&self) -> u64 {
        let (m, n, p) = (self.major(), self.minor(), self.patch());
        if m >= 9 { m * 10000 + n * 100 + p } else { m * 1000 + n * 100 + p }
    }
}

impl FromStr for Version {
    type Err = VersionParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || VersionParseError(s.to_string());
        let t = s.trim();
        if t.is_empty() {
            return Err(err());
        }
        let parts = t
            .split('.')
            .map(|p| {
                if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 9 {
                    Err(err())
                } else {
                    p.parse::<u64>().map_err(|_| err())
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        if parts.len() > 4 {
            return Err(err());
        }
        Ok(Version { parts })
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s: Vec<String> = self.parts.iter().map(|p| p.to_string()).collect();
        f.write_str(&s.join("."))
    }
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Version({self})")
    }
}

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Reads `CUDNN_MAJOR`, `CUDNN_MINOR` and `CUDNN_PATCHLEVEL` from the text of
/// `cudnn_version.h` (cuDNN 8.x and 9.x) or `cudnn.h` (7.x). Returns the 3-part version,
/// or `None` when any of the three defines is missing.
pub fn parse_cudnn_header(text: &str) -> Option<Version> {
    let get = |name: &str| -> Option<u64> {
        text.lines().find_map(|line| {
            let mut it = line.split_whitespace();
            if it.next()? != "#define" || it.next()? != name {
                return None;
            }
            it.next()?.trim_matches(|c| c == '(' || c == ')').parse().ok()
        })
    };
    Some(Version::new(&[get("CUDNN_MAJOR")?, get("CUDNN_MINOR")?, get("CUDNN_PATCHLEVEL")?]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_orders() {
        let a: Version = "9.5.0".parse().unwrap();
        let b: Version = "9.5.0.50".parse().unwrap();
        let c: Version = "9.10.0".parse().unwrap();
        assert!(a < b && b < c);
        assert!(b.starts_with(&a));
        assert_eq!(b.to_string(), "9.5.0.50");
        assert!("9.x".parse::<Version>().is_err());
        assert!("1.2.3.4.5".parse::<Version>().is_err());
        assert!("".parse::<Version>().is_err());
        assert!("9..1".parse::<Version>().is_err());
    }

    #[test]
    fn cudnn_encoding_matches_both_schemes() {
        assert_eq!("8.9.4.25".parse::<Version>().unwrap().cudnn_encoded(), 8904);
        assert_eq!("8.8.0".parse::<Version>().unwrap().cudnn_encoded(), 8800);
        assert_eq!("9.5.0.50".parse::<Version>().unwrap().cudnn_encoded(), 90500);
    }

    #[test]
    fn header_parse() {
        let h = "#ifndef CUDNN_VERSION_H_\n#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 5\n#define CUDNN_PATCHLEVEL 0\n#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n";
        assert_eq!(parse_cudnn_header(h).unwrap().to_string(), "9.5.0");
        assert_eq!(parse_cudnn_header("#define CUDNN_MAJOR 9\n"), None);
    }
}
