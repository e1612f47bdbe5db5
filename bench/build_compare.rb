# frozen_string_literal: true

# End-to-end build of the same N string pairs (default 10,000,000), side by
# side in one run: `hashfile build` from JSON Lines, tinycdb's `cdb -c` from
# its own input format, and Ruby's JSON.parse of each line into a Hash
# followed by Marshal.dump. Wall time and peak RSS from /usr/bin/time.
# Run: `ruby bench/build_compare.rb` (ENTRIES=1000000 for a shorter run;
# needs the Debian packages tinycdb and time).
require_relative "support"

entries = Integer(ENV.fetch("ENTRIES", 10_000_000))
dir = File.join(BenchData::DIR, "build-#{entries}")
FileUtils.mkdir_p(dir)
jsonl = File.join(dir, "pairs.jsonl")
cdb_in = File.join(dir, "pairs.cdbmake")

unless File.exist?(jsonl) && File.exist?(cdb_in)
  warn "writing #{entries} pairs ..."
  rng = Random.new(42)
  alphabet = BenchData::ALPHABET
  File.open(jsonl, "w") do |j|
    File.open(cdb_in, "w") do |c|
      entries.times do |i|
        key = "k#{i.to_s(36)}#{alphabet[rng.rand(36)]}"
        value = Array.new(8) { alphabet[rng.rand(36)] }.join
        j.write(%(["#{key}","#{value}"]\n))
        c.write("+#{key.bytesize},#{value.bytesize}:#{key}->#{value}\n")
      end
      c.write("\n")
    end
  end
end

def measure(label, *command)
  out = IO.popen(["/usr/bin/time", "-f", "%e %M", *command, { err: %i[child out] }], &:read)
  seconds, kb = out.lines.last.split.map(&:to_f)
  raise "#{label} failed:\n#{out}" unless $?.success?

  { label: label, seconds: seconds, rss_mb: kb / 1024 }
end

ruby_marshal = <<~RUBY
  require "json"
  h = {}
  File.foreach(ARGV[0]) { |line| k, v = JSON.parse(line); h[k] = v }
  File.binwrite(ARGV[1], Marshal.dump(h))
RUBY

exe = File.expand_path("../exe/hashfile", __dir__)
outputs = { "hashfile build" => File.join(dir, "out.hf"), "cdb -c" => File.join(dir, "out.cdb"), "JSON.parse + Marshal.dump" => File.join(dir, "out.marshal") }
results = [
  measure("hashfile build", RbConfig.ruby, exe, "build", jsonl, "-o", outputs["hashfile build"], "--quiet"),
  measure("cdb -c", "sh", "-c", "cdb -c -t \"$1.tmp\" \"$1\" < \"$2\"", "sh", outputs["cdb -c"], cdb_in),
  measure("JSON.parse + Marshal.dump", RbConfig.ruby, "-e", ruby_marshal, jsonl, outputs["JSON.parse + Marshal.dump"])
]

puts "== build of #{entries} string pairs (JSON Lines #{File.size(jsonl)} bytes) =="
results.each do |r|
  size = File.size(outputs[r[:label]])
  puts format("  %-28s %7.2f s  peak RSS %7.1f MB  output %11d bytes", r[:label], r[:seconds], r[:rss_mb], size)
end
hf, cdb = results[0], results[1]
hf_size = File.size(outputs["hashfile build"])
cdb_size = File.size(outputs["cdb -c"])
puts format("  time vs cdb -c: %.2fx (target <= 1.0)", hf[:seconds] / cdb[:seconds])
puts format("  size vs cdb: %.2fx (target <= 0.75)", hf_size.to_f / cdb_size)
puts format("  peak RSS: %.0f MB vs 1.5 x output + 100 MB = %.0f MB", hf[:rss_mb], 1.5 * hf_size / 2**20 + 100)
