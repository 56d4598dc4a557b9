// Divergence-free SPH (Bender & Koschier 2015, "Divergence-Free Smoothed Particle Hydrodynamics";
// 2017, "Divergence-Free SPH for Incompressible and Viscous Fluids"), one grid build per step:
//   df_neighbours:  the step's neighbour lists (neighbours.wgsl), which every later loop reads
//   df_factor:      rho_i and the factor alpha_i = rho_i / (|sum_j m gradW_ij + grad rho_b|^2 + sum_j |m gradW_ij|^2)
//                   (and the divergence solve's first source)
//   divergence solve (v): kappa_v = (D rho/Dt) alpha / dt, v_i -= dt sum_j m (kappa_i/rho_i + kappa_j/rho_j) gradW_ij
//   df_nonpressure: v* = v + dt (g + viscosity + surface tension) + XSPH (surface tension: surface_tension.wgsl),
//                   plus the density solve's warm start
//   density solve (v*):  rho*_i = rho_i + dt D rho/Dt (v*), kappa = (rho* - rho0) alpha / dt^2, same update
//                   (in the first iteration a leaving particle, rho* < 0.99-0.97 rho0, gives back its warm
//                   start: df_density_source)
// Boundaries (terrain, walls, obstacles, bodies) enter through the half-space density rho_b and its
// gradient (common.wgsl), at rest except the bodies, whose velocity makes the boundary's rate relative.
// Every boundary velocity change a body's share of grad rho_b gives a particle (the warm start and each
// update) is summed, opposite, into that body's impulse and angular impulse (add_body_impulses, after
// Akinci et al. 2012 / Bender et al. 2019: F_body = -m_i a_i from the body). Each solve iterates until the mean error is below its target or its iteration limit: the
// errors are summed on the GPU (fixed point, atomically), and thread 0 of each update kernel decides
// whether the next iteration runs by writing its indirect dispatch arguments (`next_iteration`; df_begin
// leaves every later iteration's at zero workgroups). Nothing is read back.
// kappa has units of p / rho (m^2/s^2): the velocity update is dt times a pressure acceleration with
// p_i = kappa_i rho_i. Pressure kept for display and statistics: both solves' sum of kappa_i rho_i (Pa); a
// fraction of it warm-starts the next step's density solve.
#import "sim/common.wgsl"
#import "sim/cells.wgsl"
#import "sim/neighbours.wgsl"
#import "sim/surface_tension.wgsl"
#import "sim/body_sums.wgsl"

// The error term of particle i in its solve's mean: a decomposed simulation's ghosts (src/cluster) count on
// the rank that owns them only (GHOSTS variant: ids by sorted slot after the first num_particles of the ids,
// binding 7, written by grid.wgsl's scatter_ids; bit 31 = ghost).
// Rust twin: UpdateRegion in src/sim/dfsph.rs. Which particles an update dispatch moves (GHOSTS variant,
// group 2 of the update kernels): part 0 = all; on a rank whose iterations the host drives
// (src/sim/ranked_step.rs) part 1 = the inner particles, owned and with a coordinate along `axis` in
// [lo, hi) (the slab shrunk by one support radius: no ghost among their neighbours), whose update can run
// while the ghosts' kappa / rho are on their way, and part 2 = the rest (ghosts and owned near the slab's
// borders), after them. Only parts 0 and 1 count the iteration.
struct UpdateRegion {
    axis: u32,
    lo: f32,
    hi: f32,
    part: u32,
}

#ifdef GHOSTS
@group(0) @binding(7) var<storage, read> ids: array<u32>;
@group(2) @binding(0) var<uniform> region: UpdateRegion;

fn is_ghost(i: u32) -> bool {
    return (ids[params.num_particles + i] & 0x80000000u) != 0u;
}

fn error_of(i: u32, e: f32) -> f32 {
    return select(e, 0.0, is_ghost(i));
}

fn in_region(i: u32) -> bool {
    if (region.part == 0u) {
        return true;
    }
    let x = spos_load(i)[region.axis];
    let inner = !is_ghost(i) && x >= region.lo && x < region.hi;
    return inner == (region.part == 1u);
}

fn counts_iteration() -> bool {
    return region.part != 2u;
}
#else
fn error_of(i: u32, e: f32) -> f32 {
    return e;
}

