//! Datasets written by many processes (`hashfile.spark`): the runtime's
//! `ShardWriter`, `publish_shards` and `discard_generation`, converted.
//! The protocol (sorted records, reports checked before the manifest) is
//! the runtime's (crates/hashfile-runtime/src/dataset/tasks.rs).

use hashfile::import::{ImportOptions, InputFormat};
use hashfile_runtime::dataset::arrow::{self, ArrowStrings};
use hashfile_runtime::dataset::manifest::{Manifest, ShardEntry};
use hashfile_runtime::dataset::{self, ShardWriter as Writer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::errors::IntoPy;
use hashfile_runtime::options::Language;

/// The build options a task was given (the runtime's `shard_task_options`).
fn build_options(given: Option<&Bound<'_, PyDict>>) -> PyResult<hashfile::BuildOptions> {
    hashfile_runtime::options::shard_task_options(&crate::options::given(given)?, Language::Python)
        .py_err()
}

/// `check_build_options(options)`: raises what every task would for
/// `options`, before a job starts them.
#[pyfunction]
#[pyo3(signature = (options=None))]
pub(crate) fn check_build_options(options: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    build_options(options).map(drop)
}

/// The remote options a task was given.
fn remote_options(given: Option<&Bound<'_, PyDict>>) -> PyResult<hashfile_remote::RemoteOptions> {
    hashfile_runtime::options::remote_options(&crate::options::given(given)?).py_err()
}

/// A new generation id for every task of one job.
#[pyfunction]
pub(crate) fn new_generation() -> String {
    dataset::new_generation()
}

/// One shard of a dataset, written by one task.
#[pyclass(module = "hashfile._native")]
pub struct ShardWriter {
    writer: Option<Writer>,
    import: ImportOptions,
}

#[pymethods]
impl ShardWriter {
    #[new]
    #[pyo3(signature = (location, generation, shard, shard_count, key_field, value_field, options=None, remote=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        location: &str,
        generation: &str,
        shard: u32,
        shard_count: u32,
        key_field: String,
        value_field: String,
        options: Option<&Bound<'_, PyDict>>,
        remote: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<ShardWriter> {
        let writer = Writer::create(
            location,
            generation,
            shard,
            shard_count,
            build_options(options)?,
            &remote_options(remote)?,
        )
        .py_err()?;
        let mut import = ImportOptions::new(InputFormat::JsonLines);
        import.key_field = key_field;
        import.value_field = value_field;
        Ok(ShardWriter {
            writer: Some(writer),
            import,
        })
    }

    /// Adds the entries of `lines` (JSON Lines), named `source` in errors;
    /// returns how many. The GIL is released while they are parsed.
    fn add_json_lines(&mut self, py: Python<'_>, lines: &[u8], source: &str) -> PyResult<u64> {
        let import = &self.import;
        let writer = self.writer.as_mut().ok_or_else(finished)?;
        py.detach(|| writer.add_json_lines(lines, source, import))
            .py_err()
    }

    /// Adds the entries of rows `first..first + count` of an Arrow string
    /// array of JSON records (`{"k": key, "v": value}`, one a row), given
    /// as its offsets and data buffers (`dataset::arrow`); returns how many.
    #[pyo3(signature = (offsets, data, first, count, wide, source))]
    #[allow(clippy::too_many_arguments)]
    fn add_arrow_records(
        &mut self,
        py: Python<'_>,
        offsets: &[u8],
        data: &[u8],
        first: usize,
        count: usize,
        wide: bool,
        source: &str,
    ) -> PyResult<u64> {
        let records = ArrowStrings::new(offsets, data, first, count, wide).py_err()?;
        let import = &self.import;
        let writer = self.writer.as_mut().ok_or_else(finished)?;
        py.detach(|| writer.add_json_lines(&arrow::json_lines(&records), source, import))
            .py_err()
    }

    /// Entries added.
    fn __len__(&self) -> PyResult<usize> {
        Ok(self.writer.as_ref().ok_or_else(finished)?.len())
    }

    /// Builds and publishes the shard; returns its report (a dict of
    /// `file`, `entries`, `bytes`, `checksum`).
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let writer = self.writer.take().ok_or_else(finished)?;
        let entry = py.detach(|| writer.finish()).py_err()?;
        shard_dict(py, &entry)
    }
}

