//! `Hashfile::Reader`: an open store. The Ruby API with keyword arguments
//! and docs is in lib/hashfile/reader.rb; these are the native methods.

use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hashfile::RecordBuf;
use hashfile_remote::RemoteOptions;
use magnus::{
    function, gc::Marker, method, prelude::*, value::Opaque, DataTypeFunctions, Error, RArray,
    RHash, RModule, RString, Ruby, TypedData, Value,
};

use crate::error::{arg_error, to_ruby, CLOSED_ERROR};
use crate::store::Store;
use crate::strings;
use crate::typed_data::unwrap_self;
use crate::value::{DecodeFlags, Decoder};

/// The store lives in an `Arc` so that `verify`, which runs without the GVL,
/// keeps the mapping alive even if another thread closes the reader, and an
/// `each` keeps the mapping it began on (`_pin`).
///
/// A reader can swap in the store newly published at its path (`reopen`,
/// or `reload:` on access): the swap happens when no lookup is under way,
/// so each lookup reads one mapping from start to end, never a mix; a
/// `reopen` while lookups are under way waits in `pending` for the last to
/// end. The old mapping goes with its last user.
///
/// A lookup runs Ruby code while it reads the mapping (a serializer's
/// `load`, the `dig` fallback, allocations), during which another thread
/// may call `close`, or an interrupt may arrive. So a lookup does not hold a
/// borrow across it: it counts itself in `in_flight`, and `close` marks the
/// reader closed at once but leaves the mapping in place until the last
/// lookup under way has finished. Cells suffice: every method runs holding
/// the GVL, so they are never touched by two threads at once.
#[derive(TypedData)]
#[magnus(class = "Hashfile::Reader", free_immediately, size, mark)]
pub struct Reader {
    /// The open store, until `close` and the last lookup under way end.
    store: RefCell<Option<Arc<Store>>>,
    /// Set by `close`: every later call raises ClosedError.
    closed: Cell<bool>,
    /// Lookups reading the mapping now (nested when a serializer's `load`
    /// looks something up in the same store).
    in_flight: Cell<usize>,
    /// A newer store, opened while lookups were under way: it replaces
    /// `store` when the last of them ends.
    pending: RefCell<Option<Arc<Store>>>,
    /// Checking the path for a new store on access (`reload:`).
    reload: Option<Reload>,
    path: String,
    /// How a remote store is reached (unused for a local one): kept to
    /// open the store again on `reopen`.
    remote: RemoteOptions,
    /// The decode options given to `Hashfile.open`.
    flags: DecodeFlags,
    /// The `load` half of the serializer given to `Hashfile.open`.
    load: Option<Opaque<Value>>,
}

impl DataTypeFunctions for Reader {
    fn mark(&self, marker: &Marker) {
        if let Some(load) = self.load {
            marker.mark(load);
        }
    }
}

/// `Hashfile.open(path, reload: SECONDS)`: on access, at most every
/// `every`, the reader looks whether its path names another file, and if
/// so opens it and swaps it in.
struct Reload {
    every: Duration,
    next_check: Cell<Instant>,
    /// Why the last new file could not be opened (the old store is served
    /// meanwhile, and the next check tries again).
    error: RefCell<Option<String>>,
}

/// Records returned per `_each_chunk` call: large enough to amortise the
/// call, small enough that `close` inside `each` takes effect promptly.
const CHUNK: usize = 1024;

/// A new frozen Ruby String holding the key, as Hash keys are.
fn key_string(ruby: &Ruby, record: &RecordBuf<'_>) -> Result<RString, Error> {
    let key = strings::new(
        ruby,
        record.key(),
        strings::key_encoding(record.key_utf8()),
        false,
    )?;
    key.freeze();
    Ok(key)
}

