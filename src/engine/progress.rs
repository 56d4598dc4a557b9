//! Building an engine where someone watches and may cancel ([`Engine::new_with_progress`]): the window
//! builds a scene on a worker thread and shows a [`BuildProgress`] in its panel while the running scene
//! goes on. The builder moves through the [`BuildPhase`]s and updates a per-mille counter (atomics, read
//! from any thread without locking); it looks at the cancel flag between phases (and wherever a phase
//! reports progress), answering [`EngineError::Cancelled`], and the decoders of the fluid files and meshes
//! the build reads look at it as they go ([`crate::cancel`]: the build runs in the flag's scope).

use super::{checked_build, spacing, BuildOptions, Engine, EngineError};
use crate::gpu::GpuContext;
use crate::scene::Scene;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// What a build is doing, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum BuildPhase {
    /// Validating the scene at its spacing and checking its estimate against the GPU's limit.
    Checking = 0,
    /// Laying out the initial particles and the terrain.
    LayingOut = 1,
    /// Creating the simulation's buffers and uploading the particles.
    Uploading = 2,
    /// Built (or failed, or cancelled): nothing more happens.
    Done = 3,
}

impl BuildPhase {
    /// Words for the panel ("laying out particles").
    pub fn describe(self) -> &'static str {
        match self {
            BuildPhase::Checking => "checking",
            BuildPhase::LayingOut => "laying out particles",
            BuildPhase::Uploading => "uploading to the GPU",
            BuildPhase::Done => "done",
        }
    }

    /// Share of the whole build done when the phase starts, per mille (a phase without a counter of its
    /// own jumps to the next one's share when it ends).
    fn start_permille(self) -> u32 {
        match self {
            BuildPhase::Checking => 0,
            BuildPhase::LayingOut => 20,
            BuildPhase::Uploading => 600,
            BuildPhase::Done => 1000,
        }
    }

    fn from_u32(v: u32) -> Self {
        match v {
            0 => BuildPhase::Checking,
            1 => BuildPhase::LayingOut,
            2 => BuildPhase::Uploading,
            _ => BuildPhase::Done,
        }
    }
}

/// A build's progress and its cancel flag, shared between the builder and whoever watches (`Arc` it).
#[derive(Debug, Default)]
pub struct BuildProgress {
    phase: AtomicU32,
    /// Of the whole build, 0 ..= 1000.
    permille: AtomicU32,
    /// The scene's particle estimate (its lattice points plus the emitters' pool), 0 until known.
    particles: AtomicU64,
    /// Shared with the decoders of the build's files ([`crate::cancel::scope`]).
    cancelled: Arc<AtomicBool>,
}

impl BuildProgress {
    /// The phase now.
    pub fn phase(&self) -> BuildPhase {
        BuildPhase::from_u32(self.phase.load(Ordering::Relaxed))
    }

    /// Share of the build done, 0 ..= 1 (by phases; finer where a phase reports its own progress).
    pub fn fraction(&self) -> f32 {
        self.permille.load(Ordering::Relaxed).min(1000) as f32 / 1000.0
    }

    /// The particles the build makes at most (its estimate), once checked; 0 before.
    pub fn particles(&self) -> u64 {
        self.particles.load(Ordering::Relaxed)
    }

    /// Asks the builder to stop at its next check; the build then answers [`EngineError::Cancelled`].
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether [`BuildProgress::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Enters `phase`. Errors: [`EngineError::Cancelled`] when the build was cancelled.
    pub fn enter(&self, phase: BuildPhase) -> Result<(), EngineError> {
        self.phase.store(phase as u32, Ordering::Relaxed);
        self.permille.fetch_max(phase.start_permille(), Ordering::Relaxed);
        self.check()
    }

    /// Within the current phase: `done` of `total` units (particles laid out, bytes uploaded). Errors:
    /// [`EngineError::Cancelled`] when the build was cancelled (a long phase calls this often).
    pub fn advance(&self, done: u64, total: u64) -> Result<(), EngineError> {
        let phase = self.phase();
        let (lo, hi) = (phase.start_permille(), BuildPhase::from_u32(phase as u32 + 1).start_permille());
        let share = if total == 0 { 1.0 } else { (done.min(total) as f64) / total as f64 };
        self.permille.fetch_max(lo + ((hi - lo) as f64 * share) as u32, Ordering::Relaxed);
        self.check()
    }

    fn check(&self) -> Result<(), EngineError> {
        if self.is_cancelled() {
            return Err(EngineError::Cancelled);
        }
        Ok(())
    }
}

impl Engine {
    /// As [`Engine::new`], reporting to `progress` (phases, the particle estimate) and stopping with
    /// [`EngineError::Cancelled`] at the first check after [`BuildProgress::cancel`], inside the decoding
    /// of a fluid file or a mesh too (what was built so far is dropped). Runs on any thread (the window builds on a worker; `ctx` is a clone of its context).
    /// Errors: as [`Engine::new`], and [`EngineError::Cancelled`].
    pub fn new_with_progress(
        ctx: &GpuContext,
        scene: Scene,
        options: BuildOptions,
        progress: &BuildProgress,
    ) -> Result<Self, EngineError> {
        progress.enter(BuildPhase::Checking)?;
        let dx = spacing(ctx, &scene, &options);
        let at_dx = scene.at_dx(dx);
        let pool = if options.sources { crate::sim::sources::pool_size(&at_dx.emitters, dx) as u64 } else { 0 };
        progress.particles.store(at_dx.estimate_particle_count_at(dx).saturating_add(pool), Ordering::Relaxed);
        progress.enter(BuildPhase::LayingOut)?;
        // The fluid files' and meshes' decoders look at the flag as they go.
        let setup = crate::cancel::scope(progress.cancelled.clone(), || checked_build(ctx, &at_dx, &options))?;
        progress.enter(BuildPhase::Uploading)?;
        let engine = Self::with_setup(ctx, scene, &setup, options)?;
        progress.enter(BuildPhase::Done)?;
        Ok(engine)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_moves_by_phases_and_stops_when_cancelled() {
        let p = BuildProgress::default();
        assert_eq!((p.phase(), p.fraction()), (BuildPhase::Checking, 0.0));
        p.enter(BuildPhase::LayingOut).expect("not cancelled");
        p.advance(1, 2).expect("not cancelled");
        // Half of laying out: 20 + (600 - 20) / 2 per mille.
        assert_eq!(p.fraction(), 0.31);
        p.advance(0, 2).expect("not cancelled");
        assert_eq!(p.fraction(), 0.31, "never goes back");
        p.cancel();
        assert!(matches!(p.advance(2, 2), Err(EngineError::Cancelled)));
        assert!(matches!(p.enter(BuildPhase::Uploading), Err(EngineError::Cancelled)));
        assert_eq!(p.phase(), BuildPhase::Uploading);
    }
}
