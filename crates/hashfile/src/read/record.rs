//! `RecordBuf`: a record found, holding the piece of the store it was read
//! from.

use super::source::{self, Piece};
use crate::error::Result;
use crate::format::record::Layout;
use crate::format::{Record, ValueKind};
use std::ops::Range;
use std::sync::Arc;

/// A record a lookup or an iteration found, holding the piece of the store
/// it was read from (borrowed from a memory source, owned or shared
/// otherwise).
pub struct RecordBuf<'a> {
    // Borrowed from a memory source for 'a, or from the buffer `_held`
    // keeps alive: never handed out for longer than `&self` (see `new`).
    key: &'a [u8],
    value: &'a [u8],
    key_utf8: bool,
    kind: ValueKind,
    _held: Option<source::Held>,
}

impl<'a> RecordBuf<'a> {
    /// The record that starts `piece`, which holds all `layout.len` bytes
    /// of it (checked by the caller).
    #[inline]
    pub(super) fn new(piece: Piece<'a>, layout: Layout) -> RecordBuf<'a> {
        // SAFETY: the slices are kept in `key` and `value` beside the holder
        // they may point into, and every accessor hands them out borrowed
        // from `&self`, so none outlives the holder.
        let (bytes, held) = unsafe { piece.into_parts() };
        let (key, value) = layout
            .split(bytes)
            .expect("the caller checked the record's length");
        RecordBuf {
            key,
            value,
            key_utf8: layout.key_utf8,
            kind: layout.kind,
            _held: held,
        }
    }

    /// The record holding only its own bytes: one read from a shared
    /// block (a cache's) copies its key and value out, so that keeping it
    /// does not keep the block (`get_many`'s results).
    #[inline]
    pub(super) fn detached(self) -> RecordBuf<'a> {
        if !matches!(self._held, Some(source::Held::Shared(_))) {
            return self;
        }
        self.into_owned()
    }

    /// The record holding a copy of its bytes, to be kept apart from the
    /// store it was read from (a remote read that may be done again on a
    /// newer store, say).
    ///
    /// A record that already holds its own buffer (read from a file or a
    /// server, or decoded) keeps it: no copy, so a long value read remotely
    /// is held once, not twice, and nothing is allocated here.
    pub fn into_owned(self) -> RecordBuf<'static> {
        if matches!(self._held, Some(source::Held::Owned(_))) {
            // SAFETY: `key` and `value` point into the heap buffer of the
            // `Vec` that `_held` owns (`new` and `owning` make them so for
            // an owned piece), which moves with the record and lives as
            // long as it: they borrow nothing for `'a`, and only the
            // lifetime parameter changes.
            return unsafe { std::mem::transmute::<RecordBuf<'a>, RecordBuf<'static>>(self) };
        }
        let mut bytes = Vec::with_capacity(self.key.len() + self.value.len());
        bytes.extend_from_slice(self.key);
        bytes.extend_from_slice(self.value);
        let (key, value) = (0..self.key.len(), self.key.len()..bytes.len());
        RecordBuf::owning(bytes, key, value, self.key_utf8, self.kind)
    }

    /// A record whose value was decoded (`Reader::decoded`): `bytes` is the
    /// value followed by the key's last `key_len` bytes.
    pub(super) fn from_decoded(bytes: Vec<u8>, key_len: usize, layout: Layout) -> RecordBuf<'a> {
        let split = bytes.len() - key_len;
        let (key, value) = (split..bytes.len(), 0..split);
        RecordBuf::owning(bytes, key, value, layout.key_utf8, layout.kind)
    }

    /// A record whose value was decoded and is kept in the store's cache
    /// (`compress::Decoder::decode_value`): `bytes` is the value followed
    /// by the key's last `key_len` bytes, shared with the cache.
    pub(super) fn from_kept(bytes: Arc<[u8]>, key_len: usize, layout: Layout) -> RecordBuf<'a> {
        let len = bytes.len();
        let split = len - key_len;
        // SAFETY: as in `new`: the slices point into the shared buffer kept
        // beside them in `_held`, which neither moves nor goes while the
        // record lives, and are handed out only borrowed from `&self`.
        let (all, held) = unsafe { Piece::<'a>::shared(bytes, 0..len).into_parts() };
        RecordBuf {
            key: &all[split..],
            value: &all[..split],
            key_utf8: layout.key_utf8,
            kind: layout.kind,
            _held: held,
        }
    }

    /// A record whose key and value are the ranges `key` and `value` of
    /// `bytes`, which it holds.
    pub(super) fn owning(
        bytes: Vec<u8>,
        key: Range<usize>,
        value: Range<usize>,
        key_utf8: bool,
        kind: ValueKind,
    ) -> RecordBuf<'a> {
        // SAFETY: as in `new`: the slices point into the Vec kept beside
        // them in `_held`, whose buffer neither moves nor goes while the
        // record lives, and are handed out only borrowed from `&self`.
        let (all, held) = unsafe { Piece::<'a>::owned(bytes).into_parts() };
        RecordBuf {
            key: &all[key],
            value: &all[value],
            key_utf8,
            kind,
            _held: held,
        }
    }

    /// A record borrowed for `'a` from a source in memory.
    #[inline(always)]
    pub(super) fn borrowed(key: &'a [u8], value: &'a [u8], layout: Layout) -> RecordBuf<'a> {
        RecordBuf {
            key,
            value,
            key_utf8: layout.key_utf8,
            kind: layout.kind,
            _held: None,
        }
    }

    /// The record, borrowed from this holder.
    #[inline]
    pub fn record(&self) -> Record<'_> {
        Record {
            key: self.key,
            key_utf8: self.key_utf8,
            value: self.value,
            kind: self.kind,
        }
    }

    /// The key's bytes.
    #[inline]
    pub fn key(&self) -> &[u8] {
        self.key
    }

    /// The value's bytes: a string's bytes, or one encoded typed value.
    #[inline]
    pub fn value(&self) -> &[u8] {
        self.value
    }

    /// True if the key was added as UTF-8 text.
    #[inline]
    pub fn key_utf8(&self) -> bool {
        self.key_utf8
    }

    /// The value's kind (string encoding, or typed).
    #[inline]
    pub fn kind(&self) -> ValueKind {
        self.kind
    }

    /// The value as an owned tree (`Value::of_record`).
    pub fn decode(&self) -> Result<crate::value::Value> {
        crate::value::Value::of_record(&self.record())
    }
}

impl std::fmt::Debug for RecordBuf<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RecordBuf").field(&self.record()).finish()
    }
}

/// Records are equal when their keys, values and kinds are, wherever their
/// bytes are held.
impl PartialEq for RecordBuf<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.record() == other.record()
    }
}

impl Eq for RecordBuf<'_> {}
