# frozen_string_literal: true

# The main job on the built-in default: 100,000 random 8-character base-36
# keys and values. Builds a store, looks keys up, and times a cold
# "load then first lookup" against JSON.parse + Hash. Run: `rake demo`.
require_relative "support"

entries = Integer(ENV.fetch("ENTRIES", 100_000))
hash = BenchData.config(entries)
paths = BenchData.files(hash)
keys = hash.keys.sample(5, random: Random.new(1))

build = BenchData.median(3) { Hashfile.build(paths[:hashfile], hash) }
json_first = BenchData.median(7) { JSON.parse(File.read(paths[:json]))[keys[0]] }
hf_first = BenchData.median(101) { Hashfile.open(paths[:hashfile]) { |db| db[keys[0]] } }

puts "Hashfile demo: #{entries} random 8-character base-36 keys and values"
puts format("  built %s (%d bytes; JSON %d bytes) in %.1f ms (%.2f M keys/s, with Ruby-side adds)",
            paths[:hashfile], File.size(paths[:hashfile]), File.size(paths[:json]), build * 1e3, entries / build / 1e6)
Hashfile.open(paths[:hashfile]) do |db|
  keys.each { |k| puts format("  db[%p] => %p (Hash says %p)", k, db[k], hash[k]) }
  puts "  db[\"missing!\"] => #{db["missing!"].inspect}"
  raise "lookup mismatch" unless keys.all? { |k| db[k] == hash[k] } && db["missing!"].nil?

  puts format("  perfect hash: %.2f bits/key", db.info[:mphf_bits_per_key])
end
puts format("  load + first lookup, median: JSON.parse + Hash#[] %.2f ms; Hashfile.open + db[] + close %.1f us: %.0fx faster",
            json_first * 1e3, hf_first * 1e6, json_first / hf_first)
