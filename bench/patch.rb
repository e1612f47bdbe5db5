# frozen_string_literal: true

# Delta generations (issue 51), side by side in one run, each step in a
# child process:
# - a full build of a dataset of ENTRIES keys in SHARDS shards from a TSV
#   file (the CLI), its seconds and bytes;
# - a patch of 0.1% of the keys (a third changed, a third deleted, a third
#   added) from a JSON Lines changes file: its seconds and the bytes it
#   wrote, as fractions of the build's (target: at most 2% of each);
# - warm lookups of keys in the overlays and of keys not in them, in the
#   patched generation and in the one before it (pinned with generation:),
#   alternated in rounds, the best round of each (target: at most 1.15x);
# - over HTTP from nginx: requests per lookup of a key not in the overlays
#   once the shard and its overlay were read, in both generations
#   (target: no extra request);
# - compaction of every shard: seconds per key against the build's.
# Every answer is checked against the changes the script made.
#
#   ruby bench/patch.rb                # 100,000,000 keys in 16 shards
#   QUICK=1 ruby bench/patch.rb        # seconds: checks it runs (CI)

$stdout.sync = true

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
$LOAD_PATH.unshift File.expand_path("../test", __dir__)
require "hashfile"
require "fileutils"
require "json"
require "rbconfig"
require "tmpdir"

QUICK = ENV["QUICK"] == "1"
ENTRIES = Integer(ENV.fetch("ENTRIES", QUICK ? 200_000 : 100_000_000))
SHARDS = Integer(ENV.fetch("SHARDS", QUICK ? 4 : 16))
LOOKUPS = QUICK ? 5_000 : 200_000
DIR = Dir.mktmpdir("hashfile-bench-patch", ENV.fetch("BENCH_TMP", Dir.tmpdir))
LIB = File.expand_path("../lib", __dir__)
EXE = File.expand_path("../exe/hashfile", __dir__)

def say(text) = puts("[patch] #{text}")

# Runs +code+ in a child process; returns what it printed last (JSON),
# with its peak RSS.
def in_child(code)
  script = <<~RUBY
    require "hashfile"; require "json"
    result = begin
      #{code}
    end
    puts JSON.generate(result.merge(hwm_mb: File.read("/proc/self/status")[/VmHWM:\\s+(\\d+)/, 1].to_i / 1024.0))
  RUBY
  out = IO.popen([RbConfig.ruby, "-I#{LIB}", "-e", script], &:read)
  raise "the child failed" unless $?.success?

  JSON.parse(out.lines.last, symbolize_names: true)
end

def clock = Process.clock_gettime(Process::CLOCK_MONOTONIC)

key = ->(i) { format("key-%010d", i) }
tsv = File.join(DIR, "data.tsv")
ds = File.join(DIR, "ds")
started = clock
system("seq 0 #{ENTRIES - 1} | awk '{ printf \"key-%010d\\tvalue-%d\\n\", $1, $1 }' > #{tsv}", exception: true)
say format("%d keys written to a TSV file in %.1f s (%.0f MB)", ENTRIES, clock - started, File.size(tsv) / 1e6)

started = clock
system(RbConfig.ruby, "-I#{LIB}", EXE, "build", tsv, "--no-header", "--shards", SHARDS.to_s, "-o", ds, "-q", "--keep", "5", exception: true)
build_seconds = clock - started
build_bytes = Hashfile.open(ds) { |db| db.info[:file_bytes] }
say format("full build: %.1f s, %.0f MB in %d shards", build_seconds, build_bytes / 1e6, SHARDS)

# 0.1% of the keys: every 1000th, a third of them changed, a third
# deleted, a third replaced by a new key.
changes = File.join(DIR, "changes.jsonl")
changed = []
deleted = []
added = []
File.open(changes, "w") do |f|
  (0...ENTRIES).step(1000).each_with_index do |i, n|
    case n % 3
    when 0
      changed << key.call(i)
      f.puts JSON.generate({ key: key.call(i), value: "patched-#{i}" })
    when 1
      deleted << key.call(i)
      f.puts JSON.generate({ key: key.call(i), delete: true })
    else
      added << "new-#{i}"
      f.puts JSON.generate({ key: "new-#{i}", value: "added-#{i}" })
    end
  end
