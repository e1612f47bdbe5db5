# frozen_string_literal: true

require "test_helper"
require "support/servers"

# Readers under load while a dataset is rolled back and forth: every batch
# a reader looks up (keys of every shard at once) comes from one
# generation, never a mix, in threads, in forked children, and over HTTP
# from nginx; and each reader ends on the generation made current last.
class RollbackTest < HashfileTest
  KEYS = (0...400).map { |i| "key-#{i}" }.freeze
  ROLLBACKS = 30

  def setup
    skip "rollbacks under load, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    super
  end

  # Publishes generations "one" and "two" of 8 shards at +dir+: every
  # value is its generation's name.
  def two_generations(dir)
    %w[one two].each { |tag| Hashfile.build_sharded(dir, KEYS.to_h { |k| [k, tag] }, shards: 8, note: tag) }
  end

  # Looks up every key in one batch until +stop+ says so; returns the
  # generations seen, each batch checked to be of one.
  def read_until(db, stop)
    seen = []
    until stop.call
      values = db.values_at(*KEYS)
      tags = values.uniq
      raise "a batch mixed generations: #{tags.inspect}" unless tags.size == 1

      seen << tags.first if seen.last != tags.first
    end
    seen
  end

  # Rolls back and forth ROLLBACKS times: to "one", to "two", to "one",
  # ... (by name: a rollback without one goes further back each time).
  def roll(dir)
    two, one = Hashfile.history(dir).map { |p| p[:generation] }
    ROLLBACKS.times do |i|
      Hashfile.rollback(dir, i.even? ? one : two)
      sleep 0.01
    end
  end

  def test_threads_and_forked_children_never_read_a_mix
    skip_or_fail("HASHFILE_REQUIRE_LINUX", "no fork here") unless Process.respond_to?(:fork)
    dir = path("ds")
    two_generations(dir)
    db = Hashfile.open(dir, reload: 0)
    done = false
    threads = 3.times.map { Thread.new { read_until(db, -> { done }) } }
    children = 2.times.map do
      reader, writer = IO.pipe
      pid = fork do
        reader.close
        child = Hashfile.open(dir, reload: 0)
        seen = read_until(child, -> { File.exist?("#{dir}.done") })
        writer.write(Marshal.dump(seen))
        exit!(0)
      rescue StandardError => e
        writer.write(Marshal.dump(e.message))
        exit!(1)
      end
      writer.close
      [pid, reader]
    end
    begin
      roll(dir)
      sleep 0.3 # each reader's next check finds the last rollback
    ensure
      # The children stop whatever happened here.
      File.write("#{dir}.done", "")
      done = true
    end
    seen = threads.map(&:value)
    current = db["key-0"]
    children.each do |pid, reader|
      result = Marshal.load(reader.read)
      _, status = Process.wait2(pid)
      assert status.success?, "a child: #{result}"
      seen << result
    end
    seen.each do |tags|
      assert_operator tags.size, :>, 1, "each reader saw the generations change"
      assert_equal current, tags.last, "each reader ends on the current generation"
    end
    assert_equal Hashfile.open(dir)["key-0"], current
  ensure
    db&.close
  end

  def test_a_remote_reader_never_reads_a_mix
    nginx = Hashfile::TestServers::Nginx.new
    dir = nginx.file("ds")
    two_generations(dir)
    db = Hashfile.open(nginx.url("/files/ds/hashfile-dataset.json"), reload: 0)
    done = false
    reader = Thread.new { read_until(db, -> { done }) }
    begin
      roll(dir)
    rescue StandardError
      done = true
      raise
    end
    current = Hashfile.open(dir)["key-0"]
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
    sleep 0.05 until db["key-0"] == current || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    done = true
    seen = reader.value
    assert_operator seen.size, :>, 1, "the remote reader saw the generations change"
    assert_equal current, db["key-0"], "and follows the last rollback"
  ensure
    db&.close
    nginx&.stop
  end
end
