//! Python objects to typed values (`hashfile::value::Value`): the reverse
//! of `decode`, so that a store built here reads the same from Ruby.

use hashfile::value::{MapKeys, Unencodable, Value, MAX_DEPTH};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::errors::to_py;

/// What Python's encoder stores, for [`Unencodable::for_key`]'s message.
const STORES: &str =
    "None, bool, int, float, str, bytes, list, tuple and dict (convert other objects to these first)";

/// `object` as a value; `key` names the entry in errors.
pub(crate) fn value(object: &Bound<'_, PyAny>, key: &[u8]) -> PyResult<Value> {
    encode(object, MAX_DEPTH).map_err(|e| match e {
        Refused::Python(e) => e,
        Refused::Value(refused) => to_py(refused.for_key(key, STORES)),
    })
}

/// Why an object could not be encoded: an exception Python raised, or
/// the core's refusal ([`Unencodable`]: the message every language gives).
enum Refused {
    Python(PyErr),
    Value(Unencodable),
}

impl From<PyErr> for Refused {
    fn from(e: PyErr) -> Self {
        Refused::Python(e)
    }
}

impl Refused {
    /// This refusal one step further out.
    fn inside(self, step: impl FnOnce(Unencodable) -> Unencodable) -> Refused {
        match self {
            Refused::Value(refused) => Refused::Value(step(refused)),
            python => python,
        }
    }
}

/// `object` encoded, with containers allowed `depth_left` levels more.
fn encode(object: &Bound<'_, PyAny>, depth_left: usize) -> Result<Value, Refused> {
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
            .cast_into::<PyBytes>()
            .map_err(PyErr::from)?;
        return Ok(Value::BigInt {
            negative,
            magnitude: bytes.as_bytes().to_vec(),
        });
    }
    if let Ok(f) = object.cast::<PyFloat>() {
        return Ok(Value::Float(f.value()));
    }
    let is_map = object.is_instance_of::<PyDict>();
    let is_list = object.is_instance_of::<PyList>() || object.is_instance_of::<PyTuple>();
    if !is_map && !is_list {
        let class = object.get_type().name()?.to_string();
        return Err(Refused::Value(Unencodable::object(class)));
    }
    let depth = depth_left
        .checked_sub(1)
        .ok_or(Refused::Value(Unencodable::too_deep()))?;
    if let Ok(d) = object.cast::<PyDict>() {
        // A snapshot of the pairs: code run while encoding (a subclass's
        // `__iter__`) may change the dict, which `PyDict::iter` panics on.
        let snapshot = d.items();
        let mut keys = MapKeys::default();
        let mut pairs = Vec::with_capacity(snapshot.len());
        for (pair, item) in snapshot.iter().enumerate() {
            let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
            let k = encode(&k, depth).map_err(|e| e.inside(|u| u.in_key(pair)))?;
            keys.add(&k).map_err(Refused::Value)?;
            let v = encode(&v, depth).map_err(|e| e.inside(|u| u.in_value_of_key(&k)))?;
            pairs.push((k, v));
        }
        return Ok(Value::Map(pairs));
    }
    let mut items = Vec::new();
    for (i, item) in object.try_iter()?.enumerate() {
        items.push(encode(&item?, depth).map_err(|e| e.inside(|u| u.in_element(i)))?);
    }
    Ok(Value::Array(items))
}
