//! Ruby Strings and the store's string encodings, both ways: the one place
//! that decides what a Ruby String's encoding becomes in a store, and the
//! one set of constructors that make Strings from stored bytes.

use std::ffi::{c_char, c_long, CString};

use hashfile::value::Encoding;
use magnus::{
    encoding::EncodingCapable,
    rb_sys::{AsRawValue, FromRawValue},
    value::Lazy,
    Error, RArray, RString, Ruby, Value,
};
use rb_sys::{StableApiDefinition, VALUE};

/// A Ruby String's encoding as a store keeps it: one of the three the
/// format tags, or any other by its Ruby name.
pub(crate) enum Stored {
    /// UTF-8, US-ASCII or binary.
    Tagged(Encoding<'static>),
    /// Any other encoding, by name (`"Shift_JIS"`, ...).
    Named(String),
}

/// How a store keeps the encoding of `s`.
pub(crate) fn stored_encoding(ruby: &Ruby, s: RString) -> Stored {
    let index = s.enc_get();
    if index == ruby.utf8_encindex() {
        Stored::Tagged(Encoding::Utf8)
    } else if index == ruby.ascii8bit_encindex() {
        Stored::Tagged(Encoding::Binary)
    } else if index == ruby.usascii_encindex() {
        Stored::Tagged(Encoding::Ascii)
    } else {
        Stored::Named(magnus::encoding::RbEncoding::from(index).name().to_string())
    }
}

/// A Symbol's name as the String Ruby keeps for it (frozen, in the
/// Symbol's own encoding, which need not be UTF-8).
pub(crate) fn symbol_name(sym: magnus::Symbol) -> RString {
    // SAFETY: a live Symbol; rb_sym2str returns its frozen name String,
    // which lives as long as the Symbol, and calls no Ruby code.
    let name = unsafe { Value::from_raw(rb_sys::rb_sym2str(sym.as_raw())) };
    RString::from_value(name).expect("a Symbol's name is a String")
}

/// The bytes of a Ruby String.
///
/// # Safety
/// The slice must be dropped before any Ruby code runs or any Ruby object
/// is allocated: either could move or free the String's buffer.
pub(crate) unsafe fn bytes<'a>(s: RString) -> &'a [u8] {
    let api = rb_sys::stable_api::get_default();
    let raw = s.as_raw();
    // SAFETY: `raw` is a live String; the caller bounds the slice's life.
    unsafe {
        std::slice::from_raw_parts(
            api.rstring_ptr(raw) as *const u8,
            api.rstring_len(raw) as usize,
        )
    }
}

/// The index of the Ruby encoding named `name`.
fn encoding_index(ruby: &Ruby, name: &str) -> Result<i32, Error> {
    let unknown = || {
        Error::new(
            ruby.get_inner(&crate::error::ERROR),
            format!("a stored string is in encoding {name:?}, which this Ruby does not know"),
        )
    };
    let c_name = CString::new(name).map_err(|_| unknown())?;
    // SAFETY: a NUL-terminated name; returns -1 for unknown encodings.
    let index = unsafe { rb_sys::rb_enc_find_index(c_name.as_ptr()) };
    if index < 0 {
        return Err(unknown());
    }
    Ok(index)
}

/// A new String holding a copy of `bytes` in `encoding`; with `interned`,
/// the deduplicated frozen String (`-str`), as Hash keys and frozen values
/// are. Calls Ruby's per-encoding constructors directly: they set the
/// encoding index in place, where `rb_enc_str_new` looks the encoding up and
/// re-associates it, which costs more than a whole lookup (bench/compare.rb).
/// `rb_usascii_str_new` also marks the String 7-bit without looking, so it
/// takes ASCII-only bytes alone: a US-ASCII String with high bytes (stored
/// as it was, invalid) must come back invalid, not claim to be ASCII.
#[inline]
pub(crate) fn new_raw(
    ruby: &Ruby,
    bytes: &[u8],
    encoding: Encoding<'_>,
    interned: bool,
) -> Result<VALUE, Error> {
    let (ptr, len) = (bytes.as_ptr() as *const c_char, bytes.len() as c_long);
    // SAFETY: ptr/len describe a live slice that Ruby copies before
    // returning; each function returns a new (or interned) String.
    unsafe {
        Ok(match (encoding, interned) {
            (Encoding::Utf8, false) => rb_sys::rb_utf8_str_new(ptr, len),
            (Encoding::Binary, false) => rb_sys::rb_str_new(ptr, len),
            (Encoding::Ascii, false) if bytes.is_ascii() => rb_sys::rb_usascii_str_new(ptr, len),
            (Encoding::Ascii, false) => {
                rb_sys::rb_enc_str_new(ptr, len, rb_sys::rb_usascii_encoding())
            }
            (Encoding::Utf8, true) => cached_interned(ruby, bytes, Region::Utf8),
            (Encoding::Binary, true) => cached_interned(ruby, bytes, Region::Binary),
            (Encoding::Ascii, true) => cached_interned(ruby, bytes, Region::Ascii),
            (Encoding::Named(name), interned) => {
                let enc = rb_sys::rb_enc_from_index(encoding_index(ruby, name)?);
                if interned {
                    rb_sys::rb_enc_interned_str(ptr, len, enc)
                } else {
                    rb_sys::rb_enc_str_new(ptr, len, enc)
                }
            }
        })
    }
}

// ---------------------------------------------------------------------------
// Interned strings, cached by content
// ---------------------------------------------------------------------------

/// Sets per encoding in the cache of interned strings (a power of two),
/// of `INTERNED_WAYS` slots each: with one slot a set, two of a small
/// Hash's keys that met in one (a one-in-twenty chance for 11 keys) threw
/// each other out on every lookup.
const INTERNED_SETS: usize = 1024;
const INTERNED_WAYS: usize = 2;
/// Slots per encoding.
const INTERNED_SLOTS: usize = INTERNED_SETS * INTERNED_WAYS;
/// Longer strings are interned without the cache: Hash keys, the strings
/// decoded most often, are short, and a bound on the length bounds what
/// the caches keep alive (3 × 2,048 strings of at most 64 bytes, and
/// as many Symbols with their names).
const INTERNED_MAX_LEN: usize = 64;

/// The three tagged encodings, each with its own part of the cache, so a
/// hit needs no encoding check: a string found in a part has its encoding.
#[derive(Clone, Copy)]
enum Region {
    Utf8 = 0,
    Ascii = 1,
    Binary = 2,
}

impl Region {
    /// Ruby's encoding for this region.
    fn encoding(self) -> *mut rb_sys::OnigEncodingTypeST {
        // SAFETY: each returns a pointer to one of Ruby's static encodings.
        unsafe {
            match self {
                Region::Utf8 => rb_sys::rb_utf8_encoding(),
                Region::Ascii => rb_sys::rb_usascii_encoding(),
                Region::Binary => rb_sys::rb_ascii8bit_encoding(),
            }
        }
    }
}

/// The interned (deduplicated, frozen) strings decoded lately, in sets of
/// `INTERNED_WAYS` slots chosen by a hash of their bytes, the newest first
/// and the oldest leaving a full set. Every Hash
/// key a typed lookup decodes is interned, as `Hash#[]=` would intern it;
/// Ruby's own `rb_enc_interned_str` hashes the bytes with SipHash, scans
/// them for their coderange and probes the VM's table of all interned
/// strings, which was about a fifth of a `db[]` of a small nested value
/// (`perf`, docs/BENCHMARKS.md). A hit here is a short hash, a load or two
/// and a byte compare, and returns the very object `rb_enc_interned_str`
/// would: the cache keeps that object alive, so the VM's table keeps
/// mapping these bytes to it.
///
/// A Ruby Array registered with the GC (`Lazy` does that, which also pins
/// the Array itself), so the strings are marked, and moved entries are
/// updated in place by compaction: no VALUE is kept in Rust memory. Every
/// use holds the GVL, which serializes them; a forked child has its copy.
static INTERNED: Lazy<RArray> = Lazy::new(|ruby| empty_cache(ruby, 3 * INTERNED_SLOTS));

/// A cache's Array: `len` nils.
fn empty_cache(ruby: &Ruby, len: usize) -> RArray {
    let cache = ruby.ary_new_capa(len);
    for _ in 0..len {
        cache.push(ruby.qnil()).expect("a new Array takes elements");
    }
    cache
}

/// Which set of its region `bytes` is in: a multiplicative hash (FxHash's
/// constant) of eight bytes at a time, its top bits. The last word is read
/// overlapping the one before, and a short string as two overlapping
/// halves or three bytes (as wyhash reads them): copied into a zeroed
/// word instead, the bytes went through memory in pieces that the load
/// after could not forward, most of this function's time (`perf annotate`).
#[inline]
fn interned_set(bytes: &[u8]) -> usize {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let n = bytes.len();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("eight bytes"));
    let half = |at: usize| {
        u64::from(u32::from_le_bytes(
            bytes[at..at + 4].try_into().expect("four bytes"),
        ))
    };
    let mut hash = (n as u64).wrapping_mul(K);
    let last = if n >= 8 {
        let mut at = 0;
        while at + 8 < n {
            hash = (hash.rotate_left(5) ^ word(at)).wrapping_mul(K);
            at += 8;
        }
        word(n - 8)
    } else if n >= 4 {
        half(0) | half(n - 4) << 32
    } else if n > 0 {
        u64::from(bytes[0]) | u64::from(bytes[n / 2]) << 8 | u64::from(bytes[n - 1]) << 16
    } else {
        0
    };
    hash = (hash.rotate_left(5) ^ last).wrapping_mul(K);
    (hash >> (64 - INTERNED_SETS.trailing_zeros())) as usize
}

