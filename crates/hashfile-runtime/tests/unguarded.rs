//! A local store opened while every slot of the SIGBUS guard is taken (a
//! dataset of thousands of local shards) is read with positioned reads, so
//! a file that shrinks under it is an error rather than a crash. Its own
//! test binary: it fills the process's guard slots.

use hashfile::read::fault::{self, GuardedMap, MAX_GUARDED_MAPPINGS};
use hashfile::read::Source;
use hashfile::{BuildOptions, Builder};

fn store_file(path: &std::path::Path, n: u32) {
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    for i in 0..n {
        builder.insert(
            format!("key-{i}").as_bytes(),
            format!("value-{i}").as_bytes(),
        );
    }
    builder.write_file(path).unwrap();
}

#[test]
fn a_store_past_the_guards_slots_is_read_with_pread_and_a_shrunk_file_is_an_error() {
    fault::install().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let filler = dir.path().join("filler.hf");
    store_file(&filler, 10);
    let mut held = Vec::new();
    loop {
        let map = GuardedMap::open(&filler).unwrap();
        if !map.is_guarded() {
            break;
        }
        held.push(map);
    }
    assert!(held.len() <= MAX_GUARDED_MAPPINGS);

    let path = dir.path().join("big.hf");
    store_file(&path, 20_000);
    let store = hashfile_runtime::open_store(
        path.to_str().unwrap(),
        &Default::default(),
        hashfile_runtime::LocalOpen::Mapped,
    )
    .unwrap();
    assert!(
        store.source().as_slice().is_none(),
        "read with pread, not a map it cannot guard"
    );
    assert_eq!(
        store.get(b"key-19999").unwrap().unwrap().value(),
        b"value-19999"
    );
    assert!(store.get(b"nope").unwrap().is_none());
    store.verify().unwrap();
    assert!(!store.source().is_stale(path.to_str().unwrap()));

    // Cut in half under the reader: lookups into the lost half fail, and
    // none crashes the process or answers wrongly.
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let mut failed = 0;
    for i in 0..20_000 {
        let key = format!("key-{i}");
        match store.get(key.as_bytes()) {
            Ok(Some(record)) => assert_eq!(record.value(), format!("value-{i}").as_bytes()),
            Ok(None) => panic!("{key} lost without an error"),
            Err(_) => failed += 1,
        }
    }
    assert!(failed > 0, "the lost half is an error");
    assert!(store.verify().is_err());

    // A slot freed: the next store opened is mapped and guarded again.
    held.pop();
    let again = hashfile_runtime::open_store(
        filler.to_str().unwrap(),
        &Default::default(),
        hashfile_runtime::LocalOpen::Mapped,
    )
    .unwrap();
    assert!(again.source().as_slice().is_some());
}
