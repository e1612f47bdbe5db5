# frozen_string_literal: true

require "test_helper"
require "hashfile/cli"
require "json"
require "open3"
require "pty"
require "stringio"

class CLITest < HashfileTest
  # Under GC.stress, two tests that go through every command and every
  # error path: the others repeat the same binding calls with other
  # options, at about a minute each (option parsing allocates heavily).
  STRESSED = %w[test_build_get_info_verify test_errors_are_one_line_with_status].freeze

  def setup
    skip "the CLI's other tests are not run under GC.stress" if ENV["HASHFILE_GC_STRESS"] == "1" && !STRESSED.include?(name)
    super
  end

  def json_input(data)
    File.write(path("in.json"), JSON.generate(data))
    path("in.json")
  end

  def test_a_flag_is_named_in_full_not_by_a_prefix
    File.write(path("x.jsonl"), %(["k", 1]\n))
    status, _, err = run_cli("build", path("x.jsonl"), "--memo", "3", "-o", path("x.hf"))
    assert_equal 2, status, "--memo is not --memory"
    assert_match(/invalid option: --memo \(did you mean --memory\?\)/, err)
    refute File.exist?(path("x.hf"))
    assert_equal 0, run_cli("build", path("x.jsonl"), "--memory", "64M", "-o", path("x.hf"), "-q")[0]
  end

  def test_build_get_info_verify
    input = json_input("a" => "1", "b" => "two", "ü" => "ö")
    status, _, err = run_cli("build", input, "-o", path)
    assert_equal 0, status
    assert_match(/wrote .*store.hf: 3 entries/, err)
    assert_equal [0, "", ""], run_cli("build", input, "-o", path, "--quiet")

    assert_equal [0, "1\ntwo\n", ""], run_cli("get", path, "a", "b")
    assert_equal [0, "ö\n", ""], run_cli("get", path, "ü")
    status, out, err = run_cli("get", path, "a", "zzz")
    assert_equal [1, "1\n"], [status, out]
    assert_match(/key not found: zzz/, err)

    status, out, = run_cli("info", path, "--json")
    assert_equal 0, status
    info = JSON.parse(out)
    assert_equal 3, info["entries"]
    assert_equal File.size(path), info["file_bytes"]
    assert_kind_of Float, info["mphf_bits_per_key"]
    assert_equal "classic", info["index"]
    assert_equal %w[seed_index seeds remap slots records], info["sections"].keys
    assert_equal 3.5, info["parameters"]["keys_per_bucket"]

    assert_equal({ "string" => 3 }, info["value_types"])

    status, out, = run_cli("info", path)
    assert_equal 0, status
    assert_match(/^  entries +3$/, out)
    assert_match(/^  file size +\d+ B \(\d+ bytes\)$/, out)
    assert_match(/^  value types +string 3$/, out)
    assert_match(/^  index +classic, \d+\.\d\d bits\/key \(the seeds and their index: \d+\.\d\d\)$/, out)
    assert_match(/^  build keys_per_bucket +3.5$/, out)
    # Every value starts in the same column.
    assert_equal 1, out.lines.drop(1).map { |l| l[/\A  \S+(?: \S+)*  +/].size }.uniq.size

    assert_equal [0, "#{path}: OK, 3 entries\n", ""], run_cli("verify", path)
  end

  # A dataset (Hashfile.build_sharded) is read by get, dump, verify and
  # info as one store; info lists its shards.
  def test_commands_read_a_dataset
    data = (0...500).to_h { |i| ["k#{i}", "v#{i}"] }
    Hashfile.build_sharded(path("ds"), data, shards: 3)
    assert_equal [0, "v7\nv499\n", ""], run_cli("get", path("ds"), "k7", "k499")
    status, out, = run_cli("dump", path("ds"))
    assert_equal 0, status
    assert_equal data.sort, out.lines.map { |l| JSON.parse(l) }.sort
    assert_equal [0, "#{path("ds")}: OK, 500 entries\n", ""], run_cli("verify", path("ds"))
    status, out, = run_cli("info", path("ds"))
    assert_equal 0, status
    assert_match(/\A#{Regexp.escape(path("ds"))}: hashfile dataset/, out)
    assert_match(/^  entries +500$/, out)
    assert_match(/^  file size .* in 3 shards$/, out)
    assert_equal 3, out.scan(/^  shard \d  \d+ entries, /).size
    info = JSON.parse(run_cli("info", path("ds"), "--json")[1])
    assert_equal [500, 3, { "string" => 500 }], [info["entries"], info["shards"].size, info["value_types"]]
  end

  # build --shards: a dataset from files, its shards built in parallel,
  # read back by every command; --check writes nothing.
  def test_build_shards_writes_a_dataset
    File.write(path("a.csv"), "key,value\n" + (0...400).map { |i| "k#{i},v#{i}\n" }.join)
    File.write(path("b.jsonl"), (400...600).map { |i| %({"key":"k#{i}","value":[#{i}]}\n) }.join)
    status, _, err = run_cli("build", path("a.csv"), path("b.jsonl"), "--shards", "3", "-o", path("ds"))
    assert_equal 0, status, err
    assert_match(/wrote .*ds: 600 entries, \d+ bytes in 3 shards in/, err)
    assert_equal [0, "v7\n[599]\n", ""], run_cli("get", path("ds"), "k7", "k599")
    assert_equal 6, Dir.children(path("ds")).size, "three shards, the manifest, its generation's record and the history"
    Hashfile.open(path("ds")) do |db|
      assert_equal 600, db.size
      assert_equal [[599], "v0"], db.values_at("k599", "k0")
      assert_equal 3, db.info[:shards].size
    end

    status, out, = run_cli("build", path("a.csv"), "--shards", "2", "--check", "-o", path("ds2"))
    assert_equal 0, status
    assert_match(/check: OK, 400 entries/, out)
    refute File.exist?(path("ds2"))

    status, _, err = run_cli("build", path("a.csv"), path("a.csv"), "--shards", "2", "-o", path("ds"))
    assert_equal 1, status
    assert_match(/duplicate key "k\d+" \(.*a.csv: line \d+ and .*a.csv: line \d+\); 399 other keys repeat too/, err)
    assert_equal [0, "v7\n"], run_cli("get", path("ds"), "k7").first(2), "the dataset built before stays"
    assert_match(/invalid option --shards: must be an integer from 1 to 1048576, not 0/, run_cli("build", path("a.csv"), "--shards", "0", "-o", path("ds"))[2])
  end

  # Data that a terminal would act on: a screen clear, an OSC 52 clipboard
  # write, CSI as one UTF-8 character (U+009B), a CR that lets a fake line
  # overwrite the real one, DEL, bytes that are not UTF-8, and a backslash
  # that must not read as an escape.
  HOSTILE = {
    "clear" => "\e[2J\e[Hcleared",
    "clip" => "\e]52;c;cm0gLXJmIH4=\a",
    "csi" => "\u009b31mred",
    "cr" => "ok\rFAKE",
    "del" => "x\x7fy",
    "bin" => "\xff\xfe\e".b,
    "slash" => "a\\e",
    "\e[2Jkey" => "v"
  }.freeze
  # The same on a terminal: every escape in a visible, unambiguous form.
  HOSTILE_SHOWN = {
    "clear" => "\\e[2J\\e[Hcleared",
    "clip" => "\\e]52;c;cm0gLXJmIH4=\\x07",
    "csi" => "\\u{9b}31mred",
    "cr" => "ok\\rFAKE",
    "del" => "x\\x7fy",
    "bin" => "\\xff\\xfe\\e",
    "slash" => "a\\\\e",
    "\e[2Jkey" => "v"
  }.freeze

  # Whether +text+ holds nothing a terminal acts on: no C0 control but a
  # newline (and the CR a terminal adds before it), no DEL, no C1, and
  # nothing that is not UTF-8.
  # A tab too where +tabs+ (TSV's columns).
  def assert_shows_no_controls(text, what, tabs: false)
    shown = text.dup.force_encoding(Encoding::UTF_8)
    assert shown.valid_encoding?, "#{what}: bytes that are not UTF-8 in #{text.inspect}"
    shown = shown.gsub("\r\n", "\n")
    shown = shown.delete("\t") if tabs
    assert_nil shown =~ /[\x00-\x09\x0b-\x1f\x7f\u0080-\u009f]/, "#{what}: a control character in #{text.inspect}"
  end

  def test_escape_forms
    [
      ["plain üñí 日本", "plain üñí 日本", "plain üñí 日本"],
      ["\e[2J", "\\e[2J", "\\e[2J"],
      ["\t\n\r", "\\t\\n\\r", "\\t\\n\\r"],
      ["\x00\a\x1f\x7f", "\\x00\\x07\\x1f\\x7f", "\\x00\\x07\\x1f\\x7f"],
      ["\u0080\u009b\u009f\u00a0", "\\u{80}\\u{9b}\\u{9f}\u00a0", "\\u{80}\\u{9b}\\u{9f}\u00a0"],
      ["\xff\xe2\x82\e".b, "\\xff\\xe2\\x82\\e", "\\xff\\xe2\\x82\\e"],
      ["\xC3\xA9\xff".b, "é\\xff", "é\\xff"],
      ["é".encode("ISO-8859-1"), "\\xe9", "\\xe9"],
      ["a\\e", "a\\\\e", "a\\e"]
    ].each do |raw, data, message|
      assert_equal data, Hashfile::CLI::Terminal.escape(raw), raw.inspect
      assert_equal message, Hashfile::CLI::Terminal.escape(raw, backslash: false), raw.inspect
    end
    # JSON escapes C0 itself; DEL and C1 are escaped too, and read back.
    json = Hashfile::CLI::Terminal.json(["\e[2J\x7f\u009b ü"])
    assert_equal %(["\\u001b[2J\\u007f\\u009b ü"]), json
    assert_equal ["\e[2J\x7f\u009b ü"], JSON.parse(json)
  end

  # Runs the CLI under a pseudo-terminal: what a terminal is sent, with
  # the CR the terminal adds before each newline taken out again.
  def on_terminal(*argv)
    exe = File.expand_path("../exe/hashfile", __dir__)
    output = +""
    status = nil
    PTY.spawn(RbConfig.ruby, exe, *argv) do |reader, _writer, pid|
      loop { output << reader.readpartial(4096) }
    rescue Errno::EIO, EOFError
      # The child closed the terminal: EIO on Linux, EOF elsewhere.
    ensure
      _, status = Process.wait2(pid)
    end
    [status.exitstatus, output.b.gsub("\r\n", "\n")]
  end

  def test_get_and_tsv_escape_on_a_terminal_and_pass_bytes_into_a_pipe
    skip "subprocess under GC.stress is too slow" if ENV["HASHFILE_GC_STRESS"] == "1"
    Hashfile.build(path, HOSTILE)
    keys = HOSTILE.keys - ["\e[2Jkey"]
    exe = File.expand_path("../exe/hashfile", __dir__)

    status, shown = on_terminal("get", path, *keys)
    assert_equal 0, status
    assert_shows_no_controls shown, "get"
    assert_equal keys.map { |k| "#{HOSTILE_SHOWN[k]}\n" }.join, shown
    # Into a pipe, and with --raw on a terminal: the bytes.
    out, err, status = Open3.capture3(RbConfig.ruby, exe, "get", path, *keys, binmode: true)
    assert_equal [0, ""], [status.exitstatus, err]
    assert_equal keys.map { |k| "#{HOSTILE[k]}\n".b }.join, out.b
    status, shown = on_terminal("get", path, "--raw", "clear")
    assert_equal [0, "\e[2J\e[Hcleared\n"], [status, shown]

    status, shown = on_terminal("dump", path, "--format", "tsv")
    assert_equal 0, status
    assert_shows_no_controls shown, "dump --format tsv", tabs: true
    rows = HOSTILE_SHOWN.map { |k, v| "#{k == "\e[2Jkey" ? "\\e[2Jkey" : k}\t#{v}" }
    assert_equal ["key\tvalue", *rows].sort, shown.force_encoding(Encoding::UTF_8).lines(chomp: true).sort

    status, shown = on_terminal("dump", path, "--format", "tsv", "--raw")
    assert_equal 0, status
    assert_includes shown, "\e[2Jkey\tv\n"
    assert_includes shown, "cr\t\"ok\rFAKE\"\n"

    # TSV into a pipe: the bytes, which build back into the same store.
    tsv, status = Open3.capture2(RbConfig.ruby, exe, "dump", path, "--format", "tsv", binmode: true)
    assert status.success?
    assert_includes tsv.b, "ok\rFAKE".b
    _, err, status = Open3.capture3(RbConfig.ruby, exe, "build", "-", "--format", "tsv", "-o", path("again.hf"), "-q", stdin_data: tsv, binmode: true)
    assert status.success?, err
    assert_equal File.binread(path), File.binread(path("again.hf")), "dump --format tsv | build rebuilds the store"

    # A message on a terminal: the key not found, as data.
    status, shown = on_terminal("get", path, "nope\e]52;c;eA==\a")
    assert_equal 1, status
    assert_equal "hashfile: key not found: nope\\e]52;c;eA==\\x07\n", shown
  end

  # JSON escapes C0 itself (ESC is \u001b); the CLI adds DEL and C1. The
  # same bytes on a terminal and in a pipe, and JSON reads them back.
  def test_json_output_escapes_every_control
    skip "subprocess under GC.stress is too slow" if ENV["HASHFILE_GC_STRESS"] == "1"
    data = HOSTILE.reject { |_, v| v.encoding == Encoding::BINARY }
    Hashfile.build(path, data)
    exe = File.expand_path("../exe/hashfile", __dir__)
    status, shown = on_terminal("dump", path)
    assert_equal 0, status
    assert_shows_no_controls shown, "dump"
    assert_includes shown, %(["clear","\\u001b[2J\\u001b[Hcleared"])
    assert_includes shown, %(["csi","\\u009b31mred"])
    assert_includes shown, %(["del","x\\u007fy"])
    piped, = Open3.capture2(RbConfig.ruby, exe, "dump", path)
    assert_equal shown, piped.b, "the same JSON Lines on a terminal and in a pipe"
    assert_equal data.sort, piped.lines.map { |l| JSON.parse(l) }.sort

    status, out, = run_cli("get", path, "csi", "del", "--json")
    assert_equal 0, status
    assert_equal %({"csi":"\\u009b31mred","del":"x\\u007fy"}\n), out
    status, out, = run_cli("dump", path, "--format", "json")
    assert_equal 0, status
    assert_shows_no_controls out, "dump --format json"
    assert_equal data, JSON.parse(out)
    # A value that is not a String prints as JSON, escaped the same way.
    Hashfile.build(path("typed.hf"), { "list" => ["\e[2J", "\u009b"] })
    assert_equal [0, %(["\\u001b[2J","\\u009b"]\n), ""], run_cli("get", path("typed.hf"), "list")
  end

  # Data reaches messages: a key argument, an input's file name in a parse
  # error, a duplicate key, a dataset's directory and a shard its manifest
  # lists, a path in an option error. Every one is escaped on stderr, which
  # a terminal usually shows, whatever stderr is.
  def test_messages_escape_data
    Hashfile.build(path, { "a" => "1" })
    status, _, err = run_cli("get", path, "\e[2J\u009b", "a\\e")
    assert_equal 1, status
    assert_equal "hashfile: key not found: \\e[2J\\u{9b}\nhashfile: key not found: a\\\\e\n", err

    hostile = "in\e[2J\u009b\r.json"
    File.write(path(hostile), %({"a": 1,}))
    status, _, err = run_cli("build", path(hostile), "-o", path("out.hf"))
    assert_equal 1, status
    assert_shows_no_controls err, "a parse error"
    assert_equal "hashfile: #{path("in\\e[2J\\u{9b}\\r.json")}: line 1, column 9: trailing comma\n", err

    File.write(path("dup.csv"), "key,value\n\e[2J\u009b,1\n\e[2J\u009b,2\n")
    status, _, err = run_cli("build", path("dup.csv"), "-o", path("out.hf"))
    assert_equal 1, status
    assert_shows_no_controls err, "a duplicate key"
    assert_match(/\Ahashfile: duplicate key "\\u\{1b\}\[2J\\u\{9b\}"/, err)

    # A dataset whose manifest lists a shard named with escapes: refused,
    # the name quoted; and a dataset in a directory so named.
    Hashfile.build_sharded(path("ds\e[2J"), { "a" => "1", "b" => "2" }, shards: 2)
    manifest = File.join(path("ds\e[2J"), "hashfile-dataset.json")
    listed = JSON.parse(File.read(manifest))
    listed["shards"][0]["file"] = "\e]52;c;eA==\a\u009b.hf"
    File.write(manifest, JSON.generate(listed))
    status, _, err = run_cli("info", path("ds\e[2J"))
    assert_equal 1, status
    assert_shows_no_controls err, "a shard's name"
    assert_includes err, "#{path("ds\\e[2J")}/hashfile-dataset.json"
    assert_includes err, %(shard file "\\u{1b}]52;c;eA==\\u{7}\\u{9b}.hf" is not)
    # A shard's URL is not checked as a name is: it reached the terminal
    # in the error that refuses it (a local manifest lists local shards).
    listed["shards"][0]["file"] = "http://127.0.0.1:1/x\e[2J\u009b\r.hf"
    File.write(manifest, JSON.generate(listed))
    status, _, err = run_cli("info", path("ds\e[2J"))
    assert_equal 1, status
    assert_shows_no_controls err, "a shard's URL"
    assert_includes err, "hashfile: http://127.0.0.1:1/x\\e[2J\\u{9b}\\r.hf: shard 0 of 2"
    assert_includes err, "is remote, and the manifest is a local file"
    File.delete(manifest)
    status, _, err = run_cli("get", path("ds\e[2J"), "a")
    assert_equal 1, status
    assert_shows_no_controls err, "a directory's name"
    assert_includes err, path("ds\\e[2J")

    status, _, err = run_cli("get", "--bogus\e[2J")
    assert_equal 2, status
    assert_shows_no_controls err, "an option error"
    assert_match(/invalid option: --bogus\\e\[2J/, err)

    # --debug: Ruby prints the exception, so its message is escaped first.
    e = assert_raises(Errno::ENOENT) { run_cli("--debug", "get", path("gone\e[2J.hf"), "k") }
    assert_includes e.message, "gone\\e[2J.hf"
  end

  # Reports on stdout (info, verify) name the path given, escaped.
  def test_reports_escape_the_path
    Hashfile.build(path("s\e[2J\u009b.hf"), { "a" => "1" })
    status, out, = run_cli("verify", path("s\e[2J\u009b.hf"))
    assert_equal [0, "#{path("s\\e[2J\\u{9b}.hf")}: OK, 1 entries\n"], [status, out]
    status, out, = run_cli("info", path("s\e[2J\u009b.hf"))
    assert_equal 0, status
    assert_shows_no_controls out, "info"
    assert out.start_with?("#{path("s\\e[2J\\u{9b}.hf")}: hashfile format ")
  end

  def test_sizes_are_human_and_counts_have_commas
    cli = Hashfile::CLI.new
    assert_equal ["0 B", "1023 B", "1.0 KiB", "1.5 MiB", "2.0 GiB"], [0, 1023, 1024, 1_572_864, 2 << 30].map { |b| cli.send(:human_bytes, b) }
    assert_equal ["0", "999", "1,000", "1,234,567", "-1,000"], [0, 999, 1000, 1_234_567, -1000].map { |n| cli.send(:commas, n) }
  end

  def test_get_path_walks_into_nested_values
    Hashfile.build(path, { "en" => { "faker" => { "name" => ["Ann", "Bo"], "n" => 1 }, sym: "s" }, "a.b" => "dotted" })
    assert_equal [0, "Bo\nAnn\n1\ns\n", ""], run_cli("get", path, "--path", "en.faker.name.1", "en.faker.name.-2", "en.faker.n", "en.sym")
    assert_equal [0, "[\"Ann\",\"Bo\"]\n", ""], run_cli("get", path, "--path", "en.faker.name")
    assert_equal [0, "dotted\n", ""], run_cli("get", path, "--path", "--separator", "/", "a.b")
    status, out, err = run_cli("get", path, "--path", "en.faker.name.2", "en.faker.nope", "en.faker.n.deeper", "en.faker.name.x")
    assert_equal [1, ""], [status, out]
    assert_equal %w[en.faker.name.2 en.faker.nope en.faker.n.deeper en.faker.name.x], err.scan(/key not found: (\S+)/).flatten
    # Each says which step found nothing.
    assert_equal ['en.faker.name has no "2"', 'en.faker has no "nope"', 'en.faker.n has no "deeper"', 'en.faker.name has no "x"'],
                 err.scan(/ \((.*)\)$/).flatten
    # A key holding the separator: the message says --path split it.
    assert_equal [1, "", "hashfile: key not found: a.b (the store has the key \"a.b\", but --path splits it at \".\"; " \
                         "--separator gives another)\nhashfile: key not found: nope.x (no key \"nope\")\n"],
                 run_cli("get", path, "--path", "a.b", "nope.x")
    status, out, = run_cli("get", path, "--json", "--path", "en.faker.name.0", "nope.x")
    assert_equal 1, status
    assert_equal({ "en.faker.name.0" => "Ann", "nope.x" => nil }, JSON.parse(out))
  end

  def test_get_json
    Hashfile.build(path, { "a" => "1", "é" => "ü" })
    status, out, err = run_cli("get", path, "a", "é", "nope", "--json")
    assert_equal 1, status
    assert_equal({ "a" => "1", "é" => "ü", "nope" => nil }, JSON.parse(out))
    assert_match(/key not found: nope/, err)
  end

  def test_build_formats_columns_and_duplicates
    File.write(path("in.csv"), "sku,name,price\nA1,apple,1.20\nB2,banana,0.50\nA1,apple,1.25\n")
    status, _, err = run_cli("build", path("in.csv"), "-o", path, "--key-column", "sku", "--value-column", "price")
    assert_equal 1, status
    assert_equal "hashfile: duplicate key \"A1\" (#{path("in.csv")}: line 2 and #{path("in.csv")}: line 4)\n" \
                 "To keep one of them, give --on-duplicate first or last; --merge deep merges nested keys as I18n merges locale files.\n", err
    assert_equal 0, run_cli("build", path("in.csv"), "-o", path, "--key-column", "0", "--value-column", "2", "--on-duplicate", "last", "-q")[0]
    assert_equal [0, "1.25\n0.50\n", ""], run_cli("get", path, "A1", "B2")
    File.write(path("data.txt"), "x")
    status, _, err = run_cli("build", path("data.txt"), "-o", path)
    assert_equal 1, status
    assert_match(/cannot tell the format of .*data.txt from its extension \(.txt is not one hashfile knows\); give the format option \(--format on the command line\), one of: json, json-pairs, jsonl/, err)
    assert_equal 2, run_cli("build", path("in.csv"), "-o", path, "--format", "xml")[0]
  end

  def test_dump_build_dump_is_byte_identical
    data = { "a" => "1", "tab\tkey" => "quote \" and\nnewline", "ünï" => "çødé", "" => "", "z" => "last" }
    Hashfile.build(path("orig.hf"), data)
    %w[jsonl json tsv].each do |format|
      status, first, = run_cli("dump", path("orig.hf"), "--format", format)
      assert_equal 0, status, format
      File.write(path("dump.#{format}"), first)
      build_format = { "jsonl" => "jsonl", "json" => "json", "tsv" => "tsv" }[format]
      assert_equal 0, run_cli("build", path("dump.#{format}"), "-o", path("again.hf"), "--format", build_format, "-q")[0], format
      assert_equal File.binread(path("orig.hf")), File.binread(path("again.hf")), "#{format}: the store is rebuilt identically"
      assert_equal [0, first, ""], run_cli("dump", path("again.hf"), "--format", format), format
    end
    assert_equal %(["a","1"]\n), run_cli("dump", path("orig.hf"))[1].lines.first
  end

  def test_dump_refuses_binary_as_json
    Hashfile.build(path, { "k" => "\xFF".b })
    status, _, err = run_cli("dump", path, "--format", "json")
    assert_equal 1, status
    assert_match(/key "k" has bytes that are not UTF-8, which JSON cannot hold; use --format tsv/, err)
    assert_equal 0, run_cli("dump", path, "--format", "tsv")[0]
  end

  # get has no --format: its hint names what get can do, print the bytes.
  def test_get_json_refuses_binary_with_a_hint_get_takes
    Hashfile.build(path, { "k" => "\xFF".b })
    status, _, err = run_cli("get", path, "k", "--json")
    assert_equal 1, status
    assert_match(/key "k" has bytes that are not UTF-8, which JSON cannot hold; leave out --json to print it$/, err)
    refute_match(/--format/, err)
    assert_equal [0, "\xFF\n".b], run_cli("get", path, "k")[0, 2].then { |st, out| [st, out.b] }
  end

  class FakeTTY < StringIO
    def tty?
      true
    end
  end

  def test_progress_line_on_a_terminal_after_a_second
    io = FakeTTY.new
    line = Hashfile::CLI::ProgressLine.new(io)
    line.call(10, 100, 1000, :reading)
    assert_equal "", io.string, "nothing during the first second"
    line.instance_variable_set(:@started, Process.clock_gettime(Process::CLOCK_MONOTONIC) - 2)
    line.call(500_000, 500, 1000, :reading)
    assert_equal 500, line.instance_variable_get(:@bar).progress
    line.finish
    assert_match(/reading 500000 entries, \d+\/s/, io.string)
    assert_match(/ETA/, io.string)
    quiet = StringIO.new
    silent = Hashfile::CLI::ProgressLine.new(quiet)
    silent.instance_variable_set(:@started, 0)
    silent.call(1, 1, 1, :reading)
    silent.finish
    assert_equal "", quiet.string, "not a terminal: no bar"
  end

  def test_build_options
    input = json_input("a" => "1")
    assert_equal 0, run_cli("build", input, "-o", path, "--keys-per-bucket", "5", "--hash-seed", "3")[0]
    assert_equal 5.0, Hashfile.open(path) { |db| db.info[:parameters][:keys_per_bucket] }
  end

  def test_errors_are_one_line_with_status
    input = path("bad.json")
    File.write(input, %({"a": 1,}))
    status, _, err = run_cli("build", input, "-o", path)
    assert_equal 1, status
    assert_equal "hashfile: #{input}: line 1, column 9: trailing comma\n", err
    refute File.exist?(path)

    File.write(path("list.json"), "[1]")
    assert_match(/list.json: line 1, column \d+: invalid type: integer `1`, expected a \[key, value\] pair/, run_cli("build", path("list.json"), "-o", path)[2])
    File.write(path("broken.json"), "{")
    assert_equal 1, run_cli("build", path("broken.json"), "-o", path)[0]

    status, _, err = run_cli("get", path("missing.hf"), "k")
    assert_equal 1, status
    assert_equal 1, err.lines.size
    assert_match(/No such file or directory/, err)

    File.write(path("junk.hf"), "junk")
    status, _, err = run_cli("verify", path("junk.hf"))
    assert_equal 1, status
    assert_match(/too short for a header/, err)
  end

  def test_verify_reports_damaged_section
    Hashfile.build(path, { "a" => "1", "b" => "2" })
    bytes = File.binread(path)
    last = records_range(bytes).last - 1
    bytes.setbyte(last, bytes.getbyte(last) ^ 1)
    File.binwrite(path, bytes)
    status, _, err = run_cli("verify", path)
    assert_equal 1, status
    assert_match(/checksum mismatch in section records/, err)
  end

  def test_usage_errors
    assert_equal 2, run_cli("frobnicate")[0]
    assert_equal 2, run_cli("build", "x.json")[0]
    assert_equal 2, run_cli("get", "x.hf")[0]
    assert_equal 2, run_cli("info", "--bogus")[0]
    status, out, = run_cli("--help")
    assert_equal 0, status
    assert_match(/hashfile build INPUT... -o OUT/, out)
    status, out, = run_cli("get", "--help")
    assert_equal 0, status
    assert_match(/Usage: hashfile get FILE KEY/, out)
    assert_equal [0, "hashfile #{Hashfile::VERSION}\n", ""], run_cli("--version")
  end

  # An importer's hint names the option as the command line spells it.
  def test_parse_error_hints_name_the_flags
    File.write(path("r.json"), %({"3166-1": [{"alpha_2": "AD"}]}))
    err = run_cli("build", path("r.json"), "-o", path, "--records-at", "3166")[2]
    assert_match(/: --records-at: the top-level object has no field "3166"; its fields are "3166-1"$/, err)
    err = run_cli("build", path("r.json"), "-o", path, "--records-at", "3166-1", "--key-field", "alpha_2")[2]
    assert_match(/missing field "value", the value field \(--value-field names another, or "\*" the whole object\)$/, err)
    err = run_cli("build", path("r.json"), "-o", path, "--records-at", "3166-1", "--key-field", "alpha_3", "--value-field", "*")[2]
    assert_match(/missing field "alpha_3"/, err)
    File.write(path("s.csv"), "a,b\n1\n")
    assert_match(/or the separator \(--col-sep\)$/, run_cli("build", path("s.csv"), "-o", path)[2])
  end

  # A refused --max-value-size is a usage error, named as typed.
  def test_a_bad_max_value_size_is_a_usage_error
    Hashfile.build(path, { "a" => "1" })
    status, _, err = run_cli("get", path, "a", "--max-value-size", "0")
    assert_equal 2, status
    assert_match(/\Ahashfile: invalid option --max-value-size: must be an integer from 1 to \d+, not 0\n/, err)
  end

  # An option of another command names the commands that take it.
  def test_an_option_of_another_command_names_them
    Hashfile.build(path, { "a" => "1" })
    assert_equal [2, "", "hashfile: invalid option: --key-column (an option of build, not of get)\nRun 'hashfile --help' for usage.\n"],
                 run_cli("get", path, "a", "--key-column", "x")
    assert_match(/invalid option: --format \(an option of build and dump, not of info\)$/, run_cli("info", path, "--format", "json")[2])
    assert_match(/invalid option: --shards=3 \(an option of build, not of get\)$/, run_cli("get", path, "a", "--shards=3")[2])
    assert_equal "hashfile: invalid option: --bogus\n", run_cli("get", path, "a", "--bogus")[2].lines.first
  end

  def test_debug_shows_the_exception
    assert_raises(Errno::ENOENT) { run_cli("--debug", "get", path("missing.hf"), "k") }
  end

  # `hashfile dump x.hf | head`: the reader leaving early ends the dump
  # quietly with 0, as cat does.
  def test_dump_into_a_pipe_closed_early_exits_quietly
    Hashfile.build(path, (1..scale(200_000)).to_h { |i| ["k#{i}", i] })
    exe = File.expand_path("../exe/hashfile", __dir__)
    err_path = path("err.txt")
    status = nil
    IO.popen([RbConfig.ruby, exe, "dump", path, { err: err_path }]) do |io|
      assert_equal %(["k1",1]\n), io.gets
      io.close
      status = $?
    end
    assert_equal 0, status.exitstatus
    assert_equal "", File.read(err_path)
  end

  def test_build_from_stdin_in_a_subprocess
    skip "subprocess under GC.stress is too slow" if ENV["HASHFILE_GC_STRESS"] == "1"
    exe = File.expand_path("../exe/hashfile", __dir__)
    out, status = Open3.capture2e(RbConfig.ruby, exe, "build", "-", "-o", path, "--format", "jsonl", stdin_data: %(["k", "v"]\n))
    assert status.success?, out
    _, err, status = Open3.capture3(RbConfig.ruby, exe, "build", "-", "-o", path, stdin_data: "")
    assert_equal 1, status.exitstatus
    assert_match(/cannot tell the format of standard input/, err)
    assert_equal "v", Hashfile.open(path) { |db| db["k"] }
  end

  def test_executable_in_a_subprocess
    skip "subprocess under GC.stress is too slow" if ENV["HASHFILE_GC_STRESS"] == "1"
    input = json_input("k" => "v")
    exe = File.expand_path("../exe/hashfile", __dir__)
    _, status = Open3.capture2e(RbConfig.ruby, exe, "build", input, "-o", path)
    assert status.success?
    out, status = Open3.capture2(RbConfig.ruby, exe, "get", path, "k")
    assert_equal ["v\n", true], [out, status.success?]
    out, err, status = Open3.capture3(RbConfig.ruby, exe, "get", path, "nope")
    assert_equal ["", 1], [out, status.exitstatus]
    refute_match(/from /, err, "no backtrace without --debug")
  end
end
