//! A block cache over bytes that are far away: a [`BlockCache`] is a
//! [`Source`] over any [`RangeFetch`] (an HTTP or S3 object, say), holding
//! recently read blocks in bounded memory.
//!
//! The store is cut into aligned blocks of `block_len` bytes. A read is
//! served from the blocks in memory; the blocks it lacks are fetched in one
//! call, adjacent ones merged into one range. Evicting is CLOCK (a
//! second-chance approximation of LRU that costs one bit per block and no
//! list updates on a hit). Blocks [`Source::pin`]ned (the index, when a
//! reader prefetches it) are kept outside the bounded part and never
//! evicted. Every thread using one reader shares its cache.
//!
//! Batches: [`Source::prefetch`] takes the ranges a batch of lookups needs
//! at one level (all seed blocks, then all slots, then all records), and
//! fetches every missing block of all of them in one [`RangeFetch::fetch`]
//! call, which a network fetcher issues concurrently.

use std::collections::HashMap;
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::source::{Piece, Source};

/// Fetches byte ranges of an object whose length is known: what a
/// [`BlockCache`] needs from a transport.
pub trait RangeFetch: Send + Sync {
    /// The object's length in bytes.
    fn size(&self) -> u64;

    /// The bytes of every range, in order, each exactly as long as its
    /// range. The ranges are sorted, disjoint, not adjacent, and inside
    /// `0..size()`. A fetcher issues them concurrently where it can (one
    /// request each, in parallel, over one HTTP/2 connection or a few
    /// HTTP/1.1 ones); an error from any fails the call.
    fn fetch(&self, ranges: &[Range<u64>]) -> io::Result<Vec<Vec<u8>>>;
}

/// A read of at least this many bytes (and at least two blocks) is not
/// served through the blocks: it is fetched straight into one buffer, in
/// requests of [`LARGE_READ_PIECE`] bytes (`BlockCache::read_large`). A
/// record this long is read once, whole, by the lookup that wants it;
/// through the blocks it would be copied three times and push the index
/// out of the cache. Shorter reads (a `verify` chunk of 1 MiB, which a
/// read-ahead hint fetched into the blocks already) go through them.
pub const LARGE_READ: usize = 8 << 20;

/// The most bytes one request of a long read asks for: a server must send
/// what it claims before a reader holds more.
pub const LARGE_READ_PIECE: usize = 8 << 20;

/// How a [`BlockCache`] is sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheOptions {
    /// Bytes in a block: the unit of fetching and of caching. Reads are
    /// aligned to it.
    pub block_len: usize,
    /// Bytes of blocks kept, besides pinned ones; at least one block is
    /// always kept.
    pub capacity: usize,
}

impl CacheOptions {
    /// 16 KiB: one round trip carries a seed block, a slot or a typical
    /// record with room around it, and fits a TCP initial congestion window
    /// of 10 segments plus change; the header and section table of a store
    /// fit in the first block ([`super::OPEN_READ_LEN`]).
    pub const DEFAULT_BLOCK_LEN: usize = 16 << 10;
    /// 32 MiB: 2,048 blocks of 16 KiB.
    pub const DEFAULT_CAPACITY: usize = 32 << 20;
}

impl Default for CacheOptions {
    fn default() -> Self {
        CacheOptions {
            block_len: Self::DEFAULT_BLOCK_LEN,
            capacity: Self::DEFAULT_CAPACITY,
        }
    }
}

/// What a [`BlockCache`] has done, for `info` and for tests that count
/// round trips.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Block reads served from memory.
    pub hits: u64,
    /// Blocks fetched.
    pub misses: u64,
    /// Calls to [`RangeFetch::fetch`]: round trips, since a fetcher issues
    /// the ranges of one call together.
    pub fetches: u64,
    /// Ranges fetched (requests, for a fetcher that makes one per range).
    pub ranges: u64,
    /// Bytes fetched.
    pub bytes_fetched: u64,
    /// Bytes of blocks in memory now, pinned ones included.
    pub resident_bytes: u64,
    /// Bytes of pinned blocks.
    pub pinned_bytes: u64,
}

/// How a load keeps the blocks it fetched.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Read now: in the ring, unmarked.
    Read,
    /// Prefetched, to be read soon: in the ring, marked referenced.
    Soon,
    /// Outside the ring, for the cache's life.
    Pinned,
}

