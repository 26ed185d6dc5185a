//! Every request to stop cuenv during apply's transaction: while a [`Guard`] lives, the
//! signals of [`SIGNALS`] (Unix) and the console's control events (Windows) only set a flag
//! ([`caught`]) that the transaction polls (between its steps and while the checks run), so
//! it switches the previous generation back before cuenv exits; then the CLI ends the
//! process the way the request would have ([`reraise`]). Outside the guard they keep their
//! default action: a kill there is what the journal and [`crate::generation::recover`] are
//! for (and so is one that no handler can catch: SIGKILL, a power loss).
//!
//! Unix: every signal whose default action ends the process and that asks it to stop
//! ([`SIGNALS`]: SIGHUP of a dropped ssh session, SIGINT, SIGQUIT, SIGTERM, ...). Not caught:
//! SIGKILL and SIGSTOP (no process can), SIGPIPE (ignored by Rust's runtime: a write to a
//! closed pipe is an error, undone like any other), SIGABRT and the faults (SIGSEGV, SIGBUS,
//! SIGFPE, SIGILL, SIGTRAP, SIGSYS: a bug, not a request, left to the journal) and the
//! real-time signals.
//!
//! Windows: a console control handler ([`on_console_event`], installed by [`catch`]) takes
//! Ctrl+C and Ctrl+Break (it sets the flag and returns at once, so the process goes on to
//! undo) and the close, logoff and shutdown events, for which Windows ends the process as
//! soon as the handler returns: that handler waits until the guard is dropped (the
//! transaction committed or undone), at most [`CLOSE_WAIT`], below the 5 seconds Windows
//! grants. The process then ends with `STATUS_CONTROL_C_EXIT` (0xC000013A), the code the
//! console's default handler gives those events.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

/// The signal or console event caught while a guard lived (0: none).
static CAUGHT: AtomicI32 = AtomicI32::new(0);

/// Whether the guard that caught an event has ended (what a close event waits for).
static OVER: Mutex<bool> = Mutex::new(false);
/// Wakes a console handler waiting on [`OVER`].
static OVER_CHANGED: Condvar = Condvar::new();

/// The Unix signals a [`Guard`] catches, with their names (see the module docs for those
/// it does not catch).
#[cfg(unix)]
pub const SIGNALS: &[(i32, &str)] = &[
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGINT, "SIGINT"),
    (libc::SIGQUIT, "SIGQUIT"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGUSR1, "SIGUSR1"),
    (libc::SIGUSR2, "SIGUSR2"),
    (libc::SIGALRM, "SIGALRM"),
    (libc::SIGVTALRM, "SIGVTALRM"),
    (libc::SIGPROF, "SIGPROF"),
    (libc::SIGXCPU, "SIGXCPU"),
    (libc::SIGXFSZ, "SIGXFSZ"),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    (libc::SIGPWR, "SIGPWR"),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    (libc::SIGSTKFLT, "SIGSTKFLT"),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    (libc::SIGIO, "SIGIO"),
];

/// What [`caught`] reports for a Windows console event: this plus the event's number
/// (`CTRL_C_EVENT` 0, `CTRL_BREAK_EVENT` 1, `CTRL_CLOSE_EVENT` 2, `CTRL_LOGOFF_EVENT` 5,
/// `CTRL_SHUTDOWN_EVENT` 6), apart from every Unix signal number.
pub const CONSOLE_EVENT: i32 = 0x1000;

/// The console events, by their numbers in `wincon.h`.
const CTRL_C: u32 = 0;
const CTRL_BREAK: u32 = 1;
const CTRL_CLOSE: u32 = 2;
const CTRL_LOGOFF: u32 = 5;
const CTRL_SHUTDOWN: u32 = 6;

#[cfg(windows)]
const _: () = {
    use windows_sys::Win32::System::Console as c;
    assert!(c::CTRL_C_EVENT == CTRL_C && c::CTRL_BREAK_EVENT == CTRL_BREAK && c::CTRL_CLOSE_EVENT == CTRL_CLOSE);
    assert!(c::CTRL_LOGOFF_EVENT == CTRL_LOGOFF && c::CTRL_SHUTDOWN_EVENT == CTRL_SHUTDOWN);
};

/// The longest a close, logoff or shutdown event is held while the transaction is undone:
/// Windows ends a process about 5 seconds after a close event whatever its handler does.
pub const CLOSE_WAIT: Duration = Duration::from_secs(4);
const _: () = assert!(CLOSE_WAIT.as_secs() < 5, "Windows ends the process 5 s after a close event");

/// Catches the signals and console events until dropped (see the module docs); then their
/// previous handlers are back, and a console handler waiting for the transaction returns.
pub struct Guard {
    #[cfg(unix)]
    old: Vec<(libc::c_int, libc::sighandler_t)>,
}

#[cfg(unix)]
extern "C" fn on_signal(sig: libc::c_int) {
    // Async-signal-safe: one atomic store.
    CAUGHT.store(sig, Ordering::SeqCst);
}

