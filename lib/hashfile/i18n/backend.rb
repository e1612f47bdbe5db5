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
      def initialize(path, reload: nil)
        raise ArgumentError, "reload must be nil or a number of seconds, 0 or more" unless reload.nil? || (reload.is_a?(Numeric) && reload >= 0)

        # Frozen, Symbol-keyed values: what Simple's YAML loading gives, and
        # safe to hand out again from the cache.
        @store = Hashfile.open(path, freeze: true, symbolize_names: true)
        @reload = reload
        @next_check = clock + reload.to_f if reload
        @cache = {}
        @available_locales = nil
      end

      def initialized?
        true
      end

      # Locales with translations, as Simple lists them: a locale whose
      # data is empty, or only +i18n+ metadata, is left out.
      def available_locales
        @available_locales ||= @store.keys.filter_map do |name|
          locale = name.to_sym
          if @store.dig(name, :i18n).nil?
            # Only an empty Hash (or nil: I18n reads `de:` with nothing
            # under it as one) is left out: decode only what is small
            # enough to be one.
            locale unless @store.get(name, raw: true).bytesize <= 8 && [{}, nil].include?(@store[name])
          else
            data = @store[name]
            locale unless data.is_a?(Hash) && data.size <= 1
          end
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
        if @reload && (now = clock) >= @next_check
          @next_check = now + @reload
          swap_if_stale
        end
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

      def clock = Process.clock_gettime(Process::CLOCK_MONOTONIC)

      # The stored value at `keys` (frozen), or THROUGH_A_LEAF.
      def stored(keys)
        @store.dig(keys[0].to_s, *keys.drop(1))
      rescue TypeError
        THROUGH_A_LEAF
      end

      def swap_if_stale
        return unless @store.stale?

        @store.reopen
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
