//! `NativeReader`: an open location (a store, a dataset, a URL) through a
//! `hashfile_runtime::Handle`. The Python class `hashfile.Reader` wraps it
//! as a `collections.abc.Mapping`.
//!
//! Local reads hold the GIL: a lookup is a few hundred nanoseconds, less
//! than releasing and taking the GIL back. Reads that may wait on the
//! network (a remote store or dataset) release it, copying the records
//! they found before taking it back.

use std::time::Duration;

use hashfile::RecordBuf;
use hashfile_runtime::{Cursor, Handle, OpenOptions, Refresh, Table};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::decode;
use crate::errors::IntoPy;
use crate::options::{remote_options, Key};

/// Where an iteration is: (shard, byte offset, entry number), as Python
/// holds it between chunks.
type PyCursor = (usize, u64, u64);

#[pyclass(frozen, module = "hashfile._native")]
pub struct NativeReader {
    handle: Handle,
}

/// `open(location, reload, on_change_reopen, remote)`: `reload` is None or
/// the seconds between checks for a newer store; `remote` a dict of
/// remote options, or None.
#[pyfunction]
#[pyo3(signature = (location, reload=None, on_change_reopen=false, remote=None))]
pub fn open(
    py: Python<'_>,
    location: String,
    reload: Option<f64>,
    on_change_reopen: bool,
    remote: Option<&Bound<'_, PyDict>>,
) -> PyResult<NativeReader> {
    let is_remote = hashfile_remote::Location::is_remote(&location);
    if remote.is_some_and(|r| !r.is_empty()) && !is_remote {
        return Err(PyValueError::new_err(format!(
            "remote options are for remote stores (http://, https://, s3://), and {location} is a file"
        )));
    }
    let refresh = match (reload, on_change_reopen) {
        (Some(_), true) => {
            return Err(PyValueError::new_err(format!(
                "reload and on_change='reopen' are two ways to follow new versions; give one ({location})"
            )))
        }
        (Some(seconds), false) => {
            if !(0.0..=86_400.0).contains(&seconds) {
                return Err(PyValueError::new_err(format!(
                    "reload must be None or a number of seconds from 0 to 86400 (a day), not {seconds}"
                )));
            }
            Refresh::Every(Duration::from_secs_f64(seconds))
        }
        (None, true) => Refresh::ReopenOnChange,
        (None, false) => Refresh::Never,
    };
    let options = OpenOptions {
        remote: remote_options(remote)?,
        refresh,
    };
    let handle = if is_remote {
        py.detach(|| hashfile_runtime::open(&location, options))
    } else {
        hashfile_runtime::open(&location, options)
    }
    .py_err()?;
    Ok(NativeReader { handle })
}

impl NativeReader {
    /// Runs `read` on the current table; without the GIL when the table is
    /// remote (so `read` returns owned data).
    fn read<R: Send>(
        &self,
        py: Python<'_>,
        read: impl Fn(&Table) -> hashfile::Result<R> + Send + Sync,
    ) -> PyResult<R> {
        let table = self.handle.current().py_err()?;
        if table.is_remote() {
            let table = table.to_arc();
            py.detach(|| self.handle.read_on(&table, read)).py_err()
        } else {
            self.handle.read_on(&table, read).py_err()
        }
    }
}