/// The interned String of `bytes` in `region`'s encoding, from the cache
/// when it holds it.
#[inline]
fn cached_interned(ruby: &Ruby, bytes: &[u8], region: Region) -> VALUE {
    let (ptr, len) = (bytes.as_ptr() as *const c_char, bytes.len() as c_long);
    let intern = || {
        // SAFETY: rb_enc_interned_str copies the live slice `ptr`/`len`
        // and returns a live interned String.
        unsafe { rb_sys::rb_enc_interned_str(ptr, len, region.encoding()) }
    };
    if bytes.len() > INTERNED_MAX_LEN {
        return intern();
    }
    let cache = ruby.get_inner(&INTERNED).as_raw();
    // `make` always gives a String, so `by_name` always returns one.
    by_name(cache, 1, bytes, region, || {
        let name = intern();
        Some((name, name))
    })
    .unwrap_or_else(intern)
}

/// The Symbols of names decoded lately (`symbolize_names:` keys, stored
/// Symbols), as `INTERNED` keeps Strings, in slots of two: the Symbol's
/// name (an interned String, whose bytes are compared), then the Symbol.
/// `rb_intern3` probes the VM's symbol table by a hash of the whole name,
/// which made a `db[]` of a small nested value with `symbolize_names:` take
/// 1.5× one with String keys; a hit here is what a String key's hit is.
/// Holding the Symbol keeps a dynamic one alive, so `rb_intern3` would
/// return this same object.
static SYMBOLS: Lazy<RArray> = Lazy::new(|ruby| empty_cache(ruby, 2 * 3 * INTERNED_SLOTS));

