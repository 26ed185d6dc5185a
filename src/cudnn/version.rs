//! cuDNN and CUDA version numbers.
//!
//! A cuDNN release is named by up to four dot-separated parts, `major.minor.patch.build`
//! (e.g. `9.5.0.50`). The fourth part (the build) is only known from a wheel's name or
//! METADATA, an official archive's name, or a Windows DLL's VERSIONINFO; the header
//! `include/cudnn_version.h` carries only the first three (docs/facts.md §2, §7b).
//!
//! Why not the `semver` crate: semver versions have exactly three parts, so it cannot
//! parse `9.5.0.50`; and its requirement syntax reads a bare `8.9` as `^8.9` (any 8.x from
//! 8.9 on), where a cuDNN requirement `8.9` means `8.9.*` (the way people name a cuDNN
//! release, and what frameworks pin). So versions and requirements are parsed here.

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
            .map(|p| if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 9 { Err(err()) } else { p.parse::<u64>().map_err(|_| err()) })
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

/// How one comparator in a [`VersionReq`] compares a candidate with its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// A bare version (`8.9`): the candidate starts with every given part.
    Prefix,
    /// `=8.9`: the same as a bare version, written explicitly.
    Exact,
    /// `>8.9`: the candidate, cut to the given parts, is greater.
    Greater,
    /// `>=8.9`: the candidate, cut to the given parts, is greater or equal.
    GreaterEq,
    /// `<9`: the candidate, cut to the given parts, is less.
    Less,
    /// `<=8.9`: the candidate, cut to the given parts, is less or equal.
    LessEq,
    /// `^8.9.4`: `>=8.9.4` and the same parts up to the first non-zero given part.
    Caret,
    /// `~8.9.4`: `>=8.9.4` and the same major and minor (the same major when only it is given).
    Tilde,
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Prefix => "",
            Op::Exact => "=",
            Op::Greater => ">",
            Op::GreaterEq => ">=",
            Op::Less => "<",
            Op::LessEq => "<=",
            Op::Caret => "^",
            Op::Tilde => "~",
        }
    }
}

/// One `op version` term of a [`VersionReq`] (`>=8.9`, `8.9.4`, `^9`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Comparator {
    /// How the candidate is compared.
    pub op: Op,
    /// The 1 to 4 part version it is compared with.
    pub version: Version,
}

impl Comparator {
    /// True when `candidate` satisfies this term. Ordering operators compare the candidate
    /// cut (or padded with zeros) to as many parts as the term gives: `>=8.9` accepts
    /// `8.9.4.25` because `8.9 >= 8.9`; `>8.9` rejects it because `8.9 > 8.9` is false.
    pub fn matches(&self, candidate: &Version) -> bool {
        let given = self.version.parts();
        let cut = cut_to(candidate, given.len());
        match self.op {
            Op::Prefix | Op::Exact => candidate.parts().starts_with(given),
            Op::Greater => cut.as_slice() > given,
            Op::GreaterEq => cut.as_slice() >= given,
            Op::Less => cut.as_slice() < given,
            Op::LessEq => cut.as_slice() <= given,
            Op::Caret => cut.as_slice() >= given && candidate.parts().starts_with(&given[..caret_fixed(given)]),
            Op::Tilde => cut.as_slice() >= given && candidate.parts().starts_with(&given[..given.len().min(2)]),
        }
    }
}

/// The candidate's first `n` parts, padded with zeros when it has fewer (`12` -> `[12, 0]`).
fn cut_to(candidate: &Version, n: usize) -> Vec<u64> {
    (0..n).map(|i| candidate.parts().get(i).copied().unwrap_or(0)).collect()
}

/// How many leading parts a caret term keeps fixed: up to and including the first non-zero
/// one (`^8.9` -> 1, `^0.2.3` -> 2, `^0.0.3` -> 3), or all of them when every part is zero
/// (`^0.0` -> 2), as cargo does.
fn caret_fixed(given: &[u64]) -> usize {
    given.iter().position(|&p| p != 0).map(|i| i + 1).unwrap_or(given.len())
}

