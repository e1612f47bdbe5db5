//! An open location over time: the store it reads now, and how a newer
//! one takes its place.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
#[cfg(not(target_os = "linux"))]
use std::time::Instant;

use arc_swap::{ArcSwapOption, Guard};
use hashfile_remote::{Location, RemoteError, RemoteErrorKind, RemoteOptions};

use crate::dataset::manifest::MANIFEST_NAME;
use crate::table::Table;

/// When an open location looks for a newer store than the one it reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Refresh {
    /// Never on its own: the store opened is read until
    /// [`reopen`](Handle::reopen) or close.
    #[default]
    Never,
    /// A local store or dataset, or a remote dataset: on access, at most
    /// once per interval, look whether the location names another store
    /// (a newer one published there by rename; for a remote dataset, a
    /// manifest of a later publish, one request); if so, open it and
    /// read it from the next access on. A new one that cannot be opened
    /// (or a manifest that cannot be fetched, or one older than the
    /// dataset open) leaves the old store in use and is remembered
    /// ([`Handle::refresh_error`]); the next check tries again. A remote
    /// dataset is looked at on a thread of its own: no access waits for
    /// the network; the access after the check ended reads what it found.
    Every(Duration),
    /// A remote store or dataset: a read that finds the object replaced
    /// (its ETag or Last-Modified changed) or gone, or a shard missing or
    /// not the one the manifest lists (a generation a later build removed),
    /// reopens the location, with an empty cache, and reads once more in
    /// what it names now ([`Handle::read`]).
    ReopenOnChange,
}

impl Refresh {
    /// Whether `location` can be opened with [`Refresh::Every`]: a local
    /// store or dataset, or a remote dataset (the URL of its manifest). A
    /// remote store cannot: it finds a replaced object on its next read.
    pub fn every_applies_to(location: &str) -> bool {
        !Location::is_remote(location) || location.ends_with(MANIFEST_NAME)
    }
}

/// How to open a location.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// How a remote store is reached (unused for a local one).
    pub remote: RemoteOptions,
    /// When to look for a newer store.
    pub refresh: Refresh,
    /// The largest value read, stored or decoded
    /// (`hashfile::Reader::max_value_size`); `None` for
    /// `hashfile::read::DEFAULT_MAX_VALUE_SIZE`.
    pub max_value_size: Option<u64>,
    /// A dataset's generation to read, and no other (one its history
    /// keeps: `dataset::history`); `None` for the current one. Takes no
    /// refresh.
    pub generation: Option<String>,
}

/// An open location, safe to share between threads.
///
/// A lookup takes the current store ([`current`](Handle::current)) and
/// reads it from start to end: a swap (a refresh, [`reopen`](Handle::reopen))
/// never waits for lookups under way and never changes what they read;
/// they finish on the store they took, which goes with its last user. So
/// one lookup, one batch, one iteration reads one store, never a mix.
/// [`close`](Handle::close) takes effect at once for every later call, and
/// the store stays mapped until the lookups under way end.
#[derive(Debug)]
pub struct Handle {
    location: String,
    options: OpenOptions,
    /// The store read now; `None` once closed.
    current: ArcSwapOption<Table>,
    closed: AtomicBool,
    /// Stores swapped in since open. Moved on after the store it counts
    /// is in `current`, so a reader that loads the generation first and
    /// then the store reads that store or a newer one, never an older one
    /// than the generation says (what a memo keyed by it relies on).
    generation: AtomicU64,
    /// Held while a store is swapped in, so that swaps land one at a time
    /// and in order: a reopen holds it from its open to its swap (two
    /// reopens never install what they opened in the reverse order), and a
    /// refresh swaps only if the store it checked is still the one read.
    swapping: Mutex<()>,
    /// With `Refresh::Every`: when the path is next looked at, on the
    /// clock of `now_nanos`. Whoever moves it on does the check, so two
    /// threads never check at once.
    next_check: AtomicU64,
    /// Why the last newer store found could not be opened.
    refresh_error: ArcSwapOption<String>,
    /// Lookups left before the store opened for positioned reads is
    /// mapped (`MAP_AFTER_LOOKUPS`); zero once it is, or for a store that
    /// opened mapped.
    unmapped_lookups: AtomicU32,
    /// A refresh check of a remote location, running on a thread of its
    /// own, and what it found.
    background: Arc<Background>,
}

