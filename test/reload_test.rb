# frozen_string_literal: true

require_relative "test_helper"

# Reload on publish (issue 13): a long-running process sees the store newly
# published at its path (by the rename every build ends with) without a
# restart, and no lookup or `each` ever reads a mix of two files.
class ReloadTest < HashfileTest
  KEYS = 200

  # Version `v` of the store: every value names its version and its key.
  def publish(v, at = path)
    Hashfile.build(at, (0...KEYS).to_h { |i| ["k#{i}", "#{v}:k#{i}"] })
  end

  def version_of(value, key)
    v, k = value.split(":")
    assert_equal key, k, "a value from another key: #{value}"
    Integer(v)
  end

  def test_stale_and_reopen
    publish(1)
    Hashfile.open(path) do |db|
      refute db.stale?
      publish(2)
      assert db.stale?, "a build renamed a new file over the path"
      assert_equal "1:k0", db["k0"], "without reload, the reader keeps its file"
      assert_same db, db.reopen
      refute db.stale?
      assert_equal "2:k0", db["k0"]
      File.delete(path)
      assert db.stale?, "no file at the path"
      assert_raises(Errno::ENOENT) { db.reopen }
      assert_equal "2:k0", db["k0"], "a failed reopen keeps the old store"
      File.binwrite(path, "not a store")
      e = assert_raises(Hashfile::FormatError) { db.reopen }
      assert_includes e.message, path
      assert_equal "2:k0", db["k0"]
    end
  end

  def test_reload_on_access
    publish(1)
    Hashfile.open(path, reload: 0) do |db|
      assert_equal "1:k5", db["k5"]
      publish(2)
      assert_equal "2:k5", db["k5"], "reload: 0 looks at every access"
      assert_equal 2, version_of(db.dig("k6"), "k6")
      assert_nil db.reload_error
      # A file that cannot be opened: the old store is served, the error
      # kept, and the next good publish is picked up.
      File.binwrite(path("bad.tmp"), "junk")
      File.rename(path("bad.tmp"), path)
      assert_equal "2:k5", db["k5"]
      assert_match(/too short for a header/, db.reload_error)
      publish(3)
      assert_equal "3:k5", db["k5"]
      assert_nil db.reload_error
    end
    publish(4)
    Hashfile.open(path, reload: 3600) do |db|
      publish(5)
      assert_equal "4:k1", db["k1"], "not looked at again within the interval"
      assert db.stale?
    end
  end

  # Reader#generation counts the stores swapped in, whichever way: what a
  # cache of looked-up values (the I18n backend's) watches.
  def test_generation_counts_the_stores_swapped_in
    publish(1)
    Hashfile.open(path, reload: 0) do |db|
      assert_equal 0, db.generation
      publish(2)
      assert_equal 1, db.generation, "a due reload check runs first"
      assert_equal "2:k3", db["k3"]
      db.reopen
      assert_equal 2, db.generation
      File.binwrite(path("bad.tmp"), "junk")
      File.rename(path("bad.tmp"), path)
      assert_equal 2, db.generation, "a file that cannot be opened swaps nothing"
    end
    Hashfile.open(path("other.hf").tap { |p| Hashfile.build(p, { "a" => "1" }) }) do |db|
      publish(3, path("other.hf"))
      assert_equal 0, db.generation, "without reload: nothing is swapped on its own"
    end
  end

  def test_reload_arguments
    publish(1)
    assert_raises(ArgumentError) { Hashfile.open(path, reload: -1) }
    assert_raises(TypeError) { Hashfile.open(path, reload: "5") }
    Hashfile.open(path, reload: 0.25) { |db| assert_equal "1:k0", db["k0"] }
  end

  def test_each_reads_one_file_from_start_to_end
    publish(1)
    Hashfile.open(path, reload: 0) do |db|
      seen = []
      db.each_with_index do |(key, value), i|
        # Published mid-iteration and looked up: lookups see the new store,
        # the iteration keeps the one it began on.
        if i == 10
          publish(2)
          assert_equal "2:k0", db["k0"]
        end
        seen << version_of(value, key)
      end
      assert_equal [1] * KEYS, seen
      assert_equal [2], db.values.map { |v| Integer(v.split(":")[0]) }.uniq
    end
  end

  def test_close_inside_each_still_stops_it
    publish(1)
    db = Hashfile.open(path)
    yielded = 0
    assert_raises(Hashfile::ClosedError) do
      db.each do
        yielded += 1
        db.close
      end
    end
    assert_equal 1, yielded
  end

  Version = Struct.new(:name)

  # A reopen from inside a lookup (here a serializer's load) waits for the
  # lookup to end: the lookup finishes on the store it began on.
  def test_reopen_during_a_lookup_takes_effect_after_it
    loads = 0
    db = nil
    serializer = [->(v) { Marshal.dump(v) }, lambda { |bytes|
      loads += 1
      if loads == 1
        Hashfile.build(path, { "a" => Version.new("second"), "b" => Version.new("second") }, serializer: Marshal)
        db.reopen
        refute db.stale?, "the reopened store is the one at the path"
      end
      Marshal.load(bytes)
    }]
    Hashfile.build(path, { "a" => Version.new("first"), "b" => Version.new("first") }, serializer: Marshal)
    db = Hashfile.open(path, serializer: serializer)
    assert_equal "first", db["a"].name
    assert_equal "second", db["b"].name
    assert_equal 2, loads
    db.close
  end

  # Readers on many threads while the store is replaced again and again:
  # every value is one a published version holds for that key, and each
  # thread's versions never go back.
  def test_threads_read_while_the_store_is_replaced
    skip "not run under GC.stress: threads and 40 builds" if ENV["HASHFILE_GC_STRESS"] == "1"
    publish(0)
    db = Hashfile.open(path, reload: 0)
    versions = 40
    writer = Thread.new { (1..versions).each { |v| publish(v) } }
    readers = 4.times.map do |t|
      Thread.new do
        last = 0
        lookups = 0
        while writer.alive? || lookups < 1000
          i = (lookups * 7 + t) % KEYS
          v = version_of(db["k#{i}"], "k#{i}")
          raise "thread #{t} went back from #{last} to #{v}" if v < last

          last = v
          lookups += 1
          if (lookups % 500).zero?
            vs = db.each_pair.map { |k, value| version_of(value, k) }.uniq
            raise "each mixed versions #{vs}" unless vs.size == 1
          end
        end
        [last, lookups]
      end
    end
    results = readers.map(&:value)
    writer.join
    assert_equal versions, version_of(db["k1"], "k1")
    results.each { |last, lookups| assert_operator lookups, :>=, 1000; assert_operator last, :<=, versions }
    db.close
  end

  # After fork (Puma's preload_app!), a worker's reader reloads on its own;
  # nothing is needed in on_worker_boot.
  def test_reload_works_in_a_forked_worker
    skip_or_fail("HASHFILE_REQUIRE_LINUX", "fork is not available here") unless Process.respond_to?(:fork)
    publish(1)
    db = Hashfile.open(path, reload: 0)
    assert_equal "1:k0", db["k0"]
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      before = db["k0"]
      publish(2)
      writer.write([before, db["k0"]].join(","))
      writer.close
      exit!(0)
    end
    writer.close
    seen = reader.read
    Process.wait(pid)
    assert_equal "1:k0,2:k0", seen
    assert_equal "2:k0", db["k0"], "the parent sees the child's publish too"
    db.close
  end
end
