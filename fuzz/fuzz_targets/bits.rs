//! Packed integers and seed blocks: values packed at a width read back
//! equal, one at a time; a seed block compressed by the bitpacking crate
//! reads back value by value without decompressing; reads of arbitrary
//! bytes at arbitrary widths and indices never panic.
#![no_main]

use hashfile::bits::{self, BlockLayout};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else {
        return;
    };
    let width = u32::from(choice % 56) + 1;
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    let values: Vec<u64> = rest
        .chunks(8)
        .map(|c| {
            let mut word = [0u8; 8];
            word[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(word) & mask
        })
        .collect();
    let packed = bits::pack(&values, width);
    assert_eq!(
        Some(packed.len() as u64),
        bits::packed_len(values.len() as u64, width)
    );
    for (i, &v) in values.iter().enumerate() {
        assert_eq!(bits::unpack_one(&packed, width, i as u64), Some(v));
    }
    // Arbitrary bytes, width and index: None or a value, never a panic.
    let _ = bits::unpack_one(rest, u32::from(choice), u64::from(choice) * 3);

    let layout = [BlockLayout::X1, BlockLayout::X4, BlockLayout::X8][usize::from(choice % 3)];
    let mut block: Vec<u32> = rest
        .chunks(4)
        .map(|c| {
            let mut word = [0u8; 4];
            word[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(word) >> (choice % 32)
        })
        .collect();
    block.resize(layout.block_len(), 0);
    let (width, bytes) = layout.compress(&block);
    for (i, &v) in block.iter().enumerate() {
        assert_eq!(layout.get(&bytes, u32::from(width), i), Some(v));
    }
    let _ = layout.get(rest, u32::from(choice), usize::from(choice));
});