/// A requirement on a version, as written in `lab.toml` (`cuda = "11.8"`, `cudnn = ">=8.9, <9"`).
///
/// Grammar: `*`, or one or more comma-separated terms, each an optional operator
/// (`=`, `>`, `>=`, `<`, `<=`, `^`, `~`) followed by a 1 to 4 part version; spaces around
/// operators and commas are allowed. All terms must hold (a conjunction).
///
/// Meaning, for a candidate `c` and a term with `n` given parts `v`:
/// - bare `v` or `=v`: `c` starts with `v` (`8.9` matches any `8.9.x.y`; `8.9.4.25` only itself;
///   a shorter candidate such as `9.5.0` does not match `9.5.0.50`);
/// - `>v`, `>=v`, `<v`, `<=v`: `c` cut to `n` parts (padded with zeros when shorter) compared
///   with `v`; so `<=8.9` accepts `8.9.7` and `>8.9` starts at `8.10`;
/// - `^v`: `>=v` and `c` keeps `v`'s parts up to the first non-zero one (cargo's caret:
///   `^8.9` is `>=8.9, <9`; `^0.2` is `>=0.2, <0.3`; `^0.0` is `0.0.*`);
/// - `~v`: `>=v` and `c` keeps `v`'s major and minor (`~8.9.4` is `>=8.9.4, <8.10`;
///   `~8` is `8.*`);
/// - `*`: any version.
///
/// Wildcard parts (`8.x`, `8.*`) are not accepted: write the prefix (`8`). `Display`
/// writes the canonical form (`>=8.9, <9`), which parses back to an equal requirement.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VersionReq {
    /// The terms; empty means `*`.
    comparators: Vec<Comparator>,
}

/// The error for a string that is not a version requirement; `reason` says which part is wrong.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`{input}` is not a version requirement: {reason}")]
pub struct VersionReqParseError {
    /// The text that was parsed.
    pub input: String,
    /// What is wrong with it, in words.
    pub reason: String,
}

impl VersionReq {
    /// The requirement every version satisfies (`*`).
    pub const ANY: VersionReq = VersionReq { comparators: Vec::new() };

    /// The terms, in the order written; empty for `*`.
    pub fn comparators(&self) -> &[Comparator] {
        &self.comparators
    }

    /// True for `*` (no terms).
    pub fn is_any(&self) -> bool {
        self.comparators.is_empty()
    }

    /// True when `candidate` satisfies every term.
    pub fn matches(&self, candidate: &Version) -> bool {
        self.comparators.iter().all(|c| c.matches(candidate))
    }

    /// The newest of `candidates` whose version (read through `key`) satisfies this
    /// requirement, or `None` when none does. Among equal versions the first one wins.
    pub fn best<'a, T>(&self, candidates: impl IntoIterator<Item = &'a T>, key: fn(&T) -> &Version) -> Option<&'a T> {
        let mut best: Option<&'a T> = None;
        for c in candidates.into_iter().filter(|c| self.matches(key(c))) {
            if best.is_none_or(|b| key(c) > key(b)) {
                best = Some(c);
            }
        }
        best
    }
}

impl FromStr for VersionReq {
    type Err = VersionReqParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason: String| VersionReqParseError { input: s.to_string(), reason };
        if s.trim() == "*" {
            return Ok(VersionReq::ANY);
        }
        let comparators = s.split(',').map(|term| parse_term(term.trim()).map_err(err)).collect::<Result<Vec<_>, _>>()?;
        Ok(VersionReq { comparators })
    }
}

/// Parses one trimmed term such as `>=8.9`, `8.9.4`, `^ 9`.
fn parse_term(term: &str) -> Result<Comparator, String> {
    if term.is_empty() {
        return Err("an empty term (expected a version like `8.9`, or `>=8.9, <9`)".into());
    }
    if term == "*" {
        return Err("`*` matches every version and cannot be combined with other terms".into());
    }
    const OPS: [(&str, Op); 7] =
        [(">=", Op::GreaterEq), ("<=", Op::LessEq), (">", Op::Greater), ("<", Op::Less), ("=", Op::Exact), ("^", Op::Caret), ("~", Op::Tilde)];
    let (op, rest) = OPS.iter().find_map(|(sym, op)| term.strip_prefix(sym).map(|rest| (*op, rest.trim_start()))).unwrap_or((Op::Prefix, term));
    let wild = |p: &str| p == "*" || p.eq_ignore_ascii_case("x");
    let parts: Vec<&str> = rest.split('.').collect();
    let first_wild = parts.iter().position(|p| wild(p));
    // `9.x`, `8.9.*`: digits, then only wildcards (`9.x.banana` is just not a version).
    if let Some(i) = first_wild
        && parts[..i].iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && parts[i..].iter().all(|p| wild(p))
    {
        let prefix: Vec<&str> = rest.split('.').take_while(|p| p.bytes().all(|b| b.is_ascii_digit())).collect();
        let suggestion = match prefix.join(".") {
            p if p.is_empty() => "*".to_string(),
            p => format!("{}{p}", op.symbol()),
        };
        return Err(format!("wildcard parts are not accepted in `{term}`; a bare version is already a prefix: write `{suggestion}`"));
    }
    let version = rest.parse::<Version>().map_err(|_| {
        let what = if rest == term { format!("`{rest}`") } else { format!("`{rest}` in `{term}`") };
        format!("{what} is not 1 to 4 numbers separated by dots, like `8.9.4`")
    })?;
    Ok(Comparator { op, version })
}

