# frozen_string_literal: true

# The app-server benchmark (issue 13): the Rack app in config.ru served by
# Puma in cluster mode with preload_app!, its config (ENTRIES tenants with
# nested settings) held four ways side by side in one run: a Hash from
# JSON.parse at boot, a Hash from MessagePack, SQLite (a prepared
# statement, the value as JSON), and a Hashfile store. For each: boot time
# to the first 200, throughput and latency percentiles from wrk at fixed
# connection counts after a warm-up, RSS and PSS of the master and every
# worker after the load and again after a GC.compact in each worker, and
# total PSS as the worker count grows. The load runs in ROUNDS rounds, each
# starting every variant in turn, and reports medians: this machine's speed
# drifts by a quarter within an hour, which measuring one variant after
# another put into the ratios (memory is measured in the first round).
# Prints what it does, then a table and the ratios; with CHARTS=1 also writes docs/app_server_latency.png and
# docs/app_server_pss.png (REDRAW=1 CHARTS=1 draws them again from the last
# run's results, measuring nothing).
#
#   ruby bench/app_server/run.rb              # the full run (about 10 minutes)
#   QUICK=1 ruby bench/app_server/run.rb      # a few seconds: checks it runs (CI)

# Each line as printed: a log cut short (a CI time limit) shows where
# the run was.
$stdout.sync = true

require "json"
require "fileutils"
require "net/http"
require "socket"
require "timeout"

QUICK = ENV["QUICK"] == "1"
ENTRIES = Integer(ENV.fetch("ENTRIES", QUICK ? 20_000 : 1_000_000))
WORKERS = Integer(ENV.fetch("WORKERS", QUICK ? 2 : 4))
CONNECTIONS = QUICK ? [4] : [8, 32]
DURATION = QUICK ? 1 : 10
ROUNDS = Integer(ENV.fetch("ROUNDS", QUICK ? 1 : 3))
SCALING = QUICK ? [1, 2] : [1, 2, 4, 8]
VARIANTS = %w[json msgpack sqlite hashfile].freeze
HERE = __dir__
DATA = File.expand_path("../data/app_server-#{ENTRIES}", HERE)
CHARTS = ENV["CHARTS"] == "1"

def say(text) = puts("[app_server] #{text}")
def clock = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def tenant(i, rng)
  {
    "plan" => %w[free team pro enterprise][rng.rand(4)],
    "region" => %w[eu-1 us-1 us-2 ap-1][rng.rand(4)],
    "limits" => { "api" => rng.rand(10_000), "burst" => rng.rand(500), "seats" => rng.rand(1_000) },
    "flags" => { "checkout" => rng.rand(2).zero?, "beta" => rng.rand(10).zero?, "new_ui" => rng.rand(3).zero? },
    "name" => "Tenant #{i}"
  }
end

# The config as JSON, MessagePack, SQLite and a store, made once per size.
def prepare_data
  done = File.join(DATA, ".complete")
  return say("data: #{DATA} (cached)") if File.exist?(done)

  say "data: generating #{ENTRIES} tenants in #{DATA}"
  FileUtils.mkdir_p(DATA)
  rng = Random.new(13)
  config = {}
  ENTRIES.times { |i| config[format("tenant:%07d", i)] = tenant(i, rng) }
  File.write(File.join(DATA, "config.json"), JSON.generate(config))
  require "msgpack"
  File.binwrite(File.join(DATA, "config.msgpack"), MessagePack.pack(config))
  require "sqlite3"
  db_path = File.join(DATA, "config.sqlite3")
  FileUtils.rm_f(db_path)
  db = SQLite3::Database.new(db_path)
  db.execute("CREATE TABLE config (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID")
  db.transaction do
    insert = db.prepare("INSERT INTO config VALUES (?, ?)")
    config.each { |k, v| insert.execute(k, JSON.generate(v)) }
    insert.close
  end
  db.close
  $LOAD_PATH.unshift File.expand_path("../../lib", HERE)
  require "hashfile"
  Hashfile.build(File.join(DATA, "config.hf"), config)
  File.write(done, "")
end

def free_port
  server = TCPServer.new("127.0.0.1", 0)
  server.addr[1]
ensure
  server&.close
end

def get_ok?(port, path = "/")
  Net::HTTP.start("127.0.0.1", port, open_timeout: 1, read_timeout: 5) { |h| h.get(path).code == "200" }
rescue StandardError
  false
end

