# frozen_string_literal: true

require "tmpdir"
require_relative "../hashfile"

module Hashfile
  # Translations served from a store, for the i18n gem: build the store
  # once from the locale files (Hashfile::I18n.build, or
  # `hashfile build-i18n`; neither needs the i18n gem), then
  #
  #   I18n.backend = Hashfile::I18n::Backend.new("locales.hf")
  #
  # Boot opens a file instead of parsing every locale file into a Hash in
  # every process; a lookup walks one record, decoding only the entry it
  # returns; forked workers share the pages.
  module I18n
    # Locale files the build reads, by extension: what
    # I18n::Backend::Simple loads as data (it also evaluates .rb files,
    # which hold code, and a store holds data).
    EXTENSIONS = %w[yml yaml json].freeze

    autoload :Backend, "hashfile/i18n/backend"
    autoload :Chain, "hashfile/i18n/chain"

    # Builds a store of translations from `sources` (locale files, or
    # directories searched for *.yml, *.yaml and *.json, sorted by path),
    # holding what I18n::Backend::Simple holds after loading the same
    # files in the same order: each file read as Simple reads it (Symbol
    # keys; a String key and a Symbol key of the same name are one key,
    # the later value at the earlier one's place; a locale named twice in a
    # file is its last), then merged into what the files before it gave as
    # Simple's store_translations merges (I18n::Utils.deep_merge!: Hashes
    # under the same key merge, anything else the later value replaces; a
    # locale with nothing under it is an empty Hash). Pass `I18n.load_path`
    # to get the store of what an app loads.
    #
    # The files are parsed by Hashfile's importers (each into a scratch
    # store) and merged here: Simple's merge is Ruby Hash
    # merging after its keys became Symbols, which the store's own
    # +on_duplicate: :merge+ (keys compared as stored) is not.
    # @param options as for Hashfile.build (compression:, index:, ...)
    # @return [Hash] +{entries:, file_bytes:}+, as Hashfile.build_from
    # @raise [ArgumentError] for a Ruby locale file or an unknown extension
    def self.build(sources, output, **options)
      translations = {}
      Dir.mktmpdir("hashfile-i18n", scratch_parent) do |scratch|
        # One scratch store, rebuilt for each file: the room of the
        # largest file, whatever the count (a container's /dev/shm may be
        # 64 MB).
        files(sources).each do |file|
          each_locale(file, File.join(scratch, "locale.hf")) do |locale, data|
            held = translations[locale]
            data ||= {}
            translations[locale] = held.is_a?(Hash) && data.is_a?(Hash) ? deep_merge!(held, data) : data
          end
        end
      end
      entries = translations.transform_values { |data| stored_keys(data) }
      { entries: entries.size, file_bytes: Hashfile.build(output, entries, **options) }
    end

    # Yields each locale of `file` and its data, as Simple loads them
    # (YAML.unsafe_load_file or JSON.load_file with symbolize_names: a
    # repeated key is its last value at its first place), read with
    # Hashfile's importers through a store at `scratch`.
    def self.each_locale(file, scratch, &block)
      read(file, scratch, :error).each_pair(&block)
    rescue DuplicateKeyError
      # A locale named twice (`en:` and `:en:`): its last data, at its
      # first place.
      last = read(file, scratch, :last)
      read(file, scratch, :first).each_key { |locale| yield locale, last[locale] }
    end

    # `file`'s locales and their data, its repeated ones as `on_duplicate`
    # says.
    def self.read(file, scratch, on_duplicate)
      # One thread: a locale file is small, and threads cost more than
      # they save (318 files: 0.2 s against 0.5).
      Hashfile.build_from([file], scratch, on_duplicate: on_duplicate, threads: 1)
      Hashfile.open(scratch, symbolize_names: true, freeze: false, &:to_h)
    end

    # Where the scratch stores go: memory where there is a tmpfs, since
    # each build fsyncs what it writes (318 locale files: 0.5 s there,
    # 2.2 s on disk).
    def self.scratch_parent
      File.directory?("/dev/shm") && File.writable?("/dev/shm") ? "/dev/shm" : Dir.tmpdir
    end

    # I18n::Utils.deep_merge!, without the i18n gem.
    def self.deep_merge!(held, data)
      held.merge!(data) { |_key, old, new| old.is_a?(Hash) && new.is_a?(Hash) ? deep_merge!(old, new) : new }
    end

    # `data` with its Symbol keys as UTF-8 Strings, as the importers store
    # keys: a reader opened with symbolize_names (the backend's) gets the
    # Symbols back, and a lookup compares short keys in place. Lossless:
    # no Hash holds a String and a Symbol of one name any more.
    def self.stored_keys(data)
      case data
      when Hash then data.to_h { |key, value| [key.is_a?(Symbol) ? key.to_s.force_encoding(Encoding::UTF_8) : key, stored_keys(value)] }
      when Array then data.map { |value| stored_keys(value) }
      else data
      end
    end
    private_class_method :each_locale, :read, :scratch_parent, :deep_merge!, :stored_keys

    # The locale files `sources` name, in load order.
    def self.files(sources)
      Array(sources).flat_map do |source|
        source = source.to_s
        next Dir[File.join(source, "**", "*.{#{EXTENSIONS.join(",")}}")].sort if File.directory?(source)

        raise Errno::ENOENT, source unless File.exist?(source)

        ext = File.extname(source).delete(".").downcase
        if ext == "rb"
          raise ArgumentError, "#{source} is a Ruby locale file (code, such as pluralization procs); a store holds data: " \
                               "leave it to an I18n::Backend::Simple chained after Hashfile's (I18n::Backend::Chain)"
        end
        raise ArgumentError, "#{source}: not a locale file Hashfile reads (.#{EXTENSIONS.join(", .")})" unless EXTENSIONS.include?(ext)

        [source]
      end
    end
  end
end
