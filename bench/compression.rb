# frozen_string_literal: true

# Compressed values (compression: :zstd) on real data nobody here wrote and
# on a generated catalogue, against the same store uncompressed: file sizes
# (with MessagePack of the same pairs, and gzip -6 and zstd -3 of the whole
# uncompressed store, which no lookup could read in place) and lookup time
# in Ruby, `db[]` over every key in a random order, alternating ROUNDS
# times after an untimed pass each; the fastest round of each.
#
#   ruby bench/compression.rb                       # every data set
#   SETS=catalogue ROWS=1000000 ruby bench/compression.rb
#   LEVEL=19 ruby bench/compression.rb              # zstd:19 (default: zstd, levels 3 and 9)
#   COMPRESSION=auto ruby bench/compression.rb      # any compression name
#   ORDER=random SETS=locales ruby bench/compression.rb  # digs out of order
#
# Each data set's records are also laid out as Sparkey lays out a
# compressed log (zstd blocks of 4 KiB and of 16 KiB), by
# crates/hashfile/examples/block_baseline.rs, which times one random
# lookup in Rust in each layout side by side.
#
# Each store (but the locales) is also served by nginx on loopback and read
# remotely: the bytes fetched for REMOTE_LOOKUPS random lookups with 4 KiB
# blocks, each from a cold open, and for `each` over the whole store (64 KiB
# blocks, the open's first block counted).
#
# The data sets (Debian packages bin/setup --all installs):
# - locales: the 318 locale files of ruby-faker, devise, doorkeeper-i18n,
#   actionview and activesupport, merged as Hashfile::I18n.build merges
#   them: one entry per locale, its whole tree (1 MB for en). Lookups
#   here are `db.dig(locale, *path)` of leaf keys, as the I18n backend's.
# - iso-639-3: iso-codes' 7,910 languages, one record each (Hashes).
# - unicode: UnicodeData.txt, one Array of 15 fields per code point.
# - catalogue: ROWS (default 1,000,000; QUICK=1 20,000) JSON Lines products
#   whose names and descriptions are words of /usr/share/dict/words, drawn
#   by a Zipf law as words in text are.
require_relative "support"
require "msgpack"
require "yaml"
require "open3"
require "hashfile/i18n"
$LOAD_PATH.unshift File.expand_path("../test", __dir__)
require "support/servers"

QUICK = BenchData::QUICK
COMPRESSION = ENV.fetch("COMPRESSION") { ENV["LEVEL"] ? "zstd:#{Integer(ENV["LEVEL"])}" : "zstd" }
# The blocks' level: the one given, else zstd's default.
BLOCK_LEVEL = Integer(ENV.fetch("LEVEL", 3))
ROUNDS = Integer(ENV.fetch("ROUNDS", QUICK ? 1 : 3))
ROWS = Integer(ENV.fetch("ROWS", QUICK ? 20_000 : 1_000_000))
PROBES = Integer(ENV.fetch("PROBES", QUICK ? 2_000 : 200_000))
REMOTE_LOOKUPS = Integer(ENV.fetch("REMOTE_LOOKUPS", QUICK ? 20 : 200))
DIR = File.join(BenchData::DIR, "compression")
FileUtils.mkdir_p(DIR)

GEMS = "/usr/share/rubygems-integration/all/gems"
WORDS = "/usr/share/dict/words"
UNICODE = "/usr/share/unicode/UnicodeData.txt"
ISO = "/usr/share/iso-codes/json/iso_639-3.json"

# Each data set: how to build it (a lambda taking the output path and
# extra options) and the probes (Arrays of arguments to db.dig).
def locales
  files = Dir["#{GEMS}/{faker,doorkeeper-i18n,devise,actionview,activesupport}-*/**/{locale,locales}/**/*.yml"].uniq.sort
  return nil if files.size < 100

  build = ->(out, **o) { Hashfile::I18n.build(files, out, **o) }
  raw = File.join(DIR, "locales.hf")
  build.call(raw)
  # Every leaf of en and de, as I18n.t would ask for them.
  probes = []
  walk = lambda do |value, path|
    case value
    when Hash then value.each { |k, v| walk.call(v, path + [k]) }
    else probes << path
    end
  end
  Hashfile.open(raw) { |db| %w[en de].each { |l| walk.call(db[l], [l]) } }
  # In tree order, as a page's keys often come; ORDER=random shuffles them.
  probes.shuffle!(random: Random.new(26)) if ENV["ORDER"] == "random"
  { build: build, probes: probes, dig: true }
