# frozen_string_literal: true

require_relative "test_helper"
require "json"
require "yaml"
require "msgpack"
require "time"
require "csv"
require "stringio"
require "hashfile/cli"

# Typed and nested values: round trips, importers against Ruby's own
# parsers, dig, decode options, serializers and the depth limit.
class TypedValuesTest < HashfileTest
  ENCODINGS = [Encoding::UTF_8, Encoding::BINARY, Encoding::US_ASCII, Encoding::Shift_JIS, Encoding::UTF_16LE, Encoding::EUC_JP].freeze
  FLOATS = [0.0, -0.0, Float::INFINITY, -Float::INFINITY, Float::NAN, Float::MIN, Float::MAX, Float::EPSILON, 5e-324, 0.1, -1.5e300].freeze

  def random_string(rng)
    bytes = Array.new(rng.rand(0..12)) { rng.rand(0..255) }.pack("C*")
    bytes = Array.new(rng.rand(0..12)) { rng.rand(32..126) }.pack("C*") if rng.rand < 0.5
    bytes.force_encoding(ENCODINGS.sample(random: rng))
  end

  def random_scalar(rng)
    case rng.rand(10)
    when 0 then [nil, true, false].sample(random: rng)
    when 1 then rng.rand(-300..300)
    when 2 then rng.rand(-2**64..2**64)
    when 3 then (rng.rand < 0.5 ? -1 : 1) * rng.rand(2**64..2**200)
    when 4 then FLOATS.sample(random: rng)
    when 5 then [rng.rand(2**64)].pack("Q").unpack1("D")
    when 6 then random_string(rng)
    when 7 then :"sym_#{rng.rand(1000)}"
    when 8 then "ключ_#{rng.rand(100)}".to_sym
    else "plain #{rng.rand(1000)}"
    end
  end

  def random_value(rng, depth)
    return random_scalar(rng) if depth.zero? || rng.rand < 0.35

    if rng.rand < 0.5
      Array.new(rng.rand(0..10)) { random_value(rng, depth - 1) }
    else
      Array.new(rng.rand(0..10)) do
        key = rng.rand < 0.8 ? random_string(rng) : random_scalar(rng)
        [key, random_value(rng, depth - 1)]
      end.to_h
    end
  end

  def test_random_nested_values_round_trip
    seed = Integer(ENV.fetch("HASHFILE_SEED", Random.new_seed % 1_000_000))
    rng = Random.new(seed)
    data = (0...scale(400)).to_h { |i| ["k#{i}", random_value(rng, rng.rand(0..(scale(500) > 5 ? 5 : 3)))] }
    data["deep"] = (1..Hashfile::MAX_DEPTH).reduce(1) { |v, _| [v] }
    data["wide"] = (0...scale(5000)).to_h { |i| ["w#{i}", i.even? ? i : i.to_s] }
    Hashfile.build(path, data)
    Hashfile.open(path, verify: true) do |db|
      data.each { |k, v| assert_same_value(v, db[k], "seed #{seed} key #{k}") }
      assert_equal data.keys, db.keys
    end
  end

  # What JSON.generate makes of a value the way the command line printed
  # it before the core wrote JSON (strings that are UTF-8 as text, DEL and
  # C1 escaped), or nil where JSON cannot hold it.
  def ruby_json(value)
    plain = lambda do |v|
      case v
      when String
        raise TypeError unless [Encoding::UTF_8, Encoding::BINARY, Encoding::US_ASCII].include?(v.encoding)

        text = v.dup.force_encoding(Encoding::UTF_8)
        raise TypeError unless text.valid_encoding?

        text
      when Integer, true, false, nil then v
      when Float then v.finite? ? v : raise(TypeError)
      when Array then v.map(&plain)
      when Hash then v.to_h { |k, x| k.is_a?(String) ? [plain.call(k), plain.call(x)] : raise(TypeError) }
      else raise TypeError
      end
    end
    JSON.generate(plain.call(value)).gsub(/[\u007f-\u009f]/) { |c| format("\\u%04x", c.ord) }
  rescue TypeError
    nil
  end

  def test_the_cores_json_is_what_json_generate_writes_or_a_refusal
    seed = Integer(ENV.fetch("HASHFILE_SEED", Random.new_seed % 1_000_000))
    rng = Random.new(seed)
    data = (0...scale(600)).to_h { |i| ["k#{i}", random_value(rng, rng.rand(0..3))] }
    data["floats"] = [1e20, 1e16, 1e15, 0.0001, 0.00001, 123.456, -2.5e-10, 0.995]
    data["big"] = { "n" => 2**200, "m" => -(2**70) }
    data["controls"] = "tab\t nl\n esc\e del\x7f c1\u0085 quote\" slash/ back\\"
    Hashfile.build(path, data)
    refused = 0
    Hashfile.open(path) do |db|
      data.each_key do |k|
        expected = ruby_json(db[k])
        if expected
          assert_equal expected, db._path_json(k, [], k), "seed #{seed} key #{k}"
        else
          refused += 1
          e = assert_raises(Hashfile::Error, "seed #{seed} key #{k}") { db._path_json(k, [], k) }
          assert_match(/\Avalue for key "#{k}"( at \[.*\])? .*JSON cannot hold/, e.message)
        end
      end
    end
    assert_operator refused, :>, 0, "seed #{seed}: some values JSON cannot hold"
  end

  # Found by the red-team pass: floats with 16 digits before the point and
  # a fraction, and ties between two shortest digit strings, were written
  # otherwise than Float#to_s; a key a JSON object repeats was written
  # twice (the decoded Hash holds it once, with its last value); a value
  # found by --path could nest past MAX_DEPTH counted from the top.
  def test_the_cores_json_matches_json_generate_on_edge_floats_and_repeated_keys
    floats = [1e15 + 0.5, -1e15 - 0.5, 1_234_567_890_123_456.8, 32_921_368_237_543.8125, 833_062_227_115_429.25, 9_007_199_254_740_992.0, 1e15]
    rng = Random.new(11)
    floats += Array.new(scale(2000)) { [rng.bytes(8)].pack("a8").unpack1("E") }.select(&:finite?)
    floats += Array.new(scale(2000)) { rng.rand * 10**rng.rand(-6..18) }
    Hashfile.build(path, { "floats" => floats })
    Hashfile.open(path) { |db| assert_equal JSON.generate(floats), db._path_json("floats", [], "floats") }

    json = path("dup.json")
    File.write(json, '{"k": {"a": 1, "b": 2, "a": 3}}')
    Hashfile.build_from(json, path("dup.hf"))
    Hashfile.open(path("dup.hf")) do |db|
      assert_equal({ "a" => 3, "b" => 2 }, db["k"])
      assert_equal JSON.generate(db["k"]), db._path_json("k", [], "k")
    end
    _, out, = run_cli("dump", path("dup.hf"))
    assert_equal %(["k",{"a":3,"b":2}]\n), out

    deep = (1..Hashfile::MAX_DEPTH).reduce(1) { |v, _| [v] }
    Hashfile.build(path("deep.hf"), { "d" => deep })
    Hashfile.open(path("deep.hf")) do |db|
      assert_equal deep[0], db._path("d", ["0"], "d.0", :missing)
      assert_equal JSON.generate(deep[0]), db._path_json("d", ["0"], "d.0")
    end
  end

  def test_get_path_walks_text_steps_in_the_stored_bytes
    Hashfile.build(path, {
                     "en" => { "greeting" => "hi", :sym => { "n" => [10, 20, 30] }, "both" => "string", :both => "symbol" },
                     "list" => [{ "a" => nil }],
                     "text" => "plain"
                   })
    Hashfile.open(path) do |db|
      assert_equal "hi", db._path("en", ["greeting"], "en.greeting", :missing)
      assert_equal 30, db._path("en", %w[sym n -1], "en.sym.n.-1", :missing)
      assert_equal "string", db._path("en", ["both"], "en.both", :missing), "a String key before a Symbol"
      assert_nil db._path("list", %w[0 a], "list.0.a", :missing), "a stored nil is found"
      assert_equal :missing, db._path("list", %w[1 a], "list.1.a", :missing)
      assert_equal :missing, db._path("list", %w[x], "list.x", :missing), "an array step that is not digits"
      assert_equal :missing, db._path("text", %w[x], "text.x", :missing), "a string has no fields"
      assert_equal :missing, db._path("nope", [], "nope", :missing)
      assert_equal "null", db._path_json("list", %w[0 a], "list.0.a")
      assert_equal '{"n":[10,20,30]}', db._path_json("en", ["sym"], "en.sym")
      assert_nil db._path_json("en", ["zzz"], "en.zzz")
    end
    status, out, = run_cli("get", "--path", "--json", path, "en.sym.n.1", "list.0.a", "en.zzz")
    assert_equal 1, status
    assert_equal %({"en.sym.n.1":20,"list.0.a":null,"en.zzz":null}\n), out
  end

  def test_depth_limit_and_self_reference
    ok = (1..Hashfile::MAX_DEPTH).reduce("x") { |v, _| { "a" => v } }
    Hashfile.build(path, { "ok" => ok })
    assert_equal ok, Hashfile.open(path) { |db| db["ok"] }

    e = assert_raises(ArgumentError) { Hashfile.build(path("b.hf"), { "deep" => [ok] }) }
    assert_match(/\Avalue for key "deep" at \[0, "a", "a", \.\.\.\] nests deeper than 100 levels/, e.message)
    cycle = []
    cycle << cycle
    e = assert_raises(ArgumentError) { Hashfile.build(path("b.hf"), { "cycle" => cycle }) }
    assert_match(/contains itself/, e.message)
    refute File.exist?(path("b.hf"))
  end

  def test_floats_bignums_and_strings_edge_cases
    data = {
      "floats" => FLOATS,
      "nan_payload" => [0x7ff8_dead_beef_0001].pack("Q").unpack1("D"),
      "bignums" => [2**63, -(2**63) - 1, 2**64, -(2**64), 2**1000, -(3**500), 2**63 - 1, -(2**63)],
      "invalid_utf8" => "\xff\xfe ok \xc3".dup.force_encoding(Encoding::UTF_8),
      "nested_invalid" => ["\xe2\x82".dup.force_encoding(Encoding::UTF_8)],
      "sjis" => "日本語".encode(Encoding::Shift_JIS),
      "empty" => ["", [], {}, "".b]
    }
    Hashfile.build(path, data)
    Hashfile.open(path) do |db|
      data.each { |k, v| assert_same_value(v, db[k], k) }
      refute db["invalid_utf8"].valid_encoding?
    end
  end

  # Objects allocated per call of the block, over many calls.
  def allocations(calls = 1000, &block)
    GC.disable
    before = GC.stat(:total_allocated_objects)
    calls.times(&block)
    ((GC.stat(:total_allocated_objects) - before) / calls.to_f).round
  ensure
    GC.enable
  end

  def test_a_string_value_costs_one_allocation
    skip "GC.stress counts differently" if ENV["HASHFILE_GC_STRESS"] == "1"
    Hashfile.build(path, { "s" => "text", "typed" => ["a", 1, 2.5], "sjis" => "日本".encode("Shift_JIS") })
    Hashfile.open(path) do |db|
      db["s"]
      db["typed"]
      assert_equal 1, allocations { db["s"] }
      assert_equal 1, allocations { db["sjis"] }
      assert_equal 2, allocations { db["typed"] } # the Array and its String; 1 and 2.5 are immediates
    end
  end

  # Every byte of the records section damaged in turn: a lookup, dig or
  # iteration gives an error of Hashfile's own classes or some value, and
  # never crashes or raises anything else.
  def test_damaged_typed_records_never_crash
    data = { "cfg" => CONFIG, "sym" => [:a, :"ключ", "x".encode("Shift_JIS").to_sym], "big" => [2**80, -1.5, nil] }
    Hashfile.build(path, data)
    bytes = File.binread(path)
    records = records_range(bytes)
    damaged = path("damaged.hf")
    errors = 0
    # Under GC.stress (every allocation a full GC), a sample of the bytes.
    stress = ENV["HASHFILE_GC_STRESS"] == "1"
    (stress ? [0xff] : [0xff, 0x01, 0x80]).each do |mask|
      records.step(stress ? 29 : 1) do |i|
        copy = bytes.dup
        copy.setbyte(i, copy.getbyte(i) ^ mask)
        File.binwrite(damaged, copy)
        Hashfile.open(damaged) do |db|
          data.each_key do |k|
            db[k]
            db.dig(k, "limits", "api")
          rescue Hashfile::Error, TypeError # TypeError: Hash#dig's own, on a changed value
            errors += 1
          end
          begin
            db.to_h
          rescue Hashfile::Error
            errors += 1
          end
        end
      rescue Hashfile::Error
        errors += 1
      end
    end
    assert_operator errors, :>, stress ? 3 : 100, "damage must be detected, not only survived"
  end

  def test_unsupported_objects_name_the_key_and_the_path
    e = assert_raises(TypeError) { Hashfile.build(path, { "t" => { "when" => [1, Time.at(0)] } }) }
    assert_match(/\Avalue for key "t" at \["when", 1\] is a Time; Hashfile stores nil, true, false, Integer, Float, String, Symbol, Array and Hash \(pass serializer: to store other objects\)\z/, e.message)
    e = assert_raises(TypeError) { Hashfile.build(path, { "r" => 1..2 }) }
    assert_match(/\Avalue for key "r" is a Range/, e.message)
    refute File.exist?(path)
  end

  def test_serializer_stores_other_objects
    data = { "t" => { "when" => [1, Time.at(0).utc] }, "plain" => 5 }
    Hashfile.build(path, data, serializer: Marshal)
    assert_equal data, Hashfile.open(path, serializer: Marshal, &:to_h)
    e = assert_raises(Hashfile::Error) { Hashfile.open(path) { |db| db["t"] } }
    assert_match(/open the store with serializer:/, e.message)
    assert_equal 5, Hashfile.open(path) { |db| db["plain"] }

    pair = [->(o) { o.iso8601 }, ->(s) { Time.iso8601(s) }]
    Hashfile.build(path, { "t" => Time.at(0).utc }, serializer: pair)
    assert_equal Time.at(0).utc, Hashfile.open(path, serializer: pair) { |db| db["t"] }

    e = assert_raises(TypeError) { Hashfile.build(path, { "t" => Time.now }, serializer: [->(_) { 1 }, ->(s) { s }]) }
    assert_match(/dump returned a Integer, not a String/, e.message)
    assert_raises(ArgumentError) { Hashfile.build(path, {}, serializer: Object.new) }
  end

  CONFIG = {
    "max_connections" => 50, "ratio" => 0.75, "enabled" => true, "disabled" => false, "nothing" => nil,
    "regions" => %w[eu us], "limits" => { "api" => { "burst" => 100, "rate" => 2.5 }, "web" => { "burst" => 10 } },
    "matrix" => [[1, 2], [3, 4]], "name" => "prod"
  }.freeze

  def test_dig_walks_like_hash_dig
    Hashfile.build(path, CONFIG)
    Hashfile.open(path) do |db|
      hash = CONFIG
      [
        ["limits", "api", "burst"], ["limits", "api"], ["limits", "nope", "x"], ["regions", 1], ["regions", -1], ["regions", 9],
        ["matrix", 1, 0], ["nothing", "x"], ["missing", "x"], ["name"], ["limits", "web", "burst"]
      ].each do |path|
        expected = hash.dig(*path)
        expected.nil? ? assert_nil(db.dig(*path), path.inspect) : assert_equal(expected, db.dig(*path), path.inspect)
      end
      [["max_connections", 1], ["name", 0], ["regions", "x"], ["limits", "api", "burst", 1]].each do |path|
        expected = assert_raises(TypeError) { hash.dig(*path) }
        got = assert_raises(TypeError) { db.dig(*path) }
        assert_equal expected.message, got.message, path.inspect
      end
    end
  end

  def test_dig_with_symbols_integers_and_repeated_keys
    Hashfile.build(path, { "h" => { 1 => "int", :s => "sym", "s" => "str", 1.5 => "float", nil => "nil" } })
    Hashfile.open(path) do |db|
      assert_equal "int", db.dig("h", 1)
      assert_equal "sym", db.dig("h", :s)
      assert_equal "str", db.dig("h", "s")
      assert_equal "float", db.dig("h", 1.5)
      assert_equal "nil", db.dig("h", nil)
      assert_nil db.dig("h", 2)
    end
    Hashfile.build(path, { "h" => { "a" => { "b" => 1 } } })
    Hashfile.open(path, symbolize_names: true) do |db|
      assert_equal 1, db.dig("h", :a, :b)
      assert_nil db.dig("h", "a")
    end
    # JSON with a repeated key: the last wins, in [] and in dig alike.
    File.write(path("dup.json"), '{"h": {"a": 1, "a": 2}}')
    Hashfile.build_from(path("dup.json"), path)
    Hashfile.open(path) do |db|
      assert_equal JSON.parse(File.read(path("dup.json")))["h"], db["h"]
      assert_equal 2, db.dig("h", "a")
    end
  end

  def test_decode_options
    Hashfile.build(path, CONFIG.merge("s" => "text"))
    Hashfile.open(path, symbolize_names: true) do |db|
      assert_equal({ api: { burst: 100, rate: 2.5 }, web: { burst: 10 } }, db["limits"])
      assert_equal({ "api" => { "burst" => 100, "rate" => 2.5 }, "web" => { "burst" => 10 } }, db.get("limits", symbolize_names: false))
    end
    Hashfile.open(path, freeze: true) do |db|
      value = db["limits"]
      assert value.frozen? && value["api"].frozen?
      assert db["regions"].all?(&:frozen?)
      assert_same(-"eu", db["regions"][0])
      assert_same(-"text", db["s"])
      refute db.get("regions", freeze: false).frozen?
    end
    Hashfile.open(path, raw: true) do |db|
      assert_equal Encoding::BINARY, db["limits"].encoding
      assert_equal "text".b, db["s"]
      assert_equal db["limits"], db.get("limits")
      assert_equal CONFIG["limits"], db.get("limits", raw: false)
    end
    Hashfile.open(path) do |db|
      refute db["s"].frozen?
      assert_raises(ArgumentError) { db.get("s", bogus: true) }
    end
  end

  # Hash keys, and strings under freeze:, are the interned strings (what
  # `-str` returns, as Hash#[]= stores keys), in their own encodings; the
  # extension keeps recent ones in a cache by content (strings.rs), which
  # must hand back that same object after collisions, evictions and a
  # compaction that moves it.
  def test_keys_and_frozen_strings_are_the_interned_strings
    words = Array.new(scale(3000)) { |i| "key #{i} ✓" }
    same_bytes = ["é", "é".b, (+"\xC3\xA9").force_encoding(Encoding::US_ASCII)]
    ascii = ["plan", "plan".b, (+"plan").force_encoding(Encoding::US_ASCII)]
    long = "k" * 65
    config = {
      "words" => words.to_h { |w| [w, w] },
      "utf8" => { same_bytes[0] => 1 }, "binary" => { same_bytes[1] => 2 }, "us-ascii" => { same_bytes[2] => 3 },
      "ascii" => ascii.map { |a| { a => a } }, "long" => { long => long }
    }
    Hashfile.build(path, config)
    check = lambda do |db|
      2.times do
        db["words"].each do |key, value|
          assert_same(-key.dup, key)
          assert_same key, value
        end
      end
      %w[utf8 binary us-ascii].zip(same_bytes).each do |name, text|
        key = db[name].keys.first
        assert_equal text.encoding, key.encoding
        assert_same(-text.dup, key)
      end
      db["ascii"].zip(ascii).each do |map, text|
        key, value = map.first
        assert_equal text.encoding, key.encoding, "an ASCII key keeps its encoding"
        assert_same(-text.dup, key)
        assert_same(-text.dup, value)
      end
      key, value = db["long"].first
      assert_same(-long.dup, key)
      assert_same(key, value)
    end
    Hashfile.open(path, freeze: true) { |db| around_a_compaction { check.call(db) } }
  end

  # Yields, collects and compacts the heap (which moves what the caches
  # hold), then yields again.
  def around_a_compaction
    yield
    GC.start(full_mark: true, immediate_sweep: true)
    GC.compact if GC.respond_to?(:compact)
    yield
  end

  # Symbols (keys under symbolize_names:, and stored Symbols) come from a
  # cache by name too (strings.rs): the same Symbol, whatever was evicted
  # or moved meanwhile, and a name in each encoding its own Symbol.
  def test_symbols_from_the_cache_are_the_symbols_of_their_names
    words = Array.new(scale(3000)) { |i| "key #{i} ✓" }
    stored = [:plan, :"é", "é".b.to_sym, "\xFF".b.to_sym, :"#{"k" * 65}"]
    Hashfile.build(path, { "words" => words.to_h { |w| [w, w.to_sym] }, "stored" => stored })
    check = lambda do |db|
      2.times do
        db.get("words", symbolize_names: true).each do |key, value|
          assert_same key, value
          assert_same key.to_s.to_sym, key
        end
      end
      assert_equal stored, db["stored"]
      assert_equal [Encoding::US_ASCII, Encoding::UTF_8, Encoding::BINARY, Encoding::BINARY], db["stored"].first(4).map(&:encoding)
      refute_same db["stored"][1], db["stored"][2]
    end
    Hashfile.open(path) { |db| around_a_compaction { check.call(db) } }
  end

  def realistic_configs(rng)
    flags = (0...scale(200)).to_h { |i| ["feature_#{i}", { "enabled" => rng.rand < 0.5, "rollout" => rng.rand.round(4), "owners" => %w[a b c].sample(rng.rand(0..3), random: rng) }] }
    i18n = %w[en de fr ja].to_h do |locale|
      [locale, { "greeting" => "hello #{locale} ✓", "errors" => { "messages" => { "blank" => "can't be blank", "too_long" => "is too long (max %{count})" } }, "count" => rng.rand(100) }]
    end
    table = { "prices" => Array.new(scale(100)) { [rng.rand(10_000), rng.rand * 100, "SKU-#{rng.rand(1000)}"] }, "big" => 2**80 + rng.rand(1000), "neg" => -rng.rand(2**40) }
    settings = { "db" => { "pool" => 5, "timeout" => 2.5, "replicas" => [{ "host" => "r1", "port" => 5432 }, { "host" => "r2", "port" => 5433 }] }, "tiny" => 1e-300, "huge" => 1.7976931348623157e308 }
    flags.merge(i18n).merge(table).merge(settings)
  end

  def test_importers_agree_with_json_parse_msgpack_and_the_ruby_build
    skip_in_quick_gc_stress("40 s under GC.stress; the importers, not object lifetimes")
    source = JSON.generate(realistic_configs(Random.new(42)))
    File.write(path("config.json"), source)
    Hashfile.build_from(path("config.json"), path("from_json.hf"))
    parsed = JSON.parse(source)
    Hashfile.build(path("from_ruby.hf"), parsed)
    # MessagePack holds integers up to 64 bits.
    packable = parsed.reject { |k, _| k == "big" }
    File.binwrite(path("config.msgpack"), MessagePack.pack(packable))
    Hashfile.build_from(path("config.msgpack"), path("from_msgpack.hf"))
    { "from_json" => parsed, "from_ruby" => parsed, "from_msgpack" => MessagePack.unpack(File.binread(path("config.msgpack"))) }.each do |name, expected|
      Hashfile.open(path("#{name}.hf")) do |db|
        assert_equal expected.size, db.size
        expected.each { |k, v| assert_same_value(v, db[k], "#{name} #{k}") }
      end
    end
    # One encoding, whichever way in.
    assert_equal File.binread(path("from_json.hf")), File.binread(path("from_ruby.hf"))
  end

  YAML_SOURCE = <<~YAML
    defaults: &defaults
      adapter: postgres
      pool: 5
      timeout: 2.5
    development:
      <<: *defaults
      database: dev
      pool: 10
    merged:
      <<: [{a: 1, b: 1}, {b: 2, c: 2}]
      c: 3
    scalars: [yes, No, on, OFF, true, ~, null, "", '', 42, -17, 1_000, 017, 0x1F, 0b101, 1:30, 1:30.5, 1.5, 1.0e+3, 1e3, 1., .5, .inf, -.inf, 12345678901234567890123, 09, 1.2.3, y, n, abc, "quoted 1", !!str 42, !!float 3, !!binary aGVsbG8=, 'yes']
    sym: :sym
    quoted_sym: :"with space"
    comma: 1,000
    date_like_string: 2024-13-45
    time_like: 12:30:45
    block: |
      block text
    folded: >
      folded
      text
    nested: {list: [1, [2, [3]]], map: {"k": v}}
    anchored_list: &l [1, 2]
    alias: *l
    multi: "line one\\nline two"
    unicode: "clé ✓"
  YAML

  def test_yaml_is_typed_as_psych_safe_load
    skip_in_quick_gc_stress("17 s under GC.stress, most in Psych; the importer, not object lifetimes")
    File.write(path("config.yml"), YAML_SOURCE)
    Hashfile.build_from(path("config.yml"), path)
    expected = YAML.safe_load(YAML_SOURCE, permitted_classes: [Symbol], aliases: true)
    Hashfile.open(path) do |db|
      assert_equal expected.keys, db.keys
      expected.each { |k, v| assert_same_value(v, db[k], k) }
    end
  end

  def test_yaml_dates_are_refused_like_safe_load
    skip_in_quick_gc_stress("9 s under GC.stress, most in Psych; an importer error")
    File.write(path("d.yml"), "a: 1\nwhen: 2024-01-31\n")
    assert_raises(Psych::DisallowedClass) { YAML.safe_load(File.read(path("d.yml"))) }
    e = assert_raises(Hashfile::ParseError) { Hashfile.build_from(path("d.yml"), path) }
    assert_match(/line 2, column 7: value for key "when": "2024-01-31" is a date, which YAML.safe_load refuses; quote it/, e.message)
  end

  def test_dump_writes_typed_values_back_faithfully
    skip_in_quick_gc_stress("54 s under GC.stress; the CLI's JSON, not object lifetimes")
    Hashfile.build(path, CONFIG.merge("big" => 2**100, "negzero" => -0.0))
    _, first, = run_cli("dump", path)
    File.write(path("dump.jsonl"), first)
    assert_equal 0, run_cli("build", path("dump.jsonl"), "-o", path("again.hf"), "-q")[0]
    assert_equal first, run_cli("dump", path("again.hf"))[1]
    Hashfile.open(path("again.hf")) { |db| assert_same_value(-0.0, db["negzero"]) }

    { "nan" => Float::NAN, "sym" => :s, "sjis" => "日本".encode("Shift_JIS"), "intkey" => { 1 => 2 } }.each do |key, value|
      Hashfile.build(path("bad.hf"), { key => [value] })
      status, _, err = run_cli("dump", path("bad.hf"))
      assert_equal 1, status, key
      assert_match(/\Ahashfile: value for key "#{key}" at \[0\]/, err)
      assert_match(/JSON cannot hold/, err)
    end
    Hashfile.build(path("n.hf"), { "n" => 5 })
    status, _, err = run_cli("dump", "--format", "tsv", path("n.hf"))
    assert_equal 1, status
    assert_match(/value for key "n" is a number; tsv holds strings only/, err)
    assert_equal [0, "5\n", ""], run_cli("get", path("n.hf"), "n")
    assert_equal [0, %({"n":5}\n), ""], run_cli("get", "--json", path("n.hf"), "n")
  end
