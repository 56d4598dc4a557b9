// The time step (Rust: src/sim/time_step.rs), one thread at the start of every step: dt from the CFL
// condition dt = min(max_dt, cfl * h / v_max) with v_max from the previous step, the viscous limit and
// (PCISPH, DFSPH) a pressure limit, all on the GPU (nothing read back); an offline capture's `frame_end` lands
// the steps exactly on it. CPU twin (for planning only): `Simulation::next_step_dt` in src/sim/advance.rs.
#import "sim/common.wgsl"
#import "sim/cells.wgsl"

// sqrt of the largest pressure number N = p dt^2 / (rho0 h^2) a PCISPH or DFSPH step may reach (see
// time_step). Rust twin: PRESSURE_SQRT_N in src/sim/advance.rs.
const PRESSURE_SQRT_N: f32 = 0.4472136;

@compute @workgroup_size(1)
fn time_step() {
    let v_max = bitcast<f32>(atomicLoad(&step.max_speed_bits));
    var dt = params.max_dt;
    var signal = v_max;
    if (params.method == METHOD_WCSPH) {
        signal = v_max + params.sound_speed;
    }
    if (signal > 0.0) {
        dt = min(dt, params.cfl * params.h / signal);
    }
    // Explicit viscosity is stable for dt <= C h^2 / nu (Monaghan 1992, "Smoothed particle hydrodynamics",
    // ARA&A 30; C = 0.125 there, 0.1 here). It binds only at fine resolution and high nu (dx = 5 mm,
    // nu = 0.002: 1.8 ms against the 4.2 ms frame substep); violated, the floor layer of a dam break shoots ahead.
    if (params.viscosity > 0.0) {
        dt = min(dt, 0.1 * params.h * params.h / params.viscosity);
    }
    // PCISPH: its pressure iteration diverges once N = p dt^2 / (rho0 h^2) passes about 0.2 (measured on
    // lavapipe and the H100: the full-resolution dam break and sloshing tank blew up at dt = 4.2 ms and ran
    // at 1.0 ms, the dam break within 7.8 %); with p <= rho0 |g| H, H the water's height, that is
    // dt <= sqrt(0.2) h / sqrt(|g| H). It binds only at fine resolution (dx = 5 mm, H = 0.6 m: 1.1 ms).
    // DFSPH needs the same bound for its boundary: the floor and walls push back with k = 1.25 and 1.125
    // times a particle's own pressure term where the fluid presses with 2 (FLOOR_FACTOR, WALL_FACTOR in
    // dfsph.wgsl), so a boundary particle at pressure p is accelerated into the boundary by about
    // p / (rho0 h), explicitly, outside the implicit solve: water at rest starts moving at a rate that
    // grows with its depth in particle layers, and where three planes meet (a tank's floor corners) the
    // particles are crushed within a step once dt^2 p / (rho0 h^2) passes about 1 (docs/validation.md,
    // "Depth in layers": a 105-layer column at dx = 5.7 mm blew up at dt = 4.2 and 2.1 ms, rested at 1.4).
    // H: the last step's highest particle above the domain's floor (no particle is below the floor, so no
    // water is deeper), the domain's height before the first step and on a rank (whose steps must agree).
    let gh = length(params.gravity) * pressure_height(bitcast<f32>(atomicLoad(&step.fluid_top_bits)));
    if (params.method != METHOD_WCSPH && gh > 0.0) {
        dt = min(dt, PRESSURE_SQRT_N * params.h / sqrt(gh));
    }
    dt = max(dt, 1e-3 * params.max_dt);
    // Offline capture (frame_end > 0): the steps stop exactly at frame_end. The step that reaches it lands
    // on it (time = frame_end, no rounding), less than two steps left are split into two halves (no tiny
    // last step), and every step after it is a no-op with dt = 0 (the 1e-3 floor never applies past it).
    var time = step.time + dt;
    if (params.frame_end > 0.0) {
        let remaining = params.frame_end - step.time;
        if (remaining <= 0.0) {
            dt = 0.0;
            time = step.time;
        } else if (remaining <= dt) {
            dt = remaining;
            time = params.frame_end;
        } else if (remaining < 2.0 * dt) {
            dt = 0.5 * remaining;
            time = step.time + dt;
        }
    }
    step.dt = dt;
    step.time = time;
    if (dt > 0.0) {
        step.steps = step.steps + 1u;
    }
    atomicStore(&step.max_speed_bits, 0u);
    atomicStore(&step.fluid_top_bits, 0u);
}

// The water height H of the pressure bound, m, from the last step's fluid top (0: unknown).
fn pressure_height(top: f32) -> f32 {
    let domain = params.domain_max.y - params.domain_min.y;
    return select(domain, min(top, domain), top > 0.0);
}
