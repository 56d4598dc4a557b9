//! Particle files and surface meshes per frame, never stalling the frame: [`ParticleExporter::record`]
//! records a copy of the simulation's state ([`crate::sim::Simulation::encode_state_copy`]: the step state
//! with the simulated time, then every particle's position, density and velocity) into a free staging
//! buffer of a [`ReadbackRing`] in the frame's own encoder; [`ParticleExporter::after_submit`] starts
//! mapping it; a later [`ParticleExporter::poll`] hands the still-mapped buffer to a worker thread, which
//! keeps the live particles (parked ones, density < 0, are left out) and frees the buffer, then writes
//! what [`ExportOutputs`] asks: the particles ([`crate::particle_io`]: binary PLY or VTU) as
//! `DIR/particles_00000.ply`, ..., and/or the water's surface ([`crate::surface`]: marching cubes by
//! `splashsurf_lib`, binary PLY with normals or OBJ) as `DIR/surface_00000.ply`, ... (each through a
//! `.part` file). One read-back serves both. The time in each file is the simulated time read back with
//! the particles, so a capture whose frames end exactly 1/fps apart ([`super::offline`], [`super::exact`])
//! writes files exactly 1/fps apart. A VTU sequence also gets `DIR/particles.pvd`, the collection ParaView
//! opens with the times. A frame waits for the worker (its queue holds one frame) rather than being
//! dropped: a surface of a million particles takes seconds of CPU, and the window's offline render waits
//! for it without blocking ([`super::exact`]).

use super::CaptureError;
use crate::gpu::readback::{Mapped, ReadbackRing};
use crate::particle_io::{self, ParticleFormat, Particles};
use crate::sim::{Simulation, StateLayout};
use crate::surface::{self, MeshFormat, SurfaceSettings};
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// Staging buffers in the ring (each holds a whole state: 32 bytes per particle).
const SLOTS: usize = 2;
/// Frames queued for the worker.
const QUEUE: usize = 1;

/// Where particle files go and in which format.
#[derive(Clone, Debug, PartialEq)]
pub struct ParticleOutput {
    /// The folder of the sequence (created; must not exist yet, see [`super::output::Output::NewFolder`]).
    pub dir: PathBuf,
    pub format: ParticleFormat,
}

/// Where surface meshes go, in which format, and how they are made.
#[derive(Clone, Debug, PartialEq)]
pub struct SurfaceOutput {
    /// The folder of the sequence (created; must not exist yet, see [`super::output::Output::NewFolder`]).
    pub dir: PathBuf,
    pub format: MeshFormat,
    /// Lengths in particle spacings dx: each frame's dx is its simulation's, taken when it is recorded.
    pub settings: SurfaceSettings,
}

/// What each recorded frame becomes: particle files, surface meshes, or both (each in its folder).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExportOutputs {
    pub particles: Option<ParticleOutput>,
    pub surface: Option<SurfaceOutput>,
}

impl From<ParticleOutput> for ExportOutputs {
    fn from(particles: ParticleOutput) -> Self {
        ExportOutputs { particles: Some(particles), surface: None }
    }
}

impl ExportOutputs {
    /// Whether any output is asked for.
    pub fn any(&self) -> bool {
        self.particles.is_some() || self.surface.is_some()
    }

    /// What `frames` frames of these outputs are, for a status line: "12 particle files in A and 12
    /// surface meshes in B".
    pub fn describe(&self, frames: usize) -> String {
        let particles = self.particles.as_ref().map(|p| format!("{frames} particle files in {}", p.dir.display()));
        let surface = self.surface.as_ref().map(|s| format!("{frames} surface meshes in {}", s.dir.display()));
        particles.into_iter().chain(surface).collect::<Vec<_>>().join(" and ")
    }

    /// The folders written, particles' first.
    pub fn dirs(&self) -> Vec<&Path> {
        let surface = self.surface.as_ref().map(|s| s.dir.as_path());
        self.particles.as_ref().map(|p| p.dir.as_path()).into_iter().chain(surface).collect()
    }
}

/// The file of frame `k` in `dir`: `particles_00042.ply`.
pub fn frame_path(dir: &Path, format: ParticleFormat, k: u64) -> PathBuf {
    dir.join(format!("particles_{k:05}.{}", format.extension()))
}

/// The surface mesh of frame `k` in `dir`: `surface_00042.ply`.
pub fn surface_path(dir: &Path, format: MeshFormat, k: u64) -> PathBuf {
    dir.join(format!("surface_{k:05}.{}", format.extension()))
}

