"""Python reads exactly what was stored, or refuses: Hash keys distinct in
Ruby but equal in Python are an error naming them, never a silent merge;
container bodies are checked as strictly as Ruby checks them; and `dig`
compares keys as Ruby's `Hash#dig` does, so both languages answer alike.
Stores with colliding keys are written by Ruby, as only Ruby can; crafted
bodies are resealed (tests/crafted.py) so that no checksum gives them away.
"""

from __future__ import annotations

import http.server
import json
import pathlib
import threading

import pytest

import hashfile
from conftest import ROOT, ruby
from crafted import replace_once, reseal
from hashfile.errors import FormatError, UnsupportedError


@pytest.fixture
def colliding(tmp_path):
    """A store Ruby wrote whose maps hold keys Python's == merges."""
    path = str(tmp_path / "colliding.hf")
    ruby(
        """
        Hashfile.build(ARGV[0], {
          "prices" => { 1 => "int", 1.0 => "float", true => "true" },
          "zero" => { 0 => "int", false => "false" },
          "names" => { "a" => "string", :a => "symbol" },
          "nested" => { "list" => [{ 2 => "int", 2.0 => "float" }] },
          "tuples" => { [1] => "int", [true] => "true" },
          "distinct" => { 2 => "int", 2.5 => "float", true => "true", :sym => "symbol", "str" => "string" },
        })
        """,
        path,
    )
    return path


@pytest.mark.parametrize(
    "key, keys",
    [
        ("prices", "1, 1.0 and true"),
        ("zero", "0 and false"),
        ("names", '"a" and :a'),
        ("nested", "2 and 2.0"),
        ("tuples", "an Array of 1 and an Array of 1"),
    ],
)
def test_keys_equal_in_python_are_an_error_naming_them(colliding, key, keys):
    with hashfile.open(colliding) as db:
        for read in (lambda: db[key], lambda: db.get(key), lambda: db.get_many([key])):
            with pytest.raises(UnsupportedError) as raised:
                read()
            assert f"a map holds keys {keys}, distinct as stored but one key in Python" in str(raised.value)
        # An UnsupportedError is a FormatError: "this value cannot be read".
        with pytest.raises(FormatError):
            db[key]


def test_a_map_without_colliding_keys_reads_whole(colliding):
    with hashfile.open(colliding) as db:
        with pytest.raises(UnsupportedError, match="keys 1, 1.0 and true"):
            dict(db.items())  # "prices" comes first
        assert db["distinct"] == {2: "int", 2.5: "float", True: "true", "sym": "symbol", "str": "string"}


# Maps of each kind of key, and probes of each kind: Python's dig answers
# what Ruby's does, probe for probe.
DIG_STORE = """
Hashfile.build(ARGV[0], {
  "ints" => { 1 => "one", 0 => "zero", -5 => "minus five" },
  "floats" => { 1.0 => "one", 2.5 => "two and a half", -0.0 => "minus zero" },
  "bools" => { true => "yes", false => "no" },
  "symbols" => { a: "symbol a" },
  "strings" => { "a" => "string a", "1" => "string 1" },
  "mixed" => { 1 => "int", 1.0 => "float", true => "true", 0 => "zero", false => "false", :s => "symbol", "t" => "string" },
  "list" => ["first", "second"],
  "deep" => { "prices" => { 1 => { 2.5 => [10, 20] } } },
})
"""

MAPS = ["ints", "floats", "bools", "symbols", "strings", "mixed"]
PROBES = [1, 0, -5, 2, 1.0, 2.5, 0.0, -0.0, float("nan"), True, False]


def test_dig_with_numbers_and_booleans_answers_as_ruby(tmp_path):
    path = str(tmp_path / "dig.hf")
    ruby(DIG_STORE, path)
    probes = json.dumps(PROBES, allow_nan=True)
    answers = json.loads(
        ruby(
            """
            db = Hashfile.open(ARGV[0])
            probes = JSON.parse(ARGV[1], allow_nan: true)
            puts JSON.generate(ARGV[2..].to_h { |map| [map, probes.map { |p| db.dig(map, p) }] })
            """,
            path,
            probes,
            *MAPS,
        )
    )
    with hashfile.open(path) as db:
        for name in MAPS:
            here = [db.dig(name, p) for p in PROBES]
            assert here == answers[name], name
        # The answers, spelled out for the map that holds every kind.
        assert [db.dig("mixed", p) for p in [1, 1.0, True, 0, False, 0.0, 2]] == [
            "int", "float", "true", "zero", "false", None, None,
        ]
        # Paths mix kinds; a missing step gives the default.
        assert db.dig("deep", "prices", 1, 2.5, 1) == 20
        assert db.dig("deep", "prices", 1.0, default="none") == "none"
        assert db.dig("deep", "prices", True) is None
        assert db.dig("list", 1) == "second"
        assert db.dig("list", True, default="none") == "none"  # no bool index, as in Ruby
        assert db.dig("floats", float("nan")) is None


