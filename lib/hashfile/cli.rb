# frozen_string_literal: true

require "json"
require "optparse"
require_relative "../hashfile"

module Hashfile
  # The `hashfile` command. Tests drive it with their own IO objects:
  #
  #   Hashfile::CLI.new(stdout: out, stderr: err).run(["get", "x.hf", "key"]) # => 0
  class CLI
    # A mistake in how the command was called: exit status 2.
    class UsageError < StandardError; end

    COMMANDS = {
      "build" => "build INPUT.json -o OUT   build a store from a JSON object of strings",
      "get" => "get FILE KEY...           print values; exit 1 if any key is absent",
      "info" => "info FILE [--json]        entries, sizes, bits per key, parameters",
      "verify" => "verify FILE               check every checksum"
    }.freeze

    def initialize(stdout: $stdout, stderr: $stderr)
      @out = stdout
      @err = stderr
      @debug = false
    end

    # Runs one command. Returns the exit status.
    def run(argv)
      argv = argv.dup
      @debug = !argv.delete("--debug").nil?
      command = argv.shift
      case command
      when nil, "-h", "--help", "help" then @out.puts(usage) || 0
      when "-v", "--version" then @out.puts("hashfile #{VERSION}") || 0
      when *COMMANDS.keys then send(:"cmd_#{command}", argv)
      else raise UsageError, "unknown command #{command.inspect}"
      end
    rescue UsageError, OptionParser::ParseError => e
      @err.puts "hashfile: #{e.message}"
      @err.puts "Run 'hashfile --help' for usage."
      2
    rescue Hashfile::Error, SystemCallError, JSON::ParserError, ArgumentError, TypeError => e
      raise if @debug

      @err.puts "hashfile: #{e.message.lines.first&.chomp}"
      1
    end

    private

    def usage
      lines = COMMANDS.values.map { |line| "  hashfile #{line}" }
      <<~TEXT
        Usage:
        #{lines.join("\n")}
          hashfile COMMAND --help    help for one command

        Options for every command: --debug (show backtraces), --version, --help
      TEXT
    end

    def parser(command)
      OptionParser.new do |o|
        o.banner = "Usage: hashfile #{COMMANDS.fetch(command)}"
        o.on("-h", "--help", "show this help") do
          @out.puts o
          throw :done, 0
        end
        yield o if block_given?
      end
    end

    def cmd_build(argv)
      catch(:done) do
        output = nil
        options = {}
        parser("build") do |o|
          o.on("-o", "--output OUT", "the store to write") { |v| output = v }
          o.on("--keys-per-bucket F", Float, "CHD keys per bucket (default 4.0)") { |v| options[:keys_per_bucket] = v }
          o.on("--load-factor F", Float, "table fill before remapping (default 0.99)") { |v| options[:load_factor] = v }
          o.on("--hash-seed N", Integer, "first hash seed tried (default 0)") { |v| options[:hash_seed] = v }
        end.parse!(argv)
        raise UsageError, "build needs exactly one INPUT.json" unless argv.size == 1
        raise UsageError, "build needs -o OUT" unless output

        input = argv[0]
        data = JSON.parse(File.read(input, encoding: "UTF-8"))
        raise Hashfile::FormatError, "#{input}: expected a JSON object at the top level, got #{json_type(data)}" unless data.is_a?(Hash)

        data.each do |key, value|
          next if value.is_a?(String)

          raise Hashfile::FormatError, "#{input}: value for key #{key.inspect} is #{json_type(value)}; only strings are supported for now"
        end
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        bytes = Hashfile.build(output, data, **options)
        ms = (Process.clock_gettime(Process::CLOCK_MONOTONIC) - started) * 1000
        @err.puts format("wrote %s: %d entries, %d bytes in %.1f ms", output, data.size, bytes, ms)
        0
      end
    end

    def cmd_get(argv)
      catch(:done) do
        parser("get").parse!(argv)
        raise UsageError, "get needs FILE and at least one KEY" if argv.size < 2

        missing = 0
        Hashfile.open(argv.shift) do |db|
          argv.each do |key|
            value = db[key]
            if value.nil?
              @err.puts "hashfile: key not found: #{key}"
              missing += 1
            else
              @out.puts value
            end
          end
        end
        missing.zero? ? 0 : 1
      end
    end

    def cmd_info(argv)
      catch(:done) do
        json = false
        parser("info") { |o| o.on("--json", "print one JSON object") { json = true } }.parse!(argv)
        raise UsageError, "info needs exactly one FILE" unless argv.size == 1

        info = Hashfile.open(argv[0], &:info)
        if json
          @out.puts JSON.generate(info)
        else
          print_info(argv[0], info)
        end
        0
      end
    end

    def cmd_verify(argv)
      catch(:done) do
        parser("verify").parse!(argv)
        raise UsageError, "verify needs exactly one FILE" unless argv.size == 1

        entries = Hashfile.open(argv[0]) { |db| db.verify && db.size }
        @out.puts "#{argv[0]}: OK, #{entries} entries"
        0
      end
    end

    def print_info(path, info)
      @out.puts "#{path}: hashfile format #{info[:format_version]}"
      @out.puts "  entries            #{info[:entries]}"
      @out.puts "  file bytes         #{info[:file_bytes]}"
      @out.puts format("  mphf bits/key      %.3f (seeds and their index alone: %.3f)", info[:mphf_bits_per_key], info[:seed_bits_per_key])
      info[:sections].each { |name, bytes| @out.puts format("  section %-10s %d bytes", name, bytes) }
      info[:parameters].each { |name, value| @out.puts format("  %-18s %s", name, value) }
    end

    def json_type(value)
      case value
      when Hash then "an object"
      when Array then "an array"
      when String then "a string"
      when Integer, Float then "a number"
      when true, false then "a boolean"
      when nil then "null"
      else value.class.name
      end
    end
  end
end
