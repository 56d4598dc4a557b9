//! Embeds every WGSL file under `shaders/` into the binary as a table of (relative path, source),
//! so release builds start from any folder. `src/gpu/shader.rs` resolves `#import` lines against it.
use std::{env, fs, path::Path};

fn collect(dir: &Path, root: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = fs::read_dir(dir).expect("shaders/ is readable").flatten().collect();
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "wgsl") {
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            out.push(rel);
        }
    }
}

fn main() {
    let root = Path::new(&env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join("shaders");
    println!("cargo:rerun-if-changed=shaders");
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    let mut code = String::from("/// (path relative to shaders/, WGSL source) for every embedded shader file.\npub const SHADER_FILES: &[(&str, &str)] = &[\n");
    for f in &files {
        println!("cargo:rerun-if-changed=shaders/{f}");
        code += &format!("    ({f:?}, include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/shaders/{f}\"))),\n");
    }
    code += "];\n";
    fs::write(Path::new(&env::var("OUT_DIR").unwrap()).join("shader_files.rs"), code).unwrap();
}
