# frozen_string_literal: true

require "test_helper"

class BuildTest < HashfileTest
  def test_build_from_hash_returns_bytes_written
    bytes = Hashfile.build(path, { "a" => "1", "b" => "2" })
    assert_equal File.size(path), bytes
    Hashfile.open(path) { |db| assert_equal "2", db["b"] }
  end

  def test_build_from_enumerable_of_pairs
    Hashfile.build(path, [%w[x 1], %w[y 2]].each)
    Hashfile.open(path) { |db| assert_equal({ "x" => "1", "y" => "2" }, db.to_h) }
  end

  def test_streaming_block_form
    Hashfile.build(path) do |w|
      w["k"] = "v"
      w.add("k2", "v2") << %w[k3 v3]
      assert_equal 3, w.size
    end
    Hashfile.open(path) { |db| assert_equal %w[v v2 v3], db.values_at("k", "k2", "k3") }
  end

  def test_data_and_block_together
    Hashfile.build(path, { "a" => "1" }) { |w| w["b"] = "2" }
    Hashfile.open(path) { |db| assert_equal %w[a b], db.keys }
  end

  def test_empty_store
    Hashfile.build(path, {})
    Hashfile.open(path) do |db|
      assert db.empty?
      assert_equal 0, db.size
      assert_nil db["x"]
      assert_equal [], db.to_a
      assert db.verify
    end
  end

  def test_duplicate_key_names_the_key_and_leaves_no_file
    error = assert_raises(Hashfile::DuplicateKeyError) do
      Hashfile.build(path, [%w[a 1], %w[dup 2], %w[dup 3]])
    end
    assert_equal 'duplicate key "dup"', error.message
    assert_equal "dup", error.key
    assert_equal [], Dir.children(tmpdir)
  end

  def test_symbol_and_string_with_same_name_are_duplicates
    assert_raises(Hashfile::DuplicateKeyError) { Hashfile.build(path, { a: "1", "a" => "2" }) }
  end

  def test_failed_build_keeps_previous_file
    Hashfile.build(path, { "v" => "old" })
    assert_raises(RuntimeError) { Hashfile.build(path) { |w| w["v"] = "new"; raise "boom" } }
    assert_raises(Hashfile::DuplicateKeyError) { Hashfile.build(path, [%w[v 1], %w[v 2]]) }
    Hashfile.open(path) { |db| assert_equal "old", db["v"] }
    assert_equal ["store.hf"], Dir.children(tmpdir)
  end

  def test_rebuild_replaces_file_while_old_reader_keeps_reading
    Hashfile.build(path, { "v" => "old" })
    old = Hashfile.open(path)
    Hashfile.build(path, { "v" => "new" })
    assert_equal "old", old["v"]
    Hashfile.open(path) { |db| assert_equal "new", db["v"] }
  ensure
    old&.close
  end

  # index: :compact writes the compact index (docs/FORMAT.md): about 2.2
  # bits a key at its own keys_per_bucket default, every value read back;
  # seed_block_len with it is refused, and an unknown layout is named.
  def test_the_compact_index
    skip_in_quick_gc_stress("the index is the core's; the binding passes one option")
    data = (0...30_000).to_h { |i| ["key-#{i}", i] }
    Hashfile.build(path, data, index: :compact)
    Hashfile.open(path) do |db|
      data.each { |k, v| assert_equal v, db[k] }
      assert_equal %i[pilots parts remap slots records], db.info[:sections].keys
      assert_equal :compact, db.info[:index]
      assert_operator db.info[:mphf_bits_per_key], :<, 2.3
      assert db.verify
    end
    e = assert_raises(ArgumentError) { Hashfile.build(path, data, index: :compact, seed_block_len: 32) }
    assert_match(/seed_block_len applies to the classic index/, e.message)
    e = assert_raises(ArgumentError) { Hashfile.build(path, data, index: :tiny) }
    assert_match(/"tiny" is not an index layout; one of classic, compact/, e.message)
    assert_equal :classic, Hashfile::BUILD_DEFAULTS[:index]
  end

  def test_same_input_same_bytes
    data = (1..scale(2000)).to_h { |i| ["k#{i}", "v#{i}"] }
    a = File.binread(build(data, "a.hf"))
    b = File.binread(build(data, "b.hf"))
    assert_equal a, b
  end

  def test_bad_keys_and_values_raise_type_error_naming_them
    e = assert_raises(TypeError) { Hashfile.build(path, { 1 => "x" }) }
    assert_equal "key must be a String or Symbol, not Integer", e.message
    e = assert_raises(TypeError) { Hashfile.build(path, { "k" => Object.new }) }
    assert_match(/\Avalue for key "k" is an Object; Hashfile stores nil, true, false/, e.message)
    e = assert_raises(ArgumentError) { Hashfile.build(path, [%w[a 1], ["b"]]) }
    assert_match(/expected a \[key, value\] pair at index 1/, e.message)
    assert_raises(TypeError) { Hashfile.build(path, 42) }
    assert_equal [], Dir.children(tmpdir)
  end

  def test_values_keep_any_encoding
    utf16 = "x\u00e9".encode("UTF-16LE")
    Hashfile.build(path, { "k" => utf16 })
    got = Hashfile.open(path) { |db| db["k"] }
    assert_equal Encoding::UTF_16LE, got.encoding
    assert_equal utf16.b, got.b
  end

  def test_options_are_checked
    assert_raises(ArgumentError) { Hashfile.build(path, {}, bogus: 1) }
    e = assert_raises(ArgumentError) { Hashfile.build(path, {}, load_factor: 2.0) }
    assert_match(/load_factor/, e.message)
    assert_raises(ArgumentError) { Hashfile.build(path, {}, seed_block_len: 64) }
    Hashfile.build(path, { "a" => "b" }, keys_per_bucket: 6.0, load_factor: 1.0, seed_block_len: 32, hash_seed: 7)
    Hashfile.open(path) do |db|
      assert_equal "b", db["a"]
      assert_equal 6.0, db.info[:parameters][:keys_per_bucket]
      assert_equal 32, db.info[:parameters][:seed_block_len]
    end
  end

  def test_a_large_store_is_built_in_parts
    skip_in_quick_gc_stress("47 s under GC.stress; the parts, not object lifetimes")
    data = (0...1_000).to_h { |i| ["key #{i}", "value #{i}"] }
    Hashfile.build(path, data, keys_per_part: 100)
    Hashfile.open(path, verify: true) do |db|
      assert_equal 10, db.info[:parameters][:parts]
      assert_equal data, db.to_h
      data.each { |k, v| assert_equal v, db[k] }
      assert_nil db["key 1000"]
    end
    Hashfile.build(path, data)
    assert_equal 1, Hashfile.open(path) { |db| db.info[:parameters][:parts] }
    e = assert_raises(ArgumentError) { Hashfile.build(path, data, keys_per_part: 0) }
    assert_match(/keys_per_part/, e.message)
  end

  def test_writer_is_finished_after_build
    kept = nil
    Hashfile.build(path) { |w| kept = w }
    assert_raises(Hashfile::ClosedError) { kept["x"] = "y" }
  end

  def test_pathname_paths
    require "pathname"
    Hashfile.build(Pathname(path), { "a" => "1" })
    assert_equal "1", Hashfile.open(Pathname(path)) { |db| db["a"] }
  end

  def test_unwritable_destination_raises_errno
    target = File.join(tmpdir, "no/such/dir.hf")
    e = assert_raises(Errno::ENOENT) { Hashfile.build(target, { "a" => "1" }) }
    assert_equal "No such file or directory - #{target}", e.message
  end

  def test_other_ruby_threads_run_during_build
    skip_in_quick_gc_stress("49 s under GC.stress; scheduling, not object lifetimes")
    data = (1..scale(300_000)).to_h { |i| ["key#{i}", "value#{i}"] }
    ticks = 0
    ticker = Thread.new { loop { ticks += 1; Thread.pass } }
    Hashfile.build(path, data)
    ticker.kill
    assert_operator ticks, :>, 0
  end
