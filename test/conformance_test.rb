# frozen_string_literal: true

require_relative "test_helper"
require "json"

# The conformance table (test/conformance/cases.json), run by Ruby and by
# the CLI: every binding runs the same cases and must give the same
# answers and errors (python/tests/test_conformance.py runs it for Python).
# One test per case and runner; a case the CLI has no form for is a skip
# naming the step.
module Conformance
  TABLE = JSON.parse(File.read(File.join(__dir__, "conformance", "cases.json")))

  # A value of the table as Ruby holds it: {"$bytes": hex} a binary
  # String, {"$int": digits} an Integer, {"$float": text} a Float.
  def self.value(data)
    case data
    when Array then data.map { |v| value(v) }
    when Hash
      return [data["$bytes"]].pack("H*") if data.key?("$bytes")
      return Object.new if data.key?("$object")
      return (data["$nest"] - 1).times.reduce([]) { |inner, _| [inner] } if data.key?("$nest")
      return Integer(data["$int"]) if data.key?("$int")
      return { "nan" => Float::NAN, "inf" => Float::INFINITY, "-inf" => -Float::INFINITY }.fetch(data["$float"]) { Float(data["$float"]) } if data.key?("$float")

      data.transform_values { |v| value(v) }
    else data
    end
  end

  # A value in a form two values of the same type compare equal in, and
  # values of different types (1 and 1.0, text and bytes) never do; map
  # order counts.
  def self.canonical(value)
    case value
    when Hash then ["map", value.map { |k, v| [canonical(k), canonical(v)] }]
    when Array then ["list", value.map { |v| canonical(v) }]
    when Float then ["float", value.nan? ? "nan" : value]
    when Integer then ["int", value]
    when String then value.encoding == Encoding::BINARY ? ["bytes", value.unpack1("H*")] : ["text", value]
    else value
    end
  end

  # The error class a kind of error is in Ruby.
  def self.error_class(kind)
    TABLE.fetch("errors").fetch(kind).fetch("ruby").split("::").inject(Object) { |m, n| m.const_get(n) }
  end
end

# The steps on files both runners take.
module ConformanceFiles
  # +actual+ (a Hash, or an Array of them; keys Symbols from the API, text
  # from the CLI's JSON) has every key +expected+ names, with that value,
  # and an Array as many items. A name of a fixed set (a value's type) is
  # a Symbol in Ruby.
  def expect_partial(expected, actual, where)
    if expected.is_a?(Array)
      assert_equal expected.size, actual.size, "#{where}: #{actual.inspect}"
      expected.zip(actual).each_with_index { |(e, a), i| expect_partial(e, a, "#{where}, item #{i}") }
      return
    end
    expected.each do |key, value|
      got = actual.fetch(key.to_sym) { actual.fetch(key) }
      next expect_partial(value, got, "#{where}: #{key}") if value.is_a?(Array) || value.is_a?(Hash)

      got = got.to_s if got.is_a?(Symbol)
      value.nil? ? assert_nil(got, "#{where}: #{key}") : assert_equal(value, got, "#{where}: #{key}")
    end
  end

  # Replaces the first occurrence of the bytes `find` in a file by
  # `replace` (hex, as the table gives them): damage no writer makes.
  def patch(step, where)
    bytes = File.binread(path(step["patch"]))
    find = [step["find"]].pack("H*")
    at = bytes.index(find)
    refute_nil at, "#{where}: #{step["find"]} is not in #{step["patch"]}"
    bytes[at, find.bytesize] = [step["replace"]].pack("H*")
    File.binwrite(path(step["patch"]), bytes)
  end

  # A URL as given; any other name, a file of the case's directory.
  def location(name)
    name.include?("://") ? name : path(name)
  end
end

