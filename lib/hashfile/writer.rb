# frozen_string_literal: true

module Hashfile
  # Collects entries inside Hashfile.build. Not created directly.
  class Writer
    # Adds one entry. Keys are Strings or Symbols; values any type
    # Hashfile stores (see Hashfile.build).
    def []=(key, value)
      _add(key, value)
    end

    def add(key, value)
      _add(key, value)
      self
    end

    # Adds a +[key, value]+ pair.
    def <<(pair)
      add_pair(pair, nil)
      self
    end

    # Adds every entry of a Hash, or every +[key, value]+ pair of an Enumerable.
    def merge(data)
      if data.is_a?(Hash)
        _add_hash(data)
      elsif data.respond_to?(:each)
        index = 0
        data.each do |*pair|
          add_pair(pair.size == 1 ? pair[0] : pair, index)
          index += 1
        end
      else
        raise TypeError, "expected a Hash or an Enumerable of [key, value] pairs, not #{data.class}"
      end
      self
    end

    alias length size

    private

    def add_pair(pair, index)
      unless pair.is_a?(Array) && pair.size == 2
        where = index ? " at index #{index}" : ""
        raise ArgumentError, "expected a [key, value] pair#{where}, got #{pair.inspect[0, 100]}"
      end
      _add(pair[0], pair[1])
    end
  end
end
