# frozen_string_literal: true

# Lookups of keys spread over the whole store, against a Hash of the same
# pairs, in one run: `Hash#[]` and `db[]` on the same probe keys (every key
# of the table once, in a random order, up to PROBES of them), alternating
# ROUNDS times after an untimed pass each; the fastest round of each.
# bench/compare.rb measures 1,000 hot keys, which a Hash keeps in the CPU's
# caches; here neither can (from about 1,000,000 entries; QUICK=1's 20,000
# fit in the caches).
#
#   ruby bench/whole_store.rb                    # 100,000 and 1,000,000 entries
#   SIZES=10000000 ruby bench/whole_store.rb     # 10,000,000 (a 1 GB Hash)
#   KEYS=own ruby bench/whole_store.rb           # probing with the Hash's keys
#
# Keys and values are the built-in default's (random 8-character base-36).
require_relative "support"

sizes = ENV.fetch("SIZES", BenchData::QUICK ? "20000" : "100000,1000000").split(",").map { |s| Integer(s.delete("_")) }
rounds = Integer(ENV.fetch("ROUNDS", BenchData::QUICK ? 1 : 3))
probes_max = Integer(ENV.fetch("PROBES", 1_000_000))
own_keys = ENV["KEYS"] == "own"

# ns per lookup of `probe` through the block, `rounds` times; the fastest.
def time_lookups(probe)
  t = BenchData.clock
  i = 0
  n = probe.size
  while i < n
    yield probe[i]
    i += 1
  end
  (BenchData.clock - t) / n * 1e9
end

rows = sizes.map do |entries|
  hash = BenchData.config(entries)
  path = File.join(BenchData::DIR, "whole-#{entries}.hf")
  FileUtils.mkdir_p(BenchData::DIR)
  Hashfile.build(path, hash)
  # Copies of the keys, as an app's keys come from a request or a file, not
  # from the Hash itself; KEYS=own probes with the Hash's own key objects,
  # which lets it skip reading the stored key (the same object).
  probe = hash.keys.sample(probes_max, random: Random.new(7))
  probe = probe.map { |k| +k.dup } unless own_keys
  best = { hash: Float::INFINITY, db: Float::INFINITY }
  Hashfile.open(path) do |db|
    db.values_at(probe.first) # maps the store, as the 16th lookup would
    # An untimed pass each first: the store's pages are faulted in once.
    time_lookups(probe) { |k| hash[k] }
    time_lookups(probe) { |k| db[k] }
    rounds.times do
      best[:hash] = [best[:hash], time_lookups(probe) { |k| hash[k] }].min
      best[:db] = [best[:db], time_lookups(probe) { |k| db[k] }].min
    end
  end
  hash = nil
  GC.start
  { entries: entries, probes: probe.size, hash_ns: best[:hash], db_ns: best[:db] }
end

puts "== keys spread over the whole store (#{own_keys ? "the Hash's own key objects" : "copies of the keys"}; #{rounds} rounds each, the fastest; ns per lookup) =="
rows.each do |r|
  ratio = r[:db_ns] / r[:hash_ns]
  target = r[:entries] <= 1_000_000 ? format("target <= 0.80: %s", ratio <= 0.8 ? "meets" : "MISSES") : "shown"
  puts format("  %11d entries, %9d keys: Hash#[] %6.1f ns, db[] %6.1f ns: %.2fx (%s)",
              r[:entries], r[:probes], r[:hash_ns], r[:db_ns], ratio, target)
end