impl fmt::Display for Comparator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.op.symbol(), self.version)
    }
}

impl fmt::Display for VersionReq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.comparators.is_empty() {
            return f.write_str("*");
        }
        for (i, c) in self.comparators.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

impl Serialize for VersionReq {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for VersionReq {
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
    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    fn req(s: &str) -> VersionReq {
        s.parse().unwrap()
    }

    fn all_match(r: &str, yes: &[&str], no: &[&str]) {
        let r = req(r);
        for y in yes {
            assert!(r.matches(&v(y)), "`{r}` should match {y}");
        }
        for n in no {
            assert!(!r.matches(&v(n)), "`{r}` should not match {n}");
        }
    }

    #[test]
    fn bare_version_is_a_prefix() {
        all_match("8.9", &["8.9", "8.9.4", "8.9.4.25", "8.9.7.29"], &["8.8.0", "8.10", "9.8.9", "8"]);
        all_match("8.9.4", &["8.9.4", "8.9.4.25"], &["8.9.40", "8.9.5", "8.9"]);
        all_match("8.9.4.25", &["8.9.4.25"], &["8.9.4.26", "8.9.4"]);
        all_match("9", &["9", "9.0.0.312", "9.10.2.21"], &["8.9.4.25", "10.0", "90"]);
    }

    #[test]
    fn exact_operator_equals_bare() {
        assert!(req("=8.9").matches(&v("8.9.4.25")));
        assert!(!req("=8.9").matches(&v("8.10")));
        assert_eq!(req("= 8.9").comparators()[0].op, Op::Exact);
    }

    #[test]
    fn ordering_operators_compare_on_the_given_parts() {
        all_match(">=8.9", &["8.9", "8.9.4.25", "8.10", "9.0"], &["8.8.1", "8"]);
        all_match(">8.9", &["8.10", "9"], &["8.9.4.25", "8.9.99"]);
        all_match("<9", &["8.9.7.29", "0.1"], &["9", "9.0.0.1", "10"]);
        all_match("<=8.9", &["8.9.7.29", "8.1", "8"], &["8.10", "9.0"]);
        all_match(">=12.6", &["12.6", "12.6.77", "13"], &["12", "12.5.99", "11.8"]);
    }

    #[test]
    fn shorter_candidates_are_padded_with_zeros() {
        // `12` (a toolkit labelled only by its major) is 12.0 for ordering terms.
        assert!(req("<12.1").matches(&v("12")));
        assert!(req(">=12.0").matches(&v("12")));
        assert!(!req(">=12.1").matches(&v("12")));
    }

    #[test]
    fn caret_keeps_the_leftmost_nonzero_part() {
        all_match("^8.9.4", &["8.9.4", "8.9.4.25", "8.9.7", "8.10"], &["8.9.3", "9.0", "7.9"]);
        all_match("^0.2.3", &["0.2.3", "0.2.9"], &["0.3.0", "0.2.2", "1.2.3"]);
        all_match("^0.0.3", &["0.0.3", "0.0.3.1"], &["0.0.4", "0.1.0"]);
        all_match("^0.0", &["0.0.1", "0.0.9"], &["0.1", "1.0"]);
        all_match("^0", &["0.9", "0.0.1"], &["1.0"]);
        all_match("^9", &["9.0", "9.10.2.21"], &["8.9", "10"]);
    }

