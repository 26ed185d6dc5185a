fn main() {
    // A closed pipe (`cuenv apply lab.toml | true`) must not kill cuenv in the middle of a
    // transaction: SIGPIPE stays ignored (Rust's default, said here explicitly), so a write
    // into a closed pipe fails with EPIPE instead. The CLI records that failure, lets the
    // command finish its work, then exits quietly with code 141 (`cli::BROKEN_PIPE`).
    // Child processes get SIGPIPE's default back (std resets it when spawning).
    #[cfg(unix)]
    // SAFETY: setting the disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    std::process::exit(cuenv::cli::main());
}
