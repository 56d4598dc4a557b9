//! Thin entry point: parse arguments, then open the window or run headless.
use clap::Parser;
use waterview::capture::offline::{OfflineOptions, RecordCostOptions};
use waterview::cli::{Cli, Command};

fn main() -> std::process::ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info,wgpu_core=warn,wgpu_hal=warn,naga=warn")).init();
    let cli = Cli::parse();
    if cli.command.is_some() && cli.window.any() {
        eprintln!("error: --window-size and the --record options apply to the window only (give them without a subcommand)");
        return std::process::ExitCode::FAILURE;
    }
    let result = match cli.command {
        None => waterview::app::run(cli.scene, &cli.window),
        Some(Command::Run(args)) => waterview::headless::run(cli.scene, &args),
        Some(Command::Validate(args)) => waterview::validate::run(&args),
        Some(Command::Bench(args)) => waterview::bench::run(cli.scene, &args),
        Some(Command::Capture(a)) if a.record_cost => waterview::capture::offline::record_cost_cli(
            cli.scene,
            &RecordCostOptions { frames: a.frames, warmup: a.warmup, rounds: a.rounds, size: a.size, fps: a.fps, dx: a.dx, out: a.out },
        ),
        Some(Command::Capture(a)) => match a.out {
            Some(out) => waterview::capture::offline::run_cli(
                cli.scene,
                &OfflineOptions { seconds: a.seconds, fps: a.fps, size: a.size, out, dx: a.dx },
            ),
            None => Err(anyhow::anyhow!("give --out VIDEO.mp4 (or a folder for PNGs)")),
        },
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
