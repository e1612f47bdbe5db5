//! What a `Hashfile::Reader` reads: a local file on a guarded memory map,
//! or a remote store (http://, https://, s3://) through a block cache.
//!
//! A local lookup reads the map holding the GVL: it is a few hundred
//! nanoseconds, and never waits. A remote lookup may wait on the network,
//! so it runs without the GVL, with the key copied out of its Ruby String
//! first, and with an interrupt that Ruby's unblocking function fires
//! (Ctrl-C, `Thread#raise`): the wait ends within
//! `hashfile_remote::INTERRUPT_POLL` and the pending Ruby exception is
//! raised.

use hashfile::read::fault::GuardedMap;
use hashfile::RecordBuf;
use hashfile_remote::{Interrupt, Location, RemoteOptions, RemoteReader};
use magnus::{Error, RArray, Ruby, Value};

use crate::strings;

/// An open store.
// The local variant stays unboxed: it is the hot path, and a box would put
// one more pointer chase in front of every lookup. A Store is made once per
// open, so its size costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Store {
    /// A file on a memory map registered with the SIGBUS guard: a page
    /// that faults because the file shrank reads as zeros, and
    /// `check_faults` turns that into StaleError after the read.
    Local(hashfile::Reader<GuardedMap>),
    /// A store read over HTTP range requests or from S3.
    Remote(Box<RemoteReader>),
}

/// A chunk of records read in order: the records, and the offset of the
/// next one (`None` at the end).
pub type Chunk<'s> = (Vec<RecordBuf<'s>>, Option<u64>);

impl Store {
    /// Opens `location`: a URL this library reads remotely, else a path.
    /// `remote` holds the options for a URL; the caller refuses them for a
    /// path.
    pub fn open(
        ruby: &Ruby,
        location: &str,
        remote: &RemoteOptions,
    ) -> Result<hashfile::Result<Store>, Error> {
        if Location::is_remote(location) {
            let (location, options) = (location.to_owned(), remote.clone());
            return remote_call(ruby, move || hashfile_remote::open(&location, options))
                .map(|r| r.map(|reader| Store::Remote(Box::new(reader))));
        }
        Ok(hashfile::Reader::open_guarded(location).map(Store::Local))
    }

