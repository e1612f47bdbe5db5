# frozen_string_literal: true

# What opening a remote dataset costs in memory when its manifest lists
# many shards and no lookup reads any (issue 47: a manifest's size must not
# buy memory): nginx on loopback serves a manifest of SHARDS shards (40-
# character names; the shards themselves are never fetched); prints the
# manifest's size, the open's time, and the process's RSS growth and peak.
#
#   ruby bench/manifest_memory.rb                  # 300,000 shards (37.5 MB)
#   SHARDS=1048576 ruby bench/manifest_memory.rb   # the most a manifest lists

$stdout.sync = true
$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
$LOAD_PATH.unshift File.expand_path("../test", __dir__)
require "hashfile"
require "support/servers"
require "tmpdir"

shards = Integer(ENV.fetch("SHARDS", "300000"))
generation = "20261128T000000Z-0badf00d"
rss = ->(field) { File.read("/proc/self/status")[/#{field}:\s+(\d+)/, 1].to_i * 1024 }

Dir.mktmpdir do |dir|
  manifest = File.join(dir, "hashfile-dataset.json")
  File.open(manifest, "w") do |f|
    f.puts %({\n  "hashfile_dataset": 2,\n  "generation": "#{generation}",\n  "sequence": 1,)
    f.puts %(  "routing": "xxh3-64-high:6861736866696c65",\n  "entries": #{shards},\n  "shards": [)
    shards.times do |i|
      name = "#{generation}-#{format("%07d", i)}-of-#{format("%07d", shards)}.hf"
      f.puts %(    {"file": "#{name}", "entries": 1, "bytes": 400, "checksum": "0123456789abcdef"}#{"," if i + 1 < shards})
    end
    f.puts "  ]\n}"
  end
  nginx = Hashfile::TestServers::Nginx.new
  begin
    nginx.publish("hashfile-dataset.json", manifest)
    GC.start
    before = rss.call("VmRSS")
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    db = Hashfile.open(nginx.url("/files/hashfile-dataset.json"))
    took = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    grown = rss.call("VmRSS") - before
    printf("%d shards, manifest %.1f MB: open %.2f s, RSS +%.0f MB (%.0f bytes a shard), peak RSS %.0f MB\n",
           shards, File.size(manifest) / 1e6, took, grown / 1e6, grown.to_f / shards, rss.call("VmHWM") / 1e6)
    db.close
  ensure
    nginx.stop
  end
end
