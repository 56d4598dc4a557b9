// Sky: a cubemap, used as the background and for the water's reflections.
// `generate` fills the cubemap on the GPU with one of two models (SkyGen.model):
// 0, the default: scattering in a spherical atmosphere (single scattering after Nishita et al. 1993, "Display
// of the earth taking into account atmospheric scattering", with Bruneton's 2017 Earth parameters evaluated at
// the dominant wavelengths of the sRGB primaries, 611.3, 549.1 and 464.3 nm, as the cubemap is linear sRGB;
// plus multiple scattering, below): the view
// ray from an observer 200 m above the ground is marched to the top of the atmosphere (VIEW_STEPS samples,
// denser near the eye), and at each sample the sunlight that reached it (transmittance over LIGHT_STEPS
// samples toward the sun, zero in the earth's shadow) is scattered toward the eye by air molecules
// (Rayleigh, phase 3/(16 pi) (1 + mu^2)) and aerosols (Mie, Cornette-Shanks phase, g = 0.8), attenuated on
// the way by Rayleigh and Mie extinction and ozone absorption (a tent profile around 25 km). Rayleigh's
// blue makes the zenith blue at high sun; the long paths at low sun make the light near the sun and the
// horizon orange and red; Mie makes the glow around the sun and the pale horizon haze. Turbidity scales the
// aerosols' density (1 at turbidity 2.5).
// Multiple scattering after Hillaire 2020 ("A Scalable and Production Ready Sky and Atmosphere Rendering
// Technique", EGSR, section 5.5): `multiscatter` first fills a small table over (sun zenith cosine, height)
// with Psi_ms = L_2 / (1 - f_ms): L_2 the light scattered once more (isotropically) toward a point from every
// direction (64 directions, the first bounce also with the isotropic phase, plus the sunlit ground of
// albedo 0.1), f_ms the fraction the air around the point scatters back to it, so 1 / (1 - f_ms) sums all
// higher orders as a geometric series. Each sample of the view ray then scatters sigma_s Psi_ms toward the
// eye besides the single-scattered sunlight. Without it a clear horizon at a sun 30-45 degrees high is
// green-yellow (the sunlight reaching the long low path has lost its blue; the sky's own light brings it
// back) and the zenith at low sun is too dark.
// 1: the Preetham, Shirley & Smits daylight model ("A practical analytic model for daylight", SIGGRAPH
// 1999): Perez et al.'s luminance distribution
//   F(theta, gamma) = (1 + A exp(B / cos theta)) (1 + C exp(D gamma) + E cos^2 gamma)
// for Y, x and y with turbidity-dependent coefficients, scaled by the zenith values, converted from
// xyY to linear sRGB and to the renderer's radiance scale; below the horizon it fades into dark ground.
// The background pass draws one full-screen triangle at the far plane that looks the cubemap up along
// each pixel's view ray and adds the sun disc (generated skies only).
#import "common/camera.wgsl"

