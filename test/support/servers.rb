# frozen_string_literal: true

require "socket"
require "tmpdir"
require "fileutils"
require "timeout"

module Hashfile
  # Real servers for the remote-store tests and bench/remote.rb, each on a
  # free loopback port, stopped with #stop: nginx serving a temporary
  # directory (its access log records each request's connection serial
  # number), and a delaying TCP relay in front of a server.
  module TestServers
    def self.free_port
      server = TCPServer.new("127.0.0.1", 0)
      server.addr[1]
    ensure
      server&.close
    end

    def self.wait_for(port, what, pid)
      Timeout.timeout(30) do
        loop do
          TCPSocket.new("127.0.0.1", port).close
          return
        rescue Errno::ECONNREFUSED
          raise "#{what} exited" if Process.waitpid(pid, Process::WNOHANG)

          sleep 0.02
        end
      end
    end

    # A server process (@pid) with a temporary directory (@dir).
    module ServerProcess
      # Asks the server to stop (TERM) until it has, and kills it if it has
      # not within +grace+ seconds. One TERM is not enough: nginx without a
      # master process (as the tests run it) sets a flag in its handler and
      # checks it before it waits for events, so a TERM that lands between
      # the check and the wait, as one sent just after a client closes its
      # connection can, is acted on only at the next event, which may
      # never come (CI once ran out of time waiting; here, 2 stops of 150
      # in a loop needed a second TERM).
      def stop(grace: 10)
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + grace
        loop do
          Process.kill(Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline ? "KILL" : "TERM", @pid)
          # 0.2 s for it to exit before the next signal.
          20.times do
            return if Process.waitpid(@pid, Process::WNOHANG)

            sleep 0.01
          end
        end
      rescue Errno::ESRCH, Errno::ECHILD
        nil
      ensure
        FileUtils.rm_rf(@dir)
      end
    end

    # nginx serving #root at /files/, plus /missing/ (404), /forbidden/
    # (403), /broken/ (500), /moved/ (302) and /whole/ (Range ignored).
    class Nginx
      include ServerProcess

      attr_reader :port, :root, :dir

      def initialize
        @dir = Dir.mktmpdir("hashfile-nginx")
        @root = File.join(@dir, "root")
        FileUtils.mkdir_p(File.join(@root, "files"))
        @port = TestServers.free_port
        d = @dir
        # One template for these tests and the Rust ones.
        config = File.read(File.join(__dir__, "nginx.conf"))
                     .gsub("@DIR@", d).gsub("@ROOT@", @root)
                     .gsub("@H2_PORT@", TestServers.free_port.to_s).gsub("@PORT@", @port.to_s)
        File.write(File.join(d, "nginx.conf"), config)
        @pid = spawn("nginx", "-p", d, "-c", File.join(d, "nginx.conf"), out: File::NULL, err: File::NULL)
        TestServers.wait_for(@port, "nginx", @pid)
      end

      def url(path)
        "http://127.0.0.1:#{@port}#{path}"
      end

      # Where /files/NAME is served from.
      def file(name)
        File.join(@root, "files", name)
      end

      # Publishes +bytes+ (or the file at +from+) as /files/NAME, by rename.
      def publish(name, from)
        temp = File.join(@root, ".#{name}.tmp")
        FileUtils.cp(from, temp)
        File.rename(temp, File.join(@root, "files", name))
      end

      # [uri, Authorization header or nil] per request logged so far.
      def authorizations
        log
        File.readlines(File.join(@dir, "access.log")).map do |line|
          quoted = line.split('"')
          [quoted[1], quoted[5] == "-" ? nil : quoted[5]]
        end
      end

      # [connection, request number, status, uri, bytes sent] per request.
      # nginx writes a line once the request is finalized, which may be just
      # after the client has its answer: read until the log stops growing.
      def log
        path = File.join(@dir, "access.log")
        text = File.exist?(path) ? File.read(path) : ""
        loop do
          sleep 0.03
          again = File.exist?(path) ? File.read(path) : ""
          break if again.size == text.size

          text = again
        end
        text.lines.map do |line|
          c, n, status, uri, _range, bytes = line.match(/\A(\d+) (\d+) (\d+) "([^"]*)" "([^"]*)" (\d+)/).captures
          [c.to_i, n.to_i, status.to_i, uri, bytes.to_i]
        end
      end
    end

    # MinIO on a free port with a temporary data directory (the binary
    # bin/setup builds into ~/.cache/hashfile/bin), and signed PUTs to make
    # buckets and objects: nothing else here speaks S3.
    class Minio
      include ServerProcess

      # Shared with the Rust tests.
      ENV_FILE = File.read(File.join(__dir__, "minio.env")).lines.reject { |l| l.start_with?("#") || l.strip.empty? }
                     .to_h { |l| l.chomp.split("=", 2) }.freeze
      USER = ENV_FILE.fetch("MINIO_ROOT_USER")
      PASSWORD = ENV_FILE.fetch("MINIO_ROOT_PASSWORD")
      REGION = ENV_FILE.fetch("MINIO_REGION")

      attr_reader :endpoint

      def self.binary
        ENV.fetch("HASHFILE_MINIO") { File.join(Dir.home, ".cache/hashfile/bin/minio") }
      end

      def initialize
        @dir = Dir.mktmpdir("hashfile-minio")
        port = TestServers.free_port
        env = ENV_FILE
        @pid = spawn(env, Minio.binary, "server", File.join(@dir, "data"), "--address", "127.0.0.1:#{port}",
                     "--console-address", "127.0.0.1:#{TestServers.free_port}", "--quiet", out: File::NULL, err: File::NULL)
        TestServers.wait_for(port, "minio", @pid)
        @endpoint = "http://127.0.0.1:#{port}"
        require "net/http"
        Timeout.timeout(60) do
          sleep 0.1 until Net::HTTP.get_response(URI("#{@endpoint}/minio/health/live")).code == "200"
        end
      end

      # A signed PUT of +body+ at +path+ ("/bucket" makes a bucket), retried
      # while MinIO warms up.
      def put(path, body = "")
        require "openssl"
        response = nil
        50.times do
          response = Net::HTTP.start("127.0.0.1", URI(@endpoint).port) { |http| http.request(signed_put(path, body)) }
          return response if response.is_a?(Net::HTTPSuccess)

          sleep 0.1
        end
        raise "PUT #{path}: #{response.code} #{response.body}"
      end

      private

      # AWS Signature Version 4 for a PUT, as S3 documents it.
      def signed_put(path, body)
        now = Time.now.utc
        date = now.strftime("%Y%m%d")
        stamp = now.strftime("%Y%m%dT%H%M%SZ")
        host = URI(@endpoint).host + ":#{URI(@endpoint).port}"
        hash = OpenSSL::Digest::SHA256.hexdigest(body)
        signed = "host;x-amz-content-sha256;x-amz-date"
        canonical = ["PUT", path, "", "host:#{host}", "x-amz-content-sha256:#{hash}", "x-amz-date:#{stamp}", "", signed, hash].join("\n")
        scope = "#{date}/#{REGION}/s3/aws4_request"
        to_sign = ["AWS4-HMAC-SHA256", stamp, scope, OpenSSL::Digest::SHA256.hexdigest(canonical)].join("\n")
        key = ["AWS4#{PASSWORD}", date, REGION, "s3", "aws4_request"].reduce { |k, part| OpenSSL::HMAC.digest("SHA256", k, part) }
        signature = OpenSSL::HMAC.hexdigest("SHA256", key, to_sign)
        request = Net::HTTP::Put.new(path)
        request["x-amz-date"] = stamp
        request["x-amz-content-sha256"] = hash
        request["Authorization"] = "AWS4-HMAC-SHA256 Credential=#{USER}/#{scope}, SignedHeaders=#{signed}, Signature=#{signature}"
        request.body = body
        request
      end
    end

    # A TCP relay on a free port that waits +delay+ seconds before passing
    # each chunk of a request on to 127.0.0.1:+upstream+, in Ruby threads:
    # it answers only while the client's Ruby thread has released the GVL.
    class SlowProxy
      attr_reader :port

      def initialize(upstream, delay)
        @server = TCPServer.new("127.0.0.1", 0)
        @port = @server.addr[1]
        @threads = []
        @acceptor = Thread.new do
          loop do
            client = @server.accept
            upstream_socket = TCPSocket.new("127.0.0.1", upstream)
            # Forwarded as it comes: without this, Nagle's algorithm holds a
            # second small write (a multipart answer's next part) until the
            # other side's delayed ACK, up to 40 ms, which no proxy worth
            # measuring through adds (nginx sets tcp_nodelay itself).
            [client, upstream_socket].each { |s| s.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1) }
            @threads << Thread.new { pipe(client, upstream_socket, delay) }
            @threads << Thread.new { pipe(upstream_socket, client, 0) }
          end
        rescue IOError, Errno::EBADF
          nil
        end
      end

      def url(path)
        "http://127.0.0.1:#{@port}#{path}"
      end

      def stop
        @server.close
        @acceptor.kill
        @threads.each(&:kill)
      end

      private

      def pipe(from, to, delay)
        loop do
          data = from.readpartial(64 << 10)
          sleep delay if delay.positive?
          to.write(data)
        end
      rescue IOError, SystemCallError
        to.close rescue nil # rubocop:disable Style/RescueModifier
      end
    end
  end
end
