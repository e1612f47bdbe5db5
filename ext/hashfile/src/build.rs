//! `Hashfile._build_from`: builds a store, or a dataset of shards, from
//! input files on a thread of its own, while the calling Ruby thread sleeps without the GVL until a
//! progress report, the end, or an interrupt arrives, and calls the
//! progress callable with each report.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};

use hashfile::pipeline::{Input, Progress, Summary};
use hashfile::CancelFlag;
use magnus::{function, prelude::*, Error, RHash, RModule, Ruby, Value};

use crate::error::to_ruby;
use crate::nogvl::without_gvl;

/// The receiver, lent to the GVL-free wait.
struct Lent<'a>(&'a mpsc::Receiver<Message>);

// SAFETY: rb_nogvl runs its function synchronously on the calling thread, so
// the receiver never actually leaves this thread; `without_gvl` asks for Send
// only to keep Ruby objects out of its closures.
unsafe impl Send for Lent<'_> {}

enum Message {
    Progress(Progress),
    Done(hashfile::Result<Summary>),
}

/// `_build_from(inputs, output, build_options, import_options, threads,
/// progress, shards)`: options are Hashes of the options given (the core's
/// defaults fill in the rest); threads and progress may be nil. With
/// `shards`, `output` is a dataset's directory.
// One parameter per positional argument of the Ruby method, as magnus binds
// them.
#[allow(clippy::too_many_arguments)]
fn build_from(
    ruby: &Ruby,
    inputs: Vec<String>,
    output: String,
    build_opts: RHash,
    import_opts: RHash,
    threads: Option<magnus::Integer>,
    progress: Value,
    shards: Option<u32>,
) -> Result<RHash, Error> {
    let options = crate::options::build_options(ruby, build_opts)?;
    let (format, import) = crate::options::import_options(ruby, import_opts)?;
    let inputs = inputs
        .iter()
        .map(|name| Input::new(name, format, &import))
        .collect::<hashfile::Result<Vec<_>>>()
        .map_err(|e| to_ruby(ruby, e))?;
    let pool = crate::pool::for_build(ruby, threads)?;

    // Raised once Ruby has an exception to raise here (an interrupt, a
    // signal, a raising progress callable): the build then stops soon, in
    // any phase, and publishes nothing.
    let cancel = CancelFlag::new();
    let (tx, rx) = mpsc::channel();
    // Each progress report waits for this thread's answer, so that a raising
    // progress callable or an interrupt cancels the build for certain, even
    // at the last report before publishing. Reports come at most every
    // 100 ms (and at each phase), so the wait costs nothing that matters.
    let (ack_tx, ack_rx) = mpsc::channel::<bool>();
    let worker = {
        let cancel = cancel.clone();
        let output = PathBuf::from(output);
        std::thread::Builder::new()
            .name("hashfile-build".into())
            .spawn(move || {
                let progress_tx = tx.clone();
                let run = move || {
                    let mut report = |p: &Progress| {
                        let go_on = progress_tx.send(Message::Progress(*p)).is_ok()
                            && ack_rx.recv().unwrap_or(false);
                        if go_on {
                            cancel.check()
                        } else {
                            Err(hashfile::Error::Cancelled)
                        }
                    };
                    hashfile_runtime::build_from(
                        &inputs,
                        &output,
                        shards,
                        options,
                        &cancel,
                        &mut report,
                    )
                };
                let result = pool.install(run);
                let _ = tx.send(Message::Done(result));
            })
            .map_err(|e| {
                Error::new(
                    ruby.get_inner(&crate::error::ERROR),
                    format!("cannot start the build thread: {e}"),
                )
            })?
    };

    // Ruby's unblock function only wakes this thread (`wake`); it then asks
    // Ruby whether there is an exception to raise, and cancels the build if
    // so. The first such exception wins; after it we only wait for the
    // build to stop and clean up.
    let wake = AtomicBool::new(false);
    let mut raised: Option<Error> = None;
    loop {
        let lent = Lent(&rx);
        let woken = &wake;
        let wait = move || {
            let lent = lent;
            loop {
                match lent.0.recv_timeout(WAKE_EVERY) {
                    Ok(message) => return Some(Ok(message)),
                    Err(RecvTimeoutError::Disconnected) => return Some(Err(())),
                    Err(RecvTimeoutError::Timeout) if woken.swap(false, Ordering::SeqCst) => {
                        return None
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                }
            }
        };
        let message = match without_gvl(ruby, wait, Some(&wake)) {
            Ok(Some(message)) => message,
            // Woken: hand Ruby its interrupt, which may raise.
            Ok(None) => match ruby.thread_check_ints() {
                Ok(()) => continue,
                Err(e) => {
                    cancel.cancel();
                    raised.get_or_insert(e);
                    continue;
                }
            },
            // An interrupt was pending before the wait.
            Err(e) => {
                cancel.cancel();
                raised.get_or_insert(e);
                continue;
            }
        };
        match message {
            Ok(Message::Progress(p)) => {
                // An interrupt that came with this report is handed to Ruby
                // before the answer, so that the answer to the last report
                // before the rename cancels the build, rather than publish.
                if raised.is_none() {
                    if let Err(e) = ruby.thread_check_ints() {
                        cancel.cancel();
                        raised = Some(e);
                    }
                }
                if raised.is_none() && !progress.is_nil() {
                    let phase = ruby.to_symbol(p.phase.name());
                    if let Err(e) = progress.funcall::<_, _, Value>(
                        "call",
                        (p.entries, p.bytes_read, p.bytes_total, phase),
                    ) {
                        cancel.cancel();
                        raised = Some(e);
                    }
                }
                let _ = ack_tx.send(raised.is_none());
            }
            Ok(Message::Done(result)) => {
                let _ = worker.join();
                if let Some(e) = raised {
                    return Err(e);
                }
                let summary = result.map_err(|e| to_ruby(ruby, e))?;
                let out = ruby.hash_new();
                out.aset(ruby.to_symbol("entries"), summary.entries)?;
                out.aset(ruby.to_symbol("file_bytes"), summary.file_bytes)?;
                return Ok(out);
            }
            Err(()) => {
                // The worker ended without a result: it panicked.
                let error = match worker.join() {
                    Err(panic) => crate::error::internal_error(ruby, &*panic),
                    Ok(()) => Error::new(
                        ruby.get_inner(&crate::error::ERROR),
                        "internal error: the build thread ended without a result",
                    ),
                };
                return Err(raised.unwrap_or(error));
            }
        }
    }
}

/// How often the waiting Ruby thread looks at `wake`.
const WAKE_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// `_check_output(path)`: the file a build would replace for `path` (a
/// symbolic link's target), or the error a build would raise for it (a
/// directory, device, FIFO or socket). For `hashfile build --check`.
fn check_output(ruby: &Ruby, path: String) -> Result<String, Error> {
    hashfile::build::destination(std::path::Path::new(&path))
        .map(|p| p.display().to_string())
        .map_err(|e| to_ruby(ruby, e))
}

pub fn init(module: RModule) -> Result<(), Error> {
    module.define_singleton_method("_build_from", function!(build_from, 7))?;
    module.define_singleton_method("_check_output", function!(check_output, 1))?;
    Ok(())
}
