// Diffuse particles: spray, foam and air bubbles (Ihmsen, Akinci, Akinci & Teschner 2012, "Unified spray,
// foam and bubbles for particle-based fluids", The Visual Computer 28(6)). Rust: src/sim/diffuse.rs.
// Once per rendered frame, after its last step, over the sorted state of that step (spos, svel, the
// neighbour grid), with dt = the simulated time since the last run (state.last_time):
//   diffuse_begin     (1 thread) dt, counters, the frame's room (budget, free pool) and demand scale;
//   diffuse_normals   per fluid particle: n_i = -2h (sum_j V grad W_ij + grad rho_b / rho0) (outward,
//                     dimensionless, ~0.5 at a free surface, ~0 inside and at walls) into vstar.xyz; 0 for
//                     particles slower than half the kinetic-energy threshold's speed (no neighbour loop);
//   diffuse_generate  per fluid particle: the potentials, weight w~ = 1 - r / 2h, sums divided by
//                     weight_sum (the same sum over a full lattice):
//                       trapped air  ta = sum_j |v_ij| (1 - v^_ij . x^_ij) w~_ij                 (m/s)
//                       wave crest   wc = sum_j (1 - n^_i . n^_j) w~_ij over j with x_ji . n_i < 0,
//                                    kept only at the surface where v^_i . n^_i >= 0.6       (-)
//                       energy       ek = |v_i|^2 / 2                                         (J/kg)
//                     each clamped to its [min, max] and mapped to 0..1 (Phi), then
//                     n_d = Phi(ek) (k_ta Phi(ta) + k_wc Phi(wc)) dt new particles (stochastic rounding,
//                     scaled by the budget's share), written to vstar.w, spawned on a disc of radius
//                     spawn_radius around x_i, shifted along v_i dt, with v_i; appended after the pool's
//                     live particles (workgroup-aggregated atomics);
//   diffuse_advect    per diffuse particle: its fluid neighbours within 2h (count, Shepard-weighted
//                     velocity v_f) classify it: fewer than spray_below: spray, dv/dt = g - k_s v; more than
//                     bubble_above: bubble, dv/dt = k_b (v_f - v) - buoyancy g; else foam, v = v_f. The
//                     linear ODEs are integrated exactly over dt (so any frame rate gives the same path).
//                     Lifetimes drop (foam 1 s/s, spray and bubbles SLOW_AGEING); spray that leaves the
//                     domain or meets the terrain dies, foam and bubbles are kept inside (project_out).
//                     Survivors are compacted into `scratch` (workgroup-aggregated atomics);
//   diffuse_finish    (1 thread) the new count and the indirect draw's arguments.
// `scratch` then holds the pool: the Rust side swaps the two buffers for the next run. Nothing is read back.
#import "sim/common.wgsl"
#import "sim/cells.wgsl"
#import "sim/neighbours.wgsl"
#import "common/diffuse.wgsl"

// Rust twin: DiffuseUniform in src/sim/diffuse_params.rs.
struct Diffuse {
    capacity: u32,
    budget: u32,
    spray_below: f32,
    bubble_above: f32,
    trapped_air_rate: f32,
    wave_crest_rate: f32,
    trapped_air: vec2<f32>,
    wave_crest: vec2<f32>,
    kinetic_energy: vec2<f32>,
    lifetime: f32,
    spray_drag: f32,
    bubble_buoyancy: f32,
    bubble_drag: f32,
    weight_sum: f32,
    spawn_radius: f32,
    _pad: vec2<u32>,
}

// Rust twin: DiffuseState in src/sim/diffuse.rs. The first 16 bytes go back with the statistics.
struct DiffuseState {
    count: u32,                // live diffuse particles after the last run
    spray: atomic<u32>,        // of them, per kind
    foam: atomic<u32>,
    bubbles: atomic<u32>,
    kept: atomic<u32>,         // survivors compacted so far this run
    spawned: atomic<u32>,      // new particles asked for this run (also past the room)
    room: u32,                 // new particles this run may add
    frame: u32,                // runs so far (random seed)
    last_time: f32,            // simulated time of the last run, s
    dt: f32,                   // this run's time step, s
    scale: f32,                // share of the demand this run spawns (room / demand, at most 1)
    demand: f32,               // new particles the fluid asked for in the last run that spawned any
    draw: vec4<u32>,           // draw_indirect: 6 vertices, count instances
}

