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
//! `cargo bench -p hashfile-runtime --bench runtime`
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hashfile::read::fault::GuardedMap;
use hashfile::{BuildOptions, Builder, Reader};
use hashfile_runtime::{open, Handle, OpenOptions, Refresh, SerializedHandle, Store};

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
    let store = hashfile_runtime::open_store(location, &Default::default()).unwrap();
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

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = lookups
}
criterion_main!(benches);
