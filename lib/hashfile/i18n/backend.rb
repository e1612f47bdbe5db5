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
      #   looks up, but not what Simple gives (its results are not frozen),
      #   so code that changes a result raises FrozenError. Off by default.
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
        @store.to_h.transform_keys(&:to_sym)
      end

      # I18n.reload!: reads a store published at the path since.
      def reload!
        swap_if_stale
        super
      end

      protected

      # Simple's lookup: the keys walked from the locale down, a Symbol met
      # on the way resolved as a link. One `dig` answers every lookup that
      # meets no link; only a path through a non-Hash looks further.
      def lookup(locale, key, scope = [], options = ::I18n::EMPTY_HASH)
        forget_if_replaced if @reload
        keys = ::I18n.normalize_keys(locale, key, scope, options[:separator])
        value = @cache.fetch(keys) do
          @cache.clear if @cache.size >= CACHE_ENTRIES
          @cache[keys] = stored(keys)
        end
        return through_link(locale, keys[0].to_s, keys.drop(1), options) if THROUGH_A_LEAF.equal?(value)

        value = resolve_entry(locale, keys.last, value, options.merge(scope: nil)) if value.is_a?(Symbol)
        value
      end

      private

      # Stands for a path through a value that is not a Hash: Simple stops
      # there (nil), unless that value is a Symbol, a link it follows.
      THROUGH_A_LEAF = Object.new.freeze

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

      # The stored value at `keys`, or THROUGH_A_LEAF. I18n.normalize_keys
      # turns a segment of digits into an Integer and "true"/"false" into
      # booleans; Simple looks such a key up as itself in a Hash, else as a
      # Symbol of its text, and never indexes an Array with it.
      def stored(keys)
        head = keys[0].to_s
        rest = keys.drop(1)
        return @store.dig(head, *rest) if rest.all?(Symbol)

        value = @store.dig(head, *rest.map { |k| k.is_a?(Symbol) ? k : k.to_s.to_sym })
        value.nil? ? walk(head, rest) : value
      rescue TypeError
        THROUGH_A_LEAF
      end

      # Simple's walk, for a path with a segment that is not a Symbol: each
      # such step looks in its parent Hash for the key itself, then for
      # the Symbol of its text.
      def walk(head, rest)
        path = []
        rest.each do |step|
          next path << step if step.is_a?(Symbol)

          parent = path.empty? ? @store[head] : @store.dig(head, *path)
          return nil unless parent.is_a?(Hash)

          step = step.to_s.to_sym unless parent.key?(step)
          return nil unless parent.key?(step)

          path << step
        end
        @store.dig(head, *path)
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

      # The longest prefix of the path that ends on a value (the first
      # prefixes to answer are scalars, so no large Hash is decoded):
      # nil unless it is a Symbol; a Symbol is resolved and the rest of the
      # path walked in what it names, as Simple walks it.
      def through_link(locale, head, rest, options)
        (rest.size - 1).downto(1) do |n|
          value = begin
            @store.dig(head, *rest.first(n))
          rescue TypeError
            next
          end
          return nil unless value.is_a?(Symbol)

          result = resolve_entry(locale, rest[n - 1], value, options.merge(scope: nil))
          rest.drop(n).each do |step|
            return nil unless result.is_a?(Hash)
            return nil unless result.key?(step)

            result = result[step]
            result = resolve_entry(locale, step, result, options.merge(scope: nil)) if result.is_a?(Symbol)
          end
          return result
        end
        nil
      end
    end
  end
end