/// A [`Source`] that reads through a bounded cache of aligned blocks.
pub struct BlockCache<F> {
    fetcher: F,
    size: u64,
    block_len: usize,
    capacity_blocks: usize,
    state: Mutex<Blocks>,
    hits: AtomicU64,
    misses: AtomicU64,
    fetches: AtomicU64,
    ranges: AtomicU64,
    bytes_fetched: AtomicU64,
}

/// The blocks in memory: a CLOCK ring of bounded size, and the pinned ones.
#[derive(Default)]
struct Blocks {
    /// Block number to its place in `ring`.
    places: HashMap<u64, usize>,
    ring: Vec<Slot>,
    hand: usize,
    pinned: HashMap<u64, Arc<[u8]>>,
    resident_bytes: u64,
    pinned_bytes: u64,
}

struct Slot {
    block: u64,
    bytes: Arc<[u8]>,
    /// Set on every hit, cleared as the hand passes: a block is evicted
    /// only if nothing read it since the hand last went by.
    referenced: bool,
}

impl Blocks {
    fn get(&mut self, block: u64) -> Option<Arc<[u8]>> {
        if let Some(bytes) = self.pinned.get(&block) {
            return Some(Arc::clone(bytes));
        }
        let place = *self.places.get(&block)?;
        let slot = &mut self.ring[place];
        slot.referenced = true;
        Some(Arc::clone(&slot.bytes))
    }

    /// Puts `block` in the ring, marked referenced if it is to be read
    /// soon (a prefetch): CLOCK's hand then has to pass it twice to evict
    /// it, which takes more inserts than a batch's piece makes (half the
    /// ring) before reading it. Blocks read on demand go in unmarked.
    fn insert(&mut self, block: u64, bytes: Arc<[u8]>, capacity_blocks: usize, soon: bool) {
        if self.pinned.contains_key(&block) {
            return;
        }
        if let Some(&place) = self.places.get(&block) {
            self.ring[place].referenced = true;
            return;
        }
        let len = bytes.len() as u64;
        let slot = Slot {
            block,
            bytes,
            referenced: soon,
        };
        if self.ring.len() < capacity_blocks {
            self.places.insert(block, self.ring.len());
            self.ring.push(slot);
        } else {
            // The hand goes round clearing bits until it finds a block
            // nothing read since its last pass (at most one full turn).
            while self.ring[self.hand].referenced {
                self.ring[self.hand].referenced = false;
                self.hand = (self.hand + 1) % self.ring.len();
            }
            let old = std::mem::replace(&mut self.ring[self.hand], slot);
            self.resident_bytes -= old.bytes.len() as u64;
            self.places.remove(&old.block);
            self.places.insert(block, self.hand);
            self.hand = (self.hand + 1) % self.ring.len();
        }
        self.resident_bytes += len;
    }

    fn pin(&mut self, block: u64, bytes: Arc<[u8]>) {
        if self.pinned.contains_key(&block) {
            return;
        }
        // A block moving from the ring stays in it until evicted: it is
        // read from `pinned` first, and the ring slot ages out.
        let len = bytes.len() as u64;
        self.pinned.insert(block, bytes);
        self.pinned_bytes += len;
        self.resident_bytes += len;
    }
}

