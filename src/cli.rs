//! Command-line interface (clap): no subcommand opens the window; `run` simulates headless.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Real-time GPU SPH water over real terrain.
#[derive(Debug, Parser)]
#[command(name = "waterview", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Scene file to open in the window (default: the built-in valley flood).
    #[arg(long, global = true)]
    pub scene: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scene headless (no window): write the final image and a CSV of per-frame diagnostics.
    Run(RunArgs),
}

/// Arguments of `waterview run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Number of frames to simulate (each frame = `substeps` steps).
    #[arg(long, conflicts_with = "seconds")]
    pub steps: Option<u64>,
    /// Simulated seconds to run.
    #[arg(long)]
    pub seconds: Option<f32>,
    /// Final image (PNG).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Per-frame diagnostics (CSV).
    #[arg(long)]
    pub stats: Option<PathBuf>,
    /// Image size WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720", value_parser = parse_size)]
    pub size: (u32, u32),
    /// Override the scene's particle spacing dx (metres).
    #[arg(long)]
    pub dx: Option<f32>,
}

/// Parses "WIDTHxHEIGHT" (each 1..=16384).
pub fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(|| format!("size `{s}` is not WIDTHxHEIGHT"))?;
    let w: u32 = w.trim().parse().map_err(|_| format!("width `{w}` is not a number"))?;
    let h: u32 = h.trim().parse().map_err(|_| format!("height `{h}` is not a number"))?;
    if !(1..=16384).contains(&w) || !(1..=16384).contains(&h) {
        return Err(format!("size {w}x{h} is out of range 1..=16384"));
    }
    Ok((w, h))
}
