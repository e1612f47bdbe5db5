# frozen_string_literal: true

require "test_helper"

# What the Ruby layer and the Rust core share: the constants exported from
# Rust, options passed through to it, exception attributes set by
# constructors, and Ruby objects kept by the native objects.
class BindingTest < HashfileTest
  def test_build_defaults_are_what_a_build_without_options_uses
    Hashfile.build(path, { "k" => "v" })
    parameters = Hashfile.open(path, &:info)[:parameters]
    %i[keys_per_bucket load_factor dense_key_fraction dense_bucket_fraction hash_seed seed_block_len].each do |name|
      assert_equal Hashfile::BUILD_DEFAULTS.fetch(name), parameters.fetch(name), name
    end
    assert_equal :error, Hashfile::BUILD_DEFAULTS[:on_duplicate]
    assert_predicate Hashfile::BUILD_DEFAULTS, :frozen?
  end

  def test_an_option_left_out_falls_back_to_the_rust_default
    Hashfile.build(path, { "k" => "v" }, load_factor: 0.9)
    parameters = Hashfile.open(path, &:info)[:parameters]
    assert_in_delta 0.9, parameters[:load_factor]
    assert_equal Hashfile::BUILD_DEFAULTS[:keys_per_bucket], parameters[:keys_per_bucket]
  end

  def test_the_ruby_docs_list_the_build_defaults
    readme = File.read(File.expand_path("../docs/RUBY.md", __dir__))
    listed = Hashfile::BUILD_DEFAULTS.map { |name, value| "`#{name}: #{value.is_a?(Symbol) ? value.inspect : value.to_s.gsub(/(\d)(?=(\d{3})+\z)/, '\1_')}`" }
    listed.each { |option| assert readme.include?(option), "docs/RUBY.md does not list #{option}" }
  end

  def test_each_extension_picks_its_format
    assert_equal %w[json json-pairs jsonl csv tsv msgpack yaml lines], Hashfile::FORMATS
    inputs = { "json" => %({"k": "v"}), "jsonl" => %(["k","v"]\n), "csv" => "key,value\nk,v\n", "tsv" => "key\tvalue\nk\tv\n", "yaml" => "k: v\n" }
    Hashfile::FORMAT_EXTENSIONS.each do |extension, format|
      assert_includes Hashfile::FORMATS, format
      next unless inputs.key?(format)

      input = path("input.#{extension.upcase}")
      File.write(input, inputs[format])
      Hashfile.build_from(input, path)
      assert_equal "v", Hashfile.open(path) { |db| db["k"] }, extension
    end
  end

  def test_keyword_options_are_the_runtimes_table
    # Every option name, type, range and default is the runtime's table
    # (hashfile_runtime::options): the Ruby methods take **options and name
    # none but the callables they call themselves.
    assert_equal [%i[req path], %i[keyrest options], %i[block block]].first(2), Hashfile.method(:open).parameters.first(2)
    assert_equal [%i[req path], %i[opt data], %i[keyrest options]], Hashfile.method(:build).parameters
    assert_empty(Hashfile.method(:build_from).parameters.select { |kind, _| kind == :key })
    # A name given as a String is the same option; given both ways, refused.
    calls = 0
    File.write(path("p.csv"), "k,v\na,1\n")
    Hashfile.build_from(path("p.csv"), path, "progress" => ->(*) { calls += 1 })
    assert_operator calls, :>, 0
    e = assert_raises(ArgumentError) { Hashfile.open(path, memo: 1, "memo" => 2) }
    assert_equal "the option memo is given twice (as a Symbol and as a String?); give it once", e.message
    assert_includes Hashfile::OPTIONS[:open], :verify
    assert_includes Hashfile::OPTIONS[:build_from], :key_column
    assert_includes Hashfile::OPTIONS[:build_from], :progress
    assert_equal Hashfile::OPTIONS[:build].sort, (Hashfile::BUILD_DEFAULTS.keys + %i[shards keep retain note max_entry_change max_type_change refuse_empty force serializer]).sort
  end

  def test_options_are_refused_by_name
    e = assert_raises(ArgumentError) { Hashfile.build(path, {}, hash_seed: -1) }
    assert_match(/\Ainvalid option hash_seed: must be an integer from 0 to/, e.message)
    e = assert_raises(TypeError) { Hashfile.build(path, {}, load_factor: "0.9") }
    assert_equal "load_factor must be a number, not a string", e.message
    e = assert_raises(ArgumentError) { Hashfile.build(path, {}, on_duplicate: :middle) }
    assert_equal "invalid option on_duplicate: must be one of error, first, last, merge, not \"middle\"", e.message
    e = assert_raises(ArgumentError) { Hashfile.build(path, {}, keys_per_bukket: 3) }
    assert_match(/\Aunknown option keys_per_bukket for build \(did you mean keys_per_bucket\?\); it takes: .*keys_per_bucket,/, e.message)
    File.write(path("in.csv"), "a,b\n1,2\n")
    e = assert_raises(ArgumentError) { Hashfile.build_from(path("in.csv"), path, key_column: -1) }
    assert_equal "invalid option key_column: must be a column name or a 0-based index, not -1", e.message
    Hashfile.open(build({ "k" => "v" })) do |db|
      e = assert_raises(ArgumentError) { db.get("k", symbolise_names: true) }
      assert_equal "unknown keyword: :symbolise_names", e.message
      e = assert_raises(ArgumentError) { db.dig("k", symbolise_names: true) }
      assert_equal "unknown option symbolise_names for dig (did you mean symbolize_names?); it takes: symbolize_names, freeze, raw", e.message
      # Judged as open judges them: true or false, and raw has no keys.
      e = assert_raises(TypeError) { db.get("k", raw: 1) }
      assert_equal "raw must be true or false, not an integer", e.message
      e = assert_raises(ArgumentError) { db.dig("k", raw: true, symbolize_names: true) }
      assert_match(/\Ainvalid option symbolize_names: does not apply with raw: true/, e.message)
    end
  end

  def test_a_symbol_names_a_csv_column
    File.write(path("in.csv"), "Code,Name\nx,Ex\n")
    Hashfile.build_from(path("in.csv"), path, key_column: :Code, value_column: :Name)
    assert_equal "Ex", Hashfile.open(path) { |db| db["x"] }
  end

  def test_exception_attributes_come_from_their_constructors
    e = assert_raises(Hashfile::DuplicateKeyError) { Hashfile.build(path, [%w[dup 1], %w[dup 2]]) }
    assert_equal "dup", e.key
    assert_equal "dup", Hashfile::DuplicateKeyError.new("m", key: "dup").key

    File.write(path("bad.jsonl"), %(["a","1"]\n["b", tru]\n))
    e = assert_raises(Hashfile::ParseError) { Hashfile.build_from(path("bad.jsonl"), path) }
    assert_equal [path("bad.jsonl"), 2, 10], [e.input, e.line, e.column]

    good = File.binread(build({ "k" => "v" }, "good.hf"))
    File.binwrite(path("v9.hf"), good.dup.tap { |b| b.setbyte(8, 9) })
    e = assert_raises(Hashfile::UnsupportedError) { Hashfile.open(path("v9.hf")) }
    assert_kind_of Hashfile::FormatError, e
    assert_equal path("v9.hf"), e.path
    assert_match(/unsupported version 9/, e.message)

    damaged = good.dup
    at = records_range(damaged).first
    damaged.setbyte(at, damaged.getbyte(at) ^ 0x40)
    File.binwrite(path("damaged.hf"), damaged)
    e = assert_raises(Hashfile::ChecksumError) { Hashfile.open(path("damaged.hf"), verify: true) }
    assert_equal ["records", path("damaged.hf")], [e.section, e.path]
  end

  def test_native_objects_come_only_from_their_constructors
    [Hashfile::Reader, Hashfile::Writer].each do |klass|
      e = assert_raises(TypeError) { klass.allocate }
      assert_match(/allocator undefined/, e.message)
    end
  end

  def test_serializers_are_kept_alive_by_the_native_objects
    # The callables are referenced by nothing but the writer and the reader
    # when the collector runs (and compacts) before they are called.
    collect = -> { GC.start(full_mark: true, immediate_sweep: true) && GC.respond_to?(:compact) && GC.compact }
    Hashfile.build(path, serializer: [->(t) { Marshal.dump(t) }, ->(s) { Marshal.load(s) }]) do |w|
      collect.call
      w["t"] = Time.at(0).utc
    end
    db = Hashfile.open(path, serializer: [->(t) { Marshal.dump(t) }, ->(s) { Marshal.load(s) }])
    collect.call
    assert_equal Time.at(0).utc, db["t"]
  ensure
    db&.close
  end
end
