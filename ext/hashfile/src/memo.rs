//! A reader's memo (`Hashfile.open(path, memo: N)`): the values of recent
//! lookups, decoded once, deep-frozen, and returned again as the same
//! objects, as a Hash returns its values. A hit is one Hash lookup, with
//! no read of the store and no decoding.
//!
//! - Bounded: at `limit` entries the memo empties and fills again with
//!   the keys looked up next.
//! - Tied to one version of the store: it holds the handle generation its
//!   values were read at; a lookup that finds the generation moved on (a
//!   reload, a reopen) empties it first, and a value is added only if the
//!   memo is still at the generation read before the lookup.
//! - Only keys that are exactly a String or a Symbol. Ruby's Hash hashes
//!   and compares any String by its content, but it copies and freezes
//!   only a plain String key: a subclass's instance, kept as it is, could
//!   be changed by its owner while the memo holds it.
//! - The GVL serializes every call; the Hash is marked with the reader.
//!   A forked child has its own copy (of values of the same mapped file).
//!
//! When it empties is the runtime's rule (`hashfile_runtime::memo`), as
//! for the Python binding's memo; the Hash and its keys are Ruby's.

use hashfile_runtime::memo::{Admit, MemoRules};
use magnus::rb_sys::{AsRawValue, FromRawValue};
use magnus::{gc::Marker, prelude::*, value::Opaque, Error, RHash, Ruby, Value};

pub(crate) struct Memo {
    values: Opaque<RHash>,
    rules: MemoRules,
}

impl Memo {
    pub(crate) fn new(ruby: &Ruby, limit: usize, generation: u64) -> Memo {
        Memo {
            values: Opaque::from(ruby.hash_new()),
            rules: MemoRules::new(limit, generation),
        }
    }

    pub(crate) fn mark(&self, marker: &Marker) {
        marker.mark(self.values);
    }

    /// Whether lookups of `key` may be memoized.
    #[inline]
    pub(crate) fn takes(ruby: &Ruby, key: Value) -> bool {
        // A String with a singleton class has that class here: not taken.
        let class = key.class().as_raw();
        class == ruby.class_string().as_raw() || class == ruby.class_symbol().as_raw()
    }

    /// The value memoized for `key`, one of those `takes` takes.
    #[inline]
    pub(crate) fn get(values: RHash, key: Value) -> Option<Value> {
        // SAFETY: both are live VALUEs. For a key that is exactly a String
        // or a Symbol, Ruby hashes and compares in C: the lookup runs no
        // Ruby code and cannot raise, so it needs no rb_protect (which
        // magnus's `RHash::get` pays on every call).
        let found = unsafe {
            Value::from_raw(rb_sys::rb_hash_lookup2(
                values.as_raw(),
                key.as_raw(),
                rb_sys::Qundef as rb_sys::VALUE,
            ))
        };
        (found.as_raw() != rb_sys::Qundef as rb_sys::VALUE).then_some(found)
    }

    /// The Hash of values read at `generation`, the handle's now; emptied
    /// first if they were read at another.
    #[inline]
    pub(crate) fn at(&self, ruby: &Ruby, generation: u64) -> RHash {
        let values = ruby.get_inner(self.values);
        if self.rules.must_clear(generation) {
            let _ = values.clear();
        }
        values
    }

    /// Adds `value`, read at `generation`, unless the memo moved on to
    /// another generation meanwhile (decoding allocates, which can run
    /// other threads' code); checked again after the insert.
    pub(crate) fn insert(
        &self,
        ruby: &Ruby,
        generation: u64,
        key: Value,
        value: Value,
    ) -> Result<(), Error> {
        let values = ruby.get_inner(self.values);
        match self.rules.admit(generation, values.len()) {
            Admit::No => return Ok(()),
            Admit::AfterClearing => {
                let _ = values.clear();
            }
            Admit::Yes => {}
        }
        values.aset(key, value)?;
        if self.rules.moved_on(generation) {
            let _ = values.clear();
        }
        Ok(())
    }

    /// Empties the memo (a close: nothing of the store stays reachable).
    pub(crate) fn clear(&self, ruby: &Ruby) {
        let _ = ruby.get_inner(self.values).clear();
    }

    pub(crate) fn len(&self, ruby: &Ruby) -> usize {
        ruby.get_inner(self.values).len()
    }

    pub(crate) fn limit(&self) -> usize {
        self.rules.limit()
    }
}
