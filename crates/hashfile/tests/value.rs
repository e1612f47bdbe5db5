//! The typed-value codec: round trips, canonical forms, the depth limit and
//! damaged input.

use hashfile::value::{self, Cursor, Item, Value, MAX_DEPTH};
use hashfile::{BuildOptions, Builder, Error, Reader, ValueKind};
use proptest::prelude::*;

fn encoded(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    v.encode(&mut out).unwrap();
    out
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        (-300i64..300).prop_map(Value::Int),
        (any::<bool>(), proptest::collection::vec(any::<u8>(), 9..24)).prop_map(
            |(negative, mut magnitude)| {
                *magnitude.last_mut().unwrap() |= 1; // past i64, no trailing zero
                Value::BigInt {
                    negative,
                    magnitude,
                }
            }
        ),
        any::<u64>().prop_map(|bits| Value::Float(f64::from_bits(bits))),
        prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(-0.0),
            Just(0.0)
        ]
        .prop_map(Value::Float),
        (
            proptest::collection::vec(any::<u8>(), 0..40),
            prop_oneof![
                Just(None),
                Just(Some("ASCII-8BIT".to_string())),
                Just(Some("US-ASCII".to_string())),
                Just(Some("Shift_JIS".to_string())),
                Just(Some("UTF-16LE".to_string()))
            ]
        )
            .prop_map(|(b, e)| Value::Str(b, e)),
        "[a-z_]{0,12}".prop_map(|s| Value::Symbol(s.into_bytes(), None)),
        proptest::collection::vec(any::<u8>(), 0..20).prop_map(Value::Custom),
    ]
}

fn nested() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(6, 200, 20, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..20).prop_map(Value::Array),
            proptest::collection::vec((inner.clone(), inner), 0..20).prop_map(Value::Map),
        ]
    })
}

proptest! {
    #[test]
    fn round_trips(v in nested()) {
        let bytes = encoded(&v);
        value::check(&bytes).unwrap();
        prop_assert_eq!(Value::decode(&bytes).unwrap(), v);
    }

    #[test]
    fn damaged_bytes_give_errors_not_panics(v in nested(), flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let mut bytes = encoded(&v);
        for (i, x) in flips {
            let i = i.index(bytes.len());
            bytes[i] ^= x | 1;
        }
        // Either an error or some well-formed value: never a panic.
        if let Ok(decoded) = Value::decode(&bytes) {
            value::check(&encoded(&decoded)).unwrap();
        }
    }

    #[test]
    fn truncation_is_an_error(v in nested(), cut in any::<prop::sample::Index>()) {
        let bytes = encoded(&v);
        let cut = cut.index(bytes.len());
        prop_assert!(Value::decode(&bytes[..cut]).is_err());
    }
}

#[test]
fn integers_take_their_shortest_form() {
    let cases: &[(i64, &[u8])] = &[
        (0, &[0x00]),
        (127, &[0x7f]),
        (128, &[0xcf, 0x80]),
        (255, &[0xcf, 0xff]),
        (256, &[0xc4, 0x80, 0x04]),
        (-1, &[0xff]),
        (-32, &[0xe0]),
        (-33, &[0xc4, 0x41]),
        (
            i64::MIN,
            &[
                0xc4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
            ],
        ),
    ];
    for (n, bytes) in cases {
        assert_eq!(encoded(&Value::Int(*n)), *bytes, "{n}");
        assert_eq!(Value::decode(bytes).unwrap(), Value::Int(*n));
    }
}

#[test]
fn big_integers_that_fit_are_written_as_integers() {
    let mut out = Vec::new();
    value::write_bigint(&mut out, true, &(1u64 << 63).to_le_bytes());
    assert_eq!(Value::decode(&out).unwrap(), Value::Int(i64::MIN));
    out.clear();
    value::write_bigint(
        &mut out,
        false,
        &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00],
    );
    assert_eq!(out[0], value::tag::BIGINT_POSITIVE);
    assert_eq!(
        Value::decode(&out).unwrap(),
        Value::BigInt {
            negative: false,
            magnitude: vec![0xff; 8]
        }
    );
}

#[test]
fn floats_are_bit_exact() {
    for f in [
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff0_0000_0000_0001),
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        0.0,
        f64::MIN_POSITIVE,
        5e-324,
        0.1,
    ] {
        match Value::decode(&encoded(&Value::Float(f))).unwrap() {
            Value::Float(g) => assert_eq!(g.to_bits(), f.to_bits()),
            other => panic!("{other:?}"),
        }
    }
}

