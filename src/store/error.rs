//! The store's [`Error`]: every way an import, lookup or check of the store fails, each
//! naming the archive, member or path involved, with its hint and exit code ([`Diagnose`]).

use std::io;
use std::path::{Path, PathBuf};

use super::{IncompleteSet, extract, member};
use crate::error::{Diagnose, ExitCode};
use crate::sys::sha256::Sha256;

/// Errors of the store. Each names the archive, member or path involved.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is not a cuDNN release: {why}", esc_path(path))]
    UnknownInput { path: PathBuf, why: String },
    #[error("{}: member `{}` refused: {}", esc_path(archive), member::shown(member), member::escape(rule))]
    BadMember { archive: PathBuf, member: String, rule: String },
    #[error("{}: members `{}` and `{}` differ only by case; they would collide on Windows", esc_path(archive), member::shown(first), member::shown(second))]
    CaseCollision { archive: PathBuf, first: String, second: String },
    #[error("{}: member `{}` holds {actual} bytes but its header declares {declared}", esc_path(archive), member::shown(member))]
    SizeMismatch { archive: PathBuf, member: String, declared: u64, actual: u64 },
    #[error("{}: member `{}` would expand {packed} bytes to {size} (over {max_ratio}:1); refusing a likely zip bomb", esc_path(archive), member::shown(member))]
    Bomb { archive: PathBuf, member: String, size: u64, packed: u64, max_ratio: u64 },
    /// The members together would expand past [`extract::expansion_bound`] (`member`: the tar
    /// member that crossed it; none for a zip, whose total is known up front).
    #[error("{}: {} expand the archive's {packed} bytes to {total}, over the bound of {bound} for it ({}x its size, at least {} MiB, at most {} GiB); refusing a likely bomb", esc_path(archive), match member { Some(m) => format!("the members up to `{}` would", member::shown(m)), None => "its members would".into() }, extract::MAX_TOTAL_RATIO, extract::TOTAL_RATIO_FLOOR >> 20, extract::MAX_TOTAL >> 30)]
    Expansion { archive: PathBuf, member: Option<String>, total: u64, packed: u64, bound: u64 },
    #[error("{}: member `{}` fails its CRC-32 check (the archive is damaged)", esc_path(archive), member::shown(member))]
    BadCrc { archive: PathBuf, member: String },
    #[error("{} is damaged: {}", esc_path(archive), member::escape(detail))]
    Corrupt { archive: PathBuf, detail: String },
    /// A wheel that cannot be imported while it downloads ([`crate::store::Store::add_streamed`]):
    /// the server serves no byte ranges, the stream broke off or ended early, or a member is
    /// stored in a way only a whole file is read. The caller downloads it whole instead.
    #[error("{} cannot be imported while it downloads: {}", esc_path(archive), member::escape(why))]
    Unstreamable { archive: PathBuf, why: String },
    #[error("{}: SHA-256 is {actual}, but {expected} was expected", path.display())]
    Sha256Mismatch { path: PathBuf, expected: Sha256, actual: Sha256 },
    #[error("{}: `{}` does not match the wheel's RECORD: {}", esc_path(archive), member::shown(member), member::escape(why))]
    Record { archive: PathBuf, member: String, why: String },
    #[error("no cuDNN found in {}: no cudnn64_<N>.dll or libcudnn.so.<N> inside", path.display())]
    NoCudnn { path: PathBuf },
    #[error("{} holds several cuDNN releases (in {})", esc_path(path), member::escape(&roots.join(", ")))]
    SeveralReleases { path: PathBuf, roots: Vec<String> },
    #[error("{}: incomplete cuDNN {} set: the library folder {} lacks {} ({}; the loader would take {} from whatever folder comes next, or fail)", path.display(), set.version, set.folder, set.missing.join(", "), set.why(), if set.missing.len() == 1 { "it" } else { "them" })]
    Incomplete { path: PathBuf, set: Box<IncompleteSet> },
    #[error("{}: cannot tell which CUDA major this cuDNN is built for{}", path.display(), if variants.is_empty() { String::new() } else { format!(" (it holds CUDA variants {})", variants.join(", ")) })]
    CudaUnknown { path: PathBuf, variants: Vec<String> },
    #[error("{}: the CUDA major is ambiguous: {}{}", path.display(), claims.iter().map(|(c, w)| format!("{w} says {c}")).collect::<Vec<_>>().join(", "), if detail.is_empty() { String::new() } else { format!("; {detail}") })]
    CudaConflict { path: PathBuf, claims: Vec<(u64, String)>, detail: String },
    /// `claim` (a CUDA major and where it was read: `--cuda`, the file name, ...) contradicts
    /// the major `read` the libraries name: `evidence` = (a library, the CUDA library it loads,
    /// e.g. `libcublasLt.so.13`). Boxed: keeps `Error` small.
    #[error("{}: {} says CUDA {}, but its libraries are built for CUDA {read}: `{}` loads `{}`", path.display(), claim.1, claim.0, evidence.0, evidence.1)]
    CudaContradicted { path: PathBuf, claim: Box<(u64, String)>, read: u64, evidence: Box<(String, String)> },
    #[error("{}: cannot tell the cuDNN version (no cudnn_version.h, wheel METADATA, archive name or VERSIONINFO)", path.display())]
    VersionUnknown { path: PathBuf },
    /// `claims`: two (version, where it was read) pairs that disagree (boxed: keeps `Error` small).
    #[error("{}: the version is ambiguous: {} says {}, but {} says {}", path.display(), claims[0].1, claims[0].0, claims[1].1, claims[1].0)]
    VersionConflict { path: PathBuf, claims: Box<[(String, String); 2]> },
    /// Libraries of two releases in one set (docs/decisions.md 2): `release` = (the
    /// release's version, where it was read); `odd` = (library, the version the file itself
    /// says) for each library of another release.
    #[error("{}: libraries of two cuDNN releases in one set: {} says {}, but {}", path.display(), release.1, release.0, odd.iter().map(|(f, v)| format!("`{}` is {v}", member::escape(f))).collect::<Vec<_>>().join(", "))]
    MixedReleases { path: PathBuf, release: Box<(String, String)>, odd: Vec<(String, String)> },
    /// The release's header disagrees with the version its libraries carry themselves:
    /// `header` = (file, version it says), `library` = (file, version it carries).
    #[error("{}: `{}` says cuDNN {}, but the libraries are {} (`{}` carries it): the header is stale", path.display(), header.0, header.1, library.1, member::escape(&library.0))]
    StaleHeader { path: PathBuf, header: Box<(String, String)>, library: Box<(String, String)> },
    #[error("{}: library `{}` is not usable: {}", esc_path(path), member::shown(member), member::escape(detail))]
    BadLibrary { path: PathBuf, member: String, detail: String },
    #[error("`--sha256` was given for {}, which is a folder", path.display())]
    Sha256OnFolder { path: PathBuf },
    #[error("`{0}` is not a SHA-256 (64 hex digits)")]
    BadSha256Arg(String),
    #[error("no store entry matches `{query}`")]
    NotFound { query: String, known: Vec<String> },
    #[error("`{query}` matches several store entries: {}", matches.join(", "))]
    Ambiguous { query: String, matches: Vec<String> },
    #[error("store entry {name} is used by {}", in_use_list(generations))]
    InUse {
        name: String,
        /// Every generation whose views use it, the current one first (marked), then newest first.
        generations: Vec<(u64, bool)>,
    },
    #[error("store entry {} is unreadable: {detail}", path.display())]
    BadEntry { path: PathBuf, detail: String },
    #[error("the record of hand-added store entries {} is unreadable: {detail}", path.display())]
    BadRoots { path: PathBuf, detail: String },
}