// Spray and bubbles age at this fraction of foam's rate (SLOW_AGEING in src/sim/diffuse_params.rs).
const SLOW_AGEING: f32 = 0.25;
// Threads per workgroup of diffuse_advect (DIFFUSE_WG in src/sim/diffuse.rs).
const DIFFUSE_WG: u32 = 128u;
// Most new diffuse particles one fluid particle makes per run.
const MAX_NEW: u32 = 8u;
// Longest dt a run takes, s; a longer gap (a reset, the first frame after a rebuild) moves nothing.
const MAX_DT: f32 = 0.5;
// |n| below this: not a surface particle (a free surface has about 0.5, the inside about 0).
const SURFACE_NORMAL: f32 = 0.15;

@group(1) @binding(0) var<uniform> diffuse: Diffuse;
@group(1) @binding(1) var<storage, read_write> particles: array<DiffuseParticle>;
@group(1) @binding(2) var<storage, read_write> scratch: array<DiffuseParticle>;
@group(1) @binding(3) var<storage, read_write> state: DiffuseState;

var<workgroup> wg_count: atomic<u32>;
var<workgroup> wg_kind: array<atomic<u32>, 3>;
var<workgroup> wg_base: u32;

// PCG hash (O'Neill 2014; Jarzynski & Olano 2020, "Hash functions for GPU rendering").
fn pcg(v: u32) -> u32 {
    let s = v * 747796405u + 2891336453u;
    let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
    return (w >> 22u) ^ w;
}

// Uniform in [0, 1), advancing `seed`.
fn rand01(seed: ptr<function, u32>) -> f32 {
    *seed = pcg(*seed);
    return f32(*seed >> 8u) / 16777216.0;
}

// Ihmsen et al.'s clamp-and-map: (min(i, hi) - min(i, lo)) / (hi - lo), 0..1.
fn phi(i: f32, r: vec2<f32>) -> f32 {
    return (min(i, r.y) - min(i, r.x)) / (r.y - r.x);
}

@compute @workgroup_size(1)
fn diffuse_begin() {
    var dt = step.time - state.last_time;
    if (!(dt > 0.0) || dt > MAX_DT) {
        dt = 0.0;
    }
    // The last run's demand (spawned counts every request, scaled by that run's share); a run that could
    // spawn nothing (a full pool) measured none, so the earlier estimate stays.
    if (state.scale > 0.0) {
        state.demand = f32(atomicLoad(&state.spawned)) / state.scale;
    }
    state.dt = dt;
    state.last_time = step.time;
    state.frame += 1u;
    state.room = min(diffuse.budget, diffuse.capacity - min(state.count, diffuse.capacity));
    state.scale = clamp(f32(state.room) / max(state.demand, 1.0), 0.0, 1.0);
    atomicStore(&state.spray, 0u);
    atomicStore(&state.foam, 0u);
    atomicStore(&state.bubbles, 0u);
    atomicStore(&state.kept, 0u);
    atomicStore(&state.spawned, 0u);
}

