# frozen_string_literal: true

require_relative "test_helper"
require "json"
require "pathname"
require_relative "support/servers"

# Datasets (issue 23): the routing of a key to its shard is the core's,
# pinned by the vectors the Rust tests check
# (crates/hashfile/tests/vectors/routing.tsv); a dataset built with
# Hashfile.build_sharded reads through Hashfile.open like one store.
class DatasetTest < HashfileTest
  VECTORS = File.expand_path("../crates/hashfile/tests/vectors/routing.tsv", __dir__)

  def test_keys_route_as_the_vectors_pin
    header, *rows = File.readlines(VECTORS, chomp: true)
    counts = header.split("\t").drop(1).map { |n| Integer(n) }
    assert_operator rows.size, :>=, 30
    rows.each do |row|
      hex, *shards = row.split("\t", -1)
      key = [hex].pack("H*")
      counts.zip(shards).each do |n, shard|
        assert_equal Integer(shard), Hashfile.shard_of(key, n), "#{hex} among #{n}"
      end
    end
  end

  def test_a_symbol_routes_as_its_name_and_bad_arguments_are_named
    assert_equal Hashfile.shard_of("tenant:42", 16), Hashfile.shard_of(:"tenant:42", 16)
    assert_equal Hashfile.shard_of("clé".b, 7), Hashfile.shard_of("clé", 7), "bytes route, not encodings"
    e = assert_raises(ArgumentError) { Hashfile.shard_of("a", 0) }
    assert_equal "invalid option shards: must be an integer from 1 to 1048576, not 0", e.message
    assert_raises(ArgumentError) { Hashfile.shard_of("a", 2**64) }
    assert_equal "key must be a String or Symbol, not Integer", assert_raises(TypeError) { Hashfile.shard_of(1, 2) }.message
    assert_equal "shards must be an integer, not a float", assert_raises(TypeError) { Hashfile.shard_of("a", 2.0) }.message
  end

  DATA = (0...3000).to_h { |i| ["k#{i}", i.even? ? { "n" => i, "tags" => ["t#{i % 7}"] } : "v#{i}"] }

  def test_a_sharded_dataset_reads_like_one_store_of_the_same_data
    # Thousands of decoded values: minutes with a GC at every allocation,
    # and the conversions are those of one store (test/binding_test.rb).
    skip_in_quick_gc_stress("3,000 entries compared whole")
    bytes = Hashfile.build_sharded(path("ds"), DATA, shards: 8)
    Hashfile.build(path("one.hf"), DATA)
    manifest = JSON.parse(File.read(path("ds/hashfile-dataset.json")))
    assert_equal 8, manifest["shards"].size
    assert_equal bytes, manifest["shards"].sum { |s| s["bytes"] }
    one = Hashfile.open(path("one.hf"))
    [path("ds"), path("ds/hashfile-dataset.json"), Pathname(path("ds"))].each do |at|
      Hashfile.open(at) do |db|
        assert_equal 3000, db.size
        DATA.each_key.each_slice(97).map(&:first).each { |k| assert_equal one[k], db[k], k }
        assert_equal 4, db.dig("k4", "n")
        assert_nil db["nope"]
        keys = %w[k1 nope k2999 k0 k1]
        assert_equal one.values_at(*keys), db.values_at(*keys)
        assert_equal one.to_h, db.to_h
        assert_equal DATA.keys.sort, db.keys.sort
        # Shard by shard, in routing order.
        shards = db.each_key.map { |k| Hashfile.shard_of(k, 8) }
        assert_equal shards.sort, shards
        assert db.verify
        info = db.info
        assert_equal [8, 3000], [info[:shards].size, info[:entries]]
        assert_equal manifest["generation"], info[:generation]
      end
    end
  ensure
    one&.close
  end

  def test_options_and_serializers_apply_to_every_shard
    Hashfile.build_sharded(path("ds"), { "a" => [1, 2], "b" => { "x" => 1 } }, shards: 3, serializer: Marshal)
    Hashfile.open(path("ds"), serializer: Marshal) do |db|
      assert_equal [1, 2], db["a"]
      assert_equal({ "x" => 1 }, db["b"])
    end
    Hashfile.build_sharded(path("ds2"), nil, shards: 2) { |w| w["k"] = "v" }
    assert_equal "v", Hashfile.open(path("ds2")) { |db| db["k"] }
    assert_raises(Hashfile::DuplicateKeyError) { Hashfile.build_sharded(path("ds3"), nil, shards: 2) { |w| w["k"] = "1"; w["k"] = "2" } }
    refute File.exist?(path("ds3/hashfile-dataset.json")), "a failed build publishes no manifest"
  end

  # Input files, as Hashfile.build_from reads them, into shards built in
  # parallel: the same entries as one store built from the same files.
  def test_a_dataset_builds_from_input_files
    n = scale(500)
    File.write(path("a.jsonl"), (0...n / 2).map { |i| %({"key":"k#{i}","value":{"n":#{i}}}\n) }.join)
    File.write(path("b.tsv"), "key\tvalue\n" + (n / 2...n).map { |i| "k#{i}\tv#{i}\n" }.join)
    inputs = [path("a.jsonl"), Pathname(path("b.tsv"))]
    one = Hashfile.build_from(inputs, path("one.hf"))
    phases = []
    result = Hashfile.build_from(inputs, path("ds"), shards: 4) { |*, phase| phases << phase }
    assert_equal %i[reading building publishing], phases.uniq
    assert_equal one[:entries], result[:entries]
    bytes = Hashfile.build_sharded(path("ds2"), path("b.tsv"), shards: 2)
    assert_equal JSON.parse(File.read(path("ds2/hashfile-dataset.json")))["shards"].sum { |s| s["bytes"] }, bytes
    Hashfile.open(path("one.hf")) do |store|
      Hashfile.open(path("ds")) { |db| assert_equal store.to_h, db.to_h }
    end
    assert_equal "v#{n - 1}", Hashfile.open(path("ds2")) { |db| db["k#{n - 1}"] }
    e = assert_raises(ArgumentError) { Hashfile.build_sharded(path("ds3"), path("b.tsv"), shards: 2, serializer: Marshal) }
    assert_match(/serializer: applies to Ruby values, not to input files/, e.message)
    assert_match(/unknown option key_colum for build_from \(did you mean key_column\?\)/, assert_raises(ArgumentError) { Hashfile.build_sharded(path("ds3"), [path("b.tsv")], shards: 2, key_colum: 0) }.message)
    assert_equal "shards must be an integer, not a string", assert_raises(TypeError) { Hashfile.build_from(path("b.tsv"), path("ds3"), shards: "2") }.message
  end

  def test_bad_arguments_name_what_is_wrong
    assert_equal "invalid option shards: must be an integer from 1 to 1048576, not 0",
                 assert_raises(ArgumentError) { Hashfile.build_sharded(path("ds"), {}, shards: 0) }.message
    assert_equal "shards must be an integer, not a string",
                 assert_raises(TypeError) { Hashfile.build_sharded(path("ds"), {}, shards: "4") }.message
    assert_raises(ArgumentError) { Hashfile.build_sharded(path("ds"), {}) }
    assert_match(/unknown option shard for build \(did you mean shards\?\)/, assert_raises(ArgumentError) { Hashfile.build_sharded(path("ds"), {}, shards: 2, shard: 1) }.message)
  end

  def test_a_new_generation_is_read_after_reload_and_each_keeps_its_own
    Hashfile.build_sharded(path("ds"), { "a" => "1", "b" => "1" }, shards: 4)
    Hashfile.open(path("ds"), reload: 0) do |db|
      assert_equal "1", db["a"]
      seen = []
      db.each do |_k, v|
        seen << v
        Hashfile.build_sharded(path("ds"), { "a" => "2", "b" => "2" }, shards: 2) if seen.size == 1
      end
      assert_equal %w[1 1], seen, "each reads one generation"
      assert_equal "2", db["b"]
      assert_equal 1, db.generation
      assert_equal 2, db.info[:shards].size
    end
  end

  def test_a_damaged_dataset_is_a_dataset_error_naming_the_file
    Hashfile.build_sharded(path("ds"), DATA.first(100).to_h, shards: 3)
    manifest = path("ds/hashfile-dataset.json")
    good = File.read(manifest)
    File.write(manifest, good.sub('"routing": "xxh3-64-high:', '"routing": "crc32:'))
    e = assert_raises(Hashfile::DatasetError) { Hashfile.open(path("ds")) }
    assert_kind_of Hashfile::FormatError, e
    assert_equal manifest, e.path
    assert_match(/routing "crc32:6861736866696c65" is not one this release knows/, e.message)
    File.write(manifest, good)
    shard = JSON.parse(good)["shards"][1]["file"]
    File.delete(path("ds/#{shard}"))
    e = assert_raises(Hashfile::DatasetError) { Hashfile.open(path("ds")) }
    assert_match(/shard 1 of 3 \(#{shard}\) of dataset .*: missing/, e.message)
    e = assert_raises(Hashfile::DatasetError) { Hashfile.open(path("")) }
    assert_match(/has no hashfile-dataset.json/, e.message)
  end

  def test_a_manifest_served_by_nginx_opens_its_shards_on_first_use
    skip "network waits, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    Hashfile.build_sharded(path("ds"), DATA, shards: 4)
    nginx = Hashfile::TestServers::Nginx.new
    Dir.children(path("ds")).each { |name| nginx.publish(name, path("ds/#{name}")) }
    Hashfile.open(nginx.url("/files/hashfile-dataset.json"), timeout: 5) do |db|
      assert db.remote?
      assert_equal 3000, db.size
      assert_equal [false] * 4, db.info[:shards].map { |s| s[:open] }, "no shard read at open"
      assert_equal DATA["k42"], db["k42"]
      assert_equal 1, db.info[:shards].count { |s| s[:open] }
      assert_equal DATA.values_at("k1", "k2", "k3"), db.values_at("k1", "k2", "k3")
      assert_equal 3000, db.count
    end
  ensure
    nginx&.stop
  end

  # A manifest lists shards only under its own place (docs/REMOTE.md):
  # one served by nginx that names a shard on another server is refused at
  # open, before any request reaches that server; allowed by name, that
  # shard is read without the headers given for the manifest's server. A
  # local manifest naming a remote shard is refused likewise.
  def test_a_manifest_reaches_only_the_places_the_caller_named
    skip "network waits, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    home = Hashfile::TestServers::Nginx.new
    elsewhere = Hashfile::TestServers::Nginx.new
    data = DATA.first(200).to_h
    Hashfile.build_sharded(path("ds"), data, shards: 2)
    manifest = JSON.parse(File.read(path("ds/hashfile-dataset.json")))
    manifest["shards"].each do |shard|
      home.publish(shard["file"], path("ds/#{shard["file"]}"))
      elsewhere.publish(shard["file"], path("ds/#{shard["file"]}"))
    end
    moved = manifest["shards"][1]["file"]
    manifest["shards"][1]["file"] = elsewhere.url("/files/#{moved}")
    File.write(path("remote.json"), JSON.generate(manifest))
    home.publish("hashfile-dataset.json", path("remote.json"))
    url = home.url("/files/hashfile-dataset.json")
    token = { "Authorization" => "Bearer let-me-in" }

    e = assert_raises(Hashfile::DatasetError) { Hashfile.open(url, headers: token) }
    assert_match(%r{shard 1 of 2 .*#{Regexp.escape(elsewhere.url("/files/"))}.* is not under the manifest's own place \(http://127\.0\.0\.1:#{home.port}/files/\)}, e.message)
    assert_empty elsewhere.log, "no request reached the other server"

    Hashfile.open(url, headers: token, allow_origins: [elsewhere.url("/")]) do |db|
      assert_equal data, db.to_h
    end
    assert_equal ["Bearer let-me-in"], home.authorizations.map(&:last).uniq
    assert_equal [nil], elsewhere.authorizations.map(&:last).uniq, "the other server got no credentials"

    # A local manifest naming a shard on a server.
    File.write(path("ds/hashfile-dataset.json"), JSON.generate(manifest))
    e = assert_raises(Hashfile::DatasetError) { Hashfile.open(path("ds")) }
    assert_match(/is remote, and the manifest is a local file.*allow_origins/, e.message)
    Hashfile.open(path("ds"), allow_origins: [elsewhere.url("/files/")]) { |db| assert_equal data, db.to_h }
    key = data.keys.find { |k| data[k].is_a?(String) && Hashfile.shard_of(k, 2) == 1 }
    status, _, err = run_cli("get", path("ds"), key)
    assert_equal [1, true], [status, err.include?("is remote, and the manifest is a local file")], err
    status, out, = run_cli("get", path("ds"), key, "--allow-origin", elsewhere.url("/files/"))
    assert_equal [0, data[key]], [status, out.chomp]
    e = assert_raises(ArgumentError) { Hashfile.open(path("ds"), allow_origins: [elsewhere.url("/files/")], timeout: 5) }
    assert_match(/invalid option timeout: is for remote stores/, e.message)
    store = path("ds/#{manifest["shards"][0]["file"]}")
    e = assert_raises(ArgumentError) { Hashfile.open(store, allow_origins: ["https://example.com/"]) }
    assert_match(/allow_origins.*is for datasets/, e.message)
  ensure
    home&.stop
    elsewhere&.stop
  end

  # What +block+ returns once it returns something, called every 10 ms for
  # at most 10 s.
  def wait_for
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    loop do
      found = yield
      return found if found

      flunk "nothing after 10 s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.01
    end
  end

  # A reload: check of a remote dataset whose server answers slowly holds
  # no Ruby thread: it runs on a thread of its own, so the lookup that
  # starts it answers at once, and another thread keeps running (before,
  # the manifest was fetched inside the lookup with the GVL held: every
  # thread stopped as long as the server took).
  def test_a_slow_manifest_check_holds_no_thread
    skip "network waits, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    nginx = Hashfile::TestServers::Nginx.new
    dir = nginx.file("ds")
    Hashfile.build_sharded(dir, { "a" => "1", "b" => "1" }, shards: 1)
    # A relay that holds every request 1.5 s, in a process of its own, so
    # that its waits are not this process's threads.
    reader, writer = IO.pipe
    relay = Process.spawn(RbConfig.ruby, "-I", File.join(__dir__, "support"), "-rservers", "-e",
                          "r = Hashfile::TestServers::SlowProxy.new(#{nginx.port}, 1.5); puts r.port; $stdout.flush; sleep",
                          out: writer)
    writer.close
    port = Integer(reader.gets)
    db = Hashfile.open("http://127.0.0.1:#{port}/files/ds/hashfile-dataset.json", reload: 0.2, timeout: 20)
    assert_equal "1", db["a"]
    Hashfile.build_sharded(dir, { "a" => "2", "b" => "2" }, shards: 1)
    sleep 0.3 # a check is due
    ticks = []
    ticker = Thread.new { 300.times { ticks << Process.clock_gettime(Process::CLOCK_MONOTONIC); sleep 0.01 } }
    seen = [] # [value, seconds the lookup took]
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 8
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline && seen.dig(-1, 0) != "2"
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      value = db["a"]
      seen << [value, Process.clock_gettime(Process::CLOCK_MONOTONIC) - started]
      sleep 0.01
    end
    ticker.join
    gaps = ticks.each_cons(2).map { |a, b| b - a }
    assert_equal "2", seen.dig(-1, 0), "the new generation is read once its manifest came"
    old = seen.take_while { |v, _| v == "1" }
    assert_operator old.size, :>=, 2, "lookups answered from the generation open while the check ran"
    # (The first lookup in the new generation opens its shard, a request:
    # that one waits, without the GVL.)
    assert_operator old.map(&:last).max, :<, 0.5, "no lookup waited for the manifest"
    assert_operator gaps.max, :<, 0.5, "the other thread kept running"
  ensure
    db&.close
    if relay
      Process.kill(:KILL, relay)
      Process.wait(relay)
    end
    nginx&.stop
  end

  # A remote dataset follows new generations: reload: polls its manifest
  # (one request per check), on_change: :reopen reopens when a later build
  # removed the shards of the generation read (keeping two publishes and
  # retaining none past them, the third build does).
  def test_a_remote_dataset_follows_new_generations
    skip "network waits, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    nginx = Hashfile::TestServers::Nginx.new
    dir = nginx.file("ds")
    Hashfile.build_sharded(dir, { "a" => "1", "b" => "1" }, shards: 3, keep: 2, retain: 0)
    url = nginx.url("/files/ds/hashfile-dataset.json")
    polled = Hashfile.open(url, reload: 0)
    reopening = Hashfile.open(url, on_change: :reopen)
    assert_equal %w[1 1], [polled["a"], reopening["b"]]
    Hashfile.build_sharded(dir, { "a" => "2", "b" => "2" }, shards: 2, keep: 2, retain: 0)
    # The manifest is fetched on a thread of its own: the lookup that starts
    # the check answers from the generation open, and a later one reads the
    # new generation.
    assert_equal "2", wait_for { polled["a"] if polled["a"] == "2" }
    assert_equal 1, polled.generation
    Hashfile.build_sharded(dir, { "a" => "3", "b" => "3" }, shards: 4, keep: 2, retain: 0)
    assert_equal "3", reopening["a"], "its shards are gone; it reopens"
    assert_equal 1, reopening.generation
    assert_match(/invalid option reload: and on_change "reopen" are two ways/, assert_raises(ArgumentError) { Hashfile.open(url, reload: 1, on_change: :reopen) }.message)
  ensure
    polled&.close
    reopening&.close
    nginx&.stop
  end
end
