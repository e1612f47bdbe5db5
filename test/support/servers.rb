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

    # nginx serving #root at /files/, plus /missing/ (404), /forbidden/
    # (403), /broken/ (500), /moved/ (302) and /whole/ (Range ignored).
    class Nginx
      attr_reader :port, :root, :dir

      def initialize
        @dir = Dir.mktmpdir("hashfile-nginx")
        @root = File.join(@dir, "root")
        FileUtils.mkdir_p(File.join(@root, "files"))
        @port = TestServers.free_port
        d = @dir
        File.write(File.join(d, "nginx.conf"), <<~CONF)
          daemon off;
          master_process off;
          worker_processes 1;
          pid #{d}/nginx.pid;
          error_log #{d}/error.log warn;
          events { worker_connections 256; }
          http {
              access_log off;
              client_body_temp_path #{d}/body;
              proxy_temp_path #{d}/proxy;
              fastcgi_temp_path #{d}/fastcgi;
              uwsgi_temp_path #{d}/uwsgi;
              scgi_temp_path #{d}/scgi;
              log_format counted '$connection $connection_requests $status "$request_uri" $bytes_sent';
              keepalive_requests 1000000;
              keepalive_timeout 60s;
              default_type application/octet-stream;
              server {
                  listen 127.0.0.1:#{@port};
                  access_log #{d}/access.log counted;
                  root #{@root};
                  location /files/ { }
                  location /whole/ { max_ranges 0; alias #{@root}/files/; }
                  location /missing/ { return 404; }
                  location /forbidden/ { return 403; }
                  location /broken/ { return 500; }
                  location /moved/ { return 302 /files/elsewhere.hf; }
              }
          }
        CONF
        @pid = spawn("nginx", "-p", d, "-c", File.join(d, "nginx.conf"), out: File::NULL, err: File::NULL)
        TestServers.wait_for(@port, "nginx", @pid)
      end

      def url(path)
        "http://127.0.0.1:#{@port}#{path}"
      end

      # Publishes +bytes+ (or the file at +from+) as /files/NAME, by rename.
      def publish(name, from)
        temp = File.join(@root, ".#{name}.tmp")
        FileUtils.cp(from, temp)
        File.rename(temp, File.join(@root, "files", name))
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
          c, n, status, uri, bytes = line.split(" ")
          [c.to_i, n.to_i, status.to_i, uri.delete('"'), bytes.to_i]
        end
      end

      def stop
        Process.kill("TERM", @pid)
        Process.wait(@pid)
        FileUtils.rm_rf(@dir)
      rescue Errno::ESRCH, Errno::ECHILD
        nil
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