// Rust twin: SkyGenUniform in src/render/sky.rs (48 bytes).
struct SkyGen {
    sun_dir: vec3<f32>,
    sun_intensity: f32,
    turbidity: f32,
    face_size: u32,
    // Radiance of the background pass = cubemap * exposure; 1 draws the sun disc.
    exposure: f32,
    sun_disc: f32,
    // 0: scattering atmosphere; 1: Preetham.
    model: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(1) @binding(0) var<uniform> sky: SkyGen;
@group(1) @binding(1) var sky_cube: texture_cube<f32>;
@group(1) @binding(2) var sky_sampler: sampler;

// Generator only (group 0 is empty there).
@group(1) @binding(3) var faces: texture_storage_2d_array<rgba16float, write>;
// Psi_ms over MS_SIZE sun zenith cosines (-1..1, fastest) x MS_SIZE heights (ground..top), per unit of
// solar irradiance (rgb; w unused). Written by `multiscatter`, read by `generate`.
@group(1) @binding(4) var<storage, read_write> ms_table: array<vec4<f32>>;

// World direction of texel uv (-1..1) on cube face `face` (+x, -x, +y, -y, +z, -z; wgpu's convention).
fn face_dir(face: u32, uv: vec2<f32>) -> vec3<f32> {
    let u = uv.x;
    let v = -uv.y;
    switch face {
        case 0u: { return normalize(vec3<f32>(1.0, v, -u)); }
        case 1u: { return normalize(vec3<f32>(-1.0, v, u)); }
        case 2u: { return normalize(vec3<f32>(u, 1.0, -v)); }
        case 3u: { return normalize(vec3<f32>(u, -1.0, v)); }
        case 4u: { return normalize(vec3<f32>(u, v, 1.0)); }
        default: { return normalize(vec3<f32>(-u, v, -1.0)); }
    }
}

fn perez(theta: f32, gamma: f32, a: f32, b: f32, c: f32, d: f32, e: f32) -> f32 {
    let cg = cos(gamma);
    return (1.0 + a * exp(b / max(cos(theta), 0.01))) * (1.0 + c * exp(d * gamma) + e * cg * cg);
}

// Preetham sky radiance (linear sRGB, renderer scale) along `dir` (dir.y >= 0) for sun direction `s`.
fn preetham(dir: vec3<f32>, s: vec3<f32>, t: f32) -> vec3<f32> {
    let theta_s = acos(clamp(s.y, 0.0, 1.0));
    let theta = acos(clamp(dir.y, 0.0, 1.0));
    let gamma = acos(clamp(dot(dir, s), -1.0, 1.0));
    let chi = (4.0 / 9.0 - t / 120.0) * (PI - 2.0 * theta_s);
    let yz = max((4.0453 * t - 4.9710) * tan(chi) - 0.2155 * t + 2.4192, 0.0);
    let ts = vec3<f32>(theta_s * theta_s * theta_s, theta_s * theta_s, theta_s);
    let xz = t * t * dot(vec3<f32>(0.00166, -0.00375, 0.00209), ts)
        + t * (dot(vec3<f32>(-0.02903, 0.06377, -0.03202), ts) + 0.00394)
        + dot(vec3<f32>(0.11693, -0.21196, 0.06052), ts) + 0.25886;
    let yz_c = t * t * dot(vec3<f32>(0.00275, -0.00610, 0.00317), ts)
        + t * (dot(vec3<f32>(-0.04214, 0.08970, -0.04153), ts) + 0.00516)
        + dot(vec3<f32>(0.15346, -0.26756, 0.06670), ts) + 0.26688;
    let lum = yz * perez(theta, gamma, 0.1787 * t - 1.4630, -0.3554 * t + 0.4275, -0.0227 * t + 5.3251, 0.1206 * t - 2.5771, -0.0670 * t + 0.3703)
        / perez(0.0, theta_s, 0.1787 * t - 1.4630, -0.3554 * t + 0.4275, -0.0227 * t + 5.3251, 0.1206 * t - 2.5771, -0.0670 * t + 0.3703);
    let x = xz * perez(theta, gamma, -0.0193 * t - 0.2592, -0.0665 * t + 0.0008, -0.0004 * t + 0.2125, -0.0641 * t - 0.8989, -0.0033 * t + 0.0452)
        / perez(0.0, theta_s, -0.0193 * t - 0.2592, -0.0665 * t + 0.0008, -0.0004 * t + 0.2125, -0.0641 * t - 0.8989, -0.0033 * t + 0.0452);
    let y = yz_c * perez(theta, gamma, -0.0167 * t - 0.2608, -0.0950 * t + 0.0092, -0.0079 * t + 0.2102, -0.0441 * t - 1.6537, -0.0109 * t + 0.0529)
        / perez(0.0, theta_s, -0.0167 * t - 0.2608, -0.0950 * t + 0.0092, -0.0079 * t + 0.2102, -0.0441 * t - 1.6537, -0.0109 * t + 0.0529);
    // xyY -> XYZ -> linear sRGB; luminance in kcd/m^2 scaled to the renderer's radiance units.
    let big_y = lum * 0.032;
    let big_x = x / max(y, 1e-4) * big_y;
    let big_z = (1.0 - x - y) / max(y, 1e-4) * big_y;
    let rgb = vec3<f32>(
        3.2406 * big_x - 1.5372 * big_y - 0.4986 * big_z,
        -0.9689 * big_x + 1.8758 * big_y + 0.0415 * big_z,
        0.0557 * big_x - 0.2040 * big_y + 1.0570 * big_z,
    );
    return max(rgb, vec3<f32>(0.0));
}

// ---- scattering atmosphere (Bruneton 2017's Earth; lengths in metres) ----

const EARTH_RADIUS: f32 = 6360e3;
const ATMOSPHERE_TOP: f32 = 6420e3;
const OBSERVER_HEIGHT: f32 = 200.0;
// Rayleigh: Bruneton's 13.558e-6 /m at 550 nm times (550 nm / lambda)^4 at the sRGB wavelengths (his 680, 550,
// 440 nm values read as sRGB made the horizon green: too little red scattered into long paths).
const RAYLEIGH_SCATTERING: vec3<f32> = vec3<f32>(8.884e-6, 13.647e-6, 26.696e-6);
const RAYLEIGH_HEIGHT: f32 = 8000.0;
const MIE_SCATTERING: f32 = 3.996e-6;
const MIE_EXTINCTION: f32 = 4.44e-6;
const MIE_HEIGHT: f32 = 1200.0;
const MIE_G: f32 = 0.8;
// Ozone: its absorption cross-section at the sRGB wavelengths (Serdyuchenko et al.'s 233 K spectrum in 10 nm
// bins, as tabulated by Bruneton 2017, interpolated) times the peak density of 300 Dobson units in the tent.
const OZONE_ABSORPTION: vec3<f32> = vec3<f32>(2.274e-6, 1.861e-6, 0.226e-6);
const VIEW_STEPS: u32 = 32u;
const LIGHT_STEPS: u32 = 8u;
// Multiple-scattering table (src/render/sky.rs MS_TABLE_SIZE; workgroups of MS_WG = 64): edge, directions
// per entry (a grid over the sphere), samples per direction; the ground's albedo (Bruneton 2017's).
const MS_SIZE: u32 = 32u;
const MS_DIRS_SQRT: u32 = 8u;
const MS_STEPS: u32 = 20u;
const GROUND_ALBEDO: f32 = 0.1;
// Radiance of the renderer's units per unit of solar irradiance scattered, at sun intensity 1 (chosen so
// the horizon at a high sun stays below white after the tone map: its zenith is then 0.39 times as
// bright as the Preetham model's).
const ATMOSPHERE_SCALE: f32 = 8.0;

// Distance along unit `d` from `o` (relative to the earth's centre) to the sphere of radius `r`, the far
// root; negative when there is none.
fn sphere_exit(o: vec3<f32>, d: vec3<f32>, r: f32) -> f32 {
    let b = dot(o, d);
    let c = dot(o, o) - r * r;
    let disc = b * b - c;
    if disc < 0.0 {
        return -1.0;
    }
    return -b + sqrt(disc);
}

// Whether the ray from `o` along unit `d` hits the ground (the earth's sphere) ahead.
fn hits_ground(o: vec3<f32>, d: vec3<f32>) -> bool {
    let b = dot(o, d);
    let c = dot(o, o) - EARTH_RADIUS * EARTH_RADIUS;
    return b < 0.0 && b * b - c >= 0.0;
}

// Extinction per metre at height h above the ground (m): Rayleigh + Mie (scaled by `haze`) + ozone.
struct Densities {
    rayleigh: f32,
    mie: f32,
    ozone: f32,
}

fn densities(h: f32) -> Densities {
    let ozone = max(0.0, 1.0 - abs(h - 25e3) / 15e3);
    return Densities(exp(-h / RAYLEIGH_HEIGHT), exp(-h / MIE_HEIGHT), ozone);
}

fn extinction(d: Densities, haze: f32) -> vec3<f32> {
    return RAYLEIGH_SCATTERING * d.rayleigh + vec3<f32>(MIE_EXTINCTION * haze * d.mie) + OZONE_ABSORPTION * d.ozone;
}

// Transmittance from `p` toward the sun `s` to the top of the atmosphere (0 in the earth's shadow).
fn sun_transmittance(p: vec3<f32>, s: vec3<f32>, haze: f32) -> vec3<f32> {
    if hits_ground(p, s) {
        return vec3<f32>(0.0);
    }
    let len = sphere_exit(p, s, ATMOSPHERE_TOP);
    let ds = len / f32(LIGHT_STEPS);
    var depth = vec3<f32>(0.0);
    for (var i = 0u; i < LIGHT_STEPS; i++) {
        let q = p + s * ((f32(i) + 0.5) * ds);
        depth += extinction(densities(length(q) - EARTH_RADIUS), haze) * ds;
    }
    return exp(-depth);
}

fn rayleigh_phase(mu: f32) -> f32 {
    return 3.0 / (16.0 * PI) * (1.0 + mu * mu);
}

// Cornette-Shanks phase function.
fn mie_phase(mu: f32) -> f32 {
    let g2 = MIE_G * MIE_G;
    let k = 3.0 / (8.0 * PI) * (1.0 - g2) / (2.0 + g2);
    return k * (1.0 + mu * mu) / pow(max(1.0 + g2 - 2.0 * MIE_G * mu, 1e-4), 1.5);
}

// Aerosol density scale of the turbidity (1 at 2.5).
fn haze_of(turbidity: f32) -> f32 {
    return max(turbidity - 1.0, 0.1) / 1.5;
}

// Scattering (not extinction) per metre of densities `d`: Rayleigh, Mie.
fn scattering(d: Densities, haze: f32) -> vec3<f32> {
    return RAYLEIGH_SCATTERING * d.rayleigh + vec3<f32>(MIE_SCATTERING * haze * d.mie);
}

// One entry of the multiple-scattering table (Hillaire 2020, section 5.5; see the header): for the point
// at height h with the sun at zenith cosine mu_s, Psi_ms = L_2 / (1 - f_ms), integrated over
// MS_DIRS_SQRT^2 directions (uniform in cos theta and phi) with MS_STEPS samples each.
@compute @workgroup_size(64, 1, 1)
fn multiscatter(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x >= MS_SIZE * MS_SIZE {
        return;
    }
    let mu_s = (f32(gid.x % MS_SIZE) + 0.5) / f32(MS_SIZE) * 2.0 - 1.0;
    let h = (f32(gid.x / MS_SIZE) + 0.5) / f32(MS_SIZE) * (ATMOSPHERE_TOP - EARTH_RADIUS);
    let o = vec3<f32>(0.0, EARTH_RADIUS + h, 0.0);
    let s = vec3<f32>(sqrt(max(1.0 - mu_s * mu_s, 0.0)), mu_s, 0.0);
    let haze = haze_of(sky.turbidity);
    let uniform_phase = 1.0 / (4.0 * PI);
    var l2 = vec3<f32>(0.0);
    var f_ms = vec3<f32>(0.0);
    for (var k = 0u; k < MS_DIRS_SQRT * MS_DIRS_SQRT; k++) {
        let cos_t = 1.0 - 2.0 * (f32(k % MS_DIRS_SQRT) + 0.5) / f32(MS_DIRS_SQRT);
        let phi = 2.0 * PI * (f32(k / MS_DIRS_SQRT) + 0.5) / f32(MS_DIRS_SQRT);
        let sin_t = sqrt(max(1.0 - cos_t * cos_t, 0.0));
        let dir = vec3<f32>(sin_t * cos(phi), cos_t, sin_t * sin(phi));
        let ground = hits_ground(o, dir);
        var len = sphere_exit(o, dir, ATMOSPHERE_TOP);
        if ground {
            let b = dot(o, dir);
            len = -b - sqrt(max(b * b - dot(o, o) + EARTH_RADIUS * EARTH_RADIUS, 0.0));
        }
        let ds = len / f32(MS_STEPS);
        var depth = vec3<f32>(0.0);
        for (var i = 0u; i < MS_STEPS; i++) {
            let p = o + dir * ((f32(i) + 0.5) * ds);
            let d = densities(length(p) - EARTH_RADIUS);
            let ext = extinction(d, haze) * ds;
            let t = exp(-(depth + 0.5 * ext));
            depth += ext;
            let sigma_s = scattering(d, haze);
            l2 += t * sigma_s * sun_transmittance(p, s, haze) * (uniform_phase * ds);
            f_ms += t * sigma_s * ds;
        }
        if ground {
            // The sunlit ground, a Lambertian reflector, seen at the end of the ray.
            let g = o + dir * len;
            let n = normalize(g);
            l2 += exp(-depth) * sun_transmittance(g + n, s, haze) * max(dot(n, s), 0.0) * GROUND_ALBEDO / PI;
        }
    }
    // The sphere's integral of a quantity times the isotropic phase: the mean over the directions.
    let count = f32(MS_DIRS_SQRT * MS_DIRS_SQRT);
    l2 /= count;
    f_ms /= count;
    ms_table[gid.x] = vec4<f32>(l2 / max(vec3<f32>(1.0) - f_ms, vec3<f32>(1e-3)), 0.0);
}

// Psi_ms at the point p (relative to the earth's centre) for the sun toward `s`: the table bilinearly.
fn multiple_scattering(p: vec3<f32>, s: vec3<f32>) -> vec3<f32> {
    let r = length(p);
    let mu_s = dot(p / r, s);
    let n = f32(MS_SIZE);
    let x = clamp((mu_s * 0.5 + 0.5) * n - 0.5, 0.0, n - 1.0);
    let y = clamp((r - EARTH_RADIUS) / (ATMOSPHERE_TOP - EARTH_RADIUS) * n - 0.5, 0.0, n - 1.0);
    let x0 = u32(x);
    let y0 = u32(y);
    let x1 = min(x0 + 1u, MS_SIZE - 1u);
    let y1 = min(y0 + 1u, MS_SIZE - 1u);
    let fx = x - f32(x0);
    let fy = y - f32(y0);
    let a = mix(ms_table[y0 * MS_SIZE + x0].xyz, ms_table[y0 * MS_SIZE + x1].xyz, fx);
    let b = mix(ms_table[y1 * MS_SIZE + x0].xyz, ms_table[y1 * MS_SIZE + x1].xyz, fx);
    return mix(a, b, fy);
}

// Sky radiance along unit `dir` (dir.y >= 0) for the sun toward unit `s`, per unit of solar irradiance:
// single scattering plus the multiple-scattering table's; `haze` scales the aerosols.
fn atmosphere(dir: vec3<f32>, s: vec3<f32>, haze: f32) -> vec3<f32> {
    let o = vec3<f32>(0.0, EARTH_RADIUS + OBSERVER_HEIGHT, 0.0);
    let len = sphere_exit(o, dir, ATMOSPHERE_TOP);
    let mu = dot(dir, s);
    let pr = rayleigh_phase(mu);
    let pm = mie_phase(mu);
    var depth = vec3<f32>(0.0);
    var sum = vec3<f32>(0.0);
    // Samples at t = len u^2 (u uniform): dense near the eye, where the air is.
    var t_prev = 0.0;
    for (var i = 0u; i < VIEW_STEPS; i++) {
        let u = (f32(i) + 1.0) / f32(VIEW_STEPS);
        let t = len * u * u;
        let ds = t - t_prev;
        let p = o + dir * (0.5 * (t + t_prev));
        t_prev = t;
        let d = densities(length(p) - EARTH_RADIUS);
        let ext = extinction(d, haze) * ds;
        let mid = depth + 0.5 * ext;
        depth += ext;
        let single = RAYLEIGH_SCATTERING * (d.rayleigh * pr) + vec3<f32>(MIE_SCATTERING * haze * d.mie * pm);
        let multiple = scattering(d, haze) * multiple_scattering(p, s);
        sum += exp(-mid) * (sun_transmittance(p, s, haze) * single + multiple) * ds;
    }
    return sum;
}

// Generated sky along `dir`: the atmosphere or Preetham above the horizon (Preetham's sun kept a little
// above it, where that model holds, and dimmed toward night), dark haze-lit ground below.
fn generated_sky(dir: vec3<f32>) -> vec3<f32> {
    let s = sky.sun_dir;
    let horizon_dir = normalize(vec3<f32>(dir.x, max(dir.y, 0.0), dir.z));
    var col: vec3<f32>;
    if sky.model == 0u {
        // The atmosphere holds at every elevation: twilight fades by the earth's shadow itself.
        col = atmosphere(horizon_dir, s, haze_of(sky.turbidity)) * (ATMOSPHERE_SCALE * sky.sun_intensity);
    } else {
        let s_model = normalize(vec3<f32>(s.x, max(s.y, 0.03), s.z));
        let day = smoothstep(-0.15, 0.1, s.y) * sky.sun_intensity;
        col = preetham(horizon_dir, s_model, sky.turbidity) * day;
    }
    if dir.y < 0.0 {
        // Distant land seen through haze (aerial perspective): a darker, bluer horizon colour.
        let land = col * vec3<f32>(0.35, 0.42, 0.52);
        col = mix(col, land, 1.0 - exp(dir.y * 5.0));
    }
    return col;
}

@compute @workgroup_size(8, 8, 1)
fn generate(@builtin(global_invocation_id) gid: vec3<u32>) {
    let n = sky.face_size;
    if gid.x >= n || gid.y >= n {
        return;
    }
    let uv = (vec2<f32>(gid.xy) + 0.5) / f32(n) * 2.0 - 1.0;
    let dir = face_dir(gid.z, uv);
    textureStore(faces, vec2<i32>(gid.xy), i32(gid.z), vec4<f32>(generated_sky(dir), 1.0));
}

struct VsOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) ndc: vec2<f32>,
}

