//! Builds over their memory limit (`BuildOptions::memory`): the index is
//! built group by group from temporary files, into the bytes an unlimited
//! build writes; the temporary files go on success, failure and cancel; a
//! full disk is an error that leaves the destination as it was.

mod support;

use std::path::Path;

use hashfile::{
    BuildOptions, Builder, CancelFlag, Error, IndexKind, MemoryLimit, OnDuplicate, Reader, Record,
    MIN_MEMORY_LIMIT,
};

/// Enough keys that the least memory limit spills them: 16 MiB holds the
/// index data of about 520,000.
const SPILLED: usize = 700_000;

fn limited() -> MemoryLimit {
    MemoryLimit::bytes(MIN_MEMORY_LIMIT).unwrap()
}

fn unlimited() -> MemoryLimit {
    MemoryLimit::bytes(1 << 40).unwrap()
}

fn key(i: usize) -> String {
    format!("user:{i:08}")
}

/// Adds `n` entries (strings, every third a typed value when `typed`).
fn fill(builder: &mut Builder, n: usize, typed: bool) {
    for i in 0..n {
        let k = key(i);
        if typed && i % 3 == 0 {
            let value = hashfile::value::Value::Int(i as i64 * 7);
            builder.insert_value(k.as_bytes(), true, &value).unwrap();
        } else {
            // Long enough to compress (32 bytes), alike enough to shrink.
            builder.insert_record(Record::text(
                &k,
                &format!("value {i} of a build that spills"),
            ));
        }
    }
}

/// Builds `n` entries with `options` and `memory` into `dir/name`, with a
/// streaming builder or an in-memory one; the bytes and the spill stats.
fn build(
    dir: &Path,
    name: &str,
    options: &BuildOptions,
    memory: MemoryLimit,
    n: usize,
    streaming: bool,
    typed: bool,
) -> (Vec<u8>, Option<hashfile::SpillStats>) {
    let path = dir.join(name);
    let options = BuildOptions {
        memory,
        ..options.clone()
    };
    let mut builder = if streaming {
        Builder::streaming(options, &path).unwrap()
    } else {
        Builder::new(options).unwrap()
    };
    fill(&mut builder, n, typed);
    builder.write_file(&path).unwrap();
    (std::fs::read(&path).unwrap(), builder.spill_stats())
}

/// The files in `dir` besides `keep`.
fn others(dir: &Path, keep: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !keep.contains(&name.as_str()))
        .collect();
    names.sort();
    names
}

#[test]
fn a_spilled_build_writes_the_bytes_of_an_unlimited_one() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("defaults", BuildOptions::default(), true, false),
        (
            "small parts, typed, 32-pilot blocks, load 0.9",
            BuildOptions {
                keys_per_part: 5_000,
                seed_block_len: 32,
                load_factor: 0.9,
                hash_seed: 42,
                ..BuildOptions::default()
            },
            true,
            true,
        ),
        ("in memory", BuildOptions::default(), false, false),
        (
            "compressed",
            BuildOptions {
                compression: hashfile::Compression::parse("zstd").unwrap(),
                ..BuildOptions::default()
            },
            true,
            true,
        ),
        (
            "compressed, in memory",
            BuildOptions {
                compression: hashfile::Compression::parse("zstd:9").unwrap(),
                keys_per_part: 20_000,
                ..BuildOptions::default()
            },
            false,
            false,
        ),
        (
            "compact index",
            BuildOptions::for_index(IndexKind::Compact),
            true,
            false,
        ),
        (
            "compact index, small parts, typed, compressed, seed 7, in memory",
            BuildOptions {
                keys_per_part: 20_000,
                hash_seed: 7,
                compression: hashfile::Compression::parse("zstd").unwrap(),
                ..BuildOptions::for_index(IndexKind::Compact)
            },
            false,
            true,
        ),
    ];
    for (what, options, streaming, typed) in cases {
        let (spilled, stats) = build(
            dir.path(),
            "spilled.hf",
            &options,
            limited(),
            SPILLED,
            streaming,
            typed,
        );
        let stats = stats.unwrap_or_else(|| panic!("{what}: 16 MiB should spill {SPILLED} keys"));
        assert!(stats.groups > 1, "{what}: {stats:?}");
        assert!(
            stats.temporary_bytes >= SPILLED as u64 * 16,
            "{what}: {stats:?}"
        );
        let (whole, none) = build(
            dir.path(),
            "whole.hf",
            &options,
            unlimited(),
            SPILLED,
            streaming,
            typed,
        );
        assert_eq!(none, None, "{what}: a terabyte holds the index");
        assert!(
            spilled == whole,
            "{what}: the spilled store differs from the unlimited one"
        );
        let store = Reader::open(dir.path().join("spilled.hf")).unwrap();
        store.verify().unwrap();
        assert_eq!(
            store.header().is_compact(),
            options.index == IndexKind::Compact,
            "{what}"
        );
        if options.compression != hashfile::Compression::None {
            let stats = store.compression_stats().unwrap().expect("compressed");
            assert!(stats.stats.values > SPILLED as u64 / 2, "{what}: {stats:?}");
        }
        for i in (0..SPILLED).step_by(997) {
            assert!(
                store.get(key(i).as_bytes()).unwrap().is_some(),
                "{what}: {i}"
            );
        }
        assert!(store.get(b"user:absent").unwrap().is_none());
        assert_eq!(
            others(dir.path(), &["spilled.hf", "whole.hf"]),
            Vec::<String>::new(),
            "{what}"
        );
    }
}

