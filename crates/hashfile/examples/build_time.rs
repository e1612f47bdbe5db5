//! Times the phases of a build: `cargo run --release --example build_time
//! -p hashfile -- 10000000` for N random keys, or `-- FILE.jsonl` to time
//! importing a real input too. A second argument sets `keys_per_part`;
//! `INDEX=compact` builds the compact index.
use hashfile::import::{self, ImportOptions, InputFormat};
use hashfile::{BuildOptions, Builder};
use std::time::Instant;

mod support;

fn main() {
    let arg = std::env::args().nth(1).unwrap_or_else(|| "10000000".into());
    let t = Instant::now();
    let index = std::env::var("INDEX").unwrap_or_else(|_| "classic".into());
    let mut options = BuildOptions::for_index(hashfile::IndexKind::parse(&index).unwrap());
    if let Some(k) = std::env::args().nth(2) {
        options.keys_per_part = k.parse().unwrap();
    }
    let mut b = Builder::new(options).unwrap();
    if let Ok(n) = arg.parse::<usize>() {
        let mut random = support::XorShift::default();
        for i in 0..n {
            let state = random.next_u64();
            let key = format!("{:08x}{i}", state as u32);
            b.insert(key.as_bytes(), &state.to_le_bytes());
        }
    } else {
        let file = std::fs::File::open(&arg).unwrap();
        b.reserve(file.metadata().unwrap().len() as usize);
        let options = ImportOptions::new(InputFormat::from_extension(arg.as_ref()).unwrap());
        if options.format == InputFormat::JsonLines {
            import::import_json_lines_parallel(
                file,
                &arg,
                &options,
                import::JSON_LINES_CHUNK,
                &hashfile::Batch::new(),
                &mut |batch, _| {
                    b.append(batch);
                    Ok(())
                },
            )
            .unwrap();
        } else {
            import::import(file, &arg, &options, &mut |entry, _| {
                b.insert_record(entry);
                Ok(())
            })
            .unwrap();
        }
    }
    println!("insert {}: {:.2} s", b.len(), t.elapsed().as_secs_f64());
    let t = Instant::now();
    let bytes = b.to_bytes().unwrap();
    println!(
        "build + write {} bytes: {:.2} s",
        bytes.len(),
        t.elapsed().as_secs_f64()
    );
    let reader = hashfile::Reader::new(bytes).unwrap();
    println!(
        "{} parts, {:.3} bits/key for the perfect hash",
        reader.header().geometry.part_count,
        reader.info().mphf_bits_per_key
    );
}
