//! Skies are decoded off the UI thread: [`SkyLoader`] runs [`load_sky`] (read through the bounded
//! reader, decoded with limits, filtered into cube faces: up to seconds and a few hundred MiB for a 16k
//! image) on a worker thread, one sky at a time, and the frame polls it without waiting. The sky on
//! screen stays until the new one is ready; then its texels are uploaded (a few MiB) and the panel shows
//! it, or the error goes to the banner.

use super::Running;
use crate::render::{load_sky, SkyCube};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};

/// What the worker runs on a path: [`load_sky`] in the app; a test holds it back to show that the poll
/// never waits for it.
type Load = Arc<dyn Fn(&Path) -> Result<SkyCube, String> + Send + Sync>;

/// A sky being decoded on its worker thread.
struct Job {
    path: PathBuf,
    rx: mpsc::Receiver<Result<SkyCube, String>>,
    /// False once another sky (or the generated one) was asked for: its result is dropped.
    wanted: bool,
}

/// Decodes skies on a worker thread, one at a time; a sky asked for while another decodes waits for it
/// (so two large decodes never run at once) and replaces it.
pub(super) struct SkyLoader {
    job: Option<Job>,
    queued: Option<PathBuf>,
    load: Load,
}

impl Default for SkyLoader {
    fn default() -> Self {
        // A decoder's panic (src/render's image decoders on a hostile file) is the file's error, not the
        // loader's death.
        Self::with_load(Arc::new(|path: &Path| {
            crate::files::guarded(|| load_sky(path))
                .map_err(|m| format!("sky image {}: {m}", path.display()))?
                .map_err(|e| e.to_string())
        }))
    }
}

impl SkyLoader {
    fn with_load(load: Load) -> Self {
        Self { job: None, queued: None, load }
    }

    /// Starts decoding the sky at `path` (or queues it behind the one decoding, whose result is then
    /// dropped).
    pub(super) fn request(&mut self, path: PathBuf) {
        match self.job.as_mut() {
            Some(job) => {
                job.wanted = false;
                self.queued = Some(path);
            }
            None => self.start(path),
        }
    }

    /// Drops the sky decoding and any queued one (the generated sky was asked for).
    pub(super) fn cancel(&mut self) {
        if let Some(job) = self.job.as_mut() {
            job.wanted = false;
        }
        self.queued = None;
    }

    /// Whether a sky is decoding or queued.
    #[cfg(test)]
    fn busy(&self) -> bool {
        self.job.is_some() || self.queued.is_some()
    }

    fn start(&mut self, path: PathBuf) {
        let (tx, rx) = mpsc::channel();
        let (p, load) = (path.clone(), Arc::clone(&self.load));
        let spawned = std::thread::Builder::new().name("sky loader".into()).spawn(move || {
            let _ = tx.send(load(&p));
        });
        let rx = match spawned {
            Ok(_) => rx,
            Err(e) => {
                // Reported through the same channel as the worker's result, on the next poll.
                let (tx, rx) = mpsc::channel();
                let _ = tx.send(Err(format!("cannot start a thread to load the sky {}: {e}", path.display())));
                rx
            }
        };
        self.job = Some(Job { path, rx, wanted: true });
    }

    /// The outcome of the sky asked for last, once its worker is done: `(path, cube or error message)`.
    /// Never blocks; `None` while it decodes (or when nothing was asked for).
    pub(super) fn poll(&mut self) -> Option<(PathBuf, Result<SkyCube, String>)> {
        let job = self.job.as_ref()?;
        let result = match job.rx.try_recv() {
            Ok(result) => result,
            Err(mpsc::TryRecvError::Empty) => return None,
            Err(mpsc::TryRecvError::Disconnected) => {
                Err(format!("the sky loader stopped before it could load {}", job.path.display()))
            }
        };
        let job = self.job.take()?;
        if let Some(next) = self.queued.take() {
            self.start(next);
        }
        job.wanted.then_some((job.path, result))
    }
}

