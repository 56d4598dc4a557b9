// Integration (Rust: src/sim/integrate.rs): `integrate` advances with symplectic Euler (v = v* + dt a_p,
// x += dt v; under PCISPH and WCSPH the bodies take the opposite of a_p's share from them), then enforces
// the boundaries as hard constraints: a particle closer than r_collide to the terrain, an obstacle or a
// body or a wall is moved back onto that distance, its velocity into the boundary removed and its
// tangential velocity slowed by the wall's shear stress (`friction`, apply_contact); one left inside an
// obstacle by the later projections (squeezed against the terrain or a wall) is led out along them
// (`escape`). A wave maker's paddle (common.wgsl, wall_min) is such a wall that moves: a particle behind
// it is put in front and gets at least the paddle's normal velocity (contact is taken relative to the
// moving wall). A particle inside a
// sink is parked (returned to the emitters' pool). It writes the new state unsorted-buffer-style
// (pos/vel), in the sorted order of this step.
#import "sim/common.wgsl"
#import "sim/cells.wgsl"
#import "sim/body_sums.wgsl"

// A contact removes the velocity into the boundary and slows the tangential velocity by the wall's shear
// stress tau = rho0 (C_f / 2) |v_t|^2 (C_f = `friction`, the skin-friction coefficient) acting on the
// particle's footprint dx^2 with its mass rho0 dx^3: dv_t / dt = -(C_f / 2) |v_t| v_t / dx, taken
// implicitly over the step (never reverses v_t). The momentum taken per unit of wall area and time does
// not depend on the resolution, and a slow film is hardly held while a fast, thin surge is.
fn apply_contact(v: vec3<f32>, n: vec3<f32>) -> vec3<f32> {
    let vn = dot(v, n);
    let vt = v - vn * n;
    let dx = pow(params.mass / params.rho0, 1.0 / 3.0);
    let keep = 1.0 / (1.0 + step.dt * 0.5 * params.friction * length(vt) / dx);
    return max(vn, 0.0) * n + keep * vt;
}

// PCISPH's and WCSPH's pressure on the bodies: the opposite of the velocity change the bodies' share of
// the boundary term in pressure_force (pcisph.wgsl: a = -boundary_factor p_i / rho_i^2 grad rho_b, times
// grad_correction) gives particle i this step, summed into their impulses as DFSPH's solves do theirs
// (body_sums.wgsl; the last pressure_force ran with the pressure rho_p holds now).
fn pressure_impulses_on_bodies(i: u32) {
    if (obstacles.head.count > obstacles.head.first_body) {
        let xi = spos_load(i).xyz;
        let rp = rho_p_load(i);
        let rho = max(rp.x, 0.5 * params.rho0);
        let c = params.mass * step.dt * params.grad_correction * params.boundary_factor * rp.y / (rho * rho);
        add_body_impulses(xi, params.rho0 - boundary_density(xi).rho, c);
    }
}

@compute @workgroup_size(WG)
fn integrate(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= params.num_particles) {
        return;
    }
    if (i >= active_end()) {
        // The emitters' pool: stays parked (w < 0) until an emitter takes it.
        pos_store(i, spos_load(i));
        vel_store(i, svel_load(i));
        return;
    }
    if (step.dt <= 0.0) {
        // A no-op step (past an offline capture's frame_end): the state as it was, in this step's order;
        // the speed still feeds the next step's CFL condition.
        pos_store(i, spos_load(i));
        vel_store(i, svel_load(i));
        atomicMax(&step.max_speed_bits, bitcast<u32>(length(svel_load(i).xyz)));
        note_top(spos_load(i).y);
        return;
    }
    let dt = step.dt;
    // DFSPH has its pressure in v* already; its `accel` holds the surface normals of surface_tension.wgsl.
    var v = vstar_load(i).xyz;
    if (params.method != METHOD_DFSPH) {
        v += dt * accel_load(i).xyz;
        pressure_impulses_on_bodies(i);
    }
    var x = spos_load(i).xyz + dt * v;
    let rc = params.r_collide;

    let t = terrain_plane(x);
    if (t.d < rc) {
        x += (rc - t.d) * t.n;
        v = apply_contact(v, t.n);
    }
    // Obstacles: out along the distance field's normal, as off the terrain (none: no iteration); the
    // contact is taken relative to a moving body's surface velocity (zero for a static obstacle).
    for (var k = 0u; k < obstacles.head.count; k++) {
        let o = obstacle_sample(k, x);
        if (k >= obstacles.head.first_body && o.x < 2.0 * params.h) {
            // The water around a body: what its drag pulls it toward (src/sim/bodies.rs).
            add_water_velocity(k, v);
        }
        if (o.x < rc) {
            x += (rc - o.x) * o.yzw;
            let u = body_velocity(k, x);
            let before = v;
            v = u + apply_contact(v - u, o.yzw);
            if (k >= obstacles.head.first_body) {
                // The contact's impulse on the body (the particle's momentum it took).
                add_impulse(k, x, params.mass * (before - v));
            }
        }
    }
    if (obstacles.head.count > 0u) {
        // Back off the terrain where an obstacle's projection pushed the particle into it.
        let t = terrain_plane(x);
        if (t.d < rc) {
            x += (rc - t.d) * t.n;
            v -= min(dot(v, t.n), 0.0) * t.n;
        }
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
    // A particle still inside an obstacle after the projections was squeezed between it and the terrain
    // or a wall, whose projections came later (the film under a body that settles on the floor, or the
    // water at the foot of a static obstacle moved live along the floor): led out within the constraints
    // it touches (`escape`), its velocity into the obstacle removed.
    for (var k = 0u; k < obstacles.head.count; k++) {
        let o = obstacle_sample(k, x);
        if (o.x < 0.0) {
            let e = escape(k, x, o.yzw, lo, hi);
            x = e.x;
            let u = body_velocity(k, x);
            let before = v;
            v -= min(dot(v - u, e.dir), 0.0) * e.dir;
            if (k >= obstacles.head.first_body) {
                add_impulse(k, x, params.mass * (before - v));
            }
        }
    }
    var rp = rho_p_load(i);
    for (var s = 0u; s < sources.num_sinks; s++) {
        let k = sources.sinks[s];
        if (all(x >= k.min) && all(x <= k.max)) {
            rp.x = -1.0; // leaves through the outflow: back to the pool
            v = vec3<f32>(0.0);
        }
    }
    pos_store(i, vec4<f32>(x, rp.x));
    vel_store(i, vec4<f32>(v, rp.y));
    atomicMax(&step.max_speed_bits, bitcast<u32>(length(v)));
    note_top(x.y);
}

