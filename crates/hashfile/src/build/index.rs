//! The index of a build: the perfect hash over the records' keys, packed
//! into the seed index, seeds, remap and slots sections, and the header
//! that places every section.

use super::options::BuildOptions;
use super::records::{key_at, Offsets};
use crate::bits::{self, BlockLayout};
use crate::cancel::CancelFlag;
use crate::chd;
use crate::error::{Error, Result};
use crate::format::{self, BuildParameters, Header, Section, SectionId};

/// Index of the records section in `SectionId::ALL` (and in a header's
/// section table).
pub(super) const RECORDS: usize = 4;
/// The order sections are laid out in the file, as indices into
/// `SectionId::ALL`: the records first, right after the header, so that a
/// streaming build writes them as they come; then seed_index, seeds, remap
/// and slots, whose sizes are known only once every key is in.
pub(super) const FILE_ORDER: [usize; 5] = [RECORDS, 0, 1, 2, 3];

/// A built index, ready to be written after the records.
pub(super) struct Prepared {
    pub(super) header: Header,
    /// Seed index, seeds, remap and slots, in `SectionId::ALL` order.
    pub(super) index: [Vec<u8>; 4],
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
}

/// Builds the perfect hash over the records' keys and lays out the file.
pub(super) fn prepare(
    records: &RecordsSection<'_>,
    options: &BuildOptions,
    cancel: &CancelFlag,
) -> Result<Prepared> {
    let n = records.offsets.len();
    let (bytes, offsets) = (records.bytes, records.offsets);
    // Where offsets fit 32 bits, keys go by their offsets, and the build
    // hands back each slot's offset.
    let built = chd::build::build(
        n,
        |id| key_at(bytes, offsets.of_id(id as u32) as usize),
        offsets.ids(),
        records.hashes,
        &options.chd_params(),
        cancel,
    )?;
    cancel.check()?;
    let layout = BlockLayout::from_block_len(options.seed_block_len).expect("validated");

    let mut seed_index = Vec::new();
    let mut seeds = Vec::new();
    let mut units = 0u32;
    seed_index.extend_from_slice(&units.to_le_bytes());
    let mut block = vec![0u32; layout.block_len()];
    for chunk in built.pilots.chunks(layout.block_len()) {
        block.fill(0);
        block[..chunk.len()].copy_from_slice(chunk);
        let (width, packed) = layout.compress(&block);
        seeds.extend_from_slice(&packed);
        units = units.checked_add(width as u32).ok_or(Error::Limit {
            what: "bit widths of the seed blocks",
            max: u32::MAX as u64,
        })?;
        seed_index.extend_from_slice(&units.to_le_bytes());
    }

    let records_len = bytes.len() as u64;
    let offset_bits = bits::bits_for(records_len.saturating_sub(1));
    if offset_bits > bits::MAX_PACKED_BITS {
        return Err(Error::Limit {
            what: "bytes of records",
            max: 1 << bits::MAX_PACKED_BITS,
        });
    }
    let remap = bits::pack(&built.remap, bits::bits_for((n as u64).saturating_sub(1)));
    let slots = bits::pack_at_parallel(
        n as u64,
        offset_bits,
        &built.slots,
        |e| e.hash,
        |e| offsets.of_id(e.index),
    );
    drop(built.slots);

    let index = [seed_index, seeds, remap, slots];
    // File order: header, records, then the index (FILE_ORDER).
    let header_len = Header::encoded_len();
    let mut sections = [Section::default(); 5];
    let mut at = header_len as u64;
    for i in FILE_ORDER {
        let (length, checksum) = if i == RECORDS {
            (records_len, records.checksum)
        } else {
            (index[i].len() as u64, xxhash_rust::xxh3::xxh3_64(&index[i]))
        };
        at = at.next_multiple_of(8);
        sections[i] = Section {
            offset: at,
            length,
            checksum,
        };
        at += length;
    }
    debug_assert_eq!(SectionId::ALL[RECORDS], SectionId::Records);
    let o = options;
    let header = Header {
        major: format::VERSION_MAJOR,
        minor: format::VERSION_MINOR,
        header_len: header_len as u32,
        required_flags: if records.typed {
            format::REQUIRED_TYPED_VALUES
        } else {
            0
        } | if built.geometry.part_count > 1 {
            format::REQUIRED_PARTS
        } else {
            0
        },
        file_len: at,
        hash_seed: built.seed,
        geometry: built.geometry,
        seed_block_len: o.seed_block_len,
        parameters: BuildParameters {
            keys_per_bucket: o.keys_per_bucket,
            load_factor: o.load_factor,
            dense_key_fraction: o.dense_key_fraction,
            dense_bucket_fraction: o.dense_bucket_fraction,
        },
        sections,
    };
    Ok(Prepared { header, index })
}
