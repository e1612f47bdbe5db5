//! Typed values between Ruby objects and the core's value codec
//! (`hashfile::value`): encoding for builds, decoding for lookups, and
//! `dig`, which hands the core's path walk probes made from Ruby keys.
//! Decoding builds Ruby objects straight from the bytes, with no
//! intermediate tree.
//!
//! Ruby objects are made with the C API directly: it is the hot path of
//! every typed lookup. Objects under construction live in locals of the
//! recursive calls, where Ruby's conservative stack scan sees them; no Ruby
//! object is kept in Rust heap memory.

use std::ffi::c_long;

use hashfile::value::{
    self as codec, walk, Container, ContainerStart, Dig, Encoding, Item, Probe, Unencodable,
    MAX_DEPTH,
};
use hashfile::{Record, ValueKind};
use hashfile_runtime::options::DecodeOptions;
use magnus::{
    prelude::*,
    r_hash::ForEach,
    rb_sys::{AsRawValue, FromRawValue},
    Error, RArray, RHash, RString, Ruby, Value,
};
use rb_sys::{StableApiDefinition, VALUE};

use crate::error::{class_name, to_ruby, FORMAT_ERROR};
use crate::strings::{self, Stored};

// ---------------------------------------------------------------------------
// Encoding: Ruby object -> bytes
// ---------------------------------------------------------------------------

/// Why a value could not be encoded: an exception Ruby raised (a
/// serializer's), or one the core words ([`Unencodable`]: the message
/// every language gives).
pub(crate) enum EncodeError {
    Ruby(Error),
    Value(Unencodable),
}

/// What Ruby's encoder stores, for [`Unencodable::for_key`]'s message.
const STORES: &str = "nil, true, false, Integer, Float, String, Symbol, Array and Hash (pass serializer: to store other objects)";

impl EncodeError {
    /// This error one step further out (a refusal's path grows).
    fn inside(self, step: impl FnOnce(Unencodable) -> Unencodable) -> EncodeError {
        match self {
            EncodeError::Value(refused) => EncodeError::Value(step(refused)),
            ruby => ruby,
        }
    }

    /// The Ruby exception, naming the entry's key and the path inside it.
    pub(crate) fn into_ruby(self, ruby: &Ruby, key: &[u8]) -> Error {
        match self {
            EncodeError::Ruby(e) => e,
            EncodeError::Value(refused) => to_ruby(ruby, refused.for_key(key, STORES)),
        }
    }
}

impl From<Error> for EncodeError {
    fn from(e: Error) -> Self {
        EncodeError::Ruby(e)
    }
}

fn write_string(ruby: &Ruby, out: &mut Vec<u8>, raw: VALUE, symbol: bool) {
    // SAFETY: callers pass a String VALUE.
    let s = RString::from_value(unsafe { Value::from_raw(raw) }).expect("a String");
    let stored = strings::stored_encoding(ruby, s);
    let encoding = match &stored {
        Stored::Named(name) => Encoding::Named(name),
        // ASCII-only Symbols are US-ASCII in Ruby; interned as UTF-8 they
        // are the same Symbol, and the short UTF-8 form saves a byte.
        Stored::Tagged(Encoding::Ascii) if symbol => Encoding::Utf8,
        Stored::Tagged(encoding) => *encoding,
    };
    // SAFETY: the bytes are copied before Ruby runs.
    let bytes = unsafe { strings::bytes(s) };
    if symbol {
        codec::write_symbol(out, bytes, encoding)
    } else {
        codec::write_str(out, bytes, encoding)
    }
}

