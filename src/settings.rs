//! What the window remembers between runs: its size, the last scene file, the panels' state and the
//! capture settings, as a small JSON file in the user's config folder
//! (`$XDG_CONFIG_HOME/waterview/settings.json`, usually `~/.config/waterview/settings.json`; the platform's
//! config folder elsewhere). A missing file gives the defaults; a file that cannot be read or written is
//! logged and never stops the app. Unknown fields are ignored so older and newer versions share the file.

use crate::files::FileKind;
use crate::ui::capture_panel::CapturePanelState;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The remembered state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AppSettings {
    /// Inner size of the window, physical pixels.
    pub window_size: Option<[u32; 2]>,
    /// The scene file open when the app was closed (`None`: a built-in scene).
    pub last_scene: Option<PathBuf>,
    pub show_panels: bool,
    /// Width of the side panel, points.
    pub panel_width: f32,
    /// Screenshots include the UI.
    pub capture_with_ui: bool,
    pub capture: CapturePanelState,
}

impl Default for AppSettings {
    fn default() -> Self {
        Self {
            window_size: None,
            last_scene: None,
            show_panels: true,
            panel_width: 320.0,
            capture_with_ui: false,
            capture: CapturePanelState::default(),
        }
    }
}

/// Why the settings could not be saved. The cause is part of the message (no `source()`).
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot create {}: {cause}", path.display())]
    CreateFolder { path: PathBuf, cause: std::io::Error },
    #[error("cannot encode settings: {0}")]
    Encode(serde_json::Error),
    #[error("cannot write {}: {cause}", path.display())]
    Write { path: PathBuf, cause: std::io::Error },
}

/// `waterview/settings.json` in the user's config folder, if one is known.
pub fn default_path() -> Option<PathBuf> {
    let base =
        std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()).map(PathBuf::from).or_else(dirs::config_dir)?;
    Some(base.join("waterview").join("settings.json"))
}

impl AppSettings {
    /// Reads `path` through the bounded reader ([`crate::files`], [`FileKind::Settings`]: a regular file
    /// of at most 1 MiB; a leading byte-order mark is skipped); a missing file gives the defaults silently,
    /// any other failure logs a warning and gives the defaults.
    pub fn load(path: &Path) -> Self {
        match crate::files::read(path, FileKind::Settings) {
            Ok(bytes) => serde_json::from_slice(crate::files::without_bom(&bytes)).unwrap_or_else(|e| {
                log::warn!("settings {} are malformed ({e}); using defaults", path.display());
                Self::default()
            }),
            Err(e) if e.is_not_found() => Self::default(),
            Err(e) => {
                log::warn!("{e}; using default settings");
                Self::default()
            }
        }
    }

    /// Writes `path` (through a temporary file renamed over it). Errors name the file (for the log).
    pub fn save(&self, path: &Path) -> Result<(), SettingsError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|cause| SettingsError::CreateFolder { path: dir.into(), cause })?;
        }
        let text = serde_json::to_string_pretty(self).map_err(SettingsError::Encode)?;
        let tmp = crate::capture::video::part_path(path);
        std::fs::write(&tmp, text).map_err(|cause| SettingsError::Write { path: tmp.clone(), cause })?;
        crate::files::replace(&tmp, path).map_err(|cause| SettingsError::Write { path: path.into(), cause })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_tolerate_bad_files() {
        let dir = std::env::temp_dir().join(format!("waterview-settings-{}", std::process::id()));
        let path = dir.join("settings.json");
        assert_eq!(AppSettings::load(&path), AppSettings::default());
        let s = AppSettings { window_size: Some([800, 600]), last_scene: Some("a.ron".into()), ..Default::default() };
        s.save(&path).unwrap();
        assert_eq!(AppSettings::load(&path), s);
        std::fs::write(&path, "{ not json").unwrap();
        assert_eq!(AppSettings::load(&path), AppSettings::default());
        // Unknown fields are ignored.
        std::fs::write(&path, r#"{"show_panels": false, "future": 1}"#).unwrap();
        assert!(!AppSettings::load(&path).show_panels);
        // A byte-order mark (as some editors save JSON) is skipped.
        std::fs::write(&path, "\u{feff}{\"show_panels\": false}").unwrap();
        assert!(!AppSettings::load(&path).show_panels);
        // A FIFO in its place gives the defaults at once (a blocking read would hang the test).
        std::fs::remove_file(&path).unwrap();
        assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
        assert_eq!(AppSettings::load(&path), AppSettings::default());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
