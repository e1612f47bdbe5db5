//! One key per line (a word list, a list of IDs or hostnames): each line,
//! without its line ending (`\n` or `\r\n`), is a key whose value is
//! `true`, so the store is a set that `key?` answers. Blank lines are
//! skipped; every other byte of a line is the key's, spaces included.

use std::io::{BufRead, Read};

use super::{io_error, parse_error, Sink};
use crate::error::{Position, Result};
use crate::format::{Record, ValueKind};
use crate::value;

/// The longest line read as a key. A file with no line breaks (a binary
/// given as lines, say) would otherwise be held whole in memory.
pub const MAX_LINE: usize = 1 << 20;

pub(super) fn import<R: BufRead>(input: &mut R, source: &str, sink: &mut Sink<'_>) -> Result<()> {
    let mut truth = Vec::new();
    value::write_bool(&mut truth, true);
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        let read = Read::take(&mut *input, MAX_LINE as u64 + 2)
            .read_until(b'\n', &mut line)
            .map_err(|e| io_error(source, e))?;
        if read == 0 {
            return Ok(());
        }
        number += 1;
        let mut key = line.strip_suffix(b"\n").unwrap_or(&line);
        key = key.strip_suffix(b"\r").unwrap_or(key);
        if key.len() > MAX_LINE {
            return Err(parse_error(
                source,
                Position::line(number),
                format!("line is over {MAX_LINE} bytes; the lines format reads one key per line"),
            ));
        }
        if key.is_empty() {
            continue;
        }
        let record = Record {
            key,
            key_utf8: std::str::from_utf8(key).is_ok(),
            value: &truth,
            kind: ValueKind::Typed,
        };
        sink(record, Position::line(number))?;
    }
}