/// Appends the encoding of `value`. `dump` is the user's serializer for
/// other objects, or nil.
pub(crate) fn encode(
    ruby: &Ruby,
    value: Value,
    dump: Value,
    out: &mut Vec<u8>,
    depth_left: usize,
) -> Result<(), EncodeError> {
    use rb_sys::ruby_value_type::*;
    let api = rb_sys::stable_api::get_default();
    let raw = value.as_raw();
    if api.nil_p(raw) {
        codec::write_nil(out);
        return Ok(());
    }
    if raw == rb_sys::Qtrue as VALUE {
        codec::write_bool(out, true);
        return Ok(());
    }
    if raw == rb_sys::Qfalse as VALUE {
        codec::write_bool(out, false);
        return Ok(());
    }
    if api.fixnum_p(raw) {
        codec::write_int(out, (raw as i64) >> 1);
        return Ok(());
    }
    if api.flonum_p(raw) {
        // SAFETY: a flonum is a Float.
        codec::write_float(out, unsafe { rb_sys::rb_float_value(raw) });
        return Ok(());
    }
    if api.static_sym_p(raw) {
        // SAFETY: rb_sym2str returns the Symbol's frozen name String.
        write_string(ruby, out, unsafe { rb_sys::rb_sym2str(raw) }, true);
        return Ok(());
    }
    if api.special_const_p(raw) {
        return Err(EncodeError::Value(Unencodable::object(class_name(value))));
    }
    // SAFETY: not a special constant, so it is a heap object with a type.
    match unsafe { api.builtin_type(raw) } {
        RUBY_T_STRING => write_string(ruby, out, raw, false),
        // SAFETY: a heap Symbol; rb_sym2str returns its live name String.
        RUBY_T_SYMBOL => write_string(ruby, out, unsafe { rb_sys::rb_sym2str(raw) }, true),
        // SAFETY: a heap Float.
        RUBY_T_FLOAT => codec::write_float(out, unsafe { rb_sys::rb_float_value(raw) }),
        RUBY_T_BIGNUM => {
            // SAFETY: a Bignum; rb_integer_pack writes exactly `len` bytes
            // of its absolute value (no 2's complement flag) into `magnitude`.
            unsafe {
                let len = rb_sys::rb_absint_size(raw, std::ptr::null_mut());
                let mut magnitude = vec![0u8; len as usize];
                let flags =
                    (rb_sys::INTEGER_PACK_LSWORD_FIRST | rb_sys::INTEGER_PACK_LSBYTE_FIRST) as i32;
                let sign =
                    rb_sys::rb_integer_pack(raw, magnitude.as_mut_ptr().cast(), len, 1, 0, flags);
                codec::write_bigint(out, sign < 0, &magnitude);
            }
        }
        RUBY_T_ARRAY => {
            let depth = depth_left
                .checked_sub(1)
                .ok_or(EncodeError::Value(Unencodable::too_deep()))?;
            let array = RArray::from_value(value).expect("T_ARRAY is an Array");
            let start = ContainerStart::begin(out);
            let mut i = 0;
            // The length is read each time: a serializer could change it.
            while i < array.len() {
                let item: Value = array.entry(i as isize)?;
                encode(ruby, item, dump, out, depth).map_err(|e| e.inside(|u| u.in_element(i)))?;
                i += 1;
            }
            start.end_array(out, i as u64);
        }
        RUBY_T_HASH => {
            let depth = depth_left
                .checked_sub(1)
                .ok_or(EncodeError::Value(Unencodable::too_deep()))?;
            let hash = RHash::from_value(value).expect("T_HASH is a Hash");
            let start = ContainerStart::begin(out);
            let mut count = 0u64;
            let mut failure = None;
            hash.foreach(|k: Value, v: Value| {
                let key_at = out.len();
                let result = encode(ruby, k, dump, out, depth)
                    .map_err(|e| e.inside(|u| u.in_key(count as usize)))
                    .and_then(|_| {
                        let key_end = out.len();
                        encode(ruby, v, dump, out, depth)
                            .map_err(|e| e.inside(|u| u.in_value_of(&out[key_at..key_end])))
                    });
                match result {
                    Ok(()) => {
                        count += 1;
                        Ok(ForEach::Continue)
                    }
                    Err(e) => {
                        failure = Some(e);
                        Ok(ForEach::Stop)
                    }
                }
            })?;
            if let Some(e) = failure {
                return Err(e);
            }
            start.end_map(out, count);
        }
        _ => {
            if dump.is_nil() {
                return Err(EncodeError::Value(Unencodable::object(class_name(value))));
            }
            let bytes: Value = dump.funcall("call", (value,))?;
            let Some(bytes) = RString::from_value(bytes) else {
                return Err(EncodeError::Ruby(Error::new(
                    ruby.exception_type_error(),
                    format!(
                        "serializer's dump returned a {}, not a String",
                        class_name(bytes)
                    ),
                )));
            };
            // SAFETY: copied at once.
            codec::write_custom(out, unsafe { bytes.as_slice() });
        }
    }
    Ok(())
}