end

# ruby-faker's locales merged as I18n merges them, then flattened to one
# key a leaf ("en.faker.name.first_name" => the list of names): many
# small values and a few long lists, the way configs and translations
# are often keyed (issue 52's data set).
def faker_flat
  files = Dir["#{GEMS}/faker-*/lib/locales/**/*.yml"].sort
  return nil if files.size < 100

  input = File.join(DIR, "faker-flat.json")
  unless File.exist?(input)
    tree = {}
    merge = ->(a, b) { a.merge(b) { |_, x, y| x.is_a?(Hash) && y.is_a?(Hash) ? merge.call(x, y) : y } }
    files.each { |f| tree = merge.call(tree, YAML.safe_load_file(f, aliases: true) || {}) }
    flat = {}
    walk = ->(prefix, v) { v.is_a?(Hash) ? v.each { |k, w| walk.call("#{prefix}.#{k}", w) } : flat[prefix.delete_prefix(".")] = v }
    walk.call("", tree)
    File.write(input, JSON.generate(flat))
  end
  build = ->(out, **o) { Hashfile.build_from(input, out, **o) }
  { build: build }
end

def iso
  return nil unless File.exist?(ISO)

  build = ->(out, **o) { Hashfile.build_from(ISO, out, records_at: "639-3", key_field: "alpha_3", value_field: "*", **o) }
  { build: build }
end

def unicode
  return nil unless File.exist?(UNICODE)

  build = ->(out, **o) { Hashfile.build_from(UNICODE, out, format: :csv, col_sep: ";", header: false, value_column: "*", **o) }
  { build: build }
end

def catalogue
  return nil unless File.exist?(WORDS)

  input = File.join(DIR, "catalogue-#{ROWS}.jsonl")
  unless File.exist?(input)
    words = File.readlines(WORDS, chomp: true).grep(/\A[a-z]{3,}\z/)
    rng = Random.new(26)
    # Words by a Zipf law over a shuffled word list, as text uses them
    # (the rank-r word about 1/r as often as the first): log-uniform ranks.
    words = words.shuffle(random: rng)
    word = -> { words[(words.size**rng.rand).to_i - 1] }
    categories = Array.new(40) { word.call.capitalize }
    brands = Array.new(300) { word.call.capitalize }
    File.open("#{input}.tmp", "w") do |f|
      ROWS.times do |i|
        f.puts JSON.generate({
                               "sku" => format("SKU-%08d", i),
                               "name" => "#{brands[rng.rand(300)]} #{Array.new(2 + rng.rand(3)) { word.call }.join(" ")}",
                               "category" => categories[rng.rand(40)],
                               "price" => (rng.rand(100_000) / 100.0),
                               "stock" => rng.rand(500),
                               "description" => "#{Array.new(12 + rng.rand(20)) { word.call }.join(" ").capitalize}."
                             })
      end
    end
    File.rename("#{input}.tmp", input)
  end
  build = ->(out, **o) { Hashfile.build_from(input, out, key_field: "sku", value_field: "*", **o) }
  { build: build }
end

# ns per lookup of each probe: the fastest of ROUNDS, and the first pass
# (the untimed one: a fresh open, nothing kept in the store's cache of
# decoded values yet).
def time_lookups(db, probes, dig)
  best = Float::INFINITY
  first = nil
  (ROUNDS + 1).times do |round|
    GC.start # each round from the same heap: lists of thousands of strings make garbage
    t = BenchData.clock
    if dig
      probes.each { |p| db.dig(*p) }
    else
      probes.each { |k| db[k] }
    end
    elapsed = (BenchData.clock - t) / probes.size * 1e9
    first ||= elapsed
    best = [best, elapsed].min if round.positive? || ROUNDS.zero?
  end
  [best, first]