def test_dig_with_a_str_finds_a_string_or_a_symbol_key(tmp_path, colliding):
    path = str(tmp_path / "dig.hf")
    ruby(DIG_STORE, path)
    with hashfile.open(path) as db:
        assert db.dig("symbols", "a") == "symbol a"
        assert db.dig("strings", "a") == "string a"
        assert db.dig("strings", 1) is None  # "1" is a String, not 1
        assert db.dig("mixed", "s") == "symbol"
        assert db.dig("mixed", "t") == "string"
    with hashfile.open(colliding) as db:
        # Each of the keys that collide in a dict is reached by its kind.
        assert [db.dig("prices", p) for p in (1, 1.0, True)] == ["int", "float", "true"]
        assert [db.dig("zero", p) for p in (0, False)] == ["int", "false"]
        assert db.dig("nested", "list", 0, 2.0) == "float"
        # A String and a Symbol of one name: a str cannot tell them apart.
        with pytest.raises(UnsupportedError, match='a map holds keys "a" and :a'):
            db.dig("names", "a")
        # Ending on a map that collides is reading it: refused.
        with pytest.raises(UnsupportedError, match="keys 1, 1.0 and true"):
            db.dig("prices")


def _store_with(tmp_path, value) -> bytes:
    path = tmp_path / "good.hf"
    hashfile.build(path, {"user": value})
    return path.read_bytes()


# (what, the value built, its bytes, the crafted bytes, the message)
CRAFTED = [
    (
        "a map count smaller than its items (a hidden pair)",
        {"name": "ann", "role": "admin"},
        b"\x82\x14\xa4name\xa3ann",
        b"\x81\x14\xa4name\xa3ann",
        "container body longer than its items",
    ),
    (
        "a map count larger than its items",
        {"name": "ann", "role": "admin"},
        b"\x82\x14\xa4name\xa3ann",
        b"\x83\x14\xa4name\xa3ann",
        "unexpected end",
    ),
    (
        "an array count smaller than its items",
        ["ann", "admin"],
        b"\x92\x0a\xa3ann",
        b"\x91\x0a\xa3ann",
        "container body longer than its items",
    ),
    (
        "a nested map count smaller than its items",
        [{"name": "ann", "role": "admin"}],
        b"\x91\x16\x82\x14\xa4name",
        b"\x91\x16\x81\x14\xa4name",
        "container body longer than its items",
    ),
    (
        "bytes after the value",
        [1, 2],
        b"\x92\x02\x01\x02",
        b"\x91\x01\x01\x02",
        "trailing bytes",
    ),
]


@pytest.mark.parametrize("what, value, old, new, message", CRAFTED, ids=[c[0] for c in CRAFTED])
def test_a_crafted_body_is_refused_here_and_in_ruby(tmp_path, what, value, old, new, message):
    good = _store_with(tmp_path, value)
    assert reseal(good) == good  # the reseal writes the checksums a build does
    path = tmp_path / "crafted.hf"
    path.write_bytes(replace_once(good, old, new))
    with hashfile.open(path) as db:
        for read in (lambda: db["user"], lambda: dict(db.items()), lambda: db.dig("user")):
            with pytest.raises(FormatError, match=message) as raised:
                read()
            assert type(raised.value) is FormatError, what
        # The checksums match: verify finds the body by decoding it.
        with pytest.raises(FormatError, match=message) as raised:
            db.verify()
        assert type(raised.value) is FormatError
    # Ruby refuses the same bytes, with the same words.
    refused = ruby(
        """
        db = Hashfile.open(ARGV[0])
        begin
          db["user"]
          puts "read"
        rescue Hashfile::FormatError => e
          puts e.message
        end
        """,
        str(path),
    )
    assert message in refused, refused


