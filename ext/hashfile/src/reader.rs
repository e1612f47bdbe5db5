//! `Hashfile::Reader`: an open store. The Ruby API with keyword arguments
//! and docs is in lib/hashfile/reader.rb; these are the native methods.

use hashfile::value::{self as codec, walk, Dig, Probe};
use hashfile::{RecordBuf, ValueKind};
use hashfile_runtime::options::{decode_for_call, DecodeOptions, Language};
use hashfile_runtime::{Cursor, Info, InfoValue, SerializedHandle, Table};
use magnus::{
    function, gc::Marker, method, prelude::*, value::Opaque, DataTypeFunctions, Error, RArray,
    RHash, RModule, RString, Ruby, TypedData, Value,
};

use magnus::rb_sys::AsRawValue;

use crate::error::to_ruby;
use crate::memo::Memo;
use crate::store;
use crate::store::Gvl;
use crate::strings;
use crate::typed_data::unwrap_self;
use crate::value::{Decoder, OwnedProbe};
use hashfile_runtime::reads;

/// The open location is a `hashfile_runtime::SerializedHandle` (the GVL
/// serializes every call): it holds the store read now and swaps in a
/// newer one (`reopen`, `reload:` on access, `on_change: :reopen`) only
/// between lookups. A lookup reads one store from start to end, Ruby code
/// it runs meanwhile included (a serializer's `load`, the `dig` fallback,
/// allocations): a swap or a `close` by that code or by another thread
/// takes effect for the next lookup, and the store goes when the last
/// lookup reading it ends.
#[derive(TypedData)]
#[magnus(class = "Hashfile::Reader", free_immediately, size, mark)]
pub(crate) struct Reader {
    handle: SerializedHandle,
    /// The decode options given to `Hashfile.open`.
    flags: DecodeOptions,
    /// The `load` half of the serializer given to `Hashfile.open`.
    load: Option<Opaque<Value>>,
    /// The values of recent lookups, with `memo:`.
    memo: Option<Memo>,
}

impl DataTypeFunctions for Reader {
    fn mark(&self, marker: &Marker) {
        if let Some(load) = self.load {
            marker.mark(load);
        }
        if let Some(memo) = &self.memo {
            memo.mark(marker);
        }
    }
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
    /// `_open(path, options, load)`: `options` are the keywords given to
    /// `Hashfile.open` (a Hash or nil), judged by the runtime's table
    /// (`hashfile_runtime::options::open_request`); `load` is the `load`
    /// half of the serializer given (or nil). With `verify: true`, every
    /// checksum is checked before the reader is handed out.
    fn open(
        ruby: &Ruby,
        path: String,
        options: Option<RHash>,
        load: Value,
    ) -> Result<Reader, Error> {
        let given = crate::options::given(ruby, options)?;
        let request = hashfile_runtime::options::open_request(&path, &given, Language::Ruby)
            .map_err(|e| to_ruby(ruby, e))?;
        let flags = request.decode;
        let open_options = request.options;
        let handle = if hashfile_remote::Location::is_remote(&path) {
            reads::remote(&Gvl(ruby), move || {
                hashfile_runtime::open(&path, open_options)
            })?
        } else {
            hashfile_runtime::open(&path, open_options)
        }
        .map_err(|e| to_ruby(ruby, e))?;
        let memo = (request.memo > 0)
            .then(|| Memo::new(ruby, request.memo as usize, handle.generation_now()));
        let reader = Reader {
            handle: SerializedHandle::new(handle),
            flags,
            load: (!load.is_nil()).then(|| Opaque::from(load)),
            memo,
        };
        if request.verify {
            if let Err(e) = Reader::verify(ruby, &reader) {
                Reader::close(ruby, &reader);
                return Err(e);
            }
        }
        Ok(reader)
    }

