//! `build(path, items, shards, options)`: a store (or a dataset of shards)
//! from Python keys and values, each encoded by `encode`.

use std::path::Path;

use hashfile::{BuildOptions, Builder, OnDuplicate};
use hashfile_runtime::dataset::DatasetBuilder;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::encode;
use crate::errors::IntoPy;
use crate::options::Key;

/// Builds `path` from `items` (an iterable of (key, value) pairs), or a
/// dataset of `shards` in the directory `path`. Returns the bytes written.
#[pyfunction]
#[pyo3(signature = (path, items, shards=None, options=None))]
pub fn build(
    py: Python<'_>,
    path: std::path::PathBuf,
    items: &Bound<'_, PyAny>,
    shards: Option<u32>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<u64> {
    let options = build_options(options)?;
    enum Target {
        One(Builder),
        Sharded(DatasetBuilder),
    }
    let mut target = match shards {
        None => Target::One(Builder::new(options).py_err()?),
        Some(n) => Target::Sharded(DatasetBuilder::new(n, options).py_err()?),
    };
    for pair in items.try_iter()? {
        let pair = pair?;
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "each item is a (key, value) pair, not {}",
                pair.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        let key: Key<'_> = key.extract()?;
        let value = encode::value(&value, key.bytes())?;
        let builder = match &mut target {
            Target::One(b) => b,
            Target::Sharded(d) => d.builder_for(key.bytes()),
        };
        builder
            .insert_value(key.bytes(), key.is_text(), &value)
            .py_err()?;
    }
    py.detach(|| match &mut target {
        Target::One(b) => b.write_file(Path::new(&path)),
        Target::Sharded(d) => d
            .write(Path::new(&path))
            .map(|m| m.shards.iter().map(|s| s.bytes).sum()),
    })
    .py_err()
}

/// The build options given (`on_duplicate`, `keys_per_bucket`,
/// `load_factor`, `hash_seed`, `keys_per_part`); an unknown one is an
/// error.
fn build_options(given: Option<&Bound<'_, PyDict>>) -> PyResult<BuildOptions> {
    let mut o = BuildOptions::default();
    let Some(given) = given else { return Ok(o) };
    for (name, value) in given.iter() {
        let name: String = name.extract()?;
        match name.as_str() {
            "on_duplicate" => {
                let policy: String = value.extract()?;
                o.on_duplicate = OnDuplicate::from_name(&policy).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "on_duplicate must be one of {}, not {policy:?}",
                        OnDuplicate::NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                    ))
                })?;
            }
            "keys_per_bucket" => o.keys_per_bucket = value.extract()?,
            "load_factor" => o.load_factor = value.extract()?,
            "hash_seed" => o.hash_seed = value.extract()?,
            "keys_per_part" => o.keys_per_part = value.extract()?,
            other => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "unknown option {other} (expected one of: on_duplicate, keys_per_bucket, load_factor, hash_seed, keys_per_part)"
                )))
            }
        }
    }
    o.validate().py_err()?;
    Ok(o)
}
