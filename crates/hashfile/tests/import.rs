//! Every importer: unicode, empty strings, a 10 MB value, duplicates under
//! each policy, and malformed input that names its position.
use hashfile::import::{find_key, import, Column, ImportOptions, InputFormat};
use hashfile::value::Value;
use hashfile::{BuildOptions, Builder, Error, OnDuplicate, Position, Reader, ValueKind};

/// Imported entries: key, value and kind.
type Entries = Vec<(Vec<u8>, Vec<u8>, ValueKind)>;

fn read(format: InputFormat, input: &[u8]) -> hashfile::Result<Entries> {
    read_with(ImportOptions::new(format), input)
}

fn read_with(options: ImportOptions, input: &[u8]) -> hashfile::Result<Entries> {
    let mut out = Vec::new();
    import(input, "input", &options, &mut |e, _| {
        out.push((e.key.to_vec(), e.value.to_vec(), e.kind));
        Ok(())
    })?;
    Ok(out)
}

fn pairs(entries: &[(Vec<u8>, Vec<u8>, ValueKind)]) -> Vec<(&str, &str)> {
    entries
        .iter()
        .map(|(k, v, _)| {
            (
                std::str::from_utf8(k).unwrap(),
                std::str::from_utf8(v).unwrap(),
            )
        })
        .collect()
}

fn msgpack_map(entries: &[(&[u8], &[u8], bool)]) -> Vec<u8> {
    let mut out = Vec::new();
    rmp::encode::write_map_len(&mut out, entries.len() as u32).unwrap();
    for (k, v, bin) in entries {
        rmp::encode::write_str_len(&mut out, k.len() as u32).unwrap();
        out.extend_from_slice(k);
        if *bin {
            rmp::encode::write_bin(&mut out, v).unwrap();
        } else {
            rmp::encode::write_str_len(&mut out, v.len() as u32).unwrap();
            out.extend_from_slice(v);
        }
    }
    out
}

const EXPECTED: [(&str, &str); 3] = [("clé", "välue ✓"), ("", "empty key"), ("empty value", "")];