end

class StringFidelityTest < HashfileTest
  # Found in hardening (#17): a US-ASCII String with high bytes came back
  # claiming to be valid ASCII (valid_encoding?, ascii_only?, a different
  # #hash), at the top level and nested. Every string must come back as the
  # same String: encoding, bytes, validity, and so hash and eql?.
  SAMPLES = [
    (+"caf\xC3\xA9").force_encoding("US-ASCII"), "plain".encode("US-ASCII"), (+"\xFF").force_encoding("US-ASCII"),
    "café", (+"bad \xC3(").force_encoding("UTF-8"), "\xFF\xFE".b, "ascii".b,
    (+"\x93\xfa").force_encoding("Shift_JIS"), (+"\x93").force_encoding("Shift_JIS"),
    "é".encode("UTF-16LE"), (+"\xD8\x00").force_encoding("UTF-16LE"), "ü".encode("ISO-8859-1"), "日本".encode("EUC-JP")
  ].freeze

  def same_string(expected, got, where)
    assert_equal [expected.encoding, expected.b, expected.valid_encoding?, expected.ascii_only?, expected.hash],
                 [got.encoding, got.b, got.valid_encoding?, got.ascii_only?, got.hash], "#{where}: #{expected.inspect}"
    assert got.eql?(expected), "#{where}: #{expected.inspect}"
  end

  def test_strings_come_back_as_they_were
    data = {}
    SAMPLES.each_with_index do |s, i|
      data["top#{i}"] = s
      data["nested#{i}"] = [[s]]
      data["key#{i}"] = { s => i }
    end
    Hashfile.build(path, data)
    [{}, { freeze: true }].each do |options|
      Hashfile.open(path, **options) do |db|
        SAMPLES.each_with_index do |s, i|
          same_string(s, db["top#{i}"], "top #{options}")
          same_string(s, db["nested#{i}"][0][0], "nested #{options}")
          same_string(s, db["key#{i}"].keys[0], "Hash key #{options}")
          assert_equal i, db.dig("key#{i}", s), "dig by #{s.inspect}" if s.valid_encoding? || s.encoding == Encoding::BINARY
        end
      end
    end
  end
end