fn nest(depth: usize) -> Value {
    (0..depth).fold(Value::Int(1), |v, _| Value::Array(vec![v]))
}

#[test]
fn depth_limit_is_enforced_both_ways() {
    let ok = encoded(&nest(MAX_DEPTH));
    assert_eq!(Value::decode(&ok).unwrap(), nest(MAX_DEPTH));
    let err = nest(MAX_DEPTH + 1).encode(&mut Vec::new()).unwrap_err();
    assert!(
        matches!(
            err,
            hashfile::Error::Limit {
                what: "nesting depth of a value",
                max: 100
            }
        ),
        "{err:?}"
    );
    // Hand-made bytes nested one level deeper are refused by the reader.
    let mut deep = ok.clone();
    let start = value::ContainerStart::begin(&[]);
    start.end_array(&mut deep, 1);
    let err = Value::decode(&deep).unwrap_err();
    assert!(
        matches!(&err, hashfile::Error::Corrupt { section: "records", what, .. } if what.contains("nested deeper than 100")),
        "{err:?}"
    );
}

#[test]
fn skipping_a_container_is_one_step() {
    let v = Value::Array(vec![
        Value::Map(vec![(Value::str("a"), nest(50))]),
        Value::str("after"),
    ]);
    let bytes = encoded(&v);
    let Item::Array(outer) = Cursor::new(&bytes).next_item().unwrap() else {
        panic!()
    };
    let mut c = outer.cursor();
    c.skip().unwrap();
    assert_eq!(
        c.next_item().unwrap(),
        Item::Str(b"after", value::Encoding::Utf8)
    );
    assert!(c.is_at_end());
}

#[test]
fn damaged_counts_are_refused_before_allocation() {
    // An array claiming 2^60 elements in a 1-byte body.
    let bytes = [
        value::tag::ARRAY,
        0x80,
        0x80,
        0x80,
        0x80,
        0x80,
        0x80,
        0x80,
        0x80,
        0x10,
        0x01,
        0xc0,
    ];
    let corrupt = |err: hashfile::Error| match err {
        hashfile::Error::Corrupt {
            section: "records",
            what,
            ..
        } => what,
        other => panic!("expected a corrupt value, got {other:?}"),
    };
    assert_eq!(
        corrupt(Value::decode(&bytes).unwrap_err()),
        "malformed value: count larger than its body at byte 10"
    );
    assert_eq!(
        corrupt(Value::decode(&[0xd5]).unwrap_err()),
        "malformed value: unknown tag 0xd5 at byte 0"
    );
}

#[test]
fn typed_records_set_the_required_flag_and_verify_checks_them() {
    let mut b = Builder::new(BuildOptions::default()).unwrap();
    b.insert_value(b"plain", true, &Value::str("text")).unwrap();
    let strings_only = b.to_bytes().unwrap();
    assert_eq!(
        Reader::new(strings_only.as_slice())
            .unwrap()
            .header()
            .required_flags,
        0
    );

    let config = Value::Map(vec![
        (Value::str("burst"), Value::Int(100)),
        (
            Value::str("regions"),
            Value::Array(vec![Value::str("eu"), Value::str("us")]),
        ),
    ]);
    b.insert_value(b"limits", true, &config).unwrap();
    let bytes = b.to_bytes().unwrap();
    let store = Reader::new(bytes.as_slice()).unwrap();
    assert_eq!(
        store.header().required_flags,
        hashfile::format::REQUIRED_TYPED_VALUES
    );
    store.verify().unwrap();
    let record = store.get(b"limits").unwrap().unwrap();
    assert_eq!(record.kind(), ValueKind::Typed);
    assert_eq!(record.decode().unwrap(), config);
    assert_eq!(
        store.get(b"plain").unwrap().unwrap().kind(),
        ValueKind::Utf8
    );

    // A typed value whose bytes are damaged fails to decode, and verify
    // (checksums first) refuses the file.
    let at = bytes.windows(2).rposition(|w| w == b"eu").unwrap();
    let mut damaged = bytes.clone();
    damaged[at - 1] = 0xd7;
    let store = Reader::new(damaged.as_slice()).unwrap();
    let err = store.get(b"limits").unwrap().unwrap().decode().unwrap_err();
    assert!(
        matches!(&err, hashfile::Error::Corrupt { section: "records", what, .. } if what.starts_with("malformed value: unknown tag 0xd7")),
        "{err:?}"
    );
    assert!(store.verify().is_err());
}