fn owned(record: Option<RecordBuf<'_>>) -> Option<RecordBuf<'static>> {
    record.map(RecordBuf::into_owned)
}

#[pymethods]
impl NativeReader {
    /// The value of `key`, or `default` (a stored None is None).
    fn lookup<'py>(
        &self,
        py: Python<'py>,
        key: Key<'_>,
        default: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let k = key.bytes();
        let table = self.handle.current().py_err()?;
        if !table.is_remote() {
            // Decoded in place, holding the GIL; the fault check comes
            // after, so a value read from a page that faulted is dropped.
            let value = match table.get(k).py_err()? {
                Some(r) => decode::value(py, r.kind(), r.value())?,
                None => default,
            };
            self.handle.check_faults(&table).py_err()?;
            return Ok(value);
        }
        // Remote: the store taken above is read without the GIL.
        let table = table.to_arc();
        let found = py
            .detach(|| self.handle.read_on(&table, |t| Ok(owned(t.get(k)?))))
            .py_err()?;
        match found {
            Some(r) => decode::value(py, r.kind(), r.value()),
            None => Ok(default),
        }
    }

    /// Whether `key` is present.
    fn contains(&self, py: Python<'_>, key: Key<'_>) -> PyResult<bool> {
        let k = key.bytes();
        self.read(py, |t| Ok(t.get(k)?.is_some()))
    }

    /// The values of `keys` (None where absent), in order: one batch per
    /// store, the GIL released for a remote one.
    fn get_many<'py>(&self, py: Python<'py>, keys: Vec<Key<'_>>) -> PyResult<Bound<'py, PyList>> {
        let bytes: Vec<&[u8]> = keys.iter().map(Key::bytes).collect();
        let found = self.read(py, |t| {
            Ok(t.get_many(&bytes)?
                .into_iter()
                .map(owned)
                .collect::<Vec<_>>())
        })?;
        let list = PyList::empty(py);
        for record in found {
            match record {
                Some(r) => list.append(decode::value(py, r.kind(), r.value())?)?,
                None => list.append(py.None())?,
            }
        }
        Ok(list)
    }

    /// Entries.
    fn __len__(&self) -> PyResult<usize> {
        Ok(self.handle.current().py_err()?.len() as usize)
    }

    /// Up to `max` entries from `cursor` (shard, offset, index) in stored
    /// order, as (key, value) tuples, and the next cursor (None at the
    /// end). `keys_only` leaves the values undecoded (None).
    #[pyo3(signature = (cursor, max, keys_only=false))]
    fn chunk<'py>(
        &self,
        py: Python<'py>,
        cursor: PyCursor,
        max: usize,
        keys_only: bool,
    ) -> PyResult<(Bound<'py, PyList>, Option<PyCursor>)> {
        let from = Cursor {
            shard: cursor.0,
            offset: cursor.1,
            index: cursor.2,
        };
        let (records, next) = self.read(py, |t| {
            let (records, next) = t.chunk(from, max)?;
            Ok((
                records
                    .into_iter()
                    .map(RecordBuf::into_owned)
                    .collect::<Vec<_>>(),
                next,
            ))
        })?;
        let list = PyList::empty(py);
        for r in &records {
            let k = decode::key(py, r.key_utf8(), r.key())?;
            let v = if keys_only {
                py.None().into_bound(py)
            } else {
                decode::value(py, r.kind(), r.value())?
            };
            list.append(PyTuple::new(py, [k, v])?)?;
        }
        Ok((list, next.map(|c| (c.shard, c.offset, c.index))))
    }

    /// A reader of this one's current table alone, which no refresh swaps:
    /// an iteration reads one store (or one dataset generation) to the end.
    fn pinned(&self) -> PyResult<NativeReader> {
        Ok(NativeReader {
            handle: self.handle.pinned().py_err()?,
        })
    }

    /// Checks every checksum (and, for a dataset, every shard against its
    /// manifest and every key against its shard).
    fn verify(&self, py: Python<'_>) -> PyResult<bool> {
        let table = self.handle.current().py_err()?.to_arc();
        py.detach(|| table.verify()).py_err()?;
        Ok(true)
    }

    /// Sizes and, for a dataset, its generation and shards.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let table = self.handle.current().py_err()?;
        let info = PyDict::new(py);
        match table.as_dataset() {
            Some(dataset) => {
                let manifest = dataset.manifest();
                info.set_item("dataset", dataset.location())?;
                info.set_item("generation", &manifest.generation)?;
                info.set_item("routing", &manifest.routing)?;
                info.set_item("entries", manifest.entries)?;
                info.set_item(
                    "file_bytes",
                    manifest.shards.iter().map(|s| s.bytes).sum::<u64>(),
                )?;
                let shards = PyList::empty(py);
                for (i, s) in manifest.shards.iter().enumerate() {
                    let shard = PyDict::new(py);
                    shard.set_item("file", dataset.shard_location(i))?;
                    shard.set_item("entries", s.entries)?;
                    shard.set_item("bytes", s.bytes)?;
                    shard.set_item("checksum", &s.checksum)?;
                    shard.set_item("open", dataset.opened_shard(i).is_some())?;
                    shards.append(shard)?;
                }
                info.set_item("shards", shards)?;
            }
            None => {
                let store = table.as_store().expect("a store or a dataset");
                let i = store.info();
                info.set_item("entries", i.entries)?;
                info.set_item("file_bytes", i.file_bytes)?;
                info.set_item("mphf_bits_per_key", i.mphf_bits_per_key)?;
                let sections = PyDict::new(py);
                for (name, bytes) in &i.section_bytes {
                    sections.set_item(*name, *bytes)?;
                }
                info.set_item("sections", sections)?;
            }
        }
        info.set_item("remote", table.is_remote())?;
        Ok(info)
    }

    /// How many times a newer store replaced the one read.
    fn generation(&self) -> u64 {
        self.handle.generation()
    }

    /// Why the last newer store a reload found could not be opened.
    fn reload_error(&self) -> Option<String> {
        self.handle.refresh_error()
    }

    /// Opens what the location names now.
    fn reopen(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.handle.reopen()).py_err()
    }

    /// Whether the location names another store than the one read.
    fn is_stale(&self, py: Python<'_>) -> bool {
        py.detach(|| self.handle.is_stale())
    }

    /// Closes for every later call.
    fn close(&self) {
        self.handle.close()
    }

    #[getter]
    fn closed(&self) -> bool {
        self.handle.is_closed()
    }

    #[getter]
    fn location(&self) -> &str {
        self.handle.location()
    }

    #[getter]
    fn remote(&self) -> bool {
        self.handle.is_remote()
    }
}