impl Reader {
    /// `_open(path, options, load, reload, remote)`: decode `options` (a
    /// Hash or nil) and the serializer's `load` (or nil) are kept for every
    /// lookup; `reload` is nil or the seconds between checks for a new
    /// store; `remote` (a Hash or nil) says how to reach an http://,
    /// https:// or s3:// store.
    fn open(
        ruby: &Ruby,
        path: String,
        options: Option<RHash>,
        load: Value,
        reload: Option<f64>,
        remote: Option<RHash>,
    ) -> Result<Reader, Error> {
        let flags = DecodeFlags::default().with_options(ruby, options)?;
        let is_remote = hashfile_remote::Location::is_remote(&path);
        let reload = match reload {
            None => None,
            Some(_) if is_remote => return Err(arg_error(ruby, format!("reload: is for local stores; a remote one raises StaleError when the object is replaced ({path})"))),
            Some(seconds) => {
                let every = crate::options::reload_interval(ruby, seconds)?;
                Some(Reload { every, next_check: Cell::new(Instant::now() + every), error: RefCell::new(None) })
            }
        };
        let remote = match remote {
            Some(given) if !is_remote => {
                let (names, count) = (crate::options::names(given)?, given.len());
                return Err(arg_error(
                    ruby,
                    format!(
                        "the option{} {names} {} for remote stores (http://, https://, s3://), and {path} is a file",
                        if count == 1 { "" } else { "s" },
                        if count == 1 { "is" } else { "are" },
                    ),
                ));
            }
            given => crate::options::remote_options(ruby, given)?,
        };
        let store = Store::open(ruby, &path, &remote)?.map_err(|e| to_ruby(ruby, e))?;
        let load = (!load.is_nil()).then(|| Opaque::from(load));
        Ok(Reader::on(
            Arc::new(store),
            path,
            remote,
            flags,
            load,
            reload,
        ))
    }

    fn on(
        store: Arc<Store>,
        path: String,
        remote: RemoteOptions,
        flags: DecodeFlags,
        load: Option<Opaque<Value>>,
        reload: Option<Reload>,
    ) -> Reader {
        Reader {
            store: RefCell::new(Some(store)),
            closed: Cell::new(false),
            in_flight: Cell::new(0),
            pending: RefCell::new(None),
            reload,
            path,
            remote,
            flags,
            load,
        }
    }

    /// Makes `store` the one every later lookup reads: now if no lookup is
    /// under way, else when the last one ends.
    fn install(&self, store: Arc<Store>) {
        if self.in_flight.get() == 0 {
            *self.store.borrow_mut() = Some(store);
        } else {
            *self.pending.borrow_mut() = Some(store);
        }
    }

    /// With `reload:`, at most every `every`: if the path names another
    /// file, opens it and swaps it in. A file that cannot be opened is
    /// remembered (`reload_error`) and the old store is served meanwhile.
    fn check_reload(&self, reload: &Reload) {
        let now = Instant::now();
        if now < reload.next_check.get() {
            return;
        }
        reload.next_check.set(now + reload.every);
        let stale = match &*self.store.borrow() {
            Some(store) => store.is_stale(&self.path),
            None => false,
        };
        if stale {
            match hashfile::Reader::open_guarded(&self.path).map(Store::Local) {
                Ok(store) => {
                    self.install(Arc::new(store));
                    reload.error.borrow_mut().take();
                }
                Err(e) => *reload.error.borrow_mut() = Some(e.to_string()),
            }
        }
    }

    /// `stale?`: whether the path names another file than the one this
    /// reader reads, or will read once the lookups under way end (a newer
    /// store was published there), or none.
    fn is_stale(ruby: &Ruby, rb_self: &Self) -> Result<bool, Error> {
        // A store waiting to take over is the one the reader reads next.
        let store = match rb_self.pending.borrow().clone() {
            Some(pending) => pending,
            None => rb_self.shared(ruby)?,
        };
        Ok(store.is_stale(&rb_self.path))
    }

    /// `_reopen`: opens the store the path names now and reads it from the
    /// next lookup on (lookups under way finish on the old one). Raises,
    /// keeping the old store, if the new file cannot be opened.
    fn reopen(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        if rb_self.closed.get() {
            return Err(rb_self.closed(ruby));
        }
        let store =
            Store::open(ruby, &rb_self.path, &rb_self.remote)?.map_err(|e| to_ruby(ruby, e))?;
        rb_self.install(Arc::new(store));
        if let Some(reload) = &rb_self.reload {
            reload.error.borrow_mut().take();
        }
        Ok(())
    }

    /// `reload_error`: why the last reload could not open the new file, or
    /// nil.
    fn reload_error(&self) -> Option<String> {
        self.reload.as_ref().and_then(|r| r.error.borrow().clone())
    }

    /// `_pin`: a reader of this reader's current store alone, which no
    /// reload swaps: `each` iterates one mapping from start to end.
    fn pin(ruby: &Ruby, rb_self: &Self) -> Result<Reader, Error> {
        let store = rb_self.shared(ruby)?;
        Ok(Reader::on(
            store,
            rb_self.path.clone(),
            rb_self.remote.clone(),
            rb_self.flags,
            rb_self.load,
            None,
        ))
    }

    fn closed(&self, ruby: &Ruby) -> Error {
        Error::new(
            ruby.get_inner(&CLOSED_ERROR),
            format!("closed store {}", self.path),
        )
    }

