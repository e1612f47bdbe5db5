# frozen_string_literal: true

require_relative "test_helper"
require "hashfile/i18n"
require "hashfile/i18n/backend"

# Hashfile::I18n::Backend against I18n::Backend::Simple over the same
# locale files: every key of every locale of Debian's ruby-faker,
# ruby-doorkeeper-i18n, ruby-devise and ruby-actionview/activesupport (real
# data nobody here wrote) translates the same, with and without count and
# interpolation values; and the cases those files do not have (Symbol
# links, defaults, scopes) on files written here.
class I18nBackendTest < HashfileTest
  # ruby-iso's files have region keys of digits ("419"), which
  # I18n.normalize_keys turns into Integers.
  LOCALE_FILES = "/usr/share/rubygems-integration/all/gems/{faker,doorkeeper-i18n,devise,actionview,activesupport,iso}-*/**/{locale,locales}/**/*.yml"

  def setup
    super
    skip "not run under GC.stress: translations, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    @enforce = ::I18n.enforce_available_locales
    ::I18n.enforce_available_locales = false
  end

  def teardown
    ::I18n.enforce_available_locales = @enforce unless @enforce.nil?
    @hashfile&.store&.close
    super
  end

  def simple(files)
    backend = ::I18n::Backend::Simple.new
    ::I18n.load_path = files
    backend.send(:init_translations)
    backend
  end

  def hashfile(files)
    Hashfile::I18n.build(files, path)
    @hashfile = Hashfile::I18n::Backend.new(path)
  end

  # What `backend.translate` gives: the value, or the exception thrown or
  # raised (compared by class and message).
  def outcome(backend, locale, key, **options)
    result = catch(:exception) { backend.translate(locale, key, **options) }
    result.is_a?(Exception) ? [result.class, result.message] : result
  rescue StandardError => e
    [e.class, e.message]
  end

  def each_key(tree, prefix = [], &block)
    tree.each do |k, v|
      next unless k.is_a?(Symbol) && !k.to_s.include?(".")

      yield prefix + [k], v
      each_key(v, prefix + [k], &block) if v.is_a?(Hash)
    end
  end

  def test_every_key_of_every_real_locale_translates_as_simple_does
    files = Dir[LOCALE_FILES].uniq.sort
    skip_or_fail("HASHFILE_REQUIRE_DATA_PACKAGES", "install ruby-faker, ruby-doorkeeper-i18n, ruby-devise and ruby-actionview (bin/setup --all does)") if files.size < 100
    simple = simple(files)
    ours = hashfile(files)
    assert_equal simple.available_locales.sort, ours.available_locales.sort
    checked = 0
    simple.send(:translations).each do |locale, tree|
      each_key(tree) do |keys, value|
        key = keys.join(".")
        assert_equal outcome(simple, locale, key), outcome(ours, locale, key), "#{locale}.#{key}"
        assert_equal simple.exists?(locale, key), ours.exists?(locale, key), "exists? #{locale}.#{key}"
        if value.is_a?(Hash) && value.key?(:other)
          [0, 1, 2, 5].each do |count|
            assert_equal outcome(simple, locale, key, count: count), outcome(ours, locale, key, count: count), "#{locale}.#{key} count #{count}"
          end
        elsif value.is_a?(String) && value.include?("%{")
          values = value.scan(/%\{(\w+)\}/).flatten.to_h { |name| [name.to_sym, "<#{name}>"] }
          assert_equal outcome(simple, locale, key, **values), outcome(ours, locale, key, **values), "#{locale}.#{key} #{values}"
        end
        checked += 1
      end
      # Misses: below a leaf, beside it, and in a scope.
      assert_equal outcome(simple, locale, "no.such.key"), outcome(ours, locale, "no.such.key")
      assert_equal outcome(simple, locale, "date.formats.default.deeper"), outcome(ours, locale, "date.formats.default.deeper")
      assert_equal outcome(simple, locale, :short, scope: %i[date formats]), outcome(ours, locale, :short, scope: %i[date formats])
    end
    assert_operator checked, :>, 5000
    # Through I18n itself, with the store as the backend.
    ::I18n.backend = ours
    assert_equal "%Y-%m-%d", ::I18n.t("date.formats.default", locale: :en)
    assert_equal "1 error prohibited this user from being saved:", ::I18n.t("errors.messages.not_saved", count: 1, resource: "user", locale: :en)
  ensure
    ::I18n.backend = ::I18n::Backend::Simple.new
  end

  def test_links_defaults_and_scopes_on_files_written_here
    File.write(path("a.yml"), <<~YAML)
      en:
        greeting: "Hello %{name}"
        salute: :greeting
        formats: :"date.formats"
        date:
          formats:
            short: "%b %d"
          order:
            - :day
            - :month
        messages:
          inbox:
            one: "one message"
            other: "%{count} messages"
    YAML
    File.write(path("b.yml"), "en:\n  date:\n    formats:\n      long: \"%B %d\"\nfr:\n  greeting: Salut\nde:\n")
    files = [path("a.yml"), path("b.yml")]
    simple = simple(files)
    ours = hashfile(files)
    cases = [
      ["greeting", { name: "Ann" }], ["salute", { name: "Bo" }], ["formats.short", {}], ["formats.long", {}],
      ["formats.short.deeper", {}], ["date.order", {}], ["messages.inbox", { count: 1 }], ["messages.inbox", { count: 3 }],
      ["missing", { default: "fallback" }], ["missing", { default: :greeting, name: "Cy" }], [:short, { scope: "date.formats" }],
      ["greeting.deeper", {}], ["date", {}]
    ]
    %i[en fr de].each do |locale|
      cases.each do |key, options|
        assert_equal outcome(simple, locale, key, **options), outcome(ours, locale, key, **options), "#{locale} #{key} #{options}"
      end
    end
    assert_equal "Hello Bo", ours.translate(:en, "salute", name: "Bo")
    assert_equal "%B %d", ours.translate(:en, "formats.long")
    assert_equal simple.available_locales.sort, ours.available_locales.sort
    assert_raises(NotImplementedError) { ours.store_translations(:en, { a: "b" }) }
  end

  # Issue 22's four differences from Simple, each compared with Simple:
  # keys of digits or "true"/"false" (Integer and boolean segments to
  # I18n), Integer segments at an Array, a locale of only an empty i18n
  # key, and t(nil) through the Railtie's chain.
  def test_the_differences_from_simple_found_on_real_locale_files
    iso = Dir["/usr/share/rubygems-integration/all/gems/iso-*/locales/*.yml"]
    rails = Dir["/usr/share/rubygems-integration/all/gems/{actionview,activesupport}-*/**/locale/en.yml"]
    skip_or_fail("HASHFILE_REQUIRE_DATA_PACKAGES", "install ruby-iso and ruby-actionview (bin/setup --all does)") if iso.empty? || rails.size < 2
    File.write(path("codes.json"), JSON.generate({ en: { errors: { "404" => "Not found", "true" => "yes", "0" => "zero" } } }))
    File.write(path("codes.yml"), "en:\n  status:\n    404: Not found (an Integer key)\n    \"true\": quoted\nxx:\n  i18n:\nyy:\n  i18n:\n    plural: {}\nzz: {}\n")
    files = iso.sort + rails.sort + [path("codes.json"), path("codes.yml")]
    simple = simple(files)
    ours = hashfile(files)
    keys = ["vendor.iso.regions.419", "vendor.iso.regions.002", "errors.404", "errors.true", "errors.0", "status.404", "status.true",
            "date.day_names.1", "date.day_names", "date.abbr_month_names.0", "date.order.0", "number.format.precision"]
    found = keys.to_h { |key| [key, outcome(simple, :en, key)] }
    assert_equal "Latin America and the Caribbean", found["vendor.iso.regions.419"]
    assert_equal "Not found", found["errors.404"]
    assert_equal "Not found (an Integer key)", found["status.404"]
    assert_equal [::I18n::MissingTranslation, "translation missing: en.date.day_names.1"], found["date.day_names.1"]
    keys.each { |key| assert_equal found[key], outcome(ours, :en, key), key }
    assert_equal simple.available_locales.sort, ours.available_locales.sort
    refute_includes ours.available_locales, :xx
    # t(nil): nil from Simple, and from the chain the Railtie makes.
    ::I18n.load_path = files
    assert_nil simple.translate(:en, nil)
    chain = Hashfile::I18n::Chain.new(ours, ::I18n::Backend::Simple.new)
    assert_nil chain.translate(:en, nil)
    assert_equal "fallback", chain.translate(:en, nil, default: "fallback")
    assert_equal "Not found", chain.translate(:en, "errors.404")
  end

  def test_results_are_not_frozen_unless_asked
    File.write(path("a.yml"), "en:\n  list: [a, b]\n  tree:\n    leaf: x\n")
    Hashfile::I18n.build(path("a.yml"), path)
    thawed = Hashfile::I18n::Backend.new(path)
    frozen = Hashfile::I18n::Backend.new(path, freeze: true)
    [[thawed, false], [frozen, true]].each do |backend, want|
      assert_equal want, backend.translate(:en, "list").frozen?
      assert_equal want, backend.translate(:en, "tree").frozen?
      assert_equal want, backend.translate(:en, "tree")[:leaf].frozen?
      refute backend.translate(:en, "tree.leaf").frozen?, "a String is copied by I18n, as from Simple"
      backend.store.close
    end
  end

  def test_ruby_locale_files_and_unknown_extensions_are_refused
    File.write(path("plural.rb"), "{ en: { i18n: { plural: { rule: ->(n) { :other } } } } }")
    e = assert_raises(ArgumentError) { Hashfile::I18n.build([path("plural.rb")], path) }
    assert_match(/Ruby locale file .*Hashfile::I18n::Chain/, e.message)
    File.write(path("notes.txt"), "x")
    assert_raises(ArgumentError) { Hashfile::I18n.build([path("notes.txt")], path) }
  end

  def test_a_directory_is_read_in_path_order_and_reload_picks_up_a_rebuild
    dir = path("locales")
    Dir.mkdir(dir)
    File.write(File.join(dir, "a.yml"), "en:\n  k: first\n")
    File.write(File.join(dir, "b.yml"), "en:\n  k: second\n")
    Hashfile::I18n.build(dir, path)
    backend = Hashfile::I18n::Backend.new(path)
    assert_equal "second", backend.translate(:en, "k")
    File.write(File.join(dir, "c.yml"), "en:\n  k: third\n")
    Hashfile::I18n.build(dir, path)
    assert_equal "second", backend.translate(:en, "k")
    backend.reload!
    assert_equal "third", backend.translate(:en, "k")
    backend.store.close
    # reload: picks a rebuild up by itself.
    auto = Hashfile::I18n::Backend.new(path, reload: 0)
    assert_equal "third", auto.translate(:en, "k")
    File.write(File.join(dir, "d.yml"), "en:\n  k: fourth\n")
    Hashfile::I18n.build(dir, path)
    assert_equal "fourth", auto.translate(:en, "k")
    auto.store.close
    # The CLI builds the same store.
    status, _out, err = run_cli("build-i18n", dir, "-o", path("cli.hf"))
    assert_equal 0, status, err
    assert_match(/1 locales from 4 files/, err)
    assert_equal Hashfile.open(path, &:to_h), Hashfile.open(path("cli.hf"), &:to_h)
    status, _out, err = run_cli("build-i18n", path("nowhere"), "-o", path("x.hf"))
    assert_equal 1, status
    assert_match(/No such file or directory.*nowhere/, err)
  end
end
