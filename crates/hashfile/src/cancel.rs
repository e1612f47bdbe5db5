//! Stopping a build from another thread, or from a signal handler.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};

/// A flag that stops a build soon after it is raised: the build returns
/// `Error::Cancelled`, publishes nothing and removes its temporary file.
/// Clones share one flag. Raising it is one atomic store, so a signal
/// handler or an interpreter's unblock function may do it.
///
/// A build checks it between phases, between buckets as it places keys,
/// every 65,536 pilots it tries for one bucket, and last just before the
/// rename that publishes the store; after that rename it no longer can.
#[derive(Clone, Debug, Default)]
pub struct CancelFlag(Arc<AtomicBool>);

impl CancelFlag {
    /// A flag not raised.
    pub fn new() -> CancelFlag {
        CancelFlag::default()
    }

    /// Raises the flag.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// True once the flag is raised.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Err(Error::Cancelled)` once the flag is raised.
    #[inline]
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::Cancelled)
        } else {
            Ok(())
        }
    }

    /// The flag itself, for code that can only be handed a pointer (an
    /// interpreter's unblock function): storing `true` in it raises it.
    pub fn as_atomic(&self) -> &AtomicBool {
        &self.0
    }
}
