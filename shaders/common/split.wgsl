// Per-particle arrays held in several storage bindings (src/gpu/split.rs): elements per chunk. Every
// pipeline of a module with a `#split_array` sets it (`gpu::split::constant`).
override SPLIT_N: u32;