/// One frame for the worker: its index, the mapped state copy, and the simulation's spacing dx and
/// domain walls (min, max corners), metres.
struct Job {
    frame: u64,
    layout: StateLayout,
    mapped: Mapped,
    dx: f32,
    walls: ([f32; 3], [f32; 3]),
}

/// A file the worker wrote: its path and size in bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct WrittenFile {
    pub path: PathBuf,
    pub bytes: u64,
}

/// A surface mesh the worker wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct WrittenSurface {
    pub file: WrittenFile,
    pub vertices: usize,
    pub triangles: usize,
    /// Wall-clock seconds the reconstruction took (the CPU's share of the export).
    pub seconds: f64,
}

/// What the worker wrote for one frame.
#[derive(Clone, Debug, PartialEq)]
pub struct WrittenFrame {
    /// Frame index k.
    pub frame: u64,
    /// Simulated time of the particles, seconds (read back with them).
    pub time: f32,
    /// Live particles of the frame.
    pub particles: usize,
    /// The particle file, when asked for.
    pub particle_file: Option<WrittenFile>,
    /// The surface mesh, when asked for.
    pub surface: Option<WrittenSurface>,
}

/// What a finished sequence holds.
#[derive(Clone, Debug, PartialEq)]
pub struct ParticleSummary {
    pub outputs: ExportOutputs,
    /// The frames in order.
    pub frames: Vec<WrittenFrame>,
}

/// A particle or surface sequence being written. See the module docs.
pub struct ParticleExporter {
    outputs: ExportOutputs,
    ring: Option<ReadbackRing>,
    layout: Option<StateLayout>,
    /// The particle spacing of the simulation recorded last, metres (a change of dx rebuilds the
    /// simulation, whose state copies then wait for the ring to empty, as a change of count does).
    dx: f32,
    /// The domain's walls (min, max corners) of the simulation recorded last, metres.
    walls: ([f32; 3], [f32; 3]),
    /// State copies mapped and waiting for room in the worker's queue (each holds a ring slot).
    waiting: VecDeque<Job>,
    jobs: Option<mpsc::SyncSender<Job>>,
    results: mpsc::Receiver<Result<WrittenFrame, CaptureError>>,
    worker: Option<std::thread::JoinHandle<()>>,
    written: Vec<WrittenFrame>,
    /// Frames recorded into the ring.
    pub recorded: u64,
    /// Frames whose read-back or file failed (the first error is returned by `poll`).
    failed: u64,
    /// The worker stopped taking frames: nothing more will be written.
    stopped: bool,
}

impl ParticleExporter {
    /// Starts a sequence into the outputs' folders (created here with their parents). Errors: a folder
    /// cannot be created, the surface settings are out of range, or the worker thread cannot start.
    pub fn start(outputs: impl Into<ExportOutputs>) -> Result<Self, CaptureError> {
        let outputs = outputs.into();
        if let Some(s) = &outputs.surface {
            s.settings.check_values().map_err(|cause| CaptureError::Surface { frame: 0, cause })?;
        }
        for dir in outputs.dirs() {
            std::fs::create_dir_all(dir).map_err(|e| CaptureError::create_folder(dir, e))?;
        }
        let (jobs, rx) = mpsc::sync_channel::<Job>(QUEUE);
        let (tx, results) = mpsc::channel();
        let worker_outputs = outputs.clone();
        let worker = std::thread::Builder::new()
            .name("particle writer".into())
            .spawn(move || {
                for job in rx {
                    if tx.send(write_frame(&worker_outputs, job)).is_err() {
                        break;
                    }
                }
            })
            .map_err(|cause| CaptureError::Thread { name: "particle writer", cause })?;
        Ok(Self {
            outputs,
            ring: None,
            layout: None,
            dx: 0.0,
            walls: ([0.0; 3], [0.0; 3]),
            waiting: VecDeque::new(),
            jobs: Some(jobs),
            results,
            worker: Some(worker),
            written: Vec::new(),
            recorded: 0,
            failed: 0,
            stopped: false,
        })
    }

    /// What is being written.
    pub fn outputs(&self) -> &ExportOutputs {
        &self.outputs
    }

    /// Frames written so far.
    pub fn written(&self) -> u64 {
        self.written.len() as u64
    }