#[test]
fn every_format_reads_unicode_and_empty_strings() {
    let inputs: Vec<(InputFormat, Vec<u8>)> = vec![
        (InputFormat::JsonObject, r#"{"clé": "välue ✓", "": "empty key", "empty value": ""}"#.into()),
        (InputFormat::JsonObject, "[[\"clé\", \"välue \\u2713\"], [\"\", \"empty key\"], [\"empty value\", \"\"]]".into()),
        (InputFormat::JsonPairs, r#"[["clé", "välue ✓"], ["", "empty key"], ["empty value", ""]]"#.into()),
        (InputFormat::JsonLines, "[\"clé\", \"välue ✓\"]\n\n{\"key\": \"\", \"value\": \"empty key\", \"other\": [1]}\r\n[\"empty value\", \"\"]".into()),
        (InputFormat::Csv, "k,v\nclé,välue ✓\n\"\",empty key\nempty value,\"\"\n".into()),
        (InputFormat::Tsv, "k\tv\nclé\tvälue ✓\n\"\"\tempty key\nempty value\t\n".into()),
        (InputFormat::MessagePack, msgpack_map(&[("clé".as_bytes(), "välue ✓".as_bytes(), false), (b"", b"empty key", false), (b"empty value", b"", false)])),
        (InputFormat::Yaml, "clé: välue ✓\n\"\": empty key\nempty value: \"\"\n".into()),
    ];
    for (format, input) in inputs {
        let got = read(format, &input).unwrap_or_else(|e| panic!("{format:?}: {e}"));
        assert_eq!(pairs(&got), EXPECTED, "{format:?}");
        assert!(
            got.iter().all(|(_, _, kind)| *kind == ValueKind::Utf8),
            "{format:?}"
        );
    }
}

#[test]
fn a_10_mb_value() {
    let big = "x".repeat(10 << 20);
    for (format, input) in [
        (
            InputFormat::JsonObject,
            format!("{{\"big\": \"{big}\"}}").into_bytes(),
        ),
        (
            InputFormat::JsonLines,
            format!("[\"big\", \"{big}\"]\n").into_bytes(),
        ),
        (InputFormat::Csv, format!("big,{big}\n").into_bytes()),
        (
            InputFormat::MessagePack,
            msgpack_map(&[(b"big", big.as_bytes(), false)]),
        ),
    ] {
        let mut options = ImportOptions::new(format);
        options.header = false;
        let got = read_with(options, &input).unwrap();
        assert_eq!(got.len(), 1, "{format:?}");
        assert_eq!(got[0].1.len(), 10 << 20, "{format:?}");
    }
}

#[test]
fn binary_values_are_kept_as_binary() {
    let got = read(
        InputFormat::MessagePack,
        &msgpack_map(&[(b"k", b"\xff\x00", true), (b"t", b"text", true)]),
    )
    .unwrap();
    assert_eq!(
        got[0],
        (b"k".to_vec(), b"\xff\x00".to_vec(), ValueKind::Binary)
    );
    assert_eq!(
        got[1].2,
        ValueKind::Binary,
        "MessagePack bin stays binary even if it is valid UTF-8"
    );
    let mut options = ImportOptions::new(InputFormat::Csv);
    options.header = false;
    let got = read_with(options, b"k,\xff\xfe\n").unwrap();
    assert_eq!(got[0].2, ValueKind::Binary);
}

#[test]
fn csv_columns_by_name_and_index() {
    let input = b"id,name,colour\n1,apple,red\n2,\"banana, ripe\",\"yel\"\"low\"\n";
    let mut options = ImportOptions::new(InputFormat::Csv);
    options.key_column = Column::parse("name");
    options.value_column = Column::parse("2");
    assert_eq!(
        pairs(&read_with(options.clone(), input).unwrap()),
        [("apple", "red"), ("banana, ripe", "yel\"low")]
    );
    options.value_column = Column::parse("weight");
    match read_with(options, input).unwrap_err() {
        Error::Parse { position, what, .. } => assert_eq!((position, what.as_str()), (Position::line(1), "no value column named \"weight\"; the header row names \"id\", \"name\", \"colour\"")),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn jsonl_field_names_are_selectable() {
    let mut options = ImportOptions::new(InputFormat::JsonLines);
    options.key_field = "id".into();
    options.value_field = "name".into();
    assert_eq!(
        pairs(&read_with(options, b"{\"id\": \"1\", \"name\": \"one\"}\n").unwrap()),
        [("1", "one")]
    );
}

#[test]
fn malformed_input_names_its_position() {
    let at = |line, column| Position::Line {
        line,
        column: Some(column),
    };
    let cases: Vec<(InputFormat, &[u8], Position, &str)> = vec![
        (InputFormat::JsonObject, b"{\"a\": \"1\",\n \"b\": [1, 2}", at(2, 12), "expected `,` or `]`"),
        (InputFormat::JsonObject, b"{\"a\": \"1\",\n \"b\" \"2\"}", at(2, 6), "expected `:`"),
        (InputFormat::JsonObject, b"{\"a\": \"1\"} extra", at(1, 12), "trailing characters"),
        (InputFormat::JsonPairs, b"[[\"a\", \"1\"], [\"b\"]]", at(1, 18), "invalid length 1, expected a [key, value] pair"),
        (InputFormat::JsonLines, b"[\"a\", \"1\"]\n[\"b\", tru]\n", at(2, 10), "expected ident"),
        (InputFormat::JsonLines, b"[\"a\", \"1\"]\n{\"value\": \"x\"}\n", at(2, 14), "missing field \"key\""),
        (InputFormat::JsonLines, b"[\"a\", \"1\"]\n[\"b\", \"1\"\n", at(2, 9), "EOF while parsing a list"),
        (InputFormat::Csv, b"k,v\na,1\nb\n", Position::line(3), "the row has 1 field, too few for the value column 1 (0-based), field 2 of the row"),
        // Strict RFC 4180, each at the line and column of the problem; CR LF
        // lines count as one line each.
        (InputFormat::Tsv, b"k\tv\na\t\"unbalanced\nb\tx\nc\ty\n", at(2, 3), "unclosed quoted field"),
        (InputFormat::Csv, b"k,v\r\na,1\r\nb,\"bad\"x\r\n", at(3, 8), "'x' after the closing quote of a field"),
        (InputFormat::Csv, b"k,v\r\na,a\"b\r\n", at(2, 4), "a quote inside an unquoted field"),
        (InputFormat::Csv, "k,v\nclé,\"6\" screen\n".as_bytes(), at(2, 8), "a space after the closing quote of a field"),
        (InputFormat::Csv, b"k,v\na,1\rb,2\n", at(2, 4), "a carriage return (CR) that does not end a line"),
        (InputFormat::Csv, b"k,v\na,\"x\ny\"\nb,\"z\n", at(4, 3), "unclosed quoted field"),
        (InputFormat::MessagePack, &[0x81, 0xa1, b'a', 0x01, 0x81, 0xa1, b'b', 0x02], Position::Unknown, "extra bytes after the top-level map (1 entry)"),
        (InputFormat::MessagePack, &[0x80, 0x00], Position::Unknown, "extra bytes after the top-level map (0 entries)"),
        // Not UTF-8, named as what it is.
        (InputFormat::JsonObject, &[0xFF, 0xFE, b'{', 0, b'}', 0], Position::line(1), "the input is UTF-16LE text; hashfile reads UTF-8"),
        (InputFormat::JsonObject, &[0, b'{', 0, b'}'], Position::line(1), "the input is UTF-16BE text"),
        (InputFormat::Yaml, &[0, 0, 0xFE, 0xFF, 0, 0, 0, b'a'], Position::line(1), "the input is UTF-32BE text"),
        (InputFormat::Csv, &[b'k', 0, b',', 0, b'v', 0], Position::line(1), "the input is UTF-16LE text"),
        (InputFormat::MessagePack, &[0x81, 0xa1, b'a', 0xd4, 0x01, 0x00], Position::Entry(1), "value for key \"a\": MessagePack extension type 1 is not supported"),
        (InputFormat::MessagePack, &[0x81, 0xa1, b'a', 0x92, 0x01], Position::Entry(1), "value for key \"a\": unexpected end of input"),
        (InputFormat::MessagePack, &[0x92], Position::Unknown, "expected a map at the top level"),
        (InputFormat::Yaml, b"a: '1'\nb: [1, 2\n", at(3, 1), "while parsing a flow sequence"),
        (InputFormat::Yaml, b"- a\n- b\n", at(1, 1), "expected a mapping at the top level"),
        (InputFormat::Yaml, b"a: 1\nwhen: 2024-01-31\n", at(2, 7), "value for key \"when\": \"2024-01-31\" is a date, which YAML.safe_load refuses; quote it"),
        (InputFormat::Yaml, b"a: !ruby/object:Foo {}\n", at(1, 21), "value for key \"a\" has tag !ruby/object:Foo, a Ruby object, which YAML.safe_load refuses"),
        (InputFormat::Yaml, b"a: !ruby/regexp /x/\n", at(1, 17), "value for key \"a\": \"/x/\" has tag !ruby/regexp, a Ruby object"),
        (InputFormat::Yaml, b"a: !!set\n  ? x\n", at(2, 3), "value for key \"a\" has tag !!set, a Psych::Set"),
        (InputFormat::Yaml, b"a: !!timestamp 2020-01-01\n", at(1, 16), "value for key \"a\": \"2020-01-01\" has tag !!timestamp, a date or time"),
        (InputFormat::Yaml, b"a: !!omap\n  - b: 1\n  - 2\n", at(2, 3), "value for key \"a\" is an !!omap whose entries are not all mappings of one pair"),
        (InputFormat::Yaml, b"a: 1\n---\nb: 2\n", at(2, 1), "more than one YAML document"),
    ];
    for (format, input, expected_position, expected_what) in cases {
        match read(format, input).unwrap_err() {
            Error::Parse {
                input,
                position,
                what,
            } => {
                assert_eq!(
                    (input.as_str(), position),
                    ("input", expected_position),
                    "{format:?}: {what}"
                );
                assert!(
                    what.starts_with(expected_what),
                    "{format:?}: got {what:?}, want {expected_what:?}"
                );
            }
            other => panic!("{format:?}: expected a parse error, got {other:?}"),
        }
    }
}

fn build(options: BuildOptions, input: &[u8]) -> hashfile::Result<Reader<Vec<u8>>> {
    let mut builder = Builder::new(options)?;
    import(
        input,
        "input",
        &ImportOptions::new(InputFormat::JsonLines),
        &mut |e, _| {
            builder.insert_record(e);
            Ok(())
        },
    )?;
    Reader::new(builder.to_bytes()?)
}

#[test]
fn duplicate_policies() {
    let input = b"[\"a\", \"1\"]\n[\"b\", \"2\"]\n[\"a\", \"3\"]\n[\"c\", \"4\"]\n[\"a\", \"5\"]\n";
    let err = build(BuildOptions::default(), input).expect_err("default policy is error");
    assert!(matches!(err, Error::DuplicateKey { ref key, .. } if key == b"a"));
    let positions = find_key(
        &input[..],
        "input",
        &ImportOptions::new(InputFormat::JsonLines),
        b"a",
    )
    .unwrap();
    assert_eq!(positions, [Position::line(1), Position::line(3)]);

    let listed = |store: &Reader<Vec<u8>>| {
        store
            .iter()
            .map(|r| {
                let r = r.unwrap();
                (
                    String::from_utf8(r.key().to_vec()).unwrap(),
                    String::from_utf8(r.value().to_vec()).unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    let first = build(
        BuildOptions {
            on_duplicate: OnDuplicate::First,
            ..Default::default()
        },
        input,
    )
    .unwrap();
    assert_eq!(
        listed(&first),
        [
            ("a".into(), "1".into()),
            ("b".into(), "2".into()),
            ("c".into(), "4".into())
        ]
    );
    let last = build(
        BuildOptions {
            on_duplicate: OnDuplicate::Last,
            ..Default::default()
        },
        input,
    )
    .unwrap();
    assert_eq!(
        listed(&last),
        [
            ("b".into(), "2".into()),
            ("c".into(), "4".into()),
            ("a".into(), "5".into())
        ]
    );
    last.verify().unwrap();
    assert_eq!(last.get(b"a").unwrap().unwrap().value(), b"5");
}

/// `Merge` deep-merges maps across inputs in input order, as I18n merges
/// locale files; a non-map later value replaces; the entry keeps its first
/// position; keys that do not repeat are untouched.
#[test]
fn merge_policy_deep_merges_maps_in_input_order() {
    let files: [&[u8]; 3] = [
        b"en:\n  greeting: hi\n  date:\n    formats:\n      short: '%b %d'\n    order: [day, month]\nfr:\n  greeting: salut\nplain: one\n",
        b"en:\n  date:\n    formats:\n      long: '%B %d, %Y'\n    order: replaced\n  bye: ciao\nplain: two\n",
        b"solo: 1\nplain: {now: a map}\nen:\n  greeting: hello\nfr:\n",
    ];
    let mut builder = Builder::new(BuildOptions {
        on_duplicate: OnDuplicate::Merge,
        ..Default::default()
    })
    .unwrap();
    for file in files {
        import(
            file,
            "input",
            &ImportOptions::new(InputFormat::Yaml),
            &mut |record, _| {
                builder.insert_record(record);
                Ok(())
            },
        )
        .unwrap();
    }
    let store = Reader::new(builder.to_bytes().unwrap()).unwrap();
    store.verify().unwrap();
    let keys: Vec<Vec<u8>> = store.iter().map(|r| r.unwrap().key().to_vec()).collect();
    assert_eq!(keys, [&b"en"[..], b"fr", b"plain", b"solo"]);
    let value = |key: &[u8]| {
        let record = store.get(key).unwrap().unwrap();
        Value::of_record(&hashfile::Record {
            key,
            key_utf8: true,
            value: record.value(),
            kind: record.kind(),
        })
        .unwrap()
    };
    let s = Value::str;
    let map =
        |pairs: Vec<(&str, Value)>| Value::Map(pairs.into_iter().map(|(k, v)| (s(k), v)).collect());
    assert_eq!(
        value(b"en"),
        map(vec![
            ("greeting", s("hello")),
            (
                "date",
                map(vec![
                    (
                        "formats",
                        map(vec![("short", s("%b %d")), ("long", s("%B %d, %Y"))])
                    ),
                    ("order", s("replaced"))
                ])
            ),
            ("bye", s("ciao")),
        ])
    );
    // `fr:` with nothing under it (nil) changes nothing, as in I18n.
    assert_eq!(value(b"fr"), map(vec![("greeting", s("salut"))]));
    // A string, then a string, then a map: each later value replaces.
    assert_eq!(value(b"plain"), map(vec![("now", s("a map"))]));
    assert_eq!(value(b"solo"), Value::Int(1));
}

#[test]
fn formats_by_name_and_extension() {
    for (name, format) in InputFormat::NAMES {
        assert_eq!(InputFormat::from_name(name), Some(format));
        assert_eq!(format.name(), name);
    }
    for (path, format) in [
        ("a.json", InputFormat::JsonObject),
        ("a.JSONL", InputFormat::JsonLines),
        ("a.ndjson", InputFormat::JsonLines),
        ("a.csv", InputFormat::Csv),
        ("a.tsv", InputFormat::Tsv),
        ("a.msgpack", InputFormat::MessagePack),
        ("a.yml", InputFormat::Yaml),
    ] {
        assert_eq!(
            InputFormat::from_extension(std::path::Path::new(path)),
            Some(format),
            "{path}"
        );
    }
    assert_eq!(
        InputFormat::from_extension(std::path::Path::new("a.txt")),
        None
    );
}

#[test]
fn output_is_identical_whatever_the_thread_count() {
    let build = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| {
                let mut builder = Builder::new(BuildOptions {
                    on_duplicate: OnDuplicate::Last,
                    ..Default::default()
                })
                .unwrap();
                for i in 0..200_000u32 {
                    builder.insert(format!("key{}", i % 150_000).as_bytes(), &i.to_le_bytes());
                }
                builder.to_bytes().unwrap()
            })
    };
    let one = build(1);
    assert_eq!(one, build(2));
    assert_eq!(one, build(4));
}

/// JSON Lines of every shape: the fast `["k","v"]` form, escapes, raw
/// unicode, empty strings, objects, typed values, blank lines, CR LF,
/// padding, a line longer than the chunks, and no newline at the end.
fn mixed_json_lines() -> Vec<u8> {
    let mut text = String::new();
    for i in 0..300 {
        match i % 10 {
            0 => text.push_str(&format!("[\"k{i}\",\"v{i}\"]\n")),
            1 => text.push_str(&format!("[\"k{i} \\\"q\\\" \\u00e9\",\"tab\\tv\"]\r\n")),
            2 => text.push_str(&format!("[\"clé{i}\",\"välue ✓\"]\n\n")),
            3 => text.push_str(&format!(
                "{{\"key\": \"k{i}\", \"value\": \"\", \"other\": [1]}}\n"
            )),
            4 => text.push_str(&format!(
                "  [\"k{i}\", {{\"n\": {i}, \"f\": 1.5, \"a\": [null, true]}}]  \n"
            )),
            5 => text.push_str(&format!("[\"k{i}\",\"{}\"]\n", "x".repeat(5_000))),
            6 if i == 6 => text.push_str("[\"\",\"empty key\"]\n"),
            6 => text.push_str(&format!("[\"k{i}\",\"\"]\n")),
            _ => text.push_str(&format!("[\"k{i}\",\"{}\"]\n", i * 7)),
        }
    }
    text.push_str("[\"last\",\"no newline\"]");
    text.into_bytes()
}

/// A reader that hands out at most `most` bytes a read, as a pipe may.
struct Trickle<'a> {
    text: &'a [u8],
    most: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.most).min(self.text.len());
        buf[..n].copy_from_slice(&self.text[..n]);
        self.text = &self.text[n..];
        Ok(n)
    }
}

fn parallel_build(text: &[u8], chunk: usize, threads: usize) -> hashfile::Result<Vec<u8>> {
    parallel_build_from(text, text.len(), chunk, threads)
}

fn parallel_build_from(
    input: impl std::io::Read + Send,
    len: usize,
    chunk: usize,
    threads: usize,
) -> hashfile::Result<Vec<u8>> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(|| {
            let mut builder = Builder::new(BuildOptions::default()).unwrap();
            let mut last_read = 0;
            hashfile::import::import_json_lines_parallel(
                input,
                "input",
                &ImportOptions::new(InputFormat::JsonLines),
                chunk,
                &hashfile::Batch::new(),
                &mut |batch, read| {
                    assert!(read >= last_read && read <= len as u64);
                    last_read = read;
                    builder.append(batch);
                    Ok(())
                },
            )?;
            assert_eq!(last_read, len as u64);
            builder.to_bytes()
        })
}

#[test]
fn parallel_json_lines_build_what_the_serial_importer_builds() {
    let text = mixed_json_lines();
    let mut serial = Builder::new(BuildOptions::default()).unwrap();
    import(
        &text[..],
        "input",
        &ImportOptions::new(InputFormat::JsonLines),
        &mut |e, _| {
            serial.insert_record(e);
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(serial.len(), 301);
    let serial = serial.to_bytes().unwrap();
    for chunk in [1, 7, 64, 4_096, 1 << 20] {
        for threads in [1, 3] {
            assert_eq!(
                parallel_build(&text, chunk, threads).unwrap(),
                serial,
                "chunk {chunk}, {threads} threads"
            );
        }
        // Reads that come short: a run still ends at a line end, and no
        // byte is read twice or dropped.
        let trickle = Trickle {
            text: &text,
            most: 5,
        };
        assert_eq!(
            parallel_build_from(trickle, text.len(), chunk, 2).unwrap(),
            serial,
            "chunk {chunk}, reads of 5 bytes"
        );
    }
    assert_eq!(
        parallel_build(b"", 64, 2).unwrap(),
        Builder::new(BuildOptions::default())
            .unwrap()
            .to_bytes()
            .unwrap()
    );
}

#[test]
fn parallel_json_lines_report_the_first_bad_line() {
    let good = mixed_json_lines();
    let good = &good[..good.iter().rposition(|&b| b == b'\n').unwrap() + 1]; // drop the last line: 330 lines
    for bad in [
        "[\"a\", tru]",
        "[\"a\tb\",\"raw tab\"]",
        "[\"\u{1}\",\"x\"]",
        "[\"k\",\"v\",\"extra\"]",
        "{\"value\": \"x\"}",
        "[\"unterminated\",\"x]",
    ] {
        for bad_bytes in [bad.as_bytes().to_vec(), b"[\"\xff\",\"x\"]".to_vec()] {
            let mut text = good.to_vec();
            text.extend_from_slice(&bad_bytes);
            text.extend_from_slice(b"\n[\"after\",\"1\"]\n");
            text.extend_from_slice(&bad_bytes); // a second bad line, never reported
            let serial = read(InputFormat::JsonLines, &text).unwrap_err();
            assert!(
                matches!(
                    serial,
                    Error::Parse {
                        position: Position::Line {
                            line: 331,
                            column: Some(_)
                        },
                        ..
                    }
                ),
                "{serial:?}"
            );
            for chunk in [1, 100, 1 << 20] {
                let parallel = parallel_build(&text, chunk, 2).unwrap_err();
                assert_eq!(
                    format!("{parallel:?}"),
                    format!("{serial:?}"),
                    "chunk {chunk}"
                );
            }
        }
    }
}

/// Gives `data` up to `fail_at` bytes, then fails.
struct FailAfter<'a> {
    data: &'a [u8],
    at: usize,
    fail_at: usize,
}

impl std::io::Read for FailAfter<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at >= self.fail_at {
            return Err(std::io::Error::other("the disk went away"));
        }
        let n = buf
            .len()
            .min(self.fail_at - self.at)
            .min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn parallel_json_lines_report_a_read_error_after_the_lines_before_it() {
    let good = mixed_json_lines();
    let cut = good.len() - 200;
    for chunk in [64, 100, 1 << 20] {
        // Every line before the failure is handed on, then the error comes.
        let mut entries = 0;
        let input = FailAfter {
            data: &good,
            at: 0,
            fail_at: cut,
        };
        let error = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap()
            .install(|| {
                hashfile::import::import_json_lines_parallel(
                    input,
                    "input",
                    &ImportOptions::new(InputFormat::JsonLines),
                    chunk,
                    &hashfile::Batch::new(),
                    &mut |batch, _| {
                        entries += batch.len();
                        Ok(())
                    },
                )
                .unwrap_err()
            });
        assert!(
            matches!(&error, Error::Io { source, .. } if source.to_string() == "the disk went away"),
            "chunk {chunk}: {error:?}"
        );
        // At most the entries of the whole lines before the failure; with
        // small runs, all but those of the last run or so (a run is cut at
        // a line end, and some lines are 5,000 bytes long).
        let entries_before = |end: usize| {
            read(
                InputFormat::JsonLines,
                &good[..good[..end].iter().rposition(|&b| b == b'\n').unwrap() + 1],
            )
            .unwrap()
            .len()
        };
        assert!(
            entries <= entries_before(cut),
            "chunk {chunk}: {entries} of {}",
            entries_before(cut)
        );
        if chunk < 200 {
            assert!(
                entries >= entries_before(cut - 2 * 5_100),
                "chunk {chunk}: {entries} of {}",
                entries_before(cut)
            );
        }
        // A bad line well before the failure is the error reported.
        let mut text = b"[\"a\", tru]\n".to_vec();
        text.extend_from_slice(&good);
        let input = FailAfter {
            data: &text,
            at: 0,
            fail_at: cut,
        };
        let error = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap()
            .install(|| {
                hashfile::import::import_json_lines_parallel(
                    input,
                    "input",
                    &ImportOptions::new(InputFormat::JsonLines),
                    64,
                    &hashfile::Batch::new(),
                    &mut |_, _| Ok(()),
                )
                .unwrap_err()
            });
        assert!(
            matches!(
                error,
                Error::Parse {
                    position: Position::Line { line: 1, .. },
                    ..
                }
            ),
            "{error:?}"
        );
    }
}

mod pipeline {
    use hashfile::import::{ImportOptions, InputFormat};
    use hashfile::pipeline::{build_from, Input, Phase};
    use hashfile::{BuildOptions, Error, Reader};

    #[test]
    fn builds_from_several_inputs_with_progress() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("a.csv");
        let jsonl = dir.path().join("b.jsonl");
        std::fs::write(&csv, "k,v\none,1\ntwo,2\n").unwrap();
        std::fs::write(&jsonl, "[\"three\", \"3\"]\n").unwrap();
        let base = ImportOptions::new(InputFormat::Csv);
        let inputs = [
            Input::new(csv.to_str().unwrap(), None, &base).unwrap(),
            Input::new(jsonl.to_str().unwrap(), None, &base).unwrap(),
        ];
        assert_eq!(inputs[1].options.format, InputFormat::JsonLines);
        let out = dir.path().join("out.hf");
        let mut phases = Vec::new();
        let summary = build_from(
            &inputs,
            &out,
            BuildOptions::default(),
            &hashfile::CancelFlag::new(),
            &mut |p| {
                phases.push((p.phase, p.entries, p.bytes_read, p.bytes_total));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(
            (summary.entries, summary.file_bytes),
            (3, std::fs::metadata(&out).unwrap().len())
        );
        let total = Some(16 + 15);
        assert_eq!(
            phases,
            [
                (Phase::Reading, 0, 0, total),
                (Phase::Building, 3, 31, total),
                (Phase::Publishing, 3, 31, total)
            ]
        );
        let store = Reader::open(&out).unwrap();
        assert_eq!(store.get(b"three").unwrap().unwrap().value(), b"3");
    }

    #[test]
    fn duplicate_error_names_both_places_and_cancel_publishes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.jsonl");
        let b = dir.path().join("b.jsonl");
        std::fs::write(&a, "[\"x\", \"1\"]\n[\"dup\", \"2\"]\n").unwrap();
        std::fs::write(&b, "[\"y\", \"3\"]\n\n[\"dup\", \"4\"]\n").unwrap();
        let base = ImportOptions::new(InputFormat::JsonLines);
        let inputs = [
            Input::new(a.to_str().unwrap(), None, &base).unwrap(),
            Input::new(b.to_str().unwrap(), None, &base).unwrap(),
        ];
        let out = dir.path().join("out.hf");
        let err = build_from(
            &inputs,
            &out,
            BuildOptions::default(),
            &hashfile::CancelFlag::new(),
            &mut |_| Ok(()),
        )
        .unwrap_err();
        let place = |path: &std::path::Path, line| {
            Some(hashfile::Location {
                input: path.display().to_string(),
                position: hashfile::Position::line(line),
            })
        };
        match &err {
            Error::DuplicateKey {
                key, first, second, ..
            } => assert_eq!(
                (key.as_slice(), first, second),
                (
                    &b"dup"[..],
                    &place(&a, 2).map(Box::new),
                    &place(&b, 3).map(Box::new)
                )
            ),
            other => panic!("expected a duplicate key error, got {other:?}"),
        }
        assert_eq!(
            err.to_string(),
            format!(
                "duplicate key \"dup\" ({}: line 2 and {}: line 3)",
                a.display(),
                b.display()
            )
        );
        for cancel_at in [Phase::Reading, Phase::Building, Phase::Publishing] {
            let err = build_from(
                &inputs[..1],
                &out,
                BuildOptions::default(),
                &hashfile::CancelFlag::new(),
                &mut |p| {
                    if p.phase == cancel_at {
                        Err(Error::Cancelled)
                    } else {
                        Ok(())
                    }
                },
            )
            .unwrap_err();
            assert!(matches!(err, Error::Cancelled), "{cancel_at:?}");
        }
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "no output and no temporary file"
        );
        match Input::new("data.txt", None, &base).unwrap_err() {
            Error::InvalidOption { name: "format", reason } => assert!(reason.starts_with("cannot tell the format of data.txt from its extension (.txt is not one hashfile knows); give the format option (--format on the command line), one of: json, json-pairs"), "{reason}"),
            other => panic!("expected an invalid format option, got {other:?}"),
        }
    }
}

fn typed(format: InputFormat, input: &[u8]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    import(input, "input", &ImportOptions::new(format), &mut |e, _| {
        out.push((
            String::from_utf8(e.key.to_vec()).unwrap(),
            Value::of_record(&e).unwrap(),
        ));
        Ok(())
    })
    .unwrap_or_else(|e| panic!("{format:?}: {e}"));
    out
}

fn big(negative: bool, decimal: &str) -> Value {
    // Magnitude by repeated multiply-add, independently of the importer.
    let mut m: Vec<u8> = vec![0];
    for d in decimal.bytes().map(|b| (b - b'0') as u32) {
        let mut carry = d;
        for byte in m.iter_mut() {
            let v = *byte as u32 * 10 + carry;
            *byte = v as u8;
            carry = v >> 8;
        }
        while carry > 0 {
            m.push(carry as u8);
            carry >>= 8;
        }
    }
    Value::BigInt {
        negative,
        magnitude: m,
    }
}

#[test]
fn json_keeps_types() {
    let input = br#"{"n": 50, "r": 0.75, "t": true, "f": false, "z": null, "neg": -7, "big": 123456789012345678901234567890, "nbig": -9223372036854775809,
        "u64": 18446744073709551615, "exp": 1E2, "negzero": -0.0, "intzero": -0, "tiny": 5e-324, "nested": {"regions": ["eu", "us"], "limits": {"api": {"burst": 100}}}, "s": "text"}"#;
    let got = typed(InputFormat::JsonObject, input);
    let expected = vec![
        ("n", Value::Int(50)),
        ("r", Value::Float(0.75)),
        ("t", Value::Bool(true)),
        ("f", Value::Bool(false)),
        ("z", Value::Nil),
        ("neg", Value::Int(-7)),
        ("big", big(false, "123456789012345678901234567890")),
        ("nbig", big(true, "9223372036854775809")),
        ("u64", big(false, "18446744073709551615")),
        ("exp", Value::Float(100.0)),
        ("negzero", Value::Float(-0.0)),
        ("intzero", Value::Int(0)),
        ("tiny", Value::Float(5e-324)),
        (
            "nested",
            Value::Map(vec![
                (
                    Value::str("regions"),
                    Value::Array(vec![Value::str("eu"), Value::str("us")]),
                ),
                (
                    Value::str("limits"),
                    Value::Map(vec![(
                        Value::str("api"),
                        Value::Map(vec![(Value::str("burst"), Value::Int(100))]),
                    )]),
                ),
            ]),
        ),
        ("s", Value::str("text")),
    ];
    assert_eq!(
        got,
        expected
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect::<Vec<_>>()
    );
    // The same values through JSON Lines, both line shapes.
    let lines = b"[\"n\", 50]\n{\"key\": \"l\", \"value\": [1, {\"a\": null}]}\n{\"value\": 1.5, \"key\": \"v\"}\n";
    assert_eq!(
        typed(InputFormat::JsonLines, lines),
        vec![
            ("n".to_string(), Value::Int(50)),
            (
                "l".into(),
                Value::Array(vec![
                    Value::Int(1),
                    Value::Map(vec![(Value::str("a"), Value::Nil)])
                ])
            ),
            ("v".into(), Value::Float(1.5))
        ]
    );
}

#[test]
fn json_depth_limit_is_an_error_naming_the_key() {
    let deep = format!("{{\"d\": {}1{}}}", "[".repeat(101), "]".repeat(101));
    let err = read(InputFormat::JsonObject, deep.as_bytes()).unwrap_err();
    assert!(
        matches!(&err, Error::Parse { what, .. } if what.starts_with("value for key \"d\" nests deeper than 100 levels")),
        "{err:?}"
    );
    let ok = format!("{{\"d\": {}1{}}}", "[".repeat(100), "]".repeat(100));
    assert_eq!(
        read(InputFormat::JsonObject, ok.as_bytes()).unwrap().len(),
        1
    );
}

#[test]
fn msgpack_types_map_across() {
    let mut input = Vec::new();
    use rmp::encode::*;
    write_map_len(&mut input, 6).unwrap();
    write_str(&mut input, "ints").unwrap();
    write_array_len(&mut input, 4).unwrap();
    write_uint(&mut input, u64::MAX).unwrap();
    write_sint(&mut input, i64::MIN).unwrap();
    write_u8(&mut input, 200).unwrap();
    write_i8(&mut input, -5).unwrap();
    write_str(&mut input, "floats").unwrap();
    write_array_len(&mut input, 2).unwrap();
    write_f32(&mut input, 0.5).unwrap();
    write_f64(&mut input, f64::NEG_INFINITY).unwrap();
    write_str(&mut input, "map").unwrap();
    write_map_len(&mut input, 2).unwrap();
    write_uint(&mut input, 1).unwrap();
    write_nil(&mut input).unwrap();
    write_bin(&mut input, b"\xff").unwrap();
    write_bool(&mut input, true).unwrap();
    write_str(&mut input, "bin").unwrap();
    write_bin(&mut input, b"raw").unwrap();
    write_str(&mut input, "bad utf8").unwrap();
    write_str_len(&mut input, 2).unwrap();
    input.extend_from_slice(b"\xff\xfe");
    write_str(&mut input, "nested bad utf8").unwrap();
    write_array_len(&mut input, 1).unwrap();
    write_str_len(&mut input, 1).unwrap();
    input.push(0xff);
    let got = typed(InputFormat::MessagePack, &input);
    assert_eq!(
        got[0].1,
        Value::Array(vec![
            Value::BigInt {
                negative: false,
                magnitude: vec![0xff; 8]
            },
            Value::Int(i64::MIN),
            Value::Int(200),
            Value::Int(-5)
        ])
    );
    assert_eq!(
        got[1].1,
        Value::Array(vec![Value::Float(0.5), Value::Float(f64::NEG_INFINITY)])
    );
    assert_eq!(
        got[2].1,
        Value::Map(vec![
            (Value::Int(1), Value::Nil),
            (
                Value::Str(vec![0xff], Some("ASCII-8BIT".into())),
                Value::Bool(true)
            )
        ])
    );
    assert_eq!(
        got[3].1,
        Value::Str(b"raw".to_vec(), Some("ASCII-8BIT".into()))
    );
    // str stays UTF-8, byte for byte, even when invalid (as msgpack-ruby).
    assert_eq!(got[4].1, Value::Str(b"\xff\xfe".to_vec(), None));
    assert_eq!(got[5].1, Value::Array(vec![Value::Str(vec![0xff], None)]));
}

#[test]
fn yaml_scalars_are_typed_as_psych_types_them() {
    let input = "\
plain: hello
quoted: 'yes'
dquoted: \"1\"
yes_: yes
On_: On
no_: NO
tilde: ~
null_: Null
empty:
int: 42
neg: -17
under: 1_000
comma: 1,000
octal: 017
hex: 0x1F
bin: 0b101
sexa: 1:30
float: 1.5
exp: 1.0e+3
noexp: 1e3
dot: 1.
inf: .inf
ninf: -.Inf
nan: .NaN
sym: :sym
big: 123456789012345678901234567890
leading0: 09
ver: 1.2.3
str_tag: !!str 42
float_tag: !!float 3
binary: !!binary aGVsbG8=
seq: [1, two, 3.0]
map: {a: 1}
";
    let got = typed(InputFormat::Yaml, input.as_bytes());
    let get = |k: &str| {
        got.iter()
            .find(|(key, _)| key == k)
            .unwrap_or_else(|| panic!("{k}"))
            .1
            .clone()
    };
    assert_eq!(get("plain"), Value::str("hello"));
    assert_eq!(get("quoted"), Value::str("yes"));
    assert_eq!(get("dquoted"), Value::str("1"));
    assert_eq!(get("yes_"), Value::Bool(true));
    assert_eq!(get("On_"), Value::Bool(true));
    assert_eq!(get("no_"), Value::Bool(false));
    assert_eq!(get("tilde"), Value::Nil);
    assert_eq!(get("null_"), Value::Nil);
    assert_eq!(get("empty"), Value::Nil);
    assert_eq!(get("int"), Value::Int(42));
    assert_eq!(get("neg"), Value::Int(-17));
    assert_eq!(get("under"), Value::Int(1000));
    assert_eq!(get("comma"), Value::Int(1000));
    assert_eq!(get("octal"), Value::Int(15));
    assert_eq!(get("hex"), Value::Int(31));
    assert_eq!(get("bin"), Value::Int(5));
    assert_eq!(get("sexa"), Value::Int(5400));
    assert_eq!(get("float"), Value::Float(1.5));
    assert_eq!(get("exp"), Value::Float(1000.0));
    assert_eq!(get("noexp"), Value::str("1e3"));
    assert_eq!(get("dot"), Value::Float(1.0));
    assert_eq!(get("inf"), Value::Float(f64::INFINITY));
    assert_eq!(get("ninf"), Value::Float(f64::NEG_INFINITY));
    assert!(matches!(get("nan"), Value::Float(f) if f.is_nan()));
    assert_eq!(get("sym"), Value::Symbol(b"sym".to_vec(), None));
    assert_eq!(get("big"), big(false, "123456789012345678901234567890"));
    assert_eq!(get("leading0"), Value::str("09"));
    assert_eq!(get("ver"), Value::str("1.2.3"));
    assert_eq!(get("str_tag"), Value::str("42"));
    assert_eq!(get("float_tag"), Value::Float(3.0));
    assert_eq!(
        get("binary"),
        Value::Str(b"hello".to_vec(), Some("ASCII-8BIT".into()))
    );
    assert_eq!(
        get("seq"),
        Value::Array(vec![Value::Int(1), Value::str("two"), Value::Float(3.0)])
    );
    assert_eq!(
        get("map"),
        Value::Map(vec![(Value::str("a"), Value::Int(1))])
    );
}

#[test]
fn yaml_anchors_aliases_and_merge_keys() {
    let input = "\
default: &default
  adapter: postgres
  pool: 5
development:
  <<: *default
  pool: 10
both:
  <<: [{a: 1, b: 1}, {b: 2, c: 2}]
list: &l [1, 2]
again: *l
";
    let got = typed(InputFormat::Yaml, input.as_bytes());
    // Pairs are stored in order; decoding (last wins) gives Psych's Hash.
    assert_eq!(
        got[1].1,
        Value::Map(vec![
            (Value::str("adapter"), Value::str("postgres")),
            (Value::str("pool"), Value::Int(5)),
            (Value::str("pool"), Value::Int(10))
        ])
    );
    assert_eq!(
        got[2].1,
        Value::Map(vec![
            (Value::str("b"), Value::Int(2)),
            (Value::str("c"), Value::Int(2)),
            (Value::str("a"), Value::Int(1)),
            (Value::str("b"), Value::Int(1))
        ])
    );
    assert_eq!(got[4].1, got[3].1);
    // A billion-laughs input is cut off.
    let mut laughs = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for i in 0..12 {
        let prev = if i == 0 {
            "a".to_string()
        } else {
            format!("l{}", i - 1)
        };
        laughs.push_str(&format!(
            "l{i}: &l{i} [{}]\n",
            vec![format!("*{prev}"); 9].join(",")
        ));
    }
    let err = read(InputFormat::Yaml, laughs.as_bytes()).unwrap_err();
    assert!(
        matches!(&err, Error::Parse { what, .. } if what.contains("aliases expand to more than 256 MiB")),
        "{err:?}"
    );
}

mod fast_path {
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec![
                'a', 'z', '0', ' ', '"', '\\', ',', ']', '[', '\t', '\n', '\u{1}', '\u{7f}', 'é',
                '✓', '😀',
            ]),
            0..12,
        )
        .prop_map(|c| c.into_iter().collect())
    }

    proptest! {
        /// `["k","v"]` lines, escaped by serde_json or pasted in raw, read
        /// exactly as serde_json reads them: the same strings, or an error
        /// when serde_json has one.
        #[test]
        fn simple_lines_read_as_serde_json_reads_them(key in text(), value in text(), raw in any::<bool>()) {
            let line = if raw {
                format!("[\"{key}\",\"{value}\"]")
            } else {
                format!("[{},{}]", serde_json::to_string(&key).unwrap(), serde_json::to_string(&value).unwrap())
            };
            let expected = serde_json::from_str::<(String, String)>(&line).ok();
            if line.contains('\n') {
                return Ok(()); // two lines: not one record
            }
            match read(InputFormat::JsonLines, line.as_bytes()) {
                Ok(entries) if entries.len() == 1 && entries[0].2 == ValueKind::Utf8 => {
                    let got = (String::from_utf8(entries[0].0.clone()).unwrap(), String::from_utf8(entries[0].1.clone()).unwrap());
                    prop_assert_eq!(Some(got), expected);
                }
                Ok(_) => prop_assert!(expected.is_none(), "serde_json read strings; the importer read something else"),
                Err(_) => prop_assert!(expected.is_none(), "serde_json read {:?}; the importer failed", expected),
            }
            if !raw {
                let entries = read(InputFormat::JsonLines, line.as_bytes()).unwrap();
                prop_assert_eq!(pairs(&entries), vec![(key.as_str(), value.as_str())]);
            }
        }
    }
}

