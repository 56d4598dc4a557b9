//! Thin entry point: parse arguments, then open the window or run headless.
use clap::Parser;
use waterview::cli::{Cli, Command};

fn main() -> std::process::ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info,wgpu_core=warn,wgpu_hal=warn,naga=warn")).init();
    let cli = Cli::parse();
    let result = match cli.command {
        None => waterview::app::run(cli.scene),
        Some(Command::Run(args)) => waterview::headless::run(cli.scene, &args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
