# frozen_string_literal: true

require "test_helper"
require "json"

# Hashfile.diff against a diff computed in Ruby, on data nobody here wrote:
# Debian's iso-codes (ISO 3166-2, every country's subdivisions, and ISO
# 639-3, every language), edited at random (entries removed, changed, some
# to another type, and added), as two stores and as two generations of one
# dataset; and the CLI's diff of the same.
class DiffTest < HashfileTest
  SOURCES = {
    "/usr/share/iso-codes/json/iso_3166-2.json" => ["3166-2", "code"],
    "/usr/share/iso-codes/json/iso_639-3.json" => ["639-3", "alpha_3"]
  }.freeze

  def setup
    super
    missing = SOURCES.keys.reject { |f| File.exist?(f) }
    skip_or_fail("HASHFILE_REQUIRE_DATA_PACKAGES", "#{missing.join(", ")} missing (iso-codes)") unless missing.empty?
  end

  # [before, after]: the file's entries, and an edit of them.
  def versions(file, records_at, key, seed)
    before = JSON.parse(File.read(file)).fetch(records_at).to_h { |e| [e.fetch(key), e] }
    rng = Random.new(seed)
    after = {}
    before.each do |k, v|
      case rng.rand(100)
      when 0..1 then next # removed
      when 2..3 then after[k] = v.merge("name" => "#{v["name"]} (renamed)")
      when 4 then after[k] = v["name"] # a map becomes a string
      else after[k] = v
      end
    end
    (rng.rand(50) + 20).times { |i| after["NEW-#{seed}-#{i}"] = { "name" => "added #{i}" } }
    [before, after]
  end

  # What Ruby says changed, as Hashfile.diff's lines parse.
  def expected_changes(before, after)
    removed = (before.keys - after.keys).map { |k| { "op" => "removed", "key" => k, "value" => before[k] } }
    changed = (before.keys & after.keys).reject { |k| before[k] == after[k] }
                                        .map { |k| { "op" => "changed", "key" => k, "before" => before[k], "after" => after[k] } }
    added = (after.keys - before.keys).map { |k| { "op" => "added", "key" => k, "value" => after[k] } }
    removed + changed + added
  end

  def sorted(changes) = changes.sort_by { |c| [c["op"], c["key"]] }

  def test_diff_of_two_stores_and_of_two_generations_is_rubys
    skip "thousands of real entries parsed and compared: the data, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    SOURCES.each_with_index do |(file, (records_at, key)), n|
      before, after = versions(file, records_at, key, n)
      expected = expected_changes(before, after)
      assert_operator expected.size, :>, 50, "the edit changed something"
      Hashfile.build(path("a#{n}.hf"), before)
      Hashfile.build(path("b#{n}.hf"), after)
      lines = []
      summary = Hashfile.diff(path("a#{n}.hf"), path("b#{n}.hf")) { |line| lines << JSON.parse(line) }
      assert_equal sorted(expected), sorted(lines), file
      typed = (before.keys & after.keys).count { |k| before[k].is_a?(Hash) && after[k].is_a?(String) }
      assert_equal [before.size, after.size, expected.count { |c| c["op"] == "added" }, typed],
                   [summary[:entries_a], summary[:entries_b], summary[:added], summary[:type_changed]]
      assert_equal((before.keys & after.keys).count { |k| before[k] == after[k] }, summary[:unchanged])

      # The same as two generations of a dataset of 4 shards.
      dir = path("ds#{n}")
      Hashfile.build_sharded(dir, before, shards: 4)
      Hashfile.build_sharded(dir, after, shards: 4)
      old, new = Hashfile.history(dir).map { |p| p[:generation] }.reverse
      generations = []
      by_shard = Hashfile.diff(dir, dir, generation_a: old, generation_b: new, values: false) { |l| generations << JSON.parse(l) }
      assert_equal sorted(expected).map { |c| c.slice("op", "key") }, sorted(generations)
      assert_equal 4, by_shard[:shards].size
      per_shard = Hash.new(0)
      expected.each { |c| per_shard[Hashfile.shard_of(c["key"], 4)] += 1 }
      assert_equal (0...4).map { |i| per_shard[i] }, by_shard[:shards].map { |s| s[:added] + s[:removed] + s[:changed] }

      # The CLI: the lines on stdout, the summary as JSON with --summary.
      status, out, err = run_cli("diff", path("a#{n}.hf"), path("b#{n}.hf"))
      assert_equal 0, status, err
      assert_equal sorted(expected), sorted(out.lines.map { |l| JSON.parse(l) })
      assert_match(/\A\d+ added, \d+ removed, \d+ changed \(\d+ unchanged\); types changed: \d+ map to string;/, err)
      assert_equal 1, run_cli("diff", dir, "--exit-code", "--summary")[0], "the dataset's last two generations differ"
    end
  end

  def test_an_exception_in_the_block_stops_the_diff_and_is_raised
    Hashfile.build(path("a.hf"), (1..50).to_h { |i| ["k#{i}", i] })
    Hashfile.build(path("b.hf"), (1..50).to_h { |i| ["k#{i}", -i] })
    seen = 0
    e = assert_raises(RuntimeError) { Hashfile.diff(path("a.hf"), path("b.hf")) { |_| raise "enough" if (seen += 1) == 3 } }
    assert_equal "enough", e.message
    assert_equal 3, seen
  end
end
