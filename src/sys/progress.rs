//! Progress reporting from the core to the CLI.
//!
//! The core only calls this trait; the CLI draws it with indicatif on stderr when stderr
//! is a terminal (and not `--quiet`), and uses [`NoProgress`] otherwise.

/// Receives progress of a long operation, measured in bytes. Called from several threads.
pub trait Progress: Sync {
    /// Starts a phase named `what` of `total` bytes (0 when unknown).
    fn start(&self, what: &str, total: u64);
    /// `bytes` more were processed.
    fn advance(&self, bytes: u64);
    /// The phase ended.
    fn finish(&self);
    /// Starts a phase named `what` measured in time, not bytes (one profile's check): drawn
    /// as a spinner with the time elapsed until [`Progress::finish`]; by default nothing.
    fn busy(&self, what: &str) {
        let _ = what;
    }
    /// A sink for a phase that runs beside others (one download of several at once), drawn on
    /// a line of its own; by default it shows nothing.
    fn task(&self) -> Box<dyn Progress + '_> {
        Box::new(NoProgress)
    }
}

/// A [`Progress`] that shows nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _what: &str, _total: u64) {}
    fn advance(&self, _bytes: u64) {}
    fn finish(&self) {}
}
