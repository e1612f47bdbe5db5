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
use hashfile::{BuildOptions, Builder, Reader};
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
        stores(c, n, &refs, &order, &small);
    }
}

/// Whole stores, as `Reader::get` reads them (the stored key compared,
/// the value returned), with each index layout, against a contiguous table
/// indexed by ptr_hash's compact function: records (key length, key,
/// value length, value) back to back, and a u32 offset per index.
fn stores(
    c: &mut Criterion,
    n: usize,
    keys: &[&[u8]],
    order: &[u32],
    ptr: &CompactPtrHash<FastIntHash, u64>,
) {
    let value = |i: usize| format!("value-{i}").into_bytes();
    let build = |options: BuildOptions| {
        let mut builder = Builder::new(options).unwrap();
        for (i, key) in keys.iter().enumerate() {
            builder.insert(key, &value(i));
        }
        builder.to_bytes().unwrap()
    };
    let (classic, classic_build) = once(|| build(BuildOptions::default()));
    let (compact, compact_build) = once(|| build(BuildOptions::compact()));
    let classic = Reader::new(classic).unwrap();
    let compact = Reader::new(compact).unwrap();
    let (table, table_build) = once(|| {
        let mut offsets = vec![0u32; n];
        let mut records = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            let slot = ptr.index(&xxhash_rust::xxh3::xxh3_64(key));
            offsets[slot] = records.len() as u32;
            let v = value(i);
            records.push(key.len() as u8);
            records.extend_from_slice(key);
            records.push(v.len() as u8);
            records.extend_from_slice(&v);
        }
        (offsets, records)
    });
    println!(
        "{n} keys, whole stores: mphf bits/key classic {:.3}, compact {:.3}; build (one run, Mkeys/s) classic {:.2}, compact {:.2}, ptr_hash table (records only, index built above) {:.2}",
        classic.info().mphf_bits_per_key,
        compact.info().mphf_bits_per_key,
        n as f64 / classic_build.as_secs_f64() / 1e6,
        n as f64 / compact_build.as_secs_f64() / 1e6,
        n as f64 / table_build.as_secs_f64() / 1e6,
    );
    let (offsets, records) = &table;
    let table_get = |key: &[u8]| -> Option<&[u8]> {
        let at = offsets[ptr.index(&xxhash_rust::xxh3::xxh3_64(key))] as usize;
        let klen = records[at] as usize;
        let stored = &records[at + 1..at + 1 + klen];
        let vlen = records[at + 1 + klen] as usize;
        (stored == key).then(|| &records[at + 2 + klen..at + 2 + klen + vlen])
    };
    // The same table with hashfile's record layout (flags, varint lengths),
    // its offsets as u32s or bit-packed as the slots section packs them:
    // between the bare table and `Reader::get`, these rows show what the
    // layout costs and what the reader's own work (parts, bounds checks,
    // the `RecordBuf`) costs.
    let (hf_offsets, hf_records) = {
        let mut offsets = vec![0u64; n];
        let mut records = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            offsets[ptr.index(&xxhash_rust::xxh3::xxh3_64(key))] = records.len() as u64;
            hashfile::Record::binary(key, &value(i)).write(&mut records);
        }
        (offsets, records)
    };
    let width = hashfile::bits::bits_for(hf_records.len() as u64);
    let mut packed = hashfile::bits::pack(&hf_offsets, width);
    packed.extend_from_slice(&[0; 8]);
    let hf_table_get = |key: &[u8], packed_offsets: bool| -> Option<&[u8]> {
        let slot = ptr.index(&xxhash_rust::xxh3::xxh3_64(key));
        let at = if packed_offsets {
            hashfile::bits::unpack_one(&packed, width, slot as u64)?
        } else {
            hf_offsets[slot]
        } as usize;
        let rest = hf_records.get(at..)?;
        let layout = hashfile::format::record::parse(rest).ok()??;
        let (stored, value) = layout.split(rest)?;
        (stored == key).then_some(value)
    };
    let mut group = c.benchmark_group(format!("store/{n}"));
    group.sample_size(10);
    for (name, store) in [("classic", &classic), ("compact", &compact)] {
        group.bench_function(BenchmarkId::new("get", name), |b| {
            b.iter(|| {
                order
                    .iter()
                    .map(|&i| store.get(keys[i as usize]).unwrap().unwrap().value().len())
                    .sum::<usize>()
            })
        });
    }
    group.bench_function(BenchmarkId::new("get", "ptr_hash compact table"), |b| {
        b.iter(|| {
            order
                .iter()
                .map(|&i| table_get(keys[i as usize]).unwrap().len())
                .sum::<usize>()
        })
    });
    for (name, packed_offsets) in [
        ("ptr_hash table, hashfile records", false),
        ("ptr_hash table, hashfile records, packed offsets", true),
    ] {
        group.bench_function(BenchmarkId::new("get", name), |b| {
            b.iter(|| {
                order
                    .iter()
                    .map(|&i| {
                        hf_table_get(keys[i as usize], packed_offsets)
                            .unwrap()
                            .len()
                    })
                    .sum::<usize>()
            })
        });
    }
    for (name, store) in [("classic", &classic), ("compact", &compact)] {
        let probes: Vec<&[u8]> = order.iter().map(|&i| keys[i as usize]).collect();
        group.bench_function(BenchmarkId::new("get_many of 1,000", name), |b| {
            b.iter(|| {
                probes
                    .chunks(1_000)
                    .map(|chunk| store.get_many(chunk).unwrap().len())
                    .sum::<usize>()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
