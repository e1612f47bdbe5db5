"""A dataset's generations from Python: history, rollback, a pinned reader,
diff, and the publish gates, for a build and for a distributed job's
publish (the calls ``hashfile.spark.write_dataset`` makes, without Spark)."""

from __future__ import annotations

import json
import os

import pytest

import hashfile
from hashfile import _native


def build(path, entries, **options):
    hashfile.build(path, entries, shards=2, **options)


def test_history_rollback_and_a_pinned_reader(tmp_path):
    ds = str(tmp_path / "ds")
    build(ds, {"a": 1, "b": 2}, note="first")
    build(ds, {"a": 10, "b": 2, "c": 3}, note="second")
    history = hashfile.history(ds)
    assert [p["note"] for p in history] == ["second", "first"]
    assert [p["current"] for p in history] == [True, False]
    assert history[0]["tool"].startswith("hashfile ") and history[0]["tool"].endswith("(Python)")
    first = history[1]["generation"]

    with hashfile.open(ds, reload=0) as following:
        assert following["a"] == 10
        published = hashfile.rollback(ds, note="second was wrong")
        assert published["generation"] == first
        assert following["a"] == 1, "a reader that follows moves to it"
    assert hashfile.history(ds)[0]["rollback"] is True
    with hashfile.open(ds, generation=history[0]["generation"]) as pinned:
        assert pinned["c"] == 3
    with pytest.raises(ValueError, match="reads that generation and no other"):
        hashfile.open(ds, generation=first, reload=1)
    with pytest.raises(hashfile.DatasetError, match="is not kept here"):
        hashfile.rollback(ds, "20200101T000000Z-00000000")
    with pytest.raises(TypeError, match="unknown option verify for history"):
        hashfile.history(ds, verify=True)  # type: ignore[call-arg]


def test_diff_lines_and_summary(tmp_path):
    hashfile.build(tmp_path / "a.hf", {"same": 1, "gone": "x", "typed": "s"})
    hashfile.build(tmp_path / "b.hf", {"same": 1, "typed": {"n": 1}, "new": [1]})
    lines: list[dict] = []
    summary = hashfile.diff(tmp_path / "a.hf", tmp_path / "b.hf", lambda line: lines.append(json.loads(line)))
    assert sorted(lines, key=lambda c: c["op"]) == [
        {"op": "added", "key": "new", "value": [1]},
        {"op": "changed", "key": "typed", "before": "s", "after": {"n": 1}},
        {"op": "removed", "key": "gone", "value": "x"},
    ]
    assert (summary["added"], summary["removed"], summary["changed"], summary["unchanged"]) == (1, 1, 1, 1)
    assert summary["type_changes"] == [{"from": "string", "to": "map", "keys": 1}]

    def stop(_line: str) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        hashfile.diff(tmp_path / "a.hf", tmp_path / "b.hf", stop)


def test_a_gate_refuses_a_build_and_force_records_it(tmp_path):
    ds = str(tmp_path / "ds")
    build(ds, {f"k{i}": i for i in range(10)})
    files = sorted(os.listdir(ds))
    with pytest.raises(hashfile.PublishRefusedError) as refused:
        build(ds, {"k1": 1}, max_entry_change=0.5)
    assert refused.value.gate == "max_entry_change"
    assert "1 entries against 10 now (-90.0%), more than 50.0%" in str(refused.value)
    assert sorted(os.listdir(ds)) == files, "nothing of the refused generation is left"
    build(ds, {"k1": 1}, max_entry_change=0.5, force=True)
    assert hashfile.history(ds)[0]["forced"].startswith("max_entry_change: 1 entries against 10")


def test_a_jobs_publish_takes_the_gates_and_removes_its_shards_when_refused(tmp_path):
    ds = str(tmp_path / "job")
    build(ds, {f"k{i}": i for i in range(10)})
    before = sorted(os.listdir(ds))
    generation = _native.new_generation()
    reports = []
    for shard in range(2):
        writer = _native.ShardWriter(ds, generation, shard, 2, "k", "v", None, None)
        reports.append(writer.finish())
    with pytest.raises(hashfile.PublishRefusedError, match="refuse_empty: the new generation has no entries"):
        _native.publish_shards(ds, generation, 2, reports, None, {"refuse_empty": True, "note": "nightly"})
    assert sorted(os.listdir(ds)) == before
    with hashfile.open(ds) as db:
        assert len(db) == 10
