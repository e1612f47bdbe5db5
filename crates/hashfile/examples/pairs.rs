//! Writes N string pairs as JSON Lines to standard output, for the scale
//! benchmark (bench/scale/run.rb): `{"key":"key0000000042","value":"v…"}`,
//! keys in order, 11-digit values scattered by a multiplicative hash.
//! `cargo run --release --example pairs -p hashfile -- 1000000000 | hashfile build - --format jsonl -o out.hf`
use std::io::Write;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.replace('_', "").parse().ok())
        .expect("usage: pairs N");
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    for i in 0..n {
        let value = i.wrapping_mul(2_654_435_761) % 100_000_000_000;
        if writeln!(out, r#"{{"key":"key{i:010}","value":"v{value:011}"}}"#).is_err() {
            return; // the reader went away
        }
    }
    let _ = out.flush();
}