#[test]
fn a_spilled_build_reports_a_repeated_key_as_an_unlimited_one_does() {
    let dir = tempfile::tempdir().unwrap();
    for index in [IndexKind::Classic, IndexKind::Compact] {
        let error = |memory: MemoryLimit| {
            let path = dir.path().join("out.hf");
            let options = BuildOptions {
                memory,
                ..BuildOptions::for_index(index)
            };
            let mut builder = Builder::streaming(options, &path).unwrap();
            fill(&mut builder, SPILLED, false);
            // Three keys repeated, the one at 400,000 first in input order.
            for i in [400_000, 5, 400_000, 650_000] {
                builder.insert_record(Record::text(&key(i), "again"));
            }
            let error = builder.write_file(&path).unwrap_err();
            assert!(!path.exists());
            (error.to_string(), builder.spill_stats())
        };
        let (spilled, _) = error(limited());
        let (whole, _) = error(unlimited());
        assert_eq!(spilled, whole, "{index:?}");
        assert!(spilled.contains("user:00400000"), "{spilled}");
        assert!(spilled.contains("2 other"), "{spilled}");
        assert_eq!(others(dir.path(), &[]), Vec::<String>::new());
    }
}

/// Builds with `build(name, memory, streaming)` four ways: spilled and
/// unlimited, streaming and in memory. Repeated keys are resolved in the
/// temporary file by all but the unlimited in-memory build, which resolves
/// them in memory (`Builder::resolve_duplicates`). Checks the four stores
/// are the same bytes, and returns the spilled streaming build's stats.
fn assert_every_build_agrees(
    what: &str,
    build: impl Fn(&str, MemoryLimit, bool) -> (Vec<u8>, Option<hashfile::SpillStats>),
) -> hashfile::SpillStats {
    let (spilled, stats) = build("spilled.hf", limited(), true);
    let stats = stats.unwrap_or_else(|| panic!("{what}: 16 MiB should spill"));
    for (how, memory, streaming) in [
        ("unlimited", unlimited(), true),
        ("spilled in memory", limited(), false),
        ("unlimited in memory", unlimited(), false),
    ] {
        let (other, other_stats) = build("other.hf", memory, streaming);
        assert_eq!(other_stats.is_some(), memory == limited(), "{what}, {how}");
        assert!(
            spilled == other,
            "{what}: the {how} build differs from the spilled one"
        );
    }
    stats
}

