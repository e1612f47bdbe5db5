//! The routing vectors: `tests/vectors/routing.tsv` pins which shard every
//! listed key goes to, for several shard counts, so that no release (and no
//! other language: the Ruby suite reads the same file) ever routes a key
//! elsewhere. `UPDATE_ROUTING_VECTORS=1` writes the file from this code; it
//! is done once, when the routing is defined, never to make a test pass.

use std::num::NonZeroU32;

use hashfile::dataset::shard_of;

const COUNTS: [u32; 7] = [1, 2, 3, 4, 16, 1000, 1 << 20];
const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/routing.tsv");

/// The keys, as bytes: empty, ASCII, UTF-8, binary, one per length class of
/// XXH3 (1-3, 4-8, 9-16, 17-128, 129-240, longer).
fn keys() -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"a".to_vec(),
        b"abc".to_vec(),
        b"key1".to_vec(),
        b"tenant:42".to_vec(),
        b"feature.checkout.enabled".to_vec(),
        "clé ✓".as_bytes().to_vec(),
        vec![0xff, 0x00, 0x80],
        vec![0u8; 16],
    ];
    keys.extend((0..20).map(|i| format!("key-{i}").into_bytes()));
    keys.push(b"x".repeat(200));
    keys.push((0..1000u32).map(|i| (i % 251) as u8).collect());
    keys
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn table() -> String {
    let mut out = format!(
        "# key (hex)\t{}\n",
        COUNTS.map(|n| n.to_string()).join("\t")
    );
    for key in keys() {
        let shards = COUNTS.map(|n| shard_of(&key, NonZeroU32::new(n).unwrap()).to_string());
        out += &format!("{}\t{}\n", hex(&key), shards.join("\t"));
    }
    out
}

#[test]
fn keys_route_to_the_shards_the_vectors_pin() {
    if std::env::var("UPDATE_ROUTING_VECTORS").as_deref() == Ok("1") {
        std::fs::write(VECTORS, table()).unwrap();
    }
    let pinned = std::fs::read_to_string(VECTORS).expect("tests/vectors/routing.tsv");
    assert_eq!(
        pinned,
        table(),
        "a key routes to another shard than the vectors say"
    );
}
