//! The sky section of the render panel: the generated sky or a sky file (an equirectangular image or a
//! folder of six faces), typed in or dropped on the window. Loading asks the app
//! ([`UiAction::LoadSky`]), which decodes the file on a worker thread; meanwhile the panel says "loading
//! sky…" and the current sky stays. The outcome comes back through [`UiState::sky_finished`]: the new sky
//! is shown, or its error goes to the banner and the panel goes on showing the sky that is really on
//! screen (the exposure slider only while a loaded sky is).

use super::{UiAction, UiState};
use std::path::{Path, PathBuf};

/// What the sky section shows and remembers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SkyPanelState {
    /// The sky file or folder path being typed (loaded by the Load button).
    pub path_text: String,
    /// The sky on screen: `None` the generated one, `Some(path)` the one loaded from that file or folder.
    pub shown: Option<PathBuf>,
    /// A sky file being decoded on the worker thread; it replaces `shown` once ready.
    pub loading: Option<PathBuf>,
}

impl SkyPanelState {
    /// Whether the panel offers the exposure slider: only while a loaded sky is on screen (the generated
    /// sky has none, and a sky that failed to load was never shown).
    pub fn shows_exposure(&self) -> bool {
        self.shown.is_some()
    }

    /// A sky file was asked for (typed, dropped or opened): the panel shows it as loading.
    pub fn started(&mut self, path: &Path) {
        self.path_text = path.display().to_string();
        self.loading = Some(path.to_path_buf());
    }

    /// Back to the generated sky (any load in flight is abandoned).
    pub fn generated(&mut self) {
        self.shown = None;
        self.loading = None;
    }
}

impl UiState {
    /// The outcome of loading the sky at `path` on the worker: on success the panel shows it as the sky on
    /// screen; on error the message goes to the banner and the panel keeps showing the sky that stays.
    /// An outcome for a path that is no longer the one loading (superseded) changes nothing.
    pub fn sky_finished(&mut self, path: &Path, result: Result<(), String>) {
        let sky = &mut self.render.sky;
        if sky.loading.as_deref() != Some(path) {
            return;
        }
        sky.loading = None;
        match result {
            Ok(()) => sky.shown = Some(path.to_path_buf()),
            Err(message) => self.push_error(message),
        }
    }
}

/// The sky row (path, Load, Generated), the loading line and, for a loaded sky, its exposure slider
/// (`exposure`, a radiance multiplier). Returns [`UiAction::LoadSky`] when asked.
pub fn sky_ui(ui: &mut egui::Ui, state: &mut SkyPanelState, exposure: &mut f32) -> Vec<UiAction> {
    let mut actions = Vec::new();
    ui.horizontal(|ui| {
        ui.label("Sky").on_hover_text(
            "Equirectangular .hdr/.exr/.png/.jpg, or a folder with px nx py ny pz nz images; empty = generated sky. \
             A file that cannot be used is reported in the banner and the current sky stays",
        );
        ui.text_edit_singleline(&mut state.path_text);
        if ui.button("Load").clicked() {
            let t = state.path_text.trim();
            actions.push(UiAction::LoadSky((!t.is_empty()).then(|| t.into())));
        }
        if ui.button("Generated").clicked() {
            state.path_text.clear();
            actions.push(UiAction::LoadSky(None));
        }
    });
    match &state.loading {
        Some(p) => {
            ui.horizontal(|ui| {
                ui.spinner();
                ui.label(format!("loading sky… {}", p.display()));
            });
        }
        None => {
            ui.weak(match &state.shown {
                Some(p) => format!("on screen: {}", p.display()),
                None => "on screen: the generated sky".to_string(),
            });
        }
    }
    if state.shows_exposure() {
        ui.add(egui::Slider::new(exposure, 0.05..=8.0).logarithmic(true).text("sky exposure"));
    }
    actions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::Scene;

    fn ui_state() -> UiState {
        UiState::new(&Scene::builtin("tank").expect("built-in tank"), None, false)
    }

    #[test]
    fn a_sky_that_fails_to_load_goes_to_the_banner_and_shows_no_exposure() {
        let mut ui = ui_state();
        assert!(!ui.render.sky.shows_exposure(), "the generated sky has no exposure slider");
        let bad = PathBuf::from("/skies/broken.hdr");
        ui.render.sky.started(&bad);
        assert_eq!(ui.render.sky.loading.as_deref(), Some(bad.as_path()));
        ui.sky_finished(&bad, Err("cannot decode sky image /skies/broken.hdr: ...".into()));
        assert!(!ui.render.sky.shows_exposure(), "a sky that failed to load is not pretended");
        assert_eq!(ui.render.sky.loading, None);
        assert_eq!(ui.errors, ["cannot decode sky image /skies/broken.hdr: ..."]);
    }

    #[test]
    fn a_loaded_sky_shows_exposure_and_stays_when_the_next_fails() {
        let mut ui = ui_state();
        let good = PathBuf::from("/skies/good.hdr");
        ui.render.sky.started(&good);
        assert!(!ui.render.sky.shows_exposure(), "not before it is on screen");
        ui.sky_finished(&good, Ok(()));
        assert!(ui.render.sky.shows_exposure() && ui.errors.is_empty());
        let folder = PathBuf::from("/skies/empty_folder");
        ui.render.sky.started(&folder);
        ui.sky_finished(&folder, Err("sky folder /skies/empty_folder has no face px".into()));
        assert_eq!(ui.render.sky.shown.as_deref(), Some(good.as_path()), "the good sky stays on screen");
        assert!(ui.render.sky.shows_exposure());
        assert_eq!(ui.errors.len(), 1);
        // A result for a load that was superseded (another file asked for since) changes nothing.
        ui.render.sky.started(&folder);
        ui.sky_finished(&good, Err("late".into()));
        assert_eq!(ui.render.sky.loading.as_deref(), Some(folder.as_path()));
        assert_eq!(ui.errors.len(), 1);
        ui.render.sky.generated();
        assert!(!ui.render.sky.shows_exposure() && ui.render.sky.loading.is_none());
    }
}
