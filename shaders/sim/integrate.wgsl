// Integration (Rust: src/sim/integrate.rs): `integrate` advances with symplectic Euler (v = v* + dt a_p,
// x += dt v), then enforces the boundaries as hard constraints: a particle closer than r_collide to the
// terrain, an obstacle or a body or a wall is moved back onto that distance, its velocity into the boundary removed and its
// tangential velocity reduced by `friction`. A wave maker's paddle (common.wgsl, wall_min) is such a wall
// that moves: a particle behind it is put in front and gets at least the paddle's normal velocity (contact
// is taken relative to the moving wall). A particle inside a sink is parked (returned to the emitters'
// pool). It writes the new state unsorted-buffer-style (pos/vel), in the sorted order of this step.
#import "sim/common.wgsl"
#import "sim/cells.wgsl"
#import "sim/body_sums.wgsl"

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
    // A particle still inside a body after the projections (squeezed between the body and the terrain or a
    // wall, whose projections came later): moved along the terrain's plane away from the body's centre by
    // r_collide a step, so the film under a body resting on the floor drains instead of staying inside it.
    for (var k = obstacles.head.first_body; k < obstacles.head.count; k++) {
        if (obstacle_sample(k, x).x < 0.0) {
            let tn = terrain_plane(x).n;
            var out = x - obstacle_at(k).centre.xyz;
            out -= dot(out, tn) * tn;
            if (dot(out, out) > 1e-12) {
                x = clamp(x + rc * normalize(out), lo, hi);
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

// Raises the step's fluid top (time_step.wgsl's pressure bound) to height y, m (non-negative above the
// domain's floor, so its bits order as the numbers do).
fn note_top(y: f32) {
    atomicMax(&step.fluid_top_bits, bitcast<u32>(max(y - params.domain_min.y, 0.0)));
}
