//! What an error knows beyond its message: a hint and an exit code.
//!
//! A leaf module: it names no other cuenv module. Each module has its own `thiserror` enum
//! carrying paths and `#[source]`s, and implements [`Diagnose`] to say what a person should
//! do next ([`Diagnose::hint`]) and which class of failure it is ([`ExitCode`]). The CLI's
//! renderer (`cli::diagnostics`) accepts only errors that implement [`Diagnose`], so an error
//! type without a diagnosis cannot reach the top: forgetting one does not compile.

pub mod located;
pub mod rule;
pub mod suggest;

pub use rule::Rule;

/// Process exit codes, one per failure class (documented in README.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum ExitCode {
    /// Everything worked.
    Success = 0,
    /// A failure that is not the user's input (I/O, a lock timeout, ...).
    Failure = 1,
    /// Invalid input: bad arguments, a broken or hostile archive, a bad profile file.
    Invalid = 2,
    /// `store verify` or `status` found damage.
    Damaged = 3,
    /// A profile's check failed (`apply` kept the previous generation current).
    CheckFailed = 4,
}

/// What an error knows beyond its message. Both methods are required (no defaults): every
/// error type says what to do next and which class of failure it is, so an error without a
/// diagnosis does not compile.
pub trait Diagnose: std::error::Error {
    /// One line telling the person what to do next. `None` only where the message itself
    /// already carries the hints (several located diagnostics, each with its own).
    fn hint(&self) -> Option<String>;
    /// The failure class of this error.
    fn exit_code(&self) -> ExitCode;
    /// The docs/loader.md rule this error is a verdict of ([`Rule`]), for the few errors that
    /// judge a cuDNN set (`store add`'s refusals of an incomplete set or two releases); the
    /// renderer prints it as `error[R2]:`. `None` for every other error, hence the default.
    fn rule(&self) -> Option<Rule> {
        None
    }
}

/// Implements [`Diagnose`] for a wrapper enum whose `transparent` variants each hold one
/// error that already implements it: their arms (`Self::V(e) => e.hint()`, and the same for
/// `exit_code`) are generated, listed once for both methods; the other variants' arms are
/// written by hand after the list, as in a plain `match`. The methods take `self` from the
/// caller (`fn hint(&self)`), so hand-written arms can name it.
///
/// ```text
/// crate::error::diagnose! {
///     impl Diagnose for Error {
///         transparent Store, Io;
///         fn hint(&self) -> Option<String> {
///             match self {
///                 Error::Gone { .. } => Some("run `cuenv apply` again".into()),
///             }
///         }
///         fn exit_code(&self) -> ExitCode {
///             match self {
///                 Error::Gone { .. } => ExitCode::Failure,
///             }
///         }
///     }
/// }
/// ```
///
/// A method body may begin with a glob import of the enum's variants (`use Error::*;`), and
/// a `hint` may be `Some(match self { ... })` (each hand-written arm gives the hint itself,
/// not an `Option`). Where every variant is transparent, the two methods are left out.
macro_rules! diagnose {
    (impl Diagnose for $ty:ident { transparent $($v:ident),+ $(,)? ; }) => {
        impl $crate::error::Diagnose for $ty {
            fn hint(&self) -> Option<String> {
                match self { $(Self::$v(e) => $crate::error::Diagnose::hint(e),)+ }
            }
            fn exit_code(&self) -> $crate::error::ExitCode {
                match self { $(Self::$v(e) => $crate::error::Diagnose::exit_code(e),)+ }
            }
            fn rule(&self) -> Option<$crate::error::Rule> {
                match self { $(Self::$v(e) => $crate::error::Diagnose::rule(e),)+ }
            }
        }
    };
    (
        impl Diagnose for $ty:ident {
            transparent $($v:ident),+ $(,)? ;
            fn hint(&$hs:ident) -> $hr:ty { $($hint:tt)* }
            fn exit_code(&$es:ident) -> $er:ty { $($exit:tt)* }
        }
    ) => {
        impl $crate::error::Diagnose for $ty {
            #[allow(unused_braces)]
            fn hint(&$hs) -> $hr {
                $crate::error::diagnose!(@arms hint [$($v)+] { $($hint)* })
            }
            fn exit_code(&$es) -> $er {
                $crate::error::diagnose!(@arms exit_code [$($v)+] { $($exit)* })
            }
            fn rule(&self) -> Option<$crate::error::Rule> {
                #[allow(unreachable_patterns)]
                match self {
                    $(Self::$v(e) => $crate::error::Diagnose::rule(e),)+
                    _ => None,
                }
            }
        }
    };
    (@arms $method:ident [$($v:ident)+] { $(use $u:ident::*;)? match $s:ident { $($arms:tt)* } }) => {{
        $(use $u::*;)?
        match $s {
            $(Self::$v(e) => $crate::error::Diagnose::$method(e),)+
            $($arms)*
        }
    }};
    (@arms $method:ident [$($v:ident)+] {
        $(use $u:ident::*;)?
        Some(match $s:ident { $($pat:pat $(if $guard:expr)? => $body:expr),* $(,)? })
    }) => {{
        $(use $u::*;)?
        match $s {
            $(Self::$v(e) => $crate::error::Diagnose::$method(e),)+
            $($pat $(if $guard)? => Some($body),)*
        }
    }};
}
pub(crate) use diagnose;

