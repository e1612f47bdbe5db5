//! Remote stores over HTTP range requests, against a real nginx on
//! loopback (and a fault proxy in front of it): values, round trips and
//! connections counted from nginx's access log, batches, the pinned index,
//! and every fault a lookup may meet.
use std::sync::Arc;
use std::time::{Duration, Instant};

use hashfile_remote::{open, Interrupt, RemoteError, RemoteErrorKind, RemoteOptions};

mod support;
use support::{
    assert_a_batch_takes_one_lookups_round_trips, assert_reads_every_nth_key, store, value,
    Coalescing, FaultProxy, Faults, Liar, Nginx,
};

const N: u64 = 20_000;
const VALUE_LEN: usize = 40;

fn kind_of(error: &hashfile::Error) -> RemoteErrorKind {
    RemoteError::find_in(error)
        .unwrap_or_else(|| panic!("not a remote error: {error}"))
        .kind
}

fn quick() -> RemoteOptions {
    RemoteOptions {
        backoff: Duration::from_millis(5),
        ..RemoteOptions::default()
    }
}

#[test]
fn every_key_reads_as_from_a_local_file_and_absent_keys_are_absent() {
    let nginx = Nginx::start();
    let bytes = store(N, VALUE_LEN);
    nginx.publish("s.hf", &bytes);
    let remote = open(&nginx.url("/files/s.hf"), quick()).unwrap();
    let local = hashfile::Reader::new(bytes).unwrap();
    assert_eq!(remote.len(), N);
    assert_eq!(remote.header(), local.header());
    for i in 0..N {
        let key = format!("key-{i}");
        assert_eq!(
            remote.get(key.as_bytes()).unwrap().unwrap().value(),
            value(i, VALUE_LEN),
            "{key}"
        );
    }
    for i in 0..1000 {
        assert!(remote
            .get(format!("absent-{i}").as_bytes())
            .unwrap()
            .is_none());
    }
    let remote_order: Vec<Vec<u8>> = remote
        .iter()
        .map(|r| r.unwrap().key().to_vec())
        .take(500)
        .collect();
    let local_order: Vec<Vec<u8>> = local
        .iter()
        .map(|r| r.unwrap().key().to_vec())
        .take(500)
        .collect();
    assert_eq!(remote_order, local_order);
}

/// Open is one request for the first block plus one for the seed index
/// and the seeds; a cold lookup two more (three through the remap); 10,000
/// sequential lookups go over one TCP connection.
#[test]
fn round_trips_and_connections_counted_by_nginx() {
    let nginx = Nginx::start();
    nginx.publish("s.hf", &store(200_000, VALUE_LEN));
    let options = RemoteOptions {
        cache: hashfile::read::CacheOptions {
            block_len: 4096,
            capacity: 1 << 20,
        },
        ..quick()
    };
    let remote = open(&nginx.url("/files/s.hf"), options).unwrap();
    let seed_index = remote
        .header()
        .section(hashfile::format::SectionId::SeedIndex);
    let index_in_first_block =
        seed_index.offset + seed_index.length <= hashfile::read::OPEN_READ_LEN as u64;
    let (requests, _) = nginx.count_since(0);
    assert_eq!(
        requests,
        if index_in_first_block { 1 } else { 2 },
        "open: the first block, and the seed index unless in it: {:?}",
        nginx.log()
    );
    let mut most = 0;
    for i in (0..200_000).step_by(20_011) {
        let before = nginx.log().len();
        remote.get(format!("key-{i}").as_bytes()).unwrap().unwrap();
        most = most.max(nginx.count_since(before).0);
    }
    // The seeds came with the seed index at open: a slot and a record,
    // and a remap entry for a few keys.
    assert!(
        (2..=3).contains(&most),
        "a cold lookup took {most} requests"
    );
    let before = nginx.log().len();
    for i in 0..10_000u64 {
        let key = format!("key-{}", i * 7919 % 200_000);
        assert_eq!(
            remote.get(key.as_bytes()).unwrap().unwrap().value(),
            value(i * 7919 % 200_000, VALUE_LEN)
        );
    }
    let (requests, connections) = nginx.count_since(before);
    assert!(
        requests > 1000,
        "a 1 MiB cache over a 9 MB store misses often: {requests} requests"
    );
    let all: Vec<u64> = nginx.log().iter().map(|l| l.0).collect();
    assert_eq!(
        connections,
        1,
        "10,000 lookups, {requests} requests, on connections {:?}",
        {
            let mut c = all.clone();
            c.dedup();
            c
        }
    );
    assert!(
        nginx.log().iter().all(|l| l.2 == 206),
        "every answer was 206"
    );
}

