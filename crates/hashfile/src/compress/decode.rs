//! `Decoder`: the store's dictionary parsed once, one decompression context
//! per thread, and the bounds a frame must keep to be decoded.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use super::item_cache::{ItemCache, ItemCacheStats};
use super::MAX_EXPANSION;

/// Decodes the values of one store: its dictionary, parsed once, and the
/// items of its compressed items a `dig` decoded, kept for the next.
pub struct Decoder {
    dictionary: Option<zstd_safe::DDict<'static>>,
    items: Mutex<ItemCache>,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("dictionary", &self.dictionary.is_some())
            .finish()
    }
}

thread_local! {
    /// One decompression context per thread, for every store: a context
    /// takes about 100 KiB and some microseconds to make, a lookup a few
    /// hundred nanoseconds. The dictionary is given with each call.
    static CONTEXT: RefCell<Option<zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
}

impl Decoder {
    /// The decoder of a dictionary section's dictionary (the bytes after
    /// the stats; empty for none). An error if zstd cannot load it.
    pub fn new(dictionary: &[u8]) -> std::result::Result<Decoder, String> {
        let dictionary = if dictionary.is_empty() {
            None
        } else {
            Some(
                zstd_safe::DDict::try_create(dictionary)
                    .ok_or_else(|| "zstd cannot load the dictionary".to_string())?,
            )
        };
        Ok(Decoder {
            dictionary,
            items: Mutex::new(ItemCache::default()),
        })
    }

    /// The item a compressed item's `frame` holds (`value::frames`), where
    /// `frame` lies at byte `at` of the store's file: kept in this
    /// decoder's cache of items (up to [`ITEM_CACHE_LEN`](super::ITEM_CACHE_LEN) bytes, shared by
    /// the threads reading the store) and answered from it when the frame
    /// at `at` is asked for again, whether the store is mapped or read.
    /// An item is decoded as [`decode`](Decoder::decode) decodes a value,
    /// within `max` bytes.
    pub fn decode_item(
        &self,
        at: u64,
        frame: &[u8],
        max: u64,
    ) -> std::result::Result<Arc<[u8]>, DecodeError> {
        let place = (at, frame.len());
        if let Some(item) = self.item_cache().get(place, frame) {
            return Ok(item);
        }
        // Decoded outside the lock: another thread may decode the same
        // frame meanwhile, and the first kept is the one kept.
        let item: Arc<[u8]> = self.decode(frame, b"", max)?.into();
        self.item_cache().insert(place, frame, item.clone());
        Ok(item)
    }

    /// The value a compressed record's `frame` holds, followed by its
    /// `key`, where `frame` lies at byte `at` of the store's file, as
    /// [`decode`](Decoder::decode) gives it within `max` bytes. A value
    /// that decodes to [`KEPT_VALUE_LEN`] bytes or more (and at most
    /// [`KEPT_ITEM_LEN`](super::KEPT_ITEM_LEN)) is kept in the cache the
    /// items of [`decode_item`](Decoder::decode_item) are, and answered
    /// from it when the frame at `at` is asked for again: a lookup of a
    /// hot value of some kilobytes skips a decode of some microseconds.
    /// A kept value is given back only for the same frame bytes and the
    /// same key (the caller compared the stored key with the one asked
    /// for): never another key's value, nor the value of bytes a file
    /// rewritten in place no longer holds.
    pub fn decode_value(
        &self,
        at: u64,
        frame: &[u8],
        key: &[u8],
        max: u64,
    ) -> std::result::Result<DecodedValue, DecodeError> {
        let size = content_size(frame).map_err(DecodeError::Damaged)?;
        if !(KEPT_VALUE_LEN..=super::KEPT_ITEM_LEN as u64).contains(&size) {
            return self
                .decode_sized(frame, size, key, max)
                .map(DecodedValue::Owned);
        }
        let place = (at, frame.len());
        let kept = self.item_cache().get(place, frame);
        match kept {
            // The same frame bytes, kept with this key (the whole of it:
            // the value is the frame's `size` bytes): the value. (Another
            // key ending at the same frame is a damaged store's records
            // overlapping: decoded for it alone.)
            Some(kept)
                if kept.len() as u64 == size.saturating_add(key.len() as u64)
                    && kept[kept.len() - key.len()..] == *key =>
            {
                let value_len = (kept.len() - key.len()) as u64;
                if value_len > max {
                    return Err(DecodeError::TooLarge(value_len));
                }
                Ok(DecodedValue::Kept(kept))
            }
            Some(_) => self
                .decode_sized(frame, size, key, max)
                .map(DecodedValue::Owned),
            None => {
                let bytes: Arc<[u8]> = self.decode_sized(frame, size, key, max)?.into();
                self.item_cache().insert(place, frame, bytes.clone());
                Ok(DecodedValue::Kept(bytes))
            }
        }
    }

    /// What the cache of decoded items holds and has done.
    pub fn item_cache_stats(&self) -> ItemCacheStats {
        self.item_cache().stats()
    }

