//! What the runtime adds to a local lookup, side by side in one run: the
//! core reader on a guarded map (what the Ruby binding read before the
//! runtime); the runtime's `Store` alone (one source type over local and
//! remote); through a `SerializedHandle` (what the Ruby binding reads now:
//! calls serialized by the GVL); through a `Handle` (thread-safe: take the
//! current store, look up, check faults); through `Handle::read`; and a
//! `Handle` with a refresh policy, which looks at the clock on every
//! lookup.
//!
//! Each lookup is one call to a function that is never inlined, as a
//! binding's is: inlined into the loop, the core reader's `get` would be
//! measured against the others' called `get`.
//!
//! `dataset_lookup`: the same keys as one store and as a dataset of 4 and
//! 16 shards, read through a `Table` (what a reader holds), warm; and the
//! 16-shard lookup taken apart (its stores read with the shards known
//! beforehand; the routing hash alone).
//! `ENTRIES` sets the key count (default 1,000,000).
//! `cargo bench -p hashfile-runtime --bench runtime`
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hashfile::read::fault::GuardedMap;
use hashfile::{BuildOptions, Builder, Reader};
use hashfile_runtime::dataset::DatasetBuilder;
use hashfile_runtime::{open, Handle, OpenOptions, Refresh, SerializedHandle, Store, Table};

#[inline(never)]
fn core_get(store: &Reader<GuardedMap>, key: &[u8]) -> usize {
    let found = store.get(key).unwrap().unwrap().value().len();
    store.check_faults().unwrap();
    found
}

#[inline(never)]
fn store_get(store: &Store, key: &[u8]) -> usize {
    let found = store.get(key).unwrap().unwrap().value().len();
    store.source().check_faults().unwrap();
    found
}

#[inline(never)]
fn serialized_get(handle: &SerializedHandle, key: &[u8]) -> usize {
    handle
        .with_store(|store| store.get(key).unwrap().unwrap().value().len())
        .unwrap()
}

#[inline(never)]
fn current_get(handle: &Handle, key: &[u8]) -> usize {
    let store = handle.current().unwrap();
    let found = store.get(key).unwrap().unwrap().value().len();
    handle.check_faults(&store).unwrap();
    found
}

#[inline(never)]
fn read_get(handle: &Handle, key: &[u8]) -> usize {
    handle
        .read(|store| Ok(store.get(key)?.unwrap().value().len()))
        .unwrap()
}

fn lookups(c: &mut Criterion) {
    let n = 100_000u64;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.hf");
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    for i in 0..n {
        builder.insert(
            format!("key-{i:08}").as_bytes(),
            format!("value-{i}").as_bytes(),
        );
    }
    builder.write_file(&path).unwrap();
    let location = path.to_str().unwrap();
    let probes: Vec<Vec<u8>> = (0..n)
        .step_by(97)
        .map(|i| format!("key-{i:08}").into_bytes())
        .collect();

    let core = Reader::open_guarded(&path).unwrap();
    let store = hashfile_runtime::open_store(
        location,
        &Default::default(),
        hashfile_runtime::LocalOpen::Mapped,
    )
    .unwrap();
    let serialized = SerializedHandle::new(open(location, OpenOptions::default()).unwrap());
    let handle = open(location, OpenOptions::default()).unwrap();
    let refreshing = open(
        location,
        OpenOptions {
            refresh: Refresh::Every(Duration::from_secs(3600)),
            ..OpenOptions::default()
        },
    )
    .unwrap();

    let mut group = c.benchmark_group("local_lookup");
    group.throughput(Throughput::Elements(probes.len() as u64));
    let mut run = |name: &str, get: &dyn Fn(&[u8]) -> usize| {
        group.bench_function(name, |b| {
            b.iter(|| probes.iter().map(|k| get(black_box(k))).sum::<usize>())
        });
    };
    run("core_guarded_reader", &|k| core_get(&core, k));
    run("runtime_store", &|k| store_get(&store, k));
    run("runtime_serialized_handle", &|k| {
        serialized_get(&serialized, k)
    });
    run("runtime_handle_current", &|k| current_get(&handle, k));
    run("runtime_handle_read", &|k| read_get(&handle, k));
    run("runtime_handle_with_refresh", &|k| {
        current_get(&refreshing, k)
    });
    group.finish();
}

#[inline(never)]
fn table_get(table: &Table, key: &[u8]) -> usize {
    table.get(key).unwrap().unwrap().value().len()
}

fn dataset_lookups(c: &mut Criterion) {
    let n: u64 = std::env::var("ENTRIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let key = |i: u64| format!("key-{i:010}").into_bytes();
    let one = dir.path().join("one.hf");
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    for i in 0..n {
        builder.insert(&key(i), format!("value-{i}").as_bytes());
    }
    builder.write_file(&one).unwrap();
    let mut tables = vec![(
        "one_store".to_owned(),
        Table::open(one.to_str().unwrap(), &Default::default()).unwrap(),
    )];
    for shards in [4u32, 16] {
        let at = dir.path().join(format!("shards-{shards}"));
        let mut builder = DatasetBuilder::new(shards, BuildOptions::default()).unwrap();
        for i in 0..n {
            builder.insert(&key(i), format!("value-{i}").as_bytes());
        }
        builder.write(&at).unwrap();
        tables.push((
            format!("dataset_{shards}_shards"),
            Table::open(at.to_str().unwrap(), &Default::default()).unwrap(),
        ));
    }
    // Random keys over the whole table: each lookup touches its own pages.
    let probes: Vec<Vec<u8>> = (0..4096u64)
        .map(|i| key(i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % n))
        .collect();
    let mut group = c.benchmark_group("dataset_lookup");
    group.throughput(Throughput::Elements(probes.len() as u64));
    // The 16-shard lookup taken apart: the shards' stores read with each
    // key's shard known beforehand, and the routing hash alone.
    let sixteen = tables[2].1.as_dataset().expect("a dataset");
    let routed: Vec<(usize, &Vec<u8>)> = probes.iter().map(|k| (sixteen.shard_of(k), k)).collect();
    let shards: Vec<&Store> = (0..16).map(|i| sixteen.shard(i).unwrap().base()).collect();
    group.bench_function("16_shards_prerouted", |b| {
        b.iter(|| {
            routed
                .iter()
                .map(|(s, k)| store_get(shards[*s], black_box(k)))
                .sum::<usize>()
        })
    });
    group.bench_function("routing_hash_only", |b| {
        b.iter(|| {
            probes
                .iter()
                .map(|k| sixteen.shard_of(black_box(k)))
                .sum::<usize>()
        })
    });
    for (name, table) in &tables {
        group.bench_function(name.as_str(), |b| {
            b.iter(|| {
                probes
                    .iter()
                    .map(|k| table_get(table, black_box(k)))
                    .sum::<usize>()
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = lookups, dataset_lookups
}
criterion_main!(benches);
