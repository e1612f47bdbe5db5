//! Turning a fault in a store's memory map into an error instead of a
//! crash.
//!
//! Stores are published by rename and never written in place, but someone
//! may still truncate one that is open (`cp new.hf live.hf` truncates
//! first). Touching a mapped page past the new end of the file raises
//! SIGBUS, which kills the process, as it does for every mmap-based reader
//! (LMDB, Sparkey, fst). [`install`] sets a SIGBUS handler that recognises
//! a fault inside a registered store mapping ([`GuardedMap`]), maps a page
//! of zeros over the faulting page so that the read can finish, and counts
//! the fault against the mapping; the reader's caller checks
//! [`GuardedMap::faults`] after each operation and reports the store as
//! changed. Any other SIGBUS goes to the handler that was there before
//! (Ruby's, say), or to the default action.
//!
//! Why this is sound:
//! - The handler does not jump anywhere: it returns, and the faulting load
//!   runs again and reads zeros. No Rust frame is skipped, no destructor is
//!   lost. Readers already treat every byte they read as untrusted (every
//!   offset is checked), so zeros cannot make them misbehave, and the
//!   fault count turns whatever the operation computed into an error.
//! - The handler calls only `mmap` (a system call; POSIX does not list it
//!   as async-signal-safe, but on Linux it is the raw syscall with no
//!   locks) and atomics. It allocates nothing and takes no lock.
//! - It acts only on an address inside a registered mapping. A mapping is
//!   registered while its `GuardedMap` lives and unregistered before it is
//!   unmapped, and a fault at an address means some thread is reading that
//!   mapping, so it cannot be unregistered meanwhile. Each registry slot is
//!   a seqlock, so the handler never acts on a torn (start, length) pair.
//! - Replacing the page is process-wide and permanent for that mapping:
//!   every later read of the page sees zeros and every later operation on
//!   the store sees a fault count above zero.
//!
//! What it cannot see: a store rewritten in place without shrinking (the
//! new bytes are simply read). Lookups still never return another key's
//! record, and `verify` catches the change; publishing by rename (what
//! `Builder::write_file` does) avoids it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Once;

use memmap2::Mmap;

use super::FileId;

/// How many mappings can be guarded at once; a store opened while all are
/// taken is read unguarded (a fault in it is a crash, as before).
pub const MAX_GUARDED_MAPPINGS: usize = 4096;

/// One registered mapping: `[start, start + len)`, and the faults seen in
/// it. `seq` is odd while the slot is being written.
struct Slot {
    seq: AtomicU64,
    start: AtomicUsize,
    len: AtomicUsize,
    faults: AtomicU64,
    taken: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    seq: AtomicU64::new(0),
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    faults: AtomicU64::new(0),
    taken: AtomicBool::new(false),
};

static SLOTS: [Slot; MAX_GUARDED_MAPPINGS] = [EMPTY; MAX_GUARDED_MAPPINGS];
/// Faults in every guarded mapping, ever: a reader of many mappings (a
/// dataset's shards) looks at each one's count only when this moved.
static ALL_FAULTS: AtomicU64 = AtomicU64::new(0);
static INSTALLED: AtomicBool = AtomicBool::new(false);
static PAGE_SIZE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: Once = Once::new();

/// The SIGBUS action that was in place before [`install`], called for
/// faults that are not in a store. Written once, before the handler is
/// installed, and only read after.
static mut PREVIOUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::uninit();

/// Installs the SIGBUS handler, once per process. Stores opened with
/// [`crate::Reader::open_guarded`] afterwards are guarded. Returns the
/// error of `sigaction` if it could not be installed.
pub fn install() -> std::io::Result<()> {
    let mut result = Ok(());
    INSTALL.call_once(|| {
        // SAFETY: sysconf is safe to call; a failure gives -1, kept out.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if page > 0 {
            PAGE_SIZE.store(page as usize, Ordering::Relaxed);
        }
        // SAFETY: a zeroed sigaction is a valid value to fill in; the
        // handler has the SA_SIGINFO signature; PREVIOUS is written here,
        // once, before the new handler can run, and read only by it.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            let previous = &mut *std::ptr::addr_of_mut!(PREVIOUS);
            if libc::sigaction(libc::SIGBUS, &action, previous.as_mut_ptr()) != 0 {
                result = Err(std::io::Error::last_os_error());
                return;
            }
        }
        INSTALLED.store(true, Ordering::Release);
    });
    result
}

/// Whether [`install`] has put the handler in place.
pub fn installed() -> bool {
    INSTALLED.load(Ordering::Acquire)
}

extern "C" fn on_sigbus(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: the kernel passes a valid siginfo_t for SA_SIGINFO handlers.
    let (code, address) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    // A positive code is a fault the kernel raised (BUS_ADRERR for a page
    // past the end of the file); a SIGBUS sent by kill has no address.
    if let Some(slot) = (code > 0).then(|| slot_holding(address)).flatten() {
        let page = PAGE_SIZE.load(Ordering::Relaxed);
        let page_start = address & !(page - 1);
        // SAFETY: the page lies inside a live, registered store mapping
        // (see the module docs); replacing it with a private page of zeros
        // changes only what that mapping reads.
        let mapped = unsafe {
            libc::mmap(
                page_start as *mut libc::c_void,
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if mapped != libc::MAP_FAILED {
            slot.faults.fetch_add(1, Ordering::SeqCst);
            ALL_FAULTS.fetch_add(1, Ordering::SeqCst);
            return;
        }
    }
    // SAFETY: PREVIOUS was filled in before this handler was installed.
    let previous = unsafe { (*std::ptr::addr_of!(PREVIOUS)).assume_init_ref() };
    if previous.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: a handler installed with SA_SIGINFO has this signature.
        let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(previous.sa_sigaction) };
        handler(signal, info, context);
    } else if previous.sa_sigaction == libc::SIG_DFL || previous.sa_sigaction == libc::SIG_IGN {
        // Back to the default action; returning runs the faulting load
        // again, which now ends the process as if no handler were there.
        // SAFETY: signal() with SIG_DFL is async-signal-safe.
        unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
    } else {
        // SAFETY: a plain handler has this signature.
        let handler: extern "C" fn(libc::c_int) =
            unsafe { std::mem::transmute(previous.sa_sigaction) };
        handler(signal);
    }
}

