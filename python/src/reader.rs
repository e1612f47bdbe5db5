//! `NativeReader`: an open location (a store, a dataset, a URL) through a
//! `hashfile_runtime::Handle`. The Python class `hashfile.Reader`
//! subclasses it together with `collections.abc.Mapping`, so the hot
//! methods (`reader[key]`, `get`, `in`, `len`, `get_many`) are this class's
//! own type slots and methods, called with no Python frame in between.
//!
//! Local reads hold the GIL: a lookup is a few hundred nanoseconds, less
//! than releasing and taking the GIL back. Reads that may wait on the
//! network (a remote store or dataset) release it, copying the records
//! they found before taking it back.

use hashfile_runtime::options::{open_request, Language};
use hashfile_runtime::reads;
use hashfile_runtime::{Cursor, Handle, Info, InfoValue, Table};
use pyo3::exceptions::{PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::decode;
use crate::errors::{no_panic, IntoPy};
use crate::gil::Gil;
use crate::memo::Memo;
use crate::options::Key;

/// Where an iteration is: (shard, byte offset, entry number), as Python
/// holds it between chunks.
type PyCursor = (usize, u64, u64);

#[pyclass(frozen, subclass, module = "hashfile._native")]
pub struct NativeReader {
    handle: Handle,
    /// The values of recent lookups, when opened with `memo`.
    memo: Option<Memo>,
}

impl NativeReader {
    /// Runs `read` on the current table; without the GIL when the table is
    /// remote (so `read` returns owned data).
    fn read<R: Send>(
        &self,
        py: Python<'_>,
        read: impl Fn(&Table) -> hashfile::Result<R> + Send + Sync,
    ) -> PyResult<R> {
        no_panic(py, || self.read_unguarded(py, read))
    }

    fn read_unguarded<R: Send>(
        &self,
        py: Python<'_>,
        read: impl Fn(&Table) -> hashfile::Result<R> + Send + Sync,
    ) -> PyResult<R> {
        let table = self.handle.current().py_err()?;
        reads::read(&Gil::new(py), &self.handle, &table, read)?.at(self)
    }

    /// The value of `key` (a `str` or `bytes`, else None: not found), from
    /// the memo if it holds it.
    #[inline]
    fn find<'py>(&self, key: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let py = key.py();
        let memo = self.memo.as_ref().filter(|_| Memo::takes(key));
        let mut generation = 0;
        if let Some(memo) = memo {
            // The generation before the store: a value read from a newer
            // store than its generation says is dropped by the next
            // lookup, never the reverse. A hit needs no key bytes.
            generation = self.handle.generation();
            self.handle.ensure_open().py_err()?;
            if let Some(value) = memo.at(py, generation).get_item(key)? {
                return Ok(Some(value));
            }
        }
        let Some(k) = Key::of(key.as_borrowed())? else {
            return Ok(None);
        };
        let found = self.lookup(py, k.bytes())?;
        if let (Some(memo), Some(value)) = (memo, &found) {
            memo.insert(py, generation, key, value)?;
        }
        Ok(found)
    }

    /// The value of `key` read from the store.
    fn lookup<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Option<Bound<'py, PyAny>>> {
        no_panic(py, || self.lookup_unguarded(py, key))
    }

    fn lookup_unguarded<'py>(
        &self,
        py: Python<'py>,
        key: &[u8],
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let table = self.handle.current().py_err()?;
        let found = reads::get(&Gil::new(py), &self.handle, &table, key)?.at(self)?;
        let value = found
            .map(|r| decode::value(py, &r.record(), self.handle.location()))
            .transpose()?;
        // Decoded in place when local, holding the GIL; the fault check
        // comes after, so a value read from a page that faulted is dropped.
        self.handle.check_faults(&table).at(self)?;
        Ok(value)
    }

    /// The values of `keys` read from the store: one batch per store.
    fn lookup_many<'py>(
        &self,
        py: Python<'py>,
        keys: &[&[u8]],
    ) -> PyResult<Vec<Option<Bound<'py, PyAny>>>> {
        no_panic(py, || self.lookup_many_unguarded(py, keys))
    }

    fn lookup_many_unguarded<'py>(
        &self,
        py: Python<'py>,
        keys: &[&[u8]],
    ) -> PyResult<Vec<Option<Bound<'py, PyAny>>>> {
        // A batch reads much of the store: mapped, if it opened unmapped.
        let table = self.handle.current_mapped().py_err()?;
        let found = reads::get_many(&Gil::new(py), &self.handle, &table, keys)?.at(self)?;
        let values = found
            .into_iter()
            .map(|r| {
                r.map(|r| decode::value(py, &r.record(), self.handle.location()))
                    .transpose()
            })
            .collect::<PyResult<Vec<_>>>()?;
        // As in `lookup`: decoded in place, then the fault check.
        self.handle.check_faults(&table).at(self)?;
        Ok(values)
    }
}

