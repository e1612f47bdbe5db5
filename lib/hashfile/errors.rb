# frozen_string_literal: true

module Hashfile
  # The classes are defined by the extension (ext/hashfile/src/error.rs):
  #
  #   Hashfile::Error < StandardError      base of everything raised here
  #     FormatError                        bad, corrupt or unsupported file
  #       ChecksumError                    a checksum mismatch, from #verify
  #     DuplicateKeyError                  a key given twice to a build
  #     ClosedError                        use of a closed store or finished writer
  #     ParseError                         an input file that cannot be imported,
  #                                        naming the file, line and column
  #
  # A missing file raises Errno::ENOENT, as File.open does.
  class DuplicateKeyError
    # @return [String, nil] the duplicated key
    attr_reader :key
  end
end