    #[test]
    fn tilde_keeps_major_and_minor() {
        all_match("~8.9.4", &["8.9.4", "8.9.7.29"], &["8.9.3", "8.10.0", "9.0"]);
        all_match("~8.9", &["8.9.0", "8.9.7"], &["8.10", "8.8"]);
        all_match("~8", &["8.0", "8.9.7"], &["9.0", "7.9"]);
        all_match("~8.9.4.25", &["8.9.4.25", "8.9.4.30", "8.9.5"], &["8.9.4.24", "8.10"]);
    }

    #[test]
    fn star_and_conjunctions() {
        assert!(req("*").matches(&v("1")) && req("*").is_any());
        all_match(">=8.9, <9", &["8.9", "8.9.7.29"], &["9.0", "8.8"]);
        all_match(">=9.1,<9.5,~9.3", &["9.3.0.75"], &["9.4.0", "9.1.0", "9.5.0"]);
        let e = ">=9, *".parse::<VersionReq>().unwrap_err();
        assert!(e.reason.contains("cannot be combined"), "{e}");
    }

    #[test]
    fn display_round_trips() {
        for s in ["8.9", "=8.9.4", ">8", ">=8.9, <9", "<=9.1.0.70", "^0.2", "~8.9.4.25", "*"] {
            let r = req(s);
            assert_eq!(r.to_string(), s);
            assert_eq!(req(&r.to_string()), r);
        }
        // Spaces are normalized.
        assert_eq!(req(" >= 8.9 ,<9 ").to_string(), ">=8.9, <9");
    }

    #[test]
    fn rejects_malformed_requirements() {
        for s in ["", " ", "8.x", "8.*", "8.9,", ",8.9", ">=", ">>8", "=>8.9", "8.9.4.25.1", "v8.9", "8.9-rc1", "8 9", "**"] {
            assert!(s.parse::<VersionReq>().is_err(), "`{s}` should be rejected");
        }
    }

    #[test]
    fn wildcard_error_suggests_the_prefix() {
        let e = "8.x".parse::<VersionReq>().unwrap_err();
        assert!(e.reason.contains("write `8`"), "{e}");
        let e = "^9.5.*".parse::<VersionReq>().unwrap_err();
        assert!(e.reason.contains("write `^9.5`"), "{e}");
        assert!(e.to_string().starts_with("`^9.5.*` is not a version requirement"));
        // Not a wildcard, just not a version; and the term is named once.
        let e = "9.x.banana".parse::<VersionReq>().unwrap_err();
        assert!(!e.reason.contains("wildcard") && e.reason.contains("`9.x.banana` is not 1 to 4 numbers"), "{e}");
        let e = ">=nine".parse::<VersionReq>().unwrap_err();
        assert!(e.reason.starts_with("`nine` in `>=nine` is not"), "{e}");
        let e = "nine".parse::<VersionReq>().unwrap_err();
        assert!(e.reason.starts_with("`nine` is not"), "{e}");
    }

    #[test]
    fn best_picks_the_newest_match() {
        let vs: Vec<Version> = ["8.9.4.25", "9.5.0.50", "8.9.7.29", "8.8.0.121"].iter().map(|s| v(s)).collect();
        let key: fn(&Version) -> &Version = |x| x;
        assert_eq!(req("8").best(&vs, key), Some(&v("8.9.7.29")));
        assert_eq!(req("*").best(&vs, key), Some(&v("9.5.0.50")));
        assert_eq!(req("<8.9").best(&vs, key), Some(&v("8.8.0.121")));
        assert_eq!(req("7").best(&vs, key), None);
        assert_eq!(req("8").best(Vec::<&Version>::new(), key), None);
    }

    #[test]
    fn best_keeps_the_first_of_equal_versions() {
        let entries = [("a", v("9.5.0.50")), ("b", v("9.5.0.50"))];
        let best = req("9").best(&entries, |e| &e.1).unwrap();
        assert_eq!(best.0, "a");
    }

    #[test]
    fn serde_as_string() {
        let r: VersionReq = serde_json::from_str("\">=8.9, <9\"").unwrap();
        assert_eq!(serde_json::to_string(&r).unwrap(), "\">=8.9, <9\"");
        assert!(serde_json::from_str::<VersionReq>("\"8.x\"").is_err());
    }
}
