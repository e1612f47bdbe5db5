# frozen_string_literal: true

# Datasets (issue 23), side by side in one run:
# - build ENTRIES pairs as one store and as 4 and 16 shards, each in a
#   child process: seconds, peak RSS (VmHWM), bytes written; from Ruby
#   (Hashfile.build, build_sharded) and from a JSON Lines file
#   (Hashfile.build_from, what hashfile build [--shards N] runs);
# - warm lookups (db[]) of the same random keys in the 16-shard dataset and
#   in the one store, and their ratio;
# - the 16-shard dataset served by nginx on loopback: the requests of open,
#   and of open + the first lookup (nginx's access log).
#
#   ruby bench/dataset.rb                    # 10,000,000 pairs
#   QUICK=1 ruby bench/dataset.rb            # seconds: checks it runs (CI)

# Each line as printed: a log cut short (a CI time limit) shows where
# the run was.
$stdout.sync = true

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
$LOAD_PATH.unshift File.expand_path("../test", __dir__)
require "hashfile"
require "support/servers"
require "benchmark/ips"
require "fileutils"
require "json"
require "rbconfig"
require "tmpdir"

QUICK = ENV["QUICK"] == "1"
ENTRIES = Integer(ENV.fetch("ENTRIES", QUICK ? 200_000 : 10_000_000))
IPS = QUICK ? { warmup: 0.2, time: 0.5 } : { warmup: 2, time: 5 }
DIR = Dir.mktmpdir("hashfile-bench-dataset")
LIB = File.expand_path("../lib", __dir__)

def say(text) = puts("[dataset] #{text}")

# Runs +build+ (Ruby code that writes +at+) in a child process; returns
# its seconds and peak RSS, and the bytes written at +at+.
def in_child(at, build)
  script = <<~RUBY
    require "hashfile"
    t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    #{build}
    seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t
    hwm = File.read("/proc/self/status")[/VmHWM:\\s+(\\d+)/, 1].to_i
    puts [seconds, hwm].join(" ")
  RUBY
  out = IO.popen([RbConfig.ruby, "-I#{LIB}", "-e", script], &:read)
  raise "build failed" unless $?.success?

  seconds, hwm = out.split.map(&:to_f)
  { seconds: seconds, rss_mb: hwm / 1024, bytes: File.directory?(at) ? Dir.glob("#{at}/*.hf").sum { |f| File.size(f) } : File.size(at) }
end

# Builds ENTRIES pairs at +at+ (one store when +shards+ is nil), entries
# straight into the writer (no Ruby Hash of them all).
def build(at, shards)
  fill = %(fill = ->(w) { #{ENTRIES}.times { |i| w["key-%010d" % i] = "value-\#{i}" } })
  in_child(at, "#{fill}\n" + (shards ? "Hashfile.build_sharded(#{at.inspect}, nil, shards: #{shards}, &fill)" : "Hashfile.build(#{at.inspect}, &fill)"))
end

# Builds the JSON Lines file +input+ at +at+ with Hashfile.build_from: the
# records stream into each shard's temporary file.
def build_from_file(input, at, shards)
  in_child(at, "Hashfile.build_from(#{input.inspect}, #{at.inspect}#{", shards: #{shards}" if shards})")
end

say "#{ENTRIES} pairs (key-0000000042 => value-42)"
builds = {
  "one store" => build(File.join(DIR, "one.hf"), nil),
  "4 shards" => build(File.join(DIR, "four"), 4),
  "16 shards" => build(File.join(DIR, "sixteen"), 16)
}
builds.each do |name, b|
  say format("build %-9s %6.2f s  peak RSS %6.0f MB  %8.1f MB written", name, b[:seconds], b[:rss_mb], b[:bytes] / 1e6)
end

jsonl = File.join(DIR, "pairs.jsonl")
File.open(jsonl, "w") do |f|
  (0...ENTRIES).each_slice(100_000) { |slice| f.write(slice.map { |i| format(%({"key":"key-%010d","value":"value-%d"}\n), i, i) }.join) }
end
say format("from a JSON Lines file (%.1f MB), Hashfile.build_from:", File.size(jsonl) / 1e6)
from_file = {
  "one store" => build_from_file(jsonl, File.join(DIR, "file-one.hf"), nil),
  "4 shards" => build_from_file(jsonl, File.join(DIR, "file-four"), 4),
  "16 shards" => build_from_file(jsonl, File.join(DIR, "file-sixteen"), 16)
}
from_file.each do |name, b|
  say format("build_from %-9s %6.2f s  peak RSS %6.0f MB  %8.1f MB written", name, b[:seconds], b[:rss_mb], b[:bytes] / 1e6)
end
File.delete(jsonl)

one = Hashfile.open(File.join(DIR, "one.hf"))
sixteen = Hashfile.open(File.join(DIR, "sixteen"))
rng = Random.new(23)
probe = Array.new(1000) { format("key-%010d", rng.rand(ENTRIES)) }
raise "the two disagree" unless probe.all? { |k| one[k] == sixteen[k] }

report = Benchmark.ips do |x|
  x.config(**IPS)
  i = 0
  x.report("one store db[]") { one[probe[(i += 1) % 1000]] }
  j = 0
  x.report("16 shards db[]") { sixteen[probe[(j += 1) % 1000]] }
  x.compare!
end
ips = report.entries.to_h { |e| [e.label, e.stats.central_tendency] }
ratio = ips["one store db[]"] / ips["16 shards db[]"]
say format("warm lookup: 16 shards take %.2fx the time of one store (%.0f vs %.0f ns)", ratio, 1e9 / ips["16 shards db[]"], 1e9 / ips["one store db[]"])
one.close
sixteen.close

nginx = Hashfile::TestServers::Nginx.new
begin
  Dir.children(File.join(DIR, "sixteen")).each { |name| nginx.publish(name, File.join(DIR, "sixteen", name)) }
  url = nginx.url("/files/hashfile-dataset.json")
  before = nginx.log.size
  db = Hashfile.open(url)
  opened = nginx.log.size - before
  db[probe[0]]
  first = nginx.log.size - before
  say "remote, 16 shards on nginx: open #{opened} request(s) (the manifest), open + first lookup #{first} requests"
  db.close
ensure
  nginx.stop
end

target = ratio <= 1.1 ? "meets" : "MISSES"
say format("target: a sharded lookup at most 1.1x a single-store lookup: %.2fx, %s it", ratio, target)
FileUtils.rm_rf(DIR)
