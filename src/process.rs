//! This process's own figures from Linux's `/proc/self` (`None` elsewhere): CPU time, for what live
//! recording costs on a CPU adapter, and resident memory, for long runs (a soak must end with the memory
//! it had after its first minute).

/// CPU time of this process so far (user + system, all threads), milliseconds, from `/proc/self/stat`.
/// Resolution: one clock tick (10 ms on Linux).
pub fn cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which is in parentheses and may hold spaces): utime is field 14,
    // stime field 15 of the whole line, i.e. the 12th and 13th after the closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: f64 = fields.next()?.parse().ok()?;
    let stime: f64 = fields.next()?.parse().ok()?;
    // USER_HZ is 100 on every Linux this runs on.
    Some((utime + stime) * 10.0)
}

/// Resident memory of this process (`VmRSS` in `/proc/self/status`), bytes. On a CPU adapter (lavapipe)
/// the GPU's buffers are part of it.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

/// Memory the host has available for new allocations (`MemAvailable` of `/proc/meminfo`), bytes; `None`
/// where it cannot be read (not Linux).
pub fn memory_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_has_cpu_time_and_resident_memory() {
        let rss = super::resident_bytes().expect("VmRSS on Linux");
        assert!((1 << 20..1 << 40).contains(&rss), "{rss} bytes resident");
        let spent = super::cpu_ms().expect("CPU time on Linux");
        let x: u64 = (0..20_000_000u64).fold(0, |x, i| x.wrapping_mul(31).wrapping_add(i));
        std::hint::black_box(x);
        let later = super::cpu_ms().expect("CPU time");
        assert!(later >= spent && later < spent + 60_000.0, "{spent} ms, then {later} ms");
    }
}