/// 100 keys by get_many take about the round trips of one key, not 100x.
#[test]
fn a_batch_takes_the_round_trips_of_one_lookup() {
    let nginx = Nginx::start();
    nginx.publish("s.hf", &store(200_000, VALUE_LEN));
    let remote = open(&nginx.url("/files/s.hf"), quick()).unwrap();
    assert_a_batch_takes_one_lookups_round_trips(&remote, 200_000, VALUE_LEN);
}

/// The compact index over HTTP: every key of a store of two parts, absent
/// keys absent, a batch in the round trips of one lookup (the parts table
/// and the pilots are pinned at open), and verify.
#[test]
fn a_store_with_the_compact_index_reads_and_batches_over_http() {
    let nginx = Nginx::start();
    let n = 200_000;
    let options = hashfile::BuildOptions::compact();
    nginx.publish("c.hf", &support::store_with(n, VALUE_LEN, options));
    let remote = open(&nginx.url("/files/c.hf"), quick()).unwrap();
    assert!(remote.header().is_compact());
    assert_eq!(remote.header().geometry.part_count, 2);
    assert_a_batch_takes_one_lookups_round_trips(&remote, n, VALUE_LEN);
    assert_reads_every_nth_key(&remote, n, 997, VALUE_LEN);
    remote.verify().unwrap();
}

/// Compressed values over HTTP: the dictionary comes with the index at
/// open, so a cold lookup takes the requests it takes uncompressed, a
/// batch the round trips of one lookup, and every value decodes.
#[test]
fn a_store_with_compressed_values_reads_and_batches_over_http() {
    let nginx = Nginx::start();
    let (n, value_len) = (100_000, 200);
    let options = hashfile::BuildOptions {
        compression: hashfile::Compression::zstd(3),
        ..hashfile::BuildOptions::default()
    };
    let bytes = support::store_with(n, value_len, options);
    assert!(bytes.len() * 3 < store(n, value_len).len());
    nginx.publish("z.hf", &bytes);
    let remote = open(&nginx.url("/files/z.hf"), quick()).unwrap();
    assert!(remote.header().has_compressed_values());
    let (open_requests, _) = nginx.count_since(0);
    assert!(open_requests <= 2, "open took {open_requests} requests");
    let dictionary = remote
        .header()
        .section(hashfile::format::SectionId::Dictionary);
    let fetches = remote.source().stats().fetches;
    use hashfile::read::Source;
    remote
        .source()
        .read_exact_at(dictionary.offset, dictionary.length as usize)
        .unwrap();
    assert_eq!(
        remote.source().stats().fetches,
        fetches,
        "the dictionary was fetched at open"
    );
    let mut most = 0;
    for i in (0..n).step_by(9_973) {
        let before = nginx.log().len();
        let found = remote.get(format!("key-{i}").as_bytes()).unwrap().unwrap();
        assert_eq!(found.value(), value(i, value_len));
        most = most.max(nginx.count_since(before).0);
    }
    assert!(
        (1..=3).contains(&most),
        "a cold lookup took {most} requests"
    );
    assert_a_batch_takes_one_lookups_round_trips(&remote, n, value_len);
    assert_reads_every_nth_key(&remote, n, 997, value_len);
    remote.verify().unwrap();
}

/// With the index pinned at open, every cold lookup is one request.
#[test]
fn a_prefetched_index_leaves_one_request_per_lookup() {
    let nginx = Nginx::start();
    nginx.publish("s.hf", &store(100_000, VALUE_LEN));
    let remote = open(
        &nginx.url("/files/s.hf"),
        RemoteOptions {
            prefetch_index: true,
            ..quick()
        },
    )
    .unwrap();
    assert!(remote.source().stats().pinned_bytes > 0);
    let opened = nginx.log().len();
    assert!(opened <= 3, "open with the index: {opened} requests");
    for i in (0..100_000u64).step_by(1013) {
        let before = nginx.log().len();
        assert_eq!(
            remote
                .get(format!("key-{i}").as_bytes())
                .unwrap()
                .unwrap()
                .value(),
            value(i, VALUE_LEN)
        );
        assert!(nginx.count_since(before).0 <= 1);
    }
}

