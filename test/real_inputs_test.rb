# frozen_string_literal: true

require_relative "test_helper"
require "csv"
require "json"

# The acceptance run of issue 14, kept: real files from Debian packages,
# read as a new user would, each compared with what Ruby's own parser makes
# of the same bytes. With importer_fidelity_test's 318 locale YAML files
# this is every input the issue was tried on: iso-codes JSON (as whole
# documents), IEEE's registries (CSV, whole rows as values), the Unicode
# Character Database (semicolon-separated), a word list, the public suffix
# list and tzdata's tables (plain text lines with comments). Each family
# skips, naming its package, where it is missing; bin/setup installs them.
class RealInputsTest < HashfileTest
  # About data, not object lifetimes: minutes with a GC on every allocation.
  def setup
    super
    skip "not run under GC.stress" if ENV["HASHFILE_GC_STRESS"] == "1"
  end

  def files(pattern, package)
    found = Dir[pattern].sort
    skip_or_fail("HASHFILE_REQUIRE_DATA_PACKAGES", "install #{package} (bin/setup --all does)") if found.empty?
    found
  end

  # Builds `file` with `options` and asserts the store equals `expected`,
  # pair for pair, and in order unless `ordered` is false.
  def assert_builds_equal(expected, file, ordered: true, **options)
    Hashfile.build_from(file, path, **options)
    Hashfile.open(path) do |db|
      assert_equal expected.size, db.size, file
      expected.each { |k, v| assert_same_value(v, db[k], "#{file} #{k.inspect}") }
      keys = db.keys
      assert expected.keys == keys, "#{file}: keys not in input order from #{expected.keys.zip(keys).index { |a, b| a != b }}" if ordered
    end
  end

  def test_iso_codes_json_documents_equal_json_parse
    found = files("/usr/share/iso-codes/json/*.json", "iso-codes")
    found.each { |file| assert_builds_equal(JSON.parse(File.read(file)), file) }
    assert_operator found.size, :>=, 16
  end

  def test_ieee_registries_rows_equal_rubys_csv
    found = files("/usr/share/ieee-data/*.csv", "ieee-data")
    found.each do |file|
      # The registries repeat a few assignments; the last wins, as in #to_h
      # (which keeps the first position, where on_duplicate: :last keeps
      # the last's: so not compared in order).
      expected = CSV.read(file, headers: true).to_h { |row| [row["Assignment"], row.to_h] }
      assert_builds_equal(expected, file, ordered: false, key_column: "Assignment", value_column: "*", on_duplicate: :last)
    end
    assert_operator found.size, :>=, 4
  end

  def test_unicode_data_rows_equal_rubys_csv
    file = files("/usr/share/unicode/UnicodeData.txt", "unicode-data").first
    expected = CSV.read(file, col_sep: ";").to_h { |row| [row[0], row] }
    assert_operator expected.size, :>, 30_000
    assert_builds_equal(expected, file, format: "csv", col_sep: ";", header: false, value_column: "*")
    Hashfile.open(path) { |db| assert_equal "LATIN SMALL LETTER E WITH ACUTE", db["00E9"][1] }
  end

  def test_word_list_lines_are_keys
    file = files("/usr/share/dict/american-english", "wamerican").first
    words = File.readlines(file, chomp: true)
    assert_builds_equal(words.to_h { |w| [w, w] }, file, format: "tsv", header: false, quote: false, value_column: 0)
    # The lines format: the same keys, each with the value true.
    assert_builds_equal(words.to_h { |w| [w, true] }, file, format: "lines")
    status, out, err = run_cli("build", file, "--format", "lines", "-o", path("cli.hf"), "-q")
    assert_equal [0, "", ""], [status, out, err]
    assert_equal [0, "true\n", ""], run_cli("get", path("cli.hf"), words[1000])
  end

  def test_public_suffix_list_rules_are_keys
    file = files("/usr/share/publicsuffix/public_suffix_list.dat", "publicsuffix").first
    rules = File.readlines(file, chomp: true).reject { |l| l.strip.empty? || l.start_with?("//") }
    assert_builds_equal(rules.to_h { |r| [r, r] }, file, format: "tsv", header: false, quote: false, comment: "/", value_column: 0)
  end

  def test_tzdata_tables_rows_equal_rubys_csv
    tables = { "iso3166.tab" => 0, "zone.tab" => 2, "zone1970.tab" => 2 }
    tables.each do |name, key|
      file = files("/usr/share/zoneinfo/#{name}", "tzdata").first
      # Plain tab-separated text: no quoting (NUL, which never occurs, is
      # Ruby's quote character here), # comment lines.
      expected = CSV.read(file, col_sep: "\t", quote_char: "\x00", skip_lines: /\A#/).to_h { |row| [row[key], row] }
      assert_builds_equal(expected, file, format: "tsv", header: false, quote: false, comment: "#", key_column: key, value_column: "*")
    end
    Hashfile.open(path) { |db| assert_equal "FR", db["Europe/Paris"][0].split(",").first }
  end
end