/// The Symbol named `bytes` in `encoding`, if `encoding` is one of the
/// three tagged ones and the name is valid in it; None otherwise (the
/// caller takes the slow, protected path, where an invalid name raises).
#[inline]
pub(crate) fn symbol(ruby: &Ruby, bytes: &[u8], encoding: Encoding<'_>) -> Option<VALUE> {
    let region = match encoding {
        Encoding::Utf8 => Region::Utf8,
        Encoding::Ascii => Region::Ascii,
        Encoding::Binary => Region::Binary,
        Encoding::Named(_) => return None,
    };
    // rb_intern3 raises (a longjmp) for a name that is not valid in its
    // encoding, which only a damaged file can hold: valid UTF-8 or
    // US-ASCII names, and binary ones, cannot raise.
    let intern = || {
        let valid = match region {
            Region::Utf8 => std::str::from_utf8(bytes).is_ok(),
            Region::Ascii => bytes.is_ascii(),
            Region::Binary => true,
        };
        let (ptr, len) = (bytes.as_ptr() as *const c_char, bytes.len() as c_long);
        // SAFETY: rb_intern3 copies a name that is valid in its encoding
        // (checked above); rb_id2sym returns its Symbol, rb_sym2str the
        // Symbol's frozen name, which lives as long as the Symbol.
        valid.then(|| unsafe {
            let symbol = rb_sys::rb_id2sym(rb_sys::rb_intern3(ptr, len, region.encoding()));
            (rb_sys::rb_sym2str(symbol), symbol)
        })
    };
    if bytes.len() > INTERNED_MAX_LEN {
        return intern().map(|(_, symbol)| symbol);
    }
    let cache = ruby.get_inner(&SYMBOLS).as_raw();
    by_name(cache, 2, bytes, region, intern)
}

