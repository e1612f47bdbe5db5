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

/// What changed from `a` to `b`: calls `each` (or nothing, if None) with
/// each change's JSON line, and returns the summary dict. The comparing
/// runs on the build pool's threads; this thread keeps the GIL to call
/// `each`, and runs signal handlers between blocks of records, so Ctrl-C
/// stops a diff.
#[pyfunction]
#[pyo3(signature = (a, b, options=None, each=None))]
pub(crate) fn diff<'py>(
    py: Python<'py>,
    a: String,
    b: String,
    options: Option<&Bound<'py, PyDict>>,
    each: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    struct Sink<'py> {
        py: Python<'py>,
        each: Option<Bound<'py, PyAny>>,
        raised: Option<PyErr>,
    }
    impl hashfile_runtime::diff::DiffSink for Sink<'_> {
        fn line(&mut self, line: &str) -> hashfile::Result<()> {
            if let Some(each) = &self.each {
                if let Err(e) = each.call1((line,)) {
                    self.raised = Some(e);
                    return Err(hashfile::Error::Cancelled);
                }
            }
            Ok(())
        }
        fn between(&mut self) -> hashfile::Result<()> {
            if let Err(e) = self.py.check_signals() {
                self.raised = Some(e);
                return Err(hashfile::Error::Cancelled);
            }
            Ok(())
        }
    }
    let given = crate::options::given(options)?;
    let mut sink = Sink {
        py,
        each,
        raised: None,
    };
    let result =
        hashfile_runtime::diff_call::diff_call(&a, &b, &given, Language::Python, &mut sink);
    if let Some(e) = sink.raised {
        return Err(e);
    }
    let info = result.py_err()?;
    crate::reader::info_value(py, &info)
}
