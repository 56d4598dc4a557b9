// PCISPH (Solenthaler & Pajarola 2009), with pressure warm-started from the previous step:
//   density_forces: rho_i = sum_j m W_ij + rho_boundary(x_i); non-pressure forces (gravity, Laplacian
//                   artificial viscosity 2(d+2) nu sum_j m/rho0 (v_ij . x_ij)/(|x_ij|^2 + 0.01 h^2) gradW_ij,
//                   XSPH smoothing, surface tension of surface_tension.wgsl when on) give
//                   v* = v + dt a + xsph sum_j m/rho0 (v_j - v_i) W_ij.
//   then a fixed number of iterations of
//   pressure_force: a_p,i = -sum_j m (p_i/rho_i^2 + p_j/rho_j^2) gradW_ij - 2 p_i/rho_i^2 grad rho_boundary;
//                   x*_i = x_i + dt (v*_i + dt a_p,i)
//   predict_density: rho*_i at x*; p_i = max(p_i + delta (rho*_i - rho0), 0), delta = delta_unit / dt^2
//   and a last pressure_force. Boundaries mirror the particle's pressure (Akinci et al. 2012's form), with
//   their density from the half-space kernel integral (see common.wgsl).
#import "sim/common.wgsl"
#import "sim/cells.wgsl"
#import "sim/surface_tension.wgsl"

@compute @workgroup_size(WG)
fn density_forces(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= active_end()) {
        return;
    }
    let h = params.h;
    let r_max2 = 4.0 * h * h;
    let m = params.mass;
    let xi = spos_load(i).xyz;
    let vi = svel_load(i).xyz;
    let c = cell_coord(xi);
    var rho = 0.0;
    var visc = vec3<f32>(0.0);
    var xsph = vec3<f32>(0.0);
    let k = wendland(h);
    for (var dz = -reach(); dz <= reach(); dz++) {
        for (var dy = -reach(); dy <= reach(); dy++) {
            let range = row_range(xi, c, dy, dz);
            for (var j = range.x; j < range.y; j++) {
                let xij = xi - spos_load(j).xyz;
                let r2 = dot(xij, xij);
                if (r2 < r_max2) {
                    let r = sqrt(r2);
                    let w = wendland_w(k, r);
                    rho += w;
                    let vj = svel_load(j).xyz;
                    let vij = vi - vj;
                    visc += dot(vij, xij) / (r2 + 0.01 * h * h) * wendland_grad(k, xij, r);
                    xsph += (vj - vi) * w;
                }
            }
        }
    }
    let vol = m / params.rho0;
    rho = m * rho + boundary_density(xi).rho;
    let dt = step.dt;
    var a = params.gravity + 10.0 * params.viscosity * vol * visc;
    if (params.surface_tension > 0.0) {
        a += surface_tension_accel(i);
    }
    let v_star = vi + dt * a + per_step(params.xsph) * vol * xsph;
    vstar_store(i, vec4<f32>(v_star, 0.0));
    var p = params.warm_start * max(svel_load(i).w, 0.0);
    if (params.method == METHOD_WCSPH) {
        // Tait equation (Becker & Teschner 2007), clamped at zero: no tension at the free surface.
        let r = rho / params.rho0;
        let r2 = r * r;
        p = max(params.tait_b * (r2 * r2 * r2 * r - 1.0), 0.0);
    }
    rho_p_store(i, vec2<f32>(rho, p));
}

@compute @workgroup_size(WG)
fn pressure_force(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= active_end()) {
        return;
    }
    let h = params.h;
    let r_max2 = 4.0 * h * h;
    let m = params.mass;
    let xi = spos_load(i).xyz;
    let rp_i = rho_p_load(i);
    let rho_i = max(rp_i.x, 0.5 * params.rho0);
    let pi_rho2 = rp_i.y / (rho_i * rho_i);
    let c = cell_coord(xi);
    let k = wendland(h);
    var a = vec3<f32>(0.0);
    for (var dz = -reach(); dz <= reach(); dz++) {
        for (var dy = -reach(); dy <= reach(); dy++) {
            let range = row_range(xi, c, dy, dz);
            for (var j = range.x; j < range.y; j++) {
                let xij = xi - spos_load(j).xyz;
                let r2 = dot(xij, xij);
                // j = i adds nothing: x_ii vanishes.
                if (r2 < r_max2) {
                    let rp_j = rho_p_load(j);
                    let rho_j = max(rp_j.x, 0.5 * params.rho0);
                    let t = wendland_t(k, sqrt(r2));
                    a -= ((pi_rho2 + rp_j.y / (rho_j * rho_j)) * t * t * t) * xij;
                }
            }
        }
    }
    // The loop summed t^3-weighted offsets (grad W = g_coef t^3 x); the mass and g_coef multiply here.
    a *= m * k.g_coef;
    a -= params.boundary_factor * pi_rho2 * boundary_density(xi).grad;
    a *= params.grad_correction;
    accel_store(i, vec4<f32>(a, 0.0));
    let dt = step.dt;
    pred_store(i, vec4<f32>(project_out(xi + dt * (vstar_load(i).xyz + dt * a)), 0.0));
}

@compute @workgroup_size(WG)
fn predict_density(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat_index(gid, nwg, WG);
    if (i >= active_end()) {
        return;
    }
    let h = params.h;
    let r_max2 = 4.0 * h * h;
    let m = params.mass;
    let xi = pred_load(i).xyz;
    let c = cell_coord(spos_load(i).xyz);
    let k = wendland(h);
    var rho = 0.0;
    for (var dz = -reach(); dz <= reach(); dz++) {
        for (var dy = -reach(); dy <= reach(); dy++) {
            let range = row_block(c, dy, dz);
            for (var j = range.x; j < range.y; j++) {
                let xij = xi - pred_load(j).xyz;
                let r2 = dot(xij, xij);
                if (r2 < r_max2) {
                    rho += wendland_w(k, sqrt(r2));
                }
            }
        }
    }
    rho = m * rho + boundary_density(xi).rho;
    let dt = step.dt;
    let delta = select(0.0, params.delta_unit / (dt * dt), dt > 0.0);
    let p = max(rho_p_load(i).y + delta * (rho - params.rho0), 0.0);
    rho_p_store(i, vec2<f32>(rho, p));
}
