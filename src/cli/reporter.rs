//! Draws core [`Progress`] events as an indicatif bar on stderr.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

use crate::progress::{NoProgress, Progress};

/// A progress bar on stderr.
pub struct Bar {
    bar: ProgressBar,
}

impl Progress for Bar {
    fn start(&self, what: &str, total: u64) {
        self.bar.set_length(total);
        self.bar.set_position(0);
        self.bar.set_message(what.to_string());
        self.bar.reset_elapsed();
    }
    fn advance(&self, bytes: u64) {
        self.bar.inc(bytes);
    }
    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A bar when stderr is a terminal and not `quiet`, else nothing.
pub fn for_stderr(quiet: bool) -> Box<dyn Progress> {
    if quiet || !std::io::stderr().is_terminal() {
        return Box::new(NoProgress);
    }
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}").expect("valid template").progress_chars("=> "),
    );
    Box::new(Bar { bar })
}