fn in_region(i: u32) -> bool {
    return true;
}

fn counts_iteration() -> bool {
    return true;
}
#endif

// Rust twin: SolveState in src/sim/dfsph.rs. A solve's iteration count, group 1 binding 0 of df_begin and
// of the update kernels.
struct SolveState {
    iteration: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// One iteration's indirect dispatch arguments (Rust twin: ITERATION_ARGS_BYTES in src/sim/dfsph.rs):
// workgroups of 128 for the source kernel (x, y, z, -), of WG for the update kernel.
struct IterationArgs {
    src: vec4<u32>,
    upd: vec4<u32>,
}

// Iteration k's arguments live at slot k / 2 of the even (k even) or the odd buffer, so the update kernel
// of iteration k, dispatched from one buffer, writes iteration k + 1's into the other (a kernel may not
// write the buffer it is dispatched from). df_begin binds both: args_a = even, args_b = odd. An update
// kernel binds only the next iteration's: args_a = the buffer of parity k + 1.
@group(1) @binding(0) var<storage, read_write> control: SolveState;
@group(1) @binding(1) var<storage, read_write> args_a: array<IterationArgs>;
@group(1) @binding(2) var<storage, read_write> args_b: array<IterationArgs>;

// The body impulses of particle i's velocity change -dt g_c k P (k = kappa_i / rho_i, P the boundary term
// with the obstacles' share weighted by `factor`) at x_i, boundary density rho_b = b_rho.
fn body_impulses_of(xi: vec3<f32>, b_rho: f32, k_over_rho: f32, factor: f32) {
    if (obstacles.head.count > obstacles.head.first_body) {
        let c = params.mass * step.dt * params.grad_correction * k_over_rho * factor;
        add_body_impulses(xi, params.rho0 - b_rho, c);
    }
}

// The boundary's weights in the density solve: the floor's (terrain's) share of grad rho_b and the side
// walls' and ceiling's (DFSPH_BOUNDARY_FACTOR, DFSPH_WALL_FACTOR in src/sim/gpu_data.rs); the
// divergence-free solve weights both by 1.
override FLOOR_FACTOR: f32 = 1.0;
override WALL_FACTOR: f32 = 1.0;
// Fewest iterations of the divergence-free solve (DFSPH_MIN_DIVERGENCE_ITERATIONS in src/sim/gpu_data.rs;
// the density solve always runs at least 2).
override MIN_DIVERGENCE_ITERATIONS: u32 = 1u;

// The gradient the boundary pushes a particle along: grad rho_b with the floor's share weighted by
// k_floor and the walls' by k_wall.
fn boundary_push(b: BoundaryDensity, k_floor: f32, k_wall: f32) -> vec3<f32> {
    return k_floor * b.floor_grad + k_wall * (b.grad - b.floor_grad);
}

// Per sorted particle: pred = (alpha_eff, kappa, kappa_v, -); rho_p = (rho, display pressure).
// During each solve, `accel` holds (x_i, kappa_i / rho_i) of the solve, written with kappa by the source
// kernels (df_factor for the divergence solve's first iteration): the update kernels read one vec4 per
// neighbour instead of spos, pred and rho_p. `accel` is free then: the surface normals are computed after
// the divergence solve and consumed by df_nonpressure before the density solve's first source.
// Fused passes (each saves a neighbour loop per step): df_factor computes the divergence solve's first
// source, df_nonpressure applies the density solve's warm start.

// rho_i, alpha_i and the divergence solve's first source (df_divergence_source fused: positions and
// velocities are the grid sort's, so the same neighbour loop gives D rho / Dt); 128 threads like the
// other source kernels, after the divergence solve's `df_begin`. Without surface tension (whose normals
// need a pass of their own first) the same loop also does df_nonpressure's work (fused_forces).
@compute @workgroup_size(128)
fn df_factor(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = flat_index(gid, nwg, 128u);
    var e = 0.0;
    if (i < active_end()) {
        e = error_of(i, factor_and_divergence_source(i));
    }
    add_error(lid.x, e);
}

// The step's neighbour lists (neighbours.wgsl): one walk of the grid's trimmed rows per particle that
// only tests distances and stores offsets, before df_factor, which reads the list. Fused into df_factor's
// own walk the build cost 0.45 ms per step at 1 M particles on top of the sums (their registers and the
// walk's latencies together); apart, the walk is lean and df_factor reads its neighbours as the solves do.
@compute @workgroup_size(WG)
fn df_neighbours(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= active_end() || !list_on()) {
        return;
    }
    let h = params.h;
    let xi = spos_load(i).xyz;
    let c = cell_coord(xi);
    var list = list_builder();
    let end = active_end();
    for (var dz = -reach(); dz <= reach(); dz++) {
        let plane = u32(dz + reach());
        for (var dy = -reach(); dy <= reach(); dy++) {
            let range = row_range(xi, c, dy, dz);
            for (var j = range.x; j < range.y; j++) {
                let xij = xi - spos_load(j).xyz;
                if (dot(xij, xij) < 4.0 * h * h && j != i) {
                    list_add(i, &list, plane, j, end);
                }
            }
        }
        list_end_plane(&list, plane);
    }
    list_finish(i, &list);
}

