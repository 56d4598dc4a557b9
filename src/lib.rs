//! waterview: real-time GPU SPH water over real terrain (winit + wgpu + egui).
//!
//! One engine, two front ends: [`app`] (a winit window with egui panels) and [`headless`] (no window:
//! tests, benchmarks, batch capture). The simulation ([`sim`]) and the renderer ([`render`]) share one
//! [`gpu::GpuContext`]; scenes come from RON files ([`scene`]).

pub mod gpu;
pub mod render;
pub mod scene;
pub mod sim;
pub mod terrain;
pub mod app;
pub mod bench;
pub mod capture;
pub mod cli;
pub mod headless;
pub mod settings;
pub mod ui;
pub mod validate;
