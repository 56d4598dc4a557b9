//! waterview: real-time GPU SPH water over real terrain (winit + wgpu + egui).
//!
//! One [`engine`] that every front end uses: the window ([`app`], egui panels in [`ui`]) and the command
//! line ([`cli`]: `run`, [`mod@bench`], [`validate`], [`capture`]). The engine builds the simulation ([`sim`])
//! from a scene ([`scene`], [`terrain`]) and hands its particles to the renderer ([`render`]) as buffers
//! and plain data; `sim` and `render` are siblings over the GPU plumbing ([`gpu`]) and know nothing of
//! each other. Every file the app reads goes through one bounded reader ([`files`]).

pub mod cancel;
pub mod files;
pub mod gpu;
pub mod mesh;
pub mod particle_io;
pub mod render;
pub mod scene;
pub mod sim;
pub mod surface;
pub mod terrain;
pub mod text;

pub mod cluster;
pub mod engine;

pub mod app;
pub mod bench;
pub mod capture;
pub mod cli;
pub mod process;
pub mod settings;
pub mod ui;
pub mod validate;