/// `generation 3 (current), 2 and 1`.
fn in_use_list(generations: &[(u64, bool)]) -> String {
    let names: Vec<String> = generations.iter().map(|(n, current)| if *current { format!("{n} (current)") } else { n.to_string() }).collect();
    let list = match names.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    format!("generation{} {list}", if generations.len() == 1 { "" } else { "s" })
}

/// A path for an error message, with control characters escaped ([`member::escape`]).
fn esc_path(p: &Path) -> String {
    member::escape(&p.display().to_string())
}

impl Diagnose for Error {
    fn hint(&self) -> Option<String> {
        use Error::*;
        Some(match self {
            Read { .. } => "check the path and its permissions".into(),
            Write { path, source } => crate::error::io_hint(path, source),
            UnknownInput { .. } => {
                "pass an official cuDNN .zip / .tar.xz, a legacy cuda/ .zip / .tgz, an nvidia-cudnn-cu* wheel, or an extracted folder".into()
            }
            BadMember { .. } | CaseCollision { .. } | Bomb { .. } | Expansion { .. } => {
                "this archive is unsafe to extract; download it again from NVIDIA or PyPI".into()
            }
            SizeMismatch { .. } | BadCrc { .. } | Corrupt { .. } | Record { .. } => "the file is damaged or incomplete; download it again".into(),
            Unstreamable { .. } => "download the file whole (cuenv does so itself when a streamed import cannot go on) and import it with `cuenv store add`".into(),
            Sha256Mismatch { .. } => "the file is not the one you expected: download it again, or check the --sha256 value against NVIDIA's manifest".into(),
            NoCudnn { .. } => "point at an archive or folder that contains cuDNN's bin/ or lib/ (e.g. site-packages/nvidia/cudnn)".into(),
            SeveralReleases { .. } => "import one release folder at a time".into(),
            Incomplete { .. } => "import the whole release (the archive or wheel as NVIDIA ships it), or pass --allow-incomplete to import it anyway (recorded in the entry; `store list` marks it, `check` and `doctor` warn, and a complete entry of the same version is always preferred)".into(),
            CudaUnknown { variants, .. } => {
                let majors: Vec<String> = variants
                    .iter()
                    .filter_map(|v| v.split('.').next())
                    .map(|m| format!("--cuda {m}"))
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect();
                if majors.is_empty() {
                    "pass --cuda MAJOR (e.g. --cuda 12) to say which CUDA major this build is for".into()
                } else {
                    format!("pass {}", majors.join(" or "))
                }
            }
            CudaConflict { detail, .. } if detail == super::detect::LIBRARIES_NAME_TWO_MAJORS => {
                "the files are of two CUDA builds: import the release's archive or wheel for one CUDA major as it comes".into()
            }
            CudaConflict { claims, .. } => {
                if claims.iter().any(|c| c.1 == "--cuda") {
                    "pass the --cuda value that matches the archive, or fix the file name".into()
                } else {
                    "what the names say disagrees with the content: rename the input so that it names the CUDA major of the build it holds".into()
                }
            }
            CudaContradicted { claim, read, .. } => {
                if claim.1 == "--cuda" {
                    format!("pass --cuda {read} (or leave it out: the libraries say it), or import the cuDNN built for CUDA {}", claim.0)
                } else if claim.1.starts_with("the variant folder") {
                    format!("{} holds libraries built for CUDA {read}: install that CUDA variant again from NVIDIA's installer", claim.1)
                } else if claim.1.starts_with("wheel METADATA") {
                    format!("the wheel's METADATA does not match its libraries: download the wheel again (the CUDA {read} build is nvidia-cudnn-cu{read})")
                } else {
                    format!("the name does not match the content: download the CUDA {} build again, or rename the file to say cuda{read}", claim.0)
                }
            }
            VersionUnknown { .. } => {
                "import the archive or wheel as downloaded (its name carries the version), or a folder with include/cudnn_version.h".into()
            }
            VersionConflict { .. } => "the archive's name and content disagree; download it again from NVIDIA or PyPI".into(),
            StaleHeader { .. } => "replace the header with the one of the release the libraries come from (the same archive or wheel), or import the release as NVIDIA ships it".into(),
            MixedReleases { .. } => "a set must come from one release: import the archive or wheel as NVIDIA ships it, or remove the files of the other release from the folder".into(),
            BadLibrary { .. } => "the release mixes libraries of different platforms or is damaged; download it again".into(),
            Sha256OnFolder { .. } => "--sha256 checks an archive's bytes; drop it for folders".into(),
            BadSha256Arg(_) => "copy the sha256 from NVIDIA's redistrib_<version>.json or PyPI".into(),
            NotFound { known, .. } => {
                if known.is_empty() {
                    "the store is empty; add a release with `cuenv store add <archive>`".into()
                } else {
                    format!("run `cuenv store list`; known entries: {}", known.join(", "))
                }
            }
            Ambiguous { .. } => "give more characters of the id, or the full name".into(),
            InUse { .. } => "apply a profile file that no longer uses it, then `cuenv gc` removes generations and entries nothing refers to".into(),
            BadEntry { .. } => "run `cuenv store verify`; remove the entry with `cuenv store remove` and add it again".into(),
            BadRoots { path, .. } => {
                format!("fix {} or delete it: without it cuenv treats every store entry as added by hand (gc keeps them all)", path.display())
            }
        })
    }

    fn exit_code(&self) -> ExitCode {
        use Error::*;
        match self {
            // A path that does not exist is the user's input; other read errors are not.
            Read { source, .. } if source.kind() == io::ErrorKind::NotFound => ExitCode::Invalid,
            Read { .. } | Write { .. } | BadEntry { .. } | BadRoots { .. } | Unstreamable { .. } => ExitCode::Failure,
            _ => ExitCode::Invalid,
        }
    }

    fn rule(&self) -> Option<crate::error::Rule> {
        use crate::error::Rule;
        match self {
            Error::Incomplete { .. } => Some(Rule::IncompleteSet),
            Error::MixedReleases { .. } => Some(Rule::TwoReleases),
            Error::CudaConflict { detail, .. } if detail == super::detect::LIBRARIES_NAME_TWO_MAJORS => Some(Rule::OneMajorPerFamily),
            _ => None,
        }
    }
}
