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

/// Publishes changes over a local dataset as a delta generation: `upserts`
/// (key, value) pairs and `deletes` keys, or the JSON Lines file
/// `changes_path`. A dict of what was published. Values are converted
/// holding the GIL; the patch is written without it.
#[pyfunction]
#[pyo3(signature = (location, upserts=None, deletes=None, changes_path=None, options=None))]
pub(crate) fn patch<'py>(
    py: Python<'py>,
    location: String,
    upserts: Option<&Bound<'py, PyAny>>,
    deletes: Option<&Bound<'py, PyAny>>,
    changes_path: Option<String>,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let given = crate::options::given(options)?;
    let info = match changes_path {
        Some(path) => py.detach(|| {
            hashfile_runtime::patch_calls::patch_file(&location, &path, &given, Language::Python)
        }),
        None => {
            let mut changes = hashfile_runtime::dataset::Patch::new();
            if let Some(upserts) = upserts {
                for pair in upserts.try_iter()? {
                    let pair = pair?;
                    let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract()?;
                    let key: crate::options::Key<'_> = key.extract()?;
                    let value = crate::encode::value(&value, key.bytes())?;
                    changes
                        .upsert_value(key.bytes(), key.is_text(), &value)
                        .py_err()?;
                }
            }
            if let Some(deletes) = deletes {
                for key in deletes.try_iter()? {
                    let key = key?;
                    let key: crate::options::Key<'_> = key.extract()?;
                    changes.delete(key.bytes(), key.is_text());
                }
            }
            py.detach(|| {
                hashfile_runtime::patch_calls::patch(&location, changes, &given, Language::Python)
            })
        }
    }
    .py_err()?;
    crate::reader::info_value(py, &info)
}

/// Folds a local dataset's overlays into new shard files: a dict of what
/// was published.
#[pyfunction]
#[pyo3(signature = (location, options=None))]
pub(crate) fn compact<'py>(
    py: Python<'py>,
    location: String,
    options: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let given = crate::options::given(options)?;
    let info = py
        .detach(|| hashfile_runtime::patch_calls::compact(&location, &given, Language::Python))
        .py_err()?;
    crate::reader::info_value(py, &info)
}
