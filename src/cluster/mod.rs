//! One simulation over several GPUs (issue 16, part 2; Werner 2015's slab decomposition, summarised in
//! docs/background.md section 6). SPMD: every rank runs the same code ([`rank`]) on its own GPU device,
//! owning the particles of one slab along the fluid's longest axis ([`slab`]) plus ghost copies of its
//! neighbours' particles within the halo, and talks to the others only through a [`Transport`]
//! ([`transport`]: threads in one process now; MPI ranks later implement the same trait).
//! With one GPU nothing here runs: the engine steps its [`crate::sim::Simulation`] as before.

pub mod slab;
pub mod transport;

pub use slab::{longest_axis, BorderMove, Slabs};
pub use transport::{Reduce, Side, ThreadTransport, Transport, TransportError};