    /// Whether a frame of `sim` recorded now has a staging buffer (false while both are on their way to
    /// the worker, or, when the simulation's particle count changed since the last frame, while copies of
    /// the old size are: offline captures wait a frame then, nothing is dropped).
    pub fn can_record(&self, sim: &Simulation) -> bool {
        match (&self.ring, self.layout) {
            (Some(ring), Some(layout)) if layout == sim.state_layout() && self.dx == sim.params().dx => {
                ring.has_free_slot()
            }
            (Some(ring), _) => !ring.in_flight() && self.waiting.is_empty() && ring.has_free_slot(),
            (None, _) => true,
        }
    }

    /// Records a copy of `sim`'s state for frame `k` into `encoder` (nothing waits). Returns false when
    /// [`ParticleExporter::can_record`] is: record the frame again later.
    pub fn record(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        device: &wgpu::Device,
        sim: &Simulation,
        k: u64,
    ) -> bool {
        let layout = sim.state_layout();
        let dx = sim.params().dx;
        if self.layout != Some(layout) || self.dx != dx {
            if self.ring.as_ref().is_some_and(|r| r.in_flight()) || !self.waiting.is_empty() {
                return false;
            }
            self.dx = dx;
            self.walls = (sim.domain().min, sim.domain().max);
            self.ring = Some(ReadbackRing::new(device, "particle export", layout.bytes(), SLOTS));
            self.layout = Some(layout);
        }
        let Some(ring) = self.ring.as_mut() else { return false };
        let Some(dst) = ring.reserve(k) else { return false };
        sim.encode_state_copy(encoder, dst, 0);
        self.recorded += 1;
        true
    }

    /// Call after the submission holding the recorded copies: starts mapping them.
    pub fn after_submit(&mut self) {
        if let Some(ring) = self.ring.as_mut() {
            ring.submitted();
        }
    }

    /// Hands mapped copies to the worker and takes its results; returns the first failure (a read-back or
    /// a file that could not be written), after which the sequence should end. Call once per frame after
    /// `device.poll(PollType::Poll)`. Never blocks.
    pub fn poll(&mut self) -> Option<CaptureError> {
        let mut error = None;
        if let (Some(ring), Some(layout)) = (self.ring.as_mut(), self.layout) {
            while let Some((frame, mapped)) = ring.try_take_mapped() {
                match mapped {
                    Some(mapped) => {
                        self.waiting.push_back(Job { frame, layout, mapped, dx: self.dx, walls: self.walls })
                    }
                    None => {
                        self.failed += 1;
                        error.get_or_insert(CaptureError::ParticleReadback { frame });
                    }
                }
            }
        }
        while let (Some(job), Some(jobs)) = (self.waiting.pop_front(), self.jobs.as_ref()) {
            match jobs.try_send(job) {
                Ok(()) => {}
                Err(mpsc::TrySendError::Full(job)) => {
                    self.waiting.push_front(job);
                    break;
                }
                Err(mpsc::TrySendError::Disconnected(_)) => {
                    self.stopped = true;
                    self.waiting.clear();
                    error.get_or_insert(CaptureError::EncoderStopped);
                    break;
                }
            }
        }
        while let Ok(result) = self.results.try_recv() {
            match result {
                Ok(w) => self.written.push(w),
                Err(e) => {
                    self.failed += 1;
                    error.get_or_insert(e);
                }
            }
        }
        error
    }

    /// True when every recorded frame has been written or has failed (or the worker stopped).
    pub fn drained(&self) -> bool {
        self.stopped || self.written.len() as u64 + self.failed >= self.recorded
    }

