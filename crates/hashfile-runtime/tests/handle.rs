//! An open location over time: refresh policies, the swap between
//! lookups, close, and reopening a replaced remote object (nginx on
//! loopback).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hashfile::{BuildOptions, Builder};
use hashfile_remote::RemoteOptions;
use hashfile_runtime::{open, OpenOptions, Refresh};

#[path = "../../hashfile-remote/tests/support/mod.rs"]
mod support;

/// Publishes a store of `n` keys `key-I` => `{tag}-I` at `path`, by rename.
fn publish(path: &Path, n: u64, tag: &str) {
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    for i in 0..n {
        builder.insert(
            format!("key-{i}").as_bytes(),
            format!("{tag}-{i}").as_bytes(),
        );
    }
    builder.write_file(path).unwrap();
}

fn value_of(handle: &hashfile_runtime::Handle, key: &str) -> Option<String> {
    handle
        .read(|store| {
            Ok(store
                .get(key.as_bytes())?
                .map(|r| String::from_utf8(r.value().to_vec()).unwrap()))
        })
        .unwrap()
}

fn every(interval: Duration) -> OpenOptions {
    OpenOptions {
        refresh: Refresh::Every(interval),
        ..OpenOptions::default()
    }
}

#[test]
fn never_keeps_the_store_opened_until_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    publish(&path, 100, "old");
    let handle = open(path.to_str().unwrap(), OpenOptions::default()).unwrap();
    publish(&path, 100, "new");
    assert!(handle.is_stale());
    assert_eq!(value_of(&handle, "key-3").as_deref(), Some("old-3"));
    assert_eq!(handle.generation(), 0);
    handle.reopen().unwrap();
    assert!(!handle.is_stale());
    assert_eq!(value_of(&handle, "key-3").as_deref(), Some("new-3"));
    assert_eq!(handle.generation(), 1);
}

#[test]
fn every_swaps_in_a_newer_store_once_the_interval_has_passed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    publish(&path, 100, "old");
    let handle = open(path.to_str().unwrap(), every(Duration::from_millis(200))).unwrap();
    publish(&path, 100, "new");
    // Not yet due: the old store is read.
    assert_eq!(value_of(&handle, "key-5").as_deref(), Some("old-5"));
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(value_of(&handle, "key-5").as_deref(), Some("new-5"));
    assert_eq!(handle.generation(), 1);
    assert_eq!(handle.refresh_error(), None);
}

#[test]
fn a_lookup_under_way_finishes_on_the_store_it_took() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    publish(&path, 100, "old");
    let handle = open(path.to_str().unwrap(), OpenOptions::default()).unwrap();
    let taken = handle.current().unwrap();
    publish(&path, 100, "new");
    handle.reopen().unwrap();
    handle.close();
    // The store taken before the swap and the close is still whole.
    assert_eq!(taken.get(b"key-9").unwrap().unwrap().value(), b"old-9");
    let closed = handle.current().err().expect("closed");
    assert!(matches!(closed, hashfile::Error::Closed { .. }));
    assert_eq!(
        closed.to_string(),
        format!("closed store {}", path.display())
    );
    assert!(handle.reopen().is_err(), "a closed handle stays closed");
}

#[test]
fn a_newer_file_that_cannot_be_opened_leaves_the_old_store_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    publish(&path, 100, "old");
    let handle = open(path.to_str().unwrap(), every(Duration::ZERO)).unwrap();
    let damaged = dir.path().join("damaged");
    std::fs::write(&damaged, b"not a store at all").unwrap();
    std::fs::rename(&damaged, &path).unwrap();
    assert_eq!(value_of(&handle, "key-1").as_deref(), Some("old-1"));
    let error = handle.refresh_error().expect("the error is kept");
    assert!(error.contains("s.hf"), "{error}");
    assert_eq!(handle.generation(), 0);
    // The next check, after a good store is published, clears it.
    publish(&path, 100, "new");
    assert_eq!(value_of(&handle, "key-1").as_deref(), Some("new-1"));
    assert_eq!(handle.refresh_error(), None);
}

