# frozen_string_literal: true

# BitPacking: the API of the `bitpacking` gem, on the Rust `bitpacking` crate
# (SIMD bit packing of blocks of u32), plus the sorted variants.
#
#   packer = BitPacking::BitPacker4x.new
#   bits = packer.num_bits(values)                # values: 128 Integers in 0..2**32-1
#   data = packer.compress(values, bits)          # binary String, the crate's bytes
#   values, bytes_read = packer.decompress(data, bits)
#
# Also num_bits_sorted/compress_sorted/decompress_sorted(initial, ...) and
# the strictly-sorted trio, whose +initial+ may be nil. Bad arguments raise
# TypeError, RangeError or ArgumentError; nothing is truncated silently.
require_relative "hashfile/native"

module BitPacking
  # The version of the bitpacking gem whose API this implements (its own
  # tests check that VERSION is defined); Hashfile::VERSION is this copy's.
  VERSION = "0.1.0"
end
