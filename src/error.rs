//! How errors reach a person: a message, its cause chain, a hint, and an exit code.
//!
//! Each module has its own `thiserror` enum carrying paths and `#[source]`s. Those enums
//! implement [`Diagnose`] to say what a person should do next (`hint`) and which class of
//! failure it is ([`ExitCode`]). `anyhow` is used only at the top (the CLI); the renderer
//! walks the chain and asks each known error for its hint and exit code.

use std::fmt::Write as _;

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

/// What an error knows beyond its message.
pub trait Diagnose: std::error::Error {
    /// One line telling the person what to do next, if there is something to do.
    fn hint(&self) -> Option<String> {
        None
    }
    /// The failure class of this error.
    fn exit_code(&self) -> ExitCode {
        ExitCode::Failure
    }
}

/// An error of the command-line layer that is only a message, a hint and an exit code
/// (e.g. "no generation yet"); modules use their own typed errors instead.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Hinted {
    /// What is wrong.
    pub message: String,
    /// What to do next.
    pub hint: String,
    /// The failure class.
    pub code: ExitCode,
}

impl Diagnose for Hinted {
    fn hint(&self) -> Option<String> {
        Some(self.hint.clone())
    }
    fn exit_code(&self) -> ExitCode {
        self.code
    }
}

/// A [`Hinted`] error as an `anyhow::Error`.
pub fn hinted(message: impl Into<String>, hint: impl Into<String>, code: ExitCode) -> anyhow::Error {
    Hinted { message: message.into(), hint: hint.into(), code }.into()
}

/// Finds the first error in `err`'s chain that implements [`Diagnose`].
fn diagnose(err: &anyhow::Error) -> Option<&dyn Diagnose> {
    macro_rules! first_of {
        ($cause:expr, $($ty:ty),+ $(,)?) => {
            $(if let Some(e) = $cause.downcast_ref::<$ty>() {
                return Some(e);
            })+
        };
    }
    for cause in err.chain() {
        first_of!(
            cause,
            crate::store::Error,
            crate::toolkit::Error,
            crate::profile::Error,
            crate::lockfile::Error,
            crate::link::LinkError,
            crate::generation::Error,
            crate::apply::LockedDrift,
            crate::cli::UnknownProfile,
            crate::shim::Error,
            crate::fetch::Error,
            crate::wheel_toolkit::Error,
            crate::sources::PinMismatch,
            crate::writer_lock::LockError,
            Hinted,
        );
    }
    None
}

/// Renders `err` as `error: ...`, one `caused by: ...` line per cause, and a `hint: ...`.
pub fn render(err: &anyhow::Error) -> String {
    let mut out = format!("error: {err}\n");
    for cause in err.chain().skip(1) {
        let _ = writeln!(out, "  caused by: {cause}");
    }
    if let Some(hint) = diagnose(err).and_then(|d| d.hint()) {
        let _ = writeln!(out, "hint: {hint}");
    }
    out
}

/// The exit code for `err`: the first [`Diagnose`] in the chain decides, else `Failure`.
pub fn exit_code(err: &anyhow::Error) -> ExitCode {
    diagnose(err).map(|d| d.exit_code()).unwrap_or(ExitCode::Failure)
}
