//! Per-value compression against Sparkey-style block compression, on the
//! same records: `cargo run --release --example block_baseline -p hashfile
//! -- PLAIN.hf COMPRESSED.hf [LEVEL] [LOOKUPS]` (bench/compression.rb runs
//! it for each data set).
//!
//! The baseline is computed here, from PLAIN.hf's records in file order,
//! as Sparkey (github.com/spotify/sparkey) lays out a compressed log: each
//! record (`varint key length, varint value length, key, value`) appended
//! to a block until the next would take it past the block size (4 KiB and
//! 16 KiB; a record larger than that is a block of its own, where Sparkey
//! would split it), each block compressed alone with zstd at LEVEL (3 by
//! default) and no dictionary. Its size is the blocks plus PLAIN.hf's own
//! index sections (the same job: a key to a place), and a lookup is a hash
//! map lookup for the key's block and offset, the whole block decoded, and
//! the value copied out.
//!
//! Prints one JSON object: each layout's bytes, and its time of one random
//! lookup in ns, all measured in this one run, alternating, the fastest of
//! three rounds of LOOKUPS (default 200,000; fewer where the records average
//! over 5 KiB, about 1 GiB of them a round) keys drawn with a fixed seed.
use std::collections::HashMap;
use std::time::Instant;

use hashfile::format::SectionId;

/// A store of blocks, Sparkey-style.
struct Blocks {
    /// Each block compressed.
    frames: Vec<Vec<u8>>,
    /// Each block's length decoded.
    lens: Vec<usize>,
    /// Where each key is: its block, and its value's range in the block
    /// decoded.
    places: HashMap<Vec<u8>, (usize, std::ops::Range<usize>)>,
}

fn varint(mut n: usize, out: &mut Vec<u8>) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

impl Blocks {
    fn new(records: &[(Vec<u8>, Vec<u8>)], block_len: usize, level: i32) -> Blocks {
        let mut blocks = Blocks {
            frames: Vec::new(),
            lens: Vec::new(),
            places: HashMap::new(),
        };
        let mut block = Vec::new();
        let close = |block: &mut Vec<u8>, blocks: &mut Blocks| {
            if !block.is_empty() {
                let mut frame = Vec::with_capacity(zstd_safe::compress_bound(block.len()));
                zstd_safe::compress(&mut frame, block, level).expect("zstd compresses a block");
                blocks.frames.push(frame);
                blocks.lens.push(block.len());
                block.clear();
            }
        };
        for (key, value) in records {
            let mut entry = Vec::with_capacity(key.len() + value.len() + 10);
            varint(key.len(), &mut entry);
            varint(value.len(), &mut entry);
            entry.extend_from_slice(key);
            if block.len() + entry.len() + value.len() > block_len {
                close(&mut block, &mut blocks);
            }
            let start = block.len() + entry.len();
            block.extend_from_slice(&entry);
            block.extend_from_slice(value);
            blocks.places.insert(
                key.clone(),
                (blocks.frames.len(), start..start + value.len()),
            );
        }
        close(&mut block, &mut blocks);
        blocks
    }

    fn bytes(&self) -> usize {
        self.frames.iter().map(Vec::len).sum()
    }

    /// The value of `key`: its block decoded into `scratch` with
    /// `context` (one a reader keeps), the value copied out.
    fn get(&self, key: &[u8], context: &mut zstd_safe::DCtx<'_>, scratch: &mut Vec<u8>) -> Vec<u8> {
        let (block, range) = self.places.get(key).expect("every key is there");
        scratch.clear();
        scratch.reserve(self.lens[*block]);
        context
            .decompress(scratch, &self.frames[*block])
            .expect("a block decodes");
        scratch[range.clone()].to_vec()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let plain = hashfile::Reader::open(&args[1]).expect("PLAIN.hf");
    let compressed = hashfile::Reader::open(&args[2]).expect("COMPRESSED.hf");
    let level: i32 = args.get(3).map_or(3, |a| a.parse().expect("LEVEL"));
    let lookups: usize = args.get(4).map_or(200_000, |a| a.parse().expect("LOOKUPS"));
    let records: Vec<(Vec<u8>, Vec<u8>)> = plain
        .iter()
        .map(|r| {
            let r = r.expect("a record");
            (r.key().to_vec(), r.value().to_vec())
        })
        .collect();
    let records_section = plain.header().section(SectionId::Records).length as usize;
    // Stores of few large records (a locale a record) get fewer lookups:
    // at most about 1 GiB of records read a round.
    let mean = records_section / records.len().max(1);
    let lookups = lookups.min((1usize << 30) / mean.max(1)).max(1_000);
    let index_bytes =
        std::fs::metadata(&args[1]).expect("PLAIN.hf").len() as usize - records_section;
    let blocks: Vec<Blocks> = [4096, 16384]
        .into_iter()
        .map(|len| Blocks::new(&records, len, level))
        .collect();
    // The keys, drawn before timing (xorshift, fixed seed).
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let keys: Vec<&[u8]> = (0..lookups)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            records[(x % records.len() as u64) as usize].0.as_slice()
        })
        .collect();
    let time = |f: &mut dyn FnMut(&[u8]) -> usize| {
        let start = Instant::now();
        let mut sum = 0usize;
        for key in &keys {
            sum = sum.wrapping_add(f(key));
        }
        std::hint::black_box(sum);
        start.elapsed().as_nanos() as f64 / keys.len() as f64
    };
    let mut best = [f64::INFINITY; 4];
    let mut scratch = Vec::new();
    let mut context = zstd_safe::DCtx::create();
    for _round in 0..3 {
        let times = [
            time(&mut |k| plain.get(k).unwrap().unwrap().value().len()),
            time(&mut |k| compressed.get(k).unwrap().unwrap().value().len()),
            time(&mut |k| blocks[0].get(k, &mut context, &mut scratch).len()),
            time(&mut |k| blocks[1].get(k, &mut context, &mut scratch).len()),
        ];
        for (b, t) in best.iter_mut().zip(times) {
            *b = b.min(t);
        }
    }
    let size = |path: &str| std::fs::metadata(path).expect("a store").len();
    println!(
        "{{\"plain\":{{\"bytes\":{},\"ns\":{:.0}}},\"per_value\":{{\"bytes\":{},\"ns\":{:.0}}},\"blocks_4k\":{{\"bytes\":{},\"ns\":{:.0}}},\"blocks_16k\":{{\"bytes\":{},\"ns\":{:.0}}}}}",
        size(&args[1]),
        best[0],
        size(&args[2]),
        best[1],
        blocks[0].bytes() + index_bytes,
        best[2],
        blocks[1].bytes() + index_bytes,
        best[3],
    );
}
