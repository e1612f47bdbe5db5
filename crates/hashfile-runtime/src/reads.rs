//! Where a read runs, decided once for every binding.
//!
//! A local lookup reads the map holding the interpreter's lock: it takes a
//! few hundred nanoseconds and never waits, less than releasing the lock
//! and taking it back. A read that may wait on the network (a remote store
//! or dataset, an open or a reopen of one) runs without the lock, under an
//! [`Interrupt`] the interpreter fires to end the wait (Ctrl-C, Ruby's
//! `Thread#raise`) within `hashfile_remote::INTERRUPT_POLL`; what it found
//! is copied out of the store it read before the lock is taken back. A
//! remote read goes through [`Handle::read_on`], which reopens and reads
//! again when the object was replaced and the reader was opened with
//! `on_change: reopen`.
//!
//! A binding says how its interpreter's lock is released ([`Unlock`]);
//! it decodes what these functions return.

use std::sync::atomic::AtomicBool;

use hashfile::read::dig_record;
use hashfile::value::{Dig, Probe};
use hashfile::{Record, RecordBuf};
use hashfile_remote::Interrupt;

use crate::{Chunk, Cursor, Handle, Table};

/// How a binding runs work without its interpreter's lock, so that other
/// threads of the interpreter go on meanwhile.
pub trait Unlock {
    /// The binding's error: an interrupt the interpreter raises, a panic
    /// caught on the way.
    type Error;

    /// Runs `work` without the lock. `interrupt`, when given, is the flag
    /// to set when the interpreter asks the waiting thread to stop.
    fn unlocked<R: Send>(
        &self,
        interrupt: Option<&AtomicBool>,
        work: impl FnOnce() -> R + Send,
    ) -> Result<R, Self::Error>;

    /// After a wait that `interrupt` ended: the interpreter's pending
    /// interrupt, raised.
    fn interrupted(&self) -> Result<(), Self::Error>;
}

/// Runs `work`, which may wait on the network, without the lock and under
/// an interrupt; if the interrupt fired, the interpreter's pending
/// exception is raised instead of `work`'s answer.
pub fn remote<U: Unlock, R: Send>(
    unlock: &U,
    work: impl FnOnce() -> hashfile::Result<R> + Send,
) -> Result<hashfile::Result<R>, U::Error> {
    let interrupt = Interrupt::new();
    let result = unlock.unlocked(Some(interrupt.flag()), || interrupt.during(work))?;
    if interrupt.is_fired() {
        unlock.interrupted()?;
    }
    Ok(result)
}

/// The record of `key` in `table` (a [`Handle::current`] of `handle`): read
/// in place when local (the caller checks faults after decoding it), else
/// fetched without the lock and owned.
#[inline]
pub fn get<'t, U: Unlock>(
    unlock: &U,
    handle: &Handle,
    table: &'t Table,
    key: &[u8],
) -> Result<hashfile::Result<Option<RecordBuf<'t>>>, U::Error> {
    if !table.is_remote() {
        return Ok(table.get(key));
    }
    remote(unlock, || {
        handle.read_on(table, |t| Ok(t.get(key)?.map(RecordBuf::into_owned)))
    })
}

/// `dig`: walks `path` into the value of `key` and hands the record and
/// what the walk found to `answer` (`None` for a value that is not typed,
/// a string, which the binding's own indexing takes whole). A local store
/// is walked in place, decoding only the compressed items the path
/// enters; a remote record is fetched whole without the lock, then
/// walked. Damage names the key; `Ok(None)` when the key is absent. The
/// caller checks faults after decoding the answer.
pub fn dig<U: Unlock, R>(
    unlock: &U,
    handle: &Handle,
    table: &Table,
    key: &[u8],
    path: &[Probe<'_>],
    symbolize_names: bool,
    answer: impl FnOnce(&Record<'_>, Option<Dig<'_>>) -> R,
) -> Result<hashfile::Result<Option<R>>, U::Error> {
    if !table.is_remote() {
        return Ok(table
            .dig_with(key, path, symbolize_names, answer)
            .map_err(|e| e.in_value_for(key)));
    }
    Ok(match get(unlock, handle, table, key)? {
        Ok(Some(record)) => dig_record(&record.record(), path, symbolize_names, answer)
            .map(Some)
            .map_err(|e| e.in_value_for(key)),
        Ok(None) => Ok(None),
        Err(e) => Err(e.in_value_for(key)),
    })
}

/// The records of `keys`, in order (`None` for absent keys): read in place
/// when local, else one batch (level by level, each level's requests
/// together) without the lock.
pub fn get_many<'t, U: Unlock, K: AsRef<[u8]> + Sync>(
    unlock: &U,
    handle: &Handle,
    table: &'t Table,
    keys: &[K],
) -> Result<hashfile::Result<Vec<Option<RecordBuf<'t>>>>, U::Error> {
    if !table.is_remote() {
        return Ok(table.get_many(keys));
    }
    remote(unlock, || {
        handle.read_on(table, |t| {
            Ok(t.get_many(keys)?
                .into_iter()
                .map(|record| record.map(RecordBuf::into_owned))
                .collect())
        })
    })
}

/// Up to `max` records of `table` from `from`, in order.
pub fn chunk<'t, U: Unlock>(
    unlock: &U,
    table: &'t Table,
    from: Cursor,
    max: usize,
) -> Result<hashfile::Result<Chunk<'t>>, U::Error> {
    walk(unlock, table, || table.chunk(from, max))
}

/// Up to `max` records of `table` from `from`, in order, within the shard
/// `from` is in ([`Table::shard_chunk`]).
pub fn shard_chunk<'t, U: Unlock>(
    unlock: &U,
    table: &'t Table,
    from: Cursor,
    max: usize,
) -> Result<hashfile::Result<Chunk<'t>>, U::Error> {
    walk(unlock, table, || table.shard_chunk(from, max))
}

/// A chunk's read: without the lock if it may wait on the network.
fn walk<'t, U: Unlock>(
    unlock: &U,
    table: &'t Table,
    read: impl FnOnce() -> hashfile::Result<Chunk<'t>> + Send,
) -> Result<hashfile::Result<Chunk<'t>>, U::Error> {
    if table.is_remote() {
        remote(unlock, read)
    } else {
        Ok(read())
    }
}

/// Checks every checksum and the index of `table`, without the lock (a
/// local store too: it reads every byte).
pub fn verify<U: Unlock>(unlock: &U, table: &Table) -> Result<hashfile::Result<()>, U::Error> {
    if table.is_remote() {
        remote(unlock, || table.verify())
    } else {
        unlock.unlocked(None, || table.verify())
    }
}

/// `read` on `table` through `handle` (its fault check, its retry when a
/// remote object was replaced): in place when local, else without the
/// lock, so `read` returns owned data.
pub fn read<U: Unlock, R: Send>(
    unlock: &U,
    handle: &Handle,
    table: &Table,
    read: impl Fn(&Table) -> hashfile::Result<R> + Send + Sync,
) -> Result<hashfile::Result<R>, U::Error> {
    if table.is_remote() {
        remote(unlock, || handle.read_on(table, read))
    } else {
        Ok(handle.read_on(table, read))
    }
}
