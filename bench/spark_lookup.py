"""A lookup join in Spark (issue 49): N order rows, each with an item key,
joined to a K-key table of items, three ways, each in a Spark local[2] of
its own (a fresh JVM), side by side in one run:

- hashfile_lookup(dataset, item): the JVM's lookup function over a dataset
  the JVM's data source wrote; each executor JVM maps the dataset once;
  and HashfileFunctions.lookup(df, ...), the same in batches of 1,024 rows.
- a broadcast hash join against the same items in Parquet (Spark copies the
  table to every executor and builds a hash table on the JVM's heap);
- a sort-merge join against them (both sides shuffled and sorted).

Each writes its result to Spark's "noop" sink. Reported: wall time and
peak RSS (the child process and its JVM, sampled every 0.2 s); then the
broadcast and the lookup again with a small driver memory, to show where
the broadcast stops fitting and the lookup does not care. The lookup's
answers are checked against the sort-merge join's, row by row, on a sample.

    rake jvm_package
    ~/.cache/hashfile/venv/bin/python bench/spark_lookup.py        # 10M orders, 10M items
    ORDERS=... ITEMS=... SMALL_MEMORY=1g ... bench/spark_lookup.py
    QUICK=1 ... bench/spark_lookup.py    # 200k of each: checks it runs (CI)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

QUICK = os.environ.get("QUICK") == "1"
ORDERS = int(os.environ.get("ORDERS", "200000" if QUICK else "10000000"))
ITEMS = int(os.environ.get("ITEMS", "200000" if QUICK else "10000000"))
MEMORY = os.environ.get("MEMORY", "4g")
SMALL_MEMORY = os.environ.get("SMALL_MEMORY", "1g")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JARS = [os.path.join(ROOT, "jvm/spark/target/hashfile-spark-0.1.0.jar")]  # the core inside it

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spark_build import PeakSampler  # noqa: E402


def say(text: str) -> None:
    print(f"[lookup] {text}", flush=True)


def session(work: str, memory: str):
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", memory)
        .config("spark.jars", ",".join(JARS))
        .config("spark.local.dir", os.path.join(work, "spark-local"))
        .config("spark.sql.shuffle.partitions", "16")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def prepare(work: str) -> None:
    from pyspark.sql import functions as F

    spark = session(work, MEMORY)
    items = spark.range(ITEMS).select(
        F.format_string("item:%010d", "id").alias("item"),
        F.format_string("name %d", "id").alias("name"),
        (F.col("id") % 1000 / 100).cast("double").alias("price"),
    )
    items.write.parquet(os.path.join(work, "items.parquet"))
    items.write.format("hashfile").option("key", "item").option("shards", 8).save(os.path.join(work, "items.hf"))
    # A fifth of the orders name an item that is not there.
    orders = spark.range(ORDERS).select(
        F.col("id").alias("order"),
        F.format_string("item:%010d", (F.col("id") * 7919 % int(ITEMS * 1.25))).alias("item"),
    )
    orders.write.parquet(os.path.join(work, "orders.parquet"))
    spark.stop()


def run_one(mode: str, work: str, memory: str) -> None:
    from pyspark.sql import functions as F

    spark = session(work, memory)
    orders = spark.read.parquet(os.path.join(work, "orders.parquet"))
    items = spark.read.parquet(os.path.join(work, "items.parquet"))
    started = time.perf_counter()
    if mode == "lookup":
        spark.udf.registerJavaFunction("hashfile_lookup", "dev.hashfile.spark.Lookup", "string")
        path = os.path.join(work, "items.hf")
        joined = orders.select("order", "item", F.expr(f"get_json_object(hashfile_lookup('{path}', item), '$.price')").cast("double").alias("price"))
    elif mode == "batched":
        from pyspark.sql import DataFrame

        path = os.path.join(work, "items.hf")
        found = DataFrame(spark._jvm.dev.hashfile.spark.HashfileFunctions.lookup(orders._jdf, path, "item", "found"), spark)
        joined = found.select("order", "item", F.get_json_object("found", "$.price").cast("double").alias("price"))
    elif mode == "broadcast":
        joined = orders.join(F.broadcast(items), "item", "left").select("order", "item", "price")
    else:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
        joined = orders.join(items.hint("merge"), "item", "left").select("order", "item", "price")
    joined.write.format("noop").mode("overwrite").save()
    seconds = time.perf_counter() - started
    sample = None
    if mode in ("lookup", "batched", "sortmerge"):
        sample = sorted(tuple(r) for r in joined.where("order % 1000 = 7").collect())
    print(json.dumps({"seconds": seconds, "sample": sample}))
    spark.stop()


def child(mode: str, work: str, memory: str) -> dict:
    sampler = PeakSampler()
    sampler.start()
    done = subprocess.run([sys.executable, __file__, "--one", mode, work, memory], capture_output=True, text=True)
    sampler.done.set()
    sampler.join()
    if done.returncode != 0:
        # The JVM's own reason (OutOfMemoryError, a SparkException's message), not Py4J's wrapper.
        lines = [line.strip() for line in done.stderr.splitlines() if ("Error" in line or "Exception" in line) and "Py4J" not in line]
        memory = [line for line in lines if "OutOfMemory" in line or "memory" in line.lower()]
        reason = (memory or lines or done.stderr.strip().splitlines()[-1:])[0]
        return {"failed": reason[:200], "peak": sampler.peak}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["peak"] = sampler.peak
    return result


def main() -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    missing = [jar for jar in JARS if not os.path.exists(jar)]
    if missing:
        sys.exit(f"the JVM's jars are not built ({', '.join(missing)}): rake jvm_package")
    work = tempfile.mkdtemp(prefix="hashfile-lookup-bench-")
    say(f"{ORDERS:,} orders against {ITEMS:,} items, local[2], {os.cpu_count()} cores")
    prepare(work)
    runs = [
        ("lookup", MEMORY),
        ("batched", MEMORY),
        ("broadcast", MEMORY),
        ("sortmerge", MEMORY),
        ("lookup", SMALL_MEMORY),
        ("broadcast", SMALL_MEMORY),
    ]
    results = {}
    say(f"{'join':<28}{'driver memory':>14}{'time':>10}{'peak RSS':>12}")
    for mode, memory in runs:
        r = child(mode, work, memory)
        results[(mode, memory)] = r
        shown = f"{r['seconds']:>9.1f}s" if "seconds" in r else f"{'failed':>10}"
        say(f"{mode:<28}{memory:>14}{shown}{r['peak'] / 1e6:>10.0f}MB" + (f"  ({r['failed']})" if "failed" in r else ""))
    lookup, merge = results[("lookup", MEMORY)], results[("sortmerge", MEMORY)]
    if "seconds" not in lookup or "seconds" not in merge:
        sys.exit("the lookup or the sort-merge join failed at the normal memory")
    for mode in ("lookup", "batched"):
        if [list(r) for r in results[(mode, MEMORY)]["sample"]] != [list(r) for r in merge["sample"]]:
            sys.exit(f"the {mode} lookup's answers differ from the sort-merge join's")
    say(f"{len(lookup['sample']):,} sampled rows: the lookup's answers equal the sort-merge join's")
    shutil.rmtree(work)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--one":
        run_one(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        main()