/// The object a cache (`INTERNED`, `SYMBOLS`) holds for `bytes` in
/// `region`, or the one `make` returns (None: nothing to cache, nothing
/// returned), which then goes first in its set. Each slot is `width`
/// elements: the name String, compared by its bytes, and (when `width` is
/// 2) the object returned, else the name itself.
#[inline]
fn by_name(
    cache: VALUE,
    width: usize,
    bytes: &[u8],
    region: Region,
    make: impl FnOnce() -> Option<(VALUE, VALUE)>,
) -> Option<VALUE> {
    let first = (region as usize * INTERNED_SLOTS + interned_set(bytes) * INTERNED_WAYS) * width;
    let api = rb_sys::stable_api::get_default();
    for way in 0..INTERNED_WAYS {
        let at = first + way * width;
        // SAFETY: `cache` is a live Array of 3 × INTERNED_SLOTS × `width`
        // elements, made with it, never resized, and `at` is within it; its
        // names are nil or Strings this function stored. The slice of a
        // String's bytes is compared before anything else runs or
        // allocates.
        let name = unsafe { api.rarray_aref(cache, at as isize) };
        if name == rb_sys::Qnil as VALUE {
            break;
        }
        // SAFETY: as above.
        let held = unsafe {
            std::slice::from_raw_parts(
                api.rstring_ptr(name) as *const u8,
                api.rstring_len(name) as usize,
            )
        };
        if held == bytes {
            // SAFETY: as above; the slot's last element is its object.
            return Some(unsafe { api.rarray_aref(cache, (at + width - 1) as isize) });
        }
    }
    let (name, object) = make()?;
    // The newest goes first, the set's others one way along, the last one
    // out. SAFETY: a live Array and objects (or nil); rb_ary_store takes
    // the write barrier, and every index is in bounds, so it does not grow
    // the Array. Nothing allocates in between; `name` and `object` are on
    // this stack until stored.
    unsafe {
        for at in (first + width..first + INTERNED_WAYS * width).rev() {
            let older = api.rarray_aref(cache, (at - width) as isize);
            rb_sys::rb_ary_store(cache, at as c_long, older);
        }
        rb_sys::rb_ary_store(cache, first as c_long, name);
        if width == 2 {
            rb_sys::rb_ary_store(cache, first as c_long + 1, object);
        }
    }
    Some(object)
}

/// `new_raw` as an `RString`.
#[inline]
pub(crate) fn new(
    ruby: &Ruby,
    bytes: &[u8],
    encoding: Encoding<'_>,
    interned: bool,
) -> Result<RString, Error> {
    let raw = new_raw(ruby, bytes, encoding, interned)?;
    // SAFETY: every constructor above returns a live String VALUE.
    Ok(RString::from_value(unsafe { Value::from_raw(raw) })
        .expect("Ruby's String constructors return Strings"))
}

/// The encoding of a store's key: UTF-8 text, else binary.
#[inline]
pub(crate) fn key_encoding(utf8: bool) -> Encoding<'static> {
    if utf8 {
        Encoding::Utf8
    } else {
        Encoding::Binary
    }
}

/// The encoding of a plain string record's value.
#[inline]
pub(crate) fn value_encoding(kind: hashfile::ValueKind) -> Encoding<'static> {
    match kind {
        hashfile::ValueKind::Utf8 => Encoding::Utf8,
        hashfile::ValueKind::Ascii => Encoding::Ascii,
        _ => Encoding::Binary,
    }
}
