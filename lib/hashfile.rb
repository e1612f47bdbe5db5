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
# Keys are Strings or Symbols. Values are typed: nil, true, false, Integer
# (any size), Float (bit for bit), String (in its encoding), Symbol, and
# Arrays and Hashes of these nested up to MAX_DEPTH levels; other objects
# through a +serializer:+. Symbol keys are stored and looked up by their
# name, so +db[:limit]+ and +db["limit"]+ are the same lookup, and a build
# given both +:limit+ and +"limit"+ raises DuplicateKeyError.
module Hashfile
  # Defined by the extension, from the Rust core, so that they have one
  # source (ext/hashfile/src/options.rs):
  #
  # BUILD_DEFAULTS     the build options and their defaults; see Hashfile.build
  # IMPORT_DEFAULTS    the importer options and their defaults; see Hashfile.build_from
  # FORMATS            input format names Hashfile.build_from reads
  # FORMAT_EXTENSIONS  file extension => the format it implies
  # ON_DUPLICATE       the policies for a repeated key (:error, :first, :last, :merge)
  # MAX_DEPTH          deepest nesting of Arrays and Hashes in a value (100);
  #                    JSON.parse's default max_nesting, counting the
  #                    top-level object, fits
  # MAX_INTEGER_DIGITS most digits of an integer in a JSON or YAML input
  #                    (100,000): converting takes time in their square
  # DEFAULT_MAX_VALUE_SIZE  the largest value Hashfile.open reads unless
  #                    given max_value_size: (256 MiB)

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
    #   (the classic index only)
    # @param index [:classic, :compact] the index layout: :compact takes about
    #   2.2 bits a key where :classic takes 2.7 to 2.9, builds at about half the
    #   speed, and is read by this version on (docs/FORMAT.md, "The compact
    #   index"); its keys_per_bucket default is 4.0
    # @param keys_per_part [Integer] most keys per part, on average: larger
    #   stores split into parts built in parallel (docs/FORMAT.md, "Parts")
    # @param compression [:none, :zstd, :auto, String] :zstd (levels 3, and 9
    #   for values of 512 bytes or more; "zstd:LEVEL" one level from 1 to 22,
    #   "zstd:LEVEL,LONG_LEVEL" two) stores each value of 32 bytes or more as a
    #   zstd frame of its own, with a dictionary trained on the store's
    #   values: text values take several times less room, and a lookup still
    #   decodes only its own value. :auto compresses only where a sample of
    #   the values says it pays (docs/RUBY.md, "Compressed values")
    # @param memory [:auto, Integer, String] the most the index data of the
    #   build may take, in bytes or as "64M", "4G": a build past it builds
    #   its index part by part from temporary files beside +path+ (16 bytes
    #   a key), into the same bytes. :auto is an eighth of the machine's
    #   memory (docs/RUBY.md, "Big builds")
    # @param on_duplicate [:error, :first, :last, :merge] a repeated key
    #   raises, or its first or last occurrence is kept (at that occurrence's
    #   position), or (:merge) the values deep-merge as I18n merges locale
    #   files, at the first occurrence's position
    # @param serializer [#dump and #load, Array(#call, #call), nil] for values
    #   of other classes (Time, Date, your own): an object with +dump+ and
    #   +load+ (Marshal, YAML) or a +[dump, load]+ pair of callables.
    #   +dump+ must return a String. Open the store with the same serializer.
    # @return [Integer] the size of the file written, in bytes
    # @raise [DuplicateKeyError] if a key appears twice
    # @raise [TypeError] if a key is not a String or Symbol, or a value (or
    #   a part of it) is of a class Hashfile does not store and no
    #   serializer was given; the message names the key and the path
    # @raise [ArgumentError] if a value nests deeper than MAX_DEPTH
    def build(path, data = nil, **options)
      options = keywords(options)
      writer = Writer._new(options, serializer_pair(options[:serializer])&.first)
      writer.merge(data) unless data.nil?
      yield writer if block_given?
      writer._finish(path_string(path))
    end

    # Builds a dataset: the entries split over +shards+ stores by
    # Hashfile.shard_of, written into +dir+ (made if missing) under names
    # that carry a new generation, then its manifest
    # (+hashfile-dataset.json+) by rename, so a reader opening +dir+ reads
    # the old dataset or the new one, never a mix. The shards of the
    # generation replaced stay; older ones are removed. Open it with
    # Hashfile.open(dir).
    #
    # +data+ is what Hashfile.build takes (a Hash, pairs, or a block), or
    # input files: a path, an IO, or an Array of them, read as
    # Hashfile.build_from reads them (and taking its options), the shards
    # built in parallel.
    #
    #   Hashfile.build_sharded("prices/", prices, shards: 16)
    #   Hashfile.build_sharded("prices/", Dir["export/*.jsonl"], shards: 16)
    #   Hashfile.open("prices/") { |db| db["sku-1"] }
    #
    # @param shards [Integer] 1 to 2**20
    # @return [Integer] bytes written (all shards)
    def build_sharded(dir, data = nil, shards:, serializer: nil, **options, &block)
      if input_files?(data)
        raise ArgumentError, "serializer: applies to Ruby values, not to input files" if serializer

        return build_from(data, dir, shards: shards, **options, &block)[:file_bytes]
      end

      writer = Writer._new(options.merge(shards: shards, serializer: serializer), serializer_pair(serializer)&.first)
      writer.merge(data) unless data.nil?
      yield writer if block
      writer._finish(path_string(dir))
    end

    # Builds a store from data files, streaming them in Rust: no Ruby object
    # per entry. The build runs on its own thread without the GVL; the
    # calling thread sleeps until progress or the end, and other Ruby
    # threads keep running. Interrupting it (Ctrl-C, Thread#raise) cancels
    # the build and publishes nothing.
    #
    #   Hashfile.build_from("export.csv", "prices.hf", key_column: "sku", value_column: "price")
    #   Hashfile.build_from(%w[a.jsonl b.jsonl], "out.hf") { |entries, bytes, total, phase| ... }
    #
    # @param inputs [String, Pathname, IO, Array] paths ("-" is standard
    #   input), or IO objects
    # @param format [String, Symbol, nil] one of FORMATS; nil: from each file's extension (FORMAT_EXTENSIONS)
    # @param key_column [String, Symbol, Integer, nil] CSV/TSV key column, by header name or 0-based index (default 0)
    # @param value_column [String, Integer, nil] CSV/TSV value column (default 1),
    #   or "*" for the whole row (a Hash as CSV::Row#to_h, an Array without a header)
    # @param header [Boolean] CSV/TSV: the first row is a header
    # @param quote [Boolean] CSV/TSV: strict RFC 4180 quoting (true, the default:
    #   a bad quote is a ParseError with its line and column), or none at all
    # @param col_sep [String, nil] CSV/TSV: the field separator (default "," or "\t")
    # @param comment [String, nil] CSV/TSV: skip lines that start with this character
    # @param key_field [String] objects in JSON Lines or a JSON array: the
    #   key's field, a dotted path into nested objects ("meta.id")
    # @param value_field [String] objects in JSON Lines or a JSON array: the
    #   value's field, or "*" for the whole object
    # @param records_at [String, nil] JSON: the dotted path from the top-level
    #   object to the object or array of the entries ("3166-1")
    # @param threads [Integer, nil] threads for hashing and sorting (default: every core)
    # @param progress [#call, nil] called with (entries, bytes_read, bytes_total_or_nil, phase),
    #   phase being :reading, :building or :publishing, at most every 0.1 s
    #   while reading and once per phase; a block works too. If it raises,
    #   the build is cancelled and nothing is published.
    # @param shards [Integer, nil] build a dataset of this many shards in
    #   the directory +output+, as Hashfile.build_sharded does (the shards
    #   built in parallel); +file_bytes+ then counts every shard
    # Plus every option of Hashfile.build.
    # @return [Hash] +{entries:, file_bytes:}+, and +spilled:+
    #   +{groups:, temporary_bytes:, attempts:}+ if the index went over
    #   +memory+ and was built from temporary files
    # @raise [ParseError] naming the input, line and column (or entry) and what was expected
    # @raise [DuplicateKeyError] naming the key and where it occurs
    def build_from(inputs, output, **options, &block)
      options = keywords(options)
      progress = options.delete(:progress) || block
      raise TypeError, "progress must respond to #call" if progress && !progress.respond_to?(:call)

      with_input_paths(inputs.is_a?(Array) ? inputs : [inputs], options[:format]) do |paths|
        _build_from(paths, path_string(output), options, progress)
      end
    end

    # Opens a store. With a block, yields it, closes it when the block ends
    # and returns the block's value.
    #
    # @param verify [Boolean] check every checksum first (O(size); off by
    #   default, since opening otherwise takes microseconds at any size)
    # @param symbolize_names [Boolean] String keys of Hashes in values come
    #   back as Symbols (the store's own keys are unaffected)
    # @param freeze [Boolean] values come back deep-frozen, their Strings
    #   deduplicated as +-str+ does (the default with +memo:+)
    # @param memo [Integer, nil] keep up to this many decoded values and
    #   return the same frozen object for the same key again, as a Hash
    #   does: +[]+, +get+ and +fetch+ with the open-time options answer from
    #   it without reading the store. At the limit it empties and fills
    #   again; a reload, +reopen+ or +close+ empties it. Keys that are
    #   exactly a String or a Symbol. Not with +freeze: false+ or
    #   +serializer:+. docs/RUBY.md, "Hot keys".
    # @param max_value_size [Integer, nil] the largest value read, in bytes,
    #   as stored or as a compressed value decodes (default
    #   DEFAULT_MAX_VALUE_SIZE, 256 MiB): a larger one raises LimitError
    #   naming its key, before it is read or decoded past the limit, from a
    #   lookup, +each+ or +verify+. It bounds what a damaged or hostile
    #   store (or a server lying about one) can make a lookup allocate;
    #   raise it to read a store whose values really are larger.
    # @param raw [Boolean] values come back as the stored bytes (a binary
    #   String), undecoded
    # @param serializer [#dump and #load, Array(#call, #call), nil] loads
    #   values that Hashfile.build stored through a serializer
    # @param reload [Numeric, nil] on access, at most every this many
    #   seconds, look whether a new store was published at +path+ (a build
    #   renames one over it) and if so read it from the next lookup on; the
    #   lookups and +each+ under way finish on the old one. A new file that
    #   cannot be opened leaves the old one in use (Reader#reload_error).
    #   nil (the default): the reader keeps the file it opened; see also
    #   Reader#stale? and Reader#reopen. Local stores and datasets, and a
    #   remote dataset (the URL of its hashfile-dataset.json), whose
    #   manifest each check fetches (one request): a new generation
    #   replaces all its shards at once.
    #
    # +path+ may also be a URL: +http://+ or +https://+ (read with HTTP
    # range requests) or +s3://bucket/key+ (credentials, region and endpoint
    # from the standard AWS environment variables). Opening takes two
    # requests (the first block, then the seed index); a lookup at most
    # three, one with the index cached, none for what the block cache
    # holds. These options apply to URLs only
    # (defaults in REMOTE_DEFAULTS):
    # @param headers [Hash{String => String}] sent with every HTTP request
    #   (Authorization, say)
    # @param timeout [Numeric] seconds a request may take (not retried)
    # @param connect_timeout [Numeric] seconds a connection may take
    # @param retries [Integer] retries of a broken connection or 5xx, with
    #   exponential backoff
    # @param concurrency [Integer] requests in flight for one batch
    #   (Reader#values_at)
    # @param cache_size [Integer] bytes of blocks kept in memory
    # @param block_size [Integer] bytes per block (the unit of requests)
    # @param prefetch_index [Boolean] read the whole index at open, so that
    #   every lookup is one request
    # @param http2 [Boolean] speak HTTP/2 to an http:// server without
    #   negotiating (over https it is negotiated)
    # @param s3_endpoint [String] an S3-compatible server (MinIO, say)
    # @param s3_region [String]
    # @param allow_origins [Array<String>] places (+https://host[:port][/path]+,
    #   +s3://bucket[/prefix]+) a dataset's manifest may list shards at
    #   besides its own directory; shards there are read without +headers+.
    #   The one of these a local dataset takes too (docs/REMOTE.md, "Where
    #   a dataset's shards may be").
    # @param on_change [:raise, :reopen] what a remote reader does when the
    #   object was replaced since it was opened: raise StaleError (the
    #   default), or reopen it and look the key up again, once, in the new
    #   object (+[]+, +get+, +fetch+, +dig+, +key?+, +values_at+; +each+
    #   still raises, since it cannot go on in another object). A remote
    #   dataset reopens its manifest, too, when a shard it opens is gone or
    #   not the one listed (later builds removed its generation).
    # @raise [Errno::ENOENT] if the file does not exist
    # @raise [FormatError] if it is not a valid store
    # @raise [RemoteError] if a remote store cannot be read (subclasses by
    #   cause: RemoteNotFoundError, RemoteAccessError, ...)
    def open(path, **options)
      options = keywords(options)
      db = Reader._open(path_string(path), options, serializer_pair(options[:serializer])&.last)
      return db unless block_given?

      begin
        yield db
      ensure
        db.close
      end
    end

    # The publishes a dataset keeps, newest (the current one) first: each a
    # Hash of +:generation+, +:published_at+ (UTC text), +:entries+,
    # +:bytes+, +:shards+, +:tool+ (what published it), +:note+,
    # +:rollback+ (whether it made an earlier generation current again),
    # +:forced+ (the gate refusal it overrode, or nil), +:current+, +:keep+, +:retain_seconds+ and +:sequence+.
    # +dataset+ is its directory, its manifest's path or URL, or an s3://
    # prefix; +options+ are the remote ones of +open+.
    # @raise [FormatError] if there is no dataset there
    def history(dataset, **options)
      _history(path_string(dataset), keywords(options))
    end

    # Makes +generation+ of a dataset (one its history keeps; without it,
    # the newest kept one before the current one) current again: publishes
    # its manifest anew, rebuilding nothing, once its shards are checked.
    # Readers opened with +reload:+ move to it at their next check; those
    # opened with +generation:+ stay where they are. +note:+ is kept in the
    # history; the other options are the remote ones of +open+. Returns a
    # Hash of +:generation+, +:entries+, +:shards+ and +:sequence+.
    # @raise [FormatError] if the generation is not kept, is the current
    #   one, or a shard of it is missing or not the one its manifest lists
    def rollback(dataset, generation = nil, **options)
      _rollback(path_string(dataset), generation&.to_s, keywords(options))
    end

    # Changes a few keys of a dataset without rebuilding it: publishes a
    # delta generation that reuses every shard file and adds, for each
    # shard the changes touch, a small overlay store read before the shard
    # (a deleted key is a tombstone there). Readers opened with +reload:+
    # move to it at their next check; +history+, +rollback+ and +diff+
    # see it as any other generation.
    #
    #   Hashfile.patch("prices/", { "sku-1" => 12.5, "sku-9" => 3.0 }, delete: ["sku-7"])
    #   Hashfile.patch("prices/", "changes.jsonl")
    #
    # +changes+ is a Hash of keys to put (values as Hashfile.build takes
    # them), or the path of a JSON Lines file whose lines are
    # <tt>{"key": K, "value": V}</tt> or <tt>{"key": K, "delete": true}</tt>.
    # +delete:+ lists keys to delete, with a Hash. A key given twice
    # follows +on_duplicate:+; a delete of a key the dataset does not hold
    # is an error unless +on_missing: :ignore+. A shard that would pass
    # +compact_overlays:+ overlays (default 8), or whose overlays would hold
    # more than +compact_fraction:+ of its base's entries (0.25), is
    # compacted instead. +keep:+, +retain:+, +note:+ and the gates
    # (+max_entry_change:+, ...) are Hashfile.build's for a dataset.
    # Returns a Hash of +:generation+, +:entries+, +:shards+, +:sequence+,
    # +:added+, +:changed+, +:unchanged+, +:deleted+, +:ignored+, +:overlays_written+,
    # +:shards_compacted+, +:bytes_written+ and +:published+ (false: nothing
    # changed, and the current generation stays).
    def patch(dataset, changes = nil, delete: nil, **options)
      options = keywords(options)
      case changes
      when Hash, nil
        raise ArgumentError, "patch needs changes: a Hash of keys to put, delete: keys, or a changes file" if changes.nil? && delete.nil?

        _patch(path_string(dataset), changes, delete.nil? ? nil : Array(delete), nil, options)
      else
        raise ArgumentError, "delete: is for changes given as a Hash; a changes file deletes a key with a line {\"key\": K, \"delete\": true}" unless delete.nil?

        _patch(path_string(dataset), nil, nil, path_string(changes), options)
      end
    end

    # Folds every overlay of a dataset into new shard files, as patches
    # do past +compact_overlays:+, and publishes a generation that reads
    # the same. Shards are rebuilt one at a time, each streaming; readers
    # read the generation they have until the manifest goes in. Takes
    # +keep:+, +retain:+ and +note:+. Returns what Hashfile.patch returns.
    def compact(dataset, **options)
      _compact(path_string(dataset), keywords(options))
    end

    # What changed from +a+ to +b+ (two stores, two datasets, or two
    # generations of one: +generation_a:+, +generation_b:+; one dataset
    # alone, its generation published before the current one against the
    # current one, or before +generation_b:+ against it), reading each
    # side in stored order and looking its keys up in the other, in
    # parallel (+threads:+), in bounded memory. Yields each change as one
    # line of JSON, keys removed or changed in +a+'s order, then keys added
    # in +b+'s:
    #
    #   {"op":"removed","key":"k1","value":1}
    #   {"op":"changed","key":"k2","before":"x","after":{"n":2}}
    #   {"op":"added","key":"k3","value":[3]}
    #
    # (+values: false+: the key alone). Returns the summary: a Hash of
    # +:entries_a+, +:entries_b+, +:added+, +:removed+, +:changed+,
    # +:unchanged+, +:type_changed+, +:type_changes+ (+{from:, to:,
    # keys:}+ each), +:bytes_added+, +:bytes_removed+,
    # +:changed_bytes_before+, +:changed_bytes_after+ and +:shards+ (the
    # changes per shard of +b+). The remote options of +open+ reach both.
    def diff(a, b = a, **options, &block)
      _diff(path_string(a), path_string(b), keywords(options), block)
    end

    # Whether +location+ names a remote store (http://, https://, s3://)
    # rather than a file.
    def remote?(location)
      Reader._remote_location?(location.to_s)
    end

    # [dump, load] callables from a serializer: argument, or nil.
    # @api private
    def serializer_pair(serializer)
      case serializer
      when nil then nil
      when Array
        unless serializer.size == 2 && serializer.all? { |c| c.respond_to?(:call) }
          raise ArgumentError, "serializer: expected [dump, load] callables, got #{serializer.inspect[0, 100]}"
        end

        serializer
      else
        unless serializer.respond_to?(:dump) && serializer.respond_to?(:load)
          raise ArgumentError, "serializer: expected an object with dump and load (like Marshal) or a [dump, load] pair, got #{serializer.inspect[0, 100]}"
        end

        [serializer.method(:dump), serializer.method(:load)]
      end
    end

    private

    # Whether +data+ names input files (a path, an IO, or an Array of only
    # those) rather than entries: pairs are Arrays, never Strings.
    # The options with String names as Symbols, as Ruby's own keywords
    # are: the wrappers read serializer: and progress: by Symbol. A name
    # given both ways stays twice, and the runtime refuses it.
    def keywords(options)
      return options if options.each_key.all?(Symbol)

      named = options.transform_keys { |name| name.is_a?(String) ? name.to_sym : name }
      named.size == options.size ? named : options
    end

    def input_files?(data)
      file = ->(x) { x.is_a?(String) || x.respond_to?(:to_path) || x.respond_to?(:read) }
      file.call(data) || (data.is_a?(Array) && !data.empty? && data.all?(&file))
    end

    # Paths for the inputs: IOs with a path give their path, standard input
    # gives "-", and any other IO (a StringIO, a socket) is copied to a
    # temporary file first.
    def with_input_paths(inputs, format)
      temps = []
      paths = inputs.map do |input|
        if input.respond_to?(:to_path) || input.is_a?(String)
          path_string(input)
        elsif input.respond_to?(:fileno) && input.fileno == 0
          "-"
        elsif input.respond_to?(:read)
          # A copy in a temporary file: its name says nothing, so the format
          # comes from format: or from the IO's own path.
          unless format || (input.respond_to?(:path) && FORMAT_EXTENSIONS.key?(File.extname(input.path.to_s).delete(".").downcase))
            raise ArgumentError, "an IO input (#{input.class}) needs format: (one of #{FORMATS.join(", ")})"
          end

          require "tempfile"
          temp = Tempfile.new(["hashfile-input", File.extname(input.respond_to?(:path) ? input.path.to_s : "")])
          IO.copy_stream(input, temp)
          temp.flush
          temps << temp
          temp.path
        else
          raise TypeError, "expected a path or an IO, not #{input.class}"
        end
      end
      yield paths
    ensure
      temps&.each(&:close!)
    end

    def path_string(path)
      path = path.to_path if path.respond_to?(:to_path)
      raise TypeError, "expected a path (String or Pathname), not #{path.inspect[0, 40]}" unless path.is_a?(String)

      path
    end
  end
end

# Rails wiring, when Rails is there (config.hashfile; lib/hashfile/railtie.rb).
require_relative "hashfile/railtie" if defined?(Rails::Railtie)