/// HTTP/2 without TLS (h2c): a batch's concurrent requests share one
/// connection.
#[test]
fn over_http2_a_batch_shares_one_connection() {
    let nginx = Nginx::start();
    nginx.publish("s.hf", &store(200_000, VALUE_LEN));
    let url = format!("http://127.0.0.1:{}/files/s.hf", nginx.h2_port);
    let options = RemoteOptions {
        http2_prior_knowledge: true,
        cache: hashfile::read::CacheOptions {
            block_len: 4096,
            ..Default::default()
        },
        ..quick()
    };
    let remote = open(&url, options).unwrap();
    let keys: Vec<String> = (0..200u64).map(|i| format!("key-{}", i * 997)).collect();
    let found = remote.get_many(&keys).unwrap();
    assert!(found.iter().all(Option::is_some));
    assert!(
        remote.source().stats().ranges > 200,
        "{:?}",
        remote.source().stats()
    );
    let (requests, connections) = nginx.count_since(0);
    assert!(requests >= 4, "{requests}");
    assert_eq!(connections, 1);
}

/// Over HTTP/1.1 a level's ranges go as multi-range requests (up to 64 a
/// request); a server that answers those with the whole object is asked
/// one range at a time from then on, and the batch is still right.
#[test]
fn a_batch_asks_for_many_ranges_per_request_and_copes_with_a_server_that_refuses() {
    let nginx = Nginx::start();
    nginx.publish("s.hf", &store(200_000, VALUE_LEN));
    let options = RemoteOptions {
        cache: hashfile::read::CacheOptions {
            block_len: 4096,
            ..Default::default()
        },
        ..quick()
    };
    let keys: Vec<String> = (0..200u64).map(|i| format!("key-{}", i * 997)).collect();
    for (path, multi) in [("/files/s.hf", true), ("/single/s.hf", false)] {
        let remote = open(&nginx.url(path), options.clone()).unwrap();
        let before = (nginx.log().len(), remote.source().stats().ranges);
        let found = remote.get_many(&keys).unwrap();
        for (i, record) in (0..200u64).zip(&found) {
            assert_eq!(
                record.as_ref().unwrap().value(),
                value(i * 997, VALUE_LEN),
                "{path}"
            );
        }
        let requests = nginx.log().len() - before.0;
        let ranges = (remote.source().stats().ranges - before.1) as usize;
        if multi {
            assert!(
                requests * 10 < ranges,
                "{path}: {requests} requests for {ranges} ranges"
            );
            assert!(nginx.log().iter().skip(before.0).all(|l| l.2 == 206));
        } else {
            assert!(requests > ranges, "{path}: {requests} requests for {ranges} ranges: one per range, and one for the header after them");
            // The header goes with every request, so the first multi-range
            // request is open's second: the one answered with 200.
            assert_eq!(
                nginx
                    .log()
                    .iter()
                    .filter(|l| l.3 == path && l.2 == 200)
                    .count(),
                1,
                "one multi-range request answered with 200, never read"
            );
        }
    }
}

#[test]
fn statuses_become_errors_of_their_kind() {
    let nginx = Nginx::start();
    nginx.publish("s.hf", &store(100, VALUE_LEN));
    let cases = [
        ("/files/none.hf", RemoteErrorKind::NotFound, "404"),
        ("/missing/s.hf", RemoteErrorKind::NotFound, "404"),
        ("/forbidden/s.hf", RemoteErrorKind::Denied, "403"),
        ("/broken/s.hf", RemoteErrorKind::Server, "500"),
        (
            "/moved/s.hf",
            RemoteErrorKind::Protocol,
            "/files/moved-here.hf",
        ),
        (
            "/whole/s.hf",
            RemoteErrorKind::Protocol,
            "ignored the Range",
        ),
    ];
    for (path, kind, says) in cases {
        let error = open(&nginx.url(path), quick()).map(|_| ()).unwrap_err();
        assert_eq!(kind_of(&error), kind, "{path}: {error}");
        let text = error.to_string();
        assert!(text.contains(says) && text.contains(path), "{path}: {text}");
    }
    // 5xx is retried: 1 + 3 requests.
    let broken = nginx.log().iter().filter(|l| l.3 == "/broken/s.hf").count();
    assert_eq!(broken, 1 + RemoteOptions::DEFAULT_RETRIES as usize);
    let missing = nginx
        .log()
        .iter()
        .filter(|l| l.3 == "/files/none.hf")
        .count();
    assert_eq!(missing, 1, "404 is not retried");
    nginx.publish("empty.hf", b"");
    let error = open(&nginx.url("/files/empty.hf"), quick())
        .map(|_| ())
        .unwrap_err();
    assert_eq!(kind_of(&error), RemoteErrorKind::Protocol, "{error}");
    assert!(error.to_string().contains("empty"), "{error}");
    nginx.publish("text.hf", b"this is not a store at all, just some text");
    let error = open(&nginx.url("/files/text.hf"), quick())
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(error, hashfile::Error::NotAStore { .. }),
        "{error}"
    );
}