/// An error that is only a message, a hint and an exit code (e.g. "no generation yet");
/// modules with more to say use their own typed errors instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Hinted {
    /// What is wrong.
    pub message: String,
    /// What to do next.
    pub hint: String,
    /// The failure class.
    pub code: ExitCode,
}

impl Hinted {
    /// A message with a hint.
    pub fn new(message: impl Into<String>, hint: impl Into<String>, code: ExitCode) -> Hinted {
        Hinted { message: message.into(), hint: hint.into(), code }
    }

    /// The error for a machine cuDNN has no build for: `message`, and a hint listing the
    /// platforms cuDNN is built for, then `what_to_do`.
    pub fn unsupported_platform(message: &str, what_to_do: &str) -> Hinted {
        Hinted::new(
            message,
            format!("cuDNN exists for windows-x86_64, linux-x86_64, linux-sbsa, linux-aarch64 and linux-ppc64le; {what_to_do}"),
            ExitCode::Failure,
        )
    }
}

impl Diagnose for Hinted {
    fn hint(&self) -> Option<String> {
        Some(self.hint.clone())
    }
    fn exit_code(&self) -> ExitCode {
        self.code
    }
}

/// An I/O failure said with what cuenv was doing and where: `cannot <doing> <path>`, the
/// operating system's error as the cause, and a hint chosen by the kind of failure (a full
/// disk, a read-only file system, missing permissions, ...). For the I/O steps that have no
/// error type of their own.
#[derive(Debug, thiserror::Error)]
#[error("cannot {doing} {}", path.display())]
pub struct IoError {
    /// What cuenv was doing, as a verb phrase (`write`, `remove the link`, ...).
    pub doing: String,
    /// The file or folder it was doing it to.
    pub path: std::path::PathBuf,
    /// The operating system's error.
    #[source]
    pub source: std::io::Error,
}

impl IoError {
    /// `cannot <doing> <path>`, caused by `source`.
    pub fn new(doing: impl Into<String>, path: impl Into<std::path::PathBuf>, source: std::io::Error) -> IoError {
        IoError { doing: doing.into(), path: path.into(), source }
    }
}

impl Diagnose for IoError {
    fn hint(&self) -> Option<String> {
        Some(io_hint(&self.path, &self.source))
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::Failure
    }
}

/// What to do about an I/O failure at `path`, by the kind of failure (a full disk, a
/// read-only file system, missing permissions, a missing folder, a closed pipe, a name or
/// path too long). A path in a conda env's `etc/conda` (a shim) is said to be the env's.
pub fn io_hint(path: &std::path::Path, err: &std::io::Error) -> String {
    if let Some(env) = conda_env_of(path) {
        let other = format!("or name a conda env you can write in `conda-env` (the env {} was not changed)", env.display());
        return match err.kind() {
            std::io::ErrorKind::ReadOnlyFilesystem => format!("the conda env {} is on a read-only file system: make it writable, {other}", env.display()),
            std::io::ErrorKind::PermissionDenied => {
                format!("the conda env {} is not writable for you: check the permissions of {}, {other}", env.display(), path.display())
            }
            _ => io_hint_with(path, err, "name a conda env on a writable volume in `conda-env`"),
        };
    }
    io_hint_with(path, err, "use a cuenv home elsewhere (--home DIR)")
}

