//! `Encoder`: each value compressed alone, one zstd frame per value, with
//! the store's dictionary.

use super::MAX_EXPANSION;
use crate::error::{Error, Result};

/// Compresses values with one dictionary, on one thread.
pub struct Encoder<'d> {
    context: zstd_safe::CCtx<'d>,
    /// The last frame, before it is known to be worth keeping.
    frame: Vec<u8>,
}

impl<'d> Encoder<'d> {
    /// An encoder at `level` with `dictionary` (prepared once per build
    /// with [`prepare_dictionary`]; `None` for no dictionary).
    pub fn new(level: i32, dictionary: Option<&'d zstd_safe::CDict<'d>>) -> Result<Encoder<'d>> {
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
        Ok(Encoder {
            context,
            frame: Vec::new(),
        })
    }

    /// Appends `value` compressed to `out` and returns true, or appends
    /// nothing and returns false where it would not be smaller (or would
    /// decode to more than [`MAX_EXPANSION`] times its length). The caller
    /// asks [`worth_compressing`](super::worth_compressing) first.
    pub fn compress(&mut self, value: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        self.frame.clear();
        self.frame.reserve(zstd_safe::compress_bound(value.len()));
        let written = self
            .context
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

/// The dictionary prepared for compressing at `level` (`None` for an
/// empty one).
pub fn prepare_dictionary(dictionary: &[u8], level: i32) -> Option<zstd_safe::CDict<'static>> {
    (!dictionary.is_empty()).then(|| zstd_safe::CDict::create(dictionary, level))
}