class ConformanceTest < HashfileTest
  include ConformanceFiles
  def run_case(entry)
    (entry["files"] || {}).each { |name, text| File.write(path(name), text) }
    db = nil
    entry["steps"].each_with_index do |step, i|
      where = "#{entry["name"]}, step #{i + 1} (#{step.keys.first})"
      expecting(step, where) do
        case step.keys.first
        when "build_from"
          summary = Hashfile.build_from(step["build_from"].map { |f| path(f) }, path(step["output"]), **options(step))
          step.fetch("expect", {}).each { |k, v| assert_equal v, summary.fetch(k.to_sym), where }
        when "build" then Hashfile.build(path(step["output"]), Conformance.value(step["build"]), **options(step))
        when "fork_build"
          pid = fork { exit!(Hashfile.build(path(step["output"]), Conformance.value(step["fork_build"])).positive? ? 0 : 1) }
          # A child that hangs (a build pool the fork left half made) fails
          # the case, not the suite.
          status = nil
          200.times { break if (status = Process.wait2(pid, Process::WNOHANG)&.last); sleep 0.1 }
          unless status
            Process.kill(:KILL, pid)
            Process.wait(pid)
            flunk "#{where}: the forked child's build did not end in 20 s"
          end
          assert_predicate status, :success?, where
        when "open"
          db&.close
          opts = options(step)
          opts[:generation] = generation_at(step["open"], step["generation"]) if step.key?("generation")
          db = Hashfile.open(location(step["open"]), **opts)
        when "history"
          history = Hashfile.history(location(step["history"]), **options(step))
          expect_partial(step["expect"], history, where) if step["expect"]
        when "diff"
          a, b = step["diff"]
          opts = options(step)
          if step["generations"]
            opts[:generation_a], opts[:generation_b] = [a, b].zip(step["generations"]).map { |d, at| generation_at(d, at) }
          end
          lines = []
          summary = Hashfile.diff(location(a), location(b), **opts) { |line| lines << JSON.parse(line) }
          expect_partial(step["expect"], summary, where) if step["expect"]
          assert_equal step["lines"].map(&:to_json).sort, lines.map(&:to_json).sort, where if step["lines"]
        when "rollback"
          to = generation_at(step["rollback"], step["to"]) if step.key?("to")
          published = Hashfile.rollback(location(step["rollback"]), to, **options(step))
          expect_partial(step["expect"], published, where) if step["expect"]
        when "get"
          value = db.get(step["get"], MISSING)
          if step["absent"]
            assert_same MISSING, value, where
          elsif step["expect"].nil?
            assert_nil value, where
          else
            assert_equal Conformance.canonical(Conformance.value(step["expect"])), Conformance.canonical(value), where
          end
        when "dig"
          key, *steps = step["dig"]
          found = db.dig(key, *steps)
          if step["absent"]
            assert_nil found, where
          else
            assert_equal Conformance.canonical(Conformance.value(step["expect"])), Conformance.canonical(found), where
          end
        when "get_many"
          assert_equal Conformance.canonical(Conformance.value(step["expect"])), Conformance.canonical(db.values_at(*step["get_many"])), where
        when "len" then assert_equal step["len"], db.size, where
        when "same_object" then assert_equal step["expect"], db[step["same_object"]].equal?(db[step["same_object"]]), where
        when "info_has"
          info = db.info
          step["info_has"].each { |name| assert info.key?(name.to_sym), "#{where}: info has no #{name} (#{info.keys.join(", ")})" }
        when "info_keys" then assert_equal step["info_keys"], db.info.keys.map(&:to_s), where
        when "exists" then assert_equal step["expect"], File.exist?(path(step["exists"])), where
        when "shard_of" then assert_equal step["expect"], Hashfile.shard_of(*step["shard_of"]), where
        when "patch" then patch(step, where)
        when "delta"
          done = if step["changes_file"]
                   Hashfile.patch(path(step["delta"]), path(step["changes_file"]), **options(step))
                 else
                   Hashfile.patch(path(step["delta"]), step["put"] && Conformance.value(step["put"]), delete: step["delete"], **options(step))
                 end
          expect_partial(step["expect"], done, where) if step["expect"]
        when "compact"
          done = Hashfile.compact(path(step["compact"]), **options(step))
          expect_partial(step["expect"], done, where) if step["expect"]
        else flunk "#{where}: no such step"
        end
      end
    end
  ensure
    db&.close
  end

  MISSING = Object.new.freeze

  # The generation at index +index+ of the dataset's history, newest first.
  def generation_at(dataset, index)
    Hashfile.history(location(dataset)).fetch(index).fetch(:generation)
  end

  def options(step)
    (step["options"] || {}).transform_keys(&:to_sym)
  end

  # Runs the step; with "error", asserts it raised that kind's class and
  # message instead.
  def expecting(step, where, &block)
    return yield unless step["error"]

    error = step["error"]
    e = assert_raises(Conformance.error_class(error["kind"]), where, &block)
    assert_equal error["message"], e.message, where if error["message"]
    assert_match Regexp.new(error["match"]), e.message, where if error["match"]
  end

  Conformance::TABLE["cases"].each do |entry|
    define_method("test_#{entry["name"].gsub(/\W+/, "_")}") { run_case(entry) }
  end
