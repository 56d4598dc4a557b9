// Time step and integration. `time_step` (one thread) picks dt from the CFL condition
// dt = min(max_dt, cfl * h / v_max) with v_max from the previous step, all on the GPU (nothing read back);
// `integrate` advances with symplectic Euler (v = v* + dt a_p, x += dt v), then enforces the boundaries as
// hard constraints: a particle closer than r_collide to the terrain or a wall is moved back onto that
// distance, its velocity into the boundary removed and its tangential velocity reduced by `friction`.
// It writes the new state unsorted-buffer-style (pos/vel), in the sorted order of this step.
#import "sim/common.wgsl"

@group(0) @binding(6) var<storage, read_write> cell_start: array<u32>;

fn cell_start_at(i: u32) -> u32 {
    return cell_start[i];
}

@compute @workgroup_size(1)
fn time_step() {
    let v_max = bitcast<f32>(atomicLoad(&step.max_speed_bits));
    var dt = params.max_dt;
    if (v_max > 0.0) {
        dt = min(dt, params.cfl * params.h / v_max);
    }
    dt = max(dt, 1e-3 * params.max_dt);
    step.dt = dt;
    step.time = step.time + dt;
    step.steps = step.steps + 1u;
    atomicStore(&step.max_speed_bits, 0u);
}

fn apply_contact(v: vec3<f32>, n: vec3<f32>) -> vec3<f32> {
    let vn = dot(v, n);
    let vt = v - vn * n;
    return max(vn, 0.0) * n + (1.0 - params.friction) * vt;
}

@compute @workgroup_size(128)
fn integrate(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= params.num_particles) {
        return;
    }
    let dt = step.dt;
    var v = vstar[i].xyz + dt * accel[i].xyz;
    var x = spos[i].xyz + dt * v;
    let rc = params.r_collide;

    let t = terrain_plane(x);
    if (t.d < rc) {
        x += (rc - t.d) * t.n;
        v = apply_contact(v, t.n);
    }
    let lo = params.domain_min + rc;
    let hi = params.domain_max - rc;
    for (var a = 0; a < 3; a++) {
        var n = vec3<f32>(0.0);
        n[a] = 1.0;
        if (x[a] < lo[a]) {
            x[a] = lo[a];
            v = apply_contact(v, n);
        } else if (x[a] > hi[a]) {
            x[a] = hi[a];
            v = apply_contact(v, -n);
        }
    }
    let rp = rho_p[i];
    pos[i] = vec4<f32>(x, rp.x);
    vel[i] = vec4<f32>(v, rp.y);
    atomicMax(&step.max_speed_bits, bitcast<u32>(length(v)));
}
