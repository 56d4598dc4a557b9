//! The help overlay (F1 or ?): every shortcut of the window in one table, drawn over the scene.

/// (keys, action) of every shortcut, in the order shown.
pub const SHORTCUTS: &[(&str, &str)] = &[
    ("F1 or ?", "show / hide this help"),
    ("F2", "show / hide the panels"),
    ("Space", "play / pause"),
    ("S", "single step (paused, orbit mode)"),
    ("R", "reset the scene"),
    ("F", "frame the fluid (fit the camera to its bounding box)"),
    ("V", "toggle fly mode"),
    ("left drag", "orbit (fly mode: look around)"),
    ("right drag, shift + left drag", "pan"),
    ("mouse wheel", "zoom (fly mode: speed)"),
    ("W A S D, Q E", "fly: forward, left, back, right, down, up (shift: faster)"),
    ("F9", "start / stop recording a video"),
    ("F12", "screenshot (PNG into captures/)"),
    ("Ctrl+O / Ctrl+S", "open / save a scene file"),
    ("drop a file", ".ron: open the scene; 16-bit .png: terrain heightmap; other image or a folder of faces: sky"),
    ("Esc", "close this help; quit"),
];

/// Draws the overlay when `open`; its close button (and Esc, handled by the app) clears `open`.
pub fn help_ui(ui: &mut egui::Ui, open: &mut bool) {
    if !*open {
        return;
    }
    egui::Window::new("Keyboard and mouse")
        .open(open)
        .collapsible(false)
        .resizable(false)
        .anchor(egui::Align2::CENTER_CENTER, egui::Vec2::ZERO)
        .show(ui.ctx(), |ui| {
            egui::Grid::new("help_grid").num_columns(2).striped(true).spacing([24.0, 6.0]).show(ui, |ui| {
                for (keys, action) in SHORTCUTS {
                    ui.strong(*keys);
                    ui.label(*action);
                    ui.end_row();
                }
            });
        });
}
