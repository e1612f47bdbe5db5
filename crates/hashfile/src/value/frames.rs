//! Compressed items: a typed value too big to compress whole keeps its
//! upper containers raw and holds its subtrees as frames (docs/FORMAT.md,
//! "Compressed items"), so that `dig` walks the raw levels, skipping
//! siblings whole as ever, and decodes only the one frame its path enters.
//!
//! A frame item is `tag::FRAME`, `len:varint` and `len` bytes that the
//! store's decoder (`crate::compress::Decoder`, passed in here as a
//! function) turns into exactly one encoded item that holds no frame. The
//! container bodies above a frame count the frame's stored bytes, so a
//! record with frames is rewritten ([`expand`]) before a decoder that
//! knows nothing of frames reads it.
//!
//! - [`split`] writes a value with its subtrees compressed (a build).
//! - [`expand`] writes it back as it was before [`split`] (a lookup of the
//!   whole value, `each`, `verify`).
//! - [`dig_in`] walks a path, decoding only what the path needs.

use super::dig::{find_in_array_raw, find_in_map_raw};
use super::{malformed, tag, Container, ContainerStart, Cursor, Dig, Item, Probe, MAX_DEPTH};
use crate::compress::{ITEM_FRAME_LEN, MAX_TYPED_COMPRESS_LEN, MIN_COMPRESS_LEN};
use crate::error::Result;
use crate::format::varint::{varint_len, write_varint};

/// Decodes one frame's bytes into the item they hold: a buffer of its
/// own, or one a cache shares (`compress::Decoder::decode_item` gives an
/// `Arc<[u8]>`).
pub type DecodeFrame<'d, T = Vec<u8>> = dyn Fn(&[u8]) -> Result<T> + 'd;

/// Compresses an item's bytes into the given buffer: false (and nothing
/// written) where that would not be smaller.
pub type CompressItem<'c> = dyn FnMut(&[u8], &mut Vec<u8>) -> Result<bool> + 'c;

/// Writes `value` (one encoded container) to `out` with its subtrees
/// compressed by `compress`: a map's or array's element becomes a frame
/// when it is at least [`MIN_COMPRESS_LEN`] bytes and a scalar, a
/// container of at most [`ITEM_FRAME_LEN`] bytes, or a container of
/// scalars only of at most [`MAX_TYPED_COMPRESS_LEN`] (an array of names
/// a path ends on, read whole anyway); a larger container stays raw with
/// its elements treated the same way. Map keys and `value` itself stay
/// raw. Returns how many frames it wrote.
pub fn split(value: &[u8], compress: &mut CompressItem<'_>, out: &mut Vec<u8>) -> Result<u64> {
    let mut frames = 0;
    let mut cursor = Cursor::new(value);
    let raw = cursor.next_raw()?;
    if !cursor.is_at_end() {
        return Err(malformed("trailing bytes", cursor.position()));
    }
    split_children(raw, compress, out, &mut frames, MAX_DEPTH)?;
    Ok(frames)
}

/// `raw`, a container written with its elements split, or any other item
/// as it is.
fn split_children(
    raw: &[u8],
    compress: &mut CompressItem<'_>,
    out: &mut Vec<u8>,
    frames: &mut u64,
    depth_left: usize,
) -> Result<()> {
    let Some((container, is_map)) = container_of(raw)? else {
        out.extend_from_slice(raw);
        return Ok(());
    };
    let depth = deeper(depth_left)?;
    let start = ContainerStart::begin(out);
    let mut inner = container.cursor();
    for _ in 0..container.len {
        if is_map {
            out.extend_from_slice(inner.next_raw()?);
        }
        split_item(inner.next_raw()?, compress, out, frames, depth)?;
    }
    start.end(out, container.len, is_map);
    Ok(())
}

