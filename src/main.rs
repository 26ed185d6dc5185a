fn main() {
    std::process::exit(cuenv::cli::main());
}