/// The registered slot whose mapping holds `address`.
fn slot_holding(address: usize) -> Option<&'static Slot> {
    SLOTS.iter().find(|slot| {
        if !slot.taken.load(Ordering::Acquire) {
            return false;
        }
        loop {
            let before = slot.seq.load(Ordering::Acquire);
            if before % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let (start, len) = (
                slot.start.load(Ordering::Acquire),
                slot.len.load(Ordering::Acquire),
            );
            if slot.seq.load(Ordering::Acquire) == before {
                return start != 0 && address >= start && address - start < len;
            }
        }
    })
}

/// A read-only memory map of a store, registered with the SIGBUS handler
/// while it lives. Reads like the `Mmap` it holds.
#[derive(Debug)]
pub struct GuardedMap {
    map: Mmap,
    /// The registry slot, if one was free and the handler is installed.
    slot: Option<usize>,
    /// The file mapped, when known (`with_file_id`).
    file_id: Option<FileId>,
}

/// Faults caught in any guarded mapping of this process so far: zero
/// unless a store was truncated under a reader. One atomic load.
#[inline]
pub fn all_faults() -> u64 {
    ALL_FAULTS.load(Ordering::SeqCst)
}

impl GuardedMap {
    /// Registers `map` (if [`install`] was called and a slot is free).
    pub fn new(map: Mmap) -> GuardedMap {
        let slot = if installed() && !map.is_empty() {
            register(map.as_ptr() as usize, map.len())
        } else {
            None
        };
        GuardedMap {
            map,
            slot,
            file_id: None,
        }
    }

    /// Maps the store file at `path` (a regular file only: a FIFO or
    /// device is refused without being opened for reading), registered
    /// and knowing which file it maps, for a reader of any source type
    /// that wraps it.
    pub fn open(path: &std::path::Path) -> crate::error::Result<GuardedMap> {
        let (map, file_id) = super::map_file_with_id(path)?;
        Ok(GuardedMap::new(map).with_file_id(file_id))
    }

    /// Maps `file`, an open store file (`read::open_regular_file`) that
    /// is `file_id`, registered.
    pub fn of_file(file: &std::fs::File, file_id: FileId) -> std::io::Result<GuardedMap> {
        Ok(GuardedMap::new(super::map_open_file(file)?).with_file_id(file_id))
    }

    /// The same map, knowing which file it maps.
    pub fn with_file_id(mut self, file_id: FileId) -> GuardedMap {
        self.file_id = Some(file_id);
        self
    }

    /// The file mapped, if known.
    pub fn file_id(&self) -> Option<FileId> {
        self.file_id
    }

    /// Whether `path` now names another file than the one mapped, or
    /// none: a new store was published there (by rename, which gives the
    /// path a new file), or the store was deleted. False if the path still
    /// names the mapped file, or if that is not known.
    pub fn is_stale(&self, path: &std::path::Path) -> bool {
        match (self.file_id, FileId::of_path(path)) {
            (Some(mapped), Ok(now)) => mapped != now,
            (Some(_), Err(_)) => true,
            (None, _) => false,
        }
    }

    /// Pages of this mapping that faulted (the file shrank under it) and
    /// were replaced by zeros. Above zero, nothing read from the mapping
    /// can be trusted.
    #[inline]
    pub fn faults(&self) -> u64 {
        self.slot
            .map_or(0, |i| SLOTS[i].faults.load(Ordering::SeqCst))
    }

    /// Whether faults in this mapping are caught.
    pub fn is_guarded(&self) -> bool {
        self.slot.is_some()
    }
}

impl AsRef<[u8]> for GuardedMap {
    #[inline(always)]
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

impl Drop for GuardedMap {
    fn drop(&mut self) {
        // Unregistered before `map` is unmapped (fields drop after this).
        if let Some(i) = self.slot {
            let slot = &SLOTS[i];
            slot.seq.fetch_add(1, Ordering::AcqRel);
            slot.start.store(0, Ordering::Release);
            slot.len.store(0, Ordering::Release);
            slot.seq.fetch_add(1, Ordering::AcqRel);
            slot.taken.store(false, Ordering::Release);
        }
    }
}

fn register(start: usize, len: usize) -> Option<usize> {
    let i = SLOTS.iter().position(|slot| {
        slot.taken
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    })?;
    let slot = &SLOTS[i];
    slot.seq.fetch_add(1, Ordering::AcqRel);
    slot.faults.store(0, Ordering::SeqCst);
    slot.start.store(start, Ordering::Release);
    slot.len.store(len, Ordering::Release);
    slot.seq.fetch_add(1, Ordering::AcqRel);
    Some(i)
}