/// `on_duplicate: first` and `last` drop the repeats from a spilled
/// build's records (in place, in order) into the bytes of an unlimited
/// build: the first or the last occurrence's record, at its position.
#[test]
fn a_spilled_build_keeps_the_first_or_last_of_a_repeated_key_as_an_unlimited_one_does() {
    let dir = tempfile::tempdir().unwrap();
    for (policy, kept) in [
        (OnDuplicate::First, "value 400000 of a build that spills"),
        (OnDuplicate::Last, "the third"),
    ] {
        let build = |name: &str, memory: MemoryLimit, streaming: bool| {
            let path = dir.path().join(name);
            let options = BuildOptions {
                memory,
                on_duplicate: policy,
                ..BuildOptions::default()
            };
            let mut builder = if streaming {
                Builder::streaming(options, &path).unwrap()
            } else {
                Builder::new(options).unwrap()
            };
            fill(&mut builder, SPILLED, false);
            for (i, value) in [
                (400_000, "the second"),
                (5, "again"),
                (400_000, "the third"),
                (650_000, "again"),
            ] {
                builder.insert_record(Record::text(&key(i), value));
            }
            builder.write_file(&path).unwrap();
            assert_eq!(builder.len(), SPILLED, "{policy:?}");
            (std::fs::read(&path).unwrap(), builder.spill_stats())
        };
        assert_every_build_agrees(&format!("{policy:?}"), build);
        let store = Reader::open(dir.path().join("spilled.hf")).unwrap();
        store.verify().unwrap();
        assert_eq!(store.len(), SPILLED as u64);
        assert_eq!(
            store.get(key(400_000).as_bytes()).unwrap().unwrap().value(),
            kept.as_bytes()
        );
        assert_eq!(
            others(dir.path(), &["spilled.hf", "other.hf"]),
            Vec::<String>::new()
        );
    }
}

/// A typed map of string keys and values.
fn map(pairs: &[(&str, hashfile::value::Value)]) -> hashfile::value::Value {
    use hashfile::value::Value;
    Value::Map(
        pairs
            .iter()
            .map(|(k, v)| (Value::Str(k.as_bytes().to_vec(), None), v.clone()))
            .collect(),
    )
}

fn text(s: &str) -> hashfile::value::Value {
    hashfile::value::Value::Str(s.as_bytes().to_vec(), None)
}

