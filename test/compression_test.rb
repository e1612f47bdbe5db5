# frozen_string_literal: true

require_relative "test_helper"
require "json"
require "open3"

# compression: :zstd (docs/RUBY.md, "Compressed values"): every value of 32
# bytes or more is a zstd frame of its own, with a dictionary trained on
# the store's values; every way of reading gives back what was stored.
class CompressionTest < HashfileTest
  WORDS = %w[steel garden compact blue kettle cordless oak travel kit premium lamp set].freeze

  # Catalogue-like values: JSON-ish text, typed Hashes, short strings,
  # binary and other encodings.
  def catalogue(n)
    (0...n).to_h do |i|
      words = (1..6).map { |k| WORDS[((i * 7) + (k * 13)) % WORDS.size] }
      text = "A #{words[0]} #{words[1]} for every #{words[2]} and #{words[3]}, " \
             "in #{words[4]} and #{words[5]}: sku #{i}."
      value = case i % 5
              when 0 then { "sku" => i, "name" => "#{words[0]} #{words[1]}", "text" => text, "tags" => words.first(3) }
              when 1 then text
              when 2 then "short #{i}"
              when 3 then text.encode("UTF-16LE")
              else text.b
              end
      ["product:#{i}", value]
    end
  end

  def test_values_read_back_every_way_and_take_less_room
    data = catalogue(scale(2_000))
    # Under GC.stress, 20 entries: too little text to train a dictionary on.
    trained = data.size >= 300
    Hashfile.build(path("raw.hf"), data)
    written = Hashfile.build(path("z.hf"), data, compression: :zstd)
    assert_equal File.size(path("z.hf")), written
    assert_operator File.size(path("z.hf")) * 2, :<, File.size(path("raw.hf")) if trained
    Hashfile.open(path("z.hf"), verify: true) do |db|
      data.each { |k, v| assert_same_value v, db[k], k }
      assert_equal data.keys, db.keys, "in the order added"
      db.each { |k, v| assert_same_value data.fetch(k), v, k }
      assert_equal data.values_at("product:0", "product:2", "nope"), db.values_at("product:0", "product:2", "nope")
      assert_equal data["product:0"]["tags"][1], db.dig("product:0", "tags", 1)
      assert_equal data["product:5"]["sku"], db.get("product:5", symbolize_names: true)[:sku]
      # raw: the value's bytes as stored before compression: the typed encoding.
      raw = db.get("product:1", raw: true)
      assert_equal data["product:1"].b, raw
      info = db.info[:compression]
      assert_equal :zstd, info[:codec]
      assert_equal 3, info[:level]
      assert_operator info[:values], :>, trained ? data.size / 2 : 0
      if trained
        assert_operator info[:ratio], :>, 2.0
        assert_operator info[:dictionary_bytes], :>, 0
      end
      assert_equal info[:decoded_bytes].fdiv(info[:stored_bytes]), info[:ratio]
    end
    Hashfile.open(path("raw.hf")) { |db| assert_nil db.info[:compression] }
  end

  # A tree too big to compress whole (over 64 KiB) keeps its upper levels
  # raw and its subtrees compressed each alone, so a dig decodes only the
  # subtree its path enters (docs/FORMAT.md, "Compressed items").
  def test_a_big_tree_is_compressed_item_by_item_and_dig_reads_its_path
    skip_in_quick_gc_stress("a 150 KB tree, built and read whole several times")
    texts = catalogue(900).values.grep(String).select { |v| v.encoding == Encoding::UTF_8 && v.size > 40 }
    tree = (0...30).to_h do |i|
      section = (0...30).to_h do |j|
        ["entry#{j}", { "name" => texts[((i * 30) + j) % texts.size], "tags" => WORDS.rotate(i + j).first(4), "n" => j }]
      end
      ["section#{i}", section]
    end
    tree["names"] = Array.new(3_000) { |i| "name #{i % 101}" }
    data = { "tree" => tree, "small" => "x" }
    Hashfile.build(path("raw.hf"), data)
    Hashfile.build(path("z.hf"), data, compression: :zstd)
    assert_operator File.size(path("z.hf")) * 2, :<, File.size(path("raw.hf"))
    Hashfile.open(path("z.hf"), verify: true) do |db|
      assert_equal tree, db["tree"]
      assert_equal data.to_a, db.to_a
      paths = [%w[section3 entry7 name], ["section3", "entry7", "tags", -1], %w[section3 entry7], %w[section3],
               ["names", 2_999], ["names", 3_000], %w[section3 nope], %w[nope entry1], []]
      paths.each { |pa| assert_equal pa.empty? ? tree : tree.dig(*pa), db.dig("tree", *pa), pa.inspect }
      # Past a scalar: Ruby's own error, as Hash#dig gives it.
      expected = assert_raises(TypeError) { tree.dig("section3", "entry7", "n", 0) }
      actual = assert_raises(TypeError) { db.dig("tree", "section3", "entry7", "n", 0) }
      assert_equal expected.message, actual.message
      assert_equal tree["section3"]["entry7"]["name"], db.dig("tree", :section3, :entry7, :name, symbolize_names: true)
      assert_predicate db.dig("tree", "section3", freeze: true), :frozen?
      assert_equal tree["names"], db.get("tree", symbolize_names: true)[:names]
      # The items digs decoded are kept (up to a limit): the same paths
      # again decode nothing and answer the same.
      cache = db.info[:compression][:item_cache]
      assert_operator cache[:entries], :>, 0
      assert_operator cache[:bytes], :<=, cache[:limit]
      paths.each { |pa| assert_equal pa.empty? ? tree : tree.dig(*pa), db.dig("tree", *pa), pa.inspect }
      again = db.info[:compression][:item_cache]
      assert_equal cache[:misses], again[:misses]
      assert_operator again[:hits], :>=, cache[:hits] + 4
      info = db.info[:compression]
      assert_equal 1, info[:values], "the tree; \"x\" is too short"
      assert_equal db.get("tree", raw: true).bytesize, info[:decoded_bytes]
    end
  end

  def test_levels_and_names
    data = catalogue(scale(500))
    Hashfile.build(path("19.hf"), data, compression: "zstd:19")
    Hashfile.open(path("19.hf")) do |db|
      assert_equal 19, db.info[:compression][:level]
      assert_equal data["product:1"], db["product:1"]
    end
    Hashfile.build(path("none.hf"), data, compression: :none)
    Hashfile.open(path("none.hf")) { |db| assert_nil db.info[:compression] }
    assert_equal :none, Hashfile::BUILD_DEFAULTS[:compression]
    # zstd alone: level 3, and 9 for values of 512 bytes or more.
    Hashfile.build(path("default.hf"), data, compression: :zstd)
    Hashfile.open(path("default.hf")) do |db|
      assert_equal({ codec: :zstd, auto: false, level: 3, long_level: 9, long_value_bytes: 512 },
                   db.info[:compression].slice(:codec, :auto, :level, :long_level, :long_value_bytes))
    end
    Hashfile.build(path("1,19.hf"), data, compression: "zstd:1,19")
    Hashfile.open(path("1,19.hf")) { |db| assert_equal [1, 19], db.info[:compression].values_at(:level, :long_level) }
  end

  # auto: compression kept where a sample says it pays, and what it chose
  # in info; random bytes left as they are.
  def test_auto_compresses_what_pays
    data = catalogue(scale(500))
    Hashfile.build(path("auto.hf"), data, compression: :auto)
    Hashfile.open(path("auto.hf")) do |db|
      info = db.info[:compression]
      assert_equal [:zstd, true, 3], info.values_at(:codec, :auto, :level)
      assert_operator info[:values], :>, 0
      assert_equal data["product:1"], db["product:1"]
    end
    rng = Random.new(5)
    blobs = Array.new(scale(2000)) { |i| ["blob:#{i}", rng.bytes(100)] }.to_h
    Hashfile.build(path("blobs.hf"), blobs, compression: :auto)
    Hashfile.open(path("blobs.hf")) do |db|
      info = db.info[:compression]
      assert_equal [:none, true, 0, 0], info.values_at(:codec, :auto, :level, :values)
      assert_equal blobs["blob:7"], db["blob:7"]
      assert db.verify
    end
  end

  def test_a_bad_compression_is_an_error_naming_it
    e = assert_raises(ArgumentError) { Hashfile.build(path, { "a" => "b" }, compression: :lz4) }
    assert_match(/invalid option compression: "lz4" is not a compression; one of none, zstd, zstd:LEVEL/, e.message)
    e = assert_raises(ArgumentError) { Hashfile.build(path, { "a" => "b" }, compression: "zstd:23") }
    assert_match(/the zstd level must be an integer from 1 to 22/, e.message)
    e = assert_raises(TypeError) { Hashfile.build(path, { "a" => "b" }, compression: 3) }
    assert_equal "compression must be a string, not an integer", e.message
    refute File.exist?(path)
  end

  # Real data nobody here wrote: iso-codes' languages, records as Hashes.
  def test_build_from_real_records
    iso = "/usr/share/iso-codes/json/iso_639-3.json"
    skip_or_fail("HASHFILE_REQUIRE_DATA_PACKAGES", "install iso-codes (bin/setup --all does)") unless File.exist?(iso)
    skip_in_quick_gc_stress("parses and reads 7,910 real records")
    options = { records_at: "639-3", key_field: "alpha_3", value_field: "*" }
    Hashfile.build_from(iso, path("raw.hf"), **options)
    result = Hashfile.build_from(iso, path("z.hf"), compression: :zstd, **options)
    assert_equal File.size(path("z.hf")), result[:file_bytes]
    expected = JSON.parse(File.read(iso))["639-3"].to_h { |r| [r["alpha_3"], r] }
    Hashfile.open(path("z.hf"), verify: true) do |db|
      assert_equal expected.size, db.size
      expected.each { |k, v| assert_equal v, db[k], k }
      assert_equal "French", db.dig("fra", "name")
    end
    assert_operator File.size(path("z.hf")), :<, File.size(path("raw.hf"))
  end

  def test_datasets_compress_each_shard
    data = catalogue(scale(3_000))
    Hashfile.build_sharded(path("ds"), data, shards: 3, compression: :zstd)
    Hashfile.open(path("ds"), verify: true) do |db|
      data.each { |k, v| assert_same_value v, db[k], k }
    end
    Dir[File.join(path("ds"), "*.hf")].each do |shard|
      Hashfile.open(shard) { |db| assert_operator db.info[:compression][:values], :>, 0, shard }
    end
  end

  def test_the_cli_builds_and_reports_compression
    skip_in_quick_gc_stress("spawns the CLI")
    input = path("in.jsonl")
    File.write(input, catalogue(500).map { |k, v| JSON.generate({ "key" => k, "value" => v.is_a?(String) ? v.encode("UTF-8") : v }) + "\n" }.join)
    exe = File.expand_path("../exe/hashfile", __dir__)
    out, err, status = Open3.capture3(RbConfig.ruby, exe, "build", input, "-o", path("cli.hf"), "--compression", "zstd:5", "-q")
    assert status.success?, err
    assert_empty out
    out, status = Open3.capture2(RbConfig.ruby, exe, "info", path("cli.hf"))
    assert status.success?
    assert_match(/compression\s+zstd level 5: [\d,]+ values, .* \(\d+\.\d\dx, the values alone\); dictionary/, out)
    _, err, status = Open3.capture3(RbConfig.ruby, exe, "build", input, "-o", path("auto.hf"), "--compression", "auto")
    assert status.success?, err
    assert_match(/^compression: zstd levels 3 and 9 \(from 512 bytes\) \(chosen by auto\): [\d,]+ values/, err)
    out, status = Open3.capture2(RbConfig.ruby, exe, "info", path("auto.hf"))
    assert status.success?
    assert_match(/compression\s+zstd levels 3 and 9 \(from 512 bytes\) \(chosen by auto\): [\d,]+ values/, out)
    out, status = Open3.capture2(RbConfig.ruby, exe, "get", path("cli.hf"), "product:1")
    assert status.success?
    assert_equal catalogue(2)["product:1"], out.chomp
    _, err, status = Open3.capture3(RbConfig.ruby, exe, "build", input, "-o", path("bad.hf"), "--compression", "lz4")
    assert_equal 2, status.exitstatus
    assert_match(/invalid option --compression: "lz4" is not a compression/, err)
  end
end