/// `dig` walks paths into encoded bytes as Ruby's `Hash#dig` would: string
/// keys by bytes and compatible encodings, symbols by name, integers as map
/// keys and array indices (negative from the end), the last of repeated
/// keys, nil for anything absent, and `Stuck` where Ruby must decide.
#[test]
fn dig_walks_paths_as_hash_dig_does() {
    use hashfile::value::{dig, Dig, Encoding, Probe};
    let v = Value::Map(vec![
        (
            Value::str("limits"),
            Value::Map(vec![
                (Value::str("api"), Value::Int(1)),
                (Value::str("api"), Value::Int(2)),
            ]),
        ),
        (
            Value::str("list"),
            Value::Array(vec![Value::Int(10), Value::Nil, Value::str("x")]),
        ),
        (Value::Symbol(b"sym".to_vec(), None), Value::Int(3)),
        (Value::Int(7), Value::str("seven")),
        (
            Value::Str(b"\xff".to_vec(), Some("ASCII-8BIT".into())),
            Value::Int(4),
        ),
        (Value::str(&"k".repeat(40)), Value::Int(5)),
        (
            Value::Str(b"sjis".to_vec(), Some("Shift_JIS".into())),
            Value::Int(6),
        ),
    ]);
    let bytes = encoded(&v);
    let s = |b: &'static [u8]| Probe::Str {
        bytes: b,
        binary: false,
    };
    let bin = |b: &'static [u8]| Probe::Str {
        bytes: b,
        binary: true,
    };
    let long = "k".repeat(40);
    let cases: Vec<(Vec<Probe>, bool, Dig)> = vec![
        (
            vec![s(b"limits"), s(b"api")],
            false,
            Dig::Found(Item::Int(2)),
        ),
        (
            vec![s(b"list"), Probe::Int(0)],
            false,
            Dig::Found(Item::Int(10)),
        ),
        (
            vec![s(b"list"), Probe::Int(-1)],
            false,
            Dig::Found(Item::Str(b"x", Encoding::Utf8)),
        ),
        (vec![s(b"list"), Probe::Int(3)], false, Dig::Absent),
        (vec![s(b"list"), Probe::Int(-4)], false, Dig::Absent),
        (
            vec![s(b"list"), Probe::Int(1), s(b"deeper")],
            false,
            Dig::Absent,
        ),
        (vec![Probe::Symbol(b"sym")], false, Dig::Found(Item::Int(3))),
        (vec![s(b"sym")], false, Dig::Absent),
        (
            vec![Probe::Int(7)],
            false,
            Dig::Found(Item::Str(b"seven", Encoding::Utf8)),
        ),
        (vec![bin(b"\xff")], false, Dig::Found(Item::Int(4))),
        (vec![s(b"\xff")], false, Dig::Absent),
        (
            vec![bin(b"limits"), bin(b"api")],
            false,
            Dig::Found(Item::Int(2)),
        ),
        (
            vec![Probe::Str {
                bytes: long.as_bytes(),
                binary: false,
            }],
            false,
            Dig::Found(Item::Int(5)),
        ),
        (vec![s(b"sjis")], false, Dig::Absent),
        (vec![s(b"missing")], false, Dig::Absent),
        // With symbolize_names, string keys are symbols.
        (
            vec![Probe::Symbol(b"limits"), Probe::Symbol(b"api")],
            true,
            Dig::Found(Item::Int(2)),
        ),
        (vec![s(b"limits")], true, Dig::Absent),
        (
            vec![],
            false,
            Dig::Found(Cursor::new(&bytes).next_item().unwrap()),
        ),
    ];
    for (path, symbolize, expected) in cases {
        assert_eq!(
            dig(&bytes, &path, symbolize).unwrap(),
            expected,
            "{path:?} symbolize={symbolize}"
        );
    }
    // Steps the bytes cannot take are handed back with the item.
    match dig(&bytes, &[s(b"list"), s(b"name")], false).unwrap() {
        Dig::Stuck {
            step: 1,
            item: Item::Array(c),
        } => assert_eq!(c.len, 3),
        other => panic!("expected to be stuck on the array, got {other:?}"),
    }
    assert_eq!(
        dig(&bytes, &[Probe::Int(7), Probe::Int(0)], false).unwrap(),
        Dig::Stuck {
            step: 1,
            item: Item::Str(b"seven", Encoding::Utf8)
        }
    );
    // Damage under the path is an error, not a wrong answer.
    let mut damaged = bytes.clone();
    let at = damaged.windows(5).position(|w| w == b"seven").unwrap();
    damaged[at - 1] = 0xd9;
    assert!(matches!(
        dig(&damaged, &[Probe::Int(7)], false),
        Err(hashfile::Error::Corrupt { .. })
    ));
}

