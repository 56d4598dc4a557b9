//! Thin entry point: logging, the command line, and the exit status (see [`waterview::cli`]).
use clap::Parser;

fn main() -> std::process::ExitCode {
    // Under mpirun only rank 0 reports; the others log warnings and errors.
    let other_rank = waterview::cluster::launch::launched_rank(|k| std::env::var(k).ok()).is_some_and(|r| r > 0);
    let default_filter =
        if other_rank { "warn" } else { "info,wgpu_core=warn,wgpu_hal=warn,naga=warn,splashsurf_lib=warn" };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default_filter)).init();
    match waterview::cli::run(waterview::cli::Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", waterview::text::printable_lines(&format!("{e:#}")));
            std::process::ExitCode::FAILURE
        }
    }
}
