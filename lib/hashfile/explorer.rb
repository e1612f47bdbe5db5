# frozen_string_literal: true

require "json"
require "socket"
require "securerandom"
require "uri"

module Hashfile
  # The explorer page of `hashfile serve`: a local, read-only web page of one
  # store or dataset (docs/CLI.md, "The explorer page"). A small HTTP/1.1
  # server of its own on Ruby's sockets (no dependency), one thread per
  # connection, answering GET alone: the page and its script (plain files
  # in explorer/), and a JSON API the script calls.
  #
  # Who may ask: bound to a loopback address (127.0.0.1, the default, or
  # ::1), any process of this machine, and only with a Host header naming
  # that address or localhost (so a web page elsewhere cannot reach it
  # through a DNS name it rebinds to 127.0.0.1). Bound to any other address,
  # only with the token (a query parameter or an Authorization: Bearer
  # header), which is made if not given and printed in the URL.
  class Explorer
    ASSETS = File.join(__dir__, "explorer")
    FILES = { "/" => ["index.html", "text/html"], "/app.js" => ["app.js", "text/javascript"],
              "/style.css" => ["style.css", "text/css"] }.freeze
    LOOPBACK = %w[127.0.0.1 ::1 localhost].freeze
    # Records a key scan reads per request (the page asks again, showing
    # its progress), and keys it answers at most.
    SCAN_RECORDS = 50_000
    MAX_KEYS = 500
    # Changes a diff answers (the summary counts them all).
    MAX_DIFF_LINES = 500
    MAX_REQUEST_LINE = 8192
    MAX_HEADERS = 100
    MAX_CONNECTIONS = 32
    READ_TIMEOUT = 10

    attr_reader :port, :token

    # +location+: what to show (a store, a dataset, a URL), opened with
    # +open_options+; +bind+: the address to listen on; +token+: required
    # of every request (made if +bind+ is not loopback and none is given).
    def initialize(location, bind: "127.0.0.1", port: 0, token: nil, open_options: {})
      @location = location
      @open_options = open_options
      @db = Hashfile.open(location, **open_options)
      @dataset = @db.info.key?(:shards)
      @bind = bind
      @token = token || (LOOPBACK.include?(bind) ? nil : SecureRandom.hex(16))
      @server = TCPServer.new(bind, port)
      @port = @server.addr[1]
      @connections = Queue.new
      MAX_CONNECTIONS.times { @connections << true }
    end

    # The page's URL, with the token if there is one.
    def url
      host = @bind.include?(":") ? "[#{@bind}]" : @bind
      "http://#{host}:#{@port}/#{"?token=#{@token}" if @token}"
    end

    # Serves until #stop (or the process ends).
    def run
      loop do
        client = @server.accept
        unless @connections.pop(true)
          client.close
          next
        end
        Thread.new(client) do |socket|
          serve(socket)
        ensure
          socket.close unless socket.closed?
          @connections << true
        end
      rescue ThreadError
        # No room: MAX_CONNECTIONS are being answered.
        begin
          client.write("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        rescue SystemCallError, IOError
          nil
        end
        client.close
      rescue IOError, Errno::EBADF
        break # stopped
      end
    end

    def stop
      @server.close
      @db.close
    end

    private

    def serve(socket)
      request = read_request(socket)
      return unless request

      method, target, headers = request
      status, type, body = answer(method, target, headers)
      socket.write("HTTP/1.1 #{status}\r\nContent-Type: #{type}; charset=utf-8\r\n" \
                   "Content-Length: #{body.bytesize}\r\nConnection: close\r\nCache-Control: no-store\r\n" \
                   "X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n" \
                   "Content-Security-Policy: default-src 'self'; img-src 'self' data:\r\n\r\n")
      socket.write(body) unless method == "HEAD"
    rescue Errno::EPIPE, Errno::ECONNRESET, IOError
      nil
    end

    # [method, target, headers] of the request on +socket+, or nil after
    # answering one that is not read (too long, too slow, malformed).
    def read_request(socket)
      @deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + READ_TIMEOUT
      line = read_line(socket)
      return reply(socket, "400 Bad Request") unless line

      method, target, version = line.split(" ", 3)
      return reply(socket, "400 Bad Request") unless version&.start_with?("HTTP/1.") && target&.start_with?("/")

      headers = {}
      MAX_HEADERS.times do
        header = read_line(socket)
        return reply(socket, "400 Bad Request") unless header
        return [method, target, headers] if header.empty?

        name, value = header.split(":", 2)
        headers[name.strip.downcase] = value.to_s.strip
      end
      reply(socket, "431 Request Header Fields Too Large")
    end

    def read_line(socket)
      line = +""
      until line.end_with?("\n")
        # The whole request within READ_TIMEOUT, not each byte: a client
        # that sends a byte now and then holds no connection for long.
        left = @deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
        return nil unless left.positive? && socket.wait_readable(left)

        chunk = socket.read_nonblock(1, exception: false)
        return nil if chunk.nil? # the client went away
        next if chunk == :wait_readable

        line << chunk
        return nil if line.bytesize > MAX_REQUEST_LINE
      end
      line.chomp
    end

    def reply(socket, status)
      socket.write("HTTP/1.1 #{status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
      nil
    end

    def answer(method, target, headers)
      return ["405 Method Not Allowed", "text/plain", "read-only: GET alone\n"] unless %w[GET HEAD].include?(method)

      path, query = target.split("?", 2)
      params = URI.decode_www_form(query.to_s).to_h
      return ["421 Misdirected Request", "text/plain", "this server answers for #{@bind} alone\n"] unless host_allowed?(headers["host"])
      # The page's script and style hold no data: the page asks for them
      # by their names alone. Everything else needs the token.
      if (file = FILES[path]) && path != "/"
        return ["200 OK", file[1], File.read(File.join(ASSETS, file[0]))]
      end
      return ["401 Unauthorized", "text/plain", "this page needs its token: the URL hashfile serve printed\n"] unless token_given?(params, headers)
      return ["200 OK", file[1], File.read(File.join(ASSETS, file[0]))] if file

      json(route(path, params))
    rescue Hashfile::Error, ArgumentError, TypeError, RangeError, SystemCallError => e
      ["400 Bad Request", "application/json", JSON.generate(error: e.message, class: e.class.name)]
    rescue StandardError => e
      # A fault of the server's own: this request fails, the server goes on.
      ["500 Internal Server Error", "application/json", JSON.generate(error: e.message, class: e.class.name)]
    end

    def json(result)
      return ["404 Not Found", "application/json", JSON.generate(error: "no such page")] unless result

      ["200 OK", "application/json", JSON.generate(result)]
    end

    def route(path, params)
      case path
      when "/api/info" then info
      when "/api/get"
        key = params["key"] || params["key_hex"]&.then { |hex| [hex].pack("H*") }
        lookup(key || raise(ArgumentError, "key (or key_hex) is missing"))
      when "/api/keys" then keys(params)
      when "/api/history" then history
      when "/api/diff" then diff(params)
      end
    end

    # Loopback: the Host header names this address (or localhost) and this
    # port. Elsewhere the token decides.
    def host_allowed?(host)
      return true unless LOOPBACK.include?(@bind)
      return false unless host

      name = host.sub(/:\d+\z/, "").delete_prefix("[").delete_suffix("]")
      port = host[/:(\d+)\z/, 1]
      LOOPBACK.include?(name) && (port.nil? || port.to_i == @port)
    end

    def token_given?(params, headers)
      return true unless @token

      given = params["token"] || headers["authorization"].to_s[/\ABearer (\S+)\z/, 1]
      given && given.bytesize == @token.bytesize && secure_compare(given, @token)
    end

    def secure_compare(a, b)
      a.bytes.zip(b.bytes).reduce(0) { |acc, (x, y)| acc | (x ^ y) }.zero?
    end

    def info
      info = @db.info
      info = info.merge(value_types: @db._value_types) unless @db.remote?
      { location: @location, dataset: @dataset, info: info }
    end

    # The value of +key+ (+key_hex+: a key of any bytes), as JSON holds it.
    def lookup(key)
      return { key: json_key(key), found: false } unless @db.key?(key)

      { key: json_key(key), found: true, value: json_value(@db[key]) }
    end

    # Up to +limit+ keys from +cursor+ on (in stored order), those holding
    # +filter+ (in any case) if given, reading at most SCAN_RECORDS records: the page asks
    # again from the cursor answered until it is null, showing the count.
    # A cursor is where a chunk of records starts (shard, offset, entry)
    # and how many of it were answered already.
    def keys(params)
      limit = Integer(params.fetch("limit", "100")).clamp(1, MAX_KEYS)
      filter = params["filter"].to_s.downcase
      cursor = params["cursor"] ? params["cursor"].split(",").map { |n| Integer(n) } : [0, 0, 0, 0]
      raise ArgumentError, "a cursor is four integers" unless cursor.size == 4 && cursor.all? { |n| n >= 0 }

      found = []
      scanned = 0
      *at, skip = cursor
      while at && scanned < SCAN_RECORDS
        following, pairs = chunk(at, params.key?("cursor"))
        pairs.each_with_index do |(key, value), i|
          next if i < skip

          if found.size == limit
            return { keys: found, cursor: [*at, i].join(","), scanned: scanned, total: @db.size }
          end

          scanned += 1
          shown = key.is_a?(String) ? key : key.to_json
          found << { key: key, value: value } if filter.empty? || shown.downcase.include?(filter)
        end
        at = following
        skip = 0
      end
      { keys: found, cursor: at && [*at, 0].join(","), scanned: scanned, total: @db.size }
    end

    # The records of the chunk at +at+, as [next cursor, [[key, value]...]]
    # that JSON holds: the core's JSON of each, or, for a chunk with a key or
    # value JSON cannot hold, each decoded, a key that is not UTF-8 as
    # {"$bytes" => HEX} and a value JSON cannot hold as {"$not_json" => why}.
    def chunk(at, asked)
      following, *texts = @db._json_chunk(at)
      [following, texts.each_slice(2).map { |k, v| [JSON.parse(k), JSON.parse(v)] }]
    rescue Hashfile::FormatError => e
      raise ArgumentError, "the cursor #{at.join(",")} is not where a chunk of records starts: give one an answer gave" if asked

      raise e
    rescue Hashfile::Error
      following, *pairs = @db._each_chunk(at)
      [following, pairs.each_slice(2).map { |k, v| [json_key(k), json_value(v)] }]
    end

    def json_key(key)
      text = key.dup.force_encoding(Encoding::UTF_8)
      text.valid_encoding? ? text : { "$bytes" => key.unpack1("H*") }
    end

    def json_value(value)
      JSON.generate(value)
      value
    rescue JSON::GeneratorError, EncodingError => e
      { "$not_json" => e.message[0, 200] }
    end

    def history
      return { history: [], why: "a store has no history: a dataset (built with shards) keeps its publishes" } unless @dataset

      { history: Hashfile.history(@location, **remote_options) }
    end

    def diff(params)
      raise ArgumentError, "a store has no generations to compare" unless @dataset

      a = params.fetch("a") { raise ArgumentError, "a is missing" }
      b = params.fetch("b") { raise ArgumentError, "b is missing" }
      lines = []
      summary = Hashfile.diff(@location, @location, generation_a: a, generation_b: b, **remote_options) do |line|
        lines << JSON.parse(line) if lines.size < MAX_DIFF_LINES
      end
      { summary: summary, lines: lines, shown: lines.size }
    end

    def remote_options
      @open_options.slice(*Hashfile::REMOTE_OPTIONS)
    end
  end
end