/// A store replaced under a reader: the next read that reaches the server
/// fails with Changed; it never returns a value from the new file. What
/// the cache holds is still served (it is of the old file, whole).
#[test]
fn a_replaced_object_is_a_changed_error_never_a_mix() {
    let nginx = Nginx::start();
    nginx.publish("s.hf", &store(50_000, VALUE_LEN));
    let remote = open(&nginx.url("/files/s.hf"), quick()).unwrap();
    assert_eq!(
        remote.get(b"key-1").unwrap().unwrap().value(),
        value(1, VALUE_LEN)
    );
    // Same keys, other values, another length: every byte position differs.
    let mut builder = hashfile::Builder::new(Default::default()).unwrap();
    for i in 0..50_000u64 {
        builder.insert(format!("key-{i}").as_bytes(), format!("new-{i}").as_bytes());
    }
    // nginx's ETag is mtime and length; a second's sleep makes the mtime
    // differ even where the length would not.
    std::thread::sleep(Duration::from_millis(1100));
    nginx.publish("s.hf", &builder.to_bytes().unwrap());
    let mut changed = 0;
    for i in 0..2000u64 {
        match remote.get(format!("key-{i}").as_bytes()) {
            Ok(found) => assert_eq!(
                found.unwrap().value(),
                value(i, VALUE_LEN),
                "key-{i} from the cache is the old value"
            ),
            Err(error) => {
                assert_eq!(kind_of(&error), RemoteErrorKind::Changed, "{error}");
                assert!(error.to_string().contains("replaced"), "{error}");
                changed += 1;
            }
        }
    }
    assert!(changed > 1000, "{changed}");
    assert!(
        nginx.log().iter().any(|l| l.2 == 412),
        "nginx refused the If-Match"
    );
    // A new open reads the new store.
    let reopened = open(&nginx.url("/files/s.hf"), quick()).unwrap();
    assert_eq!(reopened.get(b"key-7").unwrap().unwrap().value(), b"new-7");
}

#[test]
fn reset_connections_are_retried_and_truncated_bodies_fail_cleanly() {
    let nginx = Nginx::start();
    nginx.publish("s.hf", &store(20_000, VALUE_LEN));
    // The first two connections are reset 100 bytes into their answer.
    let proxy = FaultProxy::start(
        nginx.port,
        Faults {
            reset_connections: 2,
            reset_after: 100,
            ..Faults::default()
        },
    );
    let remote = open(&proxy.url("/files/s.hf"), quick()).unwrap();
    for i in 0..100u64 {
        assert_eq!(
            remote
                .get(format!("key-{i}").as_bytes())
                .unwrap()
                .unwrap()
                .value(),
            value(i, VALUE_LEN)
        );
    }
    assert!(proxy.connections.load(std::sync::atomic::Ordering::SeqCst) >= 3);

    // Every connection ends 5,000 bytes into an answer: the 16 KiB first
    // block never arrives whole.
    let proxy = FaultProxy::start(
        nginx.port,
        Faults {
            truncate_after: Some(5000),
            ..Faults::default()
        },
    );
    let error = open(&proxy.url("/files/s.hf"), quick())
        .map(|_| ())
        .unwrap_err();
    assert_eq!(kind_of(&error), RemoteErrorKind::Connection, "{error}");
    assert!(error.to_string().contains("after 3 retries"), "{error}");
}

