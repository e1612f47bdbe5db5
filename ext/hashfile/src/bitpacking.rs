//! `BitPacking::BitPacker1x/4x/8x`: the API of the `bitpacking` gem on the
//! `bitpacking` crate, plus the sorted and strictly-sorted variants. Every
//! argument is checked before the crate sees it, since the crate panics (or
//! silently truncates) on what it does not expect.

use bitpacking::{BitPacker, BitPacker1x, BitPacker4x, BitPacker8x};
use magnus::{method, prelude::*, Error, Integer, RArray, RClass, RString, Ruby, Value};

use crate::error::{arg_error, class_name};

/// A u32 from a Ruby Integer: TypeError for non-Integers, RangeError outside u32.
fn to_u32(ruby: &Ruby, value: Value, what: impl Fn() -> String) -> Result<u32, Error> {
    let Some(int) = Integer::from_value(value) else {
        return Err(Error::new(
            ruby.exception_type_error(),
            format!("{} must be an Integer, not {}", what(), class_name(value)),
        ));
    };
    match int.to_i64().ok().and_then(|v| u32::try_from(v).ok()) {
        Some(v) => Ok(v),
        None => Err(Error::new(
            ruby.exception_range_error(),
            format!("{} is {}, outside 0..{}", what(), int, u32::MAX),
        )),
    }
}

fn num_bits_arg(ruby: &Ruby, value: Value) -> Result<u8, Error> {
    let Some(int) = Integer::from_value(value) else {
        return Err(Error::new(
            ruby.exception_type_error(),
            format!("num_bits must be an Integer, not {}", class_name(value)),
        ));
    };
    match int.to_i64() {
        Ok(bits @ 0..=32) => Ok(bits as u8),
        _ => Err(arg_error(
            ruby,
            format!("num_bits must be between 0 and 32, got {int}"),
        )),
    }
}

fn block<P: BitPacker>(ruby: &Ruby, value: Value) -> Result<Vec<u32>, Error> {
    let Some(array) = RArray::from_value(value) else {
        return Err(Error::new(
            ruby.exception_type_error(),
            format!(
                "expected an Array of {} Integers, got {}",
                P::BLOCK_LEN,
                class_name(value)
            ),
        ));
    };
    if array.len() != P::BLOCK_LEN {
        return Err(arg_error(
            ruby,
            format!(
                "expected an Array of {} Integers, got {}",
                P::BLOCK_LEN,
                array.len()
            ),
        ));
    }
    (0..P::BLOCK_LEN)
        .map(|i| {
            to_u32(ruby, array.entry(i as isize)?, || {
                format!("value at index {i}")
            })
        })
        .collect()
}

/// Lanes the crate interleaves values across; sorted deltas are per lane.
fn lanes<P: BitPacker>() -> usize {
    P::BLOCK_LEN / 32
}

/// Checks the order the sorted codecs need to give the values back: each
/// value at least (sorted) or above (strict) the one a lane before it, and
/// the first lane against `initial`.
fn check_order<P: BitPacker>(
    ruby: &Ruby,
    initial: Option<u32>,
    values: &[u32],
    strict: bool,
) -> Result<(), Error> {
    let lanes = lanes::<P>();
    for (i, &v) in values.iter().enumerate() {
        let (previous, name) = if i >= lanes {
            (
                Some(values[i - lanes]),
                format!("value {} at index {}", values[i - lanes], i - lanes),
            )
        } else {
            (initial, format!("initial {}", initial.unwrap_or(0)))
        };
        let Some(previous) = previous else { continue };
        let bad = if strict { v <= previous } else { v < previous };
        if bad {
            let relation = if strict {
                "must be greater than"
            } else {
                "must not be less than"
            };
            return Err(arg_error(
                ruby,
                format!("not sorted: value {v} at index {i} {relation} {name}"),
            ));
        }
    }
    Ok(())
}

fn check_width(ruby: &Ruby, num_bits: u8, needed: u8) -> Result<(), Error> {
    if num_bits < needed {
        return Err(arg_error(
            ruby,
            format!("num_bits {num_bits} is too small: these values need {needed}"),
        ));
    }
    Ok(())
}

