//! Iterating a store's records in the order they were added.

use super::{Reader, RecordBuf, Source};
use crate::error::Result;

/// Iterator over a store's records, in the order they were added. Stops
/// after the first error, which it yields.
pub struct Iter<'a, S> {
    reader: &'a Reader<S>,
    offset: u64,
    index: u64,
    failed: bool,
}

impl<'a, S: Source> Iter<'a, S> {
    pub(super) fn new(reader: &'a Reader<S>) -> Iter<'a, S> {
        Iter {
            reader,
            offset: 0,
            index: 0,
            failed: false,
        }
    }

    /// The offset in the records section of the next record: where
    /// `Reader::record_at` would resume.
    pub fn offset(&self) -> u64 {
        self.offset
    }
}

impl<'a, S: Source> Iterator for Iter<'a, S> {
    type Item = Result<RecordBuf<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.reader.next_record(self.offset, self.index) {
            Ok(Some((record, next))) => {
                self.offset = next;
                self.index += 1;
                Some(Ok(record))
            }
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}
