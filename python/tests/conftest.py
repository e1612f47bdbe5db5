"""Shared helpers: the repository's root, and Ruby for the cross-language
tests (the gem's extension, built by ``rake compile``)."""

from __future__ import annotations

import json
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def ruby(script: str, *args: str) -> str:
    """Runs ``script`` with the gem's lib/ on the load path; returns stdout."""
    done = subprocess.run(
        ["ruby", "-I", str(ROOT / "lib"), "-rhashfile", "-rjson", "-e", script, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def ruby_json():
    """Ruby's view of a store: every entry as JSON, in stored order."""

    def read(path: str) -> list:
        return json.loads(ruby("db = Hashfile.open(ARGV[0]); puts JSON.generate(db.to_a)", path))

    return read
