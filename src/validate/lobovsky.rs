//! The dam-break experiment of Lobovsky et al. (2014): the ETSIN tank's geometry and its measured
//! surge front, the primary reference of the `dam_break` case.
//!
//! Reference: L. Lobovsky, E. Botia-Vera, F. Castellana, J. Mas-Soler and A. Souto-Iglesias (2014),
//! "Experimental investigation of dynamic pressure loads during dam break", Journal of Fluids and
//! Structures 48, 407-434, doi:10.1016/j.jfluidstructs.2014.03.009.
//!
//! Tank (ETSIN, Madrid): 1.61 m long, 0.6 m high, 0.15 m wide. Water column L = 0.6 m long (from the back
//! wall to the gate) and H = 0.3 m high across the whole width; the downstream wall is 1.01 m from the
//! gate. The gate is lifted fast (about 0.07 s), much faster than Martin & Moyce's (1952) release.

/// Column height H, metres (the length scale of T and X).
pub const H: f64 = 0.3;

/// Column length L (back wall to gate), metres; the gate is at x = L.
pub const L: f64 = 0.6;

/// Tank length (back wall to downstream wall), metres.
pub const TANK_LENGTH: f64 = 1.61;

/// Tank height, metres.
pub const TANK_HEIGHT: f64 = 0.6;

/// Tank width (the column spans all of it), metres.
pub const TANK_WIDTH: f64 = 0.15;

/// The downstream wall in X = x / H from the gate: 1.01 m / 0.3 m.
pub const X_WALL: f64 = (TANK_LENGTH - L) / H;

/// Gravity used for T (the solver default), m/s^2.
pub const G: f64 = 9.81;

/// Experimental points compared: T in (0, T_COMPARED] (the front reaches the wall at T = 2.59).
pub const T_COMPARED: f64 = 2.5;

/// Surge front (T, X), T = t sqrt(g / H), X = x / H with x the front's distance from the gate, H = 0.3 m:
/// the ETSIN experiment's curve of Lobovsky et al. (2014), figure 12, as stored by the AQUAgpusph project
/// (sanguinariojoe/aquagpusph, examples/lobovsky_etal_jfs_2013/doc/Fig12_01_ETSIN_Front_Dressler_Martin_2.dat
/// at commit 5b4b66d0bd68212140495c3adbcc28367cf27861, header "ETSIN experiment ... H=0.3m"). A
/// digitised curve at even steps of 0.01906 in T; the last point is the downstream wall (X = 3.3667).
pub const LOBOVSKY_2014_FRONT: [(f64, f64); 137] = [
    (0.0, 0.0),
    (0.0190613, 0.00349965),
    (0.0381226, 0.0139986),
    (0.0571839, 0.0279972),
    (0.0762452, 0.0419958),
    (0.0953065, 0.0559945),
    (0.114368, 0.0699931),
    (0.133429, 0.0822419),
    (0.15249, 0.0944906),
    (0.171552, 0.106739),
    (0.190613, 0.117238),
    (0.209674, 0.129487),
    (0.228736, 0.148735),
    (0.247797, 0.166234),
    (0.266858, 0.183732),
    (0.28592, 0.19948),
    (0.304981, 0.215229),
    (0.324042, 0.239726),
    (0.343103, 0.257225),
    (0.362165, 0.286972),
    (0.381226, 0.30447),
    (0.400287, 0.323718),
    (0.419349, 0.335967),
    (0.43841, 0.351715),
    (0.457471, 0.369213),
    (0.476533, 0.381462),
    (0.495594, 0.40071),
    (0.514655, 0.419958),
    (0.533717, 0.437457),
    (0.552778, 0.451455),
    (0.571839, 0.468954),
    (0.5909, 0.484702),
    (0.609962, 0.50395),
    (0.629023, 0.521448),
    (0.648084, 0.538947),
    (0.667146, 0.552945),
    (0.686207, 0.568694),
    (0.705268, 0.582692),
    (0.72433, 0.600191),
    (0.743391, 0.615939),
    (0.762452, 0.635187),
    (0.781513, 0.650936),
    (0.800575, 0.668434),
    (0.819636, 0.689432),
    (0.838697, 0.712179),
    (0.857759, 0.734927),
    (0.87682, 0.755925),
    (0.895881, 0.780423),
    (0.914943, 0.80317),
    (0.934004, 0.825918),
    (0.953065, 0.846916),
    (0.972127, 0.876663),
    (0.991188, 0.894161),
    (1.01025, 0.918659),
    (1.02931, 0.939657),
    (1.04837, 0.972904),
    (1.06743, 0.997401),
    (1.08649, 1.0219),
    (1.10556, 1.0429),
    (1.12462, 1.07264),
    (1.14368, 1.09889),
    (1.16274, 1.12339),
    (1.1818, 1.14614),
    (1.20086, 1.16888),
    (1.21992, 1.19688),
    (1.23898, 1.22138),
    (1.25805, 1.24763),
    (1.27711, 1.27562),
    (1.29617, 1.30187),
    (1.31523, 1.32287),
    (1.33429, 1.35262),
    (1.35335, 1.38061),
    (1.37241, 1.40861),
    (1.39148, 1.43661),
    (1.41054, 1.46286),
    (1.4296, 1.4926),
    (1.44866, 1.5206),
    (1.46772, 1.55035),
    (1.48678, 1.57309),
    (1.50584, 1.60284),
    (1.5249, 1.62559),
    (1.54397, 1.65359),
    (1.56303, 1.67808),
    (1.58209, 1.70433),
    (1.60115, 1.72708),
    (1.62021, 1.76558),
    (1.63927, 1.79357),
    (1.65833, 1.82682),
    (1.67739, 1.85307),
    (1.69646, 1.87931),
    (1.71552, 1.91081),
    (1.73458, 1.94056),
    (1.75364, 1.96856),
    (1.7727, 2.00005),
    (1.79176, 2.02805),
    (1.81082, 2.05605),
    (1.82989, 2.08754),
    (1.84895, 2.11379),
    (1.86801, 2.14879),
    (1.88707, 2.17678),
    (1.90613, 2.20653),
    (1.92519, 2.23628),
    (1.94425, 2.26778),
    (1.96331, 2.30277),
    (1.98238, 2.33602),
    (2.00144, 2.36752),
    (2.0205, 2.39726),
    (2.03956, 2.42876),
    (2.05862, 2.45151),
    (2.07768, 2.49525),
    (2.09674, 2.52675),
    (2.1158, 2.56),
    (2.13487, 2.59674),
    (2.15393, 2.62299),
    (2.17299, 2.66149),
    (2.19205, 2.68948),
    (2.21111, 2.72273),
    (2.23017, 2.75598),
    (2.24923, 2.78747),
    (2.2683, 2.82247),
    (2.28736, 2.85047),
    (2.30642, 2.88546),
    (2.32548, 2.91346),
    (2.34454, 2.94496),
    (2.3636, 2.9817),
    (2.38266, 3.0062),
    (2.40172, 3.04295),
    (2.42079, 3.07795),
    (2.43985, 3.10944),
    (2.45891, 3.13131),
    (2.47797, 3.17419),
    (2.49703, 3.19868),
    (2.51609, 3.24418),
    (2.53515, 3.28093),
    (2.55421, 3.32117),
    (2.57328, 3.36579),
    (2.59234, 3.36667),
];