// The neighbour sums of df_factor: W, grad W, |grad W|^2, v_ij . grad W (without the mass) and the
// non-pressure forces' sums.
struct FactorSums {
    rho: f32,
    grad_sum: vec3<f32>,
    grad_sq: f32,
    rate: f32,
    f: ForceSums,
}

// Adds neighbour j at x_ij (|x_ij| < 2h; j = i adds only its W(0): its gradient, v_ii and x_ii vanish)
// with its sorted position xj (w: last step's density) and velocity vj (w: last step's pressure).
fn add_factor_term(s: FactorSums, xij: vec3<f32>, xj: vec4<f32>, vj: vec4<f32>, vi: vec3<f32>, ki_rho: f32, k: Wendland) -> FactorSums {
    let r2 = dot(xij, xij);
    let r = sqrt(r2);
    let w = wendland_w(k, r);
    let grad = wendland_grad(k, xij, r);
    var f = s.f;
    if (fused_forces()) {
        f = add_forces(f, vi - vj.xyz, xij, r2, w, grad, ki_rho + warm_kappa_over_rho(vj.w, xj.w));
    }
    return FactorSums(s.rho + w, s.grad_sum + grad, s.grad_sq + dot(grad, grad), s.rate + dot(vi - vj.xyz, grad), f);
}