/// `on_duplicate: merge` resolves a spilled build's repeats as an
/// unlimited build does: maps deep-merged into the first occurrence's
/// position, a later nil ignored, anything else replacing. A merge may
/// leave a record longer than the one it replaces, early in the file (so
/// the records cannot close up in place); the bytes are the unlimited
/// build's all the same, with either index layout, compressed or not.
#[test]
fn a_spilled_build_merges_repeated_keys_as_an_unlimited_one_does() {
    use hashfile::value::Value;
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(20_000);
    let later: Vec<(String, Value)> = vec![
        // A text, then a map: the map replaces it; then a map merged in.
        (
            key(400_000),
            map(&[("a", Value::Int(1)), ("b", map(&[("c", text("one"))]))]),
        ),
        (key(400_000), map(&[("b", map(&[("d", text("two"))]))])),
        // A later nil changes nothing.
        (key(5), Value::Nil),
        // Anything else replaces: a record 20 KB long at the second key.
        (key(1), map(&[("long", text(&long))])),
        // A key that first comes late: two maps, merged.
        ("locale:en".into(), map(&[("greeting", text("hi"))])),
        (key(650_000), text("again")),
        (
            "locale:en".into(),
            map(&[("farewell", text("bye")), ("greeting", text("hello"))]),
        ),
    ];
    for (what, options) in [
        ("classic", BuildOptions::default()),
        ("compact", BuildOptions::for_index(IndexKind::Compact)),
        (
            "compressed",
            BuildOptions {
                compression: hashfile::Compression::parse("zstd").unwrap(),
                ..BuildOptions::default()
            },
        ),
    ] {
        let build = |name: &str, memory: MemoryLimit, streaming: bool| {
            let path = dir.path().join(name);
            let options = BuildOptions {
                memory,
                on_duplicate: OnDuplicate::Merge,
                ..options.clone()
            };
            let mut builder = if streaming {
                Builder::streaming(options, &path).unwrap()
            } else {
                Builder::new(options).unwrap()
            };
            fill(&mut builder, SPILLED, false);
            for (k, value) in &later {
                builder.insert_value(k.as_bytes(), true, value).unwrap();
            }
            builder.write_file(&path).unwrap();
            assert_eq!(builder.len(), SPILLED + 1, "{what}");
            (std::fs::read(&path).unwrap(), builder.spill_stats())
        };
        let stats = assert_every_build_agrees(what, build);

        let store = Reader::open(dir.path().join("spilled.hf")).unwrap();
        store.verify().unwrap();
        assert_eq!(store.len(), SPILLED as u64 + 1);
        // The records were copied to a new temporary file: counted.
        let records = store
            .header()
            .section(hashfile::format::SectionId::Records)
            .length;
        assert!(
            stats.temporary_bytes > records,
            "{what}: {stats:?}, {records}"
        );
        let value = |k: &str| {
            let found = store.get(k.as_bytes()).unwrap().unwrap();
            Value::of_record(&found.record()).unwrap()
        };
        assert_eq!(
            value(&key(400_000)),
            map(&[
                ("a", Value::Int(1)),
                ("b", map(&[("c", text("one")), ("d", text("two"))]))
            ]),
            "{what}"
        );
        assert_eq!(
            value(&key(5)),
            text("value 5 of a build that spills"),
            "{what}"
        );
        assert_eq!(value(&key(1)), map(&[("long", text(&long))]), "{what}");
        assert_eq!(value(&key(650_000)), text("again"), "{what}");
        assert_eq!(
            value("locale:en"),
            map(&[("greeting", text("hello")), ("farewell", text("bye"))]),
            "{what}"
        );
        assert_eq!(
            value(&key(2)),
            text("value 2 of a build that spills"),
            "{what}"
        );
        // Input order: the merged key sits where it first came.
        let keys: Vec<Vec<u8>> = store
            .iter()
            .take(3)
            .map(|r| r.unwrap().key().to_vec())
            .collect();
        assert_eq!(
            keys,
            [key(0), key(1), key(2)].map(String::into_bytes),
            "{what}"
        );
        assert_eq!(
            others(dir.path(), &["spilled.hf", "other.hf"]),
            Vec::<String>::new(),
            "{what}"
        );
    }
}

#[test]
fn a_cancelled_spilled_build_removes_its_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.hf");
    let options = BuildOptions {
        memory: limited(),
        ..BuildOptions::default()
    };
    let mut builder = Builder::streaming(options, &path).unwrap();
    fill(&mut builder, SPILLED, false);
    let cancel = CancelFlag::new();
    builder.set_cancel(cancel.clone());
    // Raised once the spill's files are open besides the store's: while
    // the groups are placed.
    let watcher = {
        let (dir, cancel) = (dir.path().to_path_buf(), cancel.clone());
        std::thread::spawn(move || {
            let start = std::time::Instant::now();
            while start.elapsed() < std::time::Duration::from_secs(60) {
                if open_in(std::process::id(), &dir).len() >= 2 {
                    cancel.cancel();
                    return true;
                }
                std::thread::yield_now();
            }
            false
        })
    };
    let result = builder.write_file(&path);
    let raised = watcher.join().unwrap();
    assert!(raised, "the temporary files never appeared");
    assert!(matches!(result, Err(Error::Cancelled)), "{result:?}");
    drop(builder);
    assert_eq!(others(dir.path(), &[]), Vec::<String>::new());
}

/// The files process `pid` has open in `dir`, as `/proc/PID/fd` shows
/// them: a path, or for a file without a name its directory's path and
/// `/#INODE (deleted)` (Linux's `O_TMPFILE`) or its old name and
/// ` (deleted)`. Empty where there is no `/proc`.
fn open_in(pid: u32, dir: &Path) -> Vec<String> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    let dir = dir.canonicalize().unwrap();
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter(|target| target.parent() == Some(dir.as_path()))
        .map(|target| target.to_string_lossy().into_owned())
        .collect()
}

