# frozen_string_literal: true

# Remote stores (issue 12): a store of ENTRIES tenants served by nginx on
# loopback, read with Hashfile.open("http://..."), side by side in one run
# with a bare keep-alive ranged GET (Net::HTTP) of the same size to the
# same server. Reports:
# - requests, round trips and bytes per lookup, cold and with the index
#   prefetched; TCP connections for 10,000 sequential lookups (nginx's log);
# - p50/p99 of a lookup that takes one request against the bare GET;
# - with 20 ms added to every round trip (a relay that holds each request
#   20 ms): open + first lookup, and 100 keys by values_at against 100
#   sequential [];
# - the cache's memory;
# - the bytes each request costs to carry the store's header (the version
#   check), and batches far larger than the cache (requests, peak RSS).
#
#   ruby bench/remote.rb            # 1,000,000 entries
#   QUICK=1 ruby bench/remote.rb    # a few seconds: checks it runs (CI)

# Each line as printed: a log cut short (a CI time limit) shows where
# the run was.
$stdout.sync = true

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
$LOAD_PATH.unshift File.expand_path("../test", __dir__)
require "hashfile"
require "support/servers"
require "net/http"
require "json"
require "fileutils"

QUICK = ENV["QUICK"] == "1"
ENTRIES = Integer(ENV.fetch("ENTRIES", QUICK ? 20_000 : 1_000_000))
SAMPLES = QUICK ? 200 : 2_000
SEQUENTIAL = QUICK ? 1_000 : 10_000
LATENCY = 0.020
DATA = File.expand_path("data/remote-#{ENTRIES}", __dir__)

def say(text) = puts("[remote] #{text}")
def clock = Process.clock_gettime(Process::CLOCK_MONOTONIC)
def key(i) = format("tenant:%07d", i)

def percentile(sorted, p) = sorted[((sorted.size - 1) * p).round]

def timed
  started = clock
  yield
  clock - started
end

store = File.join(DATA, "store.hf")
unless File.exist?(store)
  say "building #{ENTRIES} tenants into #{store}"
  FileUtils.mkdir_p(DATA)
  rng = Random.new(7)
  Hashfile.build(store) do |w|
    ENTRIES.times do |i|
      w[key(i)] = { "plan" => %w[free team pro][rng.rand(3)], "limits" => { "api" => rng.rand(10_000) }, "flags" => { "beta" => rng.rand(2).zero? }, "name" => "Tenant #{i}" }
    end
  end
end

nginx = Hashfile::TestServers::Nginx.new
nginx.publish("store.hf", store)
url = nginx.url("/files/store.hf")
rng = Random.new(42)
results = {}
say "#{ENTRIES} entries, #{File.size(store)} bytes, served by nginx on 127.0.0.1:#{nginx.port}"

# Open and cold lookups, default options.
log_before = nginx.log.size
db = nil
open_time = timed { db = Hashfile.open(url) }
results[:open_requests] = nginx.log.size - log_before
per = []
SAMPLES.times do
  before = db.info[:cache]
  db[key(rng.rand(ENTRIES))]
  after = db.info[:cache]
  per << [after[:requests] - before[:requests], after[:round_trips] - before[:round_trips], after[:bytes_fetched] - before[:bytes_fetched]]
end
# The first lookups are the cold ones; the cache warms as it goes.
cold = per.first(20)
results[:cold] = { requests: cold.sum { |r| r[0] } / cold.size.to_f, round_trips_max: cold.map { |r| r[1] }.max, bytes: cold.sum { |r| r[2] } / cold.size }
results[:warming] = { requests: per.sum { |r| r[0] } / per.size.to_f }
db.close
say format("open: %d request(s), %.2f ms; cold lookups: %.2f requests, at most %d round trips, %d bytes each", results[:open_requests], open_time * 1e3, results[:cold][:requests], results[:cold][:round_trips_max], results[:cold][:bytes])

# The index prefetched, a cache of one block: every lookup is one request
# for its record's block. Side by side with a bare ranged GET of a block.
db = Hashfile.open(url, prefetch_index: true, cache_size: Hashfile::REMOTE_DEFAULTS[:block_size])
block = Hashfile::REMOTE_DEFAULTS[:block_size]
size = File.size(store)
http = Net::HTTP.new("127.0.0.1", nginx.port)
http.start
lookup_ms = []
get_ms = []
requests_before = db.info[:cache][:requests]
SAMPLES.times do
  k = key(rng.rand(ENTRIES))
  lookup_ms << timed { db[k] } * 1e3
  offset = rng.rand(size - block) / block * block
  request = Net::HTTP::Get.new("/files/store.hf", "Range" => "bytes=#{offset}-#{offset + block - 1}")
  get_ms << timed { http.request(request).body } * 1e3
