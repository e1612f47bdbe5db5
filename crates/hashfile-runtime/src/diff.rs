//! What changed between two tables (two stores, two datasets, two
//! generations of one): the keys added, removed and changed, as JSON
//! Lines, and a summary. Both sides are hash-indexed, so nothing is held
//! whole: each side is read in stored order, in blocks, and each block's
//! keys are looked up in the other side in one batch (`get_many`), the
//! blocks spread over a thread pool and written out in order.

use std::collections::BTreeMap;

use hashfile::value::{json, type_name};
use hashfile::RecordBuf;

use crate::table::{Cursor, Table};

/// Records read from one side, then looked up in the other, per block.
const BLOCK: usize = 8192;

/// Blocks read ahead and handed to the pool at once, at most.
const BLOCKS_AT_ONCE: usize = 16;

/// Key and value bytes read ahead at once, at most (past one block): what
/// bounds a diff's memory, since each change's line holds its values.
const BYTES_AT_ONCE: usize = 32 << 20;

/// What a diff reports besides the lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Entries of the first side.
    pub entries_a: u64,
    /// Entries of the second side.
    pub entries_b: u64,
    /// Keys only in the second side.
    pub added: u64,
    /// Keys only in the first side.
    pub removed: u64,
    /// Keys in both whose values differ.
    pub changed: u64,
    /// Keys in both with the same value.
    pub unchanged: u64,
    /// Changed keys whose value's type changed ("string" to "map", say),
    /// counted by (from, to).
    pub type_changes: BTreeMap<(&'static str, &'static str), u64>,
    /// Key and value bytes of the keys added.
    pub bytes_added: u64,
    /// Key and value bytes of the keys removed.
    pub bytes_removed: u64,
    /// Value bytes of the changed keys, before and after.
    pub changed_bytes_before: u64,
    /// See `changed_bytes_before`.
    pub changed_bytes_after: u64,
    /// Added, removed and changed keys per shard of the second side (a
    /// dataset's shards; one for a store), by where each key routes.
    pub shards: Vec<ShardChanges>,
}

/// Changes within one shard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShardChanges {
    /// Keys added.
    pub added: u64,
    /// Keys removed.
    pub removed: u64,
    /// Keys changed.
    pub changed: u64,
}

impl Summary {
    /// Keys whose value's type changed, of every kind.
    pub fn type_changed(&self) -> u64 {
        self.type_changes.values().sum()
    }

    fn add(&mut self, other: Summary) {
        self.added += other.added;
        self.removed += other.removed;
        self.changed += other.changed;
        self.unchanged += other.unchanged;
        for (pair, n) in other.type_changes {
            *self.type_changes.entry(pair).or_default() += n;
        }
        self.bytes_added += other.bytes_added;
        self.bytes_removed += other.bytes_removed;
        self.changed_bytes_before += other.changed_bytes_before;
        self.changed_bytes_after += other.changed_bytes_after;
        for (mine, theirs) in self.shards.iter_mut().zip(other.shards) {
            mine.added += theirs.added;
            mine.removed += theirs.removed;
            mine.changed += theirs.changed;
        }
    }
}

/// How a diff runs.
#[derive(Clone, Copy, Debug)]
pub struct DiffOptions {
    /// Whether each line carries the values (`value`, `before`, `after`),
    /// or the key alone.
    pub values: bool,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions { values: true }
    }
}

/// Where a diff's lines go, on the calling thread.
pub trait DiffSink {
    /// One change, as one JSON object.
    fn line(&mut self, line: &str) -> hashfile::Result<()>;

    /// Between blocks (every `BLOCK * BLOCKS_AT_ONCE` records): a binding
    /// looks for an interrupt here, and stops the diff with its error.
    fn between(&mut self) -> hashfile::Result<()> {
        Ok(())
    }
}

impl<F: FnMut(&str) -> hashfile::Result<()>> DiffSink for F {
    fn line(&mut self, line: &str) -> hashfile::Result<()> {
        self(line)
    }
}

