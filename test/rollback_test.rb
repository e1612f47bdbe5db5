# frozen_string_literal: true

require "test_helper"
require "support/servers"
require "support/readers_under_load"

# Readers under load while a dataset is rolled back and forth: every batch
# a reader looks up (keys of every shard at once) comes from one
# generation, never a mix, in threads, in forked children, and over HTTP
# from nginx; and each reader ends on the generation made current last.
class RollbackTest < HashfileTest
  include ReadersUnderLoad
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
    _, seen, db = readers_during(dir, KEYS) { |d| roll(d) }
    current = db["key-0"]
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
    reader = Thread.new { read_until(db, KEYS, -> { done }) }
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