/// A lookup's error with the location read, as Ruby's names it: the same
/// message in both languages.
trait At<T> {
    fn at(self, reader: &NativeReader) -> PyResult<T>;
}

impl<T> At<T> for hashfile::Result<T> {
    fn at(self, reader: &NativeReader) -> PyResult<T> {
        self.map_err(|e| e.with_path(reader.handle.location().as_ref()))
            .py_err()
    }
}

#[pymethods]
impl NativeReader {
    /// `NativeReader(location, options)`: `options` are the keywords given
    /// to `hashfile.open` (a dict, or None), judged by the runtime's table
    /// (`hashfile_runtime::options::open_request`). With `verify=True`,
    /// every checksum is checked before the reader is handed out.
    #[new]
    #[pyo3(signature = (location, options=None))]
    fn new(
        py: Python<'_>,
        location: String,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<NativeReader> {
        let given = crate::options::given(options)?;
        let request = open_request(&location, &given, Language::Python).py_err()?;
        let open_options = request.options;
        let handle = if hashfile_remote::Location::is_remote(&location) {
            reads::remote(&Gil::new(py), || {
                hashfile_runtime::open(&location, open_options)
            })?
        } else {
            hashfile_runtime::open(&location, open_options)
        }
        .py_err()?;
        let memo = (request.memo > 0)
            .then(|| Memo::new(py, request.memo as usize, handle.generation_now()));
        let reader = NativeReader { handle, memo };
        if request.verify {
            reader.verify(py)?;
        }
        Ok(reader)
    }

    /// `reader[key]`: its value; `KeyError` if absent.
    fn __getitem__<'py>(&self, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        match self.find(key)? {
            Some(value) => Ok(value),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    /// The value of `key`, or `default` (a stored None is None).
    #[pyo3(signature = (key, default=None))]
    fn get<'py>(
        &self,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self.find(key)? {
            Some(value) => value,
            None => default.unwrap_or_else(|| key.py().None().into_bound(key.py())),
        })
    }

    /// `key in reader`.
    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Some(k) = Key::of(key.as_borrowed())? else {
            return Ok(false);
        };
        let k = k.bytes();
        self.read(key.py(), |t| Ok(t.get(k)?.is_some()))
    }

    /// `dig`'s walk: None if `key` is absent or the path finds nothing;
    /// else `(steps, value)`, the steps of `path` taken on the stored
    /// bytes and what they ended on (`decode::answer`). Python's `dig`
    /// takes the rest of the path. Where the walk runs is the runtime's
    /// (`reads::dig`), as for Ruby's `dig`.
    fn _dig<'py>(
        &self,
        key: &Bound<'py, PyAny>,
        path: &Bound<'py, PyTuple>,
    ) -> PyResult<Option<(usize, Bound<'py, PyAny>)>> {
        let py = key.py();
        let Some(k) = Key::of(key.as_borrowed())? else {
            return Ok(None);
        };
        let k = k.bytes();
        let steps = decode::Step::of_path(path)?;
        let probes: Vec<_> = steps.iter().map(decode::Step::probe).collect();
        let table = self.handle.current().py_err()?;
        let location = self.handle.location();
        let answered = reads::dig(
            &Gil::new(py),
            &self.handle,
            &table,
            k,
            &probes,
            false,
            |record, walked| decode::answer(py, record, location, walked.as_ref(), probes.len()),
        )?
        .at(self)?;
        // As in `lookup`: an answer read from a page that faulted is dropped.
        self.handle.check_faults(&table).at(self)?;
        Ok(answered.transpose()?.flatten())
    }

    /// The values of `keys` (None where absent), in order: one batch per
    /// store, the GIL released for a remote one; memoized values from the
    /// memo.
    fn get_many<'py>(&self, keys: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let py = keys.py();
        if keys.is_instance_of::<PyString>() || keys.is_instance_of::<PyBytes>() {
            return Err(PyTypeError::new_err(
                "get_many takes an iterable of keys, not one key: get_many([key])",
            ));
        }
        let objects = keys.try_iter()?.collect::<PyResult<Vec<_>>>()?;
        let bytes = objects
            .iter()
            .map(|o| o.as_borrowed().extract::<Key<'_>>().map(|k| k.bytes()))
            .collect::<PyResult<Vec<&[u8]>>>()?;
        let Some(memo) = &self.memo else {
            let values = self.lookup_many(py, &bytes)?;
            return PyList::new(
                py,
                values
                    .into_iter()
                    .map(|v| v.unwrap_or_else(|| py.None().into_bound(py))),
            );
        };
        // As in `find`: the generation first, then the memo, then the store
        // for what the memo lacks.
        let generation = self.handle.generation();
        self.handle.ensure_open().py_err()?;
        let memoized = memo.at(py, generation);
        let mut values = Vec::with_capacity(objects.len());
        let mut missing = Vec::new();
        for (i, object) in objects.iter().enumerate() {
            let hit = if Memo::takes(object) {
                memoized.get_item(object)?
            } else {
                None
            };
            if hit.is_none() {
                missing.push(i);
            }
            values.push(hit);
        }
        let wanted: Vec<&[u8]> = missing.iter().map(|&i| bytes[i]).collect();
        for (i, value) in missing.into_iter().zip(self.lookup_many(py, &wanted)?) {
            if let Some(value) = &value {
                if Memo::takes(&objects[i]) {
                    memo.insert(py, generation, &objects[i], value)?;
                }
            }
            values[i] = value;
        }
        PyList::new(
            py,
            values
                .into_iter()
                .map(|v| v.unwrap_or_else(|| py.None().into_bound(py))),
        )
    }

    /// Entries.
    fn __len__(&self) -> PyResult<usize> {
        Ok(self.handle.current().py_err()?.len() as usize)
    }

    /// Up to `max` entries from `cursor` (shard, offset, index) in stored
    /// order, as (key, value) tuples, and the next cursor (None at the
    /// end). `keys_only` leaves the values undecoded (None).
    #[pyo3(signature = (cursor, max, keys_only=false))]
    fn _chunk<'py>(
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
        no_panic(py, || self.chunk_unguarded(py, from, max, keys_only))
    }

    /// A reader of this one's current table alone, which no refresh swaps:
    /// an iteration reads one store (or one dataset generation) to the end.
    fn _pinned(&self) -> PyResult<NativeReader> {
        Ok(NativeReader {
            handle: self.handle.pinned().py_err()?,
            memo: None,
        })
    }

    /// Checks every checksum (and, for a dataset, every shard against its
    /// manifest and every key against its shard).
    fn verify(&self, py: Python<'_>) -> PyResult<bool> {
        no_panic(py, || {
            let table = self.handle.current_mapped().py_err()?;
            reads::verify(&Gil::new(py), &table)?.at(self)?;
            Ok(true)
        })
    }

    /// Sizes and, for a dataset, its generation and shards.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut info = self.read(py, |table| table.info())?;
        if let Some(memo) = &self.memo {
            info = info.with_memo(memo.len(py), memo.limit());
        }
        info_dict(py, &info)
    }

    /// How many times a newer store replaced the one read.
    #[getter]
    fn generation(&self) -> u64 {
        self.handle.generation()
    }

    /// Why the last newer store a reload found could not be opened.
    #[getter]
    fn reload_error(&self) -> Option<String> {
        self.handle.refresh_error()
    }

    /// Opens what the location names now.
    fn reopen(&self, py: Python<'_>) -> PyResult<()> {
        reads::remote(&Gil::new(py), || self.handle.reopen())?.py_err()
    }

    /// Whether the location names another store than the one read.
    fn stale(&self, py: Python<'_>) -> PyResult<bool> {
        reads::remote(&Gil::new(py), || Ok(self.handle.is_stale()))?.py_err()
    }

    /// Closes for every later call, and empties the memo.
    fn close(&self, py: Python<'_>) {
        self.handle.close();
        if let Some(memo) = &self.memo {
            memo.clear(py);
        }
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

impl NativeReader {
    /// `_chunk`'s work, which `no_panic` guards.
    fn chunk_unguarded<'py>(
        &self,
        py: Python<'py>,
        from: Cursor,
        max: usize,
        keys_only: bool,
    ) -> PyResult<(Bound<'py, PyList>, Option<PyCursor>)> {
        let table = self.handle.current().py_err()?;
        let (records, next) = reads::chunk(&Gil::new(py), &table, from, max)?.at(self)?;
        let list = PyList::empty(py);
        for r in &records {
            let k = decode::key(py, r.key_utf8(), r.key())?;
            let v = if keys_only {
                py.None().into_bound(py)
            } else {
                decode::value(py, &r.record(), self.handle.location())?
            };
            list.append(PyTuple::new(py, [k, v])?)?;
        }
        // As in `lookup`: what a page that faulted held is dropped.
        self.handle.check_faults(&table).at(self)?;
        Ok((list, next.map(|c| (c.shard, c.offset, c.index))))
    }
}

/// The runtime's `info` tree as Python shows it: dicts of str.
fn info_dict<'py>(py: Python<'py>, info: &Info) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (key, value) in &info.0 {
        out.set_item(*key, info_value(py, value)?)?;
    }
    Ok(out)
}

pub(crate) fn info_value<'py>(py: Python<'py>, value: &InfoValue) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        InfoValue::Int(i) => i.into_pyobject(py)?.into_any(),
        InfoValue::Float(f) => f.into_pyobject(py)?.into_any(),
        InfoValue::Text(t) => t.into_pyobject(py)?.into_any(),
        InfoValue::Name(n) => n.into_pyobject(py)?.into_any(),
        InfoValue::Bool(b) => pyo3::types::PyBool::new(py, *b).to_owned().into_any(),
        InfoValue::Nil => py.None().into_bound(py),
        InfoValue::Map(map) => info_dict(py, map)?.into_any(),
        InfoValue::List(items) => PyList::new(
            py,
            items
                .iter()
                .map(|item| info_value(py, item))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
    })
}
