//! Arguments from Python: keys, and the remote options of `open`.

use std::time::Duration;

use hashfile::import::{Column, ImportOptions, InputFormat};
use hashfile::{BuildOptions, Compression, IndexKind, MemoryLimit, OnDuplicate};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::errors::IntoPy;

/// A key: a `str` (looked up by its UTF-8 bytes) or `bytes`, borrowed
/// from the Python object for as long as the call holds it: no copy.
pub struct Key<'a> {
    bytes: &'a [u8],
    text: bool,
}

impl<'a> Key<'a> {
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    pub fn is_text(&self) -> bool {
        self.text
    }

    /// `object`'s key, or None if it is neither a `str` nor `bytes` (a
    /// lookup of it finds nothing, as a `dict`'s finds no key of another
    /// type). A `str` with a lone surrogate has no UTF-8 bytes: an error.
    #[inline]
    pub fn of(object: Borrowed<'a, '_, PyAny>) -> PyResult<Option<Key<'a>>> {
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

/// The remote options given to `open` (a dict of name to value), each
/// checked; an unknown name is an error, never ignored.
pub fn remote_options(
    given: Option<&Bound<'_, PyDict>>,
) -> PyResult<hashfile_remote::RemoteOptions> {
    let mut o = hashfile_remote::RemoteOptions::default();
    let Some(given) = given else { return Ok(o) };
    for (name, value) in given.iter() {
        let name: String = name.extract()?;
        match name.as_str() {
            "headers" => {
                let headers = value
                    .cast::<PyDict>()
                    .map_err(|_| PyTypeError::new_err("headers must be a dict of str to str"))?;
                for (k, v) in headers.iter() {
                    o.headers.push((k.extract()?, v.extract()?));
                }
            }
            "timeout" => o.timeout = seconds(&name, &value)?,
            "connect_timeout" => o.connect_timeout = seconds(&name, &value)?,
            "retries" => o.retries = bounded(&name, &value, 100)? as u32,
            "concurrency" => o.concurrency = bounded(&name, &value, 1024)?.max(1) as usize,
            "cache_size" => o.cache.capacity = bounded(&name, &value, u64::MAX)? as usize,
            "block_size" => {
                let len = bounded(&name, &value, 64 << 20)? as usize;
                if len < 512 {
                    return Err(PyValueError::new_err(format!(
                        "block_size must be at least 512 bytes, not {len}"
                    )));
                }
                o.cache.block_len = len;
            }
            "prefetch_index" => o.prefetch_index = value.extract()?,
            "http2" => o.http2_prior_knowledge = value.extract()?,
            "s3_endpoint" => o.s3_endpoint = Some(value.extract()?),
            "s3_region" => o.s3_region = Some(value.extract()?),
            "allow_origins" => {
                o.allow_origins = value.extract().map_err(|_| {
                    PyTypeError::new_err("allow_origins must be a list of URL prefixes (str)")
                })?
            }
            other => {
                return Err(PyTypeError::new_err(format!(
                    "unknown option {other} (expected one of: {})",
                    REMOTE_OPTIONS.join(", ")
                )))
            }
        }
    }
    Ok(o)
}

/// The remote options `open` takes, by name: the names every binding uses.
pub use hashfile_remote::OPTION_NAMES as REMOTE_OPTIONS;

fn seconds(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let s: f64 = value.extract()?;
    if !(s > 0.0 && s <= 86_400.0) {
        return Err(PyValueError::new_err(format!(
            "{name} must be a number of seconds above 0 and at most 86400, not {s}"
        )));
    }
    Ok(Duration::from_secs_f64(s))
}

fn bounded(name: &str, value: &Bound<'_, PyAny>, max: u64) -> PyResult<u64> {
    let n: i128 = value.extract()?;
    u64::try_from(n)
        .ok()
        .filter(|&n| n <= max)
        .ok_or_else(|| PyValueError::new_err(format!("{name} must be from 0 to {max}, not {n}")))
}

/// The build options `build` and `build_from` take, by name.
pub const BUILD_OPTIONS: [&str; 11] = [
    "on_duplicate",
    "index",
    "compression",
    "memory",
    "keys_per_bucket",
    "load_factor",
    "dense_key_fraction",
    "dense_bucket_fraction",
    "hash_seed",
    "seed_block_len",
    "keys_per_part",
];

/// The build options given (`BUILD_OPTIONS`), each checked; an unknown
/// one is an error.
pub fn build_options(given: Option<&Bound<'_, PyDict>>) -> PyResult<BuildOptions> {
    let Some(given) = given else {
        return Ok(BuildOptions::default());
    };
    // The index layout first: its defaults are where the others start.
    let mut o = match given.get_item("index")? {
        Some(value) => {
            let name: String = value.extract()?;
            BuildOptions::for_index(IndexKind::parse(&name).py_err()?)
        }
        None => BuildOptions::default(),
    };
    for (name, value) in given.iter() {
        let name: String = name.extract()?;
        match name.as_str() {
            "index" => {}
            "on_duplicate" => {
                let policy: String = value.extract()?;
                o.on_duplicate = OnDuplicate::from_name(&policy).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "on_duplicate must be one of {}, not {policy:?}",
                        OnDuplicate::NAMES
                            .iter()
                            .map(|(n, _)| *n)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
            }
            "keys_per_bucket" => o.keys_per_bucket = value.extract()?,
            "load_factor" => o.load_factor = value.extract()?,
            "dense_key_fraction" => o.dense_key_fraction = value.extract()?,
            "dense_bucket_fraction" => o.dense_bucket_fraction = value.extract()?,
            "hash_seed" => o.hash_seed = value.extract()?,
            "seed_block_len" => o.seed_block_len = value.extract()?,
            "keys_per_part" => o.keys_per_part = value.extract()?,
            "compression" => {
                let name: String = value.extract()?;
                o.compression = Compression::parse(&name).py_err()?;
            }
            "memory" => {
                o.memory = match value.extract::<i128>() {
                    Ok(bytes) => MemoryLimit::bytes(u64::try_from(bytes).map_err(|_| {
                        PyValueError::new_err(format!(
                            "memory must be a size in bytes, not {bytes}"
                        ))
                    })?),
                    Err(_) => MemoryLimit::parse(&value.extract::<String>()?),
                }
                .py_err()?;
            }
            other => {
                return Err(PyTypeError::new_err(format!(
                    "unknown option {other} (expected one of: {})",
                    BUILD_OPTIONS.join(", ")
                )))
            }
        }
    }
    o.validate().py_err()?;
    Ok(o)
}

/// The importer options given (`format` and `hashfile::import::OPTION_FORMATS`),
/// each recorded as given so that one the input's format would ignore is
/// refused (`ImportOptions::check_given`).
pub fn import_options(
    given: Option<&Bound<'_, PyDict>>,
) -> PyResult<(Option<InputFormat>, ImportOptions)> {
    let mut format = None;
    let mut o = ImportOptions::new(InputFormat::JsonObject);
    let Some(given) = given else {
        return Ok((format, o));
    };
    for (name, value) in given.iter() {
        let name: String = name.extract()?;
        if value.is_none() {
            continue;
        }
        match name.as_str() {
            "format" => {
                let named: String = value.extract()?;
                format = Some(InputFormat::from_name(&named).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "unknown format {named:?}; expected one of: {}",
                        InputFormat::names_list()
                    ))
                })?);
            }
            "key_column" => o.key_column = column(&name, &value)?,
            "value_column" => o.value_column = column(&name, &value)?,
            "header" => o.header = value.extract()?,
            "quote" => o.quote = value.extract()?,
            "col_sep" => o.col_sep = Some(character(&name, &value)?),
            "comment" => o.comment = Some(character(&name, &value)?),
            "key_field" => o.key_field = value.extract()?,
            "value_field" => o.value_field = value.extract()?,
            "records_at" => o.records_at = Some(value.extract()?),
            other => {
                return Err(PyTypeError::new_err(format!(
                    "unknown option {other} (expected one of: format, {})",
                    hashfile::import::OPTION_FORMATS.map(|(n, ..)| n).join(", ")
                )))
            }
        }
        if let Some((known, ..)) = hashfile::import::OPTION_FORMATS
            .iter()
            .find(|(known, ..)| *known == name)
        {
            o.given.push(known);
        }
    }
    Ok((format, o))
}

/// A CSV/TSV column: a header name or a 0-based index.
fn column(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Column> {
    if let Ok(i) = value.extract::<i128>() {
        return usize::try_from(i).map(Column::Index).map_err(|_| {
            PyValueError::new_err(format!(
                "{name} must be a column name or a 0-based index, got {i}"
            ))
        });
    }
    Ok(Column::Name(value.extract()?))
}

/// One ASCII character.
fn character(name: &str, value: &Bound<'_, PyAny>) -> PyResult<u8> {
    let s: String = value.extract()?;
    match s.as_bytes() {
        [c] if c.is_ascii() => Ok(*c),
        _ => Err(PyValueError::new_err(format!(
            "{name} must be one ASCII character, got {s:?}"
        ))),
    }
}