# Starts Puma with `workers` and the variant; waits for the first 200.
# Returns [master pid, port, seconds from spawn to the first 200, seconds
# the app took to load its config (config.ru reports it)].
def start(variant, workers)
  port = free_port
  env = { "VARIANT" => variant, "DATA" => DATA, "ENTRIES" => ENTRIES.to_s, "RUBYOPT" => nil }
  log = File.join(DATA, "puma-#{variant}.log")
  started = clock
  pid = spawn(env, "puma", "-w", workers.to_s, "--preload", "-t", "4:4", "-b", "tcp://127.0.0.1:#{port}",
              File.join(HERE, "config.ru"), out: log, err: log, pgroup: true)
  Timeout.timeout(600) { sleep 0.01 until get_ok?(port) }
  [pid, port, clock - started, File.read(log)[/CONFIG_LOADED_IN=([\d.]+)/, 1].to_f]
rescue Timeout::Error
  stop(pid)
  abort "puma (#{variant}) did not answer; see #{log}"
end

def stop(pid)
  Process.kill("TERM", -pid)
  Timeout.timeout(60) { Process.wait(pid) }
rescue Errno::ESRCH, Errno::ECHILD
  nil
rescue Timeout::Error
  Process.kill("KILL", -pid)
  Process.wait(pid)
end

def workers_of(pid) = File.read("/proc/#{pid}/task/#{pid}/children").split.map(&:to_i)

def memory_kb(pid)
  text = File.read("/proc/#{pid}/smaps_rollup")
  { rss: text[/^Rss:\s+(\d+)/, 1].to_i, pss: text[/^Pss:\s+(\d+)/, 1].to_i }
end

def wrk(port, connections, seconds)
  out = IO.popen(["wrk", "-t2", "-c#{connections}", "-d#{seconds}s", "-s", File.join(HERE, "percentiles.lua"), "http://127.0.0.1:#{port}/"], &:read)
  line = out[/^RESULT .*$/] or abort "wrk printed no result:\n#{out}"
  line.scan(/(\w+)=([\d.]+)/).to_h { |k, v| [k.to_sym, v.to_f] }
end

# Each worker runs GC.compact (config.ru traps SIGPWR for it; the master
# is left alone, so what the workers share with it stays shared), then the
# workers' memory is read again.
def compact_workers(workers)
  workers.each do |w|
    marker = File.join(DATA, "compacted-#{w}")
    File.delete(marker) if File.exist?(marker)
    Process.kill("PWR", w)
    Timeout.timeout(120) { sleep 0.05 until File.exist?(marker) }
    File.delete(marker)
  end
  workers.map { |w| memory_kb(w) }
end

def median(values) = values.sort[values.size / 2]

if ENV["REDRAW"] == "1"
  # Charts again from the last run's results.json, without measuring.
  saved = JSON.parse(File.read(File.join(DATA, "results.json")), symbolize_names: true)
  results = saved[:results].transform_keys(&:to_s).transform_values { |r| r.merge(load: r[:load].transform_keys { |c| c.to_s.to_i }) }
  scaling = saved[:scaling].transform_keys(&:to_s).transform_values { |by| by.transform_keys { |n| n.to_s.to_i } }
else
  prepare_data
  results = {}
  runs = VARIANTS.to_h { |v| [v, { boot: [], config_load: [], load: CONNECTIONS.to_h { |c| [c, []] } }] }
  ROUNDS.times do |round|
    VARIANTS.each do |variant|
      say "#{variant}: starting Puma, #{WORKERS} workers, preload_app! (round #{round + 1}/#{ROUNDS})"
      pid, port, boot, config_load = start(variant, WORKERS)
      say format("#{variant}: first 200 after %.3f s (config loaded in %.6f s); warming up", boot, config_load)
      runs[variant][:boot] << boot
      runs[variant][:config_load] << config_load
      wrk(port, CONNECTIONS.max, QUICK ? 1 : 3)
      CONNECTIONS.each do |c|
        say "#{variant}: wrk, #{c} connections, #{DURATION} s"
        runs[variant][:load][c] << wrk(port, c, DURATION)
      end
      if round.zero?
        workers = workers_of(pid)
        results[variant] = { master: memory_kb(pid), workers: workers.map { |w| memory_kb(w) } }
        say "#{variant}: GC.compact in each worker"
        results[variant][:workers_compacted] = compact_workers(workers)
      end
      stop(pid)
    end
  end
  VARIANTS.each do |v|
    r = runs[v]
    results[v].merge!(boot: median(r[:boot]), config_load: median(r[:config_load]),
                      load: r[:load].transform_values { |l| %i[rps p50 p90 p99 p999 errors].to_h { |k| [k, median(l.map { |x| x[k] })] } },
                      rps_by_round: r[:load].transform_values { |l| l.map { |x| x[:rps].round } })
  end

  scaling = Hash.new { |h, k| h[k] = {} }
  VARIANTS.each do |variant|
    SCALING.each do |n|
      say "#{variant}: PSS with #{n} worker#{"s" unless n == 1}"
      pid, port, = start(variant, n)
      wrk(port, 4 * n, QUICK ? 1 : 3)
      scaling[variant][n] = ([pid] + workers_of(pid)).sum { |p| memory_kb(p)[:pss] }
      stop(pid)
    end
  end
