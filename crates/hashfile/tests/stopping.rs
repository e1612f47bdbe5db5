//! Builds that stop: cancelled from another thread (an interrupt), or
//! hopeless (options no table can satisfy), in every phase, leaving the
//! destination as it was and no temporary file behind.
use std::path::Path;

use hashfile::import::{ImportOptions, InputFormat};
use hashfile::pipeline::{build_from, Input, Phase};
use hashfile::{BuildOptions, Builder, CancelFlag, Error};

fn keys(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("key-{i}").into_bytes()).collect()
}

fn builder(n: usize, options: BuildOptions) -> Builder {
    let mut b = Builder::new(options).unwrap();
    for k in keys(n) {
        b.insert(&k, b"v");
    }
    b
}

/// The destination holds `old`, and nothing else is in its directory.
fn untouched(dir: &Path, path: &Path, old: &[u8]) {
    assert_eq!(std::fs::read(path).unwrap(), old);
    assert_eq!(
        std::fs::read_dir(dir).unwrap().count(),
        1,
        "a temporary file was left"
    );
}

/// Options no table can satisfy are refused, naming the option to change,
/// after a bounded amount of work (they ran for hours before).
#[test]
fn hopeless_options_are_refused_by_name() {
    let cases = [
        // Dense buckets of 346 keys on average.
        (
            5_000,
            BuildOptions {
                dense_key_fraction: 0.99,
                dense_bucket_fraction: 0.01,
                ..Default::default()
            },
            "dense_key_fraction",
        ),
        // Buckets of ten keys into a table with no slot to spare.
        (
            3_000,
            BuildOptions {
                keys_per_bucket: 10.0,
                load_factor: 1.0,
                dense_key_fraction: 0.0,
                dense_bucket_fraction: 0.0,
                ..Default::default()
            },
            "load_factor",
        ),
    ];
    for (n, options, option) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.hf");
        std::fs::write(&path, b"old").unwrap();
        match builder(n, options.clone()).write_file(&path) {
            Err(Error::InvalidOption { name, reason }) => {
                assert_eq!(name, option, "{reason}");
                assert!(
                    reason.starts_with(
                        "placing the keys took over 150 times the work the default options take"
                    ),
                    "{reason}"
                );
            }
            other => panic!(
                "{options:?}: expected {option} to be refused, got {:?}",
                other.map(|_| ())
            ),
        }
        untouched(dir.path(), &path, b"old");
    }
    // The same options' neighbours that work still build.
    let fine = BuildOptions {
        dense_key_fraction: 0.6,
        dense_bucket_fraction: 0.3,
        keys_per_bucket: 6.0,
        load_factor: 1.0,
        ..Default::default()
    };
    hashfile::Reader::new(builder(20_000, fine).to_bytes().unwrap())
        .unwrap()
        .verify()
        .unwrap();
}

#[test]
fn a_raised_flag_stops_a_build_before_anything_is_published() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.hf");
    std::fs::write(&path, b"old").unwrap();
    let cancel = CancelFlag::new();
    cancel.cancel();
    let mut b = builder(1_000, BuildOptions::default());
    b.set_cancel(cancel);
    assert!(matches!(b.write_file(&path), Err(Error::Cancelled)));
    untouched(dir.path(), &path, b"old");
}

/// Raised while placing keys of a hopeless build (which would run for a
/// second or more before giving up), from another thread: the build stops
/// with Cancelled, not with the option error it would have reached.
#[test]
fn a_flag_raised_from_another_thread_stops_placing() {
    let cancel = CancelFlag::new();
    let mut b = builder(
        200_000,
        BuildOptions {
            keys_per_bucket: 10.0,
            load_factor: 1.0,
            dense_key_fraction: 0.0,
            dense_bucket_fraction: 0.0,
            keys_per_part: 1 << 20,
            ..Default::default()
        },
    );
    b.set_cancel(cancel.clone());
    let raiser = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        cancel.cancel();
    });
    assert!(matches!(b.to_bytes(), Err(Error::Cancelled)));
    raiser.join().unwrap();
}

