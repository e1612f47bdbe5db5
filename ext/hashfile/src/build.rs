//! `Hashfile._build_from`: builds a store, or a dataset of shards, from
//! input files on a thread of its own, while the calling Ruby thread waits
//! without the GVL (`BuildJob::wait`), calling the progress callable with
//! each report.

use std::path::PathBuf;

use hashfile_runtime::options::{Call, Language};
use hashfile_runtime::Stopped;
use magnus::{function, prelude::*, Error, RHash, RModule, Ruby, Value};

use crate::error::to_ruby;
use crate::store::Gvl;

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

    let summary = job.wait(&Gvl(ruby), |p| {
        if progress.is_nil() {
            return Ok(());
        }
        let phase = ruby.to_symbol(p.phase.name());
        progress
            .funcall::<_, _, Value>("call", (p.entries, p.bytes_read, p.bytes_total, phase))
            .map(drop)
    });
    let summary = match summary {
        Ok(result) => result.map_err(|e| to_ruby(ruby, e))?,
        Err(Stopped::Raised(e)) => return Err(e),
        Err(Stopped::Died(panic)) => {
            return Err(match panic {
                Some(panic) => crate::error::internal_error(ruby, &*panic),
                None => Error::new(
                    ruby.get_inner(&crate::error::ERROR),
                    "internal error: the build thread ended without a result",
                ),
            })
        }
    };
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
    Ok(out)
}

/// `_check_output(path)`: the file a build would replace for `path` (a
/// symbolic link's target), or the error a build would raise for it (a
/// directory, device, FIFO or socket). For `hashfile build --check`.
fn check_output(ruby: &Ruby, path: String) -> Result<String, Error> {
    hashfile::build::destination(std::path::Path::new(&path))
        .map(|p| p.display().to_string())
        .map_err(|e| to_ruby(ruby, e))
}

pub(crate) fn init(module: RModule) -> Result<(), Error> {
    module.define_singleton_method("_build_from", function!(build_from, 4))?;
    module.define_singleton_method("_check_output", function!(check_output, 1))?;
    Ok(())
}
