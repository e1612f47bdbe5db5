"""Values larger than a reader takes (docs/PYTHON.md, "Options" and
"Errors"): ``max_value_size`` refuses them with a ``LimitError`` naming the
key; one within it that memory cannot hold is a ``MemoryError``, never
pyo3's ``PanicException`` (a ``BaseException``) and never an abort."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

import hashfile


def big_store(path: str) -> None:
    """A store of a compressed value of 128 MB ("big", about 1 MB stored) and a small one."""
    rng = random.Random(1)
    value = "".join("\0" * 255 + chr(rng.randrange(1, 128)) for _ in range(500_000))
    hashfile.build(path, {"big": value, "small": "s"}, compression="zstd")


def test_max_value_size_refuses_a_value_naming_its_key(tmp_path):
    path = str(tmp_path / "big.hf")
    big_store(path)
    with hashfile.open(path, max_value_size=64 << 20) as db:
        assert db["small"] == "s"
        for read in (lambda: db["big"], lambda: db.get_many(["big"]), db.verify, lambda: list(db.items())):
            with pytest.raises(hashfile.LimitError, match=r'the value of key "big" decodes to 128000000 bytes, over max_value_size \(67108864 bytes\)'):
                read()
    assert hashfile.DEFAULT_MAX_VALUE_SIZE == 256 << 20
    with pytest.raises(ValueError, match="max_value_size: must be an integer from 1 to"):
        hashfile.open(path, max_value_size=0)
    for bad in (-1, 2**64):
        with pytest.raises(ValueError):
            hashfile.open(path, max_value_size=bad)
    for bad in (1.5, "1", True):  # type: ignore[assignment]
        with pytest.raises(TypeError):
            hashfile.open(path, max_value_size=bad)


def test_a_value_memory_cannot_hold_is_a_memory_error_not_an_abort(tmp_path):
    path = str(tmp_path / "big.hf")
    big_store(path)
    script = f"""
import resource, hashfile
db = hashfile.open({path!r})
vm = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + (48 << 20), resource.RLIM_INFINITY))
for what, read in [("get", lambda: db["big"]), ("verify", db.verify), ("items", lambda: list(db.items())),
                   ("get_many", lambda: db.get_many(["small", "big"]))]:
    try:
        read()
        print(what, "no error")
    except Exception as e:
        print(what, type(e).__name__, e)
print("small", db["small"])
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    for what in ("get", "verify", "items", "get_many"):
        assert f"{what} MemoryError" in done.stdout, done.stdout + done.stderr
    assert "small s" in done.stdout
