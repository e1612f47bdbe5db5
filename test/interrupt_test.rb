# frozen_string_literal: true

require "test_helper"
require "rbconfig"

# Interrupts and signals during builds. Found in hardening: an in-process
# Ctrl-C during build_from sometimes published anyway and sometimes left the
# temporary file and a thread blocked forever (#16); SIGINT, SIGTERM and
# SIGHUP to the CLI left the temporary file (#6); Hashfile.build could not
# be interrupted at all (#21).
class InterruptTest < HashfileTest
  EXE = File.expand_path("../exe/hashfile", __dir__)

  def jsonl(lines)
    File.write(path("in.jsonl"), (1..lines).map { |i| %(["k#{i}","v#{i}"]\n) }.join)
    path("in.jsonl")
  end

  def temporary_files
    Dir.glob(File.join(tmpdir, ".*.tmp"))
  end

  # Native build threads of this process (Linux only; 0 elsewhere).
  def build_threads
    Dir.glob("/proc/self/task/*/comm").count { |comm| File.read(comm).start_with?("hashfile-build") }
  rescue SystemCallError
    0
  end

  def test_an_interrupted_build_from_publishes_nothing
    input = jsonl(scale(300_000))
    out = path("out.hf")
    cancelled = 0
    [0.0, 0.01, 0.05, 0.1, 0.2, 0.4].each do |delay|
      File.write(out, "old")
      main = Thread.current
      interrupter = Thread.new { sleep delay; main.raise(Interrupt) }
      returned = false
      begin
        # The Interrupt is taken only where the call blocks (waiting for
        # the build), so one that comes after the build returned waits
        # until `returned` says so, rather than landing in between.
        Thread.handle_interrupt(Interrupt => :on_blocking) do
          Hashfile.build_from(input, out)
          returned = true
        end
        interrupter.kill.join
      rescue Interrupt
        assert_equal "old", File.binread(out), "interrupted at #{delay} s, the build published" unless returned
        cancelled += 1 unless returned
      end
      Hashfile.open(out, &:verify) if returned
      assert_empty temporary_files, "interrupted at #{delay} s"
      assert_equal 0, build_threads, "interrupted at #{delay} s, a build thread is left"
    end
    assert_operator cancelled, :>, 0, "no Interrupt reached a build under way"
  end

  def test_hashfile_build_can_be_interrupted
    # Options no table satisfies: placing runs for a second or more before
    # the build gives up, long enough to interrupt it on the way.
    hopeless = { keys_per_bucket: 10, load_factor: 1.0, dense_key_fraction: 0.0, dense_bucket_fraction: 0.0, keys_per_part: 1 << 20 }
    data = (1..scale(200_000)).to_h { |i| ["k#{i}", "v"] }
    File.write(path, "old")
    main = Thread.current
    interrupter = Thread.new { sleep 0.2; main.raise(Interrupt) }
    assert_raises(Interrupt, ArgumentError) { Hashfile.build(path, data, **hopeless) }
    interrupter.join
    assert_equal "old", File.binread(path)
    assert_empty temporary_files
  end

  def test_hopeless_options_are_refused_quickly_by_name
    data = (1..5_000).to_h { |i| ["k#{i}", "v#{i}"] }
    e = assert_raises(ArgumentError) { Hashfile.build(path, data, dense_key_fraction: 0.99, dense_bucket_fraction: 0.01) }
    assert_match(/\Ainvalid option dense_key_fraction: placing the keys took over 150 times the work the default options take/, e.message)
    assert_match(/lower keys_per_bucket, or bring the two fractions closer/, e.message)
  end

  def test_signals_to_the_cli_leave_no_temporary_file
    skip_or_fail("HASHFILE_REQUIRE_LINUX", "no POSIX signals here") unless Signal.list.key?("HUP")
    input = jsonl(scale(600_000))
    out = path("cli.hf")
    %w[INT TERM HUP].each do |signal|
      File.write(out, "old")
      pid = Process.spawn(*ruby_with_default_signals(EXE, "build", input, "-o", out, "--quiet"), err: path("err.txt"))
      # Once the build has its temporary file, it is under way.
      status, = signal_when(pid, signal) { temporary_files.any? }
      err = File.read(path("err.txt"))
      if status.success?
        Hashfile.open(out, &:verify)
      else
        expected = signal == "INT" ? status.exitstatus == 130 : status.termsig == Signal.list[signal]
        assert expected, "SIG#{signal}: status #{status.inspect}"
        assert_match(/#{Regexp.escape(out)} (was not written|had already been written)/, err)
        assert_equal "old", File.binread(out) if err.include?("was not written")
      end
      assert_empty temporary_files, "SIG#{signal} left a temporary file"
    end
  end
end