#[test]
fn csv_reads_rfc_4180_and_the_explicit_relaxations() {
    let strict = ImportOptions::new(InputFormat::Csv);
    // Quoted separators, doubled quotes, line breaks inside quotes, CR LF,
    // blank lines, an empty last field and no final line break.
    let input =
        b"k,v\r\n\"a,b\",\"say \"\"hi\"\"\"\r\n\r\nc,\"two\r\nlines\"\n\nd,\ne,\"\"\nf,last";
    assert_eq!(
        pairs(&read_with(strict.clone(), input).unwrap()),
        [
            ("a,b", "say \"hi\""),
            ("c", "two\r\nlines"),
            ("d", ""),
            ("e", ""),
            ("f", "last")
        ]
    );
    // Each row's position is the line it starts on, counted as an editor does.
    let mut lines = Vec::new();
    import(&input[..], "input", &strict, &mut |_, position| {
        lines.push(position);
        Ok(())
    })
    .unwrap();
    assert_eq!(lines, [2, 4, 7, 8, 9].map(Position::line));

    // quote: false reads quotes as ordinary characters, for TSV exports
    // that never quote.
    let mut plain = ImportOptions::new(InputFormat::Tsv);
    plain.quote = false;
    assert_eq!(
        pairs(&read_with(plain, b"k\tv\r\na\t\"unbalanced\r\nb\t6\" screen\n").unwrap()),
        [("a", "\"unbalanced"), ("b", "6\" screen")]
    );

    // col_sep and comment lines.
    let mut semicolons = ImportOptions::new(InputFormat::Csv);
    semicolons.col_sep = Some(b';');
    semicolons.comment = Some(b'#');
    assert_eq!(
        pairs(
            &read_with(
                semicolons.clone(),
                b"# exported\nk;v\n#a;0\na;1\n\nb;\"2;#3\"\n"
            )
            .unwrap()
        ),
        [("a", "1"), ("b", "2;#3")]
    );
    // Without comment, a # line is a row like any other.
    assert_eq!(
        pairs(&read_with(ImportOptions::new(InputFormat::Csv), b"k,v\n#a,0\n").unwrap()),
        [("#a", "0")]
    );

    for (col_sep, comment, want) in [
        (
            Some(b'"'),
            None,
            "invalid option col_sep: must be one ASCII character other than a quote",
        ),
        (None, Some(b'\n'), "invalid option comment: must be one"),
        (
            Some(b';'),
            Some(b';'),
            "invalid option col_sep: and comment are both ';'",
        ),
    ] {
        let mut options = ImportOptions::new(InputFormat::Csv);
        options.col_sep = col_sep;
        options.comment = comment;
        let error = read_with(options, b"k,v\n").unwrap_err();
        assert!(
            matches!(error, Error::InvalidOption { .. }) && error.to_string().starts_with(want),
            "{error}"
        );
    }
}