/// The conda env holding `path` when it is under the env's `etc/conda` (its activation scripts).
fn conda_env_of(path: &std::path::Path) -> Option<&std::path::Path> {
    let mut p = path;
    while let Some(parent) = p.parent() {
        if p.file_name().is_some_and(|n| n == "conda") && parent.file_name().is_some_and(|n| n == "etc") {
            return parent.parent().filter(|env| env.join("conda-meta").is_dir());
        }
        p = parent;
    }
    None
}

/// [`io_hint`] for a path outside the home: `elsewhere` is the other way out for a
/// read-only file system (`keep lab.toml in a folder you can write`).
pub fn io_hint_with(path: &std::path::Path, err: &std::io::Error, elsewhere: &str) -> String {
    {
        use std::io::ErrorKind as K;
        let at = path.display();
        if name_too_long(err) {
            return "the path named above is longer than this system allows (a name over 255 bytes, or the whole path over its limit): move the cuenv home (--home or CUENV_HOME) or that folder to a shorter path, or shorten the name".into();
        }
        match err.kind() {
            K::StorageFull | K::QuotaExceeded => format!("free some space on the volume that holds {at}, then run the command again"),
            K::ReadOnlyFilesystem => format!("{at} is on a read-only file system: make it writable, or {elsewhere}"),
            K::PermissionDenied => format!("check the permissions of {at} (and of the folders above it)"),
            K::NotFound => format!("{at} or a folder above it does not exist; check the path"),
            K::NotADirectory => format!("a part of {at} is a file, not a folder; check the path"),
            K::BrokenPipe => "the reader of cuenv's output went away; run the command again without a closed pipe".into(),
            _ => "fix what the cause above says, then run the command again".into(),
        }
    }
}

/// `path` for a message: its text, with every byte that is not UTF-8 written `\xNN` and
/// every control character escaped (`\n`, `\u{1b}`), so printing it never runs a terminal
/// escape sequence and two different names never read the same.
pub fn shown_path(path: &std::path::Path) -> String {
    let mut out = String::new();
    for chunk in path.as_os_str().as_encoded_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                c => out.push(c),
            }
        }
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

/// A value that serde cannot write as text (TOML holds only UTF-8 paths; JSON only string
/// keys), as an I/O error of kind `InvalidData`, so that the caller's [`IoError`] names the
/// file it was writing and nothing panics.
pub fn unserializable(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("cannot write it as text: {e}"))
}

