# frozen_string_literal: true

require_relative "test_helper"

# A store truncated or rewritten in place while open (someone ran
# `cp new.hf live.hf` instead of renaming): the read that touches a page
# that is gone raises StaleError, every later call does too, and the
# process keeps running, with any number of threads reading. Deleting an
# open store changes nothing for its readers: the file lives on until
# closed.
class FaultsTest < HashfileTest
  ENTRIES = 100_000

  # Built per test, not at load: 200,000 Strings alive for the whole run
  # would make every GC of the GC.stress suite mark them.
  def data
    @data ||= (1..ENTRIES).to_h { |i| ["key#{i}", "value #{i} #{"x" * 20}"] }.freeze
  end

  # These are about signals and pages, not object lifetimes, and take
  # minutes with a GC on every allocation.
  def setup
    super
    skip "not run under GC.stress" if ENV["HASHFILE_GC_STRESS"] == "1"
  end

  def build
    Hashfile.build(path, data)
  end

  def test_truncation_under_threads_raises_stale_error_everywhere
    build
    db = Hashfile.open(path)
    assert_equal data["key7"], db["key7"]
    stop = false
    errors = Queue.new
    readers = 4.times.map do |t|
      Thread.new do
        i = t
        until stop
          begin
            value = db["key#{(i % data.size) + 1}"]
            # Before the truncation every value is right; after, none is
            # returned at all.
            errors << [:wrong, i] unless value.nil? || value == data["key#{(i % data.size) + 1}"]
          rescue Hashfile::StaleError
            errors << :stale
          end
          i += 7919
        end
      end
    end
    sleep 0.05
    File.truncate(path, 4096)
    Thread.pass until errors.size >= 4
    stop = true
    readers.each(&:join)
    found = []
    found << errors.pop until errors.empty?
    assert_includes found, :stale
    assert_empty found.reject { |e| e == :stale }, "no wrong value, ever"
    [-> { db["key#{ENTRIES - 1}"] }, -> { db["key1"] }, -> { db.dig("key1") }, -> { db.each { nil } }, -> { db.verify }, -> { db.size }].each do |call|
      e = assert_raises(Hashfile::StaleError) { call.call }
      assert_equal path, e.path
      assert_match(/the store file changed while open \(truncated or rewritten in place, not replaced by rename\); reopen it/, e.message)
    end
    db.close
    assert_raises(Hashfile::FormatError) { Hashfile.open(path) }
  end

  # A store is read with positioned reads until its 16th lookup
  # (docs/RUBY.md, "Opening"): a read that finds the file short there is
  # StaleError too, and stays so, as a fault in a map does.
  def test_truncated_before_it_is_mapped
    build
    db = Hashfile.open(path)
    assert_equal data["key9"], db["key9"]
    File.truncate(path, 4096)
    40.times do |i|
      e = assert_raises(Hashfile::StaleError) { db["key#{ENTRIES - i}"] }
      assert_equal path, e.path
    end
    assert_raises(Hashfile::StaleError) { db.each { nil } }
    db.close
  end

  def test_rewritten_in_place_with_a_smaller_store
    build
    db = Hashfile.open(path)
    assert_equal data["key#{ENTRIES - 1}"], db["key#{ENTRIES - 1}"]
    # File.write truncates, then writes: what `cp` does.
    File.binwrite(path, File.binread(path, 8192))
    assert_raises(Hashfile::StaleError) { db.each { nil } }
    assert_raises(Hashfile::StaleError) { db["key5"] }
    db.close
  end

  # Compressed values of 1-64 KiB are kept once decoded, with the store's
  # dictionary parsed once; a store written over in place (same size,
  # other keys and values at the same places) must never give a kept
  # value of another key, nor a new frame decoded with the old dictionary
  # (another key's text, with no error): its compressed lookups raise
  # StaleError, as a truncated store's do.
  def test_rewritten_in_place_with_kept_compressed_values
    values = lambda do |prefix, tag|
      (1..50).to_h { |i| [format("#{prefix}%03d", i), format("#{tag}%03d", i) + ("lorem ipsum dolor " * 100)] }
    end
    Hashfile.build(path("a.hf"), values.call("k", "OLD"), compression: "zstd:3")
    Hashfile.build(path("b.hf"), values.call("j", "NEW").to_a.reverse.to_h, compression: "zstd:3")
    skip "the two stores differ in size" unless File.size(path("a.hf")) == File.size(path("b.hf"))
    FileUtils.cp(path("a.hf"), path("live.hf"))
    db = Hashfile.open(path("live.hf"))
    2.times { values.call("k", "OLD").each { |k, v| assert_equal v, db[k] } }
    assert_operator db.info[:compression][:item_cache][:entries], :>=, 50
    File.open(path("live.hf"), "r+b") { |f| f.write(File.binread(path("b.hf"))) }
    values.call("j", "NEW").each_key { |k| assert_raises(Hashfile::StaleError, k) { db[k] } }
    assert_raises(Hashfile::StaleError) { db.each { nil } }
    db.close
    Hashfile.open(path("live.hf")) { |fresh| values.call("j", "NEW").each { |k, v| assert_equal v, fresh[k], k } }
    # The same before the store is mapped (its first lookups are positioned
    # reads), and when it is mapped: the map must show the store opened.
    FileUtils.cp(path("a.hf"), path("live.hf"))
    db = Hashfile.open(path("live.hf"))
    assert_equal values.call("k", "OLD")["k001"], db["k001"]
    File.open(path("live.hf"), "r+b") { |f| f.write(File.binread(path("b.hf"))) }
    values.call("j", "NEW").each_key { |k| assert_raises(Hashfile::StaleError, k) { db[k] } }
    db.close
  end

  def test_deleting_an_open_store_changes_nothing_for_its_readers
    build
    db = Hashfile.open(path)
    File.unlink(path)
    assert_equal data["key1234"], db["key1234"]
    assert_equal data.size, db.each.count
    assert db.verify
    db.close
  end
end