/// Set to a directory, `killed_build` builds into it: it runs in a child
/// process of
/// `a_build_killed_while_spilling_leaves_only_what_the_next_build_removes`,
/// which kills it.
const KILLED_BUILD_DIR: &str = "HASHFILE_TEST_KILLED_BUILD_DIR";

/// Three million keys, about what a red team's SIGKILL left 13 spill
/// files of (79 MB).
const KILLED_BUILD_KEYS: usize = 3_000_000;

/// The child the next test kills: ignored unless run by it (with
/// `--ignored`), so it is not counted as a test passed.
#[test]
#[ignore = "the child process of a_build_killed_while_spilling_leaves_only_what_the_next_build_removes"]
fn killed_build() {
    let dir = std::env::var_os(KILLED_BUILD_DIR)
        .unwrap_or_else(|| panic!("{KILLED_BUILD_DIR} names the directory to build in"));
    let path = Path::new(&dir).join("out.hf");
    let options = BuildOptions {
        memory: limited(),
        ..BuildOptions::default()
    };
    let mut builder = Builder::streaming(options, &path).unwrap();
    fill(&mut builder, KILLED_BUILD_KEYS, false);
    builder.write_file(&path).unwrap();
}

/// A build killed with SIGKILL while it spills leaves no spill file (they
/// have no name), only the store's temporary file; the next build into the
/// same directory removes that, and the store that was there stays.
#[test]
fn a_build_killed_while_spilling_leaves_only_what_the_next_build_removes() {
    require_env!(
        "HASHFILE_REQUIRE_LINUX",
        Path::new("/proc/self/fd").exists(),
        "no /proc to see the child's open files in"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.hf");
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    builder.insert(b"state", b"old");
    builder.write_file(&path).unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "killed_build",
            "--ignored",
            "--test-threads",
            "1",
        ])
        .env(KILLED_BUILD_DIR, dir.path())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The store's temporary file and at least two groups' open: spilling.
    let start = std::time::Instant::now();
    let mut open = Vec::new();
    while open.len() < 3 && start.elapsed() < std::time::Duration::from_secs(300) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the build ended before it spilled"
        );
        open = open_in(child.id(), dir.path());
        std::thread::yield_now();
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(open.len() >= 3, "the build never spilled: {open:?}");
    let left = others(dir.path(), &["out.hf"]);
    assert_eq!(
        left.len(),
        1,
        "only the store's temporary file (of {open:?}) is left: {left:?}"
    );
    assert!(
        left[0].starts_with(".out.hf.hashfile-") && left[0].ends_with(".tmp"),
        "{left:?}"
    );

    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    builder.insert(b"state", b"next");
    builder.write_file(&dir.path().join("next.hf")).unwrap();
    assert_eq!(
        others(dir.path(), &["out.hf", "next.hf"]),
        Vec::<String>::new()
    );
    let old = Reader::open(&path).unwrap();
    assert_eq!(old.get(b"state").unwrap().unwrap().value(), b"old");
}

/// The reason of an `InvalidOption` error naming `memory`.
fn memory_error<T: std::fmt::Debug>(result: hashfile::Result<T>) -> String {
    match result {
        Err(Error::InvalidOption {
            name: "memory",
            reason,
        }) => reason,
        other => panic!("expected an error naming memory, got {other:?}"),
    }
}

