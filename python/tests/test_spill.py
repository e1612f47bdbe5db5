"""memory= (docs/PYTHON.md, "Big builds"): a build over the limit builds
its index from temporary files into the bytes of an unlimited build; bad
limits are refused."""

from __future__ import annotations

import pytest

import hashfile

# 16 MiB, the least limit, holds the index data of about 520,000 keys.
SPILLED = 700_000


def write_jsonl(path, lines=SPILLED):
    with open(path, "w") as f:
        for i in range(lines):
            f.write(f'{{"key":"user:{i}","value":"v{i * 7}"}}\n')
    return path


def test_a_build_over_the_limit_spills_into_the_same_bytes(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl")
    spilled = hashfile.build_from(source, tmp_path / "spilled.hf", memory="16M")
    whole = hashfile.build_from(source, tmp_path / "whole.hf", memory=64 << 30)
    assert spilled["entries"] == SPILLED
    assert spilled["spilled"]["groups"] > 1
    assert spilled["spilled"]["temporary_bytes"] >= SPILLED * 16
    assert "spilled" not in whole
    assert (tmp_path / "spilled.hf").read_bytes() == (tmp_path / "whole.hf").read_bytes()
    with hashfile.open(tmp_path / "spilled.hf") as db:
        assert db["user:123456"] == f"v{123456 * 7}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "spilled.hf", "whole.hf"]


def test_a_compressed_build_spills_into_the_same_bytes(tmp_path):
    source = tmp_path / "in.jsonl"
    with open(source, "w") as f:
        for i in range(SPILLED):
            f.write(f'{{"key":"k{i}","value":"v{i}: a steel kettle, in blue or oak"}}\n')
    spilled = hashfile.build_from(source, tmp_path / "spilled.hf", memory="16M", compression="zstd")
    hashfile.build_from(source, tmp_path / "whole.hf", compression="zstd")
    assert spilled["spilled"]["groups"] > 1
    assert (tmp_path / "spilled.hf").read_bytes() == (tmp_path / "whole.hf").read_bytes()
    with hashfile.open(tmp_path / "spilled.hf") as db:
        assert db.info()["compression"]["values"] > 0
        assert db["k77"] == "v77: a steel kettle, in blue or oak"


def test_a_compact_index_spills_into_the_same_bytes(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl")
    spilled = hashfile.build_from(source, tmp_path / "spilled.hf", memory="16M", index="compact")
    hashfile.build_from(source, tmp_path / "whole.hf", index="compact")
    assert spilled["spilled"]["groups"] > 1
    assert (tmp_path / "spilled.hf").read_bytes() == (tmp_path / "whole.hf").read_bytes()
    with hashfile.open(tmp_path / "spilled.hf") as db:
        assert db.info()["index"] == "compact"
        assert db["user:4242"] == f"v{4242 * 7}"


def test_on_duplicate_merge_spills_into_the_same_bytes(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl")
    with open(source, "a") as f:
        f.write('{"key":"user:42","value":{"en":{"hello":"hi"}}}\n')
        f.write('{"key":"user:42","value":{"en":{"bye":"ciao"},"de":{"hello":"hallo"}}}\n')
        f.write('{"key":"user:7","value":null}\n')
    spilled = hashfile.build_from(source, tmp_path / "spilled.hf", memory="16M", on_duplicate="merge")
    hashfile.build_from(source, tmp_path / "whole.hf", on_duplicate="merge")
    assert spilled["spilled"]["groups"] > 1
    assert spilled["entries"] == SPILLED
    assert (tmp_path / "spilled.hf").read_bytes() == (tmp_path / "whole.hf").read_bytes()
    with hashfile.open(tmp_path / "spilled.hf") as db:
        assert db["user:42"] == {"en": {"hello": "hi", "bye": "ciao"}, "de": {"hello": "hallo"}}
        assert db["user:7"] == "v49"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "spilled.hf", "whole.hf"]


@pytest.mark.parametrize(
    ("memory", "error", "message"),
    [
        ("lots", ValueError, r'"lots" is not a size'),
        (1000, ValueError, r"1000 bytes is below the least a build can work in, 16 MiB"),
        (-1, ValueError, r"invalid option memory: must be a size in bytes \(an integer, or text such as \"64M\" or \"auto\"\), not -1"),
        (1.5, TypeError, r"float"),
    ],
)
def test_bad_limits_are_refused(tmp_path, memory, error, message):
    with pytest.raises(error, match=message):
        hashfile.build(tmp_path / "out.hf", {"k": "v"}, memory=memory)
    assert not (tmp_path / "out.hf").exists()
