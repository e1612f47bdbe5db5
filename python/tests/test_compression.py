"""Compressed values (docs/PYTHON.md, "Compressed values"): built here,
read back every way; the Rust core's compressed vector read through this
binding; a store built here read by Ruby; bad options refused."""

from __future__ import annotations

import json
import random

import pytest

import hashfile
from conftest import ROOT, ruby

WORDS = ["lamp", "garden", "steel", "blue", "kettle", "oak", "travel", "set"]


def vector_value(i: int) -> str:
    """Entry i of crates/hashfile/tests/vectors/compressed.hf
    (`compressed_vector_value` in vectors.rs)."""
    if i % 10 == 0:
        return f"v{i}"
    w = [WORDS[(i * 3 + k * 5) % 8] for k in range(1, 5)]
    return f"item {i}: a {w[0]} {w[1]} for every {w[2]} and {w[3]}, sku {i:05}."


def test_the_compressed_vector_reads_here():
    with hashfile.open(ROOT / "crates/hashfile/tests/vectors/compressed.hf") as db:
        assert len(db) == 300
        assert all(db[f"item-{i}"] == vector_value(i) for i in range(300))
        assert db.get_many(["item-7", "absent"]) == [vector_value(7), None]
        assert list(db.values()) == [vector_value(i) for i in range(300)]
        info = db.info()["compression"]
        assert info["codec"] == "zstd" and info["level"] == 3 and info["values"] == 270
        assert db.verify()


def test_the_two_level_vector_reads_here():
    long = [" ".join(vector_value(i * 12 + k) for k in range(12)) for i in range(20)]
    with hashfile.open(ROOT / "crates/hashfile/tests/vectors/compressed-levels.hf") as db:
        assert len(db) == 120
        assert all(db[f"long-{i}"] == long[i] for i in range(20))
        assert all(db[f"item-{i}"] == vector_value(i) for i in range(100))
        info = db.info()["compression"]
        assert (info["level"], info["long_level"], info["auto"], info["values"]) == (3, 9, False, 110)
        assert db.verify()


def test_auto_compresses_what_pays(tmp_path):
    data = catalogue(2000)
    hashfile.build(tmp_path / "auto.hf", data, compression="auto")
    with hashfile.open(tmp_path / "auto.hf") as db:
        info = db.info()["compression"]
        assert (info["codec"], info["auto"], info["level"], info["long_level"]) == ("zstd", True, 3, 9)
        assert dict(db.items()) == data
    rng = random.Random(5)
    blobs = {f"blob:{i}": rng.randbytes(100) for i in range(2000)}
    hashfile.build(tmp_path / "blobs.hf", blobs, compression="auto")
    with hashfile.open(tmp_path / "blobs.hf") as db:
        info = db.info()["compression"]
        assert (info["codec"], info["auto"], info["values"]) == ("none", True, 0)
        assert db["blob:7"] == blobs["blob:7"]


def catalogue(n: int) -> dict[str, object]:
    out: dict[str, object] = {}
    for i in range(n):
        w = [WORDS[(i * 7 + k * 13) % 8] for k in range(6)]
        text = f"A {w[0]} {w[1]} for every {w[2]} and {w[3]}, in {w[4]} and {w[5]}: sku {i}."
        out[f"product:{i}"] = {"sku": i, "text": text, "tags": w[:3]} if i % 3 == 0 else text
    return out


def test_values_built_here_read_back_and_take_less_room(tmp_path):
    data = catalogue(2000)
    hashfile.build(tmp_path / "raw.hf", data)
    written = hashfile.build(tmp_path / "z.hf", data, compression="zstd:6")
    assert written * 2 < (tmp_path / "raw.hf").stat().st_size
    with hashfile.open(tmp_path / "z.hf") as db:
        assert dict(db.items()) == data
        assert db.get_many(["product:3", "product:4"]) == [data["product:3"], data["product:4"]]
        assert db.info()["compression"]["level"] == 6
        assert db.info()["compression"]["ratio"] > 2
        assert db.verify()
    with hashfile.open(tmp_path / "raw.hf") as db:
        assert "compression" not in db.info()
    # Ruby reads what Python compressed.
    entries = json.loads(ruby("puts JSON.generate(Hashfile.open(ARGV[0]).to_h)", str(tmp_path / "z.hf")))
    assert entries == data


@pytest.mark.parametrize(
    "given, message",
    [("lz4", "is not a compression"), ("zstd:0", "from 1 to 22"), ("zstd:x", "from 1 to 22")],
)
def test_a_bad_compression_is_a_value_error(tmp_path, given, message):
    with pytest.raises(ValueError, match=message):
        hashfile.build(tmp_path / "bad.hf", {"a": "b"}, compression=given)
    assert not (tmp_path / "bad.hf").exists()
