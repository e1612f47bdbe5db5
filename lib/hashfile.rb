# frozen_string_literal: true

require_relative "hashfile/version"
require_relative "hashfile/native"
require_relative "hashfile/errors"
require_relative "hashfile/reader"
require_relative "hashfile/writer"

# Hashfile: an immutable key-value file that opens in microseconds at any
# size and reads like a Hash.
#
#   Hashfile.build("settings.hf", { "feature.x" => "on", "limit" => "50" })
#   Hashfile.open("settings.hf") { |db| db["limit"] } # => "50"
#
# Keys and values are Strings (binary-safe). A value comes back in the
# encoding it was stored in: UTF-8, US-ASCII or ASCII-8BIT. Symbol keys are
# stored and looked up by their name, so +db[:limit]+ and +db["limit"]+ are
# the same lookup, and a build given both +:limit+ and +"limit"+ raises
# DuplicateKeyError.
module Hashfile
  # Default build options; see Hashfile.build.
  BUILD_DEFAULTS = {
    keys_per_bucket: 4.0,
    load_factor: 0.99,
    dense_key_fraction: 0.6,
    dense_bucket_fraction: 0.3,
    hash_seed: 0,
    seed_block_len: 128
  }.freeze

  class << self
    # Builds a store at +path+ from a Hash, from any Enumerable of
    # +[key, value]+ pairs, and/or from a block that adds entries:
    #
    #   Hashfile.build("out.hf", hash)
    #   Hashfile.build("out.hf") { |w| w["k"] = "v" }
    #
    # The file is written to a temporary file beside +path+ and renamed over
    # it only when complete: if anything raises, +path+ is left as it was.
    # The build itself runs without the GVL.
    #
    # @param keys_per_bucket [Float] average keys per CHD bucket (1.0..10.0)
    # @param load_factor [Float] table fill before remapping (0.5..1.0)
    # @param dense_key_fraction [Float] share of keys in the dense buckets
    # @param dense_bucket_fraction [Float] share of buckets that are dense
    # @param hash_seed [Integer] first XXH3 seed tried
    # @param seed_block_len [Integer] pilots per bit-packed block: 32, 128 or 256
    # @return [Integer] the size of the file written, in bytes
    # @raise [DuplicateKeyError] if a key appears twice
    # @raise [TypeError] if a key is not a String or Symbol, or a value not a String
    def build(path, data = nil, **options)
      unknown = options.keys - BUILD_DEFAULTS.keys
      raise ArgumentError, "unknown option#{"s" if unknown.size > 1}: #{unknown.join(", ")}" unless unknown.empty?

      o = BUILD_DEFAULTS.merge(options)
      writer = Writer._new(Float(o[:keys_per_bucket]), Float(o[:load_factor]), Float(o[:dense_key_fraction]),
                           Float(o[:dense_bucket_fraction]), Integer(o[:hash_seed]), Integer(o[:seed_block_len]))
      writer.merge(data) unless data.nil?
      yield writer if block_given?
      writer._finish(path_string(path))
    end

    # Opens a store. With a block, yields it, closes it when the block ends
    # and returns the block's value.
    #
    # @param verify [Boolean] check every checksum first (O(size); off by
    #   default, since opening otherwise takes microseconds at any size)
    # @raise [Errno::ENOENT] if the file does not exist
    # @raise [FormatError] if it is not a valid store
    def open(path, verify: false)
      db = Reader._open(path_string(path))
      begin
        db.verify if verify
      rescue Exception # rubocop:disable Lint/RescueException
        db.close
        raise
      end
      return db unless block_given?

      begin
        yield db
      ensure
        db.close
      end
    end

    private

    def path_string(path)
      path = path.to_path if path.respond_to?(:to_path)
      String(path)
    end
  end
end
