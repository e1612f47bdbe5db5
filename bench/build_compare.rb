# frozen_string_literal: true

# End-to-end build of the same N string pairs (default 10,000,000), side by
# side in one run: `hashfile build` from JSON Lines, tinycdb's `cdb -c` from
# its own input format (which does not fsync; hashfile does), and Ruby's
# JSON.parse of each line into a Hash followed by Marshal.dump. Wall time
# and peak RSS from /usr/bin/time.
#
#   ruby bench/build_compare.rb
#   RECORD_BYTES=26 ROUNDS=5 MARSHAL=0 ruby bench/build_compare.rb
#
# RECORD_BYTES is key + value bytes: 15 (7-8-byte keys, 8-byte values; the
# default), 26 (keys like "key1234567-1a2b3c", a little shorter, and
# 12-byte values) or 100 (20-byte keys, 80-byte values), or any size from
# 12 up. ROUNDS runs the hashfile and cdb builds that many times,
# alternating, and reports each and the median ratio: this machine's
# timings vary by a third from run to run. MARSHAL=0 leaves out the Ruby
# build (100 s at 10M). Needs the Debian packages tinycdb and time.
require_relative "support"

entries = Integer(ENV.fetch("ENTRIES", 10_000_000))
record_bytes = Integer(ENV.fetch("RECORD_BYTES", 15))
rounds = Integer(ENV.fetch("ROUNDS", 1))
marshal = ENV.fetch("MARSHAL", "1") != "0"
abort "RECORD_BYTES must be at least 12" if record_bytes < 12
abort "ROUNDS must be at least 1" if rounds < 1

# Key and value lengths for a record size. The key starts with the index in
# base 36, so keys are distinct; the rest of both is random base 36.
key_bytes = { 15 => 7, 26 => 14, 100 => 20 }.fetch(record_bytes) { (record_bytes * 0.3).round.clamp(7, 64) }
value_bytes = record_bytes - key_bytes

dir = File.join(BenchData::DIR, record_bytes == 15 ? "build-#{entries}" : "build-#{entries}-#{record_bytes}b")
FileUtils.mkdir_p(dir)
jsonl = File.join(dir, "pairs.jsonl")
cdb_in = File.join(dir, "pairs.cdbmake")

unless File.exist?(jsonl) && File.exist?(cdb_in)
  warn "writing #{entries} pairs of #{key_bytes}+#{value_bytes} bytes ..."
  rng = Random.new(42)
  alphabet = BenchData::ALPHABET
  random = ->(n) { Array.new(n) { alphabet[rng.rand(36)] }.join }
  File.open("#{jsonl}.tmp", "w") do |j|
    File.open("#{cdb_in}.tmp", "w") do |c|
      entries.times do |i|
        key = case record_bytes
              when 15 then "k#{i.to_s(36)}#{alphabet[rng.rand(36)]}"
              when 26 then "key#{i.to_s.rjust(7, "0")}-#{random.call(3)}"
              else
                head = "k#{i.to_s(36)}-"
                head + random.call([key_bytes - head.bytesize, 0].max)
              end
        value = random.call(value_bytes)
        j.write(%(["#{key}","#{value}"]\n))
        c.write("+#{key.bytesize},#{value.bytesize}:#{key}->#{value}\n")
      end
      c.write("\n")
    end
  end
  File.rename("#{jsonl}.tmp", jsonl)
  File.rename("#{cdb_in}.tmp", cdb_in)
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
build_hashfile = -> { measure("hashfile build", RbConfig.ruby, exe, "build", jsonl, "-o", outputs["hashfile build"], "--quiet") }
build_cdb = -> { measure("cdb -c", "sh", "-c", "cdb -c -t \"$1.tmp\" \"$1\" < \"$2\"", "sh", outputs["cdb -c"], cdb_in) }

pairs = Array.new(rounds) { [build_hashfile.call, build_cdb.call] }
results = pairs.last.dup
results << measure("JSON.parse + Marshal.dump", RbConfig.ruby, "-e", ruby_marshal, jsonl, outputs["JSON.parse + Marshal.dump"]) if marshal

puts format("== build of %d string pairs, %d-byte keys + %d-byte values (JSON Lines %d bytes) ==",
            entries, key_bytes, value_bytes, File.size(jsonl))
if rounds > 1
  pairs.each_with_index do |(hf, cdb), i|
    puts format("  round %d: hashfile %.2f s, cdb %.2f s: %.2fx", i + 1, hf[:seconds], cdb[:seconds], hf[:seconds] / cdb[:seconds])
  end
end
results.each do |r|
  size = File.size(outputs[r[:label]])
  puts format("  %-28s %7.2f s  peak RSS %7.1f MB  output %11d bytes", r[:label], r[:seconds], r[:rss_mb], size)
end
ratios = pairs.map { |hf, cdb| hf[:seconds] / cdb[:seconds] }.sort
median = ratios[ratios.size / 2]
median = (ratios[(ratios.size / 2) - 1] + median) / 2 if ratios.size.even?
hf_size = File.size(outputs["hashfile build"])
cdb_size = File.size(outputs["cdb -c"])
hf_rss = pairs.map { |hf, _| hf[:rss_mb] }.max
puts format("  time vs cdb -c: %.2fx%s (target <= %.2f: 1.3x faster)", median, rounds > 1 ? " median of #{rounds}" : "", 1 / 1.3)
puts format("  size vs cdb: %.2fx (target <= 0.75)", hf_size.to_f / cdb_size)
puts format("  peak RSS: %.0f MB vs 1.5 x output + 100 MB = %.0f MB", hf_rss, 1.5 * hf_size / 2**20 + 100)
