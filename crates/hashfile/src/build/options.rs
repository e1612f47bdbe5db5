//! Build options: their defaults and ranges, defined once here. The Ruby
//! binding exports them (`Hashfile::BUILD_DEFAULTS`), so its wrappers and
//! the CLI's help read them from here.

use crate::bits::BlockLayout;
use crate::chd;
use crate::compress::Compression;
use crate::error::{Error, Result};

/// Build parameters. `Default` gives the documented defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct BuildOptions {
    /// Average keys per bucket (CHD's lambda). Larger values make a smaller
    /// hash function and a slower build. Default 3.5; range 1.0 to 10.0.
    pub keys_per_bucket: f64,
    /// Fill of the table the pilots place keys in, before the slots past `n`
    /// are remapped. Closer to 1 means larger pilots and fewer remap entries.
    /// Default 0.99; range 0.5 to 1.0.
    pub load_factor: f64,
    /// Fraction of keys hashed into the dense buckets. Default 0.5.
    pub dense_key_fraction: f64,
    /// Fraction of buckets that are dense. Default 0.2. Equal fractions give
    /// CHD's plain uniform buckets.
    pub dense_bucket_fraction: f64,
    /// First hash seed tried. If it gives two keys the same 64-bit hash, or
    /// a bucket finds no pilot, the build tries the next seed. Default 0.
    pub hash_seed: u64,
    /// Pilots per bit-packed block: 32, 128 or 256 (`BitPacker1x`, `4x`,
    /// `8x` layouts). Default 128.
    pub seed_block_len: u32,
    /// The index layout: `Classic` (seed blocks; the default) or `Compact`
    /// (a byte per bucket; docs/FORMAT.md, "The compact index"), whose
    /// keys_per_bucket is 4.0 in [`BuildOptions::compact`]. `seed_block_len`
    /// applies to the classic index only: set with the compact one, it is
    /// an error.
    pub index: IndexKind,
    /// What a key added more than once does. Default `OnDuplicate::Error`.
    pub on_duplicate: OnDuplicate,
    /// Most keys per part, on average. A store of more keys is split by
    /// hash into parts built in parallel, each with a table small enough to
    /// stay in the core's cache. Default 131,072 (2^17); at least 1. A store
    /// of up to this many keys has one part and reads without the
    /// partitioned-store feature.
    pub keys_per_part: u64,
    /// How values are stored: raw (the default), or each compressed with
    /// zstd and a dictionary trained from the store's values
    /// (`crate::compress`).
    pub compression: Compression,
    /// How much memory the index data of a build may take (`MemoryLimit`):
    /// a build to a file whose keys' hashes, offsets and placement would
    /// take more builds its index part by part from temporary files beside
    /// the output (`build::spill`), into the same bytes. Default `Auto`.
    pub memory: MemoryLimit,
    /// Whether the store keeps a 16-bit fingerprint of each slot's key
    /// (docs/FORMAT.md, "Fingerprints"), so that a lookup of a key it does
    /// not hold reads no record (65,535 times in 65,536): what a dataset's
    /// overlays are built with. 2 bytes per entry; a build in memory only
    /// (not one past the memory limit, which spills). Default off.
    pub fingerprints: bool,
}

/// The memory a build's index data may take (`BuildOptions::memory`).
/// Records are not counted: a streaming build writes them to its file as
/// they come, an in-memory one holds them anyway.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MemoryLimit {
    /// An eighth of the machine's physical memory, at least
    /// `MIN_MEMORY_LIMIT`: a build of up to about 100 million keys on a
    /// 24 GiB machine stays in memory, a larger one spills.
    #[default]
    Auto,
    /// At most this many bytes (at least `MIN_MEMORY_LIMIT`).
    Bytes(u64),
}

/// The smallest memory limit: below it, the fixed buffers of a spilled
/// build (one per temporary file, the read buffer) are most of it.
pub const MIN_MEMORY_LIMIT: u64 = 16 << 20;