impl<F: RangeFetch> BlockCache<F> {
    /// A cache over `fetcher`, empty.
    pub fn new(fetcher: F, options: CacheOptions) -> BlockCache<F> {
        let block_len = options.block_len.max(1);
        BlockCache {
            size: fetcher.size(),
            fetcher,
            block_len,
            capacity_blocks: (options.capacity / block_len).max(1),
            state: Mutex::new(Blocks::default()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            fetches: AtomicU64::new(0),
            ranges: AtomicU64::new(0),
            bytes_fetched: AtomicU64::new(0),
        }
    }

    /// Bytes at `offset` that the caller already has (an opening request
    /// that also learnt the object's length): every whole block in them,
    /// and the last partial one if it ends the object, goes into the cache.
    pub fn insert(&self, offset: u64, bytes: &[u8]) {
        let block_len = self.block_len as u64;
        let mut first = offset.div_ceil(block_len);
        let end = offset + bytes.len() as u64;
        let mut state = self.lock();
        while first * block_len < end {
            let start = first * block_len;
            let stop = (start + block_len).min(self.size);
            if stop > end {
                break;
            }
            let piece = &bytes[(start - offset) as usize..(stop - offset) as usize];
            state.insert(first, Arc::from(piece), self.capacity_blocks, false);
            first += 1;
        }
    }

    /// The fetcher, for what it knows about the object.
    pub fn fetcher(&self) -> &F {
        &self.fetcher
    }

    /// The block length.
    pub fn block_len(&self) -> usize {
        self.block_len
    }

    /// Counters since the cache was made.
    pub fn stats(&self) -> CacheStats {
        let (resident_bytes, pinned_bytes) = {
            let state = self.lock();
            (state.resident_bytes, state.pinned_bytes)
        };
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            fetches: self.fetches.load(Ordering::Relaxed),
            ranges: self.ranges.load(Ordering::Relaxed),
            bytes_fetched: self.bytes_fetched.load(Ordering::Relaxed),
            resident_bytes,
            pinned_bytes,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Blocks> {
        // The state is consistent between statements: a panic in another
        // thread (none is expected) leaves nothing half-done to refuse.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The blocks covering `range`, a block number past the last for an
    /// empty range.
    fn blocks_of(&self, range: &Range<u64>) -> Range<u64> {
        let block_len = self.block_len as u64;
        range.start / block_len..range.end.div_ceil(block_len)
    }

    fn block_range(&self, block: u64) -> Range<u64> {
        let start = block * self.block_len as u64;
        start..(start + self.block_len as u64).min(self.size)
    }

    fn check(&self, offset: u64, len: usize) -> io::Result<Range<u64>> {
        match offset.checked_add(len as u64) {
            Some(end) if end <= self.size => Ok(offset..end),
            _ => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "read of {len} bytes at {offset} is past the end of {} bytes",
                    self.size
                ),
            )),
        }
    }

