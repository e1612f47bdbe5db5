"""The conformance table (test/conformance/cases.json), run by Python: every
binding runs the same cases and must give the same answers and errors
(test/conformance_test.rb runs it for Ruby and the CLI). One test per case.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import re
import signal
import time
from typing import Any

import pytest

import hashfile
from conftest import ROOT

TABLE = json.loads((ROOT / "test" / "conformance" / "cases.json").read_text())
MISSING = object()


def value(data: Any) -> Any:
    """A value of the table as Python holds it: {"$bytes": hex} bytes,
    {"$int": digits} an int, {"$float": text} a float."""
    if isinstance(data, list):
        return [value(v) for v in data]
    if isinstance(data, dict):
        if "$bytes" in data:
            return bytes.fromhex(data["$bytes"])
        if "$object" in data:
            return object()
        if "$nest" in data:
            nested: list[Any] = []
            for _ in range(data["$nest"] - 1):
                nested = [nested]
            return nested
        if "$int" in data:
            return int(data["$int"])
        if "$float" in data:
            return float(data["$float"])
        return {k: value(v) for k, v in data.items()}
    return data


def canonical(v: Any) -> Any:
    """A form in which two values of the same type compare equal, and values
    of different types (1 and 1.0, text and bytes) never do; map order
    counts."""
    if isinstance(v, dict):
        return ["map", [[canonical(k), canonical(x)] for k, x in v.items()]]
    if isinstance(v, list):
        return ["list", [canonical(x) for x in v]]
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, float):
        return ["float", "nan" if math.isnan(v) else v]
    if isinstance(v, int):
        return ["int", v]
    if isinstance(v, bytes):
        return ["bytes", v.hex()]
    return ["text", v]


def error_class(kind: str) -> type[BaseException]:
    name = TABLE["errors"][kind]["python"]
    found = getattr(hashfile, name, None) or __builtins__[name]  # type: ignore[index]
    assert isinstance(found, type)
    return found


def expect_partial(expected: Any, actual: Any, where: str) -> None:
    """``actual`` (a dict, or a list of them) has every key ``expected``
    names, with that value, and a list as many items."""
    if isinstance(expected, list):
        assert len(actual) == len(expected), f"{where}: {actual!r}"
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            expect_partial(e, a, f"{where}, item {i}")
    else:
        for key, v in expected.items():
            assert actual[key] == v and type(actual[key]) is type(v), f"{where}: {key}: {actual[key]!r}"


def run_step(step: dict[str, Any], tmp_path: Any, state: dict[str, Any], where: str) -> None:
    def path(name: str) -> str:
        return str(tmp_path / name)

    op = next(iter(step))
    options = step.get("options", {})
    db: Any = state.get("db")
    if op == "build_from":
        summary = hashfile.build_from([path(f) for f in step["build_from"]], path(step["output"]), **options)
        for k, v in step.get("expect", {}).items():
            assert summary[k] == v, where
    elif op == "build":
        hashfile.build(path(step["output"]), value(step["build"]), **options)
    elif op == "fork_build":
        pid = os.fork()
        if pid == 0:
            # The child never returns into pytest, whatever happens.
            code = 1
            try:
                code = 0 if hashfile.build(path(step["output"]), value(step["fork_build"])) > 0 else 1
            finally:
                os._exit(code)
        # A child that hangs (a build pool the fork left half made) fails
        # the case, not the suite.
        for _ in range(200):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"{where}: the forked child's build did not end in 20 s")
        assert os.waitstatus_to_exitcode(status) == 0, where
    elif op == "open":
        if db is not None:
            db.close()
            state["db"] = None
        # A URL as given; any other name, a file of the case's directory.
        location = step["open"] if "://" in step["open"] else path(step["open"])
        if "generation" in step:
            options = {**options, "generation": hashfile.history(location)[step["generation"]]["generation"]}
        state["db"] = hashfile.open(location, **options)
    elif op == "history":
        history = hashfile.history(path(step["history"]), **options)
        if "expect" in step:
            expect_partial(step["expect"], history, where)
    elif op == "diff":
        a, b = (path(n) for n in step["diff"])
        if "generations" in step:
            i, j = step["generations"]
            options = {**options, "generation_a": hashfile.history(a)[i]["generation"], "generation_b": hashfile.history(b)[j]["generation"]}
        lines: list[Any] = []
        summary = hashfile.diff(a, b, lambda line: lines.append(json.loads(line)), **options)
        if "expect" in step:
            expect_partial(step["expect"], summary, where)
        if "lines" in step:
            assert sorted(json.dumps(x) for x in lines) == sorted(json.dumps(x) for x in step["lines"]), where
    elif op == "delta":
        if "changes_file" in step:
            changed = hashfile.patch(path(step["delta"]), path(step["changes_file"]), **options)
        else:
            put = value(step["put"]) if "put" in step else None
            changed = hashfile.patch(path(step["delta"]), put, delete=step.get("delete"), **options)
        if "expect" in step:
            expect_partial(step["expect"], changed, where)
    elif op == "compact":
        changed = hashfile.compact(path(step["compact"]), **options)
        if "expect" in step:
            expect_partial(step["expect"], changed, where)
    elif op == "rollback":
        to = hashfile.history(path(step["rollback"]))[step["to"]]["generation"] if "to" in step else None
        published = hashfile.rollback(path(step["rollback"]), to, **options)
        if "expect" in step:
            expect_partial(step["expect"], published, where)
    elif op == "get":
        found = db.get(step["get"], MISSING)
        if step.get("absent"):
            assert found is MISSING, where
        else:
            assert canonical(found) == canonical(value(step["expect"])), where
    elif op == "dig":
        key, *steps = step["dig"]
        found = db.dig(key, *steps)
        if step.get("absent"):
            assert found is None, where
        else:
            assert canonical(found) == canonical(value(step["expect"])), where
    elif op == "get_many":
        assert canonical(db.get_many(step["get_many"])) == canonical(value(step["expect"])), where
    elif op == "len":
        assert len(db) == step["len"], where
    elif op == "same_object":
        key = step["same_object"]
        assert (db[key] is db[key]) == step["expect"], where
    elif op == "info_has":
        info = db.info()
        for key in step["info_has"]:
            assert key in info, f"{where}: info has no {key} ({', '.join(info)})"
    elif op == "info_keys":
        assert list(db.info()) == step["info_keys"], where
    elif op == "exists":
        assert os.path.exists(path(step["exists"])) == step["expect"], where
    elif op == "patch":
        # The first occurrence of the bytes `find` replaced by `replace`.
        patched = pathlib.Path(path(step["patch"]))
        data = patched.read_bytes()
        find, replace = bytes.fromhex(step["find"]), bytes.fromhex(step["replace"])
        assert find in data, f"{where}: {step['find']} is not in {step['patch']}"
        patched.write_bytes(data.replace(find, replace, 1))
    elif op == "shard_of":
        assert hashfile.shard_of(*step["shard_of"]) == step["expect"], where
    else:
        pytest.fail(f"{where}: no such step")


@pytest.mark.parametrize("case", TABLE["cases"], ids=[c["name"] for c in TABLE["cases"]])
def test_case(case: dict[str, Any], tmp_path: Any) -> None:
    for name, text in case.get("files", {}).items():
        (tmp_path / name).write_text(text)
    state: dict[str, Any] = {}
    try:
        for i, step in enumerate(case["steps"], 1):
            where = f"{case['name']}, step {i} ({next(iter(step))})"
            error = step.get("error")
            if not error:
                run_step(step, tmp_path, state, where)
                continue
            with pytest.raises(error_class(error["kind"])) as raised:
                run_step(step, tmp_path, state, where)
            message = str(raised.value)
            # An OSError's str() is "[Errno 2] message: 'path'".
            if isinstance(raised.value, OSError) and raised.value.strerror:
                message = f"{raised.value.strerror}: {raised.value.filename}"
            if "message" in error:
                assert message == error["message"], where
            if "match" in error:
                assert re.search(error["match"], message), f"{where}: {message!r} does not match {error['match']!r}"
    finally:
        if state.get("db") is not None:
            state["db"].close()
