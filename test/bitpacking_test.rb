# frozen_string_literal: true

require "test_helper"

class BitPackingTest < Minitest::Test
  include GCStress

  PACKERS = { BitPacking::BitPacker1x => 32, BitPacking::BitPacker4x => 128, BitPacking::BitPacker8x => 256 }.freeze

  def values(len, bits, rng = Random.new(len + bits))
    Array.new(len) { bits.zero? ? 0 : rng.rand(2**bits) }
  end

  # What the bitpacking gem's own suite (catlee/bitpacking,
  # test/test_bitpacking.rb) checks, written here: its file is not copied
  # into this repository (docs/ARCHITECTURE.md, "Code from elsewhere").
  def test_the_bitpacking_gems_contract
    assert_match(/\A\d+\.\d+\.\d+\z/, BitPacking::VERSION)
    packer = BitPacking::BitPacker4x.new
    zeros = [0] * 128
    assert_equal 0, packer.num_bits(zeros)
    assert_equal 1, packer.num_bits([1] + zeros.drop(1))
    assert_equal 8, packer.num_bits([1, 255] + zeros.drop(2))
    assert_equal "\xFF".b * 96, packer.compress([63] * 128, 6)
    rng = Random.new(7)
    [0, 1, 2**31, 2**32 - 1, rng.rand(2**32)].each do |n|
      numbers = [n] * 128
      bits = packer.num_bits(numbers)
      assert_equal numbers, packer.decompress(packer.compress(numbers, bits), bits).first
    end
  end

  def test_block_len
    PACKERS.each do |klass, len|
      assert_equal len, klass::BLOCK_LEN
      assert_equal len, klass.new.block_len
    end
  end

  def test_round_trip_every_width
    PACKERS.each do |klass, len|
      packer = klass.new
      33.times do |bits|
        data = values(len, bits)
        needed = packer.num_bits(data)
        assert_operator needed, :<=, bits
        packed = packer.compress(data, bits)
        assert_equal Encoding::ASCII_8BIT, packed.encoding
        assert_equal len * bits / 8, packed.bytesize
        assert_equal [data, packed.bytesize], packer.decompress(packed, bits)
        assert_equal [data, packed.bytesize], packer.decompress(packed + "trailing", bits), "ignores bytes after the block"
      end
    end
  end

  def test_exact_bytes_for_known_input
    # 32 values of 1 bit alternating 1,0: one u32 0x55555555, little-endian.
    assert_equal "\x55\x55\x55\x55".b, BitPacking::BitPacker1x.new.compress([1, 0] * 16, 1)
    # 4x interleaves four lanes: lane 0 holds values 0,4,8..; all 1s in lane 0.
    data = Array.new(128) { |i| (i % 4).zero? ? 1 : 0 }
    assert_equal ("\xFF\xFF\xFF\xFF".b + "\x00".b * 12), BitPacking::BitPacker4x.new.compress(data, 1)
  end

  def test_sorted_round_trip
    PACKERS.each do |klass, len|
      packer = klass.new
      data = (0...len).map { |i| 1000 + i * 3 }
      bits = packer.num_bits_sorted(1000, data)
      assert_operator bits, :<, packer.num_bits(data)
      packed = packer.compress_sorted(1000, data, bits)
      assert_equal [data, packed.bytesize], packer.decompress_sorted(1000, packed, bits)
    end
  end

  def test_strictly_sorted_round_trip_with_and_without_initial
    PACKERS.each do |klass, len|
      packer = klass.new
      data = (0...len).to_a
      [nil, 0].each do |initial|
        next if initial == 0 # 0 is not below the first value 0

        bits = packer.num_bits_strictly_sorted(initial, data)
        packed = packer.compress_strictly_sorted(initial, data, bits)
        assert_equal [data, packed.bytesize], packer.decompress_strictly_sorted(initial, packed, bits)
      end
      shifted = data.map { |v| v + 10 }
      bits = packer.num_bits_strictly_sorted(9, shifted)
      assert_equal 0, bits if klass == BitPacking::BitPacker1x
      assert_equal shifted, packer.decompress_strictly_sorted(9, packer.compress_strictly_sorted(9, shifted, bits), bits)[0]
    end
  end

  def test_errors
    packer = BitPacking::BitPacker4x.new
    good = Array.new(128, 1)
    assert_raises(ArgumentError) { packer.compress([1, 2, 3], 2) }
    assert_raises(TypeError) { packer.compress("nope", 2) }
    assert_raises(TypeError) { packer.num_bits(nil) }
    assert_raises(TypeError) { packer.compress(good[0...-1] + ["x"], 2) }
    assert_raises(TypeError) { packer.compress(good[0...-1] + [1.5], 2) }
    e = assert_raises(RangeError) { packer.compress(good[0...-1] + [2**32], 32) }
    assert_match(/index 127/, e.message)
    assert_raises(RangeError) { packer.compress(good[0...-1] + [-1], 32) }
    assert_raises(RangeError) { packer.num_bits(good[0...-1] + [2**70]) }
    e = assert_raises(ArgumentError) { packer.compress(good, 33) }
    assert_match(/num_bits must be between 0 and 32, got 33/, e.message)
    assert_raises(ArgumentError) { packer.compress(good, -1) }
    assert_raises(TypeError) { packer.compress(good, "3") }
    e = assert_raises(ArgumentError) { packer.compress(Array.new(128, 7), 2) }
    assert_match(/num_bits 2 is too small: these values need 3/, e.message)
    e = assert_raises(ArgumentError) { packer.decompress("\x00".b * 10, 5) }
    assert_match(/10 bytes; a block of 128 values at 5 bits needs 80/, e.message)
    assert_raises(TypeError) { packer.decompress(nil, 5) }
    assert_raises(ArgumentError) { packer.decompress("", 33) }
  end

  def test_sorted_errors
    packer = BitPacking::BitPacker1x.new
    sorted = (1..32).to_a
    e = assert_raises(ArgumentError) { packer.compress_sorted(0, sorted.reverse, 32) }
    assert_match(/not sorted/, e.message)
    assert_raises(ArgumentError) { packer.num_bits_sorted(5, sorted) } # first value below initial
    assert_raises(ArgumentError) { packer.compress_strictly_sorted(nil, [1, 1] + sorted[2..], 32) }
    assert_raises(ArgumentError) { packer.num_bits_strictly_sorted(1, sorted) } # first not above initial
    assert_raises(RangeError) { packer.num_bits_sorted(-1, sorted) }
    assert_raises(TypeError) { packer.num_bits_sorted(nil, sorted) }
    assert_raises(ArgumentError) { packer.compress_sorted(0, (0...32).map { |i| i * 100 }, 1) }
    assert_raises(ArgumentError) { packer.decompress_sorted(0, "\x00", 8) }
  end
end
