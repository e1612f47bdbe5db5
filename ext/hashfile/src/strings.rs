//! Ruby Strings and the store's string encodings, both ways: the one place
//! that decides what a Ruby String's encoding becomes in a store, and the
//! one set of constructors that make Strings from stored bytes.

use std::ffi::{c_char, c_long, CString};

use hashfile::value::Encoding;
use magnus::{encoding::EncodingCapable, rb_sys::FromRawValue, Error, RString, Ruby, Value};
use rb_sys::{StableApiDefinition, VALUE};

/// A Ruby String's encoding as a store keeps it: one of the three the
/// format tags, or any other by its Ruby name.
pub enum Stored {
    /// UTF-8, US-ASCII or binary.
    Tagged(Encoding<'static>),
    /// Any other encoding, by name (`"Shift_JIS"`, ...).
    Named(String),
}

/// How a store keeps the encoding of `s`.
pub fn stored_encoding(ruby: &Ruby, s: RString) -> Stored {
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
pub fn symbol_name(sym: magnus::Symbol) -> RString {
    use magnus::rb_sys::AsRawValue;
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
pub unsafe fn bytes<'a>(s: RString) -> &'a [u8] {
    use magnus::rb_sys::AsRawValue;
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
pub fn new_raw(
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
            (Encoding::Utf8, true) => {
                rb_sys::rb_enc_interned_str(ptr, len, rb_sys::rb_utf8_encoding())
            }
            (Encoding::Binary, true) => {
                rb_sys::rb_enc_interned_str(ptr, len, rb_sys::rb_ascii8bit_encoding())
            }
            (Encoding::Ascii, true) => {
                rb_sys::rb_enc_interned_str(ptr, len, rb_sys::rb_usascii_encoding())
            }
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

/// `new_raw` as an `RString`.
#[inline]
pub fn new(
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
pub fn key_encoding(utf8: bool) -> Encoding<'static> {
    if utf8 {
        Encoding::Utf8
    } else {
        Encoding::Binary
    }
}

/// The encoding of a plain string record's value.
#[inline]
pub fn value_encoding(kind: hashfile::ValueKind) -> Encoding<'static> {
    match kind {
        hashfile::ValueKind::Utf8 => Encoding::Utf8,
        hashfile::ValueKind::Ascii => Encoding::Ascii,
        _ => Encoding::Binary,
    }
}