    /// Runs `f` on the open store, counted in `in_flight` so that a `close`
    /// meanwhile leaves the mapping in place until `f` returns.
    #[inline]
    fn with_store<R>(
        &self,
        ruby: &Ruby,
        f: impl FnOnce(&Store) -> Result<R, Error>,
    ) -> Result<R, Error> {
        if self.closed.get() {
            return Err(self.closed(ruby));
        }
        if let Some(reload) = &self.reload {
            // Only between lookups: one under way keeps its mapping.
            if self.in_flight.get() == 0 {
                self.check_reload(reload);
            }
        }
        let store: *const Store = match &*self.store.borrow() {
            Some(store) => Arc::as_ptr(store),
            None => return Err(self.closed(ruby)),
        };
        let _counted = InFlight::enter(self);
        // SAFETY: the Arc stays in `self.store` while `in_flight` is above
        // zero (`close` and `InFlight::drop` take it out only at zero), and
        // the reader itself outlives this call, so the store outlives `f`.
        let store = unsafe { &*store };
        let result = f(store);
        // Whatever `f` read, a page that faulted meanwhile makes it untrustworthy.
        store
            .check_faults()
            .map_err(|e| to_ruby(ruby, e.with_path(self.path.as_ref())))?;
        result
    }

    /// A counted handle, for work that runs without the GVL.
    fn shared(&self, ruby: &Ruby) -> Result<Arc<Store>, Error> {
        if self.closed.get() {
            return Err(self.closed(ruby));
        }
        self.store.borrow().clone().ok_or_else(|| self.closed(ruby))
    }

