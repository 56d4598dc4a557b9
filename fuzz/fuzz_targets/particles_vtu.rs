//! Fuzz target `particles_vtu`: what it does with its input is `harness::particles` (`fuzz/harness.rs`); how to
//! run it for N minutes is in README.md, "Fuzzing".
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = harness::particles(data);
});
