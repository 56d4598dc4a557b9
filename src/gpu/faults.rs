//! What a headless device reports outside any error scope: wgpu's default uncaptured-error handler
//! panics, so every context made by [`crate::gpu::GpuContext::on_adapter`] installs one that records the
//! first few errors instead (the window replaces it with its own, src/app/device.rs), and a device-lost
//! callback that records the loss. A blocking read-back that gets nothing back, and the commands that end
//! on it, name the first recorded error ([`GpuFaults::describe`]) rather than a symptom of it (a staging
//! buffer that could not be made after the device was lost, whose mapping wgpu reports as invalid).

use std::sync::{Arc, Mutex};

/// Errors kept; later ones are counted only (bounded memory on a device that keeps failing).
pub const KEPT: usize = 4;

#[derive(Default)]
struct Record {
    first: Vec<String>,
    more: u64,
    lost: Option<String>,
}

impl Record {
    fn count(&self) -> u64 {
        self.first.len() as u64 + self.more + self.lost.is_some() as u64
    }
}

/// wgpu's multi-line error (`Validation Error`, `Caused by:`, the causes indented) as one printable line,
/// its parts joined by " / ".
fn one_line(text: &str) -> String {
    let parts: Vec<_> = text.lines().map(str::trim).filter(|l| !l.is_empty() && *l != "Caused by:").collect();
    crate::text::printable(&parts.join(" / ")).into_owned()
}

/// The errors a device reported (shared by the clones of a context). See the module docs.
#[derive(Clone, Default)]
pub struct GpuFaults(Arc<Mutex<Record>>);

impl GpuFaults {
    /// Installs the recording handler and device-lost callback on `device` (replacing wgpu's panicking
    /// default) and returns the record they write.
    pub fn install(device: &wgpu::Device) -> Self {
        let faults = Self::default();
        let sink = faults.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let out_of_memory = matches!(e, wgpu::Error::OutOfMemory { .. });
            let text = one_line(&e.to_string());
            let hint = if out_of_memory { " (out of memory)" } else { "" };
            log::error!("wgpu: {text}");
            sink.push(format!("{text}{hint}"));
        }));
        let sink = faults.clone();
        device.set_device_lost_callback(move |reason, message| {
            if reason == wgpu::DeviceLostReason::Destroyed {
                return; // dropped on purpose at the end of a run
            }
            log::error!("GPU device lost ({reason:?}): {message}");
            if let Ok(mut r) = sink.0.lock() {
                r.lost.get_or_insert_with(|| crate::text::printable_lines(&message).into_owned());
            }
        });
        faults
    }

    /// Records one error (the first [`KEPT`] are kept, the rest counted).
    pub fn push(&self, error: String) {
        if let Ok(mut r) = self.0.lock() {
            if r.first.len() < KEPT {
                r.first.push(error);
            } else {
                r.more += 1;
            }
        }
    }

    /// How many errors the device reported, its loss counted as one (counts kept past [`KEPT`] too).
    pub fn count(&self) -> u64 {
        self.0.lock().map(|r| r.count()).unwrap_or(u64::MAX)
    }

    /// What the device reported, in one message: the loss first (the cause of what follows it), then
    /// the errors kept and how many more; `None` when it reported nothing.
    pub fn describe(&self) -> Option<String> {
        let r = self.0.lock().ok()?;
        let mut parts = Vec::new();
        if let Some(m) = &r.lost {
            parts.push(format!("the GPU device was lost ({m}; out of memory, or a fault or timeout of the driver?)"));
        }
        parts.extend(r.first.iter().map(|e| format!("the GPU reported an error: {e}")));
        if r.more > 0 {
            parts.push(format!("and {} more errors", r.more));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}
