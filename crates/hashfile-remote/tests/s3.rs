//! s3:// stores against MinIO, a real S3-compatible server on loopback:
//! signed ranged reads, a batch, ETag checks when the object is replaced,
//! a missing object and bucket, and wrong credentials.
use hashfile_remote::{open, RemoteError, RemoteErrorKind, RemoteOptions};

mod support;
use support::{assert_reads_every_nth_key, minio_setting, store, value, Minio};

fn options(minio: &Minio) -> RemoteOptions {
    minio.options()
}

fn make_bucket(minio: &Minio, bucket: &str) {
    minio.make_bucket(bucket)
}

fn put(minio: &Minio, bucket: &str, key: &str, bytes: Vec<u8>) {
    minio.put(bucket, key, bytes)
}

#[test]
fn s3_reads_batches_and_faults_against_minio() {
    let Some(minio) = Minio::start_or_skip() else {
        return;
    };
    make_bucket(&minio, "stores");
    let n = 50_000;
    put(&minio, "stores", "a/tenants.hf", store(n, 40));

    // A cache of 4 blocks: most lookups reach the server.
    let small_cache = RemoteOptions {
        cache: hashfile::read::CacheOptions {
            block_len: 16 << 10,
            capacity: 64 << 10,
        },
        ..options(&minio)
    };
    let remote = open("s3://stores/a/tenants.hf", small_cache).unwrap();
    assert_eq!(remote.len(), n);
    assert_reads_every_nth_key(&remote, n, 97, 40);
    let keys: Vec<String> = (0..100u64).map(|i| format!("key-{}", i * 487)).collect();
    // A batch needs its blocks to stay until it reads them: the default
    // cache holds 2,048.
    let batched = open("s3://stores/a/tenants.hf", options(&minio)).unwrap();
    let before = batched.source().stats().fetches;
    let found = batched.get_many(&keys).unwrap();
    assert!(batched.source().stats().fetches - before <= 4);
    assert!(found
        .iter()
        .zip(0..)
        .all(|(r, i)| r.as_ref().unwrap().value() == value(i * 487, 40)));

    let kind = |location: &str, options: RemoteOptions| {
        let error = open(location, options).map(|_| ()).unwrap_err();
        (
            RemoteError::find_in(&error)
                .unwrap_or_else(|| panic!("{error}"))
                .kind,
            error.to_string(),
        )
    };
    let (missing, text) = kind("s3://stores/a/none.hf", options(&minio));
    assert_eq!(missing, RemoteErrorKind::NotFound, "{text}");
    assert!(text.contains("s3://stores/a/none.hf"), "{text}");
    assert_eq!(
        kind("s3://no-such-bucket/x.hf", options(&minio)).0,
        RemoteErrorKind::NotFound
    );
    let wrong = RemoteOptions {
        s3_credentials: Some((
            minio_setting("MINIO_ROOT_USER").into(),
            "not-the-secret".into(),
        )),
        ..options(&minio)
    };
    let (denied, text) = kind("s3://stores/a/tenants.hf", wrong);
    assert_eq!(denied, RemoteErrorKind::Denied, "{text}");

    // Replaced: another ETag; reads that reach the server fail, none
    // returns a value of the new object.
    put(&minio, "stores", "a/tenants.hf", store(n, 60));
    let mut changed = 0;
    for i in 0..500u64 {
        match remote.get(format!("key-{}", i * 89).as_bytes()) {
            Ok(found) => assert_eq!(found.unwrap().value(), value(i * 89, 40)),
            Err(error) => {
                assert_eq!(
                    RemoteError::find_in(&error).map(|e| e.kind),
                    Some(RemoteErrorKind::Changed),
                    "{error}"
                );
                changed += 1;
            }
        }
    }
    assert!(changed > 100, "{changed}");
    let reopened = open("s3://stores/a/tenants.hf", options(&minio)).unwrap();
    assert_eq!(
        reopened.get(b"key-3").unwrap().unwrap().value(),
        value(3, 60)
    );
}