fn compressed_input<P: BitPacker>(
    ruby: &Ruby,
    value: Value,
    num_bits: u8,
) -> Result<Vec<u8>, Error> {
    let Some(s) = RString::from_value(value) else {
        return Err(Error::new(
            ruby.exception_type_error(),
            format!(
                "compressed data must be a String, not {}",
                class_name(value)
            ),
        ));
    };
    // SAFETY: copied at once, before any Ruby code runs.
    let bytes = unsafe { s.as_slice() }.to_vec();
    let needed = P::compressed_block_size(num_bits);
    if bytes.len() < needed {
        return Err(arg_error(ruby, format!("compressed data is {} bytes; a block of {} values at {num_bits} bits needs {needed}", bytes.len(), P::BLOCK_LEN)));
    }
    Ok(bytes)
}

fn decompressed(ruby: &Ruby, values: Vec<u32>, read: usize) -> Result<RArray, Error> {
    let array = ruby.ary_from_iter(values);
    Ok(ruby.ary_from_iter([
        array.as_value(),
        ruby.integer_from_u64(read as u64).as_value(),
    ]))
}

fn compressed(ruby: &Ruby, compress: impl FnOnce(&mut [u8]) -> usize, size: usize) -> RString {
    let mut out = vec![0u8; size];
    let written = compress(&mut out);
    ruby.str_from_slice(&out[..written])
}

fn initial_arg(ruby: &Ruby, value: Value) -> Result<u32, Error> {
    to_u32(ruby, value, || "initial".into())
}

fn strict_initial_arg(ruby: &Ruby, value: Value) -> Result<Option<u32>, Error> {
    if value.is_nil() {
        Ok(None)
    } else {
        initial_arg(ruby, value).map(Some)
    }
}

fn block_len<P: BitPacker>(_rb_self: Value) -> usize {
    P::BLOCK_LEN
}

fn num_bits<P: BitPacker>(ruby: &Ruby, _rb_self: Value, array: Value) -> Result<u8, Error> {
    Ok(P::new().num_bits(&block::<P>(ruby, array)?))
}

fn compress<P: BitPacker>(
    ruby: &Ruby,
    _rb_self: Value,
    array: Value,
    num_bits: Value,
) -> Result<RString, Error> {
    let (values, bits) = (block::<P>(ruby, array)?, num_bits_arg(ruby, num_bits)?);
    let packer = P::new();
    check_width(ruby, bits, packer.num_bits(&values))?;
    Ok(compressed(
        ruby,
        |out| packer.compress(&values, out, bits),
        P::compressed_block_size(bits),
    ))
}

fn decompress<P: BitPacker>(
    ruby: &Ruby,
    _rb_self: Value,
    data: Value,
    num_bits: Value,
) -> Result<RArray, Error> {
    let bits = num_bits_arg(ruby, num_bits)?;
    let bytes = compressed_input::<P>(ruby, data, bits)?;
    let mut values = vec![0u32; P::BLOCK_LEN];
    let read = P::new().decompress(&bytes, &mut values, bits);
    decompressed(ruby, values, read)
}

fn num_bits_sorted<P: BitPacker>(
    ruby: &Ruby,
    _rb_self: Value,
    initial: Value,
    array: Value,
) -> Result<u8, Error> {
    let (initial, values) = (initial_arg(ruby, initial)?, block::<P>(ruby, array)?);
    check_order::<P>(ruby, Some(initial), &values, false)?;
    Ok(P::new().num_bits_sorted(initial, &values))
}

fn compress_sorted<P: BitPacker>(
    ruby: &Ruby,
    _rb_self: Value,
    initial: Value,
    array: Value,
    num_bits: Value,
) -> Result<RString, Error> {
    let (initial, values, bits) = (
        initial_arg(ruby, initial)?,
        block::<P>(ruby, array)?,
        num_bits_arg(ruby, num_bits)?,
    );
    check_order::<P>(ruby, Some(initial), &values, false)?;
    let packer = P::new();
    check_width(ruby, bits, packer.num_bits_sorted(initial, &values))?;
    Ok(compressed(
        ruby,
        |out| packer.compress_sorted(initial, &values, out, bits),
        P::compressed_block_size(bits),
    ))
}