end

class PublishCheckTest < HashfileTest
  # Found in hardening (#15): these builds returned normally, replaced the
  # old file, and the result did not open.
  def test_a_build_never_publishes_what_cannot_be_opened
    skip_in_quick_gc_stress("39 s under GC.stress; publishing, not object lifetimes")
    keys = scale(140_000)
    data = (1..keys).to_h { |i| ["k#{i}", "v#{i}"] }
    Hashfile.build(path, data, load_factor: 0.5, keys_per_part: keys / 2)
    Hashfile.open(path) do |db|
      assert_equal keys, db.size
      assert_equal "v7", db["k7"]
      assert db.verify
    end
    small = (1..1_000).to_h { |i| ["k#{i}", "v#{i}"] }
    (1..8).each do |keys_per_part|
      Hashfile.build(path, { "old" => "store" })
      begin
        Hashfile.build(path, small, keys_per_part: keys_per_part)
      rescue ArgumentError => e
        assert_match(/keys_per_part/, e.message)
        assert_equal "store", Hashfile.open(path) { |db| db["old"] }, "a refused build leaves the old file"
        next
      end
      Hashfile.open(path) { |db| assert_equal [1_000, "v500"], [db.size, db["k500"]], "keys_per_part #{keys_per_part}" }
    end
  end
end
