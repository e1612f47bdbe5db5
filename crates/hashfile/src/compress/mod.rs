//! Compressed values (docs/FORMAT.md, "Compressed values"): the one place
//! the zstd frame parameters, the dictionary section's layout, the
//! dictionary training and the decoding live. A builder compresses each
//! record's value alone, with a dictionary trained from a sample of the
//! store's own values, so a lookup decodes only its own value.
//!
//! One file per job: `names.rs` (`Compression` and the names the CLI and
//! bindings take), `stats.rs` (the dictionary section's stats and bounds),
//! `train.rs` (the sample and the dictionary a build trains), `encode.rs`
//! (`Encoder`, one frame per value), `decode.rs` (`Decoder`: the store's
//! dictionary, a thread's context, the bounds a frame must keep) and
//! `item_cache.rs` (the decoder's cache of the items digs decoded).

mod decode;
mod encode;
mod item_cache;
mod names;
mod stats;
mod train;

pub use decode::{DecodeError, DecodedValue, Decoder, KEPT_VALUE_LEN};
pub use encode::{prepare_dictionary, Encoder, Levels, Prepared};
pub use item_cache::{ItemCacheStats, ITEM_CACHE_LEN, KEPT_ITEM_LEN};
pub use names::{Compression, DEFAULT_LEVEL, DEFAULT_LONG_LEVEL, LEVEL_RANGE, LONG_VALUE_LEN};
pub use stats::{Stats, Summary, MAX_DICTIONARY_LEN, STATS_LEN};
pub use train::{
    dictionary_capacity, train, DICTIONARY_CAPACITY, SAMPLE_BYTES, SAMPLE_VALUE_LEN,
    SMALL_DICTIONARY_CAPACITY,
};

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
/// its subtrees compressed (`value::frames`), but for an array of scalars
/// (`value::frames::compressed_whole`: a list a lookup reads whole, whose
/// items are too short to compress one by one). Strings are read whole
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_with_and_without_a_dictionary() {
        let values: Vec<Vec<u8>> = (0..200)
            .map(|i| format!("{{\"id\":{i},\"name\":\"product {i}\",\"colour\":\"blue\",\"size\":\"large\"}}").into_bytes())
            .collect();
        let samples: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        for dictionary in [train(&samples, SMALL_DICTIONARY_CAPACITY), Vec::new()] {
            let prepared = prepare_dictionary(&dictionary, Levels { short: 3, long: 9 });
            let mut encoder = Encoder::new(&prepared).unwrap();
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
    fn a_kept_value_comes_back_only_for_its_own_frame_bytes_and_key() {
        let value = b"a value long enough to be kept once decoded, ".repeat(40);
        let prepared = prepare_dictionary(&[], Levels { short: 3, long: 9 });
        let mut frame = vec![];
        assert!(Encoder::new(&prepared)
            .unwrap()
            .compress(&value, &mut frame)
            .unwrap());
        let decoder = Decoder::new(&[]).unwrap();
        let get = |key: &[u8]| match decoder.decode_value(7, &frame, key, u64::MAX).unwrap() {
            DecodedValue::Owned(bytes) => (bytes, false),
            DecodedValue::Kept(bytes) => (bytes.to_vec(), true),
        };
        let with_key = |key: &[u8]| [&value[..], key].concat();
        // The first lookup keeps it; the same key gets it back.
        assert_eq!(
            get(b"long key ending in a"),
            (with_key(b"long key ending in a"), true)
        );
        assert_eq!(
            get(b"long key ending in a"),
            (with_key(b"long key ending in a"), true)
        );
        // Another key whose bytes end the kept one's (records of a damaged
        // store overlapping at one frame): decoded for it, never the kept.
        assert_eq!(get(b"a"), (with_key(b"a"), false));
        assert_eq!(get(b"ending in a"), (with_key(b"ending in a"), false));
        assert_eq!(decoder.item_cache_stats().entries, 1);
    }

    #[test]
    fn short_values_stay_raw_and_damage_is_an_error() {
        assert!(!worth_compressing(false, MIN_COMPRESS_LEN - 1));
        assert!(worth_compressing(false, 10 << 20));
        assert!(worth_compressing(true, MAX_TYPED_COMPRESS_LEN));
        assert!(!worth_compressing(true, MAX_TYPED_COMPRESS_LEN + 1));
        let prepared = prepare_dictionary(&[], Levels { short: 3, long: 3 });
        let mut encoder = Encoder::new(&prepared).unwrap();
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
