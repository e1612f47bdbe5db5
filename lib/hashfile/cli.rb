# frozen_string_literal: true

require "json"
require "optparse"
require "stringio"
require_relative "../hashfile"

module Hashfile
  # The `hashfile` command. Tests drive it with their own IO objects:
  #
  #   Hashfile::CLI.new(stdout: out, stderr: err).run(["get", "x.hf", "key"]) # => 0
  class CLI
    # A mistake in how the command was called: exit status 2.
    class UsageError < StandardError; end

    COMMANDS = {
      "build" => "build INPUT... -o OUT     build a store from JSON, JSON Lines, CSV, TSV, MessagePack or YAML",
      "build-i18n" => "build-i18n SOURCE... -o OUT  merge locale files (or directories of them) as I18n does",
      "get" => "get FILE KEY... [--json]  print values; exit 1 if any key is absent",
      "info" => "info FILE [--json]        entries, sizes, bits per key, parameters, format version",
      "verify" => "verify FILE               check every checksum; name the failing section",
      "dump" => "dump FILE [--format F]    print every entry as jsonl (default), json or tsv",
      "history" => "history DATASET [--json]  the publishes a dataset keeps, newest (current) first",
      "rollback" => "rollback DATASET [GEN]    make an earlier generation current again (no rebuild)",
      "diff" => "diff A [B]                 keys added, removed and changed, as JSON Lines; a summary",
      "patch" => "patch DATASET CHANGES      publish upserts and deletes as overlays (no rebuild)",
      "compact" => "compact DATASET           fold a dataset's overlays into new shard files",
      "serve" => "serve FILE [--port N]      a read-only explorer page on 127.0.0.1: look up, scan, info, history, diff"
    }.freeze

    DUMP_FORMATS = %w[jsonl json tsv].freeze

    # Text for a terminal. Data (keys, values, file names, URLs, server
    # answers) may hold control characters, which a terminal acts on: ESC [
    # 2J clears the screen, OSC 52 writes the clipboard, a CR lets a line
    # overwrite the one printed before it. Every line the CLI prints passes
    # through here; docs/CLI.md ("Control characters") lists what is
    # escaped where, in these forms:
    #
    #   \\  \t  \n  \r  \e              a backslash (data only), tab, newline, CR, ESC
    #   \x00 .. \x1f, \x7f           other C0 controls and DEL
    #   \u{80} .. \u{9f}            C1 controls (U+009B is CSI, as ESC [ is)
    #   \x80 .. \xff                each byte that is not part of valid UTF-8
    #
    # as in a Ruby string literal. The terminal is taken to be UTF-8.
    module Terminal
      CONTROL = /[\x00-\x1f\x7f\u0080-\u009f]/
      CONTROL_OR_BACKSLASH = /[\x00-\x1f\x7f\u0080-\u009f\\]/
      NAMED = { "\\" => "\\\\", "\t" => "\\t", "\n" => "\\n", "\r" => "\\r", "\e" => "\\e" }.freeze
      # JSON escapes C0 itself (ESC comes out as \u001b) but not DEL or C1.
      JSON_CONTROL = /[\u007f-\u009f]/

      module_function

      # +string+ (of any encoding, read as UTF-8 bytes) with every control
      # character and every byte that is not UTF-8 escaped. With
      # backslash: true a backslash is escaped too, so that the text reads
      # back to exactly the bytes: for data. Messages leave backslashes
      # alone: the keys and values they quote are already quoted with
      # their backslashes doubled (Ruby's inspect, the library's messages),
      # and doubling them again would turn "a\"b" into "a\\"b".
      def escape(string, backslash: true)
        text = string.encoding == Encoding::UTF_8 ? string : string.dup.force_encoding(Encoding::UTF_8)
        pattern = backslash ? CONTROL_OR_BACKSLASH : CONTROL
        if text.valid_encoding?
          return text unless text.match?(pattern)

          return text.gsub(pattern) { |c| escape_char(c) }
        end
        # Not UTF-8: character by character, where each byte that is not
        # part of a valid sequence comes alone.
        text.each_char.map do |c|
          if !c.valid_encoding?
            c.bytes.map { |b| format("\\x%02x", b) }.join
          elsif c.match?(pattern)
            escape_char(c)
          else
            c
          end
        end.join
      end

      def escape_char(char)
        NAMED[char] || (char.ord < 0x80 ? format("\\x%02x", char.ord) : format("\\u{%x}", char.ord))
      end

      # +value+ as JSON with DEL and the C1 controls written as \u007f and
      # \u0080 to \u009f too: the same JSON to any reader, and safe to show.
      def json(value)
        json_text(JSON.generate(value))
      end

      # JSON text (of one value or many) with DEL and C1 escaped. Most text
      # has none: the quickest test that tells comes first.
      def json_text(text)
        clean = text.ascii_only? ? !text.include?("\x7f") : text.count("\u007f-\u009f").zero?
        clean ? text : text.gsub(JSON_CONTROL) { |c| format("\\u%04x", c.ord) }
      end
    end

    # An OptionParser that takes a long flag by its full name only: its
    # own abbreviations read a typo as whichever flag it begins (--memo as
    # --memory). optparse 0.2's require_exact also refuses --no-header.
    class ExactParser < OptionParser
      def parse!(argv = default_argv, into: nil)
        argv.each do |arg|
          break if arg == "--"
          next unless arg.start_with?("--")

          name = arg.split("=", 2).first
          raise OptionParser::InvalidOption, arg unless long_names.include?(name)
        end
        super
      end

      # Every long flag's name, both forms of a --[no-]flag.
      def long_names
        @long_names ||= top.list.flat_map { |switch| switch.respond_to?(:long) ? switch.long : [] }
                           .flat_map { |l| l.include?("[no-]") ? [l.sub("[no-]", ""), l.sub("[no-]", "no-")] : [l] }
      end
    end

    def initialize(stdout: $stdout, stderr: $stderr)
      @out = stdout
      @err = stderr
      @debug = false
      @raw = false
    end

    # Runs one command. Returns the exit status.
    def run(argv)
      run_command(argv)
    rescue StandardError => e
      # An exception that leaves the CLI (with --debug, or a bug) is printed
      # by Ruby, message and all, and Ruby leaves C1 controls as they are.
      escaped = Terminal.escape(e.message, backslash: false)
      raise if escaped == e.message

      raise e.exception(escaped)
    end

    private

    # Prints lines on stderr: messages, errors, summaries. Control
    # characters are escaped always, whatever stderr is, since a terminal
    # usually shows it; a newline too, so that each line printed is one
    # line on the screen. Every line for stderr goes through here.
    def print_message(*lines)
      lines.each { |line| @err.puts Terminal.escape(line, backslash: false) }
      nil
    end

    # Prints lines of a report on stdout (info, verify, help): escaped
    # always, as messages are; a report is read, not parsed as data.
    def print_report(*lines)
      lines.each { |line| @out.puts Terminal.escape(line, backslash: false) }
      nil
    end

    # Whether data printed on stdout (values of get, the rows of dump's
    # tsv) is escaped: on a terminal, unless --raw. Into a pipe or a file
    # it goes as its bytes, for the program reading them.
    def escape_data?
      !@raw && @out.respond_to?(:tty?) && @out.tty?
    end

    def run_command(argv)
      # An argument that is not valid in the locale's encoding (a binary
      # key for `get`) is taken as bytes: OptionParser cannot match a
      # String with invalid bytes.
      argv = argv.map { |arg| arg.valid_encoding? ? arg : arg.b }
      @debug = !argv.delete("--debug").nil?
      command = argv.shift
      case command
      when nil, "-h", "--help", "help" then print_report(*usage.lines(chomp: true)) || 0
      when "-v", "--version" then print_report("hashfile #{VERSION}") || 0
      when *COMMANDS.keys then send(:"cmd_#{command.tr("-", "_")}", argv)
      else raise UsageError, "unknown command #{command.inspect}"
      end
    rescue SignalException => e
      # Ctrl-C, SIGTERM, SIGHUP: a build stops, removes its temporary file
      # and publishes nothing, unless the signal came after the rename that
      # published the store. Interrupt exits 130; other signals are raised
      # again, so that the process ends by the signal, as shells expect.
      what = e.is_a?(Interrupt) ? "interrupted" : "stopped by #{e.message}"
      print_message "", "hashfile: #{what}#{@serving ? "" : "; #{@output ? written_state(@output) : "nothing was written"}"}"
      raise unless e.is_a?(Interrupt)

      130
    rescue Errno::EPIPE
      # The reader went away (`hashfile dump x.hf | head`): what it read is
      # all it wanted, as for cat.
      0
    rescue UsageError, OptionParser::ParseError => e
      # OptionParser's own line breaks ("Did you mean?") are lines, not
      # characters to escape.
      print_message(*"hashfile: #{e.message}#{choices(e)}".lines(chomp: true))
      print_message "Run 'hashfile --help' for usage."
      2
    rescue ArgumentError => e
      raise if @debug

      e = ArgumentError.new(patch_hints_as_flags(e.message)) if %w[patch compact].include?(@command)
      # An option given on the command line that the library refused is a
      # usage error: exit 2, naming the options as they are spelled here
      # (--key-field, not key_field). A bad file is not (exit 1).
      refused = e.message.match(/\A(?:invalid option (\w+)|(threads) must)/)&.captures&.compact&.first
      option_error = !refused.nil? && @given&.include?(refused.to_sym)
      message = option_error ? as_flags(e.message) : e.message
      print_message "hashfile: #{message.lines.first&.chomp}"
      print_message "Run 'hashfile --help' for usage." if option_error
      option_error ? 2 : 1
    rescue Hashfile::Error, SystemCallError, JSON::ParserError, TypeError, IOError, NoMemoryError => e
      raise if @debug

      message = e.message.lines.first&.chomp.to_s
      message = parse_hints_as_flags(message) if e.is_a?(Hashfile::ParseError)
      message = message.sub("(force publishes it anyway)", "(--force publishes it anyway)") if e.is_a?(Hashfile::PublishRefusedError)
      message = patch_hints_as_flags(message) if %w[patch compact].include?(@command)
      print_message "hashfile: #{message}"
      if e.is_a?(Hashfile::DuplicateKeyError)
        print_message(if @command == "patch"
                        "To keep one of the changes, give --on-duplicate first or last (merge: maps merged deeply)."
                      else
                        "To keep one of them, give --on-duplicate first or last; --merge deep merges nested keys as I18n merges locale files."
                      end)
      end
      1
    end

    # The progress bar of `hashfile build` on a terminal: shown once a build
    # has run for a second, on stderr: entries, entries/s, and a bar with an
    # ETA when the input size is known. Uses ruby-progressbar when installed.
    class ProgressLine
      DELAY = 1.0

      def initialize(io)
        @io = io
        @started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        @bar = nil # nil: nothing shown yet; false: no ruby-progressbar, plain line
      end

      def call(entries, bytes, total, phase)
        return unless @io.tty?

        elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - @started
        return if elapsed < DELAY

        @bar ||= start(total)
        title = format("%s %d entries, %.0f/s", phase, entries, entries / elapsed)
        if @bar
          @bar.title = title
          @bar.progress = [bytes, @bar.total || bytes].min
        else
          @io.print "\r#{title}\e[K"
        end
      end

      def finish
        if @bar then @bar.finish
        elsif @bar == false then @io.print "\r\e[K"
        end
      end

      private

      def start(total)
        require "ruby-progressbar"
        ProgressBar.create(output: @io, total: total, format: "%t |%B| %p%% %e", autofinish: false)
      rescue LoadError
        false
      end
    end

    def usage
      lines = COMMANDS.values.map { |line| "  hashfile #{line}" }
      <<~TEXT
        Usage:
        #{lines.join("\n")}
          hashfile COMMAND --help    help for one command

        Options for every command: --debug (show backtraces), --version, --help
      TEXT
    end

    # What +arg+ names: a key or, with a +separator+, a dotted path
    # ("en.faker.name.first_name"): a key of the store, then each step a key
    # of a Hash (as a String, else a Symbol) or an index of an Array. The
    # core walks it in the stored bytes. The value, or MISSING.
    def value_at(db, arg, separator)
      head, *steps = arg.split(separator, -1)
      db._path(head, steps, arg, MISSING)
    end

    # Why the path +arg+ (split at +separator+) found nothing, for the
    # message: the store has no key of its first step (a key holding the
    # separator needs another one), or which step the value does not have.
    def missing_step(db, arg, separator)
      head, *steps = arg.split(separator, -1)
      return "" if steps.empty?

      unless db.key?(head)
        quoted = ->(text) { Terminal.escape(text.inspect, backslash: false) }
        return " (no key #{quoted[head]})" unless db.key?(arg)

        return " (the store has the key #{quoted[arg]}, but --path splits it at " \
               "#{quoted[separator]}; --separator gives another)"
      end

      found = (0...steps.size).take_while { |i| !MISSING.equal?(db._path(head, steps[0, i], arg, MISSING)) }.last
      reached = [head, *steps[0, found]].join(separator)
      " (#{Terminal.escape(reached, backslash: false)} has no #{Terminal.escape(steps[found].inspect, backslash: false)})"
    end

    # The JSON text of what +arg+ names (see value_at), written by the core
    # from the stored bytes; Hashfile::Error where JSON cannot hold it.
    def json_at(db, arg, separator)
      head, *steps = separator ? arg.split(separator, -1) : [arg]
      # get has no --format: its hint is to print the value without --json.
      json_hint("leave out --json to print it") { db._path_json(head, steps, arg) }
    end

    # json_at, or nil where JSON cannot hold the value.
    def json_or_nil(db, arg, separator)
      json_at(db, arg, separator)
    rescue Hashfile::Error
      nil
    end

    # The block's answer; an error for bytes that are not UTF-8 says what
    # can hold them (+hint+: dump's --format tsv, or get without --json).
    def json_hint(hint = "use --format tsv")
      yield
    rescue Hashfile::Error => e
      raise e unless e.message.end_with?("not UTF-8, which JSON cannot hold")

      raise e.class, "#{e.message}; #{hint}"
    end

    # The hints of an importer's ParseError that name an option as the
    # library spells it (key_field names another), as this command line
    # spells it (--key-field). Only these fixed phrases: the rest of the
    # message quotes the input, whose field names are data.
    PARSE_HINTS = {
      "(key_field names another" => "(--key-field names another",
      "(value_field names another" => "(--value-field names another",
      ": records_at: " => ": --records-at: ",
      "records_at \"" => "--records-at \"",
      "separator (col_sep)" => "separator (--col-sep)"
    }.freeze

    # What the library's patch messages say of options, as flags.
    PATCH_HINTS = {
      "(on_missing \"ignore\" drops such deletes)" => "(--on-missing ignore drops such deletes)",
      "(build one with shards:)" => "(build one with --shards)",
      "the gate max_entry_change" => "the gate --max-entry-change",
      "the gate max_type_change" => "the gate --max-type-change",
      "the gate refuse_empty" => "the gate --refuse-empty"
    }.freeze

    def patch_hints_as_flags(message)
      PATCH_HINTS.reduce(message) { |text, (library, flag)| text.sub(library, flag) }
    end

    def parse_hints_as_flags(message)
      PARSE_HINTS.reduce(message) { |text, (library, flag)| text.sub(library, flag) }
    end

    # +message+ with the library's option names (key_field) as this
    # command line spells them (--key-field). Only names with an underscore,
    # and the one an "invalid option" message starts with, are changed:
    # "format" or "header" also occur as plain words.
    def as_flags(message)
      names = (IMPORT_DEFAULTS.keys + BUILD_DEFAULTS.keys).map(&:to_s).select { |n| n.include?("_") }
      message = message.sub(/\A(invalid option) (\w+)/) { "#{Regexp.last_match(1)} --#{Regexp.last_match(2).tr("_", "-")}" }
      message.gsub(/(?<![-\w])(#{names.join("|")})\b/) { "--#{Regexp.last_match(1).tr("_", "-")}" }
    end

    # What an option parse error leaves out: for an unknown flag, the
    # flags it begins (--key: --key-column, ...) or the commands that take
    # it; the options an ambiguous abbreviation could be; the values an
    # option with a list takes.
    def choices(error)
      case error
      when OptionParser::InvalidOption
        unknown(error.args.first.to_s.split("=", 2).first)
      when OptionParser::AmbiguousOption
        candidates = @parser&.candidate(error.args.first.to_s)&.select { |c| c.start_with?("--") }
        candidates&.any? ? " (it could be #{candidates.join(", ")})" : ""
      when OptionParser::InvalidArgument
        switch = @parser&.top&.search(:long, error.args.first.to_s.delete_prefix("--"))
        values = switch&.pattern.is_a?(Hash) ? switch.pattern.keys.select { |k| k.is_a?(String) } : []
        values.any? ? " (expected one of: #{values.join(", ")})" : ""
      else ""
      end
    rescue StandardError
      ""
    end

    # What to say of an unknown flag: the flags of this command it begins,
    # or the other commands that take it.
    def unknown(given)
      begun = @parser.respond_to?(:long_names) ? @parser.long_names.select { |n| given.start_with?("--") && n.start_with?(given) } : []
      return " (did you mean #{begun.join(", ")}?)" if begun.any?

      owners = commands_taking(given)
      owners.any? ? " (an option of #{owners.join(" and ")}, not of #{@command})" : ""
    end

    # The other commands whose help lists the long option +name+
    # (--key-column: build), for an option given to the wrong command.
    def commands_taking(name)
      return [] unless name.start_with?("--")

      listed = /^\s+(?:-\w, )?#{Regexp.escape(name)}(?:[ =]|$)/
      (COMMANDS.keys - [@command]).select do |command|
        help = StringIO.new
        CLI.new(stdout: help, stderr: StringIO.new).run([command, "--help"])
        help.string.match?(listed)
      end
    end

    def parser(command)
      @command = command
      @parser = ExactParser.new do |o|
        o.banner = "Usage: hashfile #{COMMANDS.fetch(command)}"
        o.on("-h", "--help", "show this help") do
          print_report(*o.to_s.lines(chomp: true))
          throw :done, 0
        end
        yield o if block_given?
      end
    end

    def cmd_build(argv)
      catch(:done) do
        output = nil
        quiet = false
        check = false
        force = false
        options = {}
        parser("build") do |o|
          o.separator ""
          o.separator "INPUT is a file or - (standard input). The format comes from the extension"
          o.separator "(#{FORMAT_EXTENSIONS.keys.map { |e| ".#{e}" }.join(" ")}) unless --format is given."
          o.separator ""
          o.on("-o", "--output OUT", "the store to write (atomically; through a symbolic link to its file),", "or with --shards the dataset's directory") { |v| output = v }
          o.on("--shards N", Integer, "build a dataset of N shards in the directory OUT, in parallel", "(its manifest published last; hashfile info OUT shows it)") { |v| options[:shards] = v }
          o.on("--keep N", Integer, "with --shards: publishes the dataset keeps, to roll back to (default #{BUILD_DEFAULTS.fetch(:keep, 3)})") { |v| options[:keep] = v }
          o.on("--retain SECONDS", Float, "with --shards: the least time a replaced generation stays, for readers on it (default #{BUILD_DEFAULTS.fetch(:retain, 900.0).to_i})") { |v| options[:retain] = v }
          o.on("--note TEXT", "with --shards: why or from what this is published, kept in the history") { |v| options[:note] = v }
          o.on("--check", "build in a temporary directory and report; write nothing") { check = true }
          o.on("--force", "write OUT even if it is one of the inputs; with --shards, publish even if a gate refuses", "(the history records what was overridden)") { force = true }
          o.on("--max-entry-change F", Float, "with --shards: refuse to publish if the entry count differs from the current one's", "by more than this fraction (0.1: 10%)") { |v| options[:max_entry_change] = v }
          o.on("--max-type-change F", Float, "with --shards: refuse to publish if more than this fraction of the current keys", "changed value type") { |v| options[:max_type_change] = v }
          o.on("--refuse-empty", "with --shards: refuse to publish a dataset of no entries") { options[:refuse_empty] = true }
          o.on("--format F", "input format: #{FORMATS.join(", ")}") { |v| options[:format] = v }
          o.on("--key-column C", "CSV/TSV key column, by name or 0-based index (default #{IMPORT_DEFAULTS[:key_column]})") { |v| options[:key_column] = v }
          o.on("--value-column C", "CSV/TSV value column, or '*' for the whole row (default #{IMPORT_DEFAULTS[:value_column]})") { |v| options[:value_column] = v }
          o.on("--[no-]header", "CSV/TSV: the first row is a header (default: #{IMPORT_DEFAULTS[:header] ? "yes" : "no"})") { |v| options[:header] = v }
          o.on("--[no-]quote", "CSV/TSV: strict RFC 4180 quoting (default), or none: \" is an ordinary character") { |v| options[:quote] = v }
          o.on("--lenient", "CSV/TSV: the same as --no-quote") { options[:quote] = false }
          o.on("--col-sep C", "CSV/TSV: the field separator (default: , for CSV, tab for TSV; \\t for tab)") { |v| options[:col_sep] = v == "\\t" ? "\t" : v }
          o.on("--comment C", "CSV/TSV: skip lines that start with C (say #)") { |v| options[:comment] = v }
          o.on("--key-field PATH", "objects in JSON Lines or a JSON array: the key field, dotted into nested objects (default #{IMPORT_DEFAULTS[:key_field]})") { |v| options[:key_field] = v }
          o.on("--value-field NAME", "objects in JSON Lines or a JSON array: the value field, or '*' for the whole object (default #{IMPORT_DEFAULTS[:value_field]})") { |v| options[:value_field] = v }
          o.on("--records-at PATH", "JSON: the dotted path to the object or array of the entries (say 3166-1)") { |v| options[:records_at] = v }
          policies = ON_DUPLICATE.map(&:to_s)
          o.on("--on-duplicate P", policies, "what a repeated key does: #{policies.join(", ")} (default #{BUILD_DEFAULTS[:on_duplicate]})") { |v| options[:on_duplicate] = v.to_sym }
          o.on("--merge deep", ["deep"], "deep-merge repeated keys as I18n merges locale files (the same as --on-duplicate merge)") { options[:on_duplicate] = :merge }
          o.on("--threads N", Integer, "threads for hashing and sorting (default: every core)") { |v| options[:threads] = v }
          o.on("--keys-per-bucket F", Float, "CHD keys per bucket (default #{BUILD_DEFAULTS[:keys_per_bucket]})") { |v| options[:keys_per_bucket] = v }
          o.on("--load-factor F", Float, "table fill before remapping (default #{BUILD_DEFAULTS[:load_factor]})") { |v| options[:load_factor] = v }
          o.on("--hash-seed N", Integer, "first hash seed tried (default #{BUILD_DEFAULTS[:hash_seed]})") { |v| options[:hash_seed] = v }
          o.on("--keys-per-part N", Integer, "most keys per part of the index, on average (default #{BUILD_DEFAULTS[:keys_per_part]})") { |v| options[:keys_per_part] = v }
          o.on("--index LAYOUT", %w[classic compact], "the index layout: classic, or compact (2.2 bits a key, slower to build; default #{BUILD_DEFAULTS[:index]})") { |v| options[:index] = v.to_sym }
          o.on("--compression C", "none, zstd, zstd:LEVEL, zstd:LEVEL,LONG_LEVEL (1-22; zstd: 3, and 9 for values of 512 bytes or more)", "or auto (compress only where a sample says it pays): each value of 32 bytes or more",
               "compressed alone, with a dictionary trained on the values (default #{BUILD_DEFAULTS[:compression]})") { |v| options[:compression] = v }
          o.on("--memory SIZE", "most memory for the index data (64M, 4G; default #{BUILD_DEFAULTS[:memory]}: an eighth of RAM);", "past it the index is built from temporary files beside OUT (16 bytes a key), same bytes") { |v| options[:memory] = v }
          o.on("-q", "--quiet", "no progress bar and no summary") { quiet = true }
        end.parse!(argv)
        raise UsageError, "build needs at least one INPUT" if argv.empty?
        raise UsageError, "build needs -o OUT (or --check)" unless output || check

        if output && !force && (input = argv.find { |i| i != "-" && identity(i) && identity(i) == identity(output) })
          raise UsageError, "the output #{output} is the input #{input}; write the store elsewhere, or pass --force to replace the input"
        end

        options[:force] = true if force && options[:shards]
        gates = options.keys & %i[max_entry_change max_type_change refuse_empty]
        if check && !gates.empty?
          raise UsageError, "--check publishes nothing, so no gate judges it: leave out #{gates.map { |g| "--#{g.to_s.tr("_", "-")}" }.join(", ")}"
        end

        @given = options.keys
        return build_check(argv, output, options, quiet) if check

        started = clock
        bar = ProgressLine.new(@err) unless quiet
        @output = [output, identity(output)]
        result = Hashfile.build_from(argv, output, progress: bar, **options)
        @output = nil
        bar&.finish
        unless quiet
          in_shards = options[:shards] ? format(" in %d shards", options[:shards]) : ""
          print_message format("wrote %s: %d entries, %d bytes%s in %.2f s", output, result[:entries], result[:file_bytes], in_shards, clock - started)
          if options[:compression] && !options[:shards]
            Hashfile.open(output) { |db| (c = db.info[:compression]) && print_message("compression: #{compression_summary(c)}") }
          end
          if (spilled = result[:spilled])
            print_message format("the index went over --memory %s: built in %d groups of parts from %s of temporary files, since removed",
                                 options.fetch(:memory, BUILD_DEFAULTS[:memory]), spilled[:groups], human_bytes(spilled[:temporary_bytes]))
          end
        end
        0
      end
    end

    def cmd_build_i18n(argv)
      catch(:done) do
        output = nil
        quiet = false
        parser("build-i18n") do |o|
          o.separator ""
          o.separator "SOURCE is a locale file (.yml .yaml .json) or a directory searched for them, in path order."
          o.separator "Later files win; nested keys merge, as I18n::Backend::Simple merges its load path."
          o.separator "Serve the store with Hashfile::I18n::Backend.new(OUT)."
          o.separator ""
          o.on("-o", "--output OUT", "the store to write") { |v| output = v }
          o.on("-q", "--quiet", "no summary") { quiet = true }
        end.parse!(argv)
        raise UsageError, "build-i18n needs at least one SOURCE" if argv.empty?
        raise UsageError, "build-i18n needs -o OUT" unless output

        require_relative "i18n"
        files = Hashfile::I18n.files(argv)
        raise UsageError, "no locale files (.#{Hashfile::I18n::EXTENSIONS.join(", .")}) in #{argv.join(", ")}" if files.empty?

        started = clock
        result = Hashfile::I18n.build(files, output)
        print_message format("wrote %s: %d locales from %d files, %d bytes in %.2f s", output, result[:entries], files.size, result[:file_bytes], clock - started) unless quiet
        0
      end
    end

    # --max-value-size, and --header and --timeout for a store given as a
    # URL; the options go into +remote+ (Hashfile.open's keywords).
    def remote_options(o, remote)
      o.on("--max-value-size BYTES", Integer, "the largest value read, stored or decoded (default #{DEFAULT_MAX_VALUE_SIZE}: 256 MiB)") do |v|
        remote[:max_value_size] = v
        (@given ||= []) << :max_value_size # a refused value is a usage error, named as a flag
      end
      o.on("--generation G", "read generation G of a dataset, one it keeps (hashfile history DATASET)") { |v| remote[:generation] = v }
      http_options(o, remote, "FILE")
      o.on("--allow-origin URL", "a dataset's manifest may list shards under URL too (repeatable;",
           "read without --header): https://HOST[:PORT][/PATH] or s3://BUCKET[/PREFIX]") do |v|
        (remote[:allow_origins] ||= []) << v
      end
    end

    # --header and --timeout, for a location given as a URL.
    def http_options(o, remote, what = "DATASET")
      o.separator ""
      o.separator "#{what} may be an http://, https:// or s3:// URL (s3: credentials from AWS_* variables)."
      o.on("--header 'NAME: VALUE'", "send this header with every HTTP request (repeatable)") do |v|
        name, value = v.split(":", 2)
        raise UsageError, "--header takes 'NAME: VALUE', not #{v.inspect}" unless value

        (remote[:headers] ||= {})[name.strip] = value.strip
      end
      o.on("--timeout SECONDS", Float, "longest a request may take") { |v| remote[:timeout] = v }
    end

    # --raw, for the commands that print data.
    def raw_option(o)
      o.on("--raw", "print strings as their bytes even on a terminal, where by default",
           "control characters show as \\e, \\x07, \\u{9b} and a backslash as \\\\") { @raw = true }
    end

    def cmd_get(argv)
      catch(:done) do
        json = false
        separator = nil
        remote = {}
        parser("get") do |o|
          o.on("--json", "print one JSON object, null for absent keys") { json = true }
          o.on("--path", "each KEY is a dotted path: a key, then the fields (or array indexes) to walk into its value") { separator ||= "." }
          o.on("--separator S", "with --path: what separates the steps (default .)") { |v| separator = v }
          raw_option(o)
          remote_options(o, remote)
        end.parse!(argv)
        raise UsageError, "get needs FILE and at least one KEY" if argv.size < 2

        texts = {}
        why = {}
        found = Hashfile.open(argv.shift, **remote) do |db|
          values = if separator
                     argv.to_h { |arg| [arg, value_at(db, arg, separator)] }
                   else
                     # One batch: a remote store fetches every key's pieces level by level.
                     argv.zip(db._get_many(argv, MISSING)).to_h
                   end
          # Strings print as they are (escaped on a terminal); other values,
          # and every value with --json, as JSON (or, where JSON cannot hold
          # them and --json was not asked for, as Ruby would inspect them,
          # which escapes control characters itself).
          values.each do |arg, v|
            why[arg] = missing_step(db, arg, separator) if separator && MISSING.equal?(v)
            next if MISSING.equal?(v) || (!json && v.is_a?(String))

            texts[arg] = json ? json_at(db, arg, separator) : json_or_nil(db, arg, separator)
          end
          values
        end
        missing = found.select { |_, v| MISSING.equal?(v) }.keys
        if json
          pairs = found.map { |arg, v| "#{JSON.generate(arg)}:#{MISSING.equal?(v) ? "null" : texts[arg]}" }
          @out.puts Terminal.json_text("{#{pairs.join(",")}}")
        else
          escape = escape_data?
          found.each do |arg, v|
            next if MISSING.equal?(v)

            if v.is_a?(String)
              @out.puts(escape ? Terminal.escape(v) : v)
            else
              @out.puts(texts[arg] || Terminal.escape(v.inspect, backslash: false))
            end
          end
        end
        # The key as data (a backslash doubled): a key typed with a
        # backslash and one with a control character look different.
        missing.each { |key| print_message "hashfile: key not found: #{Terminal.escape(key)}#{why[key]}" }
        missing.empty? ? 0 : 1
      end
    end

    def cmd_dump(argv)
      catch(:done) do
        format = "jsonl"
        remote = {}
        parser("dump") do |o|
          o.separator ""
          o.separator "The output builds back into an identical store (hashfile build --format F, with the store's options: --compression again)."
          o.on("--format F", DUMP_FORMATS, "jsonl (default): [key, value] per line; json: one object; tsv: key and value columns") { |v| format = v }
          raw_option(o)
          remote_options(o, remote)
        end.parse!(argv)
        raise UsageError, "dump needs exactly one FILE" unless argv.size == 1

        Hashfile.open(argv[0], **remote) { |db| dump(db, format) }
        0
      end
    end

    def cmd_info(argv)
      catch(:done) do
        json = false
        remote = {}
        parser("info") do |o|
          o.on("--json", "print one JSON object") { json = true }
          remote_options(o, remote)
        end.parse!(argv)
        raise UsageError, "info needs exactly one FILE" unless argv.size == 1

        # A local store's value types come from reading every record once
        # (fast: nothing is decoded); a remote one would be downloaded whole.
        info = Hashfile.open(argv[0], **remote) { |db| db.remote? ? db.info : db.info.merge(value_types: db._value_types) }
        if json
          @out.puts Terminal.json(info)
        else
          print_info(argv[0], info)
        end
        0
      end
    end

    def cmd_serve(argv)
      catch(:done) do
        bind = "127.0.0.1"
        port = 0
        token = nil
        remote = {}
        parser("serve") do |o|
          o.separator ""
          o.separator "A web page of FILE (a store, a dataset or a URL), read-only, until interrupted."
          o.on("--port N", Integer, "the port (default: a free one)") { |v| port = v }
          o.on("--bind ADDRESS", "listen on ADDRESS, not 127.0.0.1; then every request needs the token") { |v| bind = v }
          o.on("--token TOKEN", "the token a request must carry (default: one made when --bind is given)") { |v| token = v }
          remote_options(o, remote)
        end.parse!(argv)
        raise UsageError, "serve needs exactly one FILE" unless argv.size == 1
        raise UsageError, "--token is at least 16 characters" if token && token.size < 16

        require "hashfile/explorer"
        explorer = Explorer.new(argv[0], bind: bind, port: port, token: token, open_options: remote)
        @serving = true
        print_report "hashfile serve: #{explorer.url} (read-only; Ctrl-C stops it)"
        @out.flush
        begin
          explorer.run
        ensure
          explorer.stop
        end
        0
      end
    end

    def cmd_verify(argv)
      catch(:done) do
        remote = {}
        parser("verify") { |o| remote_options(o, remote) }.parse!(argv)
        raise UsageError, "verify needs exactly one FILE" unless argv.size == 1

        entries = Hashfile.open(argv[0], **remote) { |db| db.verify && db.size }
        print_report "#{argv[0]}: OK, #{entries} entries"
        0
      end
    end

    def cmd_history(argv)
      catch(:done) do
        json = false
        remote = {}
        parser("history") do |o|
          o.on("--json", "print one JSON array") { json = true }
          http_options(o, remote)
        end.parse!(argv)
        raise UsageError, "history needs exactly one DATASET" unless argv.size == 1

        history = Hashfile.history(argv[0], **remote)
        if json
          @out.puts Terminal.json(history)
        else
          print_history(history)
        end
        0
      end
    end

    def cmd_rollback(argv)
      catch(:done) do
        remote = {}
        parser("rollback") do |o|
          o.separator ""
          o.separator "Without GEN, the newest kept generation before the current one. Readers opened"
          o.separator "with reload move to it at their next check."
          o.on("--note TEXT", "why, kept in the history") { |v| remote[:note] = v }
          http_options(o, remote)
        end.parse!(argv)
        raise UsageError, "rollback needs DATASET and at most one GENERATION" unless (1..2).cover?(argv.size)

        published = Hashfile.rollback(argv[0], argv[1], **remote)
        print_report format("%s: generation %s is current again (%d entries in %d shards)",
                            argv[0], published[:generation], published[:entries], published[:shards])
        0
      end
    end

    def cmd_patch(argv)
      catch(:done) do
        options = {}
        quiet = false
        parser("patch") do |o|
          o.separator ""
          o.separator "CHANGES is a JSON Lines file: {\"key\": K, \"value\": V} puts K, {\"key\": K, \"delete\": true}"
          o.separator "deletes it. Each shard the changes touch gets an overlay; every shard file is reused."
          policies = ON_DUPLICATE.map(&:to_s)
          o.on("--on-duplicate P", policies, "a key changed twice: #{policies.join(", ")} (default error)") { |v| options[:on_duplicate] = v.to_sym }
          o.on("--on-missing P", %w[error ignore], "a delete of a key the dataset does not hold: error (default) or ignore") { |v| options[:on_missing] = v.to_sym }
          o.on("--compact-overlays N", Integer, "compact a shard instead of giving it more overlays than N (default 8)") { |v| options[:compact_overlays] = v }
          o.on("--compact-fraction F", Float, "compact a shard whose overlays would hold more than F of its base's entries (default 0.25)") { |v| options[:compact_fraction] = v }
          publish_options(o, options)
          o.on("--max-entry-change F", Float, "refuse to publish if the entry count changes by more than this fraction") { |v| options[:max_entry_change] = v }
          o.on("--max-type-change F", Float, "refuse to publish if more than this fraction of the keys changed value type") { |v| options[:max_type_change] = v }
          o.on("--refuse-empty", "refuse to publish a dataset of no entries") { options[:refuse_empty] = true }
          o.on("--force", "publish even if a gate refuses (the history records what was overridden)") { options[:force] = true }
          o.on("-q", "--quiet", "no summary") { quiet = true }
        end.parse!(argv)
        raise UsageError, "patch needs DATASET and one CHANGES file (- for standard input)" unless argv.size == 2

        @given = options.keys
        started = clock
        done = with_changes_file(argv[1]) { |changes| Hashfile.patch(argv[0], changes, **options) }
        if !done[:published] && !quiet
          print_report format("%s: nothing to change%s: generation %s stays, nothing was published", argv[0],
                              done[:ignored].positive? ? format(" (%d deletes of absent keys ignored)", done[:ignored]) : "",
                              done[:generation])
        elsif !quiet
          print_report format("%s: generation %s, %d added, %d changed, %d deleted%s; %d overlays, %d shards compacted, %s written in %.2f s",
                              argv[0], done[:generation], done[:added], done[:changed], done[:deleted],
                              done[:ignored].positive? ? format(" (%d deletes of absent keys ignored)", done[:ignored]) : "",
                              done[:overlays_written], done[:shards_compacted], human_bytes(done[:bytes_written]), clock - started)
        end
        0
      end
    end

    def cmd_compact(argv)
      catch(:done) do
        options = {}
        quiet = false
        parser("compact") do |o|
          o.separator ""
          o.separator "Rebuilds each shard that has overlays, one at a time; readers keep the generation"
          o.separator "they have until the new manifest goes in."
          publish_options(o, options)
          o.on("-q", "--quiet", "no summary") { quiet = true }
        end.parse!(argv)
        raise UsageError, "compact needs exactly one DATASET" unless argv.size == 1

        @given = options.keys
        started = clock
        done = Hashfile.compact(argv[0], **options)
        if !done[:published] && !quiet
          print_report format("%s: no shard has overlays: generation %s stays, nothing was published", argv[0], done[:generation])
        elsif !quiet
          print_report format("%s: generation %s, %d shards compacted, %s written in %.2f s",
                              argv[0], done[:generation], done[:shards_compacted], human_bytes(done[:bytes_written]), clock - started)
        end
        0
      end
    end

    # Yields the path of a changes file: +name+, or for - a temporary copy
    # of standard input (read whole: a patch is small).
    def with_changes_file(name, &block)
      return yield(name) unless name == "-"

      require "tempfile"
      Tempfile.create(["hashfile-changes", ".jsonl"]) do |file|
        IO.copy_stream($stdin, file)
        file.flush
        begin
          block.call(file.path)
        rescue StandardError => e
          # Named as given: standard input, not the copy.
          raise e.exception(e.message.gsub(file.path, "-"))
        end
      end
    end

    # The history's options of a publish (a patch, a compaction).
    def publish_options(o, options)
      o.on("--keep N", Integer, "publishes the dataset keeps, to roll back to (default #{BUILD_DEFAULTS.fetch(:keep, 3)})") { |v| options[:keep] = v }
      o.on("--retain SECONDS", Float, "the least time a replaced generation stays, for readers on it (default #{BUILD_DEFAULTS.fetch(:retain, 900.0).to_i})") { |v| options[:retain] = v }
      o.on("--note TEXT", "why or from what this is published, kept in the history") { |v| options[:note] = v }
    end

    def cmd_diff(argv)
      catch(:done) do
        options = {}
        summary_only = false
        exit_code = false
        parser("diff") do |o|
          o.separator ""
          o.separator "A and B are stores, datasets, or URLs. With A alone (a dataset), its generation"
          o.separator "before the current one against the current one. Changes go to stdout as JSON"
          o.separator "Lines, the summary to stderr."
          o.on("--generation-a G", "the generation of dataset A to compare") { |v| options[:generation_a] = v }
          o.on("--generation-b G", "the generation of dataset B to compare") { |v| options[:generation_b] = v }
          o.on("--keys-only", "each line names the key, without the values") { options[:values] = false }
          o.on("--summary", "print the summary alone, as one JSON object on stdout") { summary_only = true }
          o.on("--exit-code", "exit 1 if anything changed, as git diff --exit-code") { exit_code = true }
          o.on("--threads N", Integer, "threads to compare on (default: every core)") { |v| options[:threads] = v }
          http_options(o, options, "A or B")
        end.parse!(argv)
        raise UsageError, "diff needs A and B, or one DATASET" unless (1..2).cover?(argv.size)

        a, b = argv
        b ||= a # one dataset: its generation before the current one (or --generation-b) against that one
        escape = escape_data?
        each = summary_only ? nil : ->(line) { @out.puts(escape ? Terminal.json_text(line) : line) }
        summary = Hashfile.diff(a, b, **options, &each)
        if summary_only
          @out.puts Terminal.json(summary)
        else
          types = summary[:type_changes].map { |t| "#{t[:keys]} #{t[:from]} to #{t[:to]}" }
          print_message format("%d added, %d removed, %d changed (%d unchanged)%s; %s added, %s removed",
                               summary[:added], summary[:removed], summary[:changed], summary[:unchanged],
                               types.empty? ? "" : "; types changed: #{types.join(", ")}",
                               human_bytes(summary[:bytes_added]), human_bytes(summary[:bytes_removed]))
        end
        exit_code && (summary[:added] + summary[:removed] + summary[:changed]).positive? ? 1 : 0
      end
    end

    # One publish a line, the current one marked: when, the generation,
    # entries, bytes, shards, what published it and its note.
    def print_history(history)
      rows = history.map do |p|
        [p[:current] ? "*" : " ", p[:published_at] || "?", p[:generation], p[:entries].to_s, human_bytes(p[:bytes]),
         p[:shards].to_s, p[:tool] || "?", [p[:rollback] ? "(rollback)" : nil, p[:forced] ? "(forced past #{p[:forced]})" : nil, p[:note]].compact.join(" ")]
      end
      header = ["", "PUBLISHED", "GENERATION", "ENTRIES", "BYTES", "SHARDS", "BY", "NOTE"]
      widths = ([header] + rows).transpose.map { |column| column.map(&:size).max }
      ([header] + rows).each do |row|
        @out.puts Terminal.escape(row.zip(widths).map { |cell, w| cell.ljust(w) }.join("  ").rstrip, backslash: false)
      end
    end

    MISSING = Object.new.freeze
    private_constant :MISSING

    # `build --check`: the whole build, into a temporary directory that is
    # removed after; then what it would have written where.
    def build_check(inputs, output, options, quiet)
      require "tmpdir"
      started = clock
      result = Dir.mktmpdir("hashfile-check") do |dir|
        Hashfile.build_from(inputs, File.join(dir, options[:shards] ? "check" : "check.hf"), progress: (ProgressLine.new(@err) unless quiet), **options)
      end
      target = output ? "#{output} (not written)" : "no output named"
      print_report format("check: OK, %d entries, %d bytes, built in %.2f s; %s", result[:entries], result[:file_bytes], clock - started, target)
      if output && !options[:shards]
        begin
          Hashfile._check_output(output)
        rescue ArgumentError => e
          print_report "check: but a build would refuse the output: #{e.message}"
          return 1
        end
      end
      0
    end

    # What a file is (device and inode), or nil if it does not exist: a
    # published store is a new file renamed over the old one.
    def identity(path)
      stat = File.stat(path)
      [stat.dev, stat.ino]
    rescue SystemCallError
      nil
    end

    def written_state((path, before))
      identity(path) == before ? "#{path} was not written" : "#{path} had already been written"
    end

    # Writes every entry. A first pass checks that the format can hold
    # every one, so that an entry it cannot hold fails the dump before
    # anything is written, instead of leaving part of a file on stdout.
    def dump(db, format)
      return dump_json(db, format) unless format == "tsv"

      require "csv"
      db.each { |key, value| dump_check(key, value) }
      @out.write("key\tvalue\n")
      # Each field escaped on a terminal before it is quoted, so that the
      # only tabs and newlines left are the columns and rows.
      escape = escape_data?
      db.each do |key, value|
        @out.write(CSV.generate_line(escape ? [Terminal.escape(key), Terminal.escape(value)] : [key, value], col_sep: "\t"))
      end
    end

    # Every entry as JSON Lines ([key, value] a line) or one JSON object,
    # the texts written by the core from the stored bytes (DEL and C1
    # escaped). A first pass checks that JSON can hold every entry.
    def dump_json(db, format)
      json_chunks(db) { |_| nil }
      @out.write("{") if format == "json"
      first = true
      json_chunks(db) do |pairs|
        # In pieces of 64 KiB or so, a chunk of entries at a time.
        text = +""
        pairs.each_slice(2) do |key, value|
          text << (format == "jsonl" ? "[#{key},#{value}]\n" : "#{first ? "\n" : ",\n"}#{key}:#{value}")
          first = false
        end
        @out.write(text)
      end
      @out.write(first ? "}\n" : "\n}\n") if format == "json"
    end

    # Yields each chunk's [key_json, value_json, ...].
    def json_chunks(db)
      cursor = [0, 0, 0]
      while cursor
        cursor, *pairs = json_hint { db._json_chunk(cursor) }
        yield pairs
      end
    end

    # Raises Hashfile::Error if tsv cannot hold the entry.
    def dump_check(key, value)
      return if value.is_a?(String)

      raise Hashfile::Error, "value for key #{key.inspect} is #{json_type(value)}; tsv holds strings only, use --format jsonl"
    end

    def clock
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    def print_info(path, info)
      return print_dataset_info(path, info) if info[:dataset]

      rows = [
        ["entries", commas(info[:entries])],
        ["file size", "#{human_bytes(info[:file_bytes])} (#{commas(info[:file_bytes])} bytes)"],
        ["index", format("%s, %.2f bits/key (the %s: %.2f)", info[:index], info[:mphf_bits_per_key],
                         info[:index] == :compact ? "pilots" : "seeds and their index", info[:seed_bits_per_key])]
      ]
      if (types = info[:value_types])
        rows << ["value types", types.sort_by { |name, n| [-n, name] }.map { |name, n| "#{name} #{commas(n)}" }.join(", ")]
      end
      if (c = info[:compression])
        rows << ["compression", compression_summary(c)]
      end
      info[:sections].each { |name, bytes| rows << ["section #{name}", human_bytes(bytes)] }
      info[:parameters].each { |name, value| rows << ["build #{name}", value.to_s] }
      if info[:cache]
        rows << ["etag", info[:etag] || "none"]
        info[:cache].each { |name, value| rows << ["cache #{name}", name.to_s.end_with?("bytes") ? human_bytes(value) : commas(value)] }
      end
      width = rows.map { |name, _| name.size }.max
      print_report "#{path}: hashfile format #{info[:format_version]}"
      rows.each { |name, value| print_report "  #{name.ljust(width)}  #{value}" }
    end

    # A dataset: its manifest's facts, then one line per shard.
    def print_dataset_info(path, info)
      shards = info[:shards]
      rows = [
        ["entries", commas(info[:entries])],
        ["file size", "#{human_bytes(info[:file_bytes])} (#{commas(info[:file_bytes])} bytes) in #{commas(shards.size)} shards"],
        ["generation", info[:generation]],
        ["sequence", info[:sequence].zero? ? "none (a version 1 manifest)" : info[:sequence].to_s],
        ["routing", info[:routing]]
      ]
      if (types = info[:value_types])
        rows << ["value types", types.sort_by { |name, n| [-n, name] }.map { |name, n| "#{name} #{commas(n)}" }.join(", ")]
      end
      width = rows.map { |name, _| name.size }.max
      print_report "#{path}: hashfile dataset (#{info[:dataset]})"
      rows.each { |name, value| print_report "  #{name.ljust(width)}  #{value}" }
      digits = (shards.size - 1).to_s.size
      shards.each_with_index do |shard, i|
        print_report "  shard #{i.to_s.rjust(digits)}  #{commas(shard[:entries])} entries, #{human_bytes(shard[:bytes])}, #{shard[:file]}"
        (shard[:overlays] || []).each do |overlay|
          print_report "  #{" " * (digits + 6)}+ overlay of #{commas(overlay[:entries])} changes, #{human_bytes(overlay[:bytes])}, #{overlay[:file]}"
        end
      end
    end

    # 1234567 -> "1,234,567".
    def commas(n)
      n.to_s.reverse.scan(/\d{1,3}/).join(",").reverse.then { |s| n.negative? ? "-#{s}" : s }
    end

    # Bytes in binary units, as ls -h and du -h print them: "1.5 MiB".
    # One line for info[:compression]: the levels, what auto chose, and
    # the values' sizes (ratio: of the compressed values alone, the
    # dictionary not counted; file_bytes says the whole).
    def compression_summary(c)
      levels = c[:long_level] == c[:level] ? "level #{c[:level]}" : "levels #{c[:level]} and #{c[:long_level]} (from #{c[:long_value_bytes]} bytes)"
      chosen = c[:auto] ? " (chosen by auto)" : ""
      damaged = c[:damaged] ? "; damaged stats: #{c[:damaged]} (hashfile verify)" : ""
      if c[:codec] == :none
        "none#{chosen}: compressing would not have saved 10% of the values' bytes (values under 32 bytes, " \
          "and any that would shrink over 1,024 times, stay raw)#{damaged}"
      else
        format("%s %s%s: %s values, %s decoded in %s (%.2fx, the values alone); dictionary %s%s", c[:codec], levels, chosen, commas(c[:values]),
               human_bytes(c[:decoded_bytes]), human_bytes(c[:stored_bytes]), c[:ratio], human_bytes(c[:dictionary_bytes]), damaged)
      end
    end

    def human_bytes(bytes)
      return "#{bytes} B" if bytes < 1024

      units = %w[KiB MiB GiB TiB]
      exponent = [(Math.log(bytes) / Math.log(1024)).floor, units.size].min
      format("%.1f %s", bytes.to_f / (1024**exponent), units[exponent - 1])
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
