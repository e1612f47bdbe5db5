# frozen_string_literal: true

require_relative "test_helper"
require "yaml"
require "csv"
require "json"
require "msgpack"

# The importers against Ruby's own parsers on the same bytes: what Ruby
# reads builds and reads back equal, what Ruby refuses is refused with a
# ParseError naming the line and column. Real data nobody here wrote comes
# from Debian packages (ruby-faker, ruby-doorkeeper-i18n, ruby-devise and
# ruby-actionview locale YAML, IEEE's oui.csv); a test that needs a package
# skips, naming it, where it is missing.
class ImporterFidelityTest < HashfileTest
  # About what the importers read, not object lifetimes: minutes with a GC
  # on every allocation (huge integers, Ruby's CSV and Psych on the same
  # bytes), so not run under GC.stress.
  def setup
    super
    skip "not run under GC.stress" if ENV["HASHFILE_GC_STRESS"] == "1"
  end

  def safe_load(text)
    YAML.safe_load(text, permitted_classes: [Symbol], aliases: true)
  end

  # Builds `text` as a file with extension `ext` and returns the store's
  # contents as a Hash.
  def build_text(text, ext, **options)
    File.binwrite(path("input.#{ext}"), text)
    Hashfile.build_from(path("input.#{ext}"), path, **options)
    Hashfile.open(path, &:to_h)
  end

  YAML_READ_BY_PSYCH = {
    "flow sequence closed at the parent's indent" => "a:\n  b: [\n    \"x\"\n  ]\n",
    "flow sequence closed at column 0" => "a:\n  b: [\n    \"x\"\n]\n",
    "flow mapping closed at column 0" => "a:\n  b: {\n    c: 1\n}\n",
    "flow entries at column 0" => "a:\n  b: [\nx,\ny]\n",
    "a comma starting a line" => "a:\n  b: [ x\n, y ]\n",
    "quoted scalar continued at column 0" => "a:\n  b: \"x\ny\"\n",
    "unknown local tag on an integer" => "a: !custom 5\n",
    "unknown local tag on a word" => "a: !foo bar\n",
    "unknown global tag" => "a: !!python/str x\n",
    "verbatim tag" => "a: !<tag:example.com,2000:x> 5\n",
    "unknown tag on a quoted scalar" => "a: !custom '5'\n",
    "unknown tag on a sequence and a mapping" => "a: !custom [1, 2]\nb: !other {c: 1}\n",
    "a tag shorthand from %TAG" => "%TAG !e! tag:example.com,2000:\n---\na: !e!x 5\n",
    "!!omap" => "a: !!omap\n  - b: 1\n  - c: 2\n",
    "!!pairs" => "a: !!pairs\n  - b: 1\n",
    "!!int on a quoted scalar" => "a: !!int '7'\nb: !!int 0x1f\nc: !!int x\n",
    "!!str, !!float, !!bool, !!null" => "a: !!str 5\nb: !!float 1\nc: !!bool yes\nd: !!null ''\n",
    "!ruby/symbol and !ruby/string" => "a: !ruby/symbol x\nb: !ruby/string y\n",
    "a tagged top-level mapping" => "--- !custom\na: 1\n",
    "a UTF-8 byte-order mark" => "\xEF\xBB\xBFen:\n  hello: Hi\n",
  }.freeze

  def test_yaml_reads_what_psych_reads
    YAML_READ_BY_PSYCH.each do |name, text|
      expected = safe_load(text)
      assert_same_value(expected, build_text(text, "yml"), name)
    end
  end

  YAML_REFUSED_BY_PSYCH = {
    "!!set" => ["a: !!set\n  ? x\n", /line 2, column 3: value for key "a" has tag !!set, a Psych::Set, which YAML.safe_load refuses/],
    "a Ruby object" => ["a: !ruby/object:Foo {}\n", /value for key "a" has tag !ruby\/object:Foo, a Ruby object/],
    "a Regexp" => ["a: !ruby/regexp /x/\n", /line 1, column 17: value for key "a": "\/x\/" has tag !ruby\/regexp/],
    "a tagged date" => ["a: !!timestamp 2020-01-01\n", /has tag !!timestamp, a date or time, which YAML.safe_load refuses; drop the tag and quote it/],
    "a plain date" => ["a: 2020-01-01\n", /is a date, which YAML.safe_load refuses; quote it/],
  }.freeze

  def test_yaml_refuses_what_safe_load_refuses
    YAML_REFUSED_BY_PSYCH.each do |name, (text, message)|
      assert_raises(Psych::Exception, name) { safe_load(text) }
      e = assert_raises(Hashfile::ParseError, name) { build_text(text, "yml") }
      assert_match message, e.message, name
      assert_equal path("input.yml"), e.input
    end
  end

  def test_every_real_locale_file_psych_reads_builds_and_reads_back_equal
    skip "not run under GC.stress: data fidelity, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    files = Dir["/usr/share/rubygems-integration/all/gems/{faker,doorkeeper-i18n,devise,actionview,activesupport}-*/**/{locale,locales}/**/*.yml"].uniq.sort
    skip_or_fail("HASHFILE_REQUIRE_DATA_PACKAGES", "install ruby-faker, ruby-doorkeeper-i18n, ruby-devise and ruby-actionview (bin/setup --all does) for real locale files") if files.size < 100
    files = files.first(scale(files.size)) # a sample under GC.stress
    built = 0
    files.each do |file|
      expected = begin
        safe_load(File.read(file))
      rescue Psych::Exception => e
        e
      end
      if expected.is_a?(Hash) && expected.keys.all?(String)
        Hashfile.build_from(file, path)
        Hashfile.open(path) { |db| assert_same_value(expected, db.to_h, file) }
        built += 1
      elsif expected.is_a?(Exception)
        assert_raises(Hashfile::ParseError, file) { Hashfile.build_from(file, path) }
      end
    end
    assert_operator built, :>=, files.size * 9 / 10, "most real locale files are mappings Psych reads"
  end

  # Deliverable 4 of issue 14: every real locale file of the packages in
  # one store, repeated locales deep-merged, equals what
  # I18n::Backend::Simple loads from the same files in the same order
  # (its translations, keys symbolized as it symbolizes them).
  def test_real_locale_files_merge_as_i18n_backend_simple_merges_them
    require "i18n"
    files = Dir["/usr/share/rubygems-integration/all/gems/{faker,doorkeeper-i18n,devise,actionview,activesupport}-*/**/{locale,locales}/**/*.yml"].uniq.sort
    skip_or_fail("HASHFILE_REQUIRE_DATA_PACKAGES", "install ruby-faker, ruby-doorkeeper-i18n, ruby-devise and ruby-actionview (bin/setup --all does) for real locale files") if files.size < 100
    # I18n reads what Psych reads; locale files have locales as keys.
    files.select! do |file|
      data = safe_load(File.read(file))
      data.is_a?(Hash) && data.keys.all?(String) && data.values.all?(Hash)
    rescue Psych::Exception
      false
    end
    backend = I18n::Backend::Simple.new
    I18n.enforce_available_locales = false
    I18n.load_path = files
    backend.send(:init_translations)
    expected = backend.send(:translations)
    Hashfile.build_from(files, path, on_duplicate: :merge)
    Hashfile.open(path) do |db|
      assert_equal expected.keys.map(&:to_s).sort, db.keys.sort
      expected.each do |locale, tree|
        assert_same_value(tree.to_h, db.get(locale.to_s, symbolize_names: true), "locale #{locale}")
      end
      # The en trees of every package are in one, faker's from its ~170
      # files.
      assert_empty %w[helpers date devise doorkeeper faker] - db.get("en").keys
      assert_operator db.get("en")["faker"].size, :>, 100
    end
    # The same through the CLI, spelled as the issue spells it.
    status, out, err = run_cli("build", *files.first(40), "--merge", "deep", "-q", "-o", path("cli.hf"))
    assert_equal 0, status, err + out
    Hashfile.build_from(files.first(40), path("ruby.hf"), on_duplicate: :merge)
    assert_equal Hashfile.open(path("ruby.hf"), &:to_h), Hashfile.open(path("cli.hf"), &:to_h)
  end

  CSV_READ_BY_RUBY = {
    "quoted separators, doubled quotes" => "k,v\n\"a,b\",\"say \"\"hi\"\"\"\n",
    "line breaks inside quotes" => "k,v\nc,\"two\nlines\"\n",
    "CR LF rows with a CR LF inside quotes" => "k,v\r\nc,\"two\r\nlines\"\r\nd,4\r\n",
    "empty fields and no final line break" => "k,v\nd,\ne,\"\"\nf,last",
  }.freeze

  def test_csv_reads_what_rubys_csv_reads
    CSV_READ_BY_RUBY.each do |name, text|
      expected = CSV.parse(text, headers: true, skip_blanks: true).to_h { |row| [row[0], row[1].to_s] }
      assert_equal expected, build_text(text, "csv"), name
    end
  end

  CSV_REFUSED_BY_RUBY = {
    "an unterminated quote" => ["k\tv\na\t\"unbalanced\nb\tx\nc\ty\n", "tsv", /input.tsv: line 2, column 3: unclosed quoted field/],
    "text after a closing quote" => ["k,v\na,\"bad\"x\n", "csv", /line 2, column 8: 'x' after the closing quote of a field/],
    "a quote inside an unquoted field" => ["k,v\na,a\"b\n", "csv", /line 2, column 4: a quote inside an unquoted field/],
    "a space after a closing quote" => ["k,v\na,\"6\" screen\n", "csv", /line 2, column 6: a space after the closing quote/],
    "an error after CR LF lines" => ["k,v\r\na,1\r\nb,2\r\nc,\"x\r\n", "csv", /line 4, column 3: unclosed quoted field/],
  }.freeze

  def test_csv_refuses_what_rubys_csv_refuses_with_line_and_column
    CSV_REFUSED_BY_RUBY.each do |name, (text, ext, message)|
      assert_raises(CSV::MalformedCSVError, name) { CSV.parse(text, col_sep: ext == "tsv" ? "\t" : ",") }
      e = assert_raises(Hashfile::ParseError, name) { build_text(text, ext) }
      assert_match message, e.message, name
    end
  end

  def test_csv_options_for_what_rfc_4180_does_not_cover
    text = "k\tv\na\t\"unbalanced\nb\t6\" screen\n"
    assert_equal({ "a" => "\"unbalanced", "b" => "6\" screen" }, build_text(text, "tsv", quote: false))
    assert_equal({ "a" => "1", "b" => "2;3" }, build_text("# exported\nk;v\na;1\n\nb;\"2;3\"\n", "csv", col_sep: ";", comment: "#"))
    status, _, err = run_cli("build", path("input.csv"), "-o", path, "-q", "--col-sep", ";", "--comment", "#")
    assert_equal [0, ""], [status, err]
    File.binwrite(path("plain.tsv"), text)
    assert_equal 0, run_cli("build", path("plain.tsv"), "-o", path, "-q", "--lenient")[0]
    assert_equal 1, run_cli("build", path("plain.tsv"), "-o", path, "-q")[0]

    e = assert_raises(ArgumentError) { build_text("k,v\n", "csv", col_sep: "\"") }
    assert_match(/invalid option col_sep: must be one ASCII character other than a quote/, e.message)
    e = assert_raises(ArgumentError) { build_text("k,v\n", "csv", col_sep: ";;") }
    assert_match(/invalid option col_sep: must be one ASCII character, not ";;"/, e.message)
  end

  def test_csv_line_numbers_count_crlf_lines_once
    text = "k,v\r\na,1\r\nb,2\r\na,3\r\n"
    e = assert_raises(Hashfile::DuplicateKeyError) { build_text(text, "csv") }
    assert_match(/input.csv: line 2 and .*input.csv: line 4/, e.message)
  end

  def test_real_crlf_csv_reads_as_rubys_csv_reads_it
    # Ruby's CSV allocates per field: hours with a GC on every allocation.
    skip "not run under GC.stress" if ENV["HASHFILE_GC_STRESS"] == "1"
    oui = "/usr/share/ieee-data/oui.csv"
    skip_or_fail("HASHFILE_REQUIRE_DATA_PACKAGES", "install ieee-data (bin/setup --all does) for IEEE's oui.csv") unless File.exist?(oui)
    expected = CSV.read(oui, headers: true).to_h { |row| [row["Assignment"], row["Organization Name"]] }
    # oui.csv repeats a few assignments; the last wins, as in #to_h.
    Hashfile.build_from(oui, path, key_column: "Assignment", value_column: "Organization Name", on_duplicate: :last)
    Hashfile.open(path) do |db|
      assert_equal expected.size, db.size
      expected.first(scale(expected.size)).each { |k, v| assert_equal v, db[k], k }
    end
    assert_includes File.binread(oui, 200), "\r\n", "oui.csv is a CR LF file"
  end

  # Deliverable 3 of issue 14: whole rows as values, against Ruby's CSV.
  def test_real_csv_rows_as_values_equal_rubys_csv_row_to_h
    oui = "/usr/share/ieee-data/oui.csv"
    skip_or_fail("HASHFILE_REQUIRE_DATA_PACKAGES", "install ieee-data (bin/setup --all does) for IEEE's oui.csv") unless File.exist?(oui)
    expected = CSV.read(oui, headers: true).to_h { |row| [row["Assignment"], row.to_h] }
    Hashfile.build_from(oui, path, key_column: "Assignment", value_column: "*", on_duplicate: :last)
    Hashfile.open(path) do |db|
      assert_equal expected.size, db.size
      expected.each { |k, row| assert_same_value(row, db[k], k) }
      assert_equal "CONRAD CORP.", db["0001C8"]["Organization Name"]
    end
    # Without a header row, the row is the Array of its fields.
    text = "a,,\"\",x\r\nb\r\n"
    assert_equal CSV.parse(text).to_h { |r| [r[0], r] }, build_text(text, "csv", header: false, value_column: "*")
  end

  # Deliverable 3 of issue 14: the iso-codes JSON files, `{"3166-1": [{...},
  # ...]}`, keyed by each field whose values are unique strings, the whole
  # object as the value, equal to JSON.parse's elements; and by a field
  # with another field as the value.
  def test_iso_codes_arrays_keyed_by_each_unique_field_equal_json_parse
    files = Dir["/usr/share/iso-codes/json/iso_*.json"].sort
    skip_or_fail("HASHFILE_REQUIRE_DATA_PACKAGES", "install iso-codes (bin/setup --all does) for its JSON files") if files.empty?
    builds = 0
    files.each do |file|
      JSON.parse(File.read(file)).each do |records_at, records|
        fields = records.flat_map(&:keys).uniq.select do |f|
          values = records.map { |r| r[f] }
          values.all?(String) && values.uniq.size == values.size
        end
        fields.each do |field|
          Hashfile.build_from(file, path, records_at: records_at, key_field: field, value_field: "*")
          Hashfile.open(path) do |db|
            assert_equal records.size, db.size, "#{file} by #{field}"
            records.each { |r| assert_same_value(r, db[r[field]], "#{file} #{field}=#{r[field]}") }
          end
          builds += 1
        end
      end
    end
    assert_operator builds, :>=, 15
    Hashfile.build_from(files.grep(/3166-1/).first, path, records_at: "3166-1", key_field: "alpha_3", value_field: "name")
    Hashfile.open(path) { |db| assert_equal "France", db["FRA"] }
  end

  def test_byte_order_marks
    assert_equal({ "en" => 1 }, build_text("\xEF\xBB\xBF{\"en\": 1}", "json"))
    assert_equal({ "en" => "1" }, build_text("\xEF\xBB\xBFk,v\nen,1\n", "csv"))
    { "json" => "{\"a\": 1}", "yml" => "a: 1\n", "jsonl" => "[\"a\", 1]\n" }.each do |ext, text|
      %w[UTF-16LE UTF-16BE].each do |encoding|
        e = assert_raises(Hashfile::ParseError) { build_text("\uFEFF#{text}".encode(encoding).b, ext) }
        assert_match(/line 1: the input is #{encoding} text; hashfile reads UTF-8: convert it first \(iconv -f #{encoding} -t UTF-8\)/, e.message)
      end
    end
  end

  def test_msgpack_refuses_extra_bytes_as_msgpack_ruby_does
    text = { "a" => 1 }.to_msgpack + { "b" => 2 }.to_msgpack
    assert_raises(MessagePack::MalformedFormatError) { MessagePack.unpack(text) }
    e = assert_raises(Hashfile::ParseError) { build_text(text, "msgpack") }
    assert_match(/extra bytes after the top-level map \(1 entry\); the input must be exactly one map/, e.message)
  end

  def test_huge_integers_are_refused_quickly_with_the_limit_named
    digits = "1" * 1_000_000
    { "json" => "{\"n\": #{digits}}", "yml" => "n: 0b#{digits}\n" }.each do |ext, text|
      e = assert_raises(Hashfile::ParseError) { build_text(text, ext) }
      assert_match(/is an integer of 1000000 digits, over the limit of 100000 \(store it as a string\)/, e.message)
    end
    assert_equal 100_000, Hashfile::MAX_INTEGER_DIGITS
    assert_equal({ "n" => 10**99_999 }, build_text("{\"n\": 1#{"0" * 99_999}}", "json"))
  end
end