/// One element: a frame where [`split`]'s rule says so and the frame is
/// smaller, else a container split further or the item as it is.
fn split_item(
    raw: &[u8],
    compress: &mut CompressItem<'_>,
    out: &mut Vec<u8>,
    frames: &mut u64,
    depth_left: usize,
) -> Result<()> {
    let container = container_of(raw)?;
    let whole = raw.len() >= MIN_COMPRESS_LEN
        && match container {
            None => true,
            Some((c, is_map)) => {
                raw.len() <= ITEM_FRAME_LEN
                    || ((!is_map || raw.len() <= MAX_TYPED_COMPRESS_LEN)
                        && holds_scalars_only(c, is_map)?)
            }
        };
    if whole {
        let mut frame = Vec::new();
        if compress(raw, &mut frame)?
            && 1 + varint_len(frame.len() as u64) + frame.len() < raw.len()
        {
            out.push(tag::FRAME);
            write_varint(out, frame.len() as u64);
            out.extend_from_slice(&frame);
            *frames += 1;
            return Ok(());
        }
    }
    if container.is_some() && raw.len() > ITEM_FRAME_LEN {
        split_children(raw, compress, out, frames, depth_left)
    } else {
        out.extend_from_slice(raw);
        Ok(())
    }
}

/// Whether a typed value longer than [`MAX_TYPED_COMPRESS_LEN`] is
/// compressed whole rather than item by item: an array of scalars (a list
/// of names a path ends on, read whole anyway; its items are too short to
/// compress one by one), as an element of such a value would be
/// ([`split`]'s rule).
pub fn compressed_whole(value: &[u8]) -> Result<bool> {
    match container_of(value)? {
        Some((c, false)) => holds_scalars_only(c, false),
        _ => Ok(false),
    }
}

/// The array or map `raw` encodes and whether it is a map; `None` for
/// any other item.
fn container_of(raw: &[u8]) -> Result<Option<(Container<'_>, bool)>> {
    Ok(match Cursor::new(raw).next_item()? {
        Item::Map(c) => Some((c, true)),
        Item::Array(c) => Some((c, false)),
        _ => None,
    })
}

/// The depth left one level down, or an error past [`MAX_DEPTH`].
fn deeper(depth_left: usize) -> Result<usize> {
    depth_left
        .checked_sub(1)
        .ok_or_else(|| malformed(&format!("nested deeper than {MAX_DEPTH} levels"), 0))
}

