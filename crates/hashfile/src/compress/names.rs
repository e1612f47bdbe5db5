//! `Compression`: what a build applies to values, and the names the CLI
//! and the bindings give it (`none`, `zstd`, `zstd:LEVEL`).

use crate::error::{Error, Result};

/// The level a build uses when none is given: zstd's own default.
pub const DEFAULT_LEVEL: i32 = 3;

/// The levels a build takes.
pub const LEVEL_RANGE: (i32, i32) = (1, 22);

/// The compression a build applies to values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// Values are stored as they are.
    #[default]
    None,
    /// Each value of at least [`MIN_COMPRESS_LEN`](super::MIN_COMPRESS_LEN) bytes is a zstd frame
    /// at this level, with a dictionary trained from the store's values;
    /// a value that does not get smaller stays raw.
    Zstd {
        /// 1 to 22.
        level: i32,
    },
}

impl Compression {
    /// The compression named as the CLI and bindings take it: `none`,
    /// `zstd` (level 3) or `zstd:LEVEL`.
    pub fn parse(name: &str) -> Result<Compression> {
        let bad = |reason: String| Error::InvalidOption {
            name: "compression",
            reason,
        };
        let (codec, level) = match name.split_once(':') {
            Some((codec, level)) => (codec, Some(level)),
            None => (name, None),
        };
        match (codec, level) {
            ("none", None) => Ok(Compression::None),
            ("zstd", None) => Ok(Compression::Zstd {
                level: DEFAULT_LEVEL,
            }),
            ("zstd", Some(level)) => {
                let (lo, hi) = LEVEL_RANGE;
                match level.parse::<i32>() {
                    Ok(level) if (lo..=hi).contains(&level) => Ok(Compression::Zstd { level }),
                    _ => Err(bad(format!(
                        "{name:?}: the zstd level must be an integer from {lo} to {hi}"
                    ))),
                }
            }
            _ => Err(bad(format!(
                "{name:?} is not a compression; one of none, zstd, zstd:LEVEL (LEVEL {}..={})",
                LEVEL_RANGE.0, LEVEL_RANGE.1
            ))),
        }
    }

    /// The name `parse` takes back.
    pub fn name(self) -> String {
        match self {
            Compression::None => "none".into(),
            Compression::Zstd { level } if level == DEFAULT_LEVEL => "zstd".into(),
            Compression::Zstd { level } => format!("zstd:{level}"),
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
            Compression::Zstd { level: 3 },
            Compression::Zstd { level: 19 },
        ] {
            assert_eq!(Compression::parse(&c.name()).unwrap(), c);
        }
        for bad in ["lz4", "zstd:0", "zstd:23", "zstd:x", "none:1", ""] {
            let e = Compression::parse(bad).unwrap_err().to_string();
            assert!(e.contains("compression"), "{bad}: {e}");
        }
    }
}
