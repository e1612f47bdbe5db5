//! A server that lies about lengths: an object of 2^50 bytes with a valid
//! header, whose one record claims 512 GiB. A lookup listed every block of
//! the record and aborted the process after about 17 KB of answers; now it
//! is `ValueTooLarge` before the record is asked for, and with the limit
//! raised the record is fetched in pieces, never allocated whole before
//! the server sends it.
use hashfile_remote::{open, RemoteOptions};

mod support;
use support::Claiming;

#[path = "../../hashfile/tests/support/hostile.rs"]
mod hostile;

const CLAIMED: u64 = 1 << 50;
const VALUE: u64 = 1 << 39;

#[test]
fn a_server_claiming_a_512_gib_record_gets_an_error_not_an_abort() {
    let server = Claiming::start(hostile::huge_record_prefix(CLAIMED, VALUE), CLAIMED);
    let store = open(&server.url(), RemoteOptions::default()).unwrap();
    let error = store.get(hostile::KEY).unwrap_err();
    assert!(
        matches!(&error, hashfile::Error::ValueTooLarge { key, .. } if key == "\"k\""),
        "{error}"
    );
    assert!(
        error.to_string().contains("is 549755813888 bytes"),
        "{error}"
    );
    // What open and the lookup fetched: the first block, the index, the
    // record's first block; nothing of the 512 GiB.
    let sent = server.sent.load(std::sync::atomic::Ordering::Relaxed);
    assert!(sent < 256 << 10, "{sent} bytes sent");
}

/// With the limit lifted past the claim, the read goes in pieces of
/// `LARGE_READ_PIECE` bytes into a buffer the allocator may refuse: the
/// reader holds no more than the server sent (here, it gives up when a
/// piece takes longer than the timeout, or the allocation is refused),
/// and the process goes on.
#[test]
fn with_the_limit_lifted_a_lying_record_is_read_in_pieces_and_fails_cleanly() {
    let server = Claiming::start(hostile::huge_record_prefix(CLAIMED, VALUE), CLAIMED);
    let options = RemoteOptions {
        timeout: std::time::Duration::from_millis(500),
        retries: 0,
        ..RemoteOptions::default()
    };
    let store = open(&server.url(), options)
        .unwrap()
        .with_max_value_size(u64::MAX)
        .unwrap();
    let started = std::time::Instant::now();
    let error = store.get(hostile::KEY).unwrap_err();
    assert!(
        matches!(
            error,
            hashfile::Error::OutOfMemory { .. } | hashfile::Error::Io { .. }
        ),
        "{error}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}
