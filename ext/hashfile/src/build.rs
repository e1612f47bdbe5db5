//! `Hashfile._build_from`: builds a store from input files on a thread of
//! its own, while the calling Ruby thread sleeps without the GVL until a
//! progress report or the end arrives (no polling), and calls the progress
//! callable with each report.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use hashfile::pipeline::{self, Input, Phase, Progress, Summary};
use magnus::{function, prelude::*, Error, RHash, RModule, Ruby, Value};

use crate::error::to_ruby;
use crate::nogvl::without_gvl;

/// The receiver, lent to the GVL-free wait.
struct Lent<'a>(&'a mpsc::Receiver<Message>);

// SAFETY: rb_thread_call_without_gvl2 runs its function synchronously on the
// calling thread, so the receiver never actually leaves this thread;
// `without_gvl` asks for Send only to keep Ruby objects out of its closures.
unsafe impl Send for Lent<'_> {}

enum Message {
    Progress(Progress),
    Done(hashfile::Result<Summary>),
}

/// `_build_from(inputs, output, build_options, import_options, threads,
/// progress)`: options are Hashes of the options given (the core's
/// defaults fill in the rest); threads and progress may be nil.
fn build_from(ruby: &Ruby, inputs: Vec<String>, output: String, build_opts: RHash, import_opts: RHash, threads: Option<i64>, progress: Value) -> Result<RHash, Error> {
    let options = crate::options::build_options(ruby, build_opts)?;
    let (format, import) = crate::options::import_options(ruby, import_opts)?;
    let inputs = inputs.iter().map(|name| Input::new(name, format, &import)).collect::<hashfile::Result<Vec<_>>>().map_err(|e| to_ruby(ruby, e))?;
    let threads = threads.map(|n| usize::try_from(n).unwrap_or(0));
    let pool = crate::pool::for_build(ruby, threads)?;

    let cancel = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    // Each progress report waits for this thread's answer, so that a raising
    // progress callable or an interrupt cancels the build for certain, even
    // at the last report before publishing. Reports come at most every
    // 100 ms (and at each phase), so the wait costs nothing that matters.
    let (ack_tx, ack_rx) = mpsc::channel::<bool>();
    let worker = {
        let cancel = Arc::clone(&cancel);
        let output = PathBuf::from(output);
        std::thread::Builder::new()
            .name("hashfile-build".into())
            .spawn(move || {
                let progress_tx = tx.clone();
                let run = move || {
                    pipeline::build_from(&inputs, &output, options, &mut |p| {
                        let go_on = progress_tx.send(Message::Progress(*p)).is_ok() && ack_rx.recv().unwrap_or(false);
                        if go_on && !cancel.load(Ordering::SeqCst) {
                            Ok(())
                        } else {
                            Err(hashfile::Error::Cancelled)
                        }
                    })
                };
                let result = pool.install(run);
                let _ = tx.send(Message::Done(result));
            })
            .map_err(|e| Error::new(ruby.get_inner(&crate::error::ERROR), format!("cannot start the build thread: {e}")))?
    };

    // The first Ruby error (a raising progress callable, an interrupt) wins;
    // after it the build is cancelled and we only wait for it to clean up.
    let mut raised: Option<Error> = None;
    loop {
        let lent = Lent(&rx);
        let message = match without_gvl(ruby, move || { let lent = lent; lent.0.recv() }, Some(&cancel)) {
            Ok(message) => message,
            Err(e) => {
                cancel.store(true, Ordering::SeqCst);
                raised.get_or_insert(e);
                continue;
            }
        };
        match message {
            Ok(Message::Progress(p)) => {
                if raised.is_none() && !progress.is_nil() {
                    let phase = ruby.to_symbol(match p.phase {
                        Phase::Reading => "reading",
                        Phase::Building => "building",
                        Phase::Publishing => "publishing",
                    });
                    if let Err(e) = progress.funcall::<_, _, Value>("call", (p.entries, p.bytes_read, p.bytes_total, phase)) {
                        cancel.store(true, Ordering::SeqCst);
                        raised = Some(e);
                    }
                }
                let _ = ack_tx.send(raised.is_none() && !cancel.load(Ordering::SeqCst));
            }
            Ok(Message::Done(result)) => {
                let _ = worker.join();
                // An interrupt that cancelled the build is raised now.
                if cancel.load(Ordering::SeqCst) && raised.is_none() {
                    ruby.thread_check_ints()?;
                }
                if let Some(e) = raised {
                    return Err(e);
                }
                let summary = result.map_err(|e| to_ruby(ruby, e))?;
                let out = ruby.hash_new();
                out.aset(ruby.to_symbol("entries"), summary.entries)?;
                out.aset(ruby.to_symbol("file_bytes"), summary.file_bytes)?;
                return Ok(out);
            }
            Err(_) => {
                // The worker ended without a result: it panicked.
                let error = match worker.join() {
                    Err(panic) => crate::error::internal_error(ruby, &*panic),
                    Ok(()) => Error::new(ruby.get_inner(&crate::error::ERROR), "internal error: the build thread ended without a result"),
                };
                return Err(raised.unwrap_or(error));
            }
        }
    }
}

pub fn init(module: RModule) -> Result<(), Error> {
    module.define_singleton_method("_build_from", function!(build_from, 6))?;
    Ok(())
}
