# frozen_string_literal: true

require_relative "test_helper"
require "json"
require "open3"
require "timeout"

# What a red team broke (the hostile-inputs issue), each kept as a test:
# another user's link in a shared directory, modes lost on rebuild, a FIFO
# where a store should be, reload: values past what a Duration holds, and
# error messages that quoted a whole input. The remote cases (a batch
# mixing versions, bodies longer than asked for, huge headers, batches
# larger than the cache, multipart lengths near 2**64) are in
# crates/hashfile-remote/tests/http.rs and test/remote_test.rb.
class HostileTest < HashfileTest
  def setup
    super
    skip "not run under GC.stress" if ENV["HASHFILE_GC_STRESS"] == "1" && name != "test_every_option_refuses_extreme_values_with_an_argument_error"
  end

  def root?
    Process.euid.zero?
  end

  # As root, `nobody` plants shared/out.hf -> a root-only file (setpriv
  # runs ln as that user). A build refuses to write through it, names the
  # link and its owner, and leaves the target as it was; before, the
  # target was replaced by a world-readable store.
  def test_a_link_another_user_planted_is_refused
    skip_or_fail("HASHFILE_REQUIRE_ROOT", "needs root and setpriv to plant a link as nobody") unless root? && system("which setpriv > /dev/null 2>&1")
    File.chmod(0o755, tmpdir)
    shared = path("shared")
    Dir.mkdir(shared)
    File.chmod(0o1777, shared)
    victim = path("secret.conf")
    File.write(victim, "secret")
    File.chmod(0o600, victim)
    assert system("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "ln", "-s", victim, File.join(shared, "out.hf")), "ln as nobody"
    link = File.join(shared, "out.hf")
    assert_equal 65_534, File.lstat(link).uid

    e = assert_raises(Hashfile::UnsafeLinkError) { Hashfile.build(link, { "a" => "1" }) }
    assert_equal [link, 65_534], [e.path, e.owner]
    assert_match(/#{Regexp.escape(link)}: refusing to write through a symbolic link owned by uid 65534/, e.message)
    status, out, err = run_cli("build", write_json, "-o", link)
    assert_equal 1, status, out
    assert_match(/refusing to write through a symbolic link owned by uid 65534/, err)
    refute_match(/wrote/, out)
    assert_equal ["secret", 0o600], [File.read(victim), File.stat(victim).mode & 0o7777]
    assert_equal ["out.hf"], Dir.children(shared)
  end

  # 0600 came back 0644 after a rebuild, 0640 root:nogroup as 0644
  # root:root, 4755 as 0644. Now the mode (and the group, where the
  # process may set it) of the file replaced is kept.
  def test_a_rebuild_keeps_mode_and_group
    store = path("store.hf")
    Hashfile.build(store, { "a" => "1" })
    assert_equal 0o666 & ~File.umask, File.stat(store).mode & 0o7777, "a new file: 0666 less the umask"
    [0o600, 0o640, 0o4755, 0o444].each do |mode|
      File.chmod(mode, store)
      Hashfile.build(store, { "a" => "2" })
      assert_equal mode, File.stat(store).mode & 0o7777, format("%o", mode)
      assert_equal 0, run_cli("build", write_json, "-o", store, "-q")[0]
      assert_equal mode, File.stat(store).mode & 0o7777, format("CLI, %o", mode)
    end
    skip_or_fail("HASHFILE_REQUIRE_ROOT", "the group needs root") unless root?
    File.chown(nil, 65_534, store)
    File.chmod(0o640, store)
    Hashfile.build(store, { "a" => "3" })
    assert_equal [0o640, 65_534], [File.stat(store).mode & 0o7777, File.stat(store).gid]
  end

  # A value a lookup cannot allocate: a compressed store decoding to 1,024
  # times its size aborted Ruby, Python and the CLI (SIGABRT) under a
  # memory limit, as did a sparse 1 TiB store (the Rust tests:
  # crates/hashfile/tests/hostile_lengths.rs, and a lying server in
  # crates/hashfile-remote/tests/hostile.rs). Children under RLIMIT_AS a
  # little above what they use read a value of 128 MB: each read raises
  # NoMemoryError (or LimitError under max_value_size), the CLI says so and
  # exits 1, and the process goes on.
  def test_a_value_larger_than_memory_allows_raises_instead_of_aborting
    value = Array.new(500_000) { ("\0" * 255) + rand(256).chr }.join # 128 MB
    Hashfile.build(path, { "big" => value, "small" => "s" }, compression: "zstd")
    assert_operator File.size(path), :<, 16 << 20, "stored compressed"
    limit = <<~RUBY
      vm = File.read("/proc/self/status")[/VmSize:\\s+(\\d+)/, 1].to_i * 1024
      Process.setrlimit(:AS, vm + (48 << 20))
    RUBY
    script = <<~RUBY
      dbs = [Hashfile.open(#{path.inspect}), Hashfile.open(#{path.inspect}, max_value_size: 64 << 20)]
      #{limit}
      dbs.each_with_index do |db, i|
        { "get" => -> { db["big"] }, "verify" => -> { db.verify }, "each" => -> { db.each { nil } },
          "values_at" => -> { db.values_at("small", "big") } }.each do |what, call|
          call.call
          puts "\#{i} \#{what}: no error"
        rescue NoMemoryError, Hashfile::Error => e
          puts "\#{i} \#{what}: \#{e.class}: \#{e.message}"
        end
        puts "\#{i} small: \#{db["small"]}"
      end
    RUBY
    out, err, status = Open3.capture3(RbConfig.ruby, "-I#{File.expand_path("../lib", __dir__)}", "-rhashfile", "-e", script)
    refute status.signaled?, "ended by signal #{status.termsig}: #{out}#{err}"
    assert status.success?, out
    %w[get verify each values_at].each do |what|
      assert_match(/^0 #{what}: NoMemoryError: out of memory: cannot allocate \d+ bytes/, out)
      assert_match(/^1 #{what}: Hashfile::LimitError: .*the value of key "big" decodes to 128000000 bytes, over max_value_size \(67108864 bytes\)/, out)
    end
    assert_match(/^0 small: s$/, out)
    assert_match(/^1 small: s$/, out)
    cli = "require 'hashfile/cli'; #{limit}; exit Hashfile::CLI.new.run(ARGV)"
    _, err, status = Open3.capture3(RbConfig.ruby, "-I#{File.expand_path("../lib", __dir__)}", "-e", cli, "get", path, "big")
    refute status.signaled?, "the CLI ended by signal #{status.termsig}: #{err}"
    assert_equal 1, status.exitstatus, err
    assert_match(/hashfile: out of memory: cannot allocate \d+ bytes/, err)
  end

  # Opening a FIFO blocked forever in open(2), holding the GVL: Timeout,
  # other threads and signals were ignored. Now the type is checked first
  # and the open never waits: a FormatError naming what it is, at once.
  # A child process runs it, so that a regression fails instead of hanging.
  def test_opening_a_fifo_is_an_error_at_once
    File.mkfifo(path("store.hf"))
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    reader, writer = IO.pipe
    pid = spawn(RbConfig.ruby, "-I#{File.expand_path("../lib", __dir__)}", "-rhashfile", "-e", <<~RUBY, out: writer)
      begin
        Hashfile.open(#{path("store.hf").inspect})
      rescue Hashfile::FormatError => e
        puts e.message
      end
    RUBY
    writer.close
    unless Timeout.timeout(20) { Process.wait(pid) }
      flunk "open of a FIFO did not return"
    end
    assert_match(/store.hf: a FIFO \(named pipe\), not a regular file/, reader.read)
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 15
    status, _, err = run_cli("info", path("store.hf"))
    assert_equal [1, true], [status, err.include?("a FIFO (named pipe), not a regular file")]
  end

  # A FIFO renamed over a reload: path: the reload fails (reload_error)
  # without blocking, and the old store goes on serving.
  def test_a_fifo_renamed_over_a_reloading_store_does_not_block
    store = path("store.hf")
    Hashfile.build(store, { "a" => "1" })
    db = Hashfile.open(store, reload: 0)
    File.mkfifo(path("fifo"))
    File.rename(path("fifo"), store)
    Timeout.timeout(10) { assert_equal "1", db["a"] }
    assert_match(/a FIFO \(named pipe\)/, db.reload_error)
  ensure
    db&.close
  end

  # A FIFO as a build input is a stream (process substitution gives one),
  # read when its writer comes. Waiting for a writer that never comes used
  # to block in open(2) on the build thread, and Timeout then hung the
  # caller for ever; now the wait looks at the cancel flag every 50 ms.
  def test_a_build_waiting_on_a_fifo_input_stops_on_timeout
    File.mkfifo(path("in.jsonl"))
    writer = Thread.new { sleep 0.2; File.write(path("in.jsonl"), "[\"a\", 1]\n") }
    assert_equal 1, Hashfile.build_from(path("in.jsonl"), path("a.hf"))[:entries]
    writer.join
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_raises(Timeout::Error) { Timeout.timeout(0.5) { Hashfile.build_from(path("in.jsonl"), path("b.hf")) } }
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 5
    refute File.exist?(path("b.hf"))
    assert_empty Dir.children(tmpdir).grep(/\.tmp\z/)
  end

  # reload: 1e300, 2**64 and Float::INFINITY were a Rust panic ("cannot
  # convert float seconds to Duration") that even rescue Exception could
  # not catch. Every value out of range is an ArgumentError naming it.
  def test_reload_out_of_range_is_an_argument_error
    Hashfile.build(path, { "a" => "1" })
    [1e300, 2**64, Float::INFINITY, -Float::INFINITY, Float::NAN, -1, -0.5, 86_401].each do |seconds|
      e = assert_raises(ArgumentError, seconds.inspect) { Hashfile.open(path, reload: seconds) }
      assert_match(/invalid option reload: must be a number of seconds from 0 to 86400/, e.message)
    end
    [0, 0.001, 86_400].each { |seconds| Hashfile.open(path, reload: seconds, &:size) }
  end

  EXTREMES = [nil, true, -1, 0, 1, 2**31, 2**32, 2**63, 2**64, -2**64, 2**200, 1e300, -1e300, 0.5, Float::INFINITY, -Float::INFINITY, Float::NAN, "x", :x, [], {}].freeze

  # Every option of open (local and remote), build and build_from fed
  # every extreme: it works, or raises ArgumentError, TypeError or a
  # Hashfile::Error, never an internal error (a caught panic) and never a
  # crash. Remote options go to a closed port, so nothing is fetched.
  def test_every_option_refuses_extreme_values_with_an_argument_error
    Hashfile.build(path, { "a" => "1" })
    json = write_json
    url = "http://127.0.0.1:9/none.hf"
    calls = {}
    %i[reload verify symbolize_names freeze raw on_change max_value_size].each { |o| calls["open #{o}"] = ->(v) { Hashfile.open(path, o => v, &:size) } }
    (Hashfile::REMOTE_DEFAULTS.keys + %i[headers s3_endpoint s3_region]).each do |o|
      calls["open URL #{o}"] = ->(v) { Hashfile.open(url, o => v, connect_timeout: 0.2, retries: 0, &:size) }
    end
    Hashfile::BUILD_DEFAULTS.each_key { |o| calls["build #{o}"] = ->(v) { Hashfile.build(path("out.hf"), { "a" => "1" }, o => v) } }
    (Hashfile::IMPORT_DEFAULTS.keys + %i[threads format]).each { |o| calls["build_from #{o}"] = ->(v) { Hashfile.build_from(json, path("out.hf"), o => v) } }
    values = ENV["HASHFILE_GC_STRESS"] == "1" ? EXTREMES.first(6) : EXTREMES
    calls.each do |what, call|
      values.each do |value|
        call.call(value)
      rescue ArgumentError, TypeError, Hashfile::Error, SystemCallError => e
        refute_match(/internal error|panicked/, e.message, "#{what} #{value.inspect}")
      end
    end
  end

  # A malformed 10 MB JSON string gave a ParseError of 10,000,127 bytes,
  # and a 1 GB one used 4.1 GB. Messages now quote a bounded excerpt, with
  # the position, for every importer.
  def test_parse_errors_quote_a_bounded_excerpt
    big = "x" * 2_000_000
    inputs = {
      "pairs.json" => JSON.generate({ "a" => big }).sub(/\}\z/, ", #{big}}"),
      "records.jsonl" => "#{JSON.generate({ "key" => 1.5, "value" => big })}\n",
      "key.jsonl" => "#{JSON.generate({ big => 1 })}\n",
      "rows.csv" => "key,value\n\"#{big}\"x,1\n",
      "doc.yaml" => "a: [#{big}\n",
      "deep.json" => "{\"#{big}\": #{"[" * 200}}",
      "fields.json" => "{#{(1..20).map { |i| "\"#{i}#{big}\": 1" }.join(", ")}}",
    }
    inputs.each do |name, text|
      File.write(path(name), text)
      options = name == "fields.json" ? { records_at: "nope" } : {}
      e = assert_raises(Hashfile::ParseError, name) { Hashfile.build_from(path(name), path("out.hf"), **options) }
      assert_operator e.message.bytesize, :<, 1_000, "#{name}: #{e.message[0, 300]}"
      assert_match(/#{Regexp.escape(name)}: (line|entry|input)/, e.message)
    end
  end

  private

  def write_json
    File.write(path("in.json"), "{\"a\": \"1\"}")
    path("in.json")
  end
end