/// A refresh check that runs on a thread of its own (a remote dataset's
/// manifest fetch), so that no lookup waits on the network, and no
/// interpreter lock is held while it does.
#[derive(Debug, Default)]
struct Background {
    /// The process id of the process whose thread checks now; 0 when none
    /// does. A child forked meanwhile has no such thread, and sees another
    /// process's id: it checks anew.
    running: AtomicU32,
    /// Set when `found` holds what a check found, for the next access.
    ready: AtomicBool,
    /// What the last check found (`None` if nothing newer), and the store
    /// it was checked against: what it found is taken only while that
    /// store is still the one read (a `reopen` meanwhile may have moved
    /// further on).
    #[allow(clippy::type_complexity)]
    found: Mutex<Option<(Arc<Table>, Option<hashfile::Result<Table>>)>>,
}

/// Lookups a local store is read with positioned reads before it is
/// mapped. Opening without a map and reading the first lookups with
/// `pread` costs a few microseconds, where a map costs an `mmap`, a page
/// fault (with the kernel's fault-around) for every page a lookup first
/// touches, and an `munmap` that undoes them: 11 against 26 µs for open,
/// one lookup and close (bench/open.rb, docs/RUBY.md "Opening"). A store
/// read more than this is mapped, and its lookups then take nanoseconds.
pub const MAP_AFTER_LOOKUPS: u32 = 16;

/// The store a lookup reads, from start to end. Hold it only for the
/// lookup: a swap frees the store it replaced when the last one goes.
pub struct Current(Guard<Option<Arc<Table>>>);

impl Deref for Current {
    type Target = Table;

    #[inline]
    fn deref(&self) -> &Table {
        // `Handle::current` hands out a guard only of a store.
        self.0.as_deref().expect("a current store")
    }
}

impl Current {
    /// A counted handle on the same store, for work that outlives a
    /// lookup (an iteration, a verify on another thread).
    pub fn to_arc(&self) -> Arc<Table> {
        Arc::clone(self.0.as_ref().expect("a current store"))
    }
}

/// Opens `location`: a path, or an `http://`, `https://` or `s3://` URL.
pub fn open(location: &str, options: OpenOptions) -> hashfile::Result<Handle> {
    let remote = Location::is_remote(location);
    let refused = match options.refresh {
        Refresh::Every(_) if !Refresh::every_applies_to(location) => Some("a refresh interval is for local stores and for remote datasets (a URL of their hashfile-dataset.json); a remote store finds a replaced object on its next read (reopen on change)"),
        Refresh::ReopenOnChange if !remote => Some("reopen on change is for remote stores (http://, https://, s3://); a local store looks for a new file at a refresh interval"),
        _ => None,
    };
    if let Some(reason) = refused {
        return Err(hashfile::Error::InvalidOption {
            name: "refresh",
            reason: format!(
                "{reason}, and {location} is {}",
                if remote { "a URL" } else { "a file" }
            ),
        });
    }
    let (store, location) = match &options.generation {
        None => (
            Table::open_deferred(location, &options.remote)?,
            location.to_owned(),
        ),
        Some(generation) => {
            if options.refresh != Refresh::Never {
                return Err(hashfile::Error::InvalidOption {
                    name: "generation",
                    reason: format!("{generation:?} reads that generation and no other: it takes no refresh ({location})"),
                });
            }
            let dataset = crate::dataset::open_generation(location, generation, &options.remote)?;
            let pinned = dataset.location().to_owned();
            (Table::of_dataset(dataset), pinned)
        }
    };
    let store = store.with_max_value_size(options.max_value_size)?;
    let handle = Handle::on(Arc::new(store), &location, options);
    handle
        .unmapped_lookups
        .store(MAP_AFTER_LOOKUPS, Ordering::Release);
    Ok(handle)
}

impl Handle {
    /// A handle on a store already open.
    pub fn on(store: Arc<Table>, location: &str, options: OpenOptions) -> Handle {
        let first_check = match options.refresh {
            Refresh::Every(every) => now_nanos().saturating_add(nanos(every)),
            _ => u64::MAX,
        };
        Handle {
            location: location.to_owned(),
            options,
            current: ArcSwapOption::new(Some(store)),
            closed: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            swapping: Mutex::new(()),
            next_check: AtomicU64::new(first_check),
            refresh_error: ArcSwapOption::empty(),
            unmapped_lookups: AtomicU32::new(0),
            background: Arc::default(),
        }
    }

