# frozen_string_literal: true

require_relative "test_helper"
require "i18n"
require "mocha/minitest"
require "hashfile/i18n"
require "psych"

# The suite's modules declare their tests with `test "name" do`, which the
# i18n gem's own test_helper defines on Module; defined here just while
# they load (Kernel#test stays as it was for everything else).
class Module
  def test(name, &block)
    define_method("test_#{name.gsub(/\W+/, "_")}", &block)
  end
end
%w[basics defaults interpolation link lookup pluralization procs localization
   localization/date localization/date_time localization/time localization/procs].each { |f| require "i18n/tests/#{f}" }
class Module
  remove_method :test
end

# The i18n gem's own backend suite (I18n::Tests, shipped in Debian's
# ruby-i18n) run against Hashfile::I18n::Backend, as the gem runs it
# against I18n::Backend::Simple. The suite adds translations with
# store_translations; here they go where an app's go, into a locale file,
# which is built into a store before the next lookup. A test that stores a
# Proc is skipped when it does: a store holds data, not code (an app
# chains a Simple backend for its Ruby locale files, as the Railtie does).
class I18nSuiteTest < HashfileTest
  # A Hashfile backend whose store_translations writes a YAML locale file
  # (through a Simple backend, which merges as the suite expects) and
  # rebuilds the store from it on the next lookup.
  class RebuildingBackend < Hashfile::I18n::Backend
    def initialize(dir)
      @dir = dir
      @source = I18n::Backend::Simple.new
      @source.send(:init_translations)
      @version = 0
      write_and_build
      super(@built)
    end

    def store_translations(locale, data, options = ::I18n::EMPTY_HASH)
      raise Minitest::Skip, "stores a Proc: a store holds data, not code" if holds_proc?(data)

      @source.store_translations(locale, data, options)
      @dirty = true
    end

    def available_locales
      rebuild
      super
    end

    def reload!
      rebuild
      super
    end

    protected

    def lookup(...)
      rebuild
      super
    end

    private

    def holds_proc?(data)
      case data
      when Proc then true
      when Hash then data.each_value.any? { |v| holds_proc?(v) }
      when Array then data.any? { |v| holds_proc?(v) }
      else false
      end
    end

    # The translations as a locale file: String keys, values as they are
    # (Symbols, the links, as YAML's :symbol scalars, read back as Symbols).
    def write_and_build
      @version += 1
      yaml = File.join(@dir, "locale-#{@version}.yml")
      File.write(yaml, Psych.dump(stringify(@source.send(:translations))))
      @built = File.join(@dir, "locales.hf")
      Hashfile::I18n.build(yaml, @built)
      @dirty = false
    end

    def rebuild
      return unless @dirty

      write_and_build
      @store.reopen
      @cache = {}
      @available_locales = nil
    end

    def stringify(value)
      case value
      when Hash then value.to_h { |k, v| [k.is_a?(Symbol) ? k.to_s : k, stringify(v)] }
      when Array then value.map { |v| stringify(v) }
      else value
      end
    end
  end

  # The i18n gem's test_helper has this too.
  def assert_nothing_raised(*)
    yield
  end

  include I18n::Tests::Basics
  include I18n::Tests::Defaults
  include I18n::Tests::Interpolation
  include I18n::Tests::Link
  include I18n::Tests::Lookup
  include I18n::Tests::Pluralization
  include I18n::Tests::Procs
  include I18n::Tests::Localization::Date
  include I18n::Tests::Localization::DateTime
  include I18n::Tests::Localization::Time
  include I18n::Tests::Localization::Procs

  def setup
    skip "not run under GC.stress: translations, not object lifetimes" if ENV["HASHFILE_GC_STRESS"] == "1"
    @saved = [I18n.backend, I18n.locale, I18n.default_locale, I18n.load_path, I18n.config.instance_variable_get(:@available_locales), I18n.enforce_available_locales]
    I18n.load_path = []
    I18n.enforce_available_locales = false
    I18n.available_locales = nil
    I18n.locale = nil
    I18n.default_locale = :en
    I18n.backend = RebuildingBackend.new(tmpdir)
    super
  end

  def teardown
    I18n.backend.store&.close if I18n.backend.is_a?(RebuildingBackend)
    if @saved
      backend, locale, default_locale, load_path, available, enforce = @saved
      I18n.backend = backend
      I18n.default_locale = default_locale
      I18n.locale = locale
      I18n.load_path = load_path
      I18n.available_locales = available || nil
      I18n.enforce_available_locales = enforce
    end
    super
  end
end