end

# Bytes fetched over HTTP from nginx: per random lookup, each from a cold
# open with 4 KiB blocks; and for `each` over the whole store.
def remote_bytes(nginx, path, keys)
  name = File.basename(path)
  nginx.publish(name, path)
  url = nginx.url("/files/#{name}")
  fetched = ->(db) { db.info[:cache][:bytes_fetched] }
  lookups = keys.sum do |k|
    Hashfile.open(url, block_size: 4096) do |db|
      before = fetched.call(db)
      db[k]
      fetched.call(db) - before
    end
  end
  # The first block, fetched by the open itself, is not in bytes_fetched.
  scan = Hashfile.open(url, block_size: 64 << 10, cache_size: 4 << 20) do |db|
    db.each { |_key, _value| } # reading every record is the point
    fetched.call(db) + (64 << 10)
  end
  [lookups.fdiv(keys.size), scan]
end

# The Sparkey-style baseline (crates/hashfile/examples/block_baseline.rs):
# bytes and ns per random lookup, in Rust, of the plain store, ours
# compressed, and 4 KiB and 16 KiB zstd blocks.
def block_baseline(raw, packed)
  lookups = QUICK ? 20_000 : 200_000
  out, err, status = Open3.capture3(*BenchData.cargo_example("block_baseline"), raw, packed, BLOCK_LEVEL.to_s, lookups.to_s)
  raise "block_baseline failed: #{err}" unless status.success?

  JSON.parse(out, symbolize_names: true)
end

def size_of_command(command, path)
  out, status = Open3.capture2(*command, "-c", path, binmode: true)
  status.success? ? out.bytesize : nil
end

nginx = Hashfile::TestServers::Nginx.new
at_exit { nginx.stop }
wanted = ENV.fetch("SETS", "locales,faker-flat,iso-639-3,unicode,catalogue").split(",")
sets = { "locales" => -> { locales }, "faker-flat" => -> { faker_flat }, "iso-639-3" => -> { iso }, "unicode" => -> { unicode },
         "catalogue" => -> { catalogue } }
rows = wanted.filter_map do |name|
  set = sets.fetch(name).call
  next warn("#{name}: its input is not installed (bin/setup --all); skipped") unless set

  raw = File.join(DIR, "#{name}.hf")
  packed = File.join(DIR, "#{name}-zstd.hf")
  built = BenchData.clock
  set[:build].call(raw)
  raw_s = BenchData.clock - built
  built = BenchData.clock
  set[:build].call(packed, compression: COMPRESSION)
  packed_s = BenchData.clock - built
  # The Hash only for MessagePack's size and the keys: it goes before timing.
  msgpack, keys = Hashfile.open(raw, &:to_h).then { |hash| [MessagePack.pack(hash).bytesize, hash.keys] }
  probes = (set[:probes] || keys.sample(PROBES, random: Random.new(7))).first(PROBES)
  keys = nil # rubocop:disable Lint/UselessAssignment -- let GC take it before timing
  GC.start
  times = {}
  # Alternating, so that both see the same state of the machine.
  Hashfile.open(raw) do |r|
    Hashfile.open(packed) do |z|
      r.values_at(*probes.first(16).map { |p| Array(p).first }) # maps each store
      z.values_at(*probes.first(16).map { |p| Array(p).first })
      times[:raw], times[:raw_first] = time_lookups(r, probes, set[:dig])
      times[:zstd], times[:zstd_first] = time_lookups(z, probes, set[:dig])
      times[:raw] = [times[:raw], time_lookups(r, probes, set[:dig]).first].min
      times[:zstd] = [times[:zstd], time_lookups(z, probes, set[:dig]).first].min
      info = z.info[:compression]
      remote = unless set[:dig]
                 sample = probes.first(REMOTE_LOOKUPS)
                 { raw: remote_bytes(nginx, raw, sample), zstd: remote_bytes(nginx, packed, sample) }
               end
      {
        name: name, entries: r.size, raw: File.size(raw), zstd: File.size(packed), msgpack: msgpack,
        gzip: size_of_command(%w[gzip -6], raw), zstd_file: size_of_command(%w[zstd -3 -q], raw),
        values_ratio: info[:ratio], dictionary: info[:dictionary_bytes], compressed: info[:values],
        raw_ns: times[:raw], zstd_ns: times[:zstd], first_ratio: times[:zstd_first] / times[:raw_first], raw_build: raw_s, zstd_build: packed_s, dig: set[:dig], remote: remote,
        blocks: block_baseline(raw, packed)
      }
    end
  end
