//! Stores that lie about their lengths, for the tests of what a reader
//! allocates: shared by the core's tests (a sparse file) and the remote
//! crate's (a server claiming a huge object), which include this file by
//! path.
#![allow(dead_code)]

use hashfile::format::{Header, SectionId};
use hashfile::{BuildOptions, Builder};

/// The key of the one record of [`huge_record_prefix`].
pub const KEY: &[u8] = b"k";

/// The first bytes of a store of `file_len` bytes (the rest zeros) whose
/// one record, of key [`KEY`], claims a value of `value_len` bytes: a
/// valid header (its checksum fixed up; section checksums are for
/// `verify`), the index of a one-key store, and the records section last,
/// reaching to `file_len`, starting with the record's header and key.
/// Written to the start of a sparse file of `file_len` bytes, or served
/// by a server claiming that length, it opens, and a lookup of [`KEY`]
/// finds a record as long as it claims.
pub fn huge_record_prefix(file_len: u64, value_len: u64) -> Vec<u8> {
    let mut builder = Builder::new(BuildOptions::default()).unwrap();
    builder.insert(KEY, b"v");
    let bytes = builder.to_bytes().unwrap();
    let mut header = Header::decode(&bytes, bytes.len() as u64).unwrap();
    // The sections again, in file order, the records last: the slots grow
    // to the width a record offset into the huge records section takes
    // (the one offset is 0, so zeros hold it).
    let mut order: Vec<SectionId> = header.present_sections().to_vec();
    order.sort_by_key(|&id| (id == SectionId::Records, header.section(id).offset));
    let mut out = bytes[..header.header_len as usize].to_vec();
    let records_at = |at: usize| at.div_ceil(8) * 8;
    for &id in &order {
        let mut section = header.section(id);
        out.resize(records_at(out.len()), 0);
        let at = out.len() as u64;
        let content: Vec<u8> = match id {
            SectionId::Slots => {
                let mut probe = header.clone();
                probe.sections[SectionId::Records.index()].length = file_len - at;
                vec![0; hashfile::bits::packed_len(1, probe.offset_bits()).unwrap() as usize]
            }
            SectionId::Records => {
                let mut record = vec![hashfile::format::record::KEY_UTF8 | 1];
                hashfile::format::varint::write_varint(&mut record, KEY.len() as u64);
                hashfile::format::varint::write_varint(&mut record, value_len);
                record.extend_from_slice(KEY);
                record
            }
            _ => bytes[section.offset as usize..section.end() as usize].to_vec(),
        };
        section.offset = at;
        section.length = match id {
            SectionId::Records => file_len - at,
            _ => content.len() as u64,
        };
        header.sections[id.index()] = section;
        out.extend_from_slice(&content);
    }
    header.file_len = file_len;
    let encoded = header.encode();
    out[..encoded.len()].copy_from_slice(&encoded);
    out
}