// The way out of obstacle k for a particle at x inside it (n: the field's normal there) that is held by the
// terrain or the walls [lo, hi] it touches: the normal, or where it points into them (a particle under the
// obstacle's bottom, on the floor) the direction away from the obstacle's centre, with the parts that
// point into those constraints taken off (x or z for a particle right under the centre). The particle is
// marched along it through the field until r_collide outside, but at most ESCAPE_STEP r_collide a step:
// the neighbours it lands among are not kicked apart, and a longer way out is finished in the next steps.
const ESCAPE_STEP: f32 = 2.0;

struct Escape {
    x: vec3<f32>,
    dir: vec3<f32>,
}

fn escape(k: u32, x: vec3<f32>, n: vec3<f32>, lo: vec3<f32>, hi: vec3<f32>) -> Escape {
    let rc = params.r_collide;
    let t = terrain_plane(x);
    let on_terrain = t.d < 1.01 * rc;
    let eps = 1e-3 * rc;
    // The field's normal, else away from the centre, else (a particle right under the centre) along x or z.
    // Each is taken if at least the share `least` of its squared length is left within the contacts.
    var candidates = array<vec3<f32>, 4>(
        n, x - obstacle_at(k).centre.xyz, vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(0.0, 0.0, 1.0),
    );
    var least = array<f32, 4>(0.25, 1e-10, 0.25, 0.25);
    var dir = vec3<f32>(0.0);
    for (var c = 0; c < 4; c++) {
        let d = within_contacts(candidates[c], x, t.n, on_terrain, lo + eps, hi - eps);
        if (dot(d, d) >= least[c] * dot(candidates[c], candidates[c])) {
            dir = normalize(d);
            break;
        }
    }
    if (all(dir == vec3<f32>(0.0))) {
        return Escape(x, dir);
    }
    var y = x;
    var budget = ESCAPE_STEP * rc;
    for (var s = 0; s < 4 && budget > 0.0; s++) {
        let d = obstacle_sample(k, y).x;
        if (d >= rc) {
            break;
        }
        let step = min(max(rc - d, 0.5 * rc), budget);
        y = clamp(y + step * dir, lo, hi);
        budget -= step;
    }
    let ty = terrain_plane(y);
    if (ty.d < rc) {
        y += (rc - ty.d) * ty.n;
    }
    return Escape(y, dir);
}

// Direction d without its parts into the terrain (normal tn, when `on_terrain`) or into the walls that x
// lies on (at or past lo or hi).
fn within_contacts(
    d: vec3<f32>, x: vec3<f32>, tn: vec3<f32>, on_terrain: bool, lo: vec3<f32>, hi: vec3<f32>,
) -> vec3<f32> {
    var r = d;
    if (on_terrain) {
        r -= min(dot(r, tn), 0.0) * tn;
    }
    for (var a = 0; a < 3; a++) {
        if ((x[a] <= lo[a] && r[a] < 0.0) || (x[a] >= hi[a] && r[a] > 0.0)) {
            r[a] = 0.0;
        }
    }
    return r;
}

// Raises the step's fluid top (time_step.wgsl's pressure bound) to height y, m (non-negative above the
// domain's floor, so its bits order as the numbers do).
fn note_top(y: f32) {
    atomicMax(&step.fluid_top_bits, bitcast<u32>(max(y - params.domain_min.y, 0.0)));
}
