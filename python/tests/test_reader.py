"""hashfile from Python: build, open, the Mapping API, iteration, datasets,
and every error class with the message the Ruby gem gives."""

from __future__ import annotations

import math
import os

import pytest

import hashfile

DATA = {
    "plain": "text",
    "binary": b"\x00\xff raw",
    "int": 42,
    "big": 2**100,
    "negative big": -(2**70) - 1,
    "float": 2.5,
    "nan": math.nan,
    "true": True,
    "false": False,
    "none": None,
    "list": [1, "two", [3.0, None], {"four": 4}],
    "map": {"nested": {"deeper": [True, False]}, "n": -1},
    "unicode ключ": "значение ✓",
}


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "s.hf"
    written = hashfile.build(path, DATA)
    assert written == os.path.getsize(path)
    with hashfile.open(path) as db:
        yield db


def same(a, b) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b and type(a) is type(b)


def test_every_value_type_reads_back_as_the_python_value(store):
    for key, value in DATA.items():
        assert same(store[key], value), key
    assert store.get("none", "default") is None, "a stored None is not absent"
    assert store.get("absent", "default") == "default"
    assert store.get("absent") is None


def test_the_mapping_api(store):
    assert len(store) == len(DATA)
    assert list(store) == list(DATA), "stored order"
    assert list(store.keys()) == list(DATA)
    assert "int" in store and "absent" not in store and 1 not in store
    assert [k for k, _ in store.items()] == list(DATA)
    assert all(same(v, DATA[k]) for k, v in store.items())
    assert len(list(store.values())) == len(DATA)
    assert ("int", 42) in store.items() and ("int", 43) not in store.items()
    with pytest.raises(KeyError) as missing:
        store["absent"]
    assert missing.value.args == ("absent",)
    with pytest.raises(KeyError):
        store[1]
    assert store.get(b"int") == 42, "a str key is looked up by its UTF-8 bytes"
    assert store.get_many(["int", "absent", "plain"]) == [42, None, "text"]
    assert store.dig("map", "nested", "deeper", 1) is False
    assert store.dig("list", 3, "four") == 4
    assert store.dig("map", "nope", default=7) == 7
    # A string value is a leaf: no step reaches into it, an index no more
    # than a key (Ruby's dig raises TypeError there; the CLI: not found).
    assert store.dig("plain", 0) is None
    assert store.dig("plain", 0, default=7) == 7
    assert store.dig("plain", "x") is None
    assert not hasattr(store, "__setitem__")


def test_binary_keys_come_back_as_bytes(tmp_path):
    path = tmp_path / "b.hf"
    hashfile.build(path, [(b"\xff\x00", "binary key"), ("text", b"v")])
    with hashfile.open(path) as db:
        assert list(db) == [b"\xff\x00", "text"]
        assert db[b"\xff\x00"] == "binary key"


def test_info_and_verify(store):
    info = store.info()
    assert info["entries"] == len(DATA)
    assert set(info["sections"]) == {"seed_index", "seeds", "remap", "slots", "records"}
    assert store.verify() is True


def test_the_compact_index(tmp_path):
    """index="compact" writes the compact index (docs/FORMAT.md): about 2.2
    bits a key, every value read back; with it seed_block_len is refused,
    and an unknown layout is named."""
    data = {f"key-{i}": i for i in range(30_000)}
    hashfile.build(tmp_path / "c.hf", data, index="compact")
    with hashfile.open(tmp_path / "c.hf") as db:
        assert all(db[k] == v for k, v in data.items())
        info = db.info()
        assert set(info["sections"]) == {"pilots", "parts", "remap", "slots", "records"}
        assert info["index"] == "compact"
        assert info["mphf_bits_per_key"] < 2.3
        assert db.verify() is True
    with pytest.raises(ValueError, match="seed_block_len applies to the classic index"):
        hashfile.build(tmp_path / "x.hf", data, index="compact", seed_block_len=32)
    with pytest.raises(ValueError, match='"tiny" is not an index layout; one of classic, compact'):
        hashfile.build(tmp_path / "x.hf", data, index="tiny")


def test_a_closed_reader_raises_closed_error(tmp_path):
    path = tmp_path / "c.hf"
    hashfile.build(path, {"a": "1"})
    db = hashfile.open(path)
    with db:
        assert db["a"] == "1"
    assert db.closed
    with pytest.raises(hashfile.ClosedError, match="closed store .*c.hf"):
        db["a"]
    with pytest.raises(hashfile.ClosedError):
        len(db)


def test_reload_reads_a_newly_published_store(tmp_path):
    path = tmp_path / "r.hf"
    hashfile.build(path, {"k": "old"})
    with hashfile.open(path, reload=0) as db:
        keys = iter(db)
        assert next(keys) == "k"
        hashfile.build(path, {"k": "new", "j": "added"})
        assert db["k"] == "new"
        assert db.generation == 1
        assert list(keys) == [], "an iteration reads the store it started on"


