//! Arguments from Python: keys, and the remote options of `open`.

use std::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

/// A key: a `str` (looked up by its UTF-8 bytes) or `bytes`.
pub enum Key<'py> {
    Str(String),
    Bytes(Bound<'py, PyBytes>),
}

impl Key<'_> {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Key::Str(s) => s.as_bytes(),
            Key::Bytes(b) => b.as_bytes(),
        }
    }

    pub fn is_text(&self) -> bool {
        matches!(self, Key::Str(..))
    }
}

impl<'py> FromPyObject<'_, 'py> for Key<'py> {
    type Error = PyErr;

    fn extract(object: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(s) = object.cast::<PyString>() {
            return Ok(Key::Str(s.to_str()?.to_owned()));
        }
        if let Ok(b) = object.cast::<PyBytes>() {
            return Ok(Key::Bytes(b.to_owned()));
        }
        Err(PyTypeError::new_err(format!(
            "a key is a str or bytes, not {}",
            object.get_type().name()?
        )))
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

/// The remote options `open` takes, by name.
pub const REMOTE_OPTIONS: [&str; 11] = [
    "headers",
    "timeout",
    "connect_timeout",
    "retries",
    "concurrency",
    "cache_size",
    "block_size",
    "prefetch_index",
    "http2",
    "s3_endpoint",
    "s3_region",
];

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