    /// A handle on this one's current store alone, which nothing swaps:
    /// an iteration reads one store from start to end.
    pub fn pinned(&self) -> hashfile::Result<Handle> {
        self.map_now();
        let store = self.current()?.to_arc();
        let options = OpenOptions {
            refresh: Refresh::Never,
            ..self.options.clone()
        };
        Ok(Handle::on(store, &self.location, options))
    }

    /// The path or URL opened.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// How it was opened.
    pub fn options(&self) -> &OpenOptions {
        &self.options
    }

    /// Whether the location is a URL.
    pub fn is_remote(&self) -> bool {
        Location::is_remote(&self.location)
    }

    /// The store to read now, after a refresh if one is due. `Error::Closed`
    /// after [`close`](Handle::close).
    // Inlined whole, with the rare paths outlined: it is on every lookup.
    #[inline(always)]
    pub fn current(&self) -> hashfile::Result<Current> {
        if let Refresh::Every(every) = self.options.refresh {
            self.refresh_if_due(every);
        }
        if self.unmapped_lookups.load(Ordering::Relaxed) != 0 {
            self.count_unmapped_lookup();
        }
        let store = self.current.load();
        if store.is_none() {
            return Err(self.closed_error());
        }
        Ok(Current(store))
    }

    /// The store to read now, mapped first if it was opened for positioned
    /// reads: for work that reads much of it (a batch, a verify).
    pub fn current_mapped(&self) -> hashfile::Result<Current> {
        self.map_now();
        self.current()
    }