    /// Every block of every range, from memory or fetched in one call,
    /// kept as `keep` says.
    fn load(&self, ranges: &[Range<u64>], keep: Keep) -> io::Result<HashMap<u64, Arc<[u8]>>> {
        let pin = keep == Keep::Pinned;
        // The blocks are counted before they are listed, and the list is
        // allocated fallibly: ranges to pin come from a header, which may
        // claim an index of 2^50 bytes.
        let count = ranges.iter().try_fold(0usize, |count, range| {
            let blocks = self.blocks_of(range);
            usize::try_from(blocks.end.saturating_sub(blocks.start))
                .ok()
                .and_then(|n| count.checked_add(n))
        });
        let mut wanted: Vec<u64> = Vec::new();
        count
            .and_then(|count| wanted.try_reserve_exact(count).ok())
            .ok_or_else(|| {
                crate::error::io_out_of_memory(
                    count.map_or(u64::MAX, |c| c as u64 * 8),
                    "the list of blocks to read",
                )
            })?;
        wanted.extend(ranges.iter().flat_map(|range| self.blocks_of(range)));
        wanted.sort_unstable();
        wanted.dedup();
        let mut found = HashMap::with_capacity(wanted.len());
        let mut missing = Vec::new();
        {
            let mut state = self.lock();
            for &block in &wanted {
                match state.get(block) {
                    Some(bytes) => {
                        found.insert(block, bytes);
                    }
                    None => missing.push(block),
                }
            }
        }
        self.hits.fetch_add(found.len() as u64, Ordering::Relaxed);
        if !missing.is_empty() {
            // Adjacent missing blocks become one range.
            let mut runs: Vec<Range<u64>> = Vec::new();
            for &block in &missing {
                match runs.last_mut() {
                    Some(run) if run.end == block => run.end += 1,
                    _ => runs.push(block..block + 1),
                }
            }
            let byte_ranges: Vec<Range<u64>> = runs
                .iter()
                .map(|run| self.block_range(run.start).start..self.block_range(run.end - 1).end)
                .collect();
            let fetched = self.fetcher.fetch(&byte_ranges)?;
            if fetched.len() != byte_ranges.len() {
                return Err(io::Error::other(format!(
                    "asked for {} ranges, the fetcher returned {}",
                    byte_ranges.len(),
                    fetched.len()
                )));
            }
            self.fetches.fetch_add(1, Ordering::Relaxed);
            self.ranges
                .fetch_add(byte_ranges.len() as u64, Ordering::Relaxed);
            self.misses
                .fetch_add(missing.len() as u64, Ordering::Relaxed);
            let mut state = self.lock();
            for ((run, range), bytes) in runs.iter().zip(&byte_ranges).zip(fetched) {
                if bytes.len() as u64 != range.end - range.start {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "asked for bytes {}..{}, got {} bytes",
                            range.start,
                            range.end,
                            bytes.len()
                        ),
                    ));
                }
                self.bytes_fetched
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                for block in run.clone() {
                    let within = self.block_range(block);
                    let piece: Arc<[u8]> = Arc::from(
                        &bytes[(within.start - range.start) as usize
                            ..(within.end - range.start) as usize],
                    );
                    if !pin {
                        state.insert(
                            block,
                            Arc::clone(&piece),
                            self.capacity_blocks,
                            keep == Keep::Soon,
                        );
                    }
                    found.insert(block, piece);
                }
            }
        }
        if pin {
            let mut state = self.lock();
            for (&block, bytes) in &found {
                state.pin(block, Arc::clone(bytes));
            }
        }
        Ok(found)
    }

    /// The bytes of a range too long to go through the blocks
    /// ([`LARGE_READ`] or more: a long record), fetched in requests of at
    /// most [`LARGE_READ_PIECE`] bytes straight into one buffer, which
    /// is allocated fallibly once the first piece came, and kept out of
    /// the cache: its blocks are neither listed nor copied, and a
    /// transport's buffer is the only other copy, one piece at a time. An
    /// allocation that fails is an error.
    fn read_large<'a>(&self, range: Range<u64>) -> io::Result<Piece<'a>> {
        // Room for all of it at once, so that no growth copies it: the
        // length is what the reader asked for, which it bounded (a record
        // by `max_value_size`); untouched, the room costs address space,
        // not memory, until the bytes come.
        let len = (range.end - range.start) as usize;
        let mut bytes: Vec<u8> = Vec::new();
        let mut at = range.start;
        while at < range.end {
            let end = range.end.min(at + LARGE_READ_PIECE as u64);
            let mut fetched = self.fetcher.fetch(std::slice::from_ref(&(at..end)))?;
            self.fetches.fetch_add(1, Ordering::Relaxed);
            self.ranges.fetch_add(1, Ordering::Relaxed);
            let piece = match fetched.pop() {
                Some(piece) if fetched.is_empty() && piece.len() as u64 == end - at => piece,
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("asked for bytes {at}..{end}, the fetcher returned another length"),
                    ))
                }
            };
            self.bytes_fetched
                .fetch_add(piece.len() as u64, Ordering::Relaxed);
            if at == range.start {
                if end == range.end {
                    return Ok(Piece::owned(piece));
                }
                bytes.try_reserve_exact(len).map_err(|_| {
                    crate::error::io_out_of_memory(
                        len as u64,
                        "a long read through the block cache",
                    )
                })?;
            }
            bytes.extend_from_slice(&piece);
            at = end;
        }
        Ok(Piece::owned(bytes))
    }

    /// The bytes of `range` (inside the object), from the loaded blocks.
    fn assemble<'a>(&self, range: Range<u64>, blocks: &HashMap<u64, Arc<[u8]>>) -> Piece<'a> {
        let block_len = self.block_len as u64;
        let span = self.blocks_of(&range);
        if span.end - span.start == 1 {
            let start = span.start * block_len;
            let block = Arc::clone(&blocks[&span.start]);
            return Piece::shared(
                block,
                (range.start - start) as usize..(range.end - start) as usize,
            );
        }
        let mut bytes = Vec::with_capacity((range.end - range.start) as usize);
        for block in span {
            let within = self.block_range(block);
            let from = range.start.max(within.start);
            let to = range.end.min(within.end);
            bytes.extend_from_slice(
                &blocks[&block][(from - within.start) as usize..(to - within.start) as usize],
            );
        }
        Piece::owned(bytes)
    }
}

