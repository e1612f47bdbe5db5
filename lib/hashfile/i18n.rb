# frozen_string_literal: true

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
    # merged in the order given the way I18n::Backend::Simple merges its
    # load path: later files win, nested Hashes merge (on_duplicate:
    # :merge). Pass `I18n.load_path` to get the store of what an app loads.
    # @return [Hash] +{entries:, file_bytes:}+, as Hashfile.build_from
    # @raise [ArgumentError] for a Ruby locale file or an unknown extension
    def self.build(sources, output, **options)
      Hashfile.build_from(files(sources), output, on_duplicate: :merge, **options)
    end

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