@compute @workgroup_size(WG)
fn diffuse_normals(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= active_end()) {
        return;
    }
    // Only particles at least half as fast as the kinetic-energy threshold's speed: the others neither
    // make diffuse particles nor, usually, neighbour one that does (their normal counts as none).
    let vi = svel_load(i).xyz;
    if (0.5 * dot(vi, vi) < 0.25 * diffuse.kinetic_energy.x) {
        vstar_store(i, vec4<f32>(0.0));
        return;
    }
    let h = params.h;
    let xi = spos_load(i).xyz;
    let k = wendland(h);
    var g = vec3<f32>(0.0);
    let head = step_list_header(i);
    if (head != LIST_NONE) {
        let end = active_end();
        var list = list_reader(i, head);
        for (var e = list_total(head); e > 0u; e--) {
            let xij = xi - spos_load(list_pop(i, &list, end)).xyz;
            let r2 = dot(xij, xij);
            if (r2 > 0.0) {
                g += wendland_grad(k, xij, sqrt(r2));
            }
        }
    } else {
        let c = cell_coord(xi);
        for (var dz = -reach(); dz <= reach(); dz++) {
            for (var dy = -reach(); dy <= reach(); dy++) {
                let range = row_range(xi, c, dy, dz);
                for (var j = range.x; j < range.y; j++) {
                    let xij = xi - spos_load(j).xyz;
                    let r2 = dot(xij, xij);
                    if (r2 < 4.0 * h * h && r2 > 0.0) {
                        g += wendland_grad(k, xij, sqrt(r2));
                    }
                }
            }
        }
    }
    // The colour field's gradient, the boundary's volume fraction included (so walls are no surface).
    let grad_c = (params.mass / params.rho0) * g + boundary_density(xi).grad / params.rho0;
    vstar_store(i, vec4<f32>(-2.0 * h * grad_c, 0.0));
}

// Expected new diffuse particles of sorted fluid particle i this run (before the budget's scale).
fn expected_new(i: u32) -> f32 {
    let vi = svel_load(i).xyz;
    let ik = phi(0.5 * dot(vi, vi), diffuse.kinetic_energy);
    if (ik <= 0.0 || state.dt <= 0.0) {
        return 0.0; // slow water makes nothing: no neighbour loop
    }
    let h = params.h;
    let xi = spos_load(i).xyz;
    let ni = vstar_load(i).xyz;
    let surface = length(ni) > SURFACE_NORMAL;
    let nhat = select(vec3<f32>(0.0), normalize(ni), surface);
    var pot = Potentials(0.0, 0.0);
    let head = step_list_header(i);
    if (head != LIST_NONE) {
        let end = active_end();
        var list = list_reader(i, head);
        for (var e = list_total(head); e > 0u; e--) {
            let j = list_pop(i, &list, end);
            let xij = xi - spos_load(j).xyz;
            let r2 = dot(xij, xij);
            if (r2 > 0.0) {
                pot = add_potentials(pot, j, xij, r2, vi, surface, nhat);
            }
        }
    } else {
        let c = cell_coord(xi);
        for (var dz = -reach(); dz <= reach(); dz++) {
            for (var dy = -reach(); dy <= reach(); dy++) {
                let range = row_range(xi, c, dy, dz);
                for (var j = range.x; j < range.y; j++) {
                    let xij = xi - spos_load(j).xyz;
                    let r2 = dot(xij, xij);
                    if (r2 < 4.0 * h * h && r2 > 0.0) {
                        pot = add_potentials(pot, j, xij, r2, vi, surface, nhat);
                    }
                }
            }
        }
    }
    var ta = pot.ta / diffuse.weight_sum;
    var wc = pot.wc / diffuse.weight_sum;
    let speed = length(vi);
    if (!surface || speed <= 0.0 || dot(vi / speed, nhat) < 0.6) {
        wc = 0.0;
    }
    let rate = diffuse.trapped_air_rate * phi(ta, diffuse.trapped_air) + diffuse.wave_crest_rate * phi(wc, diffuse.wave_crest);
    return ik * rate * state.dt;
}

// The last step's neighbour list of sorted particle i (neighbours.wgsl), LIST_NONE where its loops walk
// the grid: the diffuse stage runs after the frame's steps, over the last step's sorted positions, which
// the list was built from when that step was DFSPH's (the other solvers build none).
fn step_list_header(i: u32) -> u32 {
    return select(LIST_NONE, list_header(i), params.method == METHOD_DFSPH);
}

// Sums of the trapped-air and wave-crest potentials over the neighbours (before the weight's normalisation).
struct Potentials {
    ta: f32,
    wc: f32,
}