#[test]
fn a_slow_server_times_out_and_an_interrupt_stops_a_waiting_lookup() {
    let nginx = Nginx::start();
    nginx.publish("s.hf", &store(20_000, VALUE_LEN));
    let proxy = FaultProxy::start(
        nginx.port,
        Faults {
            latency: Duration::from_millis(1500),
            ..Faults::default()
        },
    );
    let options = RemoteOptions {
        timeout: Duration::from_millis(300),
        ..quick()
    };
    let started = Instant::now();
    let error = open(&proxy.url("/files/s.hf"), options)
        .map(|_| ())
        .unwrap_err();
    assert_eq!(kind_of(&error), RemoteErrorKind::Timeout, "{error}");
    assert!(
        started.elapsed() < Duration::from_millis(1400),
        "not retried: {:?}",
        started.elapsed()
    );

    // Opened at full speed; then the relay holds each request 3 s, so a
    // lookup would take 6-9 s if nothing stopped it.
    let proxy = FaultProxy::start(nginx.port, Faults::default());
    let remote = Arc::new(open(&proxy.url("/files/s.hf"), quick()).unwrap());
    proxy.set_latency(Duration::from_secs(3));
    let interrupt = Interrupt::new();
    let firing = Arc::clone(&interrupt);
    let fire = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        firing.fire();
    });
    let started = Instant::now();
    let result = interrupt.during(|| remote.get(b"key-5").map(|r| r.map(|r| r.value().to_vec())));
    fire.join().unwrap();
    let error = result.unwrap_err();
    assert_eq!(kind_of(&error), RemoteErrorKind::Interrupted, "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "stopped promptly: {:?}",
        started.elapsed()
    );
    // The same reader works afterwards, on a new connection.
    proxy.set_latency(Duration::ZERO);
    assert_eq!(
        remote.get(b"key-5").unwrap().unwrap().value(),
        value(5, VALUE_LEN)
    );
}

/// The same keys with values of the same length but other bytes: a store
/// of the same length as `store(n, VALUE_LEN)` whose every value differs.
fn same_length_store(n: u64) -> Vec<u8> {
    let mut builder = hashfile::Builder::new(Default::default()).unwrap();
    for i in 0..n {
        let mut v = value(i, VALUE_LEN);
        v.iter_mut().filter(|b| **b == b'.').for_each(|b| *b = b'#');
        builder.insert(format!("key-{i}").as_bytes(), &v);
    }
    builder.to_bytes().unwrap()
}

/// A store replaced by one of the same length with its modification time
/// kept: nginx's ETag (time and length) and Last-Modified do not change,
/// yet no batch ever mixes the two: the header carried by every request
/// (or fetched after a batch, where the server serves one range per
/// request) differs, and the batch is a Changed error. Also with no ETag.
#[test]
fn a_same_length_replacement_with_its_time_kept_is_never_mixed() {
    let nginx = Nginx::start();
    let n = 50_000;
    let old = store(n, VALUE_LEN);
    let new = same_length_store(n);
    assert_eq!(old.len(), new.len());
    let keys: Vec<String> = (0..1000u64)
        .map(|i| format!("key-{}", i * 37 % n))
        .collect();
    for path in ["/files/s.hf", "/single/s.hf", "/no-etag/s.hf"] {
        nginx.publish("s.hf", &old);
        let remote = open(&nginx.url(path), quick()).unwrap();
        assert!(remote.source().fetcher().checks_header());
        let first = remote.get_many(&keys[..10]).unwrap();
        assert_eq!(first[0].as_ref().unwrap().value(), value(0, VALUE_LEN));
        nginx.publish_keeping_mtime("s.hf", &new);
        let error = remote.get_many(&keys).map(|_| ()).unwrap_err();
        assert_eq!(kind_of(&error), RemoteErrorKind::Changed, "{path}: {error}");
        assert!(
            error.to_string().contains("header differs"),
            "{path}: {error}"
        );
        // Lookup by lookup: each either an old value from the cache or an error.
        for (i, key) in keys.iter().enumerate().step_by(50) {
            match remote.get(key.as_bytes()) {
                Ok(found) => assert_eq!(
                    found.unwrap().value(),
                    value(i as u64 * 37 % n, VALUE_LEN),
                    "{path}: {key}"
                ),
                Err(error) => {
                    assert_eq!(kind_of(&error), RemoteErrorKind::Changed, "{path}: {error}")
                }
            }
        }
        let reopened = open(&nginx.url(path), quick()).unwrap();
        let all = reopened.get_many(&keys).unwrap();
        assert!(
            all.iter()
                .all(|r| r.as_ref().unwrap().value().contains(&b'#')),
            "{path}: the new store, whole"
        );
    }
}

