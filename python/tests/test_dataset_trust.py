"""A dataset's manifest is data, not an instruction (docs/REMOTE.md, "Where
a dataset's shards may be"): it reaches only the places the caller named,
and a reload check of a remote one holds no Python thread."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from itertools import pairwise

import pytest

import hashfile
from conftest import ROOT


def _dataset(tmp_path, n=200, shards=2):
    data = {f"k{i}": f"v{i}" for i in range(n)}
    hashfile.build(tmp_path / "ds", data, shards=shards)
    manifest = json.loads((tmp_path / "ds" / "hashfile-dataset.json").read_text())
    return data, manifest


def test_a_manifest_sends_headers_only_to_its_own_origin(tmp_path, nginx, another_nginx):
    data, manifest = _dataset(tmp_path)
    for shard in manifest["shards"]:
        nginx.publish(shard["file"], tmp_path / "ds" / shard["file"])
        another_nginx.publish(shard["file"], tmp_path / "ds" / shard["file"])
    moved = manifest["shards"][1]["file"]
    manifest["shards"][1]["file"] = another_nginx.url(f"/files/{moved}")
    (tmp_path / "remote.json").write_text(json.dumps(manifest))
    nginx.publish("hashfile-dataset.json", tmp_path / "remote.json")
    url = nginx.url("/files/hashfile-dataset.json")
    token = {"Authorization": "Bearer let-me-in"}

    with pytest.raises(hashfile.DatasetError, match="is not under the manifest's own place"):
        hashfile.open(url, headers=token)
    assert another_nginx.authorizations() == [], "no request reached the other server"

    with hashfile.open(url, headers=token, allow_origins=[another_nginx.url("/")]) as db:
        assert dict(db.items()) == data
    assert {auth for _, auth in nginx.authorizations()} == {"Bearer let-me-in"}
    assert {auth for _, auth in another_nginx.authorizations()} == {None}

    # A local manifest naming a remote shard.
    (tmp_path / "ds" / "hashfile-dataset.json").write_text(json.dumps(manifest))
    with pytest.raises(hashfile.DatasetError, match="is remote, and the manifest is a local file"):
        hashfile.open(tmp_path / "ds")
    with hashfile.open(tmp_path / "ds", allow_origins=[another_nginx.url("/files/")]) as db:
        assert dict(db.items()) == data
    with pytest.raises(ValueError, match="invalid option timeout: is for remote stores"):
        hashfile.open(tmp_path / "ds", allow_origins=[another_nginx.url("/files/")], timeout=5)
    with pytest.raises(ValueError, match="is for datasets"):
        hashfile.open(tmp_path / "ds" / manifest["shards"][0]["file"], allow_origins=["https://example.com/"])


def test_a_slow_manifest_check_holds_no_thread(tmp_path, nginx):
    """With a relay that holds every request 1.5 s (in a process of its
    own), the lookups that run while a reload check fetches the manifest
    answer at once, and another thread keeps running."""
    directory = nginx.root / "files" / "ds"
    hashfile.build(directory, {"a": "1"}, shards=1)
    relay = subprocess.Popen(
        [
            "ruby", "-I", str(ROOT / "test/support"), "-rservers", "-e",
            f"r = Hashfile::TestServers::SlowProxy.new({nginx.port}, 1.5); puts r.port; $stdout.flush; sleep",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert relay.stdout is not None
        port = int(relay.stdout.readline())
        db = hashfile.open(f"http://127.0.0.1:{port}/files/ds/hashfile-dataset.json", reload=0.2, timeout=20)
        assert db["a"] == "1"
        hashfile.build(directory, {"a": "2"}, shards=1)
        time.sleep(0.3)  # a check is due
        ticks = []

        def tick():
            for _ in range(300):
                ticks.append(time.monotonic())
                time.sleep(0.01)

        ticker = threading.Thread(target=tick)
        ticker.start()
        seen: list[tuple[object, float]] = []
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline and (not seen or seen[-1][0] != "2"):
            started = time.monotonic()
            value = db["a"]
            seen.append((value, time.monotonic() - started))
            time.sleep(0.01)
        ticker.join()
        db.close()
        assert seen[-1][0] == "2", "the new generation is read once its manifest came"
        old = [took for value, took in seen if value == "1"]
        assert len(old) >= 2, "lookups answered from the generation open while the check ran"
        assert max(old) < 0.5, "no lookup waited for the manifest"
        assert max(b - a for a, b in pairwise(ticks)) < 0.5, "the other thread kept running"
    finally:
        relay.kill()
        relay.wait()
