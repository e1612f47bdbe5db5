//! `Info`: a store's sizes and parameters, from its header.

use super::{Reader, Source};
use crate::format::{IndexKind, SectionId};

impl<S: Source> Reader<S> {
    /// Sizes and parameters, for `hashfile info`.
    pub fn info(&self) -> Info {
        let h = &self.header;
        let sizes: Vec<(&'static str, u64)> = h
            .present_sections()
            .iter()
            .map(|&id| (id.name(), h.section(id).length))
            .collect();
        // The function: everything a lookup reads but the slots and records.
        let (function, seeds): (&[SectionId], &[SectionId]) = if self.compact {
            (
                &[SectionId::Pilots, SectionId::Parts, SectionId::Remap],
                &[SectionId::Pilots],
            )
        } else {
            (
                &[SectionId::SeedIndex, SectionId::Seeds, SectionId::Remap],
                &[SectionId::SeedIndex, SectionId::Seeds],
            )
        };
        let bytes_of = |ids: &[SectionId]| ids.iter().map(|&id| h.section(id).length).sum::<u64>();
        let mphf_bytes = bytes_of(function);
        let per_key = |bytes: u64| {
            if h.geometry.entry_count == 0 {
                0.0
            } else {
                bytes as f64 * 8.0 / h.geometry.entry_count as f64
            }
        };
        Info {
            entries: h.geometry.entry_count,
            index: h.index_kind(),
            file_bytes: h.file_len,
            section_bytes: sizes,
            mphf_bits_per_key: per_key(mphf_bytes),
            seed_bits_per_key: per_key(bytes_of(seeds)),
        }
    }
}

/// Sizes of a store, from its header.
#[derive(Clone, Debug, PartialEq)]
pub struct Info {
    /// Number of entries.
    pub entries: u64,
    /// The index layout.
    pub index: IndexKind,
    /// Length of the file.
    pub file_bytes: u64,
    /// Length of each section, in section-table order.
    pub section_bytes: Vec<(&'static str, u64)>,
    /// The perfect-hash function in bits per key: seed index, seeds and
    /// remap, or with the compact index pilots, parts and remap.
    pub mphf_bits_per_key: f64,
    /// The displacement seeds and their block index alone (the compact
    /// index's pilots), in bits per key.
    pub seed_bits_per_key: f64,
}
