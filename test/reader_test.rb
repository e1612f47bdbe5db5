# frozen_string_literal: true

require "test_helper"

class ReaderTest < HashfileTest
  DATA = {
    "apple" => "red",
    "banana" => "yellow",
    "café" => "crème",
    "bin\x00\xFF".b => "\x00\x01\xFF".b,
    "empty" => "",
    "ascii" => "plain".encode("US-ASCII")
  }.freeze

  def setup
    super
    @db = Hashfile.open(build(DATA))
  end

  def teardown
    @db&.close
    super
  end

  # A store with the compact index (docs/FORMAT.md, "The compact index"),
  # built by the Rust core's vector test: every key, an absent one,
  # each, values_at and verify, through the binding.
  def test_reads_a_store_with_the_compact_index
    skip_in_quick_gc_stress("the same binding calls as the tests above, on another index")
    path = File.expand_path("../crates/hashfile/tests/vectors/compact-parts.hf", __dir__)
    Hashfile.open(path) do |db|
      assert_equal 1_000, db.size
      1_000.times { |i| assert_equal "value-#{i}", db["key-#{i}"] }
      assert_nil db["key-1000"]
      assert_equal 1_000, db.each.count
      assert_equal ["value-7", nil], db.values_at("key-7", "absent")
      assert db.verify
      assert_operator db.info[:mphf_bits_per_key], :<, 8
    end
  end

  def test_lookup
    assert_equal "red", @db["apple"]
    assert_equal "crème", @db["café"]
    assert_equal "\x00\x01\xFF".b, @db["bin\x00\xFF".b]
    assert_equal "", @db["empty"]
    assert_nil @db["cherry"]
    assert_nil @db[""]
  end

  def test_values_keep_their_encoding_and_are_new_strings
    assert_equal Encoding::UTF_8, @db["café"].encoding
    assert_equal Encoding::ASCII_8BIT, @db["bin\x00\xFF".b].encoding
    assert_equal Encoding::US_ASCII, @db["ascii"].encoding
    a = @db["apple"]
    refute a.frozen?
    a << "!"
    assert_equal "red", @db["apple"]
  end

  def test_symbol_keys_look_up_by_name
    assert_equal "red", @db[:apple]
    assert @db.key?(:banana)
  end

  def test_non_string_keys_are_absent
    assert_nil @db[42]
    assert_nil @db[nil]
    refute @db.key?(1.5)
  end

  def test_fetch_like_hash
    assert_equal "red", @db.fetch("apple")
    assert_equal "d", @db.fetch("nope", "d")
    assert_nil @db.fetch("nope", nil)
    assert_equal "NOPE", @db.fetch("nope") { |k| k.upcase } # rubocop:disable Style/SymbolProc -- fetch with a block is under test
    e = assert_raises(KeyError) { @db.fetch("nope") }
    assert_equal 'key not found: "nope"', e.message
    assert_equal "nope", e.key
    assert_same @db, e.receiver
  end

  def test_membership_and_size
    %i[key? has_key? include? member?].each do |m|
      assert @db.public_send(m, "apple"), m
      refute @db.public_send(m, "cherry"), m
    end
    assert_equal 6, @db.size
    assert_equal 6, @db.length
    refute @db.empty?
  end

  def test_iteration_in_insertion_order
    assert_equal DATA.keys, @db.keys
    assert_equal DATA.values, @db.values
    assert_equal DATA.to_a, @db.each.to_a
    assert_equal DATA.to_a, @db.each_pair.to_a
    assert_equal DATA, @db.to_h
    assert_equal 6, @db.each.size
    assert_equal DATA.keys, @db.each_key.to_a
    assert_equal DATA.values, @db.each_value.to_a
    assert_equal({ "APPLE" => "red" }, @db.to_h { |k, v| [k.upcase, v] }.slice("APPLE")) # rubocop:disable Style/HashTransformKeys -- to_h with a block is under test
    assert_same @db, @db.each { nil }
  end

  def test_keys_are_frozen_and_keep_encoding
    assert @db.keys.all?(&:frozen?)
    assert_equal Encoding::ASCII_8BIT, @db.keys[3].encoding
    assert_equal Encoding::UTF_8, @db.keys[2].encoding
  end

  def test_enumerable
    assert_kind_of Enumerable, @db
    assert_equal 6, @db.count
    assert_equal %w[apple banana], @db.select { |k, _| k.start_with?("ap", "ban") }.map(&:first)
    assert_equal ["banana", "yellow"], @db.max_by { |_, v| v.size }
  end

  def test_values_at
    assert_equal ["red", nil, "yellow"], @db.values_at("apple", "x", :banana)
  end

  def test_iteration_across_chunks
    data = (1..scale(5000)).to_h { |i| ["k#{i}", "v" * (i % 7)] }
    Hashfile.open(build(data, "big.hf")) do |db|
      assert_equal data, db.to_h
      data.each_key.first(100).each { |k| assert_equal data[k], db[k] }
    end
  end

  def test_inspect_shows_path_and_count
    assert_equal "#<Hashfile::Reader path=#{path.inspect} entries=6>", @db.inspect
    @db.close
    assert_equal "#<Hashfile::Reader path=#{path.inspect} closed>", @db.inspect
  end

  def test_use_after_close_raises_closed_error
    refute @db.closed?
    @db.close
    assert @db.closed?
    @db.close # closing twice is fine
    [-> { @db["apple"] }, -> { @db.fetch("apple") }, -> { @db.key?("apple") }, -> { @db.size },
     -> { @db.each { nil } }, -> { @db.keys }, -> { @db.verify }, -> { @db.info }, -> { @db.to_h }].each do |call|
      assert_raises(Hashfile::ClosedError) { call.call }
    end
  end

  def test_close_during_each_raises_on_next_chunk
    data = (1..1100).to_h { |i| ["k#{i}", "v"] } # just over one 1024-record chunk
    db = Hashfile.open(build(data, "big.hf"))
    seen = 0
    assert_raises(Hashfile::ClosedError) do
      db.each do
        seen += 1
        db.close if seen == 1
      end
    end
    assert_operator seen, :<, data.size
  end

  def test_open_block_closes_and_returns_value
    db = nil
    result = Hashfile.open(path) { |d| db = d; d["apple"] }
    assert_equal "red", result
    assert db.closed?
  end

  def test_open_block_closes_on_exception
    db = nil
    assert_raises(RuntimeError) { Hashfile.open(path) { |d| db = d; raise "x" } }
    assert db.closed?
  end

  def test_verify_and_open_with_verify
    assert_equal true, @db.verify
    Hashfile.open(path, verify: true) { |db| assert_equal "red", db["apple"] }
  end

  def test_info
    info = @db.info
    assert_equal 6, info[:entries]
    assert_equal File.size(path), info[:file_bytes]
    assert_equal "1.0", info[:format_version]
    assert_equal %i[seed_index seeds remap slots records], info[:sections].keys
    assert_equal 3.5, info[:parameters][:keys_per_bucket]
  end

  def test_reads_are_thread_safe
    data = (1..scale(20_000)).to_h { |i| ["key#{i}", "value#{i}"] }
    Hashfile.open(build(data, "big.hf")) do |db|
      keys = data.keys
      threads = 4.times.map do |t|
        Thread.new do
          wrong = 0
          scale(2000).times { |i| k = keys[(i * 7 + t) % keys.size]; wrong += 1 unless db[k] == data[k] }
          wrong
        end
      end
      assert_equal [0, 0, 0, 0], threads.map(&:value)
    end
  end

  def test_forked_child_reads_the_same_store
    skip_or_fail("HASHFILE_REQUIRE_LINUX", "no fork") unless Process.respond_to?(:fork)
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      writer.write(@db["banana"])
      writer.close
      exit!(0)
    end
    writer.close
    assert_equal "yellow", reader.read
    Process.wait(pid)
    assert_predicate $?, :success?
  end

  def test_a_million_entries
    skip "too slow under GC.stress" if ENV["HASHFILE_GC_STRESS"] == "1"
    Hashfile.build(path("m.hf")) { |w| 1_000_000.times { |i| w["k#{i}"] = i.to_s } }
    Hashfile.open(path("m.hf")) do |db|
      assert_equal 1_000_000, db.size
      [0, 1, 999_999, 123_456].each { |i| assert_equal i.to_s, db["k#{i}"] }
      assert_nil db["k1000000"]
      assert_operator db.info[:mphf_bits_per_key], :<, 3.0
    end
  end
end
