//! Rows of an Arrow string array, read from its buffers as a dataset
//! writer in another process hands them over (PySpark's Arrow batches
//! today; the JVM's next): every offset checked against the data, so bad
//! buffers are an error, never a read out of bounds. The two jobs a
//! distributed build asks of them are here: the partition each key goes
//! to ([`route_keys`]), and the rows as JSON Lines for a shard's importer
//! ([`json_lines`]).

use std::num::NonZeroU32;

use hashfile::dataset::{shard_of, MAX_SHARDS};
use hashfile::{Error, Result};

/// Rows `first..first + count` of an Arrow string array (`string`: 32-bit
/// offsets; `large_string`, `wide`: 64-bit).
pub struct ArrowStrings<'a> {
    data: &'a [u8],
    /// The `count + 1` offsets of the rows.
    offsets: Vec<usize>,
    first: usize,
}

impl<'a> ArrowStrings<'a> {
    /// The rows, from the array's offsets and data buffers; an error
    /// naming what is wrong when the buffers do not hold them.
    pub fn new(
        offsets: &[u8],
        data: &'a [u8],
        first: usize,
        count: usize,
        wide: bool,
    ) -> Result<ArrowStrings<'a>> {
        let width = if wide { 8 } else { 4 };
        let end = first
            .checked_add(count)
            .and_then(|n| n.checked_add(1))
            .and_then(|n| n.checked_mul(width))
            .ok_or_else(|| bad("too many rows"))?;
        if offsets.len() < end {
            return Err(bad("the offsets buffer is shorter than the rows"));
        }
        let read = |i: usize| -> Option<usize> {
            let at = &offsets[(first + i) * width..(first + i + 1) * width];
            if wide {
                usize::try_from(i64::from_le_bytes(at.try_into().ok()?)).ok()
            } else {
                usize::try_from(i32::from_le_bytes(at.try_into().ok()?)).ok()
            }
        };
        let mut list = Vec::with_capacity(count + 1);
        for i in 0..=count {
            let offset = read(i).ok_or_else(|| bad("a negative offset"))?;
            if offset > data.len() || list.last().is_some_and(|&last| offset < last) {
                return Err(bad("an offset out of order or past the data"));
            }
            list.push(offset);
        }
        Ok(ArrowStrings {
            data,
            offsets: list,
            first,
        })
    }

    /// The rows' bytes in all.
    pub fn bytes(&self) -> usize {
        self.offsets.last().unwrap_or(&0) - self.offsets.first().unwrap_or(&0)
    }

    /// The rows, in order.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.offsets.windows(2).map(|w| &self.data[w[0]..w[1]])
    }
}

fn bad(what: &str) -> Error {
    Error::InvalidArgument {
        message: format!("not an Arrow string array: {what}"),
    }
}

/// The partition of each key of `keys`: `partitions[shard_of(key,
/// partitions.len())]`, or -1 for a null key (its bit clear in the
/// array's `validity` bitmap, when it has one), as little-endian int64s:
/// an Arrow int64 array's data buffer.
pub fn route_keys(
    keys: &ArrowStrings<'_>,
    validity: Option<&[u8]>,
    partitions: &[i64],
) -> Result<Vec<u8>> {
    let shards = u32::try_from(partitions.len())
        .ok()
        .and_then(NonZeroU32::new)
        .filter(|n| n.get() <= MAX_SHARDS)
        .ok_or_else(|| Error::InvalidArgument {
            message: format!(
                "{} partitions; a dataset has 1 to {MAX_SHARDS} shards",
                partitions.len()
            ),
        })?;
    let count = keys.offsets.len() - 1;
    if let Some(bits) = validity {
        if bits.len() * 8 < keys.first + count {
            return Err(Error::InvalidArgument {
                message: "the validity bitmap is shorter than the array".into(),
            });
        }
    }
    let mut out = Vec::with_capacity(count * 8);
    for (i, key) in keys.iter().enumerate() {
        let row = keys.first + i;
        let valid = validity.is_none_or(|bits| bits[row / 8] & (1 << (row % 8)) != 0);
        let partition = if valid {
            partitions[shard_of(key, shards) as usize]
        } else {
            -1
        };
        out.extend_from_slice(&partition.to_le_bytes());
    }
    Ok(out)
}

/// The rows (JSON records, one a row) as JSON Lines for the importer: a
/// newline after each.
pub fn json_lines(records: &ArrowStrings<'_>) -> Vec<u8> {
    let mut lines = Vec::with_capacity(records.bytes() + records.offsets.len());
    for record in records.iter() {
        lines.extend_from_slice(record);
        lines.push(b'\n');
    }
    lines
}