    #[inline]
    fn decoder<'r>(&self, ruby: &'r Ruby, flags: DecodeFlags) -> Decoder<'r> {
        Decoder {
            ruby,
            flags,
            load: self
                .load
                .map_or_else(|| ruby.qnil().as_value(), |load| ruby.get_inner(load)),
        }
    }

    /// `db[key]`: the value, or `if_missing` when the key is absent.
    #[inline]
    fn lookup(
        &self,
        ruby: &Ruby,
        key: Value,
        if_missing: Value,
        flags: DecodeFlags,
    ) -> Result<Value, Error> {
        self.with_store(ruby, |store| match store.find(ruby, key)? {
            // The record borrows the mapping, not the key, whose borrow ended
            // inside `find` before anything is allocated.
            Some(Ok(Some(record))) => self
                .decoder(ruby, flags)
                .record(&record.record())
                .map_err(|e| self.locate(ruby, e, record.key())),
            Some(Ok(None)) | None => Ok(if_missing),
            Some(Err(e)) => Err(to_ruby(ruby, e.with_path(self.path.as_ref()))),
        })
    }

    /// Adds the path and key to a decoding error's message.
    fn locate(&self, ruby: &Ruby, error: Error, key: &[u8]) -> Error {
        match error.value() {
            Some(exception)
                if exception.is_kind_of(ruby.get_inner(&crate::error::FORMAT_ERROR)) =>
            {
                let message = exception
                    .funcall::<_, _, String>("message", ())
                    .unwrap_or_default();
                Error::new(
                    ruby.get_inner(&crate::error::FORMAT_ERROR),
                    format!(
                        "{}: value of key {}: {message}",
                        self.path,
                        hashfile::DisplayBytes(key)
                    ),
                )
            }
            _ => error,
        }
    }

    // The lookup methods take `self` as a Value and unwrap it with
    // `unwrap_self`, skipping the rb_protect (a setjmp) that magnus's `&Self`
    // conversion costs on every call.

    fn aref(ruby: &Ruby, rb_self: Value, key: Value) -> Result<Value, Error> {
        let reader = unwrap_self::<Self>(ruby, rb_self, "Hashfile::Reader")?;
        reader.lookup(ruby, key, ruby.qnil().as_value(), reader.flags)
    }

    /// `_get(key, if_missing, options)`: options (a Hash or nil) override
    /// the open-time decode options for this call.
    fn get(
        ruby: &Ruby,
        rb_self: Value,
        key: Value,
        if_missing: Value,
        options: Option<RHash>,
    ) -> Result<Value, Error> {
        let reader = unwrap_self::<Self>(ruby, rb_self, "Hashfile::Reader")?;
        reader.lookup(
            ruby,
            key,
            if_missing,
            reader.flags.with_options(ruby, options)?,
        )
    }

    fn dig(
        ruby: &Ruby,
        rb_self: Value,
        key: Value,
        path: RArray,
        options: Option<RHash>,
    ) -> Result<Value, Error> {
        let reader = unwrap_self::<Self>(ruby, rb_self, "Hashfile::Reader")?;
        let flags = reader.flags.with_options(ruby, options)?;
        reader.with_store(ruby, |store| match store.find(ruby, key)? {
            Some(Ok(Some(record))) => reader
                .decoder(ruby, flags)
                .dig(&record.record(), path)
                .map_err(|e| reader.locate(ruby, e, record.key())),
            Some(Ok(None)) | None => Ok(ruby.qnil().as_value()),
            Some(Err(e)) => Err(to_ruby(ruby, e.with_path(reader.path.as_ref()))),
        })
    }

    fn has_key(ruby: &Ruby, rb_self: Value, key: Value) -> Result<bool, Error> {
        let reader = unwrap_self::<Self>(ruby, rb_self, "Hashfile::Reader")?;
        reader.with_store(ruby, |store| match store.find(ruby, key)? {
            Some(Ok(found)) => Ok(found.is_some()),
            None => Ok(false),
            Some(Err(e)) => Err(to_ruby(ruby, e.with_path(reader.path.as_ref()))),
        })
    }

    fn size(ruby: &Ruby, rb_self: &Self) -> Result<u64, Error> {
        rb_self.with_store(ruby, |store| Ok(store.len()))
    }

    /// `_get_many(keys, if_missing)`: the values of `keys` in order,
    /// `if_missing` for absent ones. A remote store fetches them as one
    /// batch (level by level, each level's requests together).
    fn get_many(
        ruby: &Ruby,
        rb_self: &Self,
        keys: RArray,
        if_missing: Value,
    ) -> Result<RArray, Error> {
        let decoder = rb_self.decoder(ruby, rb_self.flags);
        rb_self.with_store(ruby, |store| {
            let found = store
                .find_many(ruby, keys)?
                .map_err(|e| to_ruby(ruby, e.with_path(rb_self.path.as_ref())))?;
            let out = ruby.ary_new_capa(found.len());
            for record in &found {
                match record {
                    Some(record) => out.push(
                        decoder
                            .record(&record.record())
                            .map_err(|e| rb_self.locate(ruby, e, record.key()))?,
                    )?,
                    None => out.push(if_missing)?,
                }
            }
            Ok(out)
        })
    }

    /// Up to CHUNK records from byte `offset` of the records section, the
    /// first being entry number `index` (0-based), as
    /// `[next_offset_or_nil, key, value, key, value, ...]`.
    fn each_chunk(ruby: &Ruby, rb_self: &Self, offset: u64, index: u64) -> Result<RArray, Error> {
        let decoder = rb_self.decoder(ruby, rb_self.flags);
        rb_self.with_store(ruby, |store| {
            let (records, next) = store
                .chunk(ruby, offset, index, CHUNK)?
                .map_err(|e| to_ruby(ruby, e.with_path(rb_self.path.as_ref())))?;
            let out = ruby.ary_new_capa(1 + 2 * records.len());
            out.push(next)?;
            for record in &records {
                out.push(key_string(ruby, record)?)?;
                out.push(
                    decoder
                        .record(&record.record())
                        .map_err(|e| rb_self.locate(ruby, e, record.key()))?,
                )?;
            }
            Ok(out)
        })
    }

    /// `_value_types`: how many values of each type the store holds
    /// (`hashfile::value::type_name`), reading every record once without
    /// decoding any.
    fn value_types(ruby: &Ruby, rb_self: &Self) -> Result<RHash, Error> {
        rb_self.with_store(ruby, |store| {
            let mut counts = std::collections::BTreeMap::<&str, u64>::new();
            let (mut offset, mut index) = (Some(0), 0);
            while let Some(at) = offset {
                let (records, next) = store
                    .chunk(ruby, at, index, CHUNK)?
                    .map_err(|e| to_ruby(ruby, e.with_path(rb_self.path.as_ref())))?;
                index += records.len() as u64;
                for record in &records {
                    *counts
                        .entry(hashfile::value::type_name(record.kind(), record.value()))
                        .or_default() += 1;
                }
                offset = next;
                ruby.thread_check_ints()?;
            }
            let out = ruby.hash_new();
            for (name, count) in counts {
                out.aset(name, count)?;
            }
            Ok(out)
        })
    }

    fn verify(ruby: &Ruby, rb_self: &Self) -> Result<bool, Error> {
        let store = rb_self.shared(ruby)?;
        let result = store.verify(ruby)?;
        store
            .check_faults()
            .and(result)
            .map_err(|e| to_ruby(ruby, e.with_path(rb_self.path.as_ref())))?;
        Ok(true)
    }

    /// Closes at once for every later call; the mapping goes when no lookup
    /// is under way (now, or when the last one ends).
    fn close(&self) {
        self.closed.set(true);
        self.pending.borrow_mut().take();
        if self.in_flight.get() == 0 {
            self.store.borrow_mut().take();
        }
    }

    /// `Reader._remote_location?(location)`: whether `location` names a
    /// remote store; the one place that decides, for Ruby too.
    fn is_remote_location(location: String) -> bool {
        hashfile_remote::Location::is_remote(&location)
    }

    /// `remote?`: whether the store is read over HTTP or from S3.
    fn is_remote(&self) -> bool {
        hashfile_remote::Location::is_remote(&self.path)
    }

    fn is_closed(&self) -> bool {
        self.closed.get()
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
            out.aset(
                sym("format_version"),
                format!("{}.{}", header.major, header.minor),
            )?;
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
            if let Store::Remote(remote) = store {
                let stats = remote.source().stats();
                let object = remote.source().fetcher();
                let cache = ruby.hash_new();
                cache.aset(sym("block_bytes"), remote.source().block_len())?;
                cache.aset(sym("hits"), stats.hits)?;
                cache.aset(sym("misses"), stats.misses)?;
                cache.aset(sym("round_trips"), stats.fetches)?;
                cache.aset(sym("requests"), object.requests())?;
                cache.aset(sym("bytes_fetched"), stats.bytes_fetched)?;
                cache.aset(sym("resident_bytes"), stats.resident_bytes)?;
                cache.aset(sym("pinned_bytes"), stats.pinned_bytes)?;
                out.aset(sym("cache"), cache)?;
                out.aset(sym("etag"), object.identity().etag.clone())?;
                out.aset(
                    sym("last_modified"),
                    object.identity().last_modified.clone(),
                )?;
            }
            Ok(out)
        })
    }
}

