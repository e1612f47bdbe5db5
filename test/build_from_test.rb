# frozen_string_literal: true

require "test_helper"
require "json"
require "stringio"

class BuildFromTest < HashfileTest
  def write(name, content)
    File.binwrite(path(name), content)
    path(name)
  end

  def test_every_format
    require "msgpack"
    expected = { "clé" => "välue", "" => "empty key", "k" => "" }
    inputs = {
      "in.json" => JSON.generate(expected),
      "pairs.json" => JSON.generate(expected.to_a),
      "in.jsonl" => expected.map { |k, v| JSON.generate([k, v]) }.join("\n"),
      "in.csv" => "key,value\n" + expected.map { |k, v| "\"#{k}\",\"#{v}\"" }.join("\n"),
      "in.tsv" => "key\tvalue\n" + expected.map { |k, v| "#{k}\t#{v}" }.join("\n"),
      "in.msgpack" => MessagePack.pack(expected),
      "in.yaml" => expected.map { |k, v| "#{k.to_json}: #{v.to_json}" }.join("\n")
    }
    inputs.each do |name, content|
      result = Hashfile.build_from(write(name, content), path("#{name}.hf"))
      assert_equal 3, result[:entries], name
      assert_equal File.size(path("#{name}.hf")), result[:file_bytes]
      Hashfile.open(path("#{name}.hf")) do |db|
        assert_equal expected, db.to_h, name
        assert_equal Encoding::UTF_8, db["clé"].encoding, name
      end
    end
  end

  def test_format_option_and_jsonl_fields
    input = write("data.txt", %({"id": "1", "name": "one", "extra": 5}\n))
    Hashfile.build_from(input, path, format: "jsonl", key_field: "id", value_field: "name")
    assert_equal({ "1" => "one" }, Hashfile.open(path, &:to_h))
    assert_raises(ArgumentError) { Hashfile.build_from(input, path, format: "xml") }
    assert_raises(ArgumentError) { Hashfile.build_from(input, path, bogus: 1) }
  end

  def test_csv_without_header_by_index
    Hashfile.build_from(write("x.csv", "a,ignored,1\nb,ignored,2\n"), path, header: false, value_column: 2)
    assert_equal({ "a" => "1", "b" => "2" }, Hashfile.open(path, &:to_h))
  end

  def test_parse_error_names_file_line_and_column
    input = write("bad.jsonl", %(["a", "1"]\n["b", 2,]\n))
    e = assert_raises(Hashfile::ParseError) { Hashfile.build_from(input, path) }
    assert_equal "#{input}: line 2, column 9: trailing comma", e.message
    refute File.exist?(path)
    assert_operator Hashfile::ParseError, :<, Hashfile::Error
  end

  def test_duplicates_policy_and_positions
    a = write("a.jsonl", %(["x", "1"]\n["dup", "2"]\n))
    b = write("b.jsonl", %(["dup", "3"]\n))
    e = assert_raises(Hashfile::DuplicateKeyError) { Hashfile.build_from([a, b], path) }
    assert_equal %(duplicate key "dup" (#{a}: line 2 and #{b}: line 1)), e.message
    assert_equal "dup", e.key
    Hashfile.build_from([a, b], path, on_duplicate: :first)
    assert_equal "2", Hashfile.open(path) { |db| db["dup"] }
    Hashfile.build_from([a, b], path, on_duplicate: "last")
    assert_equal "3", Hashfile.open(path) { |db| db["dup"] }
    assert_raises(ArgumentError) { Hashfile.build_from([a, b], path, on_duplicate: :middle) }
    Hashfile.build(path("h.hf"), [%w[k 1], %w[k 2]], on_duplicate: :first)
    assert_equal "1", Hashfile.open(path("h.hf")) { |db| db["k"] }
  end

  def test_io_inputs
    Hashfile.build_from(StringIO.new(%(["s", "io"]\n)), path, format: "jsonl")
    assert_equal "io", Hashfile.open(path) { |db| db["s"] }
    File.open(write("f.csv", "k,v\nf,file\n")) { |f| Hashfile.build_from(f, path) }
    assert_equal "file", Hashfile.open(path) { |db| db["f"] }
  end

  def test_progress_callable_and_block
    lines = (1..scale(50_000)).map { |i| %(["key#{i}", "value#{i}"]) }.join("\n")
    input = write("big.jsonl", lines)
    reports = []
    Hashfile.build_from(input, path) { |*report| reports << report }
    assert_equal [0, 0, lines.bytesize, :reading], reports.first
    assert_equal [scale(50_000), lines.bytesize, lines.bytesize, :building], reports[-2]
    assert_equal :publishing, reports.last[3]
    calls = 0
    Hashfile.build_from(input, path, progress: ->(*) { calls += 1 })
    assert_operator calls, :>=, 2
  end

  def test_a_raising_progress_callable_cancels_the_build_at_any_phase
    input = write("in.jsonl", %(["a", "1"]\n))
    %i[reading building publishing].each do |phase|
      e = assert_raises(RuntimeError) { Hashfile.build_from(input, path, progress: ->(*, p) { raise "stop" if p == phase }) }
      assert_equal "stop", e.message
      assert_equal ["in.jsonl"], Dir.children(tmpdir), phase
    end
  end

  def test_a_counter_thread_advances_during_a_large_build
    skip "too slow under GC.stress" if ENV["HASHFILE_GC_STRESS"] == "1"
    input = write("big.jsonl", (1..1_000_000).map { |i| %(["key#{i}", "v#{i}"]\n) }.join)
    ticks = 0
    counter = Thread.new { loop { ticks += 1; sleep 0.001 } }
    started = ticks
    Hashfile.build_from(input, path, threads: 2)
    counter.kill
    assert_operator ticks - started, :>, 50, "the counter thread kept running while the build held no GVL"
    assert_equal "v999999", Hashfile.open(path) { |db| db["key999999"] }
  end

  def test_interrupting_a_build_publishes_nothing
    skip "too slow under GC.stress" if ENV["HASHFILE_GC_STRESS"] == "1"
    input = write("big.jsonl", (1..2_000_000).map { |i| %(["key#{i}", "v#{i}"]\n) }.join)
    started = Queue.new
    builder = Thread.new { Hashfile.build_from(input, path, progress: ->(*) { started << true }) }
    builder.report_on_exception = false
    started.pop # the first report: the build is under way (it takes far longer than this)
    builder.raise(Interrupt)
    assert_raises(Interrupt) { builder.join }
    assert_equal ["big.jsonl"], Dir.children(tmpdir)
  end

  def test_sigkill_mid_write_leaves_the_destination_intact
    skip_or_fail("HASHFILE_REQUIRE_LINUX", "no fork") unless Process.respond_to?(:fork)
    skip "too slow under GC.stress" if ENV["HASHFILE_GC_STRESS"] == "1"
    Hashfile.build(path, { "state" => "old" })
    input = write("big.jsonl", (1..2_000_000).map { |i| %(["key#{i}", "#{"v" * 40}#{i}"]\n) }.join)
    [0.05, 0.15, 0.3, 0.6, 1.0].each do |delay|
      pid = fork { Hashfile.build_from(input, path); exit!(0) }
      sleep delay
      Process.kill(:KILL, pid)
      Process.wait(pid)
      Hashfile.open(path) do |db|
        db.verify
        assert_includes ["old", nil], db["state"], "after #{delay}s the destination is the old or a complete new store"
        assert(db["state"] == "old" || db["key2000000"])
      end
    end
    leftovers = Dir.children(tmpdir) - ["store.hf", "big.jsonl"]
    assert leftovers.all? { |f| f.match?(/\A\.store\.hf\.hashfile-\d+-\d+-\d+\.tmp\z/) }, "only recognisable temp files remain: #{leftovers}"
    # Each build removes what the killed ones left in its directory.
    Hashfile.build(path("next.hf"), { "k" => "v" })
    assert_equal %w[big.jsonl next.hf store.hf], Dir.children(tmpdir).sort
  end
end
