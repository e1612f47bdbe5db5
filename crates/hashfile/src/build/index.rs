//! The index of a build: the perfect hash over the records' keys, packed
//! into the seed index, seeds, remap and slots sections, and the header
//! that places every section.

use super::options::{BuildOptions, IndexKind};
use super::records::{key_at, Offsets};
use crate::bits::{self, BlockLayout};
use crate::cancel::CancelFlag;
use crate::chd;
use crate::error::{Error, Result};
use crate::format::{self, BuildParameters, Geometry, Header, PartEntry, Section, SectionId};

/// A built index, ready to be written after the records.
pub(super) struct Prepared {
    pub(super) header: Header,
    /// The index sections, in file order: they follow the records.
    pub(super) index: Vec<(SectionId, Vec<u8>)>,
}

/// The records section as the build has it.
pub(super) struct RecordsSection<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) offsets: &'a Offsets,
    pub(super) checksum: u64,
    /// Each key's hash with the first seed, if computed as keys came.
    pub(super) hashes: Option<&'a [u64]>,
    /// Whether any record holds a typed value.
    pub(super) typed: bool,
    /// The dictionary section, in a build with compression.
    pub(super) dictionary: Option<&'a [u8]>,
    /// The required-feature bits the compressed records need (none, or
    /// compressed values, with or without compressed items).
    pub(super) record_flags: u64,
}

/// Builds the perfect hash over the records' keys and lays out the file.
pub(super) fn prepare(
    records: &RecordsSection<'_>,
    options: &BuildOptions,
    cancel: &CancelFlag,
) -> Result<Prepared> {
    let n = records.offsets.len();
    let (bytes, offsets) = (records.bytes, records.offsets);
    let key = |id: usize| key_at(bytes, offsets.of_id(id as u32) as usize);
    // Where offsets fit 32 bits, keys go by their offsets, and the build
    // hands back each slot's offset.
    let (seed, geometry, mut index, slots) = match options.index {
        IndexKind::Classic => {
            let built = chd::classic::build(
                n,
                key,
                offsets.ids(),
                records.hashes,
                &options.chd_params(),
                cancel,
            )?;
            cancel.check()?;
            let (seed_index, seeds) = seed_blocks(&built.pilots, options.seed_block_len)?;
            let remap = bits::pack(&built.remap, bits::bits_for((n as u64).saturating_sub(1)));
            let index = vec![
                (SectionId::SeedIndex, seed_index),
                (SectionId::Seeds, seeds),
                (SectionId::Remap, remap),
            ];
            (built.seed, built.geometry, index, built.slots)
        }
        IndexKind::Compact => {
            let (hash, slots) = chd::compact::build(
                n,
                key,
                offsets.ids(),
                records.hashes,
                &options.chd_params(),
                cancel,
            )?;
            cancel.check()?;
            (
                hash.seed(),
                *hash.geometry(),
                compact_sections(&hash),
                slots,
            )
        }
    };

    let records_len = bytes.len() as u64;
    let offset_bits = bits::bits_for(records_len.saturating_sub(1));
    if offset_bits > bits::MAX_PACKED_BITS {
        return Err(Error::Limit {
            what: "bytes of records",
            max: 1 << bits::MAX_PACKED_BITS,
        });
    }
    let packed_slots = bits::pack_at_parallel(
        n as u64,
        offset_bits,
        &slots,
        |e| e.hash,
        |e| offsets.of_id(e.index),
    );
    let fingerprints = options.fingerprints.then(|| {
        let mut out = vec![0u8; n * 2];
        for e in &slots {
            let print = chd::fingerprint(chd::hash_key(key(e.index as usize), seed));
            let at = e.hash as usize * 2;
            out[at..at + 2].copy_from_slice(&print.to_le_bytes());
        }
        out
    });
    drop(slots);
    index.push((SectionId::Slots, packed_slots));
    if let Some(fingerprints) = fingerprints {
        index.push((SectionId::Fingerprints, fingerprints));
    }
    // The dictionary goes right after the records, before the index.
    if let Some(dictionary) = records.dictionary {
        index.insert(0, (SectionId::Dictionary, dictionary.to_vec()));
    }

    let sections: Vec<(SectionId, u64, u64)> = index
        .iter()
        .map(|(id, bytes)| (*id, bytes.len() as u64, xxhash_rust::xxh3::xxh3_64(bytes)))
        .collect();
    let header = lay_out(
        &Shape {
            records_len,
            records_checksum: records.checksum,
            typed: records.typed,
            record_flags: records.record_flags,
            with_dictionary: records.dictionary.is_some(),
            seed,
            geometry,
        },
        &sections,
        options,
    );
    Ok(Prepared { header, index })
}

/// What a header says of a build besides where its index sections lie.
pub(super) struct Shape {
    pub(super) records_len: u64,
    pub(super) records_checksum: u64,
    /// Whether any record holds a typed value.
    pub(super) typed: bool,
    /// The required-feature bits the compressed records need.
    pub(super) record_flags: u64,
    /// Whether the store has a dictionary section (a build with
    /// compression), which makes the header one section longer.
    pub(super) with_dictionary: bool,
    pub(super) seed: u64,
    pub(super) geometry: Geometry,
}