    #[cold]
    #[inline(never)]
    fn count_unmapped_lookup(&self) {
        let before =
            self.unmapped_lookups
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                    left.checked_sub(1)
                });
        if before == Ok(1) {
            self.swap_in_map();
        }
    }

    /// Lookups left before the store is mapped (zero once it is, or if it
    /// opened mapped): for a binding that counts its lookups itself
    /// ([`SerializedHandle`](crate::SerializedHandle)).
    pub fn unmapped_lookups(&self) -> u32 {
        self.unmapped_lookups.load(Ordering::Acquire)
    }

    /// Maps the store if it was opened for positioned reads and is not
    /// mapped yet; a no-op otherwise.
    pub fn map_now(&self) {
        if self.unmapped_lookups.swap(0, Ordering::AcqRel) != 0 {
            self.swap_in_map();
        }
    }

    /// Replaces the current store by the same store mapped. The bytes are
    /// the same (the same open file), so the generation stays: nothing
    /// built from lookups is out of date. A store swapped in meanwhile (a
    /// reopen) is left alone, and a map that fails leaves the store read as
    /// it was.
    fn swap_in_map(&self) {
        let Some(store) = self.current.load_full() else {
            return;
        };
        let Some(Ok(mapped)) = store.mapped() else {
            return;
        };
        let store = Some(store);
        self.current
            .compare_and_swap(&store, Some(Arc::new(mapped)));
        // A close that came while the map was made wins.
        if self.is_closed() {
            self.current.store(None);
        }
    }

    /// Runs `read` on the current store, then checks that no page it read
    /// faulted. With [`Refresh::ReopenOnChange`], a read that finds the
    /// remote object replaced reopens it and runs once more on the new one
    /// (so `read` must not keep anything of the store it is given; a
    /// lookup that does reads [`current`](Handle::current) itself).
    #[inline]
    pub fn read<R>(&self, read: impl Fn(&Table) -> hashfile::Result<R>) -> hashfile::Result<R> {
        let first = self.read_once(&read);
        self.retry_if_replaced(first, &read)
    }

    /// [`read`](Handle::read) on `store`, a [`current`](Handle::current)
    /// the caller took already (to see whether it is remote, say), so the
    /// lookup takes it once; a retry reads the reopened store.
    #[inline]
    pub fn read_on<R>(
        &self,
        store: &Table,
        read: impl Fn(&Table) -> hashfile::Result<R>,
    ) -> hashfile::Result<R> {
        let first = self.read_checked(store, &read);
        self.retry_if_replaced(first, &read)
    }

    #[inline]
    fn retry_if_replaced<R>(
        &self,
        first: hashfile::Result<R>,
        read: &impl Fn(&Table) -> hashfile::Result<R>,
    ) -> hashfile::Result<R> {
        match first {
            Err(e)
                if self.options.refresh == Refresh::ReopenOnChange
                    && (is_replaced(&e) || is_superseded(&e)) =>
            {
                self.reopen_forward()?;
                self.read_once(read)
            }
            other => other,
        }
    }

    #[inline]
    fn read_once<R>(&self, read: &impl Fn(&Table) -> hashfile::Result<R>) -> hashfile::Result<R> {
        let store = self.current()?;
        self.read_checked(&store, read)
    }

    #[inline]
    fn read_checked<R>(
        &self,
        store: &Table,
        read: &impl Fn(&Table) -> hashfile::Result<R>,
    ) -> hashfile::Result<R> {
        let result = read(store);
        self.check_faults(store)?;
        result
    }

    /// An error naming the location if a page of `store`'s map faulted
    /// (the file was truncated under it): whatever was read from it is not
    /// to be used.
    #[inline(always)]
    pub fn check_faults(&self, store: &Table) -> hashfile::Result<()> {
        match store.check_faults() {
            Ok(()) => Ok(()),
            Err(e) => Err(self.located(e)),
        }
    }

    #[cold]
    #[inline(never)]
    fn located(&self, error: hashfile::Error) -> hashfile::Error {
        error.with_path(Path::new(&self.location))
    }

    /// Opens the store the location names now and reads it from the next
    /// lookup on; lookups under way finish on the old one. An error, and
    /// the old store kept, if the new one cannot be opened.
    pub fn reopen(&self) -> hashfile::Result<()> {
        self.reopen_checked(false)
    }

    /// [`reopen`](Handle::reopen) on its own accord (a reopen on change):
    /// a dataset moves only to a later publish, never back to an older
    /// manifest put back at the location.
    fn reopen_forward(&self) -> hashfile::Result<()> {
        self.reopen_checked(true)
    }

    fn reopen_checked(&self, forward_only: bool) -> hashfile::Result<()> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        let seen = self.generation_now();
        // Held from the open to the swap: a reopen that started later
        // opens later, and swaps in later.
        let _swapping = self.swapping.lock().unwrap_or_else(|e| e.into_inner());
        // A reopen on change that waited while another swapped a store in
        // reads that one: it was opened after this one's read found the
        // old store replaced.
        if forward_only && self.generation_now() != seen {
            return Ok(());
        }
        let store = Table::open(&self.location, &self.options.remote)?
            .with_max_value_size(self.options.max_value_size)?;
        if forward_only {
            if let Some(open) = self.current.load().as_deref() {
                if let Err(e) = open.check_follows(&store) {
                    // Another reopen on change swapped in the same store
                    // (or a later one) while this one waited: not an error.
                    if self.generation_now() != seen {
                        return Ok(());
                    }
                    return Err(e);
                }
            }
        }
        self.install_locked(store);
        Ok(())
    }

    /// Swaps in `store`, found by a refresh check of `checked`, if
    /// `checked` is still the store read (a reopen meanwhile may have moved
    /// further on, and what it opened is newer). A refresh runs on a
    /// lookup's path, perhaps under an interpreter's lock, so it never
    /// waits for a reopen under way (which may be waiting on the network):
    /// it drops what it found, and the reopen swaps in what it opens.
    fn install_if_current(&self, store: Table, checked: &Arc<Table>) {
        let _swapping = match self.swapping.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        let still = self
            .current
            .load()
            .as_ref()
            .is_some_and(|now| Arc::ptr_eq(now, checked));
        if still {
            self.install_locked(store);
        }
    }

    /// Swaps in `store`, with `swapping` held: the store first, then the
    /// generation (see `generation`).
    fn install_locked(&self, store: Table) {
        self.current.store(Some(Arc::new(store)));
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.refresh_error.store(None);
        // A close that came while the store was opening wins.
        if self.is_closed() {
            self.current.store(None);
        }
    }

    /// With `Refresh::Every`, at most once per `every`: a newer store
    /// published at the path replaces the current one.
    #[cold]
    fn refresh_due(&self, every: Duration, due: u64, now: u64) {
        // One thread moves the next check on and looks; the others go on
        // with the store they have.
        if self
            .next_check
            .compare_exchange(
                due,
                now.saturating_add(nanos(every)),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return;
        }
        let Some(current) = self.current.load_full() else {
            return;
        };
        if Location::is_remote(&self.location) {
            self.refresh_in_background(current);
            return;
        }
        let refreshed = current.refreshed(&self.location, &self.options.remote);
        self.take_refreshed(refreshed, &current);
    }

    /// Swaps in what a refresh check of `checked` found, or records why
    /// it could not.
    fn take_refreshed(&self, refreshed: Option<hashfile::Result<Table>>, checked: &Arc<Table>) {
        match refreshed {
            None => {}
            Some(Ok(store)) => self.install_if_current(store, checked),
            Some(Err(e)) => self.refresh_error.store(Some(Arc::new(e.to_string()))),
        }
    }

    /// Starts a check of `current`'s location on a thread of its own,
    /// unless one of this process runs already; the access after it ends
    /// takes what it found (`take_background`).
    #[cold]
    fn refresh_in_background(&self, current: Arc<Table>) {
        let me = std::process::id();
        let running = self.background.running.load(Ordering::Acquire);
        if running == me
            || self
                .background
                .running
                .compare_exchange(running, me, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            return;
        }
        let background = Arc::clone(&self.background);
        let location = self.location.clone();
        let remote = self.options.remote.clone();
        let spawned = std::thread::Builder::new()
            .name("hashfile-refresh".into())
            .spawn(move || {
                let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    current.refreshed(&location, &remote)
                }))
                .unwrap_or_else(|_| {
                    Some(Err(hashfile::Error::Dataset {
                        path: Some(PathBuf::from(&location)),
                        what: "the refresh check failed unexpectedly (a panic, caught)".into(),
                    }))
                });
                *background.found.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some((current, found));
                background.ready.store(true, Ordering::Release);
                background.running.store(0, Ordering::Release);
            });
        if spawned.is_err() {
            // No thread to be had: the next check tries again.
            self.background.running.store(0, Ordering::Release);
        }
    }

    /// Takes what a background check found, if it has ended.
    #[cold]
    #[inline(never)]
    fn take_background(&self) {
        if !self.background.ready.swap(false, Ordering::AcqRel) {
            return;
        }
        let found = self
            .background
            .found
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some((checked, refreshed)) = found {
            self.take_refreshed(refreshed, &checked);
        }
    }

    /// Whether a refresh check runs on a thread of its own now (for
    /// tests and `info`).
    pub fn refreshing(&self) -> bool {
        self.background.running.load(Ordering::Acquire) == std::process::id()
    }

    #[inline]
    fn refresh_if_due(&self, every: Duration) {
        if self.background.ready.load(Ordering::Relaxed) {
            self.take_background();
        }
        let due = self.next_check.load(Ordering::Acquire);
        let now = now_nanos();
        if now >= due {
            self.refresh_due(every, due, now);
        }
    }

    /// Whether the location names another store than the one read now (a
    /// newer one was published there), or none. For a remote dataset this
    /// fetches the manifest (and is true when that fails, so that a
    /// refresh tries and records why). Always false for a remote store,
    /// whose replacement the next read that reaches the server finds.
    pub fn is_stale(&self) -> bool {
        match &*self.current.load() {
            Some(store) => store.is_stale(&self.location),
            None => false,
        }
    }

    /// Why the last newer store a refresh found could not be opened (the
    /// old one is read meanwhile); cleared by the next store swapped in.
    pub fn refresh_error(&self) -> Option<String> {
        self.refresh_error.load().as_deref().cloned()
    }

    /// How many times a newer store replaced the one read: a cache built
    /// from lookups is dropped when this changes.
    pub fn generation(&self) -> u64 {
        if let Refresh::Every(every) = self.options.refresh {
            self.refresh_if_due(every);
        }
        self.generation.load(Ordering::Acquire)
    }

    /// [`generation`](Handle::generation) without a refresh check: one
    /// load.
    #[inline(always)]
    pub fn generation_now(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Closes for every later call; the store goes when the lookups under
    /// way end.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.current.store(None);
    }

    /// Whether [`close`](Handle::close) was called.
    #[inline(always)]
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// `Error::Closed` once [`close`](Handle::close) was called: for a
    /// binding that answers from its own memo, without a read.
    #[inline(always)]
    pub fn ensure_open(&self) -> hashfile::Result<()> {
        if self.is_closed() {
            return Err(self.closed_error());
        }
        Ok(())
    }

    /// `Error::Closed`, naming the location.
    #[cold]
    #[inline(never)]
    pub(crate) fn closed_error(&self) -> hashfile::Error {
        hashfile::Error::Closed {
            path: PathBuf::from(&self.location),
        }
    }
}

