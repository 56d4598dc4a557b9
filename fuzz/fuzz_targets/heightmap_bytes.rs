//! Fuzz target `heightmap_bytes`: what it does with its input is `harness::heightmap_bytes` (`fuzz/harness.rs`); how to
//! run it for N minutes is in README.md, "Fuzzing".
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::heightmap_bytes(data);
});