/// A lookup under way: counted while it lives, and the last one out after
/// a `close` releases the mapping.
struct InFlight<'r>(&'r Reader);

impl<'r> InFlight<'r> {
    fn enter(reader: &'r Reader) -> InFlight<'r> {
        reader.in_flight.set(reader.in_flight.get() + 1);
        InFlight(reader)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let reader = self.0;
        let left = reader.in_flight.get() - 1;
        reader.in_flight.set(left);
        if left == 0 && reader.closed.get() {
            reader.store.borrow_mut().take();
        } else if left == 0 {
            // A store `reopen` opened meanwhile takes over now.
            if let Some(newer) = reader.pending.borrow_mut().take() {
                *reader.store.borrow_mut() = Some(newer);
            }
        }
    }
}

pub fn init(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    // Chains to the SIGBUS handler Ruby installed at boot for every fault
    // outside a store's map. If it cannot be installed, stores are read
    // unguarded, as before.
    let _ = hashfile::read::fault::install();
    let class = module.define_class("Reader", ruby.class_object())?;
    // Readers are made by `_open` alone: no data-less `allocate`.
    class.undef_default_alloc_func();
    class.define_singleton_method("_open", function!(Reader::open, 5))?;
    class.define_method("[]", method!(Reader::aref, 1))?;
    class.define_method("_get", method!(Reader::get, 3))?;
    class.define_method("_dig", method!(Reader::dig, 3))?;
    class.define_method("key?", method!(Reader::has_key, 1))?;
    class.define_method("size", method!(Reader::size, 0))?;
    class.define_method("_each_chunk", method!(Reader::each_chunk, 2))?;
    class.define_method("_value_types", method!(Reader::value_types, 0))?;
    class.define_method("_get_many", method!(Reader::get_many, 2))?;
    class.define_method("remote?", method!(Reader::is_remote, 0))?;
    class.define_singleton_method(
        "_remote_location?",
        function!(Reader::is_remote_location, 1),
    )?;
    class.define_method("_verify", method!(Reader::verify, 0))?;
    class.define_method("close", method!(Reader::close, 0))?;
    class.define_method("closed?", method!(Reader::is_closed, 0))?;
    class.define_method("path", method!(Reader::path, 0))?;
    class.define_method("_info", method!(Reader::info, 0))?;
    class.define_method("stale?", method!(Reader::is_stale, 0))?;
    class.define_method("_reopen", method!(Reader::reopen, 0))?;
    class.define_method("reload_error", method!(Reader::reload_error, 0))?;
    class.define_method("_pin", method!(Reader::pin, 0))?;
    Ok(())
}
