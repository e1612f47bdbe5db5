//! Records to Python objects: string values to `str` (or `bytes` for a
//! binary one), typed values decoded straight from their bytes
//! (the core's `value::walk`), with no intermediate tree.
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
//!
//! Python reads exactly what was stored, or refuses: a container body
//! with more or fewer items than its count is a `FormatError` (the core's
//! checks, which Ruby's decoder makes too), and a Hash whose keys are
//! distinct in Ruby but equal in Python (`1`, `1.0` and `true`; `"a"` and
//! `:a`) is an `UnsupportedError` naming the keys, never a `dict` that
//! silently kept one of them. `dig` walks the stored bytes with Ruby's key
//! equality (the core's `value::dig`), so it reaches each of such keys.

use hashfile::value::{
    self as codec, join_items, walk, Container, Dig, Encoding, Item, Probe, MAX_DEPTH,
};
use std::path::Path;

use hashfile::{Record, ValueKind};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::errors::{to_py, IntoPy};

/// The value of a record of the store at `location` (which damage in
/// it is reported under, with its key).
pub(crate) fn value<'py>(
    py: Python<'py>,
    record: &Record<'_>,
    location: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = record.value;
    match record.kind {
        ValueKind::Utf8 | ValueKind::Ascii => text(py, bytes),
        ValueKind::Binary => new_bytes(py, bytes),
        // One pass, checked as it goes (the core's walk): a damaged value
        // leaves only garbage for Python to collect.
        ValueKind::Typed => walk::value(&mut Objects::at(py, record.key, location), bytes),
        // A kind a newer release added: the reader refuses such a store at
        // open (a required flag), so this is never reached.
        other => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "a value of a kind this release does not know ({other:?})"
        ))),
    }
}

/// A key: `str` if stored as UTF-8 text, else `bytes`.
pub(crate) fn key<'py>(py: Python<'py>, utf8: bool, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
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
pub(crate) fn new_bytes<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
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
    if let Some(text) = crate::strings::short(py, bytes, |s| new_str(py, s)) {
        return text;
    }
    match std::str::from_utf8(bytes) {
        Ok(s) => new_str(py, s),
        Err(_) => new_bytes(py, bytes),
    }
}

/// Builds Python objects from the core's walk, for the record of `key`
/// in the store at `location` (which damage is reported under).
struct Objects<'py, 'a> {
    py: Python<'py>,
    place: Option<(&'a [u8], &'a str)>,
}

impl<'py, 'a> Objects<'py, 'a> {
    fn at(py: Python<'py>, key: &'a [u8], location: &'a str) -> Self {
        Objects {
            py,
            place: Some((key, location)),
        }
    }
}