// rho_i, alpha_i and the divergence source of particle i (see df_factor); returns its error term.
fn factor_and_divergence_source(i: u32) -> f32 {
    let h = params.h;
    let m = params.mass;
    let xi = spos_load(i).xyz;
    let vi = svel_load(i).xyz;
    let fuse = fused_forces();
    let ki_rho = warm_kappa_over_rho(svel_load(i).w, spos_load(i).w);
    let k = wendland(h);
    let zero = ForceSums(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
    var s = FactorSums(0.0, vec3<f32>(0.0), 0.0, 0.0, zero);
    let head = list_header(i);
    if (head != LIST_NONE) {
        // The list leaves particle i out: its W(0).
        s.rho = wendland_w(k, 0.0);
        let end = active_end();
        var list = list_reader(i, head);
        let n = list_total(head);
        // Two neighbours per turn, both loaded before either is summed.
        var e = 0u;
        for (; e + 1u < n; e += 2u) {
            let j0 = list_pop(i, &list, end);
            let j1 = list_pop(i, &list, end);
            let x0 = spos_load(j0);
            let x1 = spos_load(j1);
            let v0 = svel_load(j0);
            let v1 = svel_load(j1);
            s = add_factor_term(s, xi - x0.xyz, x0, v0, vi, ki_rho, k);
            s = add_factor_term(s, xi - x1.xyz, x1, v1, vi, ki_rho, k);
        }
        if (e < n) {
            let j = list_pop(i, &list, end);
            let xj = spos_load(j);
            s = add_factor_term(s, xi - xj.xyz, xj, svel_load(j), vi, ki_rho, k);
        }
    } else {
        let c = cell_coord(xi);
        for (var dz = -reach(); dz <= reach(); dz++) {
            for (var dy = -reach(); dy <= reach(); dy++) {
                let range = row_range(xi, c, dy, dz);
                for (var j = range.x; j < range.y; j++) {
                    let xj = spos_load(j);
                    let xij = xi - xj.xyz;
                    if (dot(xij, xij) < 4.0 * h * h) {
                        s = add_factor_term(s, xij, xj, svel_load(j), vi, ki_rho, k);
                    }
                }
            }
        }
    }
    // The loop summed W, gradW, |gradW|^2 and v_ij . gradW; the mass multiplies them here.
    let b = boundary_density(xi);
    let rho = m * s.rho + b.rho;
    let grad_sum = m * s.grad_sum;
    let grad_sq = m * m * s.grad_sq;
    var rate = m * s.rate + (dot(vi, b.grad) - b.moving);
    // A kappa_i moves particle i by -dt g_c kappa_i/rho_i (G + P) (G = sum_j m gradW_ij, P = the density
    // solve's boundary_push) and so changes its density rate by that velocity dotted with (G + B),
    // B = grad rho_b: the diagonal of the solve is (G + P) . (G + B), plus sum_j |m gradW_ij|^2 from the
    // neighbours' share.
    let push = boundary_push(b, FLOOR_FACTOR, WALL_FACTOR);
    let denom = max(dot(grad_sum + push, grad_sum + b.grad), 0.0) + grad_sq;
    var alpha = 0.0;
    if (denom > 1e-9 * params.rho0 * params.rho0 / (h * h)) {
        // The velocity updates are scaled by grad_correction (see kernel.rs); alpha compensates.
        alpha = rho / denom / params.grad_correction;
    }
    // Particles short of neighbours (free surface) take no part: their density deficit is no divergence.
    rate = select(0.0, max(rate, 0.0), rho >= params.rho0);
    let dt = step.dt;
    let kappa_v = select(0.0, rate * alpha / dt, dt > 0.0);
    // pred.w: the warm start's kappa that df_density_source may give back (df_nonpressure's when not fused).
    pred_store(i, vec4<f32>(alpha, 0.0, kappa_v, select(0.0, ki_rho * rho, fuse)));
    accel_store(i, vec4<f32>(xi, kappa_v / rho));
    var p_display = kappa_v * rho;
    if (fuse) {
        // v* before the divergence solve's corrections, which df_divergence_update adds to it as well.
        vstar_store(i, vec4<f32>(vi + nonpressure_change(s.f, ki_rho, push), 0.0));
        body_impulses_of(xi, b.rho, ki_rho, WALL_FACTOR);
        p_display += ki_rho * spos_load(i).w * spos_load(i).w;
    }
    rho_p_store(i, vec2<f32>(rho, p_display));
    return rate * dt / params.rho0;
}

// True when df_factor computes the non-pressure forces and the warm start (no surface tension).
fn fused_forces() -> bool {
    return params.surface_tension <= 0.0;
}

// Sums of the non-pressure neighbour loop: viscosity, XSPH and the warm start's pressure term.
struct ForceSums {
    visc: vec3<f32>,
    xsph: vec3<f32>,
    warm: vec3<f32>,
}

// Adds neighbour j (v_ij = v_i - v_j, x_ij, r^2, W_ij, grad W_ij, k_i/rho_i + k_j/rho_j of the warm start).
fn add_forces(f: ForceSums, v_ij: vec3<f32>, xij: vec3<f32>, r2: f32, w: f32, grad: vec3<f32>, k_sum: f32) -> ForceSums {
    let h = params.h;
    return ForceSums(
        f.visc + dot(v_ij, xij) / (r2 + 0.01 * h * h) * grad,
        f.xsph - v_ij * w,
        f.warm - k_sum * grad,
    );
}

// The warm start's kappa / rho = p / rho^2 for last step's pressure p and density rho (both carried
// through the sort: svel.w, spos.w). Warm-starting only particles that were compressed (last density
// >= rho0, as SPlisHSPlasH warm-starts only particles over rest) was measured and not kept: on the H100
// the sloshing tank gained 2.1 % of its available energy in its first 0.04 s (0.04 % without), and a
// gate at 0.95 rho0 took the 1 M valley from 4 to 7.5 density iterations a step (docs/validation.md).
fn warm_kappa_over_rho(p: f32, rho: f32) -> f32 {
    let r = max(rho, 0.5 * params.rho0);
    return params.warm_start * max(p, 0.0) / (r * r);
}

// v* - v from the sums: dt (g + viscosity) + XSPH + the warm start's velocity change (the update of
// kappa_velocity_change for kappa_i/rho_i = ki_rho, boundary push `push`).
fn nonpressure_change(f: ForceSums, ki_rho: f32, push: vec3<f32>) -> vec3<f32> {
    let m = params.mass;
    let vol = m / params.rho0;
    let dt = step.dt;
    let a = params.gravity + 10.0 * params.viscosity * vol * f.visc;
    return dt * a + per_step(params.xsph) * vol * f.xsph + dt * params.grad_correction * (m * f.warm - ki_rho * push);
}

// D rho / Dt of particle i for the velocities in `vel_of` (0 = svel, 1 = vstar): sum_j m v_ij . gradW_ij
// plus the boundary's (v_i - v_b) . grad rho_b (v_b: a moving body's surface velocity, zero elsewhere).
fn density_rate(i: u32, use_vstar: bool) -> f32 {
    let h = params.h;
    let xi = spos_load(i).xyz;
    var vi = svel_load(i).xyz;
    if (use_vstar) {
        vi = vstar_load(i).xyz;
    }
    let k = wendland(h);
    var rate = 0.0;
    let head = list_header(i);
    if (head != LIST_NONE) {
        let end = active_end();
        var list = list_reader(i, head);
        let n = list_total(head);
        // Two neighbours per turn, both loaded before either is summed.
        var e = 0u;
        for (; e + 1u < n; e += 2u) {
            let j0 = list_pop(i, &list, end);
            let j1 = list_pop(i, &list, end);
            let x0 = xi - spos_load(j0).xyz;
            let x1 = xi - spos_load(j1).xyz;
            rate += rate_term(x0, vi, j0, use_vstar, k) + rate_term(x1, vi, j1, use_vstar, k);
        }
        if (e < n) {
            let j = list_pop(i, &list, end);
            rate += rate_term(xi - spos_load(j).xyz, vi, j, use_vstar, k);
        }
        return density_rate_total(xi, vi, rate);
    }
    let c = cell_coord(xi);
    for (var dz = -reach(); dz <= reach(); dz++) {
        for (var dy = -reach(); dy <= reach(); dy++) {
            let range = row_range(xi, c, dy, dz);
            // (Unrolled as in kappa_velocity_change this loop ran no faster: its velocity loads wait
            // on the test.)
            for (var j = range.x; j < range.y; j++) {
                let xij = xi - spos_load(j).xyz;
                let r2 = dot(xij, xij);
                // j = i adds nothing: v_ii and x_ii vanish.
                if (r2 < 4.0 * h * h) {
                    rate += rate_term(xij, vi, j, use_vstar, k);
                }
            }
        }
    }
    return density_rate_total(xi, vi, rate);
}

// Neighbour j's t^3 v_ij . x_ij (|x_ij| < 2h) in density_rate.
fn rate_term(xij: vec3<f32>, vi: vec3<f32>, j: u32, use_vstar: bool, k: Wendland) -> f32 {
    var vj = svel_load(j).xyz;
    if (use_vstar) {
        vj = vstar_load(j).xyz;
    }
    let t = wendland_t(k, sqrt(dot(xij, xij)));
    return t * t * t * dot(vi - vj, xij);
}

// D rho / Dt from the neighbours' sum of t^3 v_ij . x_ij and the boundary's term.
fn density_rate_total(xi: vec3<f32>, vi: vec3<f32>, rate: f32) -> f32 {
    let b = boundary_density(xi);
    return params.mass * wendland(params.h).g_coef * rate + dot(vi, b.grad) - b.moving;
}

#ifdef SUBGROUPS
#import "sim/error_sum_subgroup.wgsl"
#else
#import "sim/error_sum.wgsl"
#endif

@compute @workgroup_size(128)
fn df_divergence_source(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = flat_index(gid, nwg, 128u);
    var e = 0.0;
    if (i < active_end()) {
        let rp = rho_p_load(i);
        var rate = 0.0;
        // Particles short of neighbours (free surface) take no part: their density deficit is no divergence.
        if (rp.x >= params.rho0) {
            rate = max(density_rate(i, false), 0.0);
        }
        let dt = step.dt;
        var pr = pred_load(i);
        pr.z = select(0.0, rate * pr.x / dt, dt > 0.0);
        pred_store(i, pr);
        rho_p_store(i, vec2<f32>(rp.x, rp.y + pr.z * rp.x));
        accel_store(i, vec4<f32>(spos_load(i).xyz, pr.z / rp.x));
        e = error_of(i, rate * dt / params.rho0);
    }
    add_error(lid.x, e);
}

// -(k_i/rho_i + k_j/rho_j) t^3 x_ij of a neighbour at offset xij, r2 = |xij|^2 < 4h^2, k_sum = k_i/rho_i +
// k_j/rho_j (its share of the velocity change over m g_coef). j = i adds nothing: x_ii vanishes.
fn kappa_term(xij: vec3<f32>, r2: f32, k_sum: f32, k: Wendland) -> vec3<f32> {
    let t = wendland_t(k, sqrt(r2));
    return -(k_sum * t * t * t) * xij;
}

// v_i -= dt g_c (sum_j m (k_i/rho_i + k_j/rho_j) gradW_ij + k_i/rho_i P), k = kappa or kappa_v, P = grad rho_b
// (divergence solve) or boundary_push (density solve); (x_j, k_j/rho_j) from `accel`.
fn kappa_velocity_change(i: u32, use_kappa_v: bool) -> vec3<f32> {
    let h = params.h;
    let own = accel_load(i);
    let xi = own.xyz;
    let k = wendland(h);
    var dv = vec3<f32>(0.0);
    let head = list_header(i);
    if (head != LIST_NONE) {
        let end = active_end();
        var list = list_reader(i, head);
        let n = list_total(head);
        // Two neighbours per turn, both loaded before either is summed (as the grid walk below).
        var e = 0u;
        for (; e + 1u < n; e += 2u) {
            let q0 = accel_load(list_pop(i, &list, end));
            let q1 = accel_load(list_pop(i, &list, end));
            let x0 = xi - q0.xyz;
            let x1 = xi - q1.xyz;
            dv += kappa_term(x0, dot(x0, x0), own.w + q0.w, k);
            dv += kappa_term(x1, dot(x1, x1), own.w + q1.w, k);
        }
        if (e < n) {
            let q = accel_load(list_pop(i, &list, end));
            let x = xi - q.xyz;
            dv += kappa_term(x, dot(x, x), own.w + q.w, k);
        }
        return kappa_total(xi, own.w, dv, use_kappa_v);
    }
    let c = cell_coord(xi);
    for (var dz = -reach(); dz <= reach(); dz++) {
        for (var dy = -reach(); dy <= reach(); dy++) {
            let range = row_range(xi, c, dy, dz);
            // Two candidates per turn, both loaded and their distances taken before either is tested
            // (-8 % for the divergence solve on the H100, docs/performance.md; the same turn written
            // with a helper that tests inside ran no faster), then the odd one.
            var j = range.x;
            for (; j + 1u < range.y; j += 2u) {
                let q0 = accel_load(j);
                let q1 = accel_load(j + 1u);
                let x0 = xi - q0.xyz;
                let x1 = xi - q1.xyz;
                let r0 = dot(x0, x0);
                let r1 = dot(x1, x1);
                if (r0 < 4.0 * h * h) {
                    dv += kappa_term(x0, r0, own.w + q0.w, k);
                }
                if (r1 < 4.0 * h * h) {
                    dv += kappa_term(x1, r1, own.w + q1.w, k);
                }
            }
            if (j < range.y) {
                let q0 = accel_load(j);
                let x0 = xi - q0.xyz;
                let r0 = dot(x0, x0);
                if (r0 < 4.0 * h * h) {
                    dv += kappa_term(x0, r0, own.w + q0.w, k);
                }
            }
        }
    }
    return kappa_total(xi, own.w, dv, use_kappa_v);
}

// The velocity change of kappa_velocity_change from the neighbours' sum `sum` of its kappa_terms and
// particle i's k_i/rho_i `ki_rho`: the mass and gradient constant, the boundary's term and its impulses.
fn kappa_total(xi: vec3<f32>, ki_rho: f32, sum: vec3<f32>, use_kappa_v: bool) -> vec3<f32> {
    var dv = sum * (params.mass * wendland(params.h).g_coef);
    let b = boundary_density(xi);
    if (use_kappa_v) {
        dv -= ki_rho * b.grad;
        body_impulses_of(xi, b.rho, ki_rho, 1.0);
    } else {
        dv -= ki_rho * boundary_push(b, FLOOR_FACTOR, WALL_FACTOR);
        body_impulses_of(xi, b.rho, ki_rho, WALL_FACTOR);
    }
    return step.dt * params.grad_correction * dv;
}

@compute @workgroup_size(WG)
fn df_divergence_update(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= active_end()) {
        return;
    }
    if (i == 0u && counts_iteration()) {
        step.divergence_iterations = next_iteration(params.target_divergence, MIN_DIVERGENCE_ITERATIONS, params.divergence_max_iter);
    }
    if (!in_region(i)) {
        return;
    }
    let dv = kappa_velocity_change(i, true);
    svel_store(i, vec4<f32>(svel_load(i).xyz + dv, svel_load(i).w));
    if (fused_forces()) {
        vstar_store(i, vec4<f32>(vstar_load(i).xyz + dv, 0.0));
    }
}

