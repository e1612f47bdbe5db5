//! A build on a thread of its own, for a binding whose calling thread must
//! stay free: to notice its interpreter's interrupts (Ctrl-C, `Thread#raise`)
//! and to call a progress callback, which may raise.
//!
//! The protocol, once for every binding:
//! - the build sends each progress report and waits for the answer, so an
//!   exception at the last report before publishing cancels the build for
//!   certain (reports come at most every 100 ms and at each phase, so the
//!   wait costs nothing that matters);
//! - the caller waits in slices ([`BuildJob::next`]) without its
//!   interpreter lock, looks for interrupts between them, and answers each
//!   report ([`BuildJob::answer`]); an exception there is a
//!   [`BuildJob::cancel`], after which the build stops soon, in any phase
//!   (even waiting for a FIFO's writer), removes its temporary files and
//!   publishes nothing;
//! - the last event is the build's result, or [`BuildEvent::Died`] if the
//!   thread ended without one (it panicked).
//!
//! [`BuildJob::wait`] is that loop, which every binding runs with its own
//! [`Unlock`] and progress callback.

use std::any::Any;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::Duration;

use hashfile::pipeline::{Progress, Summary};
use hashfile::CancelFlag;

use crate::reads::Unlock;

/// How often a waiting thread takes its interpreter's lock back to look
/// for an interrupt (Ctrl-C, a signal, `Thread#raise`).
const WAKE_EVERY: Duration = Duration::from_millis(20);

/// What a build does on its thread: given the cancel flag and the report
/// callback, build and return the summary (e.g. a call of
/// [`build_from`](crate::build_from), inside a thread pool).
/// The callback is `Send`, so that `run` may hand it to a thread pool.
pub type BuildRun = Box<dyn FnOnce(&CancelFlag, &mut Report) -> hashfile::Result<Summary> + Send>;

/// The report callback a [`BuildRun`] passes to the build.
pub type Report = dyn FnMut(&Progress) -> hashfile::Result<()> + Send;

/// A build running on its own thread.
pub struct BuildJob {
    cancel: CancelFlag,
    // In a mutex only so that the job is `Sync`, to be waited on from a
    // closure the interpreter runs without its lock; one thread waits.
    events: Mutex<Receiver<Message>>,
    answers: Sender<bool>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

/// What [`BuildJob::next`] saw.
pub enum BuildEvent {
    /// A report; the build waits for [`BuildJob::answer`].
    Progress(Progress),
    /// The build ended: published, failed, or cancelled and cleaned up.
    Done(hashfile::Result<Summary>),
    /// The thread ended without a result: it panicked, with this payload.
    Died(Option<Box<dyn Any + Send + 'static>>),
}

/// Why [`BuildJob::wait`] has no build result to give.
pub enum Stopped<E> {
    /// The interpreter raised (an interrupt, the progress callback): the
    /// build was cancelled, and has stopped and cleaned up.
    Raised(E),
    /// The build's thread ended without a result: it panicked, with this
    /// payload.
    Died(Option<Box<dyn Any + Send + 'static>>),
}

enum Message {
    Progress(Progress),
    Done(hashfile::Result<Summary>),
}

impl BuildJob {
    /// Starts `run` on a thread named `hashfile-build`.
    pub fn start(run: BuildRun) -> std::io::Result<BuildJob> {
        let cancel = CancelFlag::new();
        let (tx, events) = mpsc::channel();
        let (answers, answer_rx) = mpsc::channel::<bool>();
        let worker = {
            let cancel = cancel.clone();
            std::thread::Builder::new()
                .name("hashfile-build".into())
                .spawn(move || {
                    let progress_tx = tx.clone();
                    let reporting = cancel.clone();
                    let mut report = move |p: &Progress| {
                        let go_on = progress_tx.send(Message::Progress(*p)).is_ok()
                            && answer_rx.recv().unwrap_or(false);
                        if go_on {
                            reporting.check()
                        } else {
                            Err(hashfile::Error::Cancelled)
                        }
                    };
                    let result = run(&cancel, &mut report);
                    let _ = tx.send(Message::Done(result));
                })?
        };
        Ok(BuildJob {
            cancel,
            events: Mutex::new(events),
            answers,
            worker: Mutex::new(Some(worker)),
        })
    }

