//! `Encoder`: each value compressed alone, one zstd frame per value, with
//! the store's dictionary, at the level its length calls for.

use super::{LONG_VALUE_LEN, MAX_EXPANSION};
use crate::error::{Error, Result};

/// The zstd levels of one build: `short` for values (and items) shorter
/// than [`LONG_VALUE_LEN`], `long` for the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Levels {
    /// The level of values shorter than [`LONG_VALUE_LEN`].
    pub short: i32,
    /// The level of the others.
    pub long: i32,
}

/// A build's dictionary prepared once for each of its levels (zstd takes
/// a prepared dictionary's level over the context's).
pub struct Prepared {
    levels: Levels,
    short: Option<zstd_safe::CDict<'static>>,
    long: Option<zstd_safe::CDict<'static>>,
}

/// The dictionary prepared for compressing at `levels` (no dictionary if
/// it is empty).
pub fn prepare_dictionary(dictionary: &[u8], levels: Levels) -> Prepared {
    let prepare =
        |level| (!dictionary.is_empty()).then(|| zstd_safe::CDict::create(dictionary, level));
    Prepared {
        levels,
        short: prepare(levels.short),
        long: if levels.long == levels.short {
            None
        } else {
            prepare(levels.long)
        },
    }
}

/// Compresses values with one dictionary, on one thread.
pub struct Encoder<'d> {
    short: zstd_safe::CCtx<'d>,
    /// `None` where both levels are the same.
    long: Option<zstd_safe::CCtx<'d>>,
    /// The last frame, before it is known to be worth keeping.
    frame: Vec<u8>,
}

impl<'d> Encoder<'d> {
    /// An encoder at the levels `prepared` was prepared for, with its
    /// dictionary.
    pub fn new(prepared: &'d Prepared) -> Result<Encoder<'d>> {
        let levels = prepared.levels;
        let long = if levels.long == levels.short {
            None
        } else {
            Some(context(levels.long, prepared.long.as_ref())?)
        };
        Ok(Encoder {
            short: context(levels.short, prepared.short.as_ref())?,
            long,
            frame: Vec::new(),
        })
    }

    /// Appends `value` compressed to `out` and returns true, or appends
    /// nothing and returns false where it would not be smaller (or would
    /// decode to more than [`MAX_EXPANSION`] times its length). The caller
    /// asks [`worth_compressing`](super::worth_compressing) first.
    pub fn compress(&mut self, value: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let context = match &mut self.long {
            Some(long) if value.len() >= LONG_VALUE_LEN => long,
            _ => &mut self.short,
        };
        self.frame.clear();
        self.frame.reserve(zstd_safe::compress_bound(value.len()));
        let written =
            context
                .compress2(&mut self.frame, value)
                .map_err(|code| Error::Compression {
                    reason: format!("zstd: {}", zstd_safe::get_error_name(code)),
                })?;
        let smaller = written < value.len();
        let bounded = (value.len() as u64) <= (written as u64).saturating_mul(MAX_EXPANSION);
        if smaller && bounded {
            out.extend_from_slice(&self.frame);
            return Ok(true);
        }
        Ok(false)
    }
}

/// A context writing frames without their magic number, checksum or
/// dictionary id, with their decoded length, at `level`.
fn context<'d>(
    level: i32,
    dictionary: Option<&'d zstd_safe::CDict<'d>>,
) -> Result<zstd_safe::CCtx<'d>> {
    use zstd_safe::{CParameter, FrameFormat};
    let failed = |what: &str, code: usize| Error::Compression {
        reason: format!("{what}: {}", zstd_safe::get_error_name(code)),
    };
    let mut context = zstd_safe::CCtx::try_create().ok_or(Error::Compression {
        reason: "zstd could not allocate a compression context".into(),
    })?;
    for parameter in [
        CParameter::Format(FrameFormat::Magicless),
        CParameter::ContentSizeFlag(true),
        CParameter::ChecksumFlag(false),
        CParameter::DictIdFlag(false),
        CParameter::CompressionLevel(level),
    ] {
        context
            .set_parameter(parameter)
            .map_err(|code| failed("setting a zstd parameter", code))?;
    }
    if let Some(dictionary) = dictionary {
        context
            .ref_cdict(dictionary)
            .map_err(|code| failed("loading the dictionary", code))?;
    }
    Ok(context)
}