    /// `stale?`: whether the path names another file than the one this
    /// reader reads (a newer store was published there), or none.
    fn is_stale(ruby: &Ruby, rb_self: &Self) -> Result<bool, Error> {
        let handle = rb_self.handle.handle();
        if handle.is_remote() {
            // A remote dataset's manifest is fetched: without the GVL.
            return reads::remote(&Gvl(ruby), || Ok(handle.is_stale()))
                .map(|stale| stale.unwrap_or(true));
        }
        Ok(handle.is_stale())
    }

    /// `_reopen`: opens the store the path names now and reads it from the
    /// next lookup on (lookups under way finish on the old one). Raises,
    /// keeping the old store, if the new file cannot be opened.
    fn reopen(ruby: &Ruby, rb_self: &Self) -> Result<(), Error> {
        let handle = rb_self.handle.handle();
        if handle.is_remote() {
            reads::remote(&Gvl(ruby), || handle.reopen())?
        } else {
            handle.reopen()
        }
        .map_err(|e| to_ruby(ruby, e))
    }

    /// `reload_error`: why the last reload could not open the new file, or
    /// nil.
    fn reload_error(&self) -> Option<String> {
        self.handle.handle().refresh_error()
    }

    /// `generation`: how many times a newer store replaced the one read
    /// (after a `reload:` check, if one is due). A cache of looked-up
    /// values is dropped when it changes.
    fn generation(&self) -> u64 {
        self.handle.handle().generation()
    }

    /// `_pin`: a reader of this reader's current store alone, which no
    /// reload swaps: `each` iterates one mapping from start to end.
    fn pin(ruby: &Ruby, rb_self: &Self) -> Result<Reader, Error> {
        Ok(Reader {
            handle: SerializedHandle::new(
                rb_self
                    .handle
                    .handle()
                    .pinned()
                    .map_err(|e| to_ruby(ruby, e))?,
            ),
            flags: rb_self.flags,
            load: rb_self.load,
            memo: None,
        })
    }

    fn path(&self) -> &str {
        self.handle.handle().location()
    }

    /// Runs `f` on the current store, then checks that no page it read
    /// faulted.
    #[inline]
    fn with_store<R>(
        &self,
        ruby: &Ruby,
        f: impl FnOnce(&Table) -> Result<R, Error>,
    ) -> Result<R, Error> {
        // Whatever `f` read, a page that faulted meanwhile makes it
        // untrustworthy: that error comes first.
        self.handle.with_store(f).map_err(|e| to_ruby(ruby, e))?
    }

    #[inline]
    fn decoder<'r>(&'r self, ruby: &'r Ruby, flags: DecodeOptions) -> Decoder<'r> {
        Decoder {
            ruby,
            flags,
            load: self
                .load
                .map_or_else(|| ruby.qnil().as_value(), |load| ruby.get_inner(load)),
            key: None,
            location: self.path(),
        }
    }

    /// The decode options of one `call`: this reader's, with the options
    /// given to the call (a Hash, or nil) judged by the runtime
    /// (`decode_for_call`).
    fn decode_options(
        &self,
        ruby: &Ruby,
        call: &str,
        options: Option<RHash>,
    ) -> Result<DecodeOptions, Error> {
        if options.is_none() {
            return Ok(self.flags);
        }
        let given = crate::options::given(ruby, options)?;
        let given: Vec<(&str, &_)> = given
            .iter()
            .map(|(name, arg)| (name.as_str(), arg))
            .collect();
        decode_for_call(call, self.flags, &given).map_err(|e| to_ruby(ruby, e))
    }

    /// `db[key]`: the value, or `if_missing` when the key is absent.
    #[inline]
    fn lookup(
        &self,
        ruby: &Ruby,
        key: Value,
        if_missing: Value,
        flags: DecodeOptions,
    ) -> Result<Value, Error> {
        self.with_store(ruby, |store| {
            match store::find(ruby, self.handle.handle(), store, key)? {
                // The record borrows the mapping, not the key, whose borrow ended
                // inside `find` before anything is allocated.
                Some(Ok(Some(record))) => self.decoder(ruby, flags).record(&record.record()),
                Some(Ok(None)) | None => Ok(if_missing),
                Some(Err(e)) => Err(to_ruby(ruby, e.with_path(self.path().as_ref()))),
            }
        })
    }

