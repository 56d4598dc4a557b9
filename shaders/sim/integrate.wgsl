// Time step and integration. `time_step` (one thread) picks dt from the CFL condition
// dt = min(max_dt, cfl * h / v_max) with v_max from the previous step, the viscous limit and (PCISPH) a
// pressure limit, all on the GPU (nothing read back);
// `integrate` advances with symplectic Euler (v = v* + dt a_p, x += dt v), then enforces the boundaries as
// hard constraints: a particle closer than r_collide to the terrain or a wall is moved back onto that
// distance, its velocity into the boundary removed and its tangential velocity reduced by `friction`. A wave
// maker's paddle (common.wgsl, wall_min) is such a wall that moves: a particle behind it is put in front
// and gets at least the paddle's normal velocity (contact is taken relative to the moving wall).
// It writes the new state unsorted-buffer-style (pos/vel), in the sorted order of this step.
#import "sim/common.wgsl"
#import "sim/cells.wgsl"

// sqrt of the largest PCISPH pressure number N = p dt^2 / (rho0 h^2) a step may reach (see time_step).
// Rust twin: PCISPH_SQRT_N in src/sim/advance.rs.
const PCISPH_SQRT_N: f32 = 0.4472136;

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
    // at 1.0 ms, the dam break within 7.8 %); with p <= rho0 |g| H, H the domain's height, that is
    // dt <= sqrt(0.2) h / sqrt(|g| H). It binds only at fine resolution (dx = 5 mm, H = 0.6 m: 1.1 ms).
    let gh = length(params.gravity) * (params.domain_max.y - params.domain_min.y);
    if (params.method == METHOD_PCISPH && gh > 0.0) {
        dt = min(dt, PCISPH_SQRT_N * params.h / sqrt(gh));
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
}

fn apply_contact(v: vec3<f32>, n: vec3<f32>) -> vec3<f32> {
    let vn = dot(v, n);
    let vt = v - vn * n;
    return max(vn, 0.0) * n + (1.0 - per_step(params.friction)) * vt;
}

@compute @workgroup_size(WG)
fn integrate(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= params.num_particles) {
        return;
    }
    if (i >= active_end()) {
        // The emitters' pool: stays parked (w < 0) until an emitter takes it.
        pos[i] = spos[i];
        vel[i] = svel[i];
        return;
    }
    if (step.dt <= 0.0) {
        // A no-op step (past an offline capture's frame_end): the state as it was, in this step's order;
        // the speed still feeds the next step's CFL condition.
        pos[i] = spos[i];
        vel[i] = svel[i];
        atomicMax(&step.max_speed_bits, bitcast<u32>(length(svel[i].xyz)));
        return;
    }
    let dt = step.dt;
    // DFSPH has its pressure in v* already; its `accel` holds the surface normals of surface_tension.wgsl.
    var v = vstar[i].xyz;
    if (params.method != METHOD_DFSPH) {
        v += dt * accel[i].xyz;
    }
    var x = spos[i].xyz + dt * v;
    let rc = params.r_collide;

    let t = terrain_plane(x);
    if (t.d < rc) {
        x += (rc - t.d) * t.n;
        v = apply_contact(v, t.n);
    }
    let lo = wall_min() + rc;
    let hi = params.domain_max - rc;
    let wall_v = wall_min_velocity();
    for (var a = 0; a < 3; a++) {
        var n = vec3<f32>(0.0);
        n[a] = 1.0;
        if (x[a] < lo[a]) {
            x[a] = lo[a];
            let u = wall_v[a] * n; // the min wall's own normal velocity (a moving paddle), else zero
            v = u + apply_contact(v - u, n);
        } else if (x[a] > hi[a]) {
            x[a] = hi[a];
            v = apply_contact(v, -n);
        }
    }
    var rp = rho_p[i];
    for (var s = 0u; s < sources.num_sinks; s++) {
        let k = sources.sinks[s];
        if (all(x >= k.min) && all(x <= k.max)) {
            rp.x = -1.0; // leaves through the outflow: back to the pool
            v = vec3<f32>(0.0);
        }
    }
    pos[i] = vec4<f32>(x, rp.x);
    vel[i] = vec4<f32>(v, rp.y);
    atomicMax(&step.max_speed_bits, bitcast<u32>(length(v)));
}

// Emission (after integrate): `emit_plan` (one thread) decides per emitter whether a layer of particles
// is owed (carry += rate dt; a layer of `layer_points` particles holds layer_points * V of water) and
// assigns it indices in the free pool, which after this step's sort starts at active_end()
// (particles sunk this step are reclaimed at the next sort). `emit` places layer point t on the disc
// with Vogel's sunflower spiral (uniform density, spacing about dx).
@compute @workgroup_size(1)
fn emit_plan() {
    var next = active_end();
    let volume = params.mass / params.rho0;
    for (var e = 0u; e < sources.num_emitters; e++) {
        let em = sources.emitters[e];
        var st = sources.state[e];
        st.carry = st.carry + em.rate * step.dt;
        st.count = 0u;
        let layer = f32(em.layer_points) * volume;
        if (st.carry >= layer && step.dt > 0.0) {
            if (next + em.layer_points <= params.num_particles) {
                st.base = next;
                st.count = em.layer_points;
                next = next + em.layer_points;
                st.carry = st.carry - layer;
            } else {
                st.carry = layer; // pool exhausted: wait for the sinks
            }
        }
        sources.state[e] = st;
    }
}

const GOLDEN_ANGLE: f32 = 2.39996323;

@compute @workgroup_size(64)
fn emit(@builtin(global_invocation_id) gid: vec3<u32>) {
    let e = gid.y;
    let t = gid.x;
    if (e >= sources.num_emitters) {
        return;
    }
    let st = sources.state[e];
    if (t >= st.count) {
        return;
    }
    let em = sources.emitters[e];
    let r = em.radius * sqrt((f32(t) + 0.5) / f32(em.layer_points));
    let a = f32(t) * GOLDEN_ANGLE;
    let x = project_out(em.center + r * (cos(a) * em.axis_u + sin(a) * em.axis_v));
    pos[st.base + t] = vec4<f32>(x, params.rho0);
    vel[st.base + t] = vec4<f32>(em.velocity, 0.0);
}
