//! Checkpoints in the window (the Simulation panel's "Save checkpoint…" and "Resume…"), without ever
//! waiting on the GPU: saving records a copy of the state ([`crate::engine::Engine::encode_checkpoint`])
//! into a staging buffer in a submission of its own, maps it asynchronously, and a worker thread turns the
//! mapped copy into a checkpoint file; resuming reads the file (through the bounded reader) and builds the
//! engine that goes on from it ([`crate::engine::Engine::resume`]), as loading a scene does.

use super::world::World;
use super::Running;
use crate::engine::{Checkpoint, Engine, PendingCheckpoint};
use crate::gpu::readback::ReadbackRing;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// A checkpoint being saved: its copy on the way back from the GPU, then the worker writing it.
pub(super) struct CheckpointSave {
    path: PathBuf,
    ring: ReadbackRing,
    pending: PendingCheckpoint,
    /// The worker's result, once the copy went to it.
    result: Option<mpsc::Receiver<Result<String, String>>>,
}

impl Running {
    /// Starts saving a checkpoint of the running simulation to `path` (see the module docs).
    pub(super) fn save_checkpoint(&mut self, path: PathBuf) {
        if self.checkpoint_save.is_some() {
            self.ui.push_error("a checkpoint is still being saved; try again in a moment");
            return;
        }
        let Some(engine) = self.world.engine() else {
            self.ui.push_error(match self.world.ranks() {
                Some(_) => "cannot save a checkpoint on several GPUs yet: set GPUs to 1",
                None => "cannot save a checkpoint: the scene has no simulation",
            });
            return;
        };
        let mut ring = ReadbackRing::new(&self.ctx.device, "checkpoint", engine.checkpoint_bytes(), 1);
        let mut encoder =
            self.ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("checkpoint copy") });
        let Some(dst) = ring.reserve(0) else { return };
        let pending = match engine.encode_checkpoint(&mut encoder, dst) {
            Ok(p) => p,
            Err(e) => {
                self.ui.push_error(format!("cannot save a checkpoint: {e}"));
                return;
            }
        };
        self.ctx.queue.submit([encoder.finish()]);
        ring.submitted();
        log::info!("saving checkpoint {}", path.display());
        self.ui.sim.checkpoint_busy = true;
        self.checkpoint_save = Some(CheckpointSave { path, ring, pending, result: None });
    }

    /// Hands a mapped checkpoint copy to a worker thread and reports a finished save. Never blocks.
    pub(super) fn poll_checkpoint_save(&mut self) {
        let Some(save) = self.checkpoint_save.as_mut() else { return };
        if save.result.is_none() {
            let Some((_, mapped)) = save.ring.try_take_mapped() else { return };
            let (tx, rx) = mpsc::channel();
            let (pending, path) = (save.pending.clone(), save.path.clone());
            let spawned = std::thread::Builder::new().name("checkpoint writer".into()).spawn(move || {
                let checkpoint = mapped.and_then(|m| m.with_bytes(|bytes| pending.finish(bytes)).flatten());
                let result = match checkpoint {
                    None => Err(format!("checkpoint {}: the state could not be read back", path.display())),
                    Some(c) => c
                        .write(&path)
                        .map(|()| {
                            format!("Saved checkpoint {} (t = {} s, {} steps)", path.display(), c.time(), c.steps())
                        })
                        .map_err(|e| e.to_string()),
                };
                let _ = tx.send(result);
            });
            match spawned {
                Ok(_) => save.result = Some(rx),
                Err(e) => self.finish_checkpoint_save(Err(format!("cannot start the checkpoint writer: {e}"))),
            }
            return;
        }
        let outcome = match save.result.as_ref().map(mpsc::Receiver::try_recv) {
            Some(Ok(result)) => result,
            Some(Err(mpsc::TryRecvError::Disconnected)) => Err("the checkpoint writer stopped".to_string()),
            Some(Err(mpsc::TryRecvError::Empty)) | None => return,
        };
        self.finish_checkpoint_save(outcome);
    }

    fn finish_checkpoint_save(&mut self, outcome: Result<String, String>) {
        self.checkpoint_save = None;
        self.ui.sim.checkpoint_busy = false;
        match &outcome {
            Ok(m) => log::info!("{m}"),
            Err(e) => self.ui.push_error(e.clone()),
        }
        self.ui.sim.checkpoint_status = Some(outcome);
    }

    /// Resumes the checkpoint at `path`: its scene and state replace the running scene; on failure the
    /// banner says why and the running scene stays.
    pub(super) fn resume(&mut self, path: &Path) {
        let resumed = Checkpoint::read_for(&self.ctx, path)
            .map_err(crate::engine::EngineError::from)
            .and_then(|c| Engine::resume(&self.ctx, None, &c, Default::default()).map(|e| (e, c)));
        match resumed {
            Ok((engine, checkpoint)) => {
                let file = engine.scene().file.clone();
                let message = format!(
                    "Resumed {} at t = {} s after {} steps",
                    path.display(),
                    checkpoint.time(),
                    checkpoint.steps()
                );
                log::info!("{message}");
                self.show(World::Running(engine), true);
                self.scene_file = (!file.as_os_str().is_empty()).then_some(file);
                self.ui.sim.checkpoint_status = Some(Ok(message));
            }
            Err(e) => {
                self.ui.push_error(format!("cannot resume: {e}"));
                self.ui.sim.checkpoint_status = Some(Err(e.to_string()));
            }
        }
    }
}