/// The handler `SetConsoleCtrlHandler` calls, on a thread of its own: [`on_console_event`].
#[cfg(windows)]
unsafe extern "system" fn console_handler(event: u32) -> windows_sys::core::BOOL {
    on_console_event(event, CLOSE_WAIT).into()
}

/// Starts catching the signals and console events (see the module docs).
pub fn catch() -> Guard {
    CAUGHT.store(0, Ordering::SeqCst);
    *OVER.lock().unwrap_or_else(PoisonError::into_inner) = false;
    #[cfg(unix)]
    {
        let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: installs a handler that only stores into an atomic.
        let old = SIGNALS.iter().map(|&(s, _)| (s, unsafe { libc::signal(s, handler) })).collect();
        Guard { old }
    }
    #[cfg(windows)]
    // SAFETY: registers a handler that lives as long as the program (a plain function);
    // without a console the call fails and nothing is caught, as before.
    unsafe {
        windows_sys::Win32::System::Console::SetConsoleCtrlHandler(Some(console_handler), 1);
    }
    #[cfg(not(unix))]
    Guard {}
}

impl Drop for Guard {
    fn drop(&mut self) {
        // The transaction is over (committed or undone): a waiting close event may return.
        *OVER.lock().unwrap_or_else(PoisonError::into_inner) = true;
        OVER_CHANGED.notify_all();
        #[cfg(unix)]
        for &(sig, old) in &self.old {
            // SAFETY: puts back the disposition that was there before `catch`.
            unsafe { libc::signal(sig, old) };
        }
        #[cfg(windows)]
        // SAFETY: removes the handler `catch` registered.
        unsafe {
            windows_sys::Win32::System::Console::SetConsoleCtrlHandler(Some(console_handler), 0);
        }
    }
}

/// What the Windows console handler does with `event` (callable on every platform, so it
/// can be tested by calling it): records the event for [`caught`]. Ctrl+C and Ctrl+Break
/// return at once, and the process goes on to undo the transaction. Close, logoff and
/// shutdown, after which Windows ends the process as soon as the handler returns, wait
/// until the [`Guard`] is dropped (the transaction committed or undone), at most `wait`.
/// Returns true (handled) for those five events, false for any other (the next handler
/// decides).
pub fn on_console_event(event: u32, wait: Duration) -> bool {
    if !matches!(event, CTRL_C | CTRL_BREAK | CTRL_CLOSE | CTRL_LOGOFF | CTRL_SHUTDOWN) {
        return false;
    }
    CAUGHT.store(CONSOLE_EVENT + event as i32, Ordering::SeqCst);
    if matches!(event, CTRL_C | CTRL_BREAK) {
        return true;
    }
    let over = OVER.lock().unwrap_or_else(PoisonError::into_inner);
    let _ = OVER_CHANGED.wait_timeout_while(over, wait, |over| !*over);
    true
}

/// The signal or console event caught since [`catch`], if any.
pub fn caught() -> Option<i32> {
    Some(CAUGHT.load(Ordering::SeqCst)).filter(|s| *s != 0)
}

/// `SIGINT`, `SIGHUP`, ... ([`SIGNALS`]), `Ctrl+C`, `Ctrl+Break`, `the console's close`,
/// `logoff`, `shutdown`, or `signal N`.
pub fn name(sig: i32) -> String {
    #[cfg(unix)]
    if let Some((_, n)) = SIGNALS.iter().find(|(s, _)| *s == sig) {
        return (*n).into();
    }
    match sig.checked_sub(CONSOLE_EVENT).and_then(|e| u32::try_from(e).ok()) {
        Some(CTRL_C) => "Ctrl+C".into(),
        Some(CTRL_BREAK) => "Ctrl+Break".into(),
        Some(CTRL_CLOSE) => "the console's close".into(),
        Some(CTRL_LOGOFF) => "logoff".into(),
        Some(CTRL_SHUTDOWN) => "shutdown".into(),
        _ => format!("signal {sig}"),
    }
}

/// Stops the children this process started (the check's probe or a conda activation
/// script), so none outlives an interrupted apply. Linux: the children listed in
/// `/proc/self/task/*/children` get SIGTERM; elsewhere nothing (they end on their own; on
/// Windows the console's events reach them too).
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