impl<F: RangeFetch> Source for BlockCache<F> {
    fn size(&self) -> u64 {
        self.size
    }

    /// The rest of `offset`'s block if it is in memory; else the blocks
    /// covering `block_len` bytes from `offset` (up to two, fetched in one
    /// range), so that a record of up to a block takes one round trip.
    fn read_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        let range = self.check(offset, len)?;
        if range.is_empty() {
            return Ok(Piece::owned(Vec::new()));
        }
        let block = offset / self.block_len as u64;
        let cached = self.lock().get(block);
        if let Some(bytes) = cached {
            self.hits.fetch_add(1, Ordering::Relaxed);
            let within = self.block_range(block);
            let end = range.end.min(within.end);
            return Ok(Piece::shared(
                bytes,
                (offset - within.start) as usize..(end - within.start) as usize,
            ));
        }
        let end = range.end.min(offset + self.block_len as u64);
        let blocks = self.load(std::slice::from_ref(&(offset..end)), Keep::Read)?;
        Ok(self.assemble(offset..end, &blocks))
    }

    fn read_exact_at(&self, offset: u64, len: usize) -> io::Result<Piece<'_>> {
        let range = self.check(offset, len)?;
        if range.is_empty() {
            return Ok(Piece::owned(Vec::new()));
        }
        if len >= LARGE_READ.max(2 * self.block_len) {
            return self.read_large(range);
        }
        let blocks = self.load(std::slice::from_ref(&range), Keep::Read)?;
        Ok(self.assemble(range, &blocks))
    }

    /// A pass in order's hint: the missing blocks of the range are fetched
    /// now, adjacent ones in one request, as many as the cache holds
    /// (`prefetch`), so that a pass takes a round trip per window rather
    /// than one per block (a 1 GB store is 65,536 blocks of 16 KiB). A
    /// failed fetch is only a lost hint: the read that needs the bytes
    /// fetches them again and reports its error.
    fn will_read(&self, offset: u64, len: u64) {
        let _ = self.prefetch(std::slice::from_ref(&(offset..offset.saturating_add(len))));
    }

    /// Fetches the missing blocks of `ranges`, as many as the cache holds:
    /// blocks past that would evict the first ones before anything read
    /// them, so they are left for the reads to fetch (a caller that wants
    /// them all reads in pieces of [`Source::capacity_hint`]).
    fn prefetch(&self, ranges: &[Range<u64>]) -> io::Result<()> {
        let ranges: Vec<Range<u64>> = ranges
            .iter()
            .map(|r| r.start.min(self.size)..r.end.min(self.size))
            .filter(|r| !r.is_empty())
            .collect();
        // Distinct blocks, in the order of the ranges given.
        let mut seen = std::collections::HashSet::new();
        // At most one block past what the cache holds is listed: a range
        // a header claims may cover 2^36 blocks.
        let mut blocks: Vec<u64> = ranges
            .iter()
            .flat_map(|r| self.blocks_of(r))
            .filter(|&b| seen.insert(b))
            .take(self.capacity_blocks.saturating_add(1))
            .collect();
        if blocks.len() <= self.capacity_blocks {
            return self.load(&ranges, Keep::Soon).map(drop);
        }
        blocks.truncate(self.capacity_blocks);
        let kept: Vec<Range<u64>> = blocks.into_iter().map(|b| self.block_range(b)).collect();
        self.load(&kept, Keep::Soon).map(drop)
    }

    fn pin(&self, ranges: &[Range<u64>]) -> io::Result<()> {
        let ranges: Vec<Range<u64>> = ranges
            .iter()
            .map(|r| r.start.min(self.size)..r.end.min(self.size))
            .filter(|r| !r.is_empty())
            .collect();
        self.load(&ranges, Keep::Pinned).map(drop)
    }

    fn block_len_hint(&self) -> Option<usize> {
        Some(self.block_len)
    }

    fn capacity_hint(&self) -> Option<usize> {
        Some(self.capacity_blocks * self.block_len)
    }
}