/// T per second of simulated time: T = t sqrt(g / H).
pub fn time_scale() -> f64 {
    (G / H).sqrt()
}

/// The front's distance from the back wall over the column length, Z = (L + x) / L = 1 + X H / L, from
/// X = x / H (the distance from the gate): Martin & Moyce's Z = x / a with a = L.
pub fn z_of_x(x: f64) -> f64 {
    1.0 + x * H / L
}

/// X = x / H from the front's distance from the back wall (metres), at most [`X_WALL`] (a front
/// estimated past the wall is at the wall).
pub fn x_of_front(front_from_back_wall: f64) -> f64 {
    ((front_from_back_wall - L) / H).min(X_WALL)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_set_is_monotonic_evenly_spaced_and_ends_at_the_wall() {
        for w in LOBOVSKY_2014_FRONT.windows(2) {
            assert!(w[1].1 > w[0].1, "X not increasing at T = {}", w[1].0);
            assert!((w[1].0 - w[0].0 - 0.0190613).abs() < 2e-5, "uneven T step at T = {}", w[1].0);
        }
        assert_eq!(LOBOVSKY_2014_FRONT[0], (0.0, 0.0));
        let last = LOBOVSKY_2014_FRONT[LOBOVSKY_2014_FRONT.len() - 1];
        assert!((last.1 - X_WALL).abs() < 1e-4, "last point X = {} vs the wall {X_WALL}", last.1);
        assert_eq!(LOBOVSKY_2014_FRONT.iter().filter(|p| p.0 > 0.0 && p.0 <= T_COMPARED).count(), 131);
    }

    #[test]
    fn conversions() {
        assert!((z_of_x(0.0) - 1.0).abs() < 1e-12);
        assert!((z_of_x(X_WALL) - TANK_LENGTH / L).abs() < 1e-12);
        assert!((x_of_front(0.9) - 1.0).abs() < 1e-12);
        assert_eq!(x_of_front(2.0), X_WALL);
        // T = 1 is sqrt(H / g) = 0.1749 s.
        assert!((0.17488 * time_scale() - 1.0).abs() < 1e-4);
    }
}
