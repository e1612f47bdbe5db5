//! Stopping a thread that waits on the network, from another thread: the
//! Ruby binding's unblocking function (run on Ctrl-C or `Thread#raise`)
//! fires the [`Interrupt`] of the lookup it is waiting in.
//!
//! A lookup does not take the interrupt as an argument: it goes through the
//! core's `Reader` and `Source`, which know nothing of networks. The caller
//! sets it for the current thread with [`Interrupt::during`], and every
//! fetch on that thread races its requests against it. Dropping the
//! requests closes their connections; nothing is left behind.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// A flag another thread can raise to stop this thread's network waits.
#[derive(Debug, Default)]
pub struct Interrupt {
    fired: AtomicBool,
    notify: Notify,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Interrupt>>> = const { RefCell::new(None) };
}

impl Interrupt {
    /// A new interrupt, not fired.
    pub fn new() -> Arc<Interrupt> {
        Arc::new(Interrupt::default())
    }

    /// Stops the waits of the thread running under this interrupt, now and
    /// for as long as it runs under it. Callable from any thread (it only
    /// sets a flag and wakes a waiter).
    pub fn fire(&self) {
        self.fired.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
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

    /// Completes once the interrupt fires (at once if it has).
    pub(crate) async fn fired(&self) {
        let notified = self.notify.notified();
        tokio::pin!(notified);
        // Registered before the flag is read: a fire between the two still
        // wakes this waiter.
        notified.as_mut().enable();
        if self.is_fired() {
            return;
        }
        notified.await;
    }
}