impl MemoryLimit {
    /// Parses `auto`, a number of bytes, or a number with a binary suffix
    /// `K`, `M`, `G` or `T` (`64M` is 64 MiB; `KiB`, `MB`, ... read the
    /// same).
    pub fn parse(given: &str) -> Result<MemoryLimit> {
        let bad = |why: &str| Error::InvalidOption {
            name: "memory",
            reason: format!("{given:?} {why}"),
        };
        let text = given.trim();
        if text.eq_ignore_ascii_case("auto") {
            return Ok(MemoryLimit::Auto);
        }
        let digits = text.bytes().take_while(u8::is_ascii_digit).count();
        let (number, unit) = text.split_at(digits);
        let shift = match unit.trim().to_ascii_uppercase().as_str() {
            "" | "B" => 0,
            "K" | "KB" | "KIB" => 10,
            "M" | "MB" | "MIB" => 20,
            "G" | "GB" | "GIB" => 30,
            "T" | "TB" | "TIB" => 40,
            _ => {
                return Err(bad(
                    "is not a size: give bytes, a number with K, M, G or T (64M), or auto",
                ))
            }
        };
        let bytes = number
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(1 << shift))
            .ok_or_else(|| {
                bad("is not a size: give bytes, a number with K, M, G or T (64M), or auto")
            })?;
        MemoryLimit::bytes(bytes)
    }

    /// A limit of `bytes`, checked against `MIN_MEMORY_LIMIT`.
    pub fn bytes(bytes: u64) -> Result<MemoryLimit> {
        if bytes < MIN_MEMORY_LIMIT {
            return Err(Error::InvalidOption {
                name: "memory",
                reason: format!(
                    "{bytes} bytes is below the least a build can work in, {} MiB",
                    MIN_MEMORY_LIMIT >> 20
                ),
            });
        }
        Ok(MemoryLimit::Bytes(bytes))
    }

    /// The name `parse` takes back: `auto` or the bytes.
    pub fn name(self) -> String {
        match self {
            MemoryLimit::Auto => "auto".into(),
            MemoryLimit::Bytes(b) => b.to_string(),
        }
    }

    /// The limit in bytes on this machine.
    pub fn resolve(self) -> u64 {
        match self {
            MemoryLimit::Bytes(b) => b,
            MemoryLimit::Auto => (physical_memory() / 8).max(MIN_MEMORY_LIMIT),
        }
    }
}

/// The machine's physical memory, from `sysconf` (4 GiB if it will not
/// say).
fn physical_memory() -> u64 {
    // SAFETY: sysconf only reads system configuration; it has no
    // preconditions and returns -1 for a name it does not know.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && page > 0 {
        pages as u64 * page as u64
    } else {
        4 << 30
    }
}

/// What a key added more than once does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDuplicate {
    /// The build fails with `Error::DuplicateKey`.
    #[default]
    Error,
    /// The first occurrence is kept, at its position.
    First,
    /// The last occurrence is kept, at its position (later entries win, as
    /// in a changelog).
    Last,
    /// The values are deep-merged in input order, the way
    /// `I18n::Backend::Simple` merges locale files: maps under the same key
    /// merge recursively, anything else the later value replaces
    /// (`value::deep_merge`), except that a later nil for a repeated key
    /// changes nothing (I18n reads a locale with nothing under it as an
    /// empty Hash). The entry stays at the first occurrence's
    /// position. For locale trees: every `en.yml` of an app and its gems
    /// into one store.
    Merge,
}

impl OnDuplicate {
    /// Every policy with its name, as bindings and the CLI take them.
    pub const NAMES: [(&'static str, OnDuplicate); 4] = [
        ("error", OnDuplicate::Error),
        ("first", OnDuplicate::First),
        ("last", OnDuplicate::Last),
        ("merge", OnDuplicate::Merge),
    ];

    /// The policy named `name` (see `NAMES`).
    pub fn from_name(name: &str) -> Option<OnDuplicate> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| *p)
    }

    /// The policy's name.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, p)| *p == self)
            .map_or("error", |(n, _)| n)
    }
}

/// The index layout a build writes (defined with the format, whose
/// headers name it too).
pub use crate::format::IndexKind;

/// keys_per_bucket of [`BuildOptions::compact`]: 8 bits a bucket over 4
/// keys, 2 bits a key, plus the remap (about 0.17).
pub const COMPACT_KEYS_PER_BUCKET: f64 = 4.0;

