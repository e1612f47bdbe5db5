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

use hashfile::value::{Container, Cursor, Encoding, Item};
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
            // Exactly one well-formed value (depth and lengths checked)
            // before any object is made.
            hashfile::value::check(bytes).py_err()?;
            item(py, &mut Cursor::new(bytes))
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

fn item<'py>(py: Python<'py>, cursor: &mut Cursor<'_>) -> PyResult<Bound<'py, PyAny>> {
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
        Item::Array(c) => array(py, c)?.into_any(),
        Item::Map(c) => {
            let dict = PyDict::new(py);
            let mut inner = c.cursor();
            for _ in 0..c.len {
                let k = item(py, &mut inner)?;
                // A list is not hashable; an Array key comes back a tuple.
                let k = match k.cast::<PyList>() {
                    Ok(list) => PyTuple::new(py, list.iter())?.into_any(),
                    Err(_) => k,
                };
                let v = item(py, &mut inner)?;
                dict.set_item(k, v)?;
            }
            dict.into_any()
        }
    })
}

fn array<'py>(py: Python<'py>, c: Container<'_>) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    let mut inner = c.cursor();
    for _ in 0..c.len {
        list.append(item(py, &mut inner)?)?;
    }
    Ok(list)
}