/// Diffs `a` against `b` on `pool`: `sink` is given each change as one
/// JSON object, in `a`'s stored order for keys removed or changed, then
/// `b`'s for keys added (two local datasets of as many shards: so for each
/// pair of shards in turn, each pair's two stores mapped only while it is
/// compared, which bounds the pages a diff of large datasets maps):
///
/// ```text
/// {"op":"removed","key":"k1","value":1}
/// {"op":"changed","key":"k2","before":"x","after":{"n":2}}
/// {"op":"added","key":"k3","value":[3]}
/// ```
///
/// A key that is not UTF-8 is `{"$bytes":"HEX"}`; a value JSON cannot
/// hold (a NaN, binary bytes that are not UTF-8) is `{"$not_json":
/// "why"}`: the diff never stops for one. An error from `sink` stops it.
pub fn diff(
    a: &Table,
    b: &Table,
    options: DiffOptions,
    pool: &rayon::ThreadPool,
    sink: &mut dyn DiffSink,
) -> hashfile::Result<Summary> {
    let shards = b.shard_count();
    let mut summary = Summary {
        entries_a: a.len(),
        entries_b: b.len(),
        shards: vec![ShardChanges::default(); shards],
        ..Summary::default()
    };
    if let Some(keys) = delta_keys(a, b)? {
        delta(a, b, &keys, options, pool, sink, &mut summary)?;
        return Ok(summary);
    }
    match paired(a, b) {
        // Keys of shard i are in shard i of either side: each pair apart,
        // its two stores mapped only while it is compared.
        Some((da, db)) => {
            for i in 0..shards {
                let (sa, sb) = (
                    Table::Store(da.open_shard(i)?.into_base().expect("opened anew")),
                    Table::Store(db.open_shard(i)?.into_base().expect("opened anew")),
                );
                let mut pair = Summary {
                    shards: vec![ShardChanges::default(); 1],
                    ..Summary::default()
                };
                both_sides(&sa, &sb, options, pool, sink, &mut pair)?;
                let counts = pair.shards[0];
                pair.shards = vec![ShardChanges::default(); shards];
                pair.shards[i] = counts;
                summary.add(pair);
            }
        }
        None => both_sides(a, b, options, pool, sink, &mut summary)?,
    }
    Ok(summary)
}

/// Both datasets, if their shards pair up: local, as many of them
/// (routing is the format's, the same in both), and without overlays
/// (a shard is then one store).
fn paired<'t>(
    a: &'t Table,
    b: &'t Table,
) -> Option<(&'t crate::dataset::Dataset, &'t crate::dataset::Dataset)> {
    let (da, db) = (a.as_dataset()?, b.as_dataset()?);
    let plain =
        |d: &crate::dataset::Dataset| d.manifest().shards.iter().all(|s| s.overlays.is_empty());
    (da.shard_count() == db.shard_count()
        && !a.is_remote()
        && !b.is_remote()
        && plain(da)
        && plain(db))
    .then_some((da, db))
}

/// The keys that can differ between two datasets one of which is the
/// other with overlays added (a delta generation and its parent, either
/// way round): those the added overlays hold, each once. `None` if the two
/// are not so related (another shard count, another base, overlays that
/// are not one's followed by more).
fn delta_keys(a: &Table, b: &Table) -> hashfile::Result<Option<Vec<Vec<u8>>>> {
    let (Some(da), Some(db)) = (a.as_dataset(), b.as_dataset()) else {
        return Ok(None);
    };
    let (ma, mb) = (da.manifest(), db.manifest());
    if ma.shards.len() != mb.shards.len() {
        return Ok(None);
    }
    let mut extra: Vec<(&crate::dataset::Dataset, usize, usize)> = Vec::new();
    for (i, (sa, sb)) in ma.shards.iter().zip(&mb.shards).enumerate() {
        if sa.file != sb.file || sa.checksum != sb.checksum {
            return Ok(None);
        }
        let (shorter, longer, on) = if sa.overlays.len() <= sb.overlays.len() {
            (sa, sb, db)
        } else {
            (sb, sa, da)
        };
        let same = shorter
            .overlays
            .iter()
            .zip(&longer.overlays)
            .all(|(x, y)| x.file == y.file && x.checksum == y.checksum);
        if !same {
            return Ok(None);
        }
        if longer.overlays.len() > shorter.overlays.len() {
            extra.push((on, i, shorter.overlays.len()));
        }
    }
    let mut keys = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (dataset, shard, from) in extra {
        for overlay in dataset.shard(shard)?.overlays().skip(from) {
            for record in overlay.iter() {
                let key = record?.key().to_vec();
                if seen.insert(key.clone()) {
                    keys.push(key);
                }
            }
        }
    }
    Ok(Some(keys))
}

