# frozen_string_literal: true

# Where the time of `Hashfile.open(path) { |db| db[k] }` goes, step by
# step, side by side with `File.open(path) { |f| f.read(64) }` in one run
# (docs/RUBY.md, "Opening"). A store opens for positioned reads and is
# mapped after Hashfile's first 16 lookups (or at once by a batch such as values_at, an
# iteration or a verify); the last rows show what the map would cost a
# one-lookup open. Run: `ruby bench/open.rb` (QUICK=1 for a short run).
require_relative "support"
require "benchmark/ips"

IPS = BenchData::QUICK ? { warmup: 0.2, time: 0.5 } : { warmup: 2, time: 5 }
hash = BenchData.config
path = BenchData.files(hash)[:hashfile]
key = hash.keys.sample(random: Random.new(7))
options = {}

rows = Benchmark.ips do |x|
  x.config(**IPS)
  x.report("File.stat") { File.stat(path) }
  x.report("File.open + close") { File.open(path) {} }
  x.report("File.open + read(64) + close") { File.open(path) { |f| f.read(64) } }
  x.report("native open + close (Reader._open)") { Hashfile::Reader._open(path, options, nil).close }
  x.report("Hashfile.open + close") { Hashfile.open(path).close }
  x.report("Hashfile.open + db[] + close") { Hashfile.open(path) { |db| db[key] } }
  # values_at, a batch, maps the store first: the open of a mapped store, as before
  # deferred maps (an mmap, a fault per page first touched, an munmap).
  x.report("Hashfile.open + map + db[] + close") { Hashfile.open(path) { |db| db.values_at(key) } }
end
us = rows.entries.to_h { |e| [e.label, 1e6 / e.stats.central_tendency] }
floor = us["File.open + read(64) + close"]
puts "\n== open, step by step (#{hash.size} entries; µs per call, and against File.open + read(64)) =="
us.each { |label, t| puts format("  %-40s %7.2f µs  %5.2fx", label, t, t / floor) }