#[test]
fn lookups_from_many_threads_across_swaps_each_read_one_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    publish(&path, 1000, "v0");
    let handle = Arc::new(open(path.to_str().unwrap(), every(Duration::ZERO)).unwrap());
    let readers: Vec<_> = (0..4)
        .map(|t| {
            let handle = Arc::clone(&handle);
            std::thread::spawn(move || {
                for i in 0..20_000u64 {
                    let key = format!("key-{}", (i * 7 + t) % 1000);
                    // Two reads of one store agree with each other.
                    let (a, b) = handle
                        .read(|store| {
                            let a = store.get(key.as_bytes())?.unwrap().value().to_vec();
                            let b = store.get(b"key-0")?.unwrap().value().to_vec();
                            Ok((a, b))
                        })
                        .unwrap();
                    let tag = |v: &[u8]| {
                        String::from_utf8(v.to_vec())
                            .unwrap()
                            .split('-')
                            .next()
                            .unwrap()
                            .to_owned()
                    };
                    assert_eq!(tag(&a), tag(&b));
                }
            })
        })
        .collect();
    for generation in 1..=5 {
        publish(&path, 1000, &format!("v{generation}"));
        std::thread::sleep(Duration::from_millis(5));
    }
    for reader in readers {
        reader.join().unwrap();
    }
    assert_eq!(value_of(&handle, "key-1").as_deref(), Some("v5-1"));
}

#[test]
fn a_pinned_handle_is_not_swapped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    publish(&path, 10, "old");
    let handle = open(path.to_str().unwrap(), every(Duration::ZERO)).unwrap();
    let pinned = handle.pinned().unwrap();
    publish(&path, 10, "new");
    assert_eq!(value_of(&handle, "key-2").as_deref(), Some("new-2"));
    assert_eq!(value_of(&pinned, "key-2").as_deref(), Some("old-2"));
}

#[test]
fn a_policy_for_the_other_kind_of_location_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    publish(&path, 10, "old");
    let local = OpenOptions {
        refresh: Refresh::ReopenOnChange,
        ..OpenOptions::default()
    };
    let error = open(path.to_str().unwrap(), local).unwrap_err();
    assert!(matches!(
        error,
        hashfile::Error::InvalidOption {
            name: "refresh",
            ..
        }
    ));
    assert!(error.to_string().contains("is a file"), "{error}");
    let error = open("http://127.0.0.1:9/s.hf", every(Duration::from_secs(1))).unwrap_err();
    assert!(error.to_string().contains("for local stores"), "{error}");
}

