//! `Compression`: what a build applies to values, and the names the CLI
//! and the bindings give it (`none`, `zstd`, `zstd:LEVEL`,
//! `zstd:LEVEL,LONG_LEVEL`, `auto`).

use crate::error::{Error, Result};

/// The level a build uses for values shorter than [`LONG_VALUE_LEN`] when
/// none is given: zstd's own default.
pub const DEFAULT_LEVEL: i32 = 3;

/// The level a build uses for values of [`LONG_VALUE_LEN`] bytes or more
/// when none is given. On `bench/compression.rb`'s data sets, level 9 for
/// these made ruby-faker's flattened locales 2.31x smaller than the plain
/// store (2.10x all at level 3) and the merged locale tree 2.52x (2.27x),
/// where short values at 9 came out larger than at 3 (ISO 639-3 1.48x
/// against 1.53x): zstd's lazier parsers gain on long inputs and lose a
/// little on a few dozen bytes matched against a dictionary.
pub const DEFAULT_LONG_LEVEL: i32 = 9;

/// Values (and compressed items) of at least this many bytes are
/// compressed at a build's long level. Below it the stronger level gains
/// nothing on those data sets; moving the bound from 128 to 1,024 bytes
/// changed the flattened locales only from 2.32x to 2.30x, and at 512 the
/// 1M-product catalogue's values (about 330 bytes) keep level 3's build
/// time (3.9 s; 8.7 s all at level 9, for 2.53x against 2.43x).
pub const LONG_VALUE_LEN: usize = 512;

/// The levels a build takes.
pub const LEVEL_RANGE: (i32, i32) = (1, 22);

/// The compression a build applies to values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// Values are stored as they are.
    #[default]
    None,
    /// Each value of at least [`MIN_COMPRESS_LEN`](super::MIN_COMPRESS_LEN) bytes is a zstd frame,
    /// with a dictionary trained from the store's values; a value that
    /// does not get smaller stays raw.
    Zstd {
        /// The level of values shorter than [`LONG_VALUE_LEN`]: 1 to 22.
        level: i32,
        /// The level of longer ones: 1 to 22.
        long_level: i32,
    },
    /// The build tries compression on a sample of the values and keeps
    /// it only where it pays: zstd at the default levels, with the
    /// dictionary or without it, or nothing (`build::compress::choose`).
    Auto,
}

impl Compression {
    /// `zstd` as a build applies it when no level is given.
    pub const DEFAULT_ZSTD: Compression = Compression::Zstd {
        level: DEFAULT_LEVEL,
        long_level: DEFAULT_LONG_LEVEL,
    };

    /// zstd at one `level` for every value (`zstd:LEVEL`).
    pub const fn zstd(level: i32) -> Compression {
        Compression::Zstd {
            level,
            long_level: level,
        }
    }

    /// Whether the store gets a dictionary section: every compression
    /// but `None` (one `auto` left uncompressed records that choice in it).
    pub fn has_section(self) -> bool {
        self != Compression::None
    }

    /// The compression named as the CLI and bindings take it: `none`,
    /// `zstd` (levels 3 and 9), `zstd:LEVEL`, `zstd:LEVEL,LONG_LEVEL` or
    /// `auto`.
    pub fn parse(name: &str) -> Result<Compression> {
        let bad = |reason: String| Error::InvalidOption {
            name: "compression",
            reason,
        };
        let (lo, hi) = LEVEL_RANGE;
        // Digits only, as written ("+3", "03" and " 3" are not levels).
        let level = |text: &str| match text.parse::<i32>() {
            Ok(level)
                if (lo..=hi).contains(&level)
                    && text.bytes().all(|b| b.is_ascii_digit())
                    && !text.starts_with('0') =>
            {
                Ok(level)
            }
            _ => Err(bad(format!(
                "{name:?}: the zstd level must be an integer from {lo} to {hi}"
            ))),
        };
        let (codec, levels) = match name.split_once(':') {
            Some((codec, levels)) => (codec, Some(levels)),
            None => (name, None),
        };
        match (codec, levels) {
            ("none", None) => Ok(Compression::None),
            ("auto", None) => Ok(Compression::Auto),
            ("zstd", None) => Ok(Compression::DEFAULT_ZSTD),
            ("zstd", Some(levels)) => match levels.split_once(',') {
                None => Ok(Compression::zstd(level(levels)?)),
                Some((short, long)) => Ok(Compression::Zstd {
                    level: level(short)?,
                    long_level: level(long)?,
                }),
            },
            ("auto", Some(_)) => Err(bad(format!(
                "{name:?}: auto takes no level (it compresses at zstd's default levels where a sample says it pays)"
            ))),
            _ => {
                // "zstd9", "zstd-19": a level without its colon.
                let hint = codec
                    .strip_prefix("zstd")
                    .map(|rest| rest.trim_start_matches(['-', '_', '=']))
                    .filter(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
                    .map(|level| format!("; did you mean \"zstd:{level}\"?"))
                    .unwrap_or_default();
                Err(bad(format!(
                    "{name:?} is not a compression; one of none, zstd, zstd:LEVEL, zstd:LEVEL,LONG_LEVEL (LEVEL {lo}..={hi}), auto{hint}"
                )))
            }
        }
    }

    /// The name `parse` takes back.
    pub fn name(self) -> String {
        match self {
            Compression::None => "none".into(),
            Compression::Auto => "auto".into(),
            c if c == Compression::DEFAULT_ZSTD => "zstd".into(),
            Compression::Zstd { level, long_level } if level == long_level => {
                format!("zstd:{level}")
            }
            Compression::Zstd { level, long_level } => format!("zstd:{level},{long_level}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for c in [
            Compression::None,
            Compression::Auto,
            Compression::DEFAULT_ZSTD,
            Compression::zstd(3),
            Compression::zstd(19),
            Compression::Zstd {
                level: 1,
                long_level: 19,
            },
        ] {
            assert_eq!(Compression::parse(&c.name()).unwrap(), c);
        }
        assert_eq!(Compression::parse("zstd").unwrap().name(), "zstd");
        assert_eq!(
            Compression::parse("zstd:3,9").unwrap(),
            Compression::DEFAULT_ZSTD
        );
        let hint = Compression::parse("zstd9").unwrap_err().to_string();
        assert!(hint.ends_with("did you mean \"zstd:9\"?"), "{hint}");
        let auto = Compression::parse("auto:3").unwrap_err().to_string();
        assert!(auto.contains("auto takes no level"), "{auto}");
        for bad in [
            "lz4",
            "zstd:0",
            "zstd:23",
            "zstd:x",
            "none:1",
            "",
            "zstd:3,",
            "zstd:3,9,9",
            "auto:3",
            "zstd:+3",
            "zstd:03",
            "zstd: 3",
            "zstd:3, 9",
            "zstd9",
        ] {
            let e = Compression::parse(bad).unwrap_err().to_string();
            assert!(e.contains("compression"), "{bad}: {e}");
        }
    }
}