end

puts
puts "#{ENTRIES} tenants, #{WORKERS} workers (4 threads each), 15 lookups per request; medians of #{ROUNDS} rounds (wrk, #{DURATION} s)"
puts format("%-9s %9s %10s %6s %9s %8s %8s %8s %9s %12s %12s %15s", "variant", "boot s", "config s", "conns", "req/s", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "master PSS", "workers PSS", "after compact")
VARIANTS.each do |v|
  r = results[v]
  compacted = r[:workers_compacted] ? format("%12d KB", r[:workers_compacted].sum { |w| w[:pss] }) : "not measured"
  r[:load].each do |c, l|
    puts format("%-9s %9.3f %10.6f %6d %9.0f %8.2f %8.2f %8.2f %9.2f %9d KB %9d KB %15s", v, r[:boot], r[:config_load], c, l[:rps], l[:p50] / 1e3, l[:p90] / 1e3, l[:p99] / 1e3, l[:p999] / 1e3,
                r[:master][:pss], r[:workers].sum { |w| w[:pss] }, compacted)
  end
end
puts
puts "req/s by round (the variants take turns in each):"
VARIANTS.each do |v|
  by_round = results[v][:rps_by_round] or next
  puts format("%-9s %s", v, by_round.map { |c, list| "#{c} conns: #{list.join(", ")}" }.join("; "))
end
if results["hashfile"][:rps_by_round] && results["json"][:rps_by_round]
  ratios = results["hashfile"][:rps_by_round].map do |c, list|
    "#{c} conns: " + list.zip(results["json"][:rps_by_round][c]).map { |h, j| format("%.2fx", h.to_f / j) }.join(", ")
  end
  puts "hashfile / json, round by round: #{ratios.join("; ")}"
end
puts
puts "per worker after the load, then after GC.compact (RSS / PSS, MB):"
VARIANTS.each do |v|
  r = results[v]
  next unless r[:workers_compacted]

  pairs = r[:workers].zip(r[:workers_compacted]).map { |a, b| format("%d/%d -> %d/%d", a[:rss] / 1024, a[:pss] / 1024, b[:rss] / 1024, b[:pss] / 1024) }
  puts format("%-9s %s", v, pairs.join(", "))
end
puts
puts "total PSS (master + workers), KB, as workers grow: " + SCALING.map(&:to_s).join(" / ")
VARIANTS.each { |v| puts format("%-9s %s", v, SCALING.map { |n| scaling[v][n] }.join(" / ")) }
h = results["hashfile"]
j = results["json"]
s = results["sqlite"]
puts
puts format("hashfile vs json: boot to the first 200 %.1fx faster, config load %.0fx faster; workers' PSS %.2fx; req/s %s; p99 %s; throughput vs sqlite %s",
            j[:boot] / h[:boot], j[:config_load] / h[:config_load], h[:workers].sum { |w| w[:pss] }.to_f / j[:workers].sum { |w| w[:pss] },
            CONNECTIONS.map { |c| format("%.2fx at %d conns", h[:load][c][:rps] / j[:load][c][:rps], c) }.join(", "),
            CONNECTIONS.map { |c| format("%.2fx at %d conns", h[:load][c][:p99] / j[:load][c][:p99], c) }.join(", "),
            CONNECTIONS.map { |c| format("%.2fx at %d conns", h[:load][c][:rps] / s[:load][c][:rps], c) }.join(", "))
File.write(File.join(DATA, "results.json"), JSON.pretty_generate({ results: results, scaling: scaling })) unless ENV["REDRAW"] == "1"

if CHARTS
  require "gruff"
  docs = File.expand_path("../../docs", HERE)
  c = CONNECTIONS.max
  g = Gruff::Bar.new(900)
  g.title = "Latency (ms), #{c} connections, #{WORKERS} workers"
  g.title_font_size = 20
  g.labels = { 0 => "p50", 1 => "p90", 2 => "p99", 3 => "p99.9" }
  VARIANTS.each { |v| g.data(v, %i[p50 p90 p99 p999].map { |k| results[v][:load][c][k] / 1e3 }) }
  g.minimum_value = 0
  g.write(File.join(docs, "app_server_latency.png"))
  g = Gruff::Line.new(900)
  g.title = "Total PSS (MB) by Puma workers"
  g.title_font_size = 20
  g.labels = SCALING.each_with_index.to_h { |n, i| [i, n.to_s] }
  VARIANTS.each { |v| g.data(v, SCALING.map { |n| scaling[v][n] / 1024.0 }) }
  g.minimum_value = 0
  g.write(File.join(docs, "app_server_pss.png"))
  say "charts: docs/app_server_latency.png, docs/app_server_pss.png"
end