/// How a top-level value is stored: plain strings of the three common
/// encodings as string records, everything else typed.
pub(crate) fn store_value(
    ruby: &Ruby,
    value: Value,
    dump: Value,
    scratch: &mut Vec<u8>,
) -> Result<ValueKind, EncodeError> {
    if let Some(s) = RString::from_value(value) {
        if let Stored::Tagged(encoding) = strings::stored_encoding(ruby, s) {
            scratch.clear();
            // SAFETY: copied at once, before Ruby runs.
            scratch.extend_from_slice(unsafe { strings::bytes(s) });
            return Ok(match encoding {
                Encoding::Utf8 => ValueKind::Utf8,
                Encoding::Ascii => ValueKind::Ascii,
                _ => ValueKind::Binary,
            });
        }
    }
    scratch.clear();
    encode(ruby, value, dump, scratch, MAX_DEPTH)?;
    Ok(ValueKind::Typed)
}

// ---------------------------------------------------------------------------
// Decoding: bytes -> Ruby object
// ---------------------------------------------------------------------------

/// Decodes stored values into Ruby objects, with these options and the
/// user's `load` callable for custom values (nil without a serializer).
#[derive(Clone, Copy)]
pub(crate) struct Decoder<'r> {
    pub ruby: &'r Ruby,
    pub flags: DecodeOptions,
    pub load: Value,
    /// The key of the record being decoded, which damage is reported under.
    pub key: Option<&'r [u8]>,
    /// The store's location, which damage is reported under too.
    pub location: &'r str,
}

impl<'r> Decoder<'r> {
    /// Damage in the value decoded, as every binding reports it: naming
    /// the store and the key (`hashfile::Error::in_value_for`).
    pub(crate) fn damage(&self, e: hashfile::Error) -> Error {
        let e = match self.key {
            Some(key) => e.in_value_for(key),
            None => e,
        };
        crate::error::to_ruby(self.ruby, e.with_path(std::path::Path::new(self.location)))
    }

    /// This decoder for the record of `key`.
    pub(crate) fn for_key<'k>(&self, key: &'k [u8]) -> Decoder<'k>
    where
        'r: 'k,
    {
        Decoder {
            key: Some(key),
            ..*self
        }
    }
}

