//! Reading an open store from Ruby: where each read runs, and the keys
//! copied out of Ruby Strings. What the store is and how it is swapped is
//! `hashfile_runtime`'s.
//!
//! A local lookup reads the map holding the GVL: it is a few hundred
//! nanoseconds, and never waits. A remote lookup may wait on the network,
//! so it runs without the GVL, with the key copied out of its Ruby String
//! first, and with an interrupt that Ruby's unblocking function fires
//! (Ctrl-C, `Thread#raise`): the wait ends within
//! `hashfile_remote::INTERRUPT_POLL` and the pending Ruby exception is
//! raised. A remote read goes through `Handle::read`, which reopens and
//! reads again when the object was replaced and the reader was opened
//! with `on_change: :reopen`; so its records are copied out of the store
//! it read.

use hashfile::RecordBuf;
use hashfile_remote::Interrupt;
use hashfile_runtime::{Cursor, Handle, Table};
use magnus::{Error, RArray, Ruby, Value};

use crate::strings;

/// The record of the String or Symbol `key` in `store`, the store or
/// dataset `handle` reads now; `None` for any other object, which can never be a
/// key.
#[inline]
pub fn find<'s>(
    ruby: &Ruby,
    handle: &Handle,
    store: &'s Table,
    key: Value,
) -> Result<Option<hashfile::Result<Option<RecordBuf<'s>>>>, Error> {
    if !store.is_remote() {
        return guarded(ruby, || with_key(key, |k| store.get(k)))?;
    }
    match with_key(key, <[u8]>::to_vec)? {
        Some(key) => remote_call(ruby, || {
            handle.read(|store| Ok(store.get(&key)?.map(RecordBuf::into_owned)))
        })
        .map(Some),
        None => Ok(None),
    }
}

/// The records of `keys`, in order (`None` for absent keys and for objects
/// that cannot be keys). Remotely, one batch: level by level, each level's
/// requests together.
pub fn find_many<'s>(
    ruby: &Ruby,
    handle: &Handle,
    store: &'s Table,
    keys: RArray,
) -> Result<hashfile::Result<Vec<Option<RecordBuf<'s>>>>, Error> {
    if !store.is_remote() {
        let mut found = Vec::with_capacity(keys.len());
        for i in 0..keys.len() {
            let key = keys.entry(i as isize)?;
            match guarded(ruby, || with_key(key, |k| store.get(k)))?? {
                Some(Ok(record)) => found.push(record),
                Some(Err(e)) => return Ok(Err(e)),
                None => found.push(None),
            }
        }
        return Ok(Ok(found));
    }
    let mut copied = Vec::with_capacity(keys.len());
    for i in 0..keys.len() {
        copied.push(with_key(keys.entry(i as isize)?, <[u8]>::to_vec)?);
    }
    // Objects that cannot be keys are looked up as no key at all: a slot
    // of their own in the answer, always None.
    let asked: Vec<&[u8]> = copied.iter().flatten().map(Vec::as_slice).collect();
    let found = remote_call(ruby, || {
        handle.read(|store| {
            Ok(store
                .get_many(&asked)?
                .into_iter()
                .map(|record| record.map(RecordBuf::into_owned))
                .collect::<Vec<_>>())
        })
    })?;
    Ok(found.map(|found| {
        let mut found = found.into_iter();
        copied
            .iter()
            .map(|key| key.as_ref().and_then(|_| found.next().flatten()))
            .collect()
    }))
}

/// Up to `max` records from `from`, in order.
pub fn chunk<'s>(
    ruby: &Ruby,
    store: &'s Table,
    from: Cursor,
    max: usize,
) -> Result<hashfile::Result<hashfile_runtime::Chunk<'s>>, Error> {
    if store.is_remote() {
        remote_call(ruby, || store.chunk(from, max))
    } else {
        guarded(ruby, || store.chunk(from, max))
    }
}

/// `read()`, a read holding the GVL, with a panic caught and raised as
/// `Hashfile::Error` ("internal error: ..."), never as magnus's `fatal`,
/// which ends the process. Free when nothing panics. Reads without the
/// GVL are caught by `nogvl::without_gvl`.
#[inline(always)]
fn guarded<R>(ruby: &Ruby, read: impl FnOnce() -> R) -> Result<R, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read))
        .map_err(|panic| crate::error::internal_error(ruby, &*panic))
}

/// Checks every checksum and the index, without the GVL.
pub fn verify(ruby: &Ruby, store: &Table) -> Result<hashfile::Result<()>, Error> {
    if store.is_remote() {
        remote_call(ruby, || store.verify())
    } else {
        crate::nogvl::without_gvl(ruby, || store.verify(), None)
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
