//! `build(path, items, shards, options)`: a store (or a dataset of shards)
//! from Python keys and values, each encoded by `encode`; and
//! `build_from(inputs, output, ...)`: from data files, through the core's
//! pipeline, without the GIL.

use std::path::Path;

use hashfile_runtime::options::{build_request, Call, Language};
use hashfile_runtime::{Stopped, Writer};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::encode;
use crate::errors::IntoPy;
use crate::gil::Gil;
use crate::options::Key;

/// Builds `path` from `items` (an iterable of (key, value) pairs): the
/// keyword `options` given to `hashfile.build` (a dict, or None; `shards`
/// makes a dataset in the directory `path`), judged by the runtime's
/// table. Returns the bytes written.
#[pyfunction]
#[pyo3(signature = (path, items, options=None))]
pub(crate) fn build(
    py: Python<'_>,
    path: std::path::PathBuf,
    items: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<u64> {
    let given = crate::options::given(options)?;
    let request = build_request(Call::Build, &given, Language::Python).py_err()?;
    let mut writer = Writer::new(&request).py_err()?;
    for pair in items.try_iter()? {
        let pair = pair?;
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "each item is a (key, value) pair, not {}",
                pair.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        let key: Key<'_> = key.extract()?;
        let value = encode::value(&value, key.bytes())?;
        writer
            .insert_value(key.bytes(), key.is_text(), &value)
            .py_err()?;
    }
    // The pool is taken holding the GIL: no thread forks meanwhile.
    let pool = hashfile_runtime::pool::for_build(None).py_err()?;
    let cancel = hashfile::CancelFlag::new();
    py.detach(|| writer.finish(Path::new(&path), &cancel, &pool))
        .py_err()
}

/// What a spilled build did (`hashfile::SpillStats`): groups, temporary
/// bytes, seeds tried; `hashfile.build_from` makes it a dict.
type Spilled = (u64, u64, u32);

/// `build_from(inputs, output, options, progress)`: imports the files
/// `inputs` (`-` is standard input) and publishes `output`; `options` are
/// the keywords given to `hashfile.build_from` (a dict, or None; `shards`
/// makes `output` a dataset's directory), judged by the runtime's table.
/// Returns (entries, file_bytes, spilled), `spilled` `None` for a build
/// that kept its index in memory.
///
/// The build runs on a thread of its own, on the runtime's build pool
/// (made again in a forked child). The calling thread waits without
/// the GIL (`BuildJob::wait`), taking it back every 20 ms to look for a signal (Ctrl-C) and at
/// each progress report (at most every 0.1 s) to call `progress(entries,
/// bytes_read, bytes_total, phase)`. A signal's exception, or one from
/// `progress`, cancels the build (in any phase, even while it waits for a
/// FIFO's writer) and is raised once the build has stopped and removed its
/// temporary files: nothing is published.
#[pyfunction]
#[pyo3(signature = (inputs, output, options=None, progress=None))]
pub(crate) fn build_from(
    py: Python<'_>,
    inputs: Vec<String>,
    output: std::path::PathBuf,
    options: Option<&Bound<'_, PyDict>>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<(u64, u64, Option<Spilled>)> {
    if let Some(p) = progress.as_ref().filter(|p| !p.is_callable()) {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "progress must be callable, not {}",
            p.get_type().name()?
        )));
    }
    let given = crate::options::given(options)?;
    let request = build_request(Call::BuildFrom, &given, Language::Python).py_err()?;
    let job = hashfile_runtime::start_build_from(&inputs, output, request).py_err()?;
    let waited = job.wait(&Gil::new(py), |p| match &progress {
        Some(callable) => callable
            .call1((p.entries, p.bytes_read, p.bytes_total, p.phase.name()))
            .map(drop),
        None => Ok(()),
    });
    let summary = match waited {
        Ok(result) => result.py_err()?,
        Err(Stopped::Raised(e)) => return Err(e),
        Err(Stopped::Died(_)) => {
            return Err(crate::errors::internal(
                py,
                "the build thread ended without a result (it panicked)",
            ))
        }
    };
    let spilled = summary
        .spilled
        .map(|s| (s.groups, s.temporary_bytes, s.attempts));
    Ok((summary.entries, summary.file_bytes, spilled))
}
