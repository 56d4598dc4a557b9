//! WGSL loading: every file under `shaders/` is embedded at build time (see `build.rs`) and resolved by a
//! small preprocessor:
//! - `#import "common/kernels.wgsl"` is replaced by that file's text (each file at most once per module);
//! - `#ifdef NAME` / `#else` / `#endif` keep or drop the lines between them by whether the define `NAME`
//!   was given ([`module_with`]); they nest. This is how shader variants are made (e.g. DFSPH's error sums
//!   with subgroup operations, `SUBGROUPS`), never by editing the text.
//!
//! Shared WGSL lives in `shaders/common/`; each pass's or stage's shader sits at
//! `shaders/<family>/<module>.wgsl`, named like its Rust module. [`VARIANTS`] lists every (file, defines)
//! the crate compiles, so a test with no GPU validates each one with naga.

use std::collections::HashSet;

include!(concat!(env!("OUT_DIR"), "/shader_files.rs"));

/// Every shader module the crate builds other than with no defines: (path, defines). The contract test
/// (`tests/shader_contract.rs`) validates each embedded file without defines and each of these.
pub const VARIANTS: &[(&str, &[&str])] = &[
    ("sim/dfsph.wgsl", &["SUBGROUPS"]),
    ("sim/dfsph.wgsl", &["GHOSTS"]),
    ("sim/dfsph.wgsl", &["SUBGROUPS", "GHOSTS"]),
    ("sim/grid.wgsl", &["IDS"]),
];

/// The source of one embedded shader file, by its path relative to `shaders/`.
pub fn raw_source(path: &str) -> Option<&'static str> {
    SHADER_FILES.iter().find(|(p, _)| *p == path).map(|(_, s)| *s)
}

/// The paths (relative to `shaders/`) of every embedded shader file.
pub fn files() -> impl Iterator<Item = &'static str> {
    SHADER_FILES.iter().map(|(p, _)| *p)
}

/// Resolves `#import` lines recursively, with no defines. Panics only on a missing embedded file or an
/// unbalanced `#ifdef`, which are build errors of this crate, not user input.
pub fn resolve(path: &str) -> String {
    resolve_with(path, &[])
}

/// Resolves `#import` lines recursively and keeps the `#ifdef` branches of `defines`.
pub fn resolve_with(path: &str, defines: &[&str]) -> String {
    let mut out = String::new();
    resolve_into(path, defines, &raw_source, &mut HashSet::new(), &mut out);
    out
}

/// Appends `path` (looked up by `files`) to `out` with its imports and `#ifdef`s resolved; files in `seen`
/// are skipped.
fn resolve_into(
    path: &str,
    defines: &[&str],
    files: &dyn Fn(&str) -> Option<&'static str>,
    seen: &mut HashSet<String>,
    out: &mut String,
) {
    if !seen.insert(path.to_string()) {
        return;
    }
    let src = files(path).unwrap_or_else(|| panic!("shader file {path} is not embedded"));
    // One entry per open #ifdef: whether its current branch is kept.
    let mut branches: Vec<bool> = Vec::new();
    for line in src.lines() {
        let trimmed = line.trim_start();
        if let Some(name) = trimmed.strip_prefix("#ifdef") {
            branches.push(defines.contains(&name.trim()));
        } else if trimmed.starts_with("#else") {
            let b = branches.last_mut().unwrap_or_else(|| panic!("{path}: #else without #ifdef"));
            *b = !*b;
        } else if trimmed.starts_with("#endif") {
            branches.pop().unwrap_or_else(|| panic!("{path}: #endif without #ifdef"));
        } else if branches.iter().all(|&kept| kept) {
            match trimmed.strip_prefix("#import") {
                Some(rest) => resolve_into(rest.trim().trim_matches('"'), defines, files, seen, out),
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
    }
    assert!(branches.is_empty(), "{path}: #ifdef without #endif");
}

/// Creates a shader module from an embedded file, with imports resolved. The label is the path.
pub fn module(device: &wgpu::Device, path: &str) -> wgpu::ShaderModule {
    module_with(device, path, &[])
}

/// As [`module`], with `defines` set for the file's `#ifdef`s (list the combination in [`VARIANTS`]).
pub fn module_with(device: &wgpu::Device, path: &str, defines: &[&str]) -> wgpu::ShaderModule {
    debug_assert!(
        defines.is_empty() || VARIANTS.iter().any(|(p, d)| *p == path && *d == defines),
        "{path} {defines:?} is not in VARIANTS"
    );
    device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(path),
        source: wgpu::ShaderSource::Wgsl(resolve_with(path, defines).into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve_in(files: &[(&'static str, &'static str)], path: &str, defines: &[&str]) -> String {
        let lookup =
            |p: &str| -> Option<&'static str> { files.iter().find(|(name, _)| *name == p).map(|(_, text)| *text) };
        let mut out = String::new();
        resolve_into(path, defines, &lookup, &mut HashSet::new(), &mut out);
        out
    }

    #[test]
    fn imports_once_and_keeps_the_defined_branches() {
        let files = [
            ("a.wgsl", "#import \"c.wgsl\"\n#ifdef X\n#import \"b.wgsl\"\nx\n#ifdef Y\nxy\n#else\nx-not-y\n#endif\n#else\nnot-x\n#endif\nend"),
            ("b.wgsl", "#import \"c.wgsl\"\nb"),
            ("c.wgsl", "c"),
        ];
        assert_eq!(resolve_in(&files, "a.wgsl", &[]), "c\nnot-x\nend\n");
        assert_eq!(resolve_in(&files, "a.wgsl", &["X"]), "c\nb\nx\nx-not-y\nend\n");
        assert_eq!(resolve_in(&files, "a.wgsl", &["X", "Y"]), "c\nb\nx\nxy\nend\n");
    }

    #[test]
    #[should_panic(expected = "#ifdef without #endif")]
    fn an_unclosed_ifdef_is_a_build_error() {
        resolve_in(&[("a.wgsl", "#ifdef X\nx")], "a.wgsl", &[]);
    }
}
