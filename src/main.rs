fn main() {
    // Printing into a closed pipe (`cuenv status | head`) ends the process quietly, as
    // other Unix tools do, instead of panicking.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::process::exit(cuenv::cli::main());
}
