# frozen_string_literal: true

require_relative "test_helper"

# Datasets (issue 23), first part: the routing of a key to its shard is the
# core's, pinned by the vectors the Rust tests check
# (crates/hashfile/tests/vectors/routing.tsv).
class DatasetTest < HashfileTest
  VECTORS = File.expand_path("../crates/hashfile/tests/vectors/routing.tsv", __dir__)

  def test_keys_route_as_the_vectors_pin
    header, *rows = File.readlines(VECTORS, chomp: true)
    counts = header.split("\t").drop(1).map { |n| Integer(n) }
    assert_operator rows.size, :>=, 30
    rows.each do |row|
      hex, *shards = row.split("\t", -1)
      key = [hex].pack("H*")
      counts.zip(shards).each do |n, shard|
        assert_equal Integer(shard), Hashfile.shard_of(key, n), "#{hex} among #{n}"
      end
    end
  end

  def test_a_symbol_routes_as_its_name_and_bad_arguments_are_named
    assert_equal Hashfile.shard_of("tenant:42", 16), Hashfile.shard_of(:"tenant:42", 16)
    assert_equal Hashfile.shard_of("clé".b, 7), Hashfile.shard_of("clé", 7), "bytes route, not encodings"
    e = assert_raises(ArgumentError) { Hashfile.shard_of("a", 0) }
    assert_equal "shards must be from 1 to 1048576, got 0", e.message
    assert_raises(ArgumentError) { Hashfile.shard_of("a", 2**64) }
    assert_equal "key must be a String or Symbol, not Integer", assert_raises(TypeError) { Hashfile.shard_of(1, 2) }.message
    assert_equal "shards must be an Integer, not Float", assert_raises(TypeError) { Hashfile.shard_of("a", 2.0) }.message
  end
end