    /// `lookup` with the open-time options, through the memo: a hit is the
    /// object decoded before; a miss reads, decodes and adds it.
    #[inline]
    fn memo_lookup(
        &self,
        ruby: &Ruby,
        memo: &Memo,
        key: Value,
        if_missing: Value,
    ) -> Result<Value, Error> {
        let handle = self.handle.handle();
        // The generation before the store: a value read from a newer store
        // than its generation says is dropped by the next lookup, never
        // the reverse. A closed reader answers with ClosedError.
        let generation = handle.generation();
        if !Memo::takes(ruby, key) || handle.is_closed() {
            return self.lookup(ruby, key, if_missing, self.flags);
        }
        let values = memo.at(ruby, generation);
        if let Some(value) = Memo::get(values, key) {
            return Ok(value);
        }
        // The memo's own Hash stands for "absent": no decoded value is it.
        let absent = values.as_value();
        let value = self.lookup(ruby, key, absent, self.flags)?;
        if value.as_raw() == absent.as_raw() {
            return Ok(if_missing);
        }
        memo.insert(ruby, generation, key, value)?;
        Ok(value)
    }

    // The lookup methods take `self` as a Value and unwrap it with
    // `unwrap_self`, skipping the rb_protect (a setjmp) that magnus's `&Self`
    // conversion costs on every call.

    fn aref(ruby: &Ruby, rb_self: Value, key: Value) -> Result<Value, Error> {
        let reader = unwrap_self::<Self>(ruby, rb_self, "Hashfile::Reader")?;
        match &reader.memo {
            Some(memo) => reader.memo_lookup(ruby, memo, key, ruby.qnil().as_value()),
            None => reader.lookup(ruby, key, ruby.qnil().as_value(), reader.flags),
        }
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
        let flags = reader.decode_options(ruby, "get", options)?;
        match &reader.memo {
            // The memo holds values decoded with the open-time options.
            Some(memo) if flags == reader.flags => reader.memo_lookup(ruby, memo, key, if_missing),
            _ => reader.lookup(ruby, key, if_missing, flags),
        }
    }

    /// `_get_with(key, if_missing, symbolize_names, freeze, raw)`: `_get`
    /// with the per-call options as values (nil: as at open), which is
    /// what `Reader#get`'s keywords pass: no options Hash to build or read.
    fn get_with(
        ruby: &Ruby,
        rb_self: Value,
        key: Value,
        if_missing: Value,
        symbolize_names: Value,
        freeze: Value,
        raw: Value,
    ) -> Result<Value, Error> {
        let reader = unwrap_self::<Self>(ruby, rb_self, "Hashfile::Reader")?;
        let flags = if symbolize_names.is_nil() && freeze.is_nil() && raw.is_nil() {
            reader.flags
        } else {
            // On the stack: true, false and nil convert without allocating
            // (a third of `get`'s time with keywords went to two Vecs).
            let [s, f, r] = [symbolize_names, freeze, raw].map(|v| crate::options::arg(v, 0));
            let (s, f, r) = (s?, f?, r?);
            let given = [("symbolize_names", &s), ("freeze", &f), ("raw", &r)];
            decode_for_call("get", reader.flags, &given).map_err(|e| to_ruby(ruby, e))?
        };
        match &reader.memo {
            Some(memo) if flags == reader.flags => reader.memo_lookup(ruby, memo, key, if_missing),
            _ => reader.lookup(ruby, key, if_missing, flags),
        }
    }

