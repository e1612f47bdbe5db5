//! Times the phases of a build of N random 8-byte keys:
//! `cargo run --release --example build_time -p hashfile -- 10000000`.
use hashfile::{BuildOptions, Builder};
use std::time::Instant;

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10_000_000);
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let t = Instant::now();
    let mut b = Builder::new(BuildOptions::default()).unwrap();
    for i in 0..n {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let key = format!("{:08x}{i}", state as u32);
        b.insert(key.as_bytes(), &state.to_le_bytes());
    }
    println!("insert {n}: {:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let len = b.write_to(std::io::sink()).unwrap();
    println!("build + write {len} bytes: {:.2} s", t.elapsed().as_secs_f64());
}
