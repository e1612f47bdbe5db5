//! Deep merge of typed values, the rule `I18n::Backend::Simple` merges
//! locale files by (`I18n::Utils.deep_merge!`): where both sides hold a map
//! under a key, the maps merge, recursively; anywhere else the later value
//! replaces the earlier one. A key keeps the position it first had; keys
//! new to a map go after the old ones, in their order. This is Ruby's
//! `Hash#merge!` with a block that recurses into Hash pairs.
//!
//! Keys match when they decode to the same value (`Value`'s equality): a
//! String key and a Symbol key of the same name stay two keys, as they do
//! in a Ruby Hash.

use std::collections::HashMap;

use super::Value;
use crate::error::Result;

/// Merges `later` into `earlier` by the rule above.
pub fn deep_merge(earlier: &mut Value, later: Value) -> Result<()> {
    match (earlier, later) {
        (Value::Map(old), Value::Map(new)) => merge_maps(old, new),
        (earlier, later) => {
            *earlier = later;
            Ok(())
        }
    }
}

fn merge_maps(old: &mut Vec<(Value, Value)>, new: Vec<(Value, Value)>) -> Result<()> {
    // Keys are found by their encoding, which is one per value, so a merge
    // of two large maps is linear rather than quadratic.
    let mut index: HashMap<Vec<u8>, usize> = HashMap::with_capacity(old.len());
    for (i, (key, _)) in old.iter().enumerate() {
        index.entry(encoded(key)?).or_insert(i);
    }
    for (key, value) in new {
        let bytes = encoded(&key)?;
        match index.get(&bytes) {
            Some(&i) => deep_merge(&mut old[i].1, value)?,
            None => {
                index.insert(bytes, old.len());
                old.push((key, value));
            }
        }
    }
    Ok(())
}

fn encoded(value: &Value) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    value.encode(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, Value)]) -> Value {
        Value::Map(
            pairs
                .iter()
                .map(|(k, v)| (Value::str(k), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn maps_merge_recursively_and_later_scalars_win() {
        let mut a = map(&[
            ("greeting", Value::str("hi")),
            (
                "date",
                map(&[
                    ("formats", map(&[("short", Value::str("%b %d"))])),
                    ("order", Value::Int(1)),
                ]),
            ),
        ]);
        let b = map(&[
            (
                "date",
                map(&[
                    ("formats", map(&[("long", Value::str("%B %d, %Y"))])),
                    ("order", map(&[("x", Value::Nil)])),
                ]),
            ),
            ("bye", Value::str("ciao")),
        ]);
        deep_merge(&mut a, b).unwrap();
        let want = map(&[
            ("greeting", Value::str("hi")),
            (
                "date",
                map(&[
                    (
                        "formats",
                        map(&[
                            ("short", Value::str("%b %d")),
                            ("long", Value::str("%B %d, %Y")),
                        ]),
                    ),
                    ("order", map(&[("x", Value::Nil)])),
                ]),
            ),
            ("bye", Value::str("ciao")),
        ]);
        assert_eq!(a, want);
    }

    #[test]
    fn a_later_scalar_replaces_a_map_and_strings_and_symbols_stay_apart() {
        let mut a = map(&[("a", map(&[("b", Value::Int(1))]))]);
        deep_merge(&mut a, map(&[("a", Value::str("flat"))])).unwrap();
        assert_eq!(a, map(&[("a", Value::str("flat"))]));
        let mut s = map(&[("k", Value::Int(1))]);
        deep_merge(
            &mut s,
            Value::Map(vec![(Value::Symbol(b"k".to_vec(), None), Value::Int(2))]),
        )
        .unwrap();
        assert_eq!(
            s,
            Value::Map(vec![
                (Value::str("k"), Value::Int(1)),
                (Value::Symbol(b"k".to_vec(), None), Value::Int(2))
            ])
        );
    }
}
