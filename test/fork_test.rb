# frozen_string_literal: true

require "test_helper"
require "rbconfig"

# Builds in forked children: rayon's global pool has no threads after a
# fork, so a build that used it there waited forever.
class ForkTest < HashfileTest
  CHILD = <<~RUBY
    $LOAD_PATH.unshift(ARGV[2])
    require "hashfile"
    dir = ARGV[0]
    data = (1..Integer(ARGV[3])).to_h { |i| ["k\#{i}", "v\#{i}"] }
    Hashfile.build(File.join(dir, "parent.hf"), data) if ARGV[1] == "built"
    pid = fork do
      Hashfile.build(File.join(dir, "child.hf"), data)
      Hashfile.build_from(File.join(dir, "in.jsonl"), File.join(dir, "child2.hf"))
      ok = Hashfile.open(File.join(dir, "child.hf"), &:size) == data.size &&
           Hashfile.open(File.join(dir, "child2.hf"), &:size) == data.size
      exit!(ok ? 0 : 1)
    end
    Process.wait(pid)
    exit($?.exitstatus)
  RUBY

  def test_builds_work_in_forked_children
    skip_or_fail("HASHFILE_REQUIRE_LINUX", "no fork here") unless Process.respond_to?(:fork)
    entries = scale(140_000)
    File.write(path("in.jsonl"), (1..entries).map { |i| %(["k#{i}","v#{i}"]\n) }.join)
    %w[built fresh].each do |parent|
      # A process group of its own, so that a hung child and grandchild can
      # be killed together.
      pid = Process.spawn(RbConfig.ruby, "-e", CHILD, tmpdir, parent, File.expand_path("../lib", __dir__), entries.to_s, pgroup: true)
      status = wait_for(pid, 60)
      refute_nil status, "a build in a forked child hung (parent #{parent})"
      assert status.success?, "the child's builds failed (parent #{parent})"
    end
  end

  def test_thread_counts_are_checked
    File.write(path("in.jsonl"), %(["k","v"]\n))
    e = assert_raises(ArgumentError) { Hashfile.build_from(path("in.jsonl"), path, threads: -1) }
    assert_match(/\Ainvalid option threads: must be from 1 to \d+/, e.message)
    e = assert_raises(ArgumentError) { Hashfile.build_from(path("in.jsonl"), path, threads: 100_000) }
    assert_match(/not 100000/, e.message)
    assert_equal 1, Hashfile.build_from(path("in.jsonl"), path, threads: 1)[:entries]
  end

  private

  # The process's status, or nil (after killing it) if it ran past `seconds`.
  def wait_for(pid, seconds)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    loop do
      _, status = Process.wait2(pid, Process::WNOHANG)
      return status if status

      if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        Process.kill(:KILL, -pid)
        Process.wait(pid)
        return nil
      end
      sleep 0.05
    end
  end
end
