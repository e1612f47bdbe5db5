# frozen_string_literal: true

# Side-by-side benchmark on the built-in default (100,000 random 8-character
# base-36 keys and values), all in one run, because ratios are what hold on
# a noisy machine. Run: `rake bench` (QUICK=1 for a short run).
require_relative "support"
require "benchmark/ips"
require "msgpack"

QUICK = BenchData::QUICK
IPS = QUICK ? { warmup: 0.2, time: 0.5 } : { warmup: 2, time: 5 }

hash = BenchData.config
paths = BenchData.files(hash)
probe = hash.keys.sample(1000, random: Random.new(7))
results = {}

def report(results, name, report)
  results[name] = report.entries.to_h { |e| [e.label, e.stats.central_tendency] }
end

puts "== cold: load, parse and one lookup (per call) =="
report(results, :cold, Benchmark.ips do |x|
  x.config(**IPS)
  x.report("JSON.parse + Hash#[]") { JSON.parse(File.read(paths[:json]))[probe[0]] }
  x.report("MessagePack.unpack + Hash#[]") { MessagePack.unpack(File.binread(paths[:msgpack]))[probe[0]] }
  x.report("Hashfile.open + db[] + close") { Hashfile.open(paths[:hashfile]) { |db| db[probe[0]] } }
  # The floor: opening the file and reading its first 64 bytes.
  x.report("File.open + read(64) + close") { File.open(paths[:hashfile]) { |f| f.read(64) } }
  x.compare!
end)

puts "\n== warm: one lookup of a present key (same 1,000 random keys) =="
db = Hashfile.open(paths[:hashfile])
# An opt-in memo of decoded, frozen values (docs/RUBY.md, "Hot keys"): the
# same frozen String for the same key, as a Hash gives.
memo = Hashfile.open(paths[:hashfile], memo: 10_000)
# Decode options given once, at open, rather than per call.
frozen = Hashfile.open(paths[:hashfile], freeze: true)
report(results, :warm, Benchmark.ips do |x|
  x.config(**IPS)
  i = 0
  x.report("Hash#[]") { hash[probe[(i += 1) % 1000]] }
  j = 0
  x.report("Hashfile db[]") { db[probe[(j += 1) % 1000]] }
  m = 0
  x.report("Hashfile db[], memo: 10_000") { memo[probe[(m += 1) % 1000]] }
  f = 0
  x.report("Hashfile db.get(k, nil, freeze: true)") { db.get(probe[(f += 1) % 1000], nil, freeze: true) }
  o = 0
  x.report("Hashfile db[], opened with freeze: true") { frozen[probe[(o += 1) % 1000]] }
  # Reference: what Hash#[] costs when it too hands back a new String, as
  # every db[] must (the store's bytes are copied into the String).
  k = 0
  x.report("Hash#[] + String#b copy") { hash[probe[(k += 1) % 1000]].b }
  x.compare!
end)

build = BenchData.median(QUICK ? 1 : 5) { Hashfile.build(File.join(BenchData::DIR, "build.hf"), hash) }
info = db.info
sizes = { json: File.size(paths[:json]), msgpack: File.size(paths[:msgpack]), hashfile: File.size(paths[:hashfile]) }
memo_entries = memo.info[:memo][:entries]
# A memo's memory: what filling one with every key keeps (Ruby's own count
# of its heap, ObjectSpace.memsize_of_all, after a GC on either side).
require "objspace"
filled = Hashfile.open(paths[:hashfile], memo: hash.size)
GC.start
heap_before = ObjectSpace.memsize_of_all
hash.each_key { |key| filled[key] }
GC.start
memo_bytes = (ObjectSpace.memsize_of_all - heap_before).to_f / filled.info[:memo][:entries]
filled.close
db.close
memo.close
frozen.close

cold = results[:cold]
warm = results[:warm]
open_speedup = cold["JSON.parse + Hash#[]"].zero? ? 0 : cold["Hashfile.open + db[] + close"] / cold["JSON.parse + Hash#[]"]
file_ratio = cold["File.open + read(64) + close"] / cold["Hashfile.open + db[] + close"]
warm_ratio = warm["Hash#[]"] / warm["Hashfile db[]"]
copy_ratio = warm["Hash#[] + String#b copy"] / warm["Hashfile db[]"]
memo_ratio = warm["Hash#[]"] / warm["Hashfile db[], memo: 10_000"]
options_ratio = warm["Hashfile db[]"] / warm["Hashfile db.get(k, nil, freeze: true)"]
open_options_ratio = warm["Hashfile db[]"] / warm["Hashfile db[], opened with freeze: true"]
size_ratio = sizes[:hashfile].to_f / sizes[:msgpack]
keys_per_s = hash.size / build
checks = [
  ["open+get vs JSON.parse+Hash#[]", format("%.0fx faster", open_speedup), open_speedup >= 1000],
  ["open+get vs File.open+read(64)", format("%.2fx the time", file_ratio), file_ratio <= 2.0],
  ["warm db[] vs Hash#[]", format("%.2fx the time (%.2fx Hash#[] + copy)", warm_ratio, copy_ratio), warm_ratio <= 1.5],
  ["warm db[] with memo: vs Hash#[]", format("%.2fx the time (%d memoized; %.0f B/entry)", memo_ratio, memo_entries, memo_bytes), memo_ratio <= 1.0],
  ["get(freeze: true) vs db[]", format("%.2fx the time (per-call keywords)", options_ratio), options_ratio <= 1.2],
  ["db[] opened with freeze: vs db[]", format("%.2fx the time (options given at open)", open_options_ratio), open_options_ratio <= 1.2],
  ["perfect hash", format("%.2f bits/key", info[:mphf_bits_per_key]), info[:mphf_bits_per_key] <= 3.0],
  ["file vs MessagePack", format("%.3fx (%d vs %d bytes; JSON %d)", size_ratio, sizes[:hashfile], sizes[:msgpack], sizes[:json]), size_ratio <= 1.3],
  ["build from a Ruby Hash", format("%.2f M keys/s (%.1f ms)", keys_per_s / 1e6, build * 1e3), keys_per_s >= 1e6]
]
puts "\n== summary (#{hash.size} entries) =="
checks.each { |name, value, ok| puts format("  %-32s %-46s %s", name, value, ok ? "meets target" : "MISSES target") }

# The charts in docs/BENCHMARKS.md, from this run (not from a QUICK one).
unless QUICK
  require_relative "chart"
  docs = File.expand_path("../docs", __dir__)
  BenchChart.log_bars(File.join(docs, "compare_cold.svg"), "Load, parse and one lookup, #{hash.size} entries (log scale)",
                      cold.map { |label, ips| [label, 1.0 / ips] })
  BenchChart.log_bars(File.join(docs, "compare_warm.svg"), "One lookup of a present key, warm (log scale)",
                      warm.map { |label, ips| [label, 1.0 / ips] })
  File.write(File.join(BenchData::DIR, "compare.json"), JSON.pretty_generate({ entries: hash.size, results: results, sizes: sizes, build_seconds: build }))
  puts "charts: docs/compare_cold.svg, docs/compare_warm.svg"
end