// Adds neighbour j at x_ij (0 < r2 = |x_ij|^2 < 4h^2) of a particle with velocity vi and, at the surface,
// unit normal nhat.
fn add_potentials(acc: Potentials, j: u32, xij: vec3<f32>, r2: f32, vi: vec3<f32>, surface: bool, nhat: vec3<f32>) -> Potentials {
    var pot = acc;
    let r = sqrt(r2);
    let w = 1.0 - r / (2.0 * params.h);
    let vij = vi - svel_load(j).xyz;
    let s = length(vij);
    if (s > 1e-6) {
        pot.ta += s * (1.0 - dot(vij / s, xij / r)) * w;
    }
    let nj = vstar_load(j).xyz;
    // x_ji . n_i < 0: j lies below i's surface (a convex crest).
    if (surface && dot(xij, nhat) > 0.0 && length(nj) > SURFACE_NORMAL) {
        pot.wc += (1.0 - dot(nhat, normalize(nj))) * w;
    }
    return pot;
}

// Two unit vectors perpendicular to unit `a` and to each other.
fn basis(a: vec3<f32>) -> mat2x3<f32> {
    var t = vec3<f32>(1.0, 0.0, 0.0);
    if (abs(a.x) > 0.9) {
        t = vec3<f32>(0.0, 1.0, 0.0);
    }
    let e1 = normalize(cross(a, t));
    return mat2x3<f32>(e1, cross(a, e1));
}

@compute @workgroup_size(WG)
fn diffuse_generate(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    var n = 0u;
    var seed = pcg(i ^ pcg(state.frame));
    if (i < active_end()) {
        let e = expected_new(i);
        vstar_store(i, vec4<f32>(vstar_load(i).xyz, e));
        n = min(u32(e * state.scale + rand01(&seed)), MAX_NEW);
    }
    let slot = atomicAdd(&wg_count, n);
    workgroupBarrier();
    if (lid.x == 0u) {
        let total = atomicLoad(&wg_count);
        if (total > 0u) {
            wg_base = atomicAdd(&state.spawned, total);
        }
    }
    let base = workgroupUniformLoad(&wg_base);
    if (n == 0u) {
        return;
    }
    let xi = spos_load(i).xyz;
    let vi = svel_load(i).xyz;
    let speed = length(vi);
    let axis = select(vec3<f32>(0.0, 1.0, 0.0), vi / speed, speed > 1e-6);
    let b = basis(axis);
    for (var k = 0u; k < n; k++) {
        let s = base + slot + k;
        if (s >= state.room) {
            break;
        }
        let angle = 6.2831853 * rand01(&seed);
        let radius = diffuse.spawn_radius * sqrt(rand01(&seed));
        let along = rand01(&seed) * state.dt;
        let x = xi + radius * (cos(angle) * b[0] + sin(angle) * b[1]) + along * vi;
        let life = diffuse.lifetime * (0.5 + 0.5 * rand01(&seed));
        particles[state.count + s] = DiffuseParticle(vec4<f32>(x, life), vec4<f32>(vi, f32(KIND_FOAM)));
    }
}

struct Drift {
    x: vec3<f32>,
    v: vec3<f32>,
}

// Exact solution of dv/dt = a - k v over t (k >= 0, a constant): v = v0 e^-kt + a f1,
// x = x0 + v0 f1 + a f2 with f1 = (1 - e^-kt) / k, f2 = (t - f1) / k (series for small kt: t and t^2 / 2
// at k = 0, the ballistic parabola).
fn drift(x: vec3<f32>, v: vec3<f32>, a: vec3<f32>, k: f32, t: f32) -> Drift {
    let u = k * t;
    var f1: f32;
    var f2: f32;
    if (u < 0.1) {
        f1 = t * (1.0 + u * (-1.0 / 2.0 + u * (1.0 / 6.0 + u * (-1.0 / 24.0 + u / 120.0))));
        f2 = t * t * (1.0 / 2.0 + u * (-1.0 / 6.0 + u * (1.0 / 24.0 + u * (-1.0 / 120.0 + u / 720.0))));
    } else {
        f1 = (1.0 - exp(-u)) / k;
        f2 = (t - f1) / k;
    }
    return Drift(x + v * f1 + a * f2, v * exp(-u) + a * f1);
}

