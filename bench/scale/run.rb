# frozen_string_literal: true

# Builds of 10M, 100M (and, when asked, 1B) string pairs from JSON Lines on
# standard input, each under a memory limit, as a user runs them:
#
#   examples/pairs N | hashfile build - --format jsonl -o N.hf --memory M
#
# and reports, per size: wall time, the store's size, the build's peak
# resident set (/usr/bin/time), the most temporary disk at once (polled
# every 0.2 s: the groups' and slots' files, and the store's own temporary
# file, which becomes the store; see temporary_bytes), and random lookups
# in Rust (examples/lookups, 200,000 keys) and in Ruby (Hashfile#[],
# 100,000 keys), keys drawn before timing, each set looked up twice: first
# with the page cache dropped (as root), then again. On a store larger than
# memory the first pass waits on the disk.
#
#   ruby bench/scale/run.rb                            # 10M and 100M, --memory auto
#   SIZES=1000000000 MEMORY=3G ruby bench/scale/run.rb  # the billion (about 40 GB of disk)
#   INDEX=compact ruby bench/scale/run.rb              # the compact index (--index compact)
#   QUICK=1 ruby bench/scale/run.rb                    # CI: 1M keys, checks the bytes
#
# QUICK=1 builds 1M pairs three ways, --memory 16M (which spills: 1M keys'
# index data is about 32 MB), 64M and unlimited, with each index layout,
# and fails unless each layout's three stores are the same bytes and the
# first spilled. DIR puts the stores
# elsewhere than bench/data/scale; each is removed after its size is
# measured, so that the next has the disk.
require_relative "../support"
require "open3"
require "rbconfig"

ROOT = File.expand_path("../..", __dir__)
QUICK = BenchData::QUICK
DIR = ENV.fetch("DIR", File.join(BenchData::DIR, "scale"))
INDEX = ENV.fetch("INDEX", "classic")
HASHFILE = [RbConfig.ruby, "-I", File.join(ROOT, "lib"), File.join(ROOT, "exe", "hashfile")].freeze
# In the profile the extension is built in (the Rakefile's CARGO_PROFILE).
PROFILE = ENV.fetch("HASHFILE_CARGO_PROFILE", "release")
EXAMPLES = File.join(ROOT, "target", PROFILE == "dev" ? "debug" : PROFILE, "examples")

def sh!(*cmd, **opts)
  system(*cmd, exception: true, **opts)
end

def human(bytes)
  units = %w[B KB MB GB TB]
  i = bytes.zero? ? 0 : [(Math.log(bytes) / Math.log(1000)).floor, units.size - 1].min
  format("%.2f %s", bytes.to_f / (1000**i), units[i])
end

# Bytes of the temporary files of `output`'s build in its directory:
# [all of them, those besides the store's own]. The store's own is named,
# `.NAME.hashfile-PID-START-N.tmp` with the least N, and becomes the store;
# the spill's files have no name (O_TMPFILE, or unlinked at once), so they
# are found among the files processes hold open there (/proc/PID/fd:
# "DIR/#INODE (deleted)"), which also sees any named ones.
def temporary_bytes(output)
  prefix = ".#{File.basename(output)}."
  dir = File.realpath(File.dirname(output))
  files = {}
  named = Dir.children(dir).filter_map do |name|
    next unless name.start_with?(prefix) && name.end_with?(".tmp")

    stat = File.stat(File.join(dir, name))
    files[[stat.dev, stat.ino]] = stat.size
    [Integer(name.delete_suffix(".tmp").split("-").last, exception: false) || 0, stat.size]
  rescue SystemCallError
    nil # removed since it was listed
  end.sort
  Dir.glob("/proc/[0-9]*/fd/*").each do |fd|
    target = File.readlink(fd)
    next unless target.end_with?(" (deleted)") && File.dirname(target) == dir

    stat = File.stat(fd)
    files[[stat.dev, stat.ino]] = stat.size
  rescue SystemCallError
    nil # closed since it was listed, or another user's
  end
  all = files.values.sum
  [all, all - (named.first&.last || 0)]
end

# Builds `entries` pairs into `output` with `memory`; returns the measures.
def build(entries, output, memory, index = INDEX)
  FileUtils.rm_f(output)
  peak_temporary = peak_spill = 0
  done = false
  poller = Thread.new do
    until done
      all, spill = temporary_bytes(output)
      peak_temporary = [peak_temporary, all].max
      peak_spill = [peak_spill, spill].max
      sleep 0.2
    end
  end
  started = BenchData.clock
  pipeline = "#{File.join(EXAMPLES, "pairs")} #{entries} | /usr/bin/time -f 'PEAK_RSS_KB %M' " \
             "#{HASHFILE.map { |a| "'#{a}'" }.join(" ")} build - --format jsonl -o '#{output}' --memory #{memory} --index #{index}"
  out, status = Open3.capture2e("bash", "-o", "pipefail", "-c", pipeline)
  seconds = BenchData.clock - started
  done = true
  poller.join
  abort "build of #{entries} failed:\n#{out}" unless status.success?
  rss = Integer(out[/PEAK_RSS_KB (\d+)/, 1]) * 1024
  { entries: entries, seconds: seconds, bytes: File.size(output), rss: rss, temporary: peak_temporary, spill: peak_spill,
    spilled: out.include?("went over --memory") }
