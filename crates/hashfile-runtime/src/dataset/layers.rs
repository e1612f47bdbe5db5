//! One shard of a dataset as a reader sees it: its base store and, in a
//! delta generation, its overlays (docs/FORMAT.md, "Delta generations").
//! A key's answer is in the newest overlay that holds it (a tombstone
//! there: absent), else in the base. Overlays carry key fingerprints, so a
//! key an overlay does not hold costs that overlay no record read.

use std::sync::Arc;

use hashfile::format::{ValueKind, REQUIRED_TOMBSTONES};
use hashfile::read::Source;
use hashfile::RecordBuf;

use crate::source::Store;

/// A shard's stores: the base, and its overlays oldest first. Each is
/// shared: a newer generation of the dataset that lists the same file
/// reads it through the same store, with what its cache holds
/// (`Dataset::newer`).
#[derive(Debug)]
pub struct Shard {
    base: Arc<Store>,
    overlays: Vec<Arc<Store>>,
    /// Entries a reader finds: the base's, or the manifest's live count.
    live: u64,
}

/// Overlays of at most this many bytes (and [`PIN_OVERLAY_SHARE`] of the
/// cache) are read whole into a remote source's cache when the shard is
/// first used: a key they do not hold is then decided without a request,
/// and one they hold without another.
pub const PIN_OVERLAY_UP_TO: u64 = 4 << 20;

/// An overlay read whole takes at most this share of its cache's
/// capacity (a sixteenth: 2 MiB of the default 32 MiB).
pub const PIN_OVERLAY_SHARE: u64 = 16;

impl Shard {
    /// A shard of one store.
    pub fn of_base(base: Arc<Store>) -> hashfile::Result<Shard> {
        if base.header().required_flags & REQUIRED_TOMBSTONES != 0 {
            return Err(hashfile::Error::corrupt(
                "header",
                "a shard's base holds tombstones, which only an overlay may",
            ));
        }
        let live = base.len();
        Ok(Shard {
            base,
            overlays: Vec::new(),
            live,
        })
    }

    /// The shard with `overlay` read over what it has, and `live` entries.
    pub fn with_overlay(mut self, overlay: Arc<Store>, live: u64) -> hashfile::Result<Shard> {
        if !overlay.has_fingerprints() {
            return Err(hashfile::Error::corrupt(
                "header",
                "an overlay has key fingerprints, and this store has none",
            ));
        }
        if overlay.source().is_remote() {
            // A small overlay whole, so that a key it does not hold costs
            // no request. Small by the size the manifest and the server
            // agreed on, and by the cache: a manifest that lists many
            // large overlays makes a first lookup fetch no more than a
            // share of what the caller let the cache hold; a larger
            // overlay is read a block at a time, as a store is.
            let size = overlay.source().size();
            let budget = overlay
                .source()
                .capacity_hint()
                .map_or(PIN_OVERLAY_UP_TO, |cache| {
                    (cache as u64 / PIN_OVERLAY_SHARE).min(PIN_OVERLAY_UP_TO)
                });
            if size <= budget {
                let whole = std::ops::Range {
                    start: 0,
                    end: size,
                };
                overlay
                    .source()
                    .pin(std::slice::from_ref(&whole))
                    .map_err(|source| hashfile::Error::Io { path: None, source })?;
            }
        }
        self.overlays.push(overlay);
        self.live = live;
        Ok(self)
    }

    /// Sets `max_value_size` on every store (one this shard alone holds:
    /// a store shared with another generation keeps the limit it was
    /// opened with, the same dataset's).
    pub fn set_max_value_size(&mut self, bytes: u64) -> hashfile::Result<()> {
        for store in std::iter::once(&mut self.base).chain(&mut self.overlays) {
            match Arc::get_mut(store) {
                Some(store) => store.set_max_value_size(bytes)?,
                None => hashfile::read::check_max_value_size(bytes).map(|_| ())?,
            }
        }
        Ok(())
    }

    /// The base store, shared.
    pub fn shared_base(&self) -> &Arc<Store> {
        &self.base
    }