    fn item_cache(&self) -> std::sync::MutexGuard<'_, ItemCache> {
        // Nothing panics while holding it; if something did, the cache is
        // still whole (each change completes before the next).
        self.items
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The value `frame` holds, followed by `prefix` in the same buffer
    /// (a record's key, say). An error names what is wrong with the frame.
    ///
    /// The decoded value is at most `max` bytes (a reader's
    /// `max_value_size`): a frame that says it holds more is
    /// [`DecodeError::TooLarge`] before anything is allocated, and one
    /// that says less and holds more stops at what it said, since the
    /// decoder writes into a buffer of that length and no further. The
    /// buffer is allocated fallibly.
    pub fn decode(
        &self,
        frame: &[u8],
        prefix: &[u8],
        max: u64,
    ) -> std::result::Result<Vec<u8>, DecodeError> {
        let size = content_size(frame).map_err(DecodeError::Damaged)?;
        self.decode_sized(frame, size, prefix, max)
    }

    /// [`decode`](Decoder::decode) of a frame whose header says `size`
    /// bytes (`content_size`, read once by the caller).
    fn decode_sized(
        &self,
        frame: &[u8],
        size: u64,
        prefix: &[u8],
        max: u64,
    ) -> std::result::Result<Vec<u8>, DecodeError> {
        if size > (frame.len() as u64).saturating_mul(MAX_EXPANSION) {
            return Err(DecodeError::Damaged(format!(
                "compressed value of {} bytes claims {size} bytes decoded, more than {MAX_EXPANSION} times its length",
                frame.len()
            )));
        }
        if size > max {
            return Err(DecodeError::TooLarge(size));
        }
        let size = size as usize;
        // The value is decoded first and the prefix put after it: the
        // decoder writes from the start of the buffer.
        let mut out = Vec::new();
        out.try_reserve_exact(size + prefix.len())
            .map_err(|_| DecodeError::OutOfMemory(size as u64 + prefix.len() as u64))?;
        CONTEXT
            .with(|cell| {
                let mut cell = cell.borrow_mut();
                let context = match &mut *cell {
                    Some(context) => context,
                    none => none.insert(new_context()?),
                };
                // zstd_safe decodes into the buffer's spare room, `size`
                // bytes plus whatever the allocator rounded up: a frame
                // holding more than it says fails with "destination buffer
                // is too small" or decodes to another length, both damage.
                let written = match &self.dictionary {
                    Some(d) => context.decompress_using_ddict(&mut out, frame, d),
                    None => context.decompress(&mut out, frame),
                }
                .map_err(|code| format!("compressed value: {}", zstd_safe::get_error_name(code)))?;
                if written != size {
                    return Err(format!(
                        "compressed value decodes to {written} bytes or more, its frame says {size}"
                    ));
                }
                Ok(())
            })
            .map_err(DecodeError::Damaged)?;
        out.extend_from_slice(prefix);
        Ok(out)
    }
}

/// Values decoding to at least this many bytes are kept for the next
/// lookup ([`Decoder::decode_item`]'s cache): below it a decode (under a
/// microsecond) costs about what the cache's lock and lookup would.
pub const KEPT_VALUE_LEN: u64 = 1 << 10;

/// A value [`Decoder::decode_value`] decoded: the value followed by the
/// key, in a buffer of its own or one the store's cache shares.
pub enum DecodedValue {
    /// Decoded for this lookup alone.
    Owned(Vec<u8>),
    /// Kept in the store's cache of decoded items and values.
    Kept(Arc<[u8]>),
}

/// Why a frame was not decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The frame is damaged: it does not decode, or not to what it says.
    Damaged(String),
    /// The frame says it decodes to this many bytes, more than the limit
    /// the caller gave.
    TooLarge(u64),
    /// A buffer of this many bytes could not be allocated.
    OutOfMemory(u64),
}

fn new_context() -> std::result::Result<zstd_safe::DCtx<'static>, String> {
    let mut context = zstd_safe::DCtx::try_create()
        .ok_or_else(|| "zstd could not allocate a decompression context".to_string())?;
    context
        .set_parameter(zstd_safe::DParameter::Format(
            zstd_safe::FrameFormat::Magicless,
        ))
        .map_err(|code| zstd_safe::get_error_name(code).to_string())?;
    Ok(context)
}

/// The decoded length a frame (without its magic number) declares.
fn content_size(frame: &[u8]) -> std::result::Result<u64, String> {
    let mut header = std::mem::MaybeUninit::<zstd_sys::ZSTD_FrameHeader>::uninit();
    // SAFETY: ZSTD_getFrameHeader_advanced reads at most `frame.len()`
    // bytes from `frame`'s pointer and writes only the header struct it is
    // given, which is valid for writes of its size; it returns 0 only once
    // it has filled that struct, and only then is it read.
    let code = unsafe {
        zstd_sys::ZSTD_getFrameHeader_advanced(
            header.as_mut_ptr(),
            frame.as_ptr().cast(),
            frame.len(),
            zstd_sys::ZSTD_format_e::ZSTD_f_zstd1_magicless,
        )
    };
    if code != 0 {
        // SAFETY: ZSTD_isError only inspects the number.
        let is_error = unsafe { zstd_sys::ZSTD_isError(code) } != 0;
        return Err(if is_error {
            format!("compressed value: {}", zstd_safe::get_error_name(code))
        } else {
            "compressed value is shorter than its frame header".into()
        });
    }
    // SAFETY: filled by the call above, which returned 0.
    let header = unsafe { header.assume_init() };
    if header.frameContentSize == zstd_sys::ZSTD_CONTENTSIZE_UNKNOWN as u64 {
        return Err("compressed value's frame does not say its decoded length".into());
    }
    Ok(header.frameContentSize)
}