/// The last look at the flag is just before the rename: raised during the
/// final report, it still stops the build. Raised in every phase, it stops
/// it in that phase.
#[test]
fn build_from_stops_in_every_phase() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    std::fs::write(
        &input,
        keys(50_000)
            .iter()
            .map(|k| format!("[\"{}\",\"v\"]\n", String::from_utf8_lossy(k)))
            .collect::<String>(),
    )
    .unwrap();
    let out = dir.path().join("out.hf");
    std::fs::write(&out, b"old").unwrap();
    let inputs = [Input::new(
        input.to_str().unwrap(),
        None,
        &ImportOptions::new(InputFormat::JsonLines),
    )
    .unwrap()];
    for phase in [Phase::Reading, Phase::Building, Phase::Publishing] {
        let cancel = CancelFlag::new();
        let raise = cancel.clone();
        let result = build_from(&inputs, &out, BuildOptions::default(), &cancel, &mut |p| {
            if p.phase == phase {
                raise.cancel();
            }
            Ok(())
        });
        assert!(
            matches!(result, Err(Error::Cancelled)),
            "{phase:?}: {:?}",
            result.map(|_| ())
        );
        assert_eq!(std::fs::read(&out).unwrap(), b"old", "{phase:?}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "{phase:?}: a temporary file was left"
        );
    }
    let summary = build_from(
        &inputs,
        &out,
        BuildOptions::default(),
        &CancelFlag::new(),
        &mut |_| Ok(()),
    )
    .unwrap();
    assert_eq!(summary.entries, 50_000);
}

/// A FIFO as an input: read as a stream when a writer comes, and a build
/// waiting for a writer that never comes (or stalls) stops when cancelled,
/// where opening the FIFO used to wait in open(2) for ever. A duplicate key
/// in it is reported without reading it again.
#[test]
fn a_fifo_input_is_read_and_a_build_waiting_on_it_can_be_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("in.jsonl");
    let made = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(made.as_ptr(), 0o600) }, 0);
    let input = || {
        Input::new(
            fifo.to_str().unwrap(),
            Some(InputFormat::JsonLines),
            &ImportOptions::new(InputFormat::JsonLines),
        )
        .unwrap()
    };
    let out = dir.path().join("s.hf");

    // A writer that comes late, writes in two pieces with a pause, and closes.
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
            std::io::Write::write_all(&mut w, b"[\"a\", 1]\n").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(200));
            std::io::Write::write_all(&mut w, b"[\"b\", 2]\n").unwrap();
        })
    };
    let summary = build_from(
        &[input()],
        &out,
        BuildOptions::default(),
        &CancelFlag::new(),
        &mut |_| Ok(()),
    )
    .unwrap();
    writer.join().unwrap();
    assert_eq!(summary.entries, 2);

    // No writer ever: cancelled from another thread, it stops at once.
    let cancel = CancelFlag::new();
    let raise = {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            cancel.cancel();
        })
    };
    let started = std::time::Instant::now();
    let result = build_from(
        &[input()],
        &dir.path().join("t.hf"),
        BuildOptions::default(),
        &cancel,
        &mut |_| Ok(()),
    );
    raise.join().unwrap();
    assert!(
        matches!(result, Err(Error::Cancelled)),
        "{:?}",
        result.map(|_| ())
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(!dir.path().join("t.hf").exists());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "the FIFO and s.hf, no temporary file"
    );

    // A duplicate key: named, and the FIFO is not opened again (no writer
    // would come, and that open would wait).
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(&fifo, b"[\"a\", 1]\n[\"a\", 2]\n").unwrap())
    };
    let result = build_from(
        &[input()],
        &dir.path().join("u.hf"),
        BuildOptions::default(),
        &CancelFlag::new(),
        &mut |_| Ok(()),
    );
    writer.join().unwrap();
    assert!(
        matches!(result, Err(Error::DuplicateKey { ref key, first: None, .. }) if key == b"a"),
        "{:?}",
        result.map(|_| ())
    );
}