impl Decoder<'_> {
    /// A String with these bytes. With `interned`, the deduplicated frozen
    /// String (`-str`): for Hash keys, and for every string under FREEZE.
    #[inline]
    fn string(&self, bytes: &[u8], encoding: Encoding<'_>, interned: bool) -> Result<VALUE, Error> {
        strings::new_raw(self.ruby, bytes, encoding, interned)
    }

    fn symbol(&self, bytes: &[u8], encoding: Encoding<'_>) -> Result<VALUE, Error> {
        // Names in the three tagged encodings that are valid in theirs take
        // the direct path (through a cache); anything else goes through a
        // protected `to_sym`, which raises for a name that is not valid in
        // its encoding, as only a damaged file can hold.
        if let Some(symbol) = strings::symbol(self.ruby, bytes, encoding) {
            return Ok(symbol);
        }
        let name = self.string(bytes, encoding, false)?;
        // SAFETY: a live String VALUE.
        let name = unsafe { Value::from_raw(name) };
        let symbol: Value = name.funcall("to_sym", ()).map_err(|e| {
            Error::new(
                self.ruby.get_inner(&FORMAT_ERROR),
                format!("malformed value: a symbol name is not valid in its encoding ({e})"),
            )
        })?;
        Ok(symbol.as_raw())
    }

    /// A top-level record's value.
    #[inline]
    pub(crate) fn record(&self, record: &Record<'_>) -> Result<Value, Error> {
        let freeze = self.flags.freeze;
        let raw = if self.flags.raw {
            self.string(record.value, Encoding::Binary, freeze)?
        } else {
            match record.kind {
                ValueKind::Utf8 | ValueKind::Ascii | ValueKind::Binary => {
                    self.string(record.value, strings::value_encoding(record.kind), freeze)?
                }
                ValueKind::Typed => walk::value(&mut self.for_key(record.key), record.value)?,
                _ => {
                    return Err(Error::new(
                        self.ruby.get_inner(&FORMAT_ERROR),
                        "unknown value type",
                    ))
                }
            }
        };
        // SAFETY: every branch returned a live VALUE.
        Ok(unsafe { Value::from_raw(raw) })
    }

    // -----------------------------------------------------------------------
    // dig
    // -----------------------------------------------------------------------

    /// `dig` on a record's whole value: Ruby's own, on the decoded value
    /// (a string's, or with `raw:`).
    pub(crate) fn whole(&self, record: &Record<'_>, path: RArray) -> Result<Value, Error> {
        self.fallback(self.record(record)?.as_raw(), path, 0)
    }

    /// The path's keys as probes, copied out of their Ruby objects (so
    /// that no borrow of a Ruby String outlives Ruby running), up to the
    /// first that is not one.
    pub(crate) fn probes(&self, path: RArray) -> Result<Vec<OwnedProbe>, Error> {
        let mut owned = Vec::with_capacity(path.len());
        for i in 0..path.len() {
            match probe_of(self.ruby, path.entry(i as isize)?)? {
                Some(step) => owned.push(step),
                None => break,
            }
        }
        Ok(owned)
    }

    /// The answer of a walk of the first `steps` steps of `path`: what it
    /// ended on decoded, and the rest of the path taken by Ruby's own dig.
    pub(crate) fn answer(
        &self,
        walked: &Dig<'_>,
        path: RArray,
        steps: usize,
    ) -> Result<Value, Error> {
        match walk::dug(&mut { *self }, walked, steps)? {
            None => Ok(self.ruby.qnil().as_value()),
            Some((taken, value)) => self.fallback(value, path, taken),
        }
    }

    /// `[value].dig(0, *path[from..])`: Ruby's own semantics for the rest.
    fn fallback(&self, value: VALUE, path: RArray, from: usize) -> Result<Value, Error> {
        // SAFETY: a live VALUE.
        let value = unsafe { Value::from_raw(value) };
        if from >= path.len() {
            return Ok(value);
        }
        let args = self.ruby.ary_new_capa(path.len() - from + 1);
        args.push(0)?;
        for i in from..path.len() {
            args.push(path.entry::<Value>(i as isize)?)?;
        }
        let holder = self.ruby.ary_new_capa(1);
        holder.push(value)?;
        // SAFETY: the slice is passed straight to the call, which copies it.
        // It points into `args`'s memory, which Ruby's conservative stack
        // scan does not see as a reference to `args`: the guard below keeps
        // `args` (and `holder`) on the stack until the call has returned,
        // or a GC inside the call (interning "dig", say) could free it.
        let result = holder.funcall("dig", unsafe { args.as_slice() });
        let (args_raw, holder_raw) = (args.as_raw(), holder.as_raw());
        let _ = rb_sys::rb_gc_guard!(args_raw);
        let _ = rb_sys::rb_gc_guard!(holder_raw);
        result
    }
}

