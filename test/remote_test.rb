# frozen_string_literal: true

require "test_helper"
require "support/servers"
require "hashfile/cli"
require "json"
require "net/http"
require "stringio"

# Remote stores from Ruby, against a real nginx on loopback: the Reader
# API over HTTP, connections and round trips counted from nginx's log,
# batches, errors by class, the GVL released while waiting, interrupts,
# fork, and the CLI.
class RemoteTest < HashfileTest
  N = 20_000

  def setup
    skip "network waits, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    super
    @nginx = Hashfile::TestServers::Nginx.new
    @data = (0...N).to_h { |i| ["key-#{i}", { "i" => i, "name" => "tenant #{i}", "flags" => { "beta" => i.even? } }] }
    Hashfile.build(path("s.hf"), @data)
    @nginx.publish("s.hf", path("s.hf"))
    @url = @nginx.url("/files/s.hf")
  end

  def teardown
    @nginx&.stop
    super
  end

  def test_the_reader_api_reads_as_a_local_store_does
    local = Hashfile.open(path("s.hf"))
    Hashfile.open(@url) do |db|
      assert db.remote?
      refute local.remote?
      assert_equal N, db.size
      (0...N).step(7) { |i| assert_equal @data["key-#{i}"], db["key-#{i}"] }
      assert_nil db["absent"]
      assert_equal "x", db.fetch("absent", "x")
      assert_raises(KeyError) { db.fetch("absent") }
      assert_equal true, db.dig("key-4", "flags", "beta")
      assert db.key?(:"key-5")
      assert_equal [@data["key-1"], nil, @data["key-2"]], db.values_at("key-1", "nope", "key-2")
      assert_equal local.first(300), db.first(300)
      assert_equal local.each.to_a, db.each.to_a
      assert db.verify
      info = db.info
      assert_equal local.info[:sections], info[:sections]
      assert_kind_of String, info[:etag]
      assert_operator info[:cache][:round_trips], :>, 0
      assert_equal({ "i" => 3, "name" => "tenant 3", "flags" => { "beta" => false } }, db["key-3"])
      assert_equal({ i: 3, name: "tenant 3", flags: { beta: false } }, db.get("key-3", symbolize_names: true))
    end
    local.close
  end

  # 10,000 sequential lookups over one TCP connection; open takes one or
  # two requests.
  def test_lookups_reuse_one_connection
    db = Hashfile.open(@url, cache_size: 64 << 10, block_size: 4096)
    opened = @nginx.log.size
    assert_includes 1..2, opened
    10_000.times { |k| i = (k * 7919) % N; assert_equal i, db["key-#{i}"]["i"] }
    log = @nginx.log
    assert_operator log.size, :>, 1000, "a 64 KiB cache misses"
    assert_equal 1, log.map(&:first).uniq.size, "connections: #{log.map(&:first).uniq}"
    assert(log.all? { |l| l[2] == 206 })
  ensure
    db&.close
  end

  def test_values_at_fetches_a_batch_level_by_level
    db = Hashfile.open(@url)
    keys = (0...100).map { |k| "key-#{(k * 197) % N}" }
    before = db.info[:cache][:round_trips]
    assert_equal keys.map { |k| @data[k] }, db.values_at(*keys)
    assert_operator db.info[:cache][:round_trips] - before, :<=, 4
  ensure
    db&.close
  end

  def test_prefetch_index_leaves_one_request_per_lookup
    db = Hashfile.open(@url, prefetch_index: true)
    assert_operator db.info[:cache][:pinned_bytes], :>, 0
    (0...N).step(997) do |i|
      before = db.info[:cache][:requests]
      assert_equal i, db["key-#{i}"]["i"]
      assert_operator db.info[:cache][:requests] - before, :<=, 1
    end
  ensure
    db&.close
  end

  def test_errors_have_classes_naming_the_location
    {
      "/files/none.hf" => [Hashfile::RemoteNotFoundError, 404],
      "/forbidden/s.hf" => [Hashfile::RemoteAccessError, 403],
      "/broken/s.hf" => [Hashfile::RemoteServerError, 500],
      "/moved/s.hf" => [Hashfile::RemoteProtocolError, 302],
      "/whole/s.hf" => [Hashfile::RemoteProtocolError, 200]
    }.each do |where, (klass, status)|
      error = assert_raises(klass, where) { Hashfile.open(@nginx.url(where), retries: 1) }
      assert_equal @nginx.url(where), error.url
      assert_equal status, error.status
      assert_includes error.message, where
      assert_kind_of Hashfile::RemoteError, error
    end
    assert_includes assert_raises(Hashfile::RemoteProtocolError) { Hashfile.open(@nginx.url("/moved/s.hf")) }.message, "/files/moved-here.hf"
    assert_raises(Hashfile::RemoteConnectionError) { Hashfile.open("http://127.0.0.1:#{Hashfile::TestServers.free_port}/s.hf", retries: 0) }
    assert_raises(ArgumentError) { Hashfile.open("s3://bucket-only") }
    assert Hashfile.remote?("HTTPS://host/x.hf")
    assert Hashfile.remote?("s3://b/k")
    refute Hashfile.remote?("config/http.hf")
    refute Hashfile.remote?("ftp://host/x.hf")
    assert_match(/invalid option timeout: is for remote stores \(http:\/\/, https:\/\/, s3:\/\/\), and .*s.hf is a local path/, assert_raises(ArgumentError) { Hashfile.open(path("s.hf"), timeout: 1) }.message)
    assert_match(/reload: is for local/, assert_raises(ArgumentError) { Hashfile.open(@url, reload: 1) }.message)
    assert_raises(ArgumentError) { Hashfile.open(@url, block_size: 10) }
    assert_raises(ArgumentError) { Hashfile.open(@url, no_such_option: 1) }
  end

  # Replaced under the reader: lookups that reach the server raise
  # StaleError; none returns a value of the new store.
  def test_a_replaced_store_raises_stale_error_never_new_values
    db = Hashfile.open(@url, cache_size: 64 << 10, block_size: 4096)
    assert_equal 1, db["key-1"]["i"]
    sleep 1.1 # nginx's ETag is mtime and length
    Hashfile.build(path("new.hf"), (0...N).to_h { |i| ["key-#{i}", "new #{i}"] })
    @nginx.publish("s.hf", path("new.hf"))
    stale = 0
    2000.times do |i|
      assert_equal i, db["key-#{i}"]["i"]
    rescue Hashfile::StaleError => e
      assert_includes e.message, "replaced"
      assert_equal @url, e.path
      stale += 1
    end
    assert_operator stale, :>, 1000
    assert_equal "new 5", Hashfile.open(@url) { |fresh| fresh["key-5"] }
    db.reopen
    assert_equal "new 6", db["key-6"]
  ensure
    db&.close
  end

  # on_change: :reopen: a lookup that finds the object replaced reads the
  # new one; once a key reads new, no key reads old again.
  def test_on_change_reopen_reads_the_new_object
    db = Hashfile.open(@url, on_change: :reopen, cache_size: 64 << 10, block_size: 4096)
    assert_equal 1, db["key-1"]["i"]
    sleep 1.1 # nginx's ETag is mtime and length
    Hashfile.build(path("new.hf"), (0...N).to_h { |i| ["key-#{i}", "new #{i}"] })
    @nginx.publish("s.hf", path("new.hf"))
    seen_new = false
    500.times do |i|
      value = db["key-#{i}"]
      if value.is_a?(String)
        assert_equal "new #{i}", value
        seen_new = true
      else
        refute seen_new, "key-#{i} read old after a new value"
        assert_equal i, value["i"]
      end
    end
    assert seen_new
    assert_equal ["new 7", "new 8"], db.values_at("key-7", "key-8")
    assert_equal "new 9", db.fetch("key-9")
    assert_match(/for remote stores/, assert_raises(ArgumentError) { Hashfile.open(path("s.hf"), on_change: :reopen) }.message)
    assert_raises(ArgumentError) { Hashfile.open(@url, on_change: :ignore) }
  ensure
    db&.close
  end

  # The red team's case: the store replaced by one of the same length with
  # its modification time kept (cp -p, rsync -a, or a rebuild within the
  # second), so nginx's ETag (mtime and length) and Last-Modified do not
  # change. One values_at of 1,000 keys returned 389 old values and 611
  # new ones; now it is all old (from the cache), all new (reopened), or a
  # StaleError, with and without on_change: :reopen, with and without an
  # ETag.
  def test_a_same_length_replacement_with_its_time_kept_never_mixes_a_batch
    keys = (0...1000).map { |i| "key-#{i * 19 % N}" }
    old = @data.values_at(*keys)
    new_data = @data.transform_values { |v| v.merge("name" => v["name"].tr("t", "T")) }
    Hashfile.build(path("new.hf"), new_data)
    assert_equal File.size(path("s.hf")), File.size(path("new.hf"))
    fresh = new_data.values_at(*keys)
    { "/files/s.hf" => :raise, "/no-etag/s.hf" => :raise, "/files/s.hf?reopen" => :reopen }.each do |location, on_change|
      @nginx.publish("s.hf", path("s.hf"))
      db = Hashfile.open(@nginx.url(location.sub("?reopen", "")), on_change: on_change, cache_size: 256 << 10, block_size: 4096)
      assert_equal old.first(10), db.values_at(*keys.first(10))
      mtime = File.mtime(@nginx.file("s.hf"))
      validators = -> { Net::HTTP.start("127.0.0.1", @nginx.port) { |h| h.head("/files/s.hf").to_hash.values_at("etag", "last-modified") } }
      before = validators.call
      @nginx.publish("s.hf", path("new.hf"))
      File.utime(mtime, mtime, @nginx.file("s.hf"))
      assert_equal before, validators.call, "the validators do not tell the two stores apart"
      begin
        got = db.values_at(*keys)
        assert_equal :reopen, on_change, "#{location}: only a reopening reader answers"
        assert_equal fresh, got, "#{location}: the new store, whole"
      rescue Hashfile::StaleError => e
        assert_equal :raise, on_change, location
        assert_match(/header differs/, e.message)
      end
      db.close
    end
  end

  # A Ruby thread relays the answer: a lookup that kept the GVL while it
  # waited would never get it.
  def test_the_gvl_is_released_while_waiting
    proxy = Hashfile::TestServers::SlowProxy.new(@nginx.port, 0.05)
    db = Hashfile.open(proxy.url("/files/s.hf"))
    ticks = 0
    ticker = Thread.new { loop { ticks += 1; sleep 0.005 } }
    assert_equal 11, db["key-11"]["i"]
    assert_equal [@data["key-1"], @data["key-2"]], db.values_at("key-1", "key-2")
    ticker.kill
    assert_operator ticks, :>, 5
  ensure
    db&.close
    proxy&.stop
  end

  def test_thread_raise_interrupts_a_waiting_lookup_promptly
    proxy = Hashfile::TestServers::SlowProxy.new(@nginx.port, 0.0)
    db = Hashfile.open(proxy.url("/files/s.hf"), cache_size: 16 << 10)
    slow = Hashfile::TestServers::SlowProxy.new(@nginx.port, 5.0)
    slow_db = nil
    waiting = Thread.new do
      Thread.current.report_on_exception = false
      slow_db = Hashfile.open(slow.url("/files/s.hf"))
    end
    sleep 0.3
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    waiting.raise(RuntimeError, "stop waiting")
    error = assert_raises(RuntimeError) { waiting.join }
    assert_equal "stop waiting", error.message
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 1.0
    assert_nil slow_db
    assert_equal 9, db["key-9"]["i"], "other readers are unaffected"
  ensure
    db&.close
    proxy&.stop
    slow&.stop
  end

  # Ctrl-C in a process waiting on a slow server: Interrupt is raised
  # within the poll interval, not after the server answers.
  def test_ctrl_c_stops_a_waiting_process_promptly
    slow = Hashfile::TestServers::SlowProxy.new(@nginx.port, 10.0)
    lib = File.expand_path("../lib", __dir__)
    script = "#{DEFAULT_SIGNALS}$stdout.sync = true; require 'hashfile'; puts :ready; " \
             "begin; Hashfile.open(#{slow.url("/files/s.hf").inspect}); puts :answered; rescue Interrupt; puts :interrupted; end"
    IO.popen([RbConfig.ruby, "-I", lib, "-e", script], err: File::NULL) do |child|
      assert_equal "ready", child.gets&.chomp
      sleep 0.5 # inside the open's first request by now
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      Process.kill("INT", child.pid)
      assert_equal "interrupted", child.gets&.chomp
      assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 2.0
    end
  ensure
    slow&.stop
  end

  # After fork the child makes its own connection; the parent keeps its.
  def test_a_forked_child_reads_over_its_own_connection
    db = Hashfile.open(@url)
    assert_equal 1, db["key-1"]["i"]
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      writer.write(JSON.generate((0...200).map { |i| db["key-#{i * 97}"]["i"] }))
      writer.close
      exit!(0)
    end
    writer.close
    from_child = JSON.parse(reader.read)
    Process.wait(pid)
    assert_equal 0, $?.exitstatus
    assert_equal (0...200).map { |i| i * 97 }, from_child
    assert_equal 2, db["key-2"]["i"]
    200.times { |i| assert_equal i * 89, db["key-#{i * 89}"]["i"] }
    assert_operator @nginx.log.map(&:first).uniq.size, :>=, 2
  ensure
    db&.close
  end

  def test_the_cli_takes_urls
    out = StringIO.new
    err = StringIO.new
    assert_equal 0, Hashfile::CLI.new(stdout: out, stderr: err).run(["get", @url, "key-3"])
    assert_equal({ "i" => 3, "name" => "tenant 3", "flags" => { "beta" => false } }, JSON.parse(out.string))
    out = StringIO.new
    assert_equal 0, Hashfile::CLI.new(stdout: out, stderr: err).run(["info", @url, "--json"])
    assert_equal N, JSON.parse(out.string)["entries"]
    out = StringIO.new
    assert_equal 0, Hashfile::CLI.new(stdout: out, stderr: err).run(["verify", @url])
    out = StringIO.new
    assert_equal 0, Hashfile::CLI.new(stdout: out, stderr: err).run(["dump", @url, "--format", "jsonl"])
    assert_equal N, out.string.lines.size
    err = StringIO.new
    assert_equal 1, Hashfile::CLI.new(stdout: StringIO.new, stderr: err).run(["get", @nginx.url("/files/none.hf"), "k"])
    assert_includes err.string, "404"
    # --header, for a location that wants a bearer token.
    private_url = @nginx.url("/private/s.hf")
    err = StringIO.new
    assert_equal 1, Hashfile::CLI.new(stdout: StringIO.new, stderr: err).run(["get", private_url, "key-3"])
    assert_includes err.string, "401"
    out = StringIO.new
    assert_equal 0, Hashfile::CLI.new(stdout: out, stderr: StringIO.new).run(["get", private_url, "key-3", "key-4", "--header", "Authorization: Bearer let-me-in", "--timeout", "5"])
    assert_equal [3, 4], out.string.lines.map { |l| JSON.parse(l)["i"] }
    out = StringIO.new
    assert_equal 0, Hashfile::CLI.new(stdout: out, stderr: StringIO.new).run(["info", private_url, "--header", "Authorization: Bearer let-me-in"])
    assert_match(/cache round_trips +\d+/, out.string)
  end