end

def mb(bytes)
  bytes ? format("%.2f MB", bytes / 1e6) : "n/a"
end

puts "compression #{COMPRESSION}; lookups: the fastest of #{ROUNDS} rounds (#{QUICK ? "QUICK" : "full"} run)"
puts
puts "| data | entries | store | compressed | ratio | MessagePack | gzip -6 of the store | zstd -3 of the store | values decoded/stored | dictionary |"
puts "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
rows.each do |r|
  puts format("| %s | %d | %s | %s | **%.2fx** | %s (%.2fx) | %s | %s | %.2fx | %.1f KiB |",
              r[:name], r[:entries], mb(r[:raw]), mb(r[:zstd]), r[:raw].fdiv(r[:zstd]), mb(r[:msgpack]), r[:msgpack].fdiv(r[:zstd]),
              mb(r[:gzip]), mb(r[:zstd_file]), r[:values_ratio], r[:dictionary] / 1024.0)
end
puts
puts "| data | lookup | uncompressed | compressed | ratio | first pass, fresh opens | build uncompressed | build compressed |"
puts "| --- | --- | --- | --- | --- | --- | --- | --- |"
rows.each do |r|
  puts format("| %s | %s | %.0f ns | %.0f ns | **%.2fx** | %.2fx | %.2f s | %.2f s |", r[:name], r[:dig] ? "dig(locale, *path)" : "db[key]",
              r[:raw_ns], r[:zstd_ns], r[:zstd_ns] / r[:raw_ns], r[:first_ratio], r[:raw_build], r[:zstd_build])
end
puts
puts "Against Sparkey-style blocks (zstd level #{BLOCK_LEVEL}, no dictionary; the plain store's index counted for them): bytes, " \
     "and one random lookup in Rust (value bytes out), side by side in one run"
puts
puts "| data | plain store | ours compressed (smaller; lookup) | 4 KiB blocks (smaller; lookup, against ours) | 16 KiB blocks |"
puts "| --- | --- | --- | --- | --- |"
rows.each do |r|
  b = r[:blocks]
  ours = b[:per_value]
  cell = lambda do |x|
    format("%s (%.2fx); %.0f ns%s", mb(x[:bytes]), b[:plain][:bytes].fdiv(x[:bytes]), x[:ns], x.equal?(ours) ? "" : format(" (%.1fx)", x[:ns].fdiv(ours[:ns])))
  end
  puts format("| %s | %s; %.0f ns | %s | %s | %s |", r[:name], mb(b[:plain][:bytes]), b[:plain][:ns], cell.call(ours),
              cell.call(b[:blocks_4k]), cell.call(b[:blocks_16k]))
end
puts
puts "(locales: a lookup here is a whole locale, where the I18n backend digs a path)"

puts
puts "Over HTTP (nginx on loopback): bytes fetched"
puts
puts "| data | a lookup from a cold open, 4 KiB blocks: uncompressed | compressed | ratio | `each` over the store: uncompressed | compressed | ratio |"
puts "| --- | --- | --- | --- | --- | --- | --- |"
rows.each do |r|
  next unless (remote = r[:remote])

  (raw_lookup, raw_scan), (z_lookup, z_scan) = remote.values_at(:raw, :zstd)
  puts format("| %s | %.0f B | %.0f B | %.2fx | %s | %s | %.2fx |", r[:name], raw_lookup, z_lookup, z_lookup / raw_lookup,
              mb(raw_scan), mb(z_scan), z_scan.fdiv(raw_scan))
end
