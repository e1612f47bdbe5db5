//! Compressed values (docs/FORMAT.md, "Compressed values"): the one place
//! the zstd frame parameters, the dictionary section's layout, the
//! dictionary training and the decoding live. A builder compresses each
//! record's value alone, with a dictionary trained from a sample of the
//! store's own values, so a lookup decodes only its own value.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crate::error::{Error, Result};

/// Values shorter than this stay raw. A frame costs 5 bytes before any
/// data (a 2-byte frame header without the magic number, a 3-byte block
/// header), and every lookup of a compressed value pays a decode (0.5 to
/// 0.7 µs for values of about 220 bytes, `cargo bench -p hashfile --bench
/// lookup -- compressed`): below 32 bytes the few bytes a dictionary
/// saves are not worth it.
pub const MIN_COMPRESS_LEN: usize = 32;

/// Typed values longer than this are not compressed whole. A typed value
/// is a tree a lookup often reads only a path of (`dig`, the I18n
/// backend); compressed whole, every lookup would decode all of it, about
/// 1.5 ms for a 1 MB locale (`bench/compression.rb`), where 64 KiB take
/// some tens of microseconds. A longer one keeps its upper levels raw and
/// its subtrees compressed (`value::frames`). Strings are read whole
/// anyway, and compress whole at any length.
pub const MAX_TYPED_COMPRESS_LEN: usize = 64 << 10;

/// Inside a typed value longer than [`MAX_TYPED_COMPRESS_LEN`], a
/// subtree of at most this many bytes is one frame (`value::frames`): a
/// `dig` decodes at most this much besides an array or a small map of
/// scalars it ends on. On Debian's locale tree (`bench/compression.rb`)
/// frames of at most 1, 4 and 16 KiB made the store 2.22, 2.28 and 2.34
/// times smaller: past 4 KiB a dig decodes more for little gain.
pub const ITEM_FRAME_LEN: usize = 4 << 10;

/// Whether a builder compresses a value of `len` bytes, `typed` or a
/// string: at least [`MIN_COMPRESS_LEN`] bytes, and a typed one at most
/// [`MAX_TYPED_COMPRESS_LEN`].
pub fn worth_compressing(typed: bool, len: usize) -> bool {
    len >= MIN_COMPRESS_LEN && (!typed || len <= MAX_TYPED_COMPRESS_LEN)
}

/// A compressed value decodes to at most this many times its stored
/// length: what a reader allocates for a value is bounded by the bytes
/// the value takes in the file, whatever a damaged or hostile frame
/// declares. A builder stores a value that would compress further raw
/// (a run of one byte; nothing realistic).
pub const MAX_EXPANSION: u64 = 1024;

/// Bytes before the dictionary in the dictionary section: four
/// little-endian fields, informational (`info`): compressed values (u64),
/// their decoded bytes (u64), their stored bytes (u64), the level (i32),
/// and 4 zero bytes.
pub const STATS_LEN: usize = 32;

/// The longest dictionary a reader accepts: what opening a compressed
/// store may read and parse is bounded whatever its header says.
pub const MAX_DICTIONARY_LEN: usize = 1 << 20;

/// The longest dictionary a build trains (zstd's own trainer defaults to
/// 110 KB). A larger dictionary compresses each value better, but it is
/// bytes of the file too: on a 6.7 MB catalogue, 256 KiB gained what it
/// cost over 64 KiB (values 2.75x against 2.54x smaller; docs/BENCHMARKS.md,
/// "Compressed values"), so a store gets 1/256 of its records' bytes, from
/// [`SMALL_DICTIONARY_CAPACITY`] to this ([`dictionary_capacity`]): 1 MiB
/// from 256 MiB of records. On the 1,000,000-product catalogue (337 MB)
/// 1 MiB against 256 KiB made the store 2.84x smaller than raw against
/// 2.71x at level 19, and 2.42x against 2.41x at level 3.
pub const DICTIONARY_CAPACITY: usize = MAX_DICTIONARY_LEN;

/// The dictionary capacity of stores of up to 16 MiB of records.
pub const SMALL_DICTIONARY_CAPACITY: usize = 64 << 10;

/// The capacity of the dictionary a build trains for `records_len` bytes
/// of records.
pub fn dictionary_capacity(records_len: u64) -> usize {
    (records_len / 256).clamp(SMALL_DICTIONARY_CAPACITY as u64, DICTIONARY_CAPACITY as u64) as usize
}