end

# s3:// stores from Ruby against MinIO on loopback: credentials and
# endpoint from the standard AWS environment variables.
class RemoteS3Test < HashfileTest
  def setup
    skip "network waits, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    unless File.executable?(Hashfile::TestServers::Minio.binary)
      skip_or_fail("HASHFILE_REQUIRE_MINIO", "MinIO is not at #{Hashfile::TestServers::Minio.binary} (bin/setup --minio builds it with Go)")
    end
    super
    @minio = Hashfile::TestServers::Minio.new
    @saved = ENV.to_h.slice("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL")
    ENV["AWS_ACCESS_KEY_ID"] = Hashfile::TestServers::Minio::USER
    ENV["AWS_SECRET_ACCESS_KEY"] = Hashfile::TestServers::Minio::PASSWORD
    ENV["AWS_REGION"] = Hashfile::TestServers::Minio::REGION
    ENV["AWS_ENDPOINT_URL"] = @minio.endpoint
  end

  def teardown
    %w[AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION AWS_ENDPOINT_URL].each { |k| @saved&.key?(k) ? ENV[k] = @saved[k] : ENV.delete(k) }
    @minio&.stop
    super
  end

  def test_s3_stores_read_with_credentials_from_the_environment
    data = (0...5000).to_h { |i| ["k#{i}", [i, "v#{i}"]] }
    Hashfile.build(path("s.hf"), data)
    @minio.put("/stores")
    @minio.put("/stores/x/s.hf", File.binread(path("s.hf")))
    Hashfile.open("s3://stores/x/s.hf") do |db|
      assert db.remote?
      assert_equal 5000, db.size
      (0...5000).step(37) { |i| assert_equal [i, "v#{i}"], db["k#{i}"] }
      assert_equal [[1, "v1"], nil], db.values_at("k1", "nope")
      assert db.verify
    end
    error = assert_raises(Hashfile::RemoteNotFoundError) { Hashfile.open("s3://stores/x/none.hf") }
    assert_equal "s3://stores/x/none.hf", error.url
    ENV["AWS_SECRET_ACCESS_KEY"] = "wrong"
    assert_raises(Hashfile::RemoteAccessError) { Hashfile.open("s3://stores/x/s.hf") }
  end

  # A dataset whose manifest nginx serves and whose shards are on S3: the
  # manifest lists the shards' s3:// URLs, which are read only where the
  # caller allows that bucket (the process's S3 credentials are not the
  # manifest's to spend); each opens when first used.
  def test_a_dataset_with_its_manifest_on_nginx_and_its_shards_on_s3
    data = (0...4000).to_h { |i| ["k#{i}", "v#{i}"] }
    Hashfile.build_sharded(path("ds"), data, shards: 4)
    manifest = JSON.parse(File.read(path("ds/hashfile-dataset.json")))
    @minio.put("/shards")
    manifest["shards"].each do |shard|
      @minio.put("/shards/#{shard["file"]}", File.binread(path("ds/#{shard["file"]}")))
      shard["file"] = "s3://shards/#{shard["file"]}"
    end
    File.write(path("manifest.json"), JSON.generate(manifest))
    nginx = Hashfile::TestServers::Nginx.new
    nginx.publish("hashfile-dataset.json", path("manifest.json"))
    e = assert_raises(Hashfile::DatasetError) { Hashfile.open(nginx.url("/files/hashfile-dataset.json")) }
    assert_match(/shard 0 of 4 \(s3:\/\/shards\/.*: it is not under the manifest's own place/, e.message)
    Hashfile.open(nginx.url("/files/hashfile-dataset.json"), allow_origins: ["s3://shards"]) do |db|
      assert_equal 4000, db.size
      (0...4000).step(41) { |i| assert_equal "v#{i}", db["k#{i}"] }
      assert_equal ["v1", nil], db.values_at("k1", "nope")
      assert(db.info[:shards].all? { |s| s[:file].start_with?("s3://shards/") })
      assert db.verify
    end
  ensure
    nginx&.stop
  end
end
