//! `Hashfile::Reader`: an open store. The Ruby API with keyword arguments
//! and docs is in lib/hashfile/reader.rb; these are the native methods.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use hashfile::ValueKind;
use magnus::{function, method, prelude::*, rb_sys::{AsRawValue, FromRawValue}, typed_data::DataType, RTypedData, TypedData, Error, RArray, RHash, RModule, RString, Ruby, Symbol, Value};
use memmap2::Mmap;
use rb_sys::StableApiDefinition;

use crate::error::{to_ruby, CLOSED_ERROR};
use crate::value::{DecodeFlags, Decoder};

type Store = hashfile::Reader<Mmap>;

/// The store lives in an `Arc` so that `verify`, which runs without the GVL,
/// keeps the mapping alive even if another thread closes the reader.
/// `RefCell` suffices for the slot itself: every method runs holding the GVL
/// and none calls back into Ruby while borrowing it.
#[magnus::wrap(class = "Hashfile::Reader", free_immediately, size)]
pub struct Reader {
    store: RefCell<Option<Arc<Store>>>,
    path: String,
    /// The open-time decode options (`DecodeFlags` bits).
    flags: Cell<u8>,
}

/// Records returned per `_each_chunk` call: large enough to amortise the
/// call, small enough that `close` inside `each` takes effect promptly.
const CHUNK: usize = 1024;