#[test]
fn dig_compares_numbers_and_booleans_as_ruby_eql() {
    use hashfile::value::{dig, Dig, Encoding, Probe};
    // Keys a Ruby Hash holds apart, and Python's == would merge.
    let v = Value::Map(vec![
        (Value::Int(1), Value::str("int")),
        (Value::Float(1.0), Value::str("float")),
        (Value::Bool(true), Value::str("true")),
        (Value::Int(0), Value::str("zero")),
        (Value::Bool(false), Value::str("false")),
        (Value::Float(-0.0), Value::str("minus zero")),
        (Value::Float(f64::NAN), Value::str("nan")),
        (Value::Symbol(b"s".to_vec(), None), Value::str("symbol")),
        (Value::str("t"), Value::str("string")),
        (
            Value::Str(b"b".to_vec(), Some("ASCII-8BIT".into())),
            Value::str("binary"),
        ),
        (
            Value::Str(b"j".to_vec(), Some("Shift_JIS".into())),
            Value::str("sjis"),
        ),
    ]);
    let bytes = encoded(&v);
    let found = |s: &'static str| Dig::Found(Item::Str(s.as_bytes(), Encoding::Utf8));
    let cases: Vec<(Probe, Dig)> = vec![
        (Probe::Int(1), found("int")),
        (Probe::Float(1.0), found("float")),
        (Probe::Bool(true), found("true")),
        (Probe::Int(0), found("zero")),
        (Probe::Bool(false), found("false")),
        (Probe::Float(0.0), found("minus zero")),
        (Probe::Float(-0.0), found("minus zero")),
        (Probe::Float(f64::NAN), Dig::Absent),
        (Probe::Float(2.0), Dig::Absent),
        (Probe::Int(2), Dig::Absent),
        // Text: a String (not binary) or a Symbol, whatever the encoding.
        (Probe::Text(b"s"), found("symbol")),
        (Probe::Text(b"t"), found("string")),
        (Probe::Text(b"j"), found("sjis")),
        (Probe::Text(b"b"), Dig::Absent),
        (Probe::Text(b"1"), Dig::Absent),
    ];
    for (probe, expected) in cases {
        assert_eq!(dig(&bytes, &[probe], false).unwrap(), expected, "{probe:?}");
    }
    // A Float or a boolean is no index into an array: the binding's own.
    let list = encoded(&Value::Array(vec![Value::Int(5), Value::Int(6)]));
    assert!(matches!(
        dig(&list, &[Probe::Bool(true)], false).unwrap(),
        Dig::Stuck { step: 0, .. }
    ));
    assert!(matches!(
        dig(&list, &[Probe::Float(1.0)], false).unwrap(),
        Dig::Stuck { step: 0, .. }
    ));
}

#[test]
fn a_text_probe_refuses_a_string_and_a_symbol_of_one_name() {
    use hashfile::value::{dig, Dig, Probe};
    let v = Value::Map(vec![
        (Value::str("a"), Value::Int(1)),
        (Value::Symbol(b"a".to_vec(), None), Value::Int(2)),
        (Value::str("b"), Value::Int(3)),
    ]);
    let bytes = encoded(&v);
    match dig(&bytes, &[Probe::Text(b"a")], false) {
        Err(Error::KeysCollide { keys, language }) => {
            assert_eq!((keys.as_str(), language), ("\"a\" and :a", "Python"))
        }
        other => panic!("expected KeysCollide, got {other:?}"),
    }
    assert_eq!(
        dig(&bytes, &[Probe::Text(b"b")], false).unwrap(),
        Dig::Found(Item::Int(3))
    );
    // Ruby's probes tell them apart.
    assert_eq!(
        dig(&bytes, &[Probe::Symbol(b"a")], false).unwrap(),
        Dig::Found(Item::Int(2))
    );
}

