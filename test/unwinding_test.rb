# frozen_string_literal: true

require_relative "test_helper"
require "timeout"

# No Ruby exception or throw crosses Rust frames: whatever raises while a
# lookup runs Ruby code (a serializer's load, a Hash key's #hash, the dig
# fallback, Thread#raise, Timeout) comes back through the extension as an
# ordinary error, after which the reader still works and closes. And a
# close from another thread while a read runs Ruby code takes effect at once
# for later calls, without pulling the mapping from under the read.
class UnwindingTest < HashfileTest
  # A serializer whose load can be made slow or raising, with a flag the
  # test waits on to know a load is under way.
  class Gate
    attr_accessor :delay, :error
    attr_reader :entered

    def initialize
      @delay = 0
      @error = nil
      @entered = Queue.new
    end

    def dump(object)
      Marshal.dump(object)
    end

    def load(bytes)
      @entered << true
      sleep @delay if @delay.positive?
      raise @error if @error

      Marshal.load(bytes)
    end
  end

  # A Hash key whose #hash raises on demand: decoding a value that holds it
  # stores it in a Hash through Ruby's hashing.
  class TouchyKey
    @armed = false
    class << self
      attr_accessor :armed
    end

    attr_reader :name

    def initialize(name)
      @name = name
    end

    def hash
      raise ArgumentError, "TouchyKey#hash refused" if TouchyKey.armed

      @name.hash
    end

    def eql?(other)
      other.is_a?(TouchyKey) && other.name == name
    end

    def ==(other)
      eql?(other)
    end
  end

  def build_store(gate)
    Hashfile.build(path, {
                     "object" => Struct.new(:a).new(1).to_a,
                     "custom" => [Time.at(0)],
                     "nested" => { "list" => [1, { "deep" => "x" }] },
                     "touchy" => { TouchyKey.new("k") => 1 },
                     "plain" => "text",
                   }, serializer: gate)
  end

  # After whatever went wrong, the reader answers, iterates, verifies and
  # closes, and later calls raise ClosedError.
  def assert_still_works(db, gate)
    gate.delay = 0
    gate.error = nil
    TouchyKey.armed = false
    assert_equal "text", db["plain"]
    assert_equal [Time.at(0)], db["custom"]
    assert_equal "x", db.dig("nested", "list", 1, "deep")
    assert_equal 5, db.each.count
    assert db.verify
    db.close
    assert db.closed?
    assert_raises(Hashfile::ClosedError) { db["plain"] }
  end

  def test_a_raising_serializer_during_lookup_dig_and_each
    gate = Gate.new
    build_store(gate)
    { "[]" => ->(db) { db["custom"] }, "fetch" => ->(db) { db.fetch("custom") }, "dig" => ->(db) { db.dig("custom", 0) },
      "each" => ->(db) { db.each { |_k, _v| nil } }, "values_at" => ->(db) { db.values_at("plain", "custom") } }.each do |name, call|
      db = Hashfile.open(path, serializer: gate)
      gate.error = IOError.new("load failed")
      e = assert_raises(IOError, name) { call.call(db) }
      assert_equal "load failed", e.message
      assert_still_works(db, gate)
    end
  end

  def test_a_hash_key_whose_hash_raises
    gate = Gate.new
    build_store(gate)
    db = Hashfile.open(path, serializer: gate)
    assert_equal({ TouchyKey.new("k") => 1 }, db["touchy"])
    TouchyKey.armed = true
    assert_raises(ArgumentError) { db["touchy"] }
    assert_raises(ArgumentError) { db.each { nil } }
    assert_still_works(db, gate)
  ensure
    TouchyKey.armed = false
  end

  def test_thread_raise_and_timeout_during_a_slow_load
    gate = Gate.new
    build_store(gate)
    db = Hashfile.open(path, serializer: gate)
    gate.delay = 5
    3.times do
      reader = Thread.new { db["custom"] }
      reader.report_on_exception = false
      gate.entered.pop
      reader.raise(Interrupt)
      assert_raises(Interrupt) { reader.join }
    end
    3.times do
      assert_raises(Timeout::Error) { Timeout.timeout(0.05) { db.dig("custom", 0) } }
      gate.entered.pop
    end
    assert_raises(Timeout::Error) { Timeout.timeout(0.05) { db.each { nil } } }
    assert_still_works(db, gate)
  end

  def test_close_from_another_thread_during_a_read
    gate = Gate.new
    build_store(gate)
    db = Hashfile.open(path, serializer: gate)
    gate.delay = 0.2
    reader = Thread.new { db["custom"] }
    gate.entered.pop
    db.close # does not raise, does not wait
    assert db.closed?
    assert_raises(Hashfile::ClosedError) { db["plain"] }
    # The read under way finishes on the mapping it started with.
    assert_equal [Time.at(0)], reader.value
    assert_raises(Hashfile::ClosedError) { db["plain"] }
  end

  def test_close_inside_each_stops_at_once
    Hashfile.build(path, (1..100).to_h { |i| ["k#{i}", i.to_s] })
    db = Hashfile.open(path)
    seen = 0
    assert_raises(Hashfile::ClosedError) do
      db.each do |_k, _v|
        seen += 1
        db.close if seen == 10
      end
    end
    assert_equal 10, seen
  end

  def test_a_lookup_inside_load_of_the_same_store
    gate = Gate.new
    build_store(gate)
    db = nil
    inner = nil
    gate.define_singleton_method(:load) do |bytes|
      inner ||= db["plain"]
      Marshal.load(bytes)
    end
    db = Hashfile.open(path, serializer: gate)
    assert_equal [Time.at(0)], db["custom"]
    assert_equal "text", inner
    db.close
    assert_raises(Hashfile::ClosedError) { db["custom"] }
  end
end
