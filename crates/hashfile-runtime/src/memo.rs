//! The rules of a binding's memo of decoded values (`memo:` in Ruby,
//! `memo=` in Python), once: what it holds belongs to the generation of
//! the store it was read from, and it never grows past its limit. The
//! values themselves are the language's objects, in a map of its own (a
//! Ruby Hash, a Python dict) that the binding keeps and clears when told.

use std::sync::atomic::{AtomicU64, Ordering};

/// A memo's limit and the generation what it holds was read from.
#[derive(Debug)]
pub struct MemoRules {
    limit: usize,
    generation: AtomicU64,
}

impl MemoRules {
    /// Rules for a memo of at most `limit` values, empty at `generation`
    /// (the handle's, from `Handle::generation_now`).
    pub fn new(limit: usize, generation: u64) -> MemoRules {
        MemoRules {
            limit,
            generation: AtomicU64::new(generation),
        }
    }

    /// The most values kept.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Before a lookup in the memo, with the handle's generation taken
    /// before its store: true if what the memo holds is of another
    /// generation, and the binding must empty its map first.
    #[inline]
    pub fn must_clear(&self, generation: u64) -> bool {
        if self.generation.load(Ordering::Acquire) == generation {
            return false;
        }
        self.generation.store(generation, Ordering::Release);
        true
    }

    /// Before adding a value read at `generation` to a map of `len`
    /// values: whether to add it at all (not if the memo moved on to
    /// another generation meanwhile: a value read from an older store is
    /// never kept), and whether to empty the map first (it is full: the
    /// simplest bound, and a hot set fills it again at once).
    #[inline]
    pub fn admit(&self, generation: u64, len: usize) -> Admit {
        if self.generation.load(Ordering::Acquire) != generation {
            Admit::No
        } else if len >= self.limit {
            Admit::AfterClearing
        } else {
            Admit::Yes
        }
    }

    /// After adding a value read at `generation`: true if a swap happened
    /// meanwhile (the value may be of the old store), and the binding must
    /// empty its map.
    #[inline]
    pub fn moved_on(&self, generation: u64) -> bool {
        self.generation.load(Ordering::Acquire) != generation
    }
}

/// What [`MemoRules::admit`] says of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Add it.
    Yes,
    /// Empty the map, then add it.
    AfterClearing,
    /// Do not add it.
    No,
}

#[cfg(test)]
mod tests {
    use super::{Admit, MemoRules};

    #[test]
    fn a_memo_keeps_one_generation_within_its_limit() {
        let rules = MemoRules::new(2, 0);
        assert!(!rules.must_clear(0));
        assert_eq!(rules.admit(0, 0), Admit::Yes);
        assert_eq!(rules.admit(0, 2), Admit::AfterClearing);
        assert!(!rules.moved_on(0));
        // A swap: what it holds goes, and a value read before it is not kept.
        assert!(rules.must_clear(1));
        assert!(!rules.must_clear(1));
        assert_eq!(rules.admit(0, 0), Admit::No);
        assert!(rules.moved_on(0));
    }
}
