//! A handle for a binding whose calls an interpreter lock serializes
//! (Ruby's GVL, CPython's GIL): a lookup costs no atomic read-modify-write
//! and no thread-local access, only two plain loads, because the lock
//! already keeps two lookups from running at once.

use std::cell::{Cell, UnsafeCell};
use std::sync::Arc;

use crate::handle::{Handle, Refresh};
use crate::table::Table;

/// A [`Handle`] and the store its lookups read, which it takes from the
/// handle only between lookups: when a swap (a refresh, a reopen) moved
/// the handle's generation on, or a close ended it, and no lookup is under
/// way. A lookup runs caller code while it reads the store (a
/// deserializer, allocations), and that code may look up again, reopen or
/// close; those take effect for the next lookup, and the store stays
/// until the last lookup reading it ends.
///
/// Not `Sync`: calls from several threads must be serialized, as an
/// interpreter lock serializes them. (A lookup's caller code may let
/// another thread run, which then looks up in the same store; that is one
/// more lookup under way.)
pub struct SerializedHandle {
    handle: Handle,
    /// The store lookups read. Replaced only when `in_flight` is zero, so
    /// never while a reference into it is held.
    store: UnsafeCell<Option<Arc<Table>>>,
    /// The handle's generation `store` was taken at.
    generation: Cell<u64>,
    /// Lookups reading `store` now, nested when caller code looks up.
    in_flight: Cell<usize>,
    /// Lookups left before a store opened for positioned reads is mapped
    /// (`handle::MAP_AFTER_LOOKUPS`): counted here, without an atomic, since
    /// these lookups take their store from `store`, not from the handle.
    unmapped_lookups: Cell<u32>,
}

impl SerializedHandle {
    /// Serves the lookups of `handle`.
    pub fn new(handle: Handle) -> SerializedHandle {
        // The generation first, then the store: a store newer than its
        // generation says is taken again at the next lookup, never the
        // reverse (`take_current` reads them in the same order).
        let generation = handle.generation_now();
        let store = handle.current().ok().map(|store| store.to_arc());
        let unmapped_lookups = handle.unmapped_lookups();
        SerializedHandle {
            handle,
            store: UnsafeCell::new(store),
            generation: Cell::new(generation),
            in_flight: Cell::new(0),
            unmapped_lookups: Cell::new(unmapped_lookups),
        }
    }

    /// The handle, for what is not a lookup (reopen, close, a read that
    /// runs without the interpreter lock).
    pub fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Runs `lookup` on the store, then checks that no page it read
    /// faulted: an error if one did (whatever `lookup` returned), else
    /// what `lookup` returned. `Error::Closed` once the handle is closed.
    #[inline]
    pub fn with_store<R>(&self, lookup: impl FnOnce(&Table) -> R) -> hashfile::Result<R> {
        if self.handle.is_closed() {
            return Err(self.release_closed());
        }
        if self.in_flight.get() == 0 {
            self.catch_up()?;
        }
        // SAFETY: `store` is only written by `catch_up` and
        // `release_closed`, with no lookup under way, and calls are
        // serialized (`Self: !Sync`), so no write happens while this read
        // or the reference below lives.
        let store: *const Table = match unsafe { &*self.store.get() } {
            Some(store) => Arc::as_ptr(store),
            None => return Err(self.handle.closed_error()),
        };
        let _counted = InFlight::enter(self);
        // SAFETY: the Arc stays in `store` while `in_flight` is above zero
        // (it is replaced only at zero), and `self` outlives this call, so
        // the store outlives `lookup`.
        let store = unsafe { &*store };
        let result = lookup(store);
        // Whatever `lookup` read, a page that faulted meanwhile makes it
        // untrustworthy.
        self.handle.check_faults(store)?;
        Ok(result)
    }

    /// Takes the handle's store if a swap moved its generation on (and
    /// applies its refresh policy first, if a check is due).
    #[inline]
    fn catch_up(&self) -> hashfile::Result<()> {
        let generation = match self.handle.options().refresh {
            Refresh::Every(_) => self.handle.generation(),
            _ => self.handle.generation_now(),
        };
        if generation != self.generation.get() {
            self.take_current(generation)?;
        }
        if self.unmapped_lookups.get() != 0 {
            self.count_unmapped_lookup()?;
        }
        Ok(())
    }

    #[cold]
    fn count_unmapped_lookup(&self) -> hashfile::Result<()> {
        let left = self.unmapped_lookups.get() - 1;
        self.unmapped_lookups.set(left);
        if left == 0 {
            self.map_now()?;
        }
        Ok(())
    }

    /// Maps the store if it was opened for positioned reads, for work
    /// that reads much of it (a batch, every record), and reads the mapped
    /// store from the next lookup on (from this one, if none is under
    /// way).
    pub fn map_now(&self) -> hashfile::Result<()> {
        self.unmapped_lookups.set(0);
        self.handle.map_now();
        if self.in_flight.get() == 0 && !self.handle.is_closed() {
            self.take_current(self.generation.get())?;
        }
        Ok(())
    }

    #[cold]
    fn take_current(&self, generation: u64) -> hashfile::Result<()> {
        let store = self.handle.current()?.to_arc();
        // SAFETY: called with no lookup under way (`in_flight` is zero), and
        // calls are serialized, so nothing borrows `store` now.
        unsafe { *self.store.get() = Some(store) };
        self.generation.set(generation);
        Ok(())
    }

    /// Closes the handle for every later call, and lets the store go now
    /// if no lookup reads it (else when the last one ends): a closed
    /// reader keeps no mapping.
    pub fn close(&self) {
        self.handle.close();
        self.release_closed();
    }

    /// The error of a closed handle, after letting its store go if no
    /// lookup reads it.
    #[cold]
    fn release_closed(&self) -> hashfile::Error {
        if self.in_flight.get() == 0 {
            // SAFETY: as in `take_current`.
            unsafe { *self.store.get() = None };
        }
        self.handle.closed_error()
    }

    /// A counted handle on the store lookups read now, for work that runs
    /// without the interpreter lock (a verify) or outlives a lookup.
    pub fn shared(&self) -> hashfile::Result<Arc<Table>> {
        self.map_now()?;
        self.with_store(|store| {
            // SAFETY: as in `with_store`: inside a lookup the Arc in
            // `store` is the one `store` points into.
            let held = unsafe { &*self.store.get() };
            let arc = held.as_ref().expect("a lookup reads a store");
            debug_assert!(std::ptr::eq(Arc::as_ptr(arc), store));
            Arc::clone(arc)
        })
    }
}

/// A lookup under way: counted while it lives; the last one out after a
/// close lets the store go.
struct InFlight<'h>(&'h SerializedHandle);

impl<'h> InFlight<'h> {
    #[inline]
    fn enter(handle: &'h SerializedHandle) -> InFlight<'h> {
        handle.in_flight.set(handle.in_flight.get() + 1);
        InFlight(handle)
    }
}

impl Drop for InFlight<'_> {
    #[inline]
    fn drop(&mut self) {
        let handle = self.0;
        let left = handle.in_flight.get() - 1;
        handle.in_flight.set(left);
        if left == 0 && handle.handle.is_closed() {
            handle.release_closed();
        }
    }
}
