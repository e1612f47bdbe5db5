//! Every importer: unicode, empty strings, a 10 MB value, duplicates under
//! each policy, and malformed input that names its position.
use hashfile::import::{find_key, import, Column, ImportOptions, InputFormat};
use hashfile::{BuildOptions, Builder, Error, OnDuplicate, Reader, ValueKind};

fn read(format: InputFormat, input: &[u8]) -> hashfile::Result<Vec<(Vec<u8>, Vec<u8>, ValueKind)>> {
    read_with(ImportOptions::new(format), input)
}

fn read_with(options: ImportOptions, input: &[u8]) -> hashfile::Result<Vec<(Vec<u8>, Vec<u8>, ValueKind)>> {
    let mut out = Vec::new();
    import(input, "input", &options, &mut |e, _| {
        out.push((e.key.to_vec(), e.value.to_vec(), e.kind));
        Ok(())
    })?;
    Ok(out)
}

fn pairs(entries: &[(Vec<u8>, Vec<u8>, ValueKind)]) -> Vec<(&str, &str)> {
    entries.iter().map(|(k, v, _)| (std::str::from_utf8(k).unwrap(), std::str::from_utf8(v).unwrap())).collect()
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
        assert!(got.iter().all(|(_, _, kind)| *kind == ValueKind::Utf8), "{format:?}");
    }
}

