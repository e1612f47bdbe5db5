//! Random lookups of the keys `examples/pairs` writes, in a store of N of
//! them: `cargo run --release --example lookups -p hashfile -- OUT.hf N [LOOKUPS]`.
//! Prints ns per lookup (each key hashed, found, its stored key compared,
//! its value read), after a warm-up pass of the same count.
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let store = hashfile::Reader::open(&args[1]).expect("a store");
    let n: u64 = args[2].replace('_', "").parse().expect("N");
    let lookups: u64 = args
        .get(3)
        .map_or(2_000_000, |a| a.replace('_', "").parse().expect("LOOKUPS"));
    // The keys, drawn before timing (xorshift, fixed seed).
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let keys: Vec<String> = (0..lookups)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            format!("key{:010}", x % n)
        })
        .collect();
    let run = || {
        let start = Instant::now();
        let mut bytes = 0usize;
        for key in &keys {
            bytes += store
                .get(key.as_bytes())
                .unwrap()
                .expect("every key is there")
                .value()
                .len();
        }
        assert_eq!(bytes, keys.len() * 12);
        start.elapsed().as_nanos() as f64 / keys.len() as f64
    };
    let cold = run();
    let warm = run();
    println!("{lookups} random lookups in {n} keys: {cold:.0} ns first pass, {warm:.0} ns second");
}