/// Whether `error` says the remote object was replaced while open.
pub fn is_replaced(error: &hashfile::Error) -> bool {
    RemoteError::find_in(error).is_some_and(|remote| remote.kind == RemoteErrorKind::Changed)
}

/// Whether `error` says a remote object is gone, or a remote dataset's
/// shard, opened on first use, is missing or not the one its manifest
/// lists: what a reader of a generation that later builds replaced and
/// removed finds. The location may name something newer now.
fn is_superseded(error: &hashfile::Error) -> bool {
    matches!(error, hashfile::Error::Dataset { .. })
        || RemoteError::find_in(error)
            .is_some_and(|remote| remote.kind == RemoteErrorKind::NotFound)
}

/// Now, in nanoseconds on a monotonic clock, for refresh intervals. On
/// Linux the coarse clock: it reads the kernel's last tick (at most a few
/// milliseconds old, nothing next to an interval) instead of the cycle
/// counter, and every lookup of a reader with an interval reads it. That
/// took a memoized Python lookup with `reload=1` from 55 to 41 ns
/// (bench/python_lookup.py).
#[cfg(target_os = "linux")]
#[inline(always)]
fn now_nanos() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a timespec the call may write; the clock id is one
    // every Linux since 2.6.32 has (on an error `now` stays zero, which
    // only delays a refresh check).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut now) };
    (now.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(now.tv_nsec as u64)
}

