# frozen_string_literal: true

require "test_helper"

class ErrorsTest < HashfileTest
  def setup
    super
    @count = scale(200)
    @good = File.binread(build((1..@count).to_h { |i| ["k#{i}", "v#{i}"] }, "good.hf"))
  end

  def write(bytes)
    File.binwrite(path("bad.hf"), bytes)
    path("bad.hf")
  end

  def test_hierarchy
    assert_operator Hashfile::Error, :<, StandardError
    assert_operator Hashfile::FormatError, :<, Hashfile::Error
    assert_operator Hashfile::ChecksumError, :<, Hashfile::FormatError
    assert_operator Hashfile::UnsupportedError, :<, Hashfile::FormatError
    assert_operator Hashfile::DuplicateKeyError, :<, Hashfile::Error
    assert_operator Hashfile::ParseError, :<, Hashfile::Error
    assert_operator Hashfile::LimitError, :<, Hashfile::Error
    assert_operator Hashfile::ClosedError, :<, Hashfile::Error
  end

  def test_missing_file_is_enoent
    e = assert_raises(Errno::ENOENT) { Hashfile.open(path("nope.hf")) }
    assert_includes e.message, path("nope.hf")
  end

  # A directory is opened as a dataset; without a manifest it says so.
  def test_directory_without_a_manifest_is_a_dataset_error
    e = assert_raises(Hashfile::DatasetError) { Hashfile.open(tmpdir) }
    assert_equal File.join(tmpdir, "hashfile-dataset.json"), e.path
    assert_includes e.message, "#{tmpdir} has no hashfile-dataset.json"
  end

  {
    "bad magic" => ->(b) { b.dup.tap { |x| x.setbyte(0, 0x41) } },
    "unsupported version 9" => ->(b) { b.dup.tap { |x| x.setbyte(8, 9) } },
    "truncated or appended to" => ->(b) { b[0...-1] },
    "too short for a header" => ->(_) { "".b },
    "header length" => ->(b) { b[0, 64] }
  }.each do |reason, damage|
    define_method("test_open_rejects_#{reason.tr(" ", "_")}") do
      e = assert_raises(Hashfile::FormatError) { Hashfile.open(write(damage.call(@good))) }
      assert_includes e.message, reason
      assert_includes e.message, path("bad.hf"), "the message names the file"
    end
  end

  def test_header_checksum
    bytes = @good.dup
    bytes.setbyte(40, bytes.getbyte(40) ^ 1)
    e = assert_raises(Hashfile::ChecksumError) { Hashfile.open(write(bytes)) }
    assert_match(/checksum mismatch in section header/, e.message)
  end

  def test_text_file_and_json_file_are_format_errors
    assert_raises(Hashfile::FormatError) { Hashfile.open(write("{\"a\": \"b\"}\n")) }
  end

  def test_verify_names_the_damaged_section
    bytes = @good.dup
    inside = records_range(bytes).last - 3
    bytes.setbyte(inside, bytes.getbyte(inside) ^ 0x20)
    Hashfile.open(write(bytes)) do |db|
      e = assert_raises(Hashfile::ChecksumError) { db.verify }
      assert_match(/section records/, e.message)
    end
    assert_raises(Hashfile::ChecksumError) { Hashfile.open(path("bad.hf"), verify: true) }
  end

  # Damage anywhere: nothing crashes; every answer is a String, nil or a
  # FormatError. Damage outside the records section (header, seeds, remap,
  # slots): never a wrong value. Damage inside a record can change what that
  # record says; #verify is what catches it (docs/FORMAT.md, "Integrity").
  def test_random_damage_never_crashes_or_returns_a_wrong_value
    rng = Random.new(42)
    records = records_range(@good)
    assert_equal Hashfile.open(path("good.hf")) { |db| db.info[:sections][:records] }, records.size
    outside = (0...@good.bytesize).reject { |i| records.cover?(i) }
    scale(400).times do |round|
      index_only = round.even?
      bytes = @good.dup
      rng.rand(1..4).times do
        i = index_only ? outside.sample(random: rng) : rng.rand(bytes.size)
        bytes.setbyte(i, rng.rand(256))
      end
      check_damaged(write(bytes), index_only)
    end
  end

  private

  def check_damaged(file, index_only)
    Hashfile.open(file) do |db|
      (1..@count).each do |i|
        v = db["k#{i}"]
        assert(v.nil? || v == "v#{i}", "k#{i} gave #{v.inspect}") if index_only
        assert(v.nil? || v.is_a?(String))
      rescue Hashfile::FormatError
        nil
      end
      begin
        db.each { |k, _| assert_kind_of String, k }
      rescue Hashfile::FormatError
        nil
      end
    end
  rescue Hashfile::FormatError
    nil
  end
end
