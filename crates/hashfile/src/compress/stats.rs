//! The dictionary section's layout (docs/FORMAT.md, "Compressed values"):
//! the stats before the dictionary, and the longest dictionary a reader
//! accepts.

/// Bytes before the dictionary in the dictionary section, informational
/// (`info`), little-endian: compressed values (u64), their decoded bytes
/// (u64), their stored bytes (u64), the level (i32; 0 where `auto` chose
/// to compress nothing), the level of values of `LONG_VALUE_LEN` bytes or
/// more (u8; 0 in stores written before it was recorded: the same level),
/// 1 if `auto` chose the compression (u8; else 0), and 2 zero bytes.
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
    /// The zstd level values shorter than `LONG_VALUE_LEN` were
    /// compressed at (0: `auto` chose to compress nothing).
    pub level: i32,
    /// The level of longer ones.
    pub long_level: i32,
    /// Whether `auto` chose the compression.
    pub auto: bool,
    /// Whether the bytes after the level hold what no writer writes (a
    /// choice byte over 1, or the last two bytes not zero): `verify`
    /// reports it.
    pub unknown: bool,
}

impl Stats {
    /// The section's first `STATS_LEN` bytes.
    pub fn encode(&self) -> [u8; STATS_LEN] {
        let mut out = [0u8; STATS_LEN];
        out[..8].copy_from_slice(&self.values.to_le_bytes());
        out[8..16].copy_from_slice(&self.decoded_bytes.to_le_bytes());
        out[16..24].copy_from_slice(&self.stored_bytes.to_le_bytes());
        out[24..28].copy_from_slice(&self.level.to_le_bytes());
        // 0 where both levels are one: such a store's bytes are what
        // they were before the long level was recorded.
        if self.long_level != self.level {
            out[28] = self.long_level.clamp(0, u8::MAX as i32) as u8;
        }
        out[29] = u8::from(self.auto);
        out
    }

    /// The stats at the start of a dictionary section of at least
    /// `STATS_LEN` bytes.
    pub fn decode(bytes: &[u8]) -> Stats {
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let level = i32::from_le_bytes(bytes[24..28].try_into().expect("4 bytes"));
        Stats {
            values: u64_at(0),
            decoded_bytes: u64_at(8),
            stored_bytes: u64_at(16),
            level,
            long_level: match bytes[28] {
                0 => level,
                long => i32::from(long),
            },
            auto: bytes[29] == 1,
            unknown: bytes[29] > 1 || bytes[30..32] != [0, 0],
        }
    }

    /// What is wrong with these stats, as `verify` reports it: a level
    /// out of zstd's range, level 0 (nothing compressed) with compressed
    /// values or not chosen by `auto`, or bytes no writer writes.
    pub fn check(&self) -> std::result::Result<(), String> {
        let (lo, hi) = super::LEVEL_RANGE;
        let level_ok = |level: i32| (lo..=hi).contains(&level);
        if self.unknown {
            return Err("stats hold bytes no writer writes after the level".into());
        }
        if self.level == 0 {
            if self.values != 0 || !self.auto || self.long_level != 0 {
                return Err(format!(
                    "stats say level 0 (auto chose no compression) with {} compressed values",
                    self.values
                ));
            }
            return Ok(());
        }
        if self.values > 0 && (self.stored_bytes == 0 || self.decoded_bytes == 0) {
            return Err(format!(
                "stats say {} compressed values of {} bytes in {}",
                self.values, self.decoded_bytes, self.stored_bytes
            ));
        }
        if !level_ok(self.level) || !level_ok(self.long_level) {
            return Err(format!(
                "stats say levels {} and {}, outside {lo}..={hi}",
                self.level, self.long_level
            ));
        }
        Ok(())
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