    fn dig(
        ruby: &Ruby,
        rb_self: Value,
        key: Value,
        path: RArray,
        options: Option<RHash>,
    ) -> Result<Value, Error> {
        let reader = unwrap_self::<Self>(ruby, rb_self, "Hashfile::Reader")?;
        let flags = reader.decode_options(ruby, "dig", options)?;
        reader.with_store(ruby, |store| {
            let decoder = reader.decoder(ruby, flags);
            let handle = reader.handle.handle();
            let damaged = |e: hashfile::Error| to_ruby(ruby, e.with_path(reader.path().as_ref()));
            if flags.raw {
                // The bytes as stored: Ruby's own dig on the whole String.
                return match store::find(ruby, handle, store, key)? {
                    Some(Ok(Some(record))) => decoder.whole(&record.record(), path),
                    Some(Ok(None)) | None => Ok(ruby.qnil().as_value()),
                    Some(Err(e)) => Err(damaged(e)),
                };
            }
            // The key is copied: Ruby runs while the answer is decoded.
            let Some(key) = store::with_key(key, <[u8]>::to_vec)? else {
                return Ok(ruby.qnil().as_value());
            };
            let owned = decoder.probes(path)?;
            let probes: Vec<_> = owned.iter().map(OwnedProbe::probe).collect();
            let symbolize_names = flags.symbolize_names;
            let answered = reads::dig(
                &Gvl(ruby),
                handle,
                store,
                &key,
                &probes,
                symbolize_names,
                |record, walked| {
                    let decoder = decoder.for_key(record.key);
                    match walked {
                        Some(walked) => decoder.answer(&walked, path, probes.len()),
                        None => decoder.whole(record, path),
                    }
                },
            )?;
            match answered {
                Ok(Some(answer)) => answer,
                Ok(None) => Ok(ruby.qnil().as_value()),
                Err(e) => Err(damaged(e)),
            }
        })
    }

