//! Where the commands write: [`Out`] (stdout, results) and [`ErrOut`] (stderr, notes and
//! warnings). Use them with `write!` / `writeln!`: `writeln!(ctx.out(), "...")`.
//!
//! Invariants: writing never panics and never ends the process. Output comes after the
//! work it reports, and a command that cannot print still finishes (or undoes) its
//! transaction: [`Out`] keeps the first stdout failure, skips the writes after it, and
//! [`crate::cli::main`] reports it once the command has returned (`error: cannot write to
//! stdout`, exit 1; a closed pipe ends quietly with exit [`BROKEN_PIPE`]). A failed write to
//! stderr is dropped: there is nowhere left to say it.

use std::cell::RefCell;
use std::fmt;
use std::io::{self, Write};
use std::rc::Rc;

use crate::error::{Diagnose, ExitCode};

/// The exit code when stdout was a pipe whose reader went away (`cuenv status | head -1`),
/// and the command itself succeeded: 141, what a shell reports for a tool killed by
/// SIGPIPE (128 + 13), but reached by a normal exit once the command's work is done.
pub const BROKEN_PIPE: i32 = 141;

/// stdout for results. Cloning shares the recorded failure.
#[derive(Debug, Clone, Default)]
pub struct Out {
    failed: Rc<RefCell<Option<io::Error>>>,
}

impl Out {
    /// Writes `args` to stdout, unless an earlier write failed; a failure is recorded (the
    /// first one only), not returned: the command goes on (see the module docs).
    pub fn write_fmt(&self, args: fmt::Arguments<'_>) {
        let mut failed = self.failed.borrow_mut();
        if failed.is_none()
            && let Err(e) = io::stdout().lock().write_fmt(args)
        {
            *failed = Some(e);
        }
    }

    /// Records `e` as this stdout's failure (unless one is recorded), for output that could
    /// not be made (a value serde cannot write as JSON): reported like a failed write.
    pub fn fail(&self, e: io::Error) {
        self.failed.borrow_mut().get_or_insert(e);
    }

    /// Flushes stdout and returns the first write failure, if any.
    pub fn finish(&self) -> Option<io::Error> {
        let mut failed = self.failed.borrow_mut();
        if failed.is_none()
            && let Err(e) = io::stdout().lock().flush()
        {
            *failed = Some(e);
        }
        failed.take()
    }
}

/// stderr for notes, warnings and errors; a failed write is dropped.
#[derive(Debug, Clone, Copy, Default)]
pub struct ErrOut;

impl ErrOut {
    /// Writes `args` to stderr, ignoring a failure.
    pub fn write_fmt(&self, args: fmt::Arguments<'_>) {
        let _ = io::stderr().lock().write_fmt(args);
    }
}

/// stdout could not be written (a full disk or device, a closed file).
#[derive(Debug, thiserror::Error)]
#[error("cannot write to stdout")]
pub struct StdoutError(#[source] pub io::Error);

impl Diagnose for StdoutError {
    fn hint(&self) -> Option<String> {
        let fix = match self.0.kind() {
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => "free space where stdout goes, or send it elsewhere",
            io::ErrorKind::InvalidData => "the output could not be written as text: report this to cuenv's maintainers",
            _ => "check where stdout goes (a closed or unwritable file)",
        };
        Some(format!("{fix}; the command itself ran to its end and only its output was lost: `cuenv status` shows the state"))
    }
    fn exit_code(&self) -> ExitCode {
        ExitCode::Failure
    }
}