/// The diff of two datasets one of which is the other with overlays
/// added: only `keys` (those overlays') can differ, so only they are read,
/// in blocks: a diff in proportion to the change, not the dataset.
fn delta(
    a: &Table,
    b: &Table,
    keys: &[Vec<u8>],
    options: DiffOptions,
    pool: &rayon::ThreadPool,
    sink: &mut dyn DiffSink,
    summary: &mut Summary,
) -> hashfile::Result<()> {
    for (side, read, other) in sides(a, b) {
        for group in keys.chunks(BLOCK * BLOCKS_AT_ONCE) {
            let blocks: Vec<Vec<RecordBuf<'_>>> = group
                .chunks(BLOCK)
                .map(|block| {
                    read.get_many(block)
                        .map(|found| found.into_iter().flatten().collect())
                })
                .collect::<hashfile::Result<_>>()?;
            compare_blocks(&blocks, other, side, options, pool, sink, summary)?;
        }
    }
    // Every key the overlays did not touch is the same on both sides.
    summary.unchanged = summary
        .entries_a
        .saturating_sub(summary.removed + summary.changed);
    Ok(())
}

/// Reads `a` looking each block up in `b` (keys removed or changed), then
/// `b` looking up in `a` (keys added), into `summary`.
fn both_sides(
    a: &Table,
    b: &Table,
    options: DiffOptions,
    pool: &rayon::ThreadPool,
    sink: &mut dyn DiffSink,
    summary: &mut Summary,
) -> hashfile::Result<()> {
    for (side, read, other) in sides(a, b) {
        let mut cursor = Some(Cursor::default());
        while cursor.is_some() {
            let mut blocks = Vec::with_capacity(BLOCKS_AT_ONCE);
            let mut bytes = 0;
            while blocks.len() < BLOCKS_AT_ONCE && bytes < BYTES_AT_ONCE {
                let Some(at) = cursor else { break };
                let (records, next) = read.chunk(at, BLOCK)?;
                cursor = next;
                bytes += records
                    .iter()
                    .map(|r| r.key().len() + r.value().len())
                    .sum::<usize>();
                if !records.is_empty() {
                    blocks.push(records);
                }
            }
            compare_blocks(&blocks, other, side, options, pool, sink, summary)?;
        }
    }
    Ok(())
}

/// Each of `blocks` (read from one side) looked up in `other` on `pool`,
/// the counts added to `summary` and the lines given to `sink` in the
/// blocks' order; then `sink.between`.
fn compare_blocks(
    blocks: &[Vec<RecordBuf<'_>>],
    other: &Table,
    side: Side,
    options: DiffOptions,
    pool: &rayon::ThreadPool,
    sink: &mut dyn DiffSink,
    summary: &mut Summary,
) -> hashfile::Result<()> {
    let shards = summary.shards.len();
    let done: Vec<hashfile::Result<(Summary, String)>> = pool.install(|| {
        use rayon::prelude::*;
        blocks
            .par_iter()
            .map(|records| compare(records, other, side, options, shards))
            .collect()
    });
    for result in done {
        let (counts, text) = result?;
        summary.add(counts);
        for one in text.lines() {
            sink.line(one)?;
        }
    }
    sink.between()
}

/// The two passes of a diff: `a` read and looked up in `b` (keys removed
/// or changed), then `b` in `a` (keys added).
fn sides<'t>(a: &'t Table, b: &'t Table) -> [(Side, &'t Table, &'t Table); 2] {
    [(Side::Before, a, b), (Side::After, b, a)]
}

/// Which side a block was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// The first: keys removed or changed.
    Before,
    /// The second: keys added.
    After,
}

