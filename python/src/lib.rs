//! The Python binding: `hashfile._native`, wrapped by the pure-Python
//! package `hashfile` (python/hashfile/). Like the Ruby extension it only
//! converts: arguments to the runtime's calls, records to Python objects,
//! core errors to the exceptions of `hashfile.errors`. What an open store
//! does over time (refresh, swap, datasets) is `hashfile-runtime`'s.
#![warn(unreachable_pub)]

use crate::errors::IntoPy;

use pyo3::prelude::*;

mod build;
mod decode;
mod encode;
mod errors;
mod generations;
mod gil;
mod memo;
mod options;
mod reader;
mod strings;
mod tasks;

/// The shard (`0..shards`) of `key` in a dataset of `shards`, as every
/// release and language routes it (docs/FORMAT.md).
#[pyfunction]
fn shard_of(key: options::Key<'_>, shards: &Bound<'_, PyAny>) -> PyResult<u32> {
    // Judged as the `shards` option is: an int from 1 to MAX_SHARDS, not a bool.
    let n = hashfile_runtime::options::shard_count(&options::arg(shards, 0)?).py_err()?;
    Ok(hashfile::dataset::shard_of(key.bytes(), n))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // A store truncated under a reader reads as an error, not a crash
    // (the core's SIGBUS guard; docs/ERRORS.md).
    hashfile::read::fault::install().map_err(|e| {
        pyo3::exceptions::PyOSError::new_err(format!("cannot install the SIGBUS guard: {e}"))
    })?;
    m.add_function(wrap_pyfunction!(shard_of, m)?)?;
    m.add_function(wrap_pyfunction!(build::build, m)?)?;
    m.add_function(wrap_pyfunction!(build::build_from, m)?)?;
    m.add_function(wrap_pyfunction!(generations::history, m)?)?;
    m.add_function(wrap_pyfunction!(generations::rollback, m)?)?;
    m.add_function(wrap_pyfunction!(generations::diff, m)?)?;
    m.add_function(wrap_pyfunction!(generations::patch, m)?)?;
    m.add_function(wrap_pyfunction!(generations::compact, m)?)?;
    m.add_class::<reader::NativeReader>()?;
    m.add_class::<tasks::ShardWriter>()?;
    m.add_function(wrap_pyfunction!(tasks::new_generation, m)?)?;
    m.add_function(wrap_pyfunction!(tasks::publish_shards, m)?)?;
    m.add_function(wrap_pyfunction!(tasks::route_arrow_keys, m)?)?;
    m.add_function(wrap_pyfunction!(tasks::discard_generation, m)?)?;
    m.add_function(wrap_pyfunction!(tasks::check_build_options, m)?)?;
    m.add("OPTIONS", options::table(m.py())?)?;
    m.add("MAX_SHARDS", hashfile::dataset::MAX_SHARDS)?;
    m.add("MAX_MEMO", hashfile_runtime::MAX_MEMO_ENTRIES)?;
    m.add(
        "DEFAULT_MAX_VALUE_SIZE",
        hashfile::read::DEFAULT_MAX_VALUE_SIZE,
    )?;
    Ok(())
}