    /// The overlays, shared, oldest first.
    pub fn shared_overlays(&self) -> &[Arc<Store>] {
        &self.overlays
    }

    /// The base store, the shard let go (what a shard without overlays
    /// is), or `None` if another generation shares it.
    pub fn into_base(self) -> Option<Store> {
        Arc::into_inner(self.base)
    }

    /// The base store.
    pub fn base(&self) -> &Store {
        &self.base
    }

    /// The overlays, oldest first.
    pub fn overlays(&self) -> impl ExactSizeIterator<Item = &Store> + DoubleEndedIterator {
        self.overlays.iter().map(|o| &**o)
    }

    /// Every store: the base, then the overlays oldest first.
    pub fn stores(&self) -> impl Iterator<Item = &Store> {
        std::iter::once(&*self.base).chain(self.overlays.iter().map(|o| &**o))
    }

    /// Entries a reader finds in the shard.
    pub fn len(&self) -> u64 {
        self.live
    }

    /// True if it has none.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The record of `key`: from the newest overlay that holds it (absent
    /// if that is a tombstone), else from the base.
    #[inline]
    pub fn get(&self, key: &[u8]) -> hashfile::Result<Option<RecordBuf<'_>>> {
        if self.overlays.is_empty() {
            return base_record(self.base.get(key)?);
        }
        self.get_layered(key)
    }

    fn get_layered(&self, key: &[u8]) -> hashfile::Result<Option<RecordBuf<'_>>> {
        for overlay in self.overlays.iter().rev() {
            if let Some(found) = overlay.get(key)? {
                return Ok(live(found));
            }
        }
        base_record(self.base.get(key)?)
    }

    /// The records of `keys`, in order: each overlay, newest first, asked
    /// in one batch for the keys no newer one held, then the base.
    pub fn get_many<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
    ) -> hashfile::Result<Vec<Option<RecordBuf<'_>>>> {
        if self.overlays.is_empty() {
            let found = self.base.get_many(keys)?;
            return found.into_iter().map(base_record).collect();
        }
        let mut found: Vec<Option<RecordBuf<'_>>> = (0..keys.len()).map(|_| None).collect();
        let mut open: Vec<usize> = (0..keys.len()).collect();
        for store in self.overlays.iter().rev() {
            if open.is_empty() {
                break;
            }
            let asked: Vec<&[u8]> = open.iter().map(|&at| keys[at].as_ref()).collect();
            let records = store.get_many(&asked)?;
            let mut still = Vec::with_capacity(open.len());
            for (&at, record) in open.iter().zip(records) {
                match record {
                    Some(record) => found[at] = live(record),
                    None => still.push(at),
                }
            }
            open = still;
        }
        if !open.is_empty() {
            let asked: Vec<&[u8]> = open.iter().map(|&at| keys[at].as_ref()).collect();
            for (&at, record) in open.iter().zip(self.base.get_many(&asked)?) {
                found[at] = base_record(record)?;
            }
        }
        Ok(found)
    }

    /// `Reader::dig_with` on the store that answers for `key`.
    pub fn dig_with<R>(
        &self,
        key: &[u8],
        path: &[hashfile::value::Probe<'_>],
        symbolize_names: bool,
        answer: impl FnOnce(&hashfile::Record<'_>, Option<hashfile::value::Dig<'_>>) -> R,
    ) -> hashfile::Result<Option<R>> {
        for overlay in self.overlays.iter().rev() {
            match overlay.get(key)? {
                None => continue,
                Some(found) if found.kind() == ValueKind::Tombstone => return Ok(None),
                Some(_) => return overlay.dig_with(key, path, symbolize_names, answer),
            }
        }
        self.base.dig_with(key, path, symbolize_names, answer)
    }

    /// The next live record of an iteration of the shard from `offset`
    /// and `index`, with the offset and index after it. The shard's records
    /// are its stores' one after another, the base first: `offset` runs on
    /// from one store's records into the next's, as `index` does through
    /// their entry counts. A record a newer overlay holds again, and a
    /// tombstone, are passed over, so each live key comes once: the base's
    /// in its order, then each overlay's keys that no newer one changed.
    pub fn next_record(
        &self,
        offset: u64,
        index: u64,
    ) -> hashfile::Result<Option<(RecordBuf<'_>, u64, u64)>> {
        if self.overlays.is_empty() {
            return Ok(self
                .base
                .next_record(offset, index)?
                .map(|(record, next)| (record, next, index + 1)));
        }
        let (mut offset, mut index) = (offset, index);
        let (mut layer_offset, mut layer_index) = (0u64, 0u64);
        for (layer, store) in self.stores().enumerate() {
            let records_len = store
                .header()
                .section(hashfile::format::SectionId::Records)
                .length;
            let (end_offset, end_index) = (layer_offset + records_len, layer_index + store.len());
            if offset >= end_offset && index >= end_index {
                layer_offset = end_offset;
                layer_index = end_index;
                continue;
            }
            if offset < layer_offset || index < layer_index {
                return Err(cursor_error(offset, index));
            }
            let newer = &self.overlays[layer..];
            while let Some((record, next)) =
                store.next_record(offset - layer_offset, index - layer_index)?
            {
                offset = layer_offset + next;
                index += 1;
                if record.kind() == ValueKind::Tombstone {
                    if layer == 0 {
                        return Err(tombstone_in_base());
                    }
                    continue;
                }
                if !held_by_any(newer, record.key())? {
                    return Ok(Some((record, offset, index)));
                }
            }
            if (offset, index) != (end_offset, end_index) {
                return Err(cursor_error(offset, index));
            }
            layer_offset = end_offset;
            layer_index = end_index;
        }
        Ok(None)
    }

    /// Every live record, in the order `next_record` gives them.
    pub fn iter(&self) -> impl Iterator<Item = hashfile::Result<RecordBuf<'_>>> + '_ {
        let mut at = Some((0u64, 0u64));
        std::iter::from_fn(move || {
            let (offset, index) = at?;
            match self.next_record(offset, index) {
                Ok(Some((record, next, next_index))) => {
                    at = Some((next, next_index));
                    Some(Ok(record))
                }
                Ok(None) => {
                    at = None;
                    None
                }
                Err(e) => {
                    at = None;
                    Some(Err(e))
                }
            }
        })
    }

    /// Checks every byte of every store, and that the live records the
    /// shard yields are as many as the manifest says.
    pub fn verify(&self) -> hashfile::Result<()> {
        for store in self.stores() {
            store.verify()?;
        }
        if !self.overlays.is_empty() {
            let mut count = 0u64;
            for record in self.iter() {
                record?;
                count += 1;
            }
            if count != self.live {
                return Err(hashfile::Error::corrupt(
                    "records",
                    format!(
                        "the shard's base and overlays hold {count} live entries, and the manifest says {}",
                        self.live
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Whether any of `overlays` holds `key` (an upsert or a tombstone).
fn held_by_any(overlays: &[Arc<Store>], key: &[u8]) -> hashfile::Result<bool> {
    for overlay in overlays {
        if overlay.get(key)?.is_some() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// An overlay's record as a reader answers it: a tombstone is absent.
#[inline]
fn live(record: RecordBuf<'_>) -> Option<RecordBuf<'_>> {
    (record.kind() != ValueKind::Tombstone).then_some(record)
}

/// A base's record, which is never a tombstone (a damaged kind byte):
/// what a store that is not an overlay answers.
#[inline]
pub(crate) fn base_record(
    record: Option<RecordBuf<'_>>,
) -> hashfile::Result<Option<RecordBuf<'_>>> {
    match record {
        Some(found) if found.kind() == ValueKind::Tombstone => Err(tombstone_in_base()),
        other => Ok(other),
    }
}

#[cold]
fn tombstone_in_base() -> hashfile::Error {
    hashfile::Error::corrupt(
        "records",
        "a tombstone in a store without tombstones (damage); run verify for details",
    )
}

#[cold]
fn cursor_error(offset: u64, index: u64) -> hashfile::Error {
    hashfile::Error::InvalidArgument {
        message: format!(
            "cursor at byte {offset}, entry {index} is not where a record of the shard starts"
        ),
    }
}
