//! Draws core [`Progress`] events as indicatif bars on stderr.
//!
//! Every phase ([`Progress::start`] .. [`Progress::finish`]: a download, an import, a copy)
//! gets a bar of its own in one [`MultiProgress`], showing bytes done, the total, the rate
//! and the time left; phases that run at once (several downloads) each keep their own line
//! ([`Progress::task`]). Nothing is drawn when stderr is not a terminal or with `--quiet`:
//! [`for_stderr`] then returns [`NoProgress`], so piped and captured output never holds a
//! bar.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;

use crate::sys::progress::{NoProgress, Progress};

/// The line of a phase whose size is known: name, bar, bytes done / total, rate, time left.
const SIZED: &str = "{msg:>10} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}";
/// The line of a phase of unknown size: name, spinner, bytes so far, rate.
const UNSIZED: &str = "{msg:>10} {spinner} {bytes} {bytes_per_sec}";
/// The line of a phase measured in time (a check): name, spinner, time elapsed.
const BUSY: &str = "{msg:>10} {spinner} {elapsed}";

/// Bars on one draw target; one current phase plus any number of concurrent tasks.
pub struct Bar {
    multi: MultiProgress,
    current: Slot,
}

/// The bar of the phase a [`Bar`] or a [`Task`] draws now, if any.
#[derive(Default)]
struct Slot(Mutex<Option<ProgressBar>>);

impl std::ops::Deref for Slot {
    type Target = Mutex<Option<ProgressBar>>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Slot {
    /// Shows `bar` from now on; the previous phase's bar is cleared. A fresh bar per phase:
    /// a finished indicatif bar draws nothing more, which left the terminal blank after the
    /// first (tiny) download.
    fn set(&self, bar: ProgressBar) {
        if let Some(old) = self.lock().unwrap().replace(bar) {
            old.finish_and_clear();
        }
    }
    fn advance(&self, bytes: u64) {
        if let Some(bar) = self.lock().unwrap().as_ref() {
            bar.inc(bytes);
        }
    }
    fn clear(&self) {
        if let Some(bar) = self.lock().unwrap().take() {
            bar.finish_and_clear();
        }
    }
}

impl Bar {
    /// Bars drawn on `target` (stderr in the CLI; a recording terminal in tests).
    fn new(target: ProgressDrawTarget) -> Bar {
        Bar { multi: MultiProgress::with_draw_target(target), current: Slot::default() }
    }

    /// A new bar for a phase named `what` of `total` bytes (0: unknown), added below the others.
    fn add(&self, what: &str, total: u64) -> ProgressBar {
        let style = if total > 0 { ProgressStyle::with_template(SIZED) } else { ProgressStyle::with_template(UNSIZED) };
        let bar = self.multi.add(ProgressBar::new(total));
        bar.set_style(style.expect("valid template").progress_chars("=> "));
        bar.set_message(what.to_string());
        bar
    }
}

impl Progress for Bar {
    fn start(&self, what: &str, total: u64) {
        self.current.set(self.add(what, total));
    }
    fn advance(&self, bytes: u64) {
        self.current.advance(bytes);
    }
    fn finish(&self) {
        self.current.clear();
    }
    fn busy(&self, what: &str) {
        let bar = self.multi.add(ProgressBar::new_spinner());
        bar.set_style(ProgressStyle::with_template(BUSY).expect("valid template"));
        bar.set_message(what.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        self.current.set(bar);
    }
    fn task(&self) -> Box<dyn Progress + '_> {
        Box::new(Task { bar: self, current: Slot::default() })
    }
}

/// One concurrent phase of a [`Bar`] (a download beside others), with its own line.
struct Task<'a> {
    bar: &'a Bar,
    current: Slot,
}

impl Progress for Task<'_> {
    fn start(&self, what: &str, total: u64) {
        self.current.set(self.bar.add(what, total));
    }
    fn advance(&self, bytes: u64) {
        self.current.advance(bytes);
    }
    fn finish(&self) {
        self.current.clear();
    }
}

