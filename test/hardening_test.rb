# frozen_string_literal: true

require_relative "test_helper"
require "socket"
require "stringio"

# Outputs a build must not replace, arguments of the wrong kind, and the
# smaller findings of the hardening issue: each with what it used to do in
# the test's name or comment, and the message that now tells the user what
# to do.
class HardeningTest < HashfileTest
  # Mostly the CLI and messages, not object lifetimes, and minutes with a
  # GC on every allocation; the Symbol conversions still run under GC.stress.
  def setup
    super
    skip "not run under GC.stress" if ENV["HASHFILE_GC_STRESS"] == "1" && name != "test_symbols_in_any_encoding"
  end

  def write_input(name = "in.json", text = "{\"a\": 1}")
    File.write(path(name), text)
    path(name)
  end

  def test_output_that_is_not_a_regular_file_is_refused
    input = write_input
    Dir.mkdir(path("dir"))
    File.mkfifo(path("fifo"))
    socket = UNIXServer.new(path("socket"))
    File.symlink(path("fifo"), path("link-to-fifo"))
    {
      path("dir") => /dir is a directory; a store replaces only a regular file/,
      path("fifo") => /fifo is a FIFO; a store replaces only a regular file/,
      path("socket") => /socket is a socket/,
      path("link-to-fifo") => /fifo \(where the link .*link-to-fifo leads\) is a FIFO/,
      path("new-dir/") => /new-dir\/ ends with \/, so it names a directory/,
    }.each do |output, message|
      before = File.lstat(output.chomp("/")).ftype rescue nil # rubocop:disable Style/RescueModifier
      status, _, err = run_cli("build", input, "-o", output, "-q")
      assert_equal 1, status, output
      assert_match message, err, output
      e = assert_raises(ArgumentError, output) { Hashfile.build(output, { "a" => 1 }) }
      assert_match message, e.message
      after = File.lstat(output.chomp("/")).ftype rescue nil # rubocop:disable Style/RescueModifier
      before.nil? ? assert_nil(after, output) : assert_equal(before, after, "#{output} is untouched")
    end
    assert_empty Dir.children(tmpdir).grep(/\.tmp\z/)
  ensure
    socket&.close
  end

  def test_a_device_node_is_never_replaced
    skip_or_fail("HASHFILE_REQUIRE_ROOT", "mknod needs root") unless Process.uid.zero?
    assert system("mknod", path("null"), "c", "1", "3"), "mknod"
    status, _, err = run_cli("build", write_input, "-o", path("null"), "-q")
    assert_equal [1, true], [status, File.chardev?(path("null"))]
    assert_match(/null is a device; a store replaces only a regular file/, err)
  end

  def test_a_symbolic_link_is_written_through
    File.symlink("release-7.hf", path("current.hf"))
    assert_equal 0, run_cli("build", write_input, "-o", path("current.hf"), "-q")[0]
    assert File.symlink?(path("current.hf")), "the link stays a link"
    assert_equal({ "a" => 1 }, Hashfile.open(path("release-7.hf"), &:to_h))
  end

  def test_the_output_naming_an_input_needs_force
    input = write_input
    status, _, err = run_cli("build", input, "-o", input, "-q")
    assert_equal 2, status
    assert_match(/the output .*in.json is the input .*in.json; write the store elsewhere, or pass --force/, err)
    assert_equal "{\"a\": 1}", File.read(input)
    assert_equal 0, run_cli("build", input, "-o", input, "-q", "--force")[0]
    assert_equal({ "a" => 1 }, Hashfile.open(input, &:to_h))
  end

  def test_check_builds_and_writes_nothing
    input = write_input("in.json", "{\"a\": 1, \"b\": [1, 2]}")
    status, out, = run_cli("build", input, "--check", "-o", path("out.hf"), "-q")
    assert_equal 0, status
    assert_match(/\Acheck: OK, 2 entries, \d+ bytes, built in [\d.]+ s; .*out.hf \(not written\)\n\z/, out)
    refute File.exist?(path("out.hf"))
    Dir.mkdir(path("out-dir"))
    status, out, = run_cli("build", input, "--check", "-o", path("out-dir"), "-q")
    assert_equal 1, status
    assert_match(/check: but a build would refuse the output: .*out-dir is a directory; a store replaces only a regular file/, out)
    File.write(path("bad.json"), "{\"a\": 1, \"a\": 2}")
    status, _, err = run_cli("build", path("bad.json"), "--check", "-q")
    assert_equal 1, status
    assert_match(/duplicate key "a"/, err)
  end

  def test_get_takes_a_key_that_is_not_utf8
    Hashfile.build(path, { "\xFF".b => "binary", "k" => "v" })
    assert_equal [0, "binary\n", ""], run_cli("get", path, "\xFF".dup.force_encoding("UTF-8"))
  end

  def test_a_dump_that_fails_writes_nothing
    Hashfile.build(path, { "a" => "1", "b" => "2", "\xFF".b => "3" })
    status, out, err = run_cli("dump", path)
    assert_equal [1, ""], [status, out]
    assert_equal "hashfile: key \"\\xFF\" has bytes that are not UTF-8, which JSON cannot hold; use --format tsv\n", err
    Hashfile.build(path, { "a" => "1", "n" => 5 })
    status, out, err = run_cli("dump", "--format", "tsv", path)
    assert_equal [1, ""], [status, out]
    assert_match(/value for key "n" is a number; tsv holds strings only/, err)
  end

  def test_duplicates_name_the_first_repeat_and_count_the_others
    File.write(path("d.csv"), "k,v\nb,1\na,1\nc,1\na,2\nb,2\nb,3\nd,1\nd,2\n")
    e = assert_raises(Hashfile::DuplicateKeyError) { Hashfile.build_from(path("d.csv"), path) }
    assert_equal ["a", 2], [e.key, e.others]
    assert_match(/duplicate key "a" \(.*d.csv: line 3 and .*d.csv: line 5\); 2 other keys repeat too\z/, e.message)
    e = assert_raises(Hashfile::DuplicateKeyError) { Hashfile.build(path, [["x", 1], ["y", 1], ["x", 2]]) }
    assert_equal ["x", 0, "duplicate key \"x\""], [e.key, e.others, e.message]
  end

  def test_inputs_and_stores_that_are_directories
    Dir.mkdir(path("data"))
    status, _, err = run_cli("build", path("data"), "-o", path, "-q")
    assert_equal 1, status
    assert_match(/data is a directory; give the data files in it \(say .*data\/\*.json\)/, err)
    status, _, err = run_cli("verify", path("data"))
    assert_equal 1, status
    # A directory is read as a dataset, and this one has no manifest.
    assert_match(/data has no hashfile-dataset.json/, err)
    assert_raises(Hashfile::DatasetError) { Hashfile.open(path("data")) }
  end

  def test_unknown_extensions_name_the_format_option
    File.write(path("data.txt"), "{}")
    status, _, err = run_cli("build", path("data.txt"), "-o", path, "-q")
    assert_equal 1, status
    assert_match(/cannot tell the format of .*data.txt from its extension \(.txt is not one hashfile knows\); give the format option \(--format on the command line\), one of: json,/, err)
    e = assert_raises(ArgumentError) { Hashfile.build_from(StringIO.new("{}"), path) }
    assert_match(/an IO input \(StringIO\) needs format: \(one of json,/, e.message)
    assert_equal({ "a" => 1 }, Hashfile.build_from(StringIO.new("{\"a\": 1}"), path, format: "json") && Hashfile.open(path, &:to_h))
  end

  def test_arguments_of_the_wrong_kind_name_themselves
    assert_match(/expected a path \(String or Pathname\), not nil/, assert_raises(TypeError) { Hashfile.open(nil) }.message)
    assert_match(/expected a path \(String or Pathname\), not nil/, assert_raises(TypeError) { Hashfile.build(nil, { "a" => 1 }) }.message)
    input = write_input
    [-1, 0, 100_000].each do |n|
      e = assert_raises(ArgumentError) { Hashfile.build_from(input, path, threads: n) }
      assert_match(/invalid option threads: must be from 1 to \d+ \(4 per core, at least 16\), not #{n}\z/, e.message)
      status, _, err = run_cli("build", input, "-o", path, "-q", "--threads", n.to_s)
      assert_equal 2, status, "an option given on the command line and refused is a usage error"
      assert_match(/not #{n}\n/, err)
    end
    assert_match(/invalid option hash_seed: must be an integer from 0/, assert_raises(ArgumentError) { Hashfile.build(path, {}, hash_seed: -1) }.message)
    assert_match(/invalid option key_column: must be a column name or a 0-based index, not -1/, assert_raises(ArgumentError) { Hashfile.build_from(write_input("a.csv", "k,v\n"), path, key_column: -1) }.message)
  end

  def test_a_sequence_as_a_yaml_key_is_named_as_such
    e = assert_raises(Hashfile::ParseError) { Hashfile.build_from(write_input("q.yml", "? [1]\n: 2\n"), path) }
    assert_match(/line 1, column 3: key is a sequence; store keys must be strings/, e.message)
  end

  def test_symbols_in_any_encoding
    symbols = ["caf\xE9".dup.force_encoding("ISO-8859-1").to_sym, "日本".encode("Shift_JIS").to_sym, "ab".encode("UTF-16LE").to_sym, "\xFF".b.to_sym, :plain]
    Hashfile.build(path, { "h" => symbols.each_with_index.to_h })
    Hashfile.open(path) do |db|
      symbols.each_with_index do |symbol, i|
        assert_equal i, db["h"][symbol], symbol.inspect
        assert_equal i, db.dig("h", symbol), symbol.inspect
      end
    end
    # A binary Symbol as a store key is stored by its bytes, and found by them.
    Hashfile.build(path, { "\xFF".b.to_sym => 1 })
    Hashfile.open(path) { |db| assert_equal [1, 1], [db["\xFF".b.to_sym], db["\xFF".b]] }
    e = assert_raises(ArgumentError) { Hashfile.build(path, { "caf\xE9".dup.force_encoding("ISO-8859-1").to_sym => 1 }) }
    assert_equal "key \"caf\\xE9\" has encoding ISO-8859-1; keys must be UTF-8, US-ASCII or ASCII-8BIT", e.message
  end

  # Hashfile.build(path, hash) encodes the Hash in C without the GVL
  # released; it now lets other threads run every few thousand entries.
  def test_other_threads_run_while_a_hash_is_encoded
    data = (1..400_000).to_h { |i| ["key#{i}", i] }
    ticks = 0
    ticker = Thread.new { loop { ticks += 1; Thread.pass } }
    Thread.pass until ticks.positive?
    writer = Hashfile::Writer._new({}, nil)
    before = ticks
    writer.merge(data)
    during = ticks - before
    ticker.kill.join
    assert_operator during, :>=, 10, "the ticker thread ran while #{data.size} entries were encoded"
    assert_equal data.size, writer.size
  end
end
