# frozen_string_literal: true

# The app every variant serves: each request does LOOKUPS lookups of
# random tenants in a 1,000,000-entry config (nested: plan, limits, flags,
# region) and answers a small JSON body. VARIANT picks where the config
# lives (run.rb sets it, and DATA, the directory of the data files).
require "json"

VARIANT = ENV.fetch("VARIANT")
DATA = ENV.fetch("DATA")
LOOKUPS = 15
ENTRIES = Integer(ENV.fetch("ENTRIES"))

loading = Process.clock_gettime(Process::CLOCK_MONOTONIC)
case VARIANT
when "json"
  CONFIG = JSON.parse(File.read(File.join(DATA, "config.json")))
  LOOKUP = ->(key) { CONFIG[key] }
when "msgpack"
  require "msgpack"
  CONFIG = MessagePack.unpack(File.binread(File.join(DATA, "config.msgpack")))
  LOOKUP = ->(key) { CONFIG[key] }
when "sqlite"
  require "sqlite3"
  # A connection per process (one must not cross a fork), opened on first
  # use; a prepared statement; the nested value stored as JSON.
  LOOKUP = lambda do |key|
    db = Thread.current[:hashfile_bench_sqlite] ||= begin
      conn = SQLite3::Database.new(File.join(DATA, "config.sqlite3"), readonly: true)
      [conn, conn.prepare("SELECT value FROM config WHERE key = ?")]
    end
    row = db[1].execute(key).first
    row && JSON.parse(row[0])
  end
when "hashfile"
  $LOAD_PATH.unshift File.expand_path("../../lib", __dir__)
  require "hashfile"
  CONFIG = Hashfile.open(File.join(DATA, "config.hf"))
  LOOKUP = ->(key) { CONFIG[key] }
else
  abort "unknown VARIANT #{VARIANT}"
end
# For run.rb's memory-after-compaction phase: SIGPWR (which Puma does not
# use) makes a worker run GC.compact, then write a marker file. The trap
# only starts a thread: GC.compact is not safe to run inside a trap handler.
Signal.trap("PWR") do
  Thread.new do
    GC.compact
    File.write(File.join(DATA, "compacted-#{Process.pid}"), "")
  end
end

# For run.rb: the config's share of the boot.
warn format("CONFIG_LOADED_IN=%.6f", Process.clock_gettime(Process::CLOCK_MONOTONIC) - loading)

run lambda { |env|
  if env["PATH_INFO"] == "/pid"
    [200, { "content-type" => "text/plain" }, [Process.pid.to_s]]
  else
    rng = Random.new
    enabled = 0
    api = 0
    LOOKUPS.times do
      tenant = LOOKUP.call(format("tenant:%07d", rng.rand(ENTRIES)))
      enabled += 1 if tenant["flags"]["checkout"]
      api += tenant["limits"]["api"]
    end
    [200, { "content-type" => "application/json" }, [JSON.generate({ enabled: enabled, api: api })]]
  end
}
