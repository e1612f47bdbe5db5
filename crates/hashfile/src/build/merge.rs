//! `on_duplicate: merge`: what a repeated key's occurrences, taken in
//! input order, leave at its first occurrence's position. One definition
//! for an in-memory build (`Builder::resolve_duplicates`, which knows
//! entries by index) and a spilled one (`spill::resolve_repeats`, which
//! knows them by record offset).

use crate::error::Result;
use crate::format::{Record, ValueKind};
use crate::value::{self, Value};

/// What a repeated key resolves to so far, its occurrences known by `I`.
pub(super) enum Holds<I> {
    /// Occurrence `I`'s record as it is.
    Record(I),
    /// A deep-merged value, under occurrence `key_of`'s key.
    Merged { key_of: I, value: Value },
}

/// The outermost item of a record's typed value (`None` for the string
/// kinds): what a merge looks at to tell maps and nil from the rest.
fn typed_item<'a>(record: &Record<'a>) -> Option<value::Item<'a>> {
    (record.kind == ValueKind::Typed)
        .then(|| value::Cursor::new(record.value).next_item().ok())
        .flatten()
}

/// True if the record's value is a typed map: the only values a merge
/// merges into.
fn is_map(record: &Record<'_>) -> bool {
    matches!(typed_item(record), Some(value::Item::Map(_)))
}

/// `held` with occurrence `later` merged into it: a map into a map merges
/// (`value::deep_merge`); a later nil changes nothing (I18n loads a
/// locale file's `en:` with nothing under it as an empty Hash); anything
/// else the later record replaces. `record` gives an occurrence's record.
pub(super) fn merged<'a, I: Copy>(
    held: Holds<I>,
    later: I,
    record: impl Fn(I) -> Record<'a>,
) -> Result<Holds<I>> {
    let later_record = record(later);
    if matches!(typed_item(&later_record), Some(value::Item::Nil)) {
        return Ok(held);
    }
    if !is_map(&later_record) {
        return Ok(Holds::Record(later));
    }
    let (key_of, mut value) = match held {
        Holds::Record(i) if is_map(&record(i)) => (i, Value::of_record(&record(i))?),
        Holds::Merged { key_of, value } => (key_of, value),
        Holds::Record(_) => return Ok(Holds::Record(later)),
    };
    value::deep_merge(&mut value, Value::of_record(&later_record)?)?;
    Ok(Holds::Merged { key_of, value })
}

/// Appends to `out` the record a merge leaves: `value`, typed, under
/// `key_record`'s key.
pub(super) fn write_merged(key_record: Record<'_>, value: &Value, out: &mut Vec<u8>) -> Result<()> {
    let mut bytes = Vec::new();
    value.encode(&mut bytes)?;
    Record {
        value: &bytes,
        kind: ValueKind::Typed,
        ..key_record
    }
    .write(out);
    Ok(())
}