end
parent = Hashfile.history(ds).first[:generation]
patched = in_child(<<~RUBY)
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  done = Hashfile.patch(#{ds.inspect}, #{changes.inspect}, keep: 5)
  done.merge(seconds: Process.clock_gettime(Process::CLOCK_MONOTONIC) - t)
RUBY
raise "the patch did #{patched}" unless [patched[:changed], patched[:deleted], patched[:added]] == [changed.size, deleted.size, added.size]

time_share = patched[:seconds] / build_seconds
byte_share = patched[:bytes_written].to_f / build_bytes
say format("patch of %d changes (0.1%%): %.2f s, %.1f MB written, %d overlays (%d shards compacted); %.2f%% of the build's time, %.3f%% of its bytes",
           changed.size + deleted.size + added.size, patched[:seconds], patched[:bytes_written] / 1e6, patched[:overlays_written],
           patched[:shards_compacted], time_share * 100, byte_share * 100)

# Warm lookups, side by side: keys the overlays hold, keys they do not.
random = Random.new(51)
inside = (changed + added).sample([LOOKUPS, changed.size + added.size].min, random: random)
outside = Array.new(LOOKUPS) { key.call(random.rand(ENTRIES)) }.reject { |k| k.end_with?("000") }
probes = File.join(DIR, "probes.json")
File.write(probes, JSON.generate([inside, outside]))
lookups = in_child(<<~RUBY)
  inside, outside = JSON.parse(File.read(#{probes.inspect}))
  before = Hashfile.open(#{ds.inspect}, generation: #{parent.inspect})
  after = Hashfile.open(#{ds.inspect})
  raise "a key in an overlay reads wrong" unless inside.all? { |k| (v = after[k]) && (v.start_with?("patched") || v.start_with?("added")) }
  raise "a key outside reads wrong" unless outside.all? { |k| after[k] == before[k] }
  time = ->(db, keys) { t = Process.clock_gettime(Process::CLOCK_MONOTONIC); keys.each { |k| db[k] }; (Process.clock_gettime(Process::CLOCK_MONOTONIC) - t) / keys.size }
  best = Hash.new(Float::INFINITY)
  #{QUICK ? 3 : 7}.times do
    best[:outside_before] = [best[:outside_before], time.(before, outside)].min
    best[:outside_after] = [best[:outside_after], time.(after, outside)].min
    best[:inside_before] = [best[:inside_before], time.(before, inside)].min
    best[:inside_after] = [best[:inside_after], time.(after, inside)].min
  end
  best.transform_values { |s| s * 1e9 }
RUBY
ratio_out = lookups[:outside_after] / lookups[:outside_before]
ratio_in = lookups[:inside_after] / lookups[:inside_before]
say format("warm lookup, a key not in the overlays: %.0f ns with one overlay per shard, %.0f ns without: %.2fx", lookups[:outside_after], lookups[:outside_before], ratio_out)
say format("warm lookup, a key in the overlays:     %.0f ns with one overlay per shard, %.0f ns without (the base's): %.2fx", lookups[:inside_after], lookups[:inside_before], ratio_in)

# Over HTTP: requests per lookup of a key not in the overlays, once the
# shard (and its overlay) were read.
require "support/servers"
nginx = Hashfile::TestServers::Nginx.new
served = nginx.file("ds")
FileUtils.rm_rf(served)
FileUtils.cp_r(ds, served)
remote = {}
warm = outside.first(QUICK ? 200 : 2_000)
probes2 = Array.new(warm.size) { key.call(random.rand(ENTRIES)) }.reject { |k| k.end_with?("000") }
{ "before" => parent, "after" => nil }.each do |name, generation|
  options = generation ? { generation: generation } : {}
  db = Hashfile.open(nginx.url("/files/ds/hashfile-dataset.json"), **options)
  warm.each { |k| db[k] } # the shards' headers, seeds and overlays read
  count = nginx.authorizations.size
  probes2.each { |k| db[k] }
  remote[name] = (nginx.authorizations.size - count).to_f / probes2.size
  db.close
end
nginx.stop
say format("over HTTP, requests per lookup of a key not in the overlays: %.3f with overlays, %.3f without", remote["after"], remote["before"])

compacted = in_child(<<~RUBY)
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  done = Hashfile.compact(#{ds.inspect}, keep: 5)
  done.merge(seconds: Process.clock_gettime(Process::CLOCK_MONOTONIC) - t)
RUBY
expected = ENTRIES - deleted.size + added.size
Hashfile.open(ds) do |db|
  raise "compacted: #{db.size} entries, not #{expected}" unless db.size == expected
  raise "compacted: a value is wrong" unless db[changed.first] == "patched-0" && !db.key?(deleted.first) && db[added.first]
end
per_key_compact = compacted[:seconds] / expected
per_key_build = build_seconds / ENTRIES
say format("compaction of %d shards: %.1f s, %.0f ns a key (the build: %.0f ns a key): %.2fx the build's time per key; peak RSS %.0f MB",
           compacted[:shards_compacted], compacted[:seconds], per_key_compact * 1e9, per_key_build * 1e9, per_key_compact / per_key_build, compacted[:hwm_mb])

say format("targets: patch time %.2f%% (<= 2%%: %s), bytes %.3f%% (<= 2%%: %s); lookups %.2fx and %.2fx (<= 1.15x: %s); HTTP extra requests %.3f (0: %s); compaction %.2fx a build per key (<= 1: %s)",
           time_share * 100, time_share <= 0.02 ? "meets" : "MISSES", byte_share * 100, byte_share <= 0.02 ? "meets" : "MISSES",
           ratio_out, ratio_in, [ratio_out, ratio_in].max <= 1.15 ? "meets" : "MISSES",
           remote["after"] - remote["before"], remote["after"] - remote["before"] <= 0.001 ? "meets" : "MISSES",
           per_key_compact / per_key_build, per_key_compact <= per_key_build ? "meets" : "MISSES")
FileUtils.rm_rf(DIR)
