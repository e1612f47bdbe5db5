//! What every binding's `diff` does, once: the options judged by the
//! table's `Diff` call, both sides opened (each pinned to a generation if
//! asked), the diff run on the build pool, and its summary as the tree
//! `info` uses, so each language answers with the same keys.

use crate::diff::{diff, DiffOptions, DiffSink, Summary};
use crate::info::{Info, InfoValue};
use crate::options::{diff_request, Given, Language};

/// `diff(a, b, **options)`: gives `sink` each change's JSON object, in
/// order, and returns the summary (`summary_info`). Each side is a
/// store, a dataset or a URL; `generation_a` and `generation_b` pin a
/// dataset's generation; one dataset on both sides compares two of its
/// generations (`one_dataset`).
pub fn diff_call(
    a: &str,
    b: &str,
    given: &Given,
    language: Language,
    sink: &mut dyn DiffSink,
) -> hashfile::Result<InfoValue> {
    let mut request = diff_request(a, b, given, language)?;
    if a == b {
        one_dataset(a, &mut request)?;
    }
    let first = crate::open(a, request.a)?;
    let second = crate::open(b, request.b)?;
    let pool = crate::pool::for_build(request.threads)?;
    let (first, second) = (first.current_mapped()?, second.current_mapped()?);
    let summary = diff(
        &first,
        &second,
        DiffOptions {
            values: request.values,
        },
        &pool,
        sink,
    )?;
    Ok(summary_info(&summary))
}

/// A dataset diffed with itself compares two of its generations: the
/// second side's is `generation_b` or the current one, the first side's
/// `generation_a` or the one published before the second's
/// (`History::before`). A store is left as it is (the same on both sides).
fn one_dataset(location: &str, request: &mut crate::options::DiffRequest) -> hashfile::Result<()> {
    if request.a.generation.is_some() && request.b.generation.is_some() {
        return Ok(());
    }
    let Ok(history) = crate::dataset::history(location, &request.a.remote) else {
        return Ok(()); // not a dataset
    };
    let Some(current) = history.publishes.first() else {
        return Ok(());
    };
    let to = request
        .b
        .generation
        .get_or_insert_with(|| current.generation.clone())
        .clone();
    if request.a.generation.is_none() {
        let before = history.before(&to).ok_or_else(|| hashfile::Error::Dataset {
            path: Some(location.into()),
            what: format!("no generation kept was published before {to}, to compare it with (give generation_a)"),
        })?;
        request.a.generation = Some(before.to_owned());
    }
    Ok(())
}

/// A diff's summary: entries_a, entries_b, added, removed, changed,
/// unchanged, type_changed, type_changes (a list of {from, to, keys}),
/// bytes_added, bytes_removed, changed_bytes_before, changed_bytes_after,
/// shards (a list of {added, removed, changed}).
pub fn summary_info(summary: &Summary) -> InfoValue {
    let int = InfoValue::Int;
    let type_changes = summary
        .type_changes
        .iter()
        .map(|((from, to), keys)| {
            InfoValue::Map(Info(vec![
                ("from", InfoValue::Name(from)),
                ("to", InfoValue::Name(to)),
                ("keys", int(*keys)),
            ]))
        })
        .collect();
    let shards = summary
        .shards
        .iter()
        .map(|s| {
            InfoValue::Map(Info(vec![
                ("added", int(s.added)),
                ("removed", int(s.removed)),
                ("changed", int(s.changed)),
            ]))
        })
        .collect();
    InfoValue::Map(Info(vec![
        ("entries_a", int(summary.entries_a)),
        ("entries_b", int(summary.entries_b)),
        ("added", int(summary.added)),
        ("removed", int(summary.removed)),
        ("changed", int(summary.changed)),
        ("unchanged", int(summary.unchanged)),
        ("type_changed", int(summary.type_changed())),
        ("type_changes", InfoValue::List(type_changes)),
        ("bytes_added", int(summary.bytes_added)),
        ("bytes_removed", int(summary.bytes_removed)),
        ("changed_bytes_before", int(summary.changed_bytes_before)),
        ("changed_bytes_after", int(summary.changed_bytes_after)),
        ("shards", InfoValue::List(shards)),
    ]))
}