end

# The same table through the CLI (in-process): the steps it has a command
# for; a case with others is skipped, naming the step.
class ConformanceCLITest < HashfileTest
  include ConformanceFiles
  # Steps the CLI has a form for, and the open options it has flags for.
  STEPS = %w[build_from open get exists info_has info_keys patch history rollback diff delta compact].freeze
  OPEN_FLAGS = %w[max_value_size allow_origins generation].freeze
  # Error kinds from parsing arguments, which the CLI's own parser owns.
  OWN_PARSER = %w[unknown_option option_type].freeze

  def run_case(entry)
    unsupported = entry["steps"].find { |s| !STEPS.include?(s.keys.first) }
    skip "the CLI has no form of the step #{unsupported.keys.first}" if unsupported
    skip "the CLI patches from a changes file, not from keys given" if entry["steps"].any? { |s| s.key?("delta") && !s.key?("changes_file") }
    errored = entry["steps"].find { |s| s["error"] && !%w[build_from open get delta].include?(s.keys.first) }
    skip "the CLI has no form of an error from the step #{errored.keys.first}" if errored
    kinds = entry["steps"].filter_map { |s| s.dig("error", "kind") }
    skip "the CLI's argument parser reports #{kinds & OWN_PARSER} itself" unless (kinds & OWN_PARSER).empty?
    opened = entry["steps"].select { |s| s.key?("open") }
    if opened.any? { |s| (s["options"] || {}).keys.any? { |k| !OPEN_FLAGS.include?(k) } }
      skip "the CLI has no flag for an open option of this case"
    end
    if entry["steps"].any? { |s| s.key?("expect") && s["expect"].to_json.include?("$") }
      skip "a value JSON cannot hold"
    end

    (entry["files"] || {}).each { |name, text| File.write(path(name), text) }
    store = nil
    open_flags = []
    entry["steps"].each_with_index do |step, i|
      where = "#{entry["name"]}, step #{i + 1} (#{step.keys.first})"
      case step.keys.first
      when "build_from"
        status, _, err = run_cli("build", *step["build_from"].map { |f| path(f) }, "-o", path(step["output"]), "-q", *flags(step["options"] || {}))
        check(step, where, status, err)
      when "open"
        store = path(step["open"])
        open_flags = flags(step["options"] || {})
        open_flags += ["--generation", generation_at(store, step["generation"])] if step.key?("generation")
        # The CLI opens at each command: info shows the open works, or fails.
        status, _, err = run_cli("info", store, *open_flags)
        check(step, where, status, err)
      when "get"
        status, out, err = run_cli("get", store, step["get"], "--json", *open_flags)
        if step["error"]
          check(step, where, status, err)
        elsif step["absent"]
          assert_equal [1, "hashfile: key not found: #{step["get"]}\n"], [status, err], where
        else
          assert_equal [0, ""], [status, err], where
          assert_equal Conformance.canonical(step["expect"]), Conformance.canonical(JSON.parse(out).fetch(step["get"])), where
        end
      when "info_has"
        status, out, err = run_cli("info", store, "--json", *open_flags)
        assert_equal [0, ""], [status, err], where
        info = JSON.parse(out)
        step["info_has"].each { |key| assert info.key?(key), "#{where}: info has no #{key}" }
      when "info_keys"
        # info --json adds value_types to a local store's: what the CLI alone prints.
        status, out, err = run_cli("info", store, "--json", *open_flags)
        assert_equal [0, ""], [status, err], where
        assert_equal step["info_keys"], JSON.parse(out).keys - ["value_types"], where
      when "exists" then assert_equal step["expect"], File.exist?(path(step["exists"])), where
      when "patch" then patch(step, where)
      when "history"
        status, out, err = run_cli("history", path(step["history"]), "--json", *flags(step["options"] || {}))
        check(step, where, status, err)
        expect_partial(step["expect"], JSON.parse(out), where) if step["expect"]
      when "diff"
        a, b = step["diff"].map { |n| path(n) }
        args = [a, b]
        if step["generations"]
          args += ["--generation-a", generation_at(a, step["generations"][0]), "--generation-b", generation_at(b, step["generations"][1])]
        end
        args << "--keys-only" if (step["options"] || {})["values"] == false
        status, out, err = run_cli("diff", *args, "--summary")
        check(step, where, status, err)
        expect_partial(step["expect"], JSON.parse(out), where) if step["expect"]
        if step["lines"]
          status, out, = run_cli("diff", *args)
          assert_equal 0, status, where
          assert_equal step["lines"].map(&:to_json).sort, out.lines.map { |l| JSON.parse(l).to_json }.sort, where
        end
      when "delta"
        status, out, err = run_cli("patch", path(step["delta"]), path(step["changes_file"]), *flags(step["options"] || {}))
        check(step, where, status, err)
        if step["expect"]
          # What the CLI prints: what the patch did.
          done = err.match(/(\d+) added, (\d+) changed, (\d+) deleted/) || out.match(/(\d+) added, (\d+) changed, (\d+) deleted/)
          refute_nil done, "#{where}: #{out}#{err}"
          shown = { "added" => done[1].to_i, "changed" => done[2].to_i, "deleted" => done[3].to_i }
          expect_partial(step["expect"].slice(*shown.keys), shown, where)
        end
      when "compact"
        status, _, err = run_cli("compact", path(step["compact"]), *flags(step["options"] || {}))
        assert_equal 0, status, "#{where}: #{err}"
      when "rollback"
        to = step.key?("to") ? [generation_at(path(step["rollback"]), step["to"])] : []
        status, out, err = run_cli("rollback", path(step["rollback"]), *to, *flags(step["options"] || {}))
        check(step, where, status, err)
        if step["expect"]
          # What the CLI prints: the generation, its entries and shards.
          published = out.match(/generation (\S+) is current again \((\d+) entries in (\d+) shards\)/)
          refute_nil published, "#{where}: #{out}"
          expect_partial(step["expect"], { "entries" => published[2].to_i, "shards" => published[3].to_i }, where)
        end
      end
    end
  end

  # The generation at index +index+ of the dataset's history (the CLI's).
  def generation_at(dataset, index)
    JSON.parse(run_cli("history", dataset, "--json")[1]).fetch(index).fetch("generation")
  end

  # An option as the CLI's flag: key_column: 0 is --key-column 0, true
  # --header, false --no-header.
  def flags(options)
    options.flat_map do |name, value|
      flag = "--#{name.tr("_", "-")}"
      flag = "--allow-origin" if name == "allow_origins"
      case value
      when true then [flag]
      when false then ["--no-#{name.tr("_", "-")}"]
      when Array then value.flat_map { |v| [flag, v.to_s] }
      else [flag, value.to_s]
      end
    end
  end

  # The exit status of the step's error kind, and its message on standard
  # error, an option named by its flag.
  def check(step, where, status, err)
    unless step["error"]
      assert_equal [0, ""], [status, err], where
      return
    end
    error = step["error"]
    assert_equal Conformance::TABLE.dig("errors", error["kind"], "cli"), status, "#{where}: #{err}"
    # The CLI names an option by its flag (--key-column for key_column).
    text = err.lines.first.to_s.chomp.delete_prefix("hashfile: ").gsub(/--([a-z][a-z-]*)/) { ::Regexp.last_match(1).tr("-", "_") }
    expected = error["message"] || error["match"]
    if error["message"]
      assert_equal expected, text, where
    else
      assert_match Regexp.new(expected), text, where
    end
  end

  Conformance::TABLE["cases"].each do |entry|
    define_method("test_#{entry["name"].gsub(/\W+/, "_")}") { run_case(entry) }
  end
end
