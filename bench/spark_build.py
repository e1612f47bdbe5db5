"""A dataset built by Spark (hashfile.spark.write_dataset, local[2]) against
the single-machine build of the same rows (hashfile.build_from on their
JSON Lines, the CLI's pipeline), side by side in one run (issue 24): wall
time, the dataset's bytes, and peak memory (Spark: the driver JVM, which
is the executor in local mode, plus its Python workers, sampled every
0.2 s; the single build: its own peak RSS). Then every key of a sample is
looked up in both, and the shard files are compared byte for byte.

    ~/.cache/hashfile/venv/bin/python bench/spark_build.py          # 10M rows
    ROWS=100000000 ... bench/spark_build.py
    QUICK=1 ... bench/spark_build.py       # 200k rows: checks it runs (CI)
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

QUICK = os.environ.get("QUICK") == "1"
ROWS = int(os.environ.get("ROWS", 200_000 if QUICK else 10_000_000))
SHARDS = int(os.environ.get("SHARDS", 8))


def say(text: str) -> None:
    print(f"[spark] {text}", flush=True)


def tree_rss(root: int) -> int:
    """Bytes resident in ``root``'s descendants (not ``root``): the JVM and
    the Python workers it starts."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
            rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    total, stack = 0, list(children.get(root, []))
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


class PeakSampler(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            self.peak = max(self.peak, tree_rss(os.getpid()))


def dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


def main() -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import hashfile
    from hashfile.spark import write_dataset

    work = tempfile.mkdtemp(prefix="hashfile-spark-bench-")
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.local.dir", os.path.join(work, "spark-local"))
        .config("spark.sql.execution.pythonUDF.arrow.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    rows = spark.range(ROWS).select(
        F.format_string("user:%010d", "id").alias("key"),
        F.col("id"),
        F.format_string("name %d", "id").alias("name"),
        (F.col("id") % 1000 / 100).cast("decimal(10,2)").alias("price"),
        (F.col("id") % 7 == 0).alias("active"),
    )
    say(f"{ROWS:,} rows, {SHARDS} shards, {os.cpu_count()} cores")

    # The same rows as JSON Lines records, the way write_dataset maps them
    # (a decimal as its digits), sorted by key so that the single build
    # writes the same shards; made before either build is timed.
    value = F.struct(*[F.col(c).cast("string").alias(c) if c == "price" else F.col(c) for c in rows.columns])
    jsonl_dir = os.path.join(work, "rows")
    rows.orderBy("key").select(F.to_json(F.struct(F.col("key").alias("k"), value.alias("v")))).coalesce(1).write.text(jsonl_dir)
    jsonl = next(os.path.join(jsonl_dir, f) for f in os.listdir(jsonl_dir) if f.startswith("part-"))
    say(f"input: {os.path.getsize(jsonl) / 1e6:,.0f} MB of JSON Lines")

    out = os.path.join(work, "spark-ds")
    sampler = PeakSampler()
    sampler.start()
    started = time.perf_counter()
    write_dataset(rows, out, key="key", shards=SHARDS)
    spark_seconds = time.perf_counter() - started
    sampler.done.set()
    sampler.join()
    spark.stop()

    single = os.path.join(work, "single-ds")
    script = "import hashfile, sys, resource; hashfile.build_from(sys.argv[1], sys.argv[2], shards=int(sys.argv[3]), key_field='k', value_field='v', format='jsonl'); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script, jsonl, single, str(SHARDS)], check=True, capture_output=True, text=True)
    single_seconds = time.perf_counter() - started
    single_rss = int(done.stdout.strip()) * 1024

    spark_bytes, single_bytes = dir_bytes(out), dir_bytes(single)
    say(f"{'build':<28}{'time':>10}{'dataset':>12}{'peak RSS':>12}")
    say(f"{'Spark write_dataset':<28}{spark_seconds:>9.1f}s{spark_bytes / 1e6:>10.0f}MB{sampler.peak / 1e6:>10.0f}MB")
    say(f"{'single build_from (CLI)':<28}{single_seconds:>9.1f}s{single_bytes / 1e6:>10.0f}MB{single_rss / 1e6:>10.0f}MB")
    say(f"Spark / single: time {spark_seconds / single_seconds:.2f}x, peak RSS {sampler.peak / single_rss:.2f}x")

    ours = json.load(open(os.path.join(out, "hashfile-dataset.json")))
    theirs = json.load(open(os.path.join(single, "hashfile-dataset.json")))
    identical = all(
        open(os.path.join(out, a["file"]), "rb").read() == open(os.path.join(single, b["file"]), "rb").read()
        for a, b in zip(ours["shards"], theirs["shards"])
    )
    sample = random.Random(7).sample(range(ROWS), min(ROWS, 100_000))
    with hashfile.open(out) as a, hashfile.open(single) as b:
        assert len(a) == len(b) == ROWS
        wrong = sum(a[k] != b[k] for k in (f"user:{i:010d}" for i in sample))
    say(f"{len(sample):,} sampled keys differ: {wrong}; shard files byte-identical: {identical}")
    if wrong or not identical:
        sys.exit("the Spark dataset differs from the single build")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
