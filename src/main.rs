//! The `cogni` binary: everything lives in the library; this maps the
//! command line to an exit code.

fn main() -> std::process::ExitCode {
    // First: in the fork server's process this never returns.
    cogni::sandbox::fork_server::serve_if_asked();
    cogni::cli::main()
}
