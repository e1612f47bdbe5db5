# frozen_string_literal: true

require_relative "test_helper"
require "msgpack"
require "stringio"
require "json"
require "fileutils"

# The bad-input catalogue (docs/ERRORS.md): every entry is an input a user
# can get wrong, the exception class it raises (or the CLI's exit status),
# and the part of the message that says what to do. docs/ERRORS.md's table
# is written from it (WRITE_ERRORS_DOC=1 ruby -Ilib -Itest
# test/bad_input_catalogue_test.rb), and this test fails when the two
# differ, so the list and the behaviour cannot drift apart.
class BadInputCatalogueTest < HashfileTest
  def good_store
    @good_store ||= begin
      Hashfile.build(path("good.hf"), { "a" => 1, "b" => "x" })
      File.binread(path("good.hf"))
    end
  end

  # The store's bytes with `change` applied, written to a file; its path.
  def damaged(name)
    bytes = good_store.dup
    yield bytes
    File.binwrite(path(name), bytes)
    path(name)
  end

  def input(name, bytes)
    File.binwrite(path(name), bytes)
    path(name)
  end

  def cli(*argv)
    status, _, err = run_cli(*argv)
    CLIResult.new(status, err)
  end

  CLIResult = Struct.new(:status, :message)

  # A store of one compressed value whose frame has a byte flipped: the
  # header and the index are intact, so only the lookup's decode sees it.
  # With `words` of 400, a value over 512 bytes: compressed at level 9.
  def damaged_compressed_value(words: 40)
    text = (1..words).map { |i| "word#{i % 7} " }.join
    Hashfile.build(path("z#{words}.hf"), { "text" => text }, compression: :zstd)
    bytes = File.binread(path("z#{words}.hf"))
    at = bytes.index("text") + 4 # the frame follows the key
    bytes.setbyte(at + 6, bytes.getbyte(at + 6) ^ 0xff)
    File.binwrite(path("zbad#{words}.hf"), bytes)
    path("zbad#{words}.hf")
  end

  # A store whose typed value {"name" => "ann", "role" => "admin"} has its
  # map count made 1: the second pair hidden in the body. Lookups do not
  # check section checksums, so the decoder's check is the one that fires
  # (python/tests/test_decode_strict.py reseals such stores for verify).
  def hidden_pair_store
    Hashfile.build(path("hidden.hf"), { "user" => { "name" => "ann", "role" => "admin" } })
    bytes = File.binread(path("hidden.hf"))
    at = bytes.index("\x82\x14\xa4name".b)
    bytes.setbyte(at, 0x81)
    File.binwrite(path("hidden.hf"), bytes)
    path("hidden.hf")
  end

  # A store of a raw value of 1,000 random bytes ("big") and a compressed one that
  # decodes to 40,000 ("text").
  def big_value_store
    text = (1..4000).map { |i| "word#{i % 7} " }.join[0, 40_000].ljust(40_000, "x")
    Hashfile.build(path("big.hf"), { "big" => Random.new(1).bytes(1000), "text" => text }, compression: :zstd)
    path("big.hf")
  end

  # [what, how, expected class (or CLI exit status), message pattern]
  def catalogue
    [
      "Stores", # a heading in docs/ERRORS.md
      ["an empty file", -> { Hashfile.open(input("empty.hf", "")) }, Hashfile::FormatError, /file is 0 bytes, too short for a header/],
      ["a text file", -> { Hashfile.open(input("text.hf", "hello " * 40)) }, Hashfile::FormatError, /bad magic: not a hashfile store/],
      ["another major version", -> { Hashfile.open(damaged("v2.hf") { |b| b.setbyte(8, 2) }) }, Hashfile::UnsupportedError, /unsupported version 2 \(this library reads version 1\)/],
      ["a truncated store", -> { Hashfile.open(input("cut.hf", good_store[0...-10])) }, Hashfile::FormatError, /truncated or appended to/],
      ["bytes appended to a store", -> { Hashfile.open(input("long.hf", good_store + "xx")) }, Hashfile::FormatError, /truncated or appended to/],
      ["a flipped header bit", -> { Hashfile.open(damaged("h.hf") { |b| b.setbyte(40, b.getbyte(40) ^ 1) }) }, Hashfile::ChecksumError, /checksum mismatch in section header/],
      ["a flipped record bit, verified", -> { Hashfile.open(damaged("r.hf") { |b| flip_last_record_byte(b) }, verify: true) }, Hashfile::ChecksumError, /checksum mismatch in section records/],
      ["a missing store", -> { Hashfile.open(path("nope.hf")) }, Errno::ENOENT, /No such file or directory/],
      ["a directory as a store (not a dataset)", -> { Dir.mkdir(path("d")) unless Dir.exist?(path("d")); Hashfile.open(path("d")) }, Hashfile::DatasetError, /no dataset manifest: .*d has no hashfile-dataset.json/],
      ["a store truncated while open", -> { truncated_while_open }, Hashfile::StaleError, /the store file changed while open .*; reopen it/],
      ["a FIFO as a store", -> { File.mkfifo(path("pipe.hf")) unless File.exist?(path("pipe.hf")); Hashfile.open(path("pipe.hf")) }, Hashfile::FormatError, /pipe.hf: a FIFO \(named pipe\), not a regular file; a store is read from a regular file/],
      ["a damaged compressed value", -> { Hashfile.open(damaged_compressed_value)["text"] }, Hashfile::FormatError, /corrupt store \(records\): compressed value/],
      ["a damaged long compressed value (zstd level 9)", -> { Hashfile.open(damaged_compressed_value(words: 400))["text"] }, Hashfile::FormatError, /corrupt store \(records\): compressed value/],
      ["a map whose count hides a pair", -> { Hashfile.open(hidden_pair_store)["user"] }, Hashfile::FormatError, /hidden.hf: corrupt store \(records\): value for key "user": malformed value: container body longer than its items at byte 9/],
      ["a value larger than max_value_size", -> { Hashfile.open(big_value_store, max_value_size: 100)["big"] }, Hashfile::LimitError, /the value of key "big" is 1000 bytes, over max_value_size \(100 bytes\); open the store with a larger max_value_size to read it/],
      ["a compressed value decoding past max_value_size", -> { Hashfile.open(big_value_store, max_value_size: 10_000)["text"] }, Hashfile::LimitError, /the value of key "text" decodes to 40000 bytes, over max_value_size \(10000 bytes\)/],
      ["a store with such a value, verified", -> { Hashfile.open(big_value_store, max_value_size: 10_000, verify: true) }, Hashfile::LimitError, /the value of key "text" decodes to 40000 bytes, over max_value_size/],
      "Importer inputs", # a heading in docs/ERRORS.md
      ["JSON that is not JSON", -> { Hashfile.build_from(input("a.json", "{\"a\": 1,\n \"b\" 2}"), path) }, Hashfile::ParseError, /a.json: line 2, column 6: expected `:`/],
      ["a JSON duplicate key", -> { Hashfile.build_from(input("d.json", "{\"a\": 1,\n \"b\": 2,\n \"a\": 3}"), path) }, Hashfile::DuplicateKeyError, /duplicate key "a" \(.*d.json: line 1 and .*d.json: line 3\)/],
      ["a JSON number of a million digits", -> { Hashfile.build_from(input("n.json", "{\"n\": #{"9" * 1_000_000}}"), path) }, Hashfile::ParseError, /over the limit of 100000 \(store it as a string\)/],
      ["JSON nested deeper than 100", -> { Hashfile.build_from(input("deep.json", "{\"a\": #{"[" * 120}#{"]" * 120}}"), path) }, Hashfile::ParseError, /nests deeper than 100 levels|recursion limit/],
      ["a JSON Lines line that is not a pair", -> { Hashfile.build_from(input("l.jsonl", "[\"a\", 1]\n[\"b\"]\n"), path) }, Hashfile::ParseError, /l.jsonl: line 2.*expected a \[key, value\] pair/],
      ["a JSON Lines object without the key field", -> { Hashfile.build_from(input("m.jsonl", "{\"value\": 1}\n"), path) }, Hashfile::ParseError, /missing field "key"/],
      ["an unterminated CSV quote", -> { Hashfile.build_from(input("q.tsv", "k\tv\na\t\"open\nb\tx\n"), path) }, Hashfile::ParseError, /q.tsv: line 2, column 3: unclosed quoted field.*the quote option false \(--no-quote\)/],
      ["text after a closing CSV quote", -> { Hashfile.build_from(input("x.csv", "k,v\na,\"bad\"x\n"), path) }, Hashfile::ParseError, /line 2, column 8: 'x' after the closing quote of a field/],
      ["a quote inside an unquoted CSV field", -> { Hashfile.build_from(input("y.csv", "k,v\na,a\"b\n"), path) }, Hashfile::ParseError, /line 2, column 4: a quote inside an unquoted field; quote the whole field and double the quote/],
      ["a CSV row too short for the value column", -> { Hashfile.build_from(input("s.csv", "k,v\na\n"), path) }, Hashfile::ParseError, /line 2: the row has 1 field, too few for the value column 1/],
      ["a CSV column name not in the header", -> { Hashfile.build_from(input("h.csv", "id,name\n1,x\n"), path, key_column: "sku") }, Hashfile::ParseError, /no key column named "sku"; the header row names "id", "name"/],
      ["a CSV duplicate key in a CR LF file", -> { Hashfile.build_from(input("c.csv", "k,v\r\na,1\r\nb,2\r\na,3\r\n"), path) }, Hashfile::DuplicateKeyError, /c.csv: line 2 and .*c.csv: line 4/],
      ["MessagePack with extra bytes", -> { Hashfile.build_from(input("e.msgpack", { "a" => 1 }.to_msgpack + "\x00"), path) }, Hashfile::ParseError, /extra bytes after the top-level map \(1 entry\); the input must be exactly one map/],
      ["MessagePack that is not a map", -> { Hashfile.build_from(input("a.msgpack", [1, 2].to_msgpack), path) }, Hashfile::ParseError, /expected a map at the top level/],
      ["a MessagePack extension type", -> { Hashfile.build_from(input("x.msgpack", "\x81\xA1a\xD4\x01\x00".b), path) }, Hashfile::ParseError, /MessagePack extension type 1 is not supported/],
      ["records_at naming no field", -> { Hashfile.build_from(input("iso.json", "{\"3166-1\": []}"), path, records_at: "3166-2") }, Hashfile::ParseError, /records_at: the top-level object has no field "3166-2"; its fields are "3166-1"/],
      ["a key field holding a float", -> { Hashfile.build_from(input("f.jsonl", "{\"id\": 1.5}\n"), path, key_field: "id", value_field: "*") }, Hashfile::ParseError, /f.jsonl: line 1, column \d+: invalid type: a number that is not a 64-bit integer, expected a string or an integer in the key field "id"/],
      ["the whole row as the key column", -> { Hashfile.build_from(input("w.csv", "k,v\n"), path, key_column: "*") }, ArgumentError, /key_column: cannot be "\*" \(the whole row or object\); only the value can/],
      ["a YAML date", -> { Hashfile.build_from(input("d.yml", "a: 1\nwhen: 2024-01-31\n"), path) }, Hashfile::ParseError, /line 2, column 7: value for key "when": "2024-01-31" is a date, which YAML.safe_load refuses; quote it/],
      ["a YAML Ruby object tag", -> { Hashfile.build_from(input("o.yml", "a: !ruby/object:Foo {}\n"), path) }, Hashfile::ParseError, /has tag !ruby\/object:Foo, a Ruby object, which YAML.safe_load refuses/],
      ["a YAML sequence at the top", -> { Hashfile.build_from(input("s.yml", "- a\n- b\n"), path) }, Hashfile::ParseError, /line 1, column 1: expected a mapping at the top level/],
      ["a YAML alias bomb", -> { Hashfile.build_from(input("bomb.yml", alias_bomb), path) }, Hashfile::ParseError, /aliases expand to more than 256 MiB/],
      ["UTF-16 input", -> { Hashfile.build_from(input("u.json", "{\"a\": 1}".encode("UTF-16LE").b), path) }, Hashfile::ParseError, /the input is UTF-16LE text; hashfile reads UTF-8: convert it first \(iconv -f UTF-16LE -t UTF-8\)/],
      ["an unknown extension", -> { Hashfile.build_from(input("data.txt", "{}"), path) }, ArgumentError, /cannot tell the format of .*data.txt .*give the format option \(--format on the command line\)/],
      ["a directory as an input", -> { Dir.mkdir(path("in")) unless Dir.exist?(path("in")); Hashfile.build_from(path("in"), path) }, ArgumentError, /in is a directory; give the data files in it/],
      ["an IO without format:", -> { Hashfile.build_from(StringIO.new("{}"), path) }, ArgumentError, /an IO input \(StringIO\) needs format:/],
      ["a 2 MB field name an error lists", -> { Hashfile.build_from(input("f.json", "{\"#{"x" * 2_000_000}\": []}"), path, records_at: "nope") }, Hashfile::ParseError, /f.json: line 1, column 2000008: records_at: the top-level object has no field "nope"; its fields are "x{200}"\.\.\. \(2000000 bytes\)\z/],
      "Ruby arguments", # a heading in docs/ERRORS.md
      ["an Integer key", -> { Hashfile.build(path, { 1 => 2 }) }, TypeError, /key must be a String or Symbol, not Integer/],
      ["a value of another class", -> { Hashfile.build(path, { "a" => Object.new }) }, TypeError, /value for key "a" is an Object; .*\(pass serializer: to store other objects\)/],
      ["a value nested 120 deep", -> { Hashfile.build(path, { "deep" => deep_array(120) }) }, ArgumentError, /value for key "deep" at \[0, 0, 0, \.\.\.\] nests deeper than 100 levels/],
      ["a build option out of range", -> { Hashfile.build(path, { "a" => 1 }, load_factor: 2) }, ArgumentError, /invalid option load_factor: 2 is outside 0.5..=1/],
      ["an unknown build option", -> { Hashfile.build(path, { "a" => 1 }, bogus: 1) }, ArgumentError, /unknown option bogus for build; it takes: .*keys_per_bucket/],
      ["a misspelled build option", -> { Hashfile.build(path, { "a" => 1 }, keys_per_bukket: 3) }, ArgumentError, /unknown option keys_per_bukket for build \(did you mean keys_per_bucket\?\); it takes:/],
      ["a misspelled open option", -> { Hashfile.open(path("good.hf").tap { good_store }, symbolize_keys: true) }, ArgumentError, /unknown option symbolize_keys for open \(did you mean symbolize_names\?\)/],
      ["a misspelled reload:", -> { Hashfile.open(path("good.hf").tap { good_store }, realod: 5) }, ArgumentError, /unknown option realod for open \(did you mean reload\?\)/],
      ["a remote option on a local store", -> { Hashfile.open(path("good.hf").tap { good_store }, timeout: 5) }, ArgumentError, /invalid option timeout: is for remote stores \(http:\/\/, https:\/\/, s3:\/\/\), and .*good.hf is a local path/],
      ["a JSON option on CSV", -> { Hashfile.build_from(input("p.csv", "name,price\napple,1\n"), path, key_field: "name") }, ArgumentError, /invalid option key_field: applies to json, json-pairs and jsonl inputs, and .*p.csv is read as csv, which would ignore it; for csv give key_column/],
      ["a CSV option on JSON", -> { Hashfile.build_from(input("p.json", "{}"), path, key_column: "name") }, ArgumentError, /invalid option key_column: applies to csv and tsv inputs, and .*p.json is read as json, which would ignore it; for json give key_field/],
      ["a CSV-only option on JSON Lines", -> { Hashfile.build_from(input("p.jsonl", ""), path, header: false) }, ArgumentError, /invalid option header: applies to csv and tsv inputs, and .*p.jsonl is read as jsonl/],
      ["key_field on a JSON object without records_at", -> { Hashfile.build_from(input("c.json", %({"version": 1, "3166-1": [{"alpha_2": "AD"}], "more": [1]})), path, key_field: "alpha_2") }, ArgumentError, /invalid option key_field: reads objects in an array, and the top level of .*c.json is an object, read as key-value pairs, which would ignore it; its fields that hold arrays of objects: "3166-1"; give records_at "3166-1"/],
      ["records without the value field", -> { Hashfile.build_from(input("r.json", %([{"alpha_2": "AD"}])), path, key_field: "alpha_2") }, Hashfile::ParseError, /missing field "value", the value field \(value_field names another, or "\*" the whole object\)/],
      ["CSV read as JSON", -> { Hashfile.build_from(input("csv.json", "name,price\napple,1\n"), path) }, Hashfile::ParseError, /csv.json: line 1, column \d+: expected ident: this is not JSON at its start; if .*csv.json is in another format, give it \(one of: json, json-pairs, jsonl, csv, tsv, msgpack, yaml, lines\)/],
      ["options no table can satisfy", -> { Hashfile.build(path, (1..5000).to_h { |i| ["k#{i}", i] }, dense_key_fraction: 0.99, dense_bucket_fraction: 0.01) }, ArgumentError, /dense_key_fraction|dense_bucket_fraction/],
      ["threads: 0", -> { Hashfile.build_from(input("t.json", "{}"), path, threads: 0) }, ArgumentError, /invalid option threads: must be from 1 to \d+ \(4 per core, at least 16\), not 0/],
      ["a nil path", -> { Hashfile.open(nil) }, TypeError, /expected a path \(String or Pathname\), not nil/],
      ["max_value_size: 0", -> { Hashfile.open(path("good.hf").tap { good_store }, max_value_size: 0) }, ArgumentError, /invalid option max_value_size: must be an integer from 1 to 18446744073709551615, not 0/],
      ["raw: with symbolize_names:", -> { Hashfile.open(path("good.hf").tap { good_store }, raw: true, symbolize_names: true) }, ArgumentError, /invalid option symbolize_names: does not apply with raw: true, which returns the stored bytes undecoded; give one of them/],
      ["an S3 option for an http URL", -> { Hashfile.open("http://127.0.0.1:9/x.hf", s3_endpoint: "http://127.0.0.1:9000") }, ArgumentError, %r{invalid option s3_endpoint: is for s3:// locations \(or the s3:// shards allow_origins lets a manifest name\), and http://127.0.0.1:9/x.hf is not one}],
      ["reload: past a day", -> { Hashfile.open(path("good.hf").tap { good_store }, reload: 1e300) }, ArgumentError, /invalid option reload: must be a number of seconds from 0 to 86400 \(a day\), not 1e300/],
      ["an output that is another user's link (as root)", -> { planted_link }, Hashfile::UnsafeLinkError, /planted.hf: refusing to write through a symbolic link owned by uid 65534 \(this process runs as uid 0\); only links of this user or root are followed/],
      ["an output that is a URL", -> { Dir.chdir(path("")) { Hashfile.build("s3://bucket/x.hf", { "a" => 1 }) } }, ArgumentError, %r{invalid option output: s3://bucket/x.hf is a URL; a build writes a local file or directory: build it here, then upload it}],
      ["a dataset output that is a URL", -> { Dir.chdir(path("")) { Hashfile.build_sharded("https://cdn.example.com/ds", { "a" => 1 }, shards: 2) } }, ArgumentError, %r{invalid option output: https://cdn.example.com/ds is a URL; a build writes a local file or directory}],
      ["an output that is a FIFO", -> { File.mkfifo(path("fifo")) unless File.exist?(path("fifo")); Hashfile.build(path("fifo"), { "a" => 1 }) }, ArgumentError, /fifo is a FIFO; a store replaces only a regular file: give a file path/],
      ["an unknown compression", -> { Hashfile.build(path, { "a" => "b" }, compression: :lz4) }, ArgumentError, /invalid option compression: "lz4" is not a compression; one of none, zstd, zstd:LEVEL, zstd:LEVEL,LONG_LEVEL \(LEVEL 1..=22\), auto/],
      ["a zstd level out of range", -> { Hashfile.build(path, { "a" => "b" }, compression: "zstd:30") }, ArgumentError, /invalid option compression: "zstd:30": the zstd level must be an integer from 1 to 22/],
      ["a long values' zstd level out of range", -> { Hashfile.build(path, { "a" => "b" }, compression: "zstd:3,23") }, ArgumentError, /invalid option compression: "zstd:3,23": the zstd level must be an integer from 1 to 22/],
      ["auto with a level", -> { Hashfile.build(path, { "a" => "b" }, compression: "auto:3") }, ArgumentError, /invalid option compression: "auto:3": auto takes no level/],
      ["a memory limit that is not a size", -> { Hashfile.build(path, { "a" => "b" }, memory: "lots") }, ArgumentError, /invalid option memory: "lots" is not a size: give bytes, a number with K, M, G or T \(64M\), or auto/],
      ["a memory limit below the least", -> { Hashfile.build(path, { "a" => "b" }, memory: 1000) }, ArgumentError, /invalid option memory: 1000 bytes is below the least a build can work in, 16 MiB/],
      ["a col_sep that is a quote", -> { Hashfile.build_from(input("c2.csv", "k,v\n"), path, col_sep: "\"") }, ArgumentError, /invalid option col_sep: must be one ASCII character other than a quote or a line break/],
      ["a serializer without load", -> { Hashfile.open(path("good.hf").tap { good_store }, serializer: Object.new) }, ArgumentError, /serializer: expected an object with dump and load/],
      ["a closed store", -> { db = Hashfile.open(path("good.hf").tap { good_store }); db.close; db["a"] }, Hashfile::ClosedError, /closed store/],
      "Datasets", # a heading in docs/ERRORS.md
      ["a damaged manifest", -> { dataset("dm") { |m| m.sub('"entries"', "\"entr\u0000es\"") } }, Hashfile::DatasetError, /dm\/hashfile-dataset.json: not a valid dataset manifest: control character/],
      ["a truncated manifest", -> { dataset("tm") { |m| m[0, m.size / 2] } }, Hashfile::DatasetError, /tm\/hashfile-dataset.json: not a valid dataset manifest: EOF while parsing/],
      ["a manifest of a newer version", -> { dataset("nv") { |m| m.sub('"hashfile_dataset": 2', '"hashfile_dataset": 4, "compression": "zstd"') } }, Hashfile::DatasetError, /dataset manifest version 4, and this release reads versions 1 to 3/],
      ["a version 2 manifest without its sequence", -> { dataset("ns") { |m| m.sub(/  "sequence": \d+,\n/, "") } }, Hashfile::DatasetError, /no sequence: a version 2 manifest has one above 0/],
      ["a local manifest listing a shard on a server", -> { dataset("rs") { |m| m.sub('"file": "', '"file": "https://cdn.example.com/') } }, Hashfile::DatasetError, %r{shard 0 of 2 \(https://cdn.example.com/.*\) of dataset .*: it is remote, and the manifest is a local file: a local dataset reads local shards, or remote ones under a place the caller allows \(allow_origins; the CLI's --allow-origin\)}],
      ["a manifest listing a shard URL that does not parse", -> { dataset("bu") { |m| m.sub('"file": "', '"file": "https://[::1/') } }, Hashfile::DatasetError, /shard 0 of 2 \("https:\/\/\[::1\/.*"\): https:\/\/\[::1\/.* is not a valid URL/],
      ["allow_origins: not a URL", -> { dataset("ao") && Hashfile.open(path("ao"), allow_origins: ["cdn.example.com"]) }, ArgumentError, /invalid option allow_origins: "cdn.example.com" is not an http:\/\/, https:\/\/ or s3:\/\/ location; give http\(s\):\/\/HOST\[:PORT\]\[\/PATH\] or s3:\/\/BUCKET\[\/PREFIX\]/],
      ["allow_origins: for a store", -> { Hashfile.open(path("good.hf").tap { good_store }, allow_origins: ["https://cdn.example.com/"]) }, ArgumentError, /allow_origins.*is for datasets, whose manifest lists shards elsewhere, and .*good.hf is a store/],
      ["a remote option for a local dataset", -> { dataset("ro") && Hashfile.open(path("ro"), allow_origins: ["https://cdn.example.com/"], timeout: 5) }, ArgumentError, /invalid option timeout: is for remote stores \(http:\/\/, https:\/\/, s3:\/\/\), and .*ro is a local path/],
      ["a manifest with an unknown routing", -> { dataset("ur") { |m| m.sub("xxh3-64-high:", "murmur3:") } }, Hashfile::DatasetError, /routing "murmur3:6861736866696c65" is not one this release knows \(it routes by "xxh3-64-high:6861736866696c65"\)/],
      ["a manifest edited by hand (entries)", -> { dataset("he") { |m| m.sub('"entries": 100', '"entries": 99') } }, Hashfile::DatasetError, /the shards hold 100 entries together, and the manifest says 99/],
      ["a manifest listing a shard twice", -> { dataset("lt") { |m| JSON.parse(m).tap { |j| j["shards"][1] = j["shards"][0] }.then { |j| j.merge("entries" => j["shards"].sum { |s| s["entries"] }) }.to_json } }, Hashfile::DatasetError, /shard 1 of 2 \(".*-00000-of-00002.hf"\): the file is listed twice/],
      ["a shard name leaving the directory", -> { dataset("ln") { |m| m.sub('"file": "', '"file": "../') } }, Hashfile::DatasetError, /shard 0 of 2 \("..\/.*"\): shard file ".*" is not 1 to 255 letters, digits, '.', '_' or '-'/],
      ["a missing shard", -> { dataset("ms", remove: 1) }, Hashfile::DatasetError, /shard 1 of 2 \(.*-00001-of-00002.hf\) of dataset .*ms\/hashfile-dataset.json: missing/],
      ["a shard of another generation", -> { dataset("og", rebuild: 0) }, Hashfile::DatasetError, /shard 0 of 2 \(.*\) of dataset .*: header checksum [0-9a-f]{16}, and the manifest says [0-9a-f]{16} \(a shard of another generation, or rebuilt since\)/],
      ["a key in the wrong shard (verify)", -> { stray_key_dataset.verify }, Hashfile::DatasetError, /key "stray-\d+" is in shard 0 of 2, and routes to shard 1/],
      ["shards: 0", -> { Hashfile.build_sharded(path("z"), {}, shards: 0) }, ArgumentError, /invalid option shards: must be an integer from 1 to 1048576, not 0/],
      ["a rollback with nothing kept to go back to", -> { Hashfile.build_sharded(path("one"), { "a" => 1 }, shards: 1) && Hashfile.rollback(path("one")) }, Hashfile::DatasetError, /nothing to roll back to: the history keeps only the current generation/],
      ["a generation the dataset does not keep", -> { Hashfile.build_sharded(path("gk"), { "a" => 1 }, shards: 1) && Hashfile.open(path("gk"), generation: "20200101T000000Z-00000000") }, Hashfile::DatasetError, /generation 20200101T000000Z-00000000 is not kept here \(kept: \d{8}T\d{6}Z-[0-9a-f]{8}\)/],
      ["a pinned generation with reload", -> { Hashfile.open(path("gk"), generation: "20200101T000000Z-00000000", reload: 1) }, ArgumentError, /invalid option generation: "20200101T000000Z-00000000" reads that generation and no other, and reload follows new ones: give one/],
      ["a publish a gate refuses", -> { Hashfile.build_sharded(path("gt"), (1..10).to_h { |i| ["k#{i}", i] }, shards: 1) && Hashfile.build_sharded(path("gt"), { "k1" => 1 }, shards: 1, max_entry_change: 0.5) }, Hashfile::PublishRefusedError, /publish refused by the gate max_entry_change: 1 entries against 10 now \(-90.0%\), more than 50.0%; nothing was published \(force publishes it anyway\)/],
      ["a gate for one store", -> { Hashfile.build(path("g1.hf"), { "a" => 1 }, refuse_empty: true) }, ArgumentError, /invalid option refuse_empty: is for publishing a dataset \(its history and gates\), and this builds one store \(give shards for a dataset\)/],
      ["a diff of a generation the dataset does not keep", -> { Hashfile.build_sharded(path("dg"), { "a" => 1 }, shards: 1) && Hashfile.diff(path("dg"), path("dg"), generation_a: "20200101T000000Z-00000000") }, Hashfile::DatasetError, /generation 20200101T000000Z-00000000 is not kept here/],
      ["a rollback to a generation whose shard is gone", -> { rollback_with_a_shard_gone }, Hashfile::DatasetError, /shard 0 of 1 \(.*-00000-of-00001.hf\) of dataset .*hashfile-dataset\..*\.json: missing/],
      "Patches", # a heading in docs/ERRORS.md
      ["a patch of a directory without a dataset", -> { FileUtils.mkdir_p(path("empty")) && Hashfile.patch(path("empty"), { "a" => 1 }) }, Hashfile::DatasetError, /no dataset here: .*empty has no hashfile-dataset.json \(build the dataset first\)/],
      ["a patch of a store file", -> { Hashfile.patch(path("good.hf").tap { good_store }, { "a" => 1 }) }, Hashfile::DatasetError, /good.hf: a store, not a dataset: a patch changes a dataset's shards \(build one with shards:\); a store is rebuilt/],
      ["a patch of a URL", -> { Hashfile.patch("https://cdn.example.com/ds/", { "a" => 1 }) }, ArgumentError, %r{patch writes a local dataset's directory, and https://cdn.example.com/ds/ is a URL}],
      ["a delete of a key the dataset does not hold", -> { dataset("pd") && Hashfile.patch(path("pd"), nil, delete: ["nope"]) }, ArgumentError, /delete of key "nope", which the dataset does not hold \(on_missing "ignore" drops such deletes\)/],
      ["a change with a value and a delete", -> { dataset("pv") && Hashfile.patch(path("pv"), input("c.jsonl", %({"key": "k1", "value": 1, "delete": true}\n))) }, Hashfile::ParseError, /c.jsonl: line 1: key "k1" has both a value and "delete": true: give one/],
      ["a key changed twice", -> { dataset("p2") && Hashfile.patch(path("p2"), input("t.jsonl", %({"key": "k1", "value": 1}\n{"key": "k1", "value": 2}\n))) }, Hashfile::DuplicateKeyError, /duplicate key "k1".*t.jsonl: line 1.*t.jsonl: line 2/m],
      ["a manifest of version 2 listing overlays", -> { patched_dataset("p3") { |m| m.sub('"hashfile_dataset": 3', '"hashfile_dataset": 2') } }, Hashfile::DatasetError, /overlays came with manifest version 3, and this is version 2/],
      ["a shard's live count larger than its files hold", -> { patched_dataset("p4") { |m| m.sub(/"live": (\d+)/) { %("live": #{::Regexp.last_match(1).to_i + 1000}) }.sub(/"entries": (\d+),\n  "shards"/) { %("entries": #{::Regexp.last_match(1).to_i + 1000},\n  "shards") } } }, Hashfile::DatasetError, /\d+ live entries, more than its base and overlays hold \(\d+\)/],
      ["compact_overlays: 0", -> { dataset("p5") && Hashfile.patch(path("p5"), { "a" => 1 }, compact_overlays: 0) }, ArgumentError, /invalid option compact_overlays: must be an integer from 1 to 64, not 0/],
      "CLI arguments", # a heading in docs/ERRORS.md
      ["an unknown command", -> { cli("frobnicate") }, 2, /unknown command "frobnicate"\nRun 'hashfile --help' for usage./],
      ["build without -o", -> { cli("build", "x.json") }, 2, /build needs -o OUT \(or --check\)/],
      ["an output that is an input", -> { cli("build", input("same.json", "{}"), "-o", path("same.json")) }, 2, /is the input .*; write the store elsewhere, or pass --force/],
      ["an unknown --format", -> { cli("build", "--format", "xml", "x.json", "-o", "y") }, 2, /invalid option --format: "xml" is no format; one of: json, json-pairs, jsonl, csv, tsv, msgpack, yaml, lines/],
      ["an option named by a prefix", -> { cli("build", "--key", "a", "x.csv", "-o", "y") }, 2, /invalid option: --key \(did you mean --key-column, --key-field, --keys-per-bucket, --keys-per-part\?\)/],
      ["--key-field on CSV", -> { cli("build", input("q.csv", "name,price\napple,1\n"), "--key-field", "name", "-o", path) }, 2, /invalid option --key-field: applies to json, json-pairs and jsonl inputs, and .*q.csv is read as csv, which would ignore it; for csv give --key-column/],
      ["a --memory that is not a size", -> { cli("build", input("m.json", "{}"), "--memory", "2X", "-o", path) }, 2, /invalid option --memory: "2X" is not a size/],
      ["an unknown --compression", -> { cli("build", input("z.json", "{}"), "--compression", "gzip", "-o", path) }, 2, /invalid option --compression: "gzip" is not a compression; one of none, zstd, zstd:LEVEL/],
      ["--threads out of range", -> { cli("build", input("t2.json", "{}"), "--threads", "0", "-o", path) }, 2, /invalid option --threads: must be from 1 to \d+/],
      ["a key in two locale files", -> { cli("build", input("a.yml", "en:\n  a: 1\n"), input("b.yml", "en:\n  a: 2\n"), "-o", path) }, 1, /duplicate key "en" \(.*a.yml: line 1, column 1 and .*b.yml: line 1, column 1\)\nTo keep one of them, give --on-duplicate first or last; --merge deep merges nested keys/],
      ["a value past --max-value-size", -> { cli("get", big_value_store, "text", "--max-value-size", "10000") }, 1, /the value of key "text" decodes to 40000 bytes, over max_value_size \(10000 bytes\); open the store with a larger max_value_size to read it/],
      ["a missing input", -> { cli("build", path("nope.json"), "-o", path) }, 1, /No such file or directory - .*nope.json/],
      ["dump of what JSON cannot hold", -> { Hashfile.build(path("bin.hf"), { "\xFF".b => "x" }); cli("dump", path("bin.hf")) }, 1, /key "\\xFF" has bytes that are not UTF-8, which JSON cannot hold; use --format tsv/],
    ]
  end

  # A dataset of 100 entries in 2 shards at NAME, its manifest changed by
  # the block, shard +remove+ deleted, or shard +rebuild+ built again with
  # other values (a shard of another generation under the same name);
  # then opened.
  def dataset(name, remove: nil, rebuild: nil)
    dir = path(name)
    Hashfile.build_sharded(dir, (0...100).to_h { |i| ["k#{i}", "v#{i}"] }, shards: 2)
    manifest = File.join(dir, "hashfile-dataset.json")
    File.write(manifest, yield(File.read(manifest))) if block_given?
    shards = JSON.parse(File.read(manifest))["shards"].map { |s| File.join(dir, s["file"]) } if remove || rebuild
    File.delete(shards[remove]) if remove
    if rebuild
      data = Hashfile.open(shards[rebuild], &:to_h)
      Hashfile.build(shards[rebuild], data.transform_values { |v| v.tr("v", "w") })
    end
    Hashfile.open(dir)
  end

  # A dataset patched once (an overlay on each shard it touched), its
  # manifest then given to the block to edit.
  def patched_dataset(name)
    dir = path(name)
    Hashfile.build_sharded(dir, (0...100).to_h { |i| ["k#{i}", "v#{i}"] }, shards: 2)
    Hashfile.patch(dir, { "k1" => "changed", "k2" => "changed" })
    manifest = File.join(dir, "hashfile-dataset.json")
    File.write(manifest, yield(File.read(manifest)))
    Hashfile.open(dir)
  end

  # A dataset put together by hand: shard 0 holds a key that routes to
  # shard 1, and its manifest is right about every shard.
  def stray_key_dataset
    dir = path("stray")
    Hashfile.build_sharded(dir, (0...100).to_h { |i| ["k#{i}", "v#{i}"] }, shards: 2)
    manifest_path = File.join(dir, "hashfile-dataset.json")
    manifest = JSON.parse(File.read(manifest_path))
    shard0 = File.join(dir, manifest["shards"][0]["file"])
    stray = (0..).lazy.map { |i| "stray-#{i}" }.find { |k| Hashfile.shard_of(k, 2) == 1 }
    Hashfile.build(shard0, Hashfile.open(shard0, &:to_h).merge(stray => "lost"))
    checksum = File.binread(shard0, 8, header_len(shard0) - 8).unpack1("Q<")
    manifest["shards"][0].merge!("entries" => Hashfile.open(shard0, &:size), "bytes" => File.size(shard0), "checksum" => format("%016x", checksum))
    manifest["entries"] = manifest["shards"].sum { |s| s["entries"] }
    File.write(manifest_path, JSON.generate(manifest))
    Hashfile.open(dir)
  end

  # A store's header length (docs/FORMAT.md: bytes 12..16).
  def header_len(store)
    File.binread(store, 4, 12).unpack1("L<")
  end

  # A dataset of two publishes whose first generation lost its shard, rolled back to.
  def rollback_with_a_shard_gone
    2.times { |i| Hashfile.build_sharded(path("rg"), { "a" => i }, shards: 1) }
    first = Hashfile.history(path("rg")).last[:generation]
    File.delete(path("rg/#{first}-00000-of-00001.hf"))
    Hashfile.rollback(path("rg"), first)
  end

  def test_every_bad_input_names_what_to_do
    # About messages, not object lifetimes; minutes with a GC on every
    # allocation.
    skip "not run under GC.stress" if ENV["HASHFILE_GC_STRESS"] == "1"
    entries = catalogue
    # Only root can plant a link owned by another user.
    unless Process.euid.zero?
      skip_part_or_fail("HASHFILE_REQUIRE_ROOT", "the rows marked (as root) need root")
      entries.reject! { |what, *| what.is_a?(String) && what.end_with?("(as root)") }
    end
    assert_operator entries.count { |e| e.is_a?(Array) }, :>=, 70
    rows = entries.map do |entry|
      next "| **#{entry}** | | |" if entry.is_a?(String)

      what, how, expected, message = entry
      if expected.is_a?(Integer)
        result = how.call
        assert_equal expected, result.status, what
        assert_match message, result.message, what
        shown = [what, "exit #{expected}", result.message.lines.first.chomp]
      else
        e = assert_raises(expected, what) { how.call }
        assert_match message, e.message, what
        shown = [what, expected.name, e.message.lines.first.chomp]
      end
      "| #{shown.map { |s| s.gsub(tmpdir + "/", "").gsub(/0x\h{16}/, "0x...").gsub(/\d{8}T\d{6}Z-\h{8}/, "GENERATION").gsub("|", "\\|") }.join(" | ")} |"
    end
    doc_path = File.expand_path("../docs/ERRORS.md", __dir__)
    doc = File.read(doc_path)
    table = "<!-- catalogue: written by test/bad_input_catalogue_test.rb -->\n| input | raises | message |\n| --- | --- | --- |\n#{rows.join("\n")}\n<!-- /catalogue -->"
    if ENV["WRITE_ERRORS_DOC"] == "1"
      File.write(doc_path, doc.sub(/<!-- catalogue.*<!-- \/catalogue -->/m, table))
    else
      listed = doc[/<!-- catalogue.*<!-- \/catalogue -->/m].to_s
      entries.grep(Array).each { |what, *| assert_includes listed, "| #{what} |", "docs/ERRORS.md does not list #{what} (WRITE_ERRORS_DOC=1 rewrites it)" }
    end
  end

  private

  def flip_last_record_byte(bytes)
    bytes.byteslice(84, 4).unpack1("V").times do |k|
      id, _flags, offset, length = bytes.byteslice(128 + 32 * k, 24).unpack("VVQ<Q<")
      bytes.setbyte(offset + length - 1, bytes.getbyte(offset + length - 1) ^ 0x20) if id == 5
    end
  end

  def planted_link
    File.symlink(path("victim.hf"), path("planted.hf")) unless File.symlink?(path("planted.hf"))
    File.lchown(65_534, 65_534, path("planted.hf"))
    Hashfile.build(path("planted.hf"), { "a" => 1 })
  end

  def truncated_while_open
    Hashfile.build(path("big.hf"), (1..50_000).to_h { |i| ["k#{i}", "v#{i}" * 4] })
    Hashfile.open(path("big.hf")) do |db|
      File.truncate(path("big.hf"), 4096)
      db.each { nil }
    end
  end

  def alias_bomb
    lines = ["a0: &a0 [#{(["x" * 1000] * 10).join(", ")}]"]
    (1..9).each { |i| lines << "a#{i}: &a#{i} [#{(["*a#{i - 1}"] * 10).join(", ")}]" }
    lines.join("\n") + "\n"
  end

  def deep_array(depth)
    (1...depth).reduce([1]) { |inner, _| [inner] }
  end
end
