//! Arguments from Python: keys, and keyword options converted for the
//! runtime's table.

use hashfile_runtime::options::Arg;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// A key: a `str` (looked up by its UTF-8 bytes) or `bytes`, borrowed
/// from the Python object for as long as the call holds it: no copy.
pub(crate) struct Key<'a> {
    bytes: &'a [u8],
    text: bool,
}

impl<'a> Key<'a> {
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    pub(crate) fn is_text(&self) -> bool {
        self.text
    }

    /// `object`'s key, or None if it is neither a `str` nor `bytes` (a
    /// lookup of it finds nothing, as a `dict`'s finds no key of another
    /// type). A `str` with a lone surrogate has no UTF-8 bytes: an error.
    #[inline]
    pub(crate) fn of(object: Borrowed<'a, '_, PyAny>) -> PyResult<Option<Key<'a>>> {
        if object.is_instance_of::<PyString>() {
            let text: &'a str = object.extract()?;
            return Ok(Some(Key {
                bytes: text.as_bytes(),
                text: true,
            }));
        }
        if object.is_instance_of::<PyBytes>() {
            let bytes: &'a [u8] = object.extract()?;
            return Ok(Some(Key { bytes, text: false }));
        }
        Ok(None)
    }
}

impl<'a> FromPyObject<'a, '_> for Key<'a> {
    type Error = PyErr;

    fn extract(object: Borrowed<'a, '_, PyAny>) -> PyResult<Self> {
        Key::of(object)?.ok_or_else(|| {
            let type_name = object
                .get_type()
                .name()
                .map_or_else(|_| "?".to_owned(), |n| n.to_string());
            PyTypeError::new_err(format!("a key is a str or bytes, not {type_name}"))
        })
    }
}

/// The keyword options given to a call (a dict of name to value, or
/// None), each converted into the runtime's `Arg`: the runtime's table
/// (`hashfile_runtime::options`) judges them, as it does every binding's.
pub(crate) fn given(options: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, Arg)>> {
    let Some(options) = options else {
        return Ok(Vec::new());
    };
    options
        .iter()
        .map(|(name, value)| Ok((name.extract()?, arg(&value, 0)?)))
        .collect()
}

/// Containers inside an option nested deeper than this are refused: no
/// option takes more than a list of texts or a dict of headers.
const MAX_NESTING: usize = 4;

/// A Python object as an `Arg`, without judging it.
pub(crate) fn arg(value: &Bound<'_, PyAny>, depth: usize) -> PyResult<Arg> {
    if value.is_none() {
        return Ok(Arg::Nil);
    }
    // A bool is an int in Python: asked first.
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(Arg::Bool(b.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        return Ok(match value.extract::<i128>() {
            Ok(i) => Arg::Int(i),
            Err(_) => Arg::BigInt(value.str()?.to_string()),
        });
    }
    if let Ok(f) = value.cast::<PyFloat>() {
        return Ok(Arg::Float(f.value()));
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(Arg::Text(s.to_str()?.to_owned()));
    }
    if depth < MAX_NESTING {
        if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
            return value
                .try_iter()?
                .map(|item| arg(&item?, depth + 1))
                .collect::<PyResult<_>>()
                .map(Arg::List);
        }
        if let Ok(map) = value.cast::<PyDict>() {
            return map
                .iter()
                .map(|(k, v)| Ok((arg(&k, depth + 1)?, arg(&v, depth + 1)?)))
                .collect::<PyResult<_>>()
                .map(Arg::Map);
        }
    }
    let type_name = value
        .get_type()
        .name()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string());
    Ok(Arg::Object(type_name))
}

/// `_native.OPTIONS`: the runtime's table as Python reads it, for the
/// keyword checks' messages and the type stubs (`python/hashfile/_options.py`
/// is generated from it): `{call: [{"name", "type", "default", "doc"}]}`.
pub(crate) fn table(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    use hashfile_runtime::options::{table, Call, Kind, Language};
    let out = PyDict::new(py);
    for call in Call::ALL {
        let options = PyList::empty(py);
        let specs = call
            .options(Language::Python)
            .chain((call == Call::BuildFrom).then_some(&table::PROGRESS));
        for spec in specs {
            let python_type = match spec.kind {
                Kind::Number => "float",
                Kind::Count { .. } => "int",
                Kind::Name | Kind::Text => "str",
                Kind::Size | Kind::Column => "int | str",
                Kind::Char => "str",
                Kind::Bool => "bool",
                Kind::Seconds { .. } => "float",
                Kind::Headers => "dict[str, str]",
                Kind::TextList => "list[str]",
                Kind::Object => "Callable[[int, int, int | None, str], object]",
            };
            let entry = PyDict::new(py);
            entry.set_item("name", spec.name)?;
            entry.set_item("type", python_type)?;
            entry.set_item("default", python_value(py, &spec.default())?)?;
            entry.set_item("doc", spec.doc)?;
            options.append(entry)?;
        }
        out.set_item(call.name(), options)?;
    }
    Ok(out)
}

fn python_value<'py>(py: Python<'py>, value: &Arg) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Arg::Nil | Arg::Object(_) | Arg::Map(_) => py.None().into_bound(py),
        Arg::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Arg::Int(i) => i.into_pyobject(py)?.into_any(),
        Arg::BigInt(digits) => digits.into_pyobject(py)?.into_any(),
        Arg::Float(f) => f.into_pyobject(py)?.into_any(),
        Arg::Text(t) | Arg::Symbol(t) => t.into_pyobject(py)?.into_any(),
        Arg::List(items) => PyList::new(
            py,
            items
                .iter()
                .map(|item| python_value(py, item))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
    })
}
