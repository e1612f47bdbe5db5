# frozen_string_literal: true

require "i18n"
require_relative "../i18n"

module Hashfile
  module I18n
    # An I18n backend reading a store that Hashfile::I18n.build made.
    # `translate`, `exists?`, `localize`, pluralization (`count:`),
    # interpolation, `default:`, `scope:` and Symbol links come from
    # I18n::Backend::Base and behave as with I18n::Backend::Simple over the
    # same files (test/i18n_backend_test.rb compares every key of every
    # locale of Debian's locale packages). Read-only: translations added at
    # run time go to a Simple backend chained after this one.
    class Backend
      include ::I18n::Backend::Base

      # Most lookups remembered per process (then the memory starts over):
      # a translation used once is decoded once, as Simple holds it, but
      # only what the process uses is held.
      CACHE_ENTRIES = 50_000

      attr_reader :store

      # @param path [String] the store
      # @param reload [Numeric, nil] look for a rebuilt store at +path+ at
      #   most every this many seconds, on lookup (as Hashfile.open's
      #   +reload:+), and serve it from then on
      # @param freeze [Boolean] Hashes and Arrays come back deep-frozen,
      #   their Strings deduplicated: less memory for what the process
      #   looks up, but code that changes a result raises FrozenError.
      #   Off by default. (Simple, loading YAML with Psych 4, hands out
      #   Hashes and Arrays frozen as loaded, and unfrozen where files
      #   merged: unfrozen results serve any code Simple's serve.)
      def initialize(path, reload: nil, freeze: false)
        raise ArgumentError, "reload must be nil or a number of seconds, 0 or more" unless reload.nil? || (reload.is_a?(Numeric) && reload >= 0)

        # Symbol-keyed values, as Simple's YAML loading gives them. Like
        # Simple, a lookup hands out the object it holds (a String is
        # copied by I18n::Backend::Base#translate).
        # The store's own reload: policy looks for a rebuilt store; the
        # backend drops what it remembered when the generation changes.
        @store = Hashfile.open(path, freeze: freeze, symbolize_names: true, reload: reload)
        @reload = reload
        @generation = @store.generation
        @cache = {}
        @available_locales = nil
      end

      def initialized?
        true
      end

      # Locales with translations, as Simple lists them: a locale whose
      # data has at most one key, and that one +i18n+ (metadata, even
      # empty), or none, is left out.
      def available_locales
        @available_locales ||= @store.keys.filter_map do |name|
          name.to_sym unless metadata_only?(name)
        end
      end

      def store_translations(_locale, _data, _options = nil)
        raise NotImplementedError, "Hashfile::I18n::Backend is read-only: rebuild the store (Hashfile::I18n.build), " \
                                   "or chain an I18n::Backend::Simple after it for translations added at run time"
      end

      # Every translation, as Simple's +translations+ holds them: decodes
      # the whole store (for tools that export translations).
      def translations(do_init: false) # rubocop:disable Lint/UnusedMethodArgument
        # A locale with nothing under it is an empty Hash to Simple (stores
        # built before hold nil for it).
        @store.to_h { |locale, data| [locale.to_sym, data.nil? ? {} : data] }
      end

      # I18n.reload!: reads a store published at the path since.
      def reload!
        swap_if_stale
        super
      end

      protected

      # Simple's lookup: the keys walked from the locale down, a Symbol met
      # on the way resolved as a link. One `dig` answers every lookup whose
      # segments are all Symbols and that meets no link; the rest are
      # walked a step at a time (#walk). What the store holds is
      # remembered; resolving a link depends on the options, so it is done
      # on each call.
      def lookup(locale, key, scope = [], options = ::I18n::EMPTY_HASH)
        forget_if_replaced if @reload
        keys = ::I18n.normalize_keys(locale, key, scope, options[:separator])
        value = @cache.fetch(keys) do
          @cache.clear if @cache.size >= CACHE_ENTRIES
          @cache[keys] = stored(keys)
        end
        return follow(locale, value, options.merge(scope: nil)) if value.is_a?(Link)

        value = resolve_entry(locale, keys.last, value, options.merge(scope: nil)) if value.is_a?(Symbol)
        value
      end

      private

      # A path that met a Symbol before its last segment: Simple resolves
      # the Symbol (+key+ is the segment that led to it) and walks +rest+
      # in what it names.
      Link = Struct.new(:symbol, :key, :rest)

      # No key Simple would take at a step (see #simple_key).
      NONE = Object.new.freeze

      # A key no translation has: a `dig` to it raises TypeError exactly
      # when the value it is asked of is neither a Hash nor nil.
      PROBE = :"\0hashfile-i18n-probe"

      # Simple's test for a locale left out of available_locales (nil data,
      # `de:` with nothing under it, is an empty Hash to Simple). A locale
      # too large to be empty or one +i18n+ key is decided without
      # decoding it, unless it has an +i18n+ key.
      def metadata_only?(name)
        small = @store.get(name, raw: true).bytesize <= 64
        return false unless small || !@store.dig(name, :i18n).nil?

        data = @store[name] || {}
        data.is_a?(Hash) && data.size <= 1 && (data.empty? || data.key?(:i18n))
      end

      # What Simple's walk over `keys` finds in the store, before links
      # are resolved: a value, or a Link. Simple's translations are keyed
      # by Symbol locales, so the first segment is looked up as its text.
      def stored(keys)
        return translations if keys.empty?

        head = keys[0].to_s
        rest = keys.drop(1)
        if rest.all?(Symbol)
          begin
            value = @store.dig(head, *rest)
            # A locale whose data is nil (`de:` alone) is an empty Hash to
            # Simple.
            return rest.empty? && value.nil? && @store.key?(head) ? {} : value
          rescue TypeError
            # Through a value that is not a Hash: a link, or nothing.
          end
        end
        walk(head, rest)
      end

      # Simple's walk, a step at a time: at each step the key Simple takes
      # (#simple_key), then whether the value there is a Hash (or nil), so
      # the walk goes on in the store, or something else, which ends it:
      # a Symbol is a link, anything else is the answer at the last step
      # and nothing before it. Decoded: values that are not Hashes, the
      # answer, and what #simple_key needs for an Integer or boolean
      # segment; each lookup once per process (the cache).
      def walk(head, rest)
        path = []
        return nil if leaf_at(head, path)

        rest.each_with_index do |step, i|
          step = simple_key(head, path, step)
          return nil if NONE.equal?(step)

          path << step
          leaf = leaf_at(head, path)
          next unless leaf

          value = leaf[0]
          return value if i == rest.size - 1

          return value.is_a?(Symbol) ? Link.new(value, step, rest.drop(i + 1)) : nil
        end
        @store.dig(head, *path)
      end

      # +[value]+ at `path` unless that value is a Hash or nil (or there
      # is none), decided without decoding a Hash.
      def leaf_at(head, path)
        @store.dig(head, *path, PROBE)
        nil
      rescue TypeError
        [@store.dig(head, *path)]
      end

      # The key Simple takes at a step in the Hash (or nil) at `path`: the
      # segment itself if the Hash has it, else the Symbol of its text if
      # it has that, else NONE. I18n.normalize_keys makes a segment of
      # digits an Integer and "true"/"false" booleans, so `0` and `:"0"`
      # (a YAML `0:` and a `"0":`) are both keys Simple may take, the
      # Integer first. A Symbol segment is its own Symbol: taken as it is
      # (under nil or a Hash without it, the walk finds nothing further).
      def simple_key(head, path, step)
        return step if step.is_a?(Symbol)

        text = step.to_s.to_sym
        if step.is_a?(Integer)
          # The common cases without decoding the Hash: the Integer is
          # there, or neither is (or both lead to nil).
          return step unless @store.dig(head, *path, step).nil?
          return NONE if @store.dig(head, *path, text).nil?
        end
        parent = @store.dig(head, *path)
        return NONE unless parent.is_a?(Hash)
        return step if parent.key?(step)

        parent.key?(text) ? text : NONE
      end

      # Resolves a Link and walks the rest of its path in what it names,
      # as Simple does.
      def follow(locale, link, options)
        result = resolve_entry(locale, link.key, link.symbol, options)
        link.rest.each do |step|
          return nil unless result.is_a?(Hash)

          unless result.key?(step)
            step = step.to_s.to_sym
            return nil unless result.key?(step)
          end
          result = result[step]
          result = resolve_entry(locale, step, result, options) if result.is_a?(Symbol)
        end
        result
      end

      def swap_if_stale
        @store.reopen if @store.stale?
        forget_if_replaced
      end

      # Drops the lookups remembered from a store another one replaced.
      def forget_if_replaced
        generation = @store.generation
        return if generation == @generation

        @generation = generation
        @cache = {}
        @available_locales = nil
      end
    end
  end
end
