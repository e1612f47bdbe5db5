# frozen_string_literal: true

# Typed values, side by side in one run: decoding a typical nested value
# (about 20 fields, two levels) with db[] against MessagePack.unpack and
# JSON.parse of the same value; db.dig into a large nested value against
# Hash#dig on a parsed copy (and against parsing it first); stored size
# against MessagePack. Run: `ruby bench/typed.rb` (QUICK=1 for a
# short run).
require_relative "support"
require "benchmark/ips"
require "msgpack"

QUICK = BenchData::QUICK
IPS = QUICK ? { warmup: 0.2, time: 0.5 } : { warmup: 2, time: 5 }

# A typical service setting: 20 fields, two levels, the usual mix of types.
TYPICAL = {
  "name" => "checkout-service", "enabled" => true, "max_connections" => 50, "ratio" => 0.75,
  "timeout_ms" => 2500, "retries" => 3, "regions" => %w[eu-west-1 us-east-1 ap-south-1],
  "owner" => "payments-team", "tier" => "gold", "beta" => false, "weight" => 12.5,
  "created_at" => "2026-11-01T12:00:00Z", "version" => 42, "fallback" => nil,
  "limits" => { "api" => 100, "burst" => 250, "window_s" => 60, "per_user" => true },
  "tags" => %w[critical pci], "description" => "Handles the checkout flow for all storefronts",
  "owners" => %w[alice bob], "threshold" => 0.995, "region_count" => 3
}.freeze

# The app server's tenant (bench/app_server): 5 fields, 2 of them maps of 3.
TENANT = {
  "plan" => "pro", "region" => "eu-1", "limits" => { "api" => 4711, "burst" => 250, "seats" => 17 },
  "flags" => { "checkout" => true, "beta" => false, "new_ui" => true }, "name" => "Tenant 123456"
}.freeze

# A large nested value: 200 tenants, each with settings and per-feature flags.
LARGE = (0...200).to_h do |t|
  ["tenant_#{t}", {
    "plan" => %w[free pro enterprise][t % 3], "seats" => t * 7,
    "features" => (0...50).to_h { |f| ["feature_#{f}", { "enabled" => (t + f).even?, "rollout" => (f % 10) / 10.0 }] }
  }]
end.freeze

dir = BenchData::DIR
FileUtils.mkdir_p(dir)
store = File.join(dir, "typed.hf")
Hashfile.build(store, { "typical" => TYPICAL, "tenant" => TENANT, "large" => LARGE })
db = Hashfile.open(store)
raise "round trip" unless db["typical"] == TYPICAL && db["tenant"] == TENANT && db["large"] == LARGE

packed = MessagePack.pack(TYPICAL)
json = JSON.generate(TYPICAL)
unpacker = MessagePack::Unpacker.new
results = {}

def report(results, name, report)
  results[name] = report.entries.to_h { |e| [e.label, e.stats.central_tendency] }
end

puts "== decode a typical nested value (#{TYPICAL.size} fields, two levels) =="
report(results, :decode, Benchmark.ips do |x|
  x.config(**IPS)
  x.report("MessagePack.unpack") { MessagePack.unpack(packed) }
  x.report("Unpacker#feed + read") do
    unpacker.feed(packed)
    unpacker.read
  end
  x.report("JSON.parse") { JSON.parse(json) }
  x.report("Hashfile db[] (lookup + decode)") { db["typical"] }
  x.compare!
end)

packed_tenant = MessagePack.pack(TENANT)
json_tenant = JSON.generate(TENANT)
puts "\n== decode the app server's tenant (5 fields, 2 of them maps of 3) =="
report(results, :tenant, Benchmark.ips do |x|
  x.config(**IPS)
  x.report("MessagePack.unpack") { MessagePack.unpack(packed_tenant) }
  x.report("JSON.parse") { JSON.parse(json_tenant) }
  x.report("Hashfile db[] (lookup + decode)") { db["tenant"] }
  x.compare!
end)

path = ["tenant_150", "features", "feature_42", "rollout"]
parsed_large = MessagePack.unpack(MessagePack.pack(LARGE))
packed_large = MessagePack.pack(LARGE)
puts "\n== dig into a large nested value (#{packed_large.bytesize} bytes as MessagePack) =="
report(results, :dig, Benchmark.ips do |x|
  x.config(**IPS)
  x.report("Hash#dig on a parsed copy") { parsed_large.dig(*path) }
  x.report("Hashfile db.dig") { db.dig("large", *path) }
  x.report("MessagePack.unpack + Hash#dig") { MessagePack.unpack(packed_large).dig(*path) }
  x.compare!
end)

sizes = {
  typical: [db.get("typical", raw: true).bytesize, packed.bytesize, json.bytesize],
  large: [db.get("large", raw: true).bytesize, packed_large.bytesize, JSON.generate(LARGE).bytesize]
}
puts "\n== stored value size (bytes) =="
sizes.each do |name, (ours, msgpack, json_size)|
  puts format("%-8s hashfile %7d   MessagePack %7d (%.3fx)   JSON %7d", name, ours, msgpack, ours.to_f / msgpack, json_size)
end

d = results[:decode]
t = results[:tenant]
g = results[:dig]
puts "\n== summary =="
puts format("decode: db[] takes %.2fx the time of MessagePack.unpack (target <= 1.2x), %.2fx of JSON.parse",
            d["MessagePack.unpack"] / d["Hashfile db[] (lookup + decode)"], d["JSON.parse"] / d["Hashfile db[] (lookup + decode)"])
puts format("tenant: db[] takes %.2fx the time of MessagePack.unpack, %.2fx of JSON.parse",
            t["MessagePack.unpack"] / t["Hashfile db[] (lookup + decode)"], t["JSON.parse"] / t["Hashfile db[] (lookup + decode)"])
puts format("dig: db.dig takes %.2fx the time of Hash#dig on a parsed copy; %.0fx faster than unpack + dig",
            g["Hash#dig on a parsed copy"] / g["Hashfile db.dig"], g["Hashfile db.dig"] / g["MessagePack.unpack + Hash#dig"])
puts format("size: typical value %.3fx MessagePack, large value %.3fx (target <= 1.1x)", sizes[:typical][0].to_f / sizes[:typical][1], sizes[:large][0].to_f / sizes[:large][1])
db.close
