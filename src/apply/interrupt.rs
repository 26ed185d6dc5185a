//! SIGINT and SIGTERM during apply's transaction: while a [`Guard`] lives, those signals
//! only set a flag ([`caught`]) that the transaction polls (between its steps and while the
//! checks run), so it switches the previous generation back before cuenv exits; then the
//! CLI ends the process by the same signal ([`reraise`]). Outside the guard the signals
//! keep their default action: a kill there is what the journal and [`crate::generation::recover`]
//! are for.
//!
//! Windows: Ctrl+C and console close are left to recovery by the next command (no
//! handler is installed; the journal makes the next writer undo an apply that did not
//! reach its verdict).

use std::sync::atomic::{AtomicI32, Ordering};

/// The signal caught while a guard lived (0: none).
static CAUGHT: AtomicI32 = AtomicI32::new(0);

/// Catches SIGINT and SIGTERM until dropped; then their previous handlers are back.
pub struct Guard {
    #[cfg(unix)]
    old: Vec<(libc::c_int, libc::sighandler_t)>,
}

#[cfg(unix)]
extern "C" fn on_signal(sig: libc::c_int) {
    // Async-signal-safe: one atomic store.
    CAUGHT.store(sig, Ordering::SeqCst);
}

/// Starts catching SIGINT and SIGTERM (see the module docs).
pub fn catch() -> Guard {
    CAUGHT.store(0, Ordering::SeqCst);
    #[cfg(unix)]
    {
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: installs a handler that only stores into an atomic.
        let old = [libc::SIGINT, libc::SIGTERM].into_iter().map(|s| (s, unsafe { libc::signal(s, handler) })).collect();
        Guard { old }
    }
    #[cfg(not(unix))]
    Guard {}
}

impl Drop for Guard {
    fn drop(&mut self) {
        #[cfg(unix)]
        for &(sig, old) in &self.old {
            // SAFETY: puts back the disposition that was there before `catch`.
            unsafe { libc::signal(sig, old) };
        }
    }
}

/// The signal caught since [`catch`], if any.
pub fn caught() -> Option<i32> {
    Some(CAUGHT.load(Ordering::SeqCst)).filter(|s| *s != 0)
}

/// `SIGINT`, `SIGTERM`, or `signal N`.
pub fn name(sig: i32) -> String {
    #[cfg(unix)]
    match sig {
        libc::SIGINT => return "SIGINT".into(),
        libc::SIGTERM => return "SIGTERM".into(),
        _ => {}
    }
    format!("signal {sig}")
}

/// Stops the children this process started (the check's probe or a conda activation
/// script), so none outlives an interrupted apply. Linux: the children listed in
/// `/proc/self/task/*/children` get SIGTERM; elsewhere nothing (they end on their own).
pub fn stop_children() {
    #[cfg(target_os = "linux")]
    for task in std::fs::read_dir("/proc/self/task").into_iter().flatten().flatten() {
        let Ok(list) = std::fs::read_to_string(task.path().join("children")) else { continue };
        for pid in list.split_whitespace().filter_map(|p| p.parse::<libc::pid_t>().ok()) {
            // SAFETY: signals a child of this process, which has not been reaped (it is
            // still listed), so the pid is not reused.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }
}

/// Ends the process by signal `sig` with its default action (the shell reports 128 + sig:
/// 130 for SIGINT, 143 for SIGTERM); exits with 128 + sig where that does not end it.
pub fn reraise(sig: i32) -> ! {
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    #[cfg(unix)]
    // SAFETY: restores the default action and raises the signal on this process.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
    std::process::exit(128 + sig)
}