impl<'py> walk::Build for Objects<'py, '_> {
    type Value = Bound<'py, PyAny>;
    type Error = PyErr;

    fn error(&mut self, e: hashfile::Error) -> PyErr {
        match self.place {
            Some((key, location)) => to_py(e.in_value_for(key).with_path(Path::new(location))),
            None => to_py(e),
        }
    }

    fn leaf(&mut self, item: &Item<'_>) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        Ok(match *item {
            Item::Nil => py.None().into_bound(py),
            Item::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
            Item::Int(i) => i.into_pyobject(py)?.into_any(),
            Item::BigInt {
                negative,
                magnitude,
            } => {
                let int = py
                    .get_type::<PyInt>()
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
            Item::Array(_) | Item::Map(_) => unreachable!("the walk builds containers"),
        })
    }

    fn array(&mut self, _len: u64) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyList::empty(self.py).into_any())
    }

    fn push(&mut self, list: &mut Bound<'py, PyAny>, element: Bound<'py, PyAny>) -> PyResult<()> {
        // SAFETY: `array` made it a list.
        unsafe { list.cast_unchecked::<PyList>() }.append(element)
    }

    fn map(&mut self, _len: u64) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyDict::new(self.py).into_any())
    }

    fn insert(
        &mut self,
        dict: &mut Bound<'py, PyAny>,
        key: Bound<'py, PyAny>,
        value: Bound<'py, PyAny>,
        stored: Container<'_>,
    ) -> PyResult<()> {
        // SAFETY: `map` made it a dict.
        let dict = unsafe { dict.cast_unchecked::<PyDict>() };
        let key = hashable(key)?;
        let before = dict.len();
        dict.set_item(&key, value)?;
        // Equal in Python, distinct as stored (or Ruby would have kept
        // one): the dict replaced a value, which is never done silently.
        if dict.len() == before {
            if let Some(e) = collision(self.py, stored, &key) {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// A dict key of a decoded map key: an Array (a `list`, unhashable) as a
/// `tuple`, the Arrays in it too; a Hash key has no such form.
fn hashable<'py>(key: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(list) = key.cast::<PyList>() {
        let items = list.iter().map(hashable).collect::<PyResult<Vec<_>>>()?;
        return Ok(PyTuple::new(key.py(), items)?.into_any());
    }
    if key.is_instance_of::<PyDict>() {
        return Err(crate::errors::unsupported(
            key.py(),
            "a map has a Hash as a key, which a Python dict cannot hold (a dict is not hashable)",
        ));
    }
    Ok(key)
}

/// The error for a map whose stored keys include several equal to `key`
/// in Python: it names each as stored.
///
/// None if they are one key as stored too (a map may repeat a key): the
/// dict kept it in its first place with its last value, as Ruby's Hash
/// does.
fn collision(py: Python<'_>, c: Container<'_>, key: &Bound<'_, PyAny>) -> Option<PyErr> {
    let mut equal = Vec::new();
    let mut inner = c.cursor();
    let mut find = || -> PyResult<()> {
        for _ in 0..c.len {
            let stored = inner.clone().next_item().py_err()?;
            let k = hashable(walk::next(
                &mut Objects { py, place: None },
                &mut inner,
                MAX_DEPTH,
            )?)?;
            if k.eq(key)? {
                equal.push(stored);
            }
            inner.skip().py_err()?;
        }
        Ok(())
    };
    if let Err(e) = find() {
        return Some(e);
    }
    if equal.iter().all(|k| codec::same_key(k, &equal[0])) {
        return None;
    }
    Some(to_py(hashfile::Error::KeysCollide {
        keys: join_items(&equal),
        language: "Python",
    }))
}

/// A step of `dig`'s path the core's walk compares, copied out of Python.
pub(crate) enum Step {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
}

impl Step {
    /// `step` as a probe: an `int` that fits in 64 bits, a `float`, a
    /// `bool` or a `str`; None for anything else, whose step (and the
    /// rest) Python's indexing takes on the decoded value.
    fn of(step: &Bound<'_, PyAny>) -> PyResult<Option<Step>> {
        // bool first: True is an int in Python, never in the walk.
        if let Ok(b) = step.cast::<PyBool>() {
            return Ok(Some(Step::Bool(b.is_true())));
        }
        if step.is_instance_of::<PyInt>() {
            return Ok(step.extract::<i64>().ok().map(Step::Int));
        }
        if let Ok(f) = step.cast::<PyFloat>() {
            return Ok(Some(Step::Float(f.value())));
        }
        if let Ok(s) = step.cast::<PyString>() {
            return Ok(Some(Step::Text(s.to_str()?.to_owned())));
        }
        Ok(None)
    }

    /// The path's steps the walk takes: up to the first that is not a probe.
    pub(crate) fn of_path(path: &Bound<'_, PyTuple>) -> PyResult<Vec<Step>> {
        let mut steps = Vec::with_capacity(path.len());
        for step in path.iter() {
            match Step::of(&step)? {
                Some(s) => steps.push(s),
                None => break,
            }
        }
        Ok(steps)
    }

    /// The core's probe. A `str` is a `Text` probe: a String or a Symbol,
    /// as the decoded map would have it (both at once: an error).
    pub(crate) fn probe(&self) -> Probe<'_> {
        match self {
            Step::Int(i) => Probe::Int(*i),
            Step::Float(x) => Probe::Float(*x),
            Step::Bool(b) => Probe::Bool(*b),
            Step::Text(s) => Probe::Text(s.as_bytes()),
        }
    }
}

/// `dig`'s answer for a walk of `steps` probes (`None`: the value is not
/// typed, so the whole of it, decoded, for Python to index): None if the
/// path finds nothing; else how many steps the walk took and what it
/// ended on, decoded (`walk::dug`), for Python to take the rest by
/// indexing.
pub(crate) fn answer<'py>(
    py: Python<'py>,
    record: &Record<'_>,
    location: &str,
    walked: Option<&Dig<'_>>,
    steps: usize,
) -> PyResult<Option<(usize, Bound<'py, PyAny>)>> {
    match walked {
        None => Ok(Some((0, value(py, record, location)?))),
        Some(walked) => walk::dug(&mut Objects::at(py, record.key, location), walked, steps),
    }
}
