//! `Hashfile::Writer`: collects entries for `Hashfile.build` (one store)
//! and `Hashfile.build_sharded` (a dataset). The Ruby API is in
//! lib/hashfile/writer.rb; these are the native methods.

use std::cell::RefCell;
use std::path::PathBuf;

use hashfile::{CancelFlag, Record};
use hashfile_runtime::options::{Call, Language};

use magnus::{
    function, gc::Marker, method, prelude::*, r_hash::ForEach, value::Opaque, DataTypeFunctions,
    Error, RHash, RModule, RString, Ruby, Symbol, TypedData, Value,
};

use crate::error::{class_name, to_ruby, type_error, CLOSED_ERROR};
use crate::strings::{self, Stored};

#[derive(TypedData)]
#[magnus(class = "Hashfile::Writer", free_immediately, size, mark)]
pub(crate) struct Writer {
    builder: RefCell<Option<Target>>,
    /// Reused buffer for encoding one value.
    scratch: RefCell<Vec<u8>>,
    /// The `dump` half of the serializer given to `Hashfile.build`.
    dump: Option<Opaque<Value>>,
}

/// What a writer builds: one store, or a dataset's shards.
use hashfile_runtime::Writer as Target;

impl DataTypeFunctions for Writer {
    fn mark(&self, marker: &Marker) {
        if let Some(dump) = self.dump {
            marker.mark(dump);
        }
    }
}

impl Writer {
    /// `_new(options, dump)`: the keywords given to `Hashfile.build` or
    /// `build_sharded` (a Hash: `shards:` makes a dataset), judged by the
    /// runtime's table, and the serializer's `dump` callable (or nil).
    fn new(ruby: &Ruby, opts: RHash, dump: Value) -> Result<Writer, Error> {
        let given = crate::options::given(ruby, Some(opts))?;
        let request = hashfile_runtime::options::build_request(Call::Build, &given, Language::Ruby)
            .map_err(|e| to_ruby(ruby, e))?;
        let builder = Target::new(&request).map_err(|e| to_ruby(ruby, e))?;
        Ok(Writer {
            builder: RefCell::new(Some(builder)),
            scratch: RefCell::new(Vec::new()),
            dump: (!dump.is_nil()).then(|| Opaque::from(dump)),
        })
    }

    fn busy(ruby: &Ruby) -> Error {
        Error::new(ruby.get_inner(&CLOSED_ERROR), "writer is busy")
    }

    fn add_entry(&self, ruby: &Ruby, key: Value, value: Value) -> Result<(), Error> {
        let mut slot = self
            .builder
            .try_borrow_mut()
            .map_err(|_| Self::busy(ruby))?;
        let builder = slot
            .as_mut()
            .ok_or_else(|| Error::new(ruby.get_inner(&CLOSED_ERROR), "writer is finished"))?;
        let (key_bytes, key_utf8) = stored_key(ruby, key)?;
        let dump = self
            .dump
            .map_or_else(|| ruby.qnil().as_value(), |dump| ruby.get_inner(dump));
        // The builder stays borrowed while a serializer's dump runs: a
        // dump that adds to this writer gets "writer is busy".
        let mut scratch = self
            .scratch
            .try_borrow_mut()
            .map_err(|_| Self::busy(ruby))?;
        let kind = crate::value::store_value(ruby, value, dump, &mut scratch)
            .map_err(|e| e.into_ruby(ruby, &key_bytes))?;
        let record = Record {
            key: &key_bytes,
            key_utf8,
            value: &scratch,
            kind,
        };
        builder.insert_record(record);
        Ok(())
    }

    fn add(ruby: &Ruby, rb_self: &Self, key: Value, value: Value) -> Result<(), Error> {
        rb_self.add_entry(ruby, key, value)
    }