def test_datasets_read_like_one_store(tmp_path):
    data = {f"k{i}": {"n": i} for i in range(500)}
    hashfile.build(tmp_path / "ds", data, shards=4)
    with hashfile.open(tmp_path / "ds") as db:
        assert len(db) == 500
        assert db["k42"] == {"n": 42}
        assert dict(db.items()) == data
        shards = [hashfile.shard_of(k, 4) for k in db]
        assert shards == sorted(shards), "shard by shard"
        info = db.info()
        assert len(info["shards"]) == 4 and info["entries"] == 500
        assert db.verify()


def test_build_errors_name_what_is_wrong(tmp_path):
    with pytest.raises(hashfile.DuplicateKeyError, match='duplicate key "a"') as e:
        hashfile.build(tmp_path / "d.hf", [("a", 1), ("a", 2)])
    assert e.value.key == b"a"
    assert not (tmp_path / "d.hf").exists(), "nothing published"
    assert hashfile.build(tmp_path / "d.hf", [("a", 1), ("a", 2)], on_duplicate="last") > 0
    refused = (
        r"\Avalue for key \"x\" at \[\"y\"\] is a set; Hashfile stores None, bool, int, float, str,"
        r" bytes, list, tuple and dict \(convert other objects to these first\)\Z"
    )
    with pytest.raises(TypeError, match=refused):
        hashfile.build(tmp_path / "t.hf", {"x": {"y": {1}}})
    # A str and the bytes of its ASCII are one key as stored (Ruby's "a" and
    # "a".b): refused, not stored twice for every reader to keep one.
    with pytest.raises(ValueError, match=r'\Avalue for key "k" has the map key "a"\.b twice'):
        hashfile.build(tmp_path / "t.hf", {"k": {"a": 1, b"a": 2}})
    # A dict changed while it is encoded (by a list subclass's __iter__)
    # is read as it was: no PanicException, which `except Exception` misses.
    changing: dict[str, object] = {}

    class Changes(list):
        def __iter__(self):
            changing["z"] = 1
            return iter([])

    changing["a"] = Changes()
    hashfile.build(tmp_path / "c.hf", {"k": changing})
    with hashfile.open(tmp_path / "c.hf") as db:
        assert db["k"] == {"a": []}
    with pytest.raises(TypeError, match="a key is a str or bytes, not int"):
        hashfile.build(tmp_path / "t.hf", {1: "x"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unknown option keys_per_bucke "):
        hashfile.build(tmp_path / "t.hf", {}, keys_per_bucke=3)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="shards"):
        hashfile.build(tmp_path / "ds", {}, shards=0)


def test_open_errors_are_of_their_own_class(tmp_path):
    with pytest.raises(FileNotFoundError):
        hashfile.open(tmp_path / "missing.hf")
    (tmp_path / "junk.hf").write_bytes(b"not a store at all, just some bytes" * 10)
    with pytest.raises(hashfile.FormatError, match="junk.hf") as e:
        hashfile.open(tmp_path / "junk.hf")
    assert e.value.path.endswith("junk.hf")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(hashfile.DatasetError, match="has no hashfile-dataset.json"):
        hashfile.open(tmp_path / "empty_dir")
    with pytest.raises(ValueError, match="invalid option timeout: is for remote stores"):
        hashfile.open(tmp_path / "junk.hf", timeout=1)
    with pytest.raises(TypeError, match="unknown option timout"):
        hashfile.open("http://127.0.0.1:9/s.hf", timout=1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="on_change"):
        hashfile.open(tmp_path / "junk.hf", on_change="ignore")
    assert issubclass(hashfile.DatasetError, hashfile.FormatError)
    assert issubclass(hashfile.RemoteNotFoundError, hashfile.RemoteError)


def test_every_error_class_is_exported():
    """hashfile.errors' __all__ is written out (so a type checker sees the
    classes): it must name every class there, each also on hashfile."""
    import hashfile.errors

    classes = {name for name, value in vars(hashfile.errors).items() if isinstance(value, type) and issubclass(value, hashfile.errors.Error)}
    assert set(hashfile.errors.__all__) == classes
    assert all(getattr(hashfile, name) is getattr(hashfile.errors, name) for name in classes)
    assert classes <= set(hashfile.__all__)


def test_a_damaged_store_is_found_by_verify(tmp_path):
    path = tmp_path / "v.hf"
    hashfile.build(path, {f"k{i}": "x" * 50 for i in range(100)})
    raw = bytearray(path.read_bytes())
    raw[-10] ^= 0xFF
    path.write_bytes(bytes(raw))
    with hashfile.open(path) as db, pytest.raises(hashfile.ChecksumError) as e:
        db.verify()
    assert e.value.section is not None


def test_build_from_files_as_the_cli_reads_them(tmp_path):
    (tmp_path / "a.csv").write_text("sku,price\nA1,10\nB2,20\n")
    (tmp_path / "b.jsonl").write_text('{"key":"C3","value":{"n":[1,2]}}\n')
    phases = []
    result = hashfile.build_from(
        [tmp_path / "a.csv", str(tmp_path / "b.jsonl")],
        tmp_path / "out.hf",
        progress=lambda entries, read, total, phase: phases.append(phase),
    )
    assert result["entries"] == 3
    assert phases[0] == "reading" and "publishing" in phases
    with hashfile.open(tmp_path / "out.hf") as db:
        assert dict(db.items()) == {"A1": "10", "B2": "20", "C3": {"n": [1, 2]}}
    hashfile.build_from(tmp_path / "a.csv", tmp_path / "named.hf", key_column="price", value_column="sku")
    assert dict(hashfile.open(tmp_path / "named.hf").items()) == {"10": "A1", "20": "B2"}
    result = hashfile.build_from(tmp_path / "b.jsonl", tmp_path / "ds", shards=2)
    assert result["entries"] == 1
    assert hashfile.open(tmp_path / "ds")["C3"] == {"n": [1, 2]}


def test_build_from_refuses_what_it_would_ignore_and_stops_when_told(tmp_path):
    (tmp_path / "a.jsonl").write_text("".join(f'{{"key":"k{i}","value":{i}}}\n' for i in range(1000)))
    with pytest.raises(ValueError, match="key_column.*applies to csv and tsv"):
        hashfile.build_from(tmp_path / "a.jsonl", tmp_path / "x.hf", key_column=0)
    with pytest.raises(TypeError, match="unknown option key_colum "):
        hashfile.build_from(tmp_path / "a.jsonl", tmp_path / "x.hf", key_colum=0)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="cannot tell the format"):
        hashfile.build_from(tmp_path / "a.data", tmp_path / "x.hf")

    class Stop(Exception):
        pass

    def stop(entries, read, total, phase):
        if phase == "publishing":
            raise Stop

    with pytest.raises(Stop):
        hashfile.build_from(tmp_path / "a.jsonl", tmp_path / "x.hf", progress=stop)
    assert not (tmp_path / "x.hf").exists(), "a cancelled build publishes nothing"
    (tmp_path / "bad.jsonl").write_text('{"key":"a","value":1}\n{"key":\n')
    with pytest.raises(hashfile.ParseError, match="bad.jsonl: line 2") as e:
        hashfile.build_from(tmp_path / "bad.jsonl", tmp_path / "x.hf")
    assert e.value.line == 2


