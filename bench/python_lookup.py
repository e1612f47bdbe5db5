"""Python lookups side by side in one run (issue 24): a hashfile store
against a dict loaded from JSON and from pickle, and against sqlite3, on
ENTRIES random config-like entries (default 100,000).

- load: open (or json.load / pickle.load / connect) + the first lookup;
- warm: reader[key] against dict[key] on the same 1,000 random keys, with
  and without a memo (``open(path, memo=N)``), and a memo's bytes per
  entry (tracemalloc);
- batch: get_many of 1,000 keys against 1,000 single lookups.

    ~/.cache/hashfile/venv/bin/python bench/python_lookup.py
    QUICK=1 ... bench/python_lookup.py        # seconds: checks it runs (CI)
"""

from __future__ import annotations

import json
import os
import pickle
import random
import sqlite3
import tempfile
import time
import timeit
import tracemalloc

import hashfile

QUICK = os.environ.get("QUICK") == "1"
ENTRIES = int(os.environ.get("ENTRIES", 20_000 if QUICK else 100_000))
ROUNDS = 3 if QUICK else 7


def say(text: str) -> None:
    print(f"[python] {text}", flush=True)


def best(function, number: int) -> float:
    """Seconds per call, the best of ROUNDS runs of ``number`` calls."""
    return min(timeit.repeat(function, number=number, repeat=ROUNDS)) / number


def main() -> None:
    rng = random.Random(24)
    data = {f"tenant:{i}:setting": {"plan": rng.choice(["free", "pro"]), "limit": rng.randrange(1000), "on": i % 2 == 0} for i in range(ENTRIES)}
    keys = rng.sample(list(data), 1000)
    with tempfile.TemporaryDirectory(prefix="hashfile-bench-py") as d:
        store, as_json, as_pickle, as_sqlite = (os.path.join(d, n) for n in ("s.hf", "s.json", "s.pickle", "s.db"))
        hashfile.build(store, data)
        with open(as_json, "w") as f:
            json.dump(data, f)
        with open(as_pickle, "wb") as f:
            pickle.dump(data, f, protocol=pickle.HIGHEST_PROTOCOL)
        db = sqlite3.connect(as_sqlite)
        db.execute("create table kv (k text primary key, v text)")
        db.executemany("insert into kv values (?, ?)", ((k, json.dumps(v)) for k, v in data.items()))
        db.commit()
        db.close()
        key = keys[0]

        def open_hashfile():
            with hashfile.open(store) as r:
                return r[key]

        def load_json():
            with open(as_json) as f:
                return json.load(f)[key]

        def load_pickle():
            with open(as_pickle, "rb") as f:
                return pickle.load(f)[key]

        def open_sqlite():
            c = sqlite3.connect(as_sqlite)
            v = json.loads(c.execute("select v from kv where k = ?", (key,)).fetchone()[0])
            c.close()
            return v

        assert open_hashfile() == load_json() == load_pickle() == open_sqlite()
        load = {
            "hashfile open + lookup": best(open_hashfile, 200),
            "json.load + dict[]": best(load_json, 1 if not QUICK else 1),
            "pickle.load + dict[]": best(load_pickle, 1),
            "sqlite3 connect + select": best(open_sqlite, 200),
        }
        say(f"{ENTRIES} entries (tenant:I:setting => {{plan, limit, on}})")
        for name, seconds in load.items():
            say(f"load  {name:26} {seconds * 1e6:12.1f} µs")
        say(f"open + first lookup is {load['json.load + dict[]'] / load['hashfile open + lookup']:.0f}x faster than json.load + dict[] (target >= 1000x)")

        reader = hashfile.open(store)
        memo = hashfile.open(store, memo=10_000)
        memo_reloading = hashfile.open(store, memo=10_000, reload=1.0)
        conn = sqlite3.connect(as_sqlite)

        def warm_hashfile():
            for k in keys:
                reader[k]

        def warm_memo():
            for k in keys:
                memo[k]

        def warm_memo_reloading():
            for k in keys:
                memo_reloading[k]

        def warm_dict():
            for k in keys:
                data[k]

        def warm_sqlite():
            for k in keys:
                json.loads(conn.execute("select v from kv where k = ?", (k,)).fetchone()[0])

        def batch():
            reader.get_many(keys)

        def batch_memo():
            memo.get_many(keys)

        warm = {
            "dict[key]": best(warm_dict, 20) / 1000,
            "reader[key]": best(warm_hashfile, 20) / 1000,
            "sqlite3 select": best(warm_sqlite, 5) / 1000,
            "reader.get_many, per key": best(batch, 20) / 1000,
            "memo reader[key]": best(warm_memo, 20) / 1000,
            "memo, reload=1 reader[key]": best(warm_memo_reloading, 20) / 1000,
            "memo get_many, per key": best(batch_memo, 20) / 1000,
        }
        for name, seconds in warm.items():
            say(f"warm  {name:26} {seconds * 1e9:12.0f} ns")
        say(f"warm reader[key] is {warm['reader[key]'] / warm['dict[key]']:.2f}x dict[key] (target <= 1.5x)")
        say(f"get_many of 1,000 keys is {warm['reader.get_many, per key'] / warm['reader[key]']:.2f}x 1,000 reader[key] (target <= 0.5x)")
        say(f"with a memo: reader[key] is {warm['memo reader[key]'] / warm['dict[key]']:.2f}x dict[key], with reload=1 {warm['memo, reload=1 reader[key]'] / warm['dict[key]']:.2f}x; get_many {warm['memo get_many, per key'] / warm['memo reader[key]']:.2f}x reader[key]")
        # A memo's memory: what filling one with every key allocates.
        filling = list(data)[: min(ENTRIES, 100_000)]
        filled = hashfile.open(store, memo=len(filling))
        tracemalloc.start()
        for k in filling:
            filled[k]
        held, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        say(f"memo of {filled.info()['memo']['entries']} values: {held / 1e6:.1f} MB, {held / len(filling):.0f} bytes per entry (its key objects are the caller's)")
        filled.close()
        memo.close()
        memo_reloading.close()
        reader.close()
        conn.close()


if __name__ == "__main__":
    started = time.monotonic()
    main()
    say(f"done in {time.monotonic() - started:.1f} s")
