//! The decoded items (and values) a store's `Decoder` keeps for the next
//! `dig` (or lookup): by the frame's place in the store's file, each with
//! a copy of its frame, evicted by CLOCK.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// The most bytes of decoded items one open store keeps
/// ([`Decoder::decode_item`](super::Decoder::decode_item)): a dig that enters a kept item skips its
/// decode. Debian's merged locale tree, every leaf of en and de dug in a
/// shuffled order, enters about 1.2 MB of items (docs/BENCHMARKS.md,
/// "Compressed values").
pub const ITEM_CACHE_LEN: usize = 4 << 20;

/// The longest decoded item kept: a longer one is decoded for each dig.
pub const KEPT_ITEM_LEN: usize = 64 << 10;

/// What a store's cache of decoded items holds and has done
/// ([`Decoder::item_cache_stats`](super::Decoder::item_cache_stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ItemCacheStats {
    /// Items kept.
    pub entries: u64,
    /// Their decoded bytes (at most [`ITEM_CACHE_LEN`]).
    pub bytes: u64,
    /// Items asked for that were kept.
    pub hits: u64,
    /// Items asked for that were decoded.
    pub misses: u64,
}

/// Decoded items by their frame's offset in the store's file and length:
/// each decoder has its own, so a frame of another store (or of the same
/// path opened again) is never answered from it. Each keeps a copy of its
/// frame, and is given back only for the same frame bytes: a file
/// rewritten in place under a reader (its map shows the new bytes) never
/// gets the items of the frames it replaced. Evicts by CLOCK (second
/// chance): an item asked for since the hand last passed it stays another
/// round.
#[derive(Default)]
pub(super) struct ItemCache {
    items: HashMap<ItemPlace, KeptItem>,
    /// Every kept item's place, in the order the hand visits them.
    hand: VecDeque<ItemPlace>,
    bytes: usize,
    hits: u64,
    misses: u64,
}

/// A frame's offset in its store's file, and its length.
type ItemPlace = (u64, usize);

struct KeptItem {
    bytes: Arc<[u8]>,
    /// The frame it was decoded from.
    frame: Box<[u8]>,
    entered: bool,
}

impl KeptItem {
    /// What it counts against [`ITEM_CACHE_LEN`]: the item and its frame.
    fn len(&self) -> usize {
        self.bytes.len() + self.frame.len()
    }
}

impl ItemCache {
    /// What the cache holds and has done.
    pub(super) fn stats(&self) -> ItemCacheStats {
        ItemCacheStats {
            entries: self.items.len() as u64,
            bytes: self.bytes as u64,
            hits: self.hits,
            misses: self.misses,
        }
    }

    /// The item kept for `frame` at `place`, if the frame there was the
    /// same bytes when it was kept.
    pub(super) fn get(&mut self, place: ItemPlace, frame: &[u8]) -> Option<Arc<[u8]>> {
        match self.items.get_mut(&place) {
            Some(kept) if *kept.frame == *frame => {
                kept.entered = true;
                self.hits += 1;
                Some(kept.bytes.clone())
            }
            _ => {
                self.misses += 1;
                None
            }
        }
    }