/// Calls `f` with the bytes of a String or Symbol key; `None` for any other
/// object, which can never be a key.
#[inline]
fn with_key<R>(key: Value, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>, Error> {
    if let Some(s) = RString::from_value(key) {
        // SAFETY: the slice is used only inside `f`, which runs no Ruby code
        // and allocates no Ruby objects, so the string cannot be modified or
        // collected while it is borrowed.
        return Ok(Some(f(unsafe { s.as_slice() })));
    }
    if let Some(sym) = Symbol::from_value(key) {
        return Ok(Some(f(sym.name()?.as_bytes())));
    }
    Ok(None)
}

/// A new Ruby String holding a copy of `bytes` in one of the encodings a
/// store keeps. Calls Ruby's per-encoding constructors directly: they set the
/// encoding index in place, where `rb_enc_str_new` looks the encoding up and
/// re-associates it, which costs more than the whole lookup (bench/compare.rb).
#[inline]
fn new_string(kind: ValueKind, bytes: &[u8]) -> RString {
    let (ptr, len) = (bytes.as_ptr() as *const std::ffi::c_char, bytes.len() as std::ffi::c_long);
    // SAFETY: ptr/len describe a live slice that Ruby copies before
    // returning; each function returns a new String VALUE.
    unsafe {
        let value = match kind {
            ValueKind::Utf8 => rb_sys::rb_utf8_str_new(ptr, len),
            ValueKind::Ascii => rb_sys::rb_usascii_str_new(ptr, len),
            _ => rb_sys::rb_str_new(ptr, len),
        };
        RString::from_value(Value::from_raw(value)).expect("Ruby's String constructors return Strings")
    }
}

/// A new frozen Ruby String holding the key, as Hash keys are.
fn key_string(record: &hashfile::RecordBuf<'_>) -> RString {
    let key = new_string(if record.key_utf8() { ValueKind::Utf8 } else { ValueKind::Binary }, record.key());
    key.freeze();
    key
}

impl Reader {
    fn open(ruby: &Ruby, path: String) -> Result<Reader, Error> {
        let store = Store::open(&path).map_err(|e| to_ruby(ruby, e))?;
        Ok(Reader { store: RefCell::new(Some(Arc::new(store))), path, flags: Cell::new(0) })
    }

    fn closed(&self, ruby: &Ruby) -> Error {
        Error::new(ruby.get_inner(&CLOSED_ERROR), format!("closed store {}", self.path))
    }

    #[inline]
    fn with_store<R>(&self, ruby: &Ruby, f: impl FnOnce(&Store) -> Result<R, Error>) -> Result<R, Error> {
        let slot = self.store.try_borrow().map_err(|_| self.closed(ruby))?;
        f(slot.as_deref().ok_or_else(|| self.closed(ruby))?)
    }

    /// A counted handle, for work that runs without the GVL.
    fn shared(&self, ruby: &Ruby) -> Result<Arc<Store>, Error> {
        let slot = self.store.try_borrow().map_err(|_| self.closed(ruby))?;
        slot.clone().ok_or_else(|| self.closed(ruby))
    }

    /// `db[key]`: the value, or `if_missing` when the key is absent.
    #[inline]
    fn lookup(&self, ruby: &Ruby, rb_self: Value, key: Value, if_missing: Value, flags: DecodeFlags) -> Result<Value, Error> {
        self.with_store(ruby, |store| match with_key(key, |k| store.get(k))? {
            // The record borrows the mapping, not the key, whose borrow ended
            // inside `with_key` before anything is allocated.
            Some(Ok(Some(record))) => decoder(ruby, rb_self, flags, &|| load_callable(ruby, rb_self)).record(&record.record()).map_err(|e| self.locate(ruby, e, record.key())),
            Some(Ok(None)) | None => Ok(if_missing),
            Some(Err(e)) => Err(to_ruby(ruby, e.with_path(self.path.as_ref()))),
        })
    }

    /// Adds the path and key to a decoding error's message.
    fn locate(&self, ruby: &Ruby, error: Error, key: &[u8]) -> Error {
        match error.value() {
            Some(exception) if exception.is_kind_of(ruby.get_inner(&crate::error::FORMAT_ERROR)) => {
                let message = exception.funcall::<_, _, String>("message", ()).unwrap_or_default();
                Error::new(ruby.get_inner(&crate::error::FORMAT_ERROR), format!("{}: value of key {}: {message}", self.path, hashfile::DisplayBytes(key)))
            }
            _ => error,
        }
    }

    fn flags_or_default(&self, flags: Option<u8>) -> DecodeFlags {
        DecodeFlags(flags.unwrap_or_else(|| self.flags.get()))
    }

    // The lookup methods take `self` as a Value and unwrap it with
    // `unwrap_self`, skipping the rb_protect (a setjmp) that magnus's `&Self`
    // conversion costs on every call.

    fn aref(ruby: &Ruby, rb_self: Value, key: Value) -> Result<Value, Error> {
        let reader = unwrap_self::<Self>(ruby, rb_self)?;
        reader.lookup(ruby, rb_self, key, ruby.qnil().as_value(), DecodeFlags(reader.flags.get()))
    }

    fn get(ruby: &Ruby, rb_self: Value, key: Value, if_missing: Value, flags: Option<u8>) -> Result<Value, Error> {
        let reader = unwrap_self::<Self>(ruby, rb_self)?;
        reader.lookup(ruby, rb_self, key, if_missing, reader.flags_or_default(flags))
    }

    fn dig(ruby: &Ruby, rb_self: Value, key: Value, path: RArray, flags: Option<u8>) -> Result<Value, Error> {
        let reader = unwrap_self::<Self>(ruby, rb_self)?;
        let flags = reader.flags_or_default(flags);
        reader.with_store(ruby, |store| match with_key(key, |k| store.get(k))? {
            Some(Ok(Some(record))) => decoder(ruby, rb_self, flags, &|| load_callable(ruby, rb_self)).dig(&record.record(), path).map_err(|e| reader.locate(ruby, e, record.key())),
            Some(Ok(None)) | None => Ok(ruby.qnil().as_value()),
            Some(Err(e)) => Err(to_ruby(ruby, e.with_path(reader.path.as_ref()))),
        })
    }

    fn set_flags(&self, flags: u8) {
        self.flags.set(flags);
    }

    fn has_key(ruby: &Ruby, rb_self: Value, key: Value) -> Result<bool, Error> {
        let rb_self = unwrap_self::<Self>(ruby, rb_self)?;
        rb_self.with_store(ruby, |store| match with_key(key, |k| store.get(k).map(|r| r.is_some()))? {
            Some(Ok(found)) => Ok(found),
            None => Ok(false),
            Some(Err(e)) => Err(to_ruby(ruby, e.with_path(rb_self.path.as_ref()))),
        })
    }

    fn size(ruby: &Ruby, rb_self: &Self) -> Result<u64, Error> {
        rb_self.with_store(ruby, |store| Ok(store.len()))
    }

    /// Up to CHUNK records from byte `offset` of the records section, as
    /// `[next_offset_or_nil, key, value, key, value, ...]`.
    fn each_chunk(ruby: &Ruby, rb_value: Value, offset: u64) -> Result<RArray, Error> {
        let rb_self = unwrap_self::<Self>(ruby, rb_value)?;
        let load = || load_callable(ruby, rb_value);
        let decoder = decoder(ruby, rb_value, DecodeFlags(rb_self.flags.get()), &load);
        rb_self.with_store(ruby, |store| {
            let out = ruby.ary_new_capa(1 + 2 * CHUNK);
            out.push(ruby.qnil())?;
            let mut at = offset;
            for _ in 0..CHUNK {
                match store.record_at(at).map_err(|e| to_ruby(ruby, e.with_path(rb_self.path.as_ref())))? {
                    Some((record, next)) => {
                        out.push(key_string(&record))?;
                        out.push(decoder.record(&record.record()).map_err(|e| rb_self.locate(ruby, e, record.key()))?)?;
                        at = next;
                    }
                    None => return Ok(out),
                }
            }
            out.store(0, at)?;
            Ok(out)
        })
    }

    fn verify(ruby: &Ruby, rb_self: &Self) -> Result<bool, Error> {
        let store = rb_self.shared(ruby)?;
        crate::nogvl::without_gvl(ruby, move || store.verify(), None)?.map_err(|e| to_ruby(ruby, e.with_path(rb_self.path.as_ref())))?;
        Ok(true)
    }

    fn close(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        let mut slot = rb_self.store.try_borrow_mut().map_err(|_| Error::new(ruby.get_inner(&crate::error::ERROR), "cannot close a store while it is being read"))?;
        slot.take();
        Ok(())
    }

    fn is_closed(&self) -> bool {
        self.store.borrow().is_none()
    }

    fn path(&self) -> String {
        self.path.clone()
    }

    fn info(ruby: &Ruby, rb_self: &Self) -> Result<RHash, Error> {
        rb_self.with_store(ruby, |store| {
            let info = store.info();
            let header = store.header();
            let sym = |s: &str| ruby.to_symbol(s);
            let out = ruby.hash_new();
            out.aset(sym("format_version"), format!("{}.{}", header.major, header.minor))?;
            out.aset(sym("entries"), info.entries)?;
            out.aset(sym("file_bytes"), info.file_bytes)?;
            out.aset(sym("mphf_bits_per_key"), info.mphf_bits_per_key)?;
            out.aset(sym("seed_bits_per_key"), info.seed_bits_per_key)?;
            let sections = ruby.hash_new();
            for (name, bytes) in &info.section_bytes {
                sections.aset(sym(name), *bytes)?;
            }
            out.aset(sym("sections"), sections)?;
            let p = &header.parameters;
            let g = &header.geometry;
            let params = ruby.hash_new();
            params.aset(sym("keys_per_bucket"), p.keys_per_bucket)?;
            params.aset(sym("load_factor"), p.load_factor)?;
            params.aset(sym("dense_key_fraction"), p.dense_key_fraction)?;
            params.aset(sym("dense_bucket_fraction"), p.dense_bucket_fraction)?;
            params.aset(sym("seed_block_len"), header.seed_block_len)?;
            params.aset(sym("hash_seed"), header.hash_seed)?;
            params.aset(sym("buckets"), g.bucket_count)?;
            params.aset(sym("slots"), g.slot_count)?;
            params.aset(sym("parts"), g.part_count)?;
            out.aset(sym("parameters"), params)?;
            Ok(out)
        })
    }
}

fn decoder<'r>(ruby: &'r Ruby, _rb_self: Value, flags: DecodeFlags, load: &'r dyn Fn() -> Value) -> Decoder<'r> {
    Decoder { ruby, flags, load }
}

/// The `load` half of the serializer given to `Hashfile.open`, or nil.
/// Read only when a custom value turns up.
fn load_callable(ruby: &Ruby, rb_self: Value) -> Value {
    rb_self.funcall("instance_variable_get", ("@load",)).unwrap_or_else(|_| ruby.qnil().as_value())
}

/// The Rust value inside a wrapped object of type `T`, checked without
/// rb_protect: the object must be typed data whose type is exactly `T`'s.
#[inline]
fn unwrap_self<'a, T: TypedData>(ruby: &Ruby, value: Value) -> Result<&'a T, Error> {
    if RTypedData::from_value(value).is_some() {
        let api = rb_sys::stable_api::get_default();
        let expected = T::data_type() as *const DataType as *const rb_sys::rb_data_type_t;
        // SAFETY: `value` is a typed T_DATA object (checked above), so its
        // type and data fields can be read. DataType is repr(transparent)
        // over rb_data_type_t, so equal pointers mean the data is a `T`,
        // wrapped by magnus. The reference lives as long as the receiver,
        // which the VM keeps alive for the whole method call.
        unsafe {
            if api.rtypeddata_type(value.as_raw()) == expected {
                if let Some(data) = (api.rtypeddata_get_data(value.as_raw()) as *const T).as_ref() {
                    return Ok(data);
                }
            }
        }
    }
    Err(Error::new(ruby.exception_type_error(), "not a Hashfile::Reader"))
}

pub fn init(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let class = module.define_class("Reader", ruby.class_object())?;
    class.define_singleton_method("_open", function!(Reader::open, 1))?;
    class.define_method("[]", method!(Reader::aref, 1))?;
    class.define_method("_get", method!(Reader::get, 3))?;
    class.define_method("_dig", method!(Reader::dig, 3))?;
    class.define_method("_set_flags", method!(Reader::set_flags, 1))?;
    class.define_method("key?", method!(Reader::has_key, 1))?;
    class.define_method("size", method!(Reader::size, 0))?;
    class.define_method("_each_chunk", method!(Reader::each_chunk, 1))?;
    class.define_method("_verify", method!(Reader::verify, 0))?;
    class.define_method("close", method!(Reader::close, 0))?;
    class.define_method("closed?", method!(Reader::is_closed, 0))?;
    class.define_method("path", method!(Reader::path, 0))?;
    class.define_method("_info", method!(Reader::info, 0))?;
    Ok(())
}
