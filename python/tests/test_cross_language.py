"""The same stores from Ruby and Python: the routing vectors both check, a
store built by the Ruby gem read here, and one built here read by Ruby."""

from __future__ import annotations

import json

import hashfile
from conftest import ROOT, ruby

VECTORS = ROOT / "crates/hashfile/tests/vectors/routing.tsv"


def test_keys_route_as_the_checked_in_vectors_pin():
    header, *rows = VECTORS.read_text().splitlines()
    counts = [int(n) for n in header.split("\t")[1:]]
    assert len(rows) >= 30
    for row in rows:
        hex_key, *shards = row.split("\t")
        key = bytes.fromhex(hex_key)
        for n, shard in zip(counts, shards, strict=True):
            assert hashfile.shard_of(key, n) == int(shard), (hex_key, n)
    assert hashfile.shard_of("tenant:42", 16) == hashfile.shard_of(b"tenant:42", 16) == 13


def test_a_store_built_by_ruby_reads_the_same_here(tmp_path):
    path = str(tmp_path / "ruby.hf")
    ruby(
        """
        Hashfile.build(ARGV[0], {
          "s" => "text", "b" => "\\xff\\x00".b, "i" => 2**80, "f" => 1.5, "t" => true, "n" => nil,
          "a" => [1, [2, "x"]], "h" => { "k" => { "deep" => -3 }, sym: :value }, "u" => "ü"
        })
        """,
        path,
    )
    with hashfile.open(path) as db:
        assert dict(db.items()) == {
            "s": "text",
            "b": b"\xff\x00",
            "i": 2**80,
            "f": 1.5,
            "t": True,
            "n": None,
            "a": [1, [2, "x"]],
            "h": {"k": {"deep": -3}, "sym": "value"},
            "u": "ü",
        }


def test_a_store_built_here_reads_the_same_from_ruby(tmp_path, ruby_json):
    data = {"s": "text", "i": -(2**90), "f": 0.25, "l": [None, False, {"x": [1]}], "u": "✓"}
    path = str(tmp_path / "py.hf")
    hashfile.build(path, data)
    assert ruby_json(path) == [[k, v] for k, v in data.items()]
    # And a dataset: Ruby reads every shard.
    hashfile.build(tmp_path / "ds", data, shards=3)
    entries = json.loads(ruby("puts JSON.generate(Hashfile.open(ARGV[0]).to_h)", str(tmp_path / "ds")))
    assert entries == data


def test_a_store_with_the_compact_index_reads_here():
    """The Rust core's compact-index vector (docs/FORMAT.md, "The compact
    index"), read through this binding."""
    path = str(ROOT / "crates/hashfile/tests/vectors/compact-parts.hf")
    with hashfile.open(path) as db:
        assert len(db) == 1000
        # The vector's values are binary records: bytes here.
        assert all(db[f"key-{i}"] == f"value-{i}".encode() for i in range(1000))
        assert "key-1000" not in db
        assert db.get_many(["key-7", "absent"]) == [b"value-7", None]
        assert sum(1 for _ in db) == 1000
        assert db.verify()