/// A build trains on at most this many bytes of values: zstd's guidance is
/// about 100 times the dictionary's size, which is this for 256 KiB. A
/// 1 MiB dictionary trained on it compressed the catalogue as well as one
/// trained on four times as much (2.84x and 2.83x at level 19), which
/// took longer to train.
pub const SAMPLE_BYTES: usize = 100 * (256 << 10);

/// The longest piece of one value a sample takes.
pub const SAMPLE_VALUE_LEN: usize = 128 << 10;

/// The level a build uses when none is given: zstd's own default.
pub const DEFAULT_LEVEL: i32 = 3;

/// The levels a build takes.
pub const LEVEL_RANGE: (i32, i32) = (1, 22);

/// What the dictionary section says about the compressed values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Records whose value is compressed.
    pub values: u64,
    /// Their values' decoded bytes.
    pub decoded_bytes: u64,
    /// Their values' stored (compressed) bytes.
    pub stored_bytes: u64,
    /// The zstd level they were compressed at.
    pub level: i32,
}

impl Stats {
    /// The section's first `STATS_LEN` bytes.
    pub fn encode(&self) -> [u8; STATS_LEN] {
        let mut out = [0u8; STATS_LEN];
        out[..8].copy_from_slice(&self.values.to_le_bytes());
        out[8..16].copy_from_slice(&self.decoded_bytes.to_le_bytes());
        out[16..24].copy_from_slice(&self.stored_bytes.to_le_bytes());
        out[24..28].copy_from_slice(&self.level.to_le_bytes());
        out
    }

    /// The stats at the start of a dictionary section of at least
    /// `STATS_LEN` bytes.
    pub fn decode(bytes: &[u8]) -> Stats {
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        Stats {
            values: u64_at(0),
            decoded_bytes: u64_at(8),
            stored_bytes: u64_at(16),
            level: i32::from_le_bytes(bytes[24..28].try_into().expect("4 bytes")),
        }
    }
}

/// What `info` reports of a store built with compression
/// (`Reader::compression_stats`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// The dictionary section's stats.
    pub stats: Stats,
    /// The dictionary's length (0: the values were compressed without one).
    pub dictionary_bytes: u64,
}

impl Summary {
    /// How many times smaller the compressed values are than decoded
    /// (1.0 when none is compressed).
    pub fn ratio(&self) -> f64 {
        if self.stats.stored_bytes == 0 {
            return 1.0;
        }
        self.stats.decoded_bytes as f64 / self.stats.stored_bytes as f64
    }
}

/// The compression a build applies to values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// Values are stored as they are.
    #[default]
    None,
    /// Each value of at least [`MIN_COMPRESS_LEN`] bytes is a zstd frame
    /// at this level, with a dictionary trained from the store's values;
    /// a value that does not get smaller stays raw.
    Zstd {
        /// 1 to 22.
        level: i32,
    },
}

impl Compression {
    /// The compression named as the CLI and bindings take it: `none`,
    /// `zstd` (level 3) or `zstd:LEVEL`.
    pub fn parse(name: &str) -> Result<Compression> {
        let bad = |reason: String| Error::InvalidOption {
            name: "compression",
            reason,
        };
        let (codec, level) = match name.split_once(':') {
            Some((codec, level)) => (codec, Some(level)),
            None => (name, None),
        };
        match (codec, level) {
            ("none", None) => Ok(Compression::None),
            ("zstd", None) => Ok(Compression::Zstd {
                level: DEFAULT_LEVEL,
            }),
            ("zstd", Some(level)) => {
                let (lo, hi) = LEVEL_RANGE;
                match level.parse::<i32>() {
                    Ok(level) if (lo..=hi).contains(&level) => Ok(Compression::Zstd { level }),
                    _ => Err(bad(format!(
                        "{name:?}: the zstd level must be an integer from {lo} to {hi}"
                    ))),
                }
            }
            _ => Err(bad(format!(
                "{name:?} is not a compression; one of none, zstd, zstd:LEVEL (LEVEL {}..={})",
                LEVEL_RANGE.0, LEVEL_RANGE.1
            ))),
        }
    }

    /// The name `parse` takes back.
    pub fn name(self) -> String {
        match self {
            Compression::None => "none".into(),
            Compression::Zstd { level } if level == DEFAULT_LEVEL => "zstd".into(),
            Compression::Zstd { level } => format!("zstd:{level}"),
        }
    }
}