    /// Adds every pair of a Hash. Iterating in C never reaches a point where
    /// Ruby switches threads or delivers interrupts, so every
    /// `YIELD_EVERY` entries this takes interrupts (Timeout, Thread#raise,
    /// Ctrl-C, as an Err that unwinds normally) and lets other threads run.
    fn add_hash(ruby: &Ruby, rb_self: &Self, hash: RHash) -> Result<(), Error> {
        const YIELD_EVERY: u32 = 4096;
        let mut until_yield = YIELD_EVERY;
        hash.foreach(|key: Value, value: Value| {
            rb_self.add_entry(ruby, key, value)?;
            until_yield -= 1;
            if until_yield == 0 {
                until_yield = YIELD_EVERY;
                ruby.thread_check_ints()?;
                // SAFETY: called holding the GVL; protect turns anything it
                // raises into an Err.
                magnus::rb_sys::protect(|| {
                    // SAFETY: see above; this closure runs with the GVL held.
                    unsafe { rb_sys::rb_thread_schedule() };
                    rb_sys::Qnil as rb_sys::VALUE
                })?;
            }
            Ok(ForEach::Continue)
        })
    }

    fn size(&self) -> usize {
        self.builder.borrow().as_ref().map_or(0, Target::len)
    }

    /// Builds and publishes the store (or the dataset's shards, then its
    /// manifest) with the GVL released. Returns the bytes written (of all
    /// shards). The writer is finished afterwards, whatever happens.
    /// An interrupt (Ctrl-C, `Thread#raise`, a signal) cancels the build,
    /// which publishes nothing, and is raised once the build has stopped.
    fn finish(ruby: &Ruby, rb_self: &Self, path: String) -> Result<u64, Error> {
        let builder = rb_self
            .builder
            .try_borrow_mut()
            .map_err(|_| Self::busy(ruby))?
            .take()
            .ok_or_else(|| Error::new(ruby.get_inner(&CLOSED_ERROR), "writer is finished"))?;
        let path = PathBuf::from(path);
        let pool = hashfile_runtime::pool::for_build(None).map_err(|e| to_ruby(ruby, e))?;
        let cancel = CancelFlag::new();
        let stop = cancel.clone();
        let result = crate::nogvl::without_gvl(
            ruby,
            move || builder.finish(&path, &stop, &pool),
            Some(cancel.as_atomic()),
        )?;
        if let Err(hashfile::Error::Cancelled) = result {
            ruby.thread_check_ints()?;
        }
        result.map_err(|e| to_ruby(ruby, e))
    }
}

/// A key as stored: a String's bytes, or a Symbol's name, and whether it
/// is text (UTF-8 or US-ASCII) or binary; another encoding is refused.
pub(crate) fn stored_key(ruby: &Ruby, key: Value) -> Result<(Vec<u8>, bool), Error> {
    // A Symbol is stored by its name, in the name's encoding.
    let key_string =
        RString::from_value(key).or_else(|| Symbol::from_value(key).map(strings::symbol_name));
    let Some(s) = key_string else {
        return Err(type_error(
            ruby,
            format!("key must be a String or Symbol, not {}", class_name(key)),
        ));
    };
    let utf8 = match strings::stored_encoding(ruby, s) {
        Stored::Tagged(hashfile::value::Encoding::Binary) => false,
        Stored::Tagged(_) => true,
        Stored::Named(name) => {
            return Err(crate::error::arg_error(
                ruby,
                format!(
                    "key {} has encoding {name}; keys must be UTF-8, US-ASCII or ASCII-8BIT",
                    s.inspect()
                ),
            ))
        }
    };
    // SAFETY: copied at once, before any Ruby code runs.
    Ok((unsafe { strings::bytes(s) }.to_vec(), utf8))
}

pub(crate) fn init(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    let class = module.define_class("Writer", ruby.class_object())?;
    // Writers are made by `_new` alone: no data-less `allocate`.
    class.undef_default_alloc_func();
    class.define_singleton_method("_new", function!(Writer::new, 2))?;
    class.define_method("_add", method!(Writer::add, 2))?;
    class.define_method("_add_hash", method!(Writer::add_hash, 1))?;
    class.define_method("size", method!(Writer::size, 0))?;
    class.define_method("_finish", method!(Writer::finish, 1))?;
    Ok(())
}
