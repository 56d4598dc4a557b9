//! Cancelling a build from another thread, down to the decoders of the files it reads. The window builds
//! a scene on a worker thread and its Cancel button sets a flag ([`crate::engine::BuildProgress::cancel`]);
//! the phases of a build look at it, and so must the decoding of a large mesh or particle file, which
//! runs deep under [`crate::scene::Scene::build`] (a call that takes no flag). So the builder runs under
//! [`scope`], which makes the flag the current thread's, and the decoders ask [`requested`] every few
//! thousand items (a few milliseconds of work) and stop with their `Cancelled` error. Outside a scope
//! (the command line, tests, the fuzzers) nothing is ever cancelled.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

thread_local! {
    /// The flag of the scope the current thread runs in, if any.
    static CURRENT: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Items (vertices, particles, triangles) a decoder handles between two looks at [`requested`].
pub const CHECK_EVERY: usize = 1 << 16;

/// Restores the previous flag when a scope ends, also by a panic.
struct Restore(Option<Arc<AtomicBool>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Runs `work` on this thread with `flag` as the cancel flag that [`requested`] reads (scopes nest: the
/// innermost flag counts), and returns what it returns.
pub fn scope<R>(flag: Arc<AtomicBool>, work: impl FnOnce() -> R) -> R {
    let previous = CURRENT.with(|c| c.borrow_mut().replace(flag));
    let _restore = Restore(previous);
    work()
}

/// Whether the work this thread does was cancelled: the flag of the [`scope`] it runs in is set. False
/// outside a scope.
pub fn requested() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(|f| f.load(Ordering::Relaxed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_makes_its_flag_the_threads_until_it_ends() {
        assert!(!requested(), "nothing is cancelled outside a scope");
        let flag = Arc::new(AtomicBool::new(false));
        let seen = scope(flag.clone(), || {
            let before = requested();
            flag.store(true, Ordering::Relaxed);
            let inner = scope(Arc::new(AtomicBool::new(false)), requested);
            (before, requested(), inner)
        });
        assert_eq!(seen, (false, true, false), "read live; the innermost scope counts");
        assert!(!requested(), "the flag is the scope's only");
        let other = std::thread::spawn(requested);
        assert!(!other.join().expect("thread"), "and the thread's only");
        let caught = std::panic::catch_unwind(|| scope(flag.clone(), || panic!("a decoder's panic")));
        assert!(caught.is_err() && !requested(), "a panic ends the scope too");
    }
}
