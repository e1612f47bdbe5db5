//! Records to Python objects: string values to `str` (or `bytes` for a
//! binary one), typed values decoded straight from their bytes
//! (`hashfile::value::Cursor`), with no intermediate tree.
//!
//! | stored (Ruby)              | Python                               |
//! | -------------------------- | ------------------------------------ |
//! | UTF-8 / US-ASCII string    | `str`                                |
//! | binary string              | `bytes`                              |
//! | other encodings            | `str` if the bytes are UTF-8, else `bytes` |
//! | Symbol                     | `str`                                |
//! | Integer (any size)         | `int`                                |
//! | Float                      | `float`                              |
//! | true, false, nil           | `True`, `False`, `None`              |
//! | Array                      | `list`                               |
//! | Hash                       | `dict` (an Array key becomes a `tuple`) |
//! | serializer bytes (custom)  | `bytes`                              |

use hashfile::value::{Container, Cursor, Encoding, Item, MAX_DEPTH};
use hashfile::ValueKind;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::errors::IntoPy;

/// The value of a record.
pub fn value<'py>(py: Python<'py>, kind: ValueKind, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    match kind {
        ValueKind::Utf8 | ValueKind::Ascii => text(py, bytes),
        ValueKind::Binary => new_bytes(py, bytes),
        ValueKind::Typed => {
            // Every length is checked as it is read, the depth here: one
            // pass, with no separate check of the whole value first (a
            // damaged value leaves only garbage for Python to collect).
            let mut cursor = Cursor::new(bytes);
            let value = item(py, &mut cursor, MAX_DEPTH)?;
            if !cursor.is_at_end() {
                return Err(malformed("bytes after the value"));
            }
            Ok(value)
        }
        // A kind a newer release added: the reader refuses such a store at
        // open (a required flag), so this is never reached.
        other => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "a value of a kind this release does not know ({other:?})"
        ))),
    }
}

/// A key: `str` if stored as UTF-8 text, else `bytes`.
pub fn key<'py>(py: Python<'py>, utf8: bool, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    if utf8 {
        text(py, bytes)
    } else {
        new_bytes(py, bytes)
    }
}

/// `bytes` holding `data`, or the `MemoryError` Python raised making it:
/// `PyBytes::new` panics when Python cannot allocate (a value of 50 MB
/// under a memory limit became a `PanicException`, which `except
/// Exception` does not catch).
pub fn new_bytes<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let len = pyo3::ffi::Py_ssize_t::try_from(data.len())
        .map_err(|_| pyo3::exceptions::PyMemoryError::new_err("a value too large for bytes"))?;
    // SAFETY: PyBytes_FromStringAndSize copies `len` bytes from the
    // pointer, which `data` holds; it returns a new reference or NULL with
    // the error set, which `from_owned_ptr_or_err` takes over.
    unsafe {
        let object = pyo3::ffi::PyBytes_FromStringAndSize(data.as_ptr().cast(), len);
        Bound::from_owned_ptr_or_err(py, object)
    }
}

/// `str` of UTF-8 text, or the `MemoryError` Python raised making it
/// (as [`new_bytes`]).
fn new_str<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    let len = pyo3::ffi::Py_ssize_t::try_from(text.len())
        .map_err(|_| pyo3::exceptions::PyMemoryError::new_err("a value too large for str"))?;
    // SAFETY: PyUnicode_FromStringAndSize reads `len` bytes of UTF-8 from
    // the pointer, which `text` holds; it returns a new reference or NULL
    // with the error set, which `from_owned_ptr_or_err` takes over.
    unsafe {
        let object = pyo3::ffi::PyUnicode_FromStringAndSize(text.as_ptr().cast(), len);
        Bound::from_owned_ptr_or_err(py, object)
    }
}

/// `str` of UTF-8 bytes, or `bytes` if they are not UTF-8.
fn text<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    match std::str::from_utf8(bytes) {
        Ok(s) => new_str(py, s),
        Err(_) => new_bytes(py, bytes),
    }
}

/// A damaged typed value, as the core reports one.
fn malformed(what: &str) -> PyErr {
    crate::errors::to_py(hashfile::Error::Corrupt {
        path: None,
        section: "records",
        what: format!("malformed value: {what}"),
    })
}

fn item<'py>(
    py: Python<'py>,
    cursor: &mut Cursor<'_>,
    depth_left: usize,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match cursor.next_item().py_err()? {
        Item::Nil => py.None().into_bound(py),
        Item::Bool(b) => pyo3::types::PyBool::new(py, b).to_owned().into_any(),
        Item::Int(i) => i.into_pyobject(py)?.into_any(),
        Item::BigInt {
            negative,
            magnitude,
        } => {
            let int = py
                .get_type::<pyo3::types::PyInt>()
                .call_method1("from_bytes", (new_bytes(py, magnitude)?, "little"))?;
            if negative {
                int.neg()?
            } else {
                int
            }
        }
        Item::Float(f) => f.into_pyobject(py)?.into_any(),
        Item::Str(bytes, Encoding::Binary) => new_bytes(py, bytes)?,
        Item::Str(bytes, _) | Item::Symbol(bytes, _) => text(py, bytes)?,
        Item::Custom(bytes) => new_bytes(py, bytes)?,
        Item::Array(_) | Item::Map(_) if depth_left == 0 => {
            return Err(malformed(&format!("nested deeper than {MAX_DEPTH}")))
        }
        Item::Array(c) => array(py, c, depth_left - 1)?.into_any(),
        Item::Map(c) => {
            let dict = PyDict::new(py);
            let mut inner = c.cursor();
            for _ in 0..c.len {
                let k = item(py, &mut inner, depth_left - 1)?;
                // A list is not hashable; an Array key comes back a tuple.
                let k = match k.cast::<PyList>() {
                    Ok(list) => PyTuple::new(py, list.iter())?.into_any(),
                    Err(_) => k,
                };
                let v = item(py, &mut inner, depth_left - 1)?;
                dict.set_item(k, v)?;
            }
            dict.into_any()
        }
    })
}

fn array<'py>(
    py: Python<'py>,
    c: Container<'_>,
    depth_left: usize,
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    let mut inner = c.cursor();
    for _ in 0..c.len {
        list.append(item(py, &mut inner, depth_left)?)?;
    }
    Ok(list)
}
