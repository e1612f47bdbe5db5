# frozen_string_literal: true

module Hashfile
  # An open store. Get one from Hashfile.open. Reads like a frozen Hash:
  # lookups, iteration in the order entries were added, Enumerable.
  # Safe to share between threads; forked children share its pages.
  class Reader
    include Enumerable

    MISSING = Object.new.freeze
    private_constant :MISSING

    # @!method [](key)
    #   @return [Object, nil] the value, decoded with the options given to
    #     Hashfile.open, or nil if +key+ is absent
    # @!method key?(key)
    # @!method size
    # @!method close
    # @!method closed?
    # @!method path
    alias has_key? key?
    alias include? key?
    alias member? key?
    alias length size

    # Like Hash#fetch: the value, else the block's result, else +default+,
    # else KeyError.
    def fetch(key, default = MISSING)
      value = _get(key, MISSING, nil)
      return value unless MISSING.equal?(value)

      if block_given?
        warn "block supersedes default value argument", uplevel: 1 unless MISSING.equal?(default)
        yield key
      elsif !MISSING.equal?(default)
        default
      else
        raise KeyError.new("key not found: #{key.inspect}", receiver: self, key: key)
      end
    end

    # The value of +key+ (or +default+), with decode options for this call
    # overriding those given to Hashfile.open.
    #
    #   db.get("limits", symbolize_names: true) # => {api: {burst: 100}}
    #   db.get("limits", raw: true)             # => the stored bytes
    def get(key, default = nil, symbolize_names: nil, freeze: nil, raw: nil)
      # Keywords, not **options: no Hash to build per call. nil leaves the
      # open-time option as it is.
      _get_with(key, default, symbolize_names, freeze, raw)
    end

    # Like Hash#dig: walks into a nested value. Only the part the path ends
    # on is decoded; siblings along the way are skipped whole. Options as
    # for #get.
    #
    #   db.dig("limits", "api", "burst") # => 100
    def dig(key, *path, **options)
      _dig(key, path, options.empty? ? nil : options)
    end

    def empty?
      size.zero?
    end

    # Yields each key and value, in the order they were added. Keys are
    # frozen, as a Hash's are.
    def each_pair
      return enum_for(:each_pair) { size } unless block_given?

      # One mapping from start to end, whatever a reload swaps in meanwhile.
      pinned = _pin
      cursor = [0, 0, 0]
      while cursor
        raise ClosedError, "closed store #{path}" if closed?

        chunk = pinned._each_chunk(cursor)
        cursor = chunk[0]
        i = 1
        while i < chunk.size
          # A close in the block ends the iteration here, not a chunk later.
          raise ClosedError, "closed store #{path}" if closed?

          yield chunk[i], chunk[i + 1]
          i += 2
        end
      end
      self
    ensure
      pinned&.close
    end
    alias each each_pair

    # @!method stale?
    #   Whether the path now names another file than the one this reader
    #   reads (a newer store was published there by rename), or none. Always
    #   false for a remote store, which raises StaleError on reads once the
    #   object is replaced.
    # @!method reload_error
    #   With +reload:+, why the last new file found at the path could not be
    #   opened (the old store is read meanwhile), or nil.
    # @!method generation
    #   How many times a newer store replaced the one read (+reopen+,
    #   +reload:+, +on_change: :reopen+), after a +reload:+ check if one is
    #   due: a cache of looked-up values is dropped when it changes.

    # Reads the store the path names now, from the next lookup on; lookups
    # and +each+ under way finish on the old one. Raises, keeping the old
    # store, if the new file cannot be opened.
    # @return [self]
    def reopen
      _reopen
      self
    end

    def each_key
      return enum_for(:each_key) { size } unless block_given?

      each_pair { |k, _| yield k }
    end

    def each_value
      return enum_for(:each_value) { size } unless block_given?

      each_pair { |_, v| yield v }
    end

    def keys
      each_key.to_a
    end

    def values
      each_value.to_a
    end

    # The values of +keys+, nil for absent ones. A remote store fetches
    # them as one batch: all the seed blocks, then all the slots, then all
    # the records, each level's requests together, so 100 keys take about
    # the round trips of one.
    def values_at(*keys)
      _get_many(keys, nil)
    end

    # @!method remote?
    #   Whether the store is read over HTTP or from S3.

    def to_h(&block)
      hash = {}
      each_pair { |k, v| hash[k] = v }
      block ? hash.to_h(&block) : hash
    end

    # Checks every section's checksum and the whole index. Runs without the
    # GVL. O(size of the file).
    # @return [true]
    # @raise [ChecksumError] naming the damaged section
    # @raise [FormatError] for structural damage
    def verify
      _verify
    end

    # Entry count, sizes per section, bits per key and build parameters;
    # for a remote store also its ETag and Last-Modified and the block
    # cache's counters (+:cache+: hits, misses, round trips, requests,
    # bytes fetched, resident and pinned bytes).
    # @return [Hash{Symbol => Object}]
    def info
      _info
    end

    def inspect
      state = closed? ? "closed" : "entries=#{size}"
      "#<#{self.class} path=#{path.inspect} #{state}>"
    end
    alias to_s inspect
  end
end
