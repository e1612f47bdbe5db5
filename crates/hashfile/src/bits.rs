//! Bit-level building blocks of the format: fixed-width packed integers and
//! random access into blocks written by the `bitpacking` crate.
//!
//! The byte layouts are specified in docs/FORMAT.md ("Packed integers" and
//! "Seed blocks"). This is the bottom layer with `error`: it imports nothing
//! else from the crate but the parallel helpers.

use bitpacking::{BitPacker, BitPacker1x, BitPacker4x, BitPacker8x};

/// Bytes of zero padding after a packed-integer array, so that reading any
/// element with one unaligned 8-byte load stays inside the section.
pub const PACKED_PADDING: usize = 8;

/// Widest element a packed-integer array may hold: a value at any bit shift
/// (0..=7) must fit in one 64-bit load.
pub const MAX_PACKED_BITS: u32 = 56;

/// Number of bits needed to write every value in `0..=max` (at least 1).
pub fn bits_for(max: u64) -> u32 {
    (64 - max.leading_zeros()).max(1)
}

/// Length in bytes of `count` integers of `width` bits, padding included.
pub fn packed_len(count: u64, width: u32) -> Option<u64> {
    let bits = count.checked_mul(width as u64)?;
    bits.div_ceil(8).checked_add(PACKED_PADDING as u64)
}

/// Writes `values` as consecutive `width`-bit little-endian integers.
pub fn pack(values: &[u64], width: u32) -> Vec<u8> {
    pack_at(
        values.len() as u64,
        width,
        values.iter().enumerate().map(|(i, &v)| (i as u64, v)),
    )
}

/// A packed array of `count` integers of `width` bits, with element `index`
/// set to `value` for each pair given (each index at most once), and zero
/// elsewhere.
pub fn pack_at(count: u64, width: u32, entries: impl Iterator<Item = (u64, u64)>) -> Vec<u8> {
    assert!((1..=MAX_PACKED_BITS).contains(&width));
    let len = packed_len(count, width).expect("packed length overflows") as usize;
    let mut out = vec![0u8; len];
    for (index, value) in entries {
        debug_assert!(index < count && value < (1u64 << width));
        or_bits(&mut out, (index * width as u64) as usize, value, width);
    }
    out
}

/// ORs `value`, `width` bits wide, into `out` at bit `bit`: with one
/// 8-byte read and write where 8 bytes remain, else byte by byte, touching
/// only the bytes the value covers.
#[inline]
pub fn or_bits(out: &mut [u8], bit: usize, value: u64, width: u32) {
    let (byte, shifted) = (bit / 8, value << (bit % 8));
    if let Some(word) = out.get_mut(byte..byte + 8) {
        let merged = u64::from_le_bytes((&*word).try_into().unwrap()) | shifted;
        word.copy_from_slice(&merged.to_le_bytes());
    } else {
        for (k, b) in shifted
            .to_le_bytes()
            .iter()
            .enumerate()
            .take((bit % 8 + width as usize).div_ceil(8))
        {
            out[byte + k] |= b;
        }
    }
}

/// `pack_at` on the rayon pool: element `index(item)` of the array is
/// `value(item)`, for each item of `items`. Each thread writes the elements
/// of its own range of indices, a run of whole bytes of the output (ranges
/// start at multiples of 64), and asks `value` only for those, since a
/// value may cost a random read; the last few elements of a range are
/// written byte by byte, so that no write reaches into the next range.
/// Same bytes as `pack_at`.
pub fn pack_at_parallel<T: Sync>(
    count: u64,
    width: u32,
    items: &[T],
    index: impl Fn(&T) -> u64 + Sync,
    value: impl Fn(&T) -> u64 + Sync,
) -> Vec<u8> {
    use crate::parallel::*;
    let threads = threads() as u64;
    if threads < 2 || count < 1 << 16 {
        return pack_at(
            count,
            width,
            items.iter().map(|item| (index(item), value(item))),
        );
    }
    assert!((1..=MAX_PACKED_BITS).contains(&width));
    let mut out = vec![0u8; packed_len(count, width).expect("packed length overflows") as usize];
    let per = count.div_ceil(threads).next_multiple_of(64);
    let mut runs: Vec<(u64, u64, &mut [u8])> = Vec::new();
    let mut rest = out.as_mut_slice();
    for k in 0..threads {
        let (lo, hi) = ((k * per).min(count), ((k + 1) * per).min(count));
        // The last range also takes the padding.
        let bytes = if hi == count {
            rest.len()
        } else {
            ((hi - lo) * width as u64 / 8) as usize
        };
        let (run, tail) = rest.split_at_mut(bytes);
        runs.push((lo, hi, run));
        rest = tail;
    }
    runs.into_par_iter().for_each(|(lo, hi, run)| {
        for item in items {
            let at = index(item);
            if (lo..hi).contains(&at) {
                let value = value(item);
                debug_assert!(value < (1u64 << width));
                or_bits(run, ((at - lo) * width as u64) as usize, value, width);
            }
        }
    });
    out
}

