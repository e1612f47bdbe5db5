//! How the runtime's reads and builds release the GIL (`reads::Unlock`).
//!
//! Python runs signal handlers only in the main thread, holding the GIL:
//! a read that waits on the network with the GIL released would not see a
//! Ctrl-C until it ended (its timeout, 30 s). So work that can be
//! interrupted runs on a thread of its own, while the calling thread takes
//! the GIL back every 20 ms to let handlers run. One that raises (Ctrl-C's
//! `KeyboardInterrupt`) fires the work's interrupt, which ends the wait
//! within `hashfile_remote::INTERRUPT_POLL`, and is raised after it, as
//! Ruby's unblocking function does for Ruby.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;

use hashfile_runtime::reads::Unlock;
use pyo3::prelude::*;

/// How often the calling thread looks for a signal.
const WAKE_EVERY: Duration = Duration::from_millis(20);

/// The GIL of one call, and the exception a signal handler raised during
/// its work.
pub(crate) struct Gil<'py> {
    py: Python<'py>,
    raised: RefCell<Option<PyErr>>,
}

impl<'py> Gil<'py> {
    pub(crate) fn new(py: Python<'py>) -> Self {
        Gil {
            py,
            raised: RefCell::new(None),
        }
    }
}

impl Unlock for Gil<'_> {
    type Error = PyErr;

    fn unlocked<R: Send>(
        &self,
        interrupt: Option<&AtomicBool>,
        work: impl FnOnce() -> R + Send,
    ) -> PyResult<R> {
        let Some(interrupt) = interrupt else {
            return Ok(self.py.detach(work));
        };
        std::thread::scope(|scope| {
            let (done, finished) = mpsc::channel();
            // In a mutex only to be waited on from the detached closure
            // (a receiver is not Sync); this thread alone waits.
            let finished = Mutex::new(finished);
            let worker = scope.spawn(move || {
                let answer = work();
                let _ = done.send(());
                answer
            });
            loop {
                let wait = || {
                    finished
                        .lock()
                        .map_or(Err(RecvTimeoutError::Disconnected), |f| {
                            f.recv_timeout(WAKE_EVERY)
                        })
                };
                match self.py.detach(wait) {
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    Err(RecvTimeoutError::Timeout) => {}
                }
                if self.raised.borrow().is_none() {
                    if let Err(e) = self.py.check_signals() {
                        *self.raised.borrow_mut() = Some(e);
                        interrupt.store(true, Ordering::SeqCst);
                    }
                }
            }
            worker
                .join()
                .map_err(|_| crate::errors::internal(self.py, "a read panicked on its thread"))
        })
    }

    fn interrupted(&self) -> PyResult<()> {
        match self.raised.borrow_mut().take() {
            Some(e) => Err(e),
            None => self.py.check_signals(),
        }
    }
}