#[test]
fn a_utf8_byte_order_mark_is_not_part_of_the_first_key() {
    let bom = |text: &str| [&[0xEF, 0xBB, 0xBF][..], text.as_bytes()].concat();
    for (format, text) in [
        (InputFormat::JsonObject, "{\"en\": \"1\"}"),
        (InputFormat::JsonPairs, "[[\"en\", \"1\"]]"),
        (InputFormat::JsonLines, "[\"en\", \"1\"]\n"),
        (InputFormat::Csv, "en,1\n"),
        (InputFormat::Tsv, "en\t1\n"),
        (InputFormat::Yaml, "en: '1'\n"),
    ] {
        let mut options = ImportOptions::new(format);
        options.header = false;
        assert_eq!(
            pairs(&read_with(options, &bom(text)).unwrap()),
            [("en", "1")],
            "{format:?}"
        );
    }
}

#[test]
fn integers_convert_in_bounded_time_up_to_a_documented_limit() {
    use hashfile::import::MAX_INTEGER_DIGITS;
    use hashfile::value::Value;
    let digits = "7".repeat(MAX_INTEGER_DIGITS);
    for (format, text) in [
        (InputFormat::JsonObject, format!("{{\"n\": {digits}}}")),
        (InputFormat::Yaml, format!("n: {digits}\n")),
        (
            InputFormat::Yaml,
            format!("n: 0b{}\n", "1".repeat(MAX_INTEGER_DIGITS)),
        ),
    ] {
        let got = read(format, text.as_bytes()).unwrap();
        assert!(
            matches!(
                Value::decode(&got[0].1).unwrap(),
                Value::BigInt {
                    negative: false,
                    ..
                }
            ),
            "{format:?}"
        );
        let over = text.replacen("7", "77", 1).replacen("0b1", "0b11", 1);
        let Err(Error::Parse { what, .. }) = read(format, over.as_bytes()) else {
            panic!("{format:?}: expected a parse error")
        };
        assert!(
            what.contains(&format!(
                "is an integer of {} digits, over the limit of {MAX_INTEGER_DIGITS}",
                MAX_INTEGER_DIGITS + 1
            )),
            "{what}"
        );
    }
}

