"""Every Python snippet of docs/PYTHON.md runs, in a directory holding the
files it names."""

from __future__ import annotations

import re

from conftest import ROOT


def test_every_python_snippet_of_the_docs_runs(tmp_path, monkeypatch):
    text = (ROOT / "docs/PYTHON.md").read_text()
    # A block under a "<!-- not run: why -->" line is shown, not run.
    blocks = [code for marker, code in re.findall(r"^(<!-- not run:[^\n]*\n)?```python\n(.*?)^```", text, flags=re.S | re.M) if not marker]
    assert len(blocks) >= 2
    (tmp_path / "export.csv").write_text("sku,price\nA1,10\nB2,20\n")
    (tmp_path / "events.jsonl").write_text('{"key":"e1","value":{"at":1}}\n')
    monkeypatch.chdir(tmp_path)
    # One namespace, as a reader follows the page.
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/PYTHON.md", "exec"), namespace)
    import hashfile

    assert hashfile.open("prices.hf")["A1"] == "10"
    assert hashfile.open("events/")["e1"] == {"at": 1}


def test_the_readmes_python_snippet_runs(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    assert len(blocks) == 1
    (tmp_path / "export.csv").write_text("sku,price\nA1,10\n")
    monkeypatch.chdir(tmp_path)
    exec(compile(blocks[0], "README.md", "exec"), {})
    import hashfile

    with hashfile.open("settings.hf") as db:
        assert db.dig("checkout", "rollout") == 0.25
    assert hashfile.open("prices.hf")["A1"] == "10"
