//! WGSL loading: every file under `shaders/` is embedded at build time (see `build.rs`) and resolved by a
//! small preprocessor:
//! - `#import "common/kernels.wgsl"` is replaced by that file's text (each file at most once per module);
//! - `#ifdef NAME` / `#else` / `#endif` keep or drop the lines between them by whether the define `NAME`
//!   was given ([`module_with`]); they nest. This is how shader variants are made (e.g. DFSPH's error sums
//!   with subgroup operations, `SUBGROUPS`), never by editing the text;
//! - `#split_array GROUP BINDING ACCESS NAME TYPE` declares a per-particle array held in several
//!   bindings and its accessors `NAME_load(i)` / `NAME_store(i, v)` ([`super::split`]), importing
//!   `common/split.wgsl` (the chunk length `SPLIT_N`) once.
//!
//! Shared WGSL lives in `shaders/common/`; each pass's or stage's shader sits at
//! `shaders/<family>/<module>.wgsl`, named like its Rust module. [`VARIANTS`] lists every (file, defines)
//! the crate compiles, so a test with no GPU validates each one with naga.

use std::collections::HashSet;

include!(concat!(env!("OUT_DIR"), "/shader_files.rs"));

/// The file that declares the split arrays' chunk length (imported by the first `#split_array`).
const SPLIT_FILE: &str = "common/split.wgsl";

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

/// Resolves `#import` lines recursively and keeps the `#ifdef` branches of `defines`; split arrays get
/// [`super::split::MAX_CHUNKS`] chunks.
pub fn resolve_with(path: &str, defines: &[&str]) -> String {
    resolve_split(path, defines, super::split::MAX_CHUNKS)
}

/// As [`resolve_with`], every `#split_array` declared in `chunks` bindings (1 ..= [`super::split::MAX_CHUNKS`]).
pub fn resolve_split(path: &str, defines: &[&str], chunks: usize) -> String {
    let mut out = String::new();
    let source = Source { defines, files: &raw_source, chunks };
    resolve_into(path, &source, &mut HashSet::new(), &mut out);
    out
}

/// What a module is resolved with: its defines, where its files come from, the split arrays' chunks.
struct Source<'a> {
    defines: &'a [&'a str],
    files: &'a dyn Fn(&str) -> Option<&'static str>,
    chunks: usize,
}

/// Appends `path` (looked up in `source.files`) to `out` with its imports, `#ifdef`s and split arrays
/// resolved; files in `seen` are skipped.
fn resolve_into(path: &str, source: &Source<'_>, seen: &mut HashSet<String>, out: &mut String) {
    if !seen.insert(path.to_string()) {
        return;
    }
    let defines = source.defines;
    let src = (source.files)(path).unwrap_or_else(|| panic!("shader file {path} is not embedded"));
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
            if let Some(args) = trimmed.strip_prefix("#split_array") {
                let text = super::split::wgsl(args, source.chunks)
                    .unwrap_or_else(|| panic!("{path}: `#split_array{args}` is not GROUP BINDING ACCESS NAME TYPE"));
                resolve_into(SPLIT_FILE, source, seen, out);
                out.push_str(&text);
                continue;
            }
            if let Some(args) = trimmed.strip_prefix("#split_alias") {
                let text = super::split::alias_wgsl(args)
                    .unwrap_or_else(|| panic!("{path}: `#split_alias{args}` is not NAME ARRAY TYPE"));
                out.push_str(&text);
                continue;
            }
            match trimmed.strip_prefix("#import") {
                Some(rest) => resolve_into(rest.trim().trim_matches('"'), source, seen, out),
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
    module_split(device, path, defines, super::split::MAX_CHUNKS)
}

/// As [`module_with`], its split arrays declared in `chunks` bindings each (the chunks a simulation's
/// arrays have: one up to [`super::split::per_binding`] particles).
pub fn module_split(device: &wgpu::Device, path: &str, defines: &[&str], chunks: usize) -> wgpu::ShaderModule {
    debug_assert!(
        defines.is_empty() || VARIANTS.iter().any(|(p, d)| *p == path && *d == defines),
        "{path} {defines:?} is not in VARIANTS"
    );
    device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(path),
        source: wgpu::ShaderSource::Wgsl(resolve_split(path, defines, chunks).into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve_in(files: &[(&'static str, &'static str)], path: &str, defines: &[&str]) -> String {
        let lookup =
            |p: &str| -> Option<&'static str> { files.iter().find(|(name, _)| *name == p).map(|(_, text)| *text) };
        let mut out = String::new();
        resolve_into(path, &Source { defines, files: &lookup, chunks: 2 }, &mut HashSet::new(), &mut out);
        out
    }

    #[test]
    fn split_arrays_import_their_constant_once() {
        let files = [
            (
                "a.wgsl",
                "#split_array 0 2 read a vec4<f32>\n#split_array 0 3 read_write b u32\n#split_alias c b u32\nend",
            ),
            (SPLIT_FILE, "override SPLIT_N: u32;"),
        ];
        let s = resolve_in(&files, "a.wgsl", &[]);
        assert_eq!(s.matches("override SPLIT_N").count(), 1, "{s}");
        assert!(s.starts_with("override SPLIT_N: u32;\n@group(0) @binding(2) var<storage, read> a_0"), "{s}");
        assert!(s.contains("@binding(35) var<storage, read_write> b_1: array<u32>;") && !s.contains("b_2"), "{s}");
        assert!(s.contains("fn c_store(i: u32, v: u32) {\n    b_store(i, v);\n}"), "{s}");
        assert!(s.ends_with("end\n"), "{s}");
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