/// Inputs built to exhaust memory or time fail fast, with errors, in
/// memory bounded by their size: declared lengths far past the input,
/// nesting far past the depth limit, aliases that expand without end.
#[test]
fn hostile_inputs_fail_fast_in_bounded_memory() {
    let cases: Vec<(InputFormat, Vec<u8>, &str)> = vec![
        // A str32 and a bin32 of 4 GiB, a map32 and an array32 of 4 billion
        // entries, each with a few bytes behind it.
        (
            InputFormat::MessagePack,
            vec![0x81, 0xDB, 0xFF, 0xFF, 0xFF, 0xFF, b'a'],
            "unexpected end of input",
        ),
        (
            InputFormat::MessagePack,
            vec![0x81, 0xA1, b'a', 0xC6, 0xFF, 0xFF, 0xFF, 0xFF, 1, 2],
            "unexpected end of input",
        ),
        (
            InputFormat::MessagePack,
            vec![0xDF, 0xFF, 0xFF, 0xFF, 0xFF, 0xA1, b'a', 0x01],
            "unexpected end of input",
        ),
        (
            InputFormat::MessagePack,
            vec![0x81, 0xA1, b'a', 0xDD, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
            "unexpected end of input",
        ),
        (
            InputFormat::JsonObject,
            format!("{{\"a\": {}{}}}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
            "nests deeper than 100 levels",
        ),
        (
            InputFormat::Yaml,
            format!("a: {}{}\n", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
            "recursion limit exceeded",
        ),
        (
            InputFormat::Yaml,
            {
                let mut text = format!("a0: &a0 [{}]\n", vec!["\"xxxxxxxxxx\""; 100].join(", "));
                for i in 1..20 {
                    text += &format!(
                        "a{i}: &a{i} [{}]\n",
                        vec![format!("*a{}", i - 1); 10].join(", ")
                    );
                }
                text.into_bytes()
            },
            "aliases expand to more than 256 MiB",
        ),
    ];
    for (format, input, want) in cases {
        let started = std::time::Instant::now();
        match read(format, &input) {
            Err(Error::Parse { what, .. }) => assert!(what.contains(want), "{format:?}: {what}"),
            Err(other) => panic!("{format:?}: expected a parse error, got {other}"),
            Ok(_) => panic!("{format:?}: a hostile input was accepted"),
        }
        // Generous: each takes milliseconds; minutes would mean a blow-up.
        assert!(
            started.elapsed().as_secs() < 20,
            "{format:?} took {:?}",
            started.elapsed()
        );
    }
}

fn typed_with(options: ImportOptions, input: &[u8]) -> hashfile::Result<Vec<(String, Value)>> {
    let mut out = Vec::new();
    import(input, "input", &options, &mut |e, _| {
        out.push((
            String::from_utf8(e.key.to_vec()).unwrap(),
            Value::of_record(&e).unwrap(),
        ));
        Ok(())
    })?;
    Ok(out)
}

fn options(format: InputFormat, key_field: &str, value_field: &str) -> ImportOptions {
    ImportOptions {
        key_field: key_field.into(),
        value_field: value_field.into(),
        ..ImportOptions::new(format)
    }
}

fn object(pairs: &[(&str, Value)]) -> Value {
    Value::Map(
        pairs
            .iter()
            .map(|(k, v)| (Value::str(k), v.clone()))
            .collect(),
    )
}

/// Deliverable 3 of issue 14: objects keyed by a field, in JSON arrays and
/// JSON Lines; the whole object as the value; a dotted key path; integer
/// keys by their digits; `records_at` down to the array.
#[test]
fn objects_are_keyed_by_a_field_and_can_be_the_whole_value() {
    let doc = br#"{"version": 2, "3166-1": [
        {"alpha_2": "AD", "name": "Andorra", "meta": {"id": 20, "tags": ["small"]}},
        {"name": "France", "alpha_2": "FR", "meta": {"id": 250, "tags": []}}
    ], "after": null}"#;
    let at = |key_field: &str, value_field: &str| ImportOptions {
        records_at: Some("3166-1".into()),
        ..options(InputFormat::JsonObject, key_field, value_field)
    };
    let whole = typed_with(at("alpha_2", "*"), doc).unwrap();
    assert_eq!(whole[0].0, "AD");
    assert_eq!(
        whole[0].1,
        object(&[
            ("alpha_2", Value::str("AD")),
            ("name", Value::str("Andorra")),
            (
                "meta",
                object(&[
                    ("id", Value::Int(20)),
                    ("tags", Value::Array(vec![Value::str("small")]))
                ])
            )
        ])
    );
    assert_eq!(whole[1].0, "FR");
    let names = typed_with(at("alpha_2", "name"), doc).unwrap();
    assert_eq!(
        names,
        [
            ("AD".to_string(), Value::str("Andorra")),
            ("FR".to_string(), Value::str("France"))
        ]
    );
    // A dotted path into a nested object, whose integer is keyed by its digits.
    let by_id = typed_with(at("meta.id", "*"), doc).unwrap();
    assert_eq!(
        by_id.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["20", "250"]
    );
    assert_eq!(by_id[1].1, whole[1].1);
    let by_id_names = typed_with(at("meta.id", "name"), doc).unwrap();
    assert_eq!(by_id_names[0], ("20".to_string(), Value::str("Andorra")));

    // The same objects as a top-level array, and as JSON Lines.
    let array = br#"[{"k": "a", "v": 1}, ["b", 2], {"v": 3, "k": "c", "x": {"deep": [1]}}]"#;
    let read = typed_with(options(InputFormat::JsonObject, "k", "v"), array).unwrap();
    assert_eq!(
        read,
        [
            ("a".to_string(), Value::Int(1)),
            ("b".to_string(), Value::Int(2)),
            ("c".to_string(), Value::Int(3))
        ]
    );
    let lines =
        b"{\"k\": \"a\", \"v\": 1}\n[\"b\", 2]\n{\"v\": 3, \"k\": \"c\", \"x\": {\"deep\": [1]}}\n";
    assert_eq!(
        typed_with(options(InputFormat::JsonLines, "k", "v"), lines).unwrap(),
        read
    );
    let whole_lines = typed_with(options(InputFormat::JsonLines, "k", "*"), lines).unwrap();
    assert_eq!(
        whole_lines[2].1,
        object(&[
            ("v", Value::Int(3)),
            ("k", Value::str("c")),
            ("x", object(&[("deep", Value::Array(vec![Value::Int(1)]))]))
        ])
    );
    // A dot inside a field name.
    let dotted = typed_with(
        options(InputFormat::JsonLines, r"a\.b", "v"),
        b"{\"a.b\": \"x\", \"v\": 1}\n",
    )
    .unwrap();
    assert_eq!(dotted, [("x".to_string(), Value::Int(1))]);
}

#[test]
fn an_object_without_its_key_field_lists_the_fields_it_has() {
    let message =
        |options: ImportOptions, input: &[u8]| typed_with(options, input).unwrap_err().to_string();
    // The whole object as the value, and one field as the value: both list.
    for value in ["*", "name"] {
        let m = message(
            options(InputFormat::JsonLines, "alpha2", value),
            b"{\"alpha_2\": \"FR\", \"name\": \"France\"}\n",
        );
        assert!(
            m.ends_with("missing field \"alpha2\", the key field (key_field names another); its fields are \"alpha_2\", \"name\""),
            "{value}: {m}"
        );
    }
    // Ten shown, then "and more"; none: "it has none".
    let wide: String = (0..12)
        .map(|i| format!("\"f{i}\": {i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let m = message(
        options(InputFormat::JsonLines, "id", "*"),
        format!("{{{wide}}}\n").as_bytes(),
    );
    assert!(m.ends_with("\"f8\", \"f9\" and more"), "{m}");
    let m = message(options(InputFormat::JsonLines, "id", "v"), b"{}\n");
    assert!(m.ends_with("(key_field names another); it has none"), "{m}");
}

#[test]
fn keyed_objects_refuse_what_cannot_be_a_key_naming_the_field() {
    let message =
        |options: ImportOptions, input: &[u8]| typed_with(options, input).unwrap_err().to_string();
    let m = message(
        options(InputFormat::JsonLines, "id", "*"),
        b"{\"id\": \"a\"}\n{\"name\": \"b\"}\n",
    );
    assert!(
        m.contains("line 2") && m.contains("missing field \"id\""),
        "{m}"
    );
    let m = message(
        options(InputFormat::JsonLines, "id", "*"),
        b"{\"id\": 1.5}\n",
    );
    assert!(
        m.contains("not a 64-bit integer") && m.contains("key field \"id\""),
        "{m}"
    );
    let m = message(
        options(InputFormat::JsonLines, "id", "v"),
        b"{\"id\": [1], \"v\": 1}\n",
    );
    assert!(
        m.contains("invalid type: sequence") && m.contains("key field \"id\""),
        "{m}"
    );
    let m = message(
        options(InputFormat::JsonLines, "meta.id", "v"),
        b"{\"meta\": {\"other\": 1}, \"v\": 1}\n",
    );
    assert!(m.contains("missing field \"meta.id\""), "{m}");
    let m = message(
        ImportOptions {
            records_at: Some("3166-2".into()),
            ..options(InputFormat::JsonObject, "alpha_2", "*")
        },
        br#"{"3166-1": [], "x": 1}"#,
    );
    assert!(m.contains("records_at: the top-level object has no field \"3166-2\"; its fields are \"3166-1\", \"x\""), "{m}");
    let m = message(
        ImportOptions {
            records_at: Some("a.b".into()),
            ..options(InputFormat::JsonObject, "k", "v")
        },
        br#"{"a": {"c": []}}"#,
    );
    assert!(m.contains("the object at \"a\" has no field \"b\""), "{m}");
    // Options that contradict each other.
    for (bad, name) in [
        (options(InputFormat::JsonLines, "*", "v"), "key_field"),
        (options(InputFormat::JsonLines, "a..b", "v"), "key_field"),
        (options(InputFormat::JsonLines, "v", "v"), "value_field"),
        (
            ImportOptions {
                records_at: Some("x".into()),
                ..ImportOptions::new(InputFormat::Csv)
            },
            "records_at",
        ),
        (
            ImportOptions {
                key_column: Column::Row,
                ..ImportOptions::new(InputFormat::Csv)
            },
            "key_column",
        ),
    ] {
        match typed_with(bad, b"") {
            Err(Error::InvalidOption { name: n, .. }) => assert_eq!(n, name),
            other => panic!("{name}: {other:?}"),
        }
    }
}

/// `value_column: "*"`: the row as Ruby's CSV gives it, `CSV::Row#to_h`
/// with a header (first of repeated names wins, missing fields nil, the
/// first extra field under nil), the Array of fields without; an empty
/// unquoted field is nil and `""` the empty String.
#[test]
fn csv_rows_can_be_the_whole_value() {
    let row = |format, header: bool, input: &[u8]| {
        typed_with(
            ImportOptions {
                value_column: Column::parse("*"),
                header,
                ..ImportOptions::new(format)
            },
            input,
        )
        .unwrap()
    };
    let got = row(
        InputFormat::Csv,
        true,
        b"k,name,k,x\n1,,\"\",\n2\n3,a,b,c,d,e\n",
    );
    let s = Value::str;
    let map = |pairs: Vec<(Value, Value)>| Value::Map(pairs);
    assert_eq!(
        got[0],
        (
            "1".to_string(),
            map(vec![
                (s("k"), s("1")),
                (s("name"), Value::Nil),
                (s("x"), Value::Nil)
            ])
        )
    );
    assert_eq!(
        got[1],
        (
            "2".to_string(),
            map(vec![
                (s("k"), s("2")),
                (s("name"), Value::Nil),
                (s("x"), Value::Nil)
            ])
        )
    );
    assert_eq!(
        got[2],
        (
            "3".to_string(),
            map(vec![
                (s("k"), s("3")),
                (s("name"), s("a")),
                (s("x"), s("c")),
                (Value::Nil, s("d"))
            ])
        )
    );
    let got = row(InputFormat::Tsv, false, b"a\t\t\"\"\nb\n");
    assert_eq!(
        got,
        [
            (
                "a".to_string(),
                Value::Array(vec![s("a"), Value::Nil, s("")])
            ),
            ("b".to_string(), Value::Array(vec![s("b")]))
        ]
    );
    // A header that is itself empty takes the nil key; extra fields then have none.
    let got = row(InputFormat::Csv, true, b"k,\n1,2,3\n");
    assert_eq!(got[0].1, map(vec![(s("k"), s("1")), (Value::Nil, s("2"))]));
}

/// JSON entries are placed by line, so a duplicate key names the lines it
/// is on: an object's key by the key's line, an array element by the line
/// it opens on (finding 12 of issue 14).
#[test]
fn json_entries_are_placed_by_line() {
    let object = b"{\n  \"a\": 1,\n  \"b\": {\n    \"a\": 2\n  },\n\n  \"a\": [\n 3]\n}\n";
    let positions = find_key(
        &object[..],
        "input",
        &ImportOptions::new(InputFormat::JsonObject),
        b"a",
    )
    .unwrap();
    assert_eq!(positions, [Position::line(2), Position::line(7)]);
    let array = b"[\n  [\"x\", 1],\n  {\n    \"key\": \"y\",\n    \"value\": 2\n  },\n  {\"key\": \"x\", \"value\": 3}\n]";
    let positions = find_key(
        &array[..],
        "input",
        &ImportOptions::new(InputFormat::JsonObject),
        b"x",
    )
    .unwrap();
    assert_eq!(positions, [Position::line(2), Position::line(7)]);
    let positions = find_key(
        &array[..],
        "input",
        &ImportOptions::new(InputFormat::JsonObject),
        b"y",
    )
    .unwrap();
    assert_eq!(positions, [Position::line(3)]);
    // Escaped line breaks inside strings are not line ends.
    let escaped = b"{\"s\\n\\n\": \"v\\n\", \"k\": 1,\n\"k\": 2}";
    let positions = find_key(
        &escaped[..],
        "input",
        &ImportOptions::new(InputFormat::JsonObject),
        b"k",
    )
    .unwrap();
    assert_eq!(positions, [Position::line(1), Position::line(2)]);
}

/// Issue 22: an option given for a format it does not apply to is an error
/// naming it, the input, and the option meant, never ignored.
#[test]
fn options_that_do_not_apply_to_the_format_are_refused() {
    let given = |format, names: &[&'static str]| ImportOptions {
        given: names.to_vec(),
        ..ImportOptions::new(format)
    };
    let refused = |o: ImportOptions| match o.check_given("in.x") {
        Err(Error::InvalidOption { name, reason }) => (name, reason),
        other => panic!("expected InvalidOption, got {other:?}"),
    };
    let (name, reason) = refused(given(InputFormat::Csv, &["header", "key_field"]));
    assert_eq!(name, "key_field");
    assert_eq!(reason, "applies to json, json-pairs and jsonl inputs, and in.x is read as csv, which would ignore it; for csv give key_column");
    let (name, reason) = refused(given(InputFormat::JsonLines, &["key_field", "records_at"]));
    assert_eq!(name, "records_at");
    assert_eq!(
        reason,
        "applies to json and json-pairs inputs, and in.x is read as jsonl, which would ignore it"
    );
    let (name, _) = refused(given(InputFormat::Yaml, &["comment"]));
    assert_eq!(name, "comment");
    for (format, names) in [
        (
            InputFormat::Csv,
            &[
                "key_column",
                "value_column",
                "header",
                "quote",
                "col_sep",
                "comment",
            ][..],
        ),
        (InputFormat::Tsv, &["key_column", "header"][..]),
        (
            InputFormat::JsonObject,
            &["key_field", "value_field", "records_at", "format"][..],
        ),
        (InputFormat::JsonLines, &["key_field", "value_field"][..]),
        (InputFormat::MessagePack, &[][..]),
    ] {
        assert!(
            given(format, names).check_given("in.x").is_ok(),
            "{format:?} {names:?}"
        );
    }
}

/// key_field given for a JSON document whose entries are an object: the
/// object's fields that hold arrays of objects are named, for records_at.
#[test]
fn key_field_on_an_object_names_the_arrays_of_objects_in_it() {
    let doc = br#"{"version": 2, "3166-1": [{"alpha_2": "AD"}], "numbers": [1, 2], "empty": [],
        "nested": {"a": [{}]}, "objects": [{"x": 1}, 3], "n": 1.5}"#;
    let with = |records_at: Option<&str>| ImportOptions {
        given: vec!["key_field"],
        records_at: records_at.map(String::from),
        ..options(InputFormat::JsonObject, "alpha_2", "*")
    };
    match typed_with(with(None), doc) {
        Err(Error::InvalidOption { name, reason }) => {
            assert_eq!(name, "key_field");
            assert_eq!(reason, "reads objects in an array, and the top level of input is an object, read as key-value pairs, which would ignore it; its fields that hold arrays of objects: \"3166-1\", \"objects\"; give records_at \"3166-1\"");
        }
        other => panic!("expected InvalidOption, got {other:?}"),
    }
    match typed_with(with(Some("nested")), doc) {
        Err(Error::InvalidOption { reason, .. }) => assert!(
            reason.contains("records_at \"nested\" of input names an object")
                && reason.ends_with("give records_at \"nested.a\""),
            "{reason}"
        ),
        other => panic!("expected InvalidOption, got {other:?}"),
    }
    let found = typed_with(with(Some("3166-1")), doc).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, "AD");
    // Not given (the default key field): an object is key-value pairs.
    let pairs = typed_with(
        options(InputFormat::JsonObject, "key", "value"),
        br#"{"a": 1}"#,
    )
    .unwrap();
    assert_eq!(pairs[0].0, "a");
}