/// Trains a dictionary of at most `capacity` bytes on `samples` (values
/// in store order, each cut to `SAMPLE_VALUE_LEN`). Empty when there is
/// too little to train on or the trainer gives up: the values are then
/// compressed without one. Deterministic: zstd's trainer is, for the same
/// samples.
pub fn train(samples: &[&[u8]], capacity: usize) -> Vec<u8> {
    let mut joined = Vec::new();
    let mut sizes = Vec::with_capacity(samples.len());
    for sample in samples {
        let sample = &sample[..sample.len().min(SAMPLE_VALUE_LEN)];
        joined.extend_from_slice(sample);
        sizes.push(sample.len());
    }
    // A dictionary of a tenth of what it is trained on, at most the
    // capacity; under 1 KiB (10 KiB of values) it is not worth its bytes.
    let capacity = (joined.len() / 10).min(capacity);
    if capacity < 1024 || sizes.len() < 8 {
        return Vec::new();
    }
    let mut dictionary = Vec::with_capacity(capacity);
    match zstd_safe::train_from_buffer(&mut dictionary, &joined, &sizes) {
        Ok(_) => dictionary,
        Err(_) => Vec::new(),
    }
}

/// Compresses values with one dictionary, on one thread.
pub struct Encoder<'d> {
    context: zstd_safe::CCtx<'d>,
    /// The last frame, before it is known to be worth keeping.
    frame: Vec<u8>,
}

impl<'d> Encoder<'d> {
    /// An encoder at `level` with `dictionary` (prepared once per build
    /// with [`prepare_dictionary`]; `None` for no dictionary).
    pub fn new(level: i32, dictionary: Option<&'d zstd_safe::CDict<'d>>) -> Result<Encoder<'d>> {
        use zstd_safe::{CParameter, FrameFormat};
        let failed = |what: &str, code: usize| Error::Compression {
            reason: format!("{what}: {}", zstd_safe::get_error_name(code)),
        };
        let mut context = zstd_safe::CCtx::try_create().ok_or(Error::Compression {
            reason: "zstd could not allocate a compression context".into(),
        })?;
        for parameter in [
            CParameter::Format(FrameFormat::Magicless),
            CParameter::ContentSizeFlag(true),
            CParameter::ChecksumFlag(false),
            CParameter::DictIdFlag(false),
            CParameter::CompressionLevel(level),
        ] {
            context
                .set_parameter(parameter)
                .map_err(|code| failed("setting a zstd parameter", code))?;
        }
        if let Some(dictionary) = dictionary {
            context
                .ref_cdict(dictionary)
                .map_err(|code| failed("loading the dictionary", code))?;
        }
        Ok(Encoder {
            context,
            frame: Vec::new(),
        })
    }

    /// Appends `value` compressed to `out` and returns true, or appends
    /// nothing and returns false where it would not be smaller (or would
    /// decode to more than [`MAX_EXPANSION`] times its length). The caller
    /// asks [`worth_compressing`] first.
    pub fn compress(&mut self, value: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.frame.clear();
        self.frame.reserve(zstd_safe::compress_bound(value.len()));
        let written = self
            .context
            .compress2(&mut self.frame, value)
            .map_err(|code| Error::Compression {
                reason: format!("zstd: {}", zstd_safe::get_error_name(code)),
            })?;
        let smaller = written < value.len();
        let bounded = (value.len() as u64) <= (written as u64).saturating_mul(MAX_EXPANSION);
        if smaller && bounded {
            out.extend_from_slice(&self.frame);
            return Ok(true);
        }
        Ok(false)
    }
}

/// The dictionary prepared for compressing at `level` (`None` for an
/// empty one).
pub fn prepare_dictionary(dictionary: &[u8], level: i32) -> Option<zstd_safe::CDict<'static>> {
    (!dictionary.is_empty()).then(|| zstd_safe::CDict::create(dictionary, level))
}

/// Decodes the values of one store: its dictionary, parsed once, and the
/// items of its compressed items a `dig` decoded, kept for the next.
pub struct Decoder {
    dictionary: Option<zstd_safe::DDict<'static>>,
    items: Mutex<ItemCache>,
}

/// The most bytes of decoded items one open store keeps
/// ([`Decoder::decode_item`]): a dig that enters a kept item skips its
/// decode. Debian's merged locale tree, every leaf of en and de dug in a
/// shuffled order, enters about 1.2 MB of items (docs/BENCHMARKS.md,
/// "Compressed values").
pub const ITEM_CACHE_LEN: usize = 4 << 20;

/// The longest decoded item kept: a longer one is decoded for each dig.
pub const KEPT_ITEM_LEN: usize = 64 << 10;

