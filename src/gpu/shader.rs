//! WGSL loading: every file under `shaders/` is embedded at build time (see `build.rs`), and a line
//! `#import "common/kernels.wgsl"` is replaced by that file's text (each file imported at most once per module).
//! Shared WGSL lives in `shaders/common/`; each pass's shader sits at `shaders/<family>/<module>.wgsl`,
//! named like its Rust module.

use std::collections::HashSet;

include!(concat!(env!("OUT_DIR"), "/shader_files.rs"));

/// The source of one embedded shader file, by its path relative to `shaders/`.
pub fn raw_source(path: &str) -> Option<&'static str> {
    SHADER_FILES.iter().find(|(p, _)| *p == path).map(|(_, s)| *s)
}

/// Resolves `#import "path"` lines recursively. Panics only on a missing embedded file,
/// which is a build error of this crate, not user input.
pub fn resolve(path: &str) -> String {
    let mut seen = HashSet::new();
    let mut out = String::new();
    resolve_into(path, &mut seen, &mut out);
    out
}

fn resolve_into(path: &str, seen: &mut HashSet<String>, out: &mut String) {
    if !seen.insert(path.to_string()) {
        return;
    }
    let src = raw_source(path).unwrap_or_else(|| panic!("shader file {path} is not embedded"));
    for line in src.lines() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("#import") {
            let name = rest.trim().trim_matches('"');
            resolve_into(name, seen, out);
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
}

/// Creates a shader module from WGSL text (e.g. [`resolve`]'s output, edited), labelled `label`.
pub fn module_from_source(device: &wgpu::Device, label: &str, source: String) -> wgpu::ShaderModule {
    device.create_shader_module(wgpu::ShaderModuleDescriptor { label: Some(label), source: wgpu::ShaderSource::Wgsl(source.into()) })
}

/// Creates a shader module from an embedded file, with imports resolved. The label is the path.
pub fn module(device: &wgpu::Device, path: &str) -> wgpu::ShaderModule {
    device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(path),
        source: wgpu::ShaderSource::Wgsl(resolve(path).into()),
    })
}