    /// The record of the String or Symbol `key`; `None` for any other
    /// object, which can never be a key.
    #[inline]
    pub fn find<'s>(
        &'s self,
        ruby: &Ruby,
        key: Value,
    ) -> Result<Option<hashfile::Result<Option<RecordBuf<'s>>>>, Error> {
        match self {
            Store::Local(store) => with_key(key, |k| store.get(k)),
            Store::Remote(store) => match with_key(key, <[u8]>::to_vec)? {
                Some(key) => remote_call(ruby, || store.get(&key)).map(Some),
                None => Ok(None),
            },
        }
    }

    /// The records of `keys`, in order (`None` for absent keys and for
    /// objects that cannot be keys). Remotely, one batch: level by level,
    /// each level's requests together.
    pub fn find_many<'s>(
        &'s self,
        ruby: &Ruby,
        keys: RArray,
    ) -> Result<hashfile::Result<Vec<Option<RecordBuf<'s>>>>, Error> {
        match self {
            Store::Local(store) => {
                let mut found = Vec::with_capacity(keys.len());
                for i in 0..keys.len() {
                    match with_key(keys.entry(i as isize)?, |k| store.get(k))? {
                        Some(Ok(record)) => found.push(record),
                        Some(Err(e)) => return Ok(Err(e)),
                        None => found.push(None),
                    }
                }
                Ok(Ok(found))
            }
            Store::Remote(store) => {
                let mut copied = Vec::with_capacity(keys.len());
                for i in 0..keys.len() {
                    copied.push(with_key(keys.entry(i as isize)?, <[u8]>::to_vec)?);
                }
                // Objects that cannot be keys are looked up as no key at
                // all: a slot of their own in the answer, always None.
                let asked: Vec<&[u8]> = copied.iter().flatten().map(Vec::as_slice).collect();
                let found = remote_call(ruby, || store.get_many(&asked))?;
                Ok(found.map(|found| {
                    let mut found = found.into_iter();
                    copied
                        .iter()
                        .map(|key| key.as_ref().and_then(|_| found.next().flatten()))
                        .collect()
                }))
            }
        }
    }

    /// Up to `max` records from byte `offset` of the records section, the
    /// first being entry `index`.
    pub fn chunk(
        &self,
        ruby: &Ruby,
        offset: u64,
        index: u64,
        max: usize,
    ) -> Result<hashfile::Result<Chunk<'_>>, Error> {
        fn read<S: hashfile::read::Source>(
            store: &hashfile::Reader<S>,
            offset: u64,
            index: u64,
            max: usize,
        ) -> hashfile::Result<Chunk<'_>> {
            let mut records = Vec::with_capacity(max.min(1024));
            let mut at = offset;
            for k in 0..max as u64 {
                match store.next_record(at, index + k)? {
                    Some((record, next)) => {
                        records.push(record);
                        at = next;
                    }
                    None => return Ok((records, None)),
                }
            }
            Ok((records, Some(at)))
        }
        match self {
            Store::Local(store) => Ok(read(store, offset, index, max)),
            Store::Remote(store) => remote_call(ruby, || read(store, offset, index, max)),
        }
    }

    /// Checks every checksum and the index, without the GVL.
    pub fn verify(&self, ruby: &Ruby) -> Result<hashfile::Result<()>, Error> {
        match self {
            Store::Local(store) => crate::nogvl::without_gvl(ruby, || store.verify(), None),
            Store::Remote(store) => remote_call(ruby, || store.verify()),
        }
    }

    pub fn len(&self) -> u64 {
        match self {
            Store::Local(store) => store.len(),
            Store::Remote(store) => store.len(),
        }
    }

    pub fn header(&self) -> &hashfile::format::Header {
        match self {
            Store::Local(store) => store.header(),
            Store::Remote(store) => store.header(),
        }
    }

    pub fn info(&self) -> hashfile::Info {
        match self {
            Store::Local(store) => store.info(),
            Store::Remote(store) => store.info(),
        }
    }

    /// Whether `path` now names another file than this store's. A remote
    /// store is never stale this way: a replaced object is found out by the
    /// next read that reaches the server (StaleError).
    pub fn is_stale(&self, path: &str) -> bool {
        match self {
            Store::Local(store) => store.is_stale(path),
            Store::Remote(_) => false,
        }
    }

    /// A local store's page faults since the last check, as an error.
    #[inline]
    pub fn check_faults(&self) -> hashfile::Result<()> {
        match self {
            Store::Local(store) => store.check_faults(),
            Store::Remote(_) => Ok(()),
        }
    }
}

/// Calls `f` with the bytes of a String or Symbol key; `None` for any other
/// object, which can never be a key.
#[inline]
pub fn with_key<R>(key: Value, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>, Error> {
    if let Some(s) = magnus::RString::from_value(key) {
        // SAFETY: the slice is used only inside `f`, which runs no Ruby code
        // and allocates no Ruby objects, so the string cannot be modified or
        // collected while it is borrowed.
        return Ok(Some(f(unsafe { strings::bytes(s) })));
    }
    if let Some(sym) = magnus::Symbol::from_value(key) {
        // By its name's bytes, as the writer stores a Symbol key, whatever
        // the name's encoding.
        // SAFETY: as above; the name String lives as long as the Symbol.
        return Ok(Some(f(unsafe {
            strings::bytes(strings::symbol_name(sym))
        })));
    }
    Ok(None)
}

/// Runs `f`, which may wait on the network, without the GVL and under an
/// interrupt that Ruby's unblocking function fires. If it fired, the
/// pending Ruby exception (Interrupt, a `Thread#raise`) is raised.
pub fn remote_call<R: Send>(
    ruby: &Ruby,
    f: impl FnOnce() -> hashfile::Result<R> + Send,
) -> Result<hashfile::Result<R>, Error> {
    let interrupt = Interrupt::new();
    let result = crate::nogvl::without_gvl(ruby, || interrupt.during(f), Some(interrupt.flag()))?;
    if interrupt.is_fired() {
        ruby.thread_check_ints()?;
    }
    Ok(result)
}
