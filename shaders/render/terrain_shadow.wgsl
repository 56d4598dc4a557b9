// Soft sun shadows of the terrain, once per height sample (a ray march toward the sun with the penumbra
// estimate of Quilez's "soft shadows" for distance fields, started half a step off the surface along the
// normal), run when the sun or the terrain changes; terrain.wgsl interpolates the result per pixel.
#import "render/heightfield.wgsl"

@group(1) @binding(2) var<storage, read_write> shadow_out: array<f32>;

@compute @workgroup_size(8, 8)
fn shadow_grid(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x >= terrain.nx || gid.y >= terrain.nz) {
        return;
    }
    let ix = i32(gid.x);
    let iz = i32(gid.y);
    let p = vec3<f32>(terrain.origin.x + f32(ix) * terrain.spacing.x, height(ix, iz), terrain.origin.y + f32(iz) * terrain.spacing.y);
    // Normal by central differences, as terrain.wgsl's vertex shader.
    let x0 = max(ix - 1, 0);
    let x1 = min(ix + 1, i32(terrain.nx) - 1);
    let z0 = max(iz - 1, 0);
    let z1 = min(iz + 1, i32(terrain.nz) - 1);
    let dhdx = (height(x1, iz) - height(x0, iz)) / (f32(max(x1 - x0, 1)) * terrain.spacing.x);
    let dhdz = (height(ix, z1) - height(ix, z0)) / (f32(max(z1 - z0, 1)) * terrain.spacing.y);
    let n = normalize(vec3<f32>(-dhdx, 1.0, -dhdz));
    shadow_out[gid.y * terrain.nx + gid.x] = sun_shadow(p, n, terrain.sun_dir);
}