impl Running {
    /// [`UiAction::LoadSky`]: starts decoding a sky on the worker (the panel says "loading sky…"), or
    /// goes back to the generated sky at once.
    pub(super) fn load_sky(&mut self, path: Option<PathBuf>) {
        match path {
            Some(path) => {
                self.ui.render.sky.started(&path);
                self.sky_loader.request(path);
            }
            None => {
                self.sky_loader.cancel();
                self.sky = None;
                self.ui.render.sky.generated();
                self.renderer.set_sky(&self.ctx, None);
                if let Some(hdr) = self.hdr_renderer.as_mut() {
                    hdr.set_sky(&self.ctx, None);
                }
            }
        }
    }

    /// Takes a sky the worker finished, if any (never blocks): shows it in both renderers, or puts its
    /// error in the banner (the sky on screen stays).
    pub(super) fn poll_sky(&mut self) {
        let Some((path, result)) = self.sky_loader.poll() else { return };
        let result = result.map(|cube| {
            self.renderer.set_sky(&self.ctx, Some(&cube));
            if let Some(hdr) = self.hdr_renderer.as_mut() {
                hdr.set_sky(&self.ctx, Some(&cube));
            }
            log::info!("sky loaded: {} ({} texels a face)", path.display(), cube.face);
            self.sky = Some(cube);
        });
        self.ui.sky_finished(&path, result);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// Polls `loader` until it has an outcome, failing after 30 s.
    fn outcome(loader: &mut SkyLoader) -> (PathBuf, Result<SkyCube, String>) {
        let start = Instant::now();
        loop {
            if let Some(r) = loader.poll() {
                return r;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "the sky loader never finished");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn the_worker_reports_a_missing_sky_and_decodes_a_good_one() {
        let dir = std::env::temp_dir().join(format!("waterview_sky_loader_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut loader = SkyLoader::default();
        assert!(loader.poll().is_none() && !loader.busy());

        let missing = dir.join("missing.hdr");
        loader.request(missing.clone());
        let (path, result) = outcome(&mut loader);
        assert_eq!(path, missing);
        let e = result.expect_err("a missing file is an error");
        assert!(e.contains("missing.hdr"), "{e}");

        let good = dir.join("good.png");
        image::RgbImage::from_fn(2048, 1024, |x, y| image::Rgb([(x % 256) as u8, (y % 256) as u8, 200]))
            .save(&good)
            .unwrap();
        // Asked for twice while the first decodes: only the last result comes back.
        loader.request(dir.clone());
        loader.request(good.clone());
        assert!(loader.busy());
        let (path, result) = outcome(&mut loader);
        assert_eq!(path, good, "the folder's result (superseded) was dropped");
        let cube = result.expect("a 2:1 PNG loads");
        assert_eq!((cube.face, cube.texels.len()), (512, 6 * 512 * 512 * 4));
        assert!(!loader.busy());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The worker is held inside its load until the test lets it go: every poll meanwhile must come back
    /// empty (a poll that waited for the worker would never return, and the test fails after 30 s
    /// instead of hanging), and a cancelled sky never comes back.
    #[test]
    fn polls_never_wait_for_the_worker_and_a_cancelled_sky_is_dropped() {
        let gate = Arc::new(Mutex::new(()));
        let held = gate.lock().unwrap();
        let worker_gate = Arc::clone(&gate);
        let load: Load = Arc::new(move |path: &Path| {
            drop(worker_gate.lock());
            Err(format!("done {}", path.display()))
        });

        let (tx, rx) = mpsc::channel();
        let polls = std::thread::spawn(move || {
            let mut loader = SkyLoader::with_load(load);
            loader.request("a.hdr".into());
            let empty = (0..100).all(|_| loader.poll().is_none());
            tx.send(empty).unwrap();
            loader
        });
        let empty = rx.recv_timeout(Duration::from_secs(30)).expect("a poll waited for the held worker");
        assert!(empty, "a poll had an outcome while the worker was held");
        drop(held);
        let mut loader = polls.join().unwrap();
        let (path, result) = outcome(&mut loader);
        assert_eq!((path, result.unwrap_err()), (PathBuf::from("a.hdr"), "done a.hdr".to_string()));

        let held = gate.lock().unwrap();
        loader.request("b.hdr".into());
        loader.cancel();
        assert!(loader.poll().is_none() && loader.busy());
        drop(held);
        let start = Instant::now();
        while loader.busy() {
            assert!(loader.poll().is_none(), "a cancelled sky is dropped");
            assert!(start.elapsed() < Duration::from_secs(30), "the cancelled sky's worker never finished");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
