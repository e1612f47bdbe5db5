//! Hashfile's compact index (`hashfile::chd::compact::CompactHash`) against
//! PtrHash 2.1.3 with its default (fast) and compact parameters, built from
//! the same string keys, in one run: bits per key (printed), build time and
//! query time (criterion). Keys are `key-<i>-<hex>` strings; every function
//! gets the key's XXH3-64 (seed 0), so the query times compare the functions,
//! not the string hashes. Queries are the keys in a random order, one at a
//! time, each result summed (so none is skipped).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use hashfile::chd::compact::CompactHash;
use hashfile::chd::Params;
use ptr_hash::{hash::FastIntHash, CompactPtrHash, DefaultPtrHash, PtrHashParams};

fn sizes() -> Vec<usize> {
    std::env::var("HASHFILE_INDEX_SIZES")
        .unwrap_or_else(|_| "100000,1000000,10000000".into())
        .split(',')
        .map(|s| s.trim().parse().expect("a number of keys"))
        .collect()
}

fn keys(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            format!(
                "key-{i}-{:x}",
                (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40
            )
            .into_bytes()
        })
        .collect()
}

/// The compact index's parameters: 4 keys a bucket, load factor 0.99.
fn compact_params() -> Params {
    Params {
        keys_per_bucket: 4.0,
        load_factor: 0.99,
        dense_key_fraction: 0.5,
        dense_bucket_fraction: 0.2,
        hash_seed: 0,
        keys_per_part: 1 << 17,
    }
}

/// A random order of 0..n (xorshift, fixed seed).
fn shuffled(n: usize) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    order
}

fn once<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed())
}

fn bench(c: &mut Criterion) {
    for n in sizes() {
        let keys = keys(n);
        let refs: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let hashes: Vec<u64> = refs.iter().map(|k| xxhash_rust::xxh3::xxh3_64(k)).collect();
        let order = shuffled(n);

        let (compact, compact_build) = once(|| CompactHash::new(&refs, &compact_params()).unwrap());
        let (fast, fast_build) =
            once(|| <DefaultPtrHash<FastIntHash, u64>>::new(&hashes, PtrHashParams::default()));
        let (small, small_build) = once(|| {
            <CompactPtrHash<FastIntHash, u64>>::new(&hashes, PtrHashParams::default_compact())
        });
        let ptr_bits = |bits: (f64, f64)| bits.0 + bits.1;
        println!(
            "{n} keys: bits/key hashfile compact {:.3}, ptr_hash default {:.3}, ptr_hash compact {:.3}; \
             build (one run, Mkeys/s) {:.2}, {:.2}, {:.2}",
            compact.bits_per_key(),
            ptr_bits(fast.bits_per_element()),
            ptr_bits(small.bits_per_element()),
            n as f64 / compact_build.as_secs_f64() / 1e6,
            n as f64 / fast_build.as_secs_f64() / 1e6,
            n as f64 / small_build.as_secs_f64() / 1e6,
        );

        let mut group = c.benchmark_group(format!("index/{n}"));
        group.sample_size(10);
        group.bench_function(BenchmarkId::new("query", "hashfile compact"), |b| {
            b.iter(|| {
                order
                    .iter()
                    .map(|&i| compact.index(refs[i as usize]))
                    .fold(0u64, |a, x| a.wrapping_add(x))
            })
        });
        group.bench_function(BenchmarkId::new("query", "ptr_hash default"), |b| {
            b.iter(|| {
                order
                    .iter()
                    .map(|&i| fast.index(&xxhash_rust::xxh3::xxh3_64(refs[i as usize])) as u64)
                    .fold(0u64, |a, x| a.wrapping_add(x))
            })
        });
        group.bench_function(BenchmarkId::new("query", "ptr_hash compact"), |b| {
            b.iter(|| {
                order
                    .iter()
                    .map(|&i| small.index(&xxhash_rust::xxh3::xxh3_64(refs[i as usize])) as u64)
                    .fold(0u64, |a, x| a.wrapping_add(x))
            })
        });
        group.finish();
        black_box((&compact, &fast, &small));
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
