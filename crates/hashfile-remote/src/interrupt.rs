//! Stopping a thread that waits on the network, from another thread: the
//! Ruby binding's unblocking function (run on Ctrl-C or `Thread#raise`)
//! fires the [`Interrupt`] of the lookup it is waiting in.
//!
//! A lookup does not take the interrupt as an argument: it goes through the
//! core's `Reader` and `Source`, which know nothing of networks. The caller
//! sets it for the current thread with [`Interrupt::during`], and every
//! fetch on that thread races its requests against it. Dropping the
//! requests closes their connections; nothing is left behind.
//!
//! Firing is one atomic store, so that it is safe in a signal handler
//! (Ruby may call its unblocking function from one); a waiting fetch looks
//! at the flag every [`POLL`], which is how soon it stops.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often a waiting fetch looks whether its interrupt fired.
pub const POLL: Duration = Duration::from_millis(10);

/// A flag another thread can raise to stop this thread's network waits.
#[derive(Debug, Default)]
pub struct Interrupt {
    fired: AtomicBool,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Interrupt>>> = const { RefCell::new(None) };
}

impl Interrupt {
    /// A new interrupt, not fired.
    pub fn new() -> Arc<Interrupt> {
        Arc::new(Interrupt::default())
    }

    /// Stops the waits of the thread running under this interrupt, within
    /// [`POLL`], and every later one under it. Callable from any thread and
    /// from a signal handler: it is one atomic store.
    pub fn fire(&self) {
        self.fired.store(true, Ordering::SeqCst);
    }

    /// The flag [`fire`](Interrupt::fire) sets, for a caller whose own
    /// cancellation hook stores to an `AtomicBool`.
    pub fn flag(&self) -> &AtomicBool {
        &self.fired
    }

    /// Whether [`fire`](Interrupt::fire) was called.
    pub fn is_fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }

    /// Runs `f` with this interrupt as the current thread's: fetches made
    /// inside it stop with [`crate::RemoteErrorKind::Interrupted`] once it
    /// fires.
    pub fn during<R>(self: &Arc<Self>, f: impl FnOnce() -> R) -> R {
        struct Restore(Option<Arc<Interrupt>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CURRENT.with(|current| *current.borrow_mut() = previous);
            }
        }
        let previous = CURRENT.with(|current| current.borrow_mut().replace(Arc::clone(self)));
        let _restore = Restore(previous);
        f()
    }

    /// The current thread's interrupt, if a caller set one.
    pub(crate) fn current() -> Option<Arc<Interrupt>> {
        CURRENT.with(|current| current.borrow().clone())
    }

    /// Completes within [`POLL`] of the interrupt firing (at once if it
    /// has).
    pub(crate) async fn fired(&self) {
        while !self.is_fired() {
            tokio::time::sleep(POLL).await;
        }
    }
}
