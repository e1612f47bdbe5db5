"""Delta generations from Python: ``hashfile.patch`` and ``hashfile.compact``
(the behaviour is the runtime's; test/patch_test.rb and the Rust tests
check it at length, test_conformance.py runs the shared cases)."""

import json

import pytest

import hashfile


def test_a_patch_puts_and_deletes_over_the_same_shards(tmp_path):
    ds = tmp_path / "stock"
    hashfile.build(ds, {f"sku-{i}": i for i in range(100)}, shards=4)
    before = json.loads((ds / "hashfile-dataset.json").read_text())
    changes: dict[str | bytes, object] = {"sku-1": "one", b"raw": {"n": [1]}}
    done = hashfile.patch(ds, changes, delete="sku-2")
    assert (done["added"], done["changed"], done["deleted"], done["published"]) == (1, 1, 1, True)
    after = json.loads((ds / "hashfile-dataset.json").read_text())
    assert after["hashfile_dataset"] == 3
    assert [s["file"] for s in before["shards"]] == [s["file"] for s in after["shards"]]
    with hashfile.open(ds) as db:
        assert (db["sku-1"], db[b"raw"], "sku-2" in db, len(db)) == ("one", {"n": [1]}, False, 100)
        assert len(list(db.keys())) == 100
    assert hashfile.compact(ds)["shards_compacted"] == done["overlays_written"]
    assert json.loads((ds / "hashfile-dataset.json").read_text())["hashfile_dataset"] == 2


def test_a_changes_file_and_its_errors_name_the_line(tmp_path):
    ds = tmp_path / "ds"
    hashfile.build(ds, {"a": 1, "b": 2}, shards=2)
    changes = tmp_path / "changes.jsonl"
    changes.write_text('\ufeff{"key": "a", "value": [1, 2]}\n\n{"key": "b", "delete": true}\n')
    assert hashfile.patch(ds, changes)["deleted"] == 1
    assert hashfile.open(ds)["a"] == [1, 2]
    changes.write_text('{"key": "a", "value": 1}\n["a", 2]\n')
    with pytest.raises(hashfile.ParseError, match="line 2"):
        hashfile.patch(ds, changes)
    changes.write_text('{"key": "a", "value": 1}\n{"key": "a", "value": 2}\n')
    with pytest.raises(hashfile.DuplicateKeyError, match="line 1"):
        hashfile.patch(ds, changes)
    with pytest.raises(TypeError, match="delete is for changes given as a mapping"):
        hashfile.patch(ds, changes, delete=["a"])
    with pytest.raises(TypeError, match="patch needs changes"):
        hashfile.patch(ds)


def test_nothing_to_change_publishes_nothing(tmp_path):
    ds = tmp_path / "ds"
    hashfile.build(ds, {"a": 1}, shards=1)
    generation = hashfile.history(ds)[0]["generation"]
    done = hashfile.patch(ds, {}, delete=["gone"], on_missing="ignore")
    assert (done["published"], done["generation"], done["ignored"]) == (False, generation, 1)
    assert len(hashfile.history(ds)) == 1