// v* = v + dt (g + viscosity + surface tension) + XSPH, and the density solve's warm start (Bender &
// Koschier 2017, sec. 4.4): a fraction of last step's pressure (carried in svel.w through the sort) as a
// first kappa, whose velocity change (the update of kappa_velocity_change) is fused into this neighbour
// loop: it needs only positions, densities and that pressure, all known before v*.
@compute @workgroup_size(WG)
fn df_nonpressure(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= active_end()) {
        return;
    }
    let h = params.h;
    let xi = spos_load(i).xyz;
    let vi = svel_load(i).xyz;
    let c = cell_coord(xi);
    var rp = rho_p_load(i);
    let ki_rho = warm_kappa_over_rho(svel_load(i).w, rp.x);
    var f = ForceSums(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
    let k = wendland(h);
    for (var dz = -reach(); dz <= reach(); dz++) {
        for (var dy = -reach(); dy <= reach(); dy++) {
            let range = row_range(xi, c, dy, dz);
            for (var j = range.x; j < range.y; j++) {
                let xij = xi - spos_load(j).xyz;
                let r2 = dot(xij, xij);
                // j = i adds nothing: v_ii, x_ii and gradW_ii vanish.
                if (r2 < 4.0 * h * h) {
                    let r = sqrt(r2);
                    let vj = svel_load(j);
                    let k_sum = ki_rho + warm_kappa_over_rho(vj.w, rho_p_load(j).x);
                    f = add_forces(f, vi - vj.xyz, xij, r2, wendland_w(k, r), wendland_grad(k, xij, r), k_sum);
                }
            }
        }
    }
    let b = boundary_density(xi);
    let push = boundary_push(b, FLOOR_FACTOR, WALL_FACTOR);
    body_impulses_of(xi, b.rho, ki_rho, WALL_FACTOR);
    var st = vec3<f32>(0.0);
    if (params.surface_tension > 0.0) {
        st = step.dt * surface_tension_accel(i);
    }
    vstar_store(i, vec4<f32>(vi + nonpressure_change(f, ki_rho, push) + st, 0.0));
    var pr = pred_load(i);
    pr.w = ki_rho * rp.x;
    pred_store(i, pr);
    // `accel` is left alone: it may hold the surface normals other threads read; integrate ignores it for DFSPH.
    rp.y = rp.y + ki_rho * rp.x * rp.x;
    rho_p_store(i, rp);
}