    /// Keeps `item`, decoded from `frame` at `place` (in place of what
    /// was kept there for other frame bytes).
    pub(super) fn insert(&mut self, place: ItemPlace, frame: &[u8], item: Arc<[u8]>) {
        if item.len() > KEPT_ITEM_LEN {
            return;
        }
        match self.items.get(&place) {
            Some(kept) if *kept.frame == *frame => return,
            Some(_) => {
                let stale = self.items.remove(&place).expect("just found");
                self.bytes -= stale.len();
                self.hand.retain(|p| *p != place);
            }
            None => {}
        }
        let kept = KeptItem {
            bytes: item,
            frame: frame.into(),
            entered: false,
        };
        while self.bytes + kept.len() > ITEM_CACHE_LEN {
            let Some(oldest) = self.hand.pop_front() else {
                break;
            };
            let kept = self
                .items
                .get_mut(&oldest)
                .expect("the hand holds kept places");
            if kept.entered {
                kept.entered = false;
                self.hand.push_back(oldest);
            } else {
                self.bytes -= kept.len();
                self.items.remove(&oldest);
            }
        }
        self.bytes += kept.len();
        self.hand.push_back(place);
        self.items.insert(place, kept);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::{
        prepare_dictionary, train, Decoder, Encoder, Levels, SMALL_DICTIONARY_CAPACITY,
    };

    #[test]
    fn kept_items_come_back_only_to_their_own_decoder_and_stay_within_the_limit() {
        let values: Vec<Vec<u8>> = (0..400)
            .map(|i| {
                format!("{{\"id\":{i},\"name\":\"product {i}\",\"colour\":\"blue\",\"size\":\"large\"}}").into_bytes()
            })
            .collect();
        let samples: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
        let dictionary = train(&samples, SMALL_DICTIONARY_CAPACITY);
        assert!(!dictionary.is_empty());
        let prepared = prepare_dictionary(&dictionary, Levels { short: 3, long: 9 });
        let mut encoder = Encoder::new(&prepared).unwrap();
        let mut frame = vec![];
        assert!(encoder.compress(&values[7], &mut frame).unwrap());
        let decoder = Decoder::new(&dictionary).unwrap();
        // Decoded, then given back from the cache: the same bytes, shared.
        let first = decoder.decode_item(100, &frame, u64::MAX).unwrap();
        let again = decoder.decode_item(100, &frame, u64::MAX).unwrap();
        assert_eq!(&*first, &values[7][..]);
        assert!(Arc::ptr_eq(&first, &again));
        let stats = decoder.item_cache_stats();
        assert_eq!(
            (stats.entries, stats.bytes, stats.hits, stats.misses),
            (1, (values[7].len() + frame.len()) as u64, 1, 1)
        );
        // Other bytes at the same place (a file rewritten in place): not
        // answered from the cache, and kept in place of the old.
        let mut other_frame = vec![];
        assert!(encoder.compress(&values[8], &mut other_frame).unwrap());
        other_frame.resize(frame.len(), 0); // the same length, other bytes
        assert!(decoder
            .decode_item(100, &other_frame, u64::MAX)
            .map(|b| *b != *values[7])
            .unwrap_or(true));
        let again = decoder.decode_item(100, &frame, u64::MAX).unwrap();
        assert_eq!(&*again, &values[7][..]);
        // Another store's decoder at the same frame decodes it itself:
        // without the dictionary it gets an error or other bytes.
        let other = Decoder::new(&[]).unwrap();
        assert_ne!(
            other.decode_item(100, &frame, u64::MAX).ok().as_deref(),
            Some(&values[7][..])
        );

        // Items past the limit evict others; one entered again since the
        // hand passed it stays (second chance); one over KEPT_ITEM_LEN is
        // decoded each time and never kept.
        let mut cache = ItemCache::default();
        let item = |n: usize| -> Arc<[u8]> { vec![n as u8; KEPT_ITEM_LEN].into() };
        let per_cache = ITEM_CACHE_LEN / KEPT_ITEM_LEN;
        for n in 0..per_cache {
            cache.insert((n as u64, 1), &[], item(n));
        }
        assert_eq!(cache.bytes, ITEM_CACHE_LEN);
        assert!(cache.get((0, 1), &[]).is_some());
        cache.insert((per_cache as u64, 1), &[], item(per_cache));
        assert_eq!(cache.bytes, ITEM_CACHE_LEN);
        assert!(cache.get((0, 1), &[]).is_some(), "entered since: kept");
        assert!(
            cache.get((1, 1), &[]).is_none(),
            "the oldest not entered: evicted"
        );
        assert_eq!(cache.items.len(), cache.hand.len());
        let long: Arc<[u8]> = vec![0; KEPT_ITEM_LEN + 1].into();
        cache.insert((u64::MAX, 1), &[], long);
        assert!(cache.get((u64::MAX, 1), &[]).is_none());
        assert!(cache.bytes <= ITEM_CACHE_LEN);
    }
}