/// The default `keys_per_part`.
pub const DEFAULT_KEYS_PER_PART: u64 = 1 << 17;

/// Allowed range of `keys_per_bucket`.
pub const KEYS_PER_BUCKET_RANGE: (f64, f64) = (1.0, 10.0);
/// Allowed range of `load_factor`.
pub const LOAD_FACTOR_RANGE: (f64, f64) = (0.5, 1.0);

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            keys_per_bucket: 3.5,
            load_factor: 0.99,
            dense_key_fraction: 0.5,
            dense_bucket_fraction: 0.2,
            hash_seed: 0,
            seed_block_len: 128,
            on_duplicate: OnDuplicate::Error,
            keys_per_part: DEFAULT_KEYS_PER_PART,
            index: IndexKind::Classic,
            compression: Compression::None,
            memory: MemoryLimit::Auto,
            fingerprints: false,
        }
    }
}

impl BuildOptions {
    /// The defaults of an index layout: a binding that is given `index`
    /// starts from these, then applies the other options given.
    pub fn for_index(index: IndexKind) -> BuildOptions {
        match index {
            IndexKind::Classic => BuildOptions::default(),
            IndexKind::Compact => BuildOptions::compact(),
        }
    }

    /// The defaults with the compact index.
    pub fn compact() -> BuildOptions {
        BuildOptions {
            index: IndexKind::Compact,
            keys_per_bucket: COMPACT_KEYS_PER_BUCKET,
            ..BuildOptions::default()
        }
    }
}

impl BuildOptions {
    /// Checks every option's range.
    pub fn validate(&self) -> Result<()> {
        let range = |name: &'static str, v: f64, (lo, hi): (f64, f64)| {
            if v.is_finite() && (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(Error::InvalidOption {
                    name,
                    reason: format!("{v} is outside {lo}..={hi}"),
                })
            }
        };
        range(
            "keys_per_bucket",
            self.keys_per_bucket,
            KEYS_PER_BUCKET_RANGE,
        )?;
        range("load_factor", self.load_factor, LOAD_FACTOR_RANGE)?;
        range("dense_key_fraction", self.dense_key_fraction, (0.0, 1.0))?;
        range(
            "dense_bucket_fraction",
            self.dense_bucket_fraction,
            (0.0, 1.0),
        )?;
        if (self.dense_bucket_fraction == 0.0) != (self.dense_key_fraction == 0.0)
            || (self.dense_bucket_fraction == 1.0) != (self.dense_key_fraction == 1.0)
        {
            return Err(Error::InvalidOption {
                name: "dense_bucket_fraction",
                reason: "must be 0 or 1 exactly when dense_key_fraction is".into(),
            });
        }
        if self.keys_per_part == 0 {
            return Err(Error::InvalidOption {
                name: "keys_per_part",
                reason: "must be at least 1".into(),
            });
        }
        if self.index == IndexKind::Compact
            && self.seed_block_len != BuildOptions::default().seed_block_len
        {
            return Err(Error::InvalidOption {
                name: "seed_block_len",
                reason: format!(
                    "{} is set, but the compact index has no seed blocks: seed_block_len applies to the classic index",
                    self.seed_block_len
                ),
            });
        }
        if let MemoryLimit::Bytes(bytes) = self.memory {
            MemoryLimit::bytes(bytes)?;
        }
        if BlockLayout::from_block_len(self.seed_block_len).is_none() {
            return Err(Error::InvalidOption {
                name: "seed_block_len",
                reason: format!("{} is not 32, 128 or 256", self.seed_block_len),
            });
        }
        Ok(())
    }

    /// The options the perfect hash depends on.
    pub(crate) fn chd_params(&self) -> chd::Params {
        chd::Params {
            keys_per_bucket: self.keys_per_bucket,
            load_factor: self.load_factor,
            dense_key_fraction: self.dense_key_fraction,
            dense_bucket_fraction: self.dense_bucket_fraction,
            hash_seed: self.hash_seed,
            keys_per_part: self.keys_per_part,
        }
    }
}