/// Ends the process the way `sig` ([`caught`]) would have, now that the transaction is
/// undone. Unix: by signal `sig` with its default action (the shell reports 128 + sig: 129
/// for SIGHUP, 130 for SIGINT, 131 for SIGQUIT, 143 for SIGTERM), without a core dump
/// (there is nothing left to debug); exits with 128 + sig where that does not end it.
/// Windows (a console event): exits with `STATUS_CONTROL_C_EXIT` (0xC000013A, -1073741510
/// in `cmd`'s `%ERRORLEVEL%`), as the console's default handler would have.
pub fn reraise(sig: i32) -> ! {
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    #[cfg(unix)]
    // SAFETY: no core file (SIGQUIT, SIGXCPU and SIGXFSZ would dump one), then restores the
    // default action and raises the signal on this process.
    unsafe {
        let mut core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::getrlimit(libc::RLIMIT_CORE, &mut core);
        libc::setrlimit(libc::RLIMIT_CORE, &libc::rlimit { rlim_cur: 0, ..core });
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
    #[cfg(windows)]
    if sig >= CONSOLE_EVENT {
        std::process::exit(windows_sys::Win32::Foundation::STATUS_CONTROL_C_EXIT);
    }
    std::process::exit(128 + sig)
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Instant;

    use super::*;

    /// The tests share the caught flag: one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    /// The handler as the console calls it: on Windows the registered function itself
    /// (which waits up to [`CLOSE_WAIT`]), elsewhere [`on_console_event`] with that bound.
    #[allow(clippy::let_and_return)]
    fn handler(event: u32) -> bool {
        #[cfg(windows)]
        // SAFETY: calls the handler as the console would, on a thread of ours.
        let handled = unsafe { console_handler(event) } != 0;
        #[cfg(not(windows))]
        let handled = on_console_event(event, CLOSE_WAIT);
        handled
    }

    #[test]
    fn ctrl_c_and_ctrl_break_set_the_flag_and_return_at_once() {
        let _one = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        let _guard = catch();
        assert_eq!(caught(), None);
        for (event, said) in [(CTRL_C, "Ctrl+C"), (CTRL_BREAK, "Ctrl+Break")] {
            let t = Instant::now();
            assert!(handler(event), "{said} not handled");
            assert!(t.elapsed() < Duration::from_millis(500), "{said} waited {:?}", t.elapsed());
            let sig = caught().expect("caught");
            assert_eq!(sig, CONSOLE_EVENT + event as i32);
            assert_eq!(name(sig), said);
        }
        // Another event is not ours: the next handler decides, and nothing is recorded.
        let before = caught();
        assert!(!handler(3));
        assert_eq!(caught(), before);
        assert_eq!(name(CONSOLE_EVENT + CTRL_CLOSE as i32), "the console's close");
        // A new guard starts with nothing caught.
        drop(_guard);
        let _again = catch();
        assert_eq!(caught(), None);
    }

    /// Close, logoff and shutdown: the handler does not return (Windows would end the
    /// process) until the guard is dropped, i.e. the transaction is undone.
    #[test]
    fn close_logoff_and_shutdown_wait_until_the_guard_is_dropped() {
        let _one = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        for event in [CTRL_CLOSE, CTRL_LOGOFF, CTRL_SHUTDOWN] {
            let guard = catch();
            let (tx, rx) = mpsc::channel();
            let waiting = std::thread::spawn(move || tx.send(handler(event)).unwrap());
            assert_eq!(rx.recv_timeout(Duration::from_millis(400)), Err(mpsc::RecvTimeoutError::Timeout), "event {event}: returned before the undo was done");
            assert_eq!(caught(), Some(CONSOLE_EVENT + event as i32), "event {event}: the transaction was not told");
            let t = Instant::now();
            drop(guard);
            assert_eq!(rx.recv_timeout(Duration::from_secs(2)), Ok(true), "event {event}: still waiting after the guard was dropped");
            assert!(t.elapsed() < Duration::from_secs(1), "event {event}: {:?}", t.elapsed());
            waiting.join().unwrap();
        }
        // A close after the transaction ended (the guard dropped, the handler not yet
        // removed) does not wait.
        let guard = catch();
        drop(guard);
        let t = Instant::now();
        assert!(on_console_event(CTRL_CLOSE, Duration::from_secs(10)));
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }

    /// The wait is bounded: a transaction that does not end in time does not hold the
    /// handler past its bound.
    #[test]
    fn a_close_waits_no_longer_than_its_bound() {
        let _one = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        let _guard = catch();
        let t = Instant::now();
        assert!(on_console_event(CTRL_CLOSE, Duration::from_millis(300)));
        let took = t.elapsed();
        assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(3), "{took:?}");
    }

    /// Each Unix signal of the set, raised while a guard lives, only sets the flag (this
    /// process goes on); dropping the guard puts the default action back.
    #[cfg(unix)]
    #[test]
    fn every_caught_signal_only_sets_the_flag() {
        let _one = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
        for want in ["SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM"] {
            assert!(SIGNALS.iter().any(|(_, n)| *n == want), "{want} is not caught");
        }
        // SAFETY: only reads the disposition of `sig`.
        let disposition = |sig| unsafe {
            let mut now = std::mem::zeroed::<libc::sigaction>();
            assert_eq!(libc::sigaction(sig, std::ptr::null(), &mut now), 0);
            now.sa_sigaction
        };
        for &(sig, said) in SIGNALS {
            let before = disposition(sig);
            let guard = catch();
            assert_ne!(disposition(sig), before, "{said}: not caught");
            // SAFETY: raises a signal whose handler only stores into an atomic.
            assert_eq!(unsafe { libc::raise(sig) }, 0);
            assert_eq!(caught(), Some(sig), "{said}");
            assert_eq!(name(sig), said);
            drop(guard);
            assert_eq!(disposition(sig), before, "{said}: the guard did not put the old disposition back");
        }
        assert_eq!(name(libc::SIGKILL), format!("signal {}", libc::SIGKILL));
    }
}
