//! What `on_duplicate` leaves of a repeated key: one definition for an
//! in-memory build (`Builder::resolve_duplicates`, which knows entries by
//! index) and a streaming or spilled one (`spill_repeats::resolve_repeats`, which
//! knows them by record offset).
//!
//! - [`each_repeated_key`] finds the repeated keys among hashes sorted
//!   with their ids;
//! - [`resolve`] says what one repeated key leaves, and where;
//! - [`FirstRepeat`] the error for repeats under `on_duplicate: error`.

use super::options::OnDuplicate;
use crate::error::{Error, Result};
use crate::format::{Record, ValueKind};
use crate::value::{self, Value};

/// What the position kept of a repeated key holds, its occurrences known
/// by `I`.
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
fn merged<'a, I: Copy>(
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

/// A repeated key resolved: every occurrence but `at` is dropped, and
/// `at`'s position holds `holds` (at its own record, nothing changes).
pub(super) struct Resolved<I> {
    pub(super) at: I,
    pub(super) holds: Holds<I>,
}

impl<I: Copy + PartialEq> Resolved<I> {
    /// Whether `at` keeps its own record.
    pub(super) fn keeps_its_record(&self) -> bool {
        matches!(self.holds, Holds::Record(o) if o == self.at)
    }
}

/// What `policy` leaves of a key whose `occurrences` (in input order, at
/// least two) have the records `record` gives: `first` and `merge` keep
/// the first position, `last` the last (as when the later entry alone had
/// been given); `merge` folds each later value into the first (`merged`).
pub(super) fn resolve<'a, I: Copy>(
    policy: OnDuplicate,
    occurrences: &[I],
    record: impl Fn(I) -> Record<'a> + Copy,
) -> Result<Resolved<I>> {
    let (first, last) = (occurrences[0], occurrences[occurrences.len() - 1]);
    Ok(match policy {
        OnDuplicate::First | OnDuplicate::Error => Resolved {
            at: first,
            holds: Holds::Record(first),
        },
        OnDuplicate::Last => Resolved {
            at: last,
            holds: Holds::Record(last),
        },
        OnDuplicate::Merge => {
            let mut holds = Holds::Record(first);
            for &later in &occurrences[1..] {
                holds = merged(holds, later, record)?;
            }
            Resolved { at: first, holds }
        }
    })
}

/// Calls `f` with the occurrences, ascending, of every key found more
/// than once among `sorted`: items sorted by `hash`, then by `id`, where
/// `key(id)` is the item's key. A key's occurrences share a hash, so they
/// lie in one run of equal hashes, where keys are compared.
pub(super) fn each_repeated_key<'a, T, I: Copy>(
    sorted: &[T],
    hash: impl Fn(&T) -> u64,
    id: impl Fn(&T) -> I,
    key: impl Fn(I) -> &'a [u8],
    mut f: impl FnMut(&[I]) -> Result<()>,
) -> Result<()> {
    let mut occurrences = Vec::new();
    let mut counted = Vec::new();
    for run in sorted
        .chunk_by(|a, b| hash(a) == hash(b))
        .filter(|run| run.len() > 1)
    {
        counted.clear();
        counted.resize(run.len(), false);
        for i in 0..run.len() {
            if counted[i] {
                continue;
            }
            occurrences.clear();
            occurrences.push(id(&run[i]));
            for j in i + 1..run.len() {
                if !counted[j] && key(id(&run[j])) == key(id(&run[i])) {
                    counted[j] = true;
                    occurrences.push(id(&run[j]));
                }
            }
            if occurrences.len() > 1 {
                f(&occurrences)?;
            }
        }
    }
    Ok(())
}

/// The repeated keys of a build under `on_duplicate: error`, counted as
/// they are found, for its error: the key whose second occurrence comes
/// first in input order (the perfect hash build stops at whichever it
/// meets), and how many other keys repeat.
pub(super) struct FirstRepeat<I> {
    /// The earliest second occurrence, and its key's first.
    earliest: Option<(I, I)>,
    keys: u64,
}

impl<I: Copy + Ord> FirstRepeat<I> {
    pub(super) fn new() -> FirstRepeat<I> {
        FirstRepeat {
            earliest: None,
            keys: 0,
        }
    }

    /// Counts a repeated key's occurrences (ascending).
    pub(super) fn add(&mut self, occurrences: &[I]) {
        self.keys += 1;
        if self
            .earliest
            .is_none_or(|(second, _)| occurrences[1] < second)
        {
            self.earliest = Some((occurrences[1], occurrences[0]));
        }
    }

    /// The first occurrence of the key the error names; `None` if no key
    /// was counted.
    pub(super) fn first(&self) -> Option<I> {
        self.earliest.map(|(_, first)| first)
    }

    /// The error, naming `key`, the key of `first()`.
    pub(super) fn error(&self, key: &[u8]) -> Error {
        Error::DuplicateKey {
            key: key.to_vec(),
            first: None,
            second: None,
            others: self.keys.saturating_sub(1),
        }
    }
}
