# frozen_string_literal: true

# Each line as printed: a log cut short (a CI time limit) shows where
# the run was.
$stdout.sync = true

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "hashfile"
require "json"
require "fileutils"

# The built-in default data set: N random 8-character base-36 keys and
# values, the same on every run (fixed seed).
module BenchData
  # QUICK=1: every benchmark runs for seconds, to check it runs (CI), not
  # to measure. The one switch for all of them.
  QUICK = ENV["QUICK"] == "1"
  DIR = File.expand_path("data", __dir__)
  ALPHABET = [*"0".."9", *"a".."z"].freeze

  module_function

  def config(entries = Integer(ENV.fetch("ENTRIES", 100_000)))
    rng = Random.new(20_261_122)
    word = -> { Array.new(8) { ALPHABET[rng.rand(36)] }.join }
    hash = {}
    hash[word.call] = word.call while hash.size < entries
    hash
  end

  # Writes the data set as JSON and MessagePack (when the gem is there) and
  # builds the store; returns the paths.
  def files(hash)
    FileUtils.mkdir_p(DIR)
    paths = { json: File.join(DIR, "config.json"), hashfile: File.join(DIR, "config.hf") }
    File.write(paths[:json], JSON.generate(hash))
    begin
      require "msgpack"
      paths[:msgpack] = File.join(DIR, "config.msgpack")
      File.binwrite(paths[:msgpack], MessagePack.pack(hash))
    rescue LoadError
      nil
    end
    Hashfile.build(paths[:hashfile], hash)
    paths
  end

  def clock
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # The command running crates/hashfile/examples/NAME.rs, built first in
  # the profile the extension is built in (the Rakefile's CARGO_PROFILE).
  def cargo_example(name)
    (@examples ||= {})[name] ||= build_example(name)
  end

  def build_example(name)
    root = File.expand_path("..", __dir__)
    profile = ENV.fetch("HASHFILE_CARGO_PROFILE", "release")
    ok = system("cargo", "build", "--profile", profile, "--locked", "--quiet", "--example", name, "-p", "hashfile", chdir: root)
    raise "cargo could not build the example #{name}" unless ok

    [File.join(root, "target", profile == "dev" ? "debug" : profile, "examples", name)]
  end

  # Median seconds of `runs` calls of the block.
  def median(runs)
    times = Array.new(runs) do
      t = clock
      yield
      clock - t
    end
    times.sort[runs / 2]
  end
end
