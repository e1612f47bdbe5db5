//! Short strings decoded before, by their bytes, on each thread: the keys
//! of a store's maps and its short values repeat from lookup to lookup, and
//! a `str` from here costs a reference count instead of an allocation and
//! a UTF-8 check; as a dict key, its hash is already computed too. Ruby's
//! decoder interns its Hash keys for the same reason (`ext/hashfile/src/
//! strings.rs`). Sharing one `str` between values is safe: Python's
//! strings are immutable.

use std::cell::RefCell;
use std::mem::ManuallyDrop;

use pyo3::prelude::*;
use pyo3::types::PyString;

/// The longest string kept: the codec's short strings (`FIXSTR`), most map
/// keys.
const LONGEST: usize = 31;
/// Slots per thread; a string's slot is its hash, a newer one replaces it.
const SLOTS: usize = 1024;

struct Slot {
    len: u8,
    bytes: [u8; LONGEST],
    text: Py<PyString>,
}

thread_local! {
    // Never dropped: a thread's end may come after the interpreter's, when
    // its strings can no longer be released (a few KiB per thread that
    // decoded, held until the process ends).
    static CACHE: ManuallyDrop<RefCell<Vec<Option<Slot>>>> =
        const { ManuallyDrop::new(RefCell::new(Vec::new())) };
}

/// The `str` of `bytes` if they are at most 31 bytes of UTF-8, from the
/// cache or made (`new_str`: a `MemoryError`, never a panic) and kept;
/// `None` if they are longer or not UTF-8.
#[inline]
pub(crate) fn short<'py>(
    py: Python<'py>,
    bytes: &[u8],
    new_str: impl FnOnce(&str) -> PyResult<Bound<'py, PyAny>>,
) -> Option<PyResult<Bound<'py, PyAny>>> {
    if bytes.len() > LONGEST {
        return None;
    }
    let slot = slot_of(bytes);
    CACHE
        .try_with(|cache| {
            let mut cache = cache.try_borrow_mut().ok()?;
            if cache.is_empty() {
                cache.resize_with(SLOTS, || None);
            }
            if let Some(kept) = &cache[slot] {
                if &kept.bytes[..kept.len as usize] == bytes {
                    return Some(Ok(kept.text.bind(py).clone().into_any()));
                }
            }
            let text = match new_str(std::str::from_utf8(bytes).ok()?) {
                Ok(text) => text,
                Err(e) => return Some(Err(e)),
            };
            let mut kept = [0u8; LONGEST];
            kept[..bytes.len()].copy_from_slice(bytes);
            // The one replaced is released here, holding the GIL.
            cache[slot] = Some(Slot {
                len: bytes.len() as u8,
                bytes: kept,
                // SAFETY: `new_str` made a `str`.
                text: unsafe { text.cast_unchecked::<PyString>() }
                    .clone()
                    .unbind(),
            });
            Some(Ok(text))
        })
        .ok()
        .flatten()
}

/// FNV-1a over the bytes, folded to a slot.
#[inline]
fn slot_of(bytes: &[u8]) -> usize {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash = (hash ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    (hash ^ (hash >> 32)) as usize % SLOTS
}
