# frozen_string_literal: true

require_relative "test_helper"
require "hashfile/i18n"
require "hashfile/i18n/backend"
require "json"
require "yaml"

# Hashfile::I18n::Backend against I18n::Backend::Simple on random
# translation trees: each tree is written to a few locale files (YAML, some
# JSON), which Simple loads and Hashfile::I18n.build builds, and random
# lookups go to both. Keys mix Symbols, Strings, Integers, booleans, nil
# and Floats, among them keys that I18n.normalize_keys makes alike (`0`,
# `"0"`, `:"0"`; `true`, `:true`); values hold pluralization Hashes (some
# without the key a count asks for), links (Symbols) and Arrays. Compared:
# translate with and without count:, default:, scope:, separator: and
# interpolation (the value, or the exception's class and message), exists?,
# available_locales (in order) and the whole translations Hash.
#
# Seeded and reproducible: the seed is printed; I18N_DIFF_SEED=N reruns one,
# I18N_DIFF_TREES and I18N_DIFF_LOOKUPS (per tree) run more.
class I18nDifferentialTest < HashfileTest
  SEED = Integer(ENV.fetch("I18N_DIFF_SEED", Random.new_seed % 1_000_000))
  TREES = Integer(ENV.fetch("I18N_DIFF_TREES", 100))
  LOOKUPS = Integer(ENV.fetch("I18N_DIFF_LOOKUPS", 150))

  # :de and "de" are one locale to Simple (a file may name it both ways).
  LOCALES = [:en, :de, "de", "fr", :"pt-BR"].freeze
  # Map keys, as a locale file can hold them: Symbols (`:a:` in YAML),
  # Strings (`a:`, `"0":`; Symbols to Simple), Integers (`0:`), booleans
  # (`true:`), nil (`~:`), a Float, and an Integer past 64 bits.
  KEYS = [:a, :b, :c, "a", "b", :one, :other, :zero, :few, "one", "other", :attributes, :l, :x,
          0, 1, 2, -1, 10, :"0", :"1", :"-1", "0", "1", "2", "10", true, false, "true".to_sym, "false".to_sym, "true", "false",
          nil, 1.5, :"a.b", :i18n, 12_345_678_901_234_567_890].freeze
  # Lookup segments: what I18n.normalize_keys makes Symbols, Integers
  # ("-0", "+1" and one past 64 bits too) and booleans of, and texts no
  # key has.
  SEGMENTS = %w[a b c one other zero few attributes l x y i18n 0 1 2 10 -1 -0 +1 007 true false nope
                12345678901234567890].freeze
  # Links point under :l, which holds none, so no link loops.
  LINKS = %i[l l.x l.a l.0 l.a.b l.one l.x.other nope].freeze

  def setup
    super
    skip "not run under GC.stress: translations, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    @enforce = ::I18n.enforce_available_locales
    ::I18n.enforce_available_locales = false
    @backend = ::I18n.backend
  end

  def teardown
    ::I18n.enforce_available_locales = @enforce unless @enforce.nil?
    ::I18n.backend = @backend
    ::I18n.load_path = []
    super
  end

  def test_random_trees_answer_as_simple_does
    puts "\n#{self.class.name}: I18N_DIFF_SEED=#{SEED} (#{TREES} trees, #{LOOKUPS} lookups each)"
    random = Random.new(SEED)
    differences = []
    TREES.times do |n|
      dir = File.join(tmpdir, "tree#{n}")
      Dir.mkdir(dir)
      files = write_files(random, dir)
      differences.concat(compare(random, files, n).first(3))
      break if differences.size >= 10
    end
    assert_empty differences, "I18N_DIFF_SEED=#{SEED}:\n#{differences.join("\n")}"
  end

  # The cases the random trees found, written out: keys that normalize
  # alike (the Integer or boolean key is Simple's first choice), a
  # pluralization Hash reached through them, and a String key and a Symbol
  # key of one name in two files (one key to Simple, so their Hashes
  # merge) or in one (the later wins).
  def test_keys_that_normalize_alike_answer_as_simple_does
    File.write(path("a.yml"), <<~YAML)
      en:
        one:
          c:
            0:
              true:
                few: "a few"
        n:
          0: integer
          "0": quoted
        t:
          :true: symbol
          true: boolean
        m:
          "1": quoted
          :"1": symbol
        g:
          x: "1"
      de:
        "0": quoted
    YAML
    File.write(path("b.yml"), "en:\n  :g:\n    y: \"2\"\n  :m:\n    :\"1\": later\n")
    File.write(path("c.json"), JSON.generate({ de: { "0" => "json", "de" => "x" } }))
    files = [path("a.yml"), path("b.yml"), path("c.json")]
    simple = ::I18n::Backend::Simple.new
    ::I18n.load_path = files
    simple.send(:init_translations)
    Hashfile::I18n.build(files, path)
    ours = Hashfile::I18n::Backend.new(path)
    cases = [
      ["one.c.0.true", { count: 1 }, [::I18n::InvalidPluralizationData, /key 'one' is missing/]],
      ["n.0", {}, "integer"], ["n.-0", {}, "integer"], ["t.true", {}, "boolean"], ["m.1", {}, "later"],
      ["g", {}, { x: "1", y: "2" }], ["0", { locale: :de }, "json"], [0, { scope: :n }, "integer"],
      ["one|c|0|true|few", { separator: "|" }, "a few"]
    ]
    cases.each do |key, options, want|
      locale = options.delete(:locale) || :en
      expected = answer(simple) { |b| b.translate(locale, key, **options) }
      if want.is_a?(Array)
        assert_equal want[0], expected[0], key
        assert_match want[1], expected[1], key
      elsif !want.nil?
        assert_equal want, expected, key
      end
      assert_equal expected, answer(ours) { |b| b.translate(locale, key, **options) }, "#{key} #{options}"
    end
    assert_equal in_order(simple.send(:translations)), in_order(ours.send(:translations))
  ensure
    ours&.store&.close
  end

  # The first differences between the two backends over one tree.
  def compare(random, files, tree)
    simple = ::I18n::Backend::Simple.new
    ::I18n.load_path = files
    begin
      simple.send(:init_translations)
    rescue ::I18n::InvalidLocaleData, TypeError, NoMethodError
      return [] # a tree Simple does not accept
    end
    store = File.join(File.dirname(files.first), "locales.hf")
    Hashfile::I18n.build(files, store)
    ours = Hashfile::I18n::Backend.new(store)
    where = "tree #{tree} (#{files.map { |f| File.read(f).inspect }.join(", ")})"
    differences = []
    check = lambda do |what, &block|
      want = answer(simple, &block)
      got = answer(ours, &block)
      differences << "#{where}: #{what}: Simple #{want.inspect}, Hashfile #{got.inspect}" unless want == got
    end
    check.call("translations") { |b| in_order(b.send(:translations).transform_values { |data| data || {} }) }
    check.call("available_locales", &:available_locales)
    paths = simple.send(:translations).transform_values { |data| paths_in(data) }
    LOOKUPS.times do
      locale = LOCALES.sample(random: random)
      key, options = lookup(random, paths[locale.to_sym])
      check.call("translate(#{locale.inspect}, #{key.inspect}, #{options})") { |b| b.translate(locale, key, **options) }
      check.call("exists?(#{locale.inspect}, #{key.inspect})") { |b| b.exists?(locale, key) }
    end
    differences
  ensure
    ours&.store&.close
  end

  # What `block` gives with `backend` as I18n's (links and Symbol
  # defaults resolve through I18n.translate): the value, or the exception
  # thrown or raised, as its class and message.
  def answer(backend)
    ::I18n.backend = backend
    result = catch(:exception) { yield backend }
    result.is_a?(Exception) ? [result.class, result.message] : result
  rescue StandardError => e
    [e.class, e.message]
  end

  # A Hash as its pairs in order, all the way down (Hash#== ignores the
  # order, which InvalidPluralizationData's message shows).
  def in_order(value)
    case value
    when Hash then value.map { |k, v| [k, in_order(v)] }
    when Array then value.map { |v| in_order(v) }
    else value
    end
  end

  def write_files(random, dir)
    Array.new(random.rand(1..3)) do |i|
      data = LOCALES.sample(random.rand(1..3), random: random).to_h do |locale|
        [locale, random.rand < 0.1 ? nil : tree(random, 3, links: true)]
      end
      if random.rand < 0.25
        File.join(dir, "#{i}.json").tap { |f| File.write(f, JSON.generate(data)) }
      else
        File.join(dir, "#{i}.yml").tap { |f| File.write(f, YAML.dump(data)) }
      end
    end
  end

  def tree(random, depth, links:)
    return plural(random) if random.rand < 0.2

    random.rand(1..5).times.to_h do
      key = KEYS.sample(random: random)
      [key, value(random, depth - 1, links: links && key != :l && key != "l")]
    end
  end

  # A pluralization Hash, sometimes without :other or :one.
  def plural(random)
    %i[zero one other few attributes].select { random.rand < 0.6 }.to_h { |k| [k, "#{k} %{count}"] }
  end

  def value(random, depth, links:)
    case random.rand(10)
    when 0, 1, 2 then depth.positive? ? tree(random, depth, links: links) : "s#{random.rand(9)}"
    when 3 then links ? LINKS.sample(random: random) : "t"
    when 4 then [random.rand(3), true, nil, 2.5].sample(random: random)
    when 5 then ["v%{x}", { one: "o" }, :"l.x"].first(random.rand(1..3)).map { |v| !links && v.is_a?(Symbol) ? "u" : v }
    else "s#{random.rand(9)} %{x}"
    end
  end

  # The paths of the keys in `data`, each as the texts a lookup names it
  # by (a key of nil or a Float has none).
  def paths_in(data, prefix = [], found = [])
    return found unless data.is_a?(Hash)

    data.each do |key, value|
      next if key.nil? || key.is_a?(Float)

      path = prefix + [key.to_s]
      found << path
      paths_in(value, path, found)
    end
    found
  end

  # A key (a String of segments, an Array or a Symbol) and the options of
  # one translate: mostly a path the tree has, as it is or changed a
  # little (a segment more, less or replaced), else random segments.
  def lookup(random, paths)
    separator = random.rand < 0.1 ? "|" : "."
    segments = if paths&.any? && random.rand < 0.8
                 path = paths.sample(random: random).dup
                 case random.rand(6)
                 when 0 then path << SEGMENTS.sample(random: random)
                 when 1 then path.pop if path.size > 1
                 when 2 then path[random.rand(path.size)] = SEGMENTS.sample(random: random)
                 end
                 path
               else
                 Array.new(random.rand(1..4)) { SEGMENTS.sample(random: random) }
               end
    key = case random.rand(7)
          when 0 then segments.map(&:to_sym)
          when 1 then segments.join(separator).to_sym
          when 2 then segments.size == 1 && segments[0].match?(/\A-?\d+\z/) ? Integer(segments[0]) : segments.join(separator)
          else segments.join(separator)
          end
    options = {}
    options[:separator] = separator if separator != "."
    options[:count] = [0, 1, 2, 5].sample(random: random) if random.rand < 0.4
    options[:scope] = SEGMENTS.sample(random.rand(1..2), random: random).join(separator) if random.rand < 0.15
    options[:default] = ["dflt", :"l.x", [:"a.b", "d2"], nil, :nope].sample(random: random) if random.rand < 0.15
    options[:x] = "X" if random.rand < 0.3
    [key, options]
  end
end
