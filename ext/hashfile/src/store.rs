//! Reading an open store from Ruby: the keys copied out of Ruby Strings,
//! and how the GVL is released ([`Gvl`]). Where each read runs is the
//! runtime's (`hashfile_runtime::reads`); what the store is and how it is
//! swapped too.

use std::sync::atomic::AtomicBool;

use hashfile::RecordBuf;
use hashfile_runtime::reads::{self, Unlock};
use hashfile_runtime::{Handle, Table};
use magnus::{Error, RArray, Ruby, Value};

use crate::strings;

/// Ruby's GVL, released by `rb_nogvl` (`crate::nogvl`), with an interrupt
/// that Ruby's unblocking function fires.
pub(crate) struct Gvl<'r>(pub &'r Ruby);

impl Unlock for Gvl<'_> {
    type Error = Error;

    fn unlocked<R: Send>(
        &self,
        interrupt: Option<&AtomicBool>,
        work: impl FnOnce() -> R + Send,
    ) -> Result<R, Error> {
        crate::nogvl::without_gvl(self.0, work, interrupt)
    }

    fn interrupted(&self) -> Result<(), Error> {
        self.0.thread_check_ints()
    }
}

/// The record of the String or Symbol `key` in `store`, the store or
/// dataset `handle` reads now; `None` for any other object, which can
/// never be a key.
#[inline]
pub(crate) fn find<'s>(
    ruby: &Ruby,
    handle: &Handle,
    store: &'s Table,
    key: Value,
) -> Result<Option<hashfile::Result<Option<RecordBuf<'s>>>>, Error> {
    if !store.is_remote() {
        return guarded(ruby, || with_key(key, |k| store.get(k)))?;
    }
    match with_key(key, <[u8]>::to_vec)? {
        Some(key) => reads::get(&Gvl(ruby), handle, store, &key).map(Some),
        None => Ok(None),
    }
}

/// The records of `keys`, in order (`None` for absent keys and for objects
/// that cannot be keys).
pub(crate) fn find_many<'s>(
    ruby: &Ruby,
    handle: &Handle,
    store: &'s Table,
    keys: RArray,
) -> Result<hashfile::Result<Vec<Option<RecordBuf<'s>>>>, Error> {
    let mut copied = Vec::with_capacity(keys.len());
    for i in 0..keys.len() {
        copied.push(with_key(keys.entry(i as isize)?, <[u8]>::to_vec)?);
    }
    // Objects that cannot be keys are looked up as no key at all: a slot
    // of their own in the answer, always None.
    let asked: Vec<&[u8]> = copied.iter().flatten().map(Vec::as_slice).collect();
    let found = guarded(ruby, || reads::get_many(&Gvl(ruby), handle, store, &asked))??;
    Ok(found.map(|found| {
        let mut found = found.into_iter();
        copied
            .iter()
            .map(|key| key.as_ref().and_then(|_| found.next().flatten()))
            .collect()
    }))
}

/// `read()`, a read holding the GVL, with a panic caught and raised as
/// `Hashfile::Error` ("internal error: ..."), never as magnus's `fatal`,
/// which ends the process. Free when nothing panics. Reads without the
/// GVL are caught by `nogvl::without_gvl`.
#[inline(always)]
pub(crate) fn guarded<R>(ruby: &Ruby, read: impl FnOnce() -> R) -> Result<R, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read))
        .map_err(|panic| crate::error::internal_error(ruby, &*panic))
}

/// Calls `f` with the bytes of a String or Symbol key; `None` for any other
/// object, which can never be a key.
#[inline]
pub(crate) fn with_key<R>(key: Value, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>, Error> {
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
