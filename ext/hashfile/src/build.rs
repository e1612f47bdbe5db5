//! `Hashfile._build_from`: builds a store, or a dataset of shards, from
//! input files on a thread of its own, while the calling Ruby thread sleeps without the GVL until a
//! progress report, the end, or an interrupt arrives, and calls the
//! progress callable with each report.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use hashfile_runtime::options::{Call, Language};
use hashfile_runtime::BuildEvent;
use magnus::{function, prelude::*, Error, RHash, RModule, Ruby, Value};

use crate::error::to_ruby;
use crate::nogvl::without_gvl;

/// `_build_from(inputs, output, options, progress)`: `options` are the
/// keywords given to `Hashfile.build_from` (a Hash; `shards:` makes
/// `output` a dataset's directory), judged by the runtime's table;
/// `progress` is a callable or nil.
fn build_from(
    ruby: &Ruby,
    inputs: Vec<String>,
    output: String,
    options: RHash,
    progress: Value,
) -> Result<RHash, Error> {
    let given = crate::options::given(ruby, Some(options))?;
    let request = hashfile_runtime::options::build_request(Call::BuildFrom, &given, Language::Ruby)
        .map_err(|e| to_ruby(ruby, e))?;
    // Raised once Ruby has an exception to raise here (an interrupt, a
    // signal, a raising progress callable): the build then stops soon, in
    // any phase, and publishes nothing (hashfile_runtime::BuildJob).
    let job = hashfile_runtime::start_build_from(&inputs, PathBuf::from(output), request)
        .map_err(|e| to_ruby(ruby, e))?;

    // Ruby's unblock function only wakes this thread (`wake`); it then asks
    // Ruby whether there is an exception to raise, and cancels the build if
    // so. The first such exception wins; after it we only wait for the
    // build to stop and clean up.
    let wake = AtomicBool::new(false);
    let mut raised: Option<Error> = None;
    loop {
        let (job, woken) = (&job, &wake);
        let wait = move || loop {
            match job.next(WAKE_EVERY) {
                Some(event) => return Some(event),
                None if woken.swap(false, Ordering::SeqCst) => return None,
                None => {}
            }
        };
        let event = match without_gvl(ruby, wait, Some(&wake)) {
            Ok(Some(event)) => event,
            // Woken: hand Ruby its interrupt, which may raise.
            Ok(None) => match ruby.thread_check_ints() {
                Ok(()) => continue,
                Err(e) => {
                    job.cancel();
                    raised.get_or_insert(e);
                    continue;
                }
            },
            // An interrupt was pending before the wait.
            Err(e) => {
                job.cancel();
                raised.get_or_insert(e);
                continue;
            }
        };
        match event {
            BuildEvent::Progress(p) => {
                // An interrupt that came with this report is handed to Ruby
                // before the answer, so that the answer to the last report
                // before the rename cancels the build, rather than publish.
                if raised.is_none() {
                    if let Err(e) = ruby.thread_check_ints() {
                        job.cancel();
                        raised = Some(e);
                    }
                }
                if raised.is_none() && !progress.is_nil() {
                    let phase = ruby.to_symbol(p.phase.name());
                    if let Err(e) = progress.funcall::<_, _, Value>(
                        "call",
                        (p.entries, p.bytes_read, p.bytes_total, phase),
                    ) {
                        job.cancel();
                        raised = Some(e);
                    }
                }
                job.answer(raised.is_none());
            }
            BuildEvent::Done(result) => {
                if let Some(e) = raised {
                    return Err(e);
                }
                let summary = result.map_err(|e| to_ruby(ruby, e))?;
                let out = ruby.hash_new();
                out.aset(ruby.to_symbol("entries"), summary.entries)?;
                out.aset(ruby.to_symbol("file_bytes"), summary.file_bytes)?;
                if let Some(spilled) = summary.spilled {
                    let stats = ruby.hash_new();
                    stats.aset(ruby.to_symbol("groups"), spilled.groups)?;
                    stats.aset(ruby.to_symbol("temporary_bytes"), spilled.temporary_bytes)?;
                    stats.aset(ruby.to_symbol("attempts"), spilled.attempts)?;
                    out.aset(ruby.to_symbol("spilled"), stats)?;
                }
                return Ok(out);
            }
            BuildEvent::Died(panic) => {
                let error = match panic {
                    Some(panic) => crate::error::internal_error(ruby, &*panic),
                    None => Error::new(
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
    module.define_singleton_method("_build_from", function!(build_from, 4))?;
    module.define_singleton_method("_check_output", function!(check_output, 1))?;
    Ok(())
}
