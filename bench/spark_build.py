"""A dataset built by Spark, two ways, against the single-machine build of
the same rows (hashfile.build_from on their JSON Lines, the CLI's pipeline),
side by side in one run (issues 24 and 49): Python's
hashfile.spark.write_dataset (each shard built in a Python worker behind
Arrow batches) and the JVM's data source, df.write.format("hashfile") (each
shard built in the executor's JVM), each in a Spark local[2] of its own (a
fresh JVM, so one's heap is not the other's peak). Also timed: the same
rows' shuffle and sort alone (repartition by key, sort within partitions,
written to Spark's "noop" sink), which is the part of a Spark write that is
Spark's own. Reported: wall time, the dataset's bytes, peak memory (Spark:
the JVM, which is the executor in local mode, plus its Python workers,
sampled every 0.2 s; the single build: its own peak RSS). Then every key
of a sample is looked up in all three, and the shard files are compared
byte for byte.

    rake jvm_package   # the jars the JVM's data source needs
    ~/.cache/hashfile/venv/bin/python bench/spark_build.py          # 10M rows
    ROWS=100000000 ... bench/spark_build.py
    QUICK=1 ... bench/spark_build.py       # 200k rows: checks it runs (CI)
"""

from __future__ import annotations

import json
import os
import random
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


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JARS = [os.path.join(ROOT, "jvm/spark/target/hashfile-spark-0.1.0.jar")]  # the core inside it


def session(work: str):
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.jars", ",".join(JARS))
        .config("spark.local.dir", os.path.join(work, "spark-local"))
        .config("spark.sql.execution.pythonUDF.arrow.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def rows_of(spark):
    from pyspark.sql import functions as F

    return spark.range(ROWS).select(
        F.format_string("user:%010d", "id").alias("key"),
        F.col("id"),
        F.format_string("name %d", "id").alias("name"),
        (F.col("id") % 1000 / 100).cast("decimal(10,2)").alias("price"),
        (F.col("id") % 7 == 0).alias("active"),
    )


def run_one(mode: str, work: str) -> None:
    """One Spark write in this process's own JVM; prints its seconds."""
    spark = session(work)
    rows = rows_of(spark)
    out = os.path.join(work, mode)
    started = time.perf_counter()
    if mode == "python":
        from hashfile.spark import write_dataset

        write_dataset(rows, out, key="key", shards=SHARDS)
    elif mode == "jvm":
        rows.write.format("hashfile").option("key", "key").option("shards", SHARDS).save(out)
    else:  # the shuffle and sort a write makes, and nothing else
        from pyspark.sql import functions as F

        record = F.to_json(F.struct(F.col("key").alias("k"), F.struct(*rows.columns).alias("v")))
        rows.select("key", record.alias("r")).repartition(SHARDS, "key").sortWithinPartitions("key").write.format("noop").mode("overwrite").save()
    print(json.dumps({"seconds": time.perf_counter() - started}))
    spark.stop()


def timed_child(mode: str, work: str) -> tuple[float, int]:
    """Runs ``run_one(mode)`` in a child process: its seconds and the peak
    RSS of the child and everything it starts."""
    sampler = PeakSampler()
    sampler.start()
    done = subprocess.run([sys.executable, __file__, "--one", mode, work], check=True, capture_output=True, text=True)
    sampler.done.set()
    sampler.join()
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds"], sampler.peak


def main() -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import functions as F

    import hashfile

    missing = [jar for jar in JARS if not os.path.exists(jar)]
    if missing:
        sys.exit(f"the JVM's jars are not built ({', '.join(missing)}): rake jvm_package")
    work = tempfile.mkdtemp(prefix="hashfile-spark-bench-")
    spark = session(work)
    rows = rows_of(spark)
    say(f"{ROWS:,} rows, {SHARDS} shards, {os.cpu_count()} cores")

    # The same rows as JSON Lines records, the way both writes map them
    # (a decimal as its digits), sorted by key so that the single build
    # writes the same shards; made before any build is timed.
    value = F.struct(*[F.col(c).cast("string").alias(c) if c == "price" else F.col(c) for c in rows.columns])
    jsonl_dir = os.path.join(work, "rows")
    rows.orderBy("key").select(F.to_json(F.struct(F.col("key").alias("k"), value.alias("v")))).coalesce(1).write.text(jsonl_dir)
    jsonl = next(os.path.join(jsonl_dir, f) for f in os.listdir(jsonl_dir) if f.startswith("part-"))
    say(f"input: {os.path.getsize(jsonl) / 1e6:,.0f} MB of JSON Lines")
    spark.stop()

    results = {}
    for mode in ("jvm", "python", "shuffle"):
        results[mode] = timed_child(mode, work)

    single = os.path.join(work, "single-ds")
    script = "import hashfile, sys, resource; hashfile.build_from(sys.argv[1], sys.argv[2], shards=int(sys.argv[3]), key_field='k', value_field='v', format='jsonl'); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script, jsonl, single, str(SHARDS)], check=True, capture_output=True, text=True)
    single_seconds = time.perf_counter() - started
    single_rss = int(done.stdout.strip()) * 1024

    names = {"jvm": 'Spark format("hashfile")', "python": "Spark write_dataset", "shuffle": "Spark shuffle+sort alone"}
    say(f"{'build':<30}{'time':>10}{'dataset':>12}{'peak RSS':>12}{'time / single':>15}")
    for mode, (seconds, peak) in results.items():
        size = f"{dir_bytes(os.path.join(work, mode)) / 1e6:>10.0f}MB" if mode != "shuffle" else f"{'-':>12}"
        say(f"{names[mode]:<30}{seconds:>9.1f}s{size}{peak / 1e6:>10.0f}MB{seconds / single_seconds:>14.2f}x")
    say(f"{'single build_from (CLI)':<30}{single_seconds:>9.1f}s{dir_bytes(single) / 1e6:>10.0f}MB{single_rss / 1e6:>10.0f}MB{1:>14.2f}x")
    jvm_seconds, shuffle_seconds = results["jvm"][0], results["shuffle"][0]
    say(f"the JVM write: {shuffle_seconds:.1f}s of shuffle and sort, {jvm_seconds - shuffle_seconds:.1f}s for routing, the builds and the commit")

    theirs = json.load(open(os.path.join(single, "hashfile-dataset.json")))
    sample = random.Random(7).sample(range(ROWS), min(ROWS, 100_000))
    failed = False
    for mode in ("jvm", "python"):
        out = os.path.join(work, mode)
        ours = json.load(open(os.path.join(out, "hashfile-dataset.json")))
        identical = all(
            open(os.path.join(out, a["file"]), "rb").read() == open(os.path.join(single, b["file"]), "rb").read()
            for a, b in zip(ours["shards"], theirs["shards"])
        )
        with hashfile.open(out) as a, hashfile.open(single) as b:
            assert len(a) == len(b) == ROWS
            wrong = sum(a[k] != b[k] for k in (f"user:{i:010d}" for i in sample))
        say(f"{names[mode]}: {len(sample):,} sampled keys differ: {wrong}; shard files byte-identical: {identical}")
        failed = failed or bool(wrong) or not identical
    if failed:
        sys.exit("a Spark dataset differs from the single build")
    shutil.rmtree(work)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        run_one(sys.argv[2], sys.argv[3])
    else:
        main()
