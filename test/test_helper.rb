# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "hashfile"
require "bitpacking"
require "minitest/autorun"
require "tmpdir"

# HASHFILE_GC_STRESS=1 runs every test body under GC.stress, to catch Ruby
# objects the extension fails to keep alive.
module GCStress
  def setup
    super
    GC.stress = true if ENV["HASHFILE_GC_STRESS"] == "1"
  end

  def teardown
    GC.stress = false
    super
  end
end

class HashfileTest < Minitest::Test
  include GCStress

  # A fresh directory per test, removed afterwards.
  def tmpdir
    @tmpdir ||= Dir.mktmpdir("hashfile-test")
  end

  def teardown
    super
    FileUtils.remove_entry(@tmpdir) if @tmpdir
  end

  def path(name = "store.hf")
    File.join(tmpdir, name)
  end

  # Skips a slow test in CI's GC.stress pass (rake gc_stress), which runs
  # a representative subset; rake gc_stress_all runs it.
  def skip_in_quick_gc_stress(why)
    skip "#{why}: rake gc_stress_all runs it" if ENV["HASHFILE_GC_STRESS"] == "1" && ENV["HASHFILE_GC_STRESS_ALL"] != "1"
  end

  # A test whose environment is missing (MinIO, root, a Debian package,
  # fork): skips, naming +missing+, unless the variable +required_by+ (a
  # HASHFILE_REQUIRE_* name) is 1, when it fails, saying what is missing
  # and which variable required it. .ci/run sets one for each environment
  # it installs (docs/ARCHITECTURE.md, "Checks CI runs", lists them), so
  # CI never counts a test it could not run as passed. The Rust tests
  # (require_env!) and pytest (skip_or_fail in python/tests/conftest.py)
  # follow the same rule.
  def skip_or_fail(required_by, missing)
    flunk "#{missing}, and #{required_by}=1 requires it" if ENV[required_by] == "1"
    skip "#{missing} (#{required_by}=1 makes this a failure)"
  end

  # skip_or_fail for the rest of a test that goes on without it: fails as
  # skip_or_fail does, or says on stderr what was skipped.
  def skip_part_or_fail(required_by, missing)
    flunk "#{missing}, and #{required_by}=1 requires it" if ENV[required_by] == "1"
    warn "SKIP part of #{self.class}##{name}: #{missing} (#{required_by}=1 makes this a failure)"
  end

  # Fewer entries under GC.stress, where every allocation runs a GC.
  def scale(n)
    ENV["HASHFILE_GC_STRESS"] == "1" ? [n / 100, 3].max : n
  end

  # Same value, same types, same encodings, floats bit for bit, Hash keys
  # in order.
  def assert_same_value(expected, actual, where = "value")
    case expected
    when Float
      assert_kind_of Float, actual, where
      assert_equal [expected].pack("G"), [actual].pack("G"), "#{where}: #{expected} vs #{actual}"
    when String
      assert_kind_of String, actual, where
      assert_equal expected.encoding, actual.encoding, where
      assert_equal expected.b, actual.b, where
    when Array
      assert_kind_of Array, actual, where
      assert_equal expected.size, actual.size, where
      expected.each_with_index { |e, i| assert_same_value(e, actual[i], "#{where}[#{i}]") }
    when Hash
      assert_kind_of Hash, actual, where
      assert_equal expected.size, actual.size, where
      # Pairs in order (a NaN key cannot be looked up).
      expected.to_a.zip(actual.to_a).each do |(ek, ev), (ak, av)|
        assert_same_value(ek, ak, "#{where} key")
        assert_same_value(ev, av, "#{where}[#{ek.inspect}]")
      end
    when nil
      assert_nil actual, where
    else
      assert_equal expected.class, actual.class, where
      assert_equal expected, actual, where
    end
  end

  # Ruby code that puts back the handlers Ruby installs by default (INT
  # raises Interrupt, TERM and HUP raise SignalException), for a child
  # process a test sends signals to: whatever this process inherited, as a
  # shell that starts a job in the background leaves SIGINT ignored, the
  # child inherits too, and an ignored signal never arrives.
  DEFAULT_SIGNALS = %w[INT TERM HUP].map { |s| "Signal.trap(#{s.inspect}, \"DEFAULT\"); " }.join

  # The command line that runs the Ruby script +file+ with +args+ under
  # DEFAULT_SIGNALS.
  def ruby_with_default_signals(file, *args)
    [RbConfig.ruby, "-e", "#{DEFAULT_SIGNALS}$0 = ARGV.shift; load $0", file, *args]
  end

  # Waits (up to +timeout+ s) until the block is true or the process +pid+
  # has ended, sends it +signal+ (it may have finished first), and reaps
  # it: [its Process::Status, whether the block had come true].
  def signal_when(pid, signal, timeout: 20)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    sleep 0.001 until (reached = yield) || Process.wait(pid, Process::WNOHANG) || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    begin
      Process.kill(signal, pid)
    rescue Errno::ESRCH
      nil # it finished first
    end
    status = begin
      Process.wait2(pid)[1]
    rescue Errno::ECHILD
      $?
    end
    [status, reached]
  end

  # Runs the CLI in-process: [exit status, stdout, stderr].
  def run_cli(*argv)
    require "hashfile/cli"
    require "stringio"
    out = StringIO.new
    err = StringIO.new
    status = Hashfile::CLI.new(stdout: out, stderr: err).run(argv)
    [status, out.string, err.string]
  end

  # Byte range of the records section of a store's bytes, from the
  # header's section table (docs/FORMAT.md): entries of 32 bytes at 128,
  # `id u32, flags u32, offset u64, length u64, checksum u64`; records is 5.
  def records_range(bytes)
    count = bytes.byteslice(84, 4).unpack1("V")
    count.times do |k|
      id, _, offset, length = bytes.byteslice(128 + 32 * k, 24).unpack("VVQ<Q<")
      return offset...(offset + length) if id == 5
    end
    raise "no records section"
  end

  def build(data, name = "store.hf", **options)
    Hashfile.build(path(name), data, **options)
    path(name)
  end
end