// A particle whose predicted density falls from LEAVING.x to LEAVING.y rho0 is leaving its neighbourhood
// (df_density_source: its give-back ramps from none to whole, continuous in rho* so that rounding never
// flips it); interior water stays within 0.1 % of rho0, a splash or the free surface is several per cent
// short.
const LEAVING: vec2<f32> = vec2<f32>(0.99, 0.97);

@compute @workgroup_size(128)
fn df_density_source(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = flat_index(gid, nwg, 128u);
    var e = 0.0;
    if (i < active_end()) {
        let dt = step.dt;
        var rp = rho_p_load(i);
        let rho_star = rp.x + dt * density_rate(i, true);
        let excess = max(rho_star - params.rho0, 0.0);
        var pr = pred_load(i);
        // kappa grows by the excess. In the solve's first iteration a particle that is leaving (rho* under
        // 0.99-0.97 rho0 with the warm start applied: a sheet shot off an impact, a splash) gives back the
        // warm start it holds (pred.w), up to its whole predicted deficit and never below zero, as
        // pressure and compression are complementary (p >= 0, p (rho* - rho0) = 0). This is SPlisHSPlasH's
        // rule of warm-starting only particles predicted over rest (Bender & Koschier 2017), taken after
        // the fused warm start instead of before it; without it the warm start pushed such a particle on,
        // however far it had left its compressed neighbourhood (a falling block's splash sheet at 1.8
        // times its impact speed). Later iterations only add pressure (pred.w is spent): a give-back in
        // every iteration pulled leaving particles and their compressed neighbours against each other
        // until the mean error passed, and left pockets compressed by a quarter at short steps (the 1 M
        // box dam break: 31 m/s in its first frame, docs/validation.md).
        let change = select(0.0, (rho_star - params.rho0) * pr.x / (dt * dt), dt > 0.0);
        let leaving = clamp((LEAVING.x - rho_star / params.rho0) / (LEAVING.x - LEAVING.y), 0.0, 1.0);
        pr.y = select(change, max(leaving * change, -pr.w), change < 0.0);
        pr.w = 0.0;
        pred_store(i, pr);
        rp.y = rp.y + pr.y * rp.x;
        rho_p_store(i, rp);
        accel_store(i, vec4<f32>(spos_load(i).xyz, pr.y / rp.x));
        e = error_of(i, excess / params.rho0);
    }
    add_error(lid.x, e);
}

