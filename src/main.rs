//! Thin entry point: parse arguments, then open the window or run headless.
use clap::Parser;
use waterview::cli::{Cli, Command};

fn main() -> std::process::ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info,wgpu_core=warn,wgpu_hal=warn,naga=warn")).init();
    let cli = Cli::parse();
    let result = match cli.command {
        None => waterview::app::run(cli.scene),
        Some(Command::Run(args)) => waterview::headless::run(cli.scene, &args),
        Some(Command::Validate(args)) => waterview::validate::run(&args),
        Some(Command::Bench(args)) => waterview::bench::run(cli.scene, &args),
        Some(Command::Capture(a)) => waterview::capture::offline::run_cli(
            cli.scene,
            &waterview::capture::offline::OfflineOptions { seconds: a.seconds, fps: a.fps, size: a.size, out: a.out, dx: a.dx },
        ),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