#[cfg(not(target_os = "linux"))]
fn now_nanos() -> u64 {
    static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    nanos(EPOCH.get_or_init(Instant::now).elapsed())
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn publish(path: &Path, tag: &str) {
        let mut builder = hashfile::Builder::new(hashfile::BuildOptions::default()).unwrap();
        builder.insert(b"k", tag.as_bytes());
        builder.write_file(path).unwrap();
    }

    fn value(handle: &Handle) -> String {
        handle
            .read(|t| Ok(String::from_utf8(t.get(b"k")?.unwrap().value().to_vec()).unwrap()))
            .unwrap()
    }

    #[test]
    fn a_refresh_never_waits_for_a_reopen_under_way() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.hf");
        publish(&path, "old");
        let options = OpenOptions {
            refresh: Refresh::Every(Duration::ZERO),
            ..OpenOptions::default()
        };
        let handle = open(path.to_str().unwrap(), options).unwrap();
        publish(&path, "new");
        {
            // A reopen under way, waiting on the network, say.
            let _reopening = handle.swapping.lock().unwrap();
            assert_eq!(
                value(&handle),
                "old",
                "the lookup answers from the store it has"
            );
            assert_eq!(
                handle.generation_now(),
                0,
                "what the refresh found is dropped"
            );
        }
        assert_eq!(value(&handle), "new", "the next check finds it again");
        assert_eq!(handle.generation_now(), 1);
    }

    #[test]
    fn a_reopen_on_change_that_waited_reads_what_another_swapped_in() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.hf");
        publish(&path, "one");
        let handle = Arc::new(open(path.to_str().unwrap(), OpenOptions::default()).unwrap());
        let held = handle.swapping.lock().unwrap();
        let waiting = {
            let handle = Arc::clone(&handle);
            std::thread::spawn(move || handle.reopen_forward())
        };
        std::thread::sleep(Duration::from_millis(200)); // it waits for the lock
        publish(&path, "two");
        // Another reopen swaps "two" in meanwhile.
        handle.install_locked(
            Table::open(path.to_str().unwrap(), &RemoteOptions::default()).unwrap(),
        );
        publish(&path, "three");
        drop(held);
        waiting.join().unwrap().unwrap();
        assert_eq!(handle.generation_now(), 1, "one swap, not a second open");
        assert_eq!(value(&handle), "two");
    }
}
