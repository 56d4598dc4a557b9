//! Thin entry point: logging, the command line, and the exit status (see [`waterview::cli`]).
use clap::Parser;

fn main() -> std::process::ExitCode {
    env_logger::Builder::from_env(
        env_logger::Env::default().default_filter_or("info,wgpu_core=warn,wgpu_hal=warn,naga=warn"),
    )
    .init();
    match waterview::cli::run(waterview::cli::Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", waterview::text::printable_lines(&format!("{e:#}")));
            std::process::ExitCode::FAILURE
        }
    }
}
