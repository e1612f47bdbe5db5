# frozen_string_literal: true

module Hashfile
  # The base of every error Hashfile raises itself.
  #
  #   Hashfile::Error < StandardError
  #     FormatError          a bad or corrupt store (#path)
  #       UnsupportedError   a store of a version or with features this library cannot read
  #       ChecksumError      a checksum mismatch, from #verify (#section)
  #     DuplicateKeyError    a key given twice to a build (#key)
  #     ParseError           an input file that cannot be imported (#input, #line, #column)
  #     LimitError           a build past a limit of the format or of one build
  #     ClosedError          use of a closed store or finished writer
  #     StaleError           the store file changed under an open reader (#path)
  #
  # A missing file raises Errno::ENOENT, as File.open does. Bad arguments
  # raise ArgumentError or TypeError naming the argument.
  class Error < StandardError; end

  # The store file an error concerns, for the errors that have one.
  module WithPath
    # @return [String, nil] the store's path, when known
    attr_reader :path

    def initialize(message = nil, path: nil)
      super(message)
      @path = path
    end
  end

  # The store's file changed while a reader had it open: it was truncated
  # or rewritten in place (not replaced by rename, as builds publish), and a
  # read touched a page that was gone. What the read found is discarded;
  # every later call raises this too. Reopen the store.
  class StaleError < Error
    include WithPath
  end

  # A file that is not a valid store: bad magic, truncated, or damaged.
  class FormatError < Error
    include WithPath
  end

  # A store this library cannot read: another major version, or required
  # features it does not know. A newer version of Hashfile may read it.
  class UnsupportedError < FormatError; end

  # A section whose bytes do not match its checksum.
  class ChecksumError < FormatError
    # @return [String, nil] the damaged section ("records", "header", ...)
    attr_reader :section

    def initialize(message = nil, path: nil, section: nil)
      super(message, path: path)
      @section = section
    end
  end

  # The same key twice in a build (with on_duplicate: :error).
  class DuplicateKeyError < Error
    # @return [String, nil] the duplicated key: of the keys that repeat, the
    #   one whose second occurrence comes first in input order
    attr_reader :key
    # @return [Integer] how many other keys occur more than once
    attr_reader :others

    def initialize(message = nil, key: nil, others: 0)
      super(message)
      @key = key
      @others = others
    end
  end

  # An input file that cannot be imported.
  class ParseError < Error
    # @return [String, nil] the input's name ("-" for standard input)
    attr_reader :input
    # @return [Integer, nil] the line, for inputs with lines
    attr_reader :line
    # @return [Integer, nil] the column, where known
    attr_reader :column

    def initialize(message = nil, input: nil, line: nil, column: nil)
      super(message)
      @input = input
      @line = line
      @column = column
    end
  end

  # A build past a limit of the format or of one build (entries, bytes).
  class LimitError < Error; end

  # Use of a closed store or a finished writer.
  class ClosedError < Error; end
end
