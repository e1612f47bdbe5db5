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
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::errors::IntoPy;

/// The value of a record.
pub fn value<'py>(py: Python<'py>, kind: ValueKind, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    match kind {
        ValueKind::Utf8 | ValueKind::Ascii => text(py, bytes),
        ValueKind::Binary => Ok(PyBytes::new(py, bytes).into_any()),
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
        Ok(PyBytes::new(py, bytes).into_any())
    }
}

/// `str` of UTF-8 bytes, or `bytes` if they are not UTF-8.
fn text<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    Ok(match std::str::from_utf8(bytes) {
        Ok(s) => PyString::new(py, s).into_any(),
        Err(_) => PyBytes::new(py, bytes).into_any(),
    })
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
                .call_method1("from_bytes", (PyBytes::new(py, magnitude), "little"))?;
            if negative {
                int.neg()?
            } else {
                int
            }
        }
        Item::Float(f) => f.into_pyobject(py)?.into_any(),
        Item::Str(bytes, Encoding::Binary) => PyBytes::new(py, bytes).into_any(),
        Item::Str(bytes, _) | Item::Symbol(bytes, _) => text(py, bytes)?,
        Item::Custom(bytes) => PyBytes::new(py, bytes).into_any(),
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
