// The bodies' impulse sums (src/sim/bodies.rs), imported by the kernels that push on bodies: the DFSPH
// solves (dfsph.wgsl) and the collision projection (integrate.wgsl).
// The statistics record (binding 15, stats.wgsl's `stats_out`, STATS_BYTES long) is followed by each
// body's sums (src/sim/bodies.rs, BODY_SUMS_OFFSET): 12 i32 per body, fixed point (the scales in its
// ObstacleGpu's velocity.w, angular.w and position.w): impulse x, y, z (N s), angular impulse about its
// centre of mass x, y, z (N m s), the water's velocity around it x, y, z and the weight of that sum
// (add_water_velocity), two unused. Summed over the frame's steps, cleared after each copy to the CPU.
const SUMS_PER_BODY: u32 = 12u;
struct StatsAndBodies {
    stats: array<vec4<f32>, 7>,
    bodies: array<atomic<i32>, 192>, // MAX_OBSTACLES * SUMS_PER_BODY
}
@group(0) @binding(15) var<storage, read_write> stats_bodies: StatsAndBodies;

// Adds to every body whose plane reaches x_i the opposite of the velocity change its share of the boundary
// term gives particle i: the impulse c P_k on the body, P_k = s grad Phi_k (s = rho0 - rho_b, so that
// sum_k s grad Phi_k is grad rho_b's obstacle part; Phi_k the body's half-space fraction at x_i) and c =
// m dt g_c kappa_i / rho_i times the solve's boundary weight; and its moment about the centre of mass. No
// body, or c = 0: nothing.
fn add_body_impulses(xi: vec3<f32>, s: f32, c: f32) {
    if (c == 0.0) {
        return;
    }
    for (var k = obstacles.head.first_body; k < obstacles.head.count; k++) {
        let o = obstacle_sample(k, xi);
        if (o.x < 2.0 * params.h) {
            add_impulse(k, xi, (c * s) * add_plane(PlaneSum(1.0, vec3<f32>(0.0)), o.x, o.yzw).g);
        }
    }
}

// Adds impulse j (N s) at world x (m) to body k's sums: j and its moment about the centre of mass.
fn add_impulse(k: u32, x: vec3<f32>, j: vec3<f32>) {
    let e = obstacle_at(k);
    let t = cross(x - e.centre.xyz, j);
    let b = (k - obstacles.head.first_body) * SUMS_PER_BODY;
    let fj = vec3<i32>(round(j * e.velocity.w));
    let ft = vec3<i32>(round(t * e.angular.w));
    atomicAdd(&stats_bodies.bodies[b], fj.x);
    atomicAdd(&stats_bodies.bodies[b + 1u], fj.y);
    atomicAdd(&stats_bodies.bodies[b + 2u], fj.z);
    atomicAdd(&stats_bodies.bodies[b + 3u], ft.x);
    atomicAdd(&stats_bodies.bodies[b + 4u], ft.y);
    atomicAdd(&stats_bodies.bodies[b + 5u], ft.z);
}

// Adds particle velocity v (m/s) of a particle within the support radius of body k to the body's water
// velocity sums, weighted by the step's dt (so a frame's sum is a time mean) in the body's units
// (position.w: units per second per particle, 2^26 over the particles its shell holds when submerged).
fn add_water_velocity(k: u32, v: vec3<f32>) {
    let w = step.dt * obstacles.head.list[k].position.w;
    let b = (k - obstacles.head.first_body) * SUMS_PER_BODY + 6u;
    let fv = vec3<i32>(round(w * v));
    atomicAdd(&stats_bodies.bodies[b], fv.x);
    atomicAdd(&stats_bodies.bodies[b + 1u], fv.y);
    atomicAdd(&stats_bodies.bodies[b + 2u], fv.z);
    atomicAdd(&stats_bodies.bodies[b + 3u], i32(round(w)));
}
