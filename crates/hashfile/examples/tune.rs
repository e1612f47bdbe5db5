//! Prints hash-function size and build time for a grid of build options,
//! on random 8-character keys: `cargo run --release --example tune -- 100000`.
use hashfile::{BuildOptions, Builder, Reader};
use std::time::Instant;

mod support;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let mut random = support::XorShift::default();
    let keys: Vec<Vec<u8>> = (0..n).map(|_| random.word(8)).collect();
    println!(
        "{:>6} {:>6} {:>6} {:>6} {:>8} {:>8} {:>10}",
        "lambda", "alpha", "block", "skew", "mphf", "seeds", "build ms"
    );
    for &block in &[32u32, 128] {
        for &lambda in &[3.0, 3.5, 4.0, 4.5, 5.0] {
            for &alpha in &[0.97, 0.99, 0.995] {
                for &skew in &[true, false] {
                    let options = BuildOptions {
                        keys_per_bucket: lambda,
                        load_factor: alpha,
                        seed_block_len: block,
                        dense_key_fraction: if skew { 0.6 } else { 0.3 },
                        ..Default::default()
                    };
                    let mut b = Builder::new(options).unwrap();
                    for k in &keys {
                        b.insert(k, b"");
                    }
                    let t = Instant::now();
                    let bytes = match b.to_bytes() {
                        Ok(b) => b,
                        Err(e) => {
                            println!("{lambda} {alpha} {block} {skew}: {e}");
                            continue;
                        }
                    };
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    let info = Reader::new(bytes).unwrap().info();
                    println!(
                        "{lambda:>6} {alpha:>6} {block:>6} {skew:>6} {:>8.3} {:>8.3} {ms:>10.1}",
                        info.mphf_bits_per_key, info.seed_bits_per_key
                    );
                }
            }
        }
    }
}