/// Issue 22: `lines`, one key per line with the value true; line endings
/// \n or \r\n, blank lines skipped, other bytes kept (spaces, non-UTF-8).
#[test]
fn lines_are_keys_whose_value_is_true() {
    let input = b"apple\r\n\nbanana split\n  \n\xffbin\nlast";
    let mut seen = Vec::new();
    import(
        &input[..],
        "in",
        &ImportOptions::new(InputFormat::Lines),
        &mut |r, at| {
            seen.push((
                r.key.to_vec(),
                r.key_utf8,
                Value::of_record(&r).unwrap(),
                at,
            ));
            Ok(())
        },
    )
    .unwrap();
    let keys: Vec<&[u8]> = seen.iter().map(|(k, ..)| k.as_slice()).collect();
    assert_eq!(
        keys,
        [&b"apple"[..], b"banana split", b"  ", b"\xffbin", b"last"]
    );
    assert!(seen.iter().all(|(_, _, v, _)| *v == Value::Bool(true)));
    assert_eq!(seen[1].3, Position::line(3));
    assert!(!seen[3].1, "a key that is not UTF-8 is binary");
    assert_eq!(InputFormat::from_name("lines"), Some(InputFormat::Lines));
    // A line too long to be a key is an error at its line, not held whole.
    let long = [b"a\n".to_vec(), vec![b'x'; hashfile::import::MAX_LINE + 10]].concat();
    let err = import(
        &long[..],
        "in",
        &ImportOptions::new(InputFormat::Lines),
        &mut |_, _| Ok(()),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("in: line 2: line is over 1048576 bytes"),
        "{err}"
    );
}
