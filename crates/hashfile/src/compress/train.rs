//! The dictionary a build trains from a sample of the store's own values,
//! and how large it may be.

use super::MAX_DICTIONARY_LEN;

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