end
results[:one_request] = { requests: (db.info[:cache][:requests] - requests_before) / SAMPLES.to_f, pinned: db.info[:cache][:pinned_bytes] }
http.finish
lookup_ms.sort!
get_ms.sort!
results[:latency] = { lookup_p50: percentile(lookup_ms, 0.5), lookup_p99: percentile(lookup_ms, 0.99), get_p50: percentile(get_ms, 0.5), get_p99: percentile(get_ms, 0.99) }
db.close
say format("one-request lookups (index prefetched, %d bytes pinned): %.2f requests each; p50 %.3f ms vs bare GET %.3f ms (%.2fx), p99 %.3f vs %.3f ms (%.2fx)",
           results[:one_request][:pinned], results[:one_request][:requests], results[:latency][:lookup_p50], results[:latency][:get_p50],
           results[:latency][:lookup_p50] / results[:latency][:get_p50], results[:latency][:lookup_p99], results[:latency][:get_p99], results[:latency][:lookup_p99] / results[:latency][:get_p99])

# Fully cached lookups: no request.
db = Hashfile.open(url)
hot = (0...100).map { key(rng.rand(ENTRIES)) }
hot.each { |k| db[k] }
before = db.info[:cache][:requests]
hot_ms = (0...SAMPLES).map { timed { db[hot[rng.rand(100)]] } * 1e3 }.sort
results[:cached] = { p50_us: percentile(hot_ms, 0.5) * 1e3, requests: db.info[:cache][:requests] - before }
db.close
say format("cached lookups: p50 %.1f us, %d requests", results[:cached][:p50_us], results[:cached][:requests])

# Connections for sequential lookups, through a small cache so that most
# reach the server.
log_before = nginx.log.size
db = Hashfile.open(url, cache_size: 256 << 10)
SEQUENTIAL.times { db[key(rng.rand(ENTRIES))] }
log = nginx.log.drop(log_before)
results[:sequential] = { lookups: SEQUENTIAL, requests: log.size, connections: log.map(&:first).uniq.size, resident: db.info[:cache][:resident_bytes] }
db.close
say format("%d sequential lookups: %d requests over %d TCP connection(s); cache holds %d bytes", SEQUENTIAL, log.size, results[:sequential][:connections], results[:sequential][:resident])

# What tying every answer to the version opened costs (the hostile-inputs
# issue): each request also asks for the store's header (296 bytes), so a
# one-range answer becomes a two-part multipart body. Bytes on the wire per
# request from nginx's log ($bytes_sent), cold lookups on a fresh reader.
log_before = nginx.log.size
db = Hashfile.open(url)
fetched_before = db.info[:cache][:bytes_fetched]
(QUICK ? 50 : 500).times { db[key(rng.rand(ENTRIES))] }
fetched = db.info[:cache][:bytes_fetched] - fetched_before
db.close
sent = nginx.log.drop(log_before).drop(2) # open's two requests aside
overhead = (sent.sum(&:last) - fetched) / sent.size.to_f
# The same server's overhead for a plain one-range answer, for comparison.
log_before = nginx.log.size
Net::HTTP.start("127.0.0.1", nginx.port) do |h|
  20.times { |i| h.request(Net::HTTP::Get.new("/files/store.hf", "Range" => "bytes=#{i * block}-#{(i + 1) * block - 1}")).body }
end
plain = nginx.log.drop(log_before).sum { |l| l.last - block } / 20.0
results[:version_check] = { requests: sent.size, bytes_sent: sent.sum(&:last), bytes_fetched: fetched, overhead_per_request: overhead, plain_overhead: plain }
say format("every request carries the header: %d requests sent %d bytes for %d bytes of blocks: %.0f bytes besides the blocks per request, against %.0f for a plain one-range answer: %.0f bytes (%.1f%% of the bytes sent) for the version check",
           sent.size, sent.sum(&:last), fetched, overhead, plain, overhead - plain, (overhead - plain) * sent.size * 100.0 / sent.sum(&:last))

