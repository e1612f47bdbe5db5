# frozen_string_literal: true

require "test_helper"
require "json"
require "support/servers"
require "support/readers_under_load"

# Delta generations: patches of upserts and deletes published as overlays
# over a dataset's shards, and compaction, against a Ruby Hash given the
# same changes; readers under load while patches and compactions publish;
# and a patch killed at any point.
class PatchTest < HashfileTest
  include ReadersUnderLoad
  ISO_3166_2 = "/usr/share/iso-codes/json/iso_3166-2.json"

  def setup
    skip "patches of real data and readers under load: the data, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    super
  end

  # Every key of +model+ with its value, the +gone+ keys absent, one pass
  # of each giving every live key once, and a batch as lookups.
  def check(dir, model, gone, round)
    Hashfile.open(dir) do |db|
      assert_equal model.size, db.size, "round #{round}: size"
      model.each { |key, value| assert_equal value, db[key], "round #{round}: #{key}" }
      gone.each { |key| refute db.key?(key), "round #{round}: #{key} was deleted" unless model.key?(key) }
      seen = {}
      db.each do |key, value|
        refute seen.key?(key), "round #{round}: #{key} twice"
        seen[key] = value
      end
      assert_equal model, seen, "round #{round}: each"
      keys = model.keys.sample(300, random: Random.new(round)) + gone.first(50)
      assert_equal keys.map { |k| model[k] }, db.values_at(*keys), "round #{round}: values_at"
      db.verify
    end
  end

  def test_random_patches_and_compactions_of_real_data_read_as_a_hash
    skip_or_fail("HASHFILE_REQUIRE_ISO_CODES", "no #{ISO_3166_2} (Debian's iso-codes)") unless File.exist?(ISO_3166_2)
    entries = JSON.parse(File.read(ISO_3166_2)).fetch("3166-2")
    model = entries.to_h { |e| [e.fetch("code"), e] }
    dir = path("subdivisions")
    Hashfile.build_sharded(dir, model, shards: 8)
    random = Random.new(20_261_129)
    gone = []
    counts = Hash.new(0)
    30.times do |round|
      puts_changes = {}
      deletes = []
      random.rand(1..80).times do
        key = model.keys.sample(random: random)
        next if puts_changes.key?(key) || deletes.include?(key)

        case random.rand(10)
        when 0..3
          puts_changes[key] = model[key].is_a?(Hash) ? model[key].merge("name" => "#{model[key]["name"]} (round #{round})") : "changed in round #{round}"
        when 4..6 then deletes << key
        when 7 then puts_changes[key] = "a string now"
        else
          added = gone.empty? || random.rand(2).zero? ? "XX-#{round}-#{random.rand(1_000_000)}" : gone.sample(random: random)
          puts_changes[added] = { "code" => added, "round" => round } unless model.key?(added) || puts_changes.key?(added)
        end
      end
      done = Hashfile.patch(dir, puts_changes, delete: deletes, compact_overlays: 3, keep: 2, retain: 0)
      deletes.each { |key| model.delete(key) }
      model.merge!(puts_changes)
      gone |= deletes
      assert_equal model.size, done[:entries]
      counts[:overlays] += done[:overlays_written]
      counts[:compacted] += done[:shards_compacted]
      if round % 7 == 6
        counts[:compacted] += Hashfile.compact(dir, keep: 2, retain: 0)[:shards_compacted]
      end
      check(dir, model, gone, round)
    end
    assert_operator counts[:overlays], :>, 40, counts.inspect
    assert_operator counts[:compacted], :>, 8, counts.inspect
  end

  KEYS = (0...400).map { |i| "key-#{i}" }.freeze

  # Patches every key to "v1", "v2", ...: an overlay on each of the 8
  # shards, every third patch a compaction of each, every fifth a
  # compaction alone. +retention+: the history's options.
  def publish_versions(dir, count, **retention)
    (1..count).each do |v|
      Hashfile.patch(dir, KEYS.to_h { |k| [k, "v#{v}"] }, compact_overlays: 2, compact_fraction: 10.0, **retention)
      Hashfile.compact(dir, **retention) if (v % 5).zero?
      sleep 0.005
    end
    "v#{count}"
  end

  def test_readers_in_threads_and_forked_children_never_read_a_mix
    skip_or_fail("HASHFILE_REQUIRE_LINUX", "no fork here") unless Process.respond_to?(:fork)
    dir = path("ds")
    Hashfile.build_sharded(dir, KEYS.to_h { |k| [k, "v0"] }, shards: 8)
    # Local readers map every file at open: generations may go at once.
    last, seen, db = readers_during(dir, KEYS) { |d| publish_versions(d, 30, keep: 2, retain: 0) }
    seen.each do |versions|
      assert_operator versions.size, :>, 1, "each reader saw the versions change"
      assert_equal last, versions.last, "each reader ends on the last patch"
      numbers = versions.map { |v| v.delete_prefix("v").to_i }
      assert_equal numbers.sort, numbers, "a reader's generation only moves forward"
    end
  ensure
    db&.close
  end

  def test_a_remote_reader_never_reads_a_mix
    nginx = Hashfile::TestServers::Nginx.new
    dir = nginx.file("ds")
    Hashfile.build_sharded(dir, KEYS.to_h { |k| [k, "v0"] }, shards: 8)
    db = Hashfile.open(nginx.url("/files/ds/hashfile-dataset.json"), reload: 0)
    done = false
    reader = Thread.new { read_until(db, KEYS, -> { done }) }
    last = begin
      # A remote reader opens a shard's files when it first reads them:
      # generations stay the default 15 minutes for it.
      publish_versions(dir, 15)
    rescue StandardError
      done = true
      raise
    end
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
    sleep 0.05 until db["key-0"] == last || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    done = true
    seen = reader.value
    assert_operator seen.size, :>, 1, "the remote reader saw the versions change"
    assert_equal last, db["key-0"], "and follows the last patch"
  ensure
    db&.close
    nginx&.stop
  end

  def test_a_remote_reader_that_follows_a_patch_keeps_what_it_read_of_the_bases
    nginx = Hashfile::TestServers::Nginx.new
    dir = nginx.file("kept")
    keys = (0...4000).map { |i| "key-#{i}" }
    Hashfile.build_sharded(dir, keys.to_h { |k| [k, "base"] }, shards: 4)
    db = Hashfile.open(nginx.url("/files/kept/hashfile-dataset.json"), reload: 0)
    probes = keys.first(300)
    assert_equal ["base"], probes.map { |k| db[k] }.uniq
    generation = db.info[:generation]
    Hashfile.patch(dir, { "key-3999" => "patched", "new" => "added" })
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
    sleep 0.02 until db.info[:generation] != generation || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    refute_equal generation, db.info[:generation], "the reader follows the patch"
    before = nginx.authorizations.size
    assert_equal ["base"], probes.map { |k| db[k] }.uniq
    assert_equal "patched", db["key-3999"]
    requests = nginx.authorizations.drop(before).map(&:first)
    # The new overlays (at most one per shard, each read whole in a
    # request or two) and the manifest's checks; nothing of the bases.
    overlays = JSON.parse(File.read(File.join(dir, "hashfile-dataset.json")))["shards"].sum { |s| (s["overlays"] || []).size }
    bases = Dir.children(dir).select { |f| f.end_with?(".hf") && !f.start_with?(db.info[:generation]) }
    refute_empty bases
    refute(requests.any? { |request| bases.any? { |f| request.include?(f) } }, "a base file was read again: #{requests.inspect}")
    assert_operator requests.size, :<=, 2 * overlays + 4, requests.inspect
  ensure
    db&.close
    nginx&.stop
  end

  # The files the dataset's manifest and the records of the generations
  # its history keeps list.
  def listed_files(dir)
    records = Dir[File.join(dir, "hashfile-dataset*.json")].reject { |f| f.end_with?(".history.json") }
    records.flat_map do |record|
      JSON.parse(File.read(record)).fetch("shards").flat_map { |s| [s["file"], *(s["overlays"] || []).map { |o| o["file"] }] }
    end.uniq.sort
  end

  def test_a_patch_killed_at_any_point_leaves_a_generation_served_and_nothing_behind
    skip_or_fail("HASHFILE_REQUIRE_LINUX", "no fork here") unless Process.respond_to?(:fork)
    dir = path("killed")
    keys = (0...60_000).map { |i| "k#{i}" }
    Hashfile.build_sharded(dir, keys.to_h { |k| [k, "base"] }, shards: 4)
    changes = keys.each_slice(4).map(&:first).to_h { |k| [k, "patched #{"x" * 40}"] }
    # How long a patch takes here, to kill within it.
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    Hashfile.patch(dir, changes, keep: 1, retain: 0)
    took = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    random = Random.new(7)
    old_served = 0
    12.times do |attempt|
      before = Hashfile.history(dir).first[:generation]
      pid = fork do
        Hashfile.patch(dir, changes.transform_values { "attempt #{attempt}" }, keep: 1, retain: 0, compact_overlays: attempt.even? ? 1 : 8)
        exit!(0)
      end
      sleep random.rand * took * 1.5
      Process.kill(:KILL, pid)
      Process.wait(pid)
      now = Hashfile.history(dir).first[:generation]
      Hashfile.open(dir) do |db|
        assert_equal keys.size, db.size
        value = db["k0"]
        if now == before
          old_served += 1
          refute_equal "attempt #{attempt}", value, "attempt #{attempt}: the old generation is served"
        else
          assert_equal "attempt #{attempt}", value, "attempt #{attempt}: the new generation is served whole"
        end
        assert_equal "base", db["k1"]
      end
    end
    assert_operator old_served, :>=, 1, "some patch was killed before its manifest went in"
    # The next patch cleans up what the killed ones left.
    Hashfile.patch(dir, { "k1" => "last" }, keep: 1, retain: 0)
    on_disk = Dir.children(dir).select { |f| f.end_with?(".hf") }.sort
    assert_equal listed_files(dir), on_disk
    assert_empty Dir.children(dir).select { |f| f.start_with?(".") }, "temporary files and claims are gone"
    Hashfile.open(dir) { |db| assert_equal "last", db["k1"] }
  end
end
