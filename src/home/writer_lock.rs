//! The one lock that serializes cuenv writers across processes: every command that changes
//! the home or records a profile in it (`store add`, `store remove`, `store fetch`, `apply`,
//! `lock`, `use`, `rollback`, `gc`, `check`, `kernel install`, `export --out`) holds it from
//! start to end.
//!
//! It is an OS file lock on `<home>/cuenv.lock` (std `File::try_lock`), polled every
//! 100 ms until `CUENV_LOCK_TIMEOUT` seconds (default 300; a malformed value is an error) pass. The OS releases it when
//! the process dies, so a crashed cuenv never leaves a stale lock.

use std::fs::{self, File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::home::layout::Layout;

/// Errors while taking the lock.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process kept the lock for the whole timeout.
    #[error("another cuenv (pid {pid}) has held {path} for over {secs} s")]
    Timeout { path: PathBuf, pid: String, secs: u64 },
    /// `CUENV_LOCK_TIMEOUT` is malformed.
    #[error(transparent)]
    Setting(#[from] crate::home::settings::SettingError),
    /// The lock file could not be created or locked.
    #[error("cannot lock {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

crate::error::diagnose! {
    impl Diagnose for LockError {
        transparent Setting;
        fn hint(&self) -> Option<String> {
            match self {
                LockError::Timeout { .. } => Some("wait for the other cuenv to finish, or raise CUENV_LOCK_TIMEOUT (seconds)".into()),
                LockError::Io { path, source } => Some(crate::error::io_hint(path, source)),
            }
        }
        fn exit_code(&self) -> crate::error::ExitCode {
            match self {
                _ => crate::error::ExitCode::Failure,
            }
        }
    }
}

/// A held writer lock; released on drop.
#[derive(Debug)]
pub struct WriterLock {
    _file: File,
}

impl WriterLock {
    /// Takes the lock, printing one "waiting for another cuenv (pid N)" line on stderr
    /// through `on_wait` if it has to wait. Creates the home folder if needed.
    pub fn acquire(layout: &Layout, on_wait: &mut dyn FnMut(&str)) -> Result<WriterLock, LockError> {
        let secs = crate::home::settings::LOCK_TIMEOUT.get()?;
        let path = layout.writer_lock_file();
        let io = |source| LockError::Io { path: path.clone(), source };
        fs::create_dir_all(layout.home()).map_err(io)?;
        let mut file = fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
        let start = Instant::now();
        let mut told = false;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) => {
                    let mut pid = String::new();
                    let _ = file.rewind().and_then(|_| file.read_to_string(&mut pid));
                    // Windows refuses to read a locked file from another handle: say so.
                    let pid = match pid.trim() {
                        "" => "unknown".to_string(),
                        p => p.to_string(),
                    };
                    if !told {
                        on_wait(&format!("waiting for another cuenv (pid {pid}) to finish..."));
                        told = true;
                    }
                    if start.elapsed() >= Duration::from_secs(secs) {
                        return Err(LockError::Timeout { path, pid, secs });
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(TryLockError::Error(e)) => return Err(io(e)),
            }
        }
        let _ = file.set_len(0).and_then(|_| file.rewind()).and_then(|_| write!(file, "{}", std::process::id()));
        Ok(WriterLock { _file: file })
    }

    /// Takes the lock only if no other cuenv holds it, without waiting; `None` when another
    /// holds it, the home does not exist (it is not created) or the lock file cannot be opened.
    /// What a reading command uses to tell leftovers of dead commands (the lock is free) from
    /// a live command's staging (it is held).
    pub fn try_acquire(layout: &Layout) -> Option<WriterLock> {
        if !layout.home().is_dir() {
            return None;
        }
        let mut file = fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(layout.writer_lock_file()).ok()?;
        file.try_lock().ok()?;
        let _ = file.set_len(0).and_then(|_| file.rewind()).and_then(|_| write!(file, "{}", std::process::id()));
        Some(WriterLock { _file: file })
    }
}