/// Whether no element of a container (no value, for a map) is itself a
/// container.
fn holds_scalars_only(c: Container<'_>, is_map: bool) -> Result<bool> {
    let mut inner = c.cursor();
    for _ in 0..c.len {
        if is_map {
            inner.skip()?;
        }
        let raw = inner.next_raw()?;
        if matches!(Cursor::new(raw).next_item()?, Item::Map(_) | Item::Array(_)) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Writes `value` to `out` as it was before [`split`]: every frame
/// decoded by `decode` in its place, and the containers above it given
/// their new body lengths. Damage is an error: a frame that does not hold
/// exactly one item, a frame inside a frame, nesting past [`MAX_DEPTH`].
pub fn expand<T: AsRef<[u8]>>(
    value: &[u8],
    decode: &DecodeFrame<'_, T>,
    out: &mut Vec<u8>,
) -> Result<()> {
    let unlimited = Limit {
        max: usize::MAX,
        over: &|| unreachable!("no buffer reaches usize::MAX bytes"),
    };
    expand_within(value, decode, out, &unlimited)
}

/// How long an expanded value may grow, and the error past that.
pub struct Limit<'a> {
    /// The most bytes `out` may hold.
    pub max: usize,
    /// The error for a value that would grow past `max` (naming its key,
    /// say).
    pub over: &'a dyn Fn() -> crate::error::Error,
}

/// [`expand`], stopping with `limit.over()` as soon as `out` would hold
/// more than `limit.max` bytes: a record of 1 MB of frames, each 1,024
/// times smaller than what it says it holds, is refused after at most
/// `limit.max` bytes, never decoded whole. `out` grows fallibly.
pub fn expand_within<T: AsRef<[u8]>>(
    value: &[u8],
    decode: &DecodeFrame<'_, T>,
    out: &mut Vec<u8>,
    limit: &Limit<'_>,
) -> Result<()> {
    let mut cursor = Cursor::new(value);
    expand_item(cursor.next_raw()?, decode, out, MAX_DEPTH, limit)?;
    if !cursor.is_at_end() {
        return Err(malformed("trailing bytes", cursor.position()));
    }
    Ok(())
}

/// Appends `bytes` to `out` within `limit`, allocating fallibly.
fn push_within(out: &mut Vec<u8>, bytes: &[u8], limit: &Limit<'_>) -> Result<()> {
    let len = out.len().saturating_add(bytes.len());
    if len > limit.max {
        return Err((limit.over)());
    }
    out.try_reserve(bytes.len())
        .map_err(|_| crate::error::out_of_memory(len as u64, "a value's compressed items"))?;
    out.extend_from_slice(bytes);
    Ok(())
}

fn expand_item<T: AsRef<[u8]>>(
    raw: &[u8],
    decode: &DecodeFrame<'_, T>,
    out: &mut Vec<u8>,
    depth_left: usize,
    limit: &Limit<'_>,
) -> Result<()> {
    if raw[0] == tag::FRAME {
        return push_within(out, open(raw, decode)?.as_ref(), limit);
    }
    let Some((container, is_map)) = container_of(raw)? else {
        return push_within(out, raw, limit);
    };
    let depth = deeper(depth_left)?;
    let start = ContainerStart::begin(out);
    let mut inner = container.cursor();
    let items = if is_map {
        container.len * 2
    } else {
        container.len
    };
    for _ in 0..items {
        expand_item(inner.next_raw()?, decode, out, depth, limit)?;
    }
    if !inner.is_at_end() {
        return Err(malformed(
            "container body longer than its items",
            inner.position(),
        ));
    }
    start.end(out, container.len, is_map);
    // The container's header goes in front once its body is written.
    if out.len() > limit.max {
        return Err((limit.over)());
    }
    Ok(())
}

/// The item a frame item (`raw`: its tag, length and frame) holds,
/// checked to be exactly one item that is not itself a frame.
fn open<T: AsRef<[u8]>>(raw: &[u8], decode: &DecodeFrame<'_, T>) -> Result<T> {
    let mut at = 1;
    let len = crate::format::varint::read_varint(raw, &mut at)
        .ok_or_else(|| malformed("bad varint", 1))?;
    let frame = &raw[at..];
    debug_assert_eq!(frame.len() as u64, len, "next_raw bounded the frame");
    let decoded = decode(frame)?;
    let bytes = decoded.as_ref();
    let mut cursor = Cursor::new(bytes);
    let one = bytes.first() != Some(&tag::FRAME) && cursor.skip().is_ok() && cursor.is_at_end();
    if !one {
        return Err(malformed(
            "a compressed item does not hold exactly one item",
            0,
        ));
    }
    Ok(decoded)
}

/// Whether an item holds a frame anywhere inside it (or is one).
fn holds_frames(raw: &[u8], depth_left: usize) -> Result<bool> {
    if raw[0] == tag::FRAME {
        return Ok(true);
    }
    let Some((container, is_map)) = container_of(raw)? else {
        return Ok(false);
    };
    let items = if is_map {
        container.len * 2
    } else {
        container.len
    };
    let depth = deeper(depth_left)?;
    let mut inner = container.cursor();
    for _ in 0..items {
        if holds_frames(inner.next_raw()?, depth)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// [`super::dig`] into a value that may hold frames: the raw levels are
/// walked in place, and the one frame the path enters, or the frames
/// under what it ends on, are decoded into `scratch` (empty before), which
/// the answer may borrow. Frames never hold frames, so `scratch` is needed
/// once.
pub fn dig_in<'a, T: AsRef<[u8]> + From<Vec<u8>>>(
    value: &'a [u8],
    path: &[Probe<'_>],
    symbolize_names: bool,
    decode: &DecodeFrame<'_, T>,
    scratch: &'a mut Option<T>,
) -> Result<Dig<'a>> {
    let unlimited = Limit {
        max: usize::MAX,
        over: &|| unreachable!("no buffer reaches usize::MAX bytes"),
    };
    dig_in_within(value, path, symbolize_names, decode, scratch, &unlimited)
}

/// [`dig_in`], what the path ends on expanded within `limit` (as
/// [`expand_within`]).
pub fn dig_in_within<'a, T: AsRef<[u8]> + From<Vec<u8>>>(
    value: &'a [u8],
    path: &[Probe<'_>],
    symbolize_names: bool,
    decode: &DecodeFrame<'_, T>,
    scratch: &'a mut Option<T>,
    limit: &Limit<'_>,
) -> Result<Dig<'a>> {
    let mut scratch = Some(scratch);
    let mut whole = Cursor::new(value);
    let mut bytes: &'a [u8] = whole.next_raw()?;
    whole.end_of_value()?;
    for (step, probe) in path.iter().enumerate() {
        if bytes[0] == tag::FRAME {
            bytes = into_scratch(open(bytes, decode)?, &mut scratch)?;
        }
        let item = Cursor::new(bytes).next_item()?;
        let next = match item {
            Item::Nil => return Ok(Dig::Absent),
            Item::Map(map) => find_in_map_raw(map, probe, symbolize_names)?,
            Item::Array(array) => match probe.index() {
                Some(index) => find_in_array_raw(array, index)?,
                None => {
                    return Ok(Dig::Stuck {
                        step,
                        item: settle(bytes, decode, &mut scratch, limit)?,
                    })
                }
            },
            _ => return Ok(Dig::Stuck { step, item }),
        };
        match next {
            Some(found) => bytes = found,
            None => return Ok(Dig::Absent),
        }
    }
    Ok(Dig::Found(settle(bytes, decode, &mut scratch, limit)?))
}

/// The item `bytes` encode, its frames decoded: as it is if it holds none.
fn settle<'a, T: AsRef<[u8]> + From<Vec<u8>>>(
    bytes: &'a [u8],
    decode: &DecodeFrame<'_, T>,
    scratch: &mut Option<&'a mut Option<T>>,
    limit: &Limit<'_>,
) -> Result<Item<'a>> {
    let bytes = if holds_frames(bytes, MAX_DEPTH)? {
        let mut expanded = Vec::new();
        expand_item(bytes, decode, &mut expanded, MAX_DEPTH, limit)?;
        into_scratch(T::from(expanded), scratch)?
    } else {
        bytes
    };
    Cursor::new(bytes).next_item()
}