/// Where element `index` of a `width`-bit packed array lies: the byte
/// offset of the 8-byte little-endian word that holds it, and its shift in
/// that word. `None` if the offset overflows, which only a damaged header
/// can ask for. Reading the word is the caller's: a slice here, a piece of
/// a byte source in the reader.
#[inline]
pub fn packed_position(index: u64, width: u32) -> Option<(u64, u32)> {
    let bit = index.checked_mul(width as u64)?;
    Some((bit / 8, (bit % 8) as u32))
}

/// The element in `word`, the 8 bytes at its `packed_position`.
#[inline]
pub fn packed_element(word: [u8; 8], shift: u32, width: u32) -> u64 {
    (u64::from_le_bytes(word) >> shift) & ((1u64 << width) - 1)
}

/// Reads element `index` of a packed array held in memory. `None` if the
/// bytes end early, which only a damaged file can cause, since lengths are
/// checked at open.
#[inline]
pub fn unpack_one(bytes: &[u8], width: u32, index: u64) -> Option<u64> {
    let (byte, shift) = packed_position(index, width)?;
    let byte = usize::try_from(byte).ok()?;
    let word: [u8; 8] = bytes.get(byte..byte.checked_add(8)?)?.try_into().ok()?;
    Some(packed_element(word, shift, width))
}

/// The three block layouts of the `bitpacking` crate. They differ only in how
/// many 32-bit lanes the values are interleaved across.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockLayout {
    /// `BitPacker1x`: 32 values, one lane.
    X1,
    /// `BitPacker4x`: 128 values in 4 lanes (SSE3 layout).
    X4,
    /// `BitPacker8x`: 256 values in 8 lanes (AVX2 layout).
    X8,
}

impl BlockLayout {
    /// The layout whose block holds `len` values, if there is one.
    pub fn from_block_len(len: u32) -> Option<Self> {
        match len {
            32 => Some(BlockLayout::X1),
            128 => Some(BlockLayout::X4),
            256 => Some(BlockLayout::X8),
            _ => None,
        }
    }

    /// Values per block.
    pub fn block_len(self) -> usize {
        self.lanes() * 32
    }

    fn lanes(self) -> usize {
        match self {
            BlockLayout::X1 => 1,
            BlockLayout::X4 => 4,
            BlockLayout::X8 => 8,
        }
    }

    /// Bytes per block for each bit of width (`block_len / 8`).
    pub fn unit_bytes(self) -> usize {
        self.block_len() / 8
    }

    /// Compresses one full block with the crate; returns (bit width, bytes).
    pub fn compress(self, block: &[u32]) -> (u8, Vec<u8>) {
        fn run<P: BitPacker>(block: &[u32]) -> (u8, Vec<u8>) {
            let packer = P::new();
            let width = packer.num_bits(block);
            let mut out = vec![0u8; P::compressed_block_size(width)];
            let written = packer.compress(block, &mut out, width);
            out.truncate(written);
            (width, out)
        }
        match self {
            BlockLayout::X1 => run::<BitPacker1x>(block),
            BlockLayout::X4 => run::<BitPacker4x>(block),
            BlockLayout::X8 => run::<BitPacker8x>(block),
        }
    }