#[test]
fn a_10_mb_value() {
    let big = "x".repeat(10 << 20);
    for (format, input) in [
        (InputFormat::JsonObject, format!("{{\"big\": \"{big}\"}}").into_bytes()),
        (InputFormat::JsonLines, format!("[\"big\", \"{big}\"]\n").into_bytes()),
        (InputFormat::Csv, format!("big,{big}\n").into_bytes()),
        (InputFormat::MessagePack, msgpack_map(&[(b"big", big.as_bytes(), false)])),
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
    let got = read(InputFormat::MessagePack, &msgpack_map(&[(b"k", b"\xff\x00", true), (b"t", b"text", true)])).unwrap();
    assert_eq!(got[0], (b"k".to_vec(), b"\xff\x00".to_vec(), ValueKind::Binary));
    assert_eq!(got[1].2, ValueKind::Binary, "MessagePack bin stays binary even if it is valid UTF-8");
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
    assert_eq!(pairs(&read_with(options.clone(), input).unwrap()), [("apple", "red"), ("banana, ripe", "yel\"low")]);
    options.value_column = Column::parse("weight");
    let err = read_with(options, input).unwrap_err().to_string();
    assert_eq!(err, "input: line 1: no value column named \"weight\" in the header");
}

#[test]
fn jsonl_field_names_are_selectable() {
    let mut options = ImportOptions::new(InputFormat::JsonLines);
    options.key_field = "id".into();
    options.value_field = "name".into();
    assert_eq!(pairs(&read_with(options, b"{\"id\": \"1\", \"name\": \"one\"}\n").unwrap()), [("1", "one")]);
}

#[test]
fn malformed_input_names_its_position() {
    let cases: Vec<(InputFormat, &[u8], &str)> = vec![
        (InputFormat::JsonObject, b"{\"a\": \"1\",\n \"b\": 2}", "input: line 2, column 8: value for key \"b\" is a number; only strings are supported for now"),
        (InputFormat::JsonObject, b"{\"a\": \"1\",\n \"b\" \"2\"}", "input: line 2, column 6: expected `:`"),
        (InputFormat::JsonObject, b"{\"a\": \"1\"} extra", "input: line 1, column 12: trailing characters"),
        (InputFormat::JsonPairs, b"[[\"a\", \"1\"], [\"b\"]]", "input: line 1, column 18: invalid length 1, expected a [key, value] pair"),
        (InputFormat::JsonLines, b"[\"a\", \"1\"]\n[\"b\", true]\n", "input: line 2, column 10: value for key \"b\" is a boolean; only strings are supported for now"),
        (InputFormat::JsonLines, b"[\"a\", \"1\"]\n{\"value\": \"x\"}\n", "input: line 2, column 14: missing field \"key\""),
        (InputFormat::JsonLines, b"[\"a\", \"1\"]\n[\"b\", \"1\"\n", "input: line 2, column 9: EOF while parsing a list"),
        (InputFormat::Csv, b"k,v\na,1\nb\n", "input: line 3: expected at least 2 fields, found 1"),
        (InputFormat::MessagePack, &[0x81, 0xa1, b'a', 0x05], "input: entry 1: value for key \"a\" is a number; only strings are supported for now"),
        (InputFormat::MessagePack, &[0x92], "input: input: expected a map at the top level"),
        (InputFormat::Yaml, b"a: '1'\nb: [1, 2]\n", "input: line 2, column 4: value for key \"b\" is an array; only strings are supported for now"),
        (InputFormat::Yaml, b"- a\n- b\n", "input: line 1, column 1: invalid type: sequence, expected a mapping"),
    ];
    for (format, input, expected) in cases {
        let err = read(format, input).unwrap_err();
        assert!(matches!(err, Error::Parse { .. }), "{format:?}: {err:?}");
        let message = err.to_string();
        assert!(message.starts_with(expected), "{format:?}: got {message:?}, want {expected:?}");
    }
}

fn build(options: BuildOptions, input: &[u8]) -> hashfile::Result<Reader<Vec<u8>>> {
    let mut builder = Builder::new(options)?;
    import(input, "input", &ImportOptions::new(InputFormat::JsonLines), &mut |e, _| {
        builder.insert_entry(e);
        Ok(())
    })?;
    Reader::new(builder.to_bytes()?)
}

#[test]
fn duplicate_policies() {
    let input = b"[\"a\", \"1\"]\n[\"b\", \"2\"]\n[\"a\", \"3\"]\n[\"c\", \"4\"]\n[\"a\", \"5\"]\n";
    let err = build(BuildOptions::default(), input).err().expect("default policy is error");
    assert!(matches!(err, Error::DuplicateKey { ref key, .. } if key == b"a"));
    let positions = find_key(&input[..], "input", &ImportOptions::new(InputFormat::JsonLines), b"a").unwrap();
    assert_eq!(positions.iter().map(|p| p.to_string()).collect::<Vec<_>>(), ["line 1", "line 3"]);

    let listed = |store: &Reader<Vec<u8>>| store.iter().map(|r| { let r = r.unwrap(); (String::from_utf8(r.key.to_vec()).unwrap(), String::from_utf8(r.value.to_vec()).unwrap()) }).collect::<Vec<_>>();
    let first = build(BuildOptions { on_duplicate: OnDuplicate::First, ..Default::default() }, input).unwrap();
    assert_eq!(listed(&first), [("a".into(), "1".into()), ("b".into(), "2".into()), ("c".into(), "4".into())]);
    let last = build(BuildOptions { on_duplicate: OnDuplicate::Last, ..Default::default() }, input).unwrap();
    assert_eq!(listed(&last), [("b".into(), "2".into()), ("c".into(), "4".into()), ("a".into(), "5".into())]);
    last.verify().unwrap();
    assert_eq!(last.get(b"a").unwrap().unwrap().value, b"5");
}

#[test]
fn formats_by_name_and_extension() {
    for (name, format) in InputFormat::NAMES {
        assert_eq!(InputFormat::from_name(name), Some(format));
        assert_eq!(format.name(), name);
    }
    for (path, format) in [("a.json", InputFormat::JsonObject), ("a.JSONL", InputFormat::JsonLines), ("a.ndjson", InputFormat::JsonLines), ("a.csv", InputFormat::Csv), ("a.tsv", InputFormat::Tsv), ("a.msgpack", InputFormat::MessagePack), ("a.yml", InputFormat::Yaml)] {
        assert_eq!(InputFormat::from_extension(std::path::Path::new(path)), Some(format), "{path}");
    }
    assert_eq!(InputFormat::from_extension(std::path::Path::new("a.txt")), None);
}

#[test]
fn output_is_identical_whatever_the_thread_count() {
    let build = |threads: usize| {
        rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| {
            let mut builder = Builder::new(BuildOptions { on_duplicate: OnDuplicate::Last, ..Default::default() }).unwrap();
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
        let inputs = [Input::new(csv.to_str().unwrap(), None, &base).unwrap(), Input::new(jsonl.to_str().unwrap(), None, &base).unwrap()];
        assert_eq!(inputs[1].options.format, InputFormat::JsonLines);
        let out = dir.path().join("out.hf");
        let mut phases = Vec::new();
        let summary = build_from(&inputs, &out, BuildOptions::default(), &mut |p| {
            phases.push((p.phase, p.entries, p.bytes_read, p.bytes_total));
            Ok(())
        })
        .unwrap();
        assert_eq!((summary.entries, summary.file_bytes), (3, std::fs::metadata(&out).unwrap().len()));
        let total = Some(16 + 15);
        assert_eq!(phases, [(Phase::Reading, 0, 0, total), (Phase::Building, 3, 31, total), (Phase::Publishing, 3, 31, total)]);
        let store = Reader::open(&out).unwrap();
        assert_eq!(store.get(b"three").unwrap().unwrap().value, b"3");
    }

    #[test]
    fn duplicate_error_names_both_places_and_cancel_publishes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.jsonl");
        let b = dir.path().join("b.jsonl");
        std::fs::write(&a, "[\"x\", \"1\"]\n[\"dup\", \"2\"]\n").unwrap();
        std::fs::write(&b, "[\"y\", \"3\"]\n\n[\"dup\", \"4\"]\n").unwrap();
        let base = ImportOptions::new(InputFormat::JsonLines);
        let inputs = [Input::new(a.to_str().unwrap(), None, &base).unwrap(), Input::new(b.to_str().unwrap(), None, &base).unwrap()];
        let out = dir.path().join("out.hf");
        let err = build_from(&inputs, &out, BuildOptions::default(), &mut |_| Ok(())).unwrap_err();
        assert_eq!(err.to_string(), format!("duplicate key \"dup\" ({}: line 2 and {}: line 3)", a.display(), b.display()));
        for cancel_at in [Phase::Reading, Phase::Building, Phase::Publishing] {
            let err = build_from(&inputs[..1], &out, BuildOptions::default(), &mut |p| if p.phase == cancel_at { Err(Error::Cancelled) } else { Ok(()) }).unwrap_err();
            assert!(matches!(err, Error::Cancelled), "{cancel_at:?}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no output and no temporary file");
        let err = Input::new("data.txt", None, &base).unwrap_err().to_string();
        assert!(err.contains("cannot tell the format of data.txt"), "{err}");
    }
}