#[test]
fn a_body_longer_than_its_count_is_refused_by_every_reader() {
    use hashfile::value::{dig, Probe};
    // {"name" => "ann", "role" => "admin"} with its count made 1: the
    // second pair hidden in the body.
    let v = Value::Map(vec![
        (Value::str("name"), Value::str("ann")),
        (Value::str("role"), Value::str("admin")),
    ]);
    let mut bytes = encoded(&v);
    assert_eq!(bytes[0], 0x82);
    bytes[0] = 0x81;
    let hidden = |e: &Error| {
        e.to_string()
            .contains("container body longer than its items")
    };
    assert!(hidden(&Value::decode(&bytes).unwrap_err()));
    assert!(hidden(&hashfile::value::check(&bytes).unwrap_err()));
    for probe in [b"role".as_slice(), b"name".as_slice()] {
        let path = [Probe::Str {
            bytes: probe,
            binary: false,
        }];
        assert!(hidden(&dig(&bytes, &path, false).unwrap_err()), "{probe:?}");
    }
    // An array's likewise: ["ann", "admin"] counted as one item, whatever
    // index the path takes.
    let mut array = encoded(&Value::Array(vec![Value::str("ann"), Value::str("admin")]));
    array[0] -= 1;
    assert!(hidden(&Value::decode(&array).unwrap_err()));
    for index in [0, -1] {
        let err = dig(&array, &[Probe::Int(index)], false).unwrap_err();
        assert!(hidden(&err), "{index}: {err}");
    }
    // Bytes after the value: the walk refuses them as a decode does.
    let mut trailing = encoded(&Value::Array(vec![Value::Int(1)]));
    trailing.push(2);
    let err = dig(&trailing, &[Probe::Int(0)], false).unwrap_err();
    assert!(err.to_string().contains("trailing bytes"), "{err}");
}

#[test]
fn items_are_named_in_rubys_notation() {
    use hashfile::value::Encoding;
    let cases: Vec<(Item, &str)> = vec![
        (Item::Int(1), "1"),
        (Item::Float(1.0), "1.0"),
        (Item::Float(2.5), "2.5"),
        (Item::Bool(true), "true"),
        (Item::Nil, "nil"),
        (Item::Str(b"a", Encoding::Utf8), "\"a\""),
        (Item::Str(b"a", Encoding::Binary), "\"a\".b"),
        (Item::Symbol(b"a", Encoding::Utf8), ":a"),
        (Item::Symbol(b"a b", Encoding::Utf8), ":\"a b\""),
    ];
    for (item, shown) in cases {
        assert_eq!(item.to_string(), shown);
    }
    assert_eq!(
        hashfile::value::join_items(&[Item::Int(1), Item::Float(1.0), Item::Bool(true)]),
        "1, 1.0 and true"
    );
}

#[test]
fn a_symbol_name_must_be_valid_in_its_encoding() {
    for (name, encoding) in [
        (b"ad\xffin".as_slice(), None),
        (b"caf\xc3\xa9".as_slice(), Some("US-ASCII")),
    ] {
        let bytes = encoded(&Value::Symbol(name.to_vec(), encoding.map(String::from)));
        let err = Value::decode(&bytes).unwrap_err();
        assert!(
            err.to_string()
                .contains("a symbol name is not valid in its encoding"),
            "{err}"
        );
    }
    // Binary names are any bytes, as in Ruby.
    let bytes = encoded(&Value::Symbol(b"\xff".to_vec(), Some("ASCII-8BIT".into())));
    assert!(Value::decode(&bytes).is_ok());
}

/// A third decoder on the one walk: writes a value's outline as text.
/// It sees containers made, then filled in order, then finished; and the
/// walk's checks (depth, trailing bytes) reach it through `error`.
struct Outline;

impl value::walk::Build for Outline {
    type Value = String;
    type Error = String;