    /// Waits for the frames in flight (polling `device`), ends the worker and, for VTU, writes the `.pvd`
    /// collection. Returns the files written in frame order. **Blocks**: for headless captures and the
    /// end of a window's capture once [`ParticleExporter::drained`].
    /// Errors: a frame that could not be read back or written (the files written stay).
    pub fn finish_blocking(mut self, device: &wgpu::Device) -> Result<ParticleSummary, CaptureError> {
        let mut error = None;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
        while !self.drained() && std::time::Instant::now() < deadline {
            let timeout = Some(std::time::Duration::from_millis(20));
            let _ = device.poll(wgpu::PollType::Wait { submission_index: None, timeout });
            if let Some(e) = self.poll() {
                error.get_or_insert(e);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.jobs = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
        while let Ok(result) = self.results.try_recv() {
            match result {
                Ok(w) => self.written.push(w),
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = error {
            return Err(e);
        }
        if !self.drained() {
            return Err(CaptureError::ParticlesUnfinished { recorded: self.recorded, written: self.written() });
        }
        let mut frames = std::mem::take(&mut self.written);
        frames.sort_by_key(|w| w.frame);
        if let Some(p) = self.outputs.particles.as_ref().filter(|p| p.format == ParticleFormat::Vtu) {
            let pvd = p.dir.join("particles.pvd");
            particle_io::write_bytes(&pvd, pvd_text(&frames).as_bytes())
                .map_err(|e| CaptureError::write(&pvd, e.to_string()))?;
        }
        Ok(ParticleSummary { outputs: self.outputs.clone(), frames })
    }

    /// Abandons the sequence: the worker ends after its current file; the files written so far stay (a
    /// partial sequence is still usable, unlike a partial video).
    pub fn cancel(mut self) {
        self.waiting.clear();
        self.jobs = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

impl Drop for ParticleExporter {
    /// Ends the worker after the file it is writing (so no `.part` file is left behind).
    fn drop(&mut self) {
        self.waiting.clear();
        self.jobs = None;
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// The worker's share of one frame: the live particles out of the mapped copy (the buffer is freed right
/// after), then each output's file.
fn write_frame(outputs: &ExportOutputs, job: Job) -> Result<WrittenFrame, CaptureError> {
    let (frame, job_dx, walls) = (job.frame, job.dx, job.walls);
    let decoded = job.mapped.with_bytes(|bytes| {
        let view = job.layout.split(bytes)?;
        Some((view.step.time, Particles::from_state(view.positions, view.velocities)))
    });
    drop(job.mapped);
    let (time, particles) = decoded.flatten().ok_or(CaptureError::ParticleReadback { frame })?;
    let particle_file = match &outputs.particles {
        Some(p) => {
            let path = frame_path(&p.dir, p.format, frame);
            let bytes = particle_io::encode(&particles, p.format, time);
            particle_io::write_bytes(&path, &bytes).map_err(|e| CaptureError::write(&path, e.to_string()))?;
            Some(WrittenFile { path, bytes: bytes.len() as u64 })
        }
        None => None,
    };
    let surface = match &outputs.surface {
        Some(s) => Some(write_surface(s, frame, time, (job_dx, walls), &particles.positions)?),
        None => None,
    };
    Ok(WrittenFrame { frame, time, particles: particles.len(), particle_file, surface })
}

/// Reconstructs and writes frame `frame`'s surface from the particles at `positions`.
fn write_surface(
    s: &SurfaceOutput,
    frame: u64,
    time: f32,
    (dx, walls): (f32, ([f32; 3], [f32; 3])),
    positions: &[[f32; 3]],
) -> Result<WrittenSurface, CaptureError> {
    let started = std::time::Instant::now();
    let mesh = surface::reconstruct(positions, dx, &s.settings, Some(walls))
        .map_err(|cause| CaptureError::Surface { frame, cause })?;
    let seconds = started.elapsed().as_secs_f64();
    let path = surface_path(&s.dir, s.format, frame);
    let bytes = surface::mesh_file::write(&path, &mesh, s.format, time)
        .map_err(|e| CaptureError::write(&path, e.to_string()))?;
    Ok(WrittenSurface {
        file: WrittenFile { path, bytes },
        vertices: mesh.positions.len(),
        triangles: mesh.triangles.len(),
        seconds,
    })
}

/// A ParaView collection (`.pvd`) of the VTU files with their times.
fn pvd_text(frames: &[WrittenFrame]) -> String {
    let mut text =
        String::from("<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\">\n  <Collection>\n");
    for (f, file) in frames.iter().filter_map(|f| Some((f, f.particle_file.as_ref()?))) {
        let name = file.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        text.push_str(&format!("    <DataSet timestep=\"{}\" part=\"0\" file=\"{name}\"/>\n", f.time));
    }
    text.push_str("  </Collection>\n</VTKFile>\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_numbered_and_collected_with_their_times() {
        assert_eq!(frame_path(Path::new("out"), ParticleFormat::Vtu, 42), Path::new("out/particles_00042.vtu"));
        let w = |frame, time: f32| WrittenFrame {
            frame,
            time,
            particles: 1,
            particle_file: Some(WrittenFile {
                path: frame_path(Path::new("out"), ParticleFormat::Vtu, frame),
                bytes: 1,
            }),
            surface: None,
        };
        assert_eq!(surface_path(Path::new("out"), MeshFormat::Obj, 7), Path::new("out/surface_00007.obj"));
        let text = pvd_text(&[w(0, 0.0), w(1, 0.033333335)]);
        assert!(text.contains("<DataSet timestep=\"0\" part=\"0\" file=\"particles_00000.vtu\"/>"), "{text}");
        assert!(text.contains("timestep=\"0.033333335\" part=\"0\" file=\"particles_00001.vtu\""), "{text}");
    }
}
