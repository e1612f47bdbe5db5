//! The one mapping from the core's errors to Python exceptions: the
//! classes of `hashfile/errors.py`, which mirror the Ruby gem's
//! (`Hashfile::FormatError`, ...), with the same messages.

use hashfile_runtime::error_class::{classify, Attr, Class};
use pyo3::exceptions::{PyMemoryError, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `error` as the Python exception of its kind.
pub(crate) fn to_py(error: hashfile::Error) -> PyErr {
    Python::attach(|py| match convert(py, error) {
        Ok(e) | Err(e) => e,
    })
}

/// The class the runtime decided (`hashfile_runtime::error_class`): one of
/// `hashfile.errors`'s, by name, made with the attributes; or Python's own.
fn convert(py: Python<'_>, error: hashfile::Error) -> PyResult<PyErr> {
    let raised = classify(&error);
    let message = raised.message;
    Ok(match raised.class {
        Class::Argument => PyValueError::new_err(message),
        // Python's own word for a keyword no call takes, or a value of
        // the wrong type.
        Class::Type | Class::UnknownOption => PyTypeError::new_err(message),
        Class::NoMemory => PyMemoryError::new_err(message),
        // OSError(errno, strerror, filename) becomes its subclass
        // (FileNotFoundError, IsADirectoryError, ...), as open() raises.
        Class::Os {
            errno: Some(errno),
            path,
        } => {
            // strerror's text alone, as Python's own OSErrors carry it:
            // Rust's Display adds " (os error N)".
            let text = std::io::Error::from_raw_os_error(errno).to_string();
            let strerror = text
                .rsplit_once(" (os error")
                .map_or(text.as_str(), |(words, _)| words)
                .to_owned();
            PyOSError::new_err((errno, strerror, path))
        }
        Class::Os { errno: None, .. } => PyOSError::new_err(message),
        Class::Own(name) => {
            let kwargs = PyDict::new(py);
            for (key, value) in raised.attributes {
                match value {
                    Attr::Nil => kwargs.set_item(key, py.None())?,
                    Attr::Text(t) => kwargs.set_item(key, t)?,
                    Attr::Int(i) => kwargs.set_item(key, i)?,
                    Attr::Bytes(b) => kwargs.set_item(key, pyo3::types::PyBytes::new(py, &b))?,
                }
            }
            let class = py.import("hashfile.errors")?.getattr(name)?;
            PyErr::from_value(class.call((message,), Some(&kwargs))?)
        }
    })
}

/// A `hashfile.errors.UnsupportedError`: a stored value with no Python
/// form (a Hash as a map key).
pub(crate) fn unsupported(py: Python<'_>, what: &str) -> PyErr {
    match py
        .import("hashfile.errors")
        .and_then(|m| m.getattr("UnsupportedError"))
        .and_then(|c| c.call1((what,)))
    {
        Ok(exception) => PyErr::from_value(exception),
        Err(e) => e,
    }
}

/// A `hashfile.Error` for what should not happen (a panic caught): never a
/// `PanicException` across into Python.
pub(crate) fn internal(py: Python<'_>, what: &str) -> PyErr {
    let message = format!("internal error: {what}");
    match py
        .import("hashfile.errors")
        .and_then(|m| m.getattr("Error"))
        .and_then(|c| c.call1((message.clone(),)))
    {
        Ok(exception) => PyErr::from_value(exception),
        Err(e) => e,
    }
}

/// Runs `call`, a binding's call into Rust, with a panic turned into a
/// `hashfile.Error` ("internal error: ..."): left alone, pyo3 raises its
/// `PanicException`, a `BaseException` that `except Exception` misses.
pub(crate) fn no_panic<T>(py: Python<'_>, call: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)) {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            Err(internal(py, &what))
        }
    }
}

/// `Result<T, hashfile::Error>` as a `PyResult`.
pub(crate) trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for hashfile::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
