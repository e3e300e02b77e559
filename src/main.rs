//! The `cogni` binary: everything lives in the library; this maps the
//! command line to an exit code.

fn main() -> std::process::ExitCode {
    // First: in the fork server's process this never returns.
    if let Err(e) = cogni::sandbox::fork_server::serve_if_asked() {
        eprintln!("cogni: {e}");
        return std::process::ExitCode::from(2);
    }
    cogni::cli::main()
}
