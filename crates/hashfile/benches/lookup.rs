//! Core lookup and build speed, side by side with std's HashMap on the same
//! keys, a batch (`get_many`) against single lookups, and compressed
//! values against raw ones:
//! `cargo bench -p hashfile --bench lookup [-- batch|compressed]`.
use std::collections::HashMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use hashfile::{BuildOptions, Builder, MemoryLimit, Reader, MIN_MEMORY_LIMIT};

#[path = "../examples/support/mod.rs"]
mod support;

fn data(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut random = support::XorShift::default();
    let mut word = || random.word(8);
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let k = word();
        if seen.insert(k.clone()) {
            out.push((k, word()));
        }
    }
    out
}

/// Looks `probes` up one by one (each present), summing value lengths so
/// that nothing is optimized away.
fn one_by_one(store: &Reader<Vec<u8>>, probes: &[&[u8]]) -> usize {
    probes
        .iter()
        .map(|k| store.get(black_box(k)).unwrap().unwrap().value().len())
        .sum()
}

fn lookup(c: &mut Criterion) {
    let mut group = c.benchmark_group("lookup");
    for n in [100_000usize, 1_000_000] {
        let entries = data(n);
        let mut builder = Builder::new(BuildOptions::default()).unwrap();
        for (k, v) in &entries {
            builder.insert(k, v);
        }
        let store = Reader::new(builder.to_bytes().unwrap()).unwrap();
        let map: HashMap<Vec<u8>, Vec<u8>> = entries.iter().cloned().collect();
        let probes: Vec<&[u8]> = entries
            .iter()
            .step_by(n / 4096)
            .map(|(k, _)| k.as_slice())
            .collect();
        group.throughput(Throughput::Elements(probes.len() as u64));
        group.bench_with_input(BenchmarkId::new("hashfile", n), &probes, |b, probes| {
            b.iter(|| one_by_one(&store, probes))
        });
        group.bench_with_input(BenchmarkId::new("std_hashmap", n), &probes, |b, probes| {
            b.iter(|| {
                probes
                    .iter()
                    .map(|k| map.get(black_box(*k)).unwrap().len())
                    .sum::<usize>()
            })
        });
    }
    group.finish();
}

/// `keys` in an order of the fixed-seed generator's (Fisher-Yates), so
/// that successive probes land far apart in the store.
fn shuffled<'a>(keys: impl Iterator<Item = &'a [u8]>) -> Vec<&'a [u8]> {
    let mut keys: Vec<&[u8]> = keys.collect();
    let mut random = support::XorShift::default();
    for i in (1..keys.len()).rev() {
        keys.swap(i, (random.next_u64() % (i as u64 + 1)) as usize);
    }
    keys
}

/// `get_many` against the same keys looked up one by one, over a store in
/// memory, with probes spread over the whole store and too many for the
/// cache to keep between rounds (a quarter of the keys, shuffled), so each
/// lookup pays its misses. `HASHFILE_BATCH_SIZES` (default
/// `1000000,10000000`) picks the store sizes.
fn batch(c: &mut Criterion) {
    let sizes: Vec<usize> = std::env::var("HASHFILE_BATCH_SIZES")
        .unwrap_or_else(|_| "1000000,10000000".into())
        .split(',')
        .map(|n| n.trim().parse().expect("HASHFILE_BATCH_SIZES: numbers"))
        .collect();
    let mut group = c.benchmark_group("batch");
    group.sample_size(10);
    for n in sizes {
        let entries = data(n);
        let mut builder = Builder::new(BuildOptions::default()).unwrap();
        for (k, v) in &entries {
            builder.insert(k, v);
        }
        let store = Reader::new(builder.to_bytes().unwrap()).unwrap();
        let probes = shuffled(entries.iter().step_by(4).map(|(k, _)| k.as_slice()));
        group.throughput(Throughput::Elements(probes.len() as u64));
        group.bench_with_input(BenchmarkId::new("get", n), &probes, |b, probes| {
            b.iter(|| one_by_one(&store, probes))
        });
        group.bench_with_input(
            BenchmarkId::new("get_many_1000", n),
            &probes,
            |b, probes| {
                b.iter(|| {
                    probes
                        .chunks(1000)
                        .map(|keys| {
                            store
                                .get_many(black_box(keys))
                                .unwrap()
                                .iter()
                                .map(|r| r.as_ref().unwrap().value().len())
                                .sum::<usize>()
                        })
                        .sum::<usize>()
                })
            },
        );
    }
    group.finish();
}