    fn error(&mut self, e: Error) -> String {
        format!("damaged: {e}")
    }
    fn leaf(&mut self, item: &Item<'_>) -> Result<String, String> {
        Ok(item.to_string())
    }
    fn array(&mut self, len: u64) -> Result<String, String> {
        Ok(format!("[{len}:"))
    }
    fn push(&mut self, array: &mut String, element: String) -> Result<(), String> {
        array.push(' ');
        array.push_str(&element);
        Ok(())
    }
    fn map(&mut self, len: u64) -> Result<String, String> {
        Ok(format!("{{{len}:"))
    }
    fn insert(
        &mut self,
        map: &mut String,
        key: String,
        value: String,
        stored: value::Container<'_>,
    ) -> Result<(), String> {
        if key == "\"bad\"" {
            return Err(format!("refused a key of a map of {}", stored.len));
        }
        map.push_str(&format!(" {key}=>{value}"));
        Ok(())
    }
    fn finish(&mut self, container: String) -> Result<String, String> {
        let close = if container.starts_with('[') {
            " ]"
        } else {
            " }"
        };
        Ok(container + close)
    }
}

#[test]
fn the_walk_builds_containers_in_order_and_reports_damage_through_the_builder() {
    let v = Value::Map(vec![
        (
            Value::str("a"),
            Value::Array(vec![Value::Int(1), Value::Nil]),
        ),
        (Value::Array(vec![Value::Bool(true)]), Value::Float(2.5)),
    ]);
    let bytes = encoded(&v);
    assert_eq!(
        value::walk::value(&mut Outline, &bytes).unwrap(),
        "{2: \"a\"=>[2: 1 nil ] [1: true ]=>2.5 }"
    );
    // A byte after the value.
    let mut trailing = bytes.clone();
    trailing.push(0);
    let e = value::walk::value(&mut Outline, &trailing).unwrap_err();
    assert!(
        e.starts_with("damaged: ") && e.contains("trailing bytes"),
        "{e}"
    );
    // Too deep: one level past the limit.
    let deepest = value::walk::value(&mut Outline, &encoded(&nest(MAX_DEPTH))).unwrap();
    assert!(deepest.starts_with("[1: [1:"), "{deepest}");
    // nest(MAX_DEPTH) wrapped once more, written by hand (encode refuses it).
    let mut deeper = Vec::new();
    let inner = encoded(&nest(MAX_DEPTH));
    let start = value::ContainerStart::begin(&deeper);
    deeper.extend_from_slice(&inner);
    start.end_array(&mut deeper, 1);
    let e = value::walk::value(&mut Outline, &deeper).unwrap_err();
    assert!(e.contains("nested deeper than 100 levels"), "{e}");
    // The builder's own error stops the walk.
    let bad = encoded(&Value::Map(vec![(Value::str("bad"), Value::Nil)]));
    assert_eq!(
        value::walk::value(&mut Outline, &bad).unwrap_err(),
        "refused a key of a map of 1"
    );
}

/// The refusal every binding's encoder raises: the key, the path from the
/// outside in (a map key shown as stored), and what was refused.
#[test]
fn unencodable_names_the_key_and_the_path() {
    let mut key = Vec::new();
    Value::str("when").encode(&mut key).unwrap();
    let e = value::Unencodable::object("Time")
        .in_element(1)
        .in_value_of(&key)
        .for_key(b"t", "nil and Array");
    assert_eq!(
        e.to_string(),
        r#"value for key "t" at ["when", 1] is a Time; Hashfile stores nil and Array"#
    );
    assert!(matches!(
        e,
        Error::Unencodable {
            wrong_type: true,
            ..
        }
    ));

    // Too deep: the first three steps say where it starts.
    let mut deep = value::Unencodable::too_deep();
    for _ in 0..5 {
        deep = deep.in_element(0);
    }
    let e = deep.in_key(2).for_key(b"d", "-");
    assert_eq!(
        e.to_string(),
        format!(
            r#"value for key "d" at [key of pair 2, 0, 0, ...] nests deeper than {MAX_DEPTH} levels (or contains itself)"#
        )
    );
    assert!(matches!(
        e,
        Error::Unencodable {
            wrong_type: false,
            ..
        }
    ));

    // A long map key is cut; at the top there is no path.
    let mut long = Vec::new();
    Value::str(&"k".repeat(60)).encode(&mut long).unwrap();
    let e = value::Unencodable::object("Proc")
        .in_value_of(&long)
        .for_key(b"x", "-");
    assert!(
        e.to_string()
            .starts_with(&format!("value for key \"x\" at [\"{}...]", "k".repeat(36))),
        "{e}"
    );
    assert_eq!(
        value::Unencodable::object("Proc")
            .for_key(b"x", "-")
            .to_string(),
        r#"value for key "x" is a Proc; Hashfile stores -"#
    );
}
