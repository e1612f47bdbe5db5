//! The dictionary section's layout (docs/FORMAT.md, "Compressed values"):
//! the stats before the dictionary, and the longest dictionary a reader
//! accepts.

/// Bytes before the dictionary in the dictionary section: four
/// little-endian fields, informational (`info`): compressed values (u64),
/// their decoded bytes (u64), their stored bytes (u64), the level (i32),
/// and 4 zero bytes.
pub const STATS_LEN: usize = 32;

/// The longest dictionary a reader accepts: what opening a compressed
/// store may read and parse is bounded whatever its header says.
pub const MAX_DICTIONARY_LEN: usize = 1 << 20;

/// What the dictionary section says about the compressed values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Records whose value is compressed.
    pub values: u64,
    /// Their values' decoded bytes.
    pub decoded_bytes: u64,
    /// Their values' stored (compressed) bytes.
    pub stored_bytes: u64,
    /// The zstd level they were compressed at.
    pub level: i32,
}

impl Stats {
    /// The section's first `STATS_LEN` bytes.
    pub fn encode(&self) -> [u8; STATS_LEN] {
        let mut out = [0u8; STATS_LEN];
        out[..8].copy_from_slice(&self.values.to_le_bytes());
        out[8..16].copy_from_slice(&self.decoded_bytes.to_le_bytes());
        out[16..24].copy_from_slice(&self.stored_bytes.to_le_bytes());
        out[24..28].copy_from_slice(&self.level.to_le_bytes());
        out
    }

    /// The stats at the start of a dictionary section of at least
    /// `STATS_LEN` bytes.
    pub fn decode(bytes: &[u8]) -> Stats {
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        Stats {
            values: u64_at(0),
            decoded_bytes: u64_at(8),
            stored_bytes: u64_at(16),
            level: i32::from_le_bytes(bytes[24..28].try_into().expect("4 bytes")),
        }
    }
}

/// What `info` reports of a store built with compression
/// (`Reader::compression_stats`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    /// The dictionary section's stats.
    pub stats: Stats,
    /// The dictionary's length (0: the values were compressed without one).
    pub dictionary_bytes: u64,
}

impl Summary {
    /// How many times smaller the compressed values are than decoded
    /// (1.0 when none is compressed).
    pub fn ratio(&self) -> f64 {
        if self.stats.stored_bytes == 0 {
            return 1.0;
        }
        self.stats.decoded_bytes as f64 / self.stats.stored_bytes as f64
    }
}
