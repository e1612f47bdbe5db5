# frozen_string_literal: true

# Diff and rollback (issue 50), each in a child process:
# - two stores of ENTRIES keys that differ in 1% (a third of it removed,
#   a third added, a third changed, some of those to another type):
#   Hashfile.diff's seconds, keys per second (both sides' entries), and
#   peak RSS, anonymous (what the diff holds) and file-backed (the stores'
#   pages it mapped);
# - the same as two generations of an 8-shard dataset;
# - a rollback of that dataset: its seconds, and how long a reader opened
#   with reload: 0.1 takes to answer from the generation rolled back to.
# Every diff is checked against the changes the script made.
#
#   ruby bench/diff.rb                 # 10,000,000 keys a side
#   QUICK=1 ruby bench/diff.rb         # seconds: checks it runs (CI)

$stdout.sync = true

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "hashfile"
require "fileutils"
require "json"
require "rbconfig"
require "tmpdir"

QUICK = ENV["QUICK"] == "1"
ENTRIES = Integer(ENV.fetch("ENTRIES", QUICK ? 200_000 : 10_000_000))
DIR = Dir.mktmpdir("hashfile-bench-diff")
LIB = File.expand_path("../lib", __dir__)

def say(text) = puts("[diff] #{text}")

# Runs +code+ in a child process; returns what it printed last (JSON),
# with its peak RSS and, at its end, its anonymous and file-backed RSS.
def in_child(code)
  script = <<~RUBY
    require "hashfile"; require "json"
    result = begin
      #{code}
    end
    status = File.read("/proc/self/status")
    kb = ->(name) { status[/\#{name}:\\s+(\\d+)/, 1].to_i }
    puts JSON.generate(result.merge(hwm_mb: kb["VmHWM"] / 1024.0, anon_mb: kb["RssAnon"] / 1024.0, file_mb: kb["RssFile"] / 1024.0))
  RUBY
  out = IO.popen([RbConfig.ruby, "-I#{LIB}", "-e", script], &:read)
  raise "the child failed" unless $?.success?

  JSON.parse(out.lines.last, symbolize_names: true)
end

# Key i's value on side A; side B changes every 100th key: i % 300 == 0
# removed, == 100 changed (every other one to a map), == 200 added (a key
# of its own).
FILL_A = %(->(w) { #{ENTRIES}.times { |i| w["key-%010d" % i] = "value-\#{i}" } }).freeze
FILL_B = <<~RUBY.freeze
  ->(w) do
    #{ENTRIES}.times do |i|
      case i % 300
      when 0 then next
      when 100 then w["key-%010d" % i] = i % 600 == 100 ? { "changed" => i } : "changed-\#{i}"
      when 200 then w["key-%010d" % i] = "value-\#{i}"; w["new-%010d" % i] = "added-\#{i}"
      else w["key-%010d" % i] = "value-\#{i}"
      end
    end
  end
RUBY
REMOVED = (0...ENTRIES).count { |i| (i % 300).zero? }
CHANGED = (0...ENTRIES).count { |i| i % 300 == 100 }
TYPED = (0...ENTRIES).count { |i| i % 600 == 100 }
ADDED = (0...ENTRIES).count { |i| i % 300 == 200 }

def timed(code)
  "t = Process.clock_gettime(Process::CLOCK_MONOTONIC); #{code}; { seconds: Process.clock_gettime(Process::CLOCK_MONOTONIC) - t }"
end

a = File.join(DIR, "a.hf")
b = File.join(DIR, "b.hf")
ds = File.join(DIR, "ds")
say "#{ENTRIES} keys a side; B: #{REMOVED} removed, #{ADDED} added, #{CHANGED} changed (#{TYPED} to a map)"
built = in_child(timed("Hashfile.build(#{a.inspect}, &#{FILL_A}); Hashfile.build(#{b.inspect}, &#{FILL_B})"))
say format("built both stores in %.1f s (%.0f MB and %.0f MB)", built[:seconds], File.size(a) / 1e6, File.size(b) / 1e6)
in_child(timed("Hashfile.build_sharded(#{ds.inspect}, nil, shards: 8, &#{FILL_A}); Hashfile.build_sharded(#{ds.inspect}, nil, shards: 8, &#{FILL_B})"))

def diff_run(label, call)
  r = in_child(<<~RUBY)
    lines = 0
    t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    s = #{call} { |_| lines += 1 }
    { seconds: Process.clock_gettime(Process::CLOCK_MONOTONIC) - t, lines: lines, summary: s }
  RUBY
  s = r[:summary]
  expected = [ADDED, REMOVED, CHANGED, TYPED, ADDED + REMOVED + CHANGED]
  got = [s[:added], s[:removed], s[:changed], s[:type_changed], r[:lines]]
  raise "#{label}: expected #{expected}, got #{got}" unless got == expected

  keys = s[:entries_a] + s[:entries_b]
  say format("%-28s %6.2f s  %5.2f M keys/s  peak RSS %5.0f MB (at the end: %4.0f MB anonymous, %5.0f MB the stores' pages)",
             label, r[:seconds], keys / r[:seconds] / 1e6, r[:hwm_mb], r[:anon_mb], r[:file_mb])
  r
end

store = diff_run("two stores", "Hashfile.diff(#{a.inspect}, #{b.inspect})")
diff_run("two stores, keys only", "Hashfile.diff(#{a.inspect}, #{b.inspect}, values: false)")
history = Hashfile.history(ds)
diff_run("two generations, 8 shards", "Hashfile.diff(#{ds.inspect}, #{ds.inspect}, generation_a: #{history[1][:generation].inspect}, generation_b: #{history[0][:generation].inspect})")

rolled = in_child(<<~RUBY)
  db = Hashfile.open(#{ds.inspect}, reload: 0.1)
  before = db["key-0000000000"]
  t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  Hashfile.rollback(#{ds.inspect}, note: "bench")
  published = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t
  sleep 0.01 until db["key-0000000000"] != before
  { seconds: published, seen: Process.clock_gettime(Process::CLOCK_MONOTONIC) - t }
RUBY
say format("rollback of the 8-shard dataset: %.1f ms; a reader with reload: 0.1 answers from it after %.0f ms", rolled[:seconds] * 1000, rolled[:seen] * 1000)

rate = (ENTRIES * 2 - REMOVED + ADDED) / store[:seconds] / 1e6
say format("target: at least 5 M keys/s for two stores: %.2f, %s it; peak RSS under 200 MB: %.0f MB (%.0f MB anonymous), %s it",
           rate, rate >= 5 ? "meets" : "MISSES", store[:hwm_mb], store[:anon_mb], store[:hwm_mb] < 200 ? "meets" : "MISSES")
FileUtils.rm_rf(DIR)