# Batches larger than the cache: in a child process each, so that the peak
# RSS (VmHWM) is the batch's alone. Before, 20,000 keys took a request per
# key and 1M keys with a 4 MiB cache reached 15 GB.
def batch_in_child(url, count, entries, cache_size)
  script = <<~RUBY
    db = Hashfile.open(#{url.inspect}#{", cache_size: #{cache_size}" if cache_size})
    keys = Array.new(#{count}) { |i| format("tenant:%07d", (i * 7919) % #{entries}) }
    before = File.read("/proc/self/status")[/VmRSS:[[:space:]]+([[:digit:]]+)/, 1].to_i * 1024
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    found = db.values_at(*keys).count { |v| v }
    seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    peak = File.read("/proc/self/status")[/VmHWM:[[:space:]]+([[:digit:]]+)/, 1].to_i * 1024
    c = db.info[:cache] || {} # none for a local file
    puts [found, c.fetch(:requests, 0), c.fetch(:round_trips, 0), c.fetch(:bytes_fetched, 0), before, peak, seconds].join(" ")
  RUBY
  out = IO.popen([RbConfig.ruby, "-I#{File.expand_path("../lib", __dir__)}", "-rhashfile", "-e", script], &:read)
  found, requests, trips, bytes, before, peak, seconds = out.split.map(&:to_f)
  { keys: count, found: found.to_i, requests: requests.to_i, round_trips: trips.to_i, bytes_fetched: bytes.to_i, rss_before: before.to_i, peak_rss: peak.to_i, seconds: seconds, cache_size: cache_size }
end
# The same batches on the local file (a memory map) show what the values
# themselves take as Ruby objects.
big_batches = [[QUICK ? 2_000 : 20_000, Hashfile::REMOTE_DEFAULTS[:cache_size]], [QUICK ? 20_000 : 1_000_000, 4 << 20]]
results[:big_batches] = big_batches.map do |count, cache|
  { remote: batch_in_child(url, count, ENTRIES, cache), local: batch_in_child(store, count, ENTRIES, nil) }
end
results[:big_batches].each do |pair|
  r = pair[:remote]
  say format("values_at of %d keys, %d MiB cache: %d found, %d requests (%d round trips), %.0f MB fetched, RSS %.0f MB with the keys made, peak %.0f MB, %.1f s; the same on the local file: peak %.0f MB, %.1f s",
             r[:keys], r[:cache_size] >> 20, r[:found], r[:requests], r[:round_trips], r[:bytes_fetched] / 1e6, r[:rss_before] / 1e6, r[:peak_rss] / 1e6, r[:seconds], pair[:local][:peak_rss] / 1e6, pair[:local][:seconds])
end

# 20 ms more per round trip.
proxy = Hashfile::TestServers::SlowProxy.new(nginx.port, LATENCY)
slow_url = proxy.url("/files/store.hf")
first = timed { Hashfile.open(slow_url) { |d| d[key(1)] } }
keys = (0...100).map { key(rng.rand(ENTRIES)) }
# Each on a reader of its own, opened first: cold caches, open not timed.
batch_db = Hashfile.open(slow_url)
trips = batch_db.info[:cache][:round_trips]
batch = timed { batch_db.values_at(*keys) }
batch_trips = batch_db.info[:cache][:round_trips] - trips
sequential_db = Hashfile.open(slow_url)
trips = sequential_db.info[:cache][:round_trips]
sequential = timed { keys.each { |k| sequential_db[k] } }
sequential_trips = sequential_db.info[:cache][:round_trips] - trips
[batch_db, sequential_db].each(&:close)
proxy.stop
results[:latency_20ms] = { open_first: first, batch: batch, batch_round_trips: batch_trips, sequential: sequential, sequential_round_trips: sequential_trips }
say format("+20 ms per round trip: open + first lookup %.0f ms (%.1f round trips of 20 ms); 100 keys: values_at %.0f ms (%d round trips), sequential [] %.0f ms (%d round trips): %.1fx",
           first * 1e3, first / LATENCY, batch * 1e3, batch_trips, sequential * 1e3, sequential_trips, sequential / batch)
nginx.stop

FileUtils.mkdir_p(DATA)
File.write(File.join(DATA, "results.json"), JSON.pretty_generate(results)) unless QUICK