/// Builds in memory with either index layout, and builds spilled over the
/// least memory limit (`MIN_MEMORY_LIMIT`) to a file: the perfect hash's
/// search in its three callers (`chd::search`).
fn build(c: &mut Criterion) {
    let mut group = c.benchmark_group("build");
    group.sample_size(10);
    let layouts = [
        ("hashfile", BuildOptions::default()),
        ("compact", BuildOptions::compact()),
    ];
    for n in [100_000usize, 1_000_000] {
        let entries = data(n);
        group.throughput(Throughput::Elements(n as u64));
        for (name, options) in &layouts {
            group.bench_with_input(BenchmarkId::new(*name, n), &entries, |b, entries| {
                b.iter(|| {
                    let mut builder = Builder::new(options.clone()).unwrap();
                    for (k, v) in entries {
                        builder.insert(k, v);
                    }
                    builder.to_bytes().unwrap().len()
                })
            });
        }
    }
    let n = 1_000_000usize;
    let entries = data(n);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("spilled.hf");
    for (name, options) in &layouts {
        let options = BuildOptions {
            memory: MemoryLimit::bytes(MIN_MEMORY_LIMIT).unwrap(),
            ..options.clone()
        };
        let id = BenchmarkId::new(format!("{name}_spilled"), n);
        group.bench_with_input(id, &entries, |b, entries| {
            b.iter(|| {
                let mut builder = Builder::new(options.clone()).unwrap();
                for (k, v) in entries {
                    builder.insert(k, v);
                }
                builder.write_file(&path).unwrap()
            })
        });
    }
    group.finish();
}

/// Catalogue records of about 200 bytes: JSON text with the same field
/// names, and words drawn with a skew from a vocabulary of 4,000, as product
/// descriptions use a few words often and many rarely.
fn records(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut random = support::XorShift::default();
    let vocabulary: Vec<String> = (0..4_000)
        .map(|i| String::from_utf8(random.word(3 + i % 7)).unwrap())
        .collect();
    let pick = |random: &mut support::XorShift| {
        let r = random.next_u64() % 4_000;
        vocabulary[(r * r / 4_000) as usize].clone()
    };
    (0..n)
        .map(|i| {
            let name: Vec<String> = (0..3).map(|_| pick(&mut random)).collect();
            let text: Vec<String> = (0..18).map(|_| pick(&mut random)).collect();
            let value = format!(
                r#"{{"sku":"SKU-{i:08}","name":"{}","price":{}.{:02},"stock":{},"description":"{}."}}"#,
                name.join(" "),
                random.next_u64() % 500,
                random.next_u64() % 100,
                random.next_u64() % 1000,
                text.join(" ")
            );
            (format!("SKU-{i:08}").into_bytes(), value.into_bytes())
        })
        .collect()
}

/// Lookups of about 200-byte values stored raw and compressed (zstd level
/// 3 with a trained dictionary), probes spread over the store: what a
/// decode adds to a lookup.
fn compressed(c: &mut Criterion) {
    let mut group = c.benchmark_group("compressed");
    for n in [100_000usize, 1_000_000] {
        let entries = records(n);
        let probes = shuffled(entries.iter().step_by(n / 4096).map(|(k, _)| k.as_slice()));
        group.throughput(Throughput::Elements(probes.len() as u64));
        for (name, compression) in [
            ("raw", hashfile::Compression::None),
            ("zstd", hashfile::Compression::zstd(3)),
        ] {
            let mut builder = Builder::new(BuildOptions {
                compression,
                ..BuildOptions::default()
            })
            .unwrap();
            for (k, v) in &entries {
                builder.insert(k, v);
            }
            let bytes = builder.to_bytes().unwrap();
            eprintln!("compressed/{name}/{n}: {} bytes", bytes.len());
            let store = Reader::new(bytes).unwrap();
            group.bench_with_input(BenchmarkId::new(name, n), &probes, |b, probes| {
                b.iter(|| one_by_one(&store, probes))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, lookup, batch, build, compressed);
criterion_main!(benches);