@vertex
fn vs_main(@builtin(vertex_index) vi: u32) -> VsOut {
    // (-1,-1), (3,-1), (-1,3): covers the screen.
    let ndc = vec2<f32>(f32((vi << 1u) & 2u) * 2.0 - 1.0, f32(vi & 2u) * 2.0 - 1.0);
    var out: VsOut;
    out.clip = vec4<f32>(ndc, 0.0, 1.0);
    out.ndc = ndc;
    return out;
}

// Angular radius of the drawn sun disc, radians (about twice the real sun's, to stay visible).
const SUN_RADIUS: f32 = 0.009;

@fragment
fn fs_main(in: VsOut) -> @location(0) vec4<f32> {
    let p = camera.world_from_clip * vec4<f32>(in.ndc, 1.0, 1.0);
    let dir = normalize(p.xyz / p.w - camera.eye);
    var col = textureSampleLevel(sky_cube, sky_sampler, dir, 0.0).rgb * sky.exposure;
    let mu = dot(dir, camera.sun_dir);
    let disc = smoothstep(cos(SUN_RADIUS * 1.25), cos(SUN_RADIUS * 0.75), mu);
    let above = smoothstep(-0.01, 0.005, dir.y);
    col += sky.sun_disc * disc * above * 40.0 * sun_radiance();
    return output_color(col);
}