    /// Reads value `index` (< block_len) of a block of `width` bits without
    /// decompressing the block. Lane `index % lanes` holds the value at bit
    /// `(index / lanes) * width` of that lane's stream of 32-bit words, and
    /// word `w` of lane `l` sits at byte `(w * lanes + l) * 4`.
    #[inline]
    pub fn get(self, block: &[u8], width: u32, index: usize) -> Option<u32> {
        if width == 0 {
            return Some(0);
        }
        let lanes = self.lanes();
        let lane = index % lanes;
        let bit = (index / lanes) * width as usize;
        let (word, shift) = (bit / 32, bit % 32);
        let read = |w: usize| -> Option<u64> {
            let at = (w * lanes + lane) * 4;
            Some(u32::from_le_bytes(block.get(at..at + 4)?.try_into().ok()?) as u64)
        };
        let mut value = read(word)? >> shift;
        if shift + width as usize > 32 {
            value |= read(word + 1)? << (32 - shift);
        }
        Some((value & ((1u64 << width) - 1)) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bits_for_edges() {
        for (max, bits) in [(0, 1), (1, 1), (2, 2), (255, 8), (256, 9), (u64::MAX, 64)] {
            assert_eq!(bits_for(max), bits, "bits_for({max})");
        }
    }

    proptest! {
        #[test]
        fn packed_round_trip(width in 1u32..=56, seed in any::<u64>(), count in 0usize..300) {
            let mask = (1u64 << width) - 1;
            let values: Vec<u64> = (0..count as u64)
                .map(|i| (seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).rotate_left(i as u32) & mask)
                .collect();
            let bytes = pack(&values, width);
            prop_assert_eq!(bytes.len() as u64, packed_len(count as u64, width).unwrap());
            for (i, &v) in values.iter().enumerate() {
                prop_assert_eq!(unpack_one(&bytes, width, i as u64), Some(v));
            }
        }

        #[test]
        fn block_get_matches_crate_decompress(layout in 0usize..3, max_bits in 0u32..=32, seed in any::<u64>()) {
            let layout = [BlockLayout::X1, BlockLayout::X4, BlockLayout::X8][layout];
            let mask = if max_bits == 32 { u32::MAX as u64 } else { (1u64 << max_bits) - 1 };
            let block: Vec<u32> = (0..layout.block_len() as u64)
                .map(|i| ((seed.wrapping_add(i).wrapping_mul(0xD6E8_FEB8_6659_FD93) >> 7) & mask) as u32)
                .collect();
            let (width, bytes) = layout.compress(&block);
            prop_assert_eq!(bytes.len(), layout.unit_bytes() * width as usize);
            for (i, &v) in block.iter().enumerate() {
                prop_assert_eq!(layout.get(&bytes, width as u32, i), Some(v), "index {}", i);
            }
        }
    }

    #[test]
    fn block_get_on_short_bytes_is_none() {
        let block = vec![u32::MAX; 128];
        let (width, bytes) = BlockLayout::X4.compress(&block);
        assert_eq!(
            BlockLayout::X4.get(&bytes[..bytes.len() - 1], width as u32, 127),
            None
        );
    }

    #[test]
    fn parallel_packing_gives_the_same_bytes() {
        // Indices in a scrambled order, some left out, at widths that do
        // and do not divide 8, across threads' range boundaries.
        for width in [1u32, 7, 24, 33, 56] {
            for count in [70_000u64, 200_003] {
                let items: Vec<(u64, u64)> = (0..count)
                    .filter(|i| i % 5 != 3)
                    .map(|i| {
                        let index = (i * 48_271) % count;
                        (
                            index,
                            index.wrapping_mul(0x9E37_79B9_7F4A_7C15) & ((1u64 << width) - 1),
                        )
                    })
                    .collect();
                let serial = pack_at(count, width, items.iter().copied());
                for threads in [2, 3, 8] {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .unwrap();
                    let parallel = pool.install(|| {
                        pack_at_parallel(count, width, &items, |&(i, _)| i, |&(_, v)| v)
                    });
                    assert!(
                        parallel == serial,
                        "width {width}, count {count}, {threads} threads"
                    );
                }
            }
        }
    }
}
