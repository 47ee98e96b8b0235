fn main() -> std::process::ExitCode {
    txfuzz::cli::main()
}