/// One block of `records` looked up in `other`: the counts, and the lines.
fn compare(
    records: &[RecordBuf<'_>],
    other: &Table,
    side: Side,
    options: DiffOptions,
    shards: usize,
) -> hashfile::Result<(Summary, String)> {
    let keys: Vec<&[u8]> = records.iter().map(|r| r.key()).collect();
    let found = other.get_many(&keys)?;
    let mut counts = Summary {
        shards: vec![ShardChanges::default(); shards],
        ..Summary::default()
    };
    let mut out = String::new();
    let shard_of = |key: &[u8]| match std::num::NonZeroU32::new(shards as u32) {
        Some(n) if shards > 1 => hashfile::dataset::shard_of(key, n) as usize,
        _ => 0,
    };
    for (record, there) in records.iter().zip(found) {
        match (side, there) {
            (Side::Before, None) => {
                counts.removed += 1;
                counts.bytes_removed += (record.key().len() + record.value().len()) as u64;
                counts.shards[shard_of(record.key())].removed += 1;
                one(&mut out, "removed", record, None, options);
            }
            (Side::Before, Some(after)) => {
                if after.kind() == record.kind() && after.value() == record.value() {
                    counts.unchanged += 1;
                    continue;
                }
                counts.changed += 1;
                counts.changed_bytes_before += record.value().len() as u64;
                counts.changed_bytes_after += after.value().len() as u64;
                counts.shards[shard_of(record.key())].changed += 1;
                let from = type_name(record.kind(), record.value());
                let to = type_name(after.kind(), after.value());
                if from != to {
                    *counts.type_changes.entry((from, to)).or_default() += 1;
                }
                one(&mut out, "changed", record, Some(&after), options);
            }
            (Side::After, None) => {
                counts.added += 1;
                counts.bytes_added += (record.key().len() + record.value().len()) as u64;
                counts.shards[shard_of(record.key())].added += 1;
                one(&mut out, "added", record, None, options);
            }
            (Side::After, Some(_)) => {} // counted from the first side
        }
    }
    Ok((counts, out))
}

/// Appends one change's line.
fn one(
    out: &mut String,
    op: &str,
    record: &RecordBuf<'_>,
    after: Option<&RecordBuf<'_>>,
    options: DiffOptions,
) {
    out.push_str("{\"op\":\"");
    out.push_str(op);
    out.push_str("\",\"key\":");
    key_json(record.key(), out);
    if options.values {
        match after {
            Some(after) => {
                out.push_str(",\"before\":");
                value_json(record, out);
                out.push_str(",\"after\":");
                value_json(after, out);
            }
            None => {
                out.push_str(",\"value\":");
                value_json(record, out);
            }
        }
    }
    out.push_str("}\n");
}

/// A key as JSON text, or `{"$bytes":"HEX"}` if it is not UTF-8.
fn key_json(key: &[u8], out: &mut String) {
    if json::write_key(key, out).is_err() {
        out.push_str("{\"$bytes\":\"");
        for byte in key {
            out.push_str(&format!("{byte:02x}"));
        }
        out.push_str("\"}");
    }
}

/// A value as JSON text, or `{"$not_json":"why"}`.
fn value_json(record: &RecordBuf<'_>, out: &mut String) {
    if let Err(e) = json::write_record(&record.record(), out) {
        out.push_str("{\"$not_json\":");
        let _ = json::write_key(e.to_string().as_bytes(), out);
        out.push('}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &std::path::Path, name: &str, pairs: &[(&str, &str)]) -> Table {
        let path = dir.join(name);
        let mut builder = hashfile::Builder::new(hashfile::BuildOptions::default()).unwrap();
        for (k, v) in pairs {
            builder.insert(k.as_bytes(), v.as_bytes());
        }
        builder.write_file(&path).unwrap();
        Table::open(path.to_str().unwrap(), &Default::default()).unwrap()
    }

    #[test]
    fn keys_added_removed_and_changed_are_each_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let a = store(
            dir.path(),
            "a.hf",
            &[("same", "1"), ("gone", "2"), ("moved", "3")],
        );
        let b = store(
            dir.path(),
            "b.hf",
            &[("same", "1"), ("moved", "4"), ("new", "5")],
        );
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let mut lines = Vec::new();
        let mut sink = |l: &str| {
            lines.push(l.to_owned());
            Ok(())
        };
        let summary = diff(&a, &b, DiffOptions::default(), &pool, &mut sink).unwrap();
        lines.sort();
        assert_eq!(
            lines,
            [
                r#"{"op":"added","key":"new","value":"5"}"#,
                r#"{"op":"changed","key":"moved","before":"3","after":"4"}"#,
                r#"{"op":"removed","key":"gone","value":"2"}"#,
            ]
        );
        assert_eq!(
            (
                summary.added,
                summary.removed,
                summary.changed,
                summary.unchanged
            ),
            (1, 1, 1, 1)
        );
        assert_eq!((summary.bytes_added, summary.bytes_removed), (4, 5));
        assert_eq!(summary.type_changed(), 0);
    }
}
