//! A reader's memo (`hashfile.open(..., memo=N)`): the values of recent
//! lookups, decoded once and returned again as the same objects, as a
//! `dict` returns its values. A hit is one `dict` lookup on the key object
//! (whose hash Python keeps), with no read of the store and no decoding.
//!
//! - Bounded: at `limit` entries the memo empties and fills again with
//!   the keys looked up next (the hot ones come back at once).
//! - Tied to one version of the store: it holds the handle generation its
//!   values were read at, and a lookup that finds the generation moved on
//!   (a reload, a reopen) empties it first. A value decoded from an older
//!   store is never added under a newer generation (see `insert`).
//! - Only keys that are exactly `str` or `bytes`: a subclass may redefine
//!   `__eq__` and `__hash__`, and must not find another key's value.
//! - Thread-safe through the GIL, which every call here holds; fork-safe
//!   because it is process memory like any `dict` (a child process's
//!   memo is its own copy, of values of the same mapped store).

use hashfile_runtime::memo::{Admit, MemoRules};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

pub(crate) struct Memo {
    values: Py<PyDict>,
    rules: MemoRules,
}

impl Memo {
    pub(crate) fn new(py: Python<'_>, limit: usize, generation: u64) -> Memo {
        Memo {
            values: PyDict::new(py).unbind(),
            rules: MemoRules::new(limit, generation),
        }
    }

    /// Whether lookups of `key` may be memoized: an exact `str` or `bytes`.
    #[inline]
    pub(crate) fn takes(key: &Bound<'_, PyAny>) -> bool {
        key.is_exact_instance_of::<PyString>() || key.is_exact_instance_of::<PyBytes>()
    }

    /// The values read at `generation`, the handle's now; emptied first if
    /// they were read at another.
    #[inline]
    pub(crate) fn at<'py>(&self, py: Python<'py>, generation: u64) -> &Bound<'py, PyDict> {
        let values = self.values.bind(py);
        if self.rules.must_clear(generation) {
            values.clear();
        }
        values
    }

    /// Adds `value`, read at `generation`, unless the memo moved on to
    /// another generation meanwhile (decoding can run Python code, which
    /// can let a thread reload). Checked again after the insert, since
    /// growing the `dict` can run a collection and so other threads too.
    pub(crate) fn insert(
        &self,
        py: Python<'_>,
        generation: u64,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let values = self.values.bind(py);
        match self.rules.admit(generation, values.len()) {
            Admit::No => return Ok(()),
            Admit::AfterClearing => values.clear(),
            Admit::Yes => {}
        }
        values.set_item(key, value)?;
        if self.rules.moved_on(generation) {
            values.clear();
        }
        Ok(())
    }

    /// Empties the memo (a close: nothing of the store stays reachable).
    pub(crate) fn clear(&self, py: Python<'_>) {
        self.values.bind(py).clear();
    }

    pub(crate) fn len(&self, py: Python<'_>) -> usize {
        self.values.bind(py).len()
    }

    pub(crate) fn limit(&self) -> usize {
        self.rules.limit()
    }
}