/// A server that claims a body of 10^12 bytes for a 16 KiB range, or sends
/// one without saying how long, is cut off at what was asked for: nothing
/// past that is read, let alone held.
#[test]
fn a_body_longer_than_asked_for_is_cut_off_not_buffered() {
    let announced = Liar::start(
        |_| {
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-16383/100000\r\nContent-Length: 1000000000000\r\n\r\n".to_owned()
        },
        1 << 30,
    );
    let error = open(&announced.url(), quick()).map(|_| ()).unwrap_err();
    assert_eq!(kind_of(&error), RemoteErrorKind::Protocol, "{error}");
    assert!(error.to_string().contains("past the"), "{error}");
    let unannounced = Liar::start(
        |_| {
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-16383/100000\r\nConnection: close\r\n\r\n".to_owned()
        },
        1 << 30,
    );
    let error = open(&unannounced.url(), quick()).map(|_| ()).unwrap_err();
    assert_eq!(kind_of(&error), RemoteErrorKind::Protocol, "{error}");
    std::thread::sleep(Duration::from_millis(200));
    let sent = unannounced.sent.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        sent < 64 << 20,
        "the server got {sent} bytes out before the client hung up"
    );
    // A Content-Range wider than the range asked for.
    let wide = Liar::start(
        |_| {
            "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-999999999999/1000000000000\r\nContent-Length: 1000000000000\r\n\r\n".to_owned()
        },
        1 << 20,
    );
    let error = open(&wide.url(), quick()).map(|_| ()).unwrap_err();
    assert_eq!(kind_of(&error), RemoteErrorKind::Protocol, "{error}");
}

/// A multipart part whose Content-Range is near 2^64 is an error of its
/// kind, not a panic.
#[test]
fn a_multipart_part_near_2_pow_64_is_an_error() {
    let liar = Liar::start(
        |_| {
            let body = "--XB\r\nContent-Range: bytes 0-18446744073709551613/18446744073709551615\r\n\r\nhi\r\n--XB--\r\n";
            format!("HTTP/1.1 206 Partial Content\r\nContent-Type: multipart/byteranges; boundary=XB\r\nContent-Length: {}\r\n\r\n{body}", body.len())
        },
        0,
    );
    let error = open(&liar.url(), quick()).map(|_| ()).unwrap_err();
    assert_eq!(kind_of(&error), RemoteErrorKind::Connection, "{error}");
    assert!(
        error.to_string().contains("ended inside the part"),
        "{error}"
    );
}

/// A server that answers the multi-range requests (the header with the
/// blocks) with one part spanning all of them: such an answer is longer
/// than what was asked and is refused unread, and the reader goes on one
/// range per request, with the header checked after each batch. Every
/// value is right.
#[test]
fn a_server_that_coalesces_ranges_into_one_span_is_read_one_range_at_a_time() {
    let n = 20_000;
    let server = Coalescing::start(store(n, VALUE_LEN));
    let remote = open(&server.url(), quick()).unwrap();
    assert_reads_every_nth_key(&remote, n, 97, VALUE_LEN);
    let keys: Vec<String> = (0..500u64).map(|i| format!("key-{}", i * 37 % n)).collect();
    for (i, record) in (0..500u64).zip(remote.get_many(&keys).unwrap()) {
        assert_eq!(record.unwrap().value(), value(i * 37 % n, VALUE_LEN));
    }
}

/// A small whole object (a dataset's manifest): one request up to 64 KiB,
/// the rest in a second; past the limit an error, with nothing more
/// fetched.
#[test]
fn a_whole_object_is_fetched_up_to_a_limit() {
    let nginx = Nginx::start();
    let big: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
    nginx.publish("big.bin", &big);
    nginx.publish("small.bin", b"{\"hashfile_dataset\": 1}");
    let url = nginx.url("/files/big.bin");
    assert_eq!(
        hashfile_remote::fetch_whole(&url, quick(), 1 << 20).unwrap(),
        big
    );
    assert_eq!(
        hashfile_remote::fetch_whole(&nginx.url("/files/small.bin"), quick(), 1 << 20).unwrap(),
        b"{\"hashfile_dataset\": 1}"
    );
    let error = hashfile_remote::fetch_whole(&url, quick(), 100_000).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("200000 bytes, more than the 100000 expected"),
        "{error}"
    );
}
