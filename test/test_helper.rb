# frozen_string_literal: true

$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "hashfile"
require "bitpacking"
require "minitest/autorun"
require "tmpdir"

# HASHFILE_GC_STRESS=1 runs every test body under GC.stress, to catch Ruby
# objects the extension fails to keep alive.
module GCStress
  def setup
    super
    GC.stress = true if ENV["HASHFILE_GC_STRESS"] == "1"
  end

  def teardown
    GC.stress = false
    super
  end
end

class HashfileTest < Minitest::Test
  include GCStress

  # A fresh directory per test, removed afterwards.
  def tmpdir
    @tmpdir ||= Dir.mktmpdir("hashfile-test")
  end

  def teardown
    super
    FileUtils.remove_entry(@tmpdir) if @tmpdir
  end

  def path(name = "store.hf")
    File.join(tmpdir, name)
  end

  # Fewer entries under GC.stress, where every allocation runs a GC.
  def scale(n)
    ENV["HASHFILE_GC_STRESS"] == "1" ? [n / 100, 3].max : n
  end

  # Runs the CLI in-process: [exit status, stdout, stderr].
  def run_cli(*argv)
    require "hashfile/cli"
    require "stringio"
    out = StringIO.new
    err = StringIO.new
    status = Hashfile::CLI.new(stdout: out, stderr: err).run(argv)
    [status, out.string, err.string]
  end

  # Byte range of the records section of a store's bytes, from the
  # header's section table (docs/FORMAT.md): entries of 32 bytes at 128,
  # `id u32, flags u32, offset u64, length u64, checksum u64`; records is 5.
  def records_range(bytes)
    count = bytes.byteslice(84, 4).unpack1("V")
    count.times do |k|
      id, _, offset, length = bytes.byteslice(128 + 32 * k, 24).unpack("VVQ<Q<")
      return offset...(offset + length) if id == 5
    end
    raise "no records section"
  end

  def build(data, name = "store.hf", **options)
    Hashfile.build(path(name), data, **options)
    path(name)
  end
end