    fn has_key(ruby: &Ruby, rb_self: Value, key: Value) -> Result<bool, Error> {
        let reader = unwrap_self::<Self>(ruby, rb_self, "Hashfile::Reader")?;
        reader.with_store(ruby, |store| {
            match store::find(ruby, reader.handle.handle(), store, key)? {
                Some(Ok(found)) => Ok(found.is_some()),
                None => Ok(false),
                Some(Err(e)) => Err(to_ruby(ruby, e.with_path(reader.path().as_ref()))),
            }
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
        // A batch reads much of the store: mapped, if it opened unmapped.
        rb_self.handle.map_now().map_err(|e| to_ruby(ruby, e))?;
        rb_self.with_store(ruby, |store| {
            let found = store::find_many(ruby, rb_self.handle.handle(), store, keys)?
                .map_err(|e| to_ruby(ruby, e.with_path(rb_self.path().as_ref())))?;
            let out = ruby.ary_new_capa(found.len());
            for record in &found {
                match record {
                    Some(record) => out.push(decoder.record(&record.record())?)?,
                    None => out.push(if_missing)?,
                }
            }
            Ok(out)
        })
    }

    /// `_each_chunk(cursor)`: up to CHUNK records from `cursor`, an opaque
    /// `[shard, offset, index]` (`[0, 0, 0]` first), as
    /// `[next_cursor_or_nil, key, value, key, value, ...]`.
    fn each_chunk(ruby: &Ruby, rb_self: &Self, cursor: (usize, u64, u64)) -> Result<RArray, Error> {
        let decoder = rb_self.decoder(ruby, rb_self.flags);
        rb_self.chunk_of(ruby, cursor, |out, record| {
            out.push(key_string(ruby, record)?)?;
            out.push(decoder.record(&record.record())?)
        })
    }

    /// `_path(key, steps, label, if_missing)`: the value the text `steps`
    /// of `hashfile get --path` find in `key`'s value (the core's
    /// `Probe::Step`: a String key, else a Symbol; an index in digits),
    /// decoded; `if_missing` if the key or a step finds nothing.
    fn text_path(
        ruby: &Ruby,
        rb_self: &Self,
        key: RString,
        steps: RArray,
        label: RString,
        if_missing: Value,
    ) -> Result<Value, Error> {
        rb_self
            .at_text_path(ruby, key, steps, label, None)
            .map(|found| found.unwrap_or(if_missing))
    }

    /// `_path_json(key, steps, label)`: as `_path`, the value as JSON text
    /// (`value::json`; Hashfile::Error naming `label` where JSON cannot
    /// hold it), or nil.
    fn text_path_json(
        ruby: &Ruby,
        rb_self: &Self,
        key: RString,
        steps: RArray,
        label: RString,
    ) -> Result<Value, Error> {
        let mut text = String::new();
        let found = rb_self.at_text_path(ruby, key, steps, label, Some(&mut text))?;
        Ok(found.map_or_else(
            || ruby.qnil().as_value(),
            |_| ruby.str_new(&text).as_value(),
        ))
    }

    /// What `_path` and `_path_json` find: the value decoded, or written
    /// as JSON into `json` (then the answer is nil, not None).
    fn at_text_path(
        &self,
        ruby: &Ruby,
        key: RString,
        steps: RArray,
        label: RString,
        json: Option<&mut String>,
    ) -> Result<Option<Value>, Error> {
        let decoder = self.decoder(ruby, self.flags);
        let mut copied = Vec::with_capacity(steps.len());
        for i in 0..steps.len() {
            let step: RString = steps.entry(i as isize)?;
            // SAFETY: copied at once, before Ruby runs.
            copied.push(unsafe { strings::bytes(step) }.to_vec());
        }
        // SAFETY: copied at once, before Ruby runs.
        let label = unsafe { strings::bytes(label) }.to_vec();
        let probes: Vec<Probe<'_>> = copied.iter().map(|s| Probe::Step(s)).collect();
        self.with_store(ruby, |store| {
            let record = match store::find(ruby, self.handle.handle(), store, key.as_value())? {
                Some(Ok(Some(record))) => record,
                Some(Ok(None)) | None => return Ok(None),
                Some(Err(e)) => return Err(to_ruby(ruby, e.with_path(self.path().as_ref()))),
            };
            let record = record.record();
            let decoder = decoder.for_key(record.key);
            let json_error = |e| decoder.damage(e);
            let found = match record.kind {
                ValueKind::Typed => {
                    codec::dig(record.value, &probes, false).map_err(|e| decoder.damage(e))?
                }
                // A string has no fields to walk into.
                _ if !probes.is_empty() => Dig::Absent,
                _ => {
                    return match json {
                        Some(out) => codec::json::write_record(&record, out)
                            .map(|()| Some(ruby.qnil().as_value()))
                            .map_err(json_error),
                        None => decoder.record(&record).map(Some),
                    }
                }
            };
            let Dig::Found(item) = found else {
                return Ok(None);
            };
            // Each step went one container down: what it found may nest
            // only as deep as is left, as `Reader#dig` and a decode of the
            // whole value have it.
            let depth_left = codec::MAX_DEPTH.saturating_sub(probes.len());
            match json {
                Some(out) => codec::json::write_item(&item, &label, depth_left, out)
                    .map(|()| Some(ruby.qnil().as_value()))
                    .map_err(json_error),
                None => walk::item_at(&mut decoder.clone(), &item, depth_left)
                    // SAFETY: a live VALUE the walk made.
                    .map(|v| Some(unsafe { <Value as magnus::rb_sys::FromRawValue>::from_raw(v) })),
            }
        })
    }

    /// `_json_chunk(cursor)`: as `_each_chunk`, with each key and value as
    /// JSON text (`value::json`); Hashfile::Error naming the first that
    /// JSON cannot hold. `hashfile dump`'s jsonl and json.
    fn json_chunk(ruby: &Ruby, rb_self: &Self, cursor: (usize, u64, u64)) -> Result<RArray, Error> {
        let decoder = rb_self.decoder(ruby, rb_self.flags);
        let mut text = String::new();
        rb_self.chunk_of(ruby, cursor, |out, record| {
            for key in [true, false] {
                text.clear();
                let written = if key {
                    codec::json::write_key(record.key(), &mut text)
                } else {
                    codec::json::write_record(&record.record(), &mut text)
                };
                // A damaged value names its key, as `each` has it.
                written.map_err(|e| decoder.for_key(record.key()).damage(e))?;
                out.push(ruby.str_new(&text))?;
            }
            Ok(())
        })
    }

    /// Up to CHUNK records from `cursor` as `[next_cursor_or_nil, ...]`,
    /// each record pushed by `push`. An iteration reads every record: the
    /// store is mapped at its start, if it opened unmapped.
    fn chunk_of(
        &self,
        ruby: &Ruby,
        (shard, offset, index): (usize, u64, u64),
        mut push: impl FnMut(RArray, &RecordBuf<'_>) -> Result<(), Error>,
    ) -> Result<RArray, Error> {
        if shard == 0 && offset == 0 {
            self.handle.map_now().map_err(|e| to_ruby(ruby, e))?;
        }
        let from = Cursor {
            shard,
            offset,
            index,
        };
        self.with_store(ruby, |store| {
            let (records, next) =
                store::guarded(ruby, || reads::chunk(&Gvl(ruby), store, from, CHUNK))??
                    .map_err(|e| to_ruby(ruby, e.with_path(self.path().as_ref())))?;
            let out = ruby.ary_new_capa(1 + 2 * records.len());
            out.push(next.map(|c| (c.shard, c.offset, c.index)))?;
            for record in &records {
                push(out, record)?;
            }
            Ok(out)
        })
    }

    /// `_value_types`: how many values of each type the store holds
    /// (`hashfile::value::type_name`), reading every record once without
    /// decoding any.
    fn value_types(ruby: &Ruby, rb_self: &Self) -> Result<RHash, Error> {
        rb_self.handle.map_now().map_err(|e| to_ruby(ruby, e))?;
        rb_self.with_store(ruby, |store| {
            let counts = store
                .value_types(|| ruby.thread_check_ints())?
                .map_err(|e| to_ruby(ruby, e.with_path(rb_self.path().as_ref())))?;
            let out = ruby.hash_new();
            for (name, count) in counts {
                out.aset(name, count)?;
            }
            Ok(out)
        })
    }

    fn verify(ruby: &Ruby, rb_self: &Self) -> Result<bool, Error> {
        // A counted store: a `close` by another thread while the check
        // runs without the GVL leaves it mapped until the check ends.
        let store = rb_self.handle.shared().map_err(|e| to_ruby(ruby, e))?;
        let result = reads::verify(&Gvl(ruby), &store)?;
        rb_self
            .handle
            .handle()
            .check_faults(&store)
            .and(result)
            .map_err(|e| to_ruby(ruby, e.with_path(rb_self.path().as_ref())))?;
        Ok(true)
    }

    /// Closes at once for every later call; the mapping goes when no lookup
    /// is under way (now, or when the last one ends).
    fn close(ruby: &Ruby, rb_self: &Self) {
        rb_self.handle.close();
        if let Some(memo) = &rb_self.memo {
            memo.clear(ruby);
        }
    }

    /// `Reader._remote_location?(location)`: whether `location` names a
    /// remote store; the one place that decides, for Ruby too.
    fn is_remote_location(location: String) -> bool {
        hashfile_remote::Location::is_remote(&location)
    }

    /// `remote?`: whether the store is read over HTTP or from S3.
    fn is_remote(&self) -> bool {
        self.handle.handle().is_remote()
    }

    fn is_closed(&self) -> bool {
        self.handle.handle().is_closed()
    }

    fn path_string(&self) -> String {
        self.path().to_owned()
    }

    fn info(ruby: &Ruby, rb_self: &Self) -> Result<RHash, Error> {
        let mut info =
            rb_self.with_store(ruby, |table| table.info().map_err(|e| to_ruby(ruby, e)))?;
        if let Some(memo) = &rb_self.memo {
            info = info.with_memo(memo.len(ruby), memo.limit());
        }
        info_hash(ruby, &info)
    }
}

/// The runtime's `info` tree as Ruby shows it: Hashes of Symbols, names
/// as Symbols.
fn info_hash(ruby: &Ruby, info: &Info) -> Result<RHash, Error> {
    let out = ruby.hash_new();
    for (key, value) in &info.0 {
        out.aset(ruby.to_symbol(key), info_value(ruby, value)?)?;
    }
    Ok(out)
}

pub(crate) fn info_value(ruby: &Ruby, value: &InfoValue) -> Result<Value, Error> {
    Ok(match value {
        InfoValue::Int(i) => ruby.into_value(*i),
        InfoValue::Float(f) => ruby.into_value(*f),
        InfoValue::Text(t) => ruby.into_value(t.as_str()),
        InfoValue::Name(n) => ruby.to_symbol(n).as_value(),
        InfoValue::Bool(b) => ruby.into_value(*b),
        InfoValue::Nil => ruby.qnil().as_value(),
        InfoValue::Map(map) => info_hash(ruby, map)?.as_value(),
        InfoValue::List(items) => {
            let list = ruby.ary_new_capa(items.len());
            for item in items {
                list.push(info_value(ruby, item)?)?;
            }
            list.as_value()
        }
    })
}

pub(crate) fn init(ruby: &Ruby, module: RModule) -> Result<(), Error> {
    // Chains to the SIGBUS handler Ruby installed at boot for every fault
    // outside a store's map. If it cannot be installed, stores are read
    // unguarded, as before.
    let _ = hashfile::read::fault::install();
    let class = module.define_class("Reader", ruby.class_object())?;
    module.const_set("MAX_MEMO", hashfile_runtime::MAX_MEMO_ENTRIES)?;
    // Readers are made by `_open` alone: no data-less `allocate`.
    class.undef_default_alloc_func();
    class.define_singleton_method("_open", function!(Reader::open, 3))?;
    class.define_method("[]", method!(Reader::aref, 1))?;
    class.define_method("_get", method!(Reader::get, 3))?;
    class.define_method("_get_with", method!(Reader::get_with, 5))?;
    class.define_method("_dig", method!(Reader::dig, 3))?;
    class.define_method("key?", method!(Reader::has_key, 1))?;
    class.define_method("size", method!(Reader::size, 0))?;
    class.define_method("_each_chunk", method!(Reader::each_chunk, 1))?;
    class.define_method("_value_types", method!(Reader::value_types, 0))?;
    class.define_method("_path", method!(Reader::text_path, 4))?;
    class.define_method("_path_json", method!(Reader::text_path_json, 3))?;
    class.define_method("_json_chunk", method!(Reader::json_chunk, 1))?;
    class.define_method("_get_many", method!(Reader::get_many, 2))?;
    class.define_method("remote?", method!(Reader::is_remote, 0))?;
    class.define_singleton_method(
        "_remote_location?",
        function!(Reader::is_remote_location, 1),
    )?;
    class.define_method("_verify", method!(Reader::verify, 0))?;
    class.define_method("close", method!(Reader::close, 0))?;
    class.define_method("closed?", method!(Reader::is_closed, 0))?;
    class.define_method("path", method!(Reader::path_string, 0))?;
    class.define_method("_info", method!(Reader::info, 0))?;
    class.define_method("stale?", method!(Reader::is_stale, 0))?;
    class.define_method("_reopen", method!(Reader::reopen, 0))?;
    class.define_method("reload_error", method!(Reader::reload_error, 0))?;
    class.define_method("_pin", method!(Reader::pin, 0))?;
    class.define_method("generation", method!(Reader::generation, 0))?;
    Ok(())
}