/// Ruby objects are made with the C API directly, each kept in a local of
/// the walk's recursive calls (a `VALUE`), where Ruby's conservative stack
/// scan sees it.
impl walk::Build for Decoder<'_> {
    type Value = VALUE;
    type Error = Error;

    fn error(&mut self, e: hashfile::Error) -> Error {
        self.damage(e)
    }

    /// Takes the item by reference: moved by value, each item (40 bytes)
    /// was copied through the stack at odd offsets that the loads after
    /// could not forward from, a third of a `db[]` of a small nested value.
    fn leaf(&mut self, item: &Item<'_>) -> Result<VALUE, Error> {
        let freeze = self.flags.freeze;
        Ok(match *item {
            Item::Nil => rb_sys::Qnil as VALUE,
            Item::Bool(true) => rb_sys::Qtrue as VALUE,
            Item::Bool(false) => rb_sys::Qfalse as VALUE,
            // SAFETY: takes a plain integer, returns a live Integer.
            Item::Int(i) => unsafe { rb_sys::rb_ll2inum(i) },
            Item::BigInt {
                negative,
                magnitude,
            } => {
                let mut flags =
                    (rb_sys::INTEGER_PACK_LSWORD_FIRST | rb_sys::INTEGER_PACK_LSBYTE_FIRST) as i32;
                if negative {
                    flags |= rb_sys::INTEGER_PACK_NEGATIVE as i32;
                }
                // SAFETY: `magnitude` is a live slice of `len` one-byte
                // words, which is what rb_integer_unpack reads; it returns
                // a live Integer.
                unsafe {
                    rb_sys::rb_integer_unpack(
                        magnitude.as_ptr().cast(),
                        magnitude.len() as _,
                        1,
                        0,
                        flags,
                    )
                }
            }
            // SAFETY: takes a plain double, returns a live Float.
            Item::Float(f) => unsafe { rb_sys::rb_float_new(f) },
            Item::Str(bytes, encoding) => self.string(bytes, encoding, freeze)?,
            Item::Symbol(bytes, encoding) => self.symbol(bytes, encoding)?,
            Item::Custom(bytes) => {
                let load = self.load;
                if load.is_nil() {
                    return Err(Error::new(self.ruby.get_inner(&crate::error::ERROR), "a value was stored with a custom serializer; open the store with serializer: to load it"));
                }
                let bytes = self.string(bytes, Encoding::Binary, false)?;
                // SAFETY: a live String VALUE.
                let loaded: Value = load.funcall("call", (unsafe { Value::from_raw(bytes) },))?;
                if freeze {
                    loaded.freeze();
                }
                loaded.as_raw()
            }
            Item::Array(_) | Item::Map(_) => unreachable!("the walk builds containers"),
        })
    }

    /// A Hash key: strings interned (as Hash#[]= would store them), or
    /// Symbols under SYMBOLIZE_NAMES.
    fn key(&mut self, item: &Item<'_>) -> Result<VALUE, Error> {
        match *item {
            Item::Str(bytes, encoding) if self.flags.symbolize_names => {
                self.symbol(bytes, encoding)
            }
            Item::Str(bytes, encoding) => self.string(bytes, encoding, true),
            _ => self.leaf(item),
        }
    }

    fn array(&mut self, len: u64) -> Result<VALUE, Error> {
        // SAFETY: `len` is at most the body's length (checked by the
        // cursor); returns a new Array.
        Ok(unsafe { rb_sys::rb_ary_new_capa(len as c_long) })
    }

    fn push(&mut self, array: &mut VALUE, element: VALUE) -> Result<(), Error> {
        // SAFETY: both live; `array` is on the walk's stack.
        unsafe { rb_sys::rb_ary_push(*array, element) };
        Ok(())
    }

    fn map(&mut self, _len: u64) -> Result<VALUE, Error> {
        // SAFETY: returns a new Hash.
        Ok(unsafe { rb_sys::rb_hash_new() })
    }

    fn insert(
        &mut self,
        hash: &mut VALUE,
        key: VALUE,
        value: VALUE,
        _: Container<'_>,
    ) -> Result<(), Error> {
        if hashes_in_c(key) {
            // SAFETY: all three live; hashing this key runs no Ruby code, so
            // nothing can raise past the walk's frames.
            unsafe { rb_sys::rb_hash_aset(*hash, key, value) };
            return Ok(());
        }
        // An Array, a Hash or a serializer's object as a key: storing it
        // calls its `hash` and `eql?`, Ruby code that may raise (or be
        // interrupted), so the call is protected and an exception comes
        // back as an Err that unwinds the walk's frames normally.
        // SAFETY: live VALUEs.
        let (hash, key, value) = unsafe {
            (
                Value::from_raw(*hash),
                Value::from_raw(key),
                Value::from_raw(value),
            )
        };
        RHash::from_value(hash)
            .ok_or_else(|| Error::new(self.ruby.exception_type_error(), "not a Hash"))?
            .aset(key, value)
    }

    fn finish(&mut self, container: VALUE) -> Result<VALUE, Error> {
        if self.flags.freeze {
            // SAFETY: a live Array or Hash.
            unsafe { rb_sys::rb_obj_freeze(container) };
        }
        Ok(container)
    }
}