/// The header of a build: the records right after it, then the index
/// sections given (id, length, checksum) in file order, each at a
/// multiple of 8. The one place a build lays out its file, in memory or
/// spilled (`super::spill`).
pub(super) fn lay_out(
    shape: &Shape,
    index: &[(SectionId, u64, u64)],
    options: &BuildOptions,
) -> Header {
    let header_len = Header::encoded_len(shape.with_dictionary, options.fingerprints);
    let mut sections = [Section::default(); 9];
    let mut at = (header_len as u64).next_multiple_of(8);
    sections[SectionId::Records.index()] = Section {
        offset: at,
        length: shape.records_len,
        checksum: shape.records_checksum,
    };
    at += shape.records_len;
    for &(id, length, checksum) in index {
        at = at.next_multiple_of(8);
        sections[id.index()] = Section {
            offset: at,
            length,
            checksum,
        };
        at += length;
    }
    let o = options;
    Header {
        major: format::VERSION_MAJOR,
        // 1.1 added fingerprints, which a 1.0 reader skips.
        minor: if o.fingerprints {
            format::VERSION_MINOR_FINGERPRINTS
        } else {
            format::VERSION_MINOR
        },
        header_len: header_len as u32,
        required_flags: if shape.typed {
            format::REQUIRED_TYPED_VALUES
        } else {
            0
        } | if shape.geometry.part_count > 1 {
            format::REQUIRED_PARTS
        } else {
            0
        } | match o.index {
            IndexKind::Classic => 0,
            IndexKind::Compact => format::REQUIRED_COMPACT_INDEX,
        } | shape.record_flags,
        file_len: at,
        hash_seed: shape.seed,
        geometry: shape.geometry,
        seed_block_len: match o.index {
            IndexKind::Classic => o.seed_block_len,
            IndexKind::Compact => 0,
        },
        parameters: BuildParameters {
            keys_per_bucket: o.keys_per_bucket,
            load_factor: o.load_factor,
            dense_key_fraction: o.dense_key_fraction,
            dense_bucket_fraction: o.dense_bucket_fraction,
        },
        sections,
    }
}

/// The classic index's pilots as seed blocks: the seed index (cumulative
/// widths) and the blocks, each packed at its widest pilot's width.
pub(super) fn seed_blocks(pilots: &[u32], seed_block_len: u32) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut blocks = SeedBlocks::new(seed_block_len);
    blocks.extend(pilots)?;
    blocks.finish()
}

/// The seed index and seed blocks, made as pilots come in bucket order:
/// a spilled build has one group of parts' pilots at a time.
pub(super) struct SeedBlocks {
    layout: BlockLayout,
    /// Pilots not yet in a block.
    pending: Vec<u32>,
    seed_index: Vec<u8>,
    seeds: Vec<u8>,
    /// The seed index's running sum of block widths.
    units: u32,
}

impl SeedBlocks {
    pub(super) fn new(seed_block_len: u32) -> SeedBlocks {
        let layout = BlockLayout::from_block_len(seed_block_len).expect("validated");
        SeedBlocks {
            layout,
            pending: Vec::with_capacity(layout.block_len()),
            seed_index: 0u32.to_le_bytes().to_vec(),
            seeds: Vec::new(),
            units: 0,
        }
    }

    /// Adds the next pilots, in bucket order.
    pub(super) fn extend(&mut self, mut pilots: &[u32]) -> Result<()> {
        let len = self.layout.block_len();
        while !pilots.is_empty() {
            let take = (len - self.pending.len()).min(pilots.len());
            self.pending.extend_from_slice(&pilots[..take]);
            pilots = &pilots[take..];
            if self.pending.len() == len {
                self.block()?;
            }
        }
        Ok(())
    }

    /// Packs the pending pilots as a block, zeros after them.
    fn block(&mut self) -> Result<()> {
        self.pending.resize(self.layout.block_len(), 0);
        let (width, packed) = self.layout.compress(&self.pending);
        self.pending.clear();
        self.seeds.extend_from_slice(&packed);
        self.units = self.units.checked_add(width as u32).ok_or(Error::Limit {
            what: "bit widths of the seed blocks",
            max: u32::MAX as u64,
        })?;
        self.seed_index.extend_from_slice(&self.units.to_le_bytes());
        Ok(())
    }

    /// The seed index and the seeds sections.
    pub(super) fn finish(mut self) -> Result<(Vec<u8>, Vec<u8>)> {
        if !self.pending.is_empty() {
            self.block()?;
        }
        Ok((self.seed_index, self.seeds))
    }
}

/// The compact index's sections before the slots: the pilots (a byte per
/// bucket), the parts table, and each part's remap packed at its own width
/// one after another (docs/FORMAT.md, "The compact index").
pub(super) fn compact_sections(hash: &chd::compact::CompactHash) -> Vec<(SectionId, Vec<u8>)> {
    let mut parts = Vec::with_capacity(hash.parts().len() * format::PART_ENTRY_LEN);
    let mut remap_bit = 0u64;
    let mut entries = Vec::new();
    for part in hash.parts() {
        let entry = PartEntry {
            first_key: part.first_key,
            remap_bit,
            keys: part.keys,
            slots: part.slots,
        };
        parts.extend_from_slice(&entry.encode());
        let width = entry.remap_bits();
        let remap = hash.part_remap(part);
        for (i, &value) in remap.iter().enumerate() {
            entries.push((remap_bit + i as u64 * width as u64, width, value as u64));
        }
        remap_bit += remap.len() as u64 * width as u64;
    }
    let mut remap = vec![0u8; remap_bit.div_ceil(8) as usize + bits::PACKED_PADDING];
    for (bit, width, value) in entries {
        bits::or_bits(&mut remap, bit as usize, value, width);
    }
    vec![
        (SectionId::Pilots, hash.pilots().to_vec()),
        (SectionId::Parts, parts),
        (SectionId::Remap, remap),
    ]
}
