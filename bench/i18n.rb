# frozen_string_literal: true

# I18n::Backend::Simple against Hashfile::I18n::Backend over the same real
# locale files (Debian's ruby-faker, ruby-devise, ruby-doorkeeper-i18n,
# ruby-actionview/activesupport): boot (everything loaded and the first
# translation returned), I18n.t per call, and memory in forked workers
# (PSS from /proc/PID/smaps_rollup, so shared pages are split between the
# processes sharing them). Side by side in one run; ratios printed.
#
#   ruby bench/i18n.rb            # WORKERS=4 ROUNDS=5 CALLS=200000
require_relative "support"
require "hashfile/i18n"
require "hashfile/i18n/backend"
require "tmpdir"

FILES = Dir["/usr/share/rubygems-integration/all/gems/{faker,doorkeeper-i18n,devise,actionview,activesupport}-*/**/{locale,locales}/**/*.yml"].uniq.sort
abort "install ruby-faker, ruby-devise, ruby-doorkeeper-i18n and ruby-actionview (bin/setup does)" if FILES.size < 100
WORKERS = Integer(ENV.fetch("WORKERS", 4))
ROUNDS = Integer(ENV.fetch("ROUNDS", 5))
CALLS = Integer(ENV.fetch("CALLS", 200_000))
# Shares of the sampled keys each worker translates before its PSS is read.
USED = [0.0, 0.1, 1.0].freeze
I18n.enforce_available_locales = false
I18n.load_path = FILES
STORE = File.join(Dir.mktmpdir, "locales.hf")
Hashfile::I18n.build(FILES, STORE)

def clock = Process.clock_gettime(Process::CLOCK_MONOTONIC)

BACKENDS = {
  simple: -> { I18n::Backend::Simple.new.tap { |b| b.send(:init_translations) } },
  hashfile: -> { Hashfile::I18n::Backend.new(STORE) },
  # Results deep-frozen, Strings deduplicated (the opt-in): what it saves.
  frozen: -> { Hashfile::I18n::Backend.new(STORE, freeze: true) }
}.freeze

# Real keys: every leaf of en and de.
def sample_keys
  tree = BACKENDS[:simple].call.send(:translations)
  keys = []
  walk = lambda do |h, prefix, locale|
    h.each do |k, v|
      next unless k.is_a?(Symbol) && !k.to_s.include?(".")

      v.is_a?(Hash) ? walk.call(v, prefix + [k], locale) : keys << [locale, (prefix + [k]).join(".")]
    end
  end
  %i[en de].each { |l| walk.call(tree[l], [], l) }
  keys
end

KEYS = sample_keys
puts "#{FILES.size} locale files, #{KEYS.size} leaf keys of en and de sampled; store #{File.size(STORE)} bytes"

def boot(name)
  started = clock
  backend = BACKENDS.fetch(name).call
  backend.translate(:en, "date.formats.default")
  [clock - started, backend]
end

def per_call(backend)
  I18n.backend = backend
  n = 0
  started = clock
  while n < CALLS
    locale, key = KEYS[n % KEYS.size]
    I18n.t(key, locale: locale)
    n += 1
  end
  (clock - started) / CALLS
end

def pss_kb(pid) = File.read("/proc/#{pid}/smaps_rollup")[/^Pss:\s+(\d+)/, 1].to_i

# WORKERS children forked from a parent that booted `name` (as Puma's
# preload_app! does), each translating `used` of the sampled keys; their
# total PSS.
def workers_pss(name, used)
  keys = KEYS.first((KEYS.size * used).round)
  pid = fork do
    _, backend = boot(name)
    I18n.backend = backend
    GC.start
    pipes = Array.new(WORKERS) do
      r, w = IO.pipe
      child = fork do
        r.close
        keys.each { |locale, key| I18n.t(key, locale: locale) }
        GC.start
        w.puts pss_kb(Process.pid)
        w.close
        sleep 1 # alive while the others measure
        exit!(0)
      end
      w.close
      [r, child]
    end
    total = pipes.sum { |r, _| r.gets.to_i }
    pipes.each { |_, child| Process.wait(child) }
    File.write("/tmp/hashfile-i18n-pss-#{name}", total)
    exit!(0)
  end
  Process.wait(pid)
  Integer(File.read("/tmp/hashfile-i18n-pss-#{name}"))
end

results = Hash.new { |h, k| h[k] = Hash.new { |hh, kk| hh[kk] = [] } }
ROUNDS.times do |round|
  BACKENDS.each_key do |name|
    seconds, backend = boot(name)
    results[name][:boot] << seconds
    results[name][:call] << per_call(backend)
    USED.each { |used| results[name][[:pss, used]] << workers_pss(name, used) } if round.zero?
    backend.store.close if backend.respond_to?(:store)
  end
  puts "round #{round + 1}/#{ROUNDS}"
end

median = ->(a) { a.sort[a.size / 2] }
puts
puts format("%-10s %10s %11s   %s", "backend", "boot ms", "I18n.t ns", USED.map { |u| format("PSS %d workers, %3d%% keys", WORKERS, u * 100) }.join("  "))
BACKENDS.each_key do |name|
  r = results[name]
  puts format("%-10s %10.2f %11.0f   %s", name, median[r[:boot]] * 1e3, median[r[:call]] * 1e9, USED.map { |u| format("%22d KB", r[[:pss, u]].first) }.join("  "))
end
s = results[:simple]
h = results[:hashfile]
puts
puts format("hashfile/simple: boot %.5fx (%.0fx faster), I18n.t %.2fx, worker PSS %s",
            median[h[:boot]] / median[s[:boot]], median[s[:boot]] / median[h[:boot]], median[h[:call]] / median[s[:call]],
            USED.map { |u| format("%.2fx (%d%% of keys used)", h[[:pss, u]].first.to_f / s[[:pss, u]].first, u * 100) }.join(", "))