@compute @workgroup_size(WG)
fn df_density_update(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= active_end()) {
        return;
    }
    if (i == 0u && counts_iteration()) {
        step.density_iterations = next_iteration(params.target_density, 2u, params.density_max_iter);
    }
    if (!in_region(i)) {
        return;
    }
    let dv = kappa_velocity_change(i, false);
    vstar_store(i, vec4<f32>(vstar_load(i).xyz + dv, 0.0));
}

// ---- convergence control (group 1: this solve's SolveState and iteration arguments) ----

// Arguments of an iteration over n particles.
fn iteration_args(n: u32) -> IterationArgs {
    return IterationArgs(dispatch_args((n + 127u) / 128u), dispatch_args((n + WG - 1u) / WG));
}

// Starts a solve: iteration 0's arguments, every later iteration's empty (zero workgroups) until an update
// kernel writes them. A no-op step (dt = 0, past an offline capture's frame_end) runs zero iterations: its
// dispatches have zero workgroups and the iteration counts of the last real step stay.
@compute @workgroup_size(64)
fn df_begin(@builtin(local_invocation_index) t: u32) {
    let none = iteration_args(0u);
    for (var k = t; k < arrayLength(&args_a); k += 64u) {
        args_a[k] = none;
    }
    for (var k = t; k < arrayLength(&args_b); k += 64u) {
        args_b[k] = none;
    }
    if (t == 0u) {
        // Slot 0 is this thread's own (k = t above): written again after its loop.
        args_a[0] = iteration_args(select(active_end(), 0u, step.dt <= 0.0));
        control.iteration = 0u;
        atomicStore(&step.err_sum, 0u);
    }
}

// The test of an iteration, by thread 0 of its update kernel (the source before it has summed the error of
// the velocities before this update): counts the update and, unless the solve is at its goal (after
// min_iter updates) or at max_iter, writes the next iteration's arguments (args_a, bound to the next
// iteration's buffer); fewer recorded iterations stop the solve too. Returns the updates so far, which the
// step state reports, so a solve cut short by the recorded iterations reports them (and the next frames
// record more, see Simulation::encode_step).
fn next_iteration(goal: f32, min_iter: u32, max_iter: u32) -> u32 {
    let mean = f32(atomicLoad(&step.err_sum)) / params.err_scale / f32(max(active_end(), 1u));
    atomicStore(&step.err_sum, 0u);
    let k = control.iteration + 1u;
    control.iteration = k;
    if (!((k >= min_iter && mean <= goal) || k >= max_iter)) {
        args_a[k / 2u] = iteration_args(active_end());
    }
    return k;
}
