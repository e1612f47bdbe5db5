# frozen_string_literal: true

module Hashfile
  # The base of every error Hashfile raises itself.
  #
  #   Hashfile::Error < StandardError
  #     FormatError          a bad or corrupt store (#path)
  #       UnsupportedError   a store of a version or with features this library cannot read
  #       ChecksumError      a checksum mismatch, from #verify (#section)
  #       DatasetError       a dataset's manifest damaged or unknown, or a shard that is not
  #                          what it lists (#path: the manifest or the shard)
  #     DuplicateKeyError    a key given twice to a build (#key)
  #     PublishRefusedError  a publish gate refused a dataset's new generation (#path, #gate)
  #     ParseError           an input file that cannot be imported (#input, #line, #column)
  #     LimitError           a build past a limit of the format or of one build
  #     ClosedError          use of a closed store or finished writer
  #     UnsafeLinkError      a build's output is a symbolic link of another user (#path, #owner)
  #     StaleError           the store changed under an open reader (#path): a local file
  #                          truncated in place, or a remote object replaced
  #     RemoteError          a remote store that could not be read (#url, #status)
  #       RemoteNotFoundError    404, or no such S3 object or bucket
  #       RemoteAccessError      401 or 403: credentials or headers
  #       RemoteTimeoutError     a request took longer than timeout: (not retried)
  #       RemoteConnectionError  refused, reset or cut short, after the retries
  #       RemoteServerError      5xx or 429, after the retries
  #       RemoteProtocolError    not a valid answer to a ranged GET: the whole object
  #                              (Range ignored), a wrong Content-Range, a redirect
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

  # The store changed while a reader had it open. A local file was
  # truncated or rewritten in place (not replaced by rename, as builds
  # publish) and a read touched a page that was gone; every later call
  # raises this too. A remote object was replaced (another ETag or length):
  # reads that reach the server raise this; what the cache holds of the old
  # object is still served, whole. Reopen the store.
  class StaleError < Error
    include WithPath
  end

  # A remote store (http://, https://, s3://) that could not be read. The
  # message names the location, the byte range and what happened.
  class RemoteError < Error
    # @return [String, nil] the store's location
    attr_reader :url
    # @return [Integer, nil] the HTTP status of the answer, if there was one
    attr_reader :status

    def initialize(message = nil, url: nil, status: nil)
      super(message)
      @url = url
      @status = status
    end
  end

  # No object at the location (404, or no such S3 object or bucket).
  class RemoteNotFoundError < RemoteError; end
  # 401 or 403: missing or wrong credentials or headers.
  class RemoteAccessError < RemoteError; end
  # A request took longer than the timeout: option (not retried).
  class RemoteTimeoutError < RemoteError; end
  # The connection was refused, reset or cut short, after the retries.
  class RemoteConnectionError < RemoteError; end
  # The server answered 5xx or 429, after the retries.
  class RemoteServerError < RemoteError; end
  # An answer that cannot be a correct answer to a ranged GET: the whole
  # object where a range was asked for, another range, a redirect (not
  # followed: open the location it names), an unexpected status.
  class RemoteProtocolError < RemoteError; end

  # A file that is not a valid store: bad magic, truncated, or damaged.
  class FormatError < Error
    include WithPath
  end

  # A store this library cannot read: another major version, or required
  # features it does not know. A newer version of Hashfile may read it.
  class UnsupportedError < FormatError; end

  # A dataset (shards under a manifest) that is not what its manifest
  # says, or a manifest damaged or of a kind this release does not read.
  # The message names the shard (its number and file) where one is wrong.
  class DatasetError < FormatError; end

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

  # A publish gate (max_entry_change:, max_type_change:, refuse_empty:)
  # refused a dataset's new generation: the message has the numbers. The
  # current generation stays, and nothing of the new one is left;
  # force: true publishes it anyway.
  class PublishRefusedError < Error
    # @return [String, nil] the dataset's manifest
    attr_reader :path
    # @return [String] the gate: "max_entry_change", "max_type_change" or "refuse_empty"
    attr_reader :gate

    def initialize(message = nil, path: nil, gate: nil)
      super(message)
      @path = path
      @gate = gate
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

  # A build's output path is a symbolic link that neither the process's
  # user nor root owns. Following it would let that user choose which file
  # the build replaces (in /tmp, or a deploy directory others can write
  # to), so nothing is written. Remove the link, or give the file it leads
  # to as the output.
  class UnsafeLinkError < Error
    include WithPath
    # @return [Integer, nil] the link's owner (uid)
    attr_reader :owner

    def initialize(message = nil, path: nil, owner: nil)
      super(message, path: path)
      @owner = owner
    end
  end
end