#[cfg(test)]
// A list of one range is what these tests mean: one block, one request.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use std::sync::Mutex as StdMutex;

    /// Bytes in memory behind a fetcher that records every call.
    struct Recorded {
        bytes: Vec<u8>,
        calls: StdMutex<Vec<Vec<Range<u64>>>>,
    }

    impl Recorded {
        fn new(len: usize) -> Recorded {
            Recorded {
                bytes: (0..len).map(|i| (i * 7 % 251) as u8).collect(),
                calls: StdMutex::new(Vec::new()),
            }
        }
    }

    impl RangeFetch for Recorded {
        fn size(&self) -> u64 {
            self.bytes.len() as u64
        }

        fn fetch(&self, ranges: &[Range<u64>]) -> io::Result<Vec<Vec<u8>>> {
            self.calls.lock().unwrap().push(ranges.to_vec());
            Ok(ranges
                .iter()
                .map(|r| self.bytes[r.start as usize..r.end as usize].to_vec())
                .collect())
        }
    }

    fn cache(len: usize, block_len: usize, blocks: usize) -> BlockCache<Recorded> {
        BlockCache::new(
            Recorded::new(len),
            CacheOptions {
                block_len,
                capacity: block_len * blocks,
            },
        )
    }

    #[test]
    fn reads_return_the_objects_bytes_across_block_edges_and_at_the_end() {
        let c = cache(1000, 64, 4);
        let all = c.fetcher().bytes.clone();
        for (offset, len) in [
            (0, 1),
            (60, 10),
            (0, 1000),
            (999, 1),
            (128, 64),
            (990, 10),
            (1, 998),
        ] {
            assert_eq!(
                &*c.read_exact_at(offset, len).unwrap(),
                &all[offset as usize..offset as usize + len],
                "{offset}+{len}"
            );
        }
        assert!(c.read_exact_at(995, 10).is_err());
        assert!(c.read_exact_at(u64::MAX, 2).is_err());
        assert_eq!(c.read_exact_at(1000, 0).unwrap().len(), 0);
    }

    #[test]
    fn a_prefix_read_takes_the_rest_of_a_cached_block_and_else_a_block_length_in_one_range() {
        let c = cache(1000, 64, 8);
        let piece = c.read_at(100, 900).unwrap();
        assert_eq!(piece.len(), 64, "64 bytes from 100, over two blocks");
        assert_eq!(
            c.fetcher().calls.lock().unwrap().as_slice(),
            &[vec![64..192]]
        );
        let piece = c.read_at(130, 870).unwrap();
        assert_eq!(piece.len(), 62, "the rest of block 2, from memory");
        assert_eq!(c.stats().fetches, 1);
    }

    #[test]
    fn missing_blocks_of_many_ranges_come_in_one_call_with_adjacent_ones_merged() {
        let c = cache(10_000, 100, 50);
        c.read_exact_at(250, 10).unwrap(); // block 2
        c.prefetch(&[200..210, 300..420, 405..410, 900..901, 9_990..20_000])
            .unwrap();
        let calls = c.fetcher().calls.lock().unwrap().clone();
        assert_eq!(
            calls,
            vec![vec![200..300], vec![300..500, 900..1000, 9_900..10_000]]
        );
        let before = c.stats();
        for (offset, len) in [(300, 200), (900, 100), (9_950, 50)] {
            c.read_exact_at(offset, len).unwrap();
        }
        let after = c.stats();
        assert_eq!(
            (after.fetches, after.misses),
            (before.fetches, before.misses),
            "all from memory"
        );
        assert_eq!(after.bytes_fetched, 500);
    }

    #[test]
    fn memory_stays_within_capacity_and_recently_read_blocks_survive() {
        let c = cache(100_000, 100, 10);
        for block in 0..10 {
            c.read_exact_at(block * 100, 1).unwrap();
        }
        // Blocks 0 and 1 are read again: their second chance keeps them
        // while the next ten newcomers push others out.
        c.read_exact_at(0, 1).unwrap();
        c.read_exact_at(100, 1).unwrap();
        for block in 10..18 {
            c.read_exact_at(block * 100, 1).unwrap();
        }
        assert_eq!(c.stats().resident_bytes, 1_000);
        let fetches = c.stats().fetches;
        c.read_exact_at(0, 1).unwrap();
        c.read_exact_at(100, 1).unwrap();
        assert_eq!(c.stats().fetches, fetches, "blocks read twice were kept");
        c.read_exact_at(200, 1).unwrap();
        assert_eq!(
            c.stats().fetches,
            fetches + 1,
            "block 2, read once, was evicted"
        );
    }

    /// A prefetch of half the ring is all still there when read, even
    /// with the rest of the ring recently read: the hand, clearing those
    /// bits, came back round to the first prefetched block and evicted it
    /// before anything read it, when prefetched blocks went in unmarked.
    #[test]
    fn a_prefetch_of_half_the_ring_survives_until_read() {
        let c = cache(100_000, 100, 8);
        for block in 0..8 {
            c.read_exact_at(block * 100, 1).unwrap();
        }
        for block in 2..8 {
            c.read_exact_at(block * 100, 1).unwrap();
        }
        c.prefetch(&[800..1200]).unwrap();
        let fetches = c.stats().fetches;
        for block in 8..12 {
            c.read_exact_at(block * 100, 1).unwrap();
        }
        assert_eq!(
            c.stats().fetches,
            fetches,
            "all four prefetched blocks were still there"
        );
    }

    #[test]
    fn pinned_blocks_are_never_evicted_and_do_not_count_against_capacity() {
        let c = cache(100_000, 100, 2);
        c.pin(&[0..500]).unwrap();
        for block in 10..100 {
            c.read_exact_at(block * 100, 1).unwrap();
        }
        let fetches = c.stats().fetches;
        assert_eq!(
            &*c.read_exact_at(0, 500).unwrap(),
            &c.fetcher().bytes[..500]
        );
        assert_eq!(c.stats().fetches, fetches);
        assert_eq!(
            (c.stats().pinned_bytes, c.stats().resident_bytes),
            (500, 700)
        );
    }

    #[test]
    fn bytes_inserted_from_an_opening_request_fill_whole_blocks_only() {
        let c = cache(1000, 64, 16);
        let all = c.fetcher().bytes.clone();
        c.insert(0, &all[..150]);
        assert_eq!(c.stats().resident_bytes, 128);
        c.read_exact_at(0, 128).unwrap();
        assert_eq!(c.stats().fetches, 0);
        c.insert(960, &all[960..]);
        c.read_exact_at(960, 40).unwrap();
        assert_eq!(c.stats().fetches, 0, "the last, short block is whole");
    }

    /// A read of `LARGE_READ` or more is fetched in pieces of
    /// `LARGE_READ_PIECE` into one buffer and kept out of the blocks: a
    /// record of 20 MiB listed no blocks and evicted nothing.
    #[test]
    fn a_long_read_is_fetched_in_pieces_past_the_blocks() {
        let len = 2 * LARGE_READ_PIECE + (4 << 20);
        let c = cache(len + 100, 16 << 10, 64);
        c.read_exact_at(0, 1).unwrap();
        let piece = c.read_exact_at(50, len).unwrap();
        assert_eq!(&*piece, &c.fetcher().bytes[50..50 + len]);
        let calls = c.fetcher().calls.lock().unwrap().clone();
        let piece_len = LARGE_READ_PIECE as u64;
        assert_eq!(
            calls[1..],
            [
                vec![50..50 + piece_len],
                vec![50 + piece_len..50 + 2 * piece_len],
                vec![50 + 2 * piece_len..50 + len as u64],
            ]
        );
        assert_eq!(c.stats().resident_bytes, 16 << 10, "only the first block");
        assert!(c.read_exact_at(len as u64, 101).is_err());
    }

    /// A fetcher that returns the wrong number of bytes is an error, never
    /// a short or shifted read.
    #[test]
    fn a_fetcher_returning_too_few_bytes_is_an_error() {
        struct Short;
        impl RangeFetch for Short {
            fn size(&self) -> u64 {
                1000
            }
            fn fetch(&self, ranges: &[Range<u64>]) -> io::Result<Vec<Vec<u8>>> {
                Ok(ranges
                    .iter()
                    .map(|r| vec![0; (r.end - r.start - 1) as usize])
                    .collect())
            }
        }
        let c = BlockCache::new(
            Short,
            CacheOptions {
                block_len: 64,
                capacity: 640,
            },
        );
        let error = c.read_exact_at(10, 10).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof);
        assert_eq!(c.stats().resident_bytes, 0);
    }
}
