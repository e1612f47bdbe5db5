//! The one mapping from the core's errors to Python exceptions: the
//! classes of `hashfile/errors.py`, which mirror the Ruby gem's
//! (`Hashfile::FormatError`, ...), with the same messages.

use pyo3::exceptions::{PyMemoryError, PyOSError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `error` as the Python exception of its kind.
pub fn to_py(error: hashfile::Error) -> PyErr {
    Python::attach(|py| match convert(py, error) {
        Ok(e) | Err(e) => e,
    })
}

fn convert(py: Python<'_>, error: hashfile::Error) -> PyResult<PyErr> {
    use hashfile::Error as E;
    let message = error.to_string();
    let kwargs = PyDict::new(py);
    let path_of =
        |path: &Option<std::path::PathBuf>| path.as_ref().map(|p| p.display().to_string());
    let class = match &error {
        E::Io { path, source } => {
            if let Some(remote) = hashfile_remote::RemoteError::find(source) {
                use hashfile_remote::RemoteErrorKind as K;
                kwargs.set_item("url", path_of(path))?;
                kwargs.set_item("status", remote.status)?;
                match remote.kind {
                    K::Changed => "StaleError",
                    K::NotFound => "RemoteNotFoundError",
                    K::Denied => "RemoteAccessError",
                    K::Timeout => "RemoteTimeoutError",
                    K::Connection => "RemoteConnectionError",
                    K::Server => "RemoteServerError",
                    K::Protocol => "RemoteProtocolError",
                    K::Invalid => return Ok(PyValueError::new_err(message)),
                    K::OutOfMemory => return Ok(PyMemoryError::new_err(message)),
                    _ => "RemoteError",
                }
            } else {
                // OSError(errno, strerror, filename) becomes its subclass
                // (FileNotFoundError, IsADirectoryError, ...), as open() raises.
                return Ok(match source.raw_os_error() {
                    Some(errno) => PyOSError::new_err((
                        errno,
                        std::io::Error::from_raw_os_error(errno).to_string(),
                        path_of(path),
                    )),
                    None => PyOSError::new_err(message),
                });
            }
        }
        E::Changed { path } => {
            kwargs.set_item("path", path_of(path))?;
            "StaleError"
        }
        E::NotAStore { path, .. } | E::Truncated { path, .. } | E::Corrupt { path, .. } => {
            kwargs.set_item("path", path_of(path))?;
            "FormatError"
        }
        E::Version { path, .. } | E::UnsupportedFeatures { path, .. } => {
            kwargs.set_item("path", path_of(path))?;
            "UnsupportedError"
        }
        E::Checksum { path, section, .. } => {
            kwargs.set_item("path", path_of(path))?;
            kwargs.set_item("section", *section)?;
            "ChecksumError"
        }
        E::DuplicateKey { key, others, .. } => {
            kwargs.set_item("key", pyo3::types::PyBytes::new(py, key))?;
            kwargs.set_item("others", *others)?;
            "DuplicateKeyError"
        }
        E::Parse {
            input, position, ..
        } => {
            let (line, column) = match position {
                hashfile::Position::Line { line, column } => (Some(*line), *column),
                _ => (None, None),
            };
            kwargs.set_item("input", input)?;
            kwargs.set_item("line", line)?;
            kwargs.set_item("column", column)?;
            "ParseError"
        }
        // The store is well formed (Ruby reads it), but the value has no
        // faithful Python form: not a damaged store, a value this binding
        // cannot return, as UnsupportedError says of features.
        E::KeysCollide { .. } => "UnsupportedError",
        E::Limit { .. } | E::ValueTooLarge { .. } => "LimitError",
        // What a store or server claimed could not be allocated: Python's
        // own MemoryError, as bytes of that size would raise.
        E::OutOfMemory { .. } => return Ok(PyMemoryError::new_err(message)),
        E::InvalidOption { .. } => return Ok(PyValueError::new_err(message)),
        // Python's own word for a keyword no call takes, or a value of the
        // wrong type.
        E::UnknownOption { .. } | E::OptionType { .. } => return Ok(PyTypeError::new_err(message)),
        E::Closed { .. } => "ClosedError",
        E::Dataset { path, .. } => {
            kwargs.set_item("path", path_of(path))?;
            "DatasetError"
        }
        E::UnsafeLink { link, owner, .. } => {
            kwargs.set_item("path", link.display().to_string())?;
            kwargs.set_item("owner", *owner)?;
            "UnsafeLinkError"
        }
        _ => "Error",
    };
    let class = py.import("hashfile.errors")?.getattr(class)?;
    let exception = class.call((message,), Some(&kwargs))?;
    Ok(PyErr::from_value(exception))
}

/// A `hashfile.errors.UnsupportedError`: a stored value with no Python
/// form (a Hash as a map key).
pub fn unsupported(py: Python<'_>, what: &str) -> PyErr {
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
pub fn internal(py: Python<'_>, what: &str) -> PyErr {
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
pub fn no_panic<T>(py: Python<'_>, call: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
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
pub trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for hashfile::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
