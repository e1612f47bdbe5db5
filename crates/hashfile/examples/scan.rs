//! Reads every record of a store in order, as `each` and `dump` do:
//! `cargo run --release --example scan -p hashfile -- STORE [LIMIT]`.
//! Prints records and MB/s; with LIMIT, stops after that many records.
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let store = hashfile::Reader::open(&args[1]).expect("a store");
    let limit: u64 = args
        .get(2)
        .map_or(u64::MAX, |a| a.replace('_', "").parse().expect("LIMIT"));
    let start = Instant::now();
    let (mut records, mut bytes) = (0u64, 0u64);
    for record in store.iter() {
        let record = record.expect("a good record");
        bytes += (record.key().len() + record.value().len()) as u64;
        records += 1;
        if records >= limit {
            break;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{records} records, {:.1} MB of keys and values in {seconds:.2} s: {:.0} MB/s",
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / seconds
    );
}