#[test]
fn memory_limits_parse_and_refuse_what_is_not_a_size() {
    assert_eq!(MemoryLimit::parse("auto").unwrap(), MemoryLimit::Auto);
    assert_eq!(
        MemoryLimit::parse("64M").unwrap(),
        MemoryLimit::Bytes(64 << 20)
    );
    assert_eq!(
        MemoryLimit::parse("4GiB").unwrap(),
        MemoryLimit::Bytes(4 << 30)
    );
    assert_eq!(
        MemoryLimit::parse("2g").unwrap(),
        MemoryLimit::Bytes(2 << 30)
    );
    assert_eq!(
        MemoryLimit::parse("20000000").unwrap(),
        MemoryLimit::Bytes(20_000_000)
    );
    for bad in ["", "lots", "64X", "-1G", "1.5G", "99999999999999999999T"] {
        let reason = memory_error(MemoryLimit::parse(bad));
        assert!(reason.contains("not a size"), "{bad:?}: {reason}");
    }
    assert!(memory_error(MemoryLimit::parse("1M")).contains("16 MiB"));
    assert!(MemoryLimit::Auto.resolve() >= MIN_MEMORY_LIMIT);
    let options = BuildOptions {
        memory: MemoryLimit::Bytes(5),
        ..BuildOptions::default()
    };
    assert!(memory_error(options.validate()).contains("below the least"));
}

/// A full disk while spilling: an I/O error naming the store, the file
/// that was there untouched, and no temporary file left. On a tmpfs of its
/// own, which needs root (CI runs as root).
#[test]
fn a_full_disk_while_spilling_is_an_error_that_leaves_the_destination() {
    require_env!(
        "HASHFILE_REQUIRE_ROOT",
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() } == 0,
        "mounting a tmpfs needs root"
    );
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("small");
    std::fs::create_dir(&mount).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=24m", "tmpfs"])
        .arg(&mount)
        .status()
        .unwrap();
    assert!(mounted.success(), "mount -t tmpfs failed");
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&mount);
    let path = mount.join("out.hf");
    std::fs::write(&path, b"the store that was there").unwrap();
    // About 50 MB of records, which do not fit, under the least limit;
    // then about 15 MB of records and a merge, which copies them to a
    // second temporary file, which does not fit either (a streaming build
    // resolves repeated keys in its file, whatever the limit).
    for (memory, entries, policy) in [
        (limited(), 1_000_000, OnDuplicate::Error),
        (unlimited(), 300_000, OnDuplicate::Merge),
    ] {
        let options = BuildOptions {
            memory,
            on_duplicate: policy,
            ..BuildOptions::default()
        };
        let mut builder = Builder::streaming(options, &path).unwrap();
        fill(&mut builder, entries, false);
        if policy == OnDuplicate::Merge {
            let value = hashfile::value::Value::Map(vec![]);
            builder
                .insert_value(key(1).as_bytes(), true, &value)
                .unwrap();
        }
        let error = builder.write_file(&path).unwrap_err();
        drop(builder);
        let message = error.to_string();
        assert!(
            message.contains("No space left on device") && message.contains("out.hf"),
            "{policy:?}: {message}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"the store that was there");
        assert_eq!(others(&mount, &["out.hf"]), Vec::<String>::new());
    }
}

/// A streaming builder's file becomes the store when it is published:
/// entries added after that must not be written into it. The store stays
/// as published, and writing the builder again is an error.
#[test]
fn entries_added_after_a_streaming_build_is_published_leave_the_store_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.hf");
    for memory in [limited(), unlimited()] {
        let options = BuildOptions {
            memory,
            ..BuildOptions::default()
        };
        let mut builder = Builder::streaming(options, &path).unwrap();
        fill(&mut builder, 1_000, false);
        builder.write_file(&path).unwrap();
        let published = std::fs::read(&path).unwrap();
        // More than the 1 MiB a streaming build buffers between writes.
        for i in 0..100_000 {
            builder.insert_record(Record::text(
                &format!("later:{i}"),
                "a value written after the store was published",
            ));
        }
        for _ in 0..2 {
            let error = builder.write_file(&path).unwrap_err().to_string();
            assert!(
                error.contains("added after this streaming build published"),
                "{error}"
            );
        }
        drop(builder);
        assert!(
            std::fs::read(&path).unwrap() == published,
            "the published store changed"
        );
        Reader::open(&path).unwrap().verify().unwrap();
        assert_eq!(others(dir.path(), &["out.hf"]), Vec::<String>::new());
    }
}
