//! The source files of `src/` import one another without circles (no GPU): a file that names another by
//! `crate::a::b` or `super::b` (code, not comments or a `mod tests` block) depends on it, and no file may
//! depend on itself through others. A file's use of its parent modules (the `mod.rs` that declares it and
//! re-exports its siblings' types, the crate root) is not counted: that is how a module is built. A circle ties its files together (neither can be understood, tested or
//! moved alone); issue 30 opened the last four (the terrain passes and the frame's bind group, the scene's
//! checks of obstacles and bodies, the scene's setup and the bodies' world, the simulation's build and its
//! rank particles).
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file below `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file below `src/`: src/sim/build.rs -> [sim, build]; src/sim/mod.rs -> [sim].
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("below src").with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The code of a file without comments and without its unit tests (`#[cfg(test)] mod tests { ... }` to
/// the end of the file, where this project keeps them).
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The paths named after each `prefix` in `code`: `crate::sim::build::X` gives [sim, build, X]; a group
/// `super::{a, b::c}` gives [a] and [b, c].
fn named_paths(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        if code[..at].chars().next_back().is_some_and(ident) {
            continue;
        }
        let rest = &code[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.split('}').next().unwrap_or("");
            for item in inner.split(',') {
                let path: Vec<String> = item.trim().split("::").map(|s| s.trim().to_string()).collect();
                out.push(path);
            }
            continue;
        }
        let mut path = Vec::new();
        let mut s = rest;
        loop {
            let end = s.find(|c: char| !ident(c)).unwrap_or(s.len());
            if end == 0 {
                break;
            }
            path.push(s[..end].to_string());
            match s[end..].strip_prefix("::") {
                Some(next) => s = next,
                None => break,
            }
        }
        out.push(path);
    }
    out
}

/// The module of the longest prefix of `path` that is a module of `files`, and its file.
fn file_of<'a>(files: &'a BTreeMap<Vec<String>, PathBuf>, path: &[String]) -> Option<(&'a [String], &'a PathBuf)> {
    (1..=path.len()).rev().find_map(|k| files.get_key_value(&path[..k]).map(|(m, f)| (m.as_slice(), f)))
}

#[test]
fn source_files_import_each_other_without_circles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let files: BTreeMap<Vec<String>, PathBuf> = paths.iter().map(|p| (module_of(&src, p), p.clone())).collect();
    let mut edges: BTreeMap<&PathBuf, BTreeSet<&PathBuf>> = BTreeMap::new();
    for (module, file) in &files {
        let code = code_of(&std::fs::read_to_string(file).expect("read a source file"));
        let parent = &module[..module.len().saturating_sub(1)];
        let mut named: Vec<Vec<String>> = named_paths(&code, "crate::");
        for p in named_paths(&code, "super::") {
            named.push(parent.iter().cloned().chain(p).collect());
        }
        let targets = edges.entry(file).or_default();
        for path in named {
            // A parent module (a prefix of this one's path) is where this file is declared: not an edge.
            if let Some((target_module, target)) = file_of(&files, &path) {
                if !module.starts_with(target_module) {
                    targets.insert(target);
                }
            }
        }
    }
    // Tarjan's strongly connected components: any of more than one file is a circle.
    struct Walk<'a> {
        edges: &'a BTreeMap<&'a PathBuf, BTreeSet<&'a PathBuf>>,
        index: BTreeMap<&'a PathBuf, (usize, usize)>,
        stack: Vec<&'a PathBuf>,
        circles: Vec<Vec<&'a PathBuf>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a PathBuf) {
        let n = w.index.len();
        w.index.insert(v, (n, n));
        w.stack.push(v);
        for &t in w.edges.get(v).into_iter().flatten() {
            if !w.index.contains_key(t) {
                visit(w, t);
                let low = w.index[v].1.min(w.index[t].1);
                w.index.get_mut(v).expect("visited").1 = low;
            } else if w.stack.contains(&t) {
                let low = w.index[v].1.min(w.index[t].0);
                w.index.get_mut(v).expect("visited").1 = low;
            }
        }
        if w.index[v].0 == w.index[v].1 {
            let at = w.stack.iter().position(|x| *x == v).expect("on the stack");
            let component: Vec<&PathBuf> = w.stack.split_off(at);
            if component.len() > 1 {
                w.circles.push(component);
            }
        }
    }
    let mut walk = Walk { edges: &edges, index: BTreeMap::new(), stack: Vec::new(), circles: Vec::new() };
    for file in edges.keys() {
        if !walk.index.contains_key(*file) {
            visit(&mut walk, file);
        }
    }
    assert!(edges.len() > 100, "only {} source files found", edges.len());
    let named: Vec<String> = walk
        .circles
        .iter()
        .map(|c| {
            c.iter().map(|p| p.strip_prefix(&src).unwrap_or(p).display().to_string()).collect::<Vec<_>>().join(", ")
        })
        .collect();
    assert!(named.is_empty(), "source files that import each other in a circle:\n{}", named.join("\n"));
}
