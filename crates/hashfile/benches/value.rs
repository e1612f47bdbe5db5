//! Decoding typed values: a walk over every item of a small nested value
//! with `Cursor::next_item`, as a binding's decoder makes it (the Ruby and
//! Python decoders build their objects on top of this walk), and
//! `Value::decode` into the Rust tree. The values are the app-server
//! benchmark's tenant (bench/app_server) and bench/typed.rb's 20-field
//! service setting. `cargo bench -p hashfile --bench value`.
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hashfile::value::{Cursor, Item, Value};

fn s(text: &str) -> Value {
    Value::str(text)
}

fn map(pairs: Vec<(&str, Value)>) -> Value {
    Value::Map(pairs.into_iter().map(|(k, v)| (s(k), v)).collect())
}

fn tenant() -> Value {
    map(vec![
        ("plan", s("pro")),
        ("region", s("eu-1")),
        (
            "limits",
            map(vec![
                ("api", Value::Int(4711)),
                ("burst", Value::Int(250)),
                ("seats", Value::Int(17)),
            ]),
        ),
        (
            "flags",
            map(vec![
                ("checkout", Value::Bool(true)),
                ("beta", Value::Bool(false)),
                ("new_ui", Value::Bool(true)),
            ]),
        ),
        ("name", s("Tenant 123456")),
    ])
}

fn service() -> Value {
    let strings = |list: &[&str]| Value::Array(list.iter().map(|t| s(t)).collect());
    map(vec![
        ("name", s("checkout-service")),
        ("enabled", Value::Bool(true)),
        ("max_connections", Value::Int(50)),
        ("ratio", Value::Float(0.75)),
        ("timeout_ms", Value::Int(2500)),
        ("retries", Value::Int(3)),
        (
            "regions",
            strings(&["eu-west-1", "us-east-1", "ap-south-1"]),
        ),
        ("owner", s("payments-team")),
        ("tier", s("gold")),
        ("beta", Value::Bool(false)),
        ("weight", Value::Float(12.5)),
        ("created_at", s("2026-11-01T12:00:00Z")),
        ("version", Value::Int(42)),
        ("fallback", Value::Nil),
        (
            "limits",
            map(vec![
                ("api", Value::Int(100)),
                ("burst", Value::Int(250)),
                ("window_s", Value::Int(60)),
                ("per_user", Value::Bool(true)),
            ]),
        ),
        ("tags", strings(&["critical", "pci"])),
        (
            "description",
            s("Handles the checkout flow for all storefronts"),
        ),
        ("owners", strings(&["alice", "bob"])),
        ("threshold", Value::Float(0.995)),
        ("region_count", Value::Int(3)),
    ])
}

/// Visits `count` items and everything inside them, returning the number
/// of items and string bytes seen, so that nothing is optimized away.
fn walk(cursor: &mut Cursor<'_>, count: u64) -> usize {
    let mut seen = 0;
    for _ in 0..count {
        seen += 1;
        match cursor.next_item() {
            Ok(Item::Str(bytes, _)) => seen += bytes.len(),
            Ok(Item::Map(c)) => seen += walk(&mut c.cursor(), c.len * 2),
            Ok(Item::Array(c)) => seen += walk(&mut c.cursor(), c.len),
            Ok(_) => {}
            Err(e) => panic!("a value encoded here decodes: {e}"),
        }
    }
    seen
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode");
    for (name, value) in [("tenant", tenant()), ("service", service())] {
        let mut bytes = Vec::new();
        value.encode(&mut bytes).expect("encodes");
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(format!("next_item walk/{name}"), |b| {
            b.iter(|| walk(&mut Cursor::new(black_box(&bytes)), 1))
        });
        group.bench_function(format!("Value::decode/{name}"), |b| {
            b.iter(|| Value::decode(black_box(&bytes)).expect("decodes"))
        });
    }
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
