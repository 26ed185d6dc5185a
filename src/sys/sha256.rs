//! [`Sha256`]: a SHA-256 digest, parsed once where one enters cuenv (`--sha256`, a profile's
//! `sha256`, an index or manifest, a wheel's RECORD, `entry.toml`) and compared with `==`.
//!
//! It is written everywhere as 64 lowercase hex digits: `Display`, and serde (a string in
//! TOML and JSON, map keys included). Reading accepts either case.

use std::fmt;
use std::str::FromStr;

/// A SHA-256 digest (32 bytes). Shown and serialized as 64 lowercase hex digits; parsed from
/// 64 hex digits of either case ([`FromStr`], serde). Ordered like its hex text.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sha256([u8; 32]);

/// Why a text is not a [`Sha256`]: it is not 64 hex digits. Shows the text as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a SHA-256 (64 hex digits)")]
pub struct BadSha256(pub String);

impl Sha256 {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Sha256 {
        Sha256::finish(<sha2::Sha256 as sha2::Digest>::new_with_prefix(bytes))
    }

    /// The digest `hasher` has computed so far (it is consumed).
    pub fn finish(hasher: sha2::Sha256) -> Sha256 {
        Sha256(sha2::Digest::finalize(hasher).into())
    }

    /// The 32 bytes of the digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl From<[u8; 32]> for Sha256 {
    fn from(bytes: [u8; 32]) -> Sha256 {
        Sha256(bytes)
    }
}

impl FromStr for Sha256 {
    type Err = BadSha256;

    /// Exactly 64 hex digits, either case. Errors: [`BadSha256`] (with the text).
    fn from_str(s: &str) -> Result<Sha256, BadSha256> {
        let mut out = [0u8; 32];
        if s.len() != 64 || hex::decode_to_slice(s, &mut out).is_err() {
            return Err(BadSha256(s.to_string()));
        }
        Ok(Sha256(out))
    }
}

impl fmt::Display for Sha256 {
    /// 64 lowercase hex digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256({self})")
    }
}

impl serde::Serialize for Sha256 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(self.0))
    }
}

impl<'de> serde::Deserialize<'de> for Sha256 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Sha256, D::Error> {
        struct Hex;
        impl serde::de::Visitor<'_> for Hex {
            type Value = Sha256;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a SHA-256 (64 hex digits)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Sha256, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_str(Hex)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOWER: &str = "d8a23705e3884b137b7e05449fb2b61bfa524e7cfc3fda80743d633f423c6ce4";

    #[test]
    fn parses_either_case_and_shows_lowercase() {
        let a: Sha256 = LOWER.parse().unwrap();
        let b: Sha256 = LOWER.to_uppercase().parse().unwrap();
        assert_eq!(a, b);
        assert_eq!(b.to_string(), LOWER);
        assert_eq!(a.as_bytes()[0], 0xd8);
        assert_eq!(Sha256::of(b"abc").to_string(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn rejects_bad_length_and_characters() {
        for bad in ["", "abc123", &LOWER[..63], &format!("{LOWER}0"), &format!("{}g", &LOWER[..63]), &format!(" {}", &LOWER[1..])] {
            let e = bad.parse::<Sha256>().unwrap_err();
            assert_eq!(e, BadSha256(bad.to_string()));
        }
        assert_eq!("abc123".parse::<Sha256>().unwrap_err().to_string(), "`abc123` is not a SHA-256 (64 hex digits)");
    }

    #[test]
    fn serde_round_trips_as_lowercase_hex() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct T {
            sha256: Sha256,
            keyed: std::collections::BTreeMap<Sha256, u64>,
        }
        let sha: Sha256 = LOWER.to_uppercase().parse().unwrap();
        let t = T { sha256: sha, keyed: [(sha, 1)].into() };
        let text = toml::to_string(&t).unwrap();
        assert_eq!(text, format!("sha256 = \"{LOWER}\"\n\n[keyed]\n{LOWER} = 1\n"));
        assert_eq!(toml::from_str::<T>(&text).unwrap(), t);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, format!("{{\"sha256\":\"{LOWER}\",\"keyed\":{{\"{LOWER}\":1}}}}"));
        assert_eq!(serde_json::from_str::<T>(&json).unwrap(), t);
        assert!(serde_json::from_str::<Sha256>("\"abc\"").unwrap_err().to_string().contains("`abc` is not a SHA-256"));
        assert!(serde_json::from_str::<Sha256>("12").is_err());
    }
}