end

# Random lookups of keys drawn before timing: [ns a lookup the first
# time, ns the same keys again]. On a store larger than memory the first
# pass waits on the disk; the second finds their pages cached.
def rust_lookups(output, entries)
  out = `#{File.join(EXAMPLES, "lookups")} '#{output}' #{entries} #{QUICK ? 100_000 : 200_000}`
  raise "lookups failed" unless $?.success?

  [Float(out[/([\d.]+) ns first pass/, 1]), Float(out[/([\d.]+) ns second/, 1])]
end

def ruby_lookups(output, entries)
  count = QUICK ? 50_000 : 100_000
  rng = Random.new(7)
  keys = Array.new(count) { format("key%010d", rng.rand(entries)) }
  Hashfile.open(output) do |db|
    Array.new(2) do
      t = BenchData.clock
      keys.each { |k| db[k] || raise("#{k} missing") }
      (BenchData.clock - t) * 1e9 / count
    end
  end
end

FileUtils.mkdir_p(DIR)
sh!("cargo", "build", "--profile", PROFILE, "--locked", "--quiet", "--example", "pairs", "--example", "lookups", "-p", "hashfile", chdir: ROOT)
# Each size starts with nothing of the last in the page cache, when allowed (root).
drop_caches = lambda do
  system("sync") && File.write("/proc/sys/vm/drop_caches", "3")
rescue SystemCallError
  nil # not root: the page cache stays
end

if QUICK
  pairs = 1_000_000
  %w[classic compact].each do |index|
    outputs = {}
    spilled = {}
    %w[16M 64M 64G].each do |memory|
      output = File.join(DIR, "quick-#{index}-#{memory}.hf")
      measured = build(pairs, output, memory, index)
      outputs[memory] = output
      spilled[memory] = measured[:spilled]
      puts format("1M pairs, --index %-7s --memory %-4s %.2f s, %s, peak RSS %s, temporary disk besides the store's at most %s%s",
                  index, memory, measured[:seconds], human(measured[:bytes]), human(measured[:rss]), human(measured[:spill]),
                  measured[:spilled] ? " (spilled)" : "")
    end
    bytes = outputs.transform_values { |path| File.binread(path) }
    abort "FAIL: --index #{index}: --memory 16M, 64M and unlimited wrote different stores" unless bytes.values.uniq.size == 1
    abort "FAIL: --index #{index}: 1M keys under --memory 16M did not spill" unless spilled["16M"]
    abort "FAIL: --index #{index}: 1M keys spilled without a limit" if spilled["64G"]
    puts "OK: 1M pairs under --memory 16M (spilled) and 64M give the bytes of an unlimited build, --index #{index}"
    outputs.each_value { |p| FileUtils.rm_f(p) }
  end
  exit 0
end

sizes = ENV.fetch("SIZES", "10000000,100000000").split(",").map { |s| Integer(s.delete("_")) }
memory = ENV.fetch("MEMORY", "auto")
rows = sizes.map do |entries|
  output = File.join(DIR, "pairs-#{entries}.hf")
  warn "building #{entries} pairs under --memory #{memory}, --index #{INDEX} ..."
  drop_caches.call
  measured = build(entries, output, memory)
  warn format("  built in %.1f s: %s, peak RSS %s, spill files at most %s, all temporary files at most %s%s",
              measured[:seconds], human(measured[:bytes]), human(measured[:rss]), human(measured[:spill]),
              human(measured[:temporary]), measured[:spilled] ? " (spilled)" : "")
  drop_caches.call
  measured[:rust_ns] = rust_lookups(output, entries)
  drop_caches.call
  measured[:ruby_ns] = ruby_lookups(output, entries)
  FileUtils.rm_f(output) unless ENV["KEEP"] == "1"
  row = format("| %s | %.1f s | %.2f M/s | %s | %s | %s (%.2fx) | %s (%.2fx) | %.0f / %.0f ns | %.0f / %.0f ns |",
               entries.to_s.reverse.scan(/\d{1,3}/).join(",").reverse, measured[:seconds], entries / measured[:seconds] / 1e6,
               human(measured[:bytes]), human(measured[:rss]), human(measured[:spill]), measured[:spill].to_f / measured[:bytes],
               human(measured[:temporary]), measured[:temporary].to_f / measured[:bytes], *measured[:rust_ns], *measured[:ruby_ns])
  puts row
  $stdout.flush
  row
end
puts
puts "| pairs | build | rate | store | peak RSS | spill files at most (x store) | all temporary files at most (x store) | Rust lookup, first / again | Ruby db[], first / again |"
puts "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
puts rows