def test_ctrl_c_stops_a_build_waiting_for_its_input(tmp_path):
    """SIGINT while a build waits on a FIFO nobody writes: KeyboardInterrupt,
    promptly, and nothing published."""
    import signal
    import subprocess
    import sys
    import time

    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)
    out = tmp_path / "out.hf"
    script = (
        "import hashfile, signal, sys\n"
        # A shell without job control starts background jobs with SIGINT
        # ignored, and Python keeps an inherited SIG_IGN: the test says
        # what it needs.
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "print('started', flush=True)\n"
        "try:\n"
        f"    hashfile.build_from({str(fifo)!r}, {str(out)!r})\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "    sys.exit(3)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline() == "started\n"
    time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    assert child.wait(timeout=10) == 3
    assert child.stdout.read() == "interrupted\n"
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.jsonl"], "no temporary file left"


def test_short_strings_are_shared_between_lookups_and_decode_as_any_other(tmp_path):
    # Strings of up to 31 bytes come from a per-thread cache by their bytes
    # (python/src/strings.rs): the same object again, equal to a fresh one.
    # Longer strings, and bytes that are not UTF-8, are made anew each time.
    long_text = "x" * 32
    path = tmp_path / "s.hf"
    hashfile.build(
        path,
        {
            "a": {"plan": "pro", "limit": 5},
            "b": {"plan": "pro", "note": long_text},
            "c": b"\xff\xfe",
            "d": "\u00e9t\u00e9",
        },
    )
    with hashfile.open(path) as db:
        a, b = db["a"], db["b"]
        assert a == {"plan": "pro", "limit": 5}
        assert b == {"plan": "pro", "note": long_text}
        assert next(iter(a)) is next(iter(b))
        assert a["plan"] is b["plan"]
        assert db["b"]["note"] == long_text and db["b"]["note"] is not b["note"]
        assert db["c"] == b"\xff\xfe" and isinstance(db["c"], bytes)
        assert db["d"] == "\u00e9t\u00e9" and db["d"] is db["d"]
        # Iteration keys pass through the same cache and stay correct.
        assert sorted(db) == ["a", "b", "c", "d"]


def test_build_from_refuses_a_progress_that_is_not_callable_before_building(tmp_path):
    source = tmp_path / "a.jsonl"
    source.write_text('["k", 1]\n')
    with pytest.raises(TypeError, match="^progress must be callable, not int$"):
        hashfile.build_from(source, tmp_path / "x.hf", progress=5)  # type: ignore[arg-type]
    assert not (tmp_path / "x.hf").exists()


def test_shard_of_takes_the_shards_option_checks():
    assert hashfile.shard_of("tenant:42", 16) == 13
    with pytest.raises(TypeError, match="^shards must be an integer, not a boolean$"):
        hashfile.shard_of("a", True)
    with pytest.raises(ValueError, match="^invalid option shards: must be an integer from 1 to 1048576, not 0$"):
        hashfile.shard_of("a", 0)