struct Advected {
    p: DiffuseParticle,
    kind: u32,
    keep: bool,
}

fn advect(p: DiffuseParticle) -> Advected {
    let h = params.h;
    let dt = state.dt;
    var x = p.pos.xyz;
    var v = p.vel.xyz;
    var life = p.pos.w;
    let c = cell_coord(x);
    let k = wendland(h);
    var count = 0.0;
    var wsum = 0.0;
    var vf = vec3<f32>(0.0);
    for (var dz = -reach(); dz <= reach(); dz++) {
        for (var dy = -reach(); dy <= reach(); dy++) {
            let range = row_range(x, c, dy, dz);
            for (var j = range.x; j < range.y; j++) {
                let xij = x - spos_load(j).xyz;
                let r2 = dot(xij, xij);
                if (r2 < 4.0 * h * h) {
                    let w = wendland_w(k, sqrt(r2));
                    count += 1.0;
                    wsum += w;
                    vf += w * svel_load(j).xyz;
                }
            }
        }
    }
    if (wsum > 0.0) {
        vf /= wsum;
    }
    var kind = KIND_FOAM;
    if (count < diffuse.spray_below) {
        kind = KIND_SPRAY;
    } else if (count > diffuse.bubble_above) {
        kind = KIND_BUBBLE;
    }
    var keep = true;
    switch kind {
        case KIND_SPRAY: {
            let d = drift(x, v, params.gravity, diffuse.spray_drag, dt);
            x = d.x;
            v = d.v;
            life -= SLOW_AGEING * dt;
            // Spray that meets the terrain or a wall is gone.
            keep = terrain_plane(x).d > 0.0 && all(x > wall_min()) && all(x < params.domain_max);
        }
        case KIND_BUBBLE: {
            let a = diffuse.bubble_drag * vf - diffuse.bubble_buoyancy * params.gravity;
            let d = drift(x, v, a, diffuse.bubble_drag, dt);
            x = project_out(d.x);
            v = d.v;
            life -= SLOW_AGEING * dt;
        }
        default: {
            v = vf;
            x = project_out(x + dt * vf);
            life -= dt;
        }
    }
    keep = keep && life > 0.0 && all(abs(x) < vec3<f32>(1e30)) && all(abs(v) < vec3<f32>(1e30));
    return Advected(DiffuseParticle(vec4<f32>(x, life), vec4<f32>(v, f32(kind))), kind, keep);
}

@compute @workgroup_size(DIFFUSE_WG)
fn diffuse_advect(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                  @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = flat_index(gid, nwg, DIFFUSE_WG);
    let total = min(state.count + min(atomicLoad(&state.spawned), state.room), diffuse.capacity);
    var a = Advected(DiffuseParticle(vec4<f32>(0.0), vec4<f32>(0.0)), 0u, false);
    if (i < total) {
        a = advect(particles[i]);
    }
    var slot = 0u;
    if (a.keep) {
        slot = atomicAdd(&wg_count, 1u);
        atomicAdd(&wg_kind[a.kind], 1u);
    }
    workgroupBarrier();
    if (lid.x == 0u) {
        let kept = atomicLoad(&wg_count);
        if (kept > 0u) {
            wg_base = atomicAdd(&state.kept, kept);
            atomicAdd(&state.spray, atomicLoad(&wg_kind[KIND_SPRAY]));
            atomicAdd(&state.foam, atomicLoad(&wg_kind[KIND_FOAM]));
            atomicAdd(&state.bubbles, atomicLoad(&wg_kind[KIND_BUBBLE]));
        }
    }
    let base = workgroupUniformLoad(&wg_base);
    if (a.keep) {
        scratch[base + slot] = a.p;
    }
}

@compute @workgroup_size(1)
fn diffuse_finish() {
    let n = min(atomicLoad(&state.kept), diffuse.capacity);
    state.count = n;
    state.draw = vec4<u32>(6u, n, 0u, 0u);
}
