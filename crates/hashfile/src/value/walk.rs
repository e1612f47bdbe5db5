//! One walk over a typed value's bytes, with one strictness, for every
//! decoder: the Ruby extension's, the Python package's and the owned
//! [`Value`](super::Value) tree all build their objects through it. The
//! walk reads each item once, refuses a value nested deeper than
//! [`MAX_DEPTH`], a container whose body holds more than its items and a
//! value followed by bytes; a [`Build`] only makes its language's objects.
//! Before it, each decoder made these checks itself, and Python's skipped
//! one (a body longer than its items) that Ruby's made.

use super::{too_deep, Container, Cursor, Dig, Item, MAX_DEPTH};
use crate::error::Error;

/// What a decoder makes of each item the walk reads. Containers are made
/// first and filled in order (an array's elements, a map's keys and values
/// alternating), then [`finish`](Build::finish)ed.
pub trait Build {
    /// An object of the decoder's language.
    type Value;
    /// The decoder's error.
    type Error;

    /// The decoder's error for damage the walk found.
    fn error(&mut self, e: Error) -> Self::Error;
    /// An item that is not an array or a map.
    fn leaf(&mut self, item: &Item<'_>) -> Result<Self::Value, Self::Error>;
    /// A map's key that is not an array or a map: by default as any leaf
    /// (Ruby interns a String key, or makes it a Symbol).
    fn key(&mut self, item: &Item<'_>) -> Result<Self::Value, Self::Error> {
        self.leaf(item)
    }
    /// An empty array that will hold `len` elements.
    fn array(&mut self, len: u64) -> Result<Self::Value, Self::Error>;
    /// Appends an element to an array [`array`](Build::array) made.
    fn push(&mut self, array: &mut Self::Value, element: Self::Value) -> Result<(), Self::Error>;
    /// An empty map that will hold `len` pairs.
    fn map(&mut self, len: u64) -> Result<Self::Value, Self::Error>;
    /// Adds a pair to a map [`map`](Build::map) made; `stored` is the map as
    /// stored, for an error that names its keys (two distinct as stored
    /// may be equal in the decoder's language).
    fn insert(
        &mut self,
        map: &mut Self::Value,
        key: Self::Value,
        value: Self::Value,
        stored: Container<'_>,
    ) -> Result<(), Self::Error>;
    /// A container once every item is in (Ruby freezes it under `freeze:`).
    fn finish(&mut self, container: Self::Value) -> Result<Self::Value, Self::Error> {
        Ok(container)
    }
}

/// Exactly one value from `bytes` (a typed record's value), built.
pub fn value<B: Build>(b: &mut B, bytes: &[u8]) -> Result<B::Value, B::Error> {
    let mut cursor = Cursor::new(bytes);
    let value = next(b, &mut cursor, MAX_DEPTH)?;
    cursor.end_of_value().map_err(|e| b.error(e))?;
    Ok(value)
}

/// The next item from `cursor`, built, with containers in it nested at
/// most `depth_left` deep.
#[inline]
pub fn next<B: Build>(
    b: &mut B,
    cursor: &mut Cursor<'_>,
    depth_left: usize,
) -> Result<B::Value, B::Error> {
    // The item is borrowed where the cursor left it (`ref`): moved out of
    // the Result, it was copied through the stack in wider loads than the
    // stores that wrote it, failed store forwards that were half of a Ruby
    // `db[]`'s time on a small nested value (`perf annotate`).
    match cursor.next_item() {
        Ok(ref item) => item_at(b, item, depth_left),
        Err(e) => Err(b.error(e)),
    }
}

/// What a [`dig`](super::dig) of `steps` probes ended on, built: `None`
/// if the path finds nothing; else how many steps were taken (all, or up
/// to the one the walk could not take on the bytes, which the binding's
/// own indexing takes with the rest) and the item there. Each step went
/// one container down, so what it ended on nests only as deep as is left,
/// as a decode of the whole value would have it.
pub fn dug<B: Build>(
    b: &mut B,
    walked: &Dig<'_>,
    steps: usize,
) -> Result<Option<(usize, B::Value)>, B::Error> {
    let (taken, item) = match walked {
        Dig::Absent => return Ok(None),
        Dig::Stuck { step, item } => (*step, item),
        Dig::Found(item) => (steps, item),
    };
    let built = item_at(b, item, MAX_DEPTH.saturating_sub(taken))?;
    Ok(Some((taken, built)))
}

/// An item already read (what `dig` ended on, say), built, with containers
/// in it nested at most `depth_left` deep.
pub fn item_at<B: Build>(
    b: &mut B,
    item: &Item<'_>,
    depth_left: usize,
) -> Result<B::Value, B::Error> {
    match *item {
        Item::Array(c) => {
            let depth = deeper(b, depth_left)?;
            let mut inner = c.cursor();
            let mut array = b.array(c.len)?;
            for _ in 0..c.len {
                let element = next(b, &mut inner, depth)?;
                b.push(&mut array, element)?;
            }
            end_of_body(b, &inner)?;
            b.finish(array)
        }
        Item::Map(c) => {
            let depth = deeper(b, depth_left)?;
            let mut inner = c.cursor();
            let mut map = b.map(c.len)?;
            for _ in 0..c.len {
                let key = match inner.next_item() {
                    Ok(ref key @ (Item::Array(_) | Item::Map(_))) => item_at(b, key, depth)?,
                    Ok(ref key) => b.key(key)?,
                    Err(e) => return Err(b.error(e)),
                };
                let value = next(b, &mut inner, depth)?;
                b.insert(&mut map, key, value, c)?;
            }
            end_of_body(b, &inner)?;
            b.finish(map)
        }
        ref leaf => b.leaf(leaf),
    }
}

/// The depth left inside a container at `depth_left`, or the error.
fn deeper<B: Build>(b: &mut B, depth_left: usize) -> Result<usize, B::Error> {
    depth_left.checked_sub(1).ok_or_else(|| b.error(too_deep()))
}

fn end_of_body<B: Build>(b: &mut B, inner: &Cursor<'_>) -> Result<(), B::Error> {
    inner.end_of_body().map_err(|e| b.error(e))
}