/// Reopen on change: a read that finds the object replaced reads the new
/// one; without it, the read fails and the old store stays.
#[test]
fn reopen_on_change_reads_a_replaced_object_again() {
    let nginx = support::Nginx::start();
    nginx.publish("s.hf", &support::store(5_000, 40));
    let url = nginx.url("/files/s.hf");
    let quick = RemoteOptions {
        timeout: Duration::from_secs(5),
        ..RemoteOptions::default()
    };
    let reopening = open(
        &url,
        OpenOptions {
            remote: quick.clone(),
            refresh: Refresh::ReopenOnChange,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    let raising = open(
        &url,
        OpenOptions {
            remote: quick,
            refresh: Refresh::Never,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    assert_eq!(
        value_of(&reopening, "key-4").unwrap().as_bytes(),
        support::value(4, 40)
    );
    // nginx's ETag is mtime and length; a second's sleep makes the mtime
    // differ even where the length would not.
    std::thread::sleep(Duration::from_millis(1100));
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    for i in 0..5_000u64 {
        builder.insert(format!("key-{i}").as_bytes(), format!("new-{i}").as_bytes());
    }
    nginx.publish("s.hf", &builder.to_bytes().unwrap());
    // A key whose blocks neither reader has cached reaches the server.
    assert_eq!(
        value_of(&reopening, "key-4321").as_deref(),
        Some("new-4321")
    );
    assert_eq!(reopening.generation(), 1);
    let error = raising
        .read(|store| Ok(store.get(b"key-4321")?.is_some()))
        .unwrap_err();
    assert!(hashfile_runtime::is_replaced(&error), "{error}");
}

/// The GVL binding's handle: a swap and a close made while a lookup is
/// under way (by code the lookup runs) take effect for the next lookup;
/// the lookup under way finishes on its store.
#[test]
fn a_serialized_handle_swaps_and_closes_only_between_lookups() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    publish(&path, 100, "old");
    let serialized = hashfile_runtime::SerializedHandle::new(
        open(path.to_str().unwrap(), OpenOptions::default()).unwrap(),
    );
    let value = |store: &hashfile_runtime::Table, key: &str| {
        String::from_utf8(store.get(key.as_bytes()).unwrap().unwrap().value().to_vec()).unwrap()
    };
    publish(&path, 100, "new");
    let seen = serialized
        .with_store(|store| {
            let before = value(store, "key-1");
            // A reopen, and a nested lookup, while this one is under way.
            serialized.handle().reopen().unwrap();
            let nested = serialized
                .with_store(|inner| value(inner, "key-2"))
                .unwrap();
            (before, nested, value(store, "key-3"))
        })
        .unwrap();
    assert_eq!(seen, ("old-1".into(), "old-2".into(), "old-3".into()));
    assert_eq!(
        serialized.with_store(|s| value(s, "key-1")).unwrap(),
        "new-1"
    );
    // A close inside a lookup: the lookup finishes, the next one is refused.
    let finished = serialized
        .with_store(|store| {
            serialized.handle().close();
            assert!(
                serialized.with_store(|_| ()).is_err(),
                "closed for a nested lookup"
            );
            value(store, "key-4")
        })
        .unwrap();
    assert_eq!(finished, "new-4");
    let error = serialized.with_store(|_| ()).unwrap_err();
    assert!(matches!(error, hashfile::Error::Closed { .. }), "{error}");
}

/// A close outside any lookup lets the store go at once: its map is
/// released, not kept until the handle itself is dropped.
#[test]
fn a_serialized_close_releases_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    publish(&path, 10, "old");
    let serialized = hashfile_runtime::SerializedHandle::new(
        open(path.to_str().unwrap(), OpenOptions::default()).unwrap(),
    );
    let store = serialized.shared().unwrap();
    assert_eq!(
        Arc::strong_count(&store),
        3,
        "the handle's, the serialized handle's and this one"
    );
    serialized.close();
    assert_eq!(Arc::strong_count(&store), 1, "only this one is left");
}

#[test]
fn a_serialized_handle_follows_its_refresh_policy() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    publish(&path, 100, "old");
    let serialized = hashfile_runtime::SerializedHandle::new(
        open(path.to_str().unwrap(), every(Duration::ZERO)).unwrap(),
    );
    let read = || {
        serialized
            .with_store(|store| store.get(b"key-8").unwrap().unwrap().value().to_vec())
            .unwrap()
    };
    assert_eq!(read(), b"old-8");
    publish(&path, 100, "new");
    assert_eq!(read(), b"new-8");
    assert_eq!(serialized.handle().generation(), 1);
    let shared = serialized.shared().unwrap();
    publish(&path, 100, "newer");
    assert_eq!(read(), b"newer-8");
    // A store taken for work outside a lookup stays whole.
    assert_eq!(shared.get(b"key-8").unwrap().unwrap().value(), b"new-8");
}

/// Whether the store `handle` reads now is mapped (else read with
/// positioned reads).
fn is_mapped(handle: &hashfile_runtime::Handle) -> bool {
    let current = handle.current().unwrap();
    let store = current.as_store().expect("a store");
    matches!(store.source(), hashfile_runtime::StoreSource::Local(_))
}

/// A local store opens for positioned reads, answers its first lookups so,
/// and is mapped at the lookup that reaches MAP_AFTER_LOOKUPS, without a
/// new generation (the same file, so what a memo holds stays right).
#[test]
fn a_local_store_is_mapped_after_its_first_lookups() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    publish(&path, 5_000, "v");
    let handle = open(path.to_str().unwrap(), OpenOptions::default()).unwrap();
    let first = hashfile_runtime::MAP_AFTER_LOOKUPS;
    for i in 0..first - 1 {
        assert_eq!(handle.unmapped_lookups(), first - i);
        let key = if i % 2 == 0 {
            format!("key-{i}")
        } else {
            "absent".into()
        };
        let expected = (i % 2 == 0).then(|| format!("v-{i}"));
        assert_eq!(value_of(&handle, &key), expected);
    }
    assert_eq!(handle.unmapped_lookups(), 1);
    {
        // `value_of` takes the store through the same `current`.
        let current = handle.read(|store| Ok(store.len())).unwrap();
        assert_eq!(current, 5_000);
    }
    assert!(is_mapped(&handle), "not mapped after {first} lookups");
    assert_eq!(handle.generation(), 0);
    assert_eq!(handle.unmapped_lookups(), 0);
    for i in (0..5_000).step_by(97) {
        assert_eq!(
            value_of(&handle, &format!("key-{i}")),
            Some(format!("v-{i}"))
        );
    }
}

