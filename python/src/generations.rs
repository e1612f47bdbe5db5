//! `history(location, options)` and `rollback(location, generation,
//! options)`: the runtime's (`hashfile_runtime::history_calls`), with the
//! GIL released while a remote dataset's files are fetched.

use hashfile_runtime::history_calls;
use hashfile_runtime::options::Language;
use hashfile_runtime::reads;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::IntoPy;
use crate::gil::Gil;

/// The publishes a dataset keeps, newest first: a list of dicts.
#[pyfunction]
#[pyo3(signature = (location, options=None))]
pub(crate) fn history<'py>(
    py: Python<'py>,
    location: String,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let given = crate::options::given(options)?;
    let info = reads::remote(&Gil::new(py), || {
        history_calls::history(&location, &given, Language::Python)
    })?
    .py_err()?;
    crate::reader::info_value(py, &info)
}

/// Makes `generation` (or the newest kept one before the current one)
/// current again: a dict of what was published.
#[pyfunction]
#[pyo3(signature = (location, generation=None, options=None))]
pub(crate) fn rollback<'py>(
    py: Python<'py>,
    location: String,
    generation: Option<String>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let given = crate::options::given(options)?;
    let info = reads::remote(&Gil::new(py), || {
        history_calls::rollback(&location, generation.as_deref(), &given, Language::Python)
    })?
    .py_err()?;
    crate::reader::info_value(py, &info)
}
