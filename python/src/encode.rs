//! Python objects to typed values (`hashfile::value::Value`): the reverse
//! of `decode`, so that a store built here reads the same from Ruby.

use hashfile::value::{Value, MAX_DEPTH};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// `object` as a value; `key` names the entry in errors.
pub(crate) fn value(object: &Bound<'_, PyAny>, key: &[u8]) -> PyResult<Value> {
    let mut path = Vec::new();
    encode(object, key, &mut path)
}

fn encode(object: &Bound<'_, PyAny>, key: &[u8], path: &mut Vec<String>) -> PyResult<Value> {
    if path.len() > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "the value of key {} nests deeper than {MAX_DEPTH} at {}",
            hashfile::DisplayBytes(key),
            path.join(".")
        )));
    }
    if object.is_none() {
        return Ok(Value::Nil);
    }
    // bool before int: True is an int too.
    if let Ok(b) = object.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(s) = object.cast::<PyString>() {
        return Ok(Value::str(s.to_str()?));
    }
    if let Ok(b) = object.cast::<PyBytes>() {
        return Ok(Value::Str(b.as_bytes().to_vec(), Some("ASCII-8BIT".into())));
    }
    if let Ok(i) = object.cast::<PyInt>() {
        if let Ok(small) = i.extract::<i64>() {
            return Ok(Value::Int(small));
        }
        let negative = i.lt(0)?;
        let magnitude = i.abs()?;
        let bits: u64 = magnitude.call_method0("bit_length")?.extract()?;
        let bytes = magnitude
            .call_method1("to_bytes", (bits.div_ceil(8), "little"))?
            .cast_into::<PyBytes>()?;
        return Ok(Value::BigInt {
            negative,
            magnitude: bytes.as_bytes().to_vec(),
        });
    }
    if let Ok(f) = object.cast::<PyFloat>() {
        return Ok(Value::Float(f.value()));
    }
    if let Ok(d) = object.cast::<PyDict>() {
        let mut pairs = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            path.push(k.str()?.to_string());
            let k = encode(&k, key, path)?;
            let v = encode(&v, key, path)?;
            path.pop();
            pairs.push((k, v));
        }
        return Ok(Value::Map(pairs));
    }
    if object.cast::<PyList>().is_ok() || object.cast::<PyTuple>().is_ok() {
        let mut items = Vec::new();
        for (i, item) in object.try_iter()?.enumerate() {
            path.push(i.to_string());
            items.push(encode(&item?, key, path)?);
            path.pop();
        }
        return Ok(Value::Array(items));
    }
    Err(PyTypeError::new_err(format!(
        "the value of key {}{} is a {}, which hashfile does not store (str, bytes, int, float, bool, None, list, tuple and dict are)",
        hashfile::DisplayBytes(key),
        if path.is_empty() { String::new() } else { format!(" at {}", path.join(".")) },
        object.get_type().name()?
    )))
}