/// `bytes`, moved into the scratch buffer the answer may borrow.
fn into_scratch<'a, T: AsRef<[u8]>>(
    bytes: T,
    scratch: &mut Option<&'a mut Option<T>>,
) -> Result<&'a [u8]> {
    let buffer = scratch
        .take()
        .ok_or_else(|| malformed("a compressed item inside another", 0))?;
    let buffer: &'a T = buffer.insert(bytes);
    Ok(buffer.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{check, dig, Value};
    use std::cell::RefCell;

    fn tree(width: usize, depth: usize) -> Value {
        if depth == 0 {
            return Value::str(&format!("leaf text {width} {}", "x".repeat(30)));
        }
        Value::Map(
            (0..width)
                .map(|i| (Value::str(&format!("k{i}")), tree(width, depth - 1)))
                .collect(),
        )
    }

    /// A stand-in codec: a "frame" is the index of the item's bytes in a
    /// table, so it is always smaller and decodes to exactly what was
    /// compressed. zstd's own round trip is tested through the reader
    /// (tests/compression.rs).
    struct Table(RefCell<Vec<Vec<u8>>>);

    impl Table {
        fn compress(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<bool> {
            let mut t = self.0.borrow_mut();
            write_varint(out, t.len() as u64);
            t.push(raw.to_vec());
            Ok(true)
        }
        fn decode(&self, frame: &[u8]) -> Result<Vec<u8>> {
            let mut at = 0;
            let i = crate::format::varint::read_varint(frame, &mut at).unwrap() as usize;
            Ok(self.0.borrow()[i].clone())
        }
    }

    fn encoded(value: &Value) -> Vec<u8> {
        let mut bytes = Vec::new();
        value.encode(&mut bytes).unwrap();
        bytes
    }

    #[test]
    fn split_frames_subtrees_expand_restores_the_bytes_and_dig_finds_the_same() {
        // 6^4 leaves of 44 bytes: about 60 KB, its subtrees of depth 2
        // (about 1.7 KB) framed whole, the levels above raw.
        let bytes = encoded(&tree(6, 4));
        let table = Table(RefCell::new(Vec::new()));
        let mut split_bytes = Vec::new();
        let frames = split(
            &bytes,
            &mut |raw, out| table.compress(raw, out),
            &mut split_bytes,
        )
        .unwrap();
        assert_eq!(frames, 36);
        assert!(
            split_bytes.len() < bytes.len() / 100,
            "{}",
            split_bytes.len()
        );
        let decode = |frame: &[u8]| table.decode(frame);
        let mut expanded = Vec::new();
        expand(&split_bytes, &decode, &mut expanded).unwrap();
        assert_eq!(expanded, bytes);
        // Every path of up to 4 steps, some missing, gives what dig on the
        // raw value gives, item for item: containers come back expanded.
        let keys: Vec<String> = (0..7).map(|i| format!("k{i}")).collect();
        for a in &keys {
            for b in &keys {
                for depth in 0..=4 {
                    let path: Vec<Probe<'_>> = [a, b, a, b][..depth]
                        .iter()
                        .map(|k| Probe::Str {
                            bytes: k.as_bytes(),
                            binary: false,
                        })
                        .collect();
                    let mut scratch = None;
                    let walked = dig_in(&split_bytes, &path, false, &decode, &mut scratch).unwrap();
                    assert_eq!(walked, dig(&bytes, &path, false).unwrap(), "{path:?}");
                }
            }
        }
        // A path past a leaf, and an array step on a map: stuck alike.
        let past = [
            Probe::Str {
                bytes: b"k0",
                binary: false,
            },
            Probe::Str {
                bytes: b"k1",
                binary: false,
            },
            Probe::Str {
                bytes: b"k2",
                binary: false,
            },
            Probe::Str {
                bytes: b"k3",
                binary: false,
            },
            Probe::Int(0),
        ];
        let mut scratch = None;
        assert_eq!(
            dig_in(&split_bytes, &past, false, &decode, &mut scratch).unwrap(),
            dig(&bytes, &past, false).unwrap()
        );
    }

    #[test]
    fn frames_that_are_not_smaller_are_not_kept() {
        let bytes = encoded(&tree(6, 4));
        // Every "frame" is the item itself: 2 bytes longer with its tag
        // and length, so none is kept and the value is written as it was.
        let mut same = |raw: &[u8], out: &mut Vec<u8>| {
            out.extend_from_slice(raw);
            Ok(true)
        };
        let mut split_bytes = Vec::new();
        assert_eq!(split(&bytes, &mut same, &mut split_bytes).unwrap(), 0);
        assert_eq!(split_bytes, bytes);
    }

    #[test]
    fn damaged_frames_are_errors() {
        let bytes = encoded(&tree(6, 4));
        let table = Table(RefCell::new(Vec::new()));
        let mut split_bytes = Vec::new();
        split(
            &bytes,
            &mut |raw, out| table.compress(raw, out),
            &mut split_bytes,
        )
        .unwrap();
        let path = [
            Probe::Str {
                bytes: b"k0",
                binary: false,
            },
            Probe::Str {
                bytes: b"k0",
                binary: false,
            },
        ];
        // A frame that decodes to two items, or to none.
        for wrong in [vec![0x01, 0x02], vec![]] {
            let decode = |_: &[u8]| Ok(wrong.clone());
            assert!(expand(&split_bytes, &decode, &mut Vec::new()).is_err());
            assert!(dig_in(&split_bytes, &path, false, &decode, &mut None).is_err());
        }
        // A frame that holds a frame: expanded, the value does not check.
        let framed = |_: &[u8]| Ok(split_bytes.clone());
        let mut expanded = Vec::new();
        expand(&split_bytes, &framed, &mut expanded).unwrap();
        assert!(check(&expanded).is_err());
        // A frame item read as an item, outside a record with frames.
        assert!(check(&split_bytes).is_err());
        assert!(dig(&split_bytes, &path, false).is_err());
    }
}
