// "water shadow": the water's ellipsoids (render/ellipsoid.wgsl, from the anisotropy pass) splatted into
// the light-space map seen from the sun (render/water_light.wgsl), the sun's counterpart of the splat
// pass's thickness (splat.wgsl; ray casting after Sigg et al. 2006). One instanced quad per ellipsoid on
// the sunward tangent plane of its bounding sphere (orthographic: the quad is the sphere's radius wide);
// each pixel casts the sun's ray (direction -sun_dir) from the quad through the ellipsoid and writes
// r = its path length (One + One blending: summed) and a = the light-space depth where it enters (Min
// blending: the water's sunward surface). Misses are discarded.
#import "render/ellipsoid.wgsl"
#import "render/water_light.wgsl"

#split_array 1 1 read ellipsoid_centres vec4<f32>
#split_array 1 4 read ellipsoid_gs vec4<u32>

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) @interpolate(flat) index: u32,
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32, @builtin(instance_index) i: u32) -> VsOut {
    var out: VsOut;
    out.index = i;
    let centre = ellipsoid_centres_load(i);
    let r = centre.w;
    if !(r > 0.0 && r < 1.0e30) {
        out.clip = vec4<f32>(0.0, 0.0, -1.0, 1.0); // not drawn: outside the clip volume
        return out;
    }
    var corners = array<vec2<f32>, 6>(
        vec2<f32>(-1.0, -1.0), vec2<f32>(1.0, -1.0), vec2<f32>(1.0, 1.0),
        vec2<f32>(-1.0, -1.0), vec2<f32>(1.0, 1.0), vec2<f32>(-1.0, 1.0),
    );
    let k = corners[vi] * r * 1.02;
    let world = centre.xyz + water_light.sun_dir * r + water_light.right * k.x + water_light.up * k.y;
    let c = water_light.light_from_world * vec4<f32>(world, 1.0);
    out.clip = vec4<f32>(c.xy, 0.5, 1.0);
    out.world = world;
    return out;
}

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    let e = Ellipsoid(ellipsoid_centres_load(in.index), ellipsoid_gs_load(in.index));
    let t = ray_ellipsoid_from(e, in.world, -water_light.sun_dir);
    if t.y <= t.x {
        discard;
    }
    return vec4<f32>(t.y - t.x, 0.0, 0.0, water_light_depth(in.world) + t.x);
}