/// Whether `err` says that a name or a path is too long: `ENAMETOOLONG` (Unix),
/// `ERROR_FILENAME_EXCED_RANGE` (206, Windows). Not the kind `InvalidFilename` alone, which
/// Windows also gives for names with characters it refuses.
fn name_too_long(err: &std::io::Error) -> bool {
    #[cfg(unix)]
    let code = libc::ENAMETOOLONG;
    #[cfg(windows)]
    let code = 206;
    #[cfg(not(any(unix, windows)))]
    let code = -1;
    err.raw_os_error() == Some(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name or path too long is said as such, not "fix what the cause above says"; a
    /// Windows name refused for its characters (error 123, also `InvalidFilename`) is not.
    #[test]
    fn a_path_too_long_gets_its_own_hint() {
        let at = std::path::Path::new("home");
        #[cfg(unix)]
        let (long, other) = (libc::ENAMETOOLONG, libc::EINVAL);
        #[cfg(windows)]
        let (long, other) = (206, 123);
        let hint = io_hint(at, &std::io::Error::from_raw_os_error(long));
        assert!(hint.starts_with("the path named above is longer than this system allows"), "{hint}");
        assert!(!io_hint(at, &std::io::Error::from_raw_os_error(other)).contains("longer than"));
    }

    /// A shim write refused by a read-only (EROFS) or unwritable conda env names the env and
    /// says to make it writable or choose another; another cuenv home would not help.
    #[cfg(unix)]
    #[test]
    fn a_read_only_conda_env_is_said_to_be_the_envs() {
        let tmp = tempfile::tempdir().unwrap();
        let env = tmp.path().join("envs/torch");
        std::fs::create_dir_all(env.join("conda-meta")).unwrap();
        let shim = env.join("etc/conda/activate.d/cuenv-torch.sh");
        for code in [libc::EROFS, libc::EACCES] {
            let hint = IoError::new("write the shim", &shim, std::io::Error::from_raw_os_error(code)).hint().unwrap();
            assert!(hint.contains(&format!("the conda env {}", env.display())), "{hint}");
            assert!(hint.contains("conda env you can write in `conda-env`") && !hint.contains("home"), "{hint}");
        }
        let full = IoError::new("write the shim", &shim, std::io::Error::from_raw_os_error(libc::ENOSPC)).hint().unwrap();
        assert!(full.starts_with("free some space on the volume that holds"), "{full}");
        // Outside a conda env (no conda-meta): the home's hint.
        let other = tmp.path().join("x/etc/conda/activate.d/a.sh");
        let hint = IoError::new("write", &other, std::io::Error::from_raw_os_error(libc::EROFS)).hint().unwrap();
        assert!(hint.contains("use a cuenv home elsewhere"), "{hint}");
    }

    /// The inner error of [`Wrapper`].
    #[derive(Debug, thiserror::Error)]
    #[error("inner")]
    struct Inner(ExitCode);

    impl Diagnose for Inner {
        fn hint(&self) -> Option<String> {
            Some(format!("inner hint {:?}", self.0))
        }
        fn exit_code(&self) -> ExitCode {
            self.0
        }
    }

    #[derive(Debug, thiserror::Error)]
    enum Wrapper {
        #[error(transparent)]
        Inner(Inner),
        #[error(transparent)]
        Hinted(Hinted),
        #[error("own {0}")]
        Own(u8),
    }

    diagnose! {
        impl Diagnose for Wrapper {
            transparent Inner, Hinted;
            fn hint(&self) -> Option<String> {
                match self {
                    Wrapper::Own(n) if *n > 9 => None,
                    Wrapper::Own(_) => Some(format!("own hint: {self}")),
                }
            }
            fn exit_code(&self) -> ExitCode {
                match self {
                    Wrapper::Own(_) => ExitCode::Invalid,
                }
            }
        }
    }

    #[derive(Debug, thiserror::Error)]
    enum Glob {
        #[error(transparent)]
        Inner(Inner),
        #[error("own")]
        Own { big: bool },
    }

    diagnose! {
        impl Diagnose for Glob {
            transparent Inner;
            fn hint(&self) -> Option<String> {
                use Glob::*;
                Some(match self {
                    Own { big: true } => "big".into(),
                    Own { .. } => { "small".into() }
                })
            }
            fn exit_code(&self) -> ExitCode {
                use Glob::*;
                match self {
                    Own { .. } => ExitCode::Damaged,
                }
            }
        }
    }

    #[derive(Debug, thiserror::Error)]
    enum AllTransparent {
        #[error(transparent)]
        Inner(Inner),
    }

    diagnose!(impl Diagnose for AllTransparent { transparent Inner; });

    /// `diagnose!` delegates the transparent variants to their error and keeps the
    /// hand-written arms (guards, `self`, a glob import, `Some(match ...)`) as written.
    #[test]
    fn diagnose_delegates_transparent_variants() {
        let w = Wrapper::Inner(Inner(ExitCode::Damaged));
        assert_eq!((w.hint().as_deref(), w.exit_code()), (Some("inner hint Damaged"), ExitCode::Damaged));
        let w = Wrapper::Hinted(Hinted::new("m", "h", ExitCode::CheckFailed));
        assert_eq!((w.hint().as_deref(), w.exit_code()), (Some("h"), ExitCode::CheckFailed));
        assert_eq!((Wrapper::Own(1).hint().as_deref(), Wrapper::Own(1).exit_code()), (Some("own hint: own 1"), ExitCode::Invalid));
        assert_eq!(Wrapper::Own(10).hint(), None);
        let g = Glob::Inner(Inner(ExitCode::Failure));
        assert_eq!((g.hint().as_deref(), g.exit_code()), (Some("inner hint Failure"), ExitCode::Failure));
        assert_eq!(Glob::Own { big: true }.hint().as_deref(), Some("big"));
        assert_eq!((Glob::Own { big: false }.hint().as_deref(), Glob::Own { big: false }.exit_code()), (Some("small"), ExitCode::Damaged));
        let a = AllTransparent::Inner(Inner(ExitCode::Invalid));
        assert_eq!((a.hint().as_deref(), a.exit_code()), (Some("inner hint Invalid"), ExitCode::Invalid));
    }
}