/// What a store's cache of decoded items holds and has done
/// ([`Decoder::item_cache_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ItemCacheStats {
    /// Items kept.
    pub entries: u64,
    /// Their decoded bytes (at most [`ITEM_CACHE_LEN`]).
    pub bytes: u64,
    /// Items asked for that were kept.
    pub hits: u64,
    /// Items asked for that were decoded.
    pub misses: u64,
}

/// Decoded items by their frame's offset in the store's file and length:
/// each decoder has its own, so a frame of another store (or of the same
/// path opened again) is never answered from it. Evicts by CLOCK (second
/// chance): an item asked for since the hand last passed it stays another
/// round.
#[derive(Default)]
struct ItemCache {
    items: HashMap<ItemPlace, KeptItem>,
    /// Every kept item's place, in the order the hand visits them.
    hand: VecDeque<ItemPlace>,
    bytes: usize,
    hits: u64,
    misses: u64,
}

/// A frame's offset in its store's file, and its length.
type ItemPlace = (u64, usize);

struct KeptItem {
    bytes: Arc<[u8]>,
    entered: bool,
}

impl ItemCache {
    fn get(&mut self, place: ItemPlace) -> Option<Arc<[u8]>> {
        match self.items.get_mut(&place) {
            Some(kept) => {
                kept.entered = true;
                self.hits += 1;
                Some(kept.bytes.clone())
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    fn insert(&mut self, place: ItemPlace, item: Arc<[u8]>) {
        if item.len() > KEPT_ITEM_LEN || self.items.contains_key(&place) {
            return;
        }
        while self.bytes + item.len() > ITEM_CACHE_LEN {
            let Some(oldest) = self.hand.pop_front() else {
                break;
            };
            let kept = self
                .items
                .get_mut(&oldest)
                .expect("the hand holds kept places");
            if kept.entered {
                kept.entered = false;
                self.hand.push_back(oldest);
            } else {
                self.bytes -= kept.bytes.len();
                self.items.remove(&oldest);
            }
        }
        self.bytes += item.len();
        self.hand.push_back(place);
        self.items.insert(
            place,
            KeptItem {
                bytes: item,
                entered: false,
            },
        );
    }
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
    /// decoder's cache of items (up to [`ITEM_CACHE_LEN`] bytes, shared by
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
        if let Some(item) = self.item_cache().get(place) {
            return Ok(item);
        }
        // Decoded outside the lock: another thread may decode the same
        // frame meanwhile, and the first kept is the one kept.
        let item: Arc<[u8]> = self.decode(frame, b"", max)?.into();
        self.item_cache().insert(place, item.clone());
        Ok(item)
    }

    /// What the cache of decoded items holds and has done.
    pub fn item_cache_stats(&self) -> ItemCacheStats {
        let cache = self.item_cache();
        ItemCacheStats {
            entries: cache.items.len() as u64,
            bytes: cache.bytes as u64,
            hits: cache.hits,
            misses: cache.misses,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for c in [
            Compression::None,
            Compression::Zstd { level: 3 },
            Compression::Zstd { level: 19 },
        ] {
            assert_eq!(Compression::parse(&c.name()).unwrap(), c);
        }
        for bad in ["lz4", "zstd:0", "zstd:23", "zstd:x", "none:1", ""] {
            let e = Compression::parse(bad).unwrap_err().to_string();
            assert!(e.contains("compression"), "{bad}: {e}");
        }
    }

    #[test]
    fn values_round_trip_with_and_without_a_dictionary() {
        let values: Vec<Vec<u8>> = (0..200)
            .map(|i| format!("{{\"id\":{i},\"name\":\"product {i}\",\"colour\":\"blue\",\"size\":\"large\"}}").into_bytes())
            .collect();
        let samples: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        for dictionary in [train(&samples, SMALL_DICTIONARY_CAPACITY), Vec::new()] {
            let prepared = prepare_dictionary(&dictionary, 3);
            let mut encoder = Encoder::new(3, prepared.as_ref()).unwrap();
            let decoder = Decoder::new(&dictionary).unwrap();
            let mut compressed = 0;
            for value in &values {
                let mut out = vec![];
                if encoder.compress(value, &mut out).unwrap() {
                    compressed += 1;
                    let decoded = decoder.decode(&out, b"key", u64::MAX).unwrap();
                    assert_eq!(&decoded[..value.len()], &value[..]);
                    assert_eq!(&decoded[value.len()..], b"key");
                }
            }
            // With a dictionary every value shrinks.
            assert!(!dictionary.is_empty() || compressed < values.len());
            if !dictionary.is_empty() {
                assert_eq!(compressed, values.len());
            }
        }
    }

    #[test]
    fn kept_items_come_back_only_to_their_own_decoder_and_stay_within_the_limit() {
        let values: Vec<Vec<u8>> = (0..400)
            .map(|i| {
                format!("{{\"id\":{i},\"name\":\"product {i}\",\"colour\":\"blue\",\"size\":\"large\"}}").into_bytes()
            })
            .collect();
        let samples: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        let dictionary = train(&samples, SMALL_DICTIONARY_CAPACITY);
        assert!(!dictionary.is_empty());
        let prepared = prepare_dictionary(&dictionary, 3);
        let mut encoder = Encoder::new(3, prepared.as_ref()).unwrap();
        let mut frame = vec![];
        assert!(encoder.compress(&values[7], &mut frame).unwrap());
        let decoder = Decoder::new(&dictionary).unwrap();
        // Decoded, then given back from the cache: the same bytes, shared.
        let first = decoder.decode_item(100, &frame, u64::MAX).unwrap();
        let again = decoder.decode_item(100, &frame, u64::MAX).unwrap();
        assert_eq!(&*first, &values[7][..]);
        assert!(Arc::ptr_eq(&first, &again));
        let stats = decoder.item_cache_stats();
        assert_eq!(
            (stats.entries, stats.bytes, stats.hits, stats.misses),
            (1, values[7].len() as u64, 1, 1)
        );
        // Another store's decoder at the same frame decodes it itself:
        // without the dictionary it gets an error or other bytes.
        let other = Decoder::new(&[]).unwrap();
        assert_ne!(
            other.decode_item(100, &frame, u64::MAX).ok().as_deref(),
            Some(&values[7][..])
        );

        // Items past the limit evict others; one entered again since the
        // hand passed it stays (second chance); one over KEPT_ITEM_LEN is
        // decoded each time and never kept.
        let mut cache = ItemCache::default();
        let item = |n: usize| -> Arc<[u8]> { vec![n as u8; KEPT_ITEM_LEN].into() };
        let per_cache = ITEM_CACHE_LEN / KEPT_ITEM_LEN;
        for n in 0..per_cache {
            cache.insert((n as u64, 1), item(n));
        }
        assert_eq!(cache.bytes, ITEM_CACHE_LEN);
        assert!(cache.get((0, 1)).is_some());
        cache.insert((per_cache as u64, 1), item(per_cache));
        assert_eq!(cache.bytes, ITEM_CACHE_LEN);
        assert!(cache.get((0, 1)).is_some(), "entered since: kept");
        assert!(
            cache.get((1, 1)).is_none(),
            "the oldest not entered: evicted"
        );
        assert_eq!(cache.items.len(), cache.hand.len());
        let long: Arc<[u8]> = vec![0; KEPT_ITEM_LEN + 1].into();
        cache.insert((u64::MAX, 1), long);
        assert!(cache.get((u64::MAX, 1)).is_none());
        assert!(cache.bytes <= ITEM_CACHE_LEN);
    }

    #[test]
    fn short_values_stay_raw_and_damage_is_an_error() {
        assert!(!worth_compressing(false, MIN_COMPRESS_LEN - 1));
        assert!(worth_compressing(false, 10 << 20));
        assert!(worth_compressing(true, MAX_TYPED_COMPRESS_LEN));
        assert!(!worth_compressing(true, MAX_TYPED_COMPRESS_LEN + 1));
        let mut encoder = Encoder::new(3, None).unwrap();
        let mut out = vec![];
        let value = vec![b'a'; 500];
        assert!(encoder.compress(&value, &mut out).unwrap());
        let decoder = Decoder::new(&[]).unwrap();
        assert_eq!(decoder.decode(&out, b"", u64::MAX).unwrap(), value);
        // Cut short, or claiming more than the bound: errors, not values.
        assert!(decoder
            .decode(&out[..out.len() - 1], b"", u64::MAX)
            .is_err());
        assert!(decoder.decode(&out[..1], b"", u64::MAX).is_err());
        assert!(decoder.decode(&[], b"", u64::MAX).is_err());
        // A frame header claiming 2^40 bytes for a few stored bytes.
        let mut bomb = out.clone();
        bomb[0] |= 0xc0; // 8-byte content size
        assert!(decoder.decode(&bomb, b"", u64::MAX).is_err());
        // Over the caller's limit: refused before anything is allocated.
        assert_eq!(
            decoder.decode(&out, b"", 499),
            Err(DecodeError::TooLarge(500))
        );
        assert_eq!(decoder.decode(&out, b"", 500).unwrap(), value);
    }
}