fn decompress_sorted<P: BitPacker>(
    ruby: &Ruby,
    _rb_self: Value,
    initial: Value,
    data: Value,
    num_bits: Value,
) -> Result<RArray, Error> {
    let (initial, bits) = (initial_arg(ruby, initial)?, num_bits_arg(ruby, num_bits)?);
    let bytes = compressed_input::<P>(ruby, data, bits)?;
    let mut values = vec![0u32; P::BLOCK_LEN];
    let read = P::new().decompress_sorted(initial, &bytes, &mut values, bits);
    decompressed(ruby, values, read)
}

fn num_bits_strictly_sorted<P: BitPacker>(
    ruby: &Ruby,
    _rb_self: Value,
    initial: Value,
    array: Value,
) -> Result<u8, Error> {
    let (initial, values) = (strict_initial_arg(ruby, initial)?, block::<P>(ruby, array)?);
    check_order::<P>(ruby, initial, &values, true)?;
    Ok(P::new().num_bits_strictly_sorted(initial, &values))
}

fn compress_strictly_sorted<P: BitPacker>(
    ruby: &Ruby,
    _rb_self: Value,
    initial: Value,
    array: Value,
    num_bits: Value,
) -> Result<RString, Error> {
    let (initial, values, bits) = (
        strict_initial_arg(ruby, initial)?,
        block::<P>(ruby, array)?,
        num_bits_arg(ruby, num_bits)?,
    );
    check_order::<P>(ruby, initial, &values, true)?;
    let packer = P::new();
    check_width(
        ruby,
        bits,
        packer.num_bits_strictly_sorted(initial, &values),
    )?;
    Ok(compressed(
        ruby,
        |out| packer.compress_strictly_sorted(initial, &values, out, bits),
        P::compressed_block_size(bits),
    ))
}

fn decompress_strictly_sorted<P: BitPacker>(
    ruby: &Ruby,
    _rb_self: Value,
    initial: Value,
    data: Value,
    num_bits: Value,
) -> Result<RArray, Error> {
    let (initial, bits) = (
        strict_initial_arg(ruby, initial)?,
        num_bits_arg(ruby, num_bits)?,
    );
    let bytes = compressed_input::<P>(ruby, data, bits)?;
    let mut values = vec![0u32; P::BLOCK_LEN];
    let read = P::new().decompress_strictly_sorted(initial, &bytes, &mut values, bits);
    decompressed(ruby, values, read)
}

/// Defines one packer class. A macro, not a generic function, because
/// `method!` expands to a nested fn that cannot see outer type parameters.
macro_rules! define_packer {
    ($ruby:expr, $module:expr, $name:literal, $packer:ty) => {{
        let class: RClass = $module.define_class($name, $ruby.class_object())?;
        class.const_set("BLOCK_LEN", <$packer>::BLOCK_LEN)?;
        class.define_method("block_len", method!(block_len::<$packer>, 0))?;
        class.define_method("num_bits", method!(num_bits::<$packer>, 1))?;
        class.define_method("compress", method!(compress::<$packer>, 2))?;
        class.define_method("decompress", method!(decompress::<$packer>, 2))?;
        class.define_method("num_bits_sorted", method!(num_bits_sorted::<$packer>, 2))?;
        class.define_method("compress_sorted", method!(compress_sorted::<$packer>, 3))?;
        class.define_method(
            "decompress_sorted",
            method!(decompress_sorted::<$packer>, 3),
        )?;
        class.define_method(
            "num_bits_strictly_sorted",
            method!(num_bits_strictly_sorted::<$packer>, 2),
        )?;
        class.define_method(
            "compress_strictly_sorted",
            method!(compress_strictly_sorted::<$packer>, 3),
        )?;
        class.define_method(
            "decompress_strictly_sorted",
            method!(decompress_strictly_sorted::<$packer>, 3),
        )?;
    }};
}

pub(crate) fn init(ruby: &Ruby) -> Result<(), Error> {
    let module = ruby.define_module("BitPacking")?;
    define_packer!(ruby, module, "BitPacker1x", BitPacker1x);
    define_packer!(ruby, module, "BitPacker4x", BitPacker4x);
    define_packer!(ruby, module, "BitPacker8x", BitPacker8x);
    Ok(())
}