/// Work that reads much of a store (a pinned iteration, `current_mapped`)
/// maps it at once.
#[test]
fn bulk_work_maps_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    publish(&path, 1_000, "v");
    let handle = open(path.to_str().unwrap(), OpenOptions::default()).unwrap();
    let pinned = handle.pinned().unwrap();
    assert!(is_mapped(&pinned) && is_mapped(&handle));
    let handle = open(path.to_str().unwrap(), OpenOptions::default()).unwrap();
    let current = handle.current_mapped().unwrap();
    assert!(matches!(
        current.as_store().unwrap().source(),
        hashfile_runtime::StoreSource::Local(_)
    ));
    current.verify().unwrap();
}

/// A store truncated under positioned reads is `Error::Changed` from the
/// read that finds it short on, as under a guarded map, and is not mapped
/// afterwards.
#[test]
fn a_store_truncated_before_it_is_mapped_is_changed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    publish(&path, 20_000, "v");
    let handle = open(path.to_str().unwrap(), OpenOptions::default()).unwrap();
    assert_eq!(
        handle.unmapped_lookups(),
        hashfile_runtime::MAP_AFTER_LOOKUPS
    );
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(4096)
        .unwrap();
    let changed = |result: hashfile::Result<Option<String>>| {
        assert!(
            matches!(result, Err(hashfile::Error::Changed { .. })),
            "expected Changed, got {result:?}"
        )
    };
    let read = |key: &str| {
        handle.read(|store| {
            Ok(store
                .get(key.as_bytes())?
                .map(|r| String::from_utf8(r.value().to_vec()).unwrap()))
        })
    };
    changed(read("key-19999"));
    for i in 0..hashfile_runtime::MAP_AFTER_LOOKUPS * 2 {
        changed(read(&format!("key-{i}")));
    }
    assert_eq!(handle.unmapped_lookups(), 0);
    assert!(!is_mapped(&handle), "a store found short stays unmapped");
}

/// The largest value a handle reads stays what it was opened with when a
/// refresh or a reopen swaps in another store.
#[test]
fn the_value_size_limit_outlives_a_refresh_and_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    let write = |value: &str| {
        let mut builder = Builder::new(BuildOptions::default()).unwrap();
        builder.insert(b"k", value.as_bytes());
        builder.write_file(&path).unwrap();
    };
    write(&"a".repeat(20));
    let handle = open(
        path.to_str().unwrap(),
        OpenOptions {
            refresh: Refresh::Every(Duration::ZERO),
            max_value_size: Some(10),
            ..OpenOptions::default()
        },
    )
    .unwrap();
    let too_large = |handle: &hashfile_runtime::Handle| {
        let error = handle.read(|t| t.get(b"k").map(|_| ())).unwrap_err();
        assert!(
            matches!(error, hashfile::Error::ValueTooLarge { .. }),
            "{error:?}"
        );
    };
    too_large(&handle);
    write(&"b".repeat(30));
    handle.generation();
    assert_eq!(handle.generation_now(), 1, "refreshed");
    too_large(&handle);
    handle.reopen().unwrap();
    too_large(&handle);
}

#[test]
fn reopens_racing_a_publisher_never_go_back_to_an_older_store() {
    // Two threads reopen while a third publishes ever newer stores: what
    // a reader reads only moves forward, as if the reopens ran one after
    // another (each swaps in what it opened in the order they opened).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    publish(&path, 10, "0");
    let handle = Arc::new(open(path.to_str().unwrap(), OpenOptions::default()).unwrap());
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reopeners: Vec<_> = (0..2)
        .map(|_| {
            let (handle, done) = (Arc::clone(&handle), Arc::clone(&done));
            std::thread::spawn(move || {
                while !done.load(std::sync::atomic::Ordering::Acquire) {
                    handle.reopen().unwrap();
                }
            })
        })
        .collect();
    let reader = {
        let (handle, done) = (Arc::clone(&handle), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut seen: Vec<(u64, u64)> = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                let generation = handle.generation_now();
                let value = value_of(&handle, "key-1").unwrap();
                let version: u64 = value.split('-').next().unwrap().parse().unwrap();
                seen.push((generation, version));
            }
            seen
        })
    };
    for version in 1..=300 {
        publish(&path, 10, &version.to_string());
    }
    done.store(true, std::sync::atomic::Ordering::Release);
    for reopener in reopeners {
        reopener.join().unwrap();
    }
    let seen = reader.join().unwrap();
    for pair in seen.windows(2) {
        assert!(
            pair[1].1 >= pair[0].1,
            "read version {} after version {} (generations {} and {})",
            pair[1].1,
            pair[0].1,
            pair[1].0,
            pair[0].0
        );
    }
    handle.reopen().unwrap();
    assert_eq!(value_of(&handle, "key-1").as_deref(), Some("300-1"));
}