/// A path step copied out of its Ruby object.
pub(crate) enum OwnedProbe {
    Str(Vec<u8>, bool),
    Symbol(Vec<u8>),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl OwnedProbe {
    pub(crate) fn probe(&self) -> Probe<'_> {
        match self {
            OwnedProbe::Str(bytes, binary) => Probe::Str {
                bytes,
                binary: *binary,
            },
            OwnedProbe::Symbol(name) => Probe::Symbol(name),
            OwnedProbe::Int(i) => Probe::Int(*i),
            OwnedProbe::Float(x) => Probe::Float(*x),
            OwnedProbe::Bool(b) => Probe::Bool(*b),
        }
    }
}

/// A path step the core's walk compares: an Integer, a Float, true or
/// false, a Symbol, or a String in UTF-8, US-ASCII or binary (the rule
/// Python's `dig` shares: docs/PYTHON.md). `None` for any other object,
/// whose step Ruby's `dig` takes.
fn probe_of(ruby: &Ruby, step: Value) -> Result<Option<OwnedProbe>, Error> {
    let api = rb_sys::stable_api::get_default();
    let raw = step.as_raw();
    if api.fixnum_p(raw) {
        return Ok(Some(OwnedProbe::Int((raw as i64) >> 1)));
    }
    if raw == rb_sys::Qtrue as VALUE || raw == rb_sys::Qfalse as VALUE {
        return Ok(Some(OwnedProbe::Bool(raw == rb_sys::Qtrue as VALUE)));
    }
    if let Some(float) = magnus::Float::from_value(step) {
        return Ok(Some(OwnedProbe::Float(float.to_f64())));
    }
    if let Some(sym) = magnus::Symbol::from_value(step) {
        // A Symbol in another encoding (or a binary one) is not a name the
        // codec's Symbol probe compares by: Ruby's own dig takes the step.
        let name = strings::symbol_name(sym);
        return Ok(match strings::stored_encoding(ruby, name) {
            Stored::Tagged(Encoding::Utf8 | Encoding::Ascii)
                // SAFETY: `name` is the Symbol's live name String, read
                // before anything can run Ruby code.
                if unsafe { std::str::from_utf8(strings::bytes(name)).is_ok() } =>
            {
                // SAFETY: as above, and the bytes are copied at once.
                Some(OwnedProbe::Symbol(unsafe { strings::bytes(name) }.to_vec()))
            }
            _ => None,
        });
    }
    if let Some(s) = RString::from_value(step) {
        let Stored::Tagged(encoding) = strings::stored_encoding(ruby, s) else {
            return Ok(None);
        };
        // SAFETY: copied at once.
        return Ok(Some(OwnedProbe::Str(
            unsafe { strings::bytes(s) }.to_vec(),
            encoding == Encoding::Binary,
        )));
    }
    Ok(None)
}

/// Whether Ruby hashes `key` without calling any method: the immediates,
/// Strings, Symbols, Floats and Bignums this decoder makes.
fn hashes_in_c(key: VALUE) -> bool {
    use rb_sys::ruby_value_type::*;
    let api = rb_sys::stable_api::get_default();
    // SAFETY: `key` is a live VALUE, and builtin_type is asked only of a
    // heap object (not a special constant).
    api.special_const_p(key)
        || matches!(
            unsafe { api.builtin_type(key) },
            RUBY_T_STRING | RUBY_T_SYMBOL | RUBY_T_FLOAT | RUBY_T_BIGNUM
        )
}