/// The partition of each key of rows `first..first + count` of an Arrow
/// string array (offsets and data buffers, and its validity bitmap or
/// None), as `dataset::arrow::route_keys` gives them: an Arrow int64
/// array's data buffer.
#[pyfunction]
#[pyo3(signature = (offsets, data, validity, first, count, wide, partitions))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn route_arrow_keys<'py>(
    py: Python<'py>,
    offsets: &[u8],
    data: &[u8],
    validity: Option<&[u8]>,
    first: usize,
    count: usize,
    wide: bool,
    partitions: Vec<i64>,
) -> PyResult<Bound<'py, PyBytes>> {
    let keys = ArrowStrings::new(offsets, data, first, count, wide).py_err()?;
    let routed = arrow::route_keys(&keys, validity, &partitions).py_err()?;
    Ok(PyBytes::new(py, &routed))
}

fn finished() -> PyErr {
    PyValueError::new_err("this shard writer has finished")
}

fn shard_dict<'py>(py: Python<'py>, entry: &ShardEntry) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("file", &entry.file)?;
    dict.set_item("entries", entry.entries)?;
    dict.set_item("bytes", entry.bytes)?;
    dict.set_item("checksum", &entry.checksum)?;
    Ok(dict)
}

fn manifest_dict<'py>(py: Python<'py>, manifest: &Manifest) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("hashfile_dataset", manifest.hashfile_dataset)?;
    dict.set_item("generation", &manifest.generation)?;
    dict.set_item("routing", &manifest.routing)?;
    dict.set_item("entries", manifest.entries)?;
    let shards = PyList::empty(py);
    for shard in &manifest.shards {
        shards.append(shard_dict(py, shard)?)?;
    }
    dict.set_item("shards", shards)?;
    Ok(dict)
}

/// Checks the tasks' reports against the files and publishes the
/// manifest; returns it as a dict.
#[pyfunction]
#[pyo3(signature = (location, generation, shard_count, reports, remote=None, options=None))]
pub(crate) fn publish_shards<'py>(
    py: Python<'py>,
    location: &str,
    generation: &str,
    shard_count: u32,
    reports: Vec<Bound<'py, PyDict>>,
    remote: Option<&Bound<'py, PyDict>>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let publish = hashfile_runtime::options::publish_task_options(
        &crate::options::given(options)?,
        hashfile_runtime::options::Language::Python,
    )
    .py_err()?;
    let item = |d: &Bound<'py, PyDict>, name: &str| -> PyResult<Bound<'py, PyAny>> {
        d.get_item(name)?
            .ok_or_else(|| PyValueError::new_err(format!("a shard report has no {name:?}")))
    };
    let reports = reports
        .iter()
        .map(|d| {
            Ok(ShardEntry {
                file: item(d, "file")?.extract()?,
                entries: item(d, "entries")?.extract()?,
                bytes: item(d, "bytes")?.extract()?,
                checksum: item(d, "checksum")?.extract()?,
                overlays: Vec::new(),
                live: None,
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let remote = remote_options(remote)?;
    let manifest = py
        .detach(|| {
            dataset::publish_shards(
                location,
                generation,
                shard_count,
                reports,
                &remote,
                &publish,
            )
        })
        .py_err()?;
    manifest_dict(py, &manifest)
}

/// Removes what a failed job wrote of `generation`.
#[pyfunction]
#[pyo3(signature = (location, generation, remote=None))]
pub(crate) fn discard_generation(
    py: Python<'_>,
    location: &str,
    generation: &str,
    remote: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let remote = remote_options(remote)?;
    py.detach(|| dataset::discard_generation(location, generation, &remote))
        .py_err()
}
