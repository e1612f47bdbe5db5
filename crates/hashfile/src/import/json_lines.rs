//! JSON Lines: one `["key", value]` or object per line, read in runs of
//! whole lines; with the `parallel` feature, runs are parsed on every core
//! and handed on in input order.

use std::io::Read;

use serde::de::DeserializeSeed;

use super::json::{Fields, Pair, RecordVisitor};
use super::{io_error, parse_error, ImportOptions, Sink};
#[cfg(feature = "parallel")]
use crate::build::Batch;
#[cfg(feature = "parallel")]
use crate::error::Error;
use crate::error::{Position, Result};
use crate::format::Record;

pub(super) fn import<R: Read>(
    input: &mut R,
    source: &str,
    options: &ImportOptions,
    sink: &mut Sink<'_>,
) -> Result<()> {
    let (mut run, mut carry, mut read, mut first_line) = (Text::default(), Vec::new(), 0u64, 1u64);
    while next_chunk(
        input,
        &mut run,
        &mut carry,
        JSON_LINES_CHUNK,
        &mut read,
        source,
    )? {
        first_line += json_lines_in(run.as_slice(), first_line, source, options, sink)?;
    }
    Ok(())
}

/// One JSON Lines line (its line end included or not), numbered `number`,
/// to `sink`; a blank line is skipped.
fn json_line(
    line: &[u8],
    number: u64,
    source: &str,
    fields: &Fields,
    typed: &mut Vec<u8>,
    sink: &mut Sink<'_>,
) -> Result<()> {
    let mut line = line;
    while let [rest @ .., b'\n' | b'\r'] = line {
        line = rest;
    }
    if let Some((key, value)) = simple_pair(line) {
        return sink(
            Record {
                key,
                key_utf8: true,
                value,
                kind: crate::format::ValueKind::Utf8,
            },
            Position::line(number),
        );
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let mut de = serde_json::Deserializer::from_slice(line);
    let visitor = RecordVisitor {
        fields,
        lines: None,
        out: typed,
    };
    match visitor
        .deserialize(&mut de)
        .and_then(|p| de.end().map(|_| p))
    {
        Ok(Pair(key, value)) => sink(value.record(&key.0, typed), Position::line(number)),
        Err(e) => {
            let message = e.to_string();
            let message = message
                .split(" at line ")
                .next()
                .unwrap_or(&message)
                .to_string();
            Err(parse_error(
                source,
                Position::Line {
                    line: number,
                    column: Some(e.column() as u64),
                },
                message,
            ))
        }
    }
}

/// The commonest line, `["key","value"]` with no whitespace, escapes or
/// control characters, read without serde: its key and value. `None` for
/// anything else, which serde reads (and reports the errors of). The
/// entry is the one serde's path makes of the same line.
fn simple_pair(line: &[u8]) -> Option<(&[u8], &[u8])> {
    fn string(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
        let (end, ascii) = string_end(bytes)?;
        if bytes[end] != b'"' {
            return None;
        }
        // UTF-8 checked only past ASCII, which is most strings.
        let text = &bytes[..end];
        if !ascii {
            std::str::from_utf8(text).ok()?;
        }
        Some((text, &bytes[end + 1..]))
    }
    let (key, rest) = string(line.strip_prefix(b"[\"")?)?;
    let (value, rest) = string(rest.strip_prefix(b",\"")?)?;
    (rest == b"]").then_some((key, value))
}

/// Where a JSON string's plain run ends: the index of the first `"`, `\\`
/// or control character (below 0x20) in `bytes`, and whether every byte
/// before it is ASCII. `None` if there is none. Sixteen bytes a step with
/// SSE2, the last few as the last sixteen again; fewer than sixteen bytes
/// as words, then one at a time. The string scan is most of what a JSON
/// Lines import of long values costs: a byte at a time it was a quarter of
/// a 100-byte-record build's CPU time, and sixteen at a time takes 248
/// instructions a record of 100 bytes where words took 377 (callgrind).
#[inline]
fn string_end(bytes: &[u8]) -> Option<(usize, bool)> {
    #[cfg(target_arch = "x86_64")]
    {
        let mut blocks = bytes.chunks_exact(16);
        let mut ascii = true;
        for (i, block) in blocks.by_ref().enumerate() {
            let (stops, high) = block_stops(block.try_into().expect("chunks of 16"));
            if stops != 0 {
                let at = stops.trailing_zeros();
                // The high bits of the bytes before the stop only.
                let before = high & ((1u32 << at) - 1);
                return Some((16 * i + at as usize, ascii && before == 0));
            }
            ascii &= high == 0;
        }
        let rest = blocks.remainder().len();
        if rest == 0 || bytes.len() < 16 {
            let base = bytes.len() - rest;
            return string_end_in_words(blocks.remainder())
                .map(|(at, ascii_after)| (base + at, ascii && ascii_after));
        }
        // The last 16 bytes: those before the remainder were read above
        // and hold no stop, so a stop here is in the remainder. (Their
        // high bits count again, which changes nothing.)
        let base = bytes.len() - 16;
        let (stops, high) = block_stops(bytes[base..].try_into().expect("16 bytes"));
        (stops != 0).then(|| {
            let at = stops.trailing_zeros();
            (base + at as usize, ascii && high & ((1u32 << at) - 1) == 0)
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    string_end_in_words(bytes)
}

/// For each of the 16 bytes of `block`, bit `i` of the first mask says
/// whether byte `i` ends a JSON string's plain run (`"`, `\\` or below
/// 0x20), bit `i` of the second whether it is not ASCII.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn block_stops(block: &[u8; 16]) -> (u32, u32) {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: these are SSE2 instructions, which every x86-64 CPU has (the
    // target enables SSE2 always). The one load reads the 16 bytes of
    // `block`, through a pointer to them; `loadu` needs no alignment.
    unsafe {
        let x = _mm_loadu_si128(block.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\\' as i8));
        // Below 0x20 exactly when the unsigned minimum with 0x1f is the byte.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
        let stops = _mm_or_si128(_mm_or_si128(quote, backslash), control);
        (_mm_movemask_epi8(stops) as u32, _mm_movemask_epi8(x) as u32)
    }
}

/// `string_end` eight bytes a step, as words (the classic "has a zero
/// byte" trick, with the bytes below 0x20 found the same way), then a byte
/// at a time: for strings under sixteen bytes, and off x86-64.
fn string_end_in_words(bytes: &[u8]) -> Option<(usize, bool)> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // The high bit of each byte of `x` below `n` (every byte of `n` the
    // same). A borrow can also mark bytes above a marked one, never below,
    // so the lowest mark, the first byte in memory order once the word is
    // read little-endian, is exact.
    #[inline(always)]
    fn below(x: u64, n: u8) -> u64 {
        x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH
    }
    let mut high = 0u64;
    let mut words = bytes.chunks_exact(8);
    for (i, word) in words.by_ref().enumerate() {
        let x = u64::from_le_bytes(word.try_into().expect("chunks of 8"));
        let found = below(x ^ (ONES * u64::from(b'"')), 1)
            | below(x ^ (ONES * u64::from(b'\\')), 1)
            | below(x, 0x20);
        if found != 0 {
            let at = (found.trailing_zeros() / 8) as usize;
            // The high bits of the bytes before `at` only.
            high |= x & HIGH & ((1u64 << (8 * at)) - 1);
            return Some((8 * i + at, high == 0));
        }
        high |= x & HIGH;
    }
    let base = bytes.len() - words.remainder().len();
    let mut ascii = high == 0;
    for (i, &b) in words.remainder().iter().enumerate() {
        if b == b'"' || b == b'\\' || b < 0x20 {
            return Some((base + i, ascii));
        }
        ascii &= b.is_ascii();
    }
    None
}

/// The lines of `text`, the first numbered `first_line`, to `sink`.
/// Returns the number of line ends in `text`.
fn json_lines_in(
    text: &[u8],
    first_line: u64,
    source: &str,
    options: &ImportOptions,
    sink: &mut Sink<'_>,
) -> Result<u64> {
    let fields = Fields::of(options);
    let mut typed = Vec::new();
    let mut start = 0;
    let mut number = first_line;
    for end in memchr::memchr_iter(b'\n', text) {
        json_line(&text[start..end], number, source, &fields, &mut typed, sink)?;
        start = end + 1;
        number += 1;
    }
    json_line(&text[start..], number, source, &fields, &mut typed, sink)?;
    Ok(number - first_line)
}

/// Bytes of JSON Lines one worker of `import_json_lines_parallel` parses at
/// a time (more when one line is longer).
pub const JSON_LINES_CHUNK: usize = 4 << 20;

/// A run of text read from the input: the first `len` bytes of `bytes`.
/// `bytes` keeps its length from run to run, so the memory a read fills is
/// zeroed once, when it is first needed, not before every read (which
/// `read_to_end` into a cleared Vec does, through any reader that is not a
/// bare File: a gigabyte of memset for a gigabyte of input).
#[derive(Debug, Default)]
struct Text {
    bytes: Vec<u8>,
    len: usize,
}

impl Text {
    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Reads the next run of whole lines of about `chunk_bytes` (the rest of the
/// input at its end) into `text`, reusing its memory. False at the end.
/// `carry` holds the start of a line that the previous run cut.
fn next_chunk<R: Read>(
    input: &mut R,
    text: &mut Text,
    carry: &mut Vec<u8>,
    chunk_bytes: usize,
    read: &mut u64,
    source: &str,
) -> Result<bool> {
    let buf = &mut text.bytes;
    let mut len = carry.len();
    if buf.len() < len {
        buf.resize(len, 0);
    }
    buf[..len].copy_from_slice(carry);
    carry.clear();
    loop {
        let start = len;
        let end = start + chunk_bytes;
        if buf.len() < end {
            buf.resize(end, 0);
        }
        // Up to `chunk_bytes`, fewer only at the end of the input.
        while len < end {
            match input.read(&mut buf[len..end]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    text.len = 0;
                    return Err(io_error(source, e));
                }
            }
        }
        *read += (len - start) as u64;
        if len == start {
            text.len = len;
            return Ok(len > 0);
        }
        if let Some(at) = memchr::memrchr(b'\n', &buf[start..len]) {
            carry.extend_from_slice(&buf[start + at + 1..len]);
            text.len = start + at + 1;
            return Ok(true);
        }
    }
}

/// Imports JSON Lines on the rayon pool. The input is read in runs of
/// whole lines of about `chunk_bytes` (`JSON_LINES_CHUNK` is a good size);
/// each worker parses a run into a `Batch` like `batch` (empty, say from
/// `Builder::new_batch`), and `deliver` gets the batches
/// in input order, on the calling thread, with the input bytes read so
/// far. Runs and batches are reused, so memory stays at a few runs. The
/// entries, their order and any error are exactly those of `import`: the
/// first bad line of the input is the one reported, by its line number,
/// and an error reading the input comes after every line before it.
#[cfg(feature = "parallel")]
pub fn import_json_lines_parallel<R: Read>(
    input: R,
    source: &str,
    options: &ImportOptions,
    chunk_bytes: usize,
    batch: &Batch,
    deliver: &mut dyn FnMut(&Batch, u64) -> Result<()>,
) -> Result<()> {
    use rayon::prelude::*;
    options.check()?;
    let mut input = std::io::BufReader::with_capacity(1 << 16, input);
    super::skip_byte_order_mark(&mut input, source)?;
    let group = rayon::current_num_threads().max(1);
    let new_runs = || -> Vec<Run> {
        (0..group)
            .map(|_| (Text::default(), batch.empty_like(), None))
            .collect()
    };
    // Three sets of runs, each `group` long: while the pool parses `ready`,
    // this thread hands on the batches of `parsed`, then reads the next
    // runs into `free`.
    let (mut ready, mut parsed, mut free) = (new_runs(), new_runs(), new_runs());
    let mut reading = Reading {
        carry: Vec::new(),
        read: 0,
        error: None,
        chunk_bytes,
        source,
    };
    let mut ready_count = reading.fill(&mut input, &mut ready);
    let mut ready_read = reading.read;
    let (mut parsed_count, mut parsed_read, mut first_line) = (0, 0u64, 1u64);
    loop {
        let (delivered, free_count) = std::thread::scope(|scope| {
            let runs = &mut ready[..ready_count];
            // Each worker numbers its lines from 1 and returns how many
            // line ends it passed; a run with an error is read again with
            // its real line numbers, for the message.
            let workers = scope.spawn(move || {
                runs.par_iter_mut().for_each(|(text, batch, lines)| {
                    batch.clear();
                    *lines =
                        json_lines_in(text.as_slice(), 1, source, options, &mut |record, _| {
                            batch.insert_record(record);
                            Ok(())
                        })
                        .ok();
                })
            });
            let mut result = Ok(());
            for (text, batch, lines) in &parsed[..parsed_count] {
                let Some(lines) = *lines else {
                    result =
                        json_lines_in(text.as_slice(), first_line, source, options, &mut |_, _| {
                            Ok(())
                        })
                        .map(|_| unreachable!("a run that failed to parse fails again"));
                    break;
                };
                if let Err(e) = deliver(batch, parsed_read) {
                    result = Err(e);
                    break;
                }
                first_line += lines;
            }
            let free_count = if result.is_ok() {
                reading.fill(&mut input, &mut free)
            } else {
                0
            };
            if let Err(panic) = workers.join() {
                std::panic::resume_unwind(panic);
            }
            (result, free_count)
        });
        delivered?;
        if ready_count == 0 {
            // Every run read has been handed on.
            return reading.error.map_or(Ok(()), Err);
        }
        // ready -> parsed -> free -> ready.
        std::mem::swap(&mut parsed, &mut ready);
        std::mem::swap(&mut ready, &mut free);
        (parsed_count, parsed_read) = (ready_count, ready_read);
        (ready_count, ready_read) = (free_count, reading.read);
    }
}

/// A run of JSON Lines text, the batch parsed from it, and the number of
/// line ends in it (`None` if it did not parse).
#[cfg(feature = "parallel")]
type Run = (Text, Batch, Option<u64>);

/// The input side of `import_json_lines_parallel`.
#[cfg(feature = "parallel")]
struct Reading<'a> {
    carry: Vec<u8>,
    read: u64,
    /// The first read error: no more is read, and it is reported once the
    /// runs before it are handed on.
    error: Option<Error>,
    chunk_bytes: usize,
    source: &'a str,
}

#[cfg(feature = "parallel")]
impl Reading<'_> {
    /// Reads up to `runs.len()` runs into `runs`; returns how many.
    fn fill<R: Read>(&mut self, input: &mut R, runs: &mut [Run]) -> usize {
        if self.error.is_some() {
            return 0;
        }
        for (filled, run) in runs.iter_mut().enumerate() {
            match next_chunk(
                input,
                &mut run.0,
                &mut self.carry,
                self.chunk_bytes,
                &mut self.read,
                self.source,
            ) {
                Ok(true) => {}
                Ok(false) => return filled,
                Err(e) => {
                    self.error = Some(e);
                    return filled;
                }
            }
        }
        runs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A byte at a time: what `string_end` must agree with.
    fn string_end_bytewise(bytes: &[u8]) -> Option<(usize, bool)> {
        let end = bytes
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        Some((end, bytes[..end].is_ascii()))
    }

    /// Bytes drawn mostly from the ones the scan tells apart: the stops, their
    /// neighbours (0x1f, 0x20, 0x21, 0x23, 0x5b, 0x5d), 0x7f, 0x80, 0xff, and
    /// plain text, so every position of a word meets each.
    fn tricky_byte() -> impl Strategy<Value = u8> {
        prop_oneof![
            4 => prop::sample::select(vec![b'a', b'Z', b'0', b' ']),
            1 => prop::sample::select(vec![
                b'"', b'\\', 0x00, 0x01, 0x1f, 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xa0,
                0xc3, 0xe0, 0xff,
            ]),
            1 => any::<u8>(),
        ]
    }

    proptest! {
        #[test]
        fn string_end_agrees_with_a_byte_at_a_time(bytes in prop::collection::vec(tricky_byte(), 0..72)) {
            prop_assert_eq!(string_end(&bytes), string_end_bytewise(&bytes));
        }
    }

    #[test]
    fn string_end_at_every_position_of_a_word() {
        // Strings under sixteen bytes (the word scan) and up to three blocks
        // of sixteen (the last one overlapping those before it), so that a
        // stop meets every position of a word and of a block, with a
        // non-ASCII byte before it in each.
        for len in 0..48 {
            for at in 0..len {
                for stop in [b'"', b'\\', 0x00, 0x1f] {
                    for (first, before) in [(b'a', b'a'), (b'a', 0xc3), (b'a', 0x80), (0xc3, b'a')]
                    {
                        let mut bytes = vec![b'a'; len];
                        // A non-ASCII byte far from the stop, in an
                        // earlier block than the one the stop is found in.
                        if at > 1 {
                            bytes[0] = first;
                        }
                        if at > 0 {
                            bytes[at - 1] = before;
                        }
                        bytes[at] = stop;
                        // A non-ASCII byte after the stop must not count.
                        if at + 1 < len {
                            bytes[at + 1] = 0xff;
                        }
                        assert_eq!(
                            string_end(&bytes),
                            string_end_bytewise(&bytes),
                            "len {len}, stop {stop:#x} at {at}, {first:#x} first, {before:#x} before"
                        );
                    }
                }
            }
            assert_eq!(string_end(&vec![b'a'; len]), None, "len {len}");
        }
    }

    #[test]
    fn simple_pair_reads_the_plain_line_and_leaves_the_rest_to_serde() {
        assert_eq!(
            simple_pair(br#"["k\u00e9y","caf\xc3\xa9 au lait and more"]"#.as_slice()),
            None
        );
        assert_eq!(
            simple_pair("[\"clé\",\"café au lait, long enough\"]".as_bytes()),
            Some(("clé".as_bytes(), "café au lait, long enough".as_bytes()))
        );
        // Not UTF-8 past the first word: serde's path reports it.
        assert_eq!(simple_pair(b"[\"key\",\"twelve bytes \xff\"]"), None);
        assert_eq!(simple_pair(b"[\"key\",\"a tab\there\"]"), None);
        assert_eq!(simple_pair(b"[\"key\",\"value\"] "), None);
    }
}