def test_dig_refuses_a_hidden_pair_where_it_passes_it(tmp_path):
    good = _store_with(tmp_path, {"name": "ann", "role": "admin"})
    path = tmp_path / "crafted.hf"
    path.write_bytes(replace_once(good, b"\x82\x14\xa4name", b"\x81\x14\xa4name"))
    with hashfile.open(path) as db:
        for probe in ("role", "name"):
            with pytest.raises(FormatError, match="container body longer than its items"):
                db.dig("user", probe)
    answer = ruby(
        """
        db = Hashfile.open(ARGV[0])
        begin
          p db.dig("user", "role")
        rescue Hashfile::FormatError => e
          puts e.message
        end
        """,
        str(path),
    )
    assert "container body longer than its items" in answer


def test_a_symbol_name_invalid_in_its_encoding_is_refused_here_and_in_ruby(tmp_path):
    path = tmp_path / "sym.hf"
    ruby('Hashfile.build(ARGV[0], { "user" => { role: :admin } })', str(path))
    crafted = tmp_path / "crafted.hf"
    crafted.write_bytes(replace_once(path.read_bytes(), b"\xcb\xa5admin", b"\xcb\xa5ad\xffin"))
    with hashfile.open(crafted) as db:
        with pytest.raises(FormatError, match="a symbol name is not valid in its encoding"):
            db["user"]
    refused = ruby(
        """
        begin
          Hashfile.open(ARGV[0])["user"]
          puts "read"
        rescue Hashfile::FormatError => e
          puts e.message
        end
        """,
        str(crafted),
    )
    assert "a symbol name is not valid in its encoding" in refused, refused


def test_dig_walks_compressed_items_in_place(colliding):
    # crates/hashfile/tests/vectors.rs, compressed_items_tree: 24 sections
    # of 40 entries {"text" => ..., "n" => i}, then 600 names.
    with hashfile.open(ROOT / "crates/hashfile/tests/vectors/compressed-items.hf") as db:
        tree = db["tree"]
        assert db.dig("tree", "s3", "e5", "n") == 125
        assert db.dig("tree", "s3", "e5") == tree["s3"]["e5"]
        assert db.dig("tree", "names", -1) == f"name {599 % 37}"
        assert db.dig("tree", "s3", 5) is None  # an int finds no String key
        assert db.dig("tree", "s99", default="none") == "none"


class _RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves one file's bytes with Range requests, as object storage does."""

    body = b""

    def do_GET(self):  # noqa: N802
        body = type(self).body
        first, last = 0, len(body) - 1
        wanted = self.headers.get("Range")
        if wanted:
            start, _, end = wanted.removeprefix("bytes=").partition("-")
            first, last = int(start), min(int(end) if end else last, last)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {first}-{last}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(last - first + 1))
        self.send_header("ETag", '"fixed"')
        self.end_headers()
        self.wfile.write(body[first : last + 1])

    def log_message(self, *args):
        pass


def test_dig_answers_the_same_from_a_remote_store(colliding):
    _RangeHandler.body = pathlib.Path(colliding).read_bytes()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RangeHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with hashfile.open(f"http://127.0.0.1:{server.server_port}/colliding.hf") as db:
            assert [db.dig("prices", p) for p in (1, 1.0, True, 2)] == ["int", "float", "true", None]
            with pytest.raises(UnsupportedError, match='a map holds keys "a" and :a'):
                db.dig("names", "a")
            with pytest.raises(UnsupportedError, match="keys 0 and false"):
                db["zero"]
    finally:
        server.shutdown()
        server.server_close()


def test_a_key_stored_twice_is_one_key_with_its_last_value_as_in_ruby(tmp_path):
    # A JSON object may repeat a key; the store keeps both pairs, and Ruby's
    # Hash reads them as one key in its first place with the last value.
    # That is no collision: the keys are one key as stored too.
    source = tmp_path / "dup.json"
    source.write_text('{"k": {"a": 1, "b": 2, "a": 3}}')
    hashfile.build_from(source, tmp_path / "dup.hf")
    with hashfile.open(tmp_path / "dup.hf") as db:
        assert list(db["k"].items()) == [("a", 3), ("b", 2)]
        assert db.dig("k", "a") == 3
