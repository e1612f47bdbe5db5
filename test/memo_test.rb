# frozen_string_literal: true

require_relative "test_helper"

# Hashfile.open(path, memo: N): decoded values kept deep-frozen and returned
# again as the same objects, bounded, emptied by a reload, a reopen and a
# close, and never answering for another key.
class MemoTest < HashfileTest
  # Fewer under GC.stress (as HashfileTest#scale does), where each
  # allocation runs a GC.
  KEYS = ENV["HASHFILE_GC_STRESS"] == "1" ? 20 : 200
  DATA = (0...KEYS).to_h { |i| ["k#{i}", { "i" => i, "tags" => ["t#{i}", i % 3 == 0], "name" => "n#{i}" }] }.merge("nothing" => nil)

  def test_a_memo_returns_the_same_frozen_object_for_the_same_key
    Hashfile.open(build(DATA), memo: 1000) do |db|
      first = db["k1"]
      assert_equal DATA["k1"], first
      assert_same first, db["k1"]
      assert_same first, db.get("k1")
      assert_same first, db.get("k1", nil, freeze: true), "the open-time options: from the memo"
      assert_same first, db.fetch("k1")
      assert first.frozen? && first["tags"].frozen? && first["tags"][0].frozen?, "deep-frozen"
      assert_nil db["nothing"]
      assert_equal DATA.size - 1, DATA.count { |k, v| db[k] == v && k != "nothing" }
      assert_equal({ entries: DATA.size, limit: 1000 }, db.info[:memo])
    end
    Hashfile.open(path) do |plain|
      refute_same plain["k1"], plain["k1"], "without a memo every lookup decodes"
      assert_nil plain.info[:memo]
    end
  end

  def test_other_options_per_call_decode_afresh
    Hashfile.open(build(DATA), memo: 10) do |db|
      memoized = db["k2"]
      symbolized = db.get("k2", nil, symbolize_names: true)
      assert_equal 2, symbolized[:i]
      refute_same symbolized, db.get("k2", nil, symbolize_names: true)
      assert_same memoized, db["k2"]
    end
  end

  def test_a_memo_is_bounded_and_refills
    Hashfile.open(build(DATA), memo: 5) do |db|
      2.times do
        DATA.each do |key, value|
          value.nil? ? assert_nil(db[key]) : assert_equal(value, db[key])
          assert_operator db.info[:memo][:entries], :<=, 5
        end
      end
      assert_same db["k7"], db["k7"]
    end
  end

  def test_absent_keys_and_other_types_are_not_memoized
    Hashfile.open(build(DATA), memo: 10) do |db|
      assert_nil db["absent"]
      assert_equal 3, db.get("absent", 3)
      assert_nil db[17]
      assert_raises(KeyError) { db.fetch("absent") }
      assert_equal 0, db.info[:memo][:entries]
      assert_same db[:k3], db[:k3], "a Symbol key is memoized too"
      assert_equal DATA["k3"], db[:k3]
    end
  end

  # A String subclass that claims to equal every key, with "k1"'s hash.
  class Collides < String
    def hash = "k1".hash
    def eql?(_other) = true
  end

  def test_a_key_subclass_finds_its_own_value_and_is_not_memoized
    Hashfile.open(build(DATA), memo: 10) do |db|
      assert_equal DATA["k1"], db["k1"]
      assert_equal DATA["k2"], db[Collides.new("k2")], "looked up by its own bytes"
      key = Collides.new("k3")
      assert_equal DATA["k3"], db[key]
      key.replace("k4")
      assert_equal DATA["k4"], db[key]
      assert_equal DATA["k3"], db["k3"]
      assert_equal 2, db.info[:memo][:entries], "k1 and k3, looked up as plain Strings; none of the subclass's"
    end
  end

  def test_a_reload_empties_the_memo
    build({ "k" => { "v" => "old" } })
    Hashfile.open(path, reload: 0, memo: 10) do |db|
      old = db["k"]
      assert_same old, db["k"]
      Hashfile.build(path, { "k" => { "v" => "new" } })
      assert_equal({ "v" => "new" }, db["k"])
      assert_equal 1, db.generation
    end
  end

  def test_a_reopen_empties_the_memo
    build({ "k" => "old" })
    Hashfile.open(path, memo: 10) do |db|
      assert_equal "old", db["k"]
      Hashfile.build(path, { "k" => "new" })
      assert_equal "old", db["k"], "no reload: the store opened"
      db.reopen
      assert_equal "new", db["k"]
    end
  end

  def test_a_closed_reader_answers_nothing_from_its_memo
    db = Hashfile.open(build(DATA), memo: 10)
    assert_equal DATA["k1"], db["k1"]
    db.close
    assert_raises(Hashfile::ClosedError) { db["k1"] }
    assert_raises(Hashfile::ClosedError) { db.get("k1") }
  end

  def test_memoized_values_survive_garbage_collection
    Hashfile.open(build(DATA), memo: 50) do |db|
      ids = %w[k1 k2 k3].to_h { |k| [k, db[k].object_id] }
      GC.start(full_mark: true, immediate_sweep: true)
      GC.compact if GC.respond_to?(:compact) && ENV["HASHFILE_GC_STRESS"] != "1"
      ids.each do |key, id|
        assert_equal id, db[key].object_id
        assert_equal DATA[key], db[key]
      end
    end
  end

  def test_threads_share_one_memo
    skip_in_quick_gc_stress("threads looping over lookups")
    Hashfile.open(build(DATA), memo: 7) do |db|
      wrong = Queue.new
      threads = 3.times.map do |offset|
        Thread.new do
          20.times { offset.step(DATA.size - 2, 3) { |i| wrong << i unless db["k#{i}"] == DATA["k#{i}"] } }
        end
      end
      threads.each(&:join)
      assert wrong.empty?
    end
  end

  def test_a_forked_child_reads_through_its_copy_of_the_memo
    skip_or_fail("HASHFILE_REQUIRE_LINUX", "needs fork") unless Process.respond_to?(:fork)
    Hashfile.open(build(DATA), memo: 100) do |db|
      assert_equal DATA["k1"], db["k1"]
      pid = fork do
        ok = db["k1"] == DATA["k1"] && db["k2"] == DATA["k2"] && db.info[:memo][:entries] == 2
        exit!(ok ? 0 : 1)
      end
      Process.wait(pid)
      assert_predicate Process.last_status, :success?
      assert_equal 1, db.info[:memo][:entries], "the child's lookups went to its own copy"
    end
  end

  def test_memo_is_checked
    build(DATA)
    e = assert_raises(ArgumentError) { Hashfile.open(path, memo: 10, freeze: false) }
    assert_match(/invalid option memo: returns the same object for a key again, so its values are frozen/, e.message)
    e = assert_raises(ArgumentError) { Hashfile.open(path, memo: 10, serializer: Marshal) }
    assert_match(/give one of memo and serializer/, e.message)
    e = assert_raises(TypeError) { Hashfile.open(path, memo: "10") }
    assert_equal "memo must be an integer, not a string", e.message
    e = assert_raises(ArgumentError) { Hashfile.open(path, memo: -1) }
    assert_equal "invalid option memo: must be an integer from 0 to #{Hashfile::MAX_MEMO}, not -1", e.message
    assert_raises(ArgumentError) { Hashfile.open(path, memo: Hashfile::MAX_MEMO + 1) }
    Hashfile.open(path, memo: 0) { |db| assert_nil db.info[:memo] }
    Hashfile.open(path, memo: 0) { |db| refute db["k1"].frozen?, "memo: 0 is no memo, and no freeze" }
  end
end
