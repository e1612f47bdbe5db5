"""``hashfile.open(..., memo=N)``: decoded values kept and returned again
as the same objects, bounded, emptied by a reload, a reopen and a close,
and never answering for another key."""

from __future__ import annotations

import os
import threading

import pytest

import hashfile
from conftest import skip_or_fail

DATA = {f"k{i}": {"i": i, "tags": [f"t{i}", i % 3 == 0], "name": f"n{i}"} for i in range(200)}


@pytest.fixture
def path(tmp_path):
    path = tmp_path / "m.hf"
    hashfile.build(path, DATA)
    return path


def test_a_memo_returns_the_same_object_for_the_same_key(path):
    with hashfile.open(path, memo=1000) as db, hashfile.open(path) as plain:
        first = db["k1"]
        assert db["k1"] is first and db.get("k1") is first
        assert plain["k1"] == first and plain["k1"] is not plain["k1"], "without a memo every lookup decodes"
        for key, value in DATA.items():
            assert db[key] == value == db.get(key)
        assert db.info()["memo"] == {"entries": len(DATA), "limit": 1000}
        assert "memo" not in plain.info()


def test_a_memo_is_bounded_and_refills(path):
    with hashfile.open(path, memo=5) as db:
        for _ in range(3):
            for key, value in DATA.items():
                assert db[key] == value
                assert db.info()["memo"]["entries"] <= 5
        assert db["k7"] is db["k7"]


def test_absent_keys_and_other_types_are_not_memoized(path):
    with hashfile.open(path, memo=10) as db:
        with pytest.raises(KeyError):
            db["absent"]
        assert db.get("absent", 3) == 3
        assert db.get(17) is None and 17 not in db  # type: ignore[arg-type,comparison-overlap]
        with pytest.raises(KeyError):
            db[17]  # type: ignore[index]
        assert db.info()["memo"]["entries"] == 0


def test_a_key_subclass_never_finds_another_keys_value(path):
    class Collides(str):
        """Equal to every key, with the hash of "k1"."""

        def __hash__(self):
            return hash("k1")

        def __eq__(self, other):
            return True

    with hashfile.open(path, memo=10) as db:
        assert db["k1"] == DATA["k1"]
        assert db[Collides("k2")] == DATA["k2"], "looked up by its own bytes, not through the memo"
        assert db.get_many([Collides("k3"), "k1"]) == [DATA["k3"], DATA["k1"]]


def test_get_many_mixes_memoized_and_read_values(path):
    with hashfile.open(path, memo=50) as db:
        held = db["k5"]
        keys: list[hashfile.Key] = ["k5", "absent", "k6", b"k7", "k5"]
        values = db.get_many(keys)
        assert values == [DATA["k5"], None, DATA["k6"], DATA["k7"], DATA["k5"]]
        assert values[0] is held and values[4] is held
        assert db.get_many(iter(["k6"]))[0] is values[2], "any iterable; now memoized"
        with pytest.raises(TypeError, match="iterable of keys, not one key"):
            db.get_many("k5")
        with pytest.raises(TypeError, match="a key is a str or bytes, not int"):
            db.get_many(["k5", 5])  # type: ignore[list-item]


def test_a_reload_empties_the_memo(tmp_path):
    path = tmp_path / "r.hf"
    hashfile.build(path, {"k": {"v": "old"}})
    with hashfile.open(path, reload=0, memo=10) as db:
        old = db["k"]
        assert db["k"] is old
        hashfile.build(path, {"k": {"v": "new"}})
        assert db["k"] == {"v": "new"}
        assert db.generation == 1
        assert db.get_many(["k"]) == [{"v": "new"}]


def test_a_reopen_empties_the_memo(tmp_path):
    path = tmp_path / "r.hf"
    hashfile.build(path, {"k": "old"})
    with hashfile.open(path, memo=10) as db:
        assert db["k"] == "old"
        hashfile.build(path, {"k": "new"})
        assert db["k"] == "old", "no reload: the store opened"
        db.reopen()
        assert db["k"] == "new"
        assert db.get_many(["k"]) == ["new"]


def test_a_closed_reader_answers_nothing_from_its_memo(path):
    db = hashfile.open(path, memo=10)
    assert db["k1"] == DATA["k1"]
    db.close()
    with pytest.raises(hashfile.ClosedError):
        db["k1"]
    with pytest.raises(hashfile.ClosedError):
        db.get("k1")
    with pytest.raises(hashfile.ClosedError):
        db.get_many(["k1"])


def test_threads_share_one_memo(path):
    """Threads look up while the memo empties under them (a limit below
    the keys they use): every value is right."""
    wrong = []
    with hashfile.open(path, memo=7) as db:

        def look(offset: int) -> None:
            for _round in range(30):
                for i in range(offset, 200, 3):
                    if db[f"k{i}"] != DATA[f"k{i}"]:
                        wrong.append(i)

        threads = [threading.Thread(target=look, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert wrong == []


def test_a_forked_child_reads_through_its_copy_of_the_memo(path):
    if not hasattr(os, "fork"):
        skip_or_fail("HASHFILE_REQUIRE_LINUX", "needs fork")
    with hashfile.open(path, memo=100) as db:
        assert db["k1"] == DATA["k1"]
        pid = os.fork()
        if pid == 0:
            ok = db["k1"] == DATA["k1"] and db["k2"] == DATA["k2"] and db.info()["memo"]["entries"] == 2
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert db.info()["memo"]["entries"] == 1, "the child's lookups went to its own copy"


def test_memo_must_be_a_number_of_entries(path):
    with pytest.raises(TypeError, match="memo must be an integer, not a string"):
        hashfile.open(path, memo="100")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="memo must be an integer, not a boolean"):
        hashfile.open(path, memo=True)
    with pytest.raises(ValueError, match="from 0 to 100000000, not -1"):
        hashfile.open(path, memo=-1)
    with pytest.raises(ValueError, match="not 100000001"):
        hashfile.open(path, memo=100_000_001)
