//! Times the phases of `pipeline::build_from`, the path `hashfile build`
//! takes, with the default options:
//! `cargo run --release --example phases -p hashfile -- IN.jsonl OUT.hf [MEMORY]`
//! (MEMORY as `--memory` takes it: `64M`, `auto`); `INDEX=compact` builds
//! the compact index.
use hashfile::import::{ImportOptions, InputFormat};
use hashfile::pipeline::{build_from, Input, Phase};
use hashfile::BuildOptions;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let input = Input::new(
        &args[1],
        Some(InputFormat::JsonLines),
        &ImportOptions::new(InputFormat::JsonLines),
    )
    .unwrap();
    let t = Instant::now();
    let mut last = (Phase::Reading, 0.0);
    let summary = build_from(
        &[input],
        args[2].as_ref(),
        BuildOptions {
            memory: hashfile::MemoryLimit::parse(args.get(3).map_or("auto", |m| m.as_str()))
                .unwrap(),
            ..BuildOptions::for_index(
                hashfile::IndexKind::parse(&std::env::var("INDEX").unwrap_or("classic".into()))
                    .unwrap(),
            )
        },
        &hashfile::CancelFlag::new(),
        &mut |p| {
            if p.phase != last.0 {
                let now = t.elapsed().as_secs_f64();
                println!("{:?}: {:.3} s", last.0, now - last.1);
                last = (p.phase, now);
            }
            Ok(())
        },
    )
    .unwrap();
    let now = t.elapsed().as_secs_f64();
    println!("{:?}: {:.3} s", last.0, now - last.1);
    println!(
        "total {:.3} s for {} entries, {} bytes",
        now, summary.entries, summary.file_bytes
    );
    let store = hashfile::Reader::open(&args[2]).unwrap();
    println!(
        "{} parts, {:.3} bits/key for the perfect hash",
        store.header().geometry.part_count,
        store.info().mphf_bits_per_key
    );
}
