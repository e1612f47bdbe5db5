# frozen_string_literal: true

require "test_helper"
require "open3"

# memory: / --memory: a build whose index data would pass the limit builds
# it part by part from temporary files, into the bytes an unlimited build
# writes (crates/hashfile/tests/spill.rs has the core's cases).
class SpillTest < HashfileTest
  EXE = File.expand_path("../exe/hashfile", __dir__)
  # 16 MiB, the least limit, holds the index data of about 520,000 keys.
  SPILLED = 700_000

  def setup
    super
    skip_in_quick_gc_stress("builds #{SPILLED} entries to go over the least memory limit")
  end

  # Long enough to compress (32 bytes and more), alike enough to shrink.
  def value(i)
    "v#{i * 7}: a steel kettle, in blue or oak"
  end

  def jsonl(lines = SPILLED)
    File.open(path("in.jsonl"), "w") { |f| lines.times { |i| f << %({"key":"user:#{i}","value":"#{value(i)}"}\n) } }
    path("in.jsonl")
  end

  def temporary_files
    Dir.glob(File.join(tmpdir, ".*.tmp"))
  end

  # The temporary files process `pid` has open in the test's directory,
  # from /proc/PID/fd: the store's, named .NAME.hashfile-PID-START-N.tmp,
  # and the spill's, which have no name and show as "DIR/#INODE (deleted)".
  def open_temporary_files(pid)
    dir = File.realpath(tmpdir)
    Dir.glob("/proc/#{pid}/fd/*").filter_map do |fd|
      target = File.readlink(fd)
      target if File.dirname(target) == dir && target.end_with?(".tmp", " (deleted)")
    rescue SystemCallError
      nil # closed since it was listed
    end
  end

  def test_the_default_is_auto
    assert_equal :auto, Hashfile::BUILD_DEFAULTS[:memory]
  end

  def test_build_from_over_the_limit_spills_into_the_bytes_of_an_unlimited_build
    input = jsonl
    spilled = Hashfile.build_from(input, path("spilled.hf"), memory: "16M")
    whole = Hashfile.build_from(input, path("whole.hf"), memory: 64 << 30)
    assert_equal SPILLED, spilled[:entries]
    assert_operator spilled.dig(:spilled, :groups), :>, 1
    assert_operator spilled.dig(:spilled, :temporary_bytes), :>=, SPILLED * 16
    assert_nil whole[:spilled]
    assert File.binread(path("spilled.hf")) == File.binread(path("whole.hf")), "the stores differ"
    Hashfile.open(path("spilled.hf")) do |db|
      db.verify
      assert_equal value(123_456), db["user:123456"]
      assert_nil db["user:-1"]
    end
    assert_empty temporary_files
  end

  def test_a_compressed_build_spills_into_the_same_bytes
    input = jsonl
    spilled = Hashfile.build_from(input, path("spilled.hf"), memory: "16M", compression: :zstd)
    Hashfile.build_from(input, path("whole.hf"), compression: :zstd)
    assert spilled[:spilled]
    assert File.binread(path("spilled.hf")) == File.binread(path("whole.hf")), "the stores differ"
    Hashfile.open(path("spilled.hf")) do |db|
      assert_operator db.info.dig(:compression, :values), :>, 0
      assert_equal value(4242), db["user:4242"]
    end
  end

  def test_a_compact_index_spills_into_the_same_bytes
    input = jsonl
    spilled = Hashfile.build_from(input, path("spilled.hf"), memory: "16M", index: :compact)
    Hashfile.build_from(input, path("whole.hf"), index: :compact)
    assert_operator spilled.dig(:spilled, :groups), :>, 1
    assert File.binread(path("spilled.hf")) == File.binread(path("whole.hf")), "the stores differ"
    Hashfile.open(path("spilled.hf")) do |db|
      db.verify
      assert_equal :compact, db.info[:index]
      assert_equal value(4242), db["user:4242"]
      assert_nil db["user:-1"]
    end
    assert_empty temporary_files
  end

  def test_repeated_keys_first_and_last_spill_into_the_same_bytes
    input = jsonl
    File.open(input, "a") { |f| f << %({"key":"user:42","value":"later"}\n{"key":"user:7","value":"later"}\n) }
    { first: value(42), last: "later" }.each do |policy, kept|
      spilled = Hashfile.build_from(input, path("spilled.hf"), memory: "16M", on_duplicate: policy)
      Hashfile.build_from(input, path("whole.hf"), on_duplicate: policy)
      assert_equal SPILLED, spilled[:entries]
      assert spilled[:spilled], policy
      assert File.binread(path("spilled.hf")) == File.binread(path("whole.hf")), "#{policy}: the stores differ"
      assert_equal kept, Hashfile.open(path("spilled.hf")) { |db| db["user:42"] }
    end
    assert_empty temporary_files
  end

  def test_build_from_a_hash_spills_too
    data = {}
    SPILLED.times { |i| data["k#{i}"] = i }
    Hashfile.build(path("spilled.hf"), data, memory: "16M")
    Hashfile.build(path("whole.hf"), data)
    assert File.binread(path("spilled.hf")) == File.binread(path("whole.hf")), "the stores differ"
    assert_equal 4242, Hashfile.open(path("spilled.hf")) { |db| db["k4242"] }
  end

  # Maps under a repeated key deep-merge, as I18n merges locale files; a
  # later scalar replaces; a later nil changes nothing. The merged value
  # sits at the key's first position, as in an unlimited build.
  def test_on_duplicate_merge_spills_into_the_same_bytes
    input = jsonl
    File.open(input, "a") do |f|
      f << %({"key":"user:42","value":{"en":{"hello":"hi"}}}\n)
      f << %({"key":"user:42","value":{"en":{"bye":"ciao"},"de":{"hello":"hallo"}}}\n)
      f << %({"key":"user:7","value":null}\n)
      f << %({"key":"user:1","value":{"long":"#{"x" * 20_000}"}}\n)
    end
    spilled = Hashfile.build_from(input, path("spilled.hf"), memory: "16M", on_duplicate: :merge)
    whole = Hashfile.build_from(input, path("whole.hf"), on_duplicate: :merge)
    assert spilled[:spilled]
    refute whole[:spilled]
    assert_equal SPILLED, spilled[:entries]
    assert File.binread(path("spilled.hf")) == File.binread(path("whole.hf")), "the stores differ"
    Hashfile.open(path("spilled.hf")) do |db|
      assert_equal({ "en" => { "hello" => "hi", "bye" => "ciao" }, "de" => { "hello" => "hallo" } }, db["user:42"])
      assert_equal value(7), db["user:7"]
      assert_equal 20_000, db["user:1"]["long"].size
      assert_equal %w[user:0 user:1 user:2], db.each_key.first(3)
      db.verify
    end
    assert_empty temporary_files
  end

  def test_bad_limits_are_errors_of_their_own_class
    data = { "k" => "v" }
    e = assert_raises(ArgumentError) { Hashfile.build(path, data, memory: "lots") }
    assert_match(/memory: "lots" is not a size: give bytes, a number with K, M, G or T \(64M\), or auto/, e.message)
    e = assert_raises(ArgumentError) { Hashfile.build(path, data, memory: 1000) }
    assert_match(/memory: 1000 bytes is below the least a build can work in, 16 MiB/, e.message)
    e = assert_raises(ArgumentError) { Hashfile.build(path, data, memory: -1) }
    assert_match(/invalid option memory: must be a size in bytes \(an integer, or text such as "64M" or "auto"\), not -1/, e.message)
    e = assert_raises(TypeError) { Hashfile.build(path, data, memory: 1.5) }
    assert_equal "memory must be a string, not a float", e.message
    # A limit the build stays under changes nothing.
    assert_equal Hashfile.build(path("a.hf"), data), Hashfile.build(path("b.hf"), data, memory: :auto)
    assert_equal File.binread(path("a.hf")), File.binread(path("b.hf"))
  end

  def test_the_cli_reads_standard_input_and_says_it_spilled
    input = jsonl
    out, status = Open3.capture2e(RbConfig.ruby, EXE, "build", "-", "--format", "jsonl", "-o", path("cli.hf"), "--memory", "16M", stdin_data: File.binread(input))
    assert status.success?, out
    assert_match(/wrote #{Regexp.escape(path("cli.hf"))}: 700000 entries/, out)
    assert_match(/the index went over --memory 16M: built in \d+ groups of parts from [\d.]+ MiB of temporary files, since removed/, out)
    Hashfile.build_from(input, path("whole.hf"))
    assert File.binread(path("cli.hf")) == File.binread(path("whole.hf")), "the stores differ"

    out, status = Open3.capture2e(RbConfig.ruby, EXE, "build", input, "-o", path("bad.hf"), "--memory", "2X")
    refute status.success?
    assert_match(/invalid option --memory: "2X" is not a size/, out)
  end

  # SIGTERM and Ctrl-C while the groups are placed: the build stops, and
  # its temporary files (the store's, the groups', the slots') all go.
  def test_signals_while_spilling_leave_no_temporary_file
    skip_or_fail("HASHFILE_REQUIRE_LINUX", "no POSIX signals here") unless Signal.list.key?("TERM")
    input = jsonl(1_500_000)
    out = path("cli.hf")
    caught = 0
    %w[TERM INT].each do |signal|
      File.write(out, "old")
      pid = Process.spawn(*ruby_with_default_signals(EXE, "build", input, "-o", out, "--memory", "16M", "--quiet"), err: path("err.txt"))
      # More than the store's own temporary file: the spill is under way.
      status, spilling = signal_when(pid, signal, timeout: 60) { open_temporary_files(pid).size >= 2 }
      unless status.success?
        caught += 1 if spilling
        assert_equal "old", File.binread(out)
      end
      assert_empty temporary_files, "SIG#{signal} left a temporary file"
    end
    assert_operator caught, :>=, 1, "no signal arrived while the build spilled"
  end

  # SIGKILL while spilling: the spill's files have no name, so none is
  # left; the store's temporary file is, and the next build into the
  # directory removes it.
  def test_sigkill_while_spilling_leaves_only_what_the_next_build_removes
    skip_or_fail("HASHFILE_REQUIRE_LINUX", "no /proc to see the build's open files in") unless File.directory?("/proc/self/fd")
    input = jsonl(1_500_000)
    out = path("cli.hf")
    File.write(out, "old")
    pid = Process.spawn(*ruby_with_default_signals(EXE, "build", input, "-o", out, "--memory", "16M", "--quiet"), err: path("err.txt"))
    open = []
    _, spilling = signal_when(pid, "KILL", timeout: 60) { (open = open_temporary_files(pid)).size >= 3 }
    assert spilling, "the build never spilled"
    assert_equal "old", File.binread(out)
    left = Dir.children(tmpdir) - ["in.jsonl", "cli.hf", "err.txt"]
    assert_equal 1, left.size, "only the store's temporary file (of #{open}) is left: #{left}"
    assert_match(/\A\.cli\.hf\.hashfile-#{pid}-\d+-\d+\.tmp\z/, left.first)
    Hashfile.build(path("next.hf"), { "k" => "v" })
    assert_equal %w[cli.hf err.txt in.jsonl next.hf], Dir.children(tmpdir).sort
  end
end