    /// The next event, or None if none came within `timeout`. After `Done`
    /// or `Died` the thread has ended.
    pub fn next(&self, timeout: Duration) -> Option<BuildEvent> {
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        match events.recv_timeout(timeout) {
            Err(RecvTimeoutError::Timeout) => None,
            Ok(Message::Progress(p)) => Some(BuildEvent::Progress(p)),
            Ok(Message::Done(result)) => {
                // The thread sent its result: all that is left of it is
                // to return, so the join neither waits nor fails.
                let _ = self.join();
                Some(BuildEvent::Done(result))
            }
            Err(RecvTimeoutError::Disconnected) => Some(BuildEvent::Died(self.join().err())),
        }
    }

    /// Answers the report the build waits on: go on, or stop (as a cancel).
    pub fn answer(&self, go_on: bool) {
        let _ = self.answers.send(go_on);
    }

    /// Stops the build soon, in any phase; it publishes nothing.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Waits for the build's end without the interpreter's lock, taking it
    /// back every 20 ms to look for an interrupt and at each report to
    /// call `progress`. The first exception (an interrupt's, or one from
    /// `progress`) cancels the build; it is given back once the build has
    /// stopped and removed its temporary files. An interrupt that came
    /// with a report is looked for before the answer, so that the answer
    /// to the last report before publishing cancels the build; one that
    /// came with the result is left to the interpreter (the build is over).
    pub fn wait<U: Unlock>(
        &self,
        unlock: &U,
        mut progress: impl FnMut(&Progress) -> Result<(), U::Error>,
    ) -> Result<hashfile::Result<Summary>, Stopped<U::Error>> {
        let mut raised: Option<U::Error> = None;
        // The interpreter's request to stop ends the wait soon anyway.
        let woken = std::sync::atomic::AtomicBool::new(false);
        loop {
            let event = match unlock.unlocked(Some(&woken), || self.next(WAKE_EVERY)) {
                Ok(event) => event,
                // An interrupt was pending before the wait.
                Err(e) => {
                    self.cancel();
                    raised.get_or_insert(e);
                    continue;
                }
            };
            // Interrupts are looked for while the build runs, never at its
            // end: one that comes with the result stays pending for the
            // interpreter to raise after the call returns, as the build has
            // published (or failed) already.
            if matches!(event, None | Some(BuildEvent::Progress(_))) && raised.is_none() {
                if let Err(e) = unlock.interrupted() {
                    self.cancel();
                    raised = Some(e);
                }
            }
            match event {
                None => {}
                Some(BuildEvent::Progress(p)) => {
                    if raised.is_none() {
                        if let Err(e) = progress(&p) {
                            self.cancel();
                            raised = Some(e);
                        }
                    }
                    self.answer(raised.is_none());
                }
                Some(BuildEvent::Done(result)) => {
                    return match raised {
                        Some(e) => Err(Stopped::Raised(e)),
                        None => Ok(result),
                    }
                }
                Some(BuildEvent::Died(panic)) => {
                    return Err(raised.map_or(Stopped::Died(panic), Stopped::Raised))
                }
            }
        }
    }

    fn join(&self) -> Result<(), Box<dyn Any + Send + 'static>> {
        let worker = self.worker.lock().unwrap_or_else(|e| e.into_inner()).take();
        worker.map_or(Ok(()), JoinHandle::join)
    }
}

impl Drop for BuildJob {
    /// A job dropped before its result (a binding that returned early)
    /// stops its build: nothing is published behind the caller's back.
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}