/// Bars on stderr when stderr is a terminal and not `quiet`, else nothing.
pub fn for_stderr(quiet: bool) -> Box<dyn Progress> {
    if quiet || !std::io::stderr().is_terminal() {
        return Box::new(NoProgress);
    }
    Box::new(Bar::new(ProgressDrawTarget::stderr()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A terminal that records what is written to it.
    #[derive(Debug, Default, Clone)]
    struct Recorder(Arc<Mutex<String>>);

    impl indicatif::TermLike for Recorder {
        fn width(&self) -> u16 {
            120
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push_str(s);
            self.0.lock().unwrap().push('\n');
            Ok(())
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.0.lock().unwrap().push_str(s);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn bar() -> (Bar, Recorder) {
        let rec = Recorder::default();
        (Bar::new(ProgressDrawTarget::term_like_with_hz(Box::new(rec.clone()), 1)), rec)
    }

    #[test]
    fn a_phase_shows_its_name_bytes_and_total() {
        let (b, rec) = bar();
        b.start("download", 2 << 20);
        b.advance(1 << 20);
        b.current.lock().unwrap().as_ref().unwrap().tick();
        let shown = rec.0.lock().unwrap().clone();
        assert!(shown.contains("download ["), "{shown:?}");
        assert!(shown.contains("1.00 MiB/2.00 MiB"), "{shown:?}");
        assert!(shown.contains("/s"), "a rate: {shown:?}");
    }

    #[test]
    fn every_phase_draws_not_only_the_first() {
        let (b, rec) = bar();
        b.start("download", 10);
        b.advance(10);
        b.finish();
        rec.0.lock().unwrap().clear();
        b.start("extracting", 4 << 20);
        b.advance(3 << 20);
        b.current.lock().unwrap().as_ref().unwrap().tick();
        let shown = rec.0.lock().unwrap().clone();
        assert!(shown.contains("extracting ["), "{shown:?}");
        assert!(shown.contains("3.00 MiB/4.00 MiB"), "{shown:?}");
    }

    #[test]
    fn tasks_keep_lines_of_their_own() {
        let (b, rec) = bar();
        let one = Task { bar: &b, current: Slot::default() };
        let two = Task { bar: &b, current: Slot::default() };
        one.start("cudnn", 4 << 20);
        two.start("cudart", 2 << 20);
        one.advance(1 << 20);
        two.advance(2 << 20);
        one.current.lock().unwrap().as_ref().unwrap().tick();
        two.current.lock().unwrap().as_ref().unwrap().tick();
        let shown = rec.0.lock().unwrap().clone();
        assert!(shown.contains("cudnn [") && shown.contains("1.00 MiB/4.00 MiB"), "{shown:?}");
        assert!(shown.contains("cudart [") && shown.contains("2.00 MiB/2.00 MiB"), "{shown:?}");
        // Both phases are still drawn: one finishing does not end the other.
        two.finish();
        rec.0.lock().unwrap().clear();
        one.advance(1 << 20);
        one.current.lock().unwrap().as_ref().unwrap().tick();
        assert!(rec.0.lock().unwrap().contains("2.00 MiB/4.00 MiB"));
    }

    #[test]
    fn a_check_shows_its_name_and_time_until_it_ends() {
        let (b, rec) = bar();
        b.busy("checking torch");
        b.current.lock().unwrap().as_ref().unwrap().tick();
        let shown = rec.0.lock().unwrap().clone();
        assert!(shown.contains("checking torch") && shown.contains("0s"), "{shown:?}");
        assert!(!shown.contains("B/s"), "no bytes for a check: {shown:?}");
        b.finish();
        assert!(b.current.lock().unwrap().is_none());
    }

    #[test]
    fn unknown_sizes_show_bytes_and_rate() {
        let (b, rec) = bar();
        b.start("download", 0);
        b.advance(3 << 20);
        b.current.lock().unwrap().as_ref().unwrap().tick();
        let shown = rec.0.lock().unwrap().clone();
        assert!(shown.contains("download") && shown.contains("3.00 MiB") && shown.contains("/s"), "{shown:?}");
    }
}
