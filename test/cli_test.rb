# frozen_string_literal: true

require "test_helper"
require "hashfile/cli"
require "json"
require "open3"
require "stringio"

class CLITest < HashfileTest
  def run_cli(*argv)
    out = StringIO.new
    err = StringIO.new
    status = Hashfile::CLI.new(stdout: out, stderr: err).run(argv)
    [status, out.string, err.string]
  end

  def json_input(data)
    File.write(path("in.json"), JSON.generate(data))
    path("in.json")
  end

  def test_build_get_info_verify
    input = json_input("a" => "1", "b" => "two", "ü" => "ö")
    status, _, err = run_cli("build", input, "-o", path)
    assert_equal 0, status
    assert_match(/wrote .*store.hf: 3 entries/, err)

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
    assert_equal %w[seed_index seeds remap slots records], info["sections"].keys
    assert_equal 4.0, info["parameters"]["keys_per_bucket"]

    status, out, = run_cli("info", path)
    assert_equal 0, status
    assert_match(/entries\s+3/, out)

    assert_equal [0, "#{path}: OK, 3 entries\n", ""], run_cli("verify", path)
  end

  def test_build_options
    input = json_input("a" => "1")
    assert_equal 0, run_cli("build", input, "-o", path, "--keys-per-bucket", "5", "--hash-seed", "3")[0]
    assert_equal 5.0, Hashfile.open(path) { |db| db.info[:parameters][:keys_per_bucket] }
  end

  def test_errors_are_one_line_with_status
    input = json_input("a" => 1)
    status, _, err = run_cli("build", input, "-o", path)
    assert_equal 1, status
    assert_equal "hashfile: #{input}: value for key \"a\" is a number; only strings are supported for now\n", err
    refute File.exist?(path)

    File.write(path("list.json"), "[1]")
    assert_match(/expected a JSON object at the top level, got an array/, run_cli("build", path("list.json"), "-o", path)[2])
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
    bytes.setbyte(bytes.size - 1, bytes.getbyte(bytes.size - 1) ^ 1)
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
    assert_match(/hashfile build INPUT.json -o OUT/, out)
    status, out, = run_cli("get", "--help")
    assert_equal 0, status
    assert_match(/Usage: hashfile get FILE KEY/, out)
    assert_equal [0, "hashfile #{Hashfile::VERSION}\n", ""], run_cli("--version")
  end

  def test_debug_shows_the_exception
    assert_raises(Errno::ENOENT) { run_cli("--debug", "get", path("missing.hf"), "k") }
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
